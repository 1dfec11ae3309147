//! The scripted model: a loopback stand-in for the OpenAI Responses API (`POST /v1/responses`,
//! server-sent events) that makes the real `codex app-server` play a `scenario.json` offline.
//!
//! One scripted turn per codex turn: a POST whose `client_metadata.turn_id` differs from the
//! previous one starts the next scripted turn (leftovers of the previous one stay unserved, as
//! the fake's cursor skips them); follow-up POSTs of the same turn (after a tool call or a
//! dropped stream) get its next responses. Past the script, the fake's default answer.
//! The cursor lives in the state dir (`model-cursor.json`), so a second server process on the
//! same state dir continues where the first stopped. Every request is logged to
//! `model-requests.jsonl`. See `docs/turns.md`.

pub mod events;
pub mod script;
pub mod step;

use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use script::{Out, Reply};
use step::{Scenario, Script, Step};

/// The provider id codex is pointed at.
pub const PROVIDER: &str = "scripted";
pub const CURSOR_FILE: &str = "model-cursor.json";
pub const LOG_FILE: &str = "model-requests.jsonl";
const LOCK_FILE: &str = "model-cursor.lock";
/// Request bodies larger than this are refused (413); codex's grow with the thread.
const MAX_BODY: u64 = 256 << 20;

/// Where the script stands, shared by every model process on the state dir.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cursor {
    /// POSTs answered (the next response's number `n`, used in ids).
    pub served: u64,
    /// Of those, answered from the script (the rest got the default answer).
    pub scripted: u64,
    /// The scripted turn being played (None before the first POST).
    pub turn: Option<u64>,
    /// The next response of that turn.
    pub response: u64,
    /// codex's turn id of the last POST.
    pub turn_id: Option<String>,
}

impl Cursor {
    pub fn load(state: &Path) -> Cursor {
        std::fs::read(state.join(CURSOR_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
}

fn scenario(state: &Path) -> Scenario {
    std::fs::read(state.join("scenario.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|v| Scenario::from_value(&v))
        .unwrap_or_default()
}

/// The scenario's turns, one per codex turn (a turn's goal `continuations` are turns of their
/// own, as codex runs them).
fn turns(state: &Path) -> Vec<Script> {
    let sc = scenario(state);
    (0..sc.turns.len())
        .filter_map(|i| sc.turn(i))
        .flat_map(|t| t.server_turns())
        .collect()
}

/// Scripted responses not served (yet), over the whole scenario.
pub fn unserved(state: &Path) -> u64 {
    let total: u64 = turns(state)
        .iter()
        .map(|t| t.responses().len() as u64)
        .sum();
    total.saturating_sub(Cursor::load(state).scripted)
}

/// An exclusive lock on the state dir's model files, across processes (flock) — the cursor
/// update and the log line of one request happen together.
struct Locked {
    _file: File,
}

impl Locked {
    fn take(state: &Path) -> io::Result<Locked> {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(state.join(LOCK_FILE))?;
        f.lock()?; // flock: released when the file closes
        Ok(Locked { _file: f })
    }
}

/// Takes the response for a POST of codex turn `turn_id` and advances the cursor.
/// `goal`: the POST continues a thread goal (codex's hidden goal prompt is its last input).
fn next_response(state: &Path, turn_id: Option<&str>, goal: bool) -> io::Result<(u64, Vec<Step>)> {
    let mut c = Cursor::load(state);
    let turns = turns(state);
    let script_of = |t: Option<u64>| {
        t.and_then(|t| turns.get(t as usize))
            .map(Script::responses)
            .unwrap_or_default()
    };
    let new_turn = match turn_id {
        Some(id) => c.turn_id.as_deref() != Some(id),
        // A client that sends no turn id: a turn lasts while it has responses.
        None => c.response >= script_of(c.turn).len() as u64,
    };
    if new_turn || c.turn.is_none() {
        c.turn = Some(c.turn.map_or(0, |t| t + 1));
        c.response = 0;
    }
    c.turn_id = turn_id.map(str::to_string);
    let n = c.served;
    let steps = match script_of(c.turn).get(c.response as usize) {
        Some(r) => {
            c.scripted += 1;
            c.response += 1;
            r.clone()
        }
        // Past the script a goal continuation completes the goal (else codex would go on).
        None if goal && c.response == 0 => {
            c.response += 1;
            Script::default_goal_turn().responses().remove(0)
        }
        None => Script::default_turn().responses().remove(0),
    };
    // A step that does not read is the fake's to report (`scenario_error`); the model plays
    // the others.
    let steps = steps.into_iter().filter_map(Result::ok).collect();
    c.served += 1;
    let tmp = state.join(format!("{CURSOR_FILE}.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(&c).unwrap_or_default())?;
    std::fs::rename(&tmp, state.join(CURSOR_FILE))?;
    Ok((n, steps))
}

/// Whether a request continues a thread goal: its last input is codex's hidden goal prompt.
fn goal_continuation(body: &Value) -> bool {
    let last = body["input"].as_array().and_then(|i| i.last());
    last.is_some_and(|m| {
        m["role"] == "user"
            && m["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("<codex_internal_context source=\"goal\">"))
    })
}

struct Shared {
    state: PathBuf,
    stop: Arc<AtomicBool>,
}

/// A loopback HTTP server that answers each request on a thread of its own (a stream may be
/// held open, by `delay` steps or an upstream still sending). Shared by the scripted model and
/// `codex-wire record`'s pass-through.
pub(crate) struct Loopback {
    server: Arc<tiny_http::Server>,
    /// Set when stopping: a request in flight reads it to cut a long wait short.
    pub(crate) stop: Arc<AtomicBool>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Loopback {
    /// Binds `listen` (e.g. `127.0.0.1:0`) and runs `handle` for each request.
    pub(crate) fn start(
        listen: &str,
        name: &str,
        stop: Arc<AtomicBool>,
        handle: impl Fn(tiny_http::Request) + Send + Sync + 'static,
    ) -> io::Result<Loopback> {
        let server = tiny_http::Server::http(listen).map_err(io::Error::other)?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("not an IP listener"))?;
        let server = Arc::new(server);
        let workers: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let handle = Arc::new(handle);
        let (srv, st, ws) = (server.clone(), stop.clone(), workers.clone());
        let worker_name = format!("{name}-request");
        let acceptor = std::thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || {
                while let Ok(req) = srv.recv() {
                    if st.load(Ordering::SeqCst) {
                        break;
                    }
                    let h = handle.clone();
                    let w = std::thread::Builder::new()
                        .name(worker_name.clone())
                        .spawn(move || h(req));
                    let mut ws = ws.lock().unwrap_or_else(|e| e.into_inner());
                    ws.retain(|w| !w.is_finished());
                    ws.extend(w.ok());
                }
            })?;
        Ok(Loopback {
            server,
            stop,
            workers,
            acceptor: Some(acceptor),
            addr,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, then waits for the requests in flight: all of them, or those that end
    /// within `grace`. The port is free once the last handle to the server drops.
    pub(crate) fn stop(&mut self, grace: Option<Duration>) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|e| e.into_inner()));
        let deadline = grace.map(|g| std::time::Instant::now() + g);
        for w in workers {
            if let Some(d) = deadline {
                while !w.is_finished() && std::time::Instant::now() < d {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if !w.is_finished() {
                    continue;
                }
            }
            let _ = w.join();
        }
    }
}

impl Drop for Loopback {
    /// A server dropped without [`Loopback::stop`] stops accepting and frees its port; requests
    /// in flight are not waited for.
    fn drop(&mut self) {
        self.stop(Some(Duration::ZERO));
    }
}

/// A running model. Dropping it (or [`Model::stop`]) stops serving, waits for its threads and
/// frees the port.
pub struct Model {
    server: Loopback,
}

impl Model {
    /// Binds `listen` (e.g. `127.0.0.1:0`) and serves `state/scenario.json`.
    pub fn start(listen: &str, state: &Path) -> io::Result<Model> {
        std::fs::create_dir_all(state)?;
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            state: state.to_path_buf(),
            stop: stop.clone(),
        });
        // One thread per request: a stream may be held open by `delay` steps.
        let server = Loopback::start(listen, "model", stop, move |req| handle(req, &shared))?;
        Ok(Model { server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// The provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr())
    }

    pub fn stop(self) {}
}

impl Drop for Model {
    fn drop(&mut self) {
        self.server.stop(None);
    }
}

/// The provider settings, as `-c key=value` values for codex (TOML values).
pub fn overrides(base_url: &str, stream_retries: bool) -> Vec<String> {
    let p = format!("model_providers.{PROVIDER}");
    let mut v = vec![
        format!("model_provider={PROVIDER:?}"),
        format!("{p}.name={PROVIDER:?}"),
        format!("{p}.base_url={base_url:?}"),
        format!("{p}.wire_api=\"responses\""),
        format!("{p}.request_max_retries=0"),
    ];
    if stream_retries {
        v.push(format!("{p}.stream_max_retries=0"));
    }
    v
}

/// Whether `config.toml` sets the scripted provider's `stream_max_retries` (a retry case):
/// a `-c` would override it, since codex ranks `-c` above config.toml. A line scan, enough
/// for the table form `[model_providers.scripted]` and the dotted form.
pub fn config_sets_stream_retries(toml: &str) -> bool {
    let key = "stream_max_retries";
    let table = format!("model_providers.{}", PROVIDER);
    let mut section = String::new();
    for line in toml.lines() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            section = h.trim_end_matches(']').trim().replace(' ', "");
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        let k = k.trim().replace(' ', "");
        let full = if section.is_empty() {
            k
        } else {
            format!("{section}.{k}")
        };
        if full == format!("{table}.{key}") {
            return true;
        }
    }
    false
}

/// The keys the command's own `-c key=value` / `--config key=value` set.
pub(crate) fn override_keys(command: &[String]) -> Vec<String> {
    crate::record::overrides::cli_overrides(command)
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// A codex command line with the `-c` overrides that point it at a scripted model at
/// `base_url` appended (the turn harness gives the fake the same, so that both servers have
/// the same session-flags layer): provider `provider`'s address only, else a provider
/// `scripted` of its own, whose retry budget config.toml may set.
pub fn with_model_overrides(
    command: &[String],
    config: &str,
    base_url: &str,
    provider: Option<&str>,
) -> Vec<String> {
    let given = override_keys(command);
    let mut argv = command.to_vec();
    let overrides = match provider {
        // The provider's address only, after the command's own (the later `-c` wins).
        Some(p) => {
            for o in address_overrides(base_url, p) {
                argv.push("-c".into());
                argv.push(o);
            }
            Vec::new()
        }
        None => overrides(base_url, !config_sets_stream_retries(config)),
    };
    for o in overrides {
        // The later `-c` wins: one the caller wrote is kept.
        if !given
            .iter()
            .any(|k| o.split_once('=').is_some_and(|(ok, _)| ok == k))
        {
            argv.push("-c".into());
            argv.push(o);
        }
    }
    argv
}

/// The overrides that point provider `id` of codex's configuration at `base_url`, and nothing
/// else of it: a custom provider's `base_url`, the built-in `openai`'s `openai_base_url`.
pub fn address_overrides(base_url: &str, id: &str) -> Vec<String> {
    if id == "openai" {
        vec![format!("openai_base_url={base_url:?}")]
    } else {
        vec![format!("model_providers.{id}.base_url={base_url:?}")]
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// An HTTP answer with extra headers (`http_error`'s: `Retry-After`, `x-request-id`, …).
fn respond_with(req: tiny_http::Request, status: u16, text: &str, headers: &[(String, String)]) {
    let mut r = tiny_http::Response::from_string(text).with_status_code(status);
    for (k, v) in headers {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            r.add_header(h);
        }
    }
    let _ = req.respond(r);
}

fn respond(req: tiny_http::Request, status: u16, text: &str) {
    let _ = req.respond(tiny_http::Response::from_string(text).with_status_code(status));
}

/// A request's body, and whether it was read whole within [`MAX_BODY`] (more is refused).
pub(crate) fn read_body(req: &mut tiny_http::Request) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    let read = req
        .as_reader()
        .take(MAX_BODY + 1)
        .read_to_end(&mut body)
        .is_ok();
    let whole = read && body.len() as u64 <= MAX_BODY;
    (body, whole)
}

fn handle(mut req: tiny_http::Request, sh: &Shared) {
    let (body, read) = read_body(&mut req);
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let path = req.url().split('?').next().unwrap_or_default().to_string();
    let post = *req.method() == tiny_http::Method::Post;
    let turn_id = parsed
        .as_ref()
        .and_then(|b| b["client_metadata"]["turn_id"].as_str())
        .map(str::to_string);
    let Ok(_lock) = Locked::take(&sh.state) else {
        return respond(req, 500, "cannot lock the model cursor");
    };
    let ok = post && path == "/v1/responses" && read && parsed.is_some();
    // codex's approval reviewer (`approvalsReviewer: "auto_review"`) asks the model too, as a
    // subagent: it gets the scenario's verdict, not the next scripted turn.
    let guardian = req
        .headers()
        .iter()
        .any(|h| h.field.equiv("x-openai-subagent") && h.value.as_str() == "guardian");
    if ok && guardian {
        drop(_lock);
        let verdict = script::guardian_verdict(&scenario(&sh.state));
        return match script::reply(u64::MAX, &[verdict]) {
            Reply::Stream(out) => stream(req, &out, sh),
            Reply::Http {
                status,
                body,
                headers,
            } => respond_with(req, status, &body, &headers),
        };
    }
    let (n, steps) = if ok {
        match next_response(
            &sh.state,
            turn_id.as_deref(),
            parsed.as_ref().is_some_and(goal_continuation),
        ) {
            Ok((n, s)) => (Some(n), s),
            Err(e) => return respond(req, 500, &format!("cannot advance the cursor: {e}")),
        }
    } else {
        (None, Vec::new())
    };
    let headers: Vec<Value> = req
        .headers()
        .iter()
        .map(|h| json!([h.field.as_str().as_str(), h.value.as_str()]))
        .collect();
    let body_json =
        parsed.unwrap_or_else(|| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let line = json!({"n": n, "t_ms": now_ms(), "pid": std::process::id(),
                      "method": req.method().as_str(), "url": req.url(),
                      "headers": headers, "body": body_json});
    if let Ok(mut f) = OpenOptions::new()
        .create(true)
        .append(true)
        .open(sh.state.join(LOG_FILE))
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
    drop(_lock);
    let Some(n) = n else {
        return match (path == "/v1/responses", post) {
            (false, _) => respond(req, 404, "not found"),
            (true, false) => respond(req, 405, "method not allowed"),
            (true, true) if !read || body.len() as u64 > MAX_BODY => {
                respond(req, 413, "body too large")
            }
            (true, true) => respond(req, 400, "body is not JSON"),
        };
    };
    match script::reply(n, &steps) {
        Reply::Http {
            status,
            body,
            headers,
        } => respond_with(req, status, &body, &headers),
        Reply::Stream(out) => stream(req, &out, sh),
    }
}

/// Writes the stream with our own head and chunked framing: tiny_http's chunked encoder
/// buffers 8 KiB, which would hold events back from codex (and break `delay` and interrupts).
fn stream(req: tiny_http::Request, out: &[Out], sh: &Shared) {
    let mut w = req.into_writer();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
    let mut ok = w
        .write_all(head.as_bytes())
        .and_then(|()| w.flush())
        .is_ok();
    // An empty chunk is the end of the body.
    let mut chunk = |data: &[u8]| -> io::Result<()> {
        write!(w, "{:x}\r\n", data.len())?;
        w.write_all(data)?;
        w.write_all(b"\r\n")?;
        w.flush()
    };
    for o in out {
        match o {
            Out::Event(e, _) if ok => {
                let t = e["type"].as_str().unwrap_or_default();
                ok = chunk(format!("event: {t}\ndata: {e}\n\n").as_bytes()).is_ok();
            }
            Out::Event(..) | Out::Local(_) => {}
            Out::Delay(ms) => {
                // In slices, so a stopping model does not wait out a long delay.
                let mut left = *ms;
                while left > 0 && !sh.stop.load(Ordering::SeqCst) {
                    let step = left.min(50);
                    std::thread::sleep(Duration::from_millis(step));
                    left -= step;
                }
            }
        }
    }
    if ok {
        // The body ends properly; a script that drops the stream simply has no
        // response.completed in it.
        let _ = chunk(b"");
    }
}

/// Serve a scenario as the scripted model (a Responses API on loopback) for a real codex
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prints the port on the first line of stdout, then the codex settings \
that point at it. Serves until stdin closes or SIGTERM/SIGINT.\n\
Example: codex-wire model --state-dir st < /dev/tty"
)]
pub struct Cli {
    /// The state dir: scenario.json (read on every request), model-cursor.json,
    /// model-requests.jsonl
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
    /// Address to bind
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    pub listen: String,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

pub fn main(cli: Cli) -> ExitCode {
    let model = match Model::start(&cli.listen, &cli.state_dir) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("codex-wire model: cannot serve on {}: {e}", cli.listen);
            return ExitCode::from(2);
        }
    };
    let url = model.base_url();
    let mut out = format!("{}\n# codex -c overrides:\n", model.port());
    for o in overrides(&url, true) {
        out.push_str(&format!("-c '{o}' "));
    }
    out.push_str(&format!(
        "\n# or in $CODEX_HOME/config.toml:\nmodel_provider = {PROVIDER:?}\n\n\
         [model_providers.{PROVIDER}]\nname = {PROVIDER:?}\nbase_url = {url:?}\n\
         wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
    ));
    let mut stdout = io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
    drop(stdout);
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    // stdin is read on its own thread (it blocks); the main thread polls both ways to stop.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
        let _ = tx.send(());
    });
    while !STOP.load(Ordering::SeqCst) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            _ => break,
        }
    }
    drop(model);
    eprintln!(
        "codex-wire model: {} scripted responses unserved",
        unserved(&cli.state_dir)
    );
    ExitCode::SUCCESS
}
