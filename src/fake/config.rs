//! What the fake reads of codex's configuration: the settings that change what the real server
//! sends, from `CODEX_HOME/config.toml` and then `-c key=value` overrides, as codex layers them;
//! a thread's `config` param is one more layer over both ([`Config::layered`]).

use serde_json::Value;
use std::path::Path;

/// The settings that show in the server's messages.
#[derive(Clone, Debug)]
pub struct Config {
    /// Every layer merged (config.toml, `-c`, a thread's `config`).
    table: toml::Table,
    pub model: String,
    pub provider: String,
    /// The configured policy as codex reports it (`on-failure` reads as `on-request`).
    pub approval_policy: String,
    pub approvals_reviewer: Option<String>,
    /// `sandbox_mode`, if configured.
    pub sandbox_mode: Option<String>,
    /// `default_permissions` (a named permission profile), if configured.
    pub default_permissions: Option<String>,
    pub service_tier: Option<String>,
    pub reasoning_effort: Option<String>,
    pub context_window: Option<i64>,
    /// The provider's `base_url` (what codex's HTTP error texts name).
    pub base_url: String,
    /// The provider's `stream_max_retries`: how often a dropped stream is retried.
    pub stream_max_retries: u64,
    /// The provider's `request_max_retries`: how often a request is resent after a 5xx.
    pub request_max_retries: u64,
    /// Features turned on (`[features]`, `--enable`), in name order.
    pub features: Vec<String>,
}

/// A dotted key's value in a TOML table.
fn get<'a>(t: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut cur = t.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_table()?.get(p)?;
    }
    Some(cur)
}

/// Sets a dotted key, creating tables on the way (what `-c a.b=v` does).
fn set(t: &mut toml::Table, key: &str, v: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let Some(last) = parts.pop() else {
        return;
    };
    let mut cur = t;
    for p in parts {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let Some(next) = entry.as_table_mut() else {
            return;
        };
        cur = next;
    }
    cur.insert(last.to_string(), v);
}

/// A JSON value as TOML (`null` has no TOML form: the key is left unset).
fn to_toml(v: &Value) -> Option<toml::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().filter_map(to_toml).collect()),
        Value::Object(o) => toml::Value::Table(
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), to_toml(v)?)))
                .collect(),
        ),
    })
}

impl Config {
    /// `config.toml` in `codex_home` (absent or unreadable: empty), then the overrides; a value
    /// that is not TOML is taken as a string, as codex does.
    pub fn load(codex_home: &Path, overrides: &[(String, String)]) -> Config {
        let mut t: toml::Table = std::fs::read_to_string(codex_home.join("config.toml"))
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_default();
        for (k, raw) in overrides {
            let v = format!("v = {raw}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut x| x.remove("v"))
                .unwrap_or_else(|| toml::Value::String(raw.clone()));
            set(&mut t, k, v);
        }
        Config::of(t)
    }

    /// This configuration with a thread's `config` param over it (dotted keys allowed).
    pub fn layered(&self, overrides: &serde_json::Map<String, Value>) -> Config {
        let mut t = self.table.clone();
        for (k, v) in overrides {
            if let Some(v) = to_toml(v) {
                set(&mut t, k, v);
            }
        }
        Config::of(t)
    }

    fn of(t: toml::Table) -> Config {
        let s = |k: &str| get(&t, k).and_then(|v| v.as_str()).map(str::to_string);
        let provider = s("model_provider").unwrap_or_else(|| "openai".into());
        let p = |k: &str| get(&t, &format!("model_providers.{provider}.{k}"));
        let retries = |k: &str, d: u64| {
            p(k).and_then(toml::Value::as_integer)
                .map_or(d, |n| n.clamp(0, 100) as u64)
        };
        Config {
            // codex-cli 0.171.0's defaults with an empty config (probed).
            model: s("model").unwrap_or_else(|| "gpt-6.2-sol".into()),
            approval_policy: match s("approval_policy").as_deref() {
                None | Some("on-failure") => "on-request".into(),
                Some(p) => p.to_string(),
            },
            approvals_reviewer: s("approvals_reviewer"),
            sandbox_mode: s("sandbox_mode"),
            default_permissions: s("default_permissions"),
            service_tier: s("service_tier"),
            reasoning_effort: s("model_reasoning_effort"),
            context_window: get(&t, "model_context_window").and_then(toml::Value::as_integer),
            base_url: p("base_url")
                .and_then(|v| v.as_str())
                .map_or_else(|| "https://api.openai.com/v1".into(), str::to_string),
            stream_max_retries: retries("stream_max_retries", 5),
            request_max_retries: retries("request_max_retries", 4),
            features: t
                .get("features")
                .and_then(toml::Value::as_table)
                .map(|f| {
                    f.iter()
                        .filter(|(_, v)| v.as_bool() == Some(true))
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default(),
            provider,
            table: t,
        }
    }

    /// Why codex refuses to start with this configuration (it prints `Error: <this>` and exits
    /// 1), checked on 0.171.0.
    pub fn startup_error(&self) -> Option<String> {
        let ap = get(&self.table, "approval_policy").and_then(|v| v.as_str());
        (ap == Some("untrusted")).then(|| {
            "approval_policy = \"untrusted\" is no longer supported; remove this setting".into()
        })
    }

    /// A boolean setting (absent: false).
    pub fn bool(&self, key: &str) -> bool {
        get(&self.table, key)
            .and_then(toml::Value::as_bool)
            .unwrap_or(false)
    }

    /// The enabled features codex 0.171.0 warns about as under development.
    pub fn unstable_features(&self) -> Vec<&str> {
        const UNSTABLE: &[&str] = &[
            "request_permissions_tool",
            "default_mode_request_user_input",
        ];
        self.features
            .iter()
            .map(String::as_str)
            .filter(|f| UNSTABLE.contains(f))
            .collect()
    }

    /// Whether the configured sandbox is full access (then codex does not warn about a missing
    /// bubblewrap): `default_permissions` first, then `sandbox_mode`.
    pub fn full_access(&self) -> bool {
        match self.default_permissions.as_deref() {
            Some(p) => p == ":danger-full-access",
            None => self.sandbox_mode.as_deref() == Some("danger-full-access"),
        }
    }
}
