//! The pip wheel is self-contained: built by `cargo xtask wheel` (here `--debug`, which reuses
//! this test build), installed with no network into a fresh venv outside the checkout, its
//! `codex-wire` runs, and its pytest plugin (registered by the `pytest11` entry point) drives the
//! official Python SDK through a turn, and fails a test whose client sends a field the real
//! server drops, naming the path. Needs python3 and PyPI (for pytest and the SDK in that venv).

use std::path::{Path, PathBuf};
use std::process::Command;

const SDK: &str = "openai-codex==0.163.0";

/// The ten-line suite a Python team writes: a turn of the official SDK against `codex_fake`, and
/// a client that sends a field the real server drops.
const SUITE: &str = r#"import json, subprocess
from codex_wire import message, turn, usage
from openai_codex import Codex, CodexConfig

def test_sdk_turn(codex_fake, tmp_path):
    codex_fake.script(turn(message("The answer.", chunks=2), usage(12, 4)))
    with Codex(CodexConfig(codex_bin=str(codex_fake.bin), cwd=str(tmp_path))) as codex:
        assert codex.thread_start().run("Question?").final_response == "The answer."

def test_client_sends_a_dropped_field(codex_fake):
    lines = [{"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}},
             {"id": 1, "method": "thread/start", "params": {"temperature": 0.2}}]
    subprocess.run([str(codex_fake.bin), "app-server"], input="".join(json.dumps(l) + "\n" for l in lines),
                   text=True, capture_output=True, timeout=30)
"#;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

fn newest_wheel(dir: &Path) -> PathBuf {
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    wheels.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    wheels.pop().expect("cargo xtask wheel wrote a wheel")
}

#[test]
fn the_wheel_installs_offline_and_its_plugin_checks_a_real_client() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    run(
        codex_wire::harness::cargo()
            .args(["xtask", "wheel", "--debug"])
            .current_dir(root),
        "cargo xtask wheel --debug",
    );
    let wheel = newest_wheel(&root.join("target/wheels"));

    // A fresh venv and a suite outside the checkout: nothing of the repo is reachable.
    let work = std::env::temp_dir().join(format!("codex-wire-wheel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let venv = work.join("venv");
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    );
    let pip = venv.join("bin/pip");
    let t0 = std::time::Instant::now();
    run(
        Command::new(&pip)
            .args([
                "install",
                "--quiet",
                "--no-index",
                "--disable-pip-version-check",
            ])
            .arg(&wheel),
        "pip install --no-index <wheel>",
    );
    println!(
        "installed {} ({:.1} MB) offline in {:.1}s",
        wheel.display(),
        std::fs::metadata(&wheel).unwrap().len() as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    let versions = run(
        Command::new(venv.join("bin/codex-wire")).arg("versions"),
        "the installed codex-wire",
    );
    let want: Vec<&str> = codex_wire::versions().iter().map(|p| p.version).collect();
    assert_eq!(versions.split_whitespace().collect::<Vec<_>>(), want);
    // The versions have one source (schema/, through the binary): the wheel's metadata names
    // none, so adding a version needs no edit of pyproject.toml.
    let metadata = run(
        Command::new(venv.join("bin/python")).args([
            "-c",
            "import importlib.metadata as m; print(m.metadata('codex-wire')['Summary'])",
        ]),
        "wheel metadata",
    );
    for v in &want {
        assert!(
            !metadata.contains(v),
            "the wheel's summary names {v} (a second list to keep): {metadata}"
        );
    }

    run(
        Command::new(&pip).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            SDK,
            "pytest",
        ]),
        "pip install the SDK and pytest",
    );
    std::fs::write(work.join("test_client.py"), SUITE).unwrap();
    let out = Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_client.py",
        ])
        .current_dir(&work)
        .env_remove("CODEX_WIRE_BIN")
        .env_remove("PYTHONPATH")
        .env_remove("CODEX_WIRE_REAL_CODEX")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(
        text.contains("1 failed, 1 passed"),
        "the SDK turn passes, the dropped field fails its test:\n{text}"
    );
    assert!(
        text.contains("FAILED test_client.py::test_client_sends_a_dropped_field"),
        "{text}"
    );
    assert!(
        text.contains("ignored by the real server: $.params.temperature (in thread/start)"),
        "the failure names the path:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
