//! A turn case: the model's script and the client's part — a scripted client (what it sends,
//! how it answers) or a recorded one (`codex-wire record`'s lines, played again) — and the
//! `config.toml` a case's servers get. Plain data, for the rooms above it.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Files written before the server starts: a path starting with a placeholder of
    /// `after`'s params (`${work}`, `${root}`, `${codex_home}`, `${home}`) → its text (skills,
    /// marketplaces, a project's files on disk).
    #[serde(default)]
    pub files: std::collections::BTreeMap<String, String>,
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
    /// the placeholders), each answered before the next: what a client reads back. With
    /// `"wait_for": METHOD`, also that notification (in either order) before the next; with
    /// `"delay_ms": N`, sent N ms after the one before (what a server does meanwhile).
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
    /// The oldest codex version the case applies to (its methods or settings do not exist
    /// before it: 85b's `gcp` provider, which 0.163.0 refuses to start with). Older versions
    /// have no recording of it, and the turn test lists it as not applicable there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
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
    /// absent; `{"$error": {code, message}}` answers with that JSON-RPC error instead.
    #[serde(default)]
    pub replies: serde_json::Map<String, Value>,
    /// A recorded client (`codex-wire record`): played instead of the fields above, which
    /// describe a client by what it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Recorded>,
}

impl Case {
    /// Whether the case applies to a codex version (`since` or newer).
    pub fn applies_to(&self, version: &str) -> bool {
        let key = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
        self.since.as_deref().is_none_or(|s| key(version) >= key(s))
    }
}

/// A turn's input: `"text"` is `[{"type": "text", "text": "text"}]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Items(Vec<Value>),
}

impl Input {
    pub fn items(&self) -> Value {
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
