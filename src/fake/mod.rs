//! `codex-wire fake`: a drop-in fake `codex app-server` for client test suites.
//!
//! Every inbound line is judged by the engine exactly as the real server judges it; what the
//! handlers answer is scripted by `scenario.json` in the state dir (see `docs/fake.md`).

mod cli;
pub mod config;
pub mod defaults;
mod listen;
mod project;
mod provider;
mod server;
pub mod settings;
pub mod shell;
mod state;
mod turn;

pub use cli::{AppServer, Cli, CodexOptions, Command};
pub use defaults::{methods as default_methods, minimal_of, result_for as default_result};
pub use turn::{TurnFacts, TURN_FACTS_ENV};

use std::path::PathBuf;
use std::process::ExitCode;

/// File in the state dir whose existence releases `grandchild` processes.
pub const GRANDCHILD_RELEASE: &str = "release-grandchildren";

/// What the fake runs with, resolved from its command line.
#[derive(Debug, Default)]
pub struct Args {
    pub listen: Option<String>,
    pub ws_auth: Option<String>,
    pub ws_token_file: Option<PathBuf>,
    /// `-c key=value` and the flags that are sugar for it, in order (a later one wins).
    pub overrides: Vec<(String, String)>,
    /// The codex version the fake answers as.
    pub protocol: Option<&'static crate::Protocol>,
}
/// Runs the fake for a parsed command line; `argv` is what the transcript's `spawn` records.
pub fn main(cli: Cli, argv: &[String]) -> ExitCode {
    let protocol = cli.codex_version.unwrap_or_else(crate::newest);
    if cli.version {
        println!("codex-cli {}", protocol.version);
        return ExitCode::SUCCESS;
    }
    let Some(Command::AppServer(server)) = cli.command else {
        eprintln!(
            "fake codex: only `app-server` is faked (the interactive CLI is not); \
             try `--help`"
        );
        return ExitCode::from(2);
    };
    // codex refuses a malformed override before it starts, with exit 1.
    if let Some(bad) = cli.codex.config.iter().find(|kv| !kv.contains('=')) {
        eprintln!("Error: error parsing -c overrides: Invalid override (missing '='): {bad}");
        return ExitCode::FAILURE;
    }
    let a = Args {
        listen: if server.stdio {
            Some("stdio://".into())
        } else {
            server.listen
        },
        ws_auth: server.ws_auth,
        ws_token_file: server.ws_token_file,
        overrides: cli.codex.overrides(),
        protocol: Some(protocol),
    };
    match state_dir(cli.state_dir, "fake") {
        Ok(dir) => listen::run(&a, dir, argv),
        Err(e) => {
            eprintln!("fake codex: {e}");
            ExitCode::from(2)
        }
    }
}

/// The state dir of a run: `--state-dir` (or `$CODEX_WIRE_FAKE_STATE_DIR`, read by clap), else
/// a fresh `codex-wire-<what>-<pid>` temp dir; created, and made absolute.
pub fn state_dir(given: Option<PathBuf>, what: &str) -> Result<PathBuf, String> {
    let dir = match given.filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("codex-wire-{what}-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create state dir {}: {e}", dir.display()))?;
    Ok(dir.canonicalize().unwrap_or(dir))
}
