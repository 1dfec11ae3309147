//! Long fuzz run: `cargo run --release --example fuzz -- --seconds 600 [--seed N]`.
//! Prints lines fed, duration and crashes (a crash is a panic; the run stops at the first).

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seconds = arg("--seconds", 60);
    let mut seed = arg("--seed", 1);
    let path = format!(
        "{}/tests/corpus/{}/conformance.jsonl",
        env!("CARGO_MANIFEST_DIR"),
        codex_wire::newest().version
    );
    let corpus = std::fs::read_to_string(&path).expect(&path);
    let seeds: Vec<Vec<u8>> = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|c| {
            c["lines"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|x| x.as_str().map(|s| s.as_bytes().to_vec()))
        })
        .collect();
    let start = Instant::now();
    let mut fed = 0u64;
    while start.elapsed() < Duration::from_secs(seconds) {
        fed += codex_wire::fuzz::run(seed, 10_000, &seeds);
        seed += 1;
    }
    println!(
        "fuzz: {fed} lines in {:.0?} from {} seeds, 0 crashes",
        start.elapsed(),
        seeds.len()
    );
}
