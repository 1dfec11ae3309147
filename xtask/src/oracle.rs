//! The ignored-path oracle: a path is ignored exactly when the real server accepts any value
//! there. For every key of every generated accepted request (the `valid` and `unknown_field`
//! cases), put a value no typed field takes at that key and ask the real server:
//! - keys the engine reports as ignored must still be accepted (`oracle_ignored`);
//! - every other key must be rejected, unless the engine also accepts the poisoned request
//!   (a free-form JSON field) (`oracle_declared`).
//!
//! `cargo xtask oracle --record` writes `tests/corpus/<V>/oracle.jsonl` (checked offline by
//! `tests/oracle.rs`); `cargo xtask oracle` runs it live and compares with the engine.

use crate::conformance::{self, engine_predict, Recorded};
use crate::gen::{self, Case};
use serde_json::Value;
use std::path::PathBuf;

/// No string, number, bool, struct, map or enum deserializes from this.
const POISON: &str = r#"[[["codex-wire-poison"]]]"#;

pub fn corpus_path(version: &str) -> PathBuf {
    crate::codex_bin::corpus_dir(version).join("oracle.jsonl")
}

enum Seg {
    Key(String),
    Index(usize),
}

/// `$.params.a[0].b`, as the engine renders paths.
fn render(path: &[Seg]) -> String {
    let mut p = codex_wire::track::JsonPath::root();
    for s in path {
        match s {
            Seg::Key(k) => p.key(k),
            Seg::Index(i) => p.index(*i),
        }
    }
    p.as_str().to_string()
}

/// Every object key under `v`, as a path from the message root.
fn key_paths(v: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(Seg::Key(k.clone()));
                out.push(prefix.iter().map(clone_seg).collect());
                key_paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(Seg::Index(i));
                key_paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn clone_seg(s: &Seg) -> Seg {
    match s {
        Seg::Key(k) => Seg::Key(k.clone()),
        Seg::Index(i) => Seg::Index(*i),
    }
}

fn set(v: &mut Value, path: &[Seg], new: Value) {
    let mut cur = v;
    for s in path {
        cur = match s {
            Seg::Key(k) => &mut cur[k.as_str()],
            Seg::Index(i) => &mut cur[*i],
        };
    }
    *cur = new;
}

/// The oracle cases, generated from the accepted generated requests.
pub fn cases(version: &str) -> Result<Vec<Case>, String> {
    let schema = gen::Schema::load(&conformance::schema_path(version))?;
    let poison: Value = serde_json::from_str(POISON).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for base in gen::generate(&schema)
        .into_iter()
        .filter(|c| matches!(c.category.as_str(), "valid" | "unknown_field"))
    {
        let [init, line] = &base.lines[..] else {
            continue;
        };
        // Only requests the engine accepts: their ignored paths are the claim under test.
        let mut session = codex_wire::Session::for_version(version)
            .ok_or_else(|| format!("this build of codex-wire does not speak codex {version}"))?;
        session.feed(init);
        let verdict = session.feed(line);
        if verdict.outcome != codex_wire::Outcome::Accepted {
            continue;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let mut paths = Vec::new();
        if let Some(params) = msg.get("params") {
            let mut prefix = vec![Seg::Key("params".into())];
            key_paths(params, &mut prefix, &mut paths);
        }
        let method = base.name.split('#').next().unwrap_or_default().to_string();
        for path in paths {
            let shown = render(&path);
            let ignored = verdict.ignored.contains(&shown);
            let mut poisoned = msg.clone();
            set(&mut poisoned, &path, poison.clone());
            let name = format!(
                "{method}#oracle:{}:{shown}",
                base.name.split('#').nth(1).unwrap_or("")
            );
            if out.iter().any(|c: &Case| c.name == name) {
                continue;
            }
            out.push(Case {
                name,
                category: if ignored {
                    "oracle_ignored"
                } else {
                    "oracle_declared"
                }
                .into(),
                lines: vec![init.clone(), poisoned.to_string().into_bytes()],
                ptr: None,
            });
        }
    }
    out.extend(notification_cases(&poison));
    Ok(out)
}

/// A client notification's params are never read by the server (it only logs the
/// notification), so a poison anywhere in them is accepted: the server stays silent and
/// answers the next request. Empty containers are here too: they must report nothing.
fn notification_cases(poison: &Value) -> Vec<Case> {
    let init = crate::gen::INIT_EXPERIMENTAL.as_bytes().to_vec();
    let next = br#"{"id":1,"method":"thread/loaded/list","params":{}}"#.to_vec();
    let p = poison.to_string();
    let params = [
        "{}".to_string(),
        "[]".to_string(),
        "null".to_string(),
        format!(r#"{{"codexWirePoison":{p}}}"#),
        format!(r#"{{"clientInfo":{p},"capabilities":{{"experimentalApi":{p}}}}}"#),
        format!("[{p},1]"),
        r#""codex-wire-poison""#.to_string(),
    ];
    let mut out = Vec::new();
    for method in ["initialized", "codex-wire/unknown"] {
        for params in &params {
            out.push(Case {
                name: format!("{method}#oracle:notification:{params}"),
                category: "oracle_notification".into(),
                lines: vec![
                    init.clone(),
                    format!(r#"{{"method":"{method}","params":{params}}}"#).into_bytes(),
                    next.clone(),
                ],
                ptr: None,
            });
        }
    }
    out
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mut record = false;
    let mut version = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--record" => record = true,
            "--version" => version = Some(it.next().ok_or("--version needs a value")?.as_str()),
            other => return Err(format!("oracle: unknown argument {other:?}")),
        }
    }
    let version = crate::codex_bin::pick_version(version)?;
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    let t0 = std::time::Instant::now();
    let cases = cases(&version)?;
    println!(
        "{} oracle cases; running against {}",
        cases.len(),
        codex.display()
    );
    let live: Vec<Recorded> = conformance::run(&codex, cases);
    println!("live run took {:.1}s", t0.elapsed().as_secs_f64());
    if record {
        conformance::write_corpus(&corpus_path(&version), &live)?;
        println!("wrote {}", corpus_path(&version).display());
    }
    // Accept/reject must agree; an error reply must be the same bytes too.
    let rep = conformance::compare(&live, &|lines: &[Vec<u8>]| engine_predict(&version, lines));
    rep.print("engine agrees with the real server");
    if !rep.diffs.is_empty() {
        return Err(format!("{} oracle cases disagree", rep.diffs.len()));
    }
    Ok(())
}
