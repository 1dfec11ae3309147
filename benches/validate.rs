//! `cargo bench --bench validate`: validate's throughput beside its floor (a serde_json parse of
//! each line into `IgnoredAny`: every contender must at least scan the JSON), a parse into
//! `Value`, the floor on two cores (two threads, half the lines each: what two cores of this
//! machine give work that shares nothing), and (session mix, `--features jsonschema`) the `jsonschema` crate validating
//! the same lines against `ClientRequest.json`, on three generated mixes side by side: a client
//! session, traffic over every method, and all-invalid lines; the share of accepted lines the
//! fast path answers; then peak RSS of the release binary on a quarter of the all-method traffic
//! and on all of it (it must not grow with the file). `CODEX_WIRE_BENCH_LINES` sets the line
//! count (default 1,000,000), `CODEX_WIRE_BENCH_ROUNDS` the rounds (default 1). The contenders
//! take turns piece by piece (`CODEX_WIRE_BENCH_PIECE` lines after the session's opening,
//! default 100,000), so that a noisy neighbour slows them alike.

use codex_wire::validate::{self, report::OutFormat, Config};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let lines: u64 = std::env::var("CODEX_WIRE_BENCH_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    type Gen = fn(u64, u64, &mut BufWriter<File>) -> std::io::Result<()>;
    let mixes: [(&str, &str, Gen); 3] = [
        (
            "session",
            "client session mix: turn/start with long text, approval responses, ~5% invalid, ~5% unknown fields",
            |n, seed, w| validate::traffic::generate(n, seed, w),
        ),
        (
            "all-method",
            "all-method mix: every client method in its real shapes, results for every server request, ~5% invalid, ~5% unknown fields",
            |n, seed, w| validate::traffic::generate_all_methods(n, seed, w),
        ),
        (
            "all-invalid",
            "all-invalid: the all-method mix with a poisoned field in every line",
            |n, seed, w| validate::traffic::generate_all_invalid(n, seed, w),
        ),
    ];
    let mut all_method_file = None;
    for (name, what, gen) in mixes {
        let file = dir.join(format!("bench-{name}-{lines}.jsonl"));
        let mut w = BufWriter::new(File::create(&file).unwrap());
        gen(lines, 42, &mut w).unwrap();
        w.flush().unwrap();
        measure(name, what, &file, lines, name == "session");
        if name == "all-method" {
            let quarter = dir.join(format!("bench-{name}-{}.jsonl", lines / 4));
            let mut w = BufWriter::new(File::create(&quarter).unwrap());
            gen(lines / 4, 42, &mut w).unwrap();
            w.flush().unwrap();
            all_method_file = Some((file, quarter));
        }
    }
    let (file, quarter) = all_method_file.expect("the all-method mix ran");
    let bin = env!("CARGO_BIN_EXE_codex-wire");
    let small = peak_rss(bin, &quarter);
    let big = peak_rss(bin, &file);
    println!(
        "\npeak RSS of `codex-wire validate --format json` on the all-method mix ({} cores): {:.1} MB on {} lines, {:.1} MB on {lines} lines",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        small as f64 / 1024.0,
        lines / 4,
        big as f64 / 1024.0
    );
}

/// One mix, every contender side by side on the same file (warm in the page cache).
fn measure(name: &str, what: &str, file: &Path, lines: u64, with_jsonschema: bool) {
    let bytes = std::fs::metadata(file).unwrap().len();
    println!(
        "\n## {name}: {lines} lines, {:.0} MB, {:.0} bytes a line ({what})\n",
        bytes as f64 / 1e6,
        bytes as f64 / lines as f64
    );
    // Warm the page cache so every contender reads from memory (without holding the file).
    std::io::copy(&mut File::open(file).unwrap(), &mut std::io::sink()).unwrap();
    let each_line_of = |file: &Path, f: &mut dyn FnMut(&[u8]) -> bool| {
        let mut r = BufReader::new(File::open(file).unwrap());
        let mut buf = Vec::new();
        let mut ok = 0u64;
        while r.read_until(b'\n', &mut buf).unwrap() > 0 {
            ok += f(&buf) as u64;
            buf.clear();
        }
        ok
    };
    let each_line = |f: &mut dyn FnMut(&[u8]) -> bool| each_line_of(file, f);
    let engine = |file: &Path, jobs: usize| {
        time(|| {
            let cfg = Config {
                format: OutFormat::Json,
                jobs,
                ..Config::default()
            };
            let f = File::open(file).unwrap();
            let mut sink = std::io::sink();
            // As the CLI reads a file (and writes: any worker may).
            let f = validate::Input::<std::io::Empty>::File(f);
            let stats = validate::run_to(f, "bench", &cfg, validate::Sink::Shared(&mut sink));
            let stats = stats.unwrap();
            stats.findings()
        })
    };
    // The contenders take turns piece by piece (each piece a few tens of milliseconds): on a
    // shared machine a neighbour's burst then slows every contender alike, where whole-file
    // turns left one contender's run in a burst and another's out of it.
    let rounds: usize = std::env::var("CODEX_WIRE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let parts = pieces(file);
    // Seconds of: the bare read, the floor, the Value parse, validate on 1 and on 2 cores,
    // the floor on 2 cores.
    let mut secs = [0f64; 6];
    let (mut fed, mut bare_lines) = (0u64, 0u64);
    let floor_of = |file: &Path| {
        each_line_of(file, &mut |l| {
            serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok()
        })
    };
    for _ in 0..rounds {
        for Piece {
            whole: part,
            halves,
            lines: n,
        } in &parts
        {
            fed += n;
            let mut turn = |k: usize, run: (f64, u64)| {
                secs[k] += run.0;
                run.1
            };
            // The bare read: the lines, no parse. Every contender pays at least this.
            bare_lines += turn(0, time(|| each_line_of(part, &mut |_| true)));
            // The floor: every contender must at least scan the JSON.
            turn(1, time(|| floor_of(part)));
            turn(
                2,
                time(|| {
                    each_line_of(part, &mut |l| {
                        serde_json::from_slice::<serde_json::Value>(l).is_ok()
                    })
                }),
            );
            turn(3, engine(part, 1));
            turn(4, engine(part, 2));
            // The floor on two cores, each parsing half the lines: what two cores of this
            // machine give work that shares nothing (on a shared host, less than 2x).
            turn(
                5,
                time(|| {
                    std::thread::scope(|sc| {
                        let other = sc.spawn(|| floor_of(&halves[1]));
                        floor_of(&halves[0]) + other.join().unwrap()
                    })
                }),
            );
        }
    }
    // The findings of the whole file, as one run of the CLI reports them.
    let findings = engine(file, 1).1;
    for p in &parts {
        for f in std::iter::once(&p.whole).chain(&p.halves) {
            let _ = std::fs::remove_file(f);
        }
    }
    let [bare, floor, value, one, two, floor_two] = secs;
    // How many accepted lines the fast path answers (one session, as `--jobs 1`).
    let (mut accepted, mut fast) = (0u64, 0u64);
    let mut session = codex_wire::Session::new();
    each_line(&mut |l| {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        let before = session.fast_hits();
        let v = session.feed(l);
        if v.error().is_none() && v.kind != codex_wire::Kind::Unparsed {
            accepted += 1;
            fast += session.fast_hits() - before;
        }
        true
    });

    let rate = |secs: f64, n: u64| n as f64 / secs;
    let (b, f, v, o, t, f2) = (
        rate(bare, bare_lines),
        rate(floor, fed),
        rate(value, fed),
        rate(one, fed),
        rate(two, fed),
        rate(floor_two, fed),
    );
    let mbs = |r: f64| r * bytes as f64 / lines as f64 / 1e6;
    println!("| contender | lines/s | MB/s | ratio |");
    println!("|---|---:|---:|---:|");
    println!(
        "| reading the lines only, 1 core | {b:.0} | {:.0} | {:.2} of floor |",
        mbs(b),
        b / f
    );
    println!(
        "| serde_json parse into `IgnoredAny` (floor), 1 core | {f:.0} | {:.0} | 1.00 |",
        mbs(f)
    );
    println!(
        "| serde_json parse into `Value`, 1 core | {v:.0} | {:.0} | {:.2} of floor |",
        mbs(v),
        v / f
    );
    println!(
        "| floor, 2 cores (half the lines each) | {f2:.0} | {:.0} | {:.2}x floor |",
        mbs(f2),
        f2 / f
    );
    println!(
        "| validate, 1 core | {o:.0} | {:.0} | {:.2} of floor |",
        mbs(o),
        o / f
    );
    println!(
        "| validate, 2 cores | {t:.0} | {:.0} | {:.2} of floor, {:.2}x 1 core |",
        mbs(t),
        t / f,
        t / o
    );
    if with_jsonschema && !cfg!(feature = "jsonschema") {
        println!("\n(the jsonschema crate's rate: `--features jsonschema`)");
    }
    #[cfg(feature = "jsonschema")]
    if with_jsonschema {
        let js = jsonschema_rate(file, lines);
        println!(
            "| jsonschema (ClientRequest.json), 1 core | {js:.0} | {:.0} | {:.3} of floor |",
            mbs(js),
            js / f
        );
        println!("\nvalidate 1 core is {:.1}x jsonschema", o / js);
    }
    println!(
        "\nfindings: {} of {lines} lines; the fast path answered {:.1} % of the {accepted} accepted lines",
        findings,
        100.0 * fast as f64 / accepted.max(1) as f64
    );
    // The targets are for traffic with ~5 % invalid lines; all-invalid lines are
    // measured against the floor, not held to them.
    if name == "all-invalid" {
        println!("targets: none for this mix (measured against the floor)");
    } else {
        println!(
            "targets: 1 core >= 0.50 of floor: {}; 2 cores >= 1.8x 1 core: {}; fast path >= 98 % of accepted: {}",
            ok(o / f >= 0.5),
            ok(t / o >= 1.8),
            ok(fast as f64 >= 0.98 * accepted as f64)
        );
    }
    println!(
        "two cores: validate {:.2}x its one core, the floor {:.2}x its one core (validate's ratio is {:.0} % of the floor's)",
        t / o,
        f2 / f,
        100.0 * (t / o) / (f2 / f)
    );
}

/// jsonschema validating the lines against `ClientRequest.json` (a tenth of them: it is slow).
#[cfg(feature = "jsonschema")]
fn jsonschema_rate(file: &Path, lines: u64) -> f64 {
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
    let n = (lines / 10).max(1);
    let (secs, _) = time(|| {
        let r = BufReader::new(File::open(file).unwrap());
        let mut valid = 0u64;
        for line in r.split(b'\n').take(n as usize) {
            let line = line.unwrap();
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
                valid += validator.is_valid(&v) as u64;
            }
        }
        valid
    });
    n as f64 / secs
}

fn ok(b: bool) -> &'static str {
    if b {
        "met"
    } else {
        "NOT met"
    }
}

/// The mix cut into pieces of `CODEX_WIRE_BENCH_PIECE` lines (default 100,000), each after the mix's first two lines (the
/// session's opening, so every piece is checked as an initialized session's): paths and line
/// counts, and each piece's lines again in two halves (for the floor on two cores).
fn pieces(file: &Path) -> Vec<Piece> {
    let text = std::fs::read(file).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
    let opening = &lines[..2.min(lines.len())];
    let rest = &lines[opening.len()..];
    let piece = std::env::var("CODEX_WIRE_BENCH_PIECE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000usize)
        .max(1);
    let write = |path: PathBuf, lines: &mut dyn Iterator<Item = &&[u8]>| {
        let mut w = BufWriter::new(File::create(&path).unwrap());
        for l in lines {
            w.write_all(l).unwrap();
        }
        w.flush().unwrap();
        path
    };
    rest.chunks(piece)
        .enumerate()
        .map(|(k, chunk)| {
            let (a, b) = chunk.split_at(chunk.len() / 2);
            Piece {
                whole: write(
                    file.with_extension(format!("piece{k}.jsonl")),
                    &mut opening.iter().chain(chunk),
                ),
                halves: [
                    write(
                        file.with_extension(format!("piece{k}a.jsonl")),
                        &mut opening.iter().chain(a),
                    ),
                    write(
                        file.with_extension(format!("piece{k}b.jsonl")),
                        &mut b.iter(),
                    ),
                ],
                lines: (opening.len() + chunk.len()) as u64,
            }
        })
        .collect()
}

/// One piece of a mix: its file, the same lines in two files, its line count.
struct Piece {
    whole: PathBuf,
    halves: [PathBuf; 2],
    lines: u64,
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
