//! `cargo bench --bench validate_process`: `codex-wire validate` as users run it — the whole
//! process, a file in, every verdict written (JSON to a file and to a pipe, human output to a
//! file) — beside the floor as a process (`examples/validate_floor.rs`: reads the file and parses
//! each line into `IgnoredAny`, one thread and two), side by side in one run, for the `release`
//! and the `dist` profile (built here by cargo), and `pgo`, what ships: the `dist` build
//! profile-guided by `cargo xtask pgo`, beside the `dist` floor (`CODEX_WIRE_BENCH_PROFILES`,
//! default `release,dist,pgo`). The input is the all-method mix of `cargo bench --bench validate`
//! (`CODEX_WIRE_BENCH_LINES`, default 300,000). Each round runs every contender once, in turn, so
//! that a noisy neighbour slows them alike; the best of `CODEX_WIRE_BENCH_ROUNDS` rounds (default
//! 30, about a minute: a neighbour's build can hold a core for longer than a few rounds, which
//! the floor's own two-thread ratio shows) is reported. What the in-process benchmark leaves
//! out: start-up, writing the verdicts, the first and the last batches, the exit.

use codex_wire::validate::traffic;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Where a contender's standard output goes.
#[derive(Clone, Copy, PartialEq)]
enum Out {
    /// Nowhere (the floor writes nothing).
    Null,
    /// A file, truncated before each run.
    File,
    /// A pipe this bench drains.
    Pipe,
}

struct Contender {
    label: &'static str,
    /// The floor's thread count, or validate's arguments before the file.
    args: &'static [&'static str],
    floor: bool,
    out: Out,
}

/// The first four make the ratios: floor 1 and 2 threads, validate 1 and 2 cores.
const CONTENDERS: [Contender; 6] = [
    Contender {
        label: "floor: parse each line into `IgnoredAny`, 1 thread",
        args: &["1"],
        floor: true,
        out: Out::Null,
    },
    Contender {
        label: "floor, 2 threads (half the file each)",
        args: &["2"],
        floor: true,
        out: Out::Null,
    },
    Contender {
        label: "`validate --jobs 1 --format json FILE > out`",
        args: &["validate", "--jobs", "1", "--format", "json"],
        floor: false,
        out: Out::File,
    },
    Contender {
        label: "`validate --jobs 2 --format json FILE > out`",
        args: &["validate", "--jobs", "2", "--format", "json"],
        floor: false,
        out: Out::File,
    },
    Contender {
        label: "`validate --format json FILE | …` (default jobs)",
        args: &["validate", "--format", "json"],
        floor: false,
        out: Out::Pipe,
    },
    Contender {
        label: "`validate --format human FILE > out` (default jobs)",
        args: &["validate", "--format", "human"],
        floor: false,
        out: Out::File,
    },
];

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let lines: u64 = env_or("CODEX_WIRE_BENCH_LINES", 300_000);
    let rounds: usize = env_or("CODEX_WIRE_BENCH_ROUNDS", 30).max(1);
    let profiles: Vec<String> = env_or("CODEX_WIRE_BENCH_PROFILES", "release,dist,pgo".to_string())
        .split(',')
        .map(str::to_string)
        .collect();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for p in &profiles {
        build(p, tmp);
    }

    let file = tmp.join(format!("process-all-method-{lines}.jsonl"));
    let mut w = BufWriter::new(File::create(&file).unwrap());
    traffic::generate_all_methods(lines, 42, &mut w).unwrap();
    w.flush().unwrap();
    drop(w);
    let bytes = std::fs::metadata(&file).unwrap().len();
    // Every contender reads the file from the page cache.
    std::io::copy(&mut File::open(&file).unwrap(), &mut std::io::sink()).unwrap();

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "\n## validate as a process: {lines} all-method lines ({:.0} MB), {cores} cores (the default --jobs), best of {rounds} rounds\n",
        bytes as f64 / 1e6
    );
    // Seconds, best of the rounds: [profile][contender].
    let mut best = vec![[f64::INFINITY; CONTENDERS.len()]; profiles.len()];
    let out_of = |p: &str, k: usize| tmp.join(format!("process-out-{p}-{k}"));
    for _ in 0..rounds {
        for (pi, p) in profiles.iter().enumerate() {
            for (k, c) in CONTENDERS.iter().enumerate() {
                let cmd = if c.floor {
                    let mut cmd = Command::new(tmp.join(format!("process-{p}-validate_floor")));
                    cmd.arg(&file).args(c.args);
                    cmd
                } else {
                    let mut cmd = Command::new(tmp.join(format!("process-{p}-codex-wire")));
                    cmd.args(c.args).arg(&file);
                    cmd
                };
                best[pi][k] = best[pi][k].min(run(cmd, c.out, &out_of(p, k)));
            }
        }
    }

    for (pi, p) in profiles.iter().enumerate() {
        let b = &best[pi];
        println!("### `{p}` profile\n");
        println!("| contender | best s | lines/s | MB/s | ratio |");
        println!("|---|---:|---:|---:|---:|");
        for (k, c) in CONTENDERS.iter().enumerate() {
            let ratio = match k {
                0 => "1.00".to_string(),
                1 => format!("{:.2}x floor", b[0] / b[1]),
                2 => format!("**{:.2}** of floor", b[0] / b[2]),
                _ => format!(
                    "{:.2} of floor, **{:.2}x** 1 core",
                    b[0] / b[k],
                    b[2] / b[k]
                ),
            };
            println!(
                "| {} | {:.3} | {:.0} | {:.0} | {ratio} |",
                c.label,
                b[k],
                lines as f64 / b[k],
                bytes as f64 / b[k] / 1e6
            );
        }
        // One core and two write the same verdicts, byte for byte.
        let same = std::fs::read(out_of(p, 2)).unwrap() == std::fs::read(out_of(p, 3)).unwrap();
        let (one, two) = (b[0] / b[2], b[2] / b[3]);
        // The targets: release, one core >= 0.5 of the floor and two cores >= 1.8x one core;
        // dist and pgo (what ships), one core >= 0.6.
        let targets = if p == "release" {
            format!(
                "targets: 1 core >= 0.5: {}, 2 cores >= 1.8x: {}",
                ok(one >= 0.5),
                ok(two >= 1.8)
            )
        } else {
            format!("target: 1 core >= 0.6: {}", ok(one >= 0.6))
        };
        println!(
            "\n{p}: 1 core {one:.2} of floor, 2 cores {two:.2}x 1 core (the floor's: {:.2}x); {targets}; --jobs 1 and 2 wrote the same JSON: {}\n",
            b[0] / b[1],
            if same { "yes" } else { "NO" }
        );
    }
    for p in &profiles {
        for k in 0..CONTENDERS.len() {
            let _ = std::fs::remove_file(out_of(p, k));
        }
        for name in ["codex-wire", "validate_floor"] {
            let _ = std::fs::remove_file(tmp.join(format!("process-{p}-{name}")));
        }
    }
    let _ = std::fs::remove_file(&file);
}

/// Builds the binary and the floor with `profile` and copies them to `tmp` as
/// `process-<profile>-<name>`: `release` and `bench` (this bench's own build) share
/// `target/release`, so what sits there is whichever was built last.
fn build(profile: &str, tmp: &Path) {
    if profile == "pgo" {
        // The floor is the `dist` one; the binary is `cargo xtask pgo`'s (its last line).
        build("dist", tmp);
        std::fs::copy(
            tmp.join("process-dist-validate_floor"),
            tmp.join("process-pgo-validate_floor"),
        )
        .unwrap();
        let out = codex_wire::harness::cargo()
            .args(["xtask", "pgo"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "cargo xtask pgo failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let bin = text
            .lines()
            .last()
            .expect("cargo xtask pgo names its binary");
        std::fs::copy(bin, tmp.join("process-pgo-codex-wire")).unwrap();
        return;
    }
    let out = codex_wire::harness::cargo()
        .args(["build", "--profile", profile, "--bin", "codex-wire"])
        .args([
            "--example",
            "validate_floor",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build --profile {profile} failed"
    );
    let mut copied = 0;
    for line in out.stdout.split(|b| *b == b'\n') {
        let Ok(msg) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let name = msg["target"]["name"].as_str().unwrap_or("");
        if let (Some(exe), "codex-wire" | "validate_floor") = (msg["executable"].as_str(), name) {
            std::fs::copy(exe, tmp.join(format!("process-{profile}-{name}"))).unwrap();
            copied += 1;
        }
    }
    assert_eq!(copied, 2, "cargo named both binaries of profile {profile}");
}

fn ok(b: bool) -> &'static str {
    if b {
        "met"
    } else {
        "NOT met"
    }
}

/// Seconds from spawn to exit (and, for a pipe, to the end of its output).
fn run(mut cmd: Command, out: Out, path: &PathBuf) -> f64 {
    cmd.stdin(Stdio::null()).stderr(Stdio::null());
    cmd.stdout(match out {
        Out::Null => Stdio::null(),
        Out::File => Stdio::from(File::create(path).unwrap()),
        Out::Pipe => Stdio::piped(),
    });
    let t = Instant::now();
    let mut child = cmd.spawn().expect("the contender starts");
    if let Some(mut pipe) = child.stdout.take() {
        // Drained as a reader would: large reads, nothing kept.
        let mut buf = vec![0u8; 1 << 20];
        while pipe.read(&mut buf).unwrap() > 0 {}
    }
    let status = child.wait().unwrap();
    let secs = t.elapsed().as_secs_f64();
    // validate exits 1 on findings (the mix has ~5 % invalid lines).
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "{cmd:?} failed: {status}"
    );
    secs
}
