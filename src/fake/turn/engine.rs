//! The sampling loop: a turn's model requests, and each response's stream consumed event by
//! event as codex consumes it (codex-rs/core `session/turn.rs`: `run_sampling_request`,
//! `try_run_sampling_request`), with the notifications, usage, retries and failures the real
//! server sends for them.

use super::ctl::{End, TurnCtl};
use super::items::{agent_message, breakdown, context_window, save_turn, turn_error, user_content};
use super::plan::{PlanSplit, Seg};
use super::rollout::Rollout;
use crate::fake::provider;
use crate::fake::rpc::Conn;
use crate::fake::state::lock;
use crate::fake::state::{now_ms, now_secs};
use crate::model::events::{Event, Item, Usage, WebSearchAction};
use crate::model::script::{self, Out, Reply};
use crate::model::step::{Script, Step};
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
    /// Dropped streams (and failed requests) retried so far in this turn.
    pub(super) retries: u64,
    /// Failed requests resent since the last turn-level attempt.
    pub(super) resent: u64,
    /// The turn's diff so far (reported again when the turn ends).
    pub(super) turn_diff: Option<String>,
    /// A patch of the turn failed: no more `turn/diff/updated` this turn.
    pub(super) diff_stopped: bool,
    /// The files the turn's patches wrote, by the path its diff shows: their content before the
    /// turn (None: new) and now.
    pub(super) turn_files: std::collections::BTreeMap<String, (Option<String>, String)>,
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
    pub(super) fn new(conn: &'a Arc<Conn>, ctl: &'a TurnCtl, turn_id: &str) -> Self {
        Ctx {
            conn,
            ctl,
            turn_id: turn_id.to_string(),
            items: Vec::new(),
            messages: Vec::new(),
            resp: 0,
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
    pub(super) fn goal_update(&self, status: &str) {
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
    pub(super) fn final_answer(&self) -> Option<&Value> {
        self.messages.iter().rfind(|m| m["phase"] != "commentary")
    }

    /// After an interrupt: the `turn/interrupt` reply goes out before the turn closes.
    pub(super) fn finish_interrupt(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.ctl.responded.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
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
        let spent = u.input_tokens - u.cached() + u.output_tokens;
        if spent > 0 {
            self.goal_charge(spent);
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
    pub(super) fn http_error(
        &mut self,
        status: u16,
        body: &str,
        headers: &[(String, String)],
    ) -> Result<(), End> {
        let cfg = &self.conn.fake.config;
        let headers: serde_json::Map<String, Value> =
            headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let f = provider::classify(
            status,
            body,
            &Value::Object(headers),
            &cfg.base_url,
            now_secs(),
        );
        self.rollout.response_dropped();
        if f.resent && self.resent < cfg.request_max_retries {
            self.resent += 1;
            self.wait(provider::backoff(self.resent, f.retry_after))?;
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
            self.wait(provider::backoff(self.retries, f.retry_after))?;
            return Ok(());
        }
        match f.before {
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
    pub(super) fn dropped_stream(&mut self) -> Result<(), End> {
        self.unfinished_response();
        if self.retries < self.conn.fake.config.stream_max_retries {
            return self.retry_stream(STREAM_CLOSED);
        }
        self.fail(STREAM_CLOSED.to_string(), json!("other"))
    }

    /// A failed stream retried: codex says so (the failure's text as the details) and asks
    /// again (the turn's next scripted response).
    pub(super) fn retry_stream(&mut self, details: &str) -> Result<(), End> {
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
        Ok(())
    }
}

/// How one model request's stream ended.
pub(super) enum Sampled {
    /// `response.completed` (its usage kept): the model is asked again when it called a tool.
    Completed { follow_up: bool },
    /// The stream ended without `response.completed` or an error.
    Dropped,
    /// `response.failed`: its error code and message.
    Failed { code: String, message: String },
    /// `response.incomplete`: its reason.
    Incomplete { reason: String },
}

/// The output item streaming now: codex's single active item, which every delta goes to.
enum Active {
    Message {
        id: String,
        phase: Value,
        /// When its `item/started` went out (in Plan mode, only once text outside a plan came).
        at: Option<i64>,
        plan: Option<PlanStream>,
    },
    Reasoning {
        id: String,
        at: i64,
    },
    WebSearch {
        id: String,
        at: i64,
    },
}

/// A Plan-mode answer as it streams: the split, the plan items it opened, the answer's text.
#[derive(Default)]
struct PlanStream {
    split: PlanSplit,
    plans: Vec<(String, i64, String)>,
    answer: String,
}

impl<'a> Ctx<'a> {
    /// A turn's model requests, as codex's turn loop makes them: each request gets the turn's
    /// next scripted response (past the script, the default answer), rendered into the events
    /// the scripted model would stream, and the stream is consumed as codex consumes it. A
    /// response that called a tool is followed by another request; one that did not ends the
    /// turn (a scripted response left over is never played, as on the real server). Input
    /// steered in abandons the response being streamed: the input is recorded and the model is
    /// asked again.
    pub(super) fn run(&mut self, script: &Script) -> Result<(), End> {
        let mut responses = script.responses().into_iter();
        loop {
            self.next_response();
            let parsed = responses
                .next()
                .unwrap_or_else(|| Script::default_turn().responses().remove(0));
            let mut steps = Vec::with_capacity(parsed.len());
            for s in parsed {
                match s {
                    Ok(s) => steps.push(s),
                    Err(e) => self
                        .conn
                        .fake
                        .record(json!({"event": "scenario_error", "message": e})),
                }
            }
            let outs = match script::reply(self.resp, &steps) {
                Reply::Http {
                    status,
                    body,
                    headers,
                } => {
                    // The provider answered the request with an HTTP error: resent or retried
                    // (the next request follows), else the turn fails.
                    self.check()?;
                    self.http_error(status, &body, &headers)?;
                    self.open = false;
                    continue;
                }
                Reply::Stream(outs) => outs,
            };
            self.resent = 0;
            match self.sample(&steps, &outs) {
                Ok(Sampled::Completed { follow_up }) => {
                    // A stream's retry budget is one sampling request's: a completed response
                    // starts the next request afresh (core `run_sampling_request`).
                    self.retries = 0;
                    self.end_response();
                    if !follow_up {
                        return Ok(());
                    }
                }
                Ok(Sampled::Dropped) => self.dropped_stream()?,
                Ok(Sampled::Failed { code, message }) => self.failed(&code, &message)?,
                Ok(Sampled::Incomplete { reason }) => self.incomplete(&reason)?,
                Err(End::Steered) => {
                    // The abandoned stream's account, as for an interrupt: the thread's usage as
                    // it stands (when it has any), then the rate limits (seen on 0.171.0, a
                    // steer in a thread's second turn).
                    self.unfinished_response();
                    self.open = false;
                    self.take_steers();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One response's stream, event by event, as codex's `try_run_sampling_request` reads it:
    /// interrupts and steers land between events (and inside pauses); a tool call runs when its
    /// item is done; `response.completed` ends the reading (its usage is reported after the
    /// tools, by [`Ctx::end_response`]); a failure is the stream's error once it ends.
    fn sample(&mut self, steps: &[Step], outs: &[Out]) -> Result<Sampled, End> {
        let mut active: Option<Active> = None;
        let mut follow_up = false;
        let mut failure: Option<Sampled> = None;
        for (k, o) in outs.iter().enumerate() {
            let (event, origin) = match o {
                Out::Delay(ms) => {
                    self.wait(Duration::from_millis(*ms))?;
                    continue;
                }
                Out::Local(i) => {
                    self.check()?;
                    if let Some(step) = steps.get(*i) {
                        self.local(step, *i)?;
                    }
                    continue;
                }
                Out::Event(e, origin) => (e, origin.and_then(|i| steps.get(i))),
            };
            match Event::read(event) {
                Event::Completed { response } => {
                    // The stream's end comes a moment after its last item: an interrupt sent on
                    // that item arrives first, and the response's usage is never counted (seen
                    // on 0.171.0, real against real).
                    if follow_up {
                        self.check()?;
                    } else {
                        self.wait(TOOL_DISPATCH)?;
                    }
                    self.usage = response.usage;
                    let follow_up = follow_up || response.end_turn == Some(false);
                    return Ok(Sampled::Completed { follow_up });
                }
                Event::Failed { response } => {
                    failure = Some(match response.error {
                        Some(e) => Sampled::Failed {
                            code: e.code.unwrap_or_default(),
                            message: e.message.unwrap_or_default(),
                        },
                        None => Sampled::Failed {
                            code: String::new(),
                            message: "response.failed event received".into(),
                        },
                    });
                }
                Event::Incomplete { response } => {
                    let reason = response
                        .incomplete_details
                        .and_then(|d| d.reason)
                        .unwrap_or_else(|| "unknown".into());
                    failure = Some(Sampled::Incomplete { reason });
                }
                Event::Done { item } if item.is_tool_call() => {
                    // codex dispatches a tool call after the stream's item arrives: an interrupt
                    // the client sent meanwhile ends the turn first (seen on 0.171.0).
                    self.wait(TOOL_DISPATCH)?;
                    active = None;
                    // codex goes on reading the stream while the tool runs: the response's end
                    // that follows at once is read (its usage kept) before the tool is done.
                    if let Some(usage) = completed_next(&outs[k + 1..]) {
                        self.usage = usage;
                    }
                    self.tool_call(item, origin)?;
                    follow_up = true;
                }
                ev => {
                    self.check()?;
                    self.stream_event(ev, &mut active);
                }
            }
        }
        Ok(failure.unwrap_or(Sampled::Dropped))
    }

    /// What an item's events show the client (codex `handle_non_tool_response_item`, the
    /// delta arms, `handle_output_item_done`).
    fn stream_event(&mut self, ev: Event, active: &mut Option<Active>) {
        match ev {
            Event::Added {
                item: Item::Message { id, phase, .. },
            } => {
                let id = message_id(id);
                let phase = json!(phase);
                let (at, plan) = if self.plan_mode {
                    // The message starts with its first text outside a plan.
                    (None, Some(PlanStream::default()))
                } else {
                    (Some(self.started(&agent_message(&id, "", &phase))), None)
                };
                *active = Some(Active::Message {
                    id,
                    phase,
                    at,
                    plan,
                });
            }
            Event::Added {
                item: Item::Reasoning { id, .. },
            } => {
                let id = id.unwrap_or_default();
                let at = self.started(&reasoning_item(&id, &[], &[]));
                *active = Some(Active::Reasoning { id, at });
            }
            Event::Added {
                item: Item::WebSearchCall { id, action },
            } => {
                let id = id.unwrap_or_default();
                let at = self.started(&web_search_item(&id, action.as_ref()));
                *active = Some(Active::WebSearch { id, at });
            }
            Event::TextDelta { delta } => {
                if let Some(Active::Message {
                    id,
                    phase,
                    at,
                    plan,
                }) = active
                {
                    match plan {
                        None => self.notify(
                            "item/agentMessage/delta",
                            json!({"itemId": id, "delta": delta}),
                        ),
                        Some(p) => {
                            let segs = p.split.feed(&delta);
                            self.plan_segments(segs, id, phase, at, p);
                        }
                    }
                }
            }
            Event::SummaryPart { summary_index } => {
                if let Some(Active::Reasoning { id, .. }) = active {
                    self.notify(
                        "item/reasoning/summaryPartAdded",
                        json!({"itemId": id, "summaryIndex": summary_index}),
                    );
                }
            }
            Event::SummaryDelta {
                delta,
                summary_index,
            } => {
                if let Some(Active::Reasoning { id, .. }) = active {
                    self.notify(
                        "item/reasoning/summaryTextDelta",
                        json!({"itemId": id, "delta": delta, "summaryIndex": summary_index}),
                    );
                }
            }
            Event::ReasoningDelta {
                delta,
                content_index,
            } => {
                if let Some(Active::Reasoning { id, .. }) = active {
                    self.notify(
                        "item/reasoning/textDelta",
                        json!({"itemId": id, "delta": delta, "contentIndex": content_index}),
                    );
                }
            }
            Event::Done {
                item: Item::Message { id, content, phase },
            } => {
                let text = Item::message_text(&content);
                let phase = json!(phase);
                match active.take() {
                    Some(Active::Message {
                        id: started_id,
                        phase: started_phase,
                        mut at,
                        plan: Some(mut p),
                    }) => {
                        let segs = p.split.finish();
                        self.plan_segments(segs, &started_id, &started_phase, &mut at, &mut p);
                        for (pid, at, text) in std::mem::take(&mut p.plans) {
                            self.completed(json!({"type": "plan", "id": pid, "text": text}), at);
                        }
                        if let Some(at) = at {
                            self.completed(agent_message(&started_id, &p.answer, &phase), at);
                        }
                    }
                    Some(Active::Message {
                        id: started_id,
                        at: Some(at),
                        ..
                    }) => {
                        let id = id.unwrap_or(started_id);
                        self.completed(agent_message(&id, &text, &phase), at);
                    }
                    // Done with no item streaming: codex starts it as it is, then completes it
                    // (seen on 0.171.0).
                    _ => {
                        let id = message_id(id);
                        let item = agent_message(&id, &text, &phase);
                        let at = self.started(&item);
                        self.completed(item, at);
                    }
                }
            }
            Event::Done {
                item:
                    Item::Reasoning {
                        id,
                        summary,
                        content,
                    },
            } => {
                let summary: Vec<String> = summary.into_iter().map(|t| t.text).collect();
                let content: Vec<String> = content
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| t.text)
                    .collect();
                let (id, at) = match active.take() {
                    Some(Active::Reasoning { id: sid, at }) => (id.unwrap_or(sid), at),
                    _ => {
                        let id = id.unwrap_or_default();
                        let at = self.started(&reasoning_item(&id, &summary, &content));
                        (id, at)
                    }
                };
                self.completed(reasoning_item(&id, &summary, &content), at);
            }
            // A web search: started with what the added item says (no action yet: `other`),
            // completed with its action and what it was about (seen on 0.171.0).
            Event::Done {
                item: Item::WebSearchCall { id, action },
            } => {
                let item = |id: &str| web_search_item(id, action.as_ref());
                let (id, at) = match active.take() {
                    Some(Active::WebSearch { id: sid, at }) => (id.unwrap_or(sid), at),
                    _ => {
                        let id = id.unwrap_or_default();
                        (id.clone(), self.started(&item(&id)))
                    }
                };
                self.completed(item(&id), at);
            }
            // Items codex keeps without showing them, events it does not read.
            _ => {}
        }
    }

    /// Plan-mode pieces of an answer: its text outside a plan streams as the message (started
    /// at its first piece), a plan as a plan item of its own.
    fn plan_segments(
        &mut self,
        segs: Vec<Seg>,
        id: &str,
        phase: &Value,
        at: &mut Option<i64>,
        p: &mut PlanStream,
    ) {
        for seg in segs {
            match seg {
                Seg::Answer(t) => {
                    if at.is_none() {
                        *at = Some(self.started(&agent_message(id, "", phase)));
                    }
                    p.answer.push_str(&t);
                    self.notify("item/agentMessage/delta", json!({"itemId": id, "delta": t}));
                }
                Seg::PlanStart => {
                    let pid = if self.conn.fake.turn_facts.plan_item_id_from_turn {
                        format!("{}-plan", self.turn_id)
                    } else {
                        uuid::Uuid::now_v7().to_string()
                    };
                    let at = self.started(&json!({"type": "plan", "id": pid, "text": ""}));
                    p.plans.push((pid, at, String::new()));
                }
                Seg::Plan(t) => {
                    if let Some((pid, _, text)) = p.plans.last_mut() {
                        text.push_str(&t);
                        let pid = pid.clone();
                        self.notify("item/plan/delta", json!({"itemId": pid, "delta": t}));
                    }
                }
            }
        }
    }

    /// `response.failed`: codex's error for its code (`failure`); a stream error or a rate
    /// limit is retried as the provider allows, like a dropped stream; codex's other failure
    /// codes end the turn.
    fn failed(&mut self, code: &str, message: &str) -> Result<(), End> {
        let (message, info) = failure(code, message);
        self.unfinished_response();
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
        self.fail(message, info)
    }

    /// `response.incomplete`: the turn fails with the reason, never retried (seen on 0.171.0
    /// with stream retries left).
    fn incomplete(&mut self, reason: &str) -> Result<(), End> {
        self.unfinished_response();
        self.fail(
            format!("Incomplete response returned, reason: {reason}"),
            json!("other"),
        )
    }

    /// `thread/compact/start`'s turn, as the real server runs it: the compaction item around
    /// three usage reports (the last one estimates the compacted history), no read state.
    pub(super) fn compaction(&mut self) -> Result<(), End> {
        // One model request: the summary.
        self.next_response();
        let id = uuid::Uuid::now_v7().to_string();
        let item = json!({"type": "contextCompaction", "id": id});
        let at = self.started(&item);
        // The real third report's `last.totalTokens` is codex's estimate of the compacted
        // history, its built-in prompt included: not modeled (known difference).
        for _ in 0..3 {
            self.open = true;
            self.end_response();
        }
        self.completed(item, at);
        Ok(())
    }
}

/// The usage of a `response.completed` the stream sends next with no pause before it (`Some`:
/// the stream ends so; its usage, if any).
fn completed_next(outs: &[Out]) -> Option<Option<Usage>> {
    for o in outs {
        match o {
            Out::Event(e, _) => match Event::read(e) {
                Event::Completed { response } => return Some(response.usage),
                Event::Ignored => continue,
                _ => return None,
            },
            _ => return None,
        }
    }
    None
}

/// A message's id: the model's, else a fresh one (codex gives an id-less message a new uuid).
fn message_id(id: Option<String>) -> String {
    id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// A `webSearch` item: its query is the action's detail.
fn web_search_item(id: &str, action: Option<&WebSearchAction>) -> Value {
    let (query, shown) = match action {
        Some(a) => (a.detail(), a.shown()),
        None => (String::new(), json!({"type": "other"})),
    };
    json!({"type": "webSearch", "id": id, "query": query, "action": shown, "results": null})
}

fn reasoning_item(id: &str, summary: &[String], content: &[String]) -> Value {
    json!({"type": "reasoning", "id": id, "summary": summary, "content": content})
}

/// How long codex takes from a tool call's arrival in the stream to running it (an estimate:
/// long enough for an interrupt sent on the stream's last delta to arrive first).
pub(super) const TOOL_DISPATCH: Duration = Duration::from_millis(15);
