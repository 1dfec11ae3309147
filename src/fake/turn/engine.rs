//! The sampling loop: a turn's model requests (codex-rs/core `session/turn.rs`:
//! `run_sampling_request`), each answered by the turn's next scripted response rendered as the
//! scripted model renders it, its stream consumed by `stream.rs`; the retries, failures and
//! the compaction's request around them.

use super::ctl::End;
use super::ctx::{failure, Ctx};
use super::stream::Sampled;
use crate::model::script::{self, Reply};
use crate::model::step::Script;
use serde_json::json;

impl<'a> Ctx<'a> {
    /// A turn's model requests, as codex's turn loop makes them: each request gets the turn's
    /// next scripted response (past the script, the default answer), rendered into the events
    /// the scripted model would stream, and the stream is consumed as codex consumes it. A
    /// response that called a tool is followed by another request; one that did not ends the
    /// turn (a scripted response left over is never played, as on the real server). Input
    /// steered in where the stream pauses abandons the response; steered in while it flows, it
    /// waits for the response's end (its tools run, its usage counts). Either way the input is
    /// then recorded and the model is asked again.
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
            self.streamed();
            match self.sample(&steps, &outs) {
                Ok(Sampled::Completed { follow_up }) => {
                    // A stream's retry budget is one sampling request's: a completed response
                    // starts the next request afresh (core `run_sampling_request`).
                    self.retries = 0;
                    self.goal_charge_deferred =
                        !follow_up && !crate::fake::state::lock(&self.ctl.steers).is_empty();
                    self.end_response();
                    // Input steered in while the response streamed in full flow: recorded
                    // after the response's account, then the model is asked again with it
                    // (codex: `needs_follow_up |= has_pending_input` at `response.completed`).
                    let steered = self.take_steers();
                    if !follow_up && !steered {
                        // An interrupt that came while the last response was finishing still
                        // aborts the turn: codex's task runs until its loop returns (its usage
                        // reported, then the turn interrupted with no items; fidelity
                        // s13130001_0185, both real runs on 0.171.0).
                        if self.ctl.interrupted() {
                            return self.interrupted_after_response();
                        }
                        return Ok(());
                    }
                }
                Ok(Sampled::Dropped) => match self.dropped_stream() {
                    Err(End::Steered) => self.abandon_for_steer(),
                    r => r?,
                },
                Ok(Sampled::Failed { code, message }) => self.failed(&code, &message)?,
                Ok(Sampled::Incomplete { reason }) => self.incomplete(&reason)?,
                Err(End::Steered) => self.abandon_for_steer(),
                Err(e) => return Err(e),
            }
        }
    }

    /// Steered input abandons the stream in flight; the model is asked again with it.
    fn abandon_for_steer(&mut self) {
        // The abandoned stream's account, as for an interrupt: the thread's usage as it stands
        // (when it has any), then the rate limits (seen on 0.171.0, a steer in a thread's
        // second turn).
        self.unfinished_response();
        // Its token count is written to the rollout, as for an interrupt (fidelity
        // s16160001_0129: a steer in a thread's first turn, info still null).
        if self.open {
            self.rollout.stream_aborted();
        }
        self.open = false;
        self.take_steers();
        // The model is asked again in a new sampling request: a retry budget of its own.
        self.retries = 0;
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
        if retried && self.retries < self.conn.fake.config().stream_max_retries {
            return self.retry_stream(&message);
        }
        if info == "contextWindowExceeded" {
            // The full window's token count is a rollout line of its own (turn scenarios 179,
            // 179b: the failed turn's timeline position one past a plain failure's).
            self.context_full();
            self.rollout.add(1);
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
    /// three usage reports, no read state. The first is the thread's usage as it stands (codex
    /// reports it when the summary's stream opens: fidelity s16160001_0117 shows it, unchanged,
    /// before the summary finished), the second adds the summary's usage, the third estimates
    /// the compacted history.
    pub(super) fn compaction(&mut self, summary: &Script) -> Result<(), End> {
        // One model request: the summary (`summary`'s first response; only its usage shows).
        self.next_response();
        let steps = summary.first_response();
        let reply = script::reply(self.resp, &steps);
        if let Reply::Http {
            status,
            body,
            headers,
        } = &reply
        {
            // The summary's request refused: the compaction's item starts, then the request is
            // resent or retried as a turn's is, and the turn fails when codex gives up; the item
            // never completes (fidelity s46460001_0950, both real runs; turn scenario 22b).
            let id = uuid::Uuid::now_v7().to_string();
            self.started(&json!({"type": "contextCompaction", "id": id}));
            for _ in 0..64 {
                self.check()?;
                self.http_error(*status, body, headers)?;
            }
        }
        let (usage, pauses) = match reply {
            Reply::Stream(outs) => (
                outs.iter().filter_map(|o| o.event()).find_map(|e| {
                    (e["type"] == "response.completed")
                        .then(|| serde_json::from_value(e["response"]["usage"].clone()).ok())
                        .flatten()
                }),
                outs.iter()
                    .map(|o| match o {
                        script::Out::Delay(ms) => *ms,
                        _ => 0,
                    })
                    .sum(),
            ),
            Reply::Http { .. } => (None, 0),
        };
        let id = uuid::Uuid::now_v7().to_string();
        let item = json!({"type": "contextCompaction", "id": id});
        let at = self.started(&item);
        // Reported as for a response that did not complete: a thread no response has reported
        // usage for yet shows only the rate limits (fidelity s27270001_0241: a compaction
        // after a refused first turn).
        self.unfinished_response();
        // The rollout's entries: as many as for three responses ended, as before.
        self.rollout.response_ended();
        // The summary streams for as long as its pauses last (s16160001_0117: the client left
        // during a 0.6 s pause, before the second report).
        self.wait(std::time::Duration::from_millis(pauses))?;
        self.usage = usage;
        self.end_response();
        // The real third report's `last.totalTokens` is codex's estimate of the compacted
        // history, its built-in prompt included: not modeled (known difference).
        self.open = true;
        self.end_response();
        self.completed(item, at);
        Ok(())
    }
}
