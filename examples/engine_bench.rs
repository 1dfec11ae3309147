//! Engine cost per line beside serde_json parses into `IgnoredAny` (the floor) and `Value`, on
//! generated client traffic: `cargo run --release --example engine_bench [LINES [MIX]]`, MIX one
//! of `session` (default), `all-method`, `all-invalid`; a third argument `dump` writes the lines
//! to standard output instead. (The full validate benchmark with
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
    // `engine_bench N MIX dump`: the generated lines to standard output (an input for
    // `perf stat` or callgrind on the whole `validate` process).
    if std::env::args().nth(3).as_deref() == Some("dump") {
        use std::io::Write;
        std::io::stdout().write_all(&buf).unwrap();
        return;
    }
    let lines: Vec<&[u8]> = buf
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    // `engine_bench N MIX profile[-fast|-exact]`: the engine alone, ten rounds (for `perf
    // record`), on every line or on the lines the fast path answers or not (after the opening).
    if let Some(which) = std::env::args()
        .nth(3)
        .and_then(|a| a.strip_prefix("profile").map(String::from))
    {
        let mut s = codex_wire::Session::new();
        let mut group: Vec<&[u8]> = lines.iter().take(2).copied().collect();
        for l in &group {
            s.feed(l);
        }
        for l in &lines[2..] {
            let before = s.fast_hits();
            s.feed(l);
            let hit = s.fast_hits() > before;
            if which.is_empty() || (which == "-fast") == hit {
                group.push(l);
            }
        }
        for _ in 0..10 {
            let mut s = codex_wire::Session::new();
            for l in &group {
                std::hint::black_box(s.feed(l));
            }
        }
        return;
    }
    // `engine_bench N MIX dump`: the lines and their verdicts.
    if std::env::args().nth(3).as_deref() == Some("dump") {
        eprintln!(
            "Verdict: {} bytes, Value: {}",
            std::mem::size_of::<codex_wire::Verdict>(),
            std::mem::size_of::<serde_json::Value>()
        );
        let mut s = codex_wire::Session::new();
        for l in &lines {
            let before = s.fast_hits();
            let v = s.feed(l);
            println!(
                "{}\n  fast={} {:?}\n",
                String::from_utf8_lossy(l),
                s.fast_hits() > before,
                v
            );
        }
        return;
    }
    // `engine_bench N MIX split`: fast-path lines and the others, each against the floor.
    if std::env::args().nth(3).as_deref() == Some("split") {
        let mut s = codex_wire::Session::new();
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        // Each group replays the session opening (initialize) first.
        let opening: Vec<&[u8]> = lines.iter().take(2).copied().collect();
        for l in &lines {
            let before = s.fast_hits();
            s.feed(l);
            if s.fast_hits() > before {
                fast.push(*l)
            } else {
                slow.push(*l)
            }
        }
        for (name, group) in [("fast", &fast), ("exact", &slow)] {
            let t = Instant::now();
            for l in group.iter() {
                std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok());
            }
            let f = t.elapsed().as_secs_f64() * 1e9 / group.len().max(1) as f64;
            let mut s = codex_wire::Session::new();
            for l in &opening {
                s.feed(l);
            }
            let t = Instant::now();
            for l in group.iter() {
                std::hint::black_box(s.feed(l));
            }
            let e = t.elapsed().as_secs_f64() * 1e9 / group.len().max(1) as f64;
            println!("{name}: {} lines ({} fast on replay), floor {f:.0} ns, engine {e:.0} ns ({:.2} of floor)", group.len(), s.fast_hits(), f / e);
        }
        return;
    }
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
