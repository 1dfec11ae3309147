//! The user layer (`CODEX_HOME/config.toml`) as codex's config service reads and edits it
//! (`codex-rs/app-server/src/config_manager_service.rs`): `config/value/write` and
//! `config/batchWrite` parse each key path, merge or clear, check the whole table, write the
//! file and answer the layer's version; `config/read` shows the effective config, the origin of
//! every leaf and, asked, the layers. What codex's `ConfigToml` accepts and how it reads a value
//! back is the version's probed fact (`schema/<V>/facts/config.json`, see
//! `xtask/src/config_facts.rs`): per top-level key, per JSON kind, the refusal or the read-back.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// `config_write_error_code`s (codex's `ConfigWriteErrorCode`, camelCase on the wire).
pub const VALIDATION: &str = "configValidationError";
pub const READONLY: &str = "configLayerReadonly";
pub const CONFLICT: &str = "configVersionConflict";

/// The providers codex defines itself (`built_in_model_providers` in codex's
/// `model-provider-info`).
pub const BUILT_IN_PROVIDERS: &[&str] = &["openai", "ollama", "lmstudio"];

/// Where codex looks for the system layer (always listed, empty here).
const SYSTEM_FILE: &str = "/etc/codex/config.toml";

/// A refused write: its `config_write_error_code` and message.
#[derive(Debug, PartialEq)]
pub struct WriteError {
    pub code: &'static str,
    pub message: String,
}

fn refused(code: &'static str, message: impl Into<String>) -> WriteError {
    WriteError {
        code,
        message: message.into(),
    }
}

/// The version's facts (`Protocol::config`).
#[derive(Debug, Default, serde::Deserialize)]
pub struct Facts {
    /// `config/read`'s `config` of an empty user layer.
    #[serde(default)]
    defaults: Map<String, Value>,
    /// Per key, per kind: `{"error": message}`, `{"ok": read-back}` or `{"read_error": message}`.
    #[serde(default)]
    keys: Map<String, Value>,
    /// codex's message for a `[features]` flag that is not a boolean (drawn by `"x"`).
    #[serde(default)]
    feature_not_boolean: Option<String>,
    /// Entries of tables codex types (a provider, an MCP server), each probed shape read back.
    #[serde(default)]
    entries: Vec<EntryFact>,
    /// Provider entries written under an id, each with codex's refusal (or none).
    #[serde(default)]
    providers: Vec<ProviderFact>,
}

/// One probed provider entry (`xtask/src/config_facts.rs`, `PROVIDER_PROBES`).
#[derive(Debug, serde::Deserialize)]
struct ProviderFact {
    id: String,
    given: Map<String, Value>,
    error: Option<String>,
}

/// The id provider probes are written under where any id does.
const PROBE_ID: &str = "codex_wire_probe";

/// One probed entry: the table it went in, what was written and what a read showed.
#[derive(Debug, serde::Deserialize)]
struct EntryFact {
    key: String,
    given: Map<String, Value>,
    back: Value,
}

impl Facts {
    pub fn of(p: &crate::Protocol) -> Facts {
        serde_json::from_str(p.config).unwrap_or_default()
    }

    /// The version's top-level config keys (empty when not probed).
    pub fn known_keys(&self) -> Vec<String> {
        self.defaults.keys().cloned().collect()
    }

    /// The flags `experimentalFeature/enablement/set` may set at run time: those `config/read`
    /// always lists (codex's `SUPPORTED_EXPERIMENTAL_FEATURE_ENABLEMENT`, which it reports there).
    pub fn runtime_features(&self) -> Vec<String> {
        self.defaults
            .get("features")
            .and_then(Value::as_object)
            .map(|f| f.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether the version's facts were probed (else the fake keeps its recorded answers).
    pub fn known(&self) -> bool {
        !self.defaults.is_empty()
    }

    fn fact(&self, key: &str, value: &Value) -> Option<&Map<String, Value>> {
        self.keys.get(key)?.get(kind(value))?.as_object()
    }

    /// The first key (in the table's order, as codex's deserializer meets them) whose value
    /// codex's `ConfigToml` refuses, with codex's message for it.
    pub fn check(&self, table: &Map<String, Value>) -> Result<(), WriteError> {
        for (key, value) in table {
            let refusal = if key == "features" && value.is_object() {
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .find(|(_, v)| !v.is_boolean())
                    .and_then(|(_, v)| {
                        let m = self.feature_not_boolean.as_deref()?;
                        Some(substitute(m, &json!("x"), v))
                    })
            } else if key == "model_providers" && value.is_object() {
                value.as_object().and_then(|p| self.provider_refusal(p))
            } else {
                self.fact(key, value)
                    .and_then(|f| f.get("error")?.as_str())
                    .and_then(|m| refusal_for(m, kind(value), value))
            };
            if let Some(message) = refusal {
                return Err(refused(VALIDATION, message));
            }
        }
        // Then the whole configuration is built, which refuses a policy codex no longer
        // supports even where a `-c` flag overrides it (fidelity s34340001_0170 on 0.169.0;
        // turn scenario 201 on every version).
        if table.get("approval_policy").and_then(Value::as_str) == Some("untrusted") {
            return Err(refused(
                VALIDATION,
                format!(
                    "Invalid configuration: {}",
                    crate::fake::config::UNTRUSTED_UNSUPPORTED
                ),
            ));
        }
        Ok(())
    }

    /// `config/read`'s `config`: the defaults, with each key codex knows read back as the
    /// version reads it (unknown keys are not shown); `Err` is codex's refusal to read.
    pub fn effective(
        &self,
        user: &Map<String, Value>,
        enablement: &Map<String, Value>,
    ) -> Result<Value, String> {
        let mut config = self.defaults.clone();
        // Run-time flags, under what the configuration sets.
        if let Some(Value::Object(f)) = config.get_mut("features") {
            for (name, on) in enablement {
                if f.contains_key(name) {
                    f.insert(name.clone(), on.clone());
                }
            }
        }
        for (key, value) in user {
            if key == "features" {
                if let (Some(set), Some(Value::Object(f))) =
                    (value.as_object(), config.get_mut(key))
                {
                    f.shift_insert(0, "network_proxy".into(), Value::Null);
                    for (name, on) in set {
                        // Any flag the table sets is read back, a name codex does not know (or
                        // knows only as a legacy alias) too (fidelity s8080001_0133, _0022;
                        // probed on 0.169.0 and 0.171.0).
                        if on.is_boolean() {
                            f.insert(name.clone(), on.clone());
                        }
                    }
                }
                continue;
            }
            let Some(fact) = self.fact(key, value) else {
                continue;
            };
            if let Some(m) = fact.get("read_error").and_then(Value::as_str) {
                // The probe named a provider nobody defines: one the config defines, or one
                // of codex's own, reads.
                let defined = key == "model_provider"
                    && value.as_str().is_some_and(|id| {
                        BUILT_IN_PROVIDERS.contains(&id)
                            || user
                                .get("model_providers")
                                .and_then(|p| p.get(id))
                                .is_some()
                    });
                if !defined {
                    return Err(substitute(m, &sentinel(kind(value)), value));
                }
            }
            let back = match (fact.get("ok"), value) {
                // Named entries: each filled as the probed entry of its shape was.
                (Some(Value::Object(_)), Value::Object(given))
                    if self.entries.iter().any(|e| e.key == *key) =>
                {
                    Value::Object(
                        given
                            .iter()
                            .map(|(name, entry)| (name.clone(), self.entry(key, entry)))
                            .collect(),
                    )
                }
                // A table codex fills with its defaults: those, then the client's keys.
                (Some(Value::Object(filled)), Value::Object(given)) => {
                    let mut t = filled.clone();
                    t.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
                    Value::Object(t)
                }
                _ => value.clone(),
            };
            config.insert(key.clone(), back);
        }
        Ok(Value::Object(config))
    }
}

impl Facts {
    /// codex's `validate_model_providers` (config_toml.rs), each check's message and the ids
    /// it spares as the version's probes showed them: a reserved id is refused first (all of
    /// them named, sorted); then by entry, a Bedrock id may change only the fields its
    /// message lists, any other id is refused an `aws` table, then an empty name (but an id
    /// the version takes unnamed: `gcp` on 0.169.0 and later). Turn scenario `294`.
    fn provider_refusal(&self, providers: &Map<String, Value>) -> Option<String> {
        let probe = |id: &str, key: &str| {
            self.providers
                .iter()
                .find(|f| f.id == id && f.given.contains_key(key))
        };
        let refused = |id: &str, key: &str| probe(id, key).and_then(|f| f.error.as_deref());
        let mut reserved: Vec<&str> = providers
            .keys()
            .map(String::as_str)
            .filter(|id| {
                refused(id, "name").is_some_and(|m| m.contains(&format!("`{id}`")))
                    && probe(id, "base_url").is_none()
            })
            .collect();
        if let Some(first) = reserved.first().copied() {
            reserved.sort_unstable();
            let names: Vec<String> = reserved.iter().map(|id| format!("`{id}`")).collect();
            let m = refused(first, "name")?;
            return Some(m.replacen(&format!("`{first}`"), &names.join(", "), 1));
        }
        let named = |m: &str, id: &str| {
            m.replacen(
                &format!("model_providers.{PROBE_ID}"),
                &format!("model_providers.{id}"),
                1,
            )
        };
        for (id, entry) in providers {
            let Some(entry) = entry.as_object() else {
                continue;
            };
            // A Bedrock id: its probe with a name was refused by the fields it may change.
            if let (Some(_), Some(m)) = (probe(id, "base_url"), refused(id, "name")) {
                // The struct's defaults, as the Bedrock probe read back: codex compares the
                // fields it knows, an unknown one never reaches it.
                let defaults = self
                    .entries
                    .iter()
                    .find(|e| e.key == "model_providers" && e.given.contains_key("aws"))
                    .map(|e| &e.back);
                if !bedrock_fields_allowed(m, entry, defaults.unwrap_or(&Value::Null)) {
                    return Some(m.to_string());
                }
                continue;
            }
            if probe(id, "base_url").is_some() {
                continue;
            }
            if entry.contains_key("aws") {
                if let Some(m) = refused(PROBE_ID, "aws") {
                    return Some(named(m, id));
                }
            }
            let unnamed = entry
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(|n| n.trim().is_empty());
            let spared = self
                .providers
                .iter()
                .any(|f| f.id == *id && !f.given.contains_key("name") && f.error.is_none());
            if unnamed && !spared {
                if let Some(m) = refused(PROBE_ID, "base_url") {
                    return Some(named(m, id));
                }
            }
        }
        None
    }

    /// An entry of a typed table read back: the probed entry whose shape (written keys) it
    /// has, with its own values over the probe's.
    fn entry(&self, key: &str, entry: &Value) -> Value {
        let Some(given) = entry.as_object() else {
            return entry.clone();
        };
        let of_key = |e: &&EntryFact| e.key == key && e.back.is_object();
        // The probe of its shape; else one sharing a written key, with the probe's keys the
        // entry lacks read back as null (a provider with a name and no base URL: 76).
        let probe = self
            .entries
            .iter()
            .filter(of_key)
            .find(|e| e.given.keys().all(|k| given.contains_key(k)))
            .or_else(|| {
                self.entries
                    .iter()
                    .filter(of_key)
                    .find(|e| e.given.keys().any(|k| given.contains_key(k)))
            });
        let mut out = match probe {
            Some(p) => filled(&p.back, &p.given, given),
            None => return entry.clone(),
        };
        let Some(t) = out.as_object_mut() else {
            return out;
        };
        // A provider reads back as codex's whole struct, every field listed (null or not, as
        // each probe's read-back shows): a key outside it is one codex does not know, dropped.
        if key == "model_providers" {
            t.retain(|k, _| {
                self.entries
                    .iter()
                    .filter(of_key)
                    .any(|e| e.back.get(k).is_some())
            });
        }
        out
    }
}

/// An entry as codex read back its probe (`back`, written as `probe`): the probe's keys the
/// entry lacks null, the entry's own over the rest; a sub-table both wrote, as its probe's was,
/// without a key the struct does not know (a provider's `aws`: `287b`, `294`).
fn filled(back: &Value, probe: &Map<String, Value>, given: &Map<String, Value>) -> Value {
    filled_at(back, probe, given, false)
}

fn filled_at(
    back: &Value,
    probe: &Map<String, Value>,
    given: &Map<String, Value>,
    sub: bool,
) -> Value {
    let mut t = back.as_object().cloned().unwrap_or_default();
    for k in probe.keys().filter(|k| !given.contains_key(*k)) {
        t.insert(k.clone(), Value::Null);
    }
    for (k, v) in given {
        if sub && !t.contains_key(k) {
            continue;
        }
        let value = match (&back[k], probe.get(k), v) {
            (Value::Object(_), Some(Value::Object(p)), Value::Object(g)) => {
                filled_at(&back[k], p, g, true)
            }
            _ => v.clone(),
        };
        t.insert(k.clone(), value);
    }
    Value::Object(t)
}

/// Whether a Bedrock entry changes only the fields codex's refusal lists (`base_url`,
/// `aws.profile`, …: each in backticks after "only supports changing"): any other field codex
/// knows (one of `defaults`, the struct as read back) must keep its default; a key it does not
/// know is dropped before the check (turn scenario `294`: `aws.bogus` is written).
fn bedrock_fields_allowed(message: &str, entry: &Map<String, Value>, defaults: &Value) -> bool {
    let Some((_, list)) = message.split_once("only supports changing") else {
        return true;
    };
    let list = list.split(';').next().unwrap_or_default();
    let allowed: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
    let kept = |path: &str, v: &Value, default: Option<&Value>| {
        allowed.contains(&path) || default.is_none_or(|d| d == v)
    };
    entry.iter().all(|(k, v)| {
        let default = defaults.get(k);
        match (v.as_object(), default.and_then(Value::as_object)) {
            (Some(sub), Some(d)) if !allowed.contains(&k.as_str()) => sub
                .iter()
                .all(|(s, sv)| kept(&format!("{k}.{s}"), sv, d.get(s).map(|_| &Value::Null))),
            _ => kept(k, v, default),
        }
    })
}

/// The JSON kind a value is judged by (the names `xtask/src/config_facts.rs` probes).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() && n.as_i64().is_some_and(|i| i < 0) => "negative",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "float",
        Value::Bool(_) => "boolean",
        Value::Array(_) => "array",
        _ => "table",
    }
}

/// The value each kind was probed with.
fn sentinel(kind: &str) -> Value {
    match kind {
        "string" => json!("x"),
        "integer" => json!(5),
        "negative" => json!(-1),
        "float" => json!(1.5),
        "boolean" => json!(true),
        "array" => json!(["x"]),
        _ => json!({}),
    }
}

/// serde's words for a value in "invalid type: …" (`serde::de::Unexpected`).
pub fn unexpected(v: &Value) -> Option<String> {
    Some(match v {
        Value::String(s) => format!("string {s:?}"),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("integer `{n}`"),
        // (fidelity s7070001_0856, s8080001_0141: a feature flag set to a list or a table)
        Value::Array(_) => "sequence".into(),
        Value::Object(_) => "map".into(),
        Value::Number(n) => {
            let f = n.as_f64()?;
            let text = f.to_string();
            if text.contains(['.', 'e', 'i', 'N']) {
                format!("floating point `{text}`")
            } else {
                format!("floating point `{text}.0`")
            }
        }
        _ => return None,
    })
}

/// The probed message with the probe's value replaced by the client's.
fn substitute(message: &str, probe: &Value, value: &Value) -> String {
    // An array is judged by its first element where its message names one.
    let (probe, value) = match (probe, value) {
        (Value::Array(p), Value::Array(v)) if !p.is_empty() && !v.is_empty() => (&p[0], &v[0]),
        _ => (probe, value),
    };
    let mut out = message.to_string();
    if let (Some(p), Some(v)) = (unexpected(probe), unexpected(value)) {
        if out.contains(&p) {
            return out.replacen(&p, &v, 1);
        }
    }
    if let (Value::String(p), Value::String(v)) = (probe, value) {
        out = out.replacen(&format!("`{p}`"), &format!("`{v}`"), 1);
    }
    out
}

/// codex's refusal of `value`, given the message its kind drew: none when the message lists
/// the variants of an enum and the value is one of them.
fn refusal_for(message: &str, kind: &str, value: &Value) -> Option<String> {
    if let (Some(s), Some(variants)) = (value.as_str(), variants(message)) {
        if variants.iter().any(|v| v == s) {
            return None;
        }
    }
    Some(substitute(message, &sentinel(kind), value))
}

/// The variants an "unknown variant `x`, expected …" message lists.
fn variants(message: &str) -> Option<Vec<String>> {
    let rest = message.split("unknown variant `").nth(1)?;
    let expected = rest.split_once(", expected ")?.1;
    let expected = expected.split('\n').next()?;
    Some(
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// codex's `parse_key_path`: dots split segments, a segment may be quoted (`"a.b"`), a quoted
/// one may escape any character.
pub fn key_path(path: &str) -> Result<Vec<String>, String> {
    if path.trim().is_empty() {
        return Err("keyPath must not be empty".into());
    }
    let empty = || "keyPath segments must not be empty".to_string();
    let (mut segments, mut segment, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = path.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '"' if segment.is_empty() && !quoted => quoted = true,
            '"' if quoted => quoted = false,
            '\\' if quoted => {
                segment.push(
                    chars
                        .next()
                        .ok_or_else(|| "unterminated escape in keyPath".to_string())?,
                );
            }
            '.' if !quoted => {
                if segment.is_empty() {
                    return Err(empty());
                }
                segments.push(std::mem::take(&mut segment));
            }
            '"' => return Err("invalid quoted keyPath segment".into()),
            _ => segment.push(ch),
        }
    }
    if quoted {
        return Err("unterminated quoted keyPath segment".into());
    }
    if segment.is_empty() {
        return Err(empty());
    }
    segments.push(segment);
    Ok(segments)
}

/// One edit of a write: `null` clears the path; `upsert` merges a table into a table.
pub fn apply(root: &mut Map<String, Value>, segments: &[String], value: &Value, upsert: bool) {
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    if value.is_null() {
        let mut current = root;
        for s in parents {
            match current.get_mut(s) {
                Some(Value::Object(t)) => current = t,
                _ => return,
            }
        }
        current.shift_remove(last);
        return;
    }
    let mut current = root;
    for s in parents {
        let next = current
            .entry(s.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        let Value::Object(t) = next else { return };
        current = t;
    }
    match (current.get_mut(last), value) {
        (Some(existing @ Value::Object(_)), Value::Object(_)) if upsert => merge(existing, value),
        _ => {
            current.insert(last.clone(), without_nulls(value));
        }
    }
}

/// The tables along `segments` (the key's parents, deepest first) that hold only tables: TOML
/// writes no header of their own for them.
pub fn implicit_parents(root: &Map<String, Value>, segments: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current = root;
    for i in 0..segments.len().saturating_sub(1) {
        let Some(Value::Object(t)) = current.get(&segments[i]) else {
            break;
        };
        if t.values().all(Value::is_object) {
            out.push(segments[..=i].to_vec());
        }
        current = t;
    }
    out.reverse();
    out
}

/// Removes the table at `path` if it holds nothing.
pub fn remove_if_empty(root: &mut Map<String, Value>, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = root;
    for p in parents {
        match current.get_mut(p) {
            Some(Value::Object(t)) => current = t,
            _ => return,
        }
    }
    if current
        .get(last)
        .is_some_and(|t| t.as_object().is_some_and(Map::is_empty))
    {
        current.shift_remove(last);
    }
}

/// codex's `merge_toml_values`: tables merge key by key, anything else replaces.
fn merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k.clone(), without_nulls(v));
                    }
                }
            }
        }
        (b, o) => *b = without_nulls(o),
    }
}

/// TOML has no null: a table key whose value is null is left out, as converting the client's
/// JSON to TOML does.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(t) => Value::Object(
            t.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// A layer as codex loads it: its retired `on-failure` approval policy read as `on-request`
/// (0.163.0 to 0.171.0: a file saying `on-failure` hashes, and `config/read` shows it, as one
/// saying `on-request`; the file keeps its words).
pub fn as_loaded(table: &Map<String, Value>) -> Map<String, Value> {
    let mut table = table.clone();
    if table.get("approval_policy") == Some(&json!("on-failure")) {
        table.insert("approval_policy".into(), json!("on-request"));
    }
    table
}

/// The user layer as `config/read` loads it: an MCP server's timeouts are seconds codex loads as
/// floats, a file's `5` is `5.0` in the layer, its version and the read — while a write's answer
/// hashes the file as written (`294b` on every version: the two versions differ).
pub fn as_read(table: &Map<String, Value>) -> Map<String, Value> {
    let mut table = as_loaded(table);
    if let Some(Value::Object(servers)) = table.get_mut("mcp_servers") {
        for server in servers.values_mut().filter_map(Value::as_object_mut) {
            for key in ["startup_timeout_sec", "tool_timeout_sec"] {
                if let Some(n) = server.get(key).and_then(Value::as_i64) {
                    server.insert(key.into(), json!(n as f64));
                }
            }
        }
    }
    table
}

/// codex's layer version: `sha256:` and the hex digest of the table as compact JSON with every
/// object's keys sorted (`codex-rs/config/src/fingerprint.rs`, `version_for_toml`).
pub fn version(table: &Map<String, Value>) -> String {
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), canonical(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_vec(&canonical(&Value::Object(as_loaded(table)))).unwrap_or_default();
    let digest = Sha256::digest(&text);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `config/read`'s `origins`: every leaf of the table (array items by index), dotted.
pub fn origins(table: &Map<String, Value>, layer: &Value) -> Map<String, Value> {
    fn walk(v: &Value, path: &mut Vec<String>, layer: &Value, out: &mut Map<String, Value>) {
        match v {
            Value::Object(t) => {
                for (k, v) in t {
                    path.push(k.clone());
                    walk(v, path, layer, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    path.push(i.to_string());
                    walk(v, path, layer, out);
                    path.pop();
                }
            }
            _ if !path.is_empty() => {
                out.insert(path.join("."), layer.clone());
            }
            _ => {}
        }
    }
    let mut out = Map::new();
    walk(
        &Value::Object(table.clone()),
        &mut Vec::new(),
        layer,
        &mut out,
    );
    out
}

/// The user layer's metadata (`{name, version}`).
pub fn user_layer(file: &str, table: &Map<String, Value>) -> Value {
    json!({"name": {"type": "user", "file": file, "profile": null}, "version": version(table)})
}

/// The session-flags layer (`-c key=value`, codex's highest) metadata.
pub fn flags_layer(flags: &Map<String, Value>) -> Value {
    json!({"name": {"type": "sessionFlags"}, "version": version(flags)})
}

/// `config/read`'s `layers`, highest precedence first: the `-c` flags' (when given), the
/// user's, then the (empty) system one.
pub fn layers(file: &str, table: &Map<String, Value>, flags: &Map<String, Value>) -> Value {
    let mut out = Vec::new();
    if !flags.is_empty() {
        let mut f = flags_layer(flags);
        f["config"] = Value::Object(flags.clone());
        out.push(f);
    }
    let mut user = user_layer(file, table);
    user["config"] = Value::Object(table.clone());
    out.push(user);
    out.push(json!({"name": {"type": "system", "file": SYSTEM_FILE},
                    "version": version(&Map::new()), "config": {}}));
    Value::Array(out)
}

/// The `-c key=value` overrides as codex layers them: each value TOML (else a string), set at
/// its dotted path.
pub fn flags(overrides: &[(String, String)]) -> Map<String, Value> {
    let mut t = Map::new();
    for (k, raw) in overrides {
        let v = format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut x| x.remove("v"))
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or_else(|| Value::String(raw.clone()));
        let segments: Vec<String> = k.split('.').map(str::to_string).collect();
        apply(&mut t, &segments, &v, true);
    }
    t
}

/// The user table with the flags over it (codex's `merge_toml_values`, deep).
pub fn merged(user: &Map<String, Value>, flags: &Map<String, Value>) -> Map<String, Value> {
    let mut v = Value::Object(user.clone());
    merge(&mut v, &Value::Object(flags.clone()));
    v.as_object().cloned().unwrap_or_default()
}

/// The value at a path of a table.
fn at<'a>(t: &'a Map<String, Value>, segments: &[String]) -> Option<&'a Value> {
    let (first, rest) = segments.split_first()?;
    rest.iter()
        .try_fold(t.get(first)?, |v, s| v.as_object()?.get(s))
}

/// codex's `first_overridden_edit`: the first edited path whose value the flags layer sets
/// otherwise, with what the effective config holds there.
pub fn overridden(
    user: &Map<String, Value>,
    flags: &Map<String, Value>,
    paths: &[Vec<String>],
) -> Option<Value> {
    let effective = merged(user, flags);
    paths.iter().find_map(|p| {
        let mine = at(user, p);
        let there = at(&effective, p);
        if (mine.is_some() && mine == there) || (mine.is_none() && there.is_none()) {
            return None;
        }
        at(flags, p)?;
        Some(json!({"message": "Overridden by session flags",
                    "overridingLayer": flags_layer(flags),
                    "effectiveValue": there.cloned().unwrap_or(Value::Null)}))
    })
}

/// `config.toml` after a write, as codex edits it: the file's text with what changed in the
/// table changed in place (turn scenario 276 on every version): an untouched key keeps its
/// place and form (an inline table stays inline), a changed value its place, an inline table
/// something is written into becomes a table of its own where it was, a new key goes after the
/// top's other values and a new table after the file's tables. A file that does not parse is
/// written afresh.
pub fn edited_toml(old: &str, table: &Map<String, Value>) -> String {
    let Ok(mut doc) = old.parse::<toml_edit::DocumentMut>() else {
        return to_toml(table);
    };
    // Tables an inline table becomes go before the file's own tables, in the inline's order.
    let mut promoted = -(1 << 20);
    sync_table(doc.as_table_mut(), table, &mut promoted);
    doc.to_string()
}

fn sync_table(t: &mut toml_edit::Table, new: &Map<String, Value>, promoted: &mut isize) {
    let gone: Vec<String> = t
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !new.contains_key(k))
        .collect();
    for k in gone {
        t.remove(&k);
    }
    for (k, v) in new {
        match t.get_mut(k) {
            Some(item) => sync_item(item, v, promoted),
            None => {
                t.insert(k, new_item(v));
            }
        }
    }
}

fn sync_item(item: &mut toml_edit::Item, v: &Value, promoted: &mut isize) {
    use toml_edit::Item;
    if item_json(item) == *v {
        return;
    }
    match (&mut *item, v) {
        (Item::Table(t), Value::Object(m)) => sync_table(t, m, promoted),
        (Item::Value(toml_edit::Value::InlineTable(inline)), Value::Object(m)) => {
            let mut t = std::mem::take(inline).into_table();
            t.set_position(Some(*promoted));
            *promoted += 1;
            sync_table(&mut t, m, promoted);
            *item = Item::Table(t);
        }
        (Item::Value(old), _) if !v.is_object() => {
            let decor = old.decor().clone();
            let mut fresh = toml_value(v);
            *fresh.decor_mut() = decor;
            *old = fresh;
        }
        _ => *item = new_item(v),
    }
}

/// A new key's item: an object a table of its own (a header only when it holds values), else
/// a value.
fn new_item(v: &Value) -> toml_edit::Item {
    match v {
        Value::Object(m) => {
            let mut t = toml_edit::Table::new();
            t.set_implicit(!m.is_empty() && m.values().all(Value::is_object));
            for (k, x) in m {
                t.insert(k, new_item(x));
            }
            toml_edit::Item::Table(t)
        }
        _ => toml_edit::Item::Value(toml_value(v)),
    }
}

fn toml_value(v: &Value) -> toml_edit::Value {
    match v {
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(a) => toml_edit::Value::Array(a.iter().map(toml_value).collect()),
        Value::Object(m) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, x) in m {
                t.insert(k, toml_value(x));
            }
            toml_edit::Value::InlineTable(t)
        }
        Value::Null => "".into(),
    }
}

/// An item as the JSON the table holds (to tell a changed value from a kept one).
fn item_json(item: &toml_edit::Item) -> Value {
    let text = match item {
        toml_edit::Item::None => return Value::Null,
        toml_edit::Item::Value(v) => format!("v = {v}"),
        other => {
            let mut doc = toml_edit::DocumentMut::new();
            doc.insert("v", other.clone());
            doc.to_string()
        }
    };
    from_toml(&text).remove("v").unwrap_or(Value::Null)
}

/// The table as codex writes a fresh `config.toml` (scalars, then tables).
pub fn to_toml(table: &Map<String, Value>) -> String {
    let value: Option<toml::Value> = serde_json::from_value(Value::Object(table.clone())).ok();
    value
        .and_then(|v| toml::to_string(&v).ok())
        .unwrap_or_default()
}

/// A `config.toml`'s text as a table (not TOML: empty, as codex would refuse it elsewhere).
pub fn from_toml(text: &str) -> Map<String, Value> {
    text.parse::<toml::Table>()
        .ok()
        .and_then(|t| serde_json::to_value(t).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// Whether a write's `filePath` names the user config (codex normalizes `.` and `..`).
pub fn is_user_file(given: &str, user: &std::path::Path) -> Option<String> {
    if !given.starts_with('/') {
        return None;
    }
    let normal = super::settings::normalize(std::path::Path::new(given));
    (std::path::Path::new(&normal) == user).then_some(normal)
}

/// A refusal to the client: the write's error code and message.
pub fn refusal(code: &'static str, message: impl Into<String>) -> WriteError {
    refused(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts::of(codex_wire_protocol::newest())
    }

    #[test]
    fn provider_entries_are_checked_by_the_probed_rules() {
        let f = facts();
        let refusal = |t: Value| {
            f.check(t.as_object().unwrap())
                .err()
                .map(|e| e.message.to_string())
        };
        let m = refusal(json!({"model_providers": {"c": {"base_url": "http://x"}}})).unwrap();
        assert!(
            m.contains("model_providers.c: provider name must not be empty"),
            "{m}"
        );
        let m = refusal(json!({"model_providers": {"c": {"name": "c", "aws": {}}}})).unwrap();
        assert!(
            m.contains("model_providers.c: provider aws is only supported"),
            "{m}"
        );
        let m = refusal(json!({"model_providers": {"openai": {"name": "o"},
                                                   "lmstudio": {"name": "l"}}}))
        .unwrap();
        assert!(m.contains("IDs: `lmstudio`, `openai`."), "{m}");
        let m = refusal(json!({"model_providers": {"amazon-bedrock": {"wire_api": "chat"}}}));
        assert!(m.unwrap().contains("amazon-bedrock only supports changing"));
        // Spared: a named provider, Bedrock's listed fields and its unknown keys, an unnamed
        // `gcp` (0.169.0 and later).
        for ok in [
            json!({"c": {"name": "c", "base_url": "http://x"}}),
            json!({"amazon-bedrock": {"base_url": "http://x", "aws": {"region": "r", "x": 1}}}),
            json!({"amazon-bedrock": {"wire_api": "responses"}}),
            json!({"gcp": {"project_id": "p"}}),
        ] {
            assert_eq!(refusal(json!({"model_providers": ok})), None);
        }
    }

    #[test]
    fn versions_are_codex_hashes() {
        // Both read off the real 0.171.0 server: an empty layer, and `model = "gpt-5"`.
        assert_eq!(
            version(&Map::new()),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        let t = json!({"model": "gpt-5"});
        assert_eq!(
            version(t.as_object().unwrap()),
            "sha256:777710df5ad26b1238811b40c77267c73e7f8eba12cde87f5b2c1560ef758259"
        );
        // Key order does not change the version.
        let a = json!({"a": 1, "b": {"d": 1, "c": 2}});
        let b = json!({"b": {"c": 2, "d": 1}, "a": 1});
        assert_eq!(
            version(a.as_object().unwrap()),
            version(b.as_object().unwrap())
        );
    }

    #[test]
    fn key_paths_split_as_codex_splits_them() {
        assert_eq!(key_path("a.b").unwrap(), ["a", "b"]);
        assert_eq!(key_path("\"a.b\".c").unwrap(), ["a.b", "c"]);
        assert_eq!(key_path("\"a\\\"b\"").unwrap(), ["a\"b"]);
        assert_eq!(key_path(" ").unwrap_err(), "keyPath must not be empty");
        assert_eq!(
            key_path("a..b").unwrap_err(),
            "keyPath segments must not be empty"
        );
        assert_eq!(
            key_path("a.").unwrap_err(),
            "keyPath segments must not be empty"
        );
        assert_eq!(
            key_path("a\"b").unwrap_err(),
            "invalid quoted keyPath segment"
        );
        assert_eq!(
            key_path("\"ab").unwrap_err(),
            "unterminated quoted keyPath segment"
        );
    }

    #[test]
    fn edits_replace_merge_and_clear() {
        let mut t = Map::new();
        apply(&mut t, &["tools".into(), "a".into()], &json!(true), false);
        apply(&mut t, &["tools".into()], &json!({"b": false}), true);
        assert_eq!(
            Value::Object(t.clone()),
            json!({"tools": {"a": true, "b": false}})
        );
        apply(&mut t, &["tools".into()], &json!({"c": 1}), false);
        assert_eq!(Value::Object(t.clone()), json!({"tools": {"c": 1}}));
        apply(&mut t, &["tools".into(), "c".into()], &Value::Null, false);
        assert_eq!(Value::Object(t.clone()), json!({"tools": {}}));
        // A scalar parent becomes a table.
        apply(&mut t, &["model".into()], &json!("m"), false);
        apply(&mut t, &["model".into(), "x".into()], &json!(1), false);
        assert_eq!(t["model"], json!({"x": 1}));
    }

    #[test]
    fn checks_use_the_probed_messages_with_the_clients_value() {
        let f = facts();
        let t = json!({"model": 7});
        assert_eq!(
            f.check(t.as_object().unwrap()).unwrap_err().message,
            "Invalid configuration: invalid type: integer `7`, expected a string\nin `model`\n"
        );
        let t = json!({"zzz": 1, "sandbox_mode": "bogus", "approval_policy": "bogus"});
        assert_eq!(
            f.check(t.as_object().unwrap()).unwrap_err().message,
            "Invalid configuration: unknown variant `bogus`, expected one of `read-only`, \
             `workspace-write`, `danger-full-access`\nin `sandbox_mode`\n"
        );
        let t = json!({"sandbox_mode": "read-only", "approval_policy": "never", "model": "m"});
        assert!(f.check(t.as_object().unwrap()).is_ok());
        let t = json!({"features": {"memories": "y"}});
        assert_eq!(
            f.check(t.as_object().unwrap()).unwrap_err().message,
            "Invalid configuration: invalid type: string \"y\", expected a boolean\nin `features`\n"
        );
        // serde's words for a list and a table (what fidelity s7070001_0856 and
        // s8080001_0141 drew from the real server).
        for (v, words) in [(json!(["a", "b"]), "sequence"), (json!({}), "map")] {
            let t = json!({"features": {"memories": v}});
            assert_eq!(
                f.check(t.as_object().unwrap()).unwrap_err().message,
                format!("Invalid configuration: invalid type: {words}, expected a boolean\nin `features`\n")
            );
        }
        let t = json!({"model_context_window": 2.0});
        assert!(f
            .check(t.as_object().unwrap())
            .unwrap_err()
            .message
            .contains("floating point `2.0`, expected i64"));
    }

    #[test]
    fn reads_fill_tables_drop_unknown_keys_and_keep_every_flag() {
        let f = facts();
        let t = json!({"foo": {"bar": 1}, "model": "m",
                       "sandbox_workspace_write": {"network_access": true},
                       "features": {"memories": true, "nonexistent": true}});
        let c = f.effective(t.as_object().unwrap(), &Map::new()).unwrap();
        assert_eq!(c["model"], "m");
        assert!(c.get("foo").is_none());
        assert_eq!(c["sandbox_workspace_write"]["network_access"], true);
        assert_eq!(c["sandbox_workspace_write"]["writable_roots"], json!([]));
        assert_eq!(c["features"]["memories"], true);
        assert_eq!(c["features"]["network_proxy"], Value::Null);
        // A flag codex does not list is read back too (s8080001_0133 on 0.169.0).
        assert_eq!(c["features"]["nonexistent"], true);
        let t = json!({"model_providers": {"s": {"name": "s", "base_url": "http://b",
                                                  "request_max_retries": 0}},
                       "mcp_servers": {"u": {"url": "http://u"}}});
        let c = f.effective(t.as_object().unwrap(), &Map::new()).unwrap();
        assert_eq!(c["model_providers"]["s"]["request_max_retries"], 0);
        assert_eq!(c["model_providers"]["s"]["wire_api"], "responses");
        assert_eq!(c["model_providers"]["s"]["stream_max_retries"], Value::Null);
        assert_eq!(c["mcp_servers"]["u"]["enabled"], true);
        // A cloud provider's own settings: codex's struct around them, a sub-table filled as
        // its probe's was and the probe's keys the entry lacks null (287b).
        let t = json!({"model_providers": {"amazon-bedrock": {"aws": {"region": "r"}},
                                           "gcp": {"location": "l"}}});
        let c = f.effective(t.as_object().unwrap(), &Map::new()).unwrap();
        let aws = &c["model_providers"]["amazon-bedrock"]["aws"];
        assert_eq!(aws["region"], "r");
        assert_eq!(aws["profile"], Value::Null);
        assert_eq!(aws["credential_export"], Value::Null);
        assert_eq!(c["model_providers"]["amazon-bedrock"]["name"], "");
        assert_eq!(c["model_providers"]["gcp"]["location"], "l");
        assert_eq!(c["model_providers"]["gcp"]["project_id"], Value::Null);
        assert_eq!(c["model_providers"]["gcp"]["wire_api"], "responses");
        assert!(c["mcp_servers"]["u"].get("args").is_none());
        let t = json!({"model_provider": "nope"});
        assert_eq!(
            f.effective(t.as_object().unwrap(), &Map::new())
                .unwrap_err(),
            "failed to resolve feature override precedence: Model provider `nope` not found"
        );
    }
}
