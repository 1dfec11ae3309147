//! `cargo xtask pgo`: the `dist` binary with profile-guided optimisation, what the wheel and the
//! npm package ship. Three steps, as rustc's PGO guide lays them out: build `dist` instrumented
//! (`-Cprofile-generate`), run `validate` on generated traffic, merge the raw profiles
//! (`llvm-profdata` from rustup's `llvm-tools`, added when missing), build `dist` again with
//! `-Cprofile-use`. Layout and inlining of the generated checks decide `validate`'s speed (fat
//! LTO gives it ~10 %); the profile gives it ~12 % more, one core, best of 20 (README,
//! Performance).
//!
//! The training traffic is generated here with its own seed, not the benchmarks' input: every
//! mix (`session`, `all-method`, `all-invalid`), read from a file and from a pipe, judged on one
//! core and on two, written as JSON and as text. Nothing else is trained: the fake, the proxy and
//! the CLI's other paths get no counts, which LLVM reads as rarely run (optimised for size);
//! their time goes to the real server's turns and the client's pipes, not to their own code.
//!
//! Each step has its own target directory under `target/pgo/`, so that neither the plain `dist`
//! build nor the other step is rebuilt when one runs (RUSTFLAGS are part of every crate's
//! fingerprint). `pip wheel .` cannot pass rustc flags, so a wheel built from a checkout is the
//! plain `dist` build (`cargo xtask wheel --no-pgo` ships the same bytes: the CI check).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The training traffic's seed (the benchmarks generate theirs with 42).
const SEED: u64 = 7;
/// Lines of each mix: enough for every method's checks to be counted many times, a few seconds
/// of the instrumented binary in all.
const LINES: u64 = 60_000;

/// The triple this machine builds for: PGO builds name it, so that RUSTFLAGS reach the
/// binary's crates and not the build scripts and proc macros cargo runs on the host.
fn host() -> Result<String, String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("rustc -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| "rustc -vV named no host".to_string())
}

/// `llvm-profdata` of the toolchain's own LLVM (a profile is read by the LLVM that wrote it).
fn llvm_profdata(host: &str) -> Result<PathBuf, String> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("rustc --print sysroot: {e}"))?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tool = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-profdata");
    if !tool.exists() {
        let status = Command::new("rustup")
            .args(["component", "add", "llvm-tools"])
            .status()
            .map_err(|e| format!("rustup component add llvm-tools: {e}"))?;
        if !status.success() || !tool.exists() {
            return Err(format!(
                "{} is missing and `rustup component add llvm-tools` did not bring it",
                tool.display()
            ));
        }
    }
    Ok(tool)
}

/// `cargo build --profile dist` of the binary for `host` into `target_dir` with `rustflags`;
/// returns the binary.
fn cargo_dist(
    root: &Path,
    host: &str,
    target_dir: &Path,
    rustflags: &str,
) -> Result<PathBuf, String> {
    let status = codex_wire::harness::cargo()
        .args(["build", "-p", "codex-wire", "--bin", "codex-wire"])
        .args(["--profile", "dist", "--target", host, "--target-dir"])
        .arg(target_dir)
        .env("RUSTFLAGS", rustflags)
        .current_dir(root)
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cargo build --profile dist ({rustflags}) failed ({status})"
        ));
    }
    Ok(target_dir.join(host).join("dist").join("codex-wire"))
}

/// Runs the instrumented binary on the training traffic (each run writes a raw profile into
/// `raw`).
fn train(bin: &Path, dir: &Path, raw: &Path) -> Result<(), String> {
    use codex_wire::validate::traffic;
    type Gen = fn(u64, u64, &mut Vec<u8>) -> std::io::Result<()>;
    let mixes: [(&str, Gen); 3] = [
        ("session", |n, s, o| traffic::generate(n, s, o)),
        ("all-method", |n, s, o| {
            traffic::generate_all_methods(n, s, o)
        }),
        ("all-invalid", |n, s, o| {
            traffic::generate_all_invalid(n, s, o)
        }),
    ];
    for (name, generate) in mixes {
        let mut lines = Vec::new();
        generate(LINES, SEED, &mut lines).map_err(|e| e.to_string())?;
        let file = dir.join(format!("{name}.jsonl"));
        std::fs::write(&file, &lines).map_err(|e| format!("{}: {e}", file.display()))?;
        for args in [
            &["--jobs", "1", "--format", "json"][..],
            &["--jobs", "2", "--format", "json"],
            &["--format", "human"],
        ] {
            let out = std::fs::File::create(dir.join("out")).map_err(|e| e.to_string())?;
            let status = Command::new(bin)
                .arg("validate")
                .args(args)
                .arg(&file)
                .env("LLVM_PROFILE_FILE", raw.join("codex-wire-%p-%m.profraw"))
                .stdout(out)
                .stderr(std::process::Stdio::null())
                .status()
                .map_err(|e| format!("{}: {e}", bin.display()))?;
            // validate exits 1 when it found a violation: every mix has some.
            if status.code().is_none_or(|c| c > 1) {
                return Err(format!("validate {args:?} {name}: {status}"));
            }
        }
        // From a pipe: the stream path (batches written as they come).
        let mut child = Command::new(bin)
            .args(["validate", "--format", "json", "-"])
            .env("LLVM_PROFILE_FILE", raw.join("codex-wire-%p-%m.profraw"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("piped");
            stdin.write_all(&lines).map_err(|e| e.to_string())?;
        }
        let status = child.wait().map_err(|e| e.to_string())?;
        if status.code().is_none_or(|c| c > 1) {
            return Err(format!("validate - {name}: {status}"));
        }
    }
    Ok(())
}

/// The merged profile (`target/pgo/codex-wire-<hash>.profdata`), trained afresh.
fn profile(root: &Path, host: &str) -> Result<PathBuf, String> {
    let tool = llvm_profdata(host)?;
    let pgo = root.join("target/pgo");
    let raw = pgo.join("raw");
    let _ = std::fs::remove_dir_all(&raw);
    std::fs::create_dir_all(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    // The profiles of earlier runs (14 MB each).
    for e in std::fs::read_dir(&pgo).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().ends_with(".profdata") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let flags = format!("-Cprofile-generate={}", raw.display());
    let instrumented = cargo_dist(root, host, &pgo.join("generate"), &flags)?;
    let t0 = std::time::Instant::now();
    train(&instrumented, &pgo, &raw)?;
    let merged = pgo.join("codex-wire.profdata");
    let status = Command::new(&tool)
        .args(["merge", "-o"])
        .arg(&merged)
        .arg(&raw)
        .status()
        .map_err(|e| format!("{}: {e}", tool.display()))?;
    if !status.success() {
        return Err(format!("llvm-profdata merge failed ({status})"));
    }
    // Named by its content: cargo tracks RUSTFLAGS, not the file they name, so a profile that
    // changed must change the flags for the crates built with the old one to be built again.
    let bytes = std::fs::read(&merged).map_err(|e| format!("{}: {e}", merged.display()))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&bytes, &mut h);
    let named = pgo.join(format!(
        "codex-wire-{:016x}.profdata",
        std::hash::Hasher::finish(&h)
    ));
    std::fs::rename(&merged, &named).map_err(|e| format!("{}: {e}", named.display()))?;
    eprintln!(
        "pgo: trained in {:.1}s: {}",
        t0.elapsed().as_secs_f64(),
        named.display()
    );
    Ok(named)
}

/// What a PGO build adds to RUSTFLAGS, trained afresh (for `cargo xtask wheel`, which hands it
/// to maturin), and the target directory it builds in.
pub fn rustflags(root: &Path) -> Result<(String, PathBuf, String), String> {
    let host = host()?;
    let merged = profile(root, &host)?;
    Ok((
        format!("-Cprofile-use={}", merged.display()),
        root.join("target/pgo/use"),
        host,
    ))
}

/// The PGO-built `dist` binary.
pub fn build(root: &Path) -> Result<PathBuf, String> {
    let (flags, dir, host) = rustflags(root)?;
    cargo_dist(root, &host, &dir, &flags)
}

pub fn main(_args: &[String]) -> Result<(), String> {
    let bin = build(&crate::codex_bin::repo_root())?;
    // The last line: the binary (the process benchmark reads it).
    println!("{}", bin.display());
    Ok(())
}
