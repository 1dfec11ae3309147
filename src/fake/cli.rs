//! The fake's command line: the real `codex` CLI's shape (clap, as codex itself), so that
//! whatever argv a client hands its `codex` is accepted or refused as the real one would.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// A fake `codex` that speaks the app-server protocol of the vendored codex release.
///
/// Every line a client writes is judged exactly as the real server judges it; turns are
/// scripted by `scenario.json` in the state dir (docs/fake.md).
#[derive(Debug, Parser)]
#[command(
    name = "codex",
    disable_version_flag = true,
    after_help = "Also runs as `codex-wire fake …`, or as a binary named `codex`.\n\
                  Exit: 0 on a clean end of input, 2 on a usage error."
)]
pub struct Cli {
    /// Where scenario.json, threads.json and transcript.jsonl live (default: a fresh temp dir)
    #[arg(
        long,
        env = "CODEX_WIRE_FAKE_STATE_DIR",
        value_name = "DIR",
        global = true
    )]
    pub state_dir: Option<PathBuf>,

    /// Print the codex version the fake speaks (`codex-cli X.Y.Z`)
    #[arg(short = 'V', long)]
    pub version: bool,

    /// The codex version to answer as: its methods, fields, errors and `userAgent` (default: the
    /// newest this build speaks)
    #[arg(
        long,
        env = "CODEX_WIRE_CODEX_VERSION",
        value_name = "X.Y.Z",
        global = true,
        value_parser = crate::parse_codex_version
    )]
    pub codex_version: Option<&'static crate::Protocol>,

    #[command(flatten)]
    pub codex: CodexOptions,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The real `codex` top-level options. The ones that change what the server sends are read
/// (`-c`, `-m`, `-s`, `-a`); the rest are accepted so that a client's argv works unchanged.
#[derive(Debug, Default, clap::Args)]
pub struct CodexOptions {
    /// Override a config value (`key=value`, value parsed as TOML), as codex does
    #[arg(short = 'c', long = "config", value_name = "key=value", global = true)]
    pub config: Vec<String>,
    /// Enable a feature (`-c features.<name>=true`)
    #[arg(long, value_name = "FEATURE", global = true)]
    pub enable: Vec<String>,
    /// Disable a feature (`-c features.<name>=false`)
    #[arg(long, value_name = "FEATURE", global = true)]
    pub disable: Vec<String>,
    /// Accepted (config strictness)
    #[arg(long, global = true)]
    pub strict_config: bool,
    #[arg(long, value_name = "ADDR", hide = true)]
    pub remote: Option<String>,
    #[arg(long, value_name = "ENV_VAR", hide = true)]
    pub remote_auth_token_env: Option<String>,
    #[arg(short = 'i', long, value_name = "FILE", num_args = 1.., hide = true)]
    pub image: Vec<String>,
    /// Model (`-c model=…`)
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    #[arg(long, hide = true)]
    pub oss: bool,
    #[arg(long, value_name = "OSS_PROVIDER", hide = true)]
    pub local_provider: Option<String>,
    /// Config profile (accepted)
    #[arg(short = 'p', long, value_name = "CONFIG_PROFILE")]
    pub profile: Option<String>,
    /// Sandbox mode (`-c sandbox_mode=…`)
    #[arg(short = 's', long, value_name = "SANDBOX_MODE")]
    pub sandbox: Option<String>,
    #[arg(long, hide = true)]
    pub approve_for_me: bool,
    #[arg(long, hide = true)]
    pub dangerously_bypass_approvals_and_sandbox: bool,
    #[arg(long, hide = true)]
    pub dangerously_bypass_hook_trust: bool,
    #[arg(short = 'C', long, value_name = "DIR", hide = true)]
    pub cd: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub worktree: bool,
    #[arg(long, value_name = "DIR", hide = true)]
    pub add_dir: Vec<PathBuf>,
    /// Approval policy (`-c approval_policy=…`)
    #[arg(short = 'a', long, value_name = "APPROVAL_POLICY")]
    pub ask_for_approval: Option<String>,
    #[arg(long, hide = true)]
    pub search: bool,
    #[arg(long, hide = true)]
    pub no_alt_screen: bool,
    #[arg(long, hide = true)]
    pub no_daemon: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the (fake) app server
    AppServer(AppServer),
}

/// `codex app-server`'s own options, as the real CLI declares them.
#[derive(Debug, Default, clap::Args)]
pub struct AppServer {
    /// Transport: `stdio://` (default), `unix://PATH`, `ws://IP:PORT`
    #[arg(long, value_name = "URL")]
    pub listen: Option<String>,
    /// Use stdio (`--listen stdio://`)
    #[arg(long)]
    pub stdio: bool,
    /// WebSocket auth mode
    #[arg(long, value_name = "MODE", value_parser = ["capability-token", "signed-bearer-token"])]
    pub ws_auth: Option<String>,
    /// Capability-token file
    #[arg(long, value_name = "PATH")]
    pub ws_token_file: Option<PathBuf>,
    #[arg(long, value_name = "HEX", hide = true)]
    pub ws_token_sha256: Option<String>,
    #[arg(long, value_name = "PATH", hide = true)]
    pub ws_shared_secret_file: Option<PathBuf>,
    #[arg(long, value_name = "ISSUER", hide = true)]
    pub ws_issuer: Option<String>,
    #[arg(long, value_name = "AUDIENCE", hide = true)]
    pub ws_audience: Option<String>,
    #[arg(long, value_name = "SECONDS", hide = true)]
    pub ws_max_clock_skew_seconds: Option<String>,
    #[arg(long, hide = true)]
    pub startup_sign_out: bool,
    #[arg(long, hide = true)]
    pub print_startup_config: bool,
    #[arg(long, value_name = "STARTUP_CLIENT_INFO", hide = true)]
    pub startup_client_info: Option<String>,
    #[arg(long, value_name = "PATH", hide = true)]
    pub cloud_skills_snapshot: Option<PathBuf>,
    #[arg(long, value_name = "URL", hide = true)]
    pub code_mode_host: Option<String>,
    #[arg(long, hide = true)]
    pub analytics_default_enabled: bool,
}

impl CodexOptions {
    /// Every override as `(dotted key, raw value)`, in codex's order of precedence: the
    /// dedicated flags are sugar for `-c`, and a later `-c` wins.
    pub fn overrides(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let quote = |v: &str| format!("{v:?}");
        if let Some(m) = &self.model {
            out.push(("model".into(), quote(m)));
        }
        if let Some(s) = &self.sandbox {
            out.push(("sandbox_mode".into(), quote(s)));
        }
        if let Some(a) = &self.ask_for_approval {
            out.push(("approval_policy".into(), quote(a)));
        }
        for f in &self.enable {
            out.push((format!("features.{f}"), "true".into()));
        }
        for f in &self.disable {
            out.push((format!("features.{f}"), "false".into()));
        }
        for kv in &self.config {
            if let Some((k, v)) = kv.split_once('=') {
                out.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        out
    }
}

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
