//! Facts the schema bundle lacks, asked of the pinned binary itself.
//!
//! (a) names of untagged enums, keyed by JSON pointer into the bundle;
//! (b) params shape of the request methods the bundle omits;
//! (c) the unknown-method list, in the server's order;
//! (d) experimental gating messages (connection initialized without `experimentalApi`);
//! (e) messages of custom deserializers met while mutating params.

use crate::gen::{self, Case, Schema};
use crate::server::{self, Observed, Server};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Prefixes of messages serde itself produces (anything else comes from custom code).
const SERDE_PREFIXES: &[&str] = &[
    "invalid type: ",
    "invalid value: ",
    "invalid length ",
    "missing field `",
    "unknown variant `",
    "unknown field `",
    "duplicate field `",
    "data did not match any variant of untagged enum ",
];

/// The `message` of an error reply.
fn message(reply: &str) -> Option<String> {
    let v: Value = serde_json::from_str(reply).ok()?;
    v.pointer("/error/message")?.as_str().map(str::to_string)
}

fn observed_message(o: &Observed) -> Option<String> {
    match o {
        Observed::Error(r) | Observed::Accepted(Some(r)) => message(r),
        _ => None,
    }
}

fn detail(msg: &str) -> &str {
    msg.strip_prefix("Invalid request: ").unwrap_or(msg)
}

/// Backquoted names of `... expected one of `a`, `b`` in order.
pub fn expected_list(msg: &str) -> Vec<String> {
    let Some(i) = msg.find("expected one of ") else {
        return Vec::new();
    };
    msg[i..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The `expected ...` part of a serde `invalid type/value` message when it is not one serde
/// itself or a derive writes (a custom `Visitor::expecting`, e.g. `path string`).
fn custom_expecting(d: &str) -> Option<String> {
    if !(d.starts_with("invalid type: ") || d.starts_with("invalid value: ")) {
        return None;
    }
    let e = &d[d.rfind(", expected ")? + ", expected ".len()..];
    const STANDARD: &[&str] = &[
        "struct ",
        "enum ",
        "internally tagged enum ",
        "adjacently tagged enum ",
        "tuple",
        "a string",
        "a boolean",
        "a sequence",
        "a map",
        "a character",
        "a borrowed",
        "a unit",
        "unit",
        "any value",
        "option",
        "map with a single key",
        "variant identifier",
        "variant index ",
        "field identifier",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "f32",
        "f64",
        "a nonzero",
        "a valid",
    ];
    if STANDARD.iter().any(|p| e.starts_with(p)) {
        None
    } else {
        Some(e.to_string())
    }
}

/// `N` of `invalid length 0, expected struct X with N elements`.
fn positional_len(msg: &str) -> Option<usize> {
    let i = msg.find(" with ")?;
    msg[i + 6..].split(' ').next()?.parse().ok()
}

fn untagged_name(msg: &str) -> Option<String> {
    const P: &str = "data did not match any variant of untagged enum ";
    let i = msg.find(P)?;
    let rest = &msg[i + P.len()..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Sort object keys recursively (deterministic output with `preserve_order`).
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let b: BTreeMap<String, Value> = m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(b.into_iter().collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        x => x,
    }
}

fn codex_version(codex: &Path) -> String {
    std::process::Command::new(codex)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A connection for probing one request at a time.
struct Session {
    srv: Server,
    next_id: i64,
}

impl Session {
    fn open(codex: &Path, init: &str) -> Result<Session, String> {
        let mut srv = Server::spawn(codex)?;
        srv.call(init.as_bytes(), Duration::from_secs(20))
            .ok_or("no reply to initialize")?;
        Ok(Session { srv, next_id: 1 })
    }

    /// Reply message of a request (None: no reply in time).
    fn ask(&mut self, method: &str, params: Option<&Value>) -> Option<String> {
        let id = self.next_id;
        self.next_id += 1;
        let line = gen::request(id, method, params);
        self.srv.call(&line, CALL_TIMEOUT).and_then(|r| message(&r))
    }
}

/// (b) Probe required fields and their types, or the untagged variants, of a method.
fn probe_unlisted(s: &mut Session, method: &str) -> Value {
    let mut params = Map::new();
    let mut fields = Map::new();
    let mut required = Vec::new();
    let mut out = Map::new();
    for _ in 0..12 {
        let msg = s.ask(method, Some(&Value::Object(params.clone())));
        let Some(msg) = msg else {
            out.insert("accepted_with".into(), Value::Object(params.clone()));
            break;
        };
        let d = detail(&msg).to_string();
        if let Some(f) = d
            .strip_prefix("missing field `")
            .and_then(|r| r.split('`').next())
        {
            let f = f.to_string();
            // Its type: the message for a value of each JSON type; keep one that passes.
            let mut ty = Map::new();
            let mut good = None;
            for (t, v) in [
                ("string", Value::from(gen::safe_string(&f))),
                ("number", json!(7)),
                ("bool", json!(true)),
                ("array", json!([])),
                ("object", json!({})),
                ("null", Value::Null),
            ] {
                let mut p = params.clone();
                p.insert(f.clone(), v.clone());
                let m = s.ask(method, Some(&Value::Object(p)));
                let passes = match &m {
                    None => true,
                    Some(m) => {
                        let bad_type = m.starts_with("Invalid request: invalid type");
                        let still_missing = m.starts_with("Invalid request: missing field `")
                            && m.contains(&format!("`{f}`"));
                        !bad_type && !still_missing
                    }
                };
                if passes && good.is_none() {
                    good = Some(v.clone());
                }
                ty.insert(
                    t.into(),
                    m.map(|m| Value::from(detail(&m).to_string()))
                        .unwrap_or(Value::Null),
                );
            }
            fields.insert(f.clone(), json!({ "replies": ty }));
            required.push(Value::from(f.clone()));
            match good {
                Some(v) => {
                    params.insert(f, v);
                }
                None => break,
            }
            continue;
        }
        if let Some(name) = untagged_name(&d) {
            out.insert("untagged".into(), Value::from(name));
            // Which single string fields make a variant match?
            let mut variants = Vec::new();
            for cand in [
                "conversationId",
                "rolloutPath",
                "threadId",
                "path",
                "cwd",
                "id",
            ] {
                let p = json!({ cand: gen::safe_string(cand) });
                let m = s.ask(method, Some(&p));
                let matched = m.as_deref().is_none_or(|m| untagged_name(m).is_none());
                if matched {
                    variants.push(json!({
                        "required": [cand],
                        "properties": { cand: { "type": "string" } },
                        "reply": m.map(Value::from).unwrap_or(Value::Null),
                    }));
                }
            }
            out.insert("anyOf".into(), Value::Array(variants));
            break;
        }
        out.insert("final_reply".into(), Value::from(d));
        break;
    }
    // Optional fields cannot be named by errors: check a few likely names (a wrongly typed
    // value is rejected only by a known field), and the element types of the positional form.
    let mut optional = Map::new();
    for cand in [
        "includeToken",
        "refreshToken",
        "conversationId",
        "rolloutPath",
        "cwd",
        "threadId",
        "path",
    ] {
        if fields.contains_key(cand) {
            continue;
        }
        let mut p = params.clone();
        p.insert(cand.into(), json!({ "codexWireProbe": [] }));
        if let Some(m) = s.ask(method, Some(&Value::Object(p))) {
            let d = detail(&m);
            if d.starts_with("invalid type: map") {
                optional.insert(cand.into(), json!({ "reply": d }));
            }
        }
    }
    out.insert("optional_found".into(), Value::Object(optional));
    if let Some(n) = s
        .ask(method, Some(&json!([])))
        .and_then(|m| positional_len(&m))
    {
        let mut elems = Vec::new();
        for i in 0..n.min(16) {
            let mut a = vec![Value::Null; n];
            a[i] = json!({ "codexWireProbe": [] });
            let m = s.ask(method, Some(&Value::Array(a)));
            elems.push(
                m.map(|m| Value::from(detail(&m).to_string()))
                    .unwrap_or(Value::Null),
            );
        }
        out.insert("positional".into(), json!({ "len": n, "replies": elems }));
    }
    out.insert("type".into(), Value::from("object"));
    out.insert("required".into(), Value::Array(required));
    out.insert("properties".into(), Value::Object(fields));
    // Other param shapes, for the record.
    let mut shapes = Map::new();
    for (what, p) in [
        ("absent", None),
        ("null", Some(Value::Null)),
        ("array", Some(json!([]))),
    ] {
        if what == "absent" && gen::UNSAFE_METHODS.contains(&method) {
            continue;
        }
        let m = s.ask(method, p.as_ref());
        shapes.insert(what.into(), m.map(Value::from).unwrap_or(Value::Null));
    }
    out.insert("params_replies".into(), Value::Object(shapes));
    Value::Object(out)
}

/// `bundle`: the JSON schema bundle of the same binary (the methods it lists).
pub fn probe_facts(codex: &Path, bundle: &Path) -> Value {
    let mut facts = Map::new();
    facts.insert("codex_version".into(), Value::from(codex_version(codex)));
    let schema = match Schema::load(bundle) {
        Ok(s) => s,
        Err(e) => {
            facts.insert("error".into(), Value::from(e));
            return sorted(Value::Object(facts));
        }
    };
    let mut errors = Vec::new();

    // (b) + (c) on one experimental connection.
    match Session::open(codex, gen::INIT_EXPERIMENTAL) {
        Ok(mut s) => {
            let msg = s
                .ask("codex-wire-bogus", Some(&json!({})))
                .unwrap_or_default();
            let list = expected_list(&msg);
            let listed: Vec<String> = schema.methods().into_iter().map(|m| m.name).collect();
            let missing: Vec<Value> = list
                .iter()
                .filter(|m| !listed.contains(m))
                .map(|m| Value::from(m.as_str()))
                .collect();
            facts.insert(
                "unknown_method".into(),
                json!({
                    "message": msg,
                    "methods": list,
                    "count": list.len(),
                    "not_in_bundle": missing,
                }),
            );
            let mut unl = Map::new();
            for m in gen::UNLISTED_METHODS {
                unl.insert(m.into(), probe_unlisted(&mut s, m));
            }
            facts.insert("unlisted_methods".into(), Value::Object(unl));
        }
        Err(e) => errors.push(Value::from(format!("session: {e}"))),
    }

    // (a), (d), (e) from generated cases.
    let cases: Vec<Case> = gen::generate(&schema)
        .into_iter()
        .filter(|c| {
            matches!(
                c.category.as_str(),
                "untagged_nomatch" | "experimental_gate" | "wrong_type" | "string_value"
            )
        })
        .collect();
    let lines: Vec<Vec<Vec<u8>>> = cases.iter().map(|c| c.lines.clone()).collect();
    let solo = vec![false; cases.len()];
    let obs = server::run_cases(codex, &lines, &solo);

    let mut untagged: BTreeMap<String, Value> = BTreeMap::new();
    let mut path_fields: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut gating = Map::new();
    let mut custom: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut expecting: BTreeMap<String, String> = BTreeMap::new();
    for (c, o) in cases.iter().zip(obs) {
        let Some(o) = o else {
            errors.push(Value::from(format!("{}: run failed", c.name)));
            continue;
        };
        let Some(last) = o.last() else { continue };
        let Some(msg) = observed_message(last) else {
            continue;
        };
        let d = detail(&msg).to_string();
        if c.category == "untagged_nomatch" {
            if let (Some(ptr), Some(name)) = (&c.ptr, untagged_name(&d)) {
                untagged
                    .entry(ptr.clone())
                    .or_insert_with(|| json!({ "name": name, "example": c.name }));
            }
        }
        if c.category == "wrong_type" && d.ends_with("expected path string") {
            if let Some(ptr) = &c.ptr {
                path_fields.insert(format!("#{ptr}"));
            }
        }
        if c.category == "experimental_gate" && msg.contains("experimentalApi") {
            gating.insert(c.name.clone(), Value::from(msg.clone()));
        }
        if let Some(e) = custom_expecting(&d) {
            expecting.entry(e).or_insert_with(|| c.name.clone());
        }
        if matches!(last, Observed::Error(_))
            && msg.starts_with("Invalid request: ")
            && !SERDE_PREFIXES.iter().any(|p| d.starts_with(p))
        {
            let e = custom.entry(d).or_default();
            if e.len() < 3 {
                e.push(c.name.clone());
            }
        }
    }
    facts.insert(
        "untagged_enums".into(),
        Value::Object(untagged.into_iter().collect()),
    );
    facts.insert("experimental_gating".into(), Value::Object(gating));
    // Strings that are `PathBuf` in the server (`expected path string`), by schema pointer.
    facts.insert(
        "path_fields".into(),
        Value::Array(path_fields.into_iter().map(Value::from).collect()),
    );
    facts.insert(
        "custom_messages".into(),
        Value::Object(
            custom
                .into_iter()
                .map(|(k, v)| (k, json!({ "examples": v })))
                .collect(),
        ),
    );
    facts.insert(
        "custom_expecting".into(),
        Value::Object(
            expecting
                .into_iter()
                .map(|(k, v)| (k, json!({ "example": v })))
                .collect(),
        ),
    );
    if !errors.is_empty() {
        facts.insert("errors".into(), Value::Array(errors));
    }
    sorted(Value::Object(facts))
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mut codex_arg: Option<std::path::PathBuf> = None;
    let mut write = false;
    let mut version = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--codex" => codex_arg = Some(it.next().ok_or("--codex needs a path")?.into()),
            "--write" => write = true,
            "--version" => version = Some(it.next().ok_or("--version needs a value")?.as_str()),
            other => return Err(format!("probe: unknown argument {other:?}")),
        }
    }
    let version = crate::codex_bin::pick_version(version)?;
    let codex = crate::codex_bin::ensure_codex(&version, codex_arg.as_deref())?;
    let t0 = std::time::Instant::now();
    let facts = probe_facts(&codex, &crate::conformance::schema_path(&version));
    let text = serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())? + "\n";
    if write {
        let path = crate::codex_bin::schema_dir(&version)
            .join("facts")
            .join("probed.json");
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        std::fs::write(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!(
            "wrote {} in {:.1}s",
            path.display(),
            t0.elapsed().as_secs_f64()
        );
    } else {
        print!("{text}");
        eprintln!("probed in {:.1}s", t0.elapsed().as_secs_f64());
    }
    Ok(())
}
