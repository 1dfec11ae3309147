//! `codex-wire scripted [--state-dir DIR] -- <codex command…>`: the fake's contract (state dir,
//! `scenario.json`, `transcript.jsonl`) played by the real server. The scripted model
//! ([`crate::model`]) serves the scenario on loopback, codex is pointed at it with `-c`
//! overrides, and the command runs behind the proxy, which appends to `DIR/transcript.jsonl`.

use crate::model::{self, Model};
use crate::proxy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run a real `codex app-server` against the scripted model, behind the checking proxy
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit: the command's own (128+N when a signal N ends it), 127 when it \
cannot start, 2 on a usage error.\n\
Example: codex-wire scripted --state-dir st -- codex app-server"
)]
pub struct Cli {
    /// State dir: scenario.json, transcript.jsonl (appended), model-cursor.json,
    /// model-requests.jsonl [default: a fresh temp dir]
    #[arg(long, value_name = "DIR", env = "CODEX_WIRE_FAKE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Print the proxy's findings and summary on stderr
    #[arg(long)]
    pub findings: bool,
    /// Ignored field paths not to flag (repeatable)
    #[arg(long = "allow-ignored", value_name = "GLOB")]
    pub allow_ignored: Vec<String>,
    /// Point this model provider of the command's configuration at the scripted model (only
    /// its address; its name, settings and retry budgets stay), instead of a provider
    /// `scripted` of its own (a recording replayed with its own provider)
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// The codex command and its arguments, after `--` (e.g. `codex app-server`)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn main(cli: Cli) -> ExitCode {
    const NAME: &str = "codex-wire scripted";
    let dir = match crate::fake::state_dir(cli.state_dir, "scripted") {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            return ExitCode::from(2);
        }
    };
    // CODEX_HOME: the caller's, else one in the state dir, so the machine's ~/.codex (auth,
    // config) never reaches the run. HOME is left alone: codex reads nothing from it once
    // CODEX_HOME is set, and the commands the model runs should see the user's.
    let codex_home = match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => {
            let h = dir.join("codex-home");
            if let Err(e) = std::fs::create_dir_all(&h) {
                eprintln!("{NAME}: cannot create {}: {e}", h.display());
                return ExitCode::from(2);
            }
            std::env::set_var("CODEX_HOME", &h);
            h
        }
    };
    let model = match Model::start("127.0.0.1:0", &dir) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{NAME}: cannot start the model: {e}");
            return ExitCode::from(2);
        }
    };
    let exit = run(
        &cli.command,
        &cli.allow_ignored,
        !cli.findings,
        &dir,
        &codex_home,
        &model,
        cli.provider.as_deref(),
    );
    // The child is gone: stop the model before a signal is re-raised (no Drop after that).
    drop(model);
    exit.exit_code()
}

/// The command with the model's overrides appended, behind the proxy.
fn run(
    command: &[String],
    allow: &[String],
    quiet: bool,
    dir: &Path,
    codex_home: &Path,
    model: &Model,
    provider: Option<&str>,
) -> proxy::Exit {
    let config = std::fs::read_to_string(codex_home.join("config.toml")).unwrap_or_default();
    let argv = model::with_model_overrides(command, &config, &model.base_url(), provider);
    let transcript = dir.join("transcript.jsonl");
    proxy::run(&proxy::Options {
        name: "codex-wire scripted",
        command: &argv,
        transcript: Some(&transcript),
        append: true,
        allow_ignored: allow,
        quiet,
        protocol: None,
        redact: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::model::config_sets_stream_retries as sets;

    #[test]
    fn keys_the_command_sets() {
        let argv: Vec<String> = [
            "codex",
            "app-server",
            "-c",
            "a.b=1",
            "--config=x=\"y\"",
            "-cz=2",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(crate::model::override_keys(&argv), ["a.b", "x", "z"]);
    }

    #[test]
    fn finds_stream_retries_in_table_and_dotted_forms() {
        assert!(sets(
            "[model_providers.scripted]\nname = \"s\"\nstream_max_retries = 1\n"
        ));
        assert!(sets("model_providers.scripted.stream_max_retries=2"));
        assert!(!sets(
            "[model_providers.other]\nstream_max_retries = 1\n[model_providers.scripted]\n"
        ));
        assert!(!sets("stream_max_retries = 1"));
    }
}
