//! The recorded turn corpus (cases in `tests/corpus/turns/`, the real server's transcripts in
//! `tests/corpus/<V>/turns/`, written by `cargo xtask turns --record` from the real codex binary
//! driven by the scripted model): for every scenario, the fake's transcript must equal the real
//! server's under the one masking rule (`codex_wire::diff`).
//! A scenario listed in `known_differences.txt` (with its reason) must still differ: a listed
//! scenario that starts to match fails the test, so the list stays honest.

use codex_wire::diff;
use codex_wire::harness::{self, Server};
use std::path::Path;

/// A version's turn corpus (the fake, answering as that version, plays turns as its server did).
fn corpus(version: &str) -> String {
    format!(
        "{}/tests/corpus/{version}/turns",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Fake runs at once.
const PARALLEL: usize = 4;

/// The listed scenarios, each with where it must differ: `name<TAB>message N <path><TAB>why`.
fn known(version: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(Path::new(&corpus(version)).join("known_differences.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_string(), f.next()?.to_string()))
        })
        .collect()
}

/// Where a run parts from its recording, as `known_differences.txt` names it.
fn where_(m: &diff::Mismatch) -> String {
    format!(
        "message {} {}",
        m.index,
        m.why.split(": ").next().unwrap_or("")
    )
}

#[test]
fn the_fake_plays_every_recorded_turn_as_each_version_s_real_server_did() {
    let cases = harness::load_cases(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/turns"
    )))
    .expect("the turn corpus");
    assert!(cases.len() >= 25, "turn corpus too small: {}", cases.len());
    let bin = Path::new(env!("CARGO_BIN_EXE_codex-wire"));
    // Outside any git repository, as the recordings were made (git state shows in messages).
    // Short, so that each run's root can be padded to its recording's length (see
    // `root_as_long`), and named as the recordings' are up to a character (`codex-wire`: a
    // search for it finds it at the same place; `.`, not `-`: no other path the scenarios name
    // starts with it).
    let work = std::env::temp_dir().join(format!("codex-wire.{:x}", std::process::id()));
    // Every (version, scenario) run is a fake process mostly waiting out its own grace windows
    // (a third of a core in all): run a few at once.
    let jobs: Vec<(&'static codex_wire::Protocol, &harness::Case)> = codex_wire::versions()
        .iter()
        .flat_map(|p| cases.iter().map(move |c| (*p, c)))
        .filter(|(p, c)| c.applies_to(p.version))
        .collect();
    // Not applicable is never counted as passed: it is named, and its absent recording checked.
    for p in codex_wire::versions() {
        for c in cases.iter().filter(|c| !c.applies_to(p.version)) {
            let rec = Path::new(&corpus(p.version)).join(format!("{}.real.jsonl", c.name));
            assert!(
                !rec.exists(),
                "{}: recorded, yet `since` excludes {}",
                c.name,
                p.version
            );
            println!(
                "{} {}: not applicable (since {:?})",
                p.version, c.name, c.since
            );
        }
    }
    // Per run: its schema drift, and where it parts from the recording.
    let judge = |&(p, case): &(&'static codex_wire::Protocol, &harness::Case)| {
        let version = p.version;
        let recorded = Path::new(&corpus(version)).join(format!("{}.real.jsonl", case.name));
        let real = std::fs::read_to_string(&recorded).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (cargo xtask turns --record --version {version})",
                recorded.display()
            )
        });
        let server = Server::Fake {
            bin,
            version: Some(version),
        };
        // Under a root as long as the recording's: what codex derives from a path's length
        // (a search snippet's window) is then the same.
        let slot = codex_wire::versions()
            .iter()
            .position(|v| v.version == version)
            .unwrap_or(0);
        let root = harness::root_as_long(&work.join(slot.to_string()).join(&case.name), &real);
        let fake = harness::run(case, &server, &root)
            .unwrap_or_else(|e| panic!("{version} {}: the fake run failed: {e}", case.name));
        let fake = std::fs::read_to_string(fake).unwrap();
        let drift = schema_drift(p, &case.name, &fake, &real).join("\n");
        let result = diff::compare(&diff::masked(&real).unwrap(), &diff::masked(&fake).unwrap());
        (drift, result.err())
    };
    let mut results: Vec<(String, Option<diff::Mismatch>)> =
        harness::run_parallel(PARALLEL, &jobs, judge);
    // A scenario whose order rests on a few milliseconds of the real server's timing (an
    // announcement ~2 ms after its result, `101`) can part from its recording when the machine
    // is loaded (this test beside every other test binary): one that differs is run once more,
    // alone, and judged on that run. A fake that is wrong differs alone too.
    for (i, job) in jobs.iter().enumerate() {
        let listed = known(job.0.version).iter().any(|(n, _)| *n == job.1.name);
        if results[i].1.is_some() && !listed {
            let again = judge(job);
            if again.1.is_none() {
                eprintln!(
                    "{} {}: differed beside the other runs, identical alone",
                    job.0.version, job.1.name
                );
            }
            results[i] = again;
        }
    }
    let (mut failures, mut stale, mut drift) = (Vec::new(), Vec::new(), Vec::new());
    for p in codex_wire::versions() {
        let version = p.version;
        let known = known(version);
        let mut same = 0;
        for (i, &(_, case)) in jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.0.version == version)
        {
            let (d, result) = std::mem::take(&mut results[i]);
            if !d.is_empty() {
                drift.push(d);
            }
            let listed = known.iter().find(|(n, _)| *n == case.name);
            match (result, listed) {
                (None, None) => same += 1,
                (None, Some(_)) => stale.push(format!("{version} {}", case.name)),
                // Listed: it must differ where the list says, and nowhere else first.
                (Some(m), Some((_, at))) if where_(&m) == *at => {}
                (Some(m), Some((_, at))) => failures.push(format!(
                    "{version} {}: listed as differing at `{at}`, differs at `{}`: {}",
                    case.name,
                    where_(&m),
                    m.why
                )),
                (Some(m), None) => failures.push(format!(
                    "{version} {}: message {} differs: {}\n  real {}\n  fake {}",
                    case.name,
                    m.index,
                    m.why,
                    m.a.map(|e| e.msg.to_string()).unwrap_or_default(),
                    m.b.map(|e| e.msg.to_string()).unwrap_or_default(),
                )),
            }
        }
        eprintln!(
            "codex {version}: {same}/{} scenarios identical, {} known differences",
            cases.len(),
            known.len()
        );
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        stale.is_empty(),
        "listed in known_differences.txt but now identical: {stale:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        drift.is_empty(),
        "the fake's lines drift from the schema: {drift:#?}"
    );
}

/// Every line the fake wrote, checked as `validate` checks a server: no violation, no key the
/// schema lacks, no always-sent field missing — but a violation the real server's own
/// recording of the case shows (the schema bundle can be wrong: 0.171.0's timeline entries
/// say `turn_id` and the server writes `turnId`) is the real server's, not drift.
fn schema_drift(
    p: &'static codex_wire::Protocol,
    name: &str,
    transcript: &str,
    real: &str,
) -> Vec<String> {
    let real_violations: Vec<String> = real
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["dir"] == "out")
        .filter_map(|e| e["violation"].as_str().map(str::to_string))
        .collect();
    let mut s = codex_wire::Session::with_protocol(p);
    let mut out = Vec::new();
    for line in transcript.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(msg) = e.get("msg") else { continue };
        let bytes = msg.to_string();
        if e["dir"] == "in" {
            s.feed(bytes.as_bytes());
            continue;
        }
        let v = s.feed_server(bytes.as_bytes());
        let own = v
            .violation
            .as_ref()
            .is_some_and(|x| !real_violations.iter().any(|r| r == x));
        if own || !v.ignored.is_empty() || !v.missing.is_empty() {
            out.push(format!(
                "{} {name}: {bytes}: {:?} {:?} {:?}",
                p.version, v.violation, v.ignored, v.missing
            ));
        }
    }
    out
}

#[test]
fn a_run_root_is_padded_to_the_recording_s() {
    let rec = r#"{"msg":{"result":{"codexHome":"/tmp/codex-wire-turns/x/real/codex_home"}}}"#;
    let root = harness::root_as_long(Path::new("/tmp/codex-wire.1f/0/x"), rec);
    assert_eq!(root.as_os_str().len(), "/tmp/codex-wire-turns/x/real".len());
    assert!(root.starts_with("/tmp/codex-wire.1f/0"));
    // Longer already, or no recorded root: as it is.
    assert_eq!(
        harness::root_as_long(Path::new("/a/very/long/root/name/x"), "{}"),
        Path::new("/a/very/long/root/name/x")
    );
}
