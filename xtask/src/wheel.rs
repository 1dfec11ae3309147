//! `cargo xtask wheel [--debug]`: the `codex-wire` wheel (maturin, `bindings = "bin"`: the binary
//! plus the Python package in `python/` with its pytest plugin) into `target/wheels/`. maturin is
//! installed once into a venv under `target/` from PyPI; the wheel itself installs with no
//! network and no Rust (`pip install --no-index target/wheels/codex_wire-*.whl`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The maturin release the wheel is built with.
pub const MATURIN: &str = "maturin==1.15.0";

/// A venv under `dir` with maturin in it; returns its `maturin`.
pub fn maturin(dir: &Path) -> Result<PathBuf, String> {
    let bin = dir.join("bin/maturin");
    let marker = dir.join(format!("installed-{MATURIN}"));
    if bin.is_file() && marker.exists() {
        return Ok(bin);
    }
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
        status
            .success()
            .then_some(())
            .ok_or(format!("{what} failed ({status})"))
    };
    run(
        Command::new("python3").args(["-m", "venv"]).arg(dir),
        "python3 -m venv (python3 and its venv module are needed)",
    )?;
    run(
        Command::new(dir.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            MATURIN,
        ]),
        "pip install maturin",
    )?;
    std::fs::write(&marker, "").map_err(|e| e.to_string())?;
    Ok(bin)
}

pub fn main(args: &[String]) -> Result<(), String> {
    let debug = args.iter().any(|a| a == "--debug");
    let root = crate::codex_bin::repo_root();
    let maturin = maturin(&root.join("target/tmp/wheel-tools"))?;
    let out = root.join("target/wheels");
    let t0 = std::time::Instant::now();
    let mut cmd = Command::new(&maturin);
    // maturin runs cargo: the same environment as a nested cargo (see `harness::cargo`).
    codex_wire::harness::without_cargo_run_env(&mut cmd);
    cmd.args(["build", "--out"]).arg(&out).current_dir(&root);
    // What ships is built with the `dist` profile (whole-program LTO).
    if !debug {
        cmd.args(["--profile", "dist"]);
    }
    let status = cmd.status().map_err(|e| format!("maturin: {e}"))?;
    if !status.success() {
        return Err(format!("maturin build failed ({status})"));
    }
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    wheels.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    let wheel = wheels.pop().ok_or("maturin wrote no wheel")?;
    let size = std::fs::metadata(&wheel).map(|m| m.len()).unwrap_or(0);
    println!(
        "{} ({:.1} MB) in {:.1}s\ninstall: pip install --no-index {}",
        wheel.display(),
        size as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        wheel.display()
    );
    Ok(())
}
