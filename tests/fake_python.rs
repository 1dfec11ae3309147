//! Real clients against the fake: the official Python SDK (`openai-codex==0.163.0`, from PyPI)
//! and a pytest port of the seed fake's harness scenarios (`tests/python/`). The scenarios also
//! run against the real binary behind `codex-wire scripted` (real mode,
//! `$CODEX_WIRE_REAL_CODEX`; see `tests/python/fake_codex.py`).
//!
//! The tests create a venv under the target dir (reused across runs) and fail loudly when
//! python3 or pip cannot provide it, or when the real binary is missing: a skipped client test
//! must not pass as green.

use std::path::{Path, PathBuf};
use std::process::Command;

const SDK: &str = "openai-codex==0.163.0";

/// The venv, created once per test binary (the tests run in parallel).
fn venv() -> PathBuf {
    static VENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    VENV.get_or_init(create_venv).clone()
}

fn create_venv() -> PathBuf {
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

/// The real binary (`codex_wire::harness::real_codex`); these tests never pass without it.
fn real_codex() -> PathBuf {
    codex_wire::harness::real_codex(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs pytest on `targets` (relative to `tests/python/`), in real mode against `real` when
/// given; returns the exit status and the output.
fn pytest(targets: &[&str], real: Option<&Path>, name: &str) -> (bool, String) {
    pytest_as(targets, real, None, name)
}

/// [`pytest`] with the fake answering as codex `version`.
fn pytest_as(
    targets: &[&str],
    real: Option<&Path>,
    version: Option<&str>,
    name: &str,
) -> (bool, String) {
    let py = venv();
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    // Outside any git repository (the real server reads the cwd's repo and AGENTS.md).
    let base =
        std::env::temp_dir().join(format!("codex-wire-pytest-{name}-{}", std::process::id()));
    let mut cmd = Command::new(&py);
    // The plugin from the checkout (an installed wheel registers it by its entry point).
    cmd.args([
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "codex_wire.plugin",
        "-rA",
    ])
    .env(
        "PYTHONPATH",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("python"),
    )
    .arg("--basetemp")
    .arg(&base)
    .args(targets)
    .env("CODEX_WIRE_BIN", env!("CARGO_BIN_EXE_codex-wire"))
    .env_remove("CODEX_WIRE_REAL_CODEX")
    .current_dir(&tests);
    if let Some(real) = real {
        cmd.env("CODEX_WIRE_REAL_CODEX", real);
    }
    match version {
        Some(v) => cmd.env("CODEX_WIRE_FAKE_VERSION", v),
        None => cmd.env_remove("CODEX_WIRE_FAKE_VERSION"),
    };
    let out = cmd.output().expect("run pytest");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    if out.status.success() {
        let _ = std::fs::remove_dir_all(&base);
    }
    (out.status.success(), text)
}

/// The count pytest's summary line gives for `outcome` (`7 passed, 2 skipped in 4.01s`).
fn summary_count(text: &str, outcome: &str) -> usize {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(" in ") && (l.contains("passed") || l.contains("failed")))
        .unwrap_or_else(|| panic!("no pytest summary line in:\n{text}"));
    let words: Vec<&str> = line
        .split(|c: char| c == ',' || c.is_whitespace() || c == '=')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|w| w[1] == outcome)
        .map_or(0, |w| w[0].parse().expect("a count"))
}

#[test]
fn python_sdk_and_seed_scenarios_against_the_fake() {
    let (ok, text) = pytest(&["."], None, "fake");
    assert!(ok, "pytest failed:\n{text}");
    assert!(
        !text.contains("skipped"),
        "no Python test may be skipped:\n{text}"
    );
    assert!(
        summary_count(&text, "passed") >= 16,
        "every test ran:\n{text}"
    );
}

/// The scenarios the real server can play: all but the fake-only ones (the `crash` and
/// `grandchild` steps), which skip with their reason. Skips never make this green.
const REAL_MIN_PASSED: usize = 7;
const REAL_MAX_SKIPPED: usize = 2;

#[test]
fn seed_scenarios_against_the_real_binary() {
    let real = real_codex();
    let (ok, text) = pytest(&["test_scenarios.py"], Some(&real), "real");
    assert!(ok, "pytest failed in real mode:\n{text}");
    let (passed, skipped) = (
        summary_count(&text, "passed"),
        summary_count(&text, "skipped"),
    );
    assert!(
        passed >= REAL_MIN_PASSED,
        "only {passed} scenarios passed against the real binary (want {REAL_MIN_PASSED}):\n{text}"
    );
    assert!(
        skipped <= REAL_MAX_SKIPPED,
        "{skipped} scenarios skipped in real mode (at most {REAL_MAX_SKIPPED}, fake-only):\n{text}"
    );
    let skips: Vec<&str> = text.lines().filter(|l| l.starts_with("SKIPPED")).collect();
    assert!(
        skips.iter().all(|l| l.contains("fake-only feature")),
        "a real-mode skip must name the fake-only feature:\n{}",
        skips.join("\n")
    );
}

/// The SDK's tests against the fake answering as every supported version (the SDK pins codex
/// 0.163.0 through `openai-codex-cli-bin`, and runs against whatever `codex` it is given).
#[test]
fn python_sdk_against_the_fake_as_every_version() {
    for &p in codex_wire::versions() {
        let v = p.version;
        let (ok, text) = pytest_as(&["test_sdk.py"], None, Some(v), &format!("sdk-as-{v}"));
        assert!(ok, "pytest failed with the fake as {v}:\n{text}");
        assert!(
            !text.contains("skipped"),
            "{v}: no test may be skipped:\n{text}"
        );
        assert!(
            summary_count(&text, "passed") >= 4,
            "{v}: every test ran:\n{text}"
        );
    }
}

/// The same SDK tests against the codex binary the SDK bundles (`openai-codex-cli-bin`, installed
/// with it), played by the scripted model: the tests hold on the SDK's own real server too (all
/// but the goal rollover, which only the fake scripts).
#[test]
fn python_sdk_against_its_own_bundled_binary() {
    let py = venv();
    let out = Command::new(&py)
        .args([
            "-c",
            "import codex_cli_bin; print(codex_cli_bin.bundled_codex_path())",
        ])
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundled = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(
        bundled.is_file(),
        "the SDK's bundled codex is missing: {}",
        bundled.display()
    );
    let (ok, text) = pytest(&["test_sdk.py"], Some(&bundled), "sdk-bundled");
    assert!(
        ok,
        "pytest failed against the SDK's bundled binary:\n{text}"
    );
    // The two goal tests script the fake's goal rollover (`continuations`): fake-only.
    assert!(
        summary_count(&text, "passed") >= 2,
        "the SDK's turns ran:\n{text}"
    );
    assert!(summary_count(&text, "skipped") <= 2, "{text}");
    let skips: Vec<&str> = text.lines().filter(|l| l.starts_with("SKIPPED")).collect();
    assert!(
        skips.iter().all(|l| l.contains("fake-only feature")),
        "a skip against the real binary must name the fake-only feature:\n{}",
        skips.join("\n")
    );
}
