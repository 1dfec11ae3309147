//! What the fake reads of codex's configuration: the settings that change what the real server
//! sends (model, provider, approval policy, sandbox mode, stream retries), from
//! `CODEX_HOME/config.toml` and then `-c key=value` overrides, as codex layers them.

use std::path::Path;

/// The settings that show in the server's messages.
#[derive(Clone, Debug)]
pub struct Config {
    pub model: String,
    pub provider: String,
    pub approval_policy: String,
    pub sandbox_mode: String,
    /// Whether a sandbox mode was configured at all (the default shows as a permission profile).
    pub sandbox_configured: bool,
    /// The provider's `stream_max_retries`: how often a dropped stream is retried.
    pub stream_max_retries: u64,
    /// Features turned on (`[features]`, `--enable`), in name order.
    pub features: Vec<String>,
}

impl Default for Config {
    /// codex-cli 0.171.0's defaults with an empty config (probed).
    fn default() -> Self {
        Config {
            model: "gpt-6.2-sol".into(),
            provider: "openai".into(),
            approval_policy: "on-request".into(),
            sandbox_mode: "read-only".into(),
            sandbox_configured: false,
            stream_max_retries: 5,
            features: Vec::new(),
        }
    }
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
        let d = Config::default();
        let s = |k: &str, d: String| {
            get(&t, k)
                .and_then(|v| v.as_str())
                .map_or(d, str::to_string)
        };
        let provider = s("model_provider", d.provider);
        let retries = get(
            &t,
            &format!("model_providers.{provider}.stream_max_retries"),
        )
        .and_then(toml::Value::as_integer)
        .map_or(d.stream_max_retries, |n| n.max(0) as u64);
        Config {
            model: s("model", d.model),
            approval_policy: s("approval_policy", d.approval_policy),
            sandbox_mode: s("sandbox_mode", d.sandbox_mode),
            sandbox_configured: get(&t, "sandbox_mode").is_some(),
            stream_max_retries: retries,
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
        }
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

    /// The `sandbox` object of thread results for the configured mode.
    pub fn sandbox_policy(&self) -> serde_json::Value {
        match self.sandbox_mode.as_str() {
            "workspace-write" => serde_json::json!({"type": "workspaceWrite", "writableRoots": [],
                "networkAccess": false, "excludeTmpdirEnvVar": false, "excludeSlashTmp": false}),
            "danger-full-access" => serde_json::json!({"type": "dangerFullAccess"}),
            _ => serde_json::json!({"type": "readOnly", "networkAccess": false}),
        }
    }

    /// `activePermissionProfile` of thread results: only the unconfigured default names one.
    pub fn permission_profile(&self) -> serde_json::Value {
        if self.sandbox_configured {
            serde_json::Value::Null
        } else {
            serde_json::json!({"id": ":read-only", "extends": null})
        }
    }
}
