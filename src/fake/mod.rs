//! `codex-wire fake`: a drop-in fake `codex app-server` for client test suites.
//!
//! Every inbound line is judged by the engine exactly as the real server judges it; what the
//! handlers answer is scripted by `scenario.json` in the state dir (see `docs/fake.md`).

pub mod defaults;
mod listen;
mod server;
mod state;
mod turns;

pub use defaults::{methods as default_methods, minimal_of, result_for as default_result};

use std::path::PathBuf;
use std::process::ExitCode;

/// The codex release whose protocol the fake speaks (the vendored schema's).
pub const CLI_VERSION: &str = include_str!("../../schema/VERSION").trim_ascii();
/// File in the state dir whose existence releases `grandchild` processes.
pub const GRANDCHILD_RELEASE: &str = "release-grandchildren";

const USAGE: &str = "usage: codex-wire fake [--state-dir DIR] [-c key=value]... app-server \
[--listen stdio://|unix://PATH|ws://IP:PORT] [--ws-auth capability-token --ws-token-file PATH]";

/// Parsed command line.
#[derive(Debug, Default)]
pub struct Args {
    pub state_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub ws_auth: Option<String>,
    pub ws_token_file: Option<PathBuf>,
    pub version: bool,
    pub app_server: bool,
}

/// Parses codex's own command line shape: global flags before or after `app-server`.
pub fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag {
            "--version" | "-V" => a.version = true,
            "app-server" => a.app_server = true,
            "--state-dir" => a.state_dir = Some(value("--state-dir")?.into()),
            "--listen" => a.listen = Some(value("--listen")?),
            "--ws-auth" => a.ws_auth = Some(value("--ws-auth")?),
            "--ws-token-file" => a.ws_token_file = Some(value("--ws-token-file")?.into()),
            // Global codex flags with a value: accepted and ignored (the fake has no model).
            "-c" | "--config" | "-m" | "--model" | "-p" | "--profile" | "--enable"
            | "--disable" | "-C" | "--cd" => {
                value(flag)?;
            }
            _ => {}
        }
    }
    Ok(a)
}

pub fn main(args: &[String]) -> ExitCode {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fake codex: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if a.version {
        println!("codex-cli {CLI_VERSION}");
        return ExitCode::SUCCESS;
    }
    if !a.app_server {
        eprintln!("fake codex: only `app-server` is supported (argv: {args:?})\n{USAGE}");
        return ExitCode::from(2);
    }
    // `--state-dir`, else $CODEX_WIRE_FAKE_STATE_DIR (for a plain `codex` symlink), else a
    // fresh temp dir.
    let dir = match (&a.state_dir, std::env::var_os("CODEX_WIRE_FAKE_STATE_DIR")) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::temp_dir().join(format!("codex-wire-fake-{}", std::process::id())),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("fake codex: cannot create state dir {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    let dir = dir.canonicalize().unwrap_or(dir);
    listen::run(&a, dir, args)
}
