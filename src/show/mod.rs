//! `codex-wire show TRANSCRIPT [--against OTHER] -o page.html`: a transcript as one
//! self-contained HTML page (inline CSS and a little inline script, nothing fetched).
//!
//! The page is a timeline of the conversation in arrival order: the client's lines on one side,
//! the server's on the other, each with its time relative to the first line; process
//! boundaries (`spawn`, `stdin_eof`, `exit` events and exit codes); each turn (`turn/started` to
//! `turn/completed`) a foldable section with its status; items folded with their deltas joined
//! (agent message text, reasoning, command output: one block per item, not one row per delta);
//! each message's JSON expandable. Requests are linked to their replies both ways (the server's
//! requests to the client's answers, the client's requests to the server's results and errors).
//!
//! Findings sit at their line and are counted in the header: error replies (`error` objects), and
//! the engine's verdict per line exactly as `codex-wire validate` gives it (the same reading of
//! the transcript, [`crate::validate::run`]: error replies the real server would send,
//! violations, ignored paths, missing always-sent keys, lines that are not entries).
//!
//! With `--against OTHER`, the two runs are aligned under `codex-wire diff`'s masking rule
//! ([`crate::diff::masked`], [`crate::diff::compare`]): every message shows its counterpart in
//! the other run, the first difference is marked (`id="first-difference"`), and the verdict is in
//! the header.
//!
//! Stable hooks for tests: the root element carries `data-turns`, `data-findings`,
//! `data-messages`; turn sections have class `turn`, findings class `finding`.

mod align;
mod assets;
mod model;
mod parse;
mod render;
mod rows;

pub use align::Against;
pub use parse::Input;
pub use render::{render, Page};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `codex-wire show`'s command line.
#[derive(Debug, clap::Args)]
#[command(after_help = "Open the page in any browser (it fetches nothing). \
Exit: 0 the page is written (with --against too, whatever the verdict: it is in the page), \
2 a file cannot be read or the page cannot be written (or a usage error).")]
pub struct Cli {
    /// A transcript (fake, proxy, scripted or recorded run; a raw client capture is shown as
    /// client lines)
    #[arg(value_name = "TRANSCRIPT")]
    pub transcript: PathBuf,
    /// Another transcript of the same conversation: both aligned under `codex-wire diff`'s
    /// masking rule, the first difference marked, the verdict in the header
    #[arg(long, value_name = "OTHER")]
    pub against: Option<PathBuf>,
    /// The page to write (`-`: standard output)
    #[arg(short = 'o', long = "out", value_name = "PAGE")]
    pub out: PathBuf,
    /// Judge as this codex version (default: the version in the server's `userAgent` when the
    /// transcript has one, else the newest this build speaks)
    #[arg(long, value_name = "X.Y.Z", value_parser = crate::parse_codex_version)]
    pub codex_version: Option<&'static crate::Protocol>,
}

/// Entry point of `codex-wire show`.
pub fn main(cli: Cli) -> ExitCode {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let a = match read(&cli.transcript) {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    let b = match cli.against.as_deref().map(read).transpose() {
        Ok(b) => b,
        Err(e) => return fail(&e),
    };
    let a_name = cli.transcript.display().to_string();
    let b_name = cli.against.as_ref().map(|p| p.display().to_string());
    let other = match (&b, &b_name) {
        (Some(bytes), Some(name)) => Some(Input { name, bytes }),
        _ => None,
    };
    let page = render(
        &Input {
            name: &a_name,
            bytes: &a,
        },
        other.as_ref(),
        cli.codex_version,
    );
    let to_stdout = cli.out.as_os_str() == "-";
    let written = if to_stdout {
        let mut out = std::io::stdout().lock();
        out.write_all(page.html.as_bytes())
            .and_then(|()| out.flush())
    } else {
        std::fs::write(&cli.out, page.html.as_bytes())
    };
    if let Err(e) = written {
        return fail(&format!("cannot write {}: {e}", cli.out.display()));
    }
    let summary = format!(
        "{}: {} messages, {} turn{}, {} finding{}{}",
        if to_stdout {
            "page".to_string()
        } else {
            cli.out.display().to_string()
        },
        page.messages,
        page.turns,
        if page.turns == 1 { "" } else { "s" },
        page.findings,
        if page.findings == 1 { "" } else { "s" },
        match &page.against {
            Some(v) => format!("; {}", v.text()),
            None => String::new(),
        }
    );
    // The page itself may be on stdout: the summary then goes to stderr.
    let _ = if to_stdout {
        writeln!(std::io::stderr(), "{summary}")
    } else {
        writeln!(std::io::stdout(), "{summary}")
    };
    ExitCode::SUCCESS
}

fn fail(why: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "codex-wire show: {why}");
    ExitCode::from(2)
}
