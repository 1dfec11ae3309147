//! `codex-wire fake`: a drop-in fake `codex app-server` for client test suites.
//!
//! Every inbound line is judged by the engine exactly as the real server judges it; what the
//! handlers answer is scripted by `scenario.json` in the state dir (see `docs/fake.md`).

mod aws;
mod catalog;
mod cli;
pub mod config;
pub mod defaults;
mod external_agent;
mod handlers;
mod latency;
pub use latency::{is_validation, VALIDATION};
mod listen;
mod mcp;
mod plugins;
mod process;
mod project;
mod provider;
mod rpc;
mod search;
pub mod settings;
pub mod shell;
mod skills;
mod state;
mod threads;
mod turn;
mod turn_facts;
mod user_config;

pub use cli::{AppServer, Args, Cli, CodexOptions, Command, GRANDCHILD_RELEASE};
pub use defaults::{
    captured_methods, methods as default_methods, minimal_of, result_for as default_result,
};
pub use handlers::ruled_methods;
pub use turn_facts::{TurnFacts, TURN_FACTS_ENV};

use std::path::PathBuf;
use std::process::ExitCode;

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
        Ok(dir) => process::run(&a, dir, argv),
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
