//! `codex-wire record --out DIR [--upstream URL] -- codex app-server [args]`: a real session,
//! recorded so that it can be replayed offline. The real codex runs behind the checking proxy
//! (`DIR/transcript.jsonl`, both directions); its model provider is pointed at a recording
//! pass-through ([`passthrough`]) that forwards to the provider codex would have used, or to
//! `--upstream` (`DIR/model.jsonl`). When codex exits, the recording is read back into a
//! `scenario.json` (the model's answers as steps, [`translate`]) and a `case.json` (that
//! scenario and the client's part, [`client`]) that `codex-wire replay` plays on the fake or on
//! the real server. Nothing secret is written ([`redact`]).

pub mod client;
pub mod overrides;
pub mod passthrough;
pub mod redact;
pub mod translate;

use crate::proxy;
use client::Session;
pub use overrides::{cli_override_pairs, cli_overrides};
use redact::Redactor;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

pub const SESSIONS_FILE: &str = "sessions.jsonl";
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";
pub const CASE_FILE: &str = "case.json";
pub const NOTES_FILE: &str = "notes.txt";

/// Record a real `codex app-server` session (client traffic and model answers) for replay
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Writes DIR/transcript.jsonl, model.jsonl, sessions.jsonl, then \
scenario.json and case.json (replay them with `codex-wire replay DIR`). Run it again with the \
same DIR for a client that restarts codex: the recording continues. Exit: the command's own \
(128+N when a signal N ends it), 127 when it cannot start, 2 on a usage error.\n\
Example: codex-wire record --out rec -- codex app-server"
)]
pub struct Cli {
    /// The recording's directory (created; appended to when it holds a recording)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The model provider's base URL to forward to [default: the one codex would use]
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Also replace what this regular expression matches, in everything written (repeatable;
    /// Rust regex syntax, ASCII classes: `\d`, `\w` and `(?i)` are ASCII, no `\p{..}`)
    #[arg(long = "redact", value_name = "REGEX")]
    pub redact: Vec<String>,
    /// Print the proxy's findings and summary on stderr
    #[arg(long)]
    pub findings: bool,
    /// Ignored field paths not to flag (repeatable)
    #[arg(long = "allow-ignored", value_name = "GLOB")]
    pub allow_ignored: Vec<String>,
    /// Only read DIR's recording back again (scenario.json, case.json, notes.txt), e.g. after a
    /// recording process was killed, or with a newer codex-wire; no command runs
    #[arg(long)]
    pub derive: bool,
    /// The codex command, after `--` (e.g. `codex app-server`)
    #[arg(
        last = true,
        required_unless_present = "derive",
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

const NAME: &str = "codex-wire record";

/// A setting as codex resolves it: the last `-c`, else `config.toml`.
fn setting(config: &toml::Table, args: &[String], key: &str) -> Option<toml::Value> {
    cli_overrides(args)
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .or_else(|| crate::fake::config::get(config, key).cloned())
}

/// The model provider codex will use: its id, and the base URL it would reach.
pub fn provider(config: &toml::Table, args: &[String], codex_home: &Path) -> (String, String) {
    let id = setting(config, args, "model_provider")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "openai".into());
    let url = |key: &str| setting(config, args, key).and_then(|v| v.as_str().map(str::to_string));
    let base = if id == "openai" {
        // The built-in provider: `openai_base_url`, OPENAI_BASE_URL, else by login kind.
        url("openai_base_url")
            .filter(|u| !u.is_empty())
            .or_else(|| {
                std::env::var("OPENAI_BASE_URL")
                    .ok()
                    .filter(|u| !u.is_empty())
            })
            .unwrap_or_else(|| {
                let auth =
                    std::fs::read_to_string(codex_home.join("auth.json")).unwrap_or_default();
                let auth: Value = serde_json::from_str(&auth).unwrap_or(Value::Null);
                if auth["tokens"].is_object() {
                    "https://chatgpt.com/backend-api/codex".into()
                } else {
                    "https://api.openai.com/v1".into()
                }
            })
    } else {
        url(&format!("model_providers.{id}.base_url")).unwrap_or_default()
    };
    (id, base)
}

/// The overrides that point codex's provider `id` at the pass-through.
fn point_at(id: &str, base_url: &str) -> Vec<String> {
    if id == "openai" {
        vec!["-c".into(), format!("openai_base_url={base_url:?}")]
    } else {
        vec![
            "-c".into(),
            format!("model_providers.{id}.base_url={base_url:?}"),
        ]
    }
}

/// Directories under `root` (relative, at most `limit`, three levels), what a replay recreates.
fn dirs_under(root: &Path, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut queue = vec![(root.to_path_buf(), 0)];
    while let Some((d, depth)) = queue.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut subs: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        subs.sort();
        for s in subs {
            if out.len() >= limit {
                return out;
            }
            if let Ok(rel) = s.strip_prefix(root) {
                out.push(rel.to_string_lossy().into_owned());
            }
            if depth < 2 {
                queue.push((s, depth + 1));
            }
        }
    }
    out.sort();
    out
}

pub fn main(cli: Cli) -> ExitCode {
    if cli.derive {
        return match derive(&cli.out) {
            Ok(summary) => {
                eprintln!("{NAME}: {summary}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{NAME}: {e}");
                ExitCode::from(2)
            }
        };
    }
    match run(&cli) {
        Ok(exit) => exit.exit_code(),
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> Result<proxy::Exit, String> {
    let out = &cli.out;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let codex_home = std::env::var_os("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".codex")))
        .ok_or("neither CODEX_HOME nor HOME is set")?;
    let mut redactor = Redactor::new(&cli.redact, &codex_home)?;
    redactor.learn_overrides(&cli.command);
    let at = cli
        .command
        .iter()
        .position(|a| a == "app-server")
        .ok_or("the command runs no `app-server` (record plays codex app-server over stdio)")?;
    let args = cli.command[at + 1..].to_vec();
    if let Some(l) = args
        .iter()
        .position(|a| a == "--listen" || a.starts_with("--listen="))
    {
        let value = args[l]
            .strip_prefix("--listen=")
            .or(args.get(l + 1).map(String::as_str))
            .unwrap_or("");
        if value != "stdio://" && value != "stdio" {
            return Err(format!(
                "--listen {value}: record sees the client over stdio only"
            ));
        }
    }
    let config_text = std::fs::read_to_string(codex_home.join("config.toml")).unwrap_or_default();
    let config: toml::Table = config_text.parse().unwrap_or_default();
    let (id, base) = provider(&config, &args, &codex_home);
    let upstream = match &cli.upstream {
        Some(u) => u.clone(),
        None if !base.is_empty() => base,
        None => {
            return Err(format!(
                "the provider `{id}` has no base_url to forward to: give --upstream URL"
            ))
        }
    };
    let protocol = proxy::child_version(&cli.command[0]).unwrap_or_else(|_| crate::newest());
    let pass = passthrough::Passthrough::start(&upstream, out, redactor.clone())
        .map_err(|e| format!("cannot start the recording pass-through: {e}"))?;
    let mut argv = cli.command.clone();
    argv.extend(point_at(&id, pass.base_url()));
    if id == "openai" {
        // Whichever of the two the built-in provider reads, it reads the pass-through.
        std::env::set_var("OPENAI_BASE_URL", pass.base_url());
    }
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let session = Session {
        record_pid: std::process::id(),
        args: args.iter().map(|a| redactor.text(a).into_owned()).collect(),
        cwd: cwd.to_string_lossy().into_owned(),
        codex_home: codex_home.to_string_lossy().into_owned(),
        home: home.map(|h| h.to_string_lossy().into_owned()),
        config_toml: redactor.text(&config_text).into_owned(),
        version: protocol.version.to_string(),
        dirs: dirs_under(&cwd, 200),
    };
    append(
        &out.join(SESSIONS_FILE),
        &serde_json::to_string(&session).map_err(|e| e.to_string())?,
    )?;
    let exit = proxy::run(&proxy::Options {
        name: NAME,
        command: &argv,
        transcript: Some(&out.join(TRANSCRIPT_FILE)),
        append: true,
        allow_ignored: &cli.allow_ignored,
        quiet: !cli.findings,
        protocol: Some(protocol),
        redact: Some(&redactor),
    });
    // An answer codex walked away from is recorded to its end, within reason.
    pass.finish(Duration::from_secs(30));
    match derive(out) {
        Ok(summary) => eprintln!("{NAME}: {summary}"),
        Err(e) => eprintln!("{NAME}: the recording could not be read back: {e}"),
    }
    Ok(exit)
}

fn append(path: &Path, line: &str) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = f.lock();
    f.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A session's `config.toml`, arguments and model provider for the replay's servers: as
/// recorded — the provider keeps its id, name and settings (the thread's `modelProvider`, its
/// retry budgets). Only its address changes: the real server's replay points it at the scripted
/// model (`codex-wire scripted --provider ID`, whose `-c` comes last and wins over the
/// recording's pass-through address); the fake never connects.
pub fn replay_settings(s: &Session) -> (String, Vec<String>, String) {
    let c = crate::fake::config::Config::parse(&s.config_toml, &cli_override_pairs(&s.args));
    let id = c.provider.clone();
    (s.config_toml.clone(), s.args.clone(), id)
}

/// Reads a recording back: `scenario.json`, `case.json`, `notes.txt`. A one-line summary.
pub fn derive(dir: &Path) -> Result<String, String> {
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()))
    };
    let sessions: Vec<Session> = read(SESSIONS_FILE)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{SESSIONS_FILE}: {e}")))
        .collect::<Result<_, _>>()?;
    let transcript = read(TRANSCRIPT_FILE)?;
    let exchanges = passthrough::load(dir)?;
    let tr = translate::translate(&exchanges);
    let mut used = vec![false; sessions.len()];
    let steps = client::steps(&transcript, &mut |ppid| {
        // The session of the recording process that spawned this one (else the next unused).
        let i = sessions
            .iter()
            .enumerate()
            .position(|(i, s)| !used[i] && Some(s.record_pid) == ppid)
            .or_else(|| used.iter().position(|u| !u))
            .ok_or("a server process the sessions do not list")?;
        used[i] = true;
        let (config_toml, args, provider) = replay_settings(&sessions[i]);
        Ok(crate::harness::ClientStep::Spawn {
            args,
            config_toml,
            provider: Some(provider),
        })
    })?;
    let first = sessions.first().cloned().unwrap_or_default();
    let recorded = crate::harness::Recorded {
        paths: crate::harness::Paths {
            cwd: Some(first.cwd.clone()),
            codex_home: Some(first.codex_home.clone()),
            home: first.home.clone(),
        },
        dirs: first.dirs.clone(),
        version: Some(first.version.clone()),
        steps,
    };
    let name = dir
        .file_name()
        .map_or("recording".into(), |n| n.to_string_lossy().into_owned());
    let mut case: crate::harness::Case =
        serde_json::from_value(json!({"name": name, "scenario": tr.scenario}))
            .map_err(|e| e.to_string())?;
    let lines = recorded
        .steps
        .iter()
        .filter(|s| matches!(s, crate::harness::ClientStep::Send { .. }))
        .count();
    let processes = recorded
        .steps
        .iter()
        .filter(|s| matches!(s, crate::harness::ClientStep::Spawn { .. }))
        .count();
    case.recorded = Some(recorded);
    // Only what a recorded case uses (the harness's other fields describe a scripted client).
    let written = json!({"name": case.name, "scenario": case.scenario, "recorded": case.recorded});
    std::fs::write(dir.join("scenario.json"), pretty(&tr.scenario))
        .and_then(|()| std::fs::write(dir.join(CASE_FILE), pretty(&written)))
        .map_err(|e| e.to_string())?;
    let mut notes = String::new();
    for n in tr.raw.iter().chain(&tr.notes) {
        notes.push_str(n);
        notes.push('\n');
    }
    std::fs::write(dir.join(NOTES_FILE), &notes).map_err(|e| e.to_string())?;
    let mut summary = format!(
        "{lines} client lines over {processes} server process(es), {} model answers as steps",
        tr.responses
    );
    if !tr.raw.is_empty() {
        summary.push_str(&format!(
            ", {} kept as raw events (see {})",
            tr.raw.len(),
            dir.join(NOTES_FILE).display()
        ));
    }
    for n in &tr.notes {
        summary.push_str(&format!("\n  {n}"));
    }
    Ok(summary)
}

/// Records `case` the way a user records a session: the harness's client drives `codex-wire
/// record -- codex app-server`, whose upstream is the scripted model playing the case's
/// scenario. Under `root`: `upstream/` (the model's state), `live/` (the client's layout),
/// `recording/` (what record wrote). The recording's directory, and how the client's part
/// stopped if it did.
pub fn record_case(
    case: &crate::harness::Case,
    bin: &Path,
    codex: &Path,
    root: &Path,
) -> Result<(PathBuf, Option<String>), String> {
    let _ = std::fs::remove_dir_all(root);
    let upstream = root.join("upstream");
    std::fs::create_dir_all(&upstream).map_err(|e| e.to_string())?;
    std::fs::write(upstream.join("scenario.json"), case.scenario.to_string())
        .map_err(|e| e.to_string())?;
    let model = crate::model::Model::start("127.0.0.1:0", &upstream)
        .map_err(|e| format!("cannot start the upstream model: {e}"))?;
    let out = root.join("recording");
    let url = model.base_url();
    let server = crate::harness::Server::Record {
        bin,
        codex,
        out: &out,
        upstream: &url,
    };
    // `live` as long as the replays' `fake` and `real`: the real server's token estimate of a
    // compacted history counts the cwd's characters.
    let (_, stopped) = crate::harness::run_outcome(case, &server, &root.join("live"))?;
    drop(model);
    // Files the case creates outside its root are removed before each replay too.
    if !case.cleanup.is_empty() {
        let path = out.join(CASE_FILE);
        let mut v: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| format!("{}: not written", path.display()))?;
        v["cleanup"] = json!(case.cleanup);
        std::fs::write(&path, pretty(&v)).map_err(|e| e.to_string())?;
    }
    Ok((out, stopped))
}

/// Pretty JSON, as the files a recording writes.
fn pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_read_as_toml() {
        let args: Vec<String> = [
            "-c",
            "model_provider=\"x\"",
            "--config=a.b=3",
            "-cbare=word",
        ]
        .map(String::from)
        .to_vec();
        let o = cli_overrides(&args);
        assert_eq!(
            o[0],
            ("model_provider".into(), toml::Value::String("x".into()))
        );
        assert_eq!(o[1], ("a.b".into(), toml::Value::Integer(3)));
        assert_eq!(o[2], ("bare".into(), toml::Value::String("word".into())));
    }

    #[test]
    fn the_provider_codex_uses_and_its_replay() {
        let config: toml::Table = "model_provider = \"corp\"\n[model_providers.corp]\n\
            base_url = \"https://llm.corp/v1\"\nstream_max_retries = 2\n"
            .parse()
            .unwrap();
        let none = Path::new("/nonexistent");
        assert_eq!(
            provider(&config, &[], none),
            ("corp".into(), "https://llm.corp/v1".into())
        );
        let args = vec!["-c".to_string(), "model_provider=\"openai\"".to_string()];
        assert_eq!(provider(&config, &args, none).0, "openai");
        let s = Session {
            args: vec![
                "-c".into(),
                "model_providers.corp.request_max_retries=1".into(),
            ],
            codex_home: "/nonexistent".into(),
            config_toml: "model_provider = \"corp\"\n[model_providers.corp]\n\
                base_url = \"https://llm.corp/v1\"\nstream_max_retries = 2\n"
                .into(),
            ..Session::default()
        };
        // The replay keeps the provider as recorded: its id, its budgets (only its address
        // is the replay's to give).
        let (config, args, id) = replay_settings(&s);
        assert_eq!(id, "corp");
        assert_eq!(args, s.args);
        assert_eq!(config, s.config_toml);
    }
}
