//! `codex-wire record` and `codex-wire replay`, offline: sessions of the turn corpus recorded
//! against the scripted model as the upstream (the real codex behind record), then replayed on
//! the fake and on the real binary; each replay must be the recording's conversation under
//! `diff`'s masking rule. And nothing secret reaches a recording.

use codex_wire::harness::{self, Case, Server};
use codex_wire::replay;
use std::path::{Path, PathBuf};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_codex-wire"))
}

fn real() -> PathBuf {
    harness::real_codex(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("the record tests need the real codex: {e}"))
}

fn work(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("codex-wire-record-{}-{name}", std::process::id()))
}

fn corpus_case(name: &str) -> Case {
    let cases = harness::load_cases(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/turns"
    )))
    .expect("the turn corpus");
    cases
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no corpus case {name}"))
}

/// Records `case`, replays it on the fake and on the real server: the differences, if any.
fn round_trip(case: &Case) -> Vec<String> {
    let root = work(&case.name);
    let codex = real();
    let (rec, stopped) = codex_wire::record::record_case(case, bin(), &codex, &root)
        .unwrap_or_else(|e| panic!("{}: cannot record: {e}", case.name));
    let mut problems = Vec::new();
    if let Some(s) = stopped {
        problems.push(format!(
            "{}: the recording's client stopped: {s}",
            case.name
        ));
    }
    let version = codex_wire::newest().version;
    let servers = [
        (
            "fake",
            Server::Fake {
                bin: bin(),
                version: Some(version),
            },
        ),
        (
            "real",
            Server::Real {
                bin: bin(),
                codex: &codex,
            },
        ),
    ];
    for (kind, server) in servers {
        let (t, stopped) = replay::replay(&rec, &server, &root.join(kind))
            .unwrap_or_else(|e| panic!("{}: cannot replay: {e}", case.name));
        if let Some(s) = stopped {
            problems.push(format!(
                "{} on the {kind}: the replayed client stopped: {s}",
                case.name
            ));
        }
        match replay::compare(&rec, &t).expect("transcripts") {
            Ok(_) => {}
            Err(m) => problems.push(format!(
                "{} on the {kind}: message {} differs: {}\n  recording {:?}\n  replay    {:?}",
                case.name,
                m.index,
                m.why,
                m.a.map(|e| e.msg.to_string()),
                m.b.map(|e| e.msg.to_string())
            )),
        }
    }
    if problems.is_empty() && std::env::var_os("CODEX_WIRE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
    problems
}

#[test]
fn corpus_sessions_recorded_and_replayed_on_both_servers() {
    let names = std::env::var("CODEX_WIRE_RECORD_CASES").unwrap_or_else(|_| {
        "01_message,03_command_approved,07b_partial_then_retry,08_two_turns,17_restart_resume"
            .into()
    });
    let mut problems = Vec::new();
    for name in names.split(',') {
        problems.extend(round_trip(&corpus_case(name)));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
