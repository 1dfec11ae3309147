//! `cargo bench --bench validate`: validate's throughput beside its floor (a plain serde_json
//! parse of each line) and the `jsonschema` crate validating the same lines against
//! `ClientRequest.json`, on the same generated client traffic; then peak RSS of the release
//! binary on a quarter of the traffic and on all of it (it must not grow with the file).
//! `CODEX_WIRE_BENCH_LINES` sets the line count (default 1,000,000).

use codex_wire::validate::{self, report::OutFormat, Config};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

fn main() {
    let lines: u64 = std::env::var("CODEX_WIRE_BENCH_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join(format!("bench-traffic-{lines}.jsonl"));
    let quarter = dir.join(format!("bench-traffic-{}.jsonl", lines / 4));
    for (path, n) in [(&file, lines), (&quarter, lines / 4)] {
        let mut w = BufWriter::new(File::create(path).unwrap());
        validate::traffic::generate(n, 42, &mut w).unwrap();
        w.flush().unwrap();
    }
    let bytes = std::fs::metadata(&file).unwrap().len();
    println!(
        "traffic: {lines} lines, {:.0} MB (client session mix, ~5% invalid, ~5% unknown fields)\n",
        bytes as f64 / 1e6
    );

    // Warm the page cache so every contender reads from memory (without holding the file).
    std::io::copy(&mut File::open(&file).unwrap(), &mut std::io::sink()).unwrap();

    // The bare read: the lines, no parse. Every contender pays at least this.
    let bare = time(|| {
        let mut r = BufReader::new(File::open(&file).unwrap());
        let mut buf = Vec::new();
        let mut n = 0u64;
        while r.read_until(b'\n', &mut buf).unwrap() > 0 {
            n += 1;
            buf.clear();
        }
        n
    });
    let plain = time(|| {
        let mut r = BufReader::new(File::open(&file).unwrap());
        let mut buf = Vec::new();
        let mut ok = 0u64;
        while r.read_until(b'\n', &mut buf).unwrap() > 0 {
            ok += serde_json::from_slice::<serde_json::Value>(&buf).is_ok() as u64;
            buf.clear();
        }
        ok
    });
    let engine = |jobs: usize| {
        time(|| {
            let cfg = Config {
                format: OutFormat::Json,
                jobs,
                ..Config::default()
            };
            let f = File::open(&file).unwrap();
            let mut sink = std::io::sink();
            // As the CLI reads a file.
            let stats = validate::run_file(f, "bench", &cfg, &mut sink).unwrap();
            stats.findings()
        })
    };
    let one = engine(1);
    let two = engine(2);

    // jsonschema is slow: it validates a prefix, its throughput is per line like the others.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/schema/{}/json/ClientRequest.json",
            env!("CARGO_MANIFEST_DIR"),
            codex_wire::newest().version
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("ClientRequest.json compiles");
    let js_lines = (lines / 10).max(1);
    let js = time(|| {
        let r = BufReader::new(File::open(&file).unwrap());
        let mut valid = 0u64;
        for line in r.split(b'\n').take(js_lines as usize) {
            let line = line.unwrap();
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
                valid += validator.is_valid(&v) as u64;
            }
        }
        valid
    });

    let rate = |secs: f64, n: u64| n as f64 / secs;
    let (b, p, o, t, j) = (
        rate(bare.0, bare.1),
        rate(plain.0, lines),
        rate(one.0, lines),
        rate(two.0, lines),
        rate(js.0, js_lines),
    );
    let mbs = |r: f64| r * bytes as f64 / lines as f64 / 1e6;
    println!("| contender | lines/s | MB/s | ratio |");
    println!("|---|---:|---:|---:|");
    println!(
        "| reading the lines only, 1 core | {b:.0} | {:.0} | {:.2} of parse |",
        mbs(b),
        b / p
    );
    println!(
        "| serde_json parse (floor), 1 core | {p:.0} | {:.0} | 1.00 |",
        mbs(p)
    );
    println!(
        "| validate, 1 core | {o:.0} | {:.0} | {:.2} of parse |",
        mbs(o),
        o / p
    );
    println!(
        "| validate, 2 cores | {t:.0} | {:.0} | {:.2} of parse, {:.2}x 1 core |",
        mbs(t),
        t / p,
        t / o
    );
    println!(
        "| jsonschema (ClientRequest.json), 1 core | {j:.0} | {:.0} | {:.3} of parse |",
        mbs(j),
        j / p
    );
    println!(
        "\nvalidate 1 core is {:.1}x jsonschema (reading the lines alone is {:.1}x it); findings: {} of {lines} lines",
        o / j,
        b / j,
        one.1
    );
    println!(
        "targets: 1 core >= 0.50 of parse: {}; 2 cores >= 1.8x 1 core: {}; >= 10x jsonschema: {}",
        ok(o / p >= 0.5),
        ok(t / o >= 1.8),
        ok(o / j >= 10.0)
    );

    let bin = env!("CARGO_BIN_EXE_codex-wire");
    let small = peak_rss(bin, &quarter);
    let big = peak_rss(bin, &file);
    println!(
        "\npeak RSS of `codex-wire validate --format json` ({} cores): {:.1} MB on {} lines, {:.1} MB on {lines} lines",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        small as f64 / 1024.0,
        lines / 4,
        big as f64 / 1024.0
    );
}

fn ok(b: bool) -> &'static str {
    if b {
        "met"
    } else {
        "NOT met"
    }
}

/// (seconds, result) of one run.
fn time<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let r = f();
    (t.elapsed().as_secs_f64(), r)
}

/// Peak resident set (KiB) of the validate binary on `file`: VmHWM polled from /proc until
/// it exits (wait4's ru_maxrss would include the pre-exec peak of this forked bench process).
fn peak_rss(bin: &str, file: &Path) -> i64 {
    let mut child = std::process::Command::new(bin)
        .args(["validate", "--format", "json"])
        .arg(file)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
            {
                peak = peak.max(kb);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    peak
}
