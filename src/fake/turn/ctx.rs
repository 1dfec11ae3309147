//! A turn as it plays ([`Ctx`]): its items, its model request's usage and retries, and what it
//! tells the client — the notifications in the real server's shapes and order, the usage and
//! failure reports, the store written before the client hears (as codex writes its rollout).

use super::ctl::{End, TurnCtl};
use super::items::{breakdown, context_window, save_turn, turn_error, user_content};
use super::patch::TurnTracker;
use super::rollout::Rollout;
use crate::fake::provider;
use crate::fake::rpc::Conn;
use crate::fake::state::lock;
use crate::fake::state::{now_ms, now_secs};
use crate::model::events::Usage;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) struct Ctx<'a> {
    pub(super) conn: &'a Arc<Conn>,
    pub(super) ctl: &'a TurnCtl,
    pub(super) turn_id: String,
    /// Every item of the turn (kept in the store).
    pub(super) items: Vec<Value>,
    /// The completed agent messages of the turn.
    pub(super) messages: Vec<Value>,
    /// The model response being played (numbered across the state dir, as the scripted
    /// model numbers them).
    pub(super) resp: u64,
    /// `usage` of the current response (reported when it completes).
    pub(super) usage: Option<Usage>,
    /// The response ending is followed by steered input, not a tool call: its tokens are
    /// charged to the goal with the next charge (see [`Ctx::end_response`]).
    pub(super) goal_charge_deferred: bool,
    /// Goal tokens not yet charged (responses that ended into steered input).
    pub(super) goal_tokens_pending: i64,
    /// Dropped streams (and failed requests) retried so far in this turn.
    pub(super) retries: u64,
    /// Failed requests resent since the last turn-level attempt.
    pub(super) resent: u64,
    /// The turn's diff so far, None while it is empty (reported again when the turn ends).
    pub(super) turn_diff: Option<String>,
    /// A patch of the turn failed, or an approval cancelled it: no more `turn/diff/updated`.
    pub(super) diff_stopped: bool,
    /// The files the turn's patches touched: the turn's diff.
    pub(super) tracker: TurnTracker,
    /// A model response is being streamed (its usage not yet reported).
    pub(super) open: bool,
    /// The real rollout's entry ordinals, as far as this turn has written them (see
    /// [`Rollout`]).
    pub(super) rollout: Rollout,
    /// When the turn started (its stored duration, should the process die mid-turn).
    pub(super) started_ms: i64,
    /// Each completed item's rollout ordinal (what `thread/items/list` cursors name).
    pub(super) item_ordinals: Vec<u64>,
    /// The thread runs in Plan mode (read when the turn starts: a mode changes between turns).
    pub(super) plan_mode: bool,
    /// A server request the turn ended on unanswered: resolved after `turn/completed`.
    pub(super) pending_resolved: Option<i64>,
    /// The model requests are a review's child conversation's: its token counts and rate
    /// limits reach no client (turn scenario 180: a usage limit reported by the error alone).
    pub(super) review_child: bool,
}

/// The stream error the real server reports for a `response.failed` with this code.
pub(super) fn failure(code: &str, message: &str) -> (String, Value) {
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

/// How long codex takes to notice a closed stream (the median of 1.2–2.6 ms; see
/// `dropped_stream`).
const STREAM_CLOSE_NOTICED: Duration = Duration::from_micros(1900);

pub(super) const STREAM_CLOSED: &str =
    "stream disconnected before completion: stream closed before response.completed";

impl<'a> Ctx<'a> {
    pub(super) fn new(conn: &'a Arc<Conn>, ctl: &'a TurnCtl, turn_id: &str) -> Self {
        Ctx {
            conn,
            ctl,
            turn_id: turn_id.to_string(),
            items: Vec::new(),
            messages: Vec::new(),
            resp: 0,
            usage: None,
            goal_charge_deferred: false,
            goal_tokens_pending: 0,
            retries: 0,
            resent: 0,
            turn_diff: None,
            tracker: TurnTracker::default(),
            diff_stopped: false,
            open: false,
            rollout: Rollout::default(),
            started_ms: now_ms(),
            item_ordinals: Vec::new(),
            plan_mode: false,
            pending_resolved: None,
            review_child: false,
        }
    }

    /// The next model request: its number comes from the state dir's counter (the scripted
    /// model numbers its responses across processes the same way).
    pub(super) fn next_response(&mut self) {
        self.resp = self.conn.fake.store.update(|d| {
            let n = d["model_responses"].as_u64().unwrap_or(0);
            d["model_responses"] = json!(n + 1);
            n
        });
        self.usage = None;
        self.open = true;
    }

    /// A model response began to stream: the turn a resumed thread's usage names from now on
    /// (codex writes a usage record to the rollout once a response streams; one that failed
    /// before any response left none: fidelity s14140001_0287 and 0287b, turn scenario 30's
    /// crash mid-response names the crashed turn).
    pub(super) fn streamed(&self) {
        let thread_id = self.ctl.thread_id.clone();
        let turn_id = self.turn_id.clone();
        self.conn.fake.store.update(|d| {
            d["threads"][&thread_id]["usageTurnId"] = json!(turn_id);
        });
    }

    pub(super) fn scope(&self, extra: Value) -> Value {
        let mut m = Map::new();
        m.insert("threadId".into(), json!(self.ctl.thread_id));
        m.insert("turnId".into(), json!(self.turn_id));
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        Value::Object(m)
    }

    pub(super) fn notify(&self, method: &str, extra: Value) {
        self.conn.notify(method, self.scope(extra));
    }

    /// A notification whose params put `before` ahead of the thread and turn ids (`item/*`,
    /// `error`), as the real server orders them.
    pub(super) fn item_notify(&self, method: &str, before: Value, after: Value) {
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

    pub(super) fn status(&self, status: Value) {
        self.conn.notify(
            "thread/status/changed",
            json!({"threadId": self.ctl.thread_id, "status": status}),
        );
    }

    pub(super) fn rate_limits(&self) {
        // The turn's own event: not for a connection off the thread (see `unsubscribed_from`).
        if self
            .conn
            .unsubscribed_from(&self.ctl.thread_id, "account/rateLimits/updated")
        {
            return;
        }
        self.conn.notify(
            "account/rateLimits/updated",
            json!({"rateLimits": {"limitId": "codex", "limitName": null, "normalModelSlug": null,
                   "primary": null, "secondary": null, "credits": null, "individualLimit": null,
                   "spendControlReached": null, "planType": null, "rateLimitReachedType": null}}),
        );
    }

    /// The thread's read state when a turn ends: the first unread position stays where it is;
    /// a thread read to the end becomes unread from this turn.
    pub(super) fn read_state(&self) {
        let thread_id = self.ctl.thread_id.clone();
        // An ephemeral thread, or one with legacy history, has no read state (checked on
        // 0.171.0).
        if !crate::fake::threads::has_read_state(
            &self.conn.fake.store.load()["threads"][&thread_id],
        ) {
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
    pub(super) fn started(&self, item: &Value) -> i64 {
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

    pub(super) fn completed(&mut self, item: Value, started_at: i64) {
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
    pub(super) fn completed_unkept(&mut self, item: Value, started_at: i64) {
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
    pub(super) fn checkpoint(&self) {
        // A review's child items belong to the child turn, which the review stores itself.
        if self.review_child {
            return;
        }
        let turn = json!({"id": self.turn_id, "status": "inProgress", "items": self.items,
                          "error": null, "startedAt": self.started_ms / 1000,
                          "completedAt": now_secs(), "durationMs": now_ms() - self.started_ms,
                          "rolloutOrdinal": self.rollout.turn,
                          "itemOrdinals": self.item_ordinals});
        save_turn(self.conn, &self.ctl.thread_id, &turn, self.rollout);
    }

    pub(super) fn item(&mut self, item: Value) {
        let at = self.started(&item);
        self.completed(item, at);
    }

    /// The userMessage item of a `turn/start` or `turn/steer` request (none for empty input).
    pub(super) fn user_message(&mut self, request: &Value) {
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
    pub(super) fn goal_update(&mut self, status: &str) {
        // The response's tokens, already known when codex runs the tool, are charged to the
        // goal first (its own `thread/goal/updated`), before the status changes and before the
        // response's usage is reported (0.171.0, fidelity seed 990006 session 59).
        if let Some(u) = &self.usage {
            let spent = u.input_tokens - u.cached()
                + u.output_tokens
                + std::mem::take(&mut self.goal_tokens_pending);
            if spent > 0 {
                self.goal_charge(spent);
            }
        }
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
    pub(super) fn check(&mut self) -> Result<(), End> {
        if !lock(&self.ctl.steers).is_empty() {
            return Err(End::Steered);
        }
        self.check_interrupt(true)
    }

    /// An interrupt (or the client gone) ends the turn. The real server reports the aborted
    /// stream's usage and rate limits before it answers `turn/interrupt` (`report`: not yet
    /// reported), and asks for attention if the turn had an answer.
    pub(super) fn check_interrupt(&mut self, report: bool) -> Result<(), End> {
        if !(self.ctl.interrupted() || self.conn.is_closed()) {
            return Ok(());
        }
        if report {
            self.unfinished_response();
        }
        if self.open {
            self.rollout.stream_aborted();
        }
        if self.says_something() {
            self.read_state();
        }
        self.ctl.acked.store(true, Ordering::SeqCst);
        Err(End::Interrupted)
    }

    /// Whether the turn's answer so far says something: its last agent message with text that
    /// is not commentary, not blank. Such a turn asks for the user's attention when it ends,
    /// finished or aborted (app-server `read_state::publish`; an empty answer before an
    /// interrupt asks nothing: fidelity s13130001_0161 on 0.171.0).
    pub(super) fn says_something(&self) -> bool {
        self.messages
            .iter()
            .rfind(|m| m["phase"] != "commentary" && m["text"] != "")
            .and_then(|m| m["text"].as_str())
            .is_some_and(|t| !t.trim().is_empty())
    }

    /// After an interrupt: the `turn/interrupt` reply goes out before the turn closes.
    pub(super) fn finish_interrupt(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.ctl.responded.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The response an aborted turn ends (a cancelled approval, an interrupt while a tool call
    /// waits): its usage is counted, but the turn is aborted before a version that reports the
    /// diff after each response reports it (0.169.0, seed 20261202 session 18).
    pub(super) fn end_cancelled_response(&mut self) {
        self.diff_stopped = true;
        self.end_response();
    }

    /// The model's response is complete: usage, then the account's rate limits.
    pub(super) fn end_response(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        self.rollout.response_ended();
        let u = self.usage.take().unwrap_or_default();
        let last = breakdown(u.input_tokens, u.cached(), u.output_tokens, u.reasoning());
        let thread_id = self.ctl.thread_id.clone();
        let turn_id = self.turn_id.clone();
        let window = context_window(self.conn, &self.ctl.thread_id);
        let total = self.conn.fake.store.update(|d| {
            // Kept for the usage a resumed thread reports, with the turn it came in and the
            // window it was reported against (codex restores the rollout's record as written).
            d["threads"][&thread_id]["lastUsage"] = last.clone();
            d["threads"][&thread_id]["usageTurnId"] = json!(turn_id);
            d["threads"][&thread_id]["usageWindow"] = json!(window);
            let t = &mut d["threads"][&thread_id]["usage"];
            let sum = |k: &str| t[k].as_i64().unwrap_or(0) + last[k].as_i64().unwrap_or(0);
            // codex adds every count, the total too: after a full window (its total the
            // window's, its parts none) the total stays that much ahead of the parts (fidelity
            // s47470001_0047 on 0.163.0; turn scenario 267).
            let total_tokens = sum("totalTokens");
            *t = breakdown(
                sum("inputTokens"),
                sum("cachedInputTokens"),
                sum("outputTokens"),
                sum("reasoningOutputTokens"),
            );
            t["totalTokens"] = json!(total_tokens);
            t.clone()
        });
        self.notify(
            "thread/tokenUsage/updated",
            json!({"tokenUsage": {"total": total, "last": last, "modelContextWindow": window}}),
        );
        self.rate_limits();
        if self.conn.fake.turn_facts.turn_diff_after_each_response && !self.diff_stopped {
            if let Some(diff) = self.turn_diff.clone() {
                self.notify("turn/diff/updated", json!({"diff": diff}));
            }
        }
        // An active goal is charged the response's tokens (and says so when they are any).
        // What a goal is charged: fresh input (cached input is not) and output. A response
        // that ends into steered input (no tool call) is charged with the next one: codex
        // accounts the goal at a tool's or the turn's end (fidelity s42420001_0873: 36 tokens
        // of a steered response reported only with the next response's 20, as 56).
        let spent = u.input_tokens - u.cached() + u.output_tokens;
        if std::mem::take(&mut self.goal_charge_deferred) {
            self.goal_tokens_pending += spent;
        } else {
            let spent = spent + std::mem::take(&mut self.goal_tokens_pending);
            if spent > 0 {
                self.goal_charge(spent);
            }
        }
    }

    /// Adds `tokens` to the thread's goal while it is active; reports the goal if so.
    pub(super) fn goal_charge(&self, tokens: i64) {
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
    pub(super) fn unfinished_response(&self) {
        let data = self.conn.fake.store.load();
        let t = &data["threads"][&self.ctl.thread_id];
        if t["usage"].is_object() {
            self.report_standing(t);
        }
        self.rate_limits();
    }

    fn report_standing(&self, t: &Value) {
        // Reported, the usage is written to the rollout with this turn: a resumed thread names
        // it (fidelity s54540001_0103 on 0.171.0, both real runs: a turn refused at its first
        // request by a usage limit, the thread's usage as it stood reported).
        self.streamed();
        let window = context_window(self.conn, &self.ctl.thread_id);
        self.notify(
            "thread/tokenUsage/updated",
            json!({"tokenUsage": {"total": t["usage"], "last": t["lastUsage"],
                                  "modelContextWindow": window}}),
        );
    }

    /// The provider's HTTP error for this request: resent or retried as codex does (`Ok`: the
    /// next request follows), else the turn fails with codex's text for it.
    pub(super) fn http_error(
        &mut self,
        status: u16,
        body: &str,
        headers: &[(String, String)],
    ) -> Result<(), End> {
        let cfg = &self.conn.fake.config();
        let headers: serde_json::Map<String, Value> =
            headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let f = provider::classify(
            status,
            body,
            &Value::Object(headers),
            &cfg.base_url,
            now_secs(),
            !self.conn.fake.turn_facts.http_context_length_unrecognized,
        );
        // No response came: the rollout gains a token count only where codex reports one
        // (a full window, rate limits), not for a resent or failed request (kept fidelity
        // session s5150001_0002: a 502 leaves none on 0.171.0).
        if f.before != provider::Before::Nothing
            && !(f.resent && self.resent < cfg.request_max_retries)
            && !(f.retried && self.retries < cfg.stream_max_retries)
        {
            self.rollout.response_dropped();
        }
        if f.resent && self.resent < cfg.request_max_retries {
            self.resent += 1;
            // A request resent by the HTTP client: steered input waits for its answer.
            self.hold(provider::backoff(self.resent, f.retry_after), true)?;
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
            self.backoff(provider::backoff(self.retries, f.retry_after), true)?;
            return Ok(());
        }
        match f.before {
            _ if self.review_child => {}
            provider::Before::FullContext => self.context_full(),
            // codex's `update_rate_limits` sends a token count: the thread's usage so far
            // (when it has any), then the rate limits.
            provider::Before::RateLimits => self.unfinished_response(),
            provider::Before::Nothing => {}
        }
        self.fail_after(f.message, f.info)
    }

    /// The real server marks the context window full before it reports running out of it:
    /// the total is the window, the last response what it took to fill it.
    pub(super) fn context_full(&self) {
        let window = context_window(self.conn, &self.ctl.thread_id);
        let thread_id = self.ctl.thread_id.clone();
        let turn_id = self.turn_id.clone();
        let (total, last) = self.conn.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            t["usageTurnId"] = json!(turn_id);
            let before = t["usage"]["totalTokens"].as_i64().unwrap_or(0);
            let mut total = breakdown(0, 0, 0, 0);
            total["totalTokens"] = json!(window);
            let mut last = breakdown(0, 0, 0, 0);
            last["totalTokens"] = json!(window - before);
            t["usage"] = total.clone();
            t["lastUsage"] = last.clone();
            t["usageWindow"] = json!(window);
            (total, last)
        });
        self.notify(
            "thread/tokenUsage/updated",
            json!({"tokenUsage": {"total": total, "last": last, "modelContextWindow": window}}),
        );
    }

    /// The stream ended early: retried while the provider allows it, else the turn fails.
    pub(super) fn dropped_stream(&mut self) -> Result<(), End> {
        // codex notices a closed stream 1.2–2.6 ms after its last event (turn scenarios 07b and
        // 79b, fidelity s20261203_0049, on every version): an interrupt sent on that event
        // comes first (s16160001_0180's two real runs, in git history: kept no longer, as its
        // 1.9 ms window is below a loaded harness's reaction time).
        // Until then the stream is live to codex: input steered in meanwhile abandons it as it
        // would a streaming one, no retry (fidelity s35350001_0233, both real runs on 0.171.0:
        // a steer on a partial message's delta, then its user message, no `Reconnecting`).
        let end = Instant::now() + STREAM_CLOSE_NOTICED;
        while Instant::now() < end {
            if !lock(&self.ctl.steers).is_empty() {
                return Err(End::Steered);
            }
            self.check_interrupt(true)?;
            std::thread::sleep(Duration::from_micros(200));
        }
        self.unfinished_response();
        if self.retries < self.conn.fake.config().stream_max_retries {
            return self.retry_stream(STREAM_CLOSED);
        }
        self.fail(STREAM_CLOSED.to_string(), json!("other"))
    }

    /// A failed stream retried: codex says so (the failure's text as the details) and asks
    /// again (the turn's next scripted response).
    pub(super) fn retry_stream(&mut self, details: &str) -> Result<(), End> {
        // An interrupt that came as the stream ended aborts the turn before codex says it
        // reconnects (its usage already reported); one sent after the notice ends the turn in
        // the backoff's wait (turn scenario 114).
        self.check_interrupt(false)?;
        let max = self.conn.fake.config().stream_max_retries;
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
        // codex waits its backoff before it asks again (0.171.0: 201–275 ms after the notice
        // for a first retry, turn scenarios 07b, 14, 37g, 79b); an interrupt ends the wait,
        // and so does steered input.
        self.backoff(provider::backoff(self.retries, None), false)
    }

    /// A retry's backoff: an interrupt ends it and the turn (`report`: as
    /// [`Self::check_interrupt`]); steered input ends it too, recorded at once, and the model
    /// is asked with it (turn scenario 206: no wait after the steer).
    fn backoff(&mut self, d: Duration, report: bool) -> Result<(), End> {
        let end = Instant::now() + d;
        loop {
            self.check_interrupt(report)?;
            if self.take_steers() {
                // A new sampling request, with a retry budget of its own ("Reconnecting...
                // 1/N" again on its next drop: 206).
                self.retries = 0;
                return Ok(());
            }
            let now = Instant::now();
            if now >= end {
                return Ok(());
            }
            std::thread::sleep((end - now).min(Duration::from_millis(1)));
        }
    }

    /// Waits `d`; an interrupt ends the wait and the turn (`report`: as [`Self::check_interrupt`]).
    /// Steered input waits for the next request, as codex takes it.
    pub(super) fn hold(&mut self, d: Duration, report: bool) -> Result<(), End> {
        let end = Instant::now() + d;
        loop {
            self.check_interrupt(report)?;
            let now = Instant::now();
            if now >= end {
                return Ok(());
            }
            std::thread::sleep((end - now).min(Duration::from_millis(20)));
        }
    }

    pub(super) fn fail(&mut self, message: String, info: Value) -> Result<(), End> {
        self.rollout.response_dropped();
        self.fail_after(message, info)
    }

    /// The turn fails: the thread's status, then the error (the response already counted).
    pub(super) fn fail_after(&mut self, message: String, info: Value) -> Result<(), End> {
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

    /// A message's end: codex records the message before it reports it complete, 1.56 ms after
    /// its last delta (the median of 254 messages in 0.171.0's turn recordings; a quarter took
    /// under 1.18 ms, a tenth over 6.4). A steer read by then is answered before the message
    /// completes (five of six real runs on 0.171.0, 0.169.0 and 0.163.0: fidelity
    /// s31310001_0010, 0034, turn scenario 178; codex's steer holds the turn's state the stream
    /// needs to record the item). An interrupt waits for the message, as before. Bounded: a
    /// steer the handler never finishes costs the message 50 ms, never the turn.
    pub(super) fn await_steers(&self) {
        std::thread::sleep(MESSAGE_RECORDED);
        let deadline = Instant::now() + Duration::from_millis(50);
        while self.ctl.steering() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Steered input becomes userMessage items; whether there was any.
    pub(super) fn take_steers(&mut self) -> bool {
        let steers: Vec<Value> = std::mem::take(&mut *lock(&self.ctl.steers));
        for s in &steers {
            self.user_message(s);
        }
        !steers.is_empty()
    }

    /// Sleeps, waking early for steered input and interrupts.
    pub(super) fn wait(&mut self, d: Duration) -> Result<(), End> {
        let end = Instant::now() + d;
        while Instant::now() < end {
            // Steered input shows up while the model works; an interrupt wakes the turn.
            self.check()?;
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
        }
        // And what came during the last sleep counts before what follows the wait (an
        // interrupt sent on a message ends the turn before its tool call runs: fidelity
        // s15150001_0246).
        self.check()
    }
}

/// How long codex takes to record a message after its last delta (see `Ctx::await_steers`).
const MESSAGE_RECORDED: Duration = Duration::from_micros(1560);

/// How long codex takes from a tool call's arrival in the stream to running it (an estimate:
/// long enough for an interrupt sent on the stream's last delta to arrive first).
pub(super) const TOOL_DISPATCH: Duration = Duration::from_millis(15);
