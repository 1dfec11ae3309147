//! A driver for the real `codex app-server`: spawn it in a sandbox (fresh `CODEX_HOME`, fresh
//! cwd), send raw lines, collect replies by id, use barriers, detect the connection closing.
//!
//! A case is a list of raw lines (the first is normally `initialize`). Each line gets an
//! [`Observed`] outcome. Cases with exactly two lines (`initialize` + one request with an
//! integer or string id) that share the same `initialize` line are run together on one process,
//! with their ids rewritten to be unique; everything else runs on a process of its own.

use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long to wait for a barrier reply (covers process start-up).
const BARRIER_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to keep waiting, after the last barrier, for replies of accepted requests.
const ACCEPT_GRACE: Duration = Duration::from_millis(1500);
/// Requests per shared process.
pub const BATCH_SIZE: usize = 120;
/// Server processes at once.
pub const WORKERS: usize = 4;

/// What the real server did with one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// A protocol error reply (exact line).
    Error(String),
    /// A result, or a handler error; the reply line if one came in time.
    Accepted(Option<String>),
    /// No reply (the line was not a request with a valid id).
    None,
    /// The connection closed on this line.
    Close,
}

impl Observed {
    pub fn status(&self) -> &'static str {
        match self {
            Observed::Error(_) => "error",
            Observed::Accepted(_) => "accepted",
            Observed::None => "none",
            Observed::Close => "close",
        }
    }

    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("status".into(), Value::from(self.status()));
        match self {
            Observed::Error(r) => {
                m.insert("reply".into(), Value::from(r.as_str()));
            }
            Observed::Accepted(Some(r)) => {
                m.insert("reply".into(), Value::from(reference(r)));
            }
            _ => {}
        }
        Value::Object(m)
    }

    pub fn from_json(v: &Value) -> Result<Observed, String> {
        let reply = v.get("reply").and_then(Value::as_str).map(str::to_string);
        match v.get("status").and_then(Value::as_str) {
            Some("error") => reply
                .map(Observed::Error)
                .ok_or_else(|| "status error without reply".to_string()),
            Some("accepted") => Ok(Observed::Accepted(reply)),
            Some("none") => Ok(Observed::None),
            Some("close") => Ok(Observed::Close),
            other => Err(format!("unknown status {other:?}")),
        }
    }
}

/// Longest accepted reply kept verbatim in the corpus (it is there for reference only).
const REFERENCE_MAX: usize = 400;

/// An accepted reply for reference: cut after [`REFERENCE_MAX`] bytes, with the full length.
fn reference(r: &str) -> String {
    if r.len() <= REFERENCE_MAX {
        return r.to_string();
    }
    let mut end = REFERENCE_MAX;
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...[{} bytes]", &r[..end], r.len())
}

/// Is this reply a protocol-level error (as opposed to a result or a handler error)?
pub fn is_protocol_error(reply: &Value) -> bool {
    let Some(err) = reply.get("error") else {
        return false;
    };
    let code = err.get("code").and_then(Value::as_i64);
    let msg = err.get("message").and_then(Value::as_str).unwrap_or("");
    code == Some(-32600)
        && (msg.starts_with("Invalid request:")
            || msg == "Not initialized"
            || msg == "Already initialized"
            || msg.contains("experimentalApi"))
}

/// Parse a line the way the server frames it (for our bookkeeping only).
pub fn parse_line(line: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(line).ok()
}

/// The key a reply to this id is filed under: the id's compact JSON text.
fn id_key(id: &Value) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// If `line` is a JSON object with an `id` member, the key of that id.
fn line_id_key(line: &[u8]) -> Option<String> {
    let v = parse_line(line)?;
    v.as_object()?.get("id").map(id_key)
}

/// A line that the server should answer: a request with a string or i64 id.
fn is_valid_request(line: &[u8]) -> bool {
    let Some(v) = parse_line(line) else {
        return false;
    };
    let Some(o) = v.as_object() else {
        return false;
    };
    let id_ok = match o.get("id") {
        Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.as_i64().is_some(),
        _ => false,
    };
    id_ok && matches!(o.get("method"), Some(Value::String(_)))
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Where server sandboxes go: a memory file system when the machine has one. Each start creates
/// five SQLite databases in `CODEX_HOME` and syncs them; on a disk that was half of a start's
/// CPU (sys 0.18 s -> 0.09 s a start, and a conformance run starts ~340 servers). No reply of
/// these runs names the sandbox's path, so where it lives changes no recorded byte.
fn scratch_root() -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let probe = shm.join(format!("codex-wire-probe-{}", std::process::id()));
        if std::fs::create_dir(&probe).is_ok() {
            let _ = std::fs::remove_dir(&probe);
            return shm.to_path_buf();
        }
        std::env::temp_dir()
    })
    .clone()
}

/// A private directory under [`scratch_root`], removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Result<TempDir, String> {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let p = scratch_root().join(format!("codex-wire-{}-{n}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The native binary behind an npm-installed `codex`, and the package root its launcher names.
/// `node_modules/.bin/codex` is a Node script that only finds the platform package's binary and
/// runs it with two environment variables; the Node process was half of each server start's CPU
/// (0.2 s against 0.1 s, measured on 0.171.0), and a live run starts hundreds. Anything else (a
/// `--codex` binary) runs as given.
fn native(codex: &Path) -> (PathBuf, Option<PathBuf>) {
    let triple = match std::env::consts::ARCH {
        "x86_64" => "x86_64-unknown-linux-musl",
        "aarch64" => "aarch64-unknown-linux-musl",
        _ => return (codex.to_path_buf(), None),
    };
    let platform = match std::env::consts::ARCH {
        "x86_64" => "codex-linux-x64",
        _ => "codex-linux-arm64",
    };
    let shim = codex.parent().filter(|d| d.ends_with("node_modules/.bin"));
    let Some(modules) = shim.and_then(Path::parent) else {
        return (codex.to_path_buf(), None);
    };
    let root = modules.join("@openai/codex");
    let bin = modules
        .join("@openai")
        .join(platform)
        .join("vendor")
        .join(triple)
        .join("bin/codex");
    match (
        cfg!(target_os = "linux"),
        bin.is_file(),
        root.canonicalize(),
    ) {
        (true, true, Ok(root)) => (bin, Some(root)),
        _ => (codex.to_path_buf(), None),
    }
}

/// One running `codex app-server`.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Option<Vec<u8>>>,
    replies: HashMap<String, VecDeque<String>>,
    eof: bool,
    barrier_seq: u64,
    home: TempDir,
    cwd: TempDir,
}

pub enum Barrier {
    Ok,
    Eof,
    Timeout,
}

impl Server {
    /// Spawn `codex app-server` with a fresh `CODEX_HOME` and a fresh cwd.
    pub fn spawn(codex: &Path) -> Result<Server, String> {
        let home = TempDir::new("home")?;
        let cwd = TempDir::new("cwd")?;
        let (program, package_root) = native(codex);
        let mut cmd = Command::new(program);
        if let Some(root) = package_root {
            // What the npm launcher passes on (bin/codex.js, outside a package manager).
            cmd.env("CODEX_MANAGED_BY_NPM", "1")
                .env("CODEX_MANAGED_PACKAGE_ROOT", root);
        }
        let mut child = cmd
            .arg("app-server")
            .env("CODEX_HOME", &home.0)
            .env("TERM", "dumb")
            .env_remove("RUST_LOG")
            .current_dir(&cwd.0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("spawning {} app-server: {e}", codex.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if buf.last() == Some(&b'\n') {
                            buf.pop();
                        }
                        if tx.send(Some(buf)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(Server {
            child,
            stdin,
            rx,
            replies: HashMap::new(),
            eof: false,
            barrier_seq: 0,
            home,
            cwd,
        })
    }

    /// Send one line (a newline is appended). False if the pipe is closed.
    pub fn send(&mut self, line: &[u8]) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        if stdin.write_all(&buf).and_then(|_| stdin.flush()).is_err() {
            self.stdin = None;
            return false;
        }
        true
    }

    fn file(&mut self, line: Vec<u8>) {
        let text = String::from_utf8_lossy(&line).into_owned();
        let Some(Value::Object(o)) = parse_line(&line) else {
            return;
        };
        if o.contains_key("method") || !(o.contains_key("result") || o.contains_key("error")) {
            return; // a notification or a server request
        }
        if let Some(id) = o.get("id") {
            self.replies.entry(id_key(id)).or_default().push_back(text);
        }
    }

    /// Process output until `done` holds, the deadline passes, or stdout closes.
    fn pump_until(&mut self, deadline: Instant, done: &dyn Fn(&Server) -> bool) {
        while !self.eof && !done(self) {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            match self.rx.recv_timeout(deadline - now) {
                Ok(Some(line)) => self.file(line),
                Ok(None) | Err(RecvTimeoutError::Disconnected) => self.eof = true,
                Err(RecvTimeoutError::Timeout) => return,
            }
        }
        // Drain what is already there without blocking.
        while let Ok(ev) = self.rx.try_recv() {
            match ev {
                Some(line) => self.file(line),
                None => self.eof = true,
            }
        }
    }

    /// Send an `account/logout` with array params, answered at once with a deserialization
    /// error, and wait for it: everything sent before has been read by then.
    pub fn barrier(&mut self) -> Barrier {
        self.barrier_seq += 1;
        let id = format!("__barrier_{}", self.barrier_seq);
        let line = format!(r#"{{"id":"{id}","method":"account/logout","params":[]}}"#);
        if !self.send(line.as_bytes()) {
            // The pipe is closed: wait for stdout to close too.
            self.pump_until(Instant::now() + Duration::from_secs(5), &|_| false);
            return if self.eof {
                Barrier::Eof
            } else {
                Barrier::Timeout
            };
        }
        let key = id_key(&Value::String(id));
        self.pump_until(Instant::now() + BARRIER_TIMEOUT, &|s| {
            s.replies.contains_key(&key)
        });
        if self.replies.remove(&key).is_some() {
            Barrier::Ok
        } else if self.eof {
            Barrier::Eof
        } else {
            Barrier::Timeout
        }
    }

    /// Wait (bounded) until every key has a reply.
    pub fn wait_replies(&mut self, keys: &[String], grace: Duration) {
        let keys = keys.to_vec();
        self.pump_until(Instant::now() + grace, &|s| {
            keys.iter().all(|k| s.replies.contains_key(k))
        });
    }

    /// Send one request and wait (bounded) for its reply.
    pub fn call(&mut self, line: &[u8], timeout: Duration) -> Option<String> {
        let key = line_id_key(line)?;
        if !self.send(line) {
            return None;
        }
        self.wait_replies(std::slice::from_ref(&key), timeout);
        self.take_reply(&key)
    }

    pub fn take_reply(&mut self, key: &str) -> Option<String> {
        let q = self.replies.get_mut(key)?;
        let r = q.pop_front();
        if q.is_empty() {
            self.replies.remove(key);
        }
        r.map(|r| self.normalize(&r))
    }

    /// Replace the per-run temp paths so recorded replies do not vary run to run.
    fn normalize(&self, reply: &str) -> String {
        let mut s = reply.to_string();
        for (dir, name) in [(&self.home.0, "$CODEX_HOME"), (&self.cwd.0, "$CWD")] {
            let d = dir.to_string_lossy();
            if !d.is_empty() {
                s = s.replace(d.as_ref(), name);
            }
        }
        s
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Everything it answered has been read: no need to wait for its own shutdown on EOF
        // (up to 0.3 s a run, hundreds of runs). The whole process group: node wrapper, native
        // binary, children.
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: plain kill(2) on the process group we created for this child.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn classify(reply: Option<String>, valid_request: bool) -> Observed {
    match reply {
        Some(r) => match parse_line(r.as_bytes()) {
            Some(v) if is_protocol_error(&v) => Observed::Error(r),
            _ => Observed::Accepted(Some(r)),
        },
        None if valid_request => Observed::Accepted(None),
        None => Observed::None,
    }
}

/// Run one case on a process of its own: each line is followed by a barrier, so a close is
/// attributed to the line that caused it. A line without a reply is `None`.
pub fn run_solo(codex: &Path, lines: &[Vec<u8>]) -> Result<Vec<Observed>, String> {
    let mut srv = Server::spawn(codex)?;
    let mut closed_at = None;
    for (i, line) in lines.iter().enumerate() {
        let sent = srv.send(line);
        let b = if sent { srv.barrier() } else { Barrier::Eof };
        match b {
            Barrier::Ok => {}
            Barrier::Eof => {
                closed_at = Some(i);
                break;
            }
            Barrier::Timeout => {
                return Err(format!("barrier timed out after line {i}"));
            }
        }
    }
    let keys: Vec<String> = lines
        .iter()
        .take(closed_at.unwrap_or(lines.len()))
        .filter(|l| is_valid_request(l))
        .filter_map(|l| line_id_key(l))
        .collect();
    if closed_at.is_none() {
        srv.wait_replies(&keys, ACCEPT_GRACE);
    }
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if closed_at.is_some_and(|c| i >= c) {
            out.push(Observed::Close);
            continue;
        }
        // On a solo run no reply means none: the lines here are often requests that only look
        // valid to us (duplicate envelope keys, a bad `trace`...), and the requests used in
        // lifecycle/framing cases answer quickly.
        let reply = line_id_key(line).and_then(|k| srv.take_reply(&k));
        out.push(classify(reply, false));
    }
    Ok(out)
}

/// If a case can share a process: `(initialize line, request)` where the request re-serializes
/// to exactly its bytes (so its id can be rewritten losslessly) and has an integer or string id.
pub fn batch_key(lines: &[Vec<u8>]) -> Option<&[u8]> {
    if lines.len() != 2 || !is_valid_request(&lines[1]) {
        return None;
    }
    let init = parse_line(&lines[0])?;
    if init.get("method").and_then(Value::as_str) != Some("initialize") {
        return None;
    }
    let v = parse_line(&lines[1])?;
    if serde_json::to_vec(&v).ok()? != lines[1] {
        return None;
    }
    if init.get("id") == v.get("id") {
        return None;
    }
    Some(&lines[0])
}

/// Run many `(initialize, request)` cases sharing one initialize line on one process.
/// Returns `Err` when the batch could not be run as a whole (the caller falls back to solo).
pub fn run_batch(
    codex: &Path,
    init: &[u8],
    requests: &[&[u8]],
) -> Result<Vec<[Observed; 2]>, String> {
    let mut srv = Server::spawn(codex)?;
    let init_key = line_id_key(init).ok_or("initialize line without id")?;
    if !srv.send(init) {
        return Err("server closed stdin".into());
    }
    let mut keys = Vec::with_capacity(requests.len());
    let mut orig_ids = Vec::with_capacity(requests.len());
    for (k, req) in requests.iter().enumerate() {
        let mut v = parse_line(req).ok_or("unparsable batched request")?;
        let o = v
            .as_object_mut()
            .ok_or("batched request is not an object")?;
        let orig = o.get("id").cloned().ok_or("batched request without id")?;
        let new_id = Value::from(1_000_000 + k as i64);
        o.insert("id".into(), new_id.clone());
        let line = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
        if !srv.send(&line) {
            return Err("server closed stdin".into());
        }
        keys.push(id_key(&new_id));
        orig_ids.push(orig);
    }
    match srv.barrier() {
        Barrier::Ok => {}
        Barrier::Eof => return Err("server closed the connection during a batch".into()),
        Barrier::Timeout => return Err("batch barrier timed out".into()),
    }
    let mut all = keys.clone();
    all.push(init_key.clone());
    srv.wait_replies(&all, ACCEPT_GRACE);
    let init_obs = classify(srv.take_reply(&init_key), true);
    let mut out = Vec::with_capacity(requests.len());
    for (key, orig) in keys.iter().zip(&orig_ids) {
        let reply = srv.take_reply(key).map(|r| restore_id(&r, key, orig));
        out.push([init_obs.clone(), classify(reply, true)]);
    }
    Ok(out)
}

/// The server writes `...,"id":<id>}` last; put the case's own id back.
fn restore_id(reply: &str, new_key: &str, orig: &Value) -> String {
    let suffix = format!(r#""id":{new_key}}}"#);
    match reply.strip_suffix(&suffix) {
        Some(head) => format!(r#"{head}"id":{}}}"#, id_key(orig)),
        None => {
            // Unexpected layout: rewrite through a parse (keeps key order).
            match parse_line(reply.as_bytes()) {
                Some(mut v) => {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("id".into(), orig.clone());
                    }
                    serde_json::to_string(&v).unwrap_or_else(|_| reply.to_string())
                }
                None => reply.to_string(),
            }
        }
    }
}

enum Job {
    Batch(Vec<u8>, Vec<usize>),
    Solo(usize),
}

/// Run every case (a list of raw lines each) against the real server, at most [`WORKERS`]
/// processes at a time. Results are in case order.
/// A case whose process failed twice is `None`.
pub fn run_cases(
    codex: &Path,
    cases: &[Vec<Vec<u8>>],
    solo: &[bool],
) -> Vec<Option<Vec<Observed>>> {
    let mut groups: Vec<(Vec<u8>, Vec<usize>)> = Vec::new();
    let mut jobs = VecDeque::new();
    for (i, lines) in cases.iter().enumerate() {
        match batch_key(lines) {
            Some(init) if !solo[i] => match groups.iter_mut().find(|(k, _)| k == init) {
                Some((_, v)) => v.push(i),
                None => groups.push((init.to_vec(), vec![i])),
            },
            _ => jobs.push_back(Job::Solo(i)),
        }
    }
    // Batches first (they are the bulk), then solo cases.
    let mut batched = VecDeque::new();
    for (init, idx) in groups {
        for chunk in idx.chunks(BATCH_SIZE) {
            batched.push_back(Job::Batch(init.clone(), chunk.to_vec()));
        }
    }
    batched.extend(jobs);
    let total_jobs = batched.len();
    let queue = Arc::new(Mutex::new(batched));
    #[allow(clippy::type_complexity)]
    let results: Arc<Mutex<Vec<Option<Option<Vec<Observed>>>>>> =
        Arc::new(Mutex::new(vec![None; cases.len()]));
    let done = Arc::new(AtomicU64::new(0));
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            let queue = Arc::clone(&queue);
            let results = Arc::clone(&results);
            let done = Arc::clone(&done);
            scope.spawn(move || loop {
                let job = queue.lock().unwrap().pop_front();
                let Some(job) = job else { return };
                let mut local: Vec<(usize, Option<Vec<Observed>>)> = Vec::new();
                match job {
                    Job::Batch(init, idx) => {
                        let reqs: Vec<&[u8]> = idx.iter().map(|&i| &cases[i][1][..]).collect();
                        match run_batch(codex, &init, &reqs) {
                            Ok(obs) => {
                                for (&i, o) in idx.iter().zip(obs) {
                                    local.push((i, Some(o.to_vec())));
                                }
                            }
                            Err(e) => {
                                eprintln!("batch of {} failed ({e}); running solo", idx.len());
                                for &i in &idx {
                                    local.push((i, solo_or_report(codex, &cases[i])));
                                }
                            }
                        }
                    }
                    Job::Solo(i) => local.push((i, solo_or_report(codex, &cases[i]))),
                }
                let mut r = results.lock().unwrap();
                for (i, o) in local {
                    r[i] = Some(o);
                }
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                if n.is_multiple_of(10) || n as usize == total_jobs {
                    eprint!("\r  {n}/{total_jobs} server runs");
                }
            });
        }
    });
    eprintln!();
    let r = Arc::try_unwrap(results)
        .map(|m| m.into_inner().unwrap())
        .unwrap_or_default();
    r.into_iter().map(Option::flatten).collect()
}

fn solo_or_report(codex: &Path, lines: &[Vec<u8>]) -> Option<Vec<Observed>> {
    match run_solo(codex, lines) {
        Ok(o) => Some(o),
        Err(e) => {
            // One retry: a timed-out barrier is usually a slow start.
            match run_solo(codex, lines) {
                Ok(o) => Some(o),
                Err(e2) => {
                    eprintln!("\ncase failed twice ({e}; {e2}); skipped");
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_the_original_id() {
        let r = r#"{"error":{"code":-32600,"message":"Invalid request: x \"id\":1000003}"},"id":1000003}"#;
        let out = restore_id(r, "1000003", &Value::from(1));
        assert_eq!(
            out,
            r#"{"error":{"code":-32600,"message":"Invalid request: x \"id\":1000003}"},"id":1}"#
        );
    }

    #[test]
    fn batchable_only_when_exactly_reserializable() {
        let init = br#"{"id":0,"method":"initialize","params":{}}"#.to_vec();
        let ok = br#"{"id":1,"method":"thread/read","params":{}}"#.to_vec();
        let spaced = br#"{"id":1, "method":"thread/read","params":{}}"#.to_vec();
        let dup = br#"{"id":1,"method":"a","method":"thread/read","params":{}}"#.to_vec();
        let float_id = br#"{"id":1.5,"method":"thread/read","params":{}}"#.to_vec();
        assert!(batch_key(&[init.clone(), ok]).is_some());
        assert!(batch_key(&[init.clone(), spaced]).is_none());
        assert!(batch_key(&[init.clone(), dup]).is_none());
        assert!(batch_key(&[init, float_id]).is_none());
    }

    #[test]
    fn protocol_errors_are_classified() {
        let e = |m: &str| serde_json::json!({"error":{"code":-32600,"message":m},"id":1});
        assert!(is_protocol_error(&e("Invalid request: missing field `x`")));
        assert!(is_protocol_error(&e("Not initialized")));
        assert!(is_protocol_error(&e(
            "thread/sample requires experimentalApi capability"
        )));
        assert!(!is_protocol_error(&e("invalid thread id: x")));
        assert!(!is_protocol_error(&serde_json::json!({"id":1,"result":{}})));
    }
}
