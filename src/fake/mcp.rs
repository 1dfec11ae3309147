//! The MCP servers a configuration names, started as codex starts them: each enabled stdio
//! server of `mcp_servers` spawned (in the thread's cwd for a thread, else in the process's),
//! asked `initialize` and `tools/list` — and its resources for `mcpServerStatus/list` — over
//! newline-delimited JSON-RPC, with codex's client info and its failure words (turn scenario
//! 258, recorded on every version; the server's side of the exchange read off a logging MCP
//! server run under the real binary). A hand-written client: the exchange is four lines and
//! the product is its words, not a protocol library's.

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long codex takes to report a server it cannot spawn: the least of 11 recorded (4.7 ms;
/// up to 48 ms; turn scenario 258b, fidelity s48480001_0064 and _0219, two runs of a turn
/// started at once), so what the client sends meanwhile is answered first.
const SPAWN_FAILURE: Duration = Duration::from_micros(4700);

/// codex's `startup_timeout_sec` when the server's table has none.
const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// One configured stdio server.
#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    pub name: String,
    /// `enabled = false`: listed, never started.
    pub enabled: bool,
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
    timeout: Duration,
}

/// What `mcp_servers` names, in the file's order, or the name of the first one the fake does
/// not start (a `url` server: its transport is HTTP).
pub fn configured(config: &Map<String, Value>) -> Result<Vec<Server>, String> {
    let Some(servers) = config.get("mcp_servers").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, t) in servers {
        let Some(command) = t["command"].as_str() else {
            return Err(name.clone());
        };
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let env = t["env"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let timeout = t["startup_timeout_sec"]
            .as_f64()
            .map(Duration::from_secs_f64)
            .or_else(|| t["startup_timeout_ms"].as_u64().map(Duration::from_millis))
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT);
        out.push(Server {
            name: name.clone(),
            enabled: t["enabled"] != false,
            command: command.to_string(),
            args: strings(&t["args"]),
            env,
            cwd: t["cwd"].as_str().map(PathBuf::from),
            timeout,
        });
    }
    Ok(out)
}

/// Why a server did not start, as codex words it after `MCP startup failed: `.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The handshake took longer than the server's `startup_timeout_sec`.
    TimedOut(Duration),
    Other(String),
}

impl Failure {
    /// The `mcpServer/startupStatus/updated` error of a thread's server.
    pub fn startup_error(&self, server: &Server) -> String {
        match self {
            // codex prints the whole seconds of the configured timeout.
            Failure::TimedOut(t) => format!(
                "MCP client for `{0}` timed out after {1} seconds. Add or adjust \
                 `startup_timeout_sec` in your config.toml:\n[mcp_servers.{0}]\n\
                 startup_timeout_sec = XX",
                server.name,
                t.as_secs()
            ),
            Failure::Other(_) => format!(
                "MCP client for `{}` failed to start: {}",
                server.name,
                self.tools_error()
            ),
        }
    }

    /// `mcpServerStatus/list`'s `toolsError`.
    pub fn tools_error(&self) -> String {
        match self {
            // The time left when the deadline passed: codex's own figure is a hair under the
            // timeout, and differs between its runs.
            Failure::TimedOut(t) => {
                format!("MCP startup failed: timed out handshaking with MCP server after {t:?}: deadline has elapsed")
            }
            Failure::Other(why) => format!("MCP startup failed: {why}"),
        }
    }
}

/// A running server: its process, what it said at the handshake.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: i64,
    pub info: Value,
    pub capabilities: Value,
    pub tools: Map<String, Value>,
    pub tool_list_meta: Value,
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a request ended short of a result.
enum Ended {
    Closed,
    Write(std::io::Error),
    TimedOut,
    Error(Value),
}

/// The transport's type as codex's `Send message error` names it (`transport_type`: 0.163.0's
/// unwrapped launcher).
fn send_error(e: &std::io::Error, transport: &str) -> String {
    let one = format!(
        "Send message error Transport [{transport}] error: {e}, when send initialize request"
    );
    format!("handshaking with MCP server failed: {one}: {one}")
}

impl Client {
    /// Spawns the server and shakes hands: `initialize` (a thread's client also offers codex's
    /// `codex/auth-change` extension), `notifications/initialized`, then `tools/list`.
    pub fn start(
        server: &Server,
        cwd: Option<&Path>,
        for_thread: bool,
        version: &str,
        transport: &str,
    ) -> (Option<Client>, Result<(), Failure>) {
        Client::start_then(server, cwd, for_thread, version, transport, || {})
    }

    /// [`Client::start`], calling `spawned` once the process runs (before the handshake).
    pub fn start_then(
        server: &Server,
        cwd: Option<&Path>,
        for_thread: bool,
        version: &str,
        transport: &str,
        spawned: impl FnOnce(),
    ) -> (Option<Client>, Result<(), Failure>) {
        let deadline = Instant::now() + server.timeout;
        let mut cmd = Command::new(&server.command);
        cmd.args(&server.args)
            .envs(server.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        crate::fake::shell::signals_as_codex_gives_them(&mut cmd);
        if let Some(dir) = server.cwd.as_deref().or(cwd) {
            cmd.current_dir(dir);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                std::thread::sleep(SPAWN_FAILURE);
                return (None, Err(Failure::Other(e.to_string())));
            }
        };
        spawned();
        CONNECTED.store(true, std::sync::atomic::Ordering::SeqCst);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return (None, Err(Failure::Other("no stdio".into())));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // A line that is not JSON-RPC is skipped, as rmcp's codec skips it.
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            lines,
            next_id: 0,
            info: Value::Null,
            capabilities: Value::Null,
            tools: Map::new(),
            tool_list_meta: Value::Null,
        };
        let mut capabilities = json!({"elicitation": {"form": {}, "url": {}}});
        if for_thread {
            capabilities = json!({"experimental": {"codex/auth-change": {}},
                                  "elicitation": {"form": {}, "url": {}}});
        }
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                          "clientInfo": {"name": "codex-mcp-client", "title": "Codex",
                                         "version": version}});
        let r = match c.request("initialize", init, deadline) {
            Ok(r) => r,
            Err(Ended::TimedOut) => return (Some(c), Err(Failure::TimedOut(server.timeout))),
            Err(Ended::Closed) => {
                let why = "handshaking with MCP server failed: connection closed: initialize \
                           response: connection closed: initialize response";
                return (Some(c), Err(Failure::Other(why.into())));
            }
            Err(Ended::Write(e)) => {
                return (Some(c), Err(Failure::Other(send_error(&e, transport))))
            }
            Err(Ended::Error(e)) => {
                let why = format!("handshaking with MCP server failed: {}", e["message"]);
                return (Some(c), Err(Failure::Other(why)));
            }
        };
        c.info = r["serverInfo"].clone();
        c.capabilities = r["capabilities"].clone();
        if let Err(e) = c.notify("notifications/initialized") {
            return (Some(c), Err(Failure::Other(e.to_string())));
        }
        match c.request(
            "tools/list",
            json!({"_meta": {"progressToken": 0}}),
            deadline,
        ) {
            Ok(r) => {
                for tool in r["tools"].as_array().into_iter().flatten() {
                    if let Some(name) = tool["name"].as_str() {
                        c.tools.insert(name.to_string(), tool.clone());
                    }
                }
                c.tool_list_meta = r["_meta"].clone();
                (Some(c), Ok(()))
            }
            Err(Ended::TimedOut) => (Some(c), Err(Failure::TimedOut(server.timeout))),
            Err(_) => (Some(c), Err(Failure::Other("failed to list tools".into()))),
        }
    }

    /// `resources/list` then `resources/templates/list` (a server that refuses either has
    /// none: codex lists them empty).
    pub fn resources(&mut self, deadline: Instant) -> (Value, Value) {
        let mut list = |method: &str, key: &str, token: i64| {
            self.request(method, json!({"_meta": {"progressToken": token}}), deadline)
                .ok()
                .map_or(json!([]), |r| r[key].clone())
        };
        let resources = list("resources/list", "resources", 1);
        let templates = list("resources/templates/list", "resourceTemplates", 2);
        (resources, templates)
    }

    fn notify(&mut self, method: &str) -> std::io::Result<()> {
        let line = json!({"jsonrpc": "2.0", "method": method});
        writeln!(self.stdin, "{line}")?;
        self.stdin.flush()
    }

    fn request(&mut self, method: &str, params: Value, deadline: Instant) -> Result<Value, Ended> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(Ended::Write)?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(msg) if msg["id"] == id => {
                    if !msg["error"].is_null() {
                        return Err(Ended::Error(msg["error"].clone()));
                    }
                    return Ok(msg["result"].clone());
                }
                // Requests and notifications of the server's own are not answered.
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return Err(Ended::TimedOut),
                Err(RecvTimeoutError::Disconnected) => return Err(Ended::Closed),
            }
        }
    }
}

/// Where a thread's server stands.
pub enum State {
    /// Announced, its process not spawned yet.
    Starting,
    /// Spawned, its handshake under way.
    Launched,
    /// The server runs as long as its thread's session (as codex keeps it).
    Ready(Box<Client>),
    Failed,
}

impl State {
    /// `mcpServerStatus/list`'s `runtimeStatus` of a thread's server.
    pub fn runtime_status(&self) -> &'static str {
        match self {
            State::Starting | State::Launched => "starting",
            State::Ready(_) => "connected",
            State::Failed => "failed",
        }
    }
}

/// Every loaded thread's servers, by thread id, then by name.
pub fn threads() -> MutexGuard<'static, HashMap<String, HashMap<String, State>>> {
    static THREADS: std::sync::OnceLock<Mutex<HashMap<String, HashMap<String, State>>>> =
        std::sync::OnceLock::new();
    THREADS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Each thread's servers' latest start, by (thread, name): a restart supersedes a start under
/// way, whose end is then dropped unannounced (codex cancels it).
fn starts() -> MutexGuard<'static, HashMap<(String, String), u64>> {
    static STARTS: std::sync::OnceLock<Mutex<HashMap<(String, String), u64>>> =
        std::sync::OnceLock::new();
    STARTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// A new start of a thread's server: its token.
pub fn next_start(thread_id: &str, name: &str) -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let token = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    starts().insert((thread_id.to_string(), name.to_string()), token);
    token
}

/// Whether `token` is the server's latest start.
pub fn is_latest_start(thread_id: &str, name: &str, token: u64) -> bool {
    starts().get(&(thread_id.to_string(), name.to_string())) == Some(&token)
}

/// A server was spawned in this process: codex gauges its live MCP connections from then on.
static CONNECTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `server/diagnostics`'s `mcp.connections.live`: the threads' servers running, once any was
/// spawned (fidelity s49490001_0671: 1 for a thread's running server).
pub fn connections_gauge() -> Option<usize> {
    if !CONNECTED.load(std::sync::atomic::Ordering::SeqCst) {
        return None;
    }
    let threads = threads();
    let live = threads
        .values()
        .flat_map(|s| s.values())
        .filter(|s| matches!(s, State::Launched | State::Ready(_)))
        .count();
    Some(live)
}

/// Ends every thread's servers (the process is going).
pub fn stop_all() {
    let all = std::mem::take(&mut *threads());
    drop(all);
}

/// Returns once each of the thread's servers is past `stage` (each ends `ready` or `failed`
/// within its startup timeout).
fn wait_past(thread_id: &str, stage: fn(&State) -> bool) {
    while threads()
        .get(thread_id)
        .is_some_and(|s| s.values().any(stage))
    {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What a turn's input waits for: every server ready or failed.
pub fn wait_started(thread_id: &str) {
    wait_past(thread_id, |s| {
        matches!(s, State::Starting | State::Launched)
    });
}

/// What a turn's start waits for: every server spawned or failed to (fidelity s49490001_0337,
/// s48480001_0219, both real runs each: a program that cannot be spawned is reported before the
/// turn starts; a spawned one's `ready` comes after it, s48480001_0166).
pub fn wait_launched(thread_id: &str) {
    wait_past(thread_id, |s| matches!(s, State::Starting));
}

/// One entry of `mcpServerStatus/list` for a server asked afresh (`full`: its resources too).
pub fn status_entry(
    server: &Server,
    cwd: Option<&Path>,
    full: bool,
    version: &str,
    transport: &str,
) -> Value {
    let deadline = Instant::now() + server.timeout;
    if !server.enabled {
        return blank_entry(server);
    }
    match Client::start(server, cwd, false, version, transport) {
        (Some(mut c), Ok(())) => {
            let (resources, templates) = if full {
                c.resources(deadline)
            } else {
                (json!([]), json!([]))
            };
            client_entry(server, &c, resources, templates)
        }
        (_, Err(f)) => {
            let mut entry = blank_entry(server);
            entry["toolsError"] = json!(f.tools_error());
            entry
        }
        (None, Ok(())) => blank_entry(server),
    }
}

/// A server's entry with nothing known of it.
fn blank_entry(server: &Server) -> Value {
    json!({"name": server.name, "environmentId": null, "authStatus": "unsupported",
           "tools": {}, "resources": [], "resourceTemplates": []})
}

/// A server's entry from a client that shook hands with it.
pub fn client_entry(server: &Server, c: &Client, resources: Value, templates: Value) -> Value {
    let mut entry = blank_entry(server);
    entry["resources"] = resources;
    entry["resourceTemplates"] = templates;
    entry["serverInfo"] = c.info.clone();
    entry["serverCapabilities"] = capabilities(&c.capabilities);
    entry["toolListMeta"] = c.tool_list_meta.clone();
    entry["tools"] = Value::Object(c.tools.clone());
    entry
}

/// A server's capabilities in the order of rmcp's `ServerCapabilities` fields, which codex
/// writes them in (seen in turn scenario 258: `resources` before `tools` whatever the server
/// sent); keys it does not know keep the server's order after them.
fn capabilities(given: &Value) -> Value {
    const ORDER: [&str; 8] = [
        "experimental",
        "extensions",
        "logging",
        "completions",
        "prompts",
        "resources",
        "tools",
        "tasks",
    ];
    let Some(o) = given.as_object() else {
        return given.clone();
    };
    let mut out = Map::new();
    for k in ORDER {
        if let Some(v) = o.get(k) {
            out.insert(k.to_string(), v.clone());
        }
    }
    for (k, v) in o {
        if !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml: &str) -> Map<String, Value> {
        let t: toml::Table = toml::from_str(toml).unwrap();
        serde_json::to_value(t)
            .unwrap()
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn the_stdio_servers_in_the_files_order() {
        let c = config(
            "[mcp_servers.b]\ncommand = \"x\"\nargs = [\"1\"]\nstartup_timeout_sec = 2.5\n\
             [mcp_servers.off]\ncommand = \"y\"\nenabled = false\n\
             [mcp_servers.a]\ncommand = \"z\"\nenv = { K = \"v\" }\n",
        );
        let s = configured(&c).unwrap();
        let names: Vec<_> = s.iter().map(|s| (s.name.as_str(), s.enabled)).collect();
        assert_eq!(names, [("b", true), ("off", false), ("a", true)]);
        assert_eq!(s[0].timeout, Duration::from_millis(2500));
        assert_eq!(s[2].timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(s[2].env, [("K".to_string(), "v".to_string())]);
        let http = config("[mcp_servers.h]\nurl = \"http://localhost:1\"\n");
        assert_eq!(configured(&http), Err("h".to_string()));
    }

    #[test]
    fn a_server_that_never_answers_times_out_and_is_ended_with_its_client() {
        let c = config(
            "[mcp_servers.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"trap '' TERM HUP; sleep 30\"]\n\
             startup_timeout_sec = 0.2\n",
        );
        let s = &configured(&c).unwrap()[0];
        let (client, r) = Client::start(s, None, true, "0.171.0", "T");
        assert!(matches!(r, Err(Failure::TimedOut(_))));
        let client = client.expect("the spawned server");
        let proc_dir = format!("/proc/{}", client.child.id());
        assert!(std::path::Path::new(&proc_dir).exists());
        drop(client);
        assert!(
            !std::path::Path::new(&proc_dir).exists(),
            "the server outlived its client"
        );
    }

    #[test]
    fn a_missing_program_and_a_silent_one_fail_in_codexs_words() {
        let c = config("[mcp_servers.bad]\ncommand = \"/nonexistent/cmd\"\n");
        let s = &configured(&c).unwrap()[0];
        let (_, r) = Client::start(s, None, true, "0.171.0", "T");
        let f = r.unwrap_err();
        assert_eq!(
            f.startup_error(s),
            "MCP client for `bad` failed to start: MCP startup failed: No such file or \
             directory (os error 2)"
        );
        // Prints a line that is not JSON-RPC, then closes its output.
        let c = config("[mcp_servers.e]\ncommand = \"sh\"\nargs = [\"-c\", \"read x; echo hi\"]\n");
        let s = &configured(&c).unwrap()[0];
        let (_, r) = Client::start(s, None, true, "0.171.0", "T");
        assert_eq!(
            r.unwrap_err().tools_error(),
            "MCP startup failed: handshaking with MCP server failed: connection closed: \
             initialize response: connection closed: initialize response"
        );
    }
}
