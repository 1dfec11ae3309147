//! `codex-wire replay DIR`: a recording's client played again (`harness`, the recorded
//! client) against the fake or the real server, and the run compared with the recording.

use crate::harness::{relocate, Case, Layout, Server};

/// Replay a recording (`codex-wire record`) and compare it with the recording
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Plays DIR/case.json: the recorded client against the fake (default) or \
the real codex behind the scripted model (`--real`), then compares the run's transcript with \
DIR/transcript.jsonl under `codex-wire diff`'s masking rule.\n\
Exit: 0 the same conversation, 1 a difference or the client's part stopped, 2 a usage error.\n\
Example: codex-wire replay rec --real node_modules/.bin/codex"
)]
pub struct Cli {
    /// The recording's directory
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
    /// Replay on this real codex binary (behind `codex-wire scripted`) instead of the fake
    #[arg(long, value_name = "CODEX")]
    pub real: Option<std::path::PathBuf>,
    /// Where the replay runs (made anew) [default: a fresh directory under the temp dir: a
    /// replay inside a git repository would show the repository's state]
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// The codex version the fake answers as [default: the recorded one]
    #[arg(long, value_name = "X.Y.Z")]
    pub codex_version: Option<String>,
}

/// Replays a recording's case on `server` under `out`: the replay's transcript, and whether
/// the client's part stopped.
pub fn replay(
    dir: &std::path::Path,
    server: &Server,
    out: &std::path::Path,
) -> Result<(std::path::PathBuf, Option<String>), String> {
    let path = dir.join(crate::record::CASE_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let case: Case = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if case.recorded.is_none() {
        return Err(format!(
            "{}: not a recording (no `recorded` client)",
            path.display()
        ));
    }
    crate::harness::run_outcome(&case, server, out)
}

/// The recording's transcript compared with the transcript of a replay run under `out`, masked
/// as `codex-wire diff` does, the recording's paths first made the run's (its cwd, `CODEX_HOME`
/// and `HOME` need not be temp dirs, nor named as the run's).
pub fn compare(
    dir: &std::path::Path,
    replayed: &std::path::Path,
    out: &std::path::Path,
) -> Result<Result<usize, crate::diff::Mismatch>, String> {
    let text = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let case_path = dir.join(crate::record::CASE_FILE);
    let case: Case = serde_json::from_str(&text(&case_path)?)
        .map_err(|e| format!("{}: {e}", case_path.display()))?;
    let mut recorded = text(&dir.join(crate::record::TRANSCRIPT_FILE))?;
    if let Some(rec) = &case.recorded {
        recorded = relocate(&recorded, rec, &Layout::at(out));
    }
    let mask = |t: &str, p: &std::path::Path| {
        crate::diff::masked(t).map_err(|e| format!("{}: {e}", p.display()))
    };
    let a = mask(&recorded, &dir.join(crate::record::TRANSCRIPT_FILE))?;
    let b = mask(&text(replayed)?, replayed)?;
    Ok(crate::diff::compare(&a, &b).map(|()| a.len()))
}

pub fn main(cli: Cli) -> std::process::ExitCode {
    use std::process::ExitCode;
    const NAME: &str = "codex-wire replay";
    let bin = match std::env::current_exe() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            return ExitCode::from(2);
        }
    };
    let recorded_version = std::fs::read_to_string(cli.dir.join(crate::record::CASE_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<Case>(&t).ok())
        .and_then(|c| c.recorded?.version);
    let version = cli.codex_version.clone().or(recorded_version);
    let version = version.filter(|v| crate::versions().iter().any(|p| p.version == v));
    // The servers run in the replay's work dir: every path they are given is absolute.
    let absolute = |p: &std::path::Path| match std::env::current_dir() {
        Ok(cwd) if p.is_relative() => cwd.join(p),
        _ => p.to_path_buf(),
    };
    let real = cli.real.as_deref().map(absolute);
    if let Some(r) = real.as_ref().filter(|r| !r.is_file()) {
        eprintln!("{NAME}: --real {}: no such file", r.display());
        return ExitCode::from(2);
    }
    let (server, kind) = match &real {
        Some(codex) => (Server::Real { bin: &bin, codex }, "real"),
        None => (
            Server::Fake {
                bin: &bin,
                version: version.as_deref(),
            },
            "fake",
        ),
    };
    let out = cli.out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("codex-wire-replay-{kind}-{}", std::process::id()))
    });
    let (dir, out) = (absolute(&cli.dir), absolute(&out));
    println!(
        "replaying {} on the {kind} in {}",
        dir.display(),
        out.display()
    );
    let (transcript, stopped) = match replay(&dir, &server, &out) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(why) = &stopped {
        println!("the recorded client stopped: {why}");
    }
    match compare(&dir, &transcript, &out) {
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::from(2)
        }
        Ok(Ok(n)) if stopped.is_none() => {
            println!(
                "same conversation as the recording: {n} messages ({})",
                transcript.display()
            );
            ExitCode::SUCCESS
        }
        Ok(Ok(n)) => {
            println!("same conversation up to where the client stopped: {n} messages");
            ExitCode::from(1)
        }
        Ok(Err(m)) => {
            println!("message {} differs: {}", m.index, m.why);
            if let Some(x) = m.a {
                println!("  recording {} {}", x.dir, x.msg);
            }
            if let Some(y) = m.b {
                println!("  replay    {} {}", y.dir, y.msg);
            }
            ExitCode::from(1)
        }
    }
}
