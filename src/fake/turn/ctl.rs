//! A running turn's controls, shared by the engine and the requests that act on it
//! (`turn/interrupt`, `turn/steer`, `thread/goal/set`), and how a turn or a tool call ends.

use crate::fake::state::lock;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The process's running turns, by thread (one at most each, as in codex's thread manager).
pub fn running() -> std::sync::MutexGuard<'static, HashMap<String, Arc<TurnCtl>>> {
    static RUNNING: std::sync::OnceLock<Mutex<HashMap<String, Arc<TurnCtl>>>> =
        std::sync::OnceLock::new();
    lock(RUNNING.get_or_init(Default::default))
}

/// How long an interrupted turn stays counted in `core.turns.active` after its
/// `turn/completed`: codex counts the turn until its aborted task is reaped, a moment after the
/// completion is sent. Probed on 0.171.0 (2026-12-07: an approval answered `cancel`, and a
/// `turn/interrupt`; `server/diagnostics` sent on `turn/completed`): counted at 0.7–1.6 ms,
/// not at 1.3–2.1 ms; fidelity s54540001_0142 on 0.163.0 (0.9 ms, both real runs), the same
/// on 0.169.0, and s61610001_0497 on 0.171.0 (1.0 ms, where the fake at 1.2 ms no longer
/// counted it). A completed or failed turn is never counted after its end (17 recordings).
const ABORTED_LINGER: Duration = Duration::from_micros(1500);

fn lingering_list() -> std::sync::MutexGuard<'static, Vec<Instant>> {
    static LINGERING: std::sync::OnceLock<Mutex<Vec<Instant>>> = std::sync::OnceLock::new();
    lock(LINGERING.get_or_init(Default::default))
}

/// An interrupted turn's completion was just sent: counted a moment longer
/// ([`ABORTED_LINGER`]).
pub fn linger_aborted() {
    lingering_list().push(Instant::now() + ABORTED_LINGER);
}

/// Interrupted turns still counted as active (see [`linger_aborted`]).
pub fn lingering() -> usize {
    let mut list = lingering_list();
    let now = Instant::now();
    list.retain(|until| *until > now);
    list.len()
}

/// What one session approved for itself (see [`session_approvals`]).
type Approved = Arc<Mutex<Vec<String>>>;

fn approvals() -> std::sync::MutexGuard<'static, HashMap<String, Approved>> {
    static APPROVALS: std::sync::OnceLock<Mutex<HashMap<String, Approved>>> =
        std::sync::OnceLock::new();
    lock(APPROVALS.get_or_init(Default::default))
}

/// What a thread's session approved for itself (`acceptForSession`): codex keeps it for the
/// session, every turn of it (fidelity s35350001_0649: a file accepted in one turn is patched
/// again unasked in the next; turn scenario 211), not past it (see [`new_session`]).
pub fn session_approvals(thread_id: &str) -> Approved {
    approvals()
        .entry(thread_id.to_string())
        .or_default()
        .clone()
}

/// The thread's session starts afresh in this process (loaded again): nothing approved yet.
pub fn new_session(thread_id: &str) {
    approvals().remove(thread_id);
}

/// The turn app-server still names as a thread's active one when none runs: an inline
/// review's child turn, whose start it tracked and whose end it never sees (the parent's end
/// does not clear it), until the next turn starts (turn scenario 142: an interrupt sent while
/// a later shell command's turn had not begun named the review's child).
pub fn stale_turns() -> std::sync::MutexGuard<'static, HashMap<String, String>> {
    static STALE: std::sync::OnceLock<Mutex<HashMap<String, String>>> = std::sync::OnceLock::new();
    lock(STALE.get_or_init(Default::default))
}

/// Threads whose session started in this process and ran no turn yet, with when it started:
/// their first `thread/goal/set` is answered no sooner than [`GOAL_SET_SETTLED`] after it
/// (`handlers::turns::goal_set`).
pub fn fresh_sessions() -> std::sync::MutexGuard<'static, HashMap<String, std::time::Instant>> {
    static FRESH: std::sync::OnceLock<Mutex<HashMap<String, std::time::Instant>>> =
        std::sync::OnceLock::new();
    lock(FRESH.get_or_init(Default::default))
}

/// A thread's first goal set before any turn: answered at the least of 209 recorded, 176.5 ms
/// after its session started (median 195; every version, turn corpus and fidelity; within 9 ms
/// of the start in each); after a turn, 2–8 ms (fidelity s41410001_0264, s47470001_0093).
pub const GOAL_SET_SETTLED: Duration = Duration::from_micros(176_500);

/// How long codex goes on taking in a stream in full flow after a request on the turn
/// arrives: the real server showed a message's remaining deltas and its completion up to
/// 2.3 ms after the client sent an interrupt on the message's first delta (fidelity
/// s41410001_0486; s37370001_0342: 1.3 ms; turn scenario `238_interrupt_on_a_delta_in_full_flow`),
/// and stopped 3.3 ms after at the earliest.
const FLOW_LAG: Duration = Duration::from_micros(2300);

/// Control of a running turn, shared with `turn/interrupt`, `turn/steer` and `thread/goal/set`.
pub struct TurnCtl {
    pub thread_id: String,
    pub(super) turn_id: Mutex<String>,
    pub(super) interrupted: AtomicBool,
    /// The turn is writing a stream's events in full flow (no pause before the next): see
    /// [`TurnCtl::await_flow`].
    pub(super) flowing: AtomicBool,
    pub(super) steers: Mutex<Vec<Value>>,
    pub(super) goal_status: Mutex<Option<String>>,
    /// The turn saw the interrupt (and reported its rate limits).
    pub acked: AtomicBool,
    /// The `turn/interrupt` reply has been sent.
    pub responded: AtomicBool,
    /// Commands and patched files approved with `acceptForSession`: the thread's session's
    /// (see [`session_approvals`]).
    pub(super) session_approved: Approved,
    /// The `rootTurnId` a `turn/start` gave (else the turn is its own root).
    pub(super) root: Mutex<Option<String>>,
    /// A turn whose task has not begun: codex runs a `thread/shellCommand`'s command or an
    /// inline review as a task that starts after the reply, and until then the thread is idle
    /// to its other requests (`thread/sample` on 0.169.0: fidelity s22220001_0212) and has no
    /// active turn to interrupt (turn scenario 142, fidelity s27270001_0210).
    pub queued: AtomicBool,
    /// `turn/steer` requests read for this turn and not yet answered (see [`TurnCtl::steering`]).
    pub(super) steering: AtomicUsize,
}

/// A `turn/steer` for `thread_id` has been read: until the mark is dropped (the request
/// answered or refused), the thread's streaming message waits for its answer before it
/// completes (see `Ctx::await_steers`).
pub fn steer_arriving(thread_id: &str) -> Option<SteerMark> {
    let ctl = running().get(thread_id).cloned()?;
    ctl.steering.fetch_add(1, Ordering::SeqCst);
    Some(SteerMark(ctl))
}

/// A `turn/steer` being answered (see [`steer_arriving`]).
pub struct SteerMark(Arc<TurnCtl>);

impl Drop for SteerMark {
    fn drop(&mut self) {
        self.0.steering.fetch_sub(1, Ordering::SeqCst);
    }
}

impl TurnCtl {
    pub fn turn_id(&self) -> String {
        lock(&self.turn_id).clone()
    }
    pub(super) fn root_turn_id(&self) -> String {
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
    pub(super) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
    /// Queues steered input and answers the request while the queue is held, so that the turn
    /// (which abandons its response on seeing the input) cannot write before the reply: the real
    /// server answers `turn/steer` first (f37: the reply, then the aborted stream's usage).
    /// Whether a `turn/steer` read for this turn is still being answered.
    pub(super) fn steering(&self) -> bool {
        self.steering.load(Ordering::SeqCst) > 0
    }
    /// A request on the turn lands once codex has taken in the stream's events in full flow,
    /// for at most [`FLOW_LAG`]: a `turn/interrupt` or `turn/steer` sent on a message's first
    /// delta lands after the message's other deltas (an interrupt after its completion too:
    /// `238`) (fidelity s42420001_0168; of 16 real steers answered
    /// while events went out, 14 had the stream's next deltas or item first).
    pub fn await_flow(&self) {
        let deadline = Instant::now() + FLOW_LAG;
        while self.flowing.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    pub fn steer(&self, input: Value, reply: impl FnOnce()) {
        let mut steers = lock(&self.steers);
        steers.push(input);
        reply();
    }
    pub fn set_goal_status(&self, status: &str) {
        *lock(&self.goal_status) = Some(status.to_string());
    }
}

/// What a tool call gets before it runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Gate {
    Run,
    Ask,
    Refuse,
}

/// The client's answer to an approval request.
#[derive(PartialEq, Debug)]
pub(super) enum Decision {
    /// `accept`, `acceptForSession`, an amendment: the decision as sent.
    Accept(Value),
    Decline,
    Cancel,
    /// A JSON-RPC error, or a result the response type does not take.
    Failed,
}

/// How a turn ended early.
pub(super) enum End {
    /// The model's stream failed: the turn's error object.
    Failed(Value),
    /// `turn/interrupt`.
    Interrupted,
    /// An approval answered `cancel`.
    Cancelled,
    /// Input was steered in: the model's response is abandoned (never leaves `run`).
    Steered,
}
