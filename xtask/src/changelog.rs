//! `cargo xtask schema --diff A B`: the protocol changelog from codex A to codex B, read from the
//! vendored `schema/A/` and `schema/B/` — the page a client team reads on upgrade day.
//!
//! Methods (client requests and notifications, server requests and notifications) added,
//! removed, retyped or newly gated behind `experimentalApi`; per type, fields added, removed,
//! retyped or made (not) required, and enum variants added or removed. Each change says which
//! side it touches:
//! - **replies**: the type is reachable from a client request's params (or a client's response
//!   to a server request), so the server's answer to some client line changes — a field that
//!   was dropped is now typed (or the reverse), an error's text or an accepted value changes;
//! - **server messages**: reachable from what the server sends (results, notifications,
//!   requests): a client reading it sees another shape.
//!
//! The pages for the supported pairs are committed under `docs/changelog/` and checked by
//! `cargo xtask schema --check`.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::PathBuf;

const BUNDLE: &str = "json/codex_app_server_protocol.schemas.json";
const STABLE: &str = "stable/codex_app_server_protocol.schemas.json";

/// One version's bundle, flattened.
struct Side {
    /// Every definition by name (`v2` ones flattened in).
    defs: BTreeMap<String, Value>,
    /// (root union, method) → params type name ("" when none).
    methods: BTreeMap<(String, String), String>,
    /// Methods the stable bundle lacks (they need `experimentalApi`).
    experimental: BTreeSet<String>,
    /// Types reachable from what the client sends / what the server sends.
    client_side: BTreeSet<String>,
    server_side: BTreeSet<String>,
    /// The real server's unknown-method reply (probed).
    unknown_method: String,
}

const ROOTS: &[(&str, &str)] = &[
    ("ClientRequest", "client request"),
    ("ClientNotification", "client notification"),
    ("ServerRequest", "server request"),
    ("ServerNotification", "server notification"),
];

fn read(path: &PathBuf) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn flatten(bundle: &Value) -> BTreeMap<String, Value> {
    let mut defs: Map<String, Value> = bundle["definitions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Object(v2)) = defs.remove("v2") {
        defs.extend(v2);
    }
    defs.into_iter().collect()
}

fn ref_name(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// Without descriptions, titles and examples: what a change of shape is judged on.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "description" | "title" | "examples" | "$schema")
                })
                .map(|(k, v)| (k.clone(), shape(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        other => other.clone(),
    }
}

/// A short rendering of a property's type: `string | null`, `ThreadItem[]`, …
fn render(v: &Value) -> String {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return ref_name(r).to_string();
    }
    if let Some(alts) = v
        .get("anyOf")
        .or_else(|| v.get("oneOf"))
        .and_then(Value::as_array)
    {
        return alts.iter().map(render).collect::<Vec<_>>().join(" | ");
    }
    if let Some(e) = v.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match v.get("type") {
        Some(Value::String(t)) if t == "array" => {
            format!("{}[]", v.get("items").map_or("?".into(), render))
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .map(|t| {
                let t = t.as_str().unwrap_or("?");
                if t == "array" {
                    format!("{}[]", v.get("items").map_or("?".into(), render))
                } else {
                    t.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "any".into(),
    }
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(ref_name(r).to_string());
            }
            m.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

fn reach(
    defs: &BTreeMap<String, Value>,
    start: impl IntoIterator<Item = String>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = start.into_iter().collect();
    while let Some(n) = stack.pop() {
        if !seen.insert(n.clone()) {
            continue;
        }
        if let Some(d) = defs.get(&n) {
            let mut r = Vec::new();
            refs(d, &mut r);
            stack.extend(r);
        }
    }
    seen
}

/// The response type of a method whose params type is `params` (`FooParams` → `FooResponse`).
fn response_of(defs: &BTreeMap<String, Value>, params: &str) -> Option<String> {
    let stem = params.strip_suffix("Params").unwrap_or(params);
    let r = format!("{stem}Response");
    defs.contains_key(&r).then_some(r)
}

fn load(version: &str) -> Result<Side, String> {
    let dir = crate::codex_bin::schema_dir(version);
    let defs = flatten(&read(&dir.join(BUNDLE))?);
    let stable = flatten(&read(&dir.join(STABLE))?);
    let members = |defs: &BTreeMap<String, Value>, root: &str| -> Vec<(String, String)> {
        defs.get(root)
            .and_then(|d| d["oneOf"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let method = m["properties"]["method"]["enum"][0].as_str()?.to_string();
                let params = m["properties"]["params"]["$ref"]
                    .as_str()
                    .map(|r| ref_name(r).to_string())
                    .unwrap_or_default();
                Some((method, params))
            })
            .collect()
    };
    let mut methods = BTreeMap::new();
    for (root, _) in ROOTS {
        for (m, p) in members(&defs, root) {
            methods.insert((root.to_string(), m), p);
        }
    }
    let stable_methods: BTreeSet<String> = members(&stable, "ClientRequest")
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    let experimental = methods
        .keys()
        .filter(|(root, m)| root == "ClientRequest" && !stable_methods.contains(m))
        .map(|(_, m)| m.clone())
        .collect();
    let param = |root: &str| -> Vec<String> {
        methods
            .iter()
            .filter(|((r, _), p)| r == root && !p.is_empty())
            .map(|(_, p)| p.clone())
            .collect()
    };
    // The client sends request params, notification params and responses to server requests.
    let mut client_roots = param("ClientRequest");
    client_roots.extend(param("ClientNotification"));
    client_roots.extend(
        param("ServerRequest")
            .iter()
            .filter_map(|p| response_of(&defs, p)),
    );
    // The server sends results, notifications and its own requests.
    let mut server_roots: Vec<String> = param("ClientRequest")
        .iter()
        .filter_map(|p| response_of(&defs, p))
        .collect();
    server_roots.extend(param("ServerNotification"));
    server_roots.extend(param("ServerRequest"));
    client_roots.extend([
        "ClientRequest".to_string(),
        "ClientNotification".to_string(),
    ]);
    server_roots.extend([
        "ServerRequest".to_string(),
        "ServerNotification".to_string(),
    ]);
    let client_side = reach(&defs, client_roots);
    let server_side = reach(&defs, server_roots);
    let probed = read(&dir.join("facts/probed.json")).unwrap_or(Value::Null);
    let unknown_method = probed["unknown_method"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Ok(Side {
        defs,
        methods,
        experimental,
        client_side,
        server_side,
        unknown_method,
    })
}

/// Which side a change to type `name` touches, in the newer version when it exists there.
fn sides(a: &Side, b: &Side, name: &str) -> &'static str {
    let client = a.client_side.contains(name) || b.client_side.contains(name);
    let server = a.server_side.contains(name) || b.server_side.contains(name);
    match (client, server) {
        (true, true) => "replies, server messages",
        (true, false) => "replies",
        (false, true) => "server messages",
        (false, false) => "unreferenced",
    }
}

/// Object properties and required keys of a definition (`allOf` members merged).
fn fields(d: &Value) -> (BTreeMap<String, Value>, BTreeSet<String>) {
    let mut props = BTreeMap::new();
    let mut req = BTreeSet::new();
    if let Some(p) = d["properties"].as_object() {
        for (k, v) in p {
            props.insert(k.clone(), v.clone());
        }
    }
    for r in d["required"].as_array().into_iter().flatten() {
        if let Some(r) = r.as_str() {
            req.insert(r.to_string());
        }
    }
    (props, req)
}

/// Variants of a union or enum by name: each string value, or each member by its tag value
/// (internally tagged), title or `$ref`; with the member's schema.
fn variants(d: &Value) -> Option<BTreeMap<String, Value>> {
    let strings = |e: &Vec<Value>| -> Vec<(String, Value)> {
        e.iter()
            .map(|v| {
                (
                    v.as_str().map_or(v.to_string(), str::to_string),
                    Value::Null,
                )
            })
            .collect()
    };
    if let Some(e) = d["enum"].as_array() {
        return Some(strings(e).into_iter().collect());
    }
    let members = d["oneOf"].as_array().or_else(|| d["anyOf"].as_array())?;
    let mut out = BTreeMap::new();
    for m in members {
        if let Some(e) = m["enum"].as_array() {
            out.extend(strings(e));
            continue;
        }
        // Internally tagged: the one single-valued enum property.
        let tag = m["properties"].as_object().and_then(|p| {
            p.values().find_map(|v| match v["enum"].as_array() {
                Some(e) if e.len() == 1 => e[0].as_str().map(str::to_string),
                _ => None,
            })
        });
        let name = tag
            .or_else(|| m["title"].as_str().map(str::to_string))
            .or_else(|| m["$ref"].as_str().map(|r| ref_name(r).to_string()))
            .unwrap_or_else(|| render(m));
        out.insert(name, m.clone());
    }
    Some(out)
}

/// Field changes between two object schemas, each prefixed with `prefix`.
fn field_changes(da: &Value, db: &Value, prefix: &str, what: &mut Vec<String>) {
    let ((pa, ra), (pb, rb)) = (fields(da), fields(db));
    for (k, v) in &pb {
        match pa.get(k) {
            None => what.push(format!(
                "{prefix}field `{k}` added (`{}`{})",
                render(v),
                if rb.contains(k) { ", required" } else { "" }
            )),
            Some(old) if shape(old) != shape(v) => what.push(format!(
                "{prefix}field `{k}`: `{}` → `{}`",
                render(old),
                render(v)
            )),
            Some(_) => {}
        }
    }
    for k in pa.keys().filter(|k| !pb.contains_key(*k)) {
        what.push(format!("{prefix}field `{k}` removed"));
    }
    for k in rb.difference(&ra).filter(|k| pa.contains_key(*k)) {
        what.push(format!("{prefix}field `{k}` now required"));
    }
    for k in ra.difference(&rb).filter(|k| pb.contains_key(*k)) {
        what.push(format!("{prefix}field `{k}` now optional"));
    }
}

/// The changelog page from `a` to `b`.
pub fn page(a_version: &str, b_version: &str) -> Result<String, String> {
    let a = load(a_version)?;
    let b = load(b_version)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# codex app-server protocol: {a_version} → {b_version}\n"
    );
    let _ = writeln!(
        out,
        "Generated by `cargo xtask schema --diff {a_version} {b_version}` from `schema/{a_version}/` and \
         `schema/{b_version}/`; do not edit by hand. **replies**: the type is reachable from what a \
         client sends, so the real server's answer to some client line changes (a dropped field \
         becomes typed or the reverse, an error's text, an accepted value). **server messages**: \
         reachable from what the server sends.\n"
    );
    // Methods.
    let mut counts = BTreeMap::<&str, usize>::new();
    let _ = writeln!(out, "## Methods\n");
    let mut any = false;
    for (root, label) in ROOTS {
        let of = |s: &Side| -> BTreeMap<String, String> {
            s.methods
                .iter()
                .filter(|((r, _), _)| r == root)
                .map(|((_, m), p)| (m.clone(), p.clone()))
                .collect()
        };
        let (ma, mb) = (of(&a), of(&b));
        let effect = if root.starts_with("Client") {
            "replies"
        } else {
            "server messages"
        };
        for (m, p) in &mb {
            match ma.get(m) {
                None => {
                    any = true;
                    *counts.entry("methods added").or_default() += 1;
                    let gate = if *root == "ClientRequest" && b.experimental.contains(m) {
                        ", experimental"
                    } else {
                        ""
                    };
                    let _ = writeln!(out, "- added {label} `{m}` (params `{p}`{gate}) — {effect}");
                }
                Some(pa) if pa != p => {
                    any = true;
                    *counts.entry("methods retyped").or_default() += 1;
                    let _ = writeln!(out, "- {label} `{m}`: params `{pa}` → `{p}` — {effect}");
                }
                Some(_) => {}
            }
        }
        for m in ma.keys().filter(|m| !mb.contains_key(*m)) {
            any = true;
            *counts.entry("methods removed").or_default() += 1;
            let _ = writeln!(out, "- removed {label} `{m}` — {effect}");
        }
    }
    for m in b.experimental.difference(&a.experimental) {
        if a.methods
            .contains_key(&("ClientRequest".to_string(), m.clone()))
        {
            any = true;
            let _ = writeln!(out, "- `{m}` now needs `experimentalApi` — replies");
        }
    }
    for m in a.experimental.difference(&b.experimental) {
        if b.methods
            .contains_key(&("ClientRequest".to_string(), m.clone()))
        {
            any = true;
            let _ = writeln!(out, "- `{m}` no longer needs `experimentalApi` — replies");
        }
    }
    if !any {
        let _ = writeln!(out, "(none)");
    }
    if a.unknown_method != b.unknown_method {
        let _ = writeln!(
            out,
            "\nThe reply to an unknown method lists the methods, so it changes with them (replies)."
        );
    }
    // Types.
    let _ = writeln!(out, "\n## Types\n");
    let names: BTreeSet<&String> = a.defs.keys().chain(b.defs.keys()).collect();
    let mut lines = Vec::new();
    for name in names {
        let side = sides(&a, &b, name);
        match (a.defs.get(name), b.defs.get(name)) {
            (None, Some(_)) => {
                *counts.entry("types added").or_default() += 1;
                lines.push(format!("- added `{name}` — {side}"));
            }
            (Some(_), None) => {
                *counts.entry("types removed").or_default() += 1;
                lines.push(format!("- removed `{name}` — {side}"));
            }
            (Some(da), Some(db)) if shape(da) != shape(db) => {
                *counts.entry("types changed").or_default() += 1;
                let mut what = Vec::new();
                field_changes(da, db, "", &mut what);
                if let (Some(va), Some(vb)) = (variants(da), variants(db)) {
                    for v in vb.keys().filter(|v| !va.contains_key(*v)) {
                        what.push(format!("variant `{v}` added"));
                    }
                    for v in va.keys().filter(|v| !vb.contains_key(*v)) {
                        what.push(format!("variant `{v}` removed"));
                    }
                    for (v, mb) in &vb {
                        match va.get(v) {
                            Some(ma) if shape(ma) != shape(mb) => {
                                let before = what.len();
                                field_changes(ma, mb, &format!("variant `{v}`: "), &mut what);
                                if what.len() == before {
                                    what.push(format!("variant `{v}` changed shape"));
                                }
                            }
                            _ => {}
                        }
                    }
                }
                if what.is_empty() {
                    what.push("shape changed".into());
                }
                lines.push(format!("- `{name}` — {side}: {}", what.join("; ")));
            }
            _ => {}
        }
    }
    if lines.is_empty() {
        let _ = writeln!(out, "(none)");
    }
    for l in &lines {
        let _ = writeln!(out, "{l}");
    }
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = writeln!(
        out,
        "\n## Summary\n\n{}",
        if summary.is_empty() {
            "no change".to_string()
        } else {
            summary.join(", ")
        }
    );
    Ok(out)
}

/// `docs/changelog/A..B.md`.
pub fn page_path(a: &str, b: &str) -> PathBuf {
    crate::codex_bin::repo_root()
        .join("docs/changelog")
        .join(format!("{a}..{b}.md"))
}

/// The committed pairs: each version to the next, and the oldest to the newest.
pub fn pairs() -> Result<Vec<(String, String)>, String> {
    let vs = crate::codex_bin::versions()?;
    let mut out: Vec<(String, String)> = vs
        .windows(2)
        .map(|w| (w[0].clone(), w[1].clone()))
        .collect();
    if vs.len() > 2 {
        out.push((vs[0].clone(), vs[vs.len() - 1].clone()));
    }
    Ok(out)
}

/// Writes (or with `check`, compares) every committed page.
pub fn sync(check: bool) -> Result<(), String> {
    let mut stale = Vec::new();
    for (a, b) in pairs()? {
        let want = page(&a, &b)?;
        let path = page_path(&a, &b);
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            if check {
                stale.push(path.display().to_string());
            } else {
                std::fs::create_dir_all(path.parent().expect("docs/changelog"))
                    .map_err(|e| e.to_string())?;
                std::fs::write(&path, want).map_err(|e| format!("{}: {e}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "changelog pages out of date (run `cargo xtask schema`): {}",
            stale.join(", ")
        ))
    }
}
