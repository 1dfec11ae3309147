//! Benchmark of `codex-wire fake` (reported, not asserted):
//! - round trip per request on the error path over stdio, fake vs the real `codex app-server`
//!   (`target/codex-cache/<newest>`, when installed);
//! - sustained error replies a second, fake (transcript on) vs real, with a paced client that
//!   keeps at most 64 requests in flight (the real server sheds load with `-32001 Server
//!   overloaded` past 128 queued), and a flood (no pacing) with the overload replies counted;
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

/// A server past its `initialize` reply.
fn initialized(
    cmd: &mut Command,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let (child, mut stdin, mut stdout) = spawn(cmd);
    writeln!(stdin, "{INIT}").unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        if line.starts_with("{\"id\":0") {
            break;
        }
    }
    (child, stdin, stdout)
}

/// Median round trip of an invalid request (an error reply), in microseconds.
fn error_path(cmd: &mut Command, n: usize) -> f64 {
    let (mut child, mut stdin, mut stdout) = initialized(cmd);
    let mut line = String::new();
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

/// Error replies a second over `n` invalid requests with at most `window` in flight (a window
/// of 0: no pacing, all written at once), how many replies came, and how many of them were
/// overload replies. A server that goes quiet for 5 s is not waited for (the real one, flooded,
/// stops answering).
fn sustained(cmd: &mut Command, n: usize, window: usize) -> (f64, usize, usize) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let (mut child, stdin, mut stdout) = initialized(cmd);
    let answered = Arc::new(AtomicUsize::new(0));
    let overloads = Arc::new(AtomicUsize::new(0));
    let (seen, over) = (answered.clone(), overloads.clone());
    let writer = std::thread::current();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        while seen.load(Ordering::SeqCst) < n {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if line.starts_with("{\"error\"") {
                over.fetch_add(line.contains("-32001") as usize, Ordering::SeqCst);
                seen.fetch_add(1, Ordering::SeqCst);
                writer.unpark();
            }
        }
    });
    let t = Instant::now();
    let quiet = std::time::Duration::from_secs(5);
    let mut w = std::io::BufWriter::new(stdin);
    let mut last = (0, Instant::now());
    let mut stalled = || {
        let now = answered.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        }
        last.1.elapsed() > quiet
    };
    'send: for i in 1..=n {
        while window > 0 && i > answered.load(Ordering::SeqCst) + window {
            w.flush().unwrap();
            if stalled() {
                break 'send;
            }
            // Parked, not spinning: a spinning client would take a core from the server.
            std::thread::park_timeout(std::time::Duration::from_millis(5));
        }
        writeln!(w, r#"{{"id":{i},"method":"turn/start","params":{{}}}}"#).unwrap();
    }
    let _ = w.flush();
    while answered.load(Ordering::SeqCst) < n && !stalled() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let got = answered.load(Ordering::SeqCst);
    // The time to the last reply (a stall's quiet tail is not counted).
    let secs = if got < n {
        t.elapsed().as_secs_f64() - quiet.as_secs_f64()
    } else {
        t.elapsed().as_secs_f64()
    };
    drop(w);
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    (got as f64 / secs, got, overloads.load(Ordering::SeqCst))
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

    // Sustained error replies: the same client against both, side by side. The paced runs take
    // turns (fake, real, fake, real, ...) so that this shared machine's swings slow both alike;
    // the ratio is the median of the rounds.
    let m = 20_000;
    let rounds: usize = std::env::var("CODEX_WIRE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    let fake_cmd = || {
        let mut c = Command::new(&bin);
        c.args(["fake", "--state-dir"])
            .arg(tmp.join("sustained"))
            .arg("app-server");
        c
    };
    let real = codex_wire::harness::real_codex(root).ok();
    let home = tmp.join("home-sustained");
    std::fs::create_dir_all(&home).unwrap();
    let real_cmd = |real: &Path| {
        let mut c = Command::new(real);
        c.arg("app-server")
            .env("CODEX_HOME", &home)
            .current_dir(&tmp);
        c
    };
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let (fake_paced, fake_n, _) = sustained(&mut fake_cmd(), m, 64);
        print!("round {round}: paced (64 in flight), fake (transcript on) {fake_paced:.0}/s ({fake_n} of {m} answered)");
        if let Some(real) = &real {
            let (real_paced, real_n, _) = sustained(&mut real_cmd(real), m, 64);
            print!(
                ", real codex {version} {real_paced:.0}/s ({real_n} of {m} answered): {:.1}x",
                fake_paced / real_paced
            );
            ratios.push(fake_paced / real_paced);
        }
        println!();
    }
    let (fake_flood, fake_flood_n, fake_over) = sustained(&mut fake_cmd(), m, 0);
    println!(
        "flooded (no pacing), fake: {fake_flood:.0}/s ({fake_flood_n} of {m} answered, {fake_over} overload replies)"
    );
    match &real {
        Some(real) => {
            let (real_flood, real_flood_n, real_over) = sustained(&mut real_cmd(real), m, 0);
            println!(
                "flooded (no pacing), real codex {version}: {real_flood:.0}/s ({real_flood_n} of {m} answered, {real_over} overload replies)"
            );
            ratios.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let median = ratios[ratios.len() / 2];
            println!(
                "fake / real, paced: median {median:.1}x over {rounds} rounds (range {:.1}-{:.1}x; target >= 10x: {})",
                ratios[0],
                ratios[ratios.len() - 1],
                if median >= 10.0 { "met" } else { "NOT met" }
            );
        }
        None => println!("the real codex binary is missing: no comparison"),
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
