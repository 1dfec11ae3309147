//! `cargo xtask races [--version V] [--runs N] [--keep] [NAME…]`: the real server against
//! itself. Each turn case (and kept fidelity session) is run N times on the real binary of V;
//! every pair of its real transcripts (the recording included) is compared under all of
//! `diff`'s tolerances — a pair that still differs is a race no tolerance covers — and under
//! all but one, for each tolerance in turn: a pair that differs without it is that tolerance's
//! evidence, and for a windowed one, the smallest window it needs is reported (the bound must
//! hold it). `--keep` writes the first evidence pair of each tolerance to
//! `tests/corpus/<V>/races/<tolerance>/` (`<case>.a.jsonl`, `<case>.b.jsonl`), which `diff`'s
//! tests hold the comparison to.

use codex_wire::diff::{self, Rules, TOLERANCES};
use codex_wire::harness::{self, Case, Server};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn masked(p: &Path) -> Result<Vec<diff::Entry>, String> {
    std::fs::read_to_string(p)
        .map_err(|e| format!("{}: {e}", p.display()))
        .and_then(|t| diff::masked(&t))
}

/// The smallest window of `name` under which `a` and `b` are the same conversation.
fn smallest_window(name: &str, a: &[diff::Entry], b: &[diff::Entry]) -> Option<usize> {
    let with = |w: usize| {
        let mut r = Rules::all();
        match name {
            "background" => r.background_window = w,
            _ => return None,
        }
        Some(diff::compare_with(a, b, &r).is_ok())
    };
    (0..=64).find(|w| with(*w) == Some(true))
}

pub fn main(args: &[String]) -> Result<(), String> {
    let version = crate::codex_bin::pick_version(crate::codex_bin::version_arg(args)?)?;
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(2), |n| n.parse().map_err(|e| format!("--runs: {e}")))?;
    let keep = args.iter().any(|a| a == "--keep");
    let only: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !a.starts_with("--")
                && (*i == 0 || !matches!(args[i - 1].as_str(), "--version" | "--runs"))
        })
        .map(|(_, a)| a)
        .collect();
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    let bin = crate::codex_bin::codex_wire_bin()?;
    let root = crate::codex_bin::repo_root();
    let corpus = crate::codex_bin::corpus_dir(&version);
    // Turn cases with their recording, kept fidelity sessions recorded for this version.
    let mut cases: Vec<(Case, PathBuf)> = Vec::new();
    for (dir, sub, suffix) in [
        ("tests/corpus/turns", "turns", "real.jsonl"),
        ("tests/corpus/fidelity", "fidelity", "real.jsonl"),
    ] {
        for c in harness::load_cases(&root.join(dir))? {
            let rec = corpus.join(sub).join(format!("{}.{suffix}", c.name));
            if rec.is_file() && (only.is_empty() || only.iter().any(|o| **o == c.name)) {
                cases.push((c, rec));
            }
        }
    }
    let work = std::env::temp_dir().join(format!("codex-wire-races-{version}"));
    // Run by run: two runs of one case never at once (a case may write outside its root).
    let jobs: Vec<(usize, usize)> = (0..runs)
        .flat_map(|r| (0..cases.len()).map(move |c| (c, r)))
        .collect();
    println!(
        "races: {} cases x {runs} real runs of codex {version}, 2 at once",
        cases.len()
    );
    let results = harness::run_parallel(2, &jobs, |&(c, r)| {
        let case = &cases[c].0;
        harness::run_outcome(
            case,
            &Server::Real {
                bin: &bin,
                codex: &codex,
            },
            &work.join(&case.name).join(format!("run{r}")),
        )
        .map(|(t, _)| t)
        .map_err(|e| format!("{}: {e}", case.name))
    });
    let mut evidence: BTreeMap<&str, Vec<(String, usize)>> = BTreeMap::new();
    let mut kept: BTreeMap<&str, bool> = BTreeMap::new();
    let mut uncovered = Vec::new();
    for (ci, (case, recording)) in cases.iter().enumerate() {
        let mut transcripts = vec![recording.clone()];
        for (k, &(c, _)) in jobs.iter().enumerate() {
            if c == ci {
                match &results[k] {
                    Ok(p) => transcripts.push(p.clone()),
                    Err(e) => uncovered.push(e.to_string()),
                }
            }
        }
        for i in 0..transcripts.len() {
            for j in i + 1..transcripts.len() {
                let (a, b) = (masked(&transcripts[i])?, masked(&transcripts[j])?);
                if let Err(m) = diff::compare(&a, &b) {
                    uncovered.push(format!(
                        "{} run {i} against run {j}: message {}: {}",
                        case.name, m.index, m.why
                    ));
                    continue;
                }
                for name in diff::needed(&a, &b) {
                    let window = smallest_window(name, &a, &b).unwrap_or(0);
                    evidence
                        .entry(name)
                        .or_default()
                        .push((case.name.clone(), window));
                    if keep && !kept.get(name).copied().unwrap_or(false) {
                        let dir = corpus.join("races").join(name);
                        std::fs::create_dir_all(&dir)
                            .map_err(|e| format!("{}: {e}", dir.display()))?;
                        for (p, side) in [(&transcripts[i], "a"), (&transcripts[j], "b")] {
                            let to = dir.join(format!("{}.{side}.jsonl", case.name));
                            std::fs::copy(p, &to).map_err(|e| format!("{}: {e}", to.display()))?;
                        }
                        kept.insert(name, true);
                    }
                }
            }
        }
    }
    println!("\ntolerance            pairs needing it   widest window needed   e.g.");
    for t in TOLERANCES {
        let e = evidence.get(t.name).map(Vec::as_slice).unwrap_or_default();
        let widest = e.iter().map(|(_, w)| *w).max();
        println!(
            "{:<20} {:>17}   {:>20}   {}",
            t.name,
            e.len(),
            widest.map_or("-".into(), |w| w.to_string()),
            e.first().map_or("", |(n, _)| n.as_str())
        );
    }
    if !uncovered.is_empty() {
        println!("\nthe real server against itself, beyond every tolerance:");
        for u in &uncovered {
            println!("  {u}");
        }
    }
    Ok(())
}
