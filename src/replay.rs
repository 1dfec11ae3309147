//! A recorded client, played again (`codex-wire record` writes it, the harness plays it against
//! the fake or the real server): the client's own lines, byte for byte, each sent once the
//! server has sent what the recording shows it had sent before it; the values the client took
//! from the server (thread, turn, item ids) are taken from the replay's server instead, and the
//! recording's paths (cwd, `CODEX_HOME`, `HOME`) become the run's.

use crate::harness::{Case, Layout, Peer, Server};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The client's part of a recording.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Recorded {
    /// The recording's paths that stand for the run's own.
    #[serde(default)]
    pub paths: Paths,
    /// Directories under the recorded cwd when the recording started (relative), created
    /// before the replay's server starts.
    #[serde(default)]
    pub dirs: Vec<String>,
    /// The codex version that was recorded (the fake answers as it).
    #[serde(default)]
    pub version: Option<String>,
    pub steps: Vec<ClientStep>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Paths {
    pub cwd: Option<String>,
    pub codex_home: Option<String>,
    pub home: Option<String>,
}

/// What the client did, in order.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum ClientStep {
    /// A server process starts: `codex app-server ARGS` with this `config.toml`.
    Spawn {
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        config_toml: String,
        /// The recorded model provider (the real server is pointed at the scripted model
        /// through it; `None`: `scripted`'s own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
    },
    /// The client writes a line (`hex`: the line's bytes in hex, when not UTF-8).
    Send {
        #[serde(default)]
        line: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hex: Option<String>,
        /// Server messages to have arrived first: key → how many (see [`key_of`]).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        after: BTreeMap<String, u64>,
        /// Values the line took from server messages.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        bind: Vec<Bind>,
        /// The server request this line answers (`request:<method>#<n>`): its id is the
        /// replay's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<String>,
    },
    /// The client closes the server's input.
    Close {
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        after: BTreeMap<String, u64>,
        /// Background messages the recording had by then: waited for briefly, not required.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        settle: BTreeMap<String, u64>,
    },
    /// The server process was ended by this signal.
    Signal {
        signal: i32,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        after: BTreeMap<String, u64>,
    },
    /// The server ended by itself.
    Wait {
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        after: BTreeMap<String, u64>,
    },
}

/// A value of a client line that came from a server message: `from` (`<key>#<n>`) of server
/// process `process` (0: the first the recording started), at JSON pointer `at`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Bind {
    pub value: String,
    #[serde(default)]
    pub process: usize,
    pub from: String,
    pub at: String,
}

/// How a server message is counted: `reply:<id>` (the answer to the client's request `id`),
/// `request:<method>` (a server request), or the notification's method.
pub fn key_of(msg: &Value) -> Option<String> {
    match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
        (Some(m), Some(_)) => Some(format!("request:{m}")),
        (Some(m), None) => Some(m.to_string()),
        (None, Some(id)) => Some(format!("reply:{id}")),
        (None, None) => None,
    }
}

/// Messages whose position the real server itself does not keep (`diff`'s floating, optional
/// and usage reports): a replay does not wait on them.
pub fn background(key: &str) -> bool {
    crate::diff::FLOATING.contains(&key)
        || crate::diff::OPTIONAL.contains(&key)
        || crate::diff::USAGE_REPORTS.contains(&key)
}

/// How long a server may stay silent before a wait that may go unmet gives up.
const QUIET: Duration = Duration::from_secs(10);

/// What the replay's servers have sent: counts in the current process, messages of every
/// process (a client takes a thread id from one process to resume it in the next).
#[derive(Default)]
struct Seen {
    process: usize,
    count: HashMap<String, u64>,
    msgs: HashMap<(usize, String), Value>,
}

impl Seen {
    fn take(&mut self, msg: Value) {
        if let Some(k) = key_of(&msg) {
            let n = self.count.entry(k.clone()).or_insert(0);
            self.msgs.insert((self.process, format!("{k}#{n}")), msg);
            *n += 1;
        }
    }

    /// A new server process: counting starts again.
    fn next_process(&mut self, first: bool) {
        if !first {
            self.process += 1;
        }
        self.count.clear();
    }

    fn has(&self, need: &BTreeMap<String, u64>) -> bool {
        need.iter()
            .all(|(k, n)| self.count.get(k).copied().unwrap_or(0) >= *n)
    }

    /// Reads the server until `need` holds. `strict`: a timeout is the run's failure.
    fn wait(
        &mut self,
        p: &mut Peer,
        need: &BTreeMap<String, u64>,
        limit: Duration,
        strict: bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        while !self.has(need) {
            let mut left = deadline.saturating_duration_since(Instant::now());
            if !strict {
                // A wait that may go unmet ends once the server has been quiet a while.
                left = left.min(QUIET);
            }
            match p.rx.recv_timeout(left) {
                Ok(m) => self.take(m),
                Err(_) if strict => {
                    let missing: Vec<String> = need
                        .iter()
                        .filter(|(k, n)| self.count.get(*k).copied().unwrap_or(0) < **n)
                        .map(|(k, n)| format!("{k} ×{n}"))
                        .collect();
                    return Err(format!(
                        "the server went quiet (waiting for {})",
                        missing.join(", ")
                    ));
                }
                Err(_) => return Ok(()),
            }
        }
        // What has arrived meanwhile is counted too (the next step may need it).
        while let Ok(m) = p.rx.try_recv() {
            self.take(m);
        }
        Ok(())
    }

    /// The message `<key>#<n>` of server process `process`, waiting for it when it is the
    /// current one's.
    fn get(
        &mut self,
        p: &mut Peer,
        process: usize,
        name: &str,
        limit: Duration,
    ) -> Result<&Value, String> {
        if process == self.process {
            let (k, n) = name.rsplit_once('#').ok_or("a binding without #n")?;
            let n: u64 = n.parse().map_err(|_| "a binding with a bad #n")?;
            let need = BTreeMap::from([(k.to_string(), n + 1)]);
            self.wait(p, &need, limit, true)?;
        }
        self.msgs
            .get(&(process, name.to_string()))
            .ok_or_else(|| format!("{name} (server process {process}) never came"))
    }
}

/// The recording's paths → the run's, longest first.
fn path_map(rec: &Recorded, l: &Layout) -> Vec<(String, String)> {
    let mut m: Vec<(String, String)> = [
        (&rec.paths.cwd, &l.work),
        (&rec.paths.codex_home, &l.codex_home),
        (&rec.paths.home, &l.home),
    ]
    .into_iter()
    .filter_map(|(from, to)| Some((from.clone()?, to.to_string_lossy().into_owned())))
    .filter(|(from, _)| from.len() > 1)
    .collect();
    m.sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
    m
}

/// `text` with the recording's paths made the run's.
pub fn relocate(text: &str, rec: &Recorded, l: &Layout) -> String {
    let mut out = text.to_string();
    for (from, to) in path_map(rec, l) {
        out = out.replace(&from, &to);
    }
    out
}

/// Plays the recorded client against `server` in the layout `l` (set up by the harness).
pub fn play(case: &Case, rec: &Recorded, server: &Server, l: &Layout) -> Result<(), String> {
    let limit = Duration::from_secs(case.wait_secs.unwrap_or(60));
    let mut peer: Option<Peer> = None;
    let mut seen = Seen::default();
    let mut first = true;
    let result = (|| -> Result<(), String> {
        for step in &rec.steps {
            match step {
                ClientStep::Spawn {
                    args,
                    config_toml,
                    provider,
                } => {
                    if let Some(p) = peer.take() {
                        p.close();
                    }
                    std::fs::write(
                        l.codex_home.join("config.toml"),
                        relocate(config_toml, rec, l),
                    )
                    .map_err(|e| e.to_string())?;
                    let args: Vec<String> = args.iter().map(|a| relocate(a, rec, l)).collect();
                    peer = Some(Peer::spawn(server, l, &args, provider.as_deref())?);
                    seen.next_process(first);
                    first = false;
                }
                ClientStep::Send {
                    line,
                    hex,
                    after,
                    bind,
                    answers,
                } => {
                    let p = peer.as_mut().ok_or("a line before any server started")?;
                    seen.wait(p, after, limit, true)?;
                    if let Some(h) = hex {
                        p.send_bytes(&crate::validate::input::from_hex(h).unwrap_or_default())?;
                        continue;
                    }
                    let mut text = relocate(line, rec, l);
                    for b in bind {
                        let now = seen
                            .get(p, b.process, &b.from, limit)?
                            .pointer(&b.at)
                            .cloned();
                        if let Some(v) = now.as_ref().and_then(Value::as_str) {
                            text = text.replace(&b.value, v);
                        }
                    }
                    if let Some(req) = answers {
                        let current = seen.process;
                        let id = seen.get(p, current, req, limit)?["id"].clone();
                        if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
                            v["id"] = id;
                            text = v.to_string();
                        }
                    }
                    p.send_bytes(format!("{text}\n").as_bytes())?;
                }
                ClientStep::Close { after, settle } => {
                    let mut p = peer.take().ok_or("a close before any server started")?;
                    // Not required: nothing the client sent depends on them, and a message the
                    // recording has and the replay lacks (a race of the real server's, such as a
                    // repeated status change) is the comparison's to report.
                    seen.wait(&mut p, after, limit, false)?;
                    seen.wait(&mut p, settle, Duration::from_secs(2), false)?;
                    p.close();
                }
                ClientStep::Signal { signal, after } => {
                    let mut p = peer.take().ok_or("a signal before any server started")?;
                    seen.wait(&mut p, after, limit, true)?;
                    p.signal(server, l, *signal);
                }
                ClientStep::Wait { after } => {
                    let mut p = peer.take().ok_or("no server to wait for")?;
                    seen.wait(&mut p, after, limit, false)?;
                    p.close();
                }
            }
        }
        Ok(())
    })();
    if let Some(p) = peer {
        p.close();
    }
    result
}

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
