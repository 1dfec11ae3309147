//! One fake process ([`Fake`]) and its connections ([`Conn`]): every inbound line goes through
//! the engine first; only lines the real server would accept reach a handler.

use super::defaults;
use super::settings;
use super::state::{now_ms, now_secs, scenario, Store, Transcript};
use super::turn::{self as turns, ServerTurn, TurnCtl};
use crate::engine::{Kind, Outcome, Session};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The real server's reply to a request that finds its inbound queue full.
pub const OVERLOADED: i64 = -32001;
pub const OVERLOADED_MESSAGE: &str = "Server overloaded; retry later.";

/// Marks a handler error the real server answers with `-32603` (internal error).
const INTERNAL_PREFIX: &str = "\u{0}internal:";

/// Locks a mutex even if a panicking thread poisoned it: the fake keeps serving.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process-wide state: files, loaded threads and running turns (shared by connections,
/// as in the real server).
pub struct Fake {
    pub dir: PathBuf,
    pub transcript: Transcript,
    pub store: Store,
    pub cwd: PathBuf,
    /// `$CODEX_HOME` as the real server reports and resolves against it (else the state dir).
    pub codex_home: PathBuf,
    /// What config.toml and `-c` say about the model, provider, approvals and sandbox.
    pub config: super::config::Config,
    /// Threads started, resumed or forked by this process: the only ones turns can run on.
    loaded: Mutex<HashSet<String>>,
    /// Running turn per thread.
    pub active: Mutex<HashMap<String, Arc<TurnCtl>>>,
    /// Scripted overload replies given so far, per `scenario.json` `overload` key.
    overload_used: Mutex<HashMap<String, u64>>,
    /// The codex version the fake answers as.
    pub protocol: &'static crate::Protocol,
    /// How that version plays turns where versions differ (`Protocol::turn_facts`).
    pub turn_facts: super::turn::TurnFacts,
    /// That version's model catalog (`Protocol::models`).
    pub catalog: super::settings::Catalog,
    /// Its features under development (`Protocol::features`).
    pub unstable: Vec<String>,
    /// For an older version: what drops the keys its schema lacks from every message.
    projector: Option<super::project::Projector>,
}

impl Fake {
    pub fn new(
        dir: PathBuf,
        overrides: &[(String, String)],
        protocol: &'static crate::Protocol,
    ) -> Arc<Self> {
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.clone());
        Arc::new(Fake {
            config: super::config::Config::load(&codex_home, overrides),
            transcript: Transcript::new(dir.join("transcript.jsonl")),
            store: Store::new(&dir),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            codex_home,
            dir,
            loaded: Mutex::new(HashSet::new()),
            active: Mutex::new(HashMap::new()),
            overload_used: Mutex::new(HashMap::new()),
            turn_facts: super::turn::TurnFacts::of(protocol),
            catalog: super::settings::Catalog::of(protocol),
            unstable: super::settings::unstable_features(protocol),
            projector: super::project::Projector::of(protocol),
            protocol,
        })
    }

    pub fn record(&self, entry: Value) {
        self.transcript.record(&entry);
    }
}

/// A message's transcript entry, rendered straight into the transcript (no map built per line).
#[derive(serde::Serialize)]
struct Entry<'a, M: serde::Serialize + ?Sized> {
    dir: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    msg: Option<&'a M>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_to: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    ignored: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    violation: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    overloaded: bool,
}

impl<'a, M: serde::Serialize + ?Sized> Entry<'a, M> {
    fn new(dir: &'static str, msg: Option<&'a M>) -> Self {
        Entry {
            dir,
            msg,
            raw: None,
            reply_to: None,
            ignored: &[],
            violation: None,
            overloaded: false,
        }
    }
}

/// Where a connection's outbound lines go (stdout, a socket, a WebSocket writer): each call gets
/// one or more whole lines, each ending in `\n`.
pub type Sink = Box<dyn FnMut(&str) -> std::io::Result<()> + Send>;

/// A connection's outbound lines not yet given to the sink (only while the transport holds them).
struct Out {
    sink: Sink,
    buf: String,
    held: bool,
}

pub struct Conn {
    pub fake: Arc<Fake>,
    out: Mutex<Out>,
    session: Mutex<Session>,
    /// Server→client requests in flight: id (JSON text) → the client's reply once it arrives.
    pending: Mutex<HashMap<String, Option<Value>>>,
    replied: Condvar,
    next_id: AtomicI64,
    closed: AtomicBool,
    client_name: Mutex<String>,
    /// Threads this connection unsubscribed from.
    unsubscribed: Mutex<HashSet<String>>,
    /// `initialize`'s `optOutNotificationMethods`.
    opt_out: Mutex<Vec<String>>,
}

/// What the transport loop does after a line.
#[derive(PartialEq, Eq, Debug)]
pub enum Next {
    Continue,
    Close,
}

impl Conn {
    pub fn new(fake: Arc<Fake>, sink: Sink) -> Arc<Self> {
        Arc::new(Conn {
            session: Mutex::new(Session::with_protocol(fake.protocol)),
            fake,
            out: Mutex::new(Out {
                sink,
                buf: String::new(),
                held: false,
            }),
            pending: Mutex::new(HashMap::new()),
            replied: Condvar::new(),
            next_id: AtomicI64::new(0),
            closed: AtomicBool::new(false),
            opt_out: Mutex::new(Vec::new()),
            client_name: Mutex::new("codex".into()),
            unsubscribed: Mutex::new(HashSet::new()),
        })
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The transport ended: wake every turn waiting for a reply.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _g = lock(&self.pending);
        self.replied.notify_all();
    }

    /// Records and writes one message. A dead peer is not an error for the fake.
    pub fn send(&self, msg: Value) {
        let mut msg = msg;
        if let Some(p) = &self.fake.projector {
            let method = msg.get("result").and_then(|_| {
                lock(&self.session)
                    .awaiting_method(&msg["id"])
                    .map(str::to_string)
            });
            p.project(&mut msg, method.as_deref());
        }
        let line = msg.to_string();
        self.emit(&line, &msg);
    }

    /// Records and writes one line to the peer (or queues it while the transport holds output
    /// back), in one step so that the transcript's order is the peer's.
    fn emit<M: serde::Serialize + ?Sized>(&self, line: &str, msg: &M) {
        let mut out = lock(&self.out);
        self.fake.transcript.record(&Entry::new("out", Some(msg)));
        out.buf.push_str(line);
        out.buf.push('\n');
        if !out.held {
            self.drain(out);
        }
    }

    fn drain(&self, mut out: MutexGuard<'_, Out>) {
        if out.buf.is_empty() {
            return;
        }
        // The lines' transcript entries reach the disk before the peer can see the lines.
        self.fake.transcript.flush();
        let Out { sink, buf, .. } = &mut *out;
        let failed = sink(buf).is_err();
        buf.clear();
        drop(out);
        if failed {
            self.close();
        }
    }

    /// Holds output and transcript entries back while the transport has more input queued, so
    /// a burst of lines is answered with one write each (see [`Conn::release`]).
    pub fn hold(&self) {
        lock(&self.out).held = true;
        self.fake.transcript.hold();
    }

    /// Ends [`Conn::hold`]: what was held back goes out now.
    pub fn release(&self) {
        let mut out = lock(&self.out);
        out.held = false;
        self.drain(out);
        self.fake.transcript.release();
    }

    /// Writes what is held back without ending the hold (before the processor blocks).
    pub fn flush_held(&self) {
        self.drain(lock(&self.out));
    }

    pub fn notify(&self, method: &str, params: Value) {
        if self.withheld(method) {
            return;
        }
        self.send(json!({"method": method, "params": params, "emittedAtMs": now_ms()}));
    }

    /// A thread's settings warnings (`warning`), as a start, a cold resume and a fork send them.
    fn warn(&self, thread_id: &str, messages: Vec<String>) {
        for message in messages {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
    }

    /// Notifications this connection does not get: the experimental ones without the
    /// `experimentalApi` capability, and the methods it opted out of (exact names).
    fn withheld(&self, method: &str) -> bool {
        (EXPERIMENTAL_NOTIFICATIONS.contains(&method) && !lock(&self.session).experimental_api())
            || lock(&self.opt_out).iter().any(|m| m == method)
    }

    fn result(&self, id: &Value, result: Value) {
        self.send(json!({"id": id, "result": result}));
    }

    /// A handler's error: `-32600`, or `-32603` for a message marked [`INTERNAL_PREFIX`].
    fn error(&self, id: &Value, message: String) {
        let (code, message) = match message.strip_prefix(INTERNAL_PREFIX) {
            Some(m) => (-32603, m.to_string()),
            None => (-32600, message),
        };
        self.send(json!({"error": {"code": code, "message": message}, "id": id}));
    }

    /// The id of the last server→client request sent on this connection.
    pub fn last_request_id(&self) -> Option<i64> {
        let next = self.next_id.load(Ordering::SeqCst);
        (next > 0).then(|| next - 1)
    }

    /// Sends a server→client request and blocks until the client answers (the engine checks
    /// the answer against the method's response type), the connection closes, `timeout`
    /// passes, or `cancelled` says so (checked every few milliseconds).
    pub fn server_request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Value> {
        let id = json!(self.next_id.fetch_add(1, Ordering::SeqCst));
        let key = id.to_string();
        lock(&self.session).expect_response(&id, method);
        lock(&self.pending).insert(key.clone(), None);
        self.send(json!({"method": method, "id": id, "params": params}));
        let deadline = Instant::now() + timeout;
        let mut pending = lock(&self.pending);
        loop {
            if let Some(Some(reply)) = pending.get(&key) {
                let reply = reply.clone();
                pending.remove(&key);
                return Some(reply);
            }
            let now = Instant::now();
            if self.is_closed() || now >= deadline || cancelled() {
                pending.remove(&key);
                drop(pending);
                self.fake.record(
                    json!({"event": "server_request_unanswered", "method": method, "id": id}),
                );
                return None;
            }
            pending = self
                .replied
                .wait_timeout(pending, (deadline - now).min(Duration::from_millis(20)))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// A request's id, when `line` is one (what the real transport checks before queueing).
    fn request_id(line: &[u8]) -> Option<(Value, Value)> {
        let msg: Value = serde_json::from_slice(line).ok()?;
        let id = msg.get("id")?;
        (msg["method"].is_string() && (id.is_string() || id.is_i64()))
            .then(|| (id.clone(), msg.clone()))
    }

    /// Answers a request that found the queue full with the real overload reply (recorded both
    /// ways). Returns false when `line` is not a request (it must wait for room instead).
    pub fn overloaded(&self, line: &[u8]) -> bool {
        let Some((id, msg)) = Self::request_id(line) else {
            return false;
        };
        self.fake.transcript.record(&Entry {
            overloaded: true,
            ..Entry::new("in", Some(&msg))
        });
        self.send(json!({"error": {"code": OVERLOADED, "message": OVERLOADED_MESSAGE}, "id": id}));
        true
    }

    /// `scenario.json` `overload`: `{"method": n}` (or `"*"`) answers the first `n` requests of
    /// that method in this process with the overload reply, so a client's retry path can be
    /// tested deterministically. Returns whether `line` was answered so.
    pub fn overload_scripted(&self, line: &[u8], sc: &Value) -> bool {
        let Some(budget) = sc["overload"].as_object().filter(|b| !b.is_empty()) else {
            return false;
        };
        let Some((_, msg)) = Self::request_id(line) else {
            return false;
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let key = if budget.contains_key(method) {
            method
        } else {
            "*"
        };
        let Some(limit) = budget.get(key).and_then(Value::as_u64) else {
            return false;
        };
        {
            let mut used = lock(&self.fake.overload_used);
            let n = used.entry(key.to_string()).or_insert(0);
            if *n >= limit {
                return false;
            }
            *n += 1;
        }
        self.overloaded(line)
    }

    /// One inbound line (without its newline).
    pub fn handle_line(self: &Arc<Self>, line: &[u8]) -> Next {
        if line.iter().all(u8::is_ascii_whitespace) {
            // No reply from the real server either; nothing worth a transcript entry.
            return Next::Continue;
        }
        let verdict = lock(&self.session).feed(line);
        let text = String::from_utf8_lossy(line);
        let msg = serde_json::from_str::<Value>(text.trim_end_matches('\r')).ok();
        let mut entry = Entry::new("in", None);
        match &msg {
            Some(m) if verdict.kind != Kind::Unparsed => entry.msg = Some(m),
            _ => entry.raw = Some(&text),
        };
        entry.reply_to = verdict.reply_to.as_deref();
        entry.ignored = &verdict.ignored;
        let violation = match (&verdict.outcome, verdict.kind) {
            (Outcome::Close, _) => Some("invalid UTF-8: the server closes the connection".into()),
            (Outcome::Reply(e), _) => Some(e.message.clone()),
            (_, Kind::Unparsed) if msg.is_none() => Some("not JSON".into()),
            (_, Kind::Unparsed) => Some("not a JSON-RPC message".into()),
            (_, Kind::Notification) => msg
                .as_ref()
                .and_then(|m| unknown_notification(self.fake.protocol, m)),
            (_, Kind::Response | Kind::Error) if verdict.reply_to.is_none() => {
                Some("response to unknown server request id".into())
            }
            _ => verdict.violation.clone(),
        };
        entry.violation = violation.as_deref();
        self.fake.transcript.record(&entry);
        match verdict.outcome {
            Outcome::Close => return Next::Close,
            Outcome::Reply(e) => {
                let line = e.line();
                // The engine renders the reply compactly, as serde_json would: kept as written.
                let msg: Option<&serde_json::value::RawValue> = serde_json::from_str(&line).ok();
                self.emit(&line, &msg);
            }
            Outcome::NoReply => {
                if matches!(verdict.kind, Kind::Response | Kind::Error) {
                    if let (Some(id), Some(m)) = (&verdict.id, msg) {
                        let mut pending = lock(&self.pending);
                        if let Some(slot) = pending.get_mut(&id.to_string()) {
                            *slot = Some(m);
                            self.replied.notify_all();
                        }
                    }
                }
            }
            Outcome::Accepted => {
                let m = msg.unwrap_or(Value::Null);
                let id = verdict.id.as_ref().map_or(Value::Null, crate::Id::to_value);
                let method = verdict.method.as_deref().unwrap_or_default().to_string();
                let params = m.get("params").cloned().unwrap_or(Value::Null);
                self.dispatch(&id, &method, &params);
            }
        }
        Next::Continue
    }

    fn dispatch(self: &Arc<Self>, id: &Value, method: &str, params: &Value) {
        // A scripted answer in scenario.json wins over everything but initialize.
        if method != "initialize" {
            let sc = scenario(&self.fake.dir);
            if let Some(s) = sc["methods"].get(method) {
                // A slow handler: holds the processor, as a busy real server does.
                if let Some(ms) = s["delay_ms"].as_u64() {
                    self.flush_held();
                    std::thread::sleep(Duration::from_millis(ms.min(60_000)));
                }
                if let Some(e) = s.get("error") {
                    let code = e["code"].as_i64().unwrap_or(-32600);
                    let message = e["message"].as_str().unwrap_or("scripted error");
                    self.send(json!({"error": {"code": code, "message": message}, "id": id}));
                } else {
                    self.result(id, s.get("result").cloned().unwrap_or_else(|| json!({})));
                }
                return;
            }
        }
        let r = match method {
            "initialize" => self.initialize(id, params),
            "thread/start" => self.thread_start(id, params),
            "thread/resume" => self.thread_resume(id, params),
            "thread/fork" => self.thread_fork(id, params),
            "thread/read" => self.thread_read(id, params),
            "thread/turns/list" => self.turns_list(id, params),
            "thread/readState/update" => self.read_state_update(id, params),
            "thread/loaded/list" => self.loaded_list(id),
            "thread/unsubscribe" => self.unsubscribe(id, params),
            "thread/delete" => self.thread_delete(id, params),
            "thread/items/list" => self.items_list(id, params),
            "thread/list" => self.thread_list(id, params),
            "thread/archive" => self.thread_archive(id, params, true),
            "thread/unarchive" => self.thread_archive(id, params, false),
            "thread/name/set" => self.thread_name_set(id, params),
            "thread/goal/set" => self.goal_set(id, params),
            "thread/goal/get" => self.goal_get(id, params),
            "thread/goal/clear" => self.goal_clear(id, params),
            "turn/start" => self.turn_start(id, params),
            "turn/interrupt" => self.turn_interrupt(id, params),
            "turn/steer" => self.turn_steer(id, params),
            "thread/compact/start" => self.compact_start(id, params),
            _ => {
                self.result(id, defaults::result_for(self.fake.protocol, method));
                Ok(())
            }
        };
        if let Err(message) = r {
            self.error(id, message);
        }
    }

    // --- threads -------------------------------------------------------------------------------

    fn initialize(&self, id: &Value, params: &Value) -> Result<(), String> {
        let name = params["clientInfo"]["name"].as_str().unwrap_or("codex");
        let version = params["clientInfo"]["version"].as_str().unwrap_or("");
        *lock(&self.client_name) = name.to_string();
        *lock(&self.opt_out) = params["capabilities"]["optOutNotificationMethods"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let ua = format!(
            "{name}/{} ({}; {}) {} ({name}; {version})",
            self.fake.protocol.version,
            os_description(),
            std::env::consts::ARCH,
            terminal_name(),
        );
        self.result(
            id,
            json!({"userAgent": ua, "codexHome": path_str(&self.fake.codex_home),
                   "platformFamily": "unix", "platformOs": std::env::consts::OS}),
        );
        // What the real server announces right after initializing, without waiting for
        // `initialized`: the sandbox prerequisite it lacks, and remote control (off).
        // The configuration's startup warnings come first.
        let config_toml = self.fake.codex_home.join("config.toml");
        if let Some(summary) = self.fake.config.ignored_keys_warning(&config_toml) {
            self.notify(
                "configWarning",
                json!({"summary": summary, "details": null}),
            );
        }
        // Not under a full-access sandbox (checked on 0.171.0: none in any such run).
        if !on_path("bwrap") && !self.fake.config.full_access() {
            self.notify(
                "configWarning",
                json!({"summary": "Codex could not find bubblewrap on PATH. Install bubblewrap \
                    with your OS package manager. See the sandbox prerequisites: \
                    https://developers.openai.com/codex/concepts/sandboxing#prerequisites. Codex \
                    will use the bundled bubblewrap in the meantime.", "details": null}),
            );
        }
        self.notify(
            "remoteControl/status/changed",
            json!({"status": "disabled", "serverName": host_name(),
                   "installationId": self.installation_id(), "environmentId": null}),
        );
        Ok(())
    }

    /// A thread's model: its own (thread/start `model`), else the configured one.
    fn model_of(&self, info: &Value) -> String {
        info["model"]
            .as_str()
            .map_or_else(|| self.fake.config.model.clone(), str::to_string)
    }

    /// A stored turn as the real server lists it: `view` `full` (every item), `summary` (the
    /// first user message and the final answer) or `notLoaded`.
    fn turn_payload(&self, thread_id: &str, t: &Value, view: &str) -> Value {
        // A turn still in progress in the store but running nowhere here: its process died
        // mid-turn, which the real server reports as an interrupt.
        let running = lock(&self.fake.active)
            .get(thread_id)
            .is_some_and(|c| t["id"] == c.turn_id().as_str());
        let status = if t["status"] == "inProgress" && !running {
            json!("interrupted")
        } else {
            t["status"].clone()
        };
        let all = t["items"].as_array().cloned().unwrap_or_default();
        let items: Vec<Value> = match view {
            "notLoaded" => Vec::new(),
            "summary" => {
                let user = all.iter().find(|i| i["type"] == "userMessage");
                let answer = all.iter().rev().find(|i| i["type"] == "agentMessage");
                user.into_iter().chain(answer).cloned().collect()
            }
            _ => all,
        };
        json!({"id": t["id"], "rootTurnId": t["id"], "items": items,
               "itemsView": view, "status": status,
               "error": t.get("error").cloned().unwrap_or(Value::Null),
               "startedAt": t.get("startedAt").cloned().unwrap_or(Value::Null),
               "completedAt": t.get("completedAt").cloned().unwrap_or(Value::Null),
               "durationMs": t.get("durationMs").cloned().unwrap_or(Value::Null)})
    }

    /// The full `Thread` object, shaped like the real server's.
    pub fn thread_payload(&self, thread_id: &str, info: &Value, with_turns: bool) -> Value {
        let cwd = info["cwd"].as_str().unwrap_or("/").to_string();
        let status = if lock(&self.fake.active).contains_key(thread_id) {
            json!({"type": "active", "activeFlags": []})
        } else if lock(&self.fake.loaded).contains(thread_id) {
            if info["systemError"] == true {
                json!({"type": "systemError"})
            } else {
                json!({"type": "idle"})
            }
        } else {
            json!({"type": "notLoaded"})
        };
        let turns: Vec<Value> = if with_turns {
            info["turns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.turn_payload(thread_id, t, "full"))
                .collect()
        } else {
            vec![]
        };
        let created = info["createdAt"].as_i64().unwrap_or_else(now_secs);
        let updated = info["updatedAt"].as_i64().unwrap_or(created);
        // A thread not loaded here has no live environments, nor an answer on direct input.
        let loaded = lock(&self.fake.loaded).contains(thread_id);
        let environments = if loaded {
            self.environments_of(info)
        } else {
            Value::Null
        };
        // An ephemeral thread has no rollout file.
        let path = if info["ephemeral"] == true {
            Value::Null
        } else {
            json!(self.rollout_path(thread_id, info))
        };
        json!({
            "id": thread_id,
            "environments": environments,
            "extra": null, "sessionId": thread_id,
            "forkedFromId": info.get("forkedFromId").cloned().unwrap_or(Value::Null),
            "attachedToThreadId": null, "parentThreadId": null,
            "preview": info["preview"].as_str().unwrap_or(""),
            "ephemeral": info["ephemeral"].as_bool().unwrap_or(false),
            "section": null, "sectionEnteredAt": null, "projectId": null,
            "historyMode": info["historyMode"].as_str().unwrap_or("paginated"),
            "modelProvider": self.provider_of(info), "model": self.model_of(info),
            "reasoningEffort": info["effort"],
            "createdAt": created, "updatedAt": updated, "recencyAt": updated,
            "status": status,
            "path": path,
            "cwd": cwd, "cliVersion": self.fake.protocol.version,
            "originator": lock(&self.client_name).clone(), "source": "vscode",
            "canAcceptDirectInput": if loaded { json!(true) } else { Value::Null },
            "threadSource": info["threadSource"], "agentNickname": null,
            "agentRole": null, "gitInfo": null,
            "name": info.get("name").cloned().unwrap_or(Value::Null),
            "daybreakEnabled": info["daybreakEnabled"],
            "turns": turns,
        })
    }

    /// `thread/start`, `thread/resume` and `thread/fork` results.
    fn thread_response(&self, thread_id: &str, info: &Value, with_turns: bool) -> Value {
        let cwd = info["cwd"].as_str().unwrap_or("/").to_string();
        let (sandbox, profile) = self.sandbox_of(info);
        json!({
            "thread": self.thread_payload(thread_id, info, with_turns),
            "model": self.model_of(info), "modelProvider": self.provider_of(info),
            "serviceTier": self.fake.catalog.served_tier(&info["serviceTier"], &self.model_of(info)),
            "disabledPluginIds": [], "cwd": cwd, "runtimeWorkspaceRoots": self.roots_of(info),
            "instructionSources": [],
            "approvalPolicy": self.approval_policy_of(info),
            "approvalsReviewer": self.reviewer_of(info),
            "sandbox": sandbox,
            "activePermissionProfile": profile,
            "reasoningEffort": info["effort"], "multiAgentMode": "explicitRequestOnly",
        })
    }

    fn approval_policy_of(&self, info: &Value) -> Value {
        info.get("approvalPolicy")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!(self.fake.config.approval_policy))
    }

    fn reviewer_of(&self, info: &Value) -> Value {
        info.get("approvalsReviewer")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!("user"))
    }

    fn provider_of(&self, info: &Value) -> String {
        info["provider"]
            .as_str()
            .map_or_else(|| self.fake.config.provider.clone(), str::to_string)
    }

    /// The thread's settings as resolved when it started (a thread stored before they were
    /// kept: as the configuration resolves them for its cwd).
    fn resolved_of(&self, info: &Value) -> Option<settings::Resolved> {
        settings::for_start(
            &self.fake.config,
            &self.fake.catalog,
            &self.fake.cwd,
            &json!({"cwd": info["cwd"]}),
        )
        .ok()
    }

    /// `sandbox` and `activePermissionProfile`.
    fn sandbox_of(&self, info: &Value) -> (Value, Value) {
        if info["sandbox"].is_object() {
            return (info["sandbox"].clone(), info["permissionProfile"].clone());
        }
        self.resolved_of(info)
            .map_or((Value::Null, Value::Null), |r| (r.sandbox, r.profile))
    }

    /// The thread's own runtime workspace roots (by default its cwd).
    fn own_roots(&self, info: &Value) -> Vec<String> {
        match &info["roots"] {
            Value::Array(r) => r
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => info["cwd"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect(),
        }
    }

    /// The roots it works in: its environments' when it names any.
    fn roots_of(&self, info: &Value) -> Value {
        let envs = info["environments"].as_array().cloned();
        json!(settings::shown_roots(&envs, &self.own_roots(info)))
    }

    /// The thread's environments: the local one at its cwd, unless it started with others.
    fn environments_of(&self, info: &Value) -> Value {
        match &info["environments"] {
            Value::Array(e) => Value::Array(e.clone()),
            _ => json!([{"environmentId": "local", "cwd": info["cwd"],
                         "runtimeWorkspaceRoots": self.own_roots(info)}]),
        }
    }

    /// The collaboration mode a thread runs in (codex's default mode, with the thread's model
    /// and effort).
    fn collaboration_mode(&self, info: &Value) -> Value {
        if info["collaborationMode"].is_object() {
            return info["collaborationMode"].clone();
        }
        json!({"mode": "default", "settings": {"model": self.model_of(info),
               "reasoning_effort": info["effort"], "developer_instructions": null}})
    }

    /// `thread/settings/updated`'s settings, in the real server's key order.
    fn thread_settings(&self, info: &Value) -> Value {
        let cwd = info["cwd"].as_str().unwrap_or("/").to_string();
        let (sandbox, profile) = self.sandbox_of(info);
        let plugins = match &info["disabledPluginIds"] {
            Value::Array(a) => Value::Array(a.clone()),
            _ => json!([]),
        };
        json!({
            "disabledPluginIds": plugins, "cwd": cwd,
            "environments": self.environments_of(info),
            "approvalPolicy": self.approval_policy_of(info),
            "approvalsReviewer": self.reviewer_of(info),
            "sandboxPolicy": sandbox,
            "activePermissionProfile": profile,
            "model": self.model_of(info), "modelProvider": self.provider_of(info),
            "serviceTier": info["serviceTier"], "effort": info["effort"], "summary": info["summary"],
            "collaborationMode": self.collaboration_mode(info),
            "multiAgentMode": "explicitRequestOnly", "personality": info["personality"],
        })
    }

    /// `turn/start`'s settings stay with the thread; when they change what its settings show,
    /// the real server says so (before the turn's result, mostly: the two race). A refused
    /// `turn/start` applies nothing.
    fn apply_turn_settings(
        &self,
        thread_id: &str,
        info: &Value,
        params: &Value,
    ) -> Result<Value, String> {
        let facts = &self.fake.turn_facts;
        let texts = settings::ModeTexts {
            plan: facts.plan_mode_instructions.as_deref(),
            default: facts.default_mode_instructions.as_deref(),
        };
        let next = settings::for_turn(&self.fake.config, &self.fake.cwd, info, params, &texts)?;
        let settings = self.thread_settings(&next);
        // Changed as this version shows them: a field its notification lacks changes nothing
        // (0.163.0 says nothing when only a turn's `environments` moves).
        let shown = |s: &Value| {
            let mut m = json!({"method": "thread/settings/updated",
                               "params": {"threadId": thread_id, "threadSettings": s}});
            if let Some(p) = &self.fake.projector {
                p.project(&mut m, None);
            }
            m
        };
        let changed = shown(&settings) != shown(&self.thread_settings(info));
        self.fake
            .store
            .update(|d| d["threads"][thread_id] = next.clone());
        if changed {
            self.notify(
                "thread/settings/updated",
                json!({"threadId": thread_id, "threadSettings": settings}),
            );
        }
        Ok(next)
    }

    /// A new thread's stored info from `thread/start` (or `fork`) params, and the `warning`s
    /// its start sends.
    fn new_thread_info(&self, params: &Value) -> Result<(Value, Vec<String>), String> {
        if let Some(p) = params["projectId"].as_str() {
            return Err(format!("project not found: {p}"));
        }
        let resolved = settings::for_start(
            &self.fake.config,
            &self.fake.catalog,
            &self.fake.cwd,
            params,
        )?;
        let ephemeral = params["ephemeral"].as_bool().unwrap_or(false);
        if ephemeral && !params["daybreakEnabled"].is_null() {
            return Err("daybreakEnabled is not supported for ephemeral threads".into());
        }
        let now = now_secs();
        let mut info = json!({
            "createdAt": now, "updatedAt": now, "updatedAtMs": now_ms(), "turns": [],
            "developerInstructions": params["developerInstructions"],
            "ephemeral": ephemeral,
            // Echoed into the thread as given.
            "threadSource": params["threadSource"], "historyMode": params["historyMode"],
            "daybreakEnabled": params["daybreakEnabled"], "personality": params["personality"],
        });
        resolved.store(&mut info);
        // The tools a `tool_call` step may call (any other name never reaches the client).
        if params["dynamicTools"].is_array() {
            info["dynamicTools"] = params["dynamicTools"].clone();
        }
        Ok((info, resolved.warnings))
    }

    fn thread_start(&self, id: &Value, params: &Value) -> Result<(), String> {
        let thread_id = uuid::Uuid::now_v7().to_string();
        let (info, warnings) = self.new_thread_info(params)?;
        self.fake
            .store
            .update(|d| d["threads"][&thread_id] = info.clone());
        lock(&self.fake.loaded).insert(thread_id.clone());
        self.result(id, self.thread_response(&thread_id, &info, false));
        self.notify(
            "thread/started",
            json!({"thread": self.thread_payload(&thread_id, &info, false)}),
        );
        self.session_started(&thread_id);
        self.warn(&thread_id, warnings);
        Ok(())
    }

    /// What every session start (`thread/start`, a cold `thread/resume`, `thread/fork`) says
    /// about the configuration: its startup warnings again, the under-development features it
    /// turns on, the deprecated names it uses (checked on 0.171.0).
    fn session_started(&self, thread_id: &str) {
        let config = self.fake.codex_home.join("config.toml");
        let cfg = &self.fake.config;
        if let Some(message) = cfg.ignored_keys_warning(&config) {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
        let unstable = cfg.unstable_features(&self.fake.unstable);
        if !unstable.is_empty() && !cfg.bool("suppress_unstable_features_warning") {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": format!(
                    "Under-development features enabled: {}. Under-development features are \
                     incomplete and may behave unpredictably. To suppress this warning, set \
                     `suppress_unstable_features_warning = true` in {}.",
                    unstable.join(", "), path_str(&config))}),
            );
        }
        for (summary, details) in cfg.deprecations() {
            self.notify(
                "deprecationNotice",
                json!({"summary": summary, "details": details}),
            );
        }
    }

    /// A stored thread, with the real server's errors for a bad or unknown id.
    fn stored(&self, params: &Value, what: &str, missing: &str) -> Result<(String, Value), String> {
        let thread_id = params["threadId"].as_str().unwrap_or_default().to_string();
        check_uuid(&thread_id, what)?;
        let forget = scenario(&self.fake.dir)["forget_threads"].as_bool() == Some(true);
        // An ephemeral thread lives only in the process that started it.
        let gone = |info: &Value| {
            info["ephemeral"] == true && !lock(&self.fake.loaded).contains(&thread_id)
        };
        match self.fake.store.load()["threads"].get(&thread_id) {
            Some(info) if !forget && !gone(info) => Ok((thread_id, info.clone())),
            _ => Err(format!("{missing}{thread_id}")),
        }
    }

    /// The installation's id, kept in `CODEX_HOME/installation_id` as the real server keeps it
    /// (so a restarted server reports the same one).
    fn installation_id(&self) -> String {
        let path = self.fake.codex_home.join("installation_id");
        match std::fs::read_to_string(&path) {
            Ok(id) if uuid::Uuid::parse_str(id.trim()).is_ok() => id.trim().to_string(),
            _ => {
                let id = uuid::Uuid::new_v4().to_string();
                let _ = std::fs::write(&path, &id);
                id
            }
        }
    }

    /// A loaded thread that can have goals (an ephemeral one cannot).
    fn loaded_with_goals(&self, params: &Value) -> Result<(String, Value), String> {
        let (thread_id, info) = self.loaded(params)?;
        if info["ephemeral"] == true {
            return Err(format!(
                "ephemeral thread does not support goals: {thread_id}"
            ));
        }
        Ok((thread_id, info))
    }

    /// A thread this process has loaded (turns, goals, compaction need one).
    fn loaded(&self, params: &Value) -> Result<(String, Value), String> {
        let thread_id = params["threadId"].as_str().unwrap_or_default().to_string();
        check_uuid(&thread_id, "thread")?;
        let info = self.fake.store.load()["threads"].get(&thread_id).cloned();
        match info {
            Some(info) if lock(&self.fake.loaded).contains(&thread_id) => Ok((thread_id, info)),
            _ => Err(format!("thread not found: {thread_id}")),
        }
    }

    /// Where a thread's rollout lives, as the real server names it:
    /// `CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDTHH-MM-SS-<id>.jsonl`, stamped with the
    /// time in the thread's UUIDv7; an archived thread's in `CODEX_HOME/archived_sessions/`.
    fn rollout_path(&self, thread_id: &str, info: &Value) -> String {
        path_str(&self.rollout_path_as(thread_id, info["archived"] == true))
    }

    fn rollout_path_as(&self, thread_id: &str, archived: bool) -> PathBuf {
        let ms = uuid::Uuid::parse_str(thread_id)
            .ok()
            .and_then(|u| u.get_timestamp())
            .map_or(0, |t| t.to_unix().0);
        let (y, mo, d, h, mi, s) = super::state::civil(ms as i64);
        let name = format!("rollout-{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}-{thread_id}.jsonl");
        if archived {
            self.fake.codex_home.join("archived_sessions").join(name)
        } else {
            self.fake
                .codex_home
                .join("sessions")
                .join(format!("{y:04}/{mo:02}/{d:02}"))
                .join(name)
        }
    }

    /// `thread/resume`, as probed on the real server: `history` (experimental) starts a fresh
    /// thread from the given items whatever `threadId` says; `path` names the rollout to resume
    /// (relative to `CODEX_HOME`); otherwise the thread is looked up by id.
    fn thread_resume(&self, id: &Value, params: &Value) -> Result<(), String> {
        let given = params["threadId"].as_str().unwrap_or_default();
        let running = lock(&self.fake.loaded).contains(given);
        if let Some(history) = params["history"].as_array() {
            if history.is_empty() {
                return Err("history must not be empty".into());
            }
            if running {
                return Err(format!(
                    "cannot resume thread {given} with history while it is already running"
                ));
            }
            return self.resume_from_history(id, history);
        }
        let path = params["path"].as_str().filter(|p| !p.is_empty());
        let (thread_id, info) = match path {
            Some(p) => self.stored_at_path(given, running, p)?,
            None => self.stored(params, "session", "no rollout found for thread id ")?,
        };
        let with_turns = params["excludeTurns"].as_bool() != Some(true);
        if with_turns {
            self.hydration_notice();
        }
        // A rollout is written with a thread's first turn: before it, another process finds
        // nothing to resume.
        if !running && info["turns"].as_array().is_none_or(Vec::is_empty) && path.is_none() {
            return Err(format!("no rollout found for thread id {thread_id}"));
        }
        let newly = lock(&self.fake.loaded).insert(thread_id.clone());
        let recorded_model = info["model"].as_str().map(str::to_string);
        let mut info = info;
        let mut warnings = Vec::new();
        // A thread taken up by this process gets its settings back, with the params' over them
        // (and keeps those); one already loaded here ignores the params (checked on 0.171.0).
        if newly && info["sandbox"].is_object() {
            // Loaded afresh: no error of an earlier process's turn shows.
            if let Some(t) = info.as_object_mut() {
                t.remove("systemError");
            }
            match settings::for_start(
                &self.fake.config,
                &self.fake.catalog,
                &self.fake.cwd,
                &resumed_params(&info, params, &self.fake.cwd),
            ) {
                Ok(mut r) => {
                    // Its settings warn as a start's do (a configured tier the model does not
                    // offer; seen on 0.163.0, 0.169.0 and 0.171.0).
                    warnings = std::mem::take(&mut r.warnings);
                    if let Some(setting) = kept_sandbox(&info, params) {
                        r.sandbox = info["sandbox"].clone();
                        r.profile = info["permissionProfile"].clone();
                        r.setting = setting;
                    }
                    r.store(&mut info);
                    let kept = info.clone();
                    self.fake.store.update(|d| d["threads"][&thread_id] = kept);
                }
                Err(e) => {
                    lock(&self.fake.loaded).remove(&thread_id);
                    return Err(e);
                }
            }
        }
        if newly && self.fake.turn_facts.service_tier_not_resumed {
            if let Some(t) = info.as_object_mut() {
                t.remove("serviceTier");
            }
            self.fake.store.update(|d| {
                if let Some(t) = d["threads"][&thread_id].as_object_mut() {
                    t.remove("serviceTier");
                }
            });
        }
        if newly {
            self.notify(
                "thread/status/changed",
                json!({"threadId": thread_id, "status": {"type": "idle"}}),
            );
        }
        // A thread taken up with another model than it was recorded with says so.
        if let (true, Some(now)) = (newly, params["model"].as_str()) {
            let was = recorded_model.as_deref().unwrap_or_default();
            if !was.is_empty() && was != now {
                self.notify(
                    "warning",
                    json!({"threadId": thread_id, "message": format!(
                        "This session was recorded with model `{was}` but is resuming with \
                         `{now}`. Consider switching back to `{was}` as it may affect Codex \
                         performance.")}),
                );
            }
        }
        let mut result = self.resume_response(&thread_id, &info, with_turns);
        if params["initialTurnsPage"].is_object() {
            result["initialTurnsPage"] =
                self.turns_page(&thread_id, &info, &params["initialTurnsPage"]);
        }
        self.result(id, result);
        self.report_usage(&thread_id, &info);
        self.notify("thread/goal/cleared", json!({"threadId": thread_id}));
        if newly {
            self.session_started(&thread_id);
        }
        self.warn(&thread_id, warnings);
        Ok(())
    }

    /// `thread/resume`'s result: `thread/start`'s plus the collaboration mode and paging cursors.
    fn resume_response(&self, thread_id: &str, info: &Value, with_turns: bool) -> Value {
        let mut r = self.thread_response(thread_id, info, with_turns);
        // A resumed thread reports the git state of its cwd (a started one does not yet).
        r["thread"]["gitInfo"] = git_info(info["cwd"].as_str().unwrap_or("/"));
        let mut out = Map::new();
        for (k, v) in r.as_object_mut().map(std::mem::take).unwrap_or_default() {
            let after_effort = k == "reasoningEffort";
            out.insert(k, v);
            if after_effort {
                out.insert("collaborationMode".into(), self.collaboration_mode(info));
            }
        }
        out.insert("initialTurnsPage".into(), Value::Null);
        // Paging back from the last turn and the last item of the rollout (anchors included).
        let rollout = &info["rollout"];
        let cursor = |ordinal: &Value, kind| {
            rollout_cursor(thread_id, ordinal.as_u64().filter(|n| *n > 0), true, kind)
        };
        out.insert(
            "turnsBackwardsCursor".into(),
            cursor(&rollout["turn"], "turns"),
        );
        out.insert(
            "itemsBackwardsCursor".into(),
            cursor(&rollout["item"], "itemsByCreatedAtOrdinal"),
        );
        Value::Object(out)
    }

    /// A new thread whose rollout starts with `history`; its preview is the first user text.
    fn resume_from_history(&self, id: &Value, history: &[Value]) -> Result<(), String> {
        let thread_id = uuid::Uuid::now_v7().to_string();
        let preview = history
            .iter()
            .filter(|i| i["type"] == "message" && i["role"] == "user")
            .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
            .find_map(|c| c["text"].as_str().map(str::to_string))
            .unwrap_or_default();
        let (mut info, _) = self.new_thread_info(&json!({}))?;
        info["preview"] = json!(preview);
        info["history"] = json!(history);
        self.fake
            .store
            .update(|d| d["threads"][&thread_id] = info.clone());
        self.write_rollout(&thread_id);
        lock(&self.fake.loaded).insert(thread_id.clone());
        self.notify(
            "thread/status/changed",
            json!({"threadId": thread_id, "status": {"type": "idle"}}),
        );
        self.result(id, self.resume_response(&thread_id, &info, false));
        self.notify("thread/goal/cleared", json!({"threadId": thread_id}));
        Ok(())
    }

    /// Writes the rollout file a thread's `path` names (the real server writes it on the first
    /// turn, or at once for a history resume), so that `thread/resume {path}` finds it.
    pub fn write_rollout(&self, thread_id: &str) {
        // Written for a thread at work: never an archived one.
        let path = self.rollout_path_as(thread_id, false);
        if path.exists() {
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let meta = json!({"type": "session_meta", "payload": {"id": thread_id}});
        let _ = std::fs::write(&path, format!("{meta}\n"));
    }

    /// The thread whose rollout is at `path`, with the real server's errors.
    fn stored_at_path(
        &self,
        given: &str,
        running: bool,
        path: &str,
    ) -> Result<(String, Value), String> {
        let abs = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.fake.codex_home.join(path)
        };
        let shown = path_str(&abs);
        if running {
            let active = path_str(&self.rollout_path_as(given, false));
            if active != shown {
                return Err(format!(
                    "cannot resume running thread {given} with stale path: requested `{shown}`, \
                     active `{active}`"
                ));
            }
        }
        if abs.is_dir() {
            return Err(format!(
                "failed to resolve rollout path `{shown}`: path is a directory"
            ));
        }
        let text = std::fs::read_to_string(&abs).map_err(|_| {
            format!("failed to resolve rollout path `{shown}`: file does not exist")
        })?;
        let meta_id = text
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .and_then(|m| m["payload"]["id"].as_str().map(str::to_string));
        let info = meta_id
            .as_ref()
            .and_then(|t| self.fake.store.load()["threads"].get(t).cloned());
        match (meta_id, info) {
            (Some(t), Some(info)) => Ok((t, info)),
            _ => Err(format!(
                "{INTERNAL_PREFIX}failed to read thread: thread-store internal error: failed to \
                 read session metadata {shown}: rollout at {shown} is empty"
            )),
        }
    }

    /// What the real server says when a whole history is sent with a thread.
    fn hydration_notice(&self) {
        self.notify(
            "deprecationNotice",
            json!({"summary": "Full-history hydration is deprecated for paginated threads; \
                               use `excludeTurns: true`, then page with `thread/turns/list` \
                               and `thread/items/list`.", "details": null}),
        );
    }

    /// A thread taken up with turns (resumed, forked) reports its usage as of its last turn
    /// (only once a model response has reported usage: a turn that died first left none).
    fn report_usage(&self, thread_id: &str, info: &Value) {
        let last_turn = info["turns"].as_array().and_then(|t| t.last());
        if let (Some(last_turn), true) = (last_turn, info["usage"].is_object()) {
            let zeros = turns::breakdown(0, 0, 0, 0);
            let or_zeros = |v: &Value| {
                if v.is_object() {
                    v.clone()
                } else {
                    zeros.clone()
                }
            };
            self.notify(
                "thread/tokenUsage/updated",
                json!({"threadId": thread_id, "turnId": last_turn["id"],
                       "tokenUsage": {"total": or_zeros(&info["usage"]),
                                      "last": or_zeros(&info["lastUsage"]),
                                      "modelContextWindow": turns::context_window(self, thread_id)}}),
            );
        }
    }

    fn thread_fork(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (source, info) = self.stored(params, "thread", "no rollout found for thread id ")?;
        // Its rollout is written with its first turn: before, there is nothing to fork.
        if info["turns"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("no rollout found for thread id {source}"));
        }
        let thread_id = uuid::Uuid::now_v7().to_string();
        // A fork keeps its source's cwd, approval settings and sandbox setting (a
        // `workspace-write` mode or policy excepted: the configured default then; on 0.163.0
        // every mode and policy, `fork_sandbox_mode_not_kept`) unless its params say
        // otherwise; model, effort, tier and roots come from the params and the configuration.
        let mut p = params.as_object().cloned().unwrap_or_default();
        let absent = |p: &Map<String, Value>, k: &str| p.get(k).is_none_or(Value::is_null);
        for key in ["cwd", "approvalPolicy", "approvalsReviewer"] {
            if absent(&p, key) && !info[key].is_null() {
                p.insert(key.into(), info[key].clone());
            }
        }
        if absent(&p, "sandbox") && absent(&p, "permissions") {
            match info["sandboxSetting"]
                .as_str()
                .and_then(|s| s.split_once(':'))
            {
                Some(("profile", id)) => {
                    p.insert("permissions".into(), json!(id));
                }
                _ if self.fake.turn_facts.fork_sandbox_mode_not_kept => {}
                _ => {
                    if let Some(m) = setting_mode(&info) {
                        p.insert("sandbox".into(), json!(m));
                    }
                }
            }
        }
        let (mut new, warnings) = self.new_thread_info(&Value::Object(p))?;
        new["turns"] = info["turns"].clone();
        new["preview"] = if self.fake.turn_facts.fork_preview_empty {
            json!("")
        } else {
            info["preview"].clone()
        };
        new["forkedFromId"] = json!(source);
        // Its source's `daybreakEnabled` too (fork params have none; all three versions).
        for key in ["usage", "lastUsage", "daybreakEnabled"] {
            new[key] = info[key].clone();
        }
        // A cold fork warns before its result.
        self.warn(&thread_id, warnings);
        self.fake
            .store
            .update(|d| d["threads"][&thread_id] = new.clone());
        lock(&self.fake.loaded).insert(thread_id.clone());
        let with_turns = params["excludeTurns"].as_bool() != Some(true);
        if with_turns {
            self.hydration_notice();
        }
        self.result(id, self.thread_response(&thread_id, &new, with_turns));
        self.report_usage(&thread_id, &new);
        self.notify(
            "thread/started",
            json!({"thread": self.thread_payload(&thread_id, &new, false)}),
        );
        self.session_started(&thread_id);
        Ok(())
    }

    fn thread_read(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "thread not loaded: ")?;
        let with_turns = params["includeTurns"].as_bool() == Some(true);
        if with_turns && info["ephemeral"] == true {
            return Err("ephemeral threads do not support includeTurns".into());
        }
        // Before its first turn a thread has no history to read: a paginated one's store
        // cannot list turns yet, a legacy one is not written yet (both seen on 0.171.0).
        let paginated = info["historyMode"].as_str() != Some("legacy");
        if with_turns && info["turns"].as_array().is_none_or(Vec::is_empty) {
            if paginated {
                self.send(json!({"error": {"code": -32601,
                    "message": "list_turns is not supported yet"}, "id": id}));
                return Ok(());
            }
            return Err(format!(
                "thread {thread_id} is not materialized yet; includeTurns is unavailable before \
                 first user message"
            ));
        }
        if with_turns && paginated {
            self.notify(
                "deprecationNotice",
                json!({"summary": "Full-history hydration is deprecated for paginated threads; \
                                   omit `includeTurns` or set it to `false`, then page with \
                                   `thread/turns/list` and `thread/items/list`.", "details": null}),
            );
        }
        self.result(
            id,
            json!({"thread": self.thread_payload(&thread_id, &info, with_turns),
                   "readState": read_state(&thread_id, &info)}),
        );
        Ok(())
    }

    /// `thread/readState/update`: marks the thread read (no unread position) or unread (from
    /// its start), guarded by the revision the client saw.
    fn read_state_update(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "thread not loaded: ")?;
        let current = read_state(&thread_id, &info);
        if current["revision"] != params["expectedRevision"] {
            self.send(json!({"error": {"code": -32600,
                "data": {"reason": "readStateConflict", "readState": current},
                "message": "read state changed"}, "id": id}));
            return Ok(());
        }
        let first = match params["operation"]["type"].as_str() {
            Some("unread") => json!({"type": "threadStart"}),
            _ => Value::Null,
        };
        let revision = uuid::Uuid::new_v4().to_string();
        self.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            t["firstUnread"] = first.clone();
            t["readRevision"] = json!(revision);
        });
        let state = json!({"firstUnread": first, "revision": revision});
        self.notify(
            "thread/readState/changed",
            json!({"threadId": thread_id, "readState": state}),
        );
        self.result(id, json!({"readState": state}));
        Ok(())
    }

    /// `thread/loaded/list`: the threads this process holds, oldest first.
    fn loaded_list(&self, id: &Value) -> Result<(), String> {
        let mut data: Vec<String> = lock(&self.fake.loaded).iter().cloned().collect();
        data.sort();
        self.result(id, json!({"data": data, "nextCursor": null}));
        Ok(())
    }

    /// `thread/unsubscribe`: the thread stays loaded; this connection is off its list.
    fn unsubscribe(&self, id: &Value, params: &Value) -> Result<(), String> {
        let thread_id = params["threadId"].as_str().unwrap_or_default().to_string();
        let status = if !lock(&self.fake.loaded).contains(&thread_id) {
            "notLoaded"
        } else if lock(&self.unsubscribed).insert(thread_id) {
            "unsubscribed"
        } else {
            "notSubscribed"
        };
        self.result(id, json!({"status": status}));
        Ok(())
    }

    /// `thread/delete`: unloaded first (as archiving does), then gone with its rollout.
    fn thread_delete(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "no rollout found for thread id ")?;
        if lock(&self.fake.loaded).remove(&thread_id) {
            self.notify(
                "thread/status/changed",
                json!({"threadId": thread_id, "status": {"type": "notLoaded"}}),
            );
        }
        let _ = std::fs::remove_file(self.rollout_path(&thread_id, &info));
        self.fake.store.update(|d| {
            if let Some(ts) = d["threads"].as_object_mut() {
                ts.remove(&thread_id);
            }
        });
        self.result(id, json!({}));
        self.notify("thread/deleted", json!({"threadId": thread_id}));
        Ok(())
    }

    /// `thread/items/list`: pages of the stored items by rollout position (oldest first by
    /// default; `turnId` keeps one turn's), with the real server's cursors.
    fn items_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "thread not loaded: ")?;
        if info["ephemeral"] == true {
            self.send(json!({"error": {"code": -32601,
                "message": "thread/items/list is not supported yet"}, "id": id}));
            return Ok(());
        }
        let mut entries: Vec<(u64, Value)> = Vec::new();
        for t in info["turns"].as_array().into_iter().flatten() {
            if params["turnId"].is_string() && t["id"] != params["turnId"] {
                continue;
            }
            let ords = t["itemOrdinals"].as_array().cloned().unwrap_or_default();
            for (item, ord) in t["items"].as_array().into_iter().flatten().zip(ords) {
                entries.push((
                    ord.as_u64().unwrap_or(0),
                    json!({"turnId": t["id"], "item": item, "startedAtMs": item["startedAtMs"],
                           "completedAtMs": item["completedAtMs"]}),
                ));
            }
        }
        let (data, next, back) = page(entries, params, params["sortDirection"] == "desc");
        let cursor = |o: Option<u64>, include| {
            rollout_cursor(&thread_id, o, include, "itemsByCreatedAtOrdinal")
        };
        self.result(
            id,
            json!({"data": data, "nextCursor": cursor(next, false),
                   "backwardsCursor": cursor(back, true)}),
        );
        Ok(())
    }

    /// `thread/turns/list`: pages of the stored turns by rollout position (newest first by
    /// default), the real server's cursors, summary items by default.
    fn turns_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "thread not loaded: ")?;
        if info["ephemeral"] == true {
            return Err("ephemeral threads do not support thread/turns/list".into());
        }
        // Its rollout is written with the first user message: before that there is nothing to
        // page (0.171.0, a turn/start refused, then thread/turns/list: fidelity seed 20261207).
        if info["turns"].as_array().is_none_or(|t| t.is_empty()) {
            return Err(format!(
                "thread {thread_id} is not materialized yet; thread/turns/list is unavailable \
                 before first user message"
            ));
        }
        self.result(id, self.turns_page(&thread_id, &info, params));
        Ok(())
    }

    /// A page of a thread's turns (`thread/turns/list`, `thread/resume`'s `initialTurnsPage`).
    fn turns_page(&self, thread_id: &str, info: &Value, params: &Value) -> Value {
        let view = params["itemsView"].as_str().unwrap_or("summary");
        let turns: Vec<(u64, &Value)> = info["turns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| (t["rolloutOrdinal"].as_u64().unwrap_or(0), t))
            .collect();
        let (page, next, back) = page(turns, params, params["sortDirection"] != "asc");
        let cursor = |o: Option<u64>, include| rollout_cursor(thread_id, o, include, "turns");
        let data: Vec<Value> = page
            .iter()
            .map(|t| self.turn_payload(thread_id, t, view))
            .collect();
        json!({"data": data, "nextCursor": cursor(next, false),
               "backwardsCursor": cursor(back, true)})
    }

    fn thread_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let archived = params["archived"].as_bool() == Some(true);
        let data = self.fake.store.load();
        let mut threads: Vec<(i64, Value, Value)> = data["threads"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, info)| info["archived"].as_bool().unwrap_or(false) == archived)
            .filter(|(_, info)| !info["ephemeral"].as_bool().unwrap_or(false))
            // A thread nobody has said anything in yet is not listed (seen on 0.171.0).
            .filter(|(_, info)| info["preview"].as_str().is_some_and(|p| !p.is_empty()))
            .map(|(tid, info)| {
                // Newest first by the millisecond (two threads updated in one second: the
                // later one first, as a fork listed before its source shows on 0.171.0).
                let updated = info["updatedAtMs"]
                    .as_i64()
                    .unwrap_or_else(|| info["updatedAt"].as_i64().unwrap_or(0) * 1000);
                let mut t = self.thread_payload(tid, info, false);
                // Listed threads do not say whether they take direct input.
                t["canAcceptDirectInput"] = Value::Null;
                // Nor where they came from: the list is read from codex's thread index, which
                // keeps no `threadSource` (`thread/read` and a resume still show it), so every
                // listed thread has a read state, a client's own kind too (0.163.0, 0.169.0 and
                // 0.171.0).
                t["threadSource"] = Value::Null;
                (updated, t, revision_state(tid, info))
            })
            .collect();
        threads.sort_by_key(|(u, _, _)| std::cmp::Reverse(*u));
        let limit = params["limit"].as_u64().map_or(usize::MAX, |l| l as usize);
        let more = threads.len() > limit;
        threads.truncate(limit);
        // The cursors are the edge threads' times (ISO 8601, as the real server writes them).
        let at = |t: Option<&(i64, Value, Value)>| match t {
            Some((u, _, _)) => {
                let (y, mo, d, h, mi, s) = super::state::civil(u.div_euclid(1000));
                json!(format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.000Z"))
            }
            None => Value::Null,
        };
        let next = at(threads.last().filter(|_| more));
        let back = at(threads.first());
        let mut read_states = Map::new();
        for (_, t, r) in &threads {
            if !r.is_null() {
                read_states.insert(t["id"].as_str().unwrap_or_default().to_string(), r.clone());
            }
        }
        let data: Vec<Value> = threads.into_iter().map(|(_, t, _)| t).collect();
        self.result(
            id,
            json!({"data": data, "readStates": read_states, "nextCursor": next,
                   "backwardsCursor": back}),
        );
        Ok(())
    }

    fn thread_archive(&self, id: &Value, params: &Value, archive: bool) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "no rollout found for thread id ")?;
        if info["ephemeral"] == true {
            return Err(format!("no rollout found for thread id {thread_id}"));
        }
        let info = self.fake.store.update(|d| {
            d["threads"][&thread_id]["archived"] = json!(archive);
            d["threads"][&thread_id].clone()
        });
        // The rollout moves between `sessions/` and `archived_sessions/`, as on the real server.
        let (from, to) = (
            self.rollout_path_as(&thread_id, !archive),
            self.rollout_path_as(&thread_id, archive),
        );
        if let Some(dir) = to.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::rename(from, to);
        if archive {
            // Archiving unloads the thread.
            if lock(&self.fake.loaded).remove(&thread_id) {
                self.notify(
                    "thread/status/changed",
                    json!({"threadId": thread_id, "status": {"type": "notLoaded"}}),
                );
            }
            self.result(id, json!({}));
            self.notify("thread/archived", json!({"threadId": thread_id}));
        } else {
            self.result(
                id,
                json!({"thread": self.thread_payload(&thread_id, &info, false)}),
            );
            self.notify("thread/unarchived", json!({"threadId": thread_id}));
        }
        Ok(())
    }

    fn thread_name_set(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.stored(params, "thread", "no rollout found for thread id ")?;
        if info["ephemeral"] == true {
            return Err(format!(
                "ephemeral thread does not support metadata updates: {thread_id}"
            ));
        }
        let name = params["name"].clone();
        self.fake
            .store
            .update(|d| d["threads"][&thread_id]["name"] = name.clone());
        self.result(id, json!({}));
        self.notify(
            "thread/name/updated",
            json!({"threadId": thread_id, "threadName": name}),
        );
        Ok(())
    }

    // --- goals ---------------------------------------------------------------------------------

    fn goal_set(self: &Arc<Self>, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.loaded_with_goals(params)?;
        let now = now_secs();
        let mut goal = info["goal"].clone();
        let fresh = !goal.is_object() || params["objective"].is_string();
        if fresh {
            goal = turns::new_goal(&thread_id, "");
        }
        if let Some(o) = params["objective"].as_str() {
            goal["objective"] = json!(o);
        }
        if params["status"].is_string() {
            goal["status"] = params["status"].clone();
        }
        if !params["tokenBudget"].is_null() {
            goal["tokenBudget"] = params["tokenBudget"].clone();
        }
        goal["updatedAt"] = json!(now);
        let g = goal.clone();
        self.fake
            .store
            .update(|d| d["threads"][&thread_id]["goal"] = g.clone());
        self.result(id, json!({"goal": goal}));
        self.notify(
            "thread/goal/updated",
            json!({"threadId": thread_id, "turnId": null, "goal": goal}),
        );
        let running = lock(&self.fake.active).get(&thread_id).cloned();
        match (goal["status"].as_str(), running) {
            // A running goal sees the new status at its next rollover.
            (Some(_), Some(ctl)) => ctl.set_goal_status(goal["status"].as_str().unwrap_or("")),
            // An active goal on an idle thread starts running on its own, as in codex.
            (Some("active"), None) => {
                turns::start(self, &thread_id, ServerTurn::Goal)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn goal_get(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (_, info) = self.loaded_with_goals(params)?;
        let goal = info.get("goal").cloned().unwrap_or(Value::Null);
        self.result(id, json!({"goal": goal}));
        Ok(())
    }

    fn goal_clear(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.loaded_with_goals(params)?;
        let had = info["goal"].is_object();
        self.fake.store.update(|d| {
            if let Some(t) = d["threads"][&thread_id].as_object_mut() {
                t.remove("goal");
            }
        });
        self.result(id, json!({"cleared": had}));
        if had {
            self.notify("thread/goal/cleared", json!({"threadId": thread_id}));
        }
        Ok(())
    }

    // --- turns ---------------------------------------------------------------------------------

    fn turn_start(self: &Arc<Self>, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.loaded(params)?;
        check_input(&params["input"])?;
        let nonempty = params["input"].as_array().is_some_and(|a| !a.is_empty());
        if !params["toolOutput"].is_null() && nonempty {
            return Err("`toolOutput` cannot be combined with nonempty `input`".into());
        }
        let info = self.apply_turn_settings(&thread_id, &info, params)?;
        // Every turn on a model without metadata says so, before the turn's result.
        let model = self.model_of(&info);
        if let Some(message) = self.fake.catalog.unknown_model_warning(&model) {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
        turns::start_for_request(self, id, &thread_id, params)
    }

    fn active_turn(&self, params: &Value, what: &str) -> Result<Arc<TurnCtl>, String> {
        let (thread_id, _) = self.loaded(params)?;
        lock(&self.fake.active)
            .get(&thread_id)
            .cloned()
            .ok_or_else(|| format!("no active turn to {what}"))
    }

    fn turn_interrupt(&self, id: &Value, params: &Value) -> Result<(), String> {
        let ctl = self.active_turn(params, "interrupt")?;
        let want = params["turnId"].as_str().unwrap_or_default();
        let current = ctl.turn_id();
        if want != current {
            return Err(format!(
                "expected active turn id {want} but found {current}"
            ));
        }
        ctl.interrupt();
        ctl.wait_acked();
        self.result(id, json!({}));
        ctl.responded.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn turn_steer(&self, id: &Value, params: &Value) -> Result<(), String> {
        // In the real server's order of checks (`turn_steer_inner`, seen on 0.171.0).
        self.loaded(params)?;
        let want = params["expectedTurnId"].as_str().unwrap_or_default();
        if want.is_empty() {
            return Err("expectedTurnId must not be empty".into());
        }
        check_input(&params["input"])?;
        let ctl = self.active_turn(params, "steer")?;
        let current = ctl.turn_id();
        if want != current {
            return Err(format!(
                "expected active turn id `{want}` but found `{current}`"
            ));
        }
        if params["input"].as_array().is_none_or(Vec::is_empty) {
            return Err("input must not be empty".into());
        }
        ctl.steer(params.clone());
        self.result(id, json!({"turnId": current}));
        Ok(())
    }

    fn compact_start(self: &Arc<Self>, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, _) = self.loaded(params)?;
        self.result(id, json!({}));
        // The real server asks the model for the summary: that takes the next scripted turn.
        turns::start(self, &thread_id, ServerTurn::Compaction).map(|_| ())
    }
}

/// The sandbox mode a thread's setting comes back as in a fork or a cold resume: its mode, or
/// the mode of a policy a turn gave; none for workspace-write (the configured sandbox then).
/// Seen on 0.171.0 (both) and 0.163.0 (resume).
fn setting_mode(info: &Value) -> Option<String> {
    match info["sandboxSetting"].as_str()? {
        "policy" => match info["sandbox"]["type"].as_str()? {
            "readOnly" => Some("read-only".into()),
            "dangerFullAccess" => Some("danger-full-access".into()),
            _ => None,
        },
        s => match s.split_once(':')? {
            ("mode", m) if m != "workspace-write" => Some(m.to_string()),
            _ => None,
        },
    }
}

/// The sandbox setting a thread taken up again without a sandbox of its own keeps, with its
/// sandbox as it was (codex takes the thread's stored permission profile back; seen on 0.163.0,
/// 0.169.0 and 0.171.0): a sandbox set over no workspace roots (`environments: []`: it writes
/// `/tmp` only, not the cwd the result shows, whatever cwd the resume or a later turn gives),
/// kept as `rootless:<mode>`. Other settings come back through [`resumed_params`].
fn kept_sandbox(info: &Value, params: &Value) -> Option<Value> {
    let given = |v: &Value, k: &str| v.get(k).is_some_and(|x| !x.is_null());
    if given(params, "sandbox")
        || given(params, "permissions")
        || given(&params["config"], "sandbox_mode")
        || given(&params["config"], "default_permissions")
    {
        return None;
    }
    let setting = info["sandboxSetting"].as_str()?;
    match setting.split_once(':')? {
        ("mode", m) if info["environments"] == json!([]) => Some(json!(format!("rootless:{m}"))),
        ("rootless", _) => Some(json!(setting)),
        _ => None,
    }
}

/// A cold `thread/resume`'s settings as `thread/start` params: the thread's own (its sandbox
/// setting as a fork keeps it, its effort unless the model changes), the request's over them.
fn resumed_params(info: &Value, params: &Value, server_cwd: &Path) -> Value {
    let mut p = Map::new();
    for (from, to) in [
        ("cwd", "cwd"),
        ("approvalPolicy", "approvalPolicy"),
        ("approvalsReviewer", "approvalsReviewer"),
        ("model", "model"),
        ("provider", "modelProvider"),
        ("serviceTier", "serviceTier"),
        ("roots", "runtimeWorkspaceRoots"),
    ] {
        if !info[from].is_null() {
            p.insert(to.into(), info[from].clone());
        }
    }
    match info["sandboxSetting"]
        .as_str()
        .and_then(|s| s.split_once(':'))
    {
        Some(("profile", id)) => {
            p.insert("permissions".into(), json!(id));
        }
        _ => {
            if let Some(m) = setting_mode(info) {
                p.insert("sandbox".into(), json!(m));
            }
        }
    }
    // `serviceTier: null` asks for the standard tier; other nulls are absent.
    let given: Map<String, Value> = params
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| !v.is_null() || *k == "serviceTier")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if given.contains_key("sandbox") || given.contains_key("permissions") {
        p.remove("sandbox");
        p.remove("permissions");
    }
    // A new cwd takes the old one's place among the thread's roots.
    if let (Some(new), Some(old), Some(Value::Array(roots))) = (
        given.get("cwd").and_then(Value::as_str),
        info["cwd"].as_str(),
        p.get_mut("runtimeWorkspaceRoots"),
    ) {
        let new = settings::resolve_path(new, server_cwd);
        for r in roots.iter_mut() {
            if r == old {
                *r = json!(new);
            }
        }
    }
    let config_sets = |k: &str| given.get("config").and_then(|c| c.get(k)).is_some();
    // The thread's own settings are only defaults: the request's `config` map sets over them
    // as over config.toml (a cold resume with `config: {approval_policy: "never"}` runs
    // under never; seen on 0.171.0).
    for (key, thread_keys) in [
        ("approval_policy", &["approvalPolicy"][..]),
        ("approvals_reviewer", &["approvalsReviewer"]),
        ("sandbox_mode", &["sandbox", "permissions"]),
        ("default_permissions", &["sandbox", "permissions"]),
        ("model", &["model"]),
        ("model_provider", &["modelProvider"]),
        ("service_tier", &["serviceTier"]),
    ] {
        if config_sets(key) {
            for k in thread_keys {
                p.remove(*k);
            }
        }
    }
    let model_changed = given.contains_key("model")
        || given.contains_key("modelProvider")
        || config_sets("model")
        || config_sets("model_reasoning_effort");
    p.extend(given);
    let mut v = Value::Object(p);
    if !model_changed && !info["effort"].is_null() {
        v["config"]["model_reasoning_effort"] = info["effort"].clone();
    }
    v
}

/// What codex refuses in a turn's input before anything else (0.171.0): an image it would have
/// to fetch.
fn check_input(input: &Value) -> Result<(), String> {
    let remote = input.as_array().into_iter().flatten().any(|i| {
        i["type"] == "image" && i["url"].as_str().is_some_and(|u| !u.starts_with("data:"))
    });
    if remote {
        return Err("remote image URLs are not supported; use an inline data URL instead".into());
    }
    Ok(())
}

/// Notifications codex sends only to clients with the `experimentalApi` capability (read off
/// 0.171.0's per-notification table; its stable schema bundle lists them all). Other
/// notifications go to every client, experimental fields included.
const EXPERIMENTAL_NOTIFICATIONS: &[&str] = &[
    "thread/readState/changed",
    "thread/prediction/updated",
    "thread/queue/changed",
    "project/changed",
    "thread/project/updated",
    "thread/environment/connected",
    "thread/environment/disconnected",
    "thread/settings/updated",
    "autoApprovalReview/strictReviewRequired",
    "process/outputDelta",
    "process/exited",
    "thread/search/partial",
    "mcpServer/event/stream/notification",
    "turn/moderationMetadata",
    "thread/realtime/started",
    "thread/realtime/itemAdded",
    "thread/realtime/item/started",
    "thread/realtime/item/transcript/delta",
    "thread/realtime/item/completed",
    "thread/realtime/transcript/delta",
    "thread/realtime/transcript/done",
    "thread/realtime/outputAudio/delta",
    "thread/realtime/sdp",
    "thread/realtime/error",
    "thread/realtime/closed",
];

/// `Debian 12.0.0`: the OS as codex's user agent names it (`/etc/os-release`).
fn os_description() -> String {
    let release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let field = |k: &str| {
        release
            .lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(|v| v.trim_matches('"').to_string())
    };
    let name = field("NAME")
        .and_then(|n| n.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "Linux".into());
    let version = field("VERSION_ID").unwrap_or_default();
    let mut parts: Vec<&str> = version.split('.').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return name;
    }
    while parts.len() < 3 {
        parts.push("0");
    }
    format!("{name} {}", parts.join("."))
}

/// The terminal codex's user agent names: `TERM_PROGRAM`, else `TERM`, else `unknown`.
fn terminal_name() -> String {
    ["TERM_PROGRAM", "TERM"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// `{"sha", "branch", "originUrl"}` of the repository holding `cwd`, or null outside one.
fn git_info(cwd: &str) -> Value {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(cwd)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let Some(sha) = git(&["rev-parse", "HEAD"]) else {
        return Value::Null;
    };
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD");
    let origin = git(&["config", "--get", "remote.origin.url"]);
    json!({"sha": sha, "branch": branch, "originUrl": origin})
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `invalid thread id: <uuid parse error>`, the real server's text.
fn check_uuid(id: &str, what: &str) -> Result<(), String> {
    uuid::Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|e| format!("invalid {what} id: {e}"))
}

/// A paging cursor as the real server writes it: a position in the thread's rollout (None: no
/// cursor).
fn rollout_cursor(thread_id: &str, ordinal: Option<u64>, include: bool, kind: &str) -> Value {
    match ordinal {
        Some(n) => json!(json!({"requestedThreadId": thread_id, "rolloutOrdinal": n,
                                "includeAnchor": include, "scope": {"kind": kind}})
        .to_string()),
        None => Value::Null,
    }
}

/// One page of entries keyed by rollout position, as `thread/turns/list` and
/// `thread/items/list` page: sorted (`desc`: newest first), after the `cursor` param's anchor
/// (itself too when the cursor includes it), `limit` long. Returns the page and the positions
/// of its last entry (when more follow: the next cursor) and its first (the backwards one).
fn page<T>(
    mut entries: Vec<(u64, T)>,
    params: &Value,
    desc: bool,
) -> (Vec<T>, Option<u64>, Option<u64>) {
    let anchor = params["cursor"].as_str().map(|c| {
        let c: Value = serde_json::from_str(c).unwrap_or(Value::Null);
        (
            c["rolloutOrdinal"].as_u64().unwrap_or(0),
            c["includeAnchor"].as_bool().unwrap_or(false),
        )
    });
    entries.sort_by_key(|(o, _)| *o);
    if desc {
        entries.reverse();
    }
    entries.retain(|(o, _)| match anchor {
        None => true,
        Some((a, incl)) => (incl && *o == a) || if desc { *o < a } else { *o > a },
    });
    let limit = params["limit"].as_u64().map_or(usize::MAX, |l| l as usize);
    let more = entries.len() > limit;
    entries.truncate(limit);
    let next = entries.last().filter(|_| more).map(|(o, _)| *o);
    let back = entries.first().map(|(o, _)| *o);
    (entries.into_iter().map(|(_, e)| e).collect(), next, back)
}

/// A thread's read state as `thread/read` reports it: none until a turn has ended.
/// A thread's read state: none for threads codex keeps no read state for (ephemeral ones, and
/// those of another source than the user's), else the last one published, or the initial one
/// (app-server `read_state::eligible`).
fn read_state(thread_id: &str, info: &Value) -> Value {
    if !has_read_state(info) {
        return Value::Null;
    }
    revision_state(thread_id, info)
}

/// The read state kept for a thread: its unread position and revision (the initial one until
/// marked).
fn revision_state(thread_id: &str, info: &Value) -> Value {
    match info["readRevision"].as_str() {
        Some(revision) => {
            json!({"firstUnread": info["firstUnread"], "revision": revision})
        }
        None => json!({"firstUnread": null, "revision": format!("initial:{thread_id}")}),
    }
}

/// Whether codex keeps a read state for the thread.
pub fn has_read_state(info: &Value) -> bool {
    info["ephemeral"] != true && (info["threadSource"].is_null() || info["threadSource"] == "user")
}

/// A client notification whose method the protocol does not know (the real server drops it
/// silently; its params are the engine's business: dropped, whatever the method).
fn unknown_notification(protocol: &crate::Protocol, msg: &Value) -> Option<String> {
    let typed = json!({"method": msg["method"]});
    match (protocol.client_notification)(&typed) {
        Ok(_) => None,
        Err(e) => Some(format!("unknown notification: {e}")),
    }
}
