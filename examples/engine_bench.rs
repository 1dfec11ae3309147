//! Engine cost per line beside serde_json parses into `IgnoredAny` (the floor) and `Value`, on
//! generated client traffic: `cargo run --release --example engine_bench [LINES [MIX]]`, MIX one
//! of `session` (default), `all-method`, `all-invalid`. (The full validate benchmark with
//! jsonschema and RSS is `cargo bench --bench validate`.)

use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let mix = std::env::args().nth(2).unwrap_or_else(|| "session".into());
    let mut buf = Vec::new();
    use codex_wire::validate::traffic;
    match mix.as_str() {
        "all-method" => traffic::generate_all_methods(n, 42, &mut buf),
        "all-invalid" => traffic::generate_all_invalid(n, 42, &mut buf),
        _ => traffic::generate(n, 42, &mut buf),
    }
    .unwrap();
    let lines: Vec<&[u8]> = buf
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let t = Instant::now();
    for l in &lines {
        std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok());
    }
    let floor = t.elapsed();
    let t = Instant::now();
    let mut ok = 0usize;
    for l in &lines {
        ok += serde_json::from_slice::<serde_json::Value>(l).is_ok() as usize;
    }
    let plain = t.elapsed();
    let t = Instant::now();
    let mut s = codex_wire::Session::new();
    let mut errors = 0usize;
    for l in &lines {
        errors += s.feed(l).error().is_some() as usize;
    }
    let engine = t.elapsed();
    let hits = s.fast_hits();
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e9 / lines.len() as f64;
    println!(
        "{mix}: {} lines ({} MB): IgnoredAny parse {:.0} ns/line, Value parse {:.0} ns/line ({ok} ok), engine {:.0} ns/line ({errors} errors, {hits} on the fast path): {:.2} of the IgnoredAny floor",
        lines.len(),
        buf.len() / 1_000_000,
        per(floor),
        per(plain),
        per(engine),
        floor.as_secs_f64() / engine.as_secs_f64()
    );
}
