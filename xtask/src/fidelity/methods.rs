//! `cargo xtask methods [--version V] [--jobs N] [METHOD…]`: every client method the version's
//! schema lists, each sent once on a fresh server (after `initialize` and a `thread/start`) with
//! the schema's minimal params (a `threadId` is the session's thread), on the real binary and on
//! the fake, judged as `fidelity` judges a session. The table says, per method, whether the fake
//! answers as the real server does, and where they part: the work list of the methods still
//! answered from a captured session rather than by their rule.

use super::{Runner, Verdict};
use crate::gen::Schema;
use codex_wire::harness::Case;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The minimal params with the session's own ids placed.
fn place_ids(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "threadId" && x.is_string() {
                    *x = json!("${thread}");
                } else {
                    place_ids(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(place_ids),
        _ => {}
    }
}

/// One probe session per method.
pub fn probes(schema: &Schema, only: &[String]) -> Vec<Case> {
    let mut out = Vec::new();
    for m in schema.methods() {
        if !only.is_empty() && !only.contains(&m.name) {
            continue;
        }
        let mut params = match &m.params {
            Some(p) => {
                let n = schema.node(p, &m.params_ptr);
                schema.minimal(&n, &m.name, 0)
            }
            None => Value::Null,
        };
        place_ids(&mut params);
        let mut req = json!({"method": m.name});
        if !params.is_null() {
            req["params"] = params;
        }
        let case = json!({
            "name": format!("m_{}", m.name.replace('/', "_")),
            "scenario": {"turns": []},
            "inputs": [],
            "after": [req],
            "wait_secs": 20,
        });
        match serde_json::from_value(case) {
            Ok(c) => out.push(c),
            Err(e) => eprintln!("methods: {}: {e}", m.name),
        }
    }
    out
}

pub fn main(args: &[String]) -> Result<(), String> {
    let version = crate::codex_bin::pick_version(crate::codex_bin::version_arg(args)?)?;
    let jobs: usize = args
        .iter()
        .position(|a| a == "--jobs")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(2), |n| n.parse().map_err(|e| format!("--jobs: {e}")))?;
    let only: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !a.starts_with("--")
                && (*i == 0 || !matches!(args[i - 1].as_str(), "--version" | "--jobs"))
        })
        .map(|(_, a)| a.clone())
        .collect();
    let schema = Schema::load(
        &crate::codex_bin::schema_dir(&version).join("json/codex_app_server_protocol.schemas.json"),
    )?;
    let cases = probes(&schema, &only);
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    let bin = crate::codex_bin::codex_wire_bin()?;
    let out = crate::codex_bin::repo_root()
        .join("target/methods")
        .join(&version);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let runner = Runner {
        fake_bin: bin.clone(),
        bin,
        codex,
        version: version.clone(),
        work: std::env::temp_dir().join(format!("codex-wire-methods-{version}")),
    };
    println!(
        "methods: codex {version}, {} methods, {jobs} at once",
        cases.len()
    );
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Verdict)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let v = runner.judge(case).unwrap_or_else(|e| Verdict::Differs {
                    class: "harness error".into(),
                    detail: e,
                });
                if !matches!(v, Verdict::Identical) {
                    for side in ["real", "fake", "real2"] {
                        let from = super::run_transcript(&runner.work, &case.name, side);
                        let _ =
                            std::fs::copy(&from, out.join(format!("{}.{side}.jsonl", case.name)));
                    }
                }
                let _ = std::fs::remove_dir_all(runner.work.join(&case.name));
                results.lock().expect("results").push((i, v));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    let (mut same, mut races) = (0, 0);
    let mut report = Vec::new();
    for (i, v) in &results {
        let method = cases[*i].after[0]["method"].as_str().unwrap_or("");
        let (tag, detail) = match v {
            Verdict::Identical => {
                same += 1;
                ("identical", String::new())
            }
            Verdict::Differs { class, detail } => ("differs", format!("{class}\n    {detail}")),
            Verdict::RealRace { class, .. } => {
                races += 1;
                ("real race", class.clone())
            }
        };
        println!("{method:<48} {tag}");
        if !detail.is_empty() {
            println!(
                "    {}",
                detail.lines().take(4).collect::<Vec<_>>().join("\n    ")
            );
        }
        report.push(json!({"method": method, "verdict": tag, "detail": detail}));
    }
    println!(
        "\n{same} of {} methods answered as the real server does ({races} real races); transcripts of the others in {}",
        results.len(),
        out.display()
    );
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{}: {e}", out.display()))
}
