//! From recorded model answers back to `scenario.json` steps. Each answer is read into steps,
//! then the steps are played through the scripted model's own renderer ([`script::reply`]) and
//! kept only when they give back the recorded events (ids aside: the model numbers its own).
//! An answer the steps cannot give back is kept whole as `raw` events and named; nothing is
//! dropped. Pauses in a stream (≥ [`PAUSE`]) become `sleep` steps, so a client that acted
//! during one (an interrupt, a steer) finds the replay paused at the same place.

use super::passthrough::Exchange;
use crate::model::events::{Event, Item};
use crate::model::script::{self, Out, Reply};
use crate::model::step::{Script, Step};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// A gap between two events at least this long is replayed as a `sleep`.
pub const PAUSE: f64 = 0.25;

/// The scenario a recording's model answers make, and what could not be expressed.
#[derive(Debug, Default)]
pub struct Translation {
    pub scenario: Value,
    /// Model answers translated into steps.
    pub responses: usize,
    /// Answers kept as raw events (what the steps cannot say; both servers play them).
    pub raw: Vec<String>,
    /// Everything else worth telling (requests not replayed, turns given response by response).
    pub notes: Vec<String>,
}

fn is_responses(ex: &Exchange) -> bool {
    ex.method == "POST"
        && ex
            .path
            .split('?')
            .next()
            .unwrap_or("")
            .ends_with("/responses")
}

fn header<'a>(ex: &'a Exchange, name: &str) -> Option<&'a str> {
    ex.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Headers of an HTTP error answer that are the transport's, not the provider's message.
const TRANSPORT_HEADERS: &[&str] = &[
    "date",
    "server",
    "content-length",
    "content-type",
    "connection",
    "transfer-encoding",
    "keep-alive",
];

/// The scenario of a recording's exchanges (in arrival order).
pub fn translate(exchanges: &[Exchange]) -> Translation {
    let mut tr = Translation::default();
    // Turns of responses of steps; a codex turn id starts a new one, as the model counts.
    let mut turns: Vec<Vec<Vec<Value>>> = Vec::new();
    let mut turn_id: Option<Option<String>> = None;
    let mut guardian: Option<String> = None;
    let mut served = 0u64;
    for ex in exchanges {
        if !is_responses(ex) {
            tr.notes.push(format!(
                "{} {} (answered {} by the upstream) is not replayed",
                ex.method, ex.path, ex.status
            ));
            continue;
        }
        if header(ex, "x-openai-subagent") == Some("guardian") {
            let outcome = guardian_outcome(ex).unwrap_or_else(|| "allow".into());
            if guardian.as_ref().is_some_and(|g| *g != outcome) {
                tr.notes.push(
                    "the approval reviewer answered both allow and deny; the replay's reviewer \
                     answers the first way every time"
                        .into(),
                );
            } else {
                guardian = Some(outcome);
            }
            continue;
        }
        let id = ex.body["client_metadata"]["turn_id"]
            .as_str()
            .map(str::to_string);
        let new_turn = match (&turn_id, &id) {
            (None, _) => true,
            (Some(prev), Some(_)) => *prev != id,
            // No turn id: the model plays a turn while it has responses; one turn holds them.
            (Some(_), None) => false,
        };
        if new_turn {
            turns.push(Vec::new());
        }
        turn_id = Some(id);
        let (steps, raw) = response_steps(ex, served);
        served += 1;
        if raw {
            tr.raw.push(format!(
                "response {} (turn {}): kept as raw events",
                served,
                turns.len()
            ));
        } else {
            tr.responses += 1;
        }
        if let Some(t) = turns.last_mut() {
            t.push(steps);
        }
    }
    // Past the script the model gives its default answer: a turn's trailing default answers,
    // and trailing turns of nothing else, need no script (a steered or restarted turn's
    // follow-up is one).
    let default: Vec<Value> = Script::default_turn().steps;
    let is_default = |r: &Vec<Value>| {
        same_view(
            &render_view(0, &default),
            &render_view(0, r).iter().collect::<Vec<_>>(),
        )
    };
    for t in turns.iter_mut() {
        while t.len() > 1 && t.last().is_some_and(is_default) {
            t.pop();
        }
    }
    while turns.last().is_some_and(|t| t.iter().all(is_default)) {
        turns.pop();
    }
    let mut out_turns = Vec::new();
    for (k, responses) in turns.into_iter().enumerate() {
        let flat: Vec<Value> = responses.iter().flatten().cloned().collect();
        let as_steps = json!({"steps": flat});
        let split: Vec<Vec<Step>> = Script::from_value(&as_steps)
            .responses()
            .into_iter()
            .map(|r| r.into_iter().filter_map(Result::ok).collect())
            .collect();
        if split == responses.iter().map(|r| typed(r)).collect::<Vec<_>>() {
            out_turns.push(as_steps);
        } else {
            tr.notes.push(format!(
                "turn {}: its responses are given one by one (`responses`): its answers do not \
                 split as its steps would",
                k + 1
            ));
            out_turns.push(json!({"responses": responses}));
        }
    }
    let mut scenario = Map::new();
    scenario.insert("turns".into(), Value::Array(out_turns));
    if guardian.as_deref() == Some("deny") {
        scenario.insert("guardian".into(), json!("deny"));
    }
    tr.scenario = Value::Object(scenario);
    tr
}

/// The approval reviewer's verdict in its answer: the assessment's `outcome`.
fn guardian_outcome(ex: &Exchange) -> Option<String> {
    let text = ex.events.iter().find_map(|e| {
        (e.data["type"] == "response.output_item.done" && e.data["item"]["type"] == "message")
            .then(|| e.data["item"]["content"][0]["text"].as_str())
            .flatten()
    })?;
    let v: Value = serde_json::from_str(text).ok()?;
    v["outcome"].as_str().map(str::to_string)
}

/// One answer's steps, and whether they are raw events.
pub fn response_steps(ex: &Exchange, n: u64) -> (Vec<Value>, bool) {
    if ex.events.is_empty() {
        let headers: Map<String, Value> = ex
            .response_headers
            .iter()
            .filter(|(k, _)| !TRANSPORT_HEADERS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let mut step = json!({"kind": "http_error", "status": ex.status,
                              "body": ex.text.clone().unwrap_or_default()});
        if !headers.is_empty() {
            step["headers"] = Value::Object(headers);
        }
        return (vec![step], false);
    }
    let seen = view(ex);
    if let Some(steps) = read_steps(ex, &seen) {
        let recorded: Vec<&Event> = seen.iter().map(|s| &s.event).collect();
        if same_view(&render_view(n, &steps), &recorded) {
            return (steps, false);
        }
    }
    (raw_steps(ex), true)
}

/// The recording as it was: every event, a `sleep` where the stream paused; a stream that
/// ended without its terminal event ends there again (`error_note`).
fn raw_steps(ex: &Exchange) -> Vec<Value> {
    let mut steps = Vec::new();
    let mut last = ex.events.first().map_or(ex.t, |e| e.t);
    let mut ended = false;
    for e in &ex.events {
        if e.t - last >= PAUSE {
            steps.push(sleep(e.t - last));
        }
        last = e.t;
        ended |= matches!(
            e.data["type"].as_str(),
            Some("response.completed" | "response.failed" | "response.incomplete")
        );
        steps.push(json!({"kind": "raw", "event": e.data}));
    }
    hold_open(ex, last, &mut steps);
    if !ended {
        steps.push(json!({"kind": "error_note"}));
    }
    steps
}

/// codex went away mid-stream (an interrupt): the replay holds the stream open where the
/// recording's was cut, so the client's interrupt arrives first again.
fn hold_open(ex: &Exchange, last: f64, steps: &mut Vec<Value>) {
    if ex.end == "codex closed" {
        steps.push(sleep((ex.t_end - last).max(1.0)));
    }
}

/// A recorded event as codex reads it, and when it arrived.
struct Seen {
    t: f64,
    event: Event,
}

/// What codex reads of a recorded stream: the events it acts on, in order (the ignored ones,
/// `response.created` among them, left out).
fn view(ex: &Exchange) -> Vec<Seen> {
    ex.events
        .iter()
        .map(|e| Seen {
            t: e.t,
            event: Event::read(&e.data),
        })
        .filter(|s| !matches!(s.event, Event::Ignored | Event::Created {}))
        .collect()
}

/// Steps as the servers read them (one that does not read is left out).
fn typed(steps: &[Value]) -> Vec<Step> {
    steps.iter().filter_map(|s| Step::parse(s).ok()).collect()
}

/// What codex reads of the events `steps` make the model send.
fn render_view(n: u64, steps: &[Value]) -> Vec<Event> {
    match script::reply(n, &typed(steps)) {
        Reply::Stream(out) => out
            .iter()
            .filter_map(Out::event)
            .map(Event::read)
            .filter(|e| !matches!(e, Event::Ignored | Event::Created {}))
            .collect(),
        Reply::Http { .. } => Vec::new(),
    }
}

/// Equal as codex reads them, once each side's ids are numbered by first appearance (the
/// model names its items after the response number; the upstream had its own).
fn same_view(a: &[Event], b: &[&Event]) -> bool {
    let (mut ma, mut mb) = (HashMap::new(), HashMap::new());
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| ids_masked(&shown(x), &mut ma) == ids_masked(&shown(y), &mut mb))
}

/// An event as compared: usage by its four counts (codex reads absent details as zeros).
fn shown(e: &Event) -> Value {
    match e {
        Event::Completed { response } => json!({"completed": response.usage.map(|u| [
            u.input_tokens, u.cached(), u.output_tokens, u.reasoning()]),
            "end_turn": response.end_turn}),
        e => serde_json::to_value(e).unwrap_or(Value::Null),
    }
}

fn ids_masked(v: &Value, seen: &mut HashMap<String, usize>) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let masked = match (k.as_str(), x.as_str()) {
                        ("id" | "item_id" | "call_id", Some(s)) => {
                            let n = seen.len();
                            json!(format!("<id:{}>", seen.entry(s.to_string()).or_insert(n)))
                        }
                        _ => ids_masked(x, seen),
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| ids_masked(x, seen)).collect()),
        _ => v.clone(),
    }
}

fn sleep(secs: f64) -> Value {
    json!({"kind": "sleep", "seconds": (secs * 100.0).round() / 100.0})
}

/// Reads what codex reads of a stream as steps, with its pauses (`sleep` steps between items,
/// pauses among a message's deltas), or `None` when the steps cannot say the same thing (an
/// event they never make, a pause inside another item).
fn read_steps(ex: &Exchange, seen: &[Seen]) -> Option<Vec<Value>> {
    // The gap before each event codex reads (the first from the stream's first event).
    let base = ex.events.first().map_or(ex.t, |e| e.t);
    let gap = |k: usize| seen[k].t - if k == 0 { base } else { seen[k - 1].t };
    let paused = |k: usize| gap(k) >= PAUSE;
    let mut steps = Vec::new();
    let mut usage: Option<Value> = None;
    let mut ended = false;
    let mut k = 0;
    while k < seen.len() {
        if paused(k) {
            steps.push(sleep(gap(k)));
        }
        match &seen[k].event {
            Event::Added { item } => {
                // This item's events up to its `output_item.done`.
                let mut j = k + 1;
                while j < seen.len()
                    && !matches!(
                        seen[j].event,
                        Event::Done { .. }
                            | Event::Added { .. }
                            | Event::Completed { .. }
                            | Event::Failed { .. }
                            | Event::Incomplete { .. }
                    )
                {
                    j += 1;
                }
                let inner = k + 1..j;
                let done = match seen.get(j).map(|s| &s.event) {
                    Some(Event::Done { item }) => Some(item),
                    _ => None,
                };
                let Some(done) = done else {
                    // The stream ends inside this item: a partial message, or nothing we make.
                    let one_delta = inner.len() == 1 && j == seen.len();
                    return match (item, seen.get(k + 1).map(|s| &s.event)) {
                        (Item::Message { .. }, Some(Event::TextDelta { delta }))
                            if one_delta && !paused(k + 1) =>
                        {
                            steps.push(json!({"kind": "message_partial", "text": delta}));
                            Some(steps)
                        }
                        _ => None,
                    };
                };
                let step = match done {
                    Item::Message { .. } => {
                        message_step(done, seen, inner.clone(), j, &paused, &gap)?
                    }
                    // Only a message says when its parts came.
                    _ if inner.clone().chain([j]).any(&paused) => return None,
                    _ => item_step(done, seen, inner.clone())?,
                };
                steps.push(step);
                k = j + 1;
            }
            Event::Completed { response } if k + 1 == seen.len() => {
                if response.end_turn.is_some() {
                    return None;
                }
                let u = response.usage?;
                let mut step = json!({"kind": "usage"});
                for (key, v) in [
                    ("input", u.input_tokens),
                    ("cached", u.cached()),
                    ("output", u.output_tokens),
                    ("reasoning", u.reasoning()),
                ] {
                    if v > 0 {
                        step[key] = json!(v);
                    }
                }
                usage = Some(step);
                ended = true;
                k += 1;
            }
            Event::Failed { response } if k + 1 == seen.len() => {
                let err = response.error.as_ref()?;
                steps.push(json!({"kind": "fail", "code": err.code, "message": err.message}));
                hold_open(ex, seen[k].t, &mut steps);
                return Some(steps);
            }
            _ => return None,
        }
    }
    let last = seen.last().map_or(base, |s| s.t);
    if !ended {
        // The stream dropped between items.
        hold_open(ex, last, &mut steps);
        steps.push(json!({"kind": "error_note"}));
        return Some(steps);
    }
    // A response's usage is reported when it completes; before a step that ends the response
    // (so the step list splits into the same responses).
    if let Some(u) = usage.filter(|u| u.as_object().is_some_and(|o| o.len() > 1)) {
        let at = if steps
            .last()
            .is_some_and(|s| Step::parse(s).is_ok_and(|s| s.ends_response()))
        {
            steps.len() - 1
        } else {
            steps.len()
        };
        steps.insert(at, u);
    }
    hold_open(ex, last, &mut steps);
    Some(steps)
}

/// A message: its text (the done item's), its deltas (the scripted split when they are one,
/// else as they came, with the pauses among them), its phase.
fn message_step(
    done: &Item,
    seen: &[Seen],
    inner: std::ops::Range<usize>,
    j: usize,
    paused: &dyn Fn(usize) -> bool,
    gap: &dyn Fn(usize) -> f64,
) -> Option<Value> {
    let Item::Message { content, phase, .. } = done else {
        return None;
    };
    let text = Item::message_text(content);
    let mut deltas: Vec<Value> = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    let mut pauses = false;
    for k in inner.chain([j]) {
        if paused(k) {
            pauses = true;
            deltas.push(json!({"sleep": (gap(k) * 100.0).round() / 100.0}));
        }
        match &seen[k].event {
            Event::TextDelta { delta } => {
                texts.push(delta);
                deltas.push(json!(delta));
            }
            Event::Done { .. } => {}
            _ => return None,
        }
    }
    let mut step = json!({"kind": "message", "text": text});
    let chunks = texts.len().max(1);
    if !pauses && script::split(&text, chunks) == texts {
        step["chunks"] = json!(chunks);
    } else {
        step["deltas"] = Value::Array(deltas);
    }
    if let Some(p) = phase {
        step["phase"] = json!(p);
    }
    Some(step)
}

/// The step for one completed output item other than a message (its events between added
/// and done: `inner`).
fn item_step(item: &Item, seen: &[Seen], inner: std::ops::Range<usize>) -> Option<Value> {
    match item {
        Item::Reasoning {
            summary, content, ..
        } => {
            let summary: Vec<String> = summary.iter().map(|s| s.text.clone()).collect();
            let content: Vec<String> = content.iter().flatten().map(|s| s.text.clone()).collect();
            // The parts' deltas as they came (kept when they are not the scripted split).
            let mut s_deltas: Vec<Vec<String>> = vec![Vec::new(); summary.len()];
            let mut c_deltas: Vec<Vec<String>> = vec![Vec::new(); content.len()];
            for k in inner {
                match &seen[k].event {
                    Event::SummaryPart { .. } => {}
                    Event::SummaryDelta {
                        delta,
                        summary_index,
                    } => s_deltas
                        .get_mut(usize::try_from(*summary_index).ok()?)?
                        .push(delta.clone()),
                    Event::ReasoningDelta {
                        delta,
                        content_index,
                    } => c_deltas
                        .get_mut(usize::try_from(*content_index).ok()?)?
                        .push(delta.clone()),
                    _ => return None,
                }
            }
            let mut step = json!({"kind": "reasoning", "summary": summary});
            if !content.is_empty() {
                step["content"] = json!(content);
            }
            let halves = |r: &Value| {
                let Ok(Step::Reasoning(r)) = Step::parse(r) else {
                    return false;
                };
                summary
                    .iter()
                    .enumerate()
                    .all(|(k, p)| script::summary_deltas(&r, k, p) == s_deltas[k])
            };
            if !halves(&step) {
                step["summary_deltas"] = json!(s_deltas);
            }
            if c_deltas
                .iter()
                .zip(&content)
                .any(|(d, c)| *d != [c.clone()])
            {
                step["content_deltas"] = json!(c_deltas);
            }
            Some(step)
        }
        Item::FunctionCall {
            name, arguments, ..
        } => {
            // Argument deltas are not read by codex; anything else inside is not a call's.
            if !inner.is_empty() {
                return None;
            }
            let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
            let generic = json!({"kind": "tool_call", "tool": name, "arguments": arguments});
            let specific = match name.as_str() {
                "exec_command" => {
                    let mut s = json!({"kind": "command", "command": args["cmd"]});
                    if let Some(w) = args.get("workdir") {
                        s["cwd"] = w.clone();
                    }
                    let escalated = args["sandbox_permissions"] == "require_escalated";
                    s["approval"] = json!(escalated);
                    if let Some(r) = args.get("justification") {
                        s["reason"] = r.clone();
                    }
                    Some(s)
                }
                "request_user_input" => Some(json!({"kind": "user_input",
                                                     "questions": args["questions"]})),
                "update_goal" => Some(json!({"kind": "goal", "status": args["status"]})),
                "request_permissions" => {
                    let mut s = json!({"kind": "permissions",
                                       "permissions": args["permissions"]});
                    if let Some(r) = args.get("reason") {
                        s["reason"] = r.clone();
                    }
                    Some(s)
                }
                _ => None,
            };
            // The specific step only when it renders the same call; else the call as it was.
            let renders = |s: &Value| {
                render_view(0, std::slice::from_ref(s)).iter().any(|e| {
                    matches!(e, Event::Done { item: Item::FunctionCall { name: n, arguments: a, .. } }
                             if n == name && a == arguments)
                })
            };
            Some(specific.filter(renders).unwrap_or(generic))
        }
        Item::CustomToolCall { name, input, .. } if name == "apply_patch" && inner.is_empty() => {
            Some(json!({"kind": "file_change", "patch": input}))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::passthrough::Event as Recorded;

    fn exchange(events: Vec<(f64, Value)>) -> Exchange {
        Exchange {
            method: "POST".into(),
            path: "/v1/responses".into(),
            status: 200,
            events: events
                .into_iter()
                .map(|(t, data)| Recorded { t, data })
                .collect(),
            end: "complete".into(),
            t: 1.0,
            t_end: 1.0,
            ..Exchange::default()
        }
    }

    fn exchange_of(n: u64, steps: &[Value]) -> Exchange {
        let events = match script::reply(n, &typed(steps)) {
            Reply::Stream(out) => out
                .iter()
                .filter_map(Out::event)
                .map(|e| (1.0, e.clone()))
                .collect(),
            Reply::Http { .. } => Vec::new(),
        };
        exchange(events)
    }

    fn says_the_same(ex: &Exchange, n: u64, steps: &[Value]) -> bool {
        let seen = view(ex);
        same_view(
            &render_view(n, steps),
            &seen.iter().map(|s| &s.event).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn every_step_kind_the_model_plays_comes_back() {
        let cases = [
            vec![json!({"kind": "message", "text": "Hello there", "chunks": 2})],
            vec![json!({"kind": "message", "text": "x", "phase": "final_answer"})],
            vec![
                json!({"kind": "reasoning", "summary": ["a b", "cd"], "content": "deep"}),
                json!({"kind": "usage", "input": 10, "cached": 2, "output": 5, "reasoning": 1}),
                json!({"kind": "command", "command": "echo hi", "reason": "why"}),
            ],
            vec![json!({"kind": "command", "command": "ls", "approval": false, "cwd": "/w"})],
            vec![json!({"kind": "file_change", "path": "a.txt", "content": "hi\n"})],
            vec![json!({"kind": "tool_call", "tool": "lookup", "arguments": {"q": 1}})],
            vec![json!({"kind": "user_input"})],
            vec![json!({"kind": "permissions", "reason": "net"})],
            vec![json!({"kind": "goal", "status": "complete"})],
            vec![json!({"kind": "fail", "code": "rate_limit_exceeded", "message": "slow"})],
            vec![json!({"kind": "message_partial", "text": "half"})],
            vec![
                json!({"kind": "message", "text": "a"}),
                json!({"kind": "error_note"}),
            ],
        ];
        for steps in cases {
            let ex = exchange_of(3, &steps);
            let (got, raw) = response_steps(&ex, 7);
            assert!(!raw, "{steps:?} came back raw: {got:?}");
            assert!(says_the_same(&ex, 7, &got), "{steps:?} → {got:?}");
        }
    }

    /// A stream as the Responses API sends it (every event numbered; a message's parts and
    /// `.done` events; reasoning in many deltas) reads as the steps codex would be told the
    /// same by, pauses included: one inside the message, one before it.
    #[test]
    fn a_real_stream_reads_as_steps_with_its_pauses() {
        let mut seq = 0;
        let mut ev = |t: f64, mut e: Value| {
            e["sequence_number"] = json!(seq);
            seq += 1;
            (t, e)
        };
        let msg = json!({"id": "msg_a", "type": "message", "role": "assistant",
                         "status": "in_progress", "content": []});
        let part = json!({"type": "output_text", "text": "Hello, world", "annotations": []});
        let events = vec![
            ev(
                1.0,
                json!({"type": "response.created", "response": {"id": "r"}}),
            ),
            ev(
                1.0,
                json!({"type": "response.in_progress", "response": {"id": "r"}}),
            ),
            ev(
                1.0,
                json!({"type": "response.output_item.added", "output_index": 0,
                           "item": {"id": "rs_a", "type": "reasoning", "summary": []}}),
            ),
            ev(
                1.0,
                json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_a",
                           "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            ),
            ev(
                1.0,
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_a",
                           "summary_index": 0, "delta": "Th"}),
            ),
            ev(
                1.0,
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_a",
                           "summary_index": 0, "delta": "in"}),
            ),
            ev(
                1.0,
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_a",
                           "summary_index": 0, "delta": "king"}),
            ),
            ev(
                1.0,
                json!({"type": "response.reasoning_summary_text.done", "item_id": "rs_a",
                           "summary_index": 0, "text": "Thinking"}),
            ),
            ev(
                1.0,
                json!({"type": "response.output_item.done", "output_index": 0,
                           "item": {"id": "rs_a", "type": "reasoning", "encrypted_content": "x",
                                    "summary": [{"type": "summary_text", "text": "Thinking"}]}}),
            ),
            ev(
                2.0,
                json!({"type": "response.output_item.added", "output_index": 1,
                           "item": msg}),
            ),
            ev(
                2.0,
                json!({"type": "response.content_part.added", "item_id": "msg_a",
                           "output_index": 1, "content_index": 0, "part": part}),
            ),
            ev(
                2.0,
                json!({"type": "response.output_text.delta", "item_id": "msg_a",
                           "output_index": 1, "content_index": 0, "delta": "Hello",
                           "logprobs": []}),
            ),
            ev(
                3.5,
                json!({"type": "response.output_text.delta", "item_id": "msg_a",
                           "output_index": 1, "content_index": 0, "delta": ", world",
                           "logprobs": []}),
            ),
            ev(
                3.5,
                json!({"type": "response.output_text.done", "item_id": "msg_a",
                           "text": "Hello, world"}),
            ),
            ev(
                3.5,
                json!({"type": "response.output_item.done", "output_index": 1,
                           "item": {"id": "msg_a", "type": "message", "role": "assistant",
                                    "status": "completed", "content": [part]}}),
            ),
            ev(
                3.5,
                json!({"type": "response.completed", "response": {"id": "r", "usage": {
                "input_tokens": 9, "output_tokens": 3, "total_tokens": 12}}}),
            ),
        ];
        let ex = exchange(events);
        let (steps, raw) = response_steps(&ex, 4);
        assert!(!raw, "{steps:?}");
        assert_eq!(
            steps,
            vec![
                json!({"kind": "reasoning", "summary": ["Thinking"],
                       "summary_deltas": [["Th", "in", "king"]]}),
                json!({"kind": "sleep", "seconds": 1.0}),
                json!({"kind": "message", "text": "Hello, world",
                       "deltas": ["Hello", {"sleep": 1.5}, ", world"]}),
                json!({"kind": "usage", "input": 9, "output": 3}),
            ]
        );
        assert!(says_the_same(&ex, 4, &steps));
    }

    #[test]
    fn foreign_events_stay_raw_and_http_errors_keep_their_headers() {
        // An item kind the steps lack: raw, every event as recorded, its own start kept.
        let ex = exchange(vec![
            (
                1.0,
                json!({"type": "response.created", "response": {"id": "r"}}),
            ),
            (
                1.0,
                json!({"type": "response.output_item.done",
                         "item": {"type": "web_search_call", "id": "ws",
                                  "action": {"type": "search", "query": "q"}}}),
            ),
            (
                2.0,
                json!({"type": "response.completed", "response": {"id": "r"}}),
            ),
        ]);
        let (steps, raw) = response_steps(&ex, 0);
        assert!(raw);
        assert_eq!(steps[0]["event"]["type"], "response.created");
        assert_eq!(steps[2], json!({"kind": "sleep", "seconds": 1.0}));
        assert_eq!(
            steps.len(),
            4,
            "no error_note after the stream's own end: {steps:?}"
        );
        // A stream that dropped keeps dropping.
        let mut cut = exchange_of(0, &[json!({"kind": "message", "text": "hi"})]);
        cut.events.pop();
        cut.events.push(Recorded {
            t: 1.0,
            data: json!({"type": "response.output_item.done",
                         "item": {"type": "image_generation_call", "id": "ig"}}),
        });
        let (steps, raw) = response_steps(&cut, 0);
        assert!(raw);
        assert_eq!(steps.last(), Some(&json!({"kind": "error_note"})));
        let err = Exchange {
            status: 429,
            text: Some("slow down".into()),
            response_headers: vec![
                ("retry-after".into(), "1".into()),
                ("date".into(), "x".into()),
            ],
            ..Exchange::default()
        };
        assert_eq!(
            response_steps(&err, 0).0,
            vec![
                json!({"kind": "http_error", "status": 429, "body": "slow down",
                        "headers": {"retry-after": "1"}})
            ]
        );
    }
}
