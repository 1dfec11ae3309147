//! Turn latency, fake against real, measured side by side in one run: the median time from
//! the client's `turn/start` to `turn/completed` on the plain-message scenario of the turn
//! corpus, read off each run's transcript.
//!
//! `cargo run --release --example turn_latency [RUNS]` (the real binary: `CODEX_REAL_BIN`, else
//! the pinned one under `target/codex-cache/`; `cargo xtask test` installs it).

use codex_wire::harness::{self, Server};
use serde_json::Value;
use std::path::Path;

fn turn_ms(transcript: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(transcript).ok()?;
    let (mut start, mut done) = (None, None);
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).ok()?;
        let m = &e["msg"]["method"];
        if e["dir"] == "in" && m == "turn/start" && start.is_none() {
            start = e["t"].as_f64();
        }
        if e["dir"] == "out" && m == "turn/completed" {
            done = e["t"].as_f64();
        }
    }
    Some((done? - start?) * 1000.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(15);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = codex_wire::newest().version;
    let codex = harness::real_codex(root).unwrap_or_else(|e| panic!("{e}"));
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("codex-wire")))
        .filter(|p| p.is_file())
        .expect("build the binary first: cargo build --release");
    let cases = harness::load_cases(&root.join("tests/corpus/turns")).expect("turn corpus");
    let case = cases
        .iter()
        .find(|c| c.name == "01_message")
        .expect("01_message");
    let work = std::env::temp_dir().join("codex-wire-turn-latency");
    let (mut fake, mut real) = (Vec::new(), Vec::new());
    // Interleaved, so that both see the same machine load.
    for i in 0..runs {
        let t = harness::run(
            case,
            &Server::Fake {
                bin: &bin,
                version: None,
            },
            &work.join(format!("fake{i}")),
        )
        .expect("fake run");
        fake.push(turn_ms(&t).expect("fake turn"));
        let t = harness::run(
            case,
            &Server::Real {
                bin: &bin,
                codex: &codex,
            },
            &work.join(format!("real{i}")),
        )
        .expect("real run");
        real.push(turn_ms(&t).expect("real turn"));
    }
    let _ = std::fs::remove_dir_all(&work);
    let (f, r) = (median(fake), median(real));
    println!("turn/start → turn/completed, plain message, median of {runs} runs each:");
    println!("  fake  {f:8.2} ms");
    println!("  real  {r:8.2} ms  (codex {version}, scripted model)");
    println!("  real / fake = {:.1}", r / f);
}
