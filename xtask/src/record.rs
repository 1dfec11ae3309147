//! `cargo xtask record [--version V] [NAME…]`: `codex-wire record` over the turn corpus. Each
//! case is recorded the way a user records a session (the harness's client drives `codex-wire
//! record -- codex app-server`, whose upstream is the scripted model playing the case), then
//! the recording is replayed on the fake and on the real binary (`codex-wire replay`'s
//! library), each replay compared with the recording under the one masking rule. A fake
//! replay of a scenario listed in the version's `known_differences.txt` is expected to differ
//! (the fake differs from the real server there; the recording is the real server's).

use codex_wire::harness::{self, Server};
use codex_wire::replay;
use std::time::Instant;

pub fn main(args: &[String]) -> Result<(), String> {
    let version = crate::codex_bin::version_arg(args)?;
    let only: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--version"))
        .map(|(_, a)| a)
        .collect();
    let version = crate::codex_bin::pick_version(version)?;
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    let bin = crate::codex_bin::codex_wire_bin()?;
    let cases = harness::load_cases(&crate::turns::cases_dir())?;
    let known =
        std::fs::read_to_string(crate::turns::corpus_dir(&version).join("known_differences.txt"))
            .unwrap_or_default();
    let listed = |n: &str| {
        known
            .lines()
            .any(|l| l.split_whitespace().next() == Some(n))
    };
    // Outside any git repository (git state shows in the real server's messages).
    let work = std::env::temp_dir().join("codex-wire-record-corpus");
    let (mut total, mut both, mut raw_total, mut races) = (0, 0, 0, 0);
    let mut unexpected = Vec::new();
    let started = Instant::now();
    for case in cases
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| **o == c.name))
        .filter(|c| c.applies_to(&version))
    {
        total += 1;
        let root = work.join(&case.name);
        let t0 = Instant::now();
        let (rec, stopped) = codex_wire::record::record_case(case, &bin, &codex, &root)?;
        let record_s = t0.elapsed().as_secs_f64();
        let notes =
            std::fs::read_to_string(rec.join(codex_wire::record::NOTES_FILE)).unwrap_or_default();
        let raw = notes.lines().filter(|l| l.contains("raw events")).count();
        raw_total += raw;
        let mut verdicts = Vec::new();
        let mut ok = stopped.is_none();
        if let Some(s) = &stopped {
            verdicts.push(format!("recording's client stopped: {s}"));
        }
        for (kind, server) in [
            (
                "fake",
                Server::Fake {
                    bin: &bin,
                    version: Some(&version),
                },
            ),
            (
                "real",
                Server::Real {
                    bin: &bin,
                    codex: &codex,
                },
            ),
        ] {
            let once = |dir: &str| -> Result<String, String> {
                let (t, stopped) = replay::replay(&rec, &server, &root.join(dir))?;
                Ok(
                    match (&stopped, replay::compare(&rec, &t, &root.join(dir))?) {
                        (None, Ok(_)) => "identical".to_string(),
                        (Some(s), _) => format!("client stopped: {s}"),
                        (None, Err(m)) => format!("message {} differs: {}", m.index, m.why),
                    },
                )
            };
            let mut verdict = once(kind)?;
            // The real server against its own recording: a difference gone on a second replay
            // is the real server's own race (as `fidelity` reports them), told apart.
            if kind == "real" && verdict != "identical" {
                let again = once("real-again")?;
                if again == "identical" {
                    races += 1;
                    verdict = format!("identical on a second replay (the real server's own race; first: {verdict})");
                }
            }
            let identical = verdict.starts_with("identical");
            // A fake replay of a scenario the fake lists as differing from the real server.
            let excused = !identical && kind == "fake" && listed(&case.name);
            if !identical && !excused {
                ok = false;
            }
            verdicts.push(format!(
                "{kind}: {verdict}{}",
                if excused { " (listed)" } else { "" }
            ));
        }
        if ok {
            both += 1;
        } else {
            unexpected.push(case.name.clone());
        }
        println!(
            "  {:<40} record {record_s:>5.1}s  raw {raw}  {}",
            case.name,
            verdicts.join("; ")
        );
    }
    println!(
        "record → replay over the turn corpus (codex {version}): {both}/{total} replayed as \
         recorded on both servers (the fake's listed differences aside); {raw_total} model \
         answers kept raw; {races} real replays identical only on a second run; {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if unexpected.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "replays that differ from their recording: {unexpected:?}"
        ))
    }
}
