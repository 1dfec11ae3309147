//! What the fake reads of codex's configuration: the settings that change what the real server
//! sends, from `CODEX_HOME/config.toml` and then `-c key=value` overrides, as codex layers them;
//! a thread's `config` param is one more layer over both ([`Config::layered`]).

use serde_json::Value;
use std::path::Path;

/// codex's refusal of an approval policy it dropped: at startup, and when a config write
/// builds the configuration again (`user_config::check`).
pub const UNTRUSTED_UNSUPPORTED: &str =
    "approval_policy = \"untrusted\" is no longer supported; remove this setting";

/// The settings that show in the server's messages.
#[derive(Clone, Debug)]
pub struct Config {
    /// Every layer merged (config.toml, `-c`, a thread's `config`).
    table: toml::Table,
    /// Keys codex no longer reads, by layer: `(true, key)` from `-c`, `(false, key)` from
    /// config.toml.
    ignored: Vec<(bool, String)>,
    pub model: String,
    /// The model a configuration that names none gets: the version's default (the one its
    /// `model/list` marks `isDefault`).
    default_model: String,
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

/// The default model of codex-cli 0.171.0, for a configuration read without its version.
const NEWEST_DEFAULT_MODEL: &str = "gpt-6.2-sol";

/// Keys codex 0.171.0 no longer reads and warns about as unrecognized (each seen on the real
/// server; a key it never knew is not listed: the fake cannot tell it from one it knows).
const REMOVED_KEYS: &[&str] = &[
    "experimental_instructions_file",
    "experimental_use_exec_command_tool",
    "experimental_use_freeform_apply_patch",
    "include_apply_patch_tool",
    "web_search_request",
];

/// `[features]` names codex 0.171.0 replaced, and their successors (each seen on the real
/// server: a `deprecationNotice` at every session start).
const FEATURE_ALIASES: &[(&str, &str)] = &[
    ("codex_hooks", "hooks"),
    ("collab", "multi_agent"),
    ("connectors", "apps"),
    (
        "enable_experimental_windows_sandbox",
        "experimental_windows_sandbox",
    ),
    ("experimental_use_unified_exec_tool", "unified_exec"),
    ("imagegenext", "image_generation"),
    ("memory_tool", "memories"),
    ("request_permissions", "exec_permission_approvals"),
    ("telepathy", "chronicle"),
];

/// `[features]` web search names, deprecated since web search is on by default.
const WEB_SEARCH_FEATURES: &[&str] = &["web_search", "web_search_cached", "web_search_request"];

/// A dotted key's value in a TOML table.
pub(crate) fn get<'a>(t: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
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
    pub fn load(
        codex_home: &Path,
        overrides: &[(String, String)],
        known: &[String],
        default_model: &str,
    ) -> Config {
        let text = std::fs::read_to_string(codex_home.join("config.toml")).unwrap_or_default();
        let mut c = Config::parse(&text, overrides);
        c.ignore_unknown(overrides, known);
        c.default_model = default_model.to_string();
        if get(&c.table, "model").and_then(|v| v.as_str()).is_none() {
            c.model = c.default_model.clone();
        }
        c
    }

    /// Every top-level key the version does not know is ignored, as codex warns (`known`: the
    /// version's keys, `schema/<V>/facts/config.json`; empty: only [`REMOVED_KEYS`]).
    fn ignore_unknown(&mut self, overrides: &[(String, String)], known: &[String]) {
        if known.is_empty() {
            return;
        }
        let from_flags = |k: &str| {
            overrides
                .iter()
                .any(|(o, _)| o.split('.').next() == Some(k))
        };
        let text_keys: Vec<String> = self.table.keys().cloned().collect();
        for k in text_keys {
            if known.contains(&k) {
                continue;
            }
            let entry = (from_flags(&k), k);
            if !self.ignored.contains(&entry) {
                self.ignored.push(entry);
            }
        }
        self.ignored
            .sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    }

    /// [`Config::load`] of a `config.toml`'s text (not TOML: empty).
    pub fn parse(text: &str, overrides: &[(String, String)]) -> Config {
        let mut t: toml::Table = text.parse().unwrap_or_default();
        let mut ignored: Vec<(bool, String)> = REMOVED_KEYS
            .iter()
            .filter(|k| t.contains_key(**k))
            .map(|k| (false, k.to_string()))
            .collect();
        for (k, _) in overrides {
            if REMOVED_KEYS.contains(&k.as_str()) && !ignored.contains(&(true, k.clone())) {
                ignored.push((true, k.clone()));
            }
        }
        // `-c` keys first, each layer's sorted.
        ignored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (k, raw) in overrides {
            let v = format!("v = {raw}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut x| x.remove("v"))
                .unwrap_or_else(|| toml::Value::String(raw.clone()));
            set(&mut t, k, v);
        }
        let mut c = Config::of(t);
        c.ignored = ignored;
        c
    }

    /// This configuration with a thread's `config` param over it (dotted keys allowed).
    pub fn layered(&self, overrides: &serde_json::Map<String, Value>) -> Config {
        let mut t = self.table.clone();
        for (k, v) in overrides {
            if let Some(v) = to_toml(v) {
                set(&mut t, k, v);
            }
        }
        let mut c = Config::of(t);
        c.ignored = self.ignored.clone();
        if get(&c.table, "model").and_then(|v| v.as_str()).is_none() {
            c.model = self.default_model.clone();
        }
        c.default_model = self.default_model.clone();
        c
    }

    /// The `[features]` flags a config layer (a thread's `config` param, dotted keys or
    /// tables) sets, by name.
    pub fn layer_features(
        overrides: &serde_json::Map<String, Value>,
    ) -> serde_json::Map<String, Value> {
        let mut t = toml::Table::new();
        for (k, v) in overrides {
            if let Some(v) = to_toml(v) {
                set(&mut t, k, v);
            }
        }
        t.get("features")
            .and_then(toml::Value::as_table)
            .map(|f| {
                f.iter()
                    .filter_map(|(k, v)| Some((k.clone(), Value::Bool(v.as_bool()?))))
                    .collect()
            })
            .unwrap_or_default()
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
            // codex-cli 0.171.0's defaults with an empty config (probed); `load` sets the
            // version's default model.
            model: s("model").unwrap_or_else(|| NEWEST_DEFAULT_MODEL.into()),
            default_model: NEWEST_DEFAULT_MODEL.into(),
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
                    let mut on: Vec<String> = f
                        .iter()
                        .filter(|(_, v)| v.as_bool() == Some(true))
                        .map(|(k, _)| k.clone())
                        .collect();
                    // Name order (toml keeps the file's order).
                    on.sort();
                    on
                })
                .unwrap_or_default(),
            provider,
            table: t,
            ignored: Vec::new(),
        }
    }

    /// codex's warning about the keys it no longer reads (sent at `initialize` and again at
    /// every session start), if any: the `-c` ones first, then config.toml's, sorted.
    pub fn ignored_keys_warning(&self, config_toml: &Path) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let n = self.ignored.len();
        let mut text = format!(
            "Codex is ignoring {n} unrecognized configuration setting{}. Check for typos or \
             deprecated settings.",
            if n == 1 { "" } else { "s" }
        );
        for (flag, key) in &self.ignored {
            let layer = if *flag {
                "session-flags".to_string()
            } else {
                format!("user ({})", config_toml.display())
            };
            text.push_str(&format!("\n  {layer}: `{key}` is ignored."));
        }
        Some(text)
    }

    /// The `deprecationNotice`s (summary, details) every session start sends for the replaced
    /// `[features]` names set (true or false), sorted by name.
    pub fn deprecations(&self) -> Vec<(String, String)> {
        let features = self.table.get("features").and_then(toml::Value::as_table);
        let set = |name: &str| {
            features.is_some_and(|f| f.contains_key(name))
                || (name == "experimental_use_unified_exec_tool" && self.table.contains_key(name))
        };
        let mut out: Vec<(String, String, String)> = Vec::new();
        for (alias, canonical) in FEATURE_ALIASES {
            if set(alias) {
                out.push((
                    alias.to_string(),
                    format!("`[features].{alias}` is deprecated. Use `[features].{canonical}` instead."),
                    format!(
                        "Enable it with `--enable {canonical}` or `[features].{canonical}` in \
                         config.toml. See \
                         https://developers.openai.com/codex/config-basic#feature-flags for details."
                    ),
                ));
            }
        }
        for name in WEB_SEARCH_FEATURES {
            if set(name) {
                out.push((
                    name.to_string(),
                    format!(
                        "`[features].{name}` is deprecated because web search is enabled by default."
                    ),
                    "Set `web_search` to `\"live\"`, `\"indexed\"`, `\"cached\"`, or \
                     `\"disabled\"` at the top level (or under a profile) in config.toml if you \
                     want to override it."
                        .into(),
                ));
            }
        }
        out.sort();
        out.into_iter().map(|(_, s, d)| (s, d)).collect()
    }

    /// Why codex refuses to start with this configuration (it prints `Error: <this>` and exits
    /// 1), checked on 0.171.0.
    pub fn startup_error(&self) -> Option<String> {
        let ap = get(&self.table, "approval_policy").and_then(|v| v.as_str());
        (ap == Some("untrusted")).then(|| UNTRUSTED_UNSUPPORTED.into())
    }

    /// Whether the configuration sets `key` (a dotted path), whatever its value.
    pub fn has(&self, key: &str) -> bool {
        get(&self.table, key).is_some()
    }

    /// A boolean setting (absent: false).
    pub fn bool(&self, key: &str) -> bool {
        get(&self.table, key)
            .and_then(toml::Value::as_bool)
            .unwrap_or(false)
    }

    /// The enabled features codex warns about as under development (`unstable`: the
    /// version's, from `codex features list`), in name order.
    pub fn unstable_features<'a>(&'a self, unstable: &[String]) -> Vec<&'a str> {
        self.features
            .iter()
            .map(String::as_str)
            .filter(|f| unstable.iter().any(|u| u == f))
            .collect()
    }

    /// Whether the model provider needs an OpenAI login (`account/read`'s `requiresOpenaiAuth`):
    /// the built-in `openai` does, another provider when it says `requires_openai_auth = true`.
    pub fn requires_openai_auth(&self) -> bool {
        self.provider == "openai"
            || get(
                &self.table,
                &format!("model_providers.{}.requires_openai_auth", self.provider),
            )
            .and_then(toml::Value::as_bool)
                == Some(true)
    }

    /// Whether the configured sandbox is full access (then codex does not warn about a missing
    /// bubblewrap): `default_permissions` first, then `sandbox_mode`.
    pub fn full_access(&self) -> bool {
        match self.default_permissions.as_deref() {
            Some(p) => p == ":danger-full-access",
            None => self.sandbox_mode.as_deref() == Some("danger-full-access"),
        }
    }

    /// Whether the configuration defines permission profiles of its own (`[permissions]`).
    pub fn has_permissions_table(&self) -> bool {
        self.table.contains_key("permissions")
    }

    /// The `[model_providers]` the configuration defines, by id (codex's built-in `openai`
    /// aside).
    pub fn custom_providers(&self) -> Vec<(&str, &toml::Table)> {
        get(&self.table, "model_providers")
            .and_then(toml::Value::as_table)
            .map(|t| {
                let mut v: Vec<(&str, &toml::Table)> = t
                    .iter()
                    .filter_map(|(k, v)| Some((k.as_str(), v.as_table()?)))
                    .collect();
                // Id order (toml keeps the file's order).
                v.sort_by_key(|(k, _)| *k);
                v
            })
            .unwrap_or_default()
    }
}

/// Why codex cannot load the user's `config.toml` at `path`, as it words it: a file that is
/// not TOML, named with the line and column where the parser stopped (`{path}:{line}:{col}:
/// {message}`, codex `config_error_from_toml` and `position_for_offset`). `None`: no file, or
/// one that parses (a value of the wrong type codex also refuses: not modeled).
pub fn toml_error(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let e = text.parse::<toml::Table>().err()?;
    let (line, column) = e
        .span()
        .map_or((1, 1), |s| position_for_offset(&text, s.start));
    Some(format!(
        "{}:{line}:{column}: {}",
        path.display(),
        e.message()
    ))
}

/// A byte offset's line and column (both from 1; the column in characters), as codex counts.
fn position_for_offset(text: &str, index: usize) -> (usize, usize) {
    let b = text.as_bytes();
    if b.is_empty() {
        return (1, 1);
    }
    let safe = index.min(b.len() - 1);
    let past = index - safe;
    let line_start = b[..safe]
        .iter()
        .rposition(|c| *c == b'\n')
        .map_or(0, |p| p + 1);
    let line = b[..line_start].iter().filter(|c| **c == b'\n').count();
    let column = std::str::from_utf8(&b[line_start..=safe])
        .map_or(safe - line_start, |s| s.chars().count() - 1);
    (line + 1, column + past + 1)
}

#[cfg(test)]
mod toml_error_tests {
    use super::*;

    #[test]
    fn a_broken_file_is_named_at_codex_s_line_and_column() {
        let dir = std::env::temp_dir().join(format!("cw-toml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, "model = \"x\"\n[broken\n").unwrap();
        let got = toml_error(&path).unwrap();
        assert_eq!(
            got,
            format!("{}:2:8: unclosed table, expected `]`", path.display())
        );
        std::fs::write(&path, "model = \"x\"\n").unwrap();
        assert_eq!(toml_error(&path), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(position_for_offset("é=\n", 2), (1, 2));
    }
}
