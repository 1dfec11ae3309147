//! Turn playback: one scripted turn per `turn/start` (consumed across processes through the
//! store's `turn_cursor`), notifications in the real server's order, server→client requests
//! whose answers the engine judges. A script may carry `continuations`: further server turns
//! (a goal rolling over) reported as `turn/completed` → `turn/started` pairs.

use super::server::{lock, path_str, Conn};
use super::shell;
use super::state::{now_ms, now_secs, scenario};
use crate::model::script::{default_goal_turn, default_turn, guardian_allows, GUARDIAN_RATIONALE};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a codex version plays turns where versions differ, from `schema/<V>/facts/turns.json`
/// (each fact shown by that version's recordings; an absent fact is the newest version's way).
#[derive(Debug, Default, serde::Deserialize, serde::Serialize)]
#[serde(default, rename_all = "snake_case", deny_unknown_fields)]
pub struct TurnFacts {
    /// `turn/diff/updated` again after every model response once the turn has a diff (instead
    /// of once when the turn ends).
    pub turn_diff_after_each_response: bool,
    /// A service tier a turn set is not kept when another process resumes the thread.
    pub service_tier_not_resumed: bool,
    /// codex's built-in Plan-mode instructions: the `developer_instructions` of a
    /// `collaborationMode` in Plan mode that a `turn/start` left null (taken from the
    /// recording of `26c_user_input_plan_mode`).
    pub plan_mode_instructions: Option<String>,
    /// codex's built-in Default-mode instructions: what a `collaborationMode` of any other mode
    /// gets when a `turn/start` leaves them null (from a 0.171.0 recording).
    pub default_mode_instructions: Option<String>,
    /// A plan item's id is `<turn id>-plan` (else a fresh uuid).
    pub plan_item_id_from_turn: bool,
    /// A forked thread starts with an empty preview (else the source thread's).
    pub fork_preview_empty: bool,
    /// A fork takes the configured sandbox mode, not its source thread's mode or turn policy
    /// (a permission profile is kept either way).
    pub fork_sandbox_mode_not_kept: bool,
}

/// A facts file to play turns by instead of the version's own: how `cargo xtask add-version`
/// tries candidate facts of a new version against its recordings before writing them.
pub const TURN_FACTS_ENV: &str = "CODEX_WIRE_TURN_FACTS";

impl TurnFacts {
    pub fn of(p: &crate::Protocol) -> TurnFacts {
        if let Some(text) =
            std::env::var_os(TURN_FACTS_ENV).and_then(|path| std::fs::read_to_string(path).ok())
        {
            if let Ok(facts) = serde_json::from_str(&text) {
                return facts;
            }
        }
        // Checked by the protocol's tests: a facts file that does not parse is a build bug.
        serde_json::from_str(p.turn_facts).unwrap_or_default()
    }

    /// The facts that are switches (the others are texts read off a recording).
    pub fn switches() -> Vec<String> {
        match serde_json::to_value(TurnFacts::default()) {
            Ok(Value::Object(m)) => m
                .into_iter()
                .filter(|(_, v)| v.is_boolean())
                .map(|(k, _)| k)
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Control of a running turn, shared with `turn/interrupt`, `turn/steer` and `thread/goal/set`.
pub struct TurnCtl {
    pub thread_id: String,
    turn_id: Mutex<String>,
    interrupted: AtomicBool,
    steers: Mutex<Vec<Value>>,
    goal_status: Mutex<Option<String>>,
    /// The turn saw the interrupt (and reported its rate limits).
    pub acked: AtomicBool,
    /// The `turn/interrupt` reply has been sent.
    pub responded: AtomicBool,
    /// Commands approved with `acceptForSession`.
    session_approved: Mutex<Vec<String>>,
    /// The `rootTurnId` a `turn/start` gave (else the turn is its own root).
    root: Mutex<Option<String>>,
}

impl TurnCtl {
    pub fn turn_id(&self) -> String {
        lock(&self.turn_id).clone()
    }
    fn root_turn_id(&self) -> String {
        lock(&self.root).clone().unwrap_or_else(|| self.turn_id())
    }
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }
    /// Waits (briefly) until the turn has seen the interrupt, so that its last notifications
    /// precede the `turn/interrupt` reply, as on the real server.
    pub fn wait_acked(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.acked.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
    pub fn steer(&self, input: Value) {
        lock(&self.steers).push(input);
    }
    pub fn set_goal_status(&self, status: &str) {
        *lock(&self.goal_status) = Some(status.to_string());
    }
}

/// What a shell call gets before it runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Gate {
    Run,
    Ask,
    Refuse,
}

/// The client's answer to an approval request.
#[derive(PartialEq, Debug)]
enum Decision {
    /// `accept`, `acceptForSession`, an amendment: the decision as sent.
    Accept(Value),
    Decline,
    Cancel,
    /// A JSON-RPC error, or a result the response type does not take.
    Failed,
}

/// How a turn ended early.
enum End {
    /// The model's stream failed: the turn's error object.
    Failed(Value),
    /// `turn/interrupt`.
    Interrupted,
    /// An approval answered `cancel`.
    Cancelled,
    /// Input was steered in: the model's response is abandoned (never leaves `run`).
    Steered,
}

/// Consumes the next scripted turn without playing it (a compaction's summary request).
pub fn skip_script(conn: &Conn) {
    let _ = next_script(conn);
}

/// Takes the next scripted turn (or the default one) and advances the shared cursor.
fn next_script(conn: &Conn) -> Value {
    next_script_or(conn, default_turn)
}

/// The next scripted turn for a goal's next server turn; past the script, the default answer
/// that completes the goal (as the scripted model answers a goal continuation).
fn next_goal_script(conn: &Conn) -> Value {
    next_script_or(conn, default_goal_turn)
}

fn next_script_or(conn: &Conn, default: fn() -> Value) -> Value {
    let turns = scenario(&conn.fake.dir)["turns"].clone();
    conn.fake.store.update(|d| {
        let cursor = d["turn_cursor"].as_u64().unwrap_or(0);
        d["turn_cursor"] = json!(cursor + 1);
        turns.get(cursor as usize).cloned().unwrap_or_else(default)
    })
}

fn goal_active(conn: &Conn, thread_id: &str) -> bool {
    conn.fake.store.load()["threads"][thread_id]["goal"]["status"] == "active"
}

/// A `Turn` as the real server sends it. `started`: `None` in the `turn/start` result (the
/// real one has not stamped it yet). `items`: the final agent messages of a finished turn
/// (`itemsView: "summary"`), none while it runs.
fn turn_obj(
    id: &str,
    root: &str,
    status: &str,
    started: Option<i64>,
    error: Option<&Value>,
    items: &[Value],
) -> Value {
    let done = status != "inProgress";
    let now = now_secs();
    json!({
        "id": id, "rootTurnId": root, "items": items,
        "itemsView": if items.is_empty() { "notLoaded" } else { "summary" },
        "status": status,
        "error": error.cloned().unwrap_or(Value::Null),
        "startedAt": started,
        "completedAt": if done { json!(now) } else { Value::Null },
        "durationMs": match (done, started) {
            (true, Some(s)) => json!((now - s) * 1000),
            _ => Value::Null,
        },
    })
}

/// The error object of a failed turn and of the `error` notification.
fn turn_error(message: &str, info: Value, details: Value) -> Value {
    json!({"message": message, "codexErrorInfo": info, "additionalDetails": details,
           "misalignment": null})
}

/// `turn/start`: answer with the new turn, then play it on its own thread.
pub fn start_for_request(
    conn: &Arc<Conn>,
    id: &Value,
    thread_id: &str,
    params: &Value,
) -> Result<(), String> {
    let script = next_script(conn);
    if let Some(e) = script["start_error"].as_str() {
        return Err(e.to_string());
    }
    let (ctl, started) = register(conn, thread_id);
    let turn_id = ctl.turn_id();
    // The client may name the turn its work started from.
    if let Some(root) = params["rootTurnId"].as_str() {
        *lock(&ctl.root) = Some(root.to_string());
    }
    let root = ctl.root_turn_id();
    conn.send(
        json!({"id": id, "result": {"turn": turn_obj(&turn_id, &root, "inProgress", None,
                                                           None, &[])}}),
    );
    spawn(conn, ctl, started, Some(params.clone()), script, false);
    Ok(())
}

/// A turn the server starts by itself (goal, compaction). `script` None: the next scripted one.
pub fn start(
    conn: &Arc<Conn>,
    thread_id: &str,
    script: Option<Value>,
    goal: bool,
) -> Result<String, String> {
    let script = script.unwrap_or_else(|| {
        if goal {
            next_goal_script(conn)
        } else {
            next_script(conn)
        }
    });
    let (ctl, started) = register(conn, thread_id);
    let turn_id = ctl.turn_id();
    spawn(conn, ctl, started, None, script, goal);
    Ok(turn_id)
}

fn register(conn: &Conn, thread_id: &str) -> (Arc<TurnCtl>, i64) {
    let ctl = Arc::new(TurnCtl {
        thread_id: thread_id.to_string(),
        turn_id: Mutex::new(uuid::Uuid::now_v7().to_string()),
        interrupted: AtomicBool::new(false),
        steers: Mutex::new(Vec::new()),
        goal_status: Mutex::new(None),
        acked: AtomicBool::new(false),
        responded: AtomicBool::new(false),
        session_approved: Mutex::new(Vec::new()),
        root: Mutex::new(None),
    });
    lock(&conn.fake.active).insert(thread_id.to_string(), ctl.clone());
    (ctl, now_secs())
}

fn spawn(
    conn: &Arc<Conn>,
    ctl: Arc<TurnCtl>,
    started: i64,
    input: Option<Value>,
    script: Value,
    goal: bool,
) {
    let conn = conn.clone();
    let spawned = std::thread::Builder::new()
        .name("fake-turn".into())
        .spawn(move || play(&conn, &ctl, started, input, &script, goal));
    if let Err(e) = spawned {
        // Out of threads: the turn cannot run; the client still gets a completed turn.
        let _ = e;
    }
}

fn play(
    conn: &Arc<Conn>,
    ctl: &Arc<TurnCtl>,
    mut started: i64,
    input: Option<Value>,
    script: &Value,
    goal: bool,
) {
    let thread_id = ctl.thread_id.clone();
    let mut parts: std::collections::VecDeque<Value> =
        crate::model::script::server_turns(script).into();
    let rollover = Duration::from_millis(script["rollover_ms"].as_u64().unwrap_or(50));
    for n in 0.. {
        let Some(part) = parts.pop_front() else {
            break;
        };
        if n > 0 {
            std::thread::sleep(rollover);
            *lock(&ctl.turn_id) = uuid::Uuid::now_v7().to_string();
            started = now_secs();
        }
        let turn_id = ctl.turn_id();
        let mut ctx = Ctx::new(conn, ctl, &turn_id);
        let thread = conn.fake.store.load()["threads"][&thread_id].clone();
        ctx.rollout = Rollout::load(&thread["rollout"]);
        ctx.plan_mode = thread["collaborationMode"]["mode"] == "plan";
        let first = ctx.rollout.ordinal == 0;
        ctx.rollout.turn_started(first);
        ctx.started_ms = now_ms();
        conn.fake.store.update(|d| {
            if let Some(t) = d["threads"][&thread_id].as_object_mut() {
                t.remove("systemError");
            }
        });
        ctx.checkpoint();
        ctx.status(json!({"type": "active", "activeFlags": []}));
        let root = ctl.root_turn_id();
        conn.notify(
            "turn/started",
            json!({"threadId": thread_id,
                   "turn": turn_obj(&turn_id, &root, "inProgress", Some(started), None, &[])}),
        );
        if let Some(request) = input.as_ref().filter(|_| n == 0) {
            // codex echoes the submitted input as a userMessage item
            ctx.user_message(request);
        }
        let steps = part["steps"].as_array().cloned().unwrap_or_default();
        let compact = part["compact"] == true;
        let outcome = if compact {
            ctx.compaction()
        } else {
            ctx.run(&steps)
        };
        let paused = lock(&ctl.goal_status)
            .as_deref()
            .is_some_and(|s| s != "active");
        // A goal runs server turn after server turn while it stays active (the next scripted
        // turn each time); other turns end with their script's continuations.
        if goal && parts.is_empty() && goal_active(conn, &thread_id) {
            parts.push_back(next_goal_script(conn));
        }
        let last = parts.is_empty() || outcome.is_err() || paused;
        let (status, error) = match &outcome {
            Ok(()) => ("completed", None),
            Err(End::Interrupted | End::Cancelled | End::Steered) => ("interrupted", None),
            Err(End::Failed(e)) => ("failed", Some(e.clone())),
        };
        // How the real server closes a turn: read state (not after an interrupt), then idle
        // (a failed turn leaves the thread in `systemError`), then `turn/completed`.
        let diff_reported = conn.fake.turn_facts.turn_diff_after_each_response;
        let diff_at_end = matches!(outcome, Ok(()) | Err(End::Failed(_)));
        let diff_at_end = diff_at_end && !ctx.diff_stopped;
        if let (true, Some(diff), false) = (diff_at_end, ctx.turn_diff.clone(), diff_reported) {
            ctx.notify("turn/diff/updated", json!({"diff": diff}));
        }
        // An interrupted or failed turn reports no items; a finished one its final answer: the
        // last agent message that says anything (commentary is left out).
        let summary: Vec<Value> = match &outcome {
            Err(End::Interrupted | End::Cancelled | End::Failed(_)) => Vec::new(),
            _ => ctx
                .messages
                .iter()
                .rfind(|m| m["phase"] != "commentary" && m["text"] != "")
                .cloned()
                .into_iter()
                .collect(),
        };
        // A finished turn asks for the user's attention when its last answer (commentary aside)
        // says something and no goal will carry on (app-server `read_state::publish`).
        let says_something = ctx
            .messages
            .iter()
            .rfind(|m| m["phase"] != "commentary" && m["text"] != "")
            .and_then(|m| m["text"].as_str())
            .is_some_and(|t| !t.trim().is_empty());
        match &outcome {
            Ok(()) if compact || !last || !says_something => {}
            Ok(()) | Err(End::Failed(_)) => ctx.read_state(),
            Err(End::Interrupted) => ctx.finish_interrupt(),
            // An aborted turn with an answer asks for attention too.
            Err(End::Cancelled) if ctx.final_answer().is_some() => ctx.read_state(),
            Err(End::Cancelled | End::Steered) => {}
        }
        if !matches!(outcome, Err(End::Failed(_))) {
            ctx.status(json!({"type": "idle"}));
        }
        let turn = turn_obj(
            &turn_id,
            &root,
            status,
            Some(started),
            error.as_ref(),
            &summary,
        );
        let pending = ctx.pending_resolved;
        // The turn's end entry.
        let mut rollout = ctx.rollout;
        rollout.add(1);
        let mut stored = turn.clone();
        stored["items"] = json!(ctx.items);
        // Where the turn starts in the rollout: what `thread/turns/list` cursors name.
        stored["rolloutOrdinal"] = json!(rollout.turn);
        stored["itemOrdinals"] = json!(ctx.item_ordinals);
        save_turn(conn, &thread_id, &stored, rollout);
        conn.write_rollout(&thread_id);
        if last {
            lock(&conn.fake.active).remove(&thread_id);
        }
        conn.notify(
            "turn/completed",
            json!({"threadId": thread_id, "turn": turn}),
        );
        if let Some(id) = pending {
            conn.notify(
                "serverRequest/resolved",
                json!({"threadId": thread_id, "requestId": id}),
            );
        }
        if last {
            break;
        }
    }
}

struct Ctx<'a> {
    conn: &'a Arc<Conn>,
    ctl: &'a TurnCtl,
    turn_id: String,
    /// Every item of the turn (kept in the store).
    items: Vec<Value>,
    /// The completed agent messages of the turn.
    messages: Vec<Value>,
    /// The model response being played (numbered across the state dir, as the scripted
    /// model numbers them) and the next output index in it.
    resp: u64,
    out: u64,
    /// `usage` of the current response (reported when it completes).
    usage: Option<Value>,
    /// Dropped streams (and failed requests) retried so far in this turn.
    retries: u64,
    /// Failed requests resent since the last turn-level attempt.
    resent: u64,
    /// The turn's diff so far (reported again when the turn ends).
    turn_diff: Option<String>,
    /// A patch of the turn failed: no more `turn/diff/updated` this turn.
    diff_stopped: bool,
    /// The files the turn's patches wrote, by the path its diff shows: their content before the
    /// turn (None: new) and now.
    turn_files: std::collections::BTreeMap<String, (Option<String>, String)>,
    /// A model response is being streamed (its usage not yet reported).
    open: bool,
    /// The real rollout's entry ordinals, as far as this turn has written them (see
    /// [`Rollout`]).
    rollout: Rollout,
    /// When the turn started (its stored duration, should the process die mid-turn).
    started_ms: i64,
    /// Each completed item's rollout ordinal (what `thread/items/list` cursors name).
    item_ordinals: Vec<u64>,
    /// The thread runs in Plan mode (read when the turn starts: a mode changes between turns).
    plan_mode: bool,
    /// A server request the turn ended on unanswered: resolved after `turn/completed`.
    pending_resolved: Option<i64>,
}

/// Stores a turn (replacing the one with its id) and where the rollout stands.
fn save_turn(conn: &Conn, thread_id: &str, turn: &Value, rollout: Rollout) {
    conn.fake.store.update(|d| {
        let t = &mut d["threads"][thread_id];
        if !t["turns"].is_array() {
            t["turns"] = json!([]);
        }
        if let Some(ts) = t["turns"].as_array_mut() {
            match ts.iter_mut().find(|x| x["id"] == turn["id"]) {
                Some(x) => *x = turn.clone(),
                None => ts.push(turn.clone()),
            }
        }
        t["rollout"] = rollout.to_json();
        t["updatedAt"] = json!(now_secs());
        t["updatedAtMs"] = json!(now_ms());
    });
}

/// Where the real server's rollout of a thread stands: the ordinal of its last entry, of the
/// last turn's start and of the last completed item — what `thread/resume`'s backwards cursors
/// name. Counted as codex 0.171.0 writes entries (see the recordings): a turn's start (plus
/// codex's initial context on the first turn), per completed message or reasoning its event and
/// response item, per tool call its call, output and event, per response its usage record and
/// token count (a failed or dropped one only the count), the turn's end.
#[derive(Clone, Copy, Default)]
struct Rollout {
    ordinal: u64,
    turn: u64,
    item: u64,
    /// The response being played carried a tool call (its usage record is already counted).
    tool: bool,
}

impl Rollout {
    fn load(v: &Value) -> Rollout {
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Rollout {
            ordinal: n("ordinal"),
            turn: n("turn"),
            item: n("item"),
            tool: false,
        }
    }
    fn to_json(self) -> Value {
        json!({"ordinal": self.ordinal, "turn": self.turn, "item": self.item})
    }
    fn add(&mut self, n: u64) -> u64 {
        self.ordinal += n;
        self.ordinal
    }
    /// A turn starts: its start entry, then the turn context (on a thread's first turn after
    /// codex's developer and context messages, world state, and before its settings entry).
    fn turn_started(&mut self, first: bool) {
        self.turn = self.add(1);
        self.add(if first { 5 } else { 1 });
    }
    fn completed(&mut self, item_type: &str) {
        match item_type {
            "userMessage" => {
                self.item = self.add(2);
            }
            // A plan is part of the answer's response item.
            "plan" => {
                self.item = self.add(1);
            }
            "agentMessage" | "reasoning" | "contextCompaction" => {
                self.item = self.add(1);
                self.add(1);
            }
            _ => {
                // call, the response's usage record, the item, the call's output
                self.item = self.add(3);
                self.add(1);
                self.tool = true;
            }
        }
    }
    /// A tool call whose item the thread does not keep: its call, the response's usage record
    /// and its output, no item.
    fn unkept(&mut self) {
        self.add(3);
        self.tool = true;
    }
    fn response_ended(&mut self) {
        self.add(if self.tool { 1 } else { 2 });
        self.tool = false;
    }
    fn response_dropped(&mut self) {
        self.add(1);
        self.tool = false;
    }
}

/// A fresh goal, in the real server's key order.
pub fn new_goal(thread_id: &str, objective: &str) -> Value {
    let now = now_secs();
    json!({"threadId": thread_id, "objective": objective, "status": "active",
           "tokenBudget": null, "tokensUsed": 0, "timeUsedSeconds": 0,
           "createdAt": now, "updatedAt": now})
}

/// The `tokenUsage` breakdown, in the real server's key order.
pub fn breakdown(input: i64, cached: i64, output: i64, reasoning: i64) -> Value {
    json!({"totalTokens": input + output, "inputTokens": input, "cachedInputTokens": cached,
           "cacheWriteInputTokens": 0, "outputTokens": output, "reasoningOutputTokens": reasoning})
}

/// The context window the real server reports for a thread: its model's, from the version's
/// catalog and the configuration.
pub fn context_window(conn: &Conn, thread_id: &str) -> i64 {
    let data = conn.fake.store.load();
    let model = data["threads"][thread_id]["model"]
        .as_str()
        .map_or_else(|| conn.fake.config.model.clone(), str::to_string);
    conn.fake.catalog.context_window(&model, &conn.fake.config)
}

/// The stream error the real server reports for a `response.failed` with this code.
fn failure(code: &str, message: &str) -> (String, Value) {
    match code {
        "context_length_exceeded" => (
            "Codex ran out of room in the model's context window. Start a new thread or clear \
             earlier history before retrying."
                .into(),
            json!("contextWindowExceeded"),
        ),
        "insufficient_quota" => (
            "Quota exceeded. Check your plan and billing details.".into(),
            json!("usageLimitExceeded"),
        ),
        "rate_limit_exceeded" => (
            format!("rate limit exceeded: {message}"),
            json!("rateLimitExceeded"),
        ),
        // The prompt itself was refused: the provider's message as it is.
        "invalid_prompt" => (message.to_string(), json!("other")),
        "server_is_overloaded" => (
            "Selected model is at capacity. Please try a different model.".into(),
            json!("serverOverloaded"),
        ),
        _ => (
            format!("stream disconnected before completion: {message}"),
            json!("other"),
        ),
    }
}

const STREAM_CLOSED: &str =
    "stream disconnected before completion: stream closed before response.completed";

impl<'a> Ctx<'a> {
    fn new(conn: &'a Arc<Conn>, ctl: &'a TurnCtl, turn_id: &str) -> Self {
        let mut c = Ctx {
            conn,
            ctl,
            turn_id: turn_id.to_string(),
            items: Vec::new(),
            messages: Vec::new(),
            resp: 0,
            out: 0,
            usage: None,
            retries: 0,
            resent: 0,
            turn_diff: None,
            turn_files: std::collections::BTreeMap::new(),
            diff_stopped: false,
            open: false,
            rollout: Rollout::default(),
            started_ms: now_ms(),
            item_ordinals: Vec::new(),
            plan_mode: false,
            pending_resolved: None,
        };
        c.next_response();
        c
    }

    /// Starts the next model response: its number comes from the state dir's counter.
    fn next_response(&mut self) {
        self.resp = self.conn.fake.store.update(|d| {
            let n = d["model_responses"].as_u64().unwrap_or(0);
            d["model_responses"] = json!(n + 1);
            n
        });
        self.out = 0;
        self.usage = None;
        self.open = true;
    }

    /// The model's id for the next output item of this response (`msg_3_0`, `call_3_1`, …).
    fn model_id(&mut self, prefix: &str) -> String {
        let id = format!("{prefix}_{}_{}", self.resp, self.out);
        self.out += 1;
        id
    }

    fn scope(&self, extra: Value) -> Value {
        let mut m = Map::new();
        m.insert("threadId".into(), json!(self.ctl.thread_id));
        m.insert("turnId".into(), json!(self.turn_id));
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        Value::Object(m)
    }

    fn notify(&self, method: &str, extra: Value) {
        self.conn.notify(method, self.scope(extra));
    }

    /// A notification whose params put `before` ahead of the thread and turn ids (`item/*`,
    /// `error`), as the real server orders them.
    fn item_notify(&self, method: &str, before: Value, after: Value) {
        let mut m = Map::new();
        for part in [
            before,
            json!({"threadId": self.ctl.thread_id, "turnId": self.turn_id}),
            after,
        ] {
            if let Value::Object(o) = part {
                m.extend(o);
            }
        }
        self.conn.notify(method, Value::Object(m));
    }

    fn status(&self, status: Value) {
        self.conn.notify(
            "thread/status/changed",
            json!({"threadId": self.ctl.thread_id, "status": status}),
        );
    }

    fn rate_limits(&self) {
        self.conn.notify(
            "account/rateLimits/updated",
            json!({"rateLimits": {"limitId": "codex", "limitName": null, "normalModelSlug": null,
                   "primary": null, "secondary": null, "credits": null, "individualLimit": null,
                   "spendControlReached": null, "planType": null, "rateLimitReachedType": null}}),
        );
    }

    /// The thread's read state when a turn ends: the first unread position stays where it is;
    /// a thread read to the end becomes unread from this turn.
    fn read_state(&self) {
        let thread_id = self.ctl.thread_id.clone();
        // An ephemeral thread, or one with legacy history, has no read state (checked on
        // 0.171.0).
        if !super::server::has_read_state(&self.conn.fake.store.load()["threads"][&thread_id]) {
            return;
        }
        let revision = uuid::Uuid::new_v4().to_string();
        let first = self.conn.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            // The revision `thread/read` reports until the read state changes again.
            t["readRevision"] = json!(revision);
            let f = &mut t["firstUnread"];
            if !f.is_object() {
                *f = json!({"type": "turn", "turnId": self.turn_id});
            }
            f.clone()
        });
        self.conn.notify(
            "thread/readState/changed",
            json!({"threadId": self.ctl.thread_id,
                   "readState": {"firstUnread": first, "revision": revision}}),
        );
    }

    /// `item/started`: the item carries its own `startedAtMs`/`completedAtMs`, the
    /// notification repeats the start.
    fn started(&self, item: &Value) -> i64 {
        let at = now_ms();
        let mut item = item.clone();
        item["startedAtMs"] = json!(at);
        item["completedAtMs"] = Value::Null;
        self.item_notify(
            "item/started",
            json!({"item": item}),
            json!({"startedAtMs": at}),
        );
        at
    }

    fn completed(&mut self, item: Value, started_at: i64) {
        let at = now_ms();
        let mut item = item;
        item["startedAtMs"] = json!(started_at);
        item["completedAtMs"] = json!(at);
        match item["type"].as_str() {
            Some("agentMessage") => self.messages.push(item.clone()),
            // The turn's answer is what the model said after the last user input.
            Some("userMessage") => self.messages.clear(),
            _ => {}
        }
        self.rollout
            .completed(item["type"].as_str().unwrap_or_default());
        self.item_ordinals.push(self.rollout.item);
        self.items.push(item.clone());
        // Stored before the client hears of it, as the real server writes its rollout first.
        self.checkpoint();
        self.item_notify(
            "item/completed",
            json!({"item": item}),
            json!({"contentTokenCount": null, "completedAtMs": at}),
        );
    }

    /// An item the client sees completed but the thread does not keep (a command declined, or
    /// whose approval request failed: `thread/read` leaves it out).
    fn completed_unkept(&mut self, item: Value, started_at: i64) {
        let at = now_ms();
        let mut item = item;
        item["startedAtMs"] = json!(started_at);
        item["completedAtMs"] = json!(at);
        self.rollout.unkept();
        self.item_notify(
            "item/completed",
            json!({"item": item}),
            json!({"contentTokenCount": null, "completedAtMs": at}),
        );
    }

    /// Stores the turn as far as it has gone: what the real server's rollout holds should the
    /// process die now (a resumed thread then shows it `interrupted`).
    fn checkpoint(&self) {
        let turn = json!({"id": self.turn_id, "status": "inProgress", "items": self.items,
                          "error": null, "startedAt": self.started_ms / 1000,
                          "completedAt": now_secs(), "durationMs": now_ms() - self.started_ms,
                          "rolloutOrdinal": self.rollout.turn,
                          "itemOrdinals": self.item_ordinals});
        save_turn(self.conn, &self.ctl.thread_id, &turn, self.rollout);
    }

    fn item(&mut self, item: Value) {
        let at = self.started(&item);
        self.completed(item, at);
    }

    /// The userMessage item of a `turn/start` or `turn/steer` request (none for empty input).
    fn user_message(&mut self, request: &Value) {
        let content: Vec<Value> = request["input"]
            .as_array()
            .into_iter()
            .flatten()
            .map(user_content)
            .collect();
        if content.is_empty() {
            return;
        }
        let id = uuid::Uuid::now_v7().to_string();
        // The thread's preview is its first user text.
        if let Some(text) = content.iter().find_map(|c| c["text"].as_str()) {
            let thread_id = self.ctl.thread_id.clone();
            self.conn.fake.store.update(|d| {
                let p = &mut d["threads"][&thread_id]["preview"];
                if p.as_str().is_none_or(str::is_empty) {
                    *p = json!(text);
                }
            });
        }
        let client_id = request["clientUserMessageId"].clone();
        self.item(
            json!({"type": "userMessage", "id": id, "clientId": client_id,
                         "content": content}),
        );
    }

    /// The model's `update_goal` (a `goal` step): the thread's goal takes the status, no item
    /// (without a goal codex answers the model with an error and the client sees nothing).
    fn goal_update(&self, status: &str) {
        let thread_id = self.ctl.thread_id.clone();
        let goal = self.conn.fake.store.update(|d| {
            let g = &mut d["threads"][&thread_id]["goal"];
            if !g.is_object() {
                return None;
            }
            g["status"] = json!(status);
            g["updatedAt"] = json!(now_secs());
            Some(g.clone())
        });
        if let Some(goal) = goal {
            self.notify("thread/goal/updated", json!({"goal": goal}));
        }
    }

    /// Between steps: an interrupt ends the turn (steered input waits for the response's end).
    fn check(&mut self) -> Result<(), End> {
        if !lock(&self.ctl.steers).is_empty() {
            return Err(End::Steered);
        }
        if self.ctl.interrupted() || self.conn.is_closed() {
            // The real server reports the aborted stream's usage and rate limits before it
            // answers `turn/interrupt`, and asks for attention if the turn had an answer.
            self.unfinished_response();
            if self.final_answer().is_some() {
                self.read_state();
            }
            self.ctl.acked.store(true, Ordering::SeqCst);
            return Err(End::Interrupted);
        }
        Ok(())
    }

    /// The turn's answer so far: its last agent message that is not commentary.
    fn final_answer(&self) -> Option<&Value> {
        self.messages.iter().rfind(|m| m["phase"] != "commentary")
    }

    /// After an interrupt: the `turn/interrupt` reply goes out before the turn closes.
    fn finish_interrupt(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.ctl.responded.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The model's response is complete: usage, then the account's rate limits.
    fn end_response(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        self.rollout.response_ended();
        let u = self.usage.take().unwrap_or(Value::Null);
        let n = |k: &str| u[k].as_i64().unwrap_or(0);
        let last = breakdown(n("input"), n("cached"), n("output"), n("reasoning"));
        let thread_id = self.ctl.thread_id.clone();
        let total = self.conn.fake.store.update(|d| {
            // Kept for the usage a resumed thread reports.
            d["threads"][&thread_id]["lastUsage"] = last.clone();
            let t = &mut d["threads"][&thread_id]["usage"];
            let sum = |k: &str| t[k].as_i64().unwrap_or(0) + last[k].as_i64().unwrap_or(0);
            *t = breakdown(
                sum("inputTokens"),
                sum("cachedInputTokens"),
                sum("outputTokens"),
                sum("reasoningOutputTokens"),
            );
            t.clone()
        });
        let window = context_window(self.conn, &self.ctl.thread_id);
        self.notify(
            "thread/tokenUsage/updated",
            json!({"tokenUsage": {"total": total, "last": last, "modelContextWindow": window}}),
        );
        self.rate_limits();
        if self.conn.fake.turn_facts.turn_diff_after_each_response {
            if let Some(diff) = self.turn_diff.clone() {
                self.notify("turn/diff/updated", json!({"diff": diff}));
            }
        }
        // An active goal is charged the response's tokens (and says so when they are any).
        // What a goal is charged: fresh input (cached input is not) and output.
        let spent = n("input") - n("cached") + n("output");
        if spent > 0 {
            self.goal_charge(spent);
        }
    }

    /// Adds `tokens` to the thread's goal while it is active; reports the goal if so.
    fn goal_charge(&self, tokens: i64) {
        let thread_id = self.ctl.thread_id.clone();
        let goal = self.conn.fake.store.update(|d| {
            let g = &mut d["threads"][&thread_id]["goal"];
            if g["status"] != "active" {
                return None;
            }
            g["tokensUsed"] = json!(g["tokensUsed"].as_i64().unwrap_or(0) + tokens);
            Some(g.clone())
        });
        if let Some(goal) = goal {
            self.notify("thread/goal/updated", json!({"goal": goal}));
        }
    }

    /// A response that did not complete: codex still reports the thread's token usage as it
    /// stands (when any response of the thread has reported some), then the rate limits.
    fn unfinished_response(&self) {
        let data = self.conn.fake.store.load();
        let t = &data["threads"][&self.ctl.thread_id];
        if t["usage"].is_object() {
            let window = context_window(self.conn, &self.ctl.thread_id);
            self.notify(
                "thread/tokenUsage/updated",
                json!({"tokenUsage": {"total": t["usage"], "last": t["lastUsage"],
                                      "modelContextWindow": window}}),
            );
        }
        self.rate_limits();
    }

    /// The provider's HTTP error for this request: resent or retried as codex does (`Ok`: the
    /// next request follows), else the turn fails with codex's text for it.
    fn http_error(&mut self, step: &Value) -> Result<(), End> {
        let cfg = &self.conn.fake.config;
        let f = super::provider::classify(
            step["status"].as_u64().unwrap_or(500).clamp(100, 599) as u16,
            step["body"].as_str().unwrap_or_default(),
            &step["headers"],
            &cfg.base_url,
            now_secs(),
        );
        self.rollout.response_dropped();
        if f.resent && self.resent < cfg.request_max_retries {
            self.resent += 1;
            self.wait(super::provider::backoff(self.resent, f.retry_after))?;
            return Ok(());
        }
        self.resent = 0;
        if f.retried && self.retries < cfg.stream_max_retries {
            self.retries += 1;
            let max = cfg.stream_max_retries;
            self.item_notify(
                "error",
                json!({"error": turn_error(
                          &format!("Reconnecting... {}/{max}", self.retries),
                          json!({"responseStreamDisconnected": {"httpStatusCode": f.notice_status}}),
                          json!(f.message)),
                       "willRetry": true}),
                json!({}),
            );
            self.wait(super::provider::backoff(self.retries, f.retry_after))?;
            return Ok(());
        }
        match f.before {
            super::provider::Before::FullContext => self.context_full(),
            // codex's `update_rate_limits` sends a token count: the thread's usage so far
            // (when it has any), then the rate limits.
            super::provider::Before::RateLimits => self.unfinished_response(),
            super::provider::Before::Nothing => {}
        }
        self.fail_after(f.message, f.info)
    }

    /// The real server marks the context window full before it reports running out of it:
    /// the total is the window, the last response what it took to fill it.
    fn context_full(&self) {
        let window = context_window(self.conn, &self.ctl.thread_id);
        let thread_id = self.ctl.thread_id.clone();
        let (total, last) = self.conn.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            let before = t["usage"]["totalTokens"].as_i64().unwrap_or(0);
            let mut total = breakdown(0, 0, 0, 0);
            total["totalTokens"] = json!(window);
            let mut last = breakdown(0, 0, 0, 0);
            last["totalTokens"] = json!(window - before);
            t["usage"] = total.clone();
            t["lastUsage"] = last.clone();
            (total, last)
        });
        self.notify(
            "thread/tokenUsage/updated",
            json!({"tokenUsage": {"total": total, "last": last, "modelContextWindow": window}}),
        );
    }

    /// The stream ended early: retried while the provider allows it, else the turn fails.
    fn dropped_stream(&mut self) -> Result<(), End> {
        self.unfinished_response();
        if self.retries < self.conn.fake.config.stream_max_retries {
            return self.retry_stream(STREAM_CLOSED);
        }
        self.fail(STREAM_CLOSED.to_string(), json!("other"))
    }

    /// A failed stream retried: codex says so (the failure's text as the details) and asks
    /// again (the turn's next scripted response).
    fn retry_stream(&mut self, details: &str) -> Result<(), End> {
        let max = self.conn.fake.config.stream_max_retries;
        self.retries += 1;
        self.rollout.response_dropped();
        self.item_notify(
            "error",
            json!({"error": turn_error(
                      &format!("Reconnecting... {}/{max}", self.retries),
                      json!({"responseStreamDisconnected": {"httpStatusCode": null}}),
                      json!(details)),
                   "willRetry": true}),
            json!({}),
        );
        self.open = false;
        Ok(())
    }

    fn fail(&mut self, message: String, info: Value) -> Result<(), End> {
        self.rollout.response_dropped();
        self.fail_after(message, info)
    }

    /// The turn fails: the thread's status, then the error (the response already counted).
    fn fail_after(&mut self, message: String, info: Value) -> Result<(), End> {
        let error = turn_error(&message, info, Value::Null);
        // The thread stays in error until its next turn starts.
        let thread_id = self.ctl.thread_id.clone();
        self.conn
            .fake
            .store
            .update(|d| d["threads"][&thread_id]["systemError"] = json!(true));
        self.status(json!({"type": "systemError"}));
        self.item_notify(
            "error",
            json!({"error": error, "willRetry": false}),
            json!({}),
        );
        Err(End::Failed(error))
    }

    /// Plays a turn's steps as model responses, cut as the scripted model cuts them: a tool call
    /// ends a response (the tool runs, then the model is asked again), a failure ends the turn.
    /// Input steered in while the model streams abandons that response: the real server adds the
    /// input and asks again (the turn's next scripted response, else the default answer).
    fn run(&mut self, steps: &[Value]) -> Result<(), End> {
        let mut queue: std::collections::VecDeque<Vec<Value>> =
            split_responses(steps).into_iter().collect();
        let mut first = true;
        while let Some(response) = queue.pop_front() {
            if !first && !self.open {
                self.next_response();
            }
            first = false;
            // The provider answers this request with an HTTP error: nothing of it is played.
            if let Some(e) = response.iter().find(|s| s["kind"] == "http_error") {
                self.check()?;
                self.http_error(e)?;
                // Resent or retried: the next request takes the next scripted response.
                self.open = false;
                if queue.is_empty() {
                    queue.push_back(
                        default_turn()["steps"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default(),
                    );
                }
                continue;
            }
            self.resent = 0;
            let played = response.iter().try_for_each(|step| {
                self.check()?;
                // codex dispatches a tool call after the stream's item arrives: an interrupt
                // the client sent meanwhile ends the turn first (seen on 0.171.0).
                if TOOL_STEPS.contains(&step["kind"].as_str().unwrap_or_default()) {
                    self.wait(TOOL_DISPATCH)?;
                }
                self.step(step)
            });
            // The stream's end (`response.completed`, with its usage) comes a moment after its
            // last item: an interrupt sent on that item arrives first, and the response's usage
            // is never counted (seen on 0.171.0, real against real).
            let ends_stream = !TOOL_STEPS.contains(
                &response
                    .last()
                    .and_then(|s| s["kind"].as_str())
                    .unwrap_or(""),
            );
            let finished = played.and_then(|()| {
                if ends_stream && self.open {
                    self.wait(TOOL_DISPATCH)
                } else {
                    self.check()
                }
            });
            match finished {
                Ok(()) => {
                    // A tool's output, or a retried stream, goes back to the model: past the
                    // script it gives the default answer.
                    let last = response
                        .last()
                        .and_then(|s| s["kind"].as_str())
                        .unwrap_or("");
                    let follow_up = TOOL_STEPS.contains(&last) || !self.open;
                    // A stream's retry budget is one sampling request's: a completed response
                    // starts the next request afresh (core `run_sampling_request`).
                    if self.open {
                        self.retries = 0;
                    }
                    self.end_response();
                    if follow_up && queue.is_empty() {
                        queue.push_back(
                            default_turn()["steps"]
                                .as_array()
                                .cloned()
                                .unwrap_or_default(),
                        );
                    }
                }
                Err(End::Steered) => {
                    self.rate_limits();
                    self.open = false;
                    self.take_steers();
                    if queue.is_empty() {
                        queue.push_back(
                            default_turn()["steps"]
                                .as_array()
                                .cloned()
                                .unwrap_or_default(),
                        );
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Steered input becomes userMessage items; whether there was any.
    fn take_steers(&mut self) -> bool {
        let steers: Vec<Value> = std::mem::take(&mut *lock(&self.ctl.steers));
        for s in &steers {
            self.user_message(s);
        }
        !steers.is_empty()
    }

    /// `thread/compact/start`'s turn, as the real server runs it: the compaction item around
    /// three usage reports (the last one estimates the compacted history), no read state.
    fn compaction(&mut self) -> Result<(), End> {
        let id = uuid::Uuid::now_v7().to_string();
        let item = json!({"type": "contextCompaction", "id": id});
        let at = self.started(&item);
        // The real third report's `last.totalTokens` is codex's estimate of the compacted
        // history, its built-in prompt included: not modeled (known difference).
        // One model request (the summary: the response opened for this turn), three reports.
        for _ in 0..3 {
            self.open = true;
            self.end_response();
        }
        self.completed(item, at);
        Ok(())
    }

    fn timeout(&self) -> Duration {
        let secs = scenario(&self.conn.fake.dir)["request_timeout"]
            .as_f64()
            .unwrap_or(60.0);
        Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))
    }

    /// A server→client request: `params` (defaults) overridden by the step's own `params`.
    fn request(&self, method: &str, params: Value, step: &Value) -> Option<Value> {
        let mut params = params;
        if let (Some(p), Some(over)) = (params.as_object_mut(), step["params"].as_object()) {
            p.extend(over.clone());
        }
        let ctl = self.ctl;
        self.conn
            .server_request(method, params, self.timeout(), &|| ctl.interrupted())
    }

    /// An approval request answered; `serverRequest/resolved` follows the answer.
    fn approval(&self, method: &str, params: Value, step: &Value) -> Option<Value> {
        let reply = self.request(method, params, step);
        if let Some(id) = self.conn.last_request_id() {
            self.notify_thread("serverRequest/resolved", json!({"requestId": id}));
        }
        reply
    }

    fn notify_thread(&self, method: &str, extra: Value) {
        let mut m = Map::new();
        m.insert("threadId".into(), json!(self.ctl.thread_id));
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        self.conn.notify(method, Value::Object(m));
    }

    /// The thread's approval policy as set (a string, or a granular object).
    fn approval_policy_value(&self) -> Value {
        let data = self.conn.fake.store.load();
        match &data["threads"][&self.ctl.thread_id]["approvalPolicy"] {
            Value::Null => json!(self.conn.fake.config.approval_policy),
            v => v.clone(),
        }
    }

    /// The thread's sandbox policy type (`readOnly`, `workspaceWrite`, `dangerFullAccess`).
    fn sandbox_type(&self) -> String {
        let data = self.conn.fake.store.load();
        let t = &data["threads"][&self.ctl.thread_id];
        match t["sandbox"]["type"].as_str() {
            Some(s) => s.to_string(),
            None => match self.conn.fake.config.sandbox_mode.as_deref() {
                Some("workspace-write") => "workspaceWrite".into(),
                Some("danger-full-access") => "dangerFullAccess".into(),
                _ => "readOnly".into(),
            },
        }
    }

    /// Where the model's tools work: the thread's first environment's cwd when it names
    /// environments (a `cwd` param beside them is only the thread's own; seen on 0.171.0),
    /// else the thread's cwd.
    fn cwd(&self) -> String {
        let data = self.conn.fake.store.load();
        let thread = &data["threads"][&self.ctl.thread_id];
        thread["environments"][0]["cwd"]
            .as_str()
            .or_else(|| thread["cwd"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| path_str(&self.conn.fake.cwd))
    }

    fn step(&mut self, step: &Value) -> Result<(), End> {
        let kind = step["kind"].as_str().unwrap_or_default();
        match kind {
            "reasoning" => self.reasoning(step),
            "message" => self.message(step),
            "usage" => self.usage = Some(step.clone()),
            "command" => self.command(step)?,
            "file_change" => self.file_change(step)?,
            "tool_call" => self.tool_call(step),
            "user_input" => self.user_input(step),
            "message_partial" => {
                let id = self.model_id("msg");
                self.started(&agent_message(&id, "", &Value::Null));
                self.notify(
                    "item/agentMessage/delta",
                    json!({"itemId": id, "delta": str_of(step, "text", "")}),
                );
                return self.dropped_stream();
            }
            "error_note" => return self.dropped_stream(),
            "fail" => {
                let code = step["code"].as_str().unwrap_or("server_error");
                let (message, info) =
                    failure(code, step["message"].as_str().unwrap_or("turn failed"));
                self.unfinished_response();
                // A stream error or a rate limit is retried as the provider allows, like a
                // dropped stream; codex's other failure codes end the turn.
                let retried = !matches!(
                    code,
                    "context_length_exceeded"
                        | "insufficient_quota"
                        | "usage_not_included"
                        | "invalid_prompt"
                        | "server_is_overloaded"
                );
                if retried && self.retries < self.conn.fake.config.stream_max_retries {
                    return self.retry_stream(&message);
                }
                if info == "contextWindowExceeded" {
                    self.context_full();
                    self.rate_limits();
                }
                return self.fail(message, info);
            }
            "goal" => self.goal_update(&str_of(step, "status", "complete")),
            "compaction" => {
                let id = uuid::Uuid::now_v7().to_string();
                self.item(json!({"type": "contextCompaction", "id": id}));
            }
            "crash" => crash(self.conn, step),
            "progress" => return self.progress(step),
            "sleep" => {
                return self.wait(Duration::from_secs_f64(
                    step["seconds"].as_f64().unwrap_or(0.0).clamp(0.0, 86_400.0),
                ))
            }
            "permissions" => {
                let id = self.model_id("call");
                // The tool exists only with its feature, and codex refuses it without asking
                // under `never` (or a granular policy without `request_permissions`).
                let policy = self.approval_policy_value();
                let has_tool = self
                    .conn
                    .fake
                    .config
                    .features
                    .iter()
                    .any(|f| f == "request_permissions_tool");
                // No item either way: the call and its output are in the rollout.
                self.rollout.unkept();
                if !has_tool
                    || policy == "never"
                    || policy["granular"]["request_permissions"] == false
                {
                    return Ok(());
                }
                let permissions = json!({"network": {"enabled": true}, "fileSystem": null});
                if self.auto_review() {
                    // The reviewer decides instead of the client (seen on all three versions).
                    let action = json!({"type": "requestPermissions", "reason": step["reason"],
                                        "permissions": permissions});
                    self.review(&id, now_ms(), action);
                    return Ok(());
                }
                self.status(json!({"type": "active", "activeFlags": ["waitingOnApproval"]}));
                let params = self.scope(json!({"itemId": id, "environmentId": "local",
                    "startedAtMs": now_ms(), "cwd": self.cwd(), "reason": step["reason"],
                    "permissions": permissions}));
                self.approval("item/permissions/requestApproval", params, step);
                self.status(json!({"type": "active", "activeFlags": []}));
            }
            "grandchild" => grandchild(self.conn),
            "elicitation" => {
                let params = self.scope(json!({
                    "serverName": str_of(step, "server", "fake-mcp"),
                    "mode": "form",
                    "message": str_of(step, "message", "Please confirm"),
                    "requestedSchema": step.get("schema").cloned().unwrap_or_else(|| json!(
                        {"type": "object", "properties": {"ok": {"type": "boolean"}}})),
                }));
                self.request("mcpServer/elicitation/request", params, step);
            }
            "auth_refresh" => {
                self.request(
                    "account/chatgptAuthTokens/refresh",
                    json!({"reason": "unauthorized", "previousAccountId": null}),
                    step,
                );
            }
            "attestation" => {
                self.request("attestation/generate", json!({}), step);
            }
            "request" => {
                let method = str_of(step, "method", "");
                self.request(&method, json!({}), step);
            }
            "notify" => {
                let method = str_of(step, "method", "");
                self.conn
                    .notify(&method, step.get("params").cloned().unwrap_or(json!({})));
            }
            other => self.conn.fake.record(json!({
                "event": "scenario_error", "message": format!("unknown step kind `{other}`")})),
        }
        Ok(())
    }

    fn reasoning(&mut self, step: &Value) {
        let id = self.model_id("rs");
        let summary: Vec<String> = strings(&step["summary"]);
        let content: Vec<String> = strings(&step["content"]);
        let at =
            self.started(&json!({"type": "reasoning", "id": id, "summary": [], "content": []}));
        for (index, part) in summary.iter().enumerate() {
            self.notify(
                "item/reasoning/summaryPartAdded",
                json!({"itemId": id, "summaryIndex": index}),
            );
            // Two halves: how the scripted model streams a summary part.
            let chars: Vec<char> = part.chars().collect();
            let (a, b) = chars.split_at(chars.len() / 2);
            for half in [a, b].into_iter().filter(|h| !h.is_empty()) {
                self.notify(
                    "item/reasoning/summaryTextDelta",
                    json!({"itemId": id, "delta": half.iter().collect::<String>(),
                           "summaryIndex": index}),
                );
            }
        }
        for (index, part) in content.iter().enumerate() {
            self.notify(
                "item/reasoning/textDelta",
                json!({"itemId": id, "delta": part, "contentIndex": index}),
            );
        }
        self.completed(
            json!({"type": "reasoning", "id": id, "summary": summary, "content": content}),
            at,
        );
    }

    /// codex's exec policy file, where an approval "with execpolicy amendment" lands.
    fn rules_file(&self) -> std::path::PathBuf {
        self.conn.fake.codex_home.join("rules/default.rules")
    }

    /// Appends an allow rule for a command prefix, as codex writes it.
    fn allow_prefix(&self, pattern: &[Value]) {
        let words: Vec<String> = pattern.iter().map(Value::to_string).collect();
        let rule = format!(
            "prefix_rule(pattern=[{}], decision=\"allow\")\n",
            words.join(", ")
        );
        let path = self.rules_file();
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, rule.as_bytes()));
    }

    /// Whether an allow rule of the policy file covers the command (its words, split on
    /// whitespace, start with the rule's pattern).
    fn policy_allows(&self, raw: &str) -> bool {
        // codex matches rules against the words of a script it can parse as plain commands
        // (else against `/bin/bash -lc <script>`), as it proposes amendments.
        let words = shell::execpolicy_amendment(raw);
        let text = std::fs::read_to_string(self.rules_file()).unwrap_or_default();
        text.lines().any(|line| {
            let Some(rest) = line.trim().strip_prefix("prefix_rule(pattern=") else {
                return false;
            };
            let Some((pattern, tail)) = rest.split_once(']') else {
                return false;
            };
            let pattern: Vec<String> =
                serde_json::from_str(&format!("{pattern}]")).unwrap_or_default();
            tail.contains("decision=\"allow\"")
                && !pattern.is_empty()
                && words.len() >= pattern.len()
                && pattern.iter().zip(&words).all(|(p, w)| p == w)
        })
    }

    /// What codex does with a shell call under the thread's approval policy and sandbox (checked
    /// on 0.171.0 for every policy × sandbox × escalation): an escalation (`approval`, the
    /// seed's default) is asked about under `on-request` unless the sandbox is full access, and
    /// refused outright under `never` (or a granular policy without `sandbox_approval`);
    /// `untrusted` asks about every command.
    fn command_gate(&self, escalated: bool) -> Gate {
        let policy = self.approval_policy_value();
        // An external sandbox is the client's: codex runs commands as under full access.
        let sandbox = self.sandbox_type();
        let full = sandbox == "dangerFullAccess" || sandbox == "externalSandbox";
        match (&policy, policy.get("granular")) {
            (_, Some(g)) => match (g["sandbox_approval"] == true, escalated, full) {
                (false, true, _) => Gate::Refuse,
                (true, true, false) => Gate::Ask,
                _ => Gate::Run,
            },
            (Value::String(p), None) if p == "never" => {
                if escalated {
                    Gate::Refuse
                } else {
                    Gate::Run
                }
            }
            (Value::String(p), None) if p == "untrusted" => Gate::Ask,
            _ if escalated && !full => Gate::Ask,
            _ => Gate::Run,
        }
    }

    /// A shell tool call: asked about, refused or run as [`Self::command_gate`] says; an
    /// approved or plain command runs for real (unless the step scripts its output), as the real
    /// shell tool does.
    fn command(&mut self, step: &Value) -> Result<(), End> {
        let id = self.model_id("call");
        if self.no_environment() {
            self.rollout.unkept();
            return Ok(());
        }
        let raw = str_of(step, "command", "true");
        let command = shell::shell_display(&raw);
        // The model's `workdir`, against the thread's cwd.
        let cwd = super::settings::resolve_path(
            step["cwd"].as_str().unwrap_or_default(),
            Path::new(&self.cwd()),
        );
        let actions = json!(shell::command_actions(&raw, &cwd));
        let item =
            |source: &str, status: &str, pid: Value, output: Value, code: Value, ms: Value| {
                json!({"type": "commandExecution", "id": id, "pluginId": null, "scriptPath": null,
                   "command": command, "cwd": cwd, "processId": pid, "source": source,
                   "status": status, "commandActions": actions, "aggregatedOutput": output,
                   "exitCode": code, "durationMs": ms})
            };
        // A command that has not run (waiting for a verdict, declined or failed by the answer).
        let unrun = |status: &str| {
            item(
                "agent",
                status,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            )
        };
        let escalated = step["approval"].as_bool().unwrap_or(true);
        let session_ok =
            lock(&self.ctl.session_approved).contains(&raw) || self.policy_allows(&raw);
        let gate = match self.command_gate(escalated) {
            Gate::Ask if session_ok => Gate::Run,
            g => g,
        };
        // Set when the command was approved: its item started before the request.
        let mut approved_at = None;
        match gate {
            // codex tells the model it cannot escalate; the client hears nothing of it.
            Gate::Refuse => {
                self.rollout.unkept();
                return Ok(());
            }
            Gate::Run => {}
            Gate::Ask if self.auto_review() => {
                // The reviewer, not the client, decides (`scenario.json` `guardian`).
                let reviewed = json!([{"type": "unknown", "command": command}]);
                let mut pending = unrun("inProgress");
                pending["commandActions"] = reviewed.clone();
                let at = self.started(&pending);
                let action = json!({"type": "command", "source": "unifiedExec",
                                    "command": command, "cwd": cwd});
                if !self.review(&id, at, action) {
                    let mut declined = unrun("declined");
                    declined["commandActions"] = reviewed;
                    self.completed(declined, at);
                    return Ok(());
                }
                approved_at = Some(at);
            }
            Gate::Ask => {
                self.status(json!({"type": "active", "activeFlags": ["waitingOnApproval"]}));
                let at = self.started(&unrun("inProgress"));
                let argv = shell::execpolicy_amendment(&raw);
                let mut params = Map::new();
                for (k, v) in [
                    ("kind", json!("command")),
                    ("threadId", json!(self.ctl.thread_id)),
                    ("turnId", json!(self.turn_id)),
                    ("itemId", json!(id)),
                    ("startedAtMs", json!(at)),
                    ("environmentId", json!("local")),
                ] {
                    params.insert(k.into(), v);
                }
                // The model's justification; codex leaves the key out when there is none (and
                // for a command only `untrusted` asks about).
                if let Some(r) = step.get("reason").filter(|_| escalated) {
                    params.insert("reason".into(), r.clone());
                }
                for (k, v) in [
                    ("command", json!(command)),
                    ("cwd", json!(cwd)),
                    (
                        "commandActions",
                        json!(shell::approval_command_actions(&raw, &cwd)),
                    ),
                    ("proposedExecpolicyAmendment", json!(argv)),
                    (
                        "availableDecisions",
                        json!(["accept",
                            {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": argv}},
                            "cancel"]),
                    ),
                ] {
                    params.insert(k.into(), v);
                }
                let method = "item/commandExecution/requestApproval";
                let Some(reply) = self.request(method, Value::Object(params), step) else {
                    return self.unanswered();
                };
                self.resolved();
                match self.decision(method, &reply) {
                    Decision::Accept(d) => {
                        if d == "acceptForSession" {
                            lock(&self.ctl.session_approved).push(raw.clone());
                        }
                        if let Some(a) =
                            d["acceptWithExecpolicyAmendment"]["execpolicy_amendment"].as_array()
                        {
                            self.allow_prefix(a);
                        }
                        self.status(json!({"type": "active", "activeFlags": []}));
                        // An interrupt sent with the answer stops the command before it runs.
                        std::thread::sleep(TOOL_DISPATCH);
                        if self.ctl.interrupted() {
                            return self.interrupted_tool();
                        }
                        approved_at = Some(at);
                    }
                    // A declined command (or one whose request failed) is not kept in the turn.
                    d => {
                        let status = if d == Decision::Failed {
                            "failed"
                        } else {
                            "declined"
                        };
                        self.completed_unkept(unrun(status), at);
                        self.status(json!({"type": "active", "activeFlags": []}));
                        if d == Decision::Cancel {
                            self.end_response();
                            return Err(End::Cancelled);
                        }
                        return Ok(());
                    }
                }
            }
        }
        let started_item = |pid: &Value| {
            item(
                "unifiedExecStartup",
                "inProgress",
                pid.clone(),
                Value::Null,
                Value::Null,
                Value::Null,
            )
        };
        let (conn, scope) = (self.conn.clone(), self.scope(json!({"itemId": id})));
        let mut at = approved_at;
        let ran = run_command(
            step,
            &raw,
            &cwd,
            &mut |pid| {
                if at.is_none() {
                    at = Some(self.started(&started_item(pid)));
                }
            },
            &mut |delta| {
                let mut p = scope.clone();
                p["delta"] = json!(delta);
                conn.notify("item/commandExecution/outputDelta", p);
            },
        );
        let at = at.unwrap_or_else(now_ms);
        let status = if ran.code == 0 { "completed" } else { "failed" };
        let done = item(
            "unifiedExecStartup",
            status,
            ran.pid,
            ran.output,
            json!(ran.code),
            json!(0),
        );
        self.completed(done, at);
        Ok(())
    }

    /// The client's answer to an approval request of `method`: a decision its response type
    /// takes, else (a JSON-RPC error, a result that does not deserialize) a failed request.
    fn decision(&self, method: &str, reply: &Value) -> Decision {
        let Some(result) = reply.get("result") else {
            return Decision::Failed;
        };
        if matches!(
            (self.conn.fake.protocol.check_response)(method, result),
            Some(Err(_))
        ) {
            return Decision::Failed;
        }
        match result["decision"].as_str() {
            Some("decline") => Decision::Decline,
            Some("cancel") => Decision::Cancel,
            _ => Decision::Accept(result["decision"].clone()),
        }
    }

    /// The approval request just answered is resolved.
    fn resolved(&self) {
        if let Some(id) = self.conn.last_request_id() {
            self.notify_thread("serverRequest/resolved", json!({"requestId": id}));
        }
    }

    /// An approval request left unanswered until the turn was interrupted: the response's usage
    /// is reported, the turn ends, and only then is the request resolved (checked on 0.171.0);
    /// the request timing out ends the turn the same way.
    fn unanswered(&mut self) -> Result<(), End> {
        self.pending_resolved = self.conn.last_request_id();
        self.interrupted_tool()
    }

    /// The turn interrupted while a tool call waits: the response that called it is complete
    /// (its usage is reported), the tool never runs.
    fn interrupted_tool(&mut self) -> Result<(), End> {
        self.end_response();
        // As any interrupt: a turn with an answer asks for attention (see `check`).
        if self.final_answer().is_some() {
            self.read_state();
        }
        self.ctl.acked.store(true, Ordering::SeqCst);
        Err(End::Interrupted)
    }

    /// Whether the thread's approvals go to codex's reviewer: `approvalsReviewer: "auto_review"`
    /// under an `on-request` or granular policy (`routes_approval_to_guardian`); under
    /// `untrusted` the client is asked still (seen on 0.163.0, 0.169.0 and 0.171.0).
    fn auto_review(&self) -> bool {
        let store = self.conn.fake.store.load();
        let thread = &store["threads"][&self.ctl.thread_id];
        let policy = &thread["approvalPolicy"];
        thread["approvalsReviewer"] == "auto_review"
            && (policy == "on-request" || policy.get("granular").is_some())
    }

    /// codex's automatic approval review of `action` for item `target`, as the real server
    /// reports it; the verdict is `scenario.json` `guardian` (`allow`, the default, or `deny`).
    fn review(&self, target: &str, at: i64, action: Value) -> bool {
        let allow = guardian_allows(&scenario(&self.conn.fake.dir));
        let review_id = uuid::Uuid::now_v7().to_string();
        self.notify(
            "item/autoApprovalReview/started",
            json!({"startedAtMs": at, "reviewId": review_id, "targetItemId": target,
                   "review": {"status": "inProgress", "riskLevel": null,
                              "userAuthorization": null, "rationale": null},
                   "action": action}),
        );
        let verdict = if allow { "approved" } else { "denied" };
        self.notify_thread(
            "guardianWarning",
            json!({"message": format!(
                "Automatic approval review {verdict} (risk: low, authorization: high): \
                 {GUARDIAN_RATIONALE}")}),
        );
        self.notify(
            "item/autoApprovalReview/completed",
            json!({"startedAtMs": at, "completedAtMs": now_ms(), "reviewId": review_id,
                   "targetItemId": target, "decisionSource": "agent",
                   "review": {"status": verdict, "riskLevel": "low", "userAuthorization": "high",
                              "rationale": GUARDIAN_RATIONALE},
                   "action": action}),
        );
        allow
    }

    /// An `apply_patch` call: the real server asks for approval only when a path lies outside
    /// the sandbox's writable roots, applies the patch, and reports the turn's diff.
    fn file_change(&mut self, step: &Value) -> Result<(), End> {
        let id = self.model_id("call");
        if self.no_environment() {
            self.rollout.unkept();
            return Ok(());
        }
        // A model without codex's freeform patch tool (one it has no metadata for) calls a tool
        // codex does not offer: codex tells the model, the client sees nothing.
        if !self.has_patch_tool() {
            self.rollout.unkept();
            return Ok(());
        }
        let cwd = self.cwd();
        let files = patch_files(step, &cwd);
        let gate = self.patch_gate(&files, &cwd);
        if gate == Gate::Refuse {
            // codex rejects the patch before any item exists; the model is told why.
            self.rollout.unkept();
            return Ok(());
        }
        let changes: Vec<Value> = files
            .iter()
            .map(|f| json!({"path": f.path, "kind": {"type": f.kind}, "diff": f.content}))
            .collect();
        let base = json!({"type": "fileChange", "id": id, "changes": changes});
        let at = self.started(&merge(&base, json!({"status": "inProgress"})));
        let mut status = "completed";
        if gate == Gate::Ask && self.auto_review() {
            // The reviewer, not the client, decides a patch too (seen on 0.171.0).
            let action = json!({"type": "applyPatch", "cwd": cwd,
                                "files": files.iter().map(|f| f.path.clone()).collect::<Vec<_>>()});
            if !self.review(&id, at, action) {
                self.completed(merge(&base, json!({"status": "declined"})), at);
                return Ok(());
            }
        } else if gate == Gate::Ask {
            self.status(json!({"type": "active", "activeFlags": ["waitingOnApproval"]}));
            let params = self.scope(json!({"itemId": id, "startedAtMs": now_ms(),
                                           "reason": null, "grantRoot": null}));
            let method = "item/fileChange/requestApproval";
            let Some(reply) = self.request(method, params, step) else {
                return self.unanswered();
            };
            self.resolved();
            let decision = self.decision(method, &reply);
            self.status(json!({"type": "active", "activeFlags": []}));
            // A patch whose request failed reads as declined (unlike a command).
            match decision {
                Decision::Accept(_) => {}
                Decision::Decline | Decision::Cancel | Decision::Failed => status = "declined",
            }
            if status != "completed" {
                self.completed(merge(&base, json!({"status": status})), at);
                if decision == Decision::Cancel {
                    self.end_response();
                    return Err(End::Cancelled);
                }
                return Ok(());
            }
        }
        // An approved patch is still applied inside a read-only sandbox, which can write a file
        // where a directory exists but cannot make one: such a patch fails (seen on 0.171.0).
        let needs_dir = files
            .iter()
            .any(|f| f.kind == "add" && Path::new(&f.path).parent().is_some_and(|d| !d.exists()));
        if gate == Gate::Ask && needs_dir && self.sandbox_type() == "readOnly" {
            self.completed(merge(&base, json!({"status": "failed"})), at);
            // The turn's diff is reset once, and no more diffs follow in this turn.
            if self.turn_diff.is_some() && !self.diff_stopped {
                self.notify("turn/diff/updated", json!({"diff": ""}));
            }
            self.diff_stopped = true;
            return Ok(());
        }
        self.completed(merge(&base, json!({"status": status})), at);
        for f in &files {
            if f.kind == "add" {
                if let Some(dir) = Path::new(&f.path).parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                // Inside the cwd the diff names the path relative to it.
                let shown = Path::new(&f.path)
                    .strip_prefix(&cwd)
                    .map_or_else(|_| f.path.clone(), path_str);
                let before = std::fs::read_to_string(&f.path).ok();
                let _ = std::fs::write(&f.path, &f.content);
                self.turn_files
                    .entry(shown)
                    .and_modify(|(_, now)| now.clone_from(&f.content))
                    .or_insert((before, f.content.clone()));
            }
        }
        // The turn's whole diff so far, after each patch.
        let diff: String = self
            .turn_files
            .iter()
            .map(|(path, (before, now))| git_diff(path, before.as_deref(), now))
            .collect();
        if !diff.is_empty() && !self.diff_stopped {
            self.notify("turn/diff/updated", json!({"diff": diff}));
            self.turn_diff = Some(diff);
        }
        Ok(())
    }

    /// Whether the thread's model has codex's freeform `apply_patch` tool (its catalog entry
    /// says so).
    fn has_patch_tool(&self) -> bool {
        let data = self.conn.fake.store.load();
        let model = data["threads"][&self.ctl.thread_id]["model"]
            .as_str()
            .map_or_else(|| self.conn.fake.config.model.clone(), str::to_string);
        self.conn
            .fake
            .catalog
            .find(&model)
            .is_some_and(|m| m.apply_patch_tool_type.as_deref() == Some("freeform"))
    }

    /// Whether the thread has no execution environment (`environments: []`): codex then runs
    /// no tool and shows nothing of it (checked on 0.171.0).
    fn no_environment(&self) -> bool {
        let data = self.conn.fake.store.load();
        data["threads"][&self.ctl.thread_id]["environments"]
            .as_array()
            .is_some_and(Vec::is_empty)
    }

    /// What codex's patch safety check decides for a patch (`assess_patch_safety`, checked on
    /// 0.171.0 for every policy × sandbox): `untrusted` asks about every patch; full access
    /// applies any; otherwise a write the sandbox does not allow (anything under read-only,
    /// outside the writable roots under workspace-write) is asked about, or refused under
    /// `never` (and a granular policy without `sandbox_approval`).
    fn patch_gate(&self, files: &[PatchFile], cwd: &str) -> Gate {
        let policy = self.approval_policy_value();
        if policy == "untrusted" {
            return Gate::Ask;
        }
        let sandbox = self.sandbox_type();
        if sandbox == "dangerFullAccess" || sandbox == "externalSandbox" {
            return Gate::Run;
        }
        let writable = |path: &str| {
            sandbox == "workspaceWrite" && {
                let tmpdir = std::env::var("TMPDIR").unwrap_or_default();
                [cwd, "/tmp", tmpdir.as_str()]
                    .iter()
                    .filter(|r| !r.is_empty())
                    .any(|r| Path::new(path).starts_with(r))
            }
        };
        if files.iter().all(|f| writable(&f.path)) {
            return Gate::Run;
        }
        let refuses = policy == "never" || policy["granular"]["sandbox_approval"] == false;
        if refuses {
            Gate::Refuse
        } else {
            Gate::Ask
        }
    }

    fn has_dynamic_tool(&self, tool: &str, namespace: Option<&str>) -> bool {
        let data = self.conn.fake.store.load();
        let specs = &data["threads"][&self.ctl.thread_id]["dynamicTools"];
        specs.as_array().is_some_and(|specs| {
            specs.iter().any(|s| match namespace {
                None => s["type"] != "namespace" && s["name"] == tool,
                Some(ns) => {
                    s["type"] == "namespace"
                        && s["name"] == ns
                        && s["tools"]
                            .as_array()
                            .is_some_and(|t| t.iter().any(|t| t["name"] == tool))
                }
            })
        })
    }

    /// `request_user_input`: outside Plan mode (unless `default_mode_request_user_input` is on)
    /// and without options for every question the tool answers the model with an error and
    /// the client sees nothing; otherwise a request (blocking in Plan mode) every question
    /// of which the server opens to free-form answers (`isOther`).
    fn user_input(&mut self, step: &Value) {
        let id = self.model_id("call");
        // No item, asked or not: the call and its output are in the rollout.
        self.rollout.unkept();
        let features = &self.conn.fake.config.features;
        let plan = self.plan_mode;
        if !plan
            && !features
                .iter()
                .any(|f| f == "default_mode_request_user_input")
        {
            return;
        }
        let questions = step.get("questions").cloned().unwrap_or_else(|| {
            json!([{"id": "q1", "header": "Question", "question": "Proceed?",
                    "options": [{"label": "Yes", "description": "Go ahead"},
                                {"label": "No", "description": "Stop"}]}])
        });
        let Some(questions) = questions.as_array().and_then(|qs| {
            qs.iter()
                .map(|q| {
                    let options = q["options"].as_array().filter(|o| !o.is_empty())?;
                    Some(json!({"id": q["id"], "header": q["header"], "question": q["question"],
                                "isOther": true, "isSecret": q["isSecret"].as_bool().unwrap_or(false),
                                "options": options}))
                })
                .collect::<Option<Vec<Value>>>()
        }) else {
            return;
        };
        self.status(json!({"type": "active", "activeFlags": ["waitingOnUserInput"]}));
        let params = self.scope(json!({"itemId": id, "questions": questions,
                                       "isBlocking": plan, "autoResolutionMs": null}));
        self.approval("item/tool/requestUserInput", params, step);
        self.status(json!({"type": "active", "activeFlags": []}));
    }

    /// A dynamic tool call reaches the client only for a tool the thread was started with
    /// (`dynamicTools`); codex answers the model itself for any other name.
    fn tool_call(&mut self, step: &Value) {
        let id = self.model_id("call");
        let tool = str_of(step, "tool", "lookup");
        if !self.has_dynamic_tool(&tool, step["namespace"].as_str()) {
            self.rollout.unkept();
            return;
        }
        // The model sends arguments as a JSON string, which the real server parses (a recorded
        // call's string arguments show as the object, 27_dynamic_tool through `record`).
        let arguments = match step.get("arguments") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!(s)),
            Some(v) if !v.is_null() => v.clone(),
            _ => json!({}),
        };
        let base = json!({"type": "dynamicToolCall", "id": id, "namespace": step["namespace"],
                          "tool": tool, "arguments": arguments});
        let at = self.started(&merge(
            &base,
            json!({"status": "inProgress", "contentItems": null,
                                           "success": null, "durationMs": null}),
        ));
        let params = self.scope(json!({"callId": id, "namespace": step["namespace"],
                                       "tool": tool, "arguments": arguments}));
        let reply = self.request("item/tool/call", params, step);
        let result = reply.map(|r| r["result"].clone()).unwrap_or(Value::Null);
        let success = result["success"].as_bool().unwrap_or(false);
        let items = result
            .get("contentItems")
            .filter(|v| v.is_array())
            .cloned()
            .unwrap_or(json!([]));
        let status = if success { "completed" } else { "failed" };
        self.completed(
            merge(
                &base,
                json!({"status": status, "contentItems": items,
                                           "success": success, "durationMs": 3}),
            ),
            at,
        );
    }

    fn message(&mut self, step: &Value) {
        let id = self.model_id("msg");
        let text = str_of(step, "text", "");
        let phase = step.get("phase").cloned().unwrap_or(Value::Null);
        let deltas = crate::model::script::message_deltas(step);
        if !self.plan_mode {
            let at = self.started(&agent_message(&id, "", &phase));
            for delta in deltas {
                self.notify(
                    "item/agentMessage/delta",
                    json!({"itemId": id, "delta": delta}),
                );
            }
            self.completed(agent_message(&id, &text, &phase), at);
            return;
        }
        // Plan mode: a `<proposed_plan>` block of the answer is streamed as a plan item of its
        // own; the plan items complete when the message does, just before it. The message item
        // starts with its first text outside a plan: an answer that is only a plan, or empty,
        // has none (seen on 0.171.0).
        let mut message_at: Option<i64> = None;
        let mut split = PlanSplit::default();
        let mut plans: Vec<(String, i64, String)> = Vec::new();
        let mut answer = String::new();
        let last = deltas.len();
        for (n, delta) in deltas.into_iter().enumerate() {
            let mut segs = split.feed(&delta);
            if n + 1 == last {
                segs.extend(split.finish());
            }
            for seg in segs {
                match seg {
                    Seg::Answer(t) => {
                        if message_at.is_none() {
                            message_at = Some(self.started(&agent_message(&id, "", &phase)));
                        }
                        answer.push_str(&t);
                        self.notify("item/agentMessage/delta", json!({"itemId": id, "delta": t}));
                    }
                    Seg::PlanStart => {
                        let pid = if self.conn.fake.turn_facts.plan_item_id_from_turn {
                            format!("{}-plan", self.turn_id)
                        } else {
                            uuid::Uuid::now_v7().to_string()
                        };
                        let at = self.started(&json!({"type": "plan", "id": pid, "text": ""}));
                        plans.push((pid, at, String::new()));
                    }
                    Seg::Plan(t) => {
                        if let Some((pid, _, text)) = plans.last_mut() {
                            text.push_str(&t);
                            let pid = pid.clone();
                            self.notify("item/plan/delta", json!({"itemId": pid, "delta": t}));
                        }
                    }
                }
            }
        }
        for (pid, at, text) in plans {
            self.completed(json!({"type": "plan", "id": pid, "text": text}), at);
        }
        if let Some(at) = message_at {
            self.completed(agent_message(&id, &answer, &phase), at);
        }
    }

    /// Keeps the turn busy for `seconds`, a delta every `interval` (a model at work).
    fn progress(&mut self, step: &Value) -> Result<(), End> {
        let id = self.model_id("msg");
        let at = self.started(&agent_message(&id, "", &Value::Null));
        let deadline = Instant::now()
            + Duration::from_secs_f64(step["seconds"].as_f64().unwrap_or(1.0).clamp(0.0, 86_400.0));
        let interval =
            Duration::from_secs_f64(step["interval"].as_f64().unwrap_or(0.25).clamp(0.001, 60.0));
        let mut text = String::new();
        while Instant::now() < deadline {
            self.check()?;
            text.push('.');
            self.notify(
                "item/agentMessage/delta",
                json!({"itemId": id, "delta": "."}),
            );
            self.wait(interval)?;
        }
        self.check()?;
        let text = step["text"].as_str().map(str::to_string).unwrap_or(text);
        self.completed(agent_message(&id, &text, &Value::Null), at);
        Ok(())
    }

    /// Sleeps, waking early for steered input and interrupts.
    fn wait(&mut self, d: Duration) -> Result<(), End> {
        let end = Instant::now() + d;
        while Instant::now() < end {
            // Steered input shows up while the model works; an interrupt wakes the turn.
            self.check()?;
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
        }
        Ok(())
    }
}

/// A `UserInput` as a userMessage item shows it (checked on 0.171.0 for every variant): the
/// type's own keys in codex's order, defaults filled in, anything else dropped.
fn user_content(i: &Value) -> Value {
    let or_null = |k: &str| i.get(k).cloned().unwrap_or(Value::Null);
    match i["type"].as_str() {
        Some("text") => {
            let elements: Vec<Value> = i["text_elements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    json!({"byteRange": e["byteRange"], "placeholder": e.get("placeholder")
                                .cloned().unwrap_or(Value::Null)})
                })
                .collect();
            json!({"type": "text", "text": i["text"], "text_elements": elements})
        }
        Some("image") if i.get("fileId").is_some() => {
            json!({"type": "image", "fileId": i["fileId"], "detail": or_null("detail")})
        }
        Some("image") => json!({"type": "image", "url": i["url"], "detail": or_null("detail")}),
        Some("localImage") => {
            json!({"type": "localImage", "detail": or_null("detail"), "path": i["path"]})
        }
        Some(t @ ("skill" | "mention")) => json!({"type": t, "name": i["name"], "path": i["path"]}),
        Some("audio") => json!({"type": "audio", "url": i["url"]}),
        Some("localAudio") => json!({"type": "localAudio", "path": i["path"]}),
        _ => i.clone(),
    }
}

/// An `agentMessage` item with the keys the real server always sends.
/// A piece of a Plan-mode answer as it streams.
#[derive(Debug, PartialEq)]
enum Seg {
    Answer(String),
    PlanStart,
    Plan(String),
}

/// Splits a streamed Plan-mode answer as codex does: a line `<proposed_plan>` opens a plan and a
/// line `</proposed_plan>` closes it (the tag lines and their newlines belong to neither); text
/// that may still become a tag line is held until it is or is not one.
#[derive(Default)]
struct PlanSplit {
    in_plan: bool,
    mid_line: bool,
    pending: String,
}

impl PlanSplit {
    fn feed(&mut self, chunk: &str) -> Vec<Seg> {
        let mut out = Vec::new();
        for c in chunk.chars() {
            if !self.mid_line || !self.pending.is_empty() {
                self.pending.push(c);
                let line = if self.in_plan {
                    "</proposed_plan>\n"
                } else {
                    "<proposed_plan>\n"
                };
                if self.pending == line {
                    self.pending.clear();
                    if !self.in_plan {
                        out.push(Seg::PlanStart);
                    }
                    self.in_plan = !self.in_plan;
                    self.mid_line = false;
                } else if line.starts_with(&self.pending) {
                    self.mid_line = true;
                } else {
                    let held = std::mem::take(&mut self.pending);
                    self.mid_line = !held.ends_with('\n');
                    self.text(&held, &mut out);
                }
                continue;
            }
            self.mid_line = c != '\n';
            self.text(&c.to_string(), &mut out);
        }
        out
    }

    /// The end of the answer: what was held is text after all.
    fn finish(&mut self) -> Vec<Seg> {
        let mut out = Vec::new();
        let held = std::mem::take(&mut self.pending);
        self.text(&held, &mut out);
        out
    }

    fn text(&self, t: &str, out: &mut Vec<Seg>) {
        if t.is_empty() {
            return;
        }
        match (out.last_mut(), self.in_plan) {
            (Some(Seg::Plan(p)), true) | (Some(Seg::Answer(p)), false) => p.push_str(t),
            (_, true) => out.push(Seg::Plan(t.to_string())),
            (_, false) => out.push(Seg::Answer(t.to_string())),
        }
    }
}

fn agent_message(id: &str, text: &str, phase: &Value) -> Value {
    json!({"type": "agentMessage", "moderation": null, "id": id, "text": text, "phase": phase,
           "memoryCitation": null, "delivery": null, "questions": null})
}

/// What running a command gave, as its item shows it.
struct Ran {
    /// The process id (`null` when it could not start).
    pid: Value,
    /// stdout and stderr as they arrived (`null` when there was none).
    output: Value,
    code: i64,
}

/// The item's output is capped: the first and last half MiB, the rest counted (codex's
/// head/tail buffer).
const OUTPUT_CAP: usize = 1 << 20;

fn capped(bytes: &[u8]) -> String {
    if bytes.len() <= OUTPUT_CAP {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let half = OUTPUT_CAP / 2;
    format!(
        "{}\n... {} bytes omitted ...\n{}",
        String::from_utf8_lossy(&bytes[..half]),
        bytes.len() - OUTPUT_CAP,
        String::from_utf8_lossy(&bytes[bytes.len() - half..])
    )
}

/// Output read later than this after the start also streams as `outputDelta` (codex waits
/// this long for a quick exit before it streams).
const STREAM_AFTER: Duration = Duration::from_millis(150);

/// Runs the command as the shell tool does (`/bin/bash -lc`, stdout and stderr on one pipe)
/// unless the step scripts `output`/`exit_code`. `started` gets the process id once it runs;
/// `delta` each piece of output read after [`STREAM_AFTER`] (at most 8 KiB each).
fn run_command(
    step: &Value,
    command: &str,
    cwd: &str,
    started: &mut dyn FnMut(&Value),
    delta: &mut dyn FnMut(&str),
) -> Ran {
    if let Some(out) = step["output"].as_str() {
        let pid = json!(std::process::id().to_string());
        started(&pid);
        return Ran {
            pid,
            output: if out.is_empty() {
                Value::Null
            } else {
                json!(out)
            },
            code: step["exit_code"].as_i64().unwrap_or(0),
        };
    }
    let mut spawn_failed = |e: std::io::Error| {
        let pid = Value::Null;
        started(&pid);
        Ran {
            pid,
            output: json!(format!("Failed to create unified exec process: {e}")),
            code: -1,
        }
    };
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return spawn_failed(e),
    };
    let mut cmd = std::process::Command::new("/bin/bash");
    cmd.arg("-lc")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null());
    match writer.try_clone() {
        Ok(w2) => {
            cmd.stdout(writer).stderr(w2);
        }
        Err(e) => return spawn_failed(e),
    }
    let spawned = cmd.spawn();
    // The parent's copies of the pipe's write end go with `cmd`: end of output is the child's.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return spawn_failed(e),
    };
    let since = Instant::now();
    let pid = json!(child.id().to_string());
    started(&pid);
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    // Bytes held back from a delta until they complete a UTF-8 character.
    let mut held = Vec::new();
    loop {
        match std::io::Read::read(&mut reader, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if since.elapsed() >= STREAM_AFTER {
                    held.extend_from_slice(&buf[..n]);
                    let cut = match std::str::from_utf8(&held) {
                        Ok(_) => held.len(),
                        Err(e) => e.valid_up_to(),
                    };
                    if cut > 0 {
                        let text = String::from_utf8_lossy(&held[..cut]).into_owned();
                        held.drain(..cut);
                        delta(&text);
                    }
                }
            }
        }
    }
    let code = match child.wait() {
        Ok(st) => st
            .code()
            .map(i64::from)
            .or_else(|| {
                std::os::unix::process::ExitStatusExt::signal(&st).map(|s| 128 + i64::from(s))
            })
            .unwrap_or(-1),
        Err(_) => -1,
    };
    Ran {
        pid,
        output: if out.is_empty() {
            Value::Null
        } else {
            json!(capped(&out))
        },
        code,
    }
}

/// How long codex takes from a tool call's arrival in the stream to running it (an estimate:
/// long enough for an interrupt sent on the stream's last delta to arrive first).
const TOOL_DISPATCH: Duration = Duration::from_millis(15);

/// Stream-ending steps whose output the model is asked about next.
const TOOL_STEPS: &[&str] = &[
    "command",
    "file_change",
    "tool_call",
    "user_input",
    "permissions",
    "goal",
];

/// A turn's steps as model responses.
fn split_responses(steps: &[Value]) -> Vec<Vec<Value>> {
    let mut out = vec![Vec::new()];
    for step in steps {
        if let Some(cur) = out.last_mut() {
            cur.push(step.clone());
        }
        // Cut where the scripted model cuts (one list for both servers).
        if crate::model::script::ENDS_RESPONSE.contains(&step["kind"].as_str().unwrap_or_default())
        {
            out.push(Vec::new());
        }
    }
    if out.len() > 1 && out.last().is_some_and(Vec::is_empty) {
        out.pop();
    }
    out
}

/// One file an `apply_patch` touches.
struct PatchFile {
    path: String,
    kind: &'static str,
    content: String,
}

/// The files of a `file_change` step: its `patch` (`*** Add File:` sections), else `path`
/// (relative to cwd; `README.md` by default) with `content` or `diff` (`+` lines), as the
/// scripted model builds the patch.
fn patch_files(step: &Value, cwd: &str) -> Vec<PatchFile> {
    let abs = |p: &str| {
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            path_str(&Path::new(cwd).join(p))
        }
    };
    if let Some(patch) = step["patch"].as_str() {
        let mut files: Vec<PatchFile> = Vec::new();
        for line in patch.lines() {
            if let Some(p) = line.strip_prefix("*** Add File: ") {
                files.push(PatchFile {
                    path: abs(p.trim()),
                    kind: "add",
                    content: String::new(),
                });
            } else if let Some(p) = line.strip_prefix("*** Delete File: ") {
                files.push(PatchFile {
                    path: abs(p.trim()),
                    kind: "delete",
                    content: String::new(),
                });
            } else if let Some(p) = line.strip_prefix("*** Update File: ") {
                files.push(PatchFile {
                    path: abs(p.trim()),
                    kind: "update",
                    content: String::new(),
                });
            } else if line.starts_with("***") {
                continue;
            } else if let Some(f) = files.last_mut() {
                let body = if f.kind == "add" {
                    line.strip_prefix('+').unwrap_or(line)
                } else {
                    line
                };
                f.content.push_str(body);
                f.content.push('\n');
            }
        }
        return files;
    }
    let path = abs(step["path"].as_str().unwrap_or("README.md"));
    let content = match step["content"].as_str() {
        // The patch carries the content's lines, each ended by a newline (at least one line).
        Some("") => "\n".to_string(),
        Some(c) => c.lines().map(|l| format!("{l}\n")).collect(),
        None => step["diff"]
            .as_str()
            .unwrap_or("+hello\n")
            .lines()
            .map(|l| format!("{}\n", l.strip_prefix('+').unwrap_or(l)))
            .collect(),
    };
    let kind = match step["change"].as_str() {
        Some("delete") => "delete",
        Some("update") => "update",
        _ => "add",
    };
    vec![PatchFile {
        path,
        kind,
        content,
    }]
}

/// The git blob id of a file's content.
fn blob_id(content: &str) -> String {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(format!("blob {}\0", content.len()).as_bytes());
    sha.update(content.as_bytes());
    sha.digest().to_string()
}

/// A hunk header's range: `start,len`, the length left out when it is 1.
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{},0", start),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// The git diff of a file a turn changed from `old` (None: it did not exist) to `new`, as
/// `turn/diff/updated` carries it: three lines of context (paths are absolute outside a
/// repository, hence `a//tmp/…`).
fn git_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let Some(old) = old else {
        return git_add_diff(path, new);
    };
    if old == new {
        return String::new();
    }
    let mut out = format!(
        "diff --git a/{path} b/{path}\nindex {}..{}\n--- a/{path}\n+++ b/{path}\n",
        blob_id(old),
        blob_id(new)
    );
    let diff = similar::TextDiff::from_lines(old, new);
    for group in diff.grouped_ops(3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (o_len, n_len) = (last.old_range().end - o, last.new_range().end - n);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(o, o_len),
            hunk_range(n, n_len)
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                out.push(sign);
                out.push_str(change.value());
                if change.missing_newline() {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The git diff of a new file, as `turn/diff/updated` carries it.
fn git_add_diff(path: &str, content: &str) -> String {
    let sha = blob_id(content);
    let lines = content.lines().count();
    let range = if lines == 1 {
        "1".to_string()
    } else {
        format!("1,{lines}")
    };
    let body: String = content.lines().map(|l| format!("+{l}\n")).collect();
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex \
         0000000000000000000000000000000000000000..{sha}\n--- /dev/null\n+++ b/{path}\n\
         @@ -0,0 +{range} @@\n{body}",
    )
}

fn str_of(v: &Value, key: &str, default: &str) -> String {
    v[key].as_str().unwrap_or(default).to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn merge(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    if let (Some(o), Value::Object(e)) = (out.as_object_mut(), extra) {
        o.extend(e);
    }
    out
}

/// The process dies mid-turn, as a crashing codex would: the store holds only whole writes.
fn crash(conn: &Conn, step: &Value) {
    let code = step["code"].as_i64().unwrap_or(1) as i32;
    conn.fake.record(json!({"event": "crash", "code": code}));
    // What was sent before the crash left the process (and its entries reached the transcript).
    conn.flush_held();
    conn.fake.transcript.flush();
    let msg = format!("{}\n", str_of(step, "stderr", "fake codex: fatal error"));
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
    std::process::exit(code);
}

/// A descendant in its own session (like codex's stdio MCP servers); it lives until the
/// harness creates `release-grandchildren` in the state dir, or 600 s.
fn grandchild(conn: &Conn) {
    use std::os::unix::process::CommandExt;
    let release = conn.fake.dir.join(super::GRANDCHILD_RELEASE);
    let script = "i=0; while [ ! -e \"$1\" ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i+1)); done";
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", script, "grandchild", &path_str(&release)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid and sigprocmask are async-signal-safe and touch no parent memory. The
    // fake blocks SIGTERM for its sigwait thread; the grandchild must not inherit that.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => conn
            .fake
            .record(json!({"event": "grandchild", "child_pid": child.id()})),
        Err(e) => conn
            .fake
            .record(json!({"event": "scenario_error", "message": format!("grandchild: {e}")})),
    }
}

#[cfg(test)]
mod tests {
    use super::{PlanSplit, Seg};

    fn split(chunks: &[&str]) -> Vec<Seg> {
        let mut p = PlanSplit::default();
        let mut out: Vec<Seg> = chunks.iter().flat_map(|c| p.feed(c)).collect();
        out.extend(p.finish());
        out
    }

    #[test]
    fn a_proposed_plan_is_split_off_the_answer_as_codex_streams_it() {
        // Recorded (31b): tag lines held across chunks, their newlines dropped.
        assert_eq!(
            split(&[
                "Intro.", "\n<prop", "osed_p", "lan>\nA", "\n</pro", "posed_", "plan>\n", "Outro."
            ]),
            vec![
                Seg::Answer("Intro.".into()),
                Seg::Answer("\n".into()),
                Seg::PlanStart,
                Seg::Plan("A".into()),
                Seg::Plan("\n".into()),
                Seg::Answer("Outro.".into()),
            ]
        );
        // Not a tag line: the held text is the answer's after all, at once or at the end.
        assert_eq!(
            split(&["<prop", "er>\n", "<pro"]),
            vec![Seg::Answer("<proper>\n".into()), Seg::Answer("<pro".into())]
        );
        // A tag in mid-line is text.
        assert_eq!(
            split(&["a <proposed_plan>\n"]),
            vec![Seg::Answer("a <proposed_plan>\n".into())]
        );
    }

    #[test]
    fn every_version_s_turn_facts_parse() {
        for p in crate::versions() {
            serde_json::from_str::<super::TurnFacts>(p.turn_facts)
                .unwrap_or_else(|e| panic!("schema/{}/facts/turns.json: {e}", p.version));
        }
    }
}
