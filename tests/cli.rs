//! The command line behaves like one: `--help` / `--version` everywhere with exit 0, errors
//! that name the bad flag with exit 2, completions, and the fake accepting codex's own argv.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codex-wire"))
        .args(args)
        .env_remove("CODEX_WIRE_FAKE_STATE_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_and_version_everywhere() {
    for args in [
        &["--help"][..],
        &["help"],
        &["validate", "--help"],
        &["proxy", "--help"],
        &["fake", "--help"],
        &["fake", "app-server", "--help"],
        &["completions", "--help"],
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains("Usage:"), "{args:?}");
    }
    let v = run(&["--version"]);
    assert_eq!(v.status.code(), Some(0));
    assert_eq!(
        text(&v.stdout).trim(),
        format!("codex-wire {}", env!("CARGO_PKG_VERSION"))
    );
    // The fake answers as the codex release it speaks.
    let v = run(&["fake", "--version"]);
    assert_eq!(v.status.code(), Some(0));
    let want = format!("codex-cli {}", codex_wire::newest().version);
    assert_eq!(text(&v.stdout).trim(), want);
}

#[test]
fn errors_name_the_flag() {
    for (args, flag) in [
        (&["validate", "--bogus"][..], "--bogus"),
        (&["proxy", "--nope", "--", "cat"], "--nope"),
        (&["fake", "app-server", "--listen-to", "x"], "--listen-to"),
        (&["fake", "--frobnicate", "app-server"], "--frobnicate"),
        (&["validate", "--format", "yaml"], "yaml"),
        (&["validate", "--jobs", "0"], "0"),
        (&["fake", "app-server", "--ws-auth", "password"], "password"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    // No command at all is a usage error too, with the usage on stderr.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("Usage:"));
    let out = run(&["proxy"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        assert!(
            script.contains("validate") && script.contains("fake"),
            "{shell}"
        );
    }
}

/// codex's argv as clients write it: `-c` before and after `app-server`, `--listen`, the
/// global flags; the fake must start and answer `initialize`.
#[test]
fn fake_takes_codex_argv() {
    let dir = std::env::temp_dir().join(format!("codex-wire-cli-{}", std::process::id()));
    let state = dir.to_str().unwrap();
    for args in [
        vec!["fake", "--state-dir", state, "app-server"],
        vec![
            "fake",
            "--state-dir",
            state,
            "-c",
            "model=\"gpt-5.5\"",
            "--enable",
            "x",
            "app-server",
            "-c",
            "approval_policy=never",
            "--listen",
            "stdio://",
        ],
        vec![
            "fake",
            "-m",
            "o3",
            "-s",
            "read-only",
            "-a",
            "never",
            "app-server",
            "--stdio",
        ],
        // The fake's own flag is accepted on either side of `app-server`.
        vec!["fake", "app-server", "--state-dir", state],
    ] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codex-wire"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut w = c.stdin.take().unwrap();
        writeln!(
            w,
            r#"{{"id":0,"method":"initialize","params":{{"clientInfo":{{"name":"t","title":null,"version":"1"}}}}}}"#
        )
        .unwrap();
        drop(w);
        let out = c.wait_with_output().unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(stdout.contains(r#""id":0,"result""#), "{args:?}: {stdout}");
    }
    // codex refuses an override without `=` before starting, with exit 1.
    let out = run(&["fake", "-c", "model", "app-server"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Invalid override (missing '='): model"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn versions_lists_every_supported_version_oldest_first() {
    let out = Command::new(env!("CARGO_BIN_EXE_codex-wire"))
        .arg("versions")
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let want: Vec<String> = codex_wire::versions()
        .iter()
        .map(|p| p.version.to_string())
        .collect();
    assert_eq!(listed, want);
    assert_eq!(
        listed.last().map(String::as_str),
        Some(codex_wire::newest().version)
    );
}

#[test]
fn a_report_cut_short_by_its_reader_ends_without_a_panic() {
    // Two recordings that differ early, so the report has more lines than the reader takes.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/0.171.0/turns/");
    let a = format!("{dir}01_message.real.jsonl");
    let b = format!("{dir}02_reasoning_message.real.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_codex-wire"))
        .args(["diff", &a, &b])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the report is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(
        !err.contains("panicked"),
        "diff panicked on a closed pipe: {err}"
    );
}
