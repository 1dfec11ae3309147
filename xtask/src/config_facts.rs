//! `schema/<V>/facts/config.json`: how the version's `config/value/write` judges, and
//! `config/read` reads back, a value at each top-level key of its configuration. The bundle
//! types `config/read`'s result, not codex's `ConfigToml` that a write is checked against (its
//! integer widths, enums kept as strings, tables filled with defaults), so each key is asked of
//! the binary: a value of every JSON kind is written, and either the refusal's message or what a
//! read then shows is kept. The fake's rule (src/fake/handlers/config_rw.rs) substitutes the
//! client's value into the message the same kind drew.

use crate::gen::{self, INIT_EXPERIMENTAL};
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;

const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// One value of each JSON kind a client can write, by the name the fake classifies values by.
pub fn sentinels() -> Vec<(&'static str, Value)> {
    vec![
        ("string", json!("x")),
        ("integer", json!(5)),
        ("negative", json!(-1)),
        ("float", json!(1.5)),
        ("boolean", json!(true)),
        ("array", json!(["x"])),
        ("table", json!({})),
    ]
}

/// An entry of each shape, by the table it goes in and the name it is written under.
const ENTRY_PROBES: &[(&str, &str, &str)] = &[
    (
        "model_providers",
        PROBE_NAME,
        r#"{"name": "p", "base_url": "http://127.0.0.1:9/v1"}"#,
    ),
    // The cloud providers' own settings, under the ids codex takes them for (another id is
    // refused an `aws` table or an empty name): `config/read` fills codex's provider struct
    // around them.
    (
        "model_providers",
        "amazon-bedrock",
        r#"{"aws": {"profile": "p", "region": "us-east-1"}}"#,
    ),
    (
        "model_providers",
        "gcp",
        r#"{"project_id": "p", "location": "us-central1", "credential_file": "/tmp/p.json"}"#,
    ),
    ("mcp_servers", PROBE_NAME, r#"{"command": "p"}"#),
    (
        "mcp_servers",
        PROBE_NAME,
        r#"{"url": "http://127.0.0.1:9/mcp"}"#,
    ),
];

/// Provider entries codex's `validate_model_providers` may refuse, by the id each is written
/// under: what the fake's rule (src/fake/user_config.rs, `provider_refusal`) needs to know of
/// the version — the message of each check, which ids are reserved, which take no name, and
/// which Bedrock fields may change (its message lists them).
const PROVIDER_PROBES: &[(&str, &str)] = &[
    (PROBE_NAME, r#"{"base_url": "http://127.0.0.1:9/v1"}"#),
    (
        PROBE_NAME,
        r#"{"name": "p", "aws": {"region": "us-east-1"}}"#,
    ),
    ("openai", r#"{"name": "p"}"#),
    ("ollama", r#"{"name": "p"}"#),
    ("lmstudio", r#"{"name": "p"}"#),
    ("amazon-bedrock", r#"{"name": "p"}"#),
    ("amazon-bedrock-runtime", r#"{"name": "p"}"#),
    ("amazon-bedrock", r#"{"base_url": "http://127.0.0.1:9/v1"}"#),
    (
        "amazon-bedrock-runtime",
        r#"{"base_url": "http://127.0.0.1:9/v1"}"#,
    ),
    ("gcp", r#"{"project_id": "p"}"#),
];

/// The name a probed entry is written under where any name does.
const PROBE_NAME: &str = "codex_wire_probe";

struct Asker {
    srv: Server,
    id: i64,
}

impl Asker {
    /// The reply's `result`, or `Err(message)` for an error reply.
    fn ask(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.id += 1;
        let line = gen::request(self.id, method, Some(&params));
        let reply = self
            .srv
            .call(&line, CALL_TIMEOUT)
            .ok_or_else(|| format!("{method}: no reply"))?;
        let v: Value = serde_json::from_str(&reply).map_err(|e| format!("{method}: {e}"))?;
        match v.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(v["error"]["message"].as_str().unwrap_or("").to_string()),
        }
    }

    fn write(&mut self, key: &str, value: &Value) -> Result<Value, String> {
        self.ask(
            "config/value/write",
            json!({"keyPath": key, "value": value, "mergeStrategy": "replace"}),
        )
    }
}

/// Ask the binary; errors of the probe itself are kept under `errors`.
pub fn probe(codex: &Path) -> Value {
    let mut out = Map::new();
    let mut errors = Vec::new();
    match run(codex, &mut out) {
        Ok(()) => {}
        Err(e) => errors.push(Value::from(e)),
    }
    if !errors.is_empty() {
        out.insert("errors".into(), Value::Array(errors));
    }
    crate::probe::sorted(Value::Object(out))
}

fn run(codex: &Path, out: &mut Map<String, Value>) -> Result<(), String> {
    let mut srv = Server::spawn(codex)?;
    srv.call(INIT_EXPERIMENTAL.as_bytes(), Duration::from_secs(20))
        .ok_or("no reply to initialize")?;
    let mut a = Asker { srv, id: 0 };
    let read = a.ask("config/read", json!({}))?;
    let defaults = read["config"].as_object().cloned().unwrap_or_default();
    let mut keys = Map::new();
    for key in defaults.keys() {
        let mut kinds = Map::new();
        for (kind, value) in sentinels() {
            let fact = match a.write(key, &value) {
                Err(message) => json!({ "error": message }),
                Ok(_) => {
                    // A value can be written that no read accepts (an unknown
                    // `model_provider`): the read's refusal is the fact then.
                    let back = a.ask("config/read", json!({}));
                    a.write(key, &Value::Null)
                        .map_err(|e| format!("clearing {key}: {e}"))?;
                    match back {
                        Ok(back) => json!({ "ok": back["config"][key] }),
                        Err(message) => json!({ "read_error": message }),
                    }
                }
            };
            kinds.insert(kind.into(), fact);
        }
        keys.insert(key.clone(), Value::Object(kinds));
    }
    // `[features]` is read by codex's own deserializer: a flag that is not a boolean.
    let features = match a.write("features.codex_wire_probe", &json!("x")) {
        Err(message) => Value::from(message),
        Ok(_) => Value::Null,
    };
    // Tables of named entries codex types (a provider, an MCP server): an entry read back
    // with codex's defaults filled in, per shape an entry can take.
    let mut entries = Vec::new();
    for (key, name, given) in ENTRY_PROBES {
        let given: Value = serde_json::from_str(given).map_err(|e| e.to_string())?;
        let path = format!("{key}.{name}");
        let back = match a.write(&path, &given) {
            Err(message) => json!({ "error": message }),
            Ok(_) => {
                let back = a.ask("config/read", json!({}));
                a.write(&path, &Value::Null)
                    .map_err(|e| format!("clearing {path}: {e}"))?;
                match back {
                    Ok(back) => back["config"][*key][*name].clone(),
                    Err(message) => json!({ "read_error": message }),
                }
            }
        };
        entries.push(json!({"key": key, "given": given, "back": back}));
    }
    out.insert("entries".into(), Value::Array(entries));
    let mut providers = Vec::new();
    for (id, given) in PROVIDER_PROBES {
        let given: Value = serde_json::from_str(given).map_err(|e| e.to_string())?;
        let path = format!("model_providers.{id}");
        let error = match a.write(&path, &given) {
            Err(message) => Value::from(message),
            Ok(_) => {
                a.write(&path, &Value::Null)
                    .map_err(|e| format!("clearing {path}: {e}"))?;
                Value::Null
            }
        };
        providers.push(json!({"id": id, "given": given, "error": error}));
    }
    out.insert("providers".into(), Value::Array(providers));
    out.insert("defaults".into(), Value::Object(defaults));
    out.insert("keys".into(), Value::Object(keys));
    out.insert("feature_not_boolean".into(), features);
    Ok(())
}
