//! From recorded model answers back to `scenario.json` steps. Each answer is read into steps,
//! then the steps are played through the scripted model's own renderer ([`script::reply`]) and
//! kept only when they give back the recorded events (ids aside: the model numbers its own).
//! An answer the steps cannot give back is kept whole as `raw` events and named; nothing is
//! dropped. Pauses in a stream (≥ [`PAUSE`]) become `sleep` steps, so a client that acted
//! during one (an interrupt, a steer) finds the replay paused at the same place.

use super::passthrough::Exchange;
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
    /// Answers kept as raw events (the scripted model replays them; the fake cannot).
    pub raw: Vec<String>,
    /// Everything else worth telling (requests not replayed, turns only the model plays).
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
        same_events(
            &render(0, &default),
            &render(0, r).iter().collect::<Vec<_>>(),
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
                "turn {}: its responses are given one by one (`responses`), which only the \
                 scripted model plays",
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
    let events: Vec<&Value> = ex.events.iter().map(|e| &e.data).collect();
    if let Some(steps) = read_steps(&events) {
        if same_events(&render(n, &steps), &events) {
            return (with_pauses(ex, steps, true), false);
        }
    }
    // Raw: every event after the model's own `response.created`, then the stream ends where
    // the recording's did (its `response.completed`, if any, is among the raw events).
    let skip = usize::from(
        events
            .first()
            .is_some_and(|e| e["type"] == "response.created"),
    );
    let mut steps: Vec<Value> = ex.events[skip..]
        .iter()
        .map(|e| json!({"kind": "raw", "event": e.data}))
        .collect();
    steps.push(json!({"kind": "error_note"}));
    (with_pauses(ex, steps, false), true)
}

/// Steps as the servers read them (one that does not read is left out).
fn typed(steps: &[Value]) -> Vec<Step> {
    steps.iter().filter_map(|s| Step::parse(s).ok()).collect()
}

/// The events `steps` make the model send (delays aside).
fn render(n: u64, steps: &[Value]) -> Vec<Value> {
    match script::reply(n, &typed(steps)) {
        Reply::Stream(out) => out
            .into_iter()
            .filter_map(|o| match o {
                Out::Event(e, _) => Some(e),
                _ => None,
            })
            .collect(),
        Reply::Http { .. } => Vec::new(),
    }
}

/// Equal once each side's ids are numbered by first appearance (the model names its items
/// after the response number; the upstream had its own).
fn same_events(a: &[Value], b: &[&Value]) -> bool {
    let (mut ma, mut mb) = (HashMap::new(), HashMap::new());
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| ids_masked(x, &mut ma) == ids_masked(y, &mut mb))
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

/// Inserts `sleep` steps where the recorded stream paused. `by_step`: the steps are the
/// translated ones (the pause goes before the step whose first event followed it); otherwise
/// one raw step per event.
fn with_pauses(ex: &Exchange, steps: Vec<Value>, by_step: bool) -> Vec<Value> {
    let times: Vec<f64> = ex.events.iter().map(|e| e.t).collect();
    // The event index each step starts at.
    let mut starts = Vec::with_capacity(steps.len());
    if by_step {
        let mut at = 1; // after response.created
        for s in &steps {
            starts.push(at);
            at += events_of(s);
        }
    } else {
        let skip = usize::from(
            ex.events
                .first()
                .is_some_and(|e| e.data["type"] == "response.created"),
        );
        starts.extend((0..steps.len()).map(|i| i + skip));
    }
    let mut out = Vec::with_capacity(steps.len());
    let mut last = times.first().copied().unwrap_or(ex.t);
    for (s, start) in steps.into_iter().zip(starts) {
        if let Some(&t) = times.get(start) {
            if t - last >= PAUSE {
                out.push(sleep(t - last));
            }
            // The step's own events: its last one is where the next gap starts.
            last = t;
        }
        let end = start + events_of(&s);
        if end > start {
            if let Some(&t) = times.get(end - 1) {
                last = t;
            }
        }
        out.push(s);
    }
    // codex went away mid-stream (an interrupt): the replay holds the stream open where the
    // recording's was cut, so the client's interrupt arrives first again.
    if ex.end == "codex closed" {
        let held = (ex.t_end - last).max(1.0);
        let at = out.len().saturating_sub(usize::from(
            out.last().is_some_and(|s| s["kind"] == "error_note"),
        ));
        out.insert(at, sleep(held));
    }
    out
}

fn sleep(secs: f64) -> Value {
    json!({"kind": "sleep", "seconds": (secs * 100.0).round() / 100.0})
}

/// How many events a translated step sends (for placing pauses).
fn events_of(step: &Value) -> usize {
    match script::reply(0, &typed(std::slice::from_ref(step))) {
        Reply::Stream(out) => out
            .iter()
            .filter(|o| matches!(o, Out::Event(..)))
            .count()
            // reply's own response.created, and its response.completed unless the step ends
            // the stream without one.
            .saturating_sub(1)
            .saturating_sub(usize::from(!matches!(
                step["kind"].as_str(),
                Some("fail" | "message_partial" | "error_note")
            ))),
        Reply::Http { .. } => 0,
    }
}

/// Reads a stream's events as steps, or `None` when an event is not one the steps make.
fn read_steps(events: &[&Value]) -> Option<Vec<Value>> {
    let mut steps = Vec::new();
    let mut i = 0;
    let ty = |e: &Value| e["type"].as_str().unwrap_or_default().to_string();
    if events.first().map(|e| ty(e)) != Some("response.created".into()) {
        return None;
    }
    i += 1;
    let mut usage: Option<Value> = None;
    let mut ended = false;
    while i < events.len() {
        let e = events[i];
        match ty(e).as_str() {
            "response.output_item.added" => {
                let item = &e["item"];
                let id = item["id"].clone();
                // This item's events up to its `output_item.done`.
                let mut j = i + 1;
                let mut deltas = Vec::new();
                while j < events.len()
                    && events[j]["type"] != "response.output_item.done"
                    && events[j]["type"] != "response.output_item.added"
                    && events[j]["type"] != "response.completed"
                    && events[j]["type"] != "response.failed"
                {
                    if events[j]["item_id"] != id {
                        return None;
                    }
                    deltas.push(events[j]);
                    j += 1;
                }
                let done = events
                    .get(j)
                    .filter(|d| d["type"] == "response.output_item.done");
                let Some(done) = done else {
                    // The stream ends inside this item: a partial message, or nothing we make.
                    if item["type"] == "message" && deltas.len() == 1 && j == events.len() {
                        steps.push(json!({"kind": "message_partial",
                                          "text": deltas[0]["delta"]}));
                        return Some(steps);
                    }
                    return None;
                };
                steps.push(item_step(&done["item"], &deltas)?);
                i = j + 1;
            }
            "response.completed" if i + 1 == events.len() => {
                let u = &e["response"]["usage"];
                let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
                let mut step = json!({"kind": "usage"});
                for (k, p) in [
                    ("input", "/input_tokens"),
                    ("cached", "/input_tokens_details/cached_tokens"),
                    ("output", "/output_tokens"),
                    ("reasoning", "/output_tokens_details/reasoning_tokens"),
                ] {
                    if n(p) > 0 {
                        step[k] = json!(n(p));
                    }
                }
                usage = Some(step);
                ended = true;
                i += 1;
            }
            "response.failed" if i + 1 == events.len() => {
                let err = &e["response"]["error"];
                steps.push(json!({"kind": "fail", "code": err["code"], "message": err["message"]}));
                return Some(steps);
            }
            _ => return None,
        }
    }
    if !ended {
        // The stream dropped between items.
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
    Some(steps)
}

/// The step for one completed output item (`deltas`: the events between added and done).
fn item_step(item: &Value, deltas: &[&Value]) -> Option<Value> {
    match item["type"].as_str()? {
        "message" => {
            let text = item["content"][0]["text"].as_str().unwrap_or_default();
            let got: Vec<&str> = deltas
                .iter()
                .map(|d| {
                    (d["type"] == "response.output_text.delta")
                        .then(|| d["delta"].as_str())
                        .flatten()
                })
                .collect::<Option<_>>()?;
            let mut step = json!({"kind": "message", "text": text});
            let k = got.len().max(1);
            if script::split(text, k) == got {
                step["chunks"] = json!(k);
            } else {
                step["deltas"] = json!(got);
            }
            if let Some(p) = item.get("phase").filter(|p| !p.is_null()) {
                step["phase"] = p.clone();
            }
            Some(step)
        }
        "reasoning" => {
            let summary: Vec<Value> = item["summary"]
                .as_array()?
                .iter()
                .map(|s| s["text"].clone())
                .collect();
            let content: Vec<Value> = item["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s["text"].clone())
                .collect();
            let mut step = json!({"kind": "reasoning", "summary": summary});
            if !content.is_empty() {
                step["content"] = json!(content);
            }
            Some(step)
        }
        "function_call" => {
            if !deltas.is_empty() {
                return None;
            }
            let name = item["name"].as_str()?;
            let raw_args = item["arguments"].as_str()?;
            let args: Value = serde_json::from_str(raw_args).unwrap_or(Value::Null);
            let generic = json!({"kind": "tool_call", "tool": name, "arguments": raw_args});
            let specific = match name {
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
                let ev = render(0, std::slice::from_ref(s));
                ev.iter()
                    .find(|e| e["type"] == "response.output_item.done")
                    .is_some_and(|d| {
                        d["item"]["arguments"] == item["arguments"]
                            && d["item"]["name"] == item["name"]
                    })
            };
            Some(specific.filter(renders).unwrap_or(generic))
        }
        "custom_tool_call" if item["name"] == "apply_patch" && deltas.is_empty() => {
            Some(json!({"kind": "file_change", "patch": item["input"]}))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::passthrough::Event;

    fn exchange_of(n: u64, steps: &[Value]) -> Exchange {
        let events = match script::reply(n, &typed(steps)) {
            Reply::Stream(out) => out
                .into_iter()
                .filter_map(|o| match o {
                    Out::Event(e, _) => Some(Event { t: 1.0, data: e }),
                    _ => None,
                })
                .collect(),
            Reply::Http { .. } => Vec::new(),
        };
        Exchange {
            method: "POST".into(),
            path: "/v1/responses".into(),
            status: 200,
            events,
            end: "complete".into(),
            t: 1.0,
            t_end: 1.0,
            ..Exchange::default()
        }
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
            let events: Vec<&Value> = ex.events.iter().map(|e| &e.data).collect();
            assert!(
                same_events(&render(7, &got), &events),
                "{steps:?} → {got:?}"
            );
        }
    }

    #[test]
    fn foreign_events_stay_raw_and_http_errors_keep_their_headers() {
        let mut ex = exchange_of(0, &[json!({"kind": "message", "text": "hi"})]);
        ex.events.insert(
            1,
            Event {
                t: 1.0,
                data: json!({"type": "response.in_progress"}),
            },
        );
        let (steps, raw) = response_steps(&ex, 0);
        assert!(raw);
        assert_eq!(steps.last(), Some(&json!({"kind": "error_note"})));
        assert_eq!(steps[0]["event"]["type"], "response.in_progress");
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

    #[test]
    fn deltas_of_another_split_are_kept_and_pauses_become_sleeps() {
        let mut ex = exchange_of(
            0,
            &[json!({"kind": "message", "text": "abcdef", "chunks": 3})],
        );
        for e in &mut ex.events {
            if e.data["type"] == "response.output_text.delta" {
                e.data["delta"] = json!("");
            }
        }
        let deltas: Vec<usize> = ex
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.data["type"] == "response.output_text.delta")
            .map(|(i, _)| i)
            .collect();
        ex.events[deltas[0]].data["delta"] = json!("a");
        ex.events[deltas[1]].data["delta"] = json!("bcde");
        ex.events[deltas[2]].data["delta"] = json!("f");
        // A two-second pause before the message's first event.
        for e in &mut ex.events[1..] {
            e.t = 3.0;
        }
        let (steps, raw) = response_steps(&ex, 0);
        assert!(!raw);
        assert_eq!(steps[0], json!({"kind": "sleep", "seconds": 2.0}));
        assert_eq!(steps[1]["deltas"], json!(["a", "bcde", "f"]));
    }
}
