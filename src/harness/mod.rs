//! One client, two servers: drives a `codex app-server` — the fake, or the real binary behind
//! `codex-wire scripted` — through a turn case, the same way each time, so that their
//! transcripts can be compared under the one masking rule ([`crate::diff`]).
//!
//! A case is a `scenario.json` (the turns the model plays) plus what the client does: the texts
//! it sends as turns, the decisions it gives approval requests, whether it interrupts, steers,
//! restarts the server between turns, or compacts. Run layout under a root directory:
//! `state/` (scenario.json, transcript.jsonl), `codex_home/config.toml`, `home/`, `work/` (cwd).

mod case;
mod peer;
mod replay;

pub use case::{
    config_toml, install_config_toml, load_cases, Bind, Case, ClientStep, Input, Paths, Recorded,
    PROVIDER,
};
pub(crate) use peer::Peer;
pub use peer::{Layout, Server};
pub use replay::{background, key_of, play, relocate};

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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
                    let r = self.case.replies.get(&method).cloned();
                    match r.as_ref().and_then(|r| r.get("$error")) {
                        Some(e) => Some(json!({"id": msg["id"], "error": e})),
                        None => Some(json!({"id": msg["id"], "result": r.unwrap_or(json!({}))})),
                    }
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
/// the run's work dir, `${root}` its root, `${codex_home}` and `${home}` the server's
/// `CODEX_HOME` and `HOME`; an object member whose value is `${absent}` is left out.
fn place(v: &mut Value, l: &Layout) {
    match v {
        Value::String(s) => {
            for (k, dir) in [
                ("${work}", &l.work),
                ("${root}", &l.root),
                ("${codex_home}", &l.codex_home),
                ("${home}", &l.home),
            ] {
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
/// its read state's revision, `${prev:/json/pointer}` any value of that result (null when
/// absent: an id the server made, such as a project's).
fn substitute(v: &mut Value, thread: &str, previous: &Value) {
    if let Some(ptr) = v
        .as_str()
        .and_then(|s| s.strip_prefix("${prev:"))
        .and_then(|s| s.strip_suffix('}'))
    {
        *v = previous.pointer(ptr).cloned().unwrap_or(Value::Null);
        return;
    }
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

/// The protected paths codex's sandbox helper mounts over in each writable root.
const SANDBOX_MOUNT_POINTS: [&str; 3] = [".git", ".codex", ".agents"];

/// Removes the empty mount points codex's sandbox helper left above `root`. Under
/// `workspace-write` `/tmp` is a writable root; the helper creates `.git`, `.codex` and `.agents`
/// there to mount over, and a command killed mid-run (a `command/exec` deadline, seen on
/// 0.171.0) leaves them. An empty `/tmp/.git` then makes codex take `/tmp` for a repository:
/// every later run's `turn/diff/updated` names paths from `/tmp`, which differ between runs.
/// Only in the system's temp directory, when `root` is under it, and only empty directories
/// (`remove_dir` refuses any other).
pub fn clear_sandbox_leftovers(root: &Path) {
    clear_leftovers_in(&std::env::temp_dir(), root);
}

fn clear_leftovers_in(tmp: &Path, root: &Path) {
    if root.starts_with(tmp) && root != tmp {
        for name in SANDBOX_MOUNT_POINTS {
            let _ = std::fs::remove_dir(tmp.join(name));
        }
    }
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
    clear_sandbox_leftovers(root);
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
        let scenario = replay::relocate(&case.scenario.to_string(), rec, &l);
        std::fs::write(l.state.join("scenario.json"), scenario).map_err(io)?;
        let error = replay::play(case, rec, server, &l).err();
        return Ok((server.transcript(&l), error));
    }
    for d in &case.dirs {
        std::fs::create_dir_all(l.work.join(d)).map_err(io)?;
    }
    for (path, text) in &case.files {
        let mut at = json!(path);
        place(&mut at, &l);
        let at = PathBuf::from(at.as_str().unwrap_or_default());
        if !at.is_absolute() {
            return Err(format!("case file {path}: not under a placeholder"));
        }
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&at, text).map_err(io)?;
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
            if let Some(ms) = req["delay_ms"].as_u64() {
                std::thread::sleep(Duration::from_millis(ms));
            }
            let mut params = req["params"].clone();
            substitute(&mut params, &thread, &last["result"]);
            place(&mut params, &l);
            let method = req["method"]
                .as_str()
                .ok_or("an `after` request without a method")?;
            let id = p.request(method, params)?;
            last = match req["wait_for"].as_str() {
                None => c.response(&mut p, id)?,
                // The reply and a notification the request causes, in either order: what a
                // client that waits for it sees (a search session's `sessionCompleted`).
                Some(wanted) => {
                    let (mut reply, mut seen) = (None, false);
                    c.pump(&mut p, &mut |m| {
                        if m["id"] == json!(id) && m.get("method").is_none() {
                            reply = Some(m.clone());
                        }
                        seen |= m["method"] == wanted;
                        reply.is_some() && seen
                    })?;
                    reply.unwrap_or_default()
                }
            };
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

/// `root`, its last name padded to the length of the recording's run root (the parent of the
/// `codexHome` its `initialize` answer names), when it is shorter.
pub fn root_as_long(root: &Path, recording: &str) -> PathBuf {
    let recorded = recording.find("\"codexHome\":\"").and_then(|at| {
        let from = at + "\"codexHome\":\"".len();
        let end = recording[from..].find('"')? + from;
        Some(Path::new(&recording[from..end]).parent()?.as_os_str().len())
    });
    let have = root.as_os_str().len();
    match recorded {
        Some(want) if want > have => {
            let mut padded = root.as_os_str().to_owned();
            padded.push("_".repeat(want - have));
            padded.into()
        }
        _ => root.to_path_buf(),
    }
}

#[cfg(test)]
mod leftover_tests {
    /// Empty mount points above a run go; a non-empty one, and any outside the temp dir, stay.
    #[test]
    fn only_empty_mount_points_in_the_temp_dir_go() {
        let tmp = std::env::temp_dir().join(format!("cw-leftovers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        for d in [".git", ".codex", ".agents/skills"] {
            std::fs::create_dir_all(tmp.join(d)).expect("mkdir");
        }
        super::clear_leftovers_in(&tmp, std::path::Path::new("/elsewhere/run"));
        assert!(
            tmp.join(".git").is_dir(),
            "a root outside the temp dir clears nothing"
        );
        super::clear_leftovers_in(&tmp, &tmp.join("codex-wire-turns/case"));
        assert!(!tmp.join(".git").exists() && !tmp.join(".codex").exists());
        assert!(tmp.join(".agents/skills").is_dir(), "a non-empty one stays");
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
