//! `cargo xtask latency [--write | --check]`: how long the real server takes to answer each
//! request, read off every supported version's recordings (the turn corpus and the kept
//! fidelity sessions): per method and outcome (result, error), the median time from the
//! request's arrival to its answer, in µs. The fake answers no sooner (`src/fake/latency.rs`).
//! Medians under 0.5 ms are left out (the fake's own work takes about that), so is a method
//! with fewer than three answers, and the requests the fake times by their own rules
//! (`OWN_TIMING`: `initialize`, the ones that start a turn, a session, a server); 50 ms at most.
//! `--write` writes `src/fake/latency.json`; `--check` fails when it is stale.

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Requests whose answers the fake times by rules of their own, against the task they start (a
/// turn, a thread's session and its MCP servers, a login, a realtime session, a process, a
/// setup): their recorded times include that task's, and its events are ordered against the
/// answer by those rules (`docs/turns.md`, `docs/fake.md`).
const OWN_TIMING: &[&str] = &[
    "initialize",
    // The first answer of a process opens its memories database (`H::fixed`).
    "memory/status",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "review/start",
    "thread/compact/start",
    "thread/goal/set",
    "thread/shellCommand",
    "thread/settings/update",
    "thread/realtime/start",
    "windowsSandbox/setupStart",
    "command/exec",
    "process/spawn",
    "mcpServerStatus/list",
    "mcpServer/tool/call",
    "config/mcpServer/reload",
    "account/login/start",
    "account/logout",
    "feedback/upload",
    "fuzzyFileSearch/sessionStart",
];

const FLOOR_US: f64 = 500.0;
const CAP_US: f64 = 50_000.0;
const MIN_ANSWERS: usize = 3;

fn path() -> std::path::PathBuf {
    crate::codex_bin::repo_root().join("src/fake/latency.json")
}

/// The recordings' files: each version's turn corpus and kept fidelity sessions.
fn recordings() -> Result<Vec<std::path::PathBuf>, String> {
    let mut files = Vec::new();
    for v in crate::codex_bin::versions()? {
        let base = crate::codex_bin::corpus_dir(&v);
        for dir in [base.join("turns"), base.join("fidelity")] {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            files.extend(
                read.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.to_string_lossy().ends_with(".jsonl")),
            );
        }
    }
    files.sort();
    Ok(files)
}

/// The table from transcripts' text: method → {"result": µs, "error": µs}.
pub fn table(texts: &[String]) -> Value {
    let mut times: BTreeMap<(String, bool), Vec<f64>> = BTreeMap::new();
    for text in texts {
        let mut pending: HashMap<String, (f64, String)> = HashMap::new();
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let (Some(t), Some(msg)) = (entry["t"].as_f64(), entry.get("msg")) else {
                continue;
            };
            let id = msg.get("id").map(Value::to_string);
            match (entry["dir"].as_str(), msg["method"].as_str(), id) {
                (Some("in"), Some(method), Some(id)) => {
                    pending.insert(id, (t, method.to_string()));
                }
                (Some("out"), None, Some(id)) => {
                    if let Some((at, mut method)) = pending.remove(&id) {
                        let error = msg.get("error").is_some();
                        let message = msg["error"]["message"].as_str().unwrap_or_default();
                        if error && codex_wire::fake::is_validation(&method, message) {
                            method = codex_wire::fake::VALIDATION.into();
                        }
                        times
                            .entry((method, error))
                            .or_default()
                            .push((t - at) * 1e6);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Map::new();
    for ((method, error), mut v) in times {
        if v.len() < MIN_ANSWERS || OWN_TIMING.contains(&method.as_str()) {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        if median < FLOOR_US {
            continue;
        }
        let key = if error { "error" } else { "result" };
        let entry = out.entry(method).or_insert_with(|| json!({}));
        entry[key] = json!(median.min(CAP_US) as u64);
    }
    Value::Object(out)
}

pub fn main(args: &[String]) -> Result<(), String> {
    let texts: Vec<String> = recordings()?
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let text = serde_json::to_string_pretty(&table(&texts)).map_err(|e| e.to_string())? + "\n";
    match args.first().map(String::as_str) {
        Some("--write") => {
            std::fs::write(path(), &text).map_err(|e| e.to_string())?;
            println!("wrote {} from {} recordings", path().display(), texts.len());
            Ok(())
        }
        Some("--check") => {
            let now = std::fs::read_to_string(path()).unwrap_or_default();
            if now == text {
                Ok(())
            } else {
                Err(format!(
                    "{} is stale: run `cargo xtask latency --write`",
                    path().display()
                ))
            }
        }
        _ => Err("usage: cargo xtask latency --write | --check".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t: f64, dir: &str, msg: Value) -> String {
        json!({"t": t, "dir": dir, "msg": msg}).to_string()
    }

    #[test]
    fn medians_per_method_and_outcome_with_the_floor_and_the_exclusions() {
        let mut lines = Vec::new();
        // thread/list: 1, 2, 30 ms results (median 2 ms); 0.1 ms errors (under the floor).
        for (k, ms) in [1.0, 2.0, 30.0].iter().enumerate() {
            let t = k as f64;
            lines.push(line(t, "in", json!({"id": k, "method": "thread/list"})));
            lines.push(line(t + ms / 1e3, "out", json!({"id": k, "result": {}})));
        }
        for k in 10..13 {
            let t = k as f64;
            lines.push(line(t, "in", json!({"id": k, "method": "thread/list"})));
            lines.push(line(t + 1e-4, "out", json!({"id": k, "error": {}})));
        }
        // Two answers only: left out. initialize: left out whatever it takes.
        for k in 20..22 {
            let t = k as f64;
            lines.push(line(t, "in", json!({"id": k, "method": "fs/readFile"})));
            lines.push(line(t + 0.01, "out", json!({"id": k, "result": {}})));
        }
        for k in 30..33 {
            let t = k as f64;
            lines.push(line(t, "in", json!({"id": k, "method": "initialize"})));
            lines.push(line(t + 0.2, "out", json!({"id": k, "result": {}})));
        }
        // A server request's reply (in, no method) and a notification are not answers.
        lines.push(line(40.0, "in", json!({"id": 0, "result": {}})));
        lines.push(line(
            40.1,
            "out",
            json!({"method": "turn/started", "params": {}}),
        ));
        let got = table(&[lines.join("\n")]);
        assert_eq!(got, json!({"thread/list": {"result": 2000}}));
    }

    #[test]
    fn a_write_refused_by_the_built_configuration_is_timed_apart() {
        let mut lines = Vec::new();
        for k in 0..6 {
            let t = k as f64;
            let (ms, message) = if k < 3 {
                (10.0, "Invalid configuration: invalid type: integer `7`")
            } else {
                (1.0, "keyPath must not be empty")
            };
            lines.push(line(
                t,
                "in",
                json!({"id": k, "method": "config/value/write"}),
            ));
            lines.push(line(
                t + ms / 1e3,
                "out",
                json!({"id": k, "error": {"code": -32600, "message": message}}),
            ));
        }
        let t = table(&[lines.join("\n")]);
        assert_eq!(t["config/validation"]["error"], json!(10000));
        assert_eq!(t["config/value/write"]["error"], json!(1000));
    }

    #[test]
    fn a_slow_answer_is_capped() {
        let text = (0..3)
            .flat_map(|k| {
                let t = k as f64;
                [
                    line(t, "in", json!({"id": k, "method": "plugin/install"})),
                    line(t + 0.5, "out", json!({"id": k, "result": {}})),
                ]
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(table(&[text]), json!({"plugin/install": {"result": 50000}}));
    }
}
