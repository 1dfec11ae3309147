//! The turn engine: one scripted turn per `turn/start` (consumed across processes through the
//! store's `turn_cursor`), played as codex plays a model's answers. Each model request gets the
//! next scripted response rendered by the scripted model's own renderer
//! ([`crate::model::script::reply`]) into Responses API events, and the engine consumes that
//! stream event by event as codex does: items, deltas, tool calls, usage, the stream's end,
//! interrupts and steers between events. A script may carry `continuations`: further server
//! turns (a goal rolling over) reported as `turn/completed` → `turn/started`.
//!
//! Rooms, each importing only the ones listed before it: `ctl.rs` (a running turn's controls,
//! how a turn ends), `rollout.rs` (rollout ordinals), `items.rs` (items and turns as the real
//! server shapes them), `patch/` (an `apply_patch` as codex verifies and applies it, the turn's
//! diff), `ctx.rs` (a turn as it plays: what it tells the client), `plan.rs` (Plan mode's
//! split), `exec.rs` (running a command), `tools.rs` (what each tool call does), `stream.rs` (one
//! response's stream), `engine.rs` (the sampling loop), `review.rs` (an inline review, its
//! child conversation forwarded), `mod.rs` (a turn's life: start, closing).

mod ctl;
mod ctx;
mod engine;
mod exec;
mod items;
mod patch;
mod plan;
mod review;
mod rollout;
mod stream;
mod tools;

use ctl::End;
pub use ctl::{
    fresh_sessions, lingering, new_session, running, stale_turns, steer_arriving, TurnCtl,
    GOAL_SET_SETTLED,
};
pub use exec::{exit_code, spawn_dir_error};
pub use items::{breakdown, context_window, new_goal};
use items::{save_turn, turn_obj};
pub use review::{answer as review_answer, Request as ReviewRequest};

use super::rpc::Conn;
use super::state::lock;
use super::state::{now_ms, now_secs, scenario};
use crate::model::step::{Scenario, Script};
use ctx::Ctx;
use rollout::Rollout;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// `thread/compact/start`: the summary request's script (only its usage shows).
    Compaction(Script),
    /// `thread/shellCommand`: the user's command (and its `timeoutMs`), no model.
    Shell(String, Option<u64>),
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
    let (ctl, started) = register(thread_id);
    let turn_id = ctl.turn_id();
    // The client may name the turn its work started from.
    if let Some(root) = params["rootTurnId"].as_str() {
        *lock(&ctl.root) = Some(root.to_string());
    }
    let root = ctl.root_turn_id();
    // codex answers once the turn's context is built (its model, tools and settings), what the
    // server's other tasks send meanwhile first (an MCP server that cannot spawn: fidelity
    // s64640001_0254 and _0834, quiet runs too).
    crate::fake::latency::answer_after(TURN_START_ANSWER);
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

/// How long codex takes to answer `turn/start`: about the tenth percentile of the ~400 answers
/// in each version's turn corpus (3.2–3.7 ms; medians 5.9–6.6 ms), inside the real range where
/// the fake's own answer (0.5 ms) was below it.
const TURN_START_ANSWER: std::time::Duration = std::time::Duration::from_micros(3600);

/// An inline `review/start`: answered with the review turn (its user message the hint, under
/// the turn's own id), then played on its own thread; the child conversation takes the next
/// scripted turn when it first asks the model (an interrupted review takes none: turn
/// scenario 142).
pub fn start_review(conn: &Arc<Conn>, id: &Value, thread_id: &str, req: ReviewRequest) {
    let (ctl, _) = register(thread_id);
    ctl.queued.store(true, Ordering::SeqCst);
    let turn_id = ctl.turn_id();
    conn.send(json!({"id": id, "result": review_answer(thread_id, &turn_id, &req.hint)}));
    let conn = conn.clone();
    let spawned = std::thread::Builder::new()
        .name("fake-review".into())
        .spawn(move || review::play(&conn, &ctl, &req, next_script));
    // Out of threads: the review cannot run (as `spawn`).
    drop(spawned);
}

/// How long `thread/queue/add` takes on an idle thread between queueing the input and taking it
/// (2.1 ms between its two `thread/queue/changed`), and from its answer to the turn's start
/// (5.3 ms): fidelity s33330001_0144 on 0.171.0.
const QUEUE_TAKEN: Duration = Duration::from_micros(2_100);
const QUEUE_START: Duration = Duration::from_micros(5_300);

/// `thread/queue/add` on an idle thread: the input is queued and taken at once (the queue
/// changes twice), answered with the submission, then run as a turn (its user message carries
/// the client's id). The turn is active from the answer on: a steer meanwhile finds it.
/// A `thread/queue/add`'s submission as codex keeps and shows it.
pub fn queued_submission(params: &Value) -> Value {
    let input: Vec<Value> = params["input"]
        .as_array()
        .into_iter()
        .flatten()
        .map(items::user_content)
        .collect();
    json!({"id": uuid::Uuid::now_v7().to_string(), "input": input,
        "clientUserMessageId": params["clientUserMessageId"],
        "responsesapiClientMetadata": params["responsesapiClientMetadata"]})
}

pub fn start_queued(conn: &Arc<Conn>, id: &Value, thread_id: &str, params: &Value) {
    let submission = queued_submission(params);
    let note = json!({"threadId": thread_id});
    conn.notify("thread/queue/changed", note.clone());
    // Taking the input starts a turn as `turn/start` does: a model without metadata is warned
    // of first (fidelity s38380001_0193 on 0.163.0: between the two changes).
    let model = conn
        .fake
        .model_of(&conn.fake.store.load()["threads"][thread_id]);
    let warning = conn.fake.catalog.unknown_model_warning(&model);
    let thread = thread_id.to_string();
    let script = next_script(conn);
    let (ctl, started) = register(thread_id);
    let (conn, id, params) = (conn.clone(), id.clone(), params.clone());
    let spawned = std::thread::Builder::new()
        .name("fake-queued-turn".into())
        .spawn(move || {
            std::thread::sleep(QUEUE_TAKEN);
            if let Some(message) = warning {
                conn.notify("warning", json!({"threadId": thread, "message": message}));
            }
            conn.notify("thread/queue/changed", note);
            conn.send(json!({"id": id, "result": {"queuedSubmission": submission}}));
            std::thread::sleep(QUEUE_START);
            play(
                &conn,
                &ctl,
                started,
                Some(params),
                Play::Script(script),
                false,
            );
        });
    // Out of threads: the turn cannot run (as `spawn`).
    drop(spawned);
}

/// How long after its answer a user's shell command's turn starts (see `play`).
const SHELL_START: Duration = Duration::from_millis(10);

/// `thread/shellCommand`: answered, then the command runs as a turn of its own.
pub fn start_shell(
    conn: &Arc<Conn>,
    id: &Value,
    thread_id: &str,
    command: &str,
    timeout_ms: Option<u64>,
) {
    let (ctl, started) = register(thread_id);
    ctl.queued.store(true, Ordering::SeqCst);
    conn.send(json!({"id": id, "result": {}}));
    spawn(
        conn,
        ctl,
        started,
        None,
        Play::Shell(command.to_string(), timeout_ms),
        false,
    );
}

/// A turn the server starts by itself (a goal's, a compaction).
pub fn start(conn: &Arc<Conn>, thread_id: &str, kind: ServerTurn) -> Result<String, String> {
    let (play, goal) = match kind {
        ServerTurn::Goal => (Play::Script(next_goal_script(conn)), true),
        ServerTurn::Compaction => {
            // The summary request takes the next scripted turn (the fake plays no summary).
            (Play::Compaction(next_script(conn)), false)
        }
    };
    if goal {
        // A goal's turn works from its objective, which a thread with no user text yet takes
        // as its preview (a resume or a list shows it; 28b_goal_continuations).
        conn.fake.store.update(|d| {
            let t = &mut d["threads"][thread_id];
            let objective = t["goal"]["objective"].clone();
            if t["preview"].as_str().is_none_or(str::is_empty) && objective.is_string() {
                t["preview"] = objective;
            }
        });
    }
    let (ctl, started) = register(thread_id);
    let turn_id = ctl.turn_id();
    spawn(conn, ctl, started, None, play, goal);
    Ok(turn_id)
}

fn register(thread_id: &str) -> (Arc<TurnCtl>, i64) {
    let ctl = Arc::new(TurnCtl {
        thread_id: thread_id.to_string(),
        turn_id: Mutex::new(uuid::Uuid::now_v7().to_string()),
        interrupted: AtomicBool::new(false),
        flowing: AtomicBool::new(false),
        steers: Mutex::new(Vec::new()),
        goal_status: Mutex::new(None),
        acked: AtomicBool::new(false),
        responded: AtomicBool::new(false),
        session_approved: ctl::session_approvals(thread_id),
        root: Mutex::new(None),
        queued: AtomicBool::new(false),
        steering: Default::default(),
    });
    running().insert(thread_id.to_string(), ctl.clone());
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
    if matches!(script, Play::Shell(..)) {
        // codex starts a user's shell turn on a task of its own: 8–12 ms after the answer
        // (35 ms the first time) on 0.171.0, six commands in a row.
        std::thread::sleep(SHELL_START);
    }
    let (mut parts, compact): (std::collections::VecDeque<Script>, bool) = match &script {
        Play::Script(s) => (s.server_turns().into(), false),
        Play::Compaction(_) | Play::Shell(..) => (vec![Script::default()].into(), true),
    };
    let rollover = Duration::from_millis(match &script {
        Play::Script(s) => s.rollover_ms.unwrap_or(50),
        Play::Compaction(_) | Play::Shell(..) => 50,
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
        // What the turn's settings wrote (see `apply_settings`): before its start and after.
        let pending = &thread["rolloutPending"];
        if !first && n == 0 {
            ctx.rollout.add(pending["before"].as_u64().unwrap_or(0));
        }
        // A goal set on a fresh thread wrote its update and the thread's settings before the
        // first turn, which carries the objective (a tool output and a user message) after
        // codex's initial context; each later goal turn carries the continuation prompt (a
        // user message) after its turn context (0.171.0, fidelity s7070001_0475 and
        // s7070001_0988; a goal's first turn on a thread with turns is not modeled apart).
        let goal_opens = goal && first && n == 0;
        if goal_opens {
            ctx.rollout.add(2);
        }
        ctx.rollout.turn_started(first);
        if goal_opens {
            let message_only = conn.fake.turn_facts.goal_objective_message_only;
            ctx.rollout.add(if message_only { 1 } else { 2 });
        } else if goal {
            ctx.rollout.add(1);
        }
        if !first && n == 0 {
            ctx.rollout.add(pending["after"].as_u64().unwrap_or(0));
        }
        let place = crate::fake::settings::context_place(&thread);
        conn.fake.store.update(|d| {
            if let Some(t) = d["threads"][&thread_id].as_object_mut() {
                t.remove("rolloutPending");
                t.insert(crate::fake::settings::CONTEXT_PLACE.into(), place);
                if thread["environments"] != json!([]) {
                    t.insert(crate::fake::search::PLACED_CONTEXT.into(), json!(true));
                }
            }
        });
        ctx.started_ms = now_ms();
        conn.fake.store.update(|d| {
            if let Some(t) = d["threads"][&thread_id].as_object_mut() {
                t.remove("systemError");
            }
        });
        ctx.checkpoint();
        // A goal's turn on a model without metadata says so first, as a client's `turn/start`
        // does (fidelity session s5150001_0024 on 0.171.0: before each goal turn's status).
        if goal {
            let model = conn.fake.model_of(&thread);
            if let Some(message) = conn.fake.catalog.unknown_model_warning(&model) {
                conn.notify(
                    "warning",
                    json!({"threadId": thread_id, "message": message}),
                );
            }
        }
        ctl.queued.store(false, Ordering::SeqCst);
        ctl::stale_turns().remove(&thread_id);
        if n == 0 {
            crate::fake::mcp::wait_launched(&thread_id);
        }
        ctx.status(json!({"type": "active", "activeFlags": []}));
        let root = ctl.root_turn_id();
        conn.fake.turns_gauged.store(true, Ordering::SeqCst);
        ctl::fresh_sessions().remove(&thread_id);
        conn.notify(
            "turn/started",
            json!({"threadId": thread_id,
                   "turn": turn_obj(&turn_id, &root, "inProgress", Some(started), None, &[])}),
        );
        if n == 0 {
            // codex's turn waits for the thread's MCP servers still starting (turn scenario 259:
            // the input's item after the server's `ready`).
            crate::fake::mcp::wait_started(&thread_id);
        }
        if let Some(request) = input.as_ref().filter(|_| n == 0) {
            // codex echoes the submitted input as a userMessage item
            ctx.user_message(request);
        }
        let outcome = match &script {
            Play::Shell(command, timeout) => ctx.user_shell(command, *timeout),
            Play::Compaction(summary) => ctx.compaction(summary),
            Play::Script(_) => ctx.run(&part),
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
        let says_something = ctx.says_something();
        match &outcome {
            Ok(()) if compact || !last || !says_something => {}
            Ok(()) | Err(End::Failed(_)) => ctx.read_state(),
            Err(End::Interrupted) => ctx.finish_interrupt(),
            // An aborted turn with an answer asks for attention too.
            Err(End::Cancelled) if says_something => ctx.read_state(),
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
        // The turn's end entry; an interrupted turn (an interrupt or an approval answered
        // `cancel`) first gains codex's `<turn_aborted>` marker, a user message
        // (`record_interrupted_turn_marker`; fidelity s13130001_0042 on 0.171.0).
        let mut rollout = ctx.rollout;
        let aborted = matches!(outcome, Err(End::Interrupted | End::Cancelled));
        rollout.add(if aborted { 2 } else { 1 });
        let mut stored = turn.clone();
        stored["items"] = json!(ctx.items);
        // Where the turn starts in the rollout: what `thread/turns/list` cursors name.
        stored["rolloutOrdinal"] = json!(rollout.turn);
        stored["itemOrdinals"] = json!(ctx.item_ordinals);
        // And where it ends (`thread/timeline/list`'s `turnCompleted`).
        stored["endOrdinal"] = json!(rollout.ordinal);
        save_turn(conn, &thread_id, &stored, rollout);
        conn.fake.write_rollout(&thread_id);
        if last {
            // 0.163.0's app-server keeps naming an interrupted turn as the thread's active one
            // to `turn/interrupt` until the next turn starts (turn scenario 257).
            if matches!(outcome, Err(End::Interrupted))
                && conn.fake.turn_facts.interrupted_turn_stays_named
            {
                ctl::stale_turns().insert(thread_id.clone(), turn_id.to_string());
            }
            running().remove(&thread_id);
        }
        // An approval request the turn's end resolved is said in the same write as the end
        // (fidelity s17170001_0266: a request sent on `turn/completed` is answered after both).
        let mut end = vec![(
            "turn/completed",
            json!({"threadId": thread_id, "turn": turn}),
        )];
        if let Some(id) = pending {
            end.push((
                "serverRequest/resolved",
                json!({"threadId": thread_id, "requestId": id}),
            ));
        }
        conn.notify_together(end);
        if aborted {
            ctl::linger_aborted();
        }
        if last {
            break;
        }
    }
}
