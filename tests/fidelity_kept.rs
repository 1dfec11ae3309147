//! Sessions kept by `cargo xtask fidelity --keep` (cases in `tests/corpus/fidelity/`, the real
//! server's transcripts in `tests/corpus/<V>/fidelity/` for every version they were recorded
//! on): each one a rule of the real server the generated sessions found, replayed offline against
//! the fake answering as that version, under the one masking rule. A session listed in that
//! version's `known_differences.txt` (`name<TAB>message N <path><TAB>why`) must still differ
//! there, first at that message and path.

use codex_wire::diff;
use codex_wire::harness::{self, Server};
use std::path::Path;

/// Where a run parts from its recording, as `known_differences.txt` names it.
fn where_(m: &diff::Mismatch) -> String {
    format!(
        "message {} {}",
        m.index,
        m.why.split(": ").next().unwrap_or("")
    )
}

#[test]
fn the_fake_plays_every_kept_session_as_the_real_server_did() {
    let root = env!("CARGO_MANIFEST_DIR");
    let cases = harness::load_cases(&Path::new(root).join("tests/corpus/fidelity"))
        .expect("the kept sessions");
    assert!(
        !cases.is_empty(),
        "no kept sessions in tests/corpus/fidelity/"
    );
    let recorded = |v: &str| {
        Path::new(root)
            .join("tests/corpus")
            .join(v)
            .join("fidelity")
    };
    // Every (version, session) with a recording; the newest must have them all.
    let jobs: Vec<(&'static codex_wire::Protocol, &harness::Case)> = codex_wire::versions()
        .iter()
        .flat_map(|p| cases.iter().map(move |c| (*p, c)))
        .filter(|(p, c)| {
            let newest = p.version == codex_wire::newest().version;
            newest
                || recorded(p.version)
                    .join(format!("{}.real.jsonl", c.name))
                    .is_file()
        })
        .collect();
    let bin = Path::new(env!("CARGO_BIN_EXE_codex-wire"));
    // Outside any git repository, as the recordings were made.
    let work = std::env::temp_dir().join(format!("codex-wire-kept-{}", std::process::id()));
    // Each replay mostly waits out the fake's grace windows: four at once, as the turns test.
    let judge = |&(p, case): &(&'static codex_wire::Protocol, &harness::Case)| {
        let path = recorded(p.version).join(format!("{}.real.jsonl", case.name));
        let real = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (cargo xtask fidelity --case <case> --keep)",
                path.display()
            )
        });
        let server = Server::Fake {
            bin,
            version: Some(p.version),
        };
        let dir = work.join(p.version).join(&case.name);
        let (fake, _) = harness::run_outcome(case, &server, &dir)
            .unwrap_or_else(|e| panic!("{}: the fake run could not start: {e}", case.name));
        let fake = std::fs::read_to_string(fake).unwrap_or_default();
        diff::compare(&diff::masked(&real).unwrap(), &diff::masked(&fake).unwrap()).err()
    };
    let mut results = harness::run_parallel(4, &jobs, judge);
    // As in the turns test: a session whose order rests on a few milliseconds of the real
    // server's timing (a login completed ~2 ms after its result, `s15150001_0008`, while the
    // client's next request is answered) can part from its recording when the machine is
    // loaded; one that differs is run once more, alone, and judged on that run. A fake that is
    // wrong differs alone too.
    for (i, job) in jobs.iter().enumerate() {
        if results[i].is_some() {
            results[i] = judge(job);
            if results[i].is_none() {
                eprintln!(
                    "{} {}: differed beside the other runs, identical alone",
                    job.0.version, job.1.name
                );
            }
        }
    }
    let (mut failures, mut stale) = (Vec::new(), Vec::new());
    let mut per_version: std::collections::BTreeMap<&str, usize> = Default::default();
    for (&(p, case), mismatch) in jobs.iter().zip(results) {
        *per_version.entry(p.version).or_default() += 1;
        let known: Vec<(String, String)> =
            std::fs::read_to_string(recorded(p.version).join("known_differences.txt"))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .filter_map(|l| {
                    let mut f = l.split('\t');
                    Some((f.next()?.to_string(), f.next()?.to_string()))
                })
                .collect();
        let listed = known.iter().find(|(n, _)| *n == case.name);
        match (mismatch, listed) {
            (None, Some(_)) => stale.push(format!("{} {}", p.version, case.name)),
            (None, None) => {}
            (Some(m), Some((_, at))) if where_(&m) == *at => {}
            (Some(m), _) => failures.push(format!(
                "{} {}: message {} differs: {}\n  real {}\n  fake {}",
                p.version,
                case.name,
                m.index,
                m.why,
                m.a.map(|e| e.msg.to_string()).unwrap_or_default(),
                m.b.map(|e| e.msg.to_string()).unwrap_or_default(),
            )),
        }
    }
    eprintln!("kept sessions replayed per version: {per_version:?}");
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        stale.is_empty(),
        "listed in known_differences.txt but now identical: {stale:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
