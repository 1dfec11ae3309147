//! `cargo xtask sessions [--version V]`: records the real server's side of the client scripts in
//! `tests/corpus/sessions/<name>.jsonl` into `tests/corpus/<V>/<name>.jsonl` (`{"dir","line"}`
//! per message, in the order they crossed the wire). `tests/server_direction.rs` checks every
//! version's recordings in both directions, and the fake answers methods it does not implement
//! with the results recorded here.
//!
//! A script is client lines; `${thread}` is the id of the thread the first `thread/start`
//! created and `${cwd}` the server's working directory. Each request waits for its reply before
//! the next is sent; after the last one the recorder waits for a running turn to complete. The
//! server runs with fresh `HOME` / `CODEX_HOME` and a model provider on a closed local port, so a
//! turn fails the same way on every machine, offline.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

fn scripts_dir() -> PathBuf {
    crate::codex_bin::repo_root().join("tests/corpus/sessions")
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mut version = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--version" => version = Some(it.next().ok_or("--version needs a value")?.as_str()),
            other => return Err(format!("sessions: unknown argument {other:?}")),
        }
    }
    let targets = match version {
        Some(v) => vec![crate::codex_bin::pick_version(Some(v))?],
        None => crate::codex_bin::versions()?,
    };
    let mut names: Vec<PathBuf> = std::fs::read_dir(scripts_dir())
        .map_err(|e| format!("{}: {e}", scripts_dir().display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    names.sort();
    for v in &targets {
        let codex = crate::codex_bin::ensure_codex(v, None)?;
        for script in &names {
            let name = script.file_name().unwrap_or_default();
            let out = crate::codex_bin::corpus_dir(v).join(name);
            let t0 = Instant::now();
            let lines = record(&codex, script)?;
            std::fs::create_dir_all(crate::codex_bin::corpus_dir(v)).map_err(|e| e.to_string())?;
            let text: String = lines
                .iter()
                .map(|(dir, line)| serde_json::json!({"dir": dir, "line": line}).to_string() + "\n")
                .collect();
            std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "codex {v}: {} messages in {:.1}s -> {}",
                lines.len(),
                t0.elapsed().as_secs_f64(),
                out.display()
            );
        }
    }
    Ok(())
}

/// A fresh temp dir (removed when dropped).
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn record(codex: &Path, script: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(script).map_err(|e| format!("{}: {e}", script.display()))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = Temp(
        std::env::temp_dir().join(format!("codex-wire-session-{}-{nanos}", std::process::id())),
    );
    let (home, codex_home, cwd) = (
        tmp.0.join("home"),
        tmp.0.join("codex-home"),
        tmp.0.join("cwd"),
    );
    for d in [&home, &codex_home, &cwd] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut child = Command::new(codex)
        .args([
            "app-server",
            "-c",
            "model_provider=\"offline\"",
            "-c",
            "model_providers.offline={name=\"offline\", base_url=\"http://127.0.0.1:9/v1\", wire_api=\"responses\", request_max_retries=0, stream_max_retries=2}",
        ])
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("CODEX_HOME", &codex_home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", codex.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut out: Vec<(String, String)> = Vec::new();
    let mut thread = String::new();
    let mut turn_running = false;
    let result = (|| {
        for raw in text.lines().filter(|l| !l.trim().is_empty()) {
            let line = raw
                .replace("${thread}", &thread)
                .replace("${cwd}", &cwd.display().to_string());
            let msg: Value = serde_json::from_str(&line).map_err(|e| format!("{line}: {e}"))?;
            writeln!(stdin, "{line}").map_err(|e| format!("writing to codex: {e}"))?;
            out.push(("in".into(), line.clone()));
            turn_running |= msg["method"] == "turn/start";
            let deadline = Instant::now() + REPLY_TIMEOUT;
            loop {
                let got = rx
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .map_err(|_| format!("no reply to {line} within {REPLY_TIMEOUT:?}"))?;
                let reply: Value = serde_json::from_str(&got).unwrap_or(Value::Null);
                out.push(("out".into(), got));
                if reply["method"] == "turn/completed" {
                    turn_running = false;
                }
                if reply.get("id") == msg.get("id") && reply.get("method").is_none() {
                    if msg["method"] == "thread/start" && thread.is_empty() {
                        thread = reply["result"]["thread"]["id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                    }
                    break;
                }
            }
        }
        // Whatever else the server says: the end of a running turn, then a short quiet spell.
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let wait = if turn_running {
                deadline.saturating_duration_since(Instant::now())
            } else {
                Duration::from_millis(500)
            };
            match rx.recv_timeout(wait) {
                Ok(got) => {
                    let reply: Value = serde_json::from_str(&got).unwrap_or(Value::Null);
                    if reply["method"] == "turn/completed" {
                        turn_running = false;
                    }
                    out.push(("out".into(), got));
                }
                Err(_) if turn_running => return Err("the turn did not complete".to_string()),
                Err(_) => return Ok(()),
            }
        }
    })();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    result.map(|()| out)
}
