//! One response's stream, consumed as codex's `try_run_sampling_request` consumes it: the
//! item streaming now (codex's single active item: every delta goes to it), what each event
//! shows the client, where interrupts and steers land, how the stream ends.

use super::ctl::End;
use super::ctx::{Ctx, TOOL_DISPATCH};
use super::items::agent_message;
use super::plan::{PlanSplit, Seg};
use crate::model::events::{Event, Item, Usage, WebSearchAction};
use crate::model::script::Out;
use crate::model::step::Step;
use serde_json::{json, Value};
use std::time::Duration;

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
        /// Text that may open a memory citation, held back from the deltas (see `visible`).
        held: String,
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

impl Ctx<'_> {
    /// One response's stream, event by event, as codex's `try_run_sampling_request` reads it:
    /// interrupts and steers land between events (and inside pauses); a tool call runs when its
    /// item is done; `response.completed` ends the reading (its usage is reported after the
    /// tools, by [`Ctx::end_response`]); a failure is the stream's error once it ends.
    pub(super) fn sample(&mut self, steps: &[Step], outs: &[Out]) -> Result<Sampled, End> {
        let mut active: Option<Active> = None;
        let mut follow_up = false;
        let mut failure: Option<Sampled> = None;
        for (k, o) in outs.iter().enumerate() {
            // In full flow while the next out follows at once (no pause, no local step).
            self.ctl.flowing.store(
                matches!(outs.get(k + 1), Some(Out::Event(..))),
                std::sync::atomic::Ordering::SeqCst,
            );
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
                        self.check_interrupt(true)?;
                    } else {
                        self.hold(TOOL_DISPATCH, true)?;
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
                    // The call is dispatched: requests land as they come (see `hold`).
                    self.ctl
                        .flowing
                        .store(false, std::sync::atomic::Ordering::SeqCst);
                    // codex dispatches a tool call after the stream's item arrives: an interrupt
                    // the client sent meanwhile ends the turn first (seen on 0.171.0); a steer
                    // does not stop it (fidelity s31310001_0034: the tool ran).
                    self.hold(TOOL_DISPATCH, true)?;
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
                    // An interrupt lands between events (once the flow has let it in: see
                    // `TurnCtl::await_flow`); a steer only where the stream pauses (fidelity
                    // s31310001_0010, 0034, turn scenario 178: a steer on a delta of a message
                    // streamed in full flow leaves the response whole, its usage counted;
                    // `21b`: one in a pause abandons it).
                    self.check_interrupt(true)?;
                    let message_done = matches!(
                        &ev,
                        Event::Done {
                            item: Item::Message { .. }
                        }
                    );
                    self.stream_event(ev, &mut active);
                    // 0.163.0 takes a steer read during the message once it completes when the
                    // response goes on with a tool call (see the fact).
                    if message_done
                        && self.conn.fake.turn_facts.steer_ends_response_at_message
                        && tool_call_next(&outs[k + 1..])
                    {
                        self.check()?;
                    }
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
                    held: String::new(),
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
                    held,
                }) = active
                {
                    match plan {
                        None => {
                            held.push_str(&delta);
                            let shown = visible(held);
                            if !shown.is_empty() {
                                self.notify(
                                    "item/agentMessage/delta",
                                    json!({"itemId": id, "delta": shown}),
                                );
                            }
                        }
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
                // The message is recorded: a steer waiting on the flow is answered first.
                self.ctl
                    .flowing
                    .store(false, std::sync::atomic::Ordering::SeqCst);
                self.await_steers();
                let text = Item::message_text(&content);
                let phase = json!(phase);
                match active.take() {
                    Some(Active::Message {
                        id: started_id,
                        phase: started_phase,
                        mut at,
                        plan: Some(mut p),
                        ..
                    }) => {
                        let segs = p.split.finish();
                        self.plan_segments(segs, &started_id, &started_phase, &mut at, &mut p);
                        let plans = std::mem::take(&mut p.plans);
                        // A message with neither plan nor text shows nothing, but its response
                        // item is recorded still (turn scenario 209: an empty final answer in
                        // plan mode; fidelity s35350001_0859).
                        if plans.is_empty() && at.is_none() {
                            self.rollout.add(1);
                        }
                        for (pid, at, text) in plans {
                            self.completed(json!({"type": "plan", "id": pid, "text": text}), at);
                        }
                        if let Some(at) = at {
                            self.completed(agent_message(&started_id, &p.answer, &phase), at);
                        }
                    }
                    Some(Active::Message {
                        id: started_id,
                        at: Some(at),
                        held,
                        ..
                    }) => {
                        // The message's end lets out what was held back.
                        if !held.is_empty() {
                            self.notify(
                                "item/agentMessage/delta",
                                json!({"itemId": started_id, "delta": held}),
                            );
                        }
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
}

/// The usage of a `response.completed` the stream sends next with no pause before it (`Some`:
/// the stream ends so; its usage, if any).
/// Whether the response's next item (before its end) is a tool call.
fn tool_call_next(outs: &[Out]) -> bool {
    for o in outs {
        if let Out::Event(e, _) = o {
            match Event::read(e) {
                Event::Done { item } => return item.is_tool_call(),
                Event::Completed { .. } | Event::Failed { .. } => return false,
                _ => continue,
            }
        }
    }
    false
}

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
/// codex streams a message's text through its citation parser (`codex_utils_stream_parser`
/// `InlineHiddenTagParser`): the end of the text that could still open `<oai-mem-citation>`
/// waits for the next delta (fidelity s19190001_0215: `"It's <"` shown as `"It's "`, the `<`
/// with the next delta). Returns what shows now, leaving the rest in `held`. A whole citation
/// (hidden, and the item's `memoryCitation`) is not modeled.
fn visible(held: &mut String) -> String {
    const OPEN: &str = "<oai-mem-citation>";
    let keep = (1..OPEN.len())
        .rev()
        .find(|&k| held.ends_with(&OPEN[..k]))
        .unwrap_or(0);
    let rest = held.split_off(held.len() - keep);
    std::mem::replace(held, rest)
}

pub(super) fn message_id(id: Option<String>) -> String {
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
