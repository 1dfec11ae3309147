//! One fake process's shared state ([`Fake`]) and its connections ([`Conn`]): the JSON-RPC
//! session of each (every inbound line goes through the engine first; only lines the real
//! server would accept reach the dispatcher the process gave it), its output (held back in
//! batches, recorded before the peer can read it), and the server→client requests in flight.
//! Knows nothing of threads or turns: the rooms above it do.

use super::listen::{Connection, Next, Sink};
use super::state::{lock, now_ms, Store, Transcript};
use super::turn_facts::TurnFacts;
use crate::engine::{Kind, Outcome, Session};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The real server's reply to a request that finds its inbound queue full.
pub const OVERLOADED: i64 = -32001;
pub const OVERLOADED_MESSAGE: &str = "Server overloaded; retry later.";

/// Marks a handler error the real server answers with `-32603` (internal error).
pub const INTERNAL_PREFIX: &str = "\u{0}internal:";
/// Marks a handler's error message as invalid params (`-32602`).
pub const INVALID_PARAMS_PREFIX: &str = "\u{0}invalid-params:";

/// The process-wide state: files, loaded threads and running turns (shared by connections,
/// as in the real server).
pub struct Fake {
    pub dir: PathBuf,
    pub transcript: Transcript,
    pub store: Store,
    pub cwd: PathBuf,
    /// `$CODEX_HOME` as the real server reports and resolves against it (else the state dir).
    pub codex_home: PathBuf,
    /// What config.toml and `-c` say about the model, provider, approvals and sandbox
    /// ([`Fake::config`]; read again after each `config/*Write`, as codex reads it per thread).
    config: std::sync::RwLock<Arc<super::config::Config>>,
    /// The `-c key=value` overrides, kept to read the configuration again.
    pub overrides: Vec<(String, String)>,
    /// The version's default model (a configuration naming none gets it).
    default_model: String,
    /// A write changed the configuration since a session last loaded it: the next session
    /// start warns about it again as at start-up (`configWarning`).
    pub config_changed: std::sync::atomic::AtomicBool,
    /// `experimentalFeature/enablement/set`'s process-wide flags, as set (each call adds).
    pub enablement: Mutex<serde_json::Map<String, Value>>,
    /// `skills/extraRoots/set`'s roots, as last set.
    pub skill_roots: Mutex<Vec<PathBuf>>,
    /// The version's `config/*` facts (`schema/<V>/facts/config.json`).
    pub config_facts: super::user_config::Facts,
    /// Threads started, resumed or forked by this process: the only ones turns can run on.
    pub loaded: Mutex<HashSet<String>>,
    /// Threads with a `thread/settings/update` applied but not yet announced: the settings
    /// they last announced (`handlers::turns`).
    pub settings_unannounced: Mutex<HashMap<String, Value>>,
    /// Fuzzy file search sessions open: their roots, by session id (`handlers::file_search`).
    pub search_sessions: Mutex<HashMap<String, Vec<String>>>,
    /// API-key logins answered but not yet completed (`handlers::account`).
    pub logins_pending: std::sync::atomic::AtomicUsize,
    /// Server→client requests this process has sent (`None` before the first; then how many
    /// await their answer): `server/diagnostics` gauges them once there was one.
    pub server_requests: Mutex<Option<usize>>,
    /// A turn has started in this process: codex gauges its active turns from the first one
    /// on (`server/diagnostics` before any lists no `core.turns.active`: fidelity
    /// s47470001_0405, both real runs; every answer after a turn has it).
    pub turns_gauged: std::sync::atomic::AtomicBool,
    /// A request went through codex's request queues (`handlers::dispatch`): the queue's
    /// gauge is listed from then on.
    pub requests_queued: std::sync::atomic::AtomicBool,
    /// A `memory/status` was answered: codex's memories database is open (see
    /// `H::fixed`).
    pub memories_opened: std::sync::atomic::AtomicBool,
    /// Scripted overload replies given so far, per `scenario.json` `overload` key.
    overload_used: Mutex<HashMap<String, u64>>,
    /// The codex version the fake answers as.
    pub protocol: &'static crate::Protocol,
    /// How that version plays turns where versions differ (`Protocol::turn_facts`).
    pub turn_facts: TurnFacts,
    /// That version's model catalog (`Protocol::models`).
    pub catalog: super::catalog::Catalog,
    /// Its features under development (`Protocol::features`).
    pub unstable: Vec<String>,
    /// For an older version: what drops the keys its schema lacks from every message.
    pub projector: Option<super::project::Projector>,
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
        let config_facts = super::user_config::Facts::of(protocol);
        let default_model = super::catalog::default_model(protocol);
        Arc::new(Fake {
            config: std::sync::RwLock::new(Arc::new(super::config::Config::load(
                &codex_home,
                overrides,
                &config_facts.known_keys(),
                &default_model,
            ))),
            default_model,
            overrides: overrides.to_vec(),
            config_changed: std::sync::atomic::AtomicBool::new(false),
            enablement: Mutex::new(serde_json::Map::new()),
            skill_roots: Mutex::new(Vec::new()),
            config_facts,
            transcript: Transcript::new(dir.join("transcript.jsonl")),
            store: Store::new(&dir),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            codex_home,
            dir,
            loaded: Mutex::new(HashSet::new()),
            settings_unannounced: Mutex::new(HashMap::new()),
            search_sessions: Mutex::new(HashMap::new()),
            logins_pending: std::sync::atomic::AtomicUsize::new(0),
            server_requests: Mutex::new(None),
            turns_gauged: std::sync::atomic::AtomicBool::new(false),
            requests_queued: std::sync::atomic::AtomicBool::new(false),
            memories_opened: std::sync::atomic::AtomicBool::new(false),
            overload_used: Mutex::new(HashMap::new()),
            turn_facts: TurnFacts::of(protocol),
            catalog: super::catalog::Catalog::of(protocol),
            unstable: super::catalog::unstable_features(protocol),
            projector: super::project::Projector::of(protocol),
            protocol,
        })
    }

    /// The configuration as it stands.
    pub fn config(&self) -> Arc<super::config::Config> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The model a stored thread runs: its own, else the configured one.
    pub fn model_of(&self, info: &Value) -> String {
        info["model"]
            .as_str()
            .map_or_else(|| self.config().model.clone(), str::to_string)
    }

    /// [`Fake::model_of`] the thread `thread_id` as the store holds it now.
    pub fn thread_model(&self, thread_id: &str) -> String {
        self.model_of(&self.store.load()["threads"][thread_id])
    }

    /// Read `config.toml` and the overrides again (after a write).
    pub fn reload_config(&self) {
        let fresh = Arc::new(super::config::Config::load(
            &self.codex_home,
            &self.overrides,
            &self.config_facts.known_keys(),
            &self.default_model,
        ));
        match self.config.write() {
            Ok(mut c) => *c = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
        self.config_changed
            .store(true, std::sync::atomic::Ordering::SeqCst);
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

/// A connection's outbound lines not yet given to the sink (only while the transport holds them).
struct Out {
    sink: Sink,
    buf: String,
    held: bool,
}

/// A client's reply to a server→client request, and what the engine found wrong with it
/// against the method's response type (what codex's deserialization of it refuses).
pub struct Answer {
    pub msg: Value,
    pub violation: Option<String>,
}

pub struct Conn {
    pub fake: Arc<Fake>,
    out: Mutex<Out>,
    session: Mutex<Session>,
    /// Server→client requests in flight: id (JSON text) → the client's reply once it arrives.
    pending: Mutex<HashMap<String, Option<Answer>>>,
    replied: Condvar,
    next_id: AtomicI64,
    closed: AtomicBool,
    /// `initialize`'s `clientInfo.name` (a thread's `originator`).
    pub client_name: Mutex<String>,
    /// Threads this connection unsubscribed from.
    pub unsubscribed: Mutex<HashSet<String>>,
    /// `initialize`'s `optOutNotificationMethods`.
    pub opt_out: Mutex<Vec<String>>,
    /// Where an accepted request goes (the process's handlers).
    dispatch: Dispatch,
}

/// The handlers of accepted requests: `(connection, id, method, params)`.
pub type Dispatch = fn(&Arc<Conn>, &Value, &str, &Value);

impl Conn {
    pub fn new(fake: Arc<Fake>, sink: Sink, dispatch: Dispatch) -> Arc<Self> {
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
            dispatch,
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
        self.send_together(vec![msg]);
    }

    /// Records and writes messages the real server sends in one write (a request sent on the
    /// first cannot be answered before the last).
    pub fn send_together(&self, msgs: Vec<Value>) {
        super::latency::before_reply(&msgs);
        let msgs: Vec<(String, Value)> = msgs
            .into_iter()
            .map(|mut msg| {
                if let Some(p) = &self.fake.projector {
                    let method = msg.get("result").and_then(|_| {
                        lock(&self.session)
                            .awaiting_method(&msg["id"])
                            .map(str::to_string)
                    });
                    p.project(&mut msg, method.as_deref());
                }
                (msg.to_string(), msg)
            })
            .collect();
        let mut out = lock(&self.out);
        for (line, msg) in &msgs {
            self.push_line(&mut out, line, msg);
        }
        if !out.held {
            self.drain(out);
        }
    }

    /// Records and writes one line to the peer (or queues it while the transport holds output
    /// back), in one step so that the transcript's order is the peer's.
    fn emit<M: serde::Serialize + ?Sized>(&self, line: &str, msg: &M) {
        let mut out = lock(&self.out);
        self.push_line(&mut out, line, msg);
        if !out.held {
            self.drain(out);
        }
    }

    fn push_line<M: serde::Serialize + ?Sized>(&self, out: &mut Out, line: &str, msg: &M) {
        self.fake.transcript.record(&Entry::new("out", Some(msg)));
        out.buf.push_str(line);
        out.buf.push('\n');
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
        self.notify_together(vec![(method, params)]);
    }

    /// Notifications the real server sends in one write (see [`Conn::send_together`]).
    pub fn notify_together(&self, notes: Vec<(&str, Value)>) {
        let at = now_ms();
        let msgs = notes
            .into_iter()
            .filter(|(method, params)| {
                !self.withheld(method)
                    && !params["threadId"]
                        .as_str()
                        .is_some_and(|t| self.unsubscribed_from(t, method))
            })
            .map(|(method, params)| json!({"method": method, "params": params, "emittedAtMs": at}))
            .collect();
        self.send_together(msgs);
    }

    /// A thread's settings warnings (`warning`), as a start, a cold resume and a fork send them.
    pub fn warn(&self, thread_id: &str, messages: Vec<String>) {
        for message in messages {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
    }

    /// Whether a notification `method` about `thread_id` skips this connection: it unsubscribed
    /// from the thread (until a resume subscribes it again), and the events of the thread's
    /// turns, settings and realtime session reach subscribers only (and its read state, on versions that say
    /// so); its status, deletion and the like go to every connection (turn scenario 183 on
    /// every version: a turn started after the unsubscribe shows the client its status alone,
    /// its settings update nothing; `36`: its deletion is heard).
    pub fn unsubscribed_from(&self, thread_id: &str, method: &str) -> bool {
        let scoped = method.starts_with("turn/")
            || method.starts_with("item/")
            || method.starts_with("thread/realtime/")
            || matches!(
                method,
                "thread/tokenUsage/updated"
                    | "account/rateLimits/updated"
                    | "thread/settings/updated"
                    | "thread/queue/changed"
                    | "serverRequest/resolved"
                    | "error"
            )
            || (method == "thread/readState/changed"
                && self.fake.turn_facts.read_state_to_subscribers);
        scoped && lock(&self.unsubscribed).contains(thread_id)
    }

    /// Notifications this connection does not get: the experimental ones without the
    /// `experimentalApi` capability, and the methods it opted out of (exact names).
    pub fn withheld(&self, method: &str) -> bool {
        (EXPERIMENTAL_NOTIFICATIONS.contains(&method) && !lock(&self.session).experimental_api())
            || lock(&self.opt_out).iter().any(|m| m == method)
    }

    pub fn result(&self, id: &Value, result: Value) {
        self.send(json!({"id": id, "result": result}));
    }

    /// A handler's error: `-32600`, `-32603` for a message marked [`INTERNAL_PREFIX`], `-32602`
    /// for one marked [`INVALID_PARAMS_PREFIX`].
    pub fn error(&self, id: &Value, message: String) {
        let (code, message) = if let Some(m) = message.strip_prefix(INTERNAL_PREFIX) {
            (-32603, m.to_string())
        } else if let Some(m) = message.strip_prefix(INVALID_PARAMS_PREFIX) {
            (-32602, m.to_string())
        } else {
            (-32600, message)
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
    ) -> Option<Answer> {
        let id = json!(self.next_id.fetch_add(1, Ordering::SeqCst));
        let key = id.to_string();
        lock(&self.session).expect_response(&id, method);
        lock(&self.pending).insert(key.clone(), None);
        *lock(&self.fake.server_requests).get_or_insert(0) += 1;
        // Whatever ends the wait, the request no longer awaits its answer.
        struct Settled<'a>(&'a Mutex<Option<usize>>);
        impl Drop for Settled<'_> {
            fn drop(&mut self) {
                if let Some(n) = lock(self.0).as_mut() {
                    *n = n.saturating_sub(1);
                }
            }
        }
        let _settled = Settled(&self.fake.server_requests);
        self.send(json!({"method": method, "id": id, "params": params}));
        let deadline = Instant::now() + timeout;
        let mut pending = lock(&self.pending);
        loop {
            if let Some(Some(_)) = pending.get(&key) {
                return pending.remove(&key).flatten();
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
                            *slot = Some(Answer {
                                msg: m,
                                violation: verdict.violation.clone(),
                            });
                            self.replied.notify_all();
                        }
                    }
                }
            }
            Outcome::Accepted => {
                let m = msg.unwrap_or(Value::Null);
                let id = verdict.id.as_ref().map_or(Value::Null, crate::Id::to_value);
                let method = verdict.method.as_deref().unwrap_or_default().to_string();
                let mut params = m.get("params").cloned().unwrap_or(Value::Null);
                // A field this version drops is as if absent (a rule written for the newest
                // version reads fields an older one does not know).
                if let Some(o) = params.as_object_mut() {
                    for path in &verdict.ignored {
                        if let Some(key) = path.strip_prefix("$.params.") {
                            if !key.contains(['.', '[']) {
                                o.shift_remove(key);
                            }
                        }
                    }
                }
                super::latency::begin(&id, &method);
                (self.dispatch)(self, &id, &method, &params);
                super::latency::end();
            }
        }
        Next::Continue
    }
}

impl Connection for Conn {
    fn line(self: Arc<Self>, line: &[u8]) -> Next {
        self.handle_line(line)
    }
    fn hold(&self) {
        Conn::hold(self)
    }
    fn release(&self) {
        Conn::release(self)
    }
    fn close(&self) {
        Conn::close(self)
    }
    fn overloaded(&self, line: &[u8]) -> bool {
        Conn::overloaded(self, line)
    }
    fn overload_scripted(&self, line: &[u8], sc: &Value) -> bool {
        Conn::overload_scripted(self, line, sc)
    }
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

/// A client notification whose method the protocol does not know (the real server drops it
/// silently; its params are the engine's business: dropped, whatever the method).
fn unknown_notification(protocol: &crate::Protocol, msg: &Value) -> Option<String> {
    let typed = json!({"method": msg["method"]});
    match (protocol.client_notification)(&typed) {
        Ok(_) => None,
        Err(e) => Some(format!("unknown notification: {e}")),
    }
}
