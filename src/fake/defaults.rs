//! Results for methods the fake does not implement: a result the real server gave in the
//! captured session when there is one, else the minimal value valid for the method's response
//! schema (required fields only; nullable → `null`, first enum value, first variant).

use crate::Protocol;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

struct Schema {
    /// Every definition by name (the bundle nests the v2 ones under `definitions.v2`).
    defs: Map<String, Value>,
    /// Client request method → response type name.
    responses: HashMap<String, String>,
    /// (`ClientRequest` / `ServerRequest`, method) → (params type, response type if declared).
    messages: HashMap<(&'static str, String), (String, Option<String>)>,
    /// Client request method → result the real server sent in the captured session.
    captured: HashMap<String, Value>,
}

/// The schema of one version, read once per process.
fn schema(p: &'static Protocol) -> &'static Schema {
    static S: OnceLock<Mutex<HashMap<&'static str, &'static Schema>>> = OnceLock::new();
    let cache = S.get_or_init(Default::default);
    if let Some(s) = crate::fake::state::lock(cache).get(p.version) {
        return s;
    }
    // Built outside the lock: a request never waits on the start-up thread that builds it at
    // the lowest priority (under load it could starve while holding the lock). Two threads
    // may then both build it; the first stored is kept.
    let built = {
        let defs = p.definitions();
        // A request's response type is named after its params type (`FooParams` → `FooResponse`).
        let mut messages = HashMap::new();
        for root in ["ClientRequest", "ServerRequest"] {
            for member in defs[root]["oneOf"].as_array().into_iter().flatten() {
                let method = member["properties"]["method"]["enum"][0].as_str();
                let params = member["properties"]["params"]["$ref"].as_str();
                if let (Some(m), Some(p)) = (method, params) {
                    let stem = ref_name(p);
                    let resp = format!("{}Response", stem.strip_suffix("Params").unwrap_or(stem));
                    let resp = defs.contains_key(&resp).then_some(resp);
                    messages.insert((root, m.to_string()), (stem.to_string(), resp));
                }
            }
        }
        // The protocol's own pairing (the name rule, and codex's pairings it misses).
        let responses = p
            .client_result_types
            .iter()
            .map(|(m, t)| (m.to_string(), ref_name(t).to_string()))
            .collect();
        Box::leak(Box::new(Schema {
            defs,
            responses,
            messages,
            captured: captured(p.captured_session),
        }))
    };
    crate::fake::state::lock(cache)
        .entry(p.version)
        .or_insert(built)
}

fn captured(session: &str) -> HashMap<String, Value> {
    let mut methods = HashMap::new();
    let mut out = HashMap::new();
    for line in session.lines() {
        let Ok(entry) = line.parse::<Value>() else {
            continue;
        };
        let Some(Ok(msg)) = entry["line"].as_str().map(str::parse::<Value>) else {
            continue;
        };
        let id = msg["id"].to_string();
        match (entry["dir"].as_str(), msg["method"].as_str()) {
            (Some("in"), Some(m)) => {
                methods.insert(id, m.to_string());
            }
            (Some("out"), None) if msg.get("result").is_some() => {
                if let Some(m) = methods.get(&id) {
                    out.insert(m.clone(), msg["result"].clone());
                }
            }
            _ => {}
        }
    }
    out
}

fn ref_name(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// The default result for `method`.
/// Builds the version's schema tables now (on a thread of their own at start-up): built on
/// first use, they made that request take ~60 ms where the real server answers in 2 ms, and a
/// notification due meanwhile went out first (fidelity s19190001_0135, `experimentalFeature/
/// list`).
pub fn warm(p: &'static Protocol) {
    let _ = result_for(p, "experimentalFeature/list");
}

pub fn result_for(p: &'static Protocol, method: &str) -> Value {
    let s = schema(p);
    // Results that depend on the session (threads, paths) are not replayed from the capture.
    const LIVE: &[&str] = &["thread/start", "initialize", "skills/list"];
    if !LIVE.contains(&method) {
        if let Some(v) = s
            .captured
            .get(method)
            .and_then(|v| schema_clean(p, method, v))
        {
            return v;
        }
    }
    match s.responses.get(method).and_then(|r| s.defs.get(r)) {
        Some(def) => shaped(p, method, minimal(s, def, 0, false)),
        None => json!({}),
    }
}

/// `v` (a result of `method`) as the real server writes it: the keys it always sends
/// (`x: T | null` in its TypeScript) that `v` lacks added as `null`, and every object's keys in
/// the declaration order of its type; the keys its types lack left out (a rule written for the
/// newest version also answers as an older one, which never sends a later field).
pub fn shaped(p: &'static Protocol, method: &str, mut v: Value) -> Value {
    use codex_wire_protocol::track::JsonPath;
    if let Some(clean) = schema_clean(p, method, &v) {
        v = clean;
    }
    // Each round fills the keys absent so far; a filled `null` opens no new object.
    for _ in 0..4 {
        let mut path = JsonPath::shaping();
        if (p.check_result_at)(method, &v, &mut path).is_none() {
            return v;
        }
        let missing = path.take_missing();
        for (at, keys) in path.take_orders() {
            if let Some(Value::Object(o)) = at_path(&mut v, &at) {
                let mut rest = std::mem::take(o);
                for k in keys {
                    if let Some((k, x)) = rest.shift_remove_entry(k) {
                        o.insert(k, x);
                    }
                }
                o.extend(rest);
            }
        }
        if missing.is_empty() {
            break;
        }
        for m in missing {
            let Some((parent, key)) = m.rsplit_once('.') else {
                continue;
            };
            // Mostly `T | null`; a defaulted list or map is sent empty: the first of these
            // the type takes (else the key stays out: the value stays valid).
            let mut fitted = false;
            for empty in [Value::Null, json!([]), json!({})] {
                if let Some(Value::Object(o)) = at_path(&mut v, parent) {
                    o.insert(key.to_string(), empty);
                }
                if matches!(p.check_result(method, &v), Some(Ok(_))) {
                    fitted = true;
                    break;
                }
            }
            if !fitted {
                if let Some(Value::Object(o)) = at_path(&mut v, parent) {
                    o.shift_remove(key);
                }
            }
        }
    }
    v
}

/// The value at a result walk's path (`$.result`, then `.key`, `[n]`; a quoted key is not
/// followed).
fn at_path<'a>(v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut rest = path.strip_prefix("$.result")?;
    let mut cur = v;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            cur = cur.get_mut(r[..end].parse::<usize>().ok()?)?;
            rest = &r[end + 1..];
        } else {
            let r = rest.strip_prefix('.')?;
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get_mut(&r[..end])?;
            rest = &r[end..];
        }
    }
    Some(cur)
}

/// The captured result without the keys the schema does not declare (the real server sends a
/// few the bundle lacks; the fake only sends what the schema allows). None if still not clean.
fn schema_clean(p: &Protocol, method: &str, v: &Value) -> Option<Value> {
    let mut v = v.clone();
    for _ in 0..3 {
        match p.check_result(method, &v) {
            None => return Some(v),
            Some(Ok(paths)) if paths.is_empty() => return Some(v),
            Some(Ok(paths)) => {
                for p in paths {
                    remove_path(&mut v, p.strip_prefix("$.result").unwrap_or(&p));
                }
            }
            Some(Err(_)) => return None,
        }
    }
    None
}

/// Removes the key at a tracker path such as `.config.mcp_servers` or `.data[0].extra`.
fn remove_path(v: &mut Value, path: &str) {
    let mut segs: Vec<&str> = Vec::new();
    for part in path.split('.').filter(|s| !s.is_empty()) {
        let mut rest = part;
        while let Some(i) = rest.find('[') {
            if i > 0 {
                segs.push(&rest[..i]);
            }
            let end = rest[i..].find(']').map(|e| i + e + 1).unwrap_or(rest.len());
            segs.push(&rest[i..end]);
            rest = &rest[end..];
        }
        if !rest.is_empty() {
            segs.push(rest);
        }
    }
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in parents {
        let next = match seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            Some(n) => n.parse::<usize>().ok().and_then(|n| cur.get_mut(n)),
            None => cur.get_mut(*seg),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(o) = cur.as_object_mut() {
        o.shift_remove(*last);
    }
}

/// A request's params type and response type (if the schema declares one), by method; `root`
/// is `ClientRequest` or `ServerRequest`.
pub fn request_types(
    p: &'static Protocol,
    root: &str,
    method: &str,
) -> Option<(&'static str, Option<&'static str>)> {
    let (params, resp) = schema(p)
        .messages
        .get(&(root_name(root)?, method.to_string()))?;
    Some((params.as_str(), resp.as_deref()))
}

fn root_name(root: &str) -> Option<&'static str> {
    ["ClientRequest", "ServerRequest"]
        .into_iter()
        .find(|r| *r == root)
}

/// The minimal valid value of a schema node.
pub fn minimal_of(p: &'static Protocol, def_name: &str) -> Value {
    let s = schema(p);
    s.defs
        .get(def_name)
        .map(|d| minimal(s, d, 0, false))
        .unwrap_or(Value::Null)
}

/// A rich valid-shaped value of a schema node: every optional field filled (to a depth), the
/// non-null branch of nullable fields, one element per array, the `pick`-th variant of unions.
/// Traffic generators use it for the shapes real clients send; the engine says what is valid.
pub fn full_of(p: &'static Protocol, def_name: &str, pick: u64) -> Value {
    let s = schema(p);
    s.defs
        .get(def_name)
        .map(|d| fill(s, d, 0, false, Some(pick)))
        .unwrap_or(Value::Null)
}

fn minimal(s: &Schema, node: &Value, depth: usize, path_like: bool) -> Value {
    fill(s, node, depth, path_like, None)
}

/// How deep [`full_of`] fills optional fields (recursive types would never end).
const FULL_DEPTH: usize = 8;

/// [`minimal`] (`pick` None), or [`full_of`]'s fill.
fn fill(s: &Schema, node: &Value, depth: usize, path_like: bool, pick: Option<u64>) -> Value {
    let pick = pick.filter(|_| depth < FULL_DEPTH);
    // The schema is finite but recursive types exist; required fields never loop in practice,
    // the bound keeps a broken bundle from recursing forever.
    if depth > 40 {
        return Value::Null;
    }
    let Some(obj) = node.as_object() else {
        return Value::Null; // `true`: any JSON value
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = ref_name(r);
        let path_like = path_like || name.contains("Path");
        return s
            .defs
            .get(name)
            .map(|d| fill(s, d, depth + 1, path_like, pick))
            .unwrap_or(Value::Null);
    }
    if let Some(c) = obj.get("const") {
        return c.clone();
    }
    if let Some(Value::Array(vs)) = obj.get("enum") {
        let i = pick.map_or(0, |p| p as usize % vs.len().max(1));
        return vs.get(i).cloned().unwrap_or(Value::Null);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(vs)) = obj.get(key) {
            let non_null: Vec<&Value> = vs.iter().filter(|v| v["type"] != "null").collect();
            let chosen = match pick {
                None if non_null.len() < vs.len() => return Value::Null,
                None => vs.first(),
                Some(p) => non_null.get(p as usize % non_null.len().max(1)).copied(),
            };
            return chosen
                .map(|v| fill(s, v, depth + 1, path_like, pick))
                .unwrap_or(Value::Null);
        }
    }
    let types: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if obj.contains_key("properties") => vec!["object"],
        _ => vec![],
    };
    if types.contains(&"null") && pick.is_none() {
        return Value::Null;
    }
    let full = pick.is_some();
    match types.iter().copied().find(|t| *t != "null") {
        Some("string") if path_like => json!(if full { "/tmp/project/src" } else { "/" }),
        // Prompt-sized text, as a client's strings mostly are.
        Some("string") if full => json!(
            "Refactor the parser so that the tests pass, then explain why the async error \
             handling in src/lib.rs had to change, and review the diff carefully before commit."
        ),
        Some("string") => json!(""),
        Some("integer") | Some("number") => json!(if full { 1 } else { 0 }),
        Some("boolean") => json!(full),
        Some("array") if full => match obj.get("items") {
            Some(items) => json!([fill(s, items, depth + 1, path_like, pick)]),
            None => json!([]),
        },
        Some("array") => json!([]),
        Some("object") => {
            let mut out = Map::new();
            let props = obj.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let names: Vec<&str> = match (full, props) {
                (true, Some(p)) => p.keys().map(String::as_str).collect(),
                _ => required,
            };
            for name in names {
                let sub = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                out.insert(name.to_string(), fill(s, sub, depth + 1, path_like, pick));
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

/// The methods whose default answer is the real server's result from the captured session
/// (`tests/corpus/<V>/real_session.jsonl`), sorted.
pub fn captured_methods(p: &'static Protocol) -> Vec<String> {
    const LIVE: &[&str] = &["thread/start", "initialize", "skills/list"];
    let mut m: Vec<String> = schema(p)
        .captured
        .keys()
        .filter(|k| !LIVE.contains(&k.as_str()))
        .cloned()
        .collect();
    m.sort();
    m
}

/// The system skills the captured session's `skills/list` showed (codex installs them into
/// `CODEX_HOME/skills/.system` at start), with the `CODEX_HOME` they were listed under.
pub fn captured_system_skills(p: &'static Protocol) -> Option<(String, Vec<Value>)> {
    let s = schema(p);
    let home = s.captured.get("initialize")?["codexHome"]
        .as_str()?
        .to_string();
    let skills = s.captured.get("skills/list")?["data"][0]["skills"]
        .as_array()?
        .iter()
        .filter(|k| k["scope"] == "system")
        .cloned()
        .collect();
    Some((home, skills))
}

/// Every client request method the schema knows, for tests.
pub fn methods(p: &'static Protocol) -> Vec<String> {
    let mut m: Vec<String> = schema(p).responses.keys().cloned().collect();
    m.sort();
    m
}

#[cfg(test)]
mod shaping_tests {
    use super::*;

    /// Results with nothing in them, as 0.171.0's real server wrote them (`cargo xtask methods`):
    /// its always-sent nulls, its key order (not the schema's alphabetical one).
    #[test]
    fn an_empty_result_is_written_as_the_real_server_writes_it() {
        let p = crate::by_version("0.171.0").expect("0.171.0");
        for (method, real) in [
            ("thread/queue/list", r#"{"data":[],"nextCursor":null}"#),
            (
                "thread/search",
                r#"{"data":[],"nextCursor":null,"backwardsCursor":null}"#,
            ),
            (
                "account/bedrock/discover",
                r#"{"profiles":[],"environmentCredentials":[]}"#,
            ),
            ("mock/experimentalMethod", r#"{"echoed":null}"#),
            // Paired by codex's table, not by name (overrides.json `responses`).
            (
                "accountSession/list",
                r#"{"activeSessionId":null,"sessions":[]}"#,
            ),
            ("account/securitySetup/read", r#"{"notice":null}"#),
        ] {
            assert_eq!(result_for(p, method).to_string(), real, "{method}");
        }
        // Keys in declaration order; a key the version's type lacks is left out.
        let v = json!({"nextCursor": "c", "extra": 1, "data": []});
        assert_eq!(
            shaped(p, "thread/queue/list", v).to_string(),
            r#"{"data":[],"nextCursor":"c"}"#
        );
    }
}
