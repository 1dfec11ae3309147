//! Sessions kept by `cargo xtask fidelity --keep` (cases in `tests/corpus/fidelity/`, the real
//! server's transcripts in `tests/corpus/<newest>/fidelity/`): each one a rule of the real server
//! the generated sessions found, replayed offline against the fake under the one masking rule.
//! A session listed in `known_differences.txt` there (with its reason) must still differ.

use codex_wire::diff;
use codex_wire::harness::{self, Server};
use std::path::Path;

#[test]
fn the_fake_plays_every_kept_session_as_the_real_server_did() {
    let root = env!("CARGO_MANIFEST_DIR");
    let cases = harness::load_cases(&Path::new(root).join("tests/corpus/fidelity"))
        .expect("the kept sessions");
    assert!(
        !cases.is_empty(),
        "no kept sessions in tests/corpus/fidelity/"
    );
    let version = codex_wire::newest().version;
    let recorded = Path::new(root)
        .join("tests/corpus")
        .join(version)
        .join("fidelity");
    let known: Vec<String> = std::fs::read_to_string(recorded.join("known_differences.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let bin = Path::new(env!("CARGO_BIN_EXE_codex-wire"));
    // Outside any git repository, as the recordings were made.
    let work = std::env::temp_dir().join(format!("codex-wire-kept-{}", std::process::id()));
    // Each replay mostly waits out the fake's grace windows: four at once, as the turns test.
    let results = harness::run_parallel(4, &cases, |case| {
        let path = recorded.join(format!("{}.real.jsonl", case.name));
        let real = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (cargo xtask fidelity --case <case> --keep)",
                path.display()
            )
        });
        let server = Server::Fake { bin, version: None };
        let (fake, _) = harness::run_outcome(case, &server, &work.join(&case.name))
            .unwrap_or_else(|e| panic!("{}: the fake run could not start: {e}", case.name));
        let fake = std::fs::read_to_string(fake).unwrap_or_default();
        diff::compare(&diff::masked(&real).unwrap(), &diff::masked(&fake).unwrap()).err()
    });
    let (mut failures, mut stale) = (Vec::new(), Vec::new());
    for (case, mismatch) in cases.iter().zip(results) {
        match (mismatch, known.contains(&case.name)) {
            (None, true) => stale.push(case.name.clone()),
            (None, false) | (Some(_), true) => {}
            (Some(m), false) => failures.push(format!(
                "{}: message {} differs: {}\n  real {}\n  fake {}",
                case.name,
                m.index,
                m.why,
                m.a.map(|e| e.msg.to_string()).unwrap_or_default(),
                m.b.map(|e| e.msg.to_string()).unwrap_or_default(),
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        stale.is_empty(),
        "listed in known_differences.txt but now identical: {stale:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
