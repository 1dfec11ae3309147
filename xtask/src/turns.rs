//! `cargo xtask turns [--record] [--version V] [NAME…]`: the recorded turn corpus. Each
//! `tests/corpus/turns/<name>.case.json` is run against the real binary of V (default: the
//! newest) behind `codex-wire scripted` (the scripted model plays the scenario); `--record` keeps
//! the transcript as `tests/corpus/<V>/turns/<name>.real.jsonl`.
//! Without `--record` the live real run is compared with the fake's run of the same case under
//! the one masking rule (`codex_wire::diff`), and with the recording.

use codex_wire::diff;
use codex_wire::harness::{self, Server};
use std::path::{Path, PathBuf};

/// The real server's turn transcripts of `version`: `tests/corpus/<V>/turns/`.
pub fn corpus_dir(version: &str) -> PathBuf {
    crate::codex_bin::corpus_dir(version).join("turns")
}

/// The turn cases, the same for every version: `tests/corpus/turns/`.
pub fn cases_dir() -> PathBuf {
    crate::codex_bin::repo_root().join("tests/corpus/turns")
}

fn compare(a: &Path, b: &Path) -> Result<(), String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| format!("{}: {e}", p.display()))
            .and_then(|t| diff::masked(&t))
    };
    let short = |e: Option<diff::Entry>| {
        let s = e
            .map(|e| format!("{} {}", e.dir, e.msg))
            .unwrap_or_default();
        s.chars().take(400).collect::<String>()
    };
    diff::compare(&read(a)?, &read(b)?).map_err(|m| {
        format!(
            "message {} differs: {}\n      A {}\n      B {}",
            m.index,
            m.why,
            short(m.a),
            short(m.b)
        )
    })
}

pub fn main(args: &[String]) -> Result<(), String> {
    let record = args.iter().any(|a| a == "--record");
    let version = crate::codex_bin::version_arg(args)?;
    // `--fake-bin PATH`: another fake (an older build, a team's own) compared with the
    // recordings instead of a live real run.
    let other = args
        .iter()
        .position(|a| a == "--fake-bin")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let only: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !a.starts_with("--")
                && (*i == 0 || !matches!(args[i - 1].as_str(), "--fake-bin" | "--version"))
        })
        .map(|(_, a)| a)
        .collect();
    if let Some(fake_bin) = other {
        // The server runs in its case's work dir: a relative path would not resolve there.
        let fake_bin = fake_bin
            .canonicalize()
            .map_err(|e| format!("--fake-bin {}: {e}", fake_bin.display()))?;
        return against_recordings(&fake_bin, &only);
    }
    let version = crate::codex_bin::pick_version(version)?;
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    let bin = crate::codex_bin::codex_wire_bin()?;
    let dir = corpus_dir(&version);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cases = harness::load_cases(&cases_dir())?;
    // Outside any git repository: the real server reports git state and repo-relative diffs
    // for a cwd inside one.
    let work = std::env::temp_dir().join("codex-wire-turns");
    let picked: Vec<&harness::Case> = cases
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| **o == c.name))
        .filter(|c| c.applies_to(&version))
        .collect();
    // One case: the real run (recorded, or compared with its recording), then the fake's,
    // compared with it. What it prints, and whether the fake differs.
    type Outcome = Result<(String, bool), String>;
    let one = |case: &harness::Case| -> Outcome {
        let mut said = String::new();
        let real = real_run(case, &bin, &codex, &work)?;
        let recorded = dir.join(format!("{}.real.jsonl", case.name));
        if record {
            std::fs::copy(&real, &recorded).map_err(|e| format!("{}: {e}", recorded.display()))?;
        } else if recorded.exists() {
            if let Err(e) = compare(&recorded, &real) {
                said += &format!(
                    "  {}: the real server drifted from its recording: {e}\n",
                    case.name
                );
            }
        }
        let fake_run = || {
            harness::run(
                case,
                &Server::Fake {
                    bin: &bin,
                    version: Some(&version),
                },
                &work.join(&case.name).join("fake"),
            )
            .map_err(|e| format!("{}: fake run: {e}", case.name))
        };
        let fake = fake_run()?;
        Ok(match compare(&real, &fake) {
            Ok(()) => (said + &format!("  {:<40} identical", case.name), false),
            // A difference is excused only by the real server itself (fidelity's strict
            // verdict): the fake equals the recorded real run, or a second live one.
            Err(e) if !record && recorded.exists() && compare(&recorded, &fake).is_ok() => (
                said + &format!(
                    "  {:<40} identical to the recorded real run (the live one raced: {e})",
                    case.name
                ),
                false,
            ),
            Err(e) if !record => {
                let again = real_run(case, &bin, &codex, &work)?;
                match compare(&again, &fake) {
                    Ok(()) => (
                        said + &format!(
                            "  {:<40} identical to a second real run (the first raced: {e})",
                            case.name
                        ),
                        false,
                    ),
                    // The fake differs from every real run. A wait the fake times with a
                    // clock (a settings announcement's 3 ms, `101`) can fall on the other side
                    // of the harness's next request when the machine is loaded, where the real
                    // server's wait is work that stretches with the same load: the fake runs
                    // once more, and must then equal a real run.
                    Err(_) => {
                        let fake2 = fake_run()?;
                        // (`again` is the real run's transcript path, rewritten.)
                        if compare(&again, &fake2).is_ok()
                            || (recorded.exists() && compare(&recorded, &fake2).is_ok())
                        {
                            (
                                said + &format!(
                                    "  {:<40} identical in a second fake run (the first differed \
                                     from every real run: {e})",
                                    case.name
                                ),
                                false,
                            )
                        } else {
                            (said + &format!("  {:<40} {e}", case.name), true)
                        }
                    }
                }
            }
            Err(e) => (said + &format!("  {:<40} {e}", case.name), true),
        })
    };
    // Comparing, two cases at once (as `fidelity` runs its sessions: each run mostly waits on
    // the scripted model and its grace windows); a recording is made alone.
    let workers = if record { 1 } else { 2 };
    let results = harness::run_parallel(workers, &picked, |case| one(case));
    let (mut same, total, mut failed) = (0, picked.len(), Vec::new());
    for (case, r) in picked.iter().zip(results) {
        let (said, differs) = r?;
        println!("{said}");
        if differs {
            failed.push(case.name.clone());
        } else {
            same += 1;
        }
    }
    println!("turn corpus: fake = real on {same}/{total} scenarios (A real, B fake)");
    if record {
        println!("recorded into {}", dir.display());
    }
    // Differences listed (with their reason) in known_differences.txt are tolerated here;
    // tests/turns.rs also fails when a listed one starts to match.
    let known = std::fs::read_to_string(dir.join("known_differences.txt")).unwrap_or_default();
    let unexpected: Vec<&String> = failed
        .iter()
        .filter(|n| {
            !known
                .lines()
                .any(|l| l.split_whitespace().next() == Some(n.as_str()))
        })
        .collect();
    if !unexpected.is_empty() {
        return Err(format!(
            "the fake differs from the real server on {unexpected:?}"
        ));
    }
    Ok(())
}

/// One case on the real binary behind `scripted`: its transcript.
fn real_run(
    case: &harness::Case,
    bin: &Path,
    codex: &Path,
    work: &Path,
) -> Result<PathBuf, String> {
    harness::run(
        case,
        &Server::Real { bin, codex },
        &work.join(&case.name).join("real"),
    )
    .map_err(|e| format!("{}: real run: {e}", case.name))
}

/// Records the turn cases named in `only` (empty: every one) on the real binary of `version`
/// (no fake run): the first half of adding a version, whose fake facts are derived from these
/// recordings.
pub fn record(version: &str, only: &[String]) -> Result<(), String> {
    let codex = crate::codex_bin::ensure_codex(version, None)?;
    let bin = crate::codex_bin::codex_wire_bin()?;
    let dir = corpus_dir(version);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let work = std::env::temp_dir().join("codex-wire-turns");
    let cases: Vec<harness::Case> = harness::load_cases(&cases_dir())?
        .into_iter()
        .filter(|c| only.is_empty() || only.contains(&c.name))
        .filter(|c| c.applies_to(version))
        .collect();
    for case in &cases {
        let real = real_run(case, &bin, &codex, &work)?;
        let recorded = dir.join(format!("{}.real.jsonl", case.name));
        std::fs::copy(&real, &recorded).map_err(|e| format!("{}: {e}", recorded.display()))?;
        println!("  {:<40} recorded", case.name);
    }
    println!("recorded {} scenarios into {}", cases.len(), dir.display());
    Ok(())
}

/// A fake binary against the recorded real transcripts (no real server needed).
fn against_recordings(fake_bin: &Path, only: &[&String]) -> Result<(), String> {
    let dir = corpus_dir(&crate::codex_bin::newest_version()?);
    // Short, and named as the recordings' roots up to a character (see `tests/turns.rs`).
    let work = std::env::temp_dir().join("codex-wire.other");
    let (mut same, mut total) = (0, 0);
    for case in harness::load_cases(&cases_dir())?
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| **o == c.name))
    {
        total += 1;
        let recorded = dir.join(format!("{}.real.jsonl", case.name));
        let text = std::fs::read_to_string(&recorded).unwrap_or_default();
        let fake = harness::run(
            case,
            &Server::Fake {
                bin: fake_bin,
                version: None,
            },
            &harness::root_as_long(&work.join(&case.name), &text),
        );
        match fake.and_then(|f| compare(&recorded, &f)) {
            Ok(()) => {
                same += 1;
                println!("  {:<40} identical", case.name);
            }
            Err(e) => println!("  {:<40} {e}", case.name),
        }
    }
    println!(
        "{}: identical to the real recordings on {same}/{total} scenarios",
        fake_bin.display()
    );
    Ok(())
}
