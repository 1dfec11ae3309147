//! `cargo bench --bench proxy_latency`: request→reply round trip with and without
//! `codex-wire proxy` in between: through `cat` (the proxy's own cost) and through the real
//! `codex app-server` (an invalid `turn/start`, answered at once with an error), when the
//! binary is installed (target/codex-cache/… or $CODEX_WIRE_CODEX).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let bin = env!("CARGO_BIN_EXE_codex-wire");
    let n = 2000;
    let line = |i: u64| {
        format!(
            r#"{{"id":{i},"method":"turn/start","params":{{"threadId":"t","input":[{{"type":"text","text":"hello","extra":1}}]}}}}"#
        )
    };
    println!("| path | round trips | median µs | p99 µs |\n|---|---:|---:|---:|");
    let direct = round_trips(Command::new("cat"), None, n, &line);
    let proxied = round_trips(proxy(bin, &["cat"]), None, n, &line);
    row("cat", n, &direct);
    row("proxy -- cat", n, &proxied);

    match codex() {
        Some(codex) => {
            let home = tempdir("home");
            let cwd = tempdir("cwd");
            let init = r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}"#;
            let bad = |i: u64| format!(r#"{{"id":{i},"method":"turn/start","params":{{}}}}"#);
            let mk = |through_proxy: bool| {
                let mut c = if through_proxy {
                    proxy(bin, &[codex.to_str().unwrap(), "app-server"])
                } else {
                    let mut c = Command::new(&codex);
                    c.arg("app-server");
                    c
                };
                c.env("CODEX_HOME", &home).current_dir(&cwd);
                c
            };
            let m = 300;
            let direct = round_trips(mk(false), Some(init), m, &bad);
            let proxied = round_trips(mk(true), Some(init), m, &bad);
            row("codex app-server", m, &direct);
            row("proxy -- codex app-server", m, &proxied);
            // The server has exited (its stdin closed, waited for): leave nothing behind.
            for d in [&home, &cwd] {
                let _ = std::fs::remove_dir_all(d);
            }
        }
        None => println!("(real codex not installed: run `cargo xtask test` once to install it)"),
    }
}

fn proxy(bin: &str, cmd: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(["proxy", "--quiet", "--"]).args(cmd);
    c
}

fn codex() -> Option<PathBuf> {
    codex_wire::harness::real_codex(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).ok()
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("codex-wire-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Round-trip times (µs) of `n` request lines, each awaited before the next.
fn round_trips(
    mut cmd: Command,
    init: Option<&str>,
    n: u64,
    line: &dyn Fn(u64) -> String,
) -> Vec<f64> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut reply = String::new();
    let mut next = |w: &mut std::process::ChildStdin, msg: &str, want: &str| {
        writeln!(w, "{msg}").unwrap();
        w.flush().unwrap();
        // Skip notifications until the reply to this id.
        loop {
            reply.clear();
            assert!(r.read_line(&mut reply).unwrap() > 0, "server closed");
            if reply.contains(want) {
                return;
            }
        }
    };
    if let Some(init) = init {
        next(&mut w, init, r#""id":0"#);
    }
    let mut times = Vec::with_capacity(n as usize);
    for i in 1..=n {
        let msg = line(i);
        let t = Instant::now();
        next(&mut w, &msg, &format!("\"id\":{i}"));
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(w);
    let _ = child.wait();
    times.sort_by(f64::total_cmp);
    times
}

fn row(name: &str, n: u64, t: &[f64]) {
    let pct = |p: f64| t[((t.len() - 1) as f64 * p) as usize];
    println!("| {name} | {n} | {:.0} | {:.0} |", pct(0.5), pct(0.99));
}
