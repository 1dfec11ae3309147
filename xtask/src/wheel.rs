//! `cargo xtask wheel [--debug]`: the `codex-wire` wheel (maturin, `bindings = "bin"`: the binary
//! plus the Python package in `python/` with its pytest plugin) into `target/wheels/`. maturin is
//! installed once into a venv under `target/` from PyPI; the wheel itself installs with no
//! network and no Rust (`pip install --no-index target/wheels/codex_wire-*.whl`).
//!
//! The maturin release and the profile are pyproject.toml's (its `[build-system]` pin, its
//! `[tool.maturin] profile = "dist"`), the ones `pip wheel .` uses too: every way of building the
//! wheel runs the same cargo build and ships the same stripped binary. `--debug` asks for the
//! `dev` profile (the tests' build, reused).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The maturin release the wheel is built with: pyproject.toml's build requirement
/// (`maturin==X.Y.Z`), which a PEP 517 build (`pip wheel .`) installs too.
pub fn maturin_requirement(root: &Path) -> Result<String, String> {
    let path = root.join("pyproject.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .find(|l| l.trim_start().starts_with("requires"))
        .and_then(|l| l.split('"').find(|r| r.starts_with("maturin==")))
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "{}: no `maturin==X.Y.Z` in [build-system] requires",
                path.display()
            )
        })
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or(format!("{what} failed ({status})"))
}

/// A venv under `dir` with maturin (`requirement`) in it; returns its `maturin`.
pub fn maturin(dir: &Path, requirement: &str) -> Result<PathBuf, String> {
    let bin = dir.join("bin/maturin");
    let marker = dir.join(format!("installed-{requirement}"));
    if bin.is_file() && marker.exists() {
        return Ok(bin);
    }
    run(
        Command::new("python3").args(["-m", "venv"]).arg(dir),
        "python3 -m venv (python3 and its venv module are needed)",
    )?;
    run(
        Command::new(dir.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            requirement,
        ]),
        "pip install maturin",
    )?;
    std::fs::write(&marker, "").map_err(|e| e.to_string())?;
    Ok(bin)
}

pub fn main(args: &[String]) -> Result<(), String> {
    let debug = args.iter().any(|a| a == "--debug");
    let root = crate::codex_bin::repo_root();
    if args.iter().any(|a| a == "--pip-check") {
        return pip_check(&root);
    }
    // What ships is profile-guided (`cargo xtask pgo`); `--no-pgo` builds what `pip wheel .`
    // builds from a checkout.
    let pgo = !debug && !args.iter().any(|a| a == "--no-pgo");
    build(&root, &root.join("target/wheels"), debug, pgo).map(|_| ())
}

/// `cargo xtask wheel` into `out`; returns the wheel.
fn build(root: &Path, out: &Path, debug: bool, pgo: bool) -> Result<PathBuf, String> {
    let maturin = maturin(
        &root.join("target/tmp/wheel-tools"),
        &maturin_requirement(root)?,
    )?;
    let t0 = std::time::Instant::now();
    let mut cmd = Command::new(&maturin);
    // maturin runs cargo: the same environment as a nested cargo (see `harness::cargo`).
    codex_wire::harness::without_cargo_run_env(&mut cmd);
    cmd.args(["build", "--out"]).arg(out).current_dir(root);
    // What ships is built with pyproject.toml's profile (`dist`: whole-program LTO, stripped);
    // `--debug` overrides it with the tests' own build.
    if debug {
        cmd.args(["--profile", "dev"]);
    }
    if pgo {
        // The profile trained afresh, handed to maturin's cargo for the host triple (so that
        // it reaches the binary's crates, not build scripts), in PGO's own target directory.
        let (flags, dir, host) = crate::pgo::rustflags(root)?;
        cmd.args(["--target", &host])
            .env("RUSTFLAGS", flags)
            .env("CARGO_TARGET_DIR", dir);
    }
    let status = cmd.status().map_err(|e| format!("maturin: {e}"))?;
    if !status.success() {
        return Err(format!("maturin build failed ({status})"));
    }
    let wheel = newest_wheel(out)?;
    let size = std::fs::metadata(&wheel).map(|m| m.len()).unwrap_or(0);
    println!(
        "{} ({:.1} MB) in {:.1}s\ninstall: pip install --no-index {}",
        wheel.display(),
        size as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        wheel.display()
    );
    Ok(wheel)
}

fn newest_wheel(dir: &Path) -> Result<PathBuf, String> {
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    wheels.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    wheels
        .pop()
        .ok_or_else(|| format!("no wheel in {}", dir.display()))
}

/// The largest binary a wheel may ship: the stripped `dist` build is about 23 MB, the unstripped
/// `release` one that a PEP 517 build took before pyproject named the profile about 77 MB.
const MAX_BINARY: u64 = 40_000_000;

/// `cargo xtask wheel --pip-check` (a CI step: the fat-LTO build takes minutes, too long for
/// `cargo test`): the wheel built the standard Python way (`pip wheel .` in a fresh venv, maturin
/// installed by pip's build isolation from pyproject's pin) and the one `cargo xtask wheel
/// --no-pgo` builds ship the same binary, byte for byte, stripped and under [`MAX_BINARY`]
/// (`pip wheel .` cannot hand rustc a profile, so the profile-guided wheel is another binary).
fn pip_check(root: &Path) -> Result<(), String> {
    let dir = root.join("target/tmp/pip-check");
    let _ = std::fs::remove_dir_all(&dir);
    let venv = dir.join("venv");
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    )?;
    let t0 = std::time::Instant::now();
    let mut pip = Command::new(venv.join("bin/pip"));
    codex_wire::harness::without_cargo_run_env(&mut pip);
    pip.args([
        "wheel",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "-w",
    ])
    .arg(dir.join("pip"))
    .arg(root)
    .current_dir(root);
    run(&mut pip, "pip wheel .")?;
    let by_pip = newest_wheel(&dir.join("pip"))?;
    println!(
        "pip wheel . : {} in {:.0}s",
        by_pip.display(),
        t0.elapsed().as_secs_f64()
    );
    let by_xtask = build(root, &dir.join("xtask"), false, false)?;
    let a = wheel_binary(&venv, &by_pip, &dir.join("pip-bin"))?;
    let b = wheel_binary(&venv, &by_xtask, &dir.join("xtask-bin"))?;
    let (ba, bb) = (read(&a)?, read(&b)?);
    if ba != bb {
        return Err(format!(
            "`pip wheel .` ships another binary than `cargo xtask wheel`: {} ({} bytes) vs {} ({} bytes)",
            a.display(),
            ba.len(),
            b.display(),
            bb.len()
        ));
    }
    if ba.windows(b".symtab".len()).any(|w| w == b".symtab") {
        return Err(format!("{}: not stripped (has .symtab)", a.display()));
    }
    if ba.len() as u64 > MAX_BINARY {
        return Err(format!(
            "{}: {} bytes, over {MAX_BINARY}",
            a.display(),
            ba.len()
        ));
    }
    println!(
        "pip-check: `pip wheel .` and `cargo xtask wheel` ship the same stripped binary ({:.1} MB)",
        ba.len() as f64 / 1e6
    );
    Ok(())
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The `codex-wire` binary a wheel ships, extracted into `into` (by the venv's Python: a wheel is
/// a zip).
fn wheel_binary(venv: &Path, wheel: &Path, into: &Path) -> Result<PathBuf, String> {
    const EXTRACT: &str = "import sys, zipfile\n\
z = zipfile.ZipFile(sys.argv[1])\n\
names = [n for n in z.namelist() if n.endswith('/scripts/codex-wire')]\n\
assert len(names) == 1, z.namelist()\n\
open(sys.argv[2], 'wb').write(z.read(names[0]))\n";
    std::fs::create_dir_all(into).map_err(|e| e.to_string())?;
    let bin = into.join("codex-wire");
    run(
        Command::new(venv.join("bin/python"))
            .args(["-c", EXTRACT])
            .arg(wheel)
            .arg(&bin),
        "extract the wheel's binary",
    )?;
    Ok(bin)
}
