//! One client, two servers: drives a `codex app-server` — the fake, or the real binary behind
//! `codex-wire scripted` — through a turn case, the same way each time, so that their
//! transcripts can be compared under the one masking rule ([`crate::diff`]).
//!
//! A case is a `scenario.json` (the turns the model plays) plus what the client does: the texts
//! it sends as turns, the decisions it gives approval requests, whether it interrupts, steers,
//! restarts the server between turns, or compacts. Run layout under a root directory:
//! `state/` (scenario.json, transcript.jsonl), `codex_home/config.toml`, `home/`, `work/` (cwd).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// A turn case: the model's script and the client's part.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Case {
    pub name: String,
    /// `scenario.json`: `{"turns": [{"steps": [...]}, ...]}` (the seed's format).
    pub scenario: Value,
    /// One turn per entry: a text, or a whole `input` array (any `UserInput` items).
    #[serde(default = "default_inputs")]
    pub inputs: Vec<Input>,
    /// `initialize` params (default: the harness's client, `experimentalApi: true`).
    #[serde(default)]
    pub initialize: Option<Value>,
    /// Lines of `config.toml` placed before everything else (top-level keys: `service_tier`,
    /// deprecated keys, …).
    #[serde(default)]
    pub config_extra: String,
    /// Arguments after `app-server`, for either server (`-c key=value`, `--enable f`, …).
    #[serde(default)]
    pub args: Vec<String>,
    /// Directories created under the run's work dir before the server starts (for relative
    /// `cwd` params).
    #[serde(default)]
    pub dirs: Vec<String>,
    /// Per-turn `turn/start` params, over `turn_params` (entry N for turn N).
    #[serde(default)]
    pub turn_params_each: Vec<serde_json::Map<String, Value>>,
    /// How long any one wait may take, in seconds (default 60).
    #[serde(default)]
    pub wait_secs: Option<u64>,
    /// Answers to approval requests, in order (then `accept`): a decision's JSON, such as
    /// `"decline"` or `{"acceptWithExecpolicyAmendment": {...}}`; or `{"$error": {code,
    /// message}}` (a JSON-RPC error reply), `{"$result": …}` (that result as it is) or `"$none"`
    /// (no answer: the client interrupts the turn instead).
    #[serde(default)]
    pub decisions: Vec<Value>,
    /// Interrupt a turn once this notification arrives in it (`method` or `method:itemType`).
    #[serde(default)]
    pub interrupt_on: Option<String>,
    /// Steer a turn with this text once `steer_on` arrives.
    #[serde(default)]
    pub steer: Option<String>,
    #[serde(default)]
    pub steer_on: Option<String>,
    /// Kill the server process (SIGKILL: a crash) once this notification arrives in a turn
    /// (`method` or `method:itemType`); a new process resumes the thread (its turns included)
    /// before the next input.
    #[serde(default)]
    pub kill_on: Option<String>,
    /// The turn (0-based) `kill_on` applies to.
    #[serde(default)]
    pub kill_in_turn: usize,
    /// Before turn N (0-based), end the server process and start a new one that resumes the
    /// thread.
    #[serde(default)]
    pub restart_before_turn: Option<usize>,
    /// `thread/resume` params after a restart, over `{"threadId", "excludeTurns": true}`.
    #[serde(default)]
    pub resume_params: serde_json::Map<String, Value>,
    /// Instead of the first turn: set this goal objective (`thread/goal/set`) and wait for the
    /// turns the server runs on its own until the goal is no longer active.
    #[serde(default)]
    pub goal: Option<String>,
    /// After the turns, these requests in order (`{"method", "params"}`; see [`substitute`] for
    /// the placeholders), each answered before the next: what a client reads back.
    #[serde(default)]
    pub after: Vec<Value>,
    /// After the turns, ask for a compaction and wait for it.
    #[serde(default)]
    pub compact: bool,
    /// Files outside the run's root that the case creates (removed before each run).
    #[serde(default)]
    pub cleanup: Vec<PathBuf>,
    /// config.toml settings that change what the server sends.
    #[serde(default = "default_model")]
    pub model: String,
    #[serde(default = "default_approval")]
    pub approval_policy: String,
    #[serde(default = "default_sandbox")]
    pub sandbox_mode: String,
    /// The provider's `stream_max_retries` (a dropped stream is retried this many times).
    #[serde(default)]
    pub stream_retries: u32,
    /// The model provider's id in config.toml (default `scripted`): either server is pointed at
    /// the scripted model through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Extra `thread/start` params (e.g. `approvalsReviewer`).
    #[serde(default)]
    pub thread_params: serde_json::Map<String, Value>,
    /// Extra `turn/start` params (e.g. `collaborationMode`), on every turn.
    #[serde(default)]
    pub turn_params: serde_json::Map<String, Value>,
    /// Features turned on in config.toml (`[features] name = true`).
    #[serde(default)]
    pub features: Vec<String>,
    /// Results for the server's other requests, by method (e.g. `item/tool/call`); `{}` when
    /// absent.
    #[serde(default)]
    pub replies: serde_json::Map<String, Value>,
    /// A recorded client (`codex-wire record`): played instead of the fields above, which
    /// describe a client by what it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<crate::replay::Recorded>,
}

/// A turn's input: `"text"` is `[{"type": "text", "text": "text"}]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Items(Vec<Value>),
}

impl Input {
    fn items(&self) -> Value {
        match self {
            Input::Text(t) => json!([{"type": "text", "text": t}]),
            Input::Items(v) => Value::Array(v.clone()),
        }
    }
}

fn default_inputs() -> Vec<Input> {
    vec![Input::Text("hi".into())]
}
fn default_model() -> String {
    "gpt-5.5".into()
}
fn default_approval() -> String {
    "on-request".into()
}
fn default_sandbox() -> String {
    "workspace-write".into()
}

/// The model provider id both servers are configured with.
pub const PROVIDER: &str = "scripted";

/// Which server plays the other side.
pub enum Server<'a> {
    /// `codex-wire fake` (this binary), as codex `version` (None: the newest).
    Fake {
        bin: &'a Path,
        version: Option<&'a str>,
    },
    /// The real binary behind `codex-wire scripted` (the scripted model in front of it).
    Real { bin: &'a Path, codex: &'a Path },
    /// The real binary behind `codex-wire record --out OUT --upstream URL`: the recording of
    /// a run whose model is the one at `upstream`.
    Record {
        bin: &'a Path,
        codex: &'a Path,
        out: &'a Path,
        upstream: &'a str,
    },
}

impl Server<'_> {
    /// Where a run's transcript is written.
    pub fn transcript(&self, l: &Layout) -> PathBuf {
        match self {
            Server::Record { out, .. } => out.join("transcript.jsonl"),
            _ => l.transcript(),
        }
    }
}

/// Where a run lives.
pub struct Layout {
    pub root: PathBuf,
    pub state: PathBuf,
    pub codex_home: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> std::io::Result<Layout> {
        let l = Layout::at(root);
        for d in [&l.state, &l.codex_home, &l.home, &l.work] {
            std::fs::create_dir_all(d)?;
        }
        Ok(l)
    }

    /// The layout under `root`, as [`Layout::new`] makes it, without touching the disk.
    pub fn at(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            state: root.join("state"),
            codex_home: root.join("codex_home"),
            home: root.join("home"),
            work: root.join("work"),
        }
    }

    pub fn transcript(&self) -> PathBuf {
        self.state.join("transcript.jsonl")
    }
}

/// `CODEX_HOME/config.toml` for a case. The provider's `base_url` is set by `scripted`, which
/// knows the model's port; the fake never connects.
pub fn config_toml(case: &Case) -> String {
    let mut extra = case.config_extra.clone();
    if !extra.is_empty() && !extra.ends_with('\n') {
        extra.push('\n');
    }
    // An empty approval policy or sandbox mode: not configured (codex's defaults).
    let line = |k: &str, v: &str| {
        if v.is_empty() {
            String::new()
        } else {
            format!("{k} = {v:?}\n")
        }
    };
    let p = case.provider.as_deref().unwrap_or(PROVIDER);
    extra
        + &format!("model = {:?}\nmodel_provider = {p:?}\n", case.model)
        + &line("approval_policy", &case.approval_policy)
        + &line("sandbox_mode", &case.sandbox_mode)
        + &format!(
            "\n[model_providers.{p}]\nname = {p:?}\n\
             base_url = \"http://127.0.0.1:9/v1\"\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = {sr}\n",
            sr = case.stream_retries,
        )
        + &features_toml(&case.features)
}

/// The `config.toml` a test install of the Python and Node helpers writes into `CODEX_HOME` (both
/// read it from `codex-wire config-toml`): a default case's, with the `request_permissions_tool`
/// feature on (off by default on the real server).
pub fn install_config_toml() -> String {
    let case: Case = serde_json::from_value(json!({
        "name": "install", "scenario": {}, "features": ["request_permissions_tool"]}))
    .expect("a default case deserializes");
    config_toml(&case)
}

fn features_toml(features: &[String]) -> String {
    if features.is_empty() {
        return String::new();
    }
    let mut t = String::from("\n[features]\n");
    for f in features {
        t.push_str(&format!("{f} = true\n"));
    }
    t
}

/// A running server and the client's view of it.
pub(crate) struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) rx: Receiver<Value>,
    next_id: i64,
}

impl Peer {
    /// `provider`: the provider the real server is pointed at the scripted model through
    /// (`None`: `scripted`'s own).
    pub(crate) fn spawn(
        server: &Server,
        l: &Layout,
        args: &[String],
        provider: Option<&str>,
    ) -> Result<Peer, String> {
        let mut cmd = match server {
            Server::Fake { bin, version } => {
                let mut c = Command::new(bin);
                c.arg("fake").arg("--state-dir").arg(&l.state);
                if let Some(v) = version {
                    c.arg("--codex-version").arg(v);
                }
                c.arg("app-server").args(args);
                c
            }
            Server::Real { bin, codex } => {
                let mut c = Command::new(bin);
                c.arg("scripted").arg("--state-dir").arg(&l.state);
                if let Some(p) = provider.filter(|p| *p != PROVIDER) {
                    c.arg("--provider").arg(p);
                }
                c.arg("--").arg(codex).arg("app-server").args(args);
                c
            }
            Server::Record {
                bin,
                codex,
                out,
                upstream,
            } => {
                let mut c = Command::new(bin);
                c.arg("record")
                    .arg("--out")
                    .arg(out)
                    .arg("--upstream")
                    .arg(upstream)
                    .arg("--")
                    .arg(codex)
                    .arg("app-server")
                    .args(args);
                c
            }
        };
        // Only what the case sets: no credentials or settings of the machine leak in.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            // codex-wire's own turn-facts knob (`cargo xtask add-version`) is not the machine's.
            let ours = k == crate::fake::TURN_FACTS_ENV;
            if (k.starts_with("CODEX") || k.starts_with("OPENAI") || k == "RUST_LOG") && !ours {
                cmd.env_remove(&k);
            }
        }
        let mut child = cmd
            .env("HOME", &l.home)
            .env("CODEX_HOME", &l.codex_home)
            .current_dir(&l.work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Peer {
            stdin: child.stdin.take(),
            child,
            rx,
            next_id: 0,
        })
    }

    fn send(&mut self, msg: &Value) -> Result<(), String> {
        self.send_bytes(format!("{msg}\n").as_bytes())
    }

    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) -> Result<(), String> {
        let w = self.stdin.as_mut().ok_or("stdin closed")?;
        w.write_all(bytes)
            .and_then(|_| w.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// Ends the server with `sig` as the recording's ended (SIGKILL: as a crash, the codex
    /// process itself; another signal goes to the process the client started, which passes
    /// it on).
    pub(crate) fn signal(mut self, server: &Server, l: &Layout, sig: i32) {
        if sig == libc::SIGKILL {
            return self.crash(server, l);
        }
        // SAFETY: kill(2) on a child this run started.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
        self.end();
    }

    fn request(&mut self, method: &str, params: Value) -> Result<i64, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Kills the server process outright, as a crash would: the fake itself, or the real codex
    /// under `scripted` (its pid from the transcript's last `spawn`; the wrapper then ends).
    fn crash(&mut self, server: &Server, l: &Layout) {
        let pid = match server {
            Server::Fake { .. } => Some(self.child.id() as i32),
            Server::Real { .. } | Server::Record { .. } => {
                std::fs::read_to_string(server.transcript(l))
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .find(|e| e["event"] == "spawn")
                    .and_then(|e| e["pid"].as_i64())
                    .map(|p| p as i32)
            }
        };
        if let Some(pid) = pid {
            // SAFETY: kill(2) on a pid this run started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        self.end();
    }

    pub(crate) fn close(mut self) {
        self.end();
    }

    /// Closes the server's input and waits for it to end (10 s, then it is killed).
    fn end(&mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The client's state across a case.
struct Client<'a> {
    case: &'a Case,
    decisions: std::collections::VecDeque<Value>,
    thread: Option<String>,
}

/// How long any one wait may take before the run is declared stuck (unless the case says).
const WAIT: Duration = Duration::from_secs(60);
/// Late notifications are collected this long after the last turn.
const GRACE: Duration = Duration::from_millis(500);

impl Client<'_> {
    /// Reads until `done(msg)`, answering server requests and running the case's interrupt
    /// and steer triggers.
    fn pump(
        &mut self,
        p: &mut Peer,
        done: &mut dyn FnMut(&Value) -> bool,
    ) -> Result<Value, String> {
        let wait = self.case.wait_secs.map_or(WAIT, Duration::from_secs);
        let deadline = Instant::now() + wait;
        let mut turn: Option<String> = None;
        let (mut interrupted, mut steered) = (false, false);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg =
                p.rx.recv_timeout(left)
                    .map_err(|_| "the server went quiet".to_string())?;
            let method = msg["method"].as_str().unwrap_or_default().to_string();
            if msg.get("id").is_some() && !method.is_empty() {
                let answer = if method.ends_with("requestApproval") {
                    let d = self
                        .decisions
                        .pop_front()
                        .unwrap_or_else(|| json!("accept"));
                    answer_to(&msg["id"], &d)
                } else {
                    Some(json!({"id": msg["id"],
                                "result": self.case.replies.get(&method).cloned()
                                    .unwrap_or(json!({}))}))
                };
                match answer {
                    Some(a) => p.send(&a)?,
                    // No answer: the client interrupts the turn instead.
                    None => {
                        if let (Some(t), false) = (&turn, interrupted) {
                            interrupted = true;
                            let thread = self.thread.clone().unwrap_or_default();
                            p.request("turn/interrupt", json!({"threadId": thread, "turnId": t}))?;
                        }
                    }
                }
            }
            if method == "turn/started" {
                turn = msg["params"]["turn"]["id"].as_str().map(str::to_string);
            }
            let thread = self.thread.clone().unwrap_or_default();
            if let (Some(on), Some(t), false) = (&self.case.interrupt_on, &turn, interrupted) {
                if matches_trigger(on, &msg) {
                    interrupted = true;
                    p.request("turn/interrupt", json!({"threadId": thread, "turnId": t}))?;
                }
            }
            if let (Some(on), Some(text), Some(t), false) =
                (&self.case.steer_on, &self.case.steer, &turn, steered)
            {
                if matches_trigger(on, &msg) {
                    steered = true;
                    p.request(
                        "turn/steer",
                        json!({"threadId": thread, "expectedTurnId": t,
                               "input": [{"type": "text", "text": text}]}),
                    )?;
                }
            }
            if done(&msg) {
                return Ok(msg);
            }
        }
    }

    fn response(&mut self, p: &mut Peer, id: i64) -> Result<Value, String> {
        self.pump(p, &mut |m| {
            m["id"] == json!(id) && m.get("method").is_none()
        })
    }

    fn initialize(&mut self, p: &mut Peer) -> Result<(), String> {
        let params = self.case.initialize.clone().unwrap_or_else(|| {
            json!({"clientInfo": {"name": "codex-wire-harness", "title": null, "version": "1"},
                   "capabilities": {"experimentalApi": true}})
        });
        let id = p.request("initialize", params)?;
        self.response(p, id)?;
        p.send(&json!({"method": "initialized"}))
    }
}

/// The client's answer to an approval request: `{"decision": d}`, or what a `$` form asks for
/// (see [`Case::decisions`]); `None`: no answer.
fn answer_to(id: &Value, d: &Value) -> Option<Value> {
    if d == "$none" {
        return None;
    }
    if let Some(e) = d.get("$error") {
        return Some(json!({"id": id, "error": e}));
    }
    if let Some(r) = d.get("$result") {
        return Some(json!({"id": id, "result": r}));
    }
    Some(json!({"id": id, "result": {"decision": d}}))
}

/// Fills the placeholders of params the case gives: `${work}` (at the start of a string) is
/// the run's work dir, `${root}` its root; an object member whose value is `${absent}` is left
/// out.
fn place(v: &mut Value, l: &Layout) {
    match v {
        Value::String(s) => {
            for (k, dir) in [("${work}", &l.work), ("${root}", &l.root)] {
                if let Some(rest) = s.strip_prefix(k) {
                    *s = format!("{}{rest}", dir.display());
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| place(x, l)),
        Value::Object(o) => {
            o.retain(|_, x| x != "${absent}");
            o.values_mut().for_each(|x| place(x, l));
        }
        _ => {}
    }
}

/// `base` with `over`'s members, placeholders filled.
fn params(
    base: serde_json::Map<String, Value>,
    over: &serde_json::Map<String, Value>,
    l: &Layout,
) -> Value {
    let mut m = base;
    m.extend(over.clone());
    let mut v = Value::Object(m);
    place(&mut v, l);
    v
}

/// Fills an `after` request's placeholders: the string `${thread}` is the thread's id,
/// `${nextCursor}` / `${backwardsCursor}` the previous request's result's cursor, `${revision}`
/// its read state's revision.
fn substitute(v: &mut Value, thread: &str, previous: &Value) {
    match v {
        Value::String(s) if s == "${thread}" => *v = json!(thread),
        Value::String(s) if s == "${nextCursor}" => *v = previous["nextCursor"].clone(),
        Value::String(s) if s == "${backwardsCursor}" => *v = previous["backwardsCursor"].clone(),
        Value::String(s) if s == "${revision}" => *v = previous["readState"]["revision"].clone(),
        Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, thread, previous)),
        Value::Object(o) => o.values_mut().for_each(|x| substitute(x, thread, previous)),
        _ => {}
    }
}

/// `method` or `method:itemType` (e.g. `item/completed:agentMessage`).
fn matches_trigger(trigger: &str, msg: &Value) -> bool {
    let (method, item) = match trigger.split_once(':') {
        Some((m, i)) => (m, Some(i)),
        None => (trigger, None),
    };
    msg["method"] == method && item.is_none_or(|i| msg["params"]["item"]["type"] == i)
}

/// Runs `case` against `server` under `root` (created fresh); returns the transcript's path.
pub fn run(case: &Case, server: &Server, root: &Path) -> Result<PathBuf, String> {
    let (path, error) = run_outcome(case, server, root)?;
    error.map_or(Ok(path), Err)
}

/// Runs `case` against `server` under `root` (created fresh). The transcript's path, and how
/// the client's part failed if it did (the server went quiet, a request was refused): the
/// transcript then holds what happened up to there, which is comparable too. `Err`: the run
/// could not be set up.
pub fn run_outcome(
    case: &Case,
    server: &Server,
    root: &Path,
) -> Result<(PathBuf, Option<String>), String> {
    let _ = std::fs::remove_dir_all(root);
    for p in &case.cleanup {
        let _ = std::fs::remove_file(p);
    }
    let l = Layout::new(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let io = |e: std::io::Error| e.to_string();
    if let Some(rec) = &case.recorded {
        for d in &rec.dirs {
            std::fs::create_dir_all(l.work.join(d)).map_err(io)?;
        }
        // The model's script names the recording's paths (a command's workdir, a patch's).
        let scenario = crate::replay::relocate(&case.scenario.to_string(), rec, &l);
        std::fs::write(l.state.join("scenario.json"), scenario).map_err(io)?;
        let error = crate::replay::play(case, rec, server, &l).err();
        return Ok((server.transcript(&l), error));
    }
    for d in &case.dirs {
        std::fs::create_dir_all(l.work.join(d)).map_err(io)?;
    }
    std::fs::write(l.state.join("scenario.json"), case.scenario.to_string()).map_err(io)?;
    std::fs::write(l.codex_home.join("config.toml"), config_toml(case)).map_err(io)?;
    let mut c = Client {
        case,
        decisions: case.decisions.iter().cloned().collect(),
        thread: None,
    };
    let mut p = Peer::spawn(server, &l, &case.args, case.provider.as_deref())?;
    let result = (|| -> Result<(), String> {
        c.initialize(&mut p)?;
        let mut base = serde_json::Map::new();
        base.insert("cwd".into(), json!(l.work));
        let id = p.request("thread/start", params(base, &case.thread_params, &l))?;
        let r = c.response(&mut p, id)?;
        c.thread = r["result"]["thread"]["id"].as_str().map(str::to_string);
        let thread = c
            .thread
            .clone()
            .ok_or_else(|| format!("thread/start failed: {r}"))?;
        if let Some(objective) = &case.goal {
            p.request(
                "thread/goal/set",
                json!({"threadId": thread, "objective": objective}),
            )?;
            // Server turns follow one another while the goal stays active.
            let mut active = true;
            c.pump(&mut p, &mut |m| {
                if m["method"] == "thread/goal/updated" {
                    active = m["params"]["goal"]["status"] == "active";
                }
                if m["method"] == "thread/goal/cleared" {
                    active = false;
                }
                m["method"] == "turn/completed" && !active
            })?;
        }
        for (n, input) in case.inputs.iter().enumerate() {
            if case.restart_before_turn == Some(n) {
                std::thread::sleep(GRACE);
                std::mem::replace(
                    &mut p,
                    Peer::spawn(server, &l, &case.args, case.provider.as_deref())?,
                )
                .close();
                c.initialize(&mut p)?;
                let mut base = serde_json::Map::new();
                base.insert("threadId".into(), json!(thread));
                base.insert("excludeTurns".into(), json!(true));
                let id = p.request("thread/resume", params(base, &case.resume_params, &l))?;
                c.response(&mut p, id)?;
            }
            let mut base = serde_json::Map::new();
            base.insert("threadId".into(), json!(thread));
            base.insert("input".into(), input.items());
            base.extend(case.turn_params.clone());
            let each = case.turn_params_each.get(n).cloned().unwrap_or_default();
            let tid = p.request("turn/start", params(base, &each, &l))?;
            let kill_on = case.kill_on.as_deref().filter(|_| n == case.kill_in_turn);
            let end = c.pump(&mut p, &mut |m| {
                m["method"] == "turn/completed"
                    || kill_on.is_some_and(|k| matches_trigger(k, m))
                    // A refused turn/start: no turn to wait for.
                    || (m["id"] == json!(tid) && m.get("error").is_some())
            })?;
            if end.get("error").is_some() {
                continue;
            }
            if end["method"] != "turn/completed" {
                // The real server persists some state (the thread's read state) from background
                // tasks a moment after the trigger: a crash in that moment loses it or not, by
                // timing. Crashing a little later makes the run repeatable.
                std::thread::sleep(Duration::from_millis(300));
                p.crash(server, &l);
                p = Peer::spawn(server, &l, &case.args, case.provider.as_deref())?;
                c.initialize(&mut p)?;
                let id = p.request("thread/resume", json!({"threadId": thread}))?;
                c.response(&mut p, id)?;
            }
        }
        let mut last = Value::Null;
        for req in &case.after {
            let mut params = req["params"].clone();
            substitute(&mut params, &thread, &last["result"]);
            place(&mut params, &l);
            let method = req["method"]
                .as_str()
                .ok_or("an `after` request without a method")?;
            let id = p.request(method, params)?;
            last = c.response(&mut p, id)?;
        }
        if case.compact {
            p.request("thread/compact/start", json!({"threadId": thread}))?;
            c.pump(&mut p, &mut |m| m["method"] == "turn/completed")?;
        }
        // Late notifications, then a clean end of input.
        let end = Instant::now() + GRACE;
        while let Ok(m) =
            p.rx.recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            drop(m);
        }
        Ok(())
    })();
    p.close();
    Ok((server.transcript(&l), result.err()))
}

/// `$CARGO` (else `cargo`) for a build started from inside a cargo-run program (an xtask, a
/// test): without the variables cargo sets for the program it runs. A nested build inherits them
/// otherwise, and a build script that tracks one (ring's tracks `CARGO_MANIFEST_DIR`) runs again,
/// with every crate above it rebuilt, each time a build starts from a test, an xtask or a shell.
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    without_cargo_run_env(&mut cmd);
    cmd
}

/// Removes from `cmd` the variables cargo sets for a program it runs (see [`cargo`]); a tool
/// that runs cargo itself (maturin) needs the same.
pub fn without_cargo_run_env(cmd: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let per_package = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
            || matches!(
                name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
            );
        if per_package {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// The real codex binary of the newest supported version for tests and examples:
/// `$CODEX_REAL_BIN`, else `$CODEX_WIRE_CODEX` (set by `cargo xtask test`), else the one `cargo
/// xtask` installs under `repo`'s `target/codex-cache/<version>/`. Missing: an error that says
/// how to get it.
pub fn real_codex(repo: &Path) -> Result<PathBuf, String> {
    match ["CODEX_REAL_BIN", "CODEX_WIRE_CODEX"]
        .iter()
        .find_map(std::env::var_os)
    {
        Some(p) => found(PathBuf::from(p)),
        None => real_codex_of(repo, crate::newest().version),
    }
}

/// The real codex binary of `version`, as `cargo xtask test` installs it under `repo`'s
/// `target/codex-cache/<version>/`.
pub fn real_codex_of(repo: &Path, version: &str) -> Result<PathBuf, String> {
    found(
        repo.join("target/codex-cache")
            .join(version)
            .join("node_modules/.bin/codex"),
    )
}

fn found(p: PathBuf) -> Result<PathBuf, String> {
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "the real codex binary is missing at {} (`cargo xtask test` or `cargo xtask schema` \
             installs it; or set CODEX_REAL_BIN)",
            p.display()
        ))
    }
}

/// `f` over `items`, `workers` at a time, the results in the items' order: for runs that
/// mostly wait (a server's grace windows, a scripted model's stream), not for CPU.
pub fn run_parallel<T: Sync, R: Send>(
    workers: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { return };
                let r = f(item);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every item ran")
        })
        .collect()
}

/// The cases of a corpus directory (`*.case.json`), sorted by name.
pub fn load_cases(dir: &Path) -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.to_string_lossy().ends_with(".case.json") {
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            out.push(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?);
        }
    }
    out.sort_by(|a: &Case, b: &Case| a.name.cmp(&b.name));
    Ok(out)
}
