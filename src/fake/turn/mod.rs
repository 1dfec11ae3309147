//! The turn engine: one scripted turn per `turn/start` (consumed across processes through the
//! store's `turn_cursor`), played as codex plays a model's answers. Each model request gets the
//! next scripted response rendered by the scripted model's own renderer
//! ([`crate::model::script::reply`]) into Responses API events, and [`engine`] consumes that
//! stream event by event as codex does (`sample`): items, deltas, tool calls, usage, the
//! stream's end, interrupts and steers between events. A script may carry `continuations`:
//! further server turns (a goal rolling over) reported as `turn/completed` → `turn/started`.
//!
//! Rooms: `mod.rs` (a turn's life: start, closing, control), `engine.rs` (the sampling loop and
//! the stream), `tools.rs` (what each tool call
//! does), `exec.rs` (running a command), `patch.rs` (patches and the turn diff), `plan.rs`
//! (Plan mode's split), `rollout.rs` (rollout ordinals).

mod engine;
mod exec;
mod patch;
mod plan;
mod rollout;
mod tools;

use super::server::{lock, Conn};
use super::state::{now_ms, now_secs, scenario};
use crate::model::step::{Scenario, Script};
use engine::Ctx;
use rollout::Rollout;
use serde_json::{json, Value};
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

/// What a tool call gets before it runs.
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

/// A turn the server starts by itself.
pub enum ServerTurn {
    /// An active goal's next turn (the next scripted turn).
    Goal,
    /// `thread/compact/start`'s (its summary request takes the next scripted turn).
    Compaction,
}

/// What a turn plays.
enum Play {
    Script(Script),
    Compaction,
}

/// Takes the next scripted turn (or the default one) and advances the shared cursor.
fn next_script(conn: &Conn) -> Script {
    next_script_or(conn, Script::default_turn)
}

/// The next scripted turn for a goal's next server turn; past the script, the default answer
/// that completes the goal (as the scripted model answers a goal continuation).
fn next_goal_script(conn: &Conn) -> Script {
    next_script_or(conn, Script::default_goal_turn)
}

fn next_script_or(conn: &Conn, default: fn() -> Script) -> Script {
    let sc = Scenario::from_value(&scenario(&conn.fake.dir));
    conn.fake.store.update(|d| {
        let cursor = d["turn_cursor"].as_u64().unwrap_or(0);
        d["turn_cursor"] = json!(cursor + 1);
        sc.turn(cursor as usize).unwrap_or_else(default)
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
    if let Some(e) = &script.start_error {
        return Err(e.clone());
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
    spawn(
        conn,
        ctl,
        started,
        Some(params.clone()),
        Play::Script(script),
        false,
    );
    Ok(())
}

/// A turn the server starts by itself (a goal's, a compaction).
pub fn start(conn: &Arc<Conn>, thread_id: &str, kind: ServerTurn) -> Result<String, String> {
    let (play, goal) = match kind {
        ServerTurn::Goal => (Play::Script(next_goal_script(conn)), true),
        ServerTurn::Compaction => {
            // The summary request takes the next scripted turn (the fake plays no summary).
            let _ = next_script(conn);
            (Play::Compaction, false)
        }
    };
    let (ctl, started) = register(conn, thread_id);
    let turn_id = ctl.turn_id();
    spawn(conn, ctl, started, None, play, goal);
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
    script: Play,
    goal: bool,
) {
    let conn = conn.clone();
    let spawned = std::thread::Builder::new()
        .name("fake-turn".into())
        .spawn(move || play(&conn, &ctl, started, input, script, goal));
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
    script: Play,
    goal: bool,
) {
    let thread_id = ctl.thread_id.clone();
    let (mut parts, compact): (std::collections::VecDeque<Script>, bool) = match &script {
        Play::Script(s) => (s.server_turns().into(), false),
        Play::Compaction => (vec![Script::default()].into(), true),
    };
    let rollover = Duration::from_millis(match &script {
        Play::Script(s) => s.rollover_ms.unwrap_or(50),
        Play::Compaction => 50,
    });
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
        let outcome = if compact {
            ctx.compaction()
        } else {
            ctx.run(&part)
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
fn agent_message(id: &str, text: &str, phase: &Value) -> Value {
    json!({"type": "agentMessage", "moderation": null, "id": id, "text": text, "phase": phase,
           "memoryCitation": null, "delivery": null, "questions": null})
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_version_s_turn_facts_parse() {
        for p in crate::versions() {
            serde_json::from_str::<super::TurnFacts>(p.turn_facts)
                .unwrap_or_else(|e| panic!("schema/{}/facts/turns.json: {e}", p.version));
        }
    }
}
