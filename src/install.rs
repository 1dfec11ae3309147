//! A test install of a fake (or real) codex, and the wire check over its transcript: the one
//! implementation the Python and Node helpers call, so both install the same way (the state
//! dir, `CODEX_HOME` and its config.toml, a `codex` wrapper quoting every path for the shell)
//! and judge allowed ignored paths by the same glob (`validate::glob`, as `--allow-ignored`).

use crate::validate::glob::Glob;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The state dir's name under an install's root.
pub const STATE_DIR: &str = "fake_codex";
/// File in the state dir whose existence releases `grandchild` processes.
pub use crate::fake::GRANDCHILD_RELEASE;

/// Create a test install: a state dir, `CODEX_HOME` with its config.toml, and a `codex` wrapper
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Writes DIR/fake_codex/ (the state dir; scenario.json is the caller's), \
DIR/fake_codex/codex-home/config.toml and DIR/bin/codex, a wrapper that runs `codex-wire fake` \
(or, with --real, the real codex behind the scripted model) with a clean environment. Prints \
the install as JSON: {\"bin\", \"state_dir\", \"codex_home\", \"grandchild_release\"}.\n\
Example: codex-wire install /tmp/t && PATH=/tmp/t/bin:$PATH my-client-tests"
)]
pub struct Cli {
    /// The install's root directory (created)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Run this real codex behind the scripted model instead of the fake
    #[arg(long, value_name = "PATH")]
    pub real: Option<PathBuf>,
    /// The codex version the fake answers as [default: the newest]
    #[arg(long = "codex-version", value_name = "X.Y.Z")]
    pub codex_version: Option<String>,
}

/// What an install is made of.
#[derive(Debug, Serialize)]
pub struct Install {
    pub bin: PathBuf,
    pub state_dir: PathBuf,
    pub codex_home: PathBuf,
    pub grandchild_release: &'static str,
}

/// `s` as one shell word: single-quoted, a quote inside as `'\''` (so `$`, `"`, spaces and
/// backquotes stay literal).
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Writes an install under `dir` whose wrapper runs `me` (this binary).
pub fn install(
    dir: &Path,
    me: &Path,
    real: Option<&Path>,
    version: Option<&str>,
) -> Result<Install, String> {
    if let Some(v) = version {
        crate::parse_codex_version(v)?;
    }
    let abs = |p: &Path| std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()));
    let dir = abs(dir)?;
    // The wrapper runs wherever the client runs it from: every path absolute.
    let real = real.map(abs).transpose()?;
    let state_dir = dir.join(STATE_DIR);
    let codex_home = state_dir.join("codex-home");
    let bin = dir.join("bin").join("codex");
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(&codex_home).map_err(|e| io(&codex_home, e))?;
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).map_err(|e| io(&bin_dir, e))?;
    let config = codex_home.join("config.toml");
    std::fs::write(&config, crate::harness::install_config_toml()).map_err(|e| io(&config, e))?;
    let q = |p: &Path| sh_quote(&p.to_string_lossy());
    let server = match (real.as_deref(), version) {
        (Some(r), _) => format!(
            "{} scripted --state-dir {} -- {}",
            q(me),
            q(&state_dir),
            q(r)
        ),
        (None, Some(v)) => format!(
            "{} fake --codex-version {} --state-dir {}",
            q(me),
            sh_quote(v),
            q(&state_dir)
        ),
        (None, None) => format!("{} fake --state-dir {}", q(me), q(&state_dir)),
    };
    // Only what the install sets: no credentials or settings of the machine reach either server.
    let clean = "for v in $(env | sed -n 's/^\\(CODEX[A-Za-z0-9_]*\\|OPENAI[A-Za-z0-9_]*\\)=.*/\\1/p'); do unset \"$v\"; done\n";
    let wrapper = format!(
        "#!/bin/sh\n{clean}export CODEX_HOME={}\nexec {server} \"$@\"\n",
        q(&codex_home)
    );
    std::fs::write(&bin, wrapper).map_err(|e| io(&bin, e))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io(&bin, e))?;
    }
    Ok(Install {
        bin,
        state_dir,
        codex_home,
        grandchild_release: GRANDCHILD_RELEASE,
    })
}

pub fn main(cli: Cli) -> ExitCode {
    let me = match std::env::current_exe() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("codex-wire install: cannot find this binary: {e}");
            return ExitCode::from(2);
        }
    };
    match install(
        &cli.dir,
        &me,
        cli.real.as_deref(),
        cli.codex_version.as_deref(),
    ) {
        Ok(i) => {
            println!("{}", serde_json::to_string(&i).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codex-wire install: {e}");
            ExitCode::from(2)
        }
    }
}

/// What a transcript shows the client sent that the real server refuses or silently drops
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Reads the verdicts a fake, proxy or scripted run recorded (`violation`, \
`ignored`) and prints one problem per line: `violation in METHOD: …`, `ignored by the real \
server: PATH (in METHOD)`. Exit: 0 none, 1 some, 2 unreadable.\n\
Example: codex-wire wire-check st/transcript.jsonl --allow-ignored 'params.input[*].extra'"
)]
pub struct WireCli {
    /// The transcript (`transcript.jsonl`)
    #[arg(value_name = "FILE")]
    pub transcript: PathBuf,
    /// Ignored-field paths the caller accepts (repeatable): `*` within one path segment, `**`
    /// anything, a pattern without `$` rooted (`params.x` = `$.params.x`)
    #[arg(long = "allow-ignored", value_name = "GLOB")]
    pub allow: Vec<String>,
}

/// The problems of a transcript's entries, as the helpers report them.
pub fn wire_problems(entries: &[Value], allow: &[String]) -> Vec<String> {
    let globs: Vec<Glob> = allow.iter().map(|a| Glob::new(a)).collect();
    let name = |e: &Value| {
        e["msg"]["method"]
            .as_str()
            .or_else(|| e["reply_to"].as_str())
            .map(str::to_string)
    };
    let mut out = Vec::new();
    for e in entries {
        if let Some(v) = e["violation"].as_str().filter(|v| !v.is_empty()) {
            let what = name(e)
                .or_else(|| e["event"].as_str().map(str::to_string))
                .unwrap_or_else(|| "line".into());
            out.push(format!("violation in {what}: {v}"));
        }
    }
    for e in entries {
        for p in e["ignored"].as_array().into_iter().flatten() {
            let Some(p) = p.as_str() else { continue };
            if !globs.iter().any(|g| g.matches(p)) {
                let method = name(e).unwrap_or_else(|| "None".into());
                out.push(format!("ignored by the real server: {p} (in {method})"));
            }
        }
    }
    out
}

pub fn wire_main(cli: WireCli) -> ExitCode {
    let text = match std::fs::read_to_string(&cli.transcript) {
        Ok(t) => t,
        // No transcript yet: nothing was sent.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            eprintln!("codex-wire wire-check: {}: {e}", cli.transcript.display());
            return ExitCode::from(2);
        }
    };
    let entries: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let problems = wire_problems(&entries, &cli.allow);
    for p in &problems {
        println!("{p}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_stay_one_shell_word() {
        for s in ["/a b/c", "/x/$HOME/\"q\"", "it's", "`id`"] {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s {}", sh_quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }

    #[test]
    fn problems_are_named_and_allowed_by_the_validate_glob() {
        let entries = vec![
            json!({"dir": "in", "msg": {"id": 1, "method": "thread/start", "params": {}},
                   "ignored": ["$.params.temperature", "$.params.input[0].extra"]}),
            json!({"dir": "in", "raw": "x", "violation": "not JSON"}),
            json!({"dir": "in", "msg": {"id": 0, "result": {}}, "reply_to": "item/tool/call",
                   "ignored": ["$.result.x"]}),
        ];
        assert_eq!(
            wire_problems(&entries, &["params.input[*].extra".into()]),
            [
                "violation in line: not JSON",
                "ignored by the real server: $.params.temperature (in thread/start)",
                "ignored by the real server: $.result.x (in item/tool/call)",
            ]
        );
        // `*` stays within a segment: it does not allow a deeper key.
        assert_eq!(
            wire_problems(&entries, &["$.*".into(), "**.x".into()]).len(),
            3
        );
    }
}
