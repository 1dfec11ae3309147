//! Benchmark of `codex-wire fake` (reported, not asserted):
//! - round trip per request on the error path over stdio, fake vs the real `codex app-server`
//!   (`target/codex-cache/<newest>`, when installed);
//! - turn throughput: messages per second the fake streams for a long scripted turn.
//!
//! `cargo run --release --example fake_bench` (builds the binary first: `cargo build --release`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const INIT: &str =
    r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}"#;

fn spawn(
    cmd: &mut Command,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

/// Median round trip of an invalid request (an error reply), in microseconds.
fn error_path(cmd: &mut Command, n: usize) -> f64 {
    let (mut child, mut stdin, mut stdout) = spawn(cmd);
    writeln!(stdin, "{INIT}").unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        if line.starts_with("{\"id\":0") {
            break;
        }
    }
    let mut times = Vec::with_capacity(n);
    for i in 1..=n {
        let t = Instant::now();
        writeln!(stdin, r#"{{"id":{i},"method":"turn/start","params":{{}}}}"#).unwrap();
        loop {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            if line.starts_with("{\"error\"") {
                break;
            }
        }
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times[n / 2]
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    let bin = ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("codex-wire"))
        .find(|p| p.exists())
        .expect("build codex-wire first");
    let tmp = std::env::temp_dir().join(format!("fake-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let n = 2000;
    let fake = error_path(
        Command::new(&bin)
            .args(["fake", "--state-dir"])
            .arg(&tmp)
            .arg("app-server"),
        n,
    );
    println!(
        "error path round trip (median of {n}), fake  [{}]: {fake:.1} µs",
        bin.display()
    );
    let version = codex_wire::newest().version;
    match codex_wire::harness::real_codex(root) {
        Ok(real) => {
            let home = tmp.join("home");
            std::fs::create_dir_all(&home).unwrap();
            let t = error_path(
                Command::new(&real)
                    .arg("app-server")
                    .env("CODEX_HOME", &home)
                    .current_dir(&tmp),
                n,
            );
            println!("error path round trip (median of {n}), real codex {version}: {t:.1} µs");
        }
        Err(e) => println!("{e}: skipped the comparison"),
    }

    // Throughput: one turn of 20,000 deltas.
    let dir = tmp.join("turn");
    std::fs::create_dir_all(&dir).unwrap();
    let text = "x".repeat(20_000);
    let scenario = serde_json::json!({"turns": [{"steps": [{"kind": "message", "text": text, "chunks": 20_000}]}]});
    std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
    let (mut child, mut stdin, mut stdout) = spawn(
        Command::new(&bin)
            .args(["fake", "--state-dir"])
            .arg(&dir)
            .arg("app-server"),
    );
    writeln!(stdin, "{INIT}").unwrap();
    writeln!(stdin, r#"{{"id":1,"method":"thread/start","params":{{}}}}"#).unwrap();
    let mut line = String::new();
    let tid = loop {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        if line.starts_with("{\"id\":1") {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            break v["result"]["thread"]["id"].as_str().unwrap().to_string();
        }
    };
    let t = Instant::now();
    writeln!(
        stdin,
        r#"{{"id":2,"method":"turn/start","params":{{"threadId":"{tid}","input":[]}}}}"#
    )
    .unwrap();
    let mut count = 0u64;
    loop {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        count += 1;
        if line.contains("\"turn/completed\"") {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "turn throughput: {count} messages in {secs:.3} s = {:.0} messages/s (transcript on)",
        count as f64 / secs
    );
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&tmp);
}
