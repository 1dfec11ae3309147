//! Real clients against the fake: the official Python SDK (`openai-codex==0.163.0`, from PyPI)
//! and a pytest port of the seed fake's harness scenarios (`tests/python/`).
//!
//! The test creates a venv under the target dir (reused across runs) and fails loudly when
//! python3 or pip cannot provide it: a skipped client test must not pass as green.

use std::path::{Path, PathBuf};
use std::process::Command;

const SDK: &str = "openai-codex==0.163.0";

fn venv() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-pyenv");
    let py = dir.join("bin/python");
    let marker = dir.join(format!("installed-{SDK}"));
    if marker.exists() {
        return py;
    }
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .status()
        .expect("python3 is needed for the Python SDK tests (apt-get install python3-venv)");
    assert!(status.success(), "python3 -m venv failed");
    let status = Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            SDK,
            "pytest",
        ])
        .status()
        .expect("pip in the venv");
    assert!(
        status.success(),
        "pip install {SDK} pytest failed (network?)"
    );
    std::fs::write(&marker, "").unwrap();
    py
}

#[test]
fn python_sdk_and_seed_scenarios_against_the_fake() {
    let py = venv();
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"])
        .arg(&tests)
        .env("CODEX_WIRE_BIN", env!("CARGO_BIN_EXE_codex-wire"))
        .current_dir(&tests)
        .output()
        .expect("run pytest");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "pytest failed:\n{text}");
    assert!(
        !text.contains("skipped"),
        "no Python test may be skipped:\n{text}"
    );
}
