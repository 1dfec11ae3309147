//! From `scenario.json` steps to the Responses API events that make the real server show them:
//! the one renderer. The scripted model streams its output to the real server; the fake's turn
//! engine consumes the same output as codex consumes a stream, so both servers are fed the
//! same events. Pure: no I/O, so the translation is testable without a socket.
//!
//! Steps are the typed [`Step`]s (`step.rs`, the seed's defaults). Steps only the fake can play
//! are kept in the output as [`Out::Local`] at their place; the model skips them.

use super::step::{Delta, FileChange, Message, Reasoning, Scenario, Step};
use serde_json::{json, Value};

/// What one POST gets.
#[derive(Debug, PartialEq)]
pub enum Reply {
    /// A plain HTTP error (no stream), with the step's headers.
    Http {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// An SSE stream; it lacks `response.completed` when the step list drops or fails it.
    Stream(Vec<Out>),
}

#[derive(Debug, PartialEq)]
pub enum Out {
    /// An event, and the index of the step it renders (None: the response's own
    /// `response.created` / `response.completed`).
    Event(Value, Option<usize>),
    /// A pause in the stream, in milliseconds.
    Delay(u64),
    /// A step only the fake plays (index into the steps), where it stood.
    Local(usize),
}

impl Out {
    pub fn event(&self) -> Option<&Value> {
        match self {
            Out::Event(e, _) => Some(e),
            _ => None,
        }
    }
}

/// A `message` step's deltas, pauses (ms) among them: `deltas` as given (a recording's own
/// split), else `chunks` pieces of `text` (default 3). One definition for both servers.
pub fn message_deltas(m: &Message) -> Vec<Delta> {
    if let Some(d) = &m.deltas {
        return d.clone();
    }
    split(m.text.as_deref().unwrap_or(""), m.chunks as usize)
        .into_iter()
        .map(Delta::Text)
        .collect()
}

/// A message's whole text: `text`, else its deltas joined.
pub fn message_text(m: &Message) -> String {
    m.text.clone().unwrap_or_else(|| {
        message_deltas(m)
            .iter()
            .filter_map(|d| match d {
                Delta::Text(t) => Some(t.as_str()),
                Delta::Pause { .. } => None,
            })
            .collect()
    })
}

/// The deltas of summary part `k`: as the step gives them, else two halves of the part.
pub fn summary_deltas(r: &Reasoning, k: usize, part: &str) -> Vec<String> {
    if let Some(d) = r.summary_deltas.as_ref().and_then(|d| d.get(k)) {
        return d.clone();
    }
    let chars: Vec<char> = part.chars().collect();
    let (a, b) = chars.split_at(chars.len() / 2);
    [a, b]
        .into_iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.iter().collect())
        .collect()
}

/// `chunks` pieces of at most ceil(len/chunks) chars, the fake's split, so both servers
/// stream the same deltas.
pub fn split(text: &str, chunks: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(chunks.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The rationale of every scripted review (it shows in `guardianWarning` and the review item).
pub const GUARDIAN_RATIONALE: &str = "scripted review";

/// The approval reviewer's answer: a message carrying the assessment codex parses, with the
/// scenario's verdict (`guardian`: `"allow"`, the default, or `"deny"`).
pub fn guardian_verdict(scenario: &Scenario) -> Step {
    let outcome = if scenario.guardian_allows() {
        "allow"
    } else {
        "deny"
    };
    let assessment = json!({"risk_level": "low", "user_authorization": "high",
                            "outcome": outcome, "rationale": GUARDIAN_RATIONALE});
    Step::Message(Message {
        text: Some(assessment.to_string()),
        chunks: 1,
        deltas: None,
        phase: None,
    })
}

fn secs_ms(secs: f64) -> u64 {
    (secs.clamp(0.0, 86_400.0) * 1000.0) as u64
}

/// The `exec_command` arguments of a `command` step: the seed's default is to ask (escalation
/// is what makes codex ask under `on-request`; the justification becomes the request's
/// `reason`).
pub fn exec_args(c: &super::step::Command) -> Value {
    let mut args = json!({"cmd": c.command});
    if let Some(cwd) = &c.cwd {
        args["workdir"] = json!(cwd);
    }
    if c.approval {
        args["sandbox_permissions"] = json!("require_escalated");
        if let Some(r) = &c.reason {
            args["justification"] = json!(r);
        }
    }
    args
}

/// The questions of a `user_input` step (a default one when it gives none).
pub fn questions(q: &Option<Value>) -> Value {
    q.clone().unwrap_or_else(|| {
        json!([{"id": "q1", "header": "Question", "question": "Proceed?",
                "options": [{"label": "Yes", "description": "Go ahead"},
                            {"label": "No", "description": "Stop"}]}])
    })
}

/// The permissions a `permissions` step asks for (network by default).
pub fn permissions(p: &Option<Value>) -> Value {
    p.clone()
        .unwrap_or_else(|| json!({"network": {"enabled": true}}))
}

/// The reply to response number `n` (ids `resp_<n>`, `<prefix>_<n>_<step>`).
pub fn reply(n: u64, steps: &[Step]) -> Reply {
    if let Some(Step::HttpError(h)) = steps.iter().find(|s| matches!(s, Step::HttpError(_))) {
        return Reply::Http {
            status: h.status(),
            body: h.body.clone(),
            headers: h.header_list(),
        };
    }
    let mut w = Writer {
        out: Vec::new(),
        index: 0,
        step: None,
    };
    let resp_id = format!("resp_{n}");
    // A recorded stream (`raw` events) carries its own start and end: the model adds neither.
    let raw_type = |s: &Step| match s {
        Step::Raw { event } => event["type"].as_str().map(str::to_string),
        _ => None,
    };
    let model_plays: Vec<&Step> = steps.iter().filter(|s| s.model_plays()).collect();
    if model_plays
        .iter()
        .find(|s| !matches!(s, Step::Sleep { .. } | Step::Delay { .. }))
        .and_then(|s| raw_type(s))
        .as_deref()
        != Some("response.created")
    {
        w.event(json!({"type": "response.created", "response": {"id": resp_id}}));
    }
    let mut usage = usage(&super::step::Usage::default());
    let mut ended = false;
    for (i, step) in steps.iter().enumerate() {
        let id = format!("{n}_{i}");
        w.step = Some(i);
        match step {
            Step::Message(m) => w.message(&id, m),
            Step::Reasoning(r) => w.reasoning(&id, r),
            Step::Command(c) => w.function_call(&id, "exec_command", &exec_args(c).to_string()),
            Step::FileChange(f) => w.custom_call(&id, "apply_patch", &patch(f)),
            Step::ToolCall(t) => {
                let args = match &t.arguments {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) if !v.is_null() => v.to_string(),
                    _ => "{}".into(),
                };
                w.function_call(&id, &t.tool, &args);
            }
            Step::UserInput(u) => {
                let args = json!({"questions": questions(&u.questions)}).to_string();
                w.function_call(&id, "request_user_input", &args);
            }
            // The model reports the thread goal's progress (`update_goal`; codex offers the tool
            // while a goal is set).
            Step::Goal { status } => {
                let args = json!({ "status": status }).to_string();
                w.function_call(&id, "update_goal", &args);
            }
            Step::Permissions(p) => {
                let mut args = json!({ "permissions": permissions(&p.permissions) });
                if let Some(r) = &p.reason {
                    args["reason"] = json!(r);
                }
                w.function_call(&id, "request_permissions", &args.to_string());
            }
            Step::Usage(u) => usage = self::usage(u),
            Step::Fail { message, code } => {
                w.event(
                    json!({"type": "response.failed", "response": {"id": resp_id,
                    "error": {"code": code, "message": message}}}),
                );
                return Reply::Stream(w.out);
            }
            Step::MessagePartial { text } => {
                let mid = format!("msg_{id}");
                w.added(json!({"type": "message", "role": "assistant", "id": mid,
                               "status": "in_progress", "content": []}));
                w.event(json!({"type": "response.output_text.delta", "item_id": mid,
                    "output_index": w.index, "content_index": 0, "delta": text}));
                // The stream ends here, before response.completed.
                return Reply::Stream(w.out);
            }
            // A dropped stream: codex retries it only if the provider's stream_max_retries
            // allows (the notice's text and willRetry are codex's own).
            Step::ErrorNote { .. } => return Reply::Stream(w.out),
            Step::Delay { ms } => w.out.push(Out::Delay(*ms)),
            Step::Sleep { seconds } => w.out.push(Out::Delay(secs_ms(*seconds))),
            Step::Raw { event } => {
                w.event(event.clone());
                if matches!(
                    event["type"].as_str(),
                    Some("response.completed" | "response.failed" | "response.incomplete")
                ) {
                    ended = true;
                }
            }
            Step::HttpError(_) => {}
            _ => w.out.push(Out::Local(i)),
        }
    }
    w.step = None;
    if !ended {
        w.event(json!({"type": "response.completed", "response": {"id": resp_id, "usage": usage}}));
    }
    Reply::Stream(w.out)
}

fn usage(u: &super::step::Usage) -> Value {
    json!({"input_tokens": u.input,
           "input_tokens_details": {"cached_tokens": u.cached},
           "output_tokens": u.output,
           "output_tokens_details": {"reasoning_tokens": u.reasoning},
           "total_tokens": u.input + u.output})
}

/// The `apply_patch` input for a `file_change` step: `patch` verbatim, else built from
/// `path` (default `README.md`, relative to the turn's cwd), `change` (add | delete | update)
/// and `content` or `diff`.
pub fn patch(f: &FileChange) -> String {
    if let Some(p) = &f.patch {
        return p.clone();
    }
    let path = &f.path;
    let diff = f.diff.as_deref();
    let mut p = String::from("*** Begin Patch\n");
    match f.change.as_str() {
        "delete" => p.push_str(&format!("*** Delete File: {path}\n")),
        "update" => {
            p.push_str(&format!("*** Update File: {path}\n"));
            // A unified diff's hunks are apply_patch's change lines; its file headers are not.
            let body: Vec<&str> = match (diff, f.content.as_deref()) {
                (Some(d), _) => d
                    .lines()
                    .filter(|l| {
                        !(l.starts_with("--- ")
                            || l.starts_with("+++ ")
                            || l.starts_with("diff ")
                            || l.starts_with("index "))
                    })
                    .collect(),
                (None, Some(c)) => c.lines().collect(),
                (None, None) => vec!["hello"],
            };
            let plus = diff.is_none();
            if !body.first().is_some_and(|l| l.starts_with("@@")) {
                p.push_str("@@\n");
            }
            for l in body {
                if plus {
                    p.push('+');
                }
                p.push_str(l);
                p.push('\n');
            }
        }
        _ => {
            p.push_str(&format!("*** Add File: {path}\n"));
            // The fake's `diff` for an added file is its lines with `+`.
            let content = match (f.content.as_deref(), diff) {
                (Some(c), _) => c.to_string(),
                (None, Some(d)) => d
                    .lines()
                    .map(|l| l.strip_prefix('+').unwrap_or(l))
                    .collect::<Vec<_>>()
                    .join("\n"),
                (None, None) => "hello".into(),
            };
            let lines: Vec<&str> = content.lines().collect();
            for l in if lines.is_empty() { vec![""] } else { lines } {
                p.push('+');
                p.push_str(l);
                p.push('\n');
            }
        }
    }
    p.push_str("*** End Patch");
    p
}

struct Writer {
    out: Vec<Out>,
    /// The next item's `output_index`.
    index: usize,
    /// The step being rendered.
    step: Option<usize>,
}

impl Writer {
    fn event(&mut self, e: Value) {
        self.out.push(Out::Event(e, self.step));
    }

    fn added(&mut self, item: Value) {
        let i = self.index;
        self.event(json!({"type": "response.output_item.added", "output_index": i, "item": item}));
    }

    fn done(&mut self, item: Value) {
        let i = self.index;
        self.event(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
        self.index += 1;
    }

    fn message(&mut self, id: &str, m: &Message) {
        let id = format!("msg_{id}");
        let text = message_text(m);
        let mut item = json!({"type": "message", "role": "assistant", "id": id,
                              "status": "in_progress", "content": []});
        if let Some(p) = &m.phase {
            item["phase"] = json!(p);
        }
        self.added(item.clone());
        for d in message_deltas(m) {
            match d {
                Delta::Text(d) => {
                    let i = self.index;
                    self.event(json!({"type": "response.output_text.delta", "item_id": id,
                                      "output_index": i, "content_index": 0, "delta": d}));
                }
                Delta::Pause { sleep } => self.out.push(Out::Delay(secs_ms(sleep))),
            }
        }
        item["status"] = json!("completed");
        item["content"] = json!([{"type": "output_text", "text": text, "annotations": []}]);
        self.done(item);
    }

    fn reasoning(&mut self, id: &str, r: &Reasoning) {
        let id = format!("rs_{id}");
        let (summary, content) = (r.summary.list(), r.content.list());
        self.added(json!({"type": "reasoning", "id": id, "summary": []}));
        let i = self.index;
        for (k, part) in summary.iter().enumerate() {
            self.event(
                json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                "output_index": i, "summary_index": k,
                "part": {"type": "summary_text", "text": ""}}),
            );
            for delta in summary_deltas(r, k, part) {
                self.event(json!({"type": "response.reasoning_summary_text.delta",
                    "item_id": id, "output_index": i, "summary_index": k, "delta": delta}));
            }
        }
        for (k, part) in content.iter().enumerate() {
            let deltas = r
                .content_deltas
                .as_ref()
                .and_then(|d| d.get(k).cloned())
                .unwrap_or_else(|| vec![part.clone()]);
            for delta in deltas {
                self.event(
                    json!({"type": "response.reasoning_text.delta", "item_id": id,
                              "output_index": i, "content_index": k, "delta": delta}),
                );
            }
        }
        let mut item = json!({"type": "reasoning", "id": id,
            "summary": summary.iter().map(|t| json!({"type": "summary_text", "text": t}))
                .collect::<Vec<_>>()});
        if !content.is_empty() {
            item["content"] = content
                .iter()
                .map(|t| json!({"type": "reasoning_text", "text": t}))
                .collect();
        }
        self.done(item);
    }

    /// A function call: item `fc_<id>`, call id `call_<id>` (the server's item id).
    fn function_call(&mut self, id: &str, name: &str, args: &str) {
        let item = |status: &str, args: &str| {
            json!({"type": "function_call", "id": format!("fc_{id}"), "status": status,
                   "call_id": format!("call_{id}"), "name": name, "arguments": args})
        };
        self.added(item("in_progress", ""));
        self.done(item("completed", args));
    }

    /// A freeform (custom) tool call: item `ctc_<id>`, call id `call_<id>`.
    fn custom_call(&mut self, id: &str, name: &str, input: &str) {
        let item = |status: &str, input: &str| {
            json!({"type": "custom_tool_call", "id": format!("ctc_{id}"), "status": status,
                   "call_id": format!("call_{id}"), "name": name, "input": input})
        };
        self.added(item("in_progress", ""));
        self.done(item("completed", input));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::step::Script;

    fn steps(v: Value) -> Vec<Step> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| Step::parse(s).unwrap())
            .collect()
    }

    fn events(r: &Reply) -> Vec<&Value> {
        match r {
            Reply::Stream(out) => out.iter().filter_map(Out::event).collect(),
            Reply::Http { .. } => Vec::new(),
        }
    }

    #[test]
    fn steps_split_after_stream_ending_steps_and_fake_only_kinds_stay_local() {
        let turn = Script::from_value(&json!({"steps": [
            {"kind": "reasoning", "summary": "s"},
            {"kind": "command", "command": "echo hi"},
            {"kind": "notify", "method": "x"},
            {"kind": "message", "text": "done"},
        ]}));
        let rs = turn.responses();
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0].len(), 2);
        let second: Vec<Step> = rs[1].iter().map(|s| s.clone().unwrap()).collect();
        let Reply::Stream(out) = reply(1, &second) else {
            panic!()
        };
        assert_eq!(out[1], Out::Local(0), "the notify, where it stood");
        assert_eq!(Script::default().responses().len(), 1);
    }

    #[test]
    fn command_defaults_to_approval_and_maps_seed_fields() {
        let r = reply(
            2,
            &steps(json!([{"kind": "command", "command": "ls", "reason": "why", "cwd": "/w"}])),
        );
        let ev = events(&r);
        let done = ev
            .iter()
            .find(|e| e["type"] == "response.output_item.done")
            .expect("item done");
        assert_eq!(done["item"]["call_id"], "call_2_0");
        let args: Value =
            serde_json::from_str(done["item"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            args,
            json!({"cmd": "ls", "workdir": "/w", "sandbox_permissions": "require_escalated",
                   "justification": "why"})
        );
        assert_eq!(ev.last().unwrap()["type"], "response.completed");
    }

    #[test]
    fn message_deltas_pauses_and_drops() {
        let r = reply(0, &steps(json!([{"kind": "message", "text": "abcde"}])));
        let deltas: Vec<&str> = events(&r)
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        assert_eq!(deltas, ["ab", "cd", "e"]);
        // A pause inside a message, and the text the deltas make.
        let Reply::Stream(out) = reply(
            0,
            &steps(json!([{"kind": "message", "deltas": ["Wor", {"sleep": 1.5}, "k"]}])),
        ) else {
            panic!()
        };
        let at = out.iter().position(|o| *o == Out::Delay(1500)).unwrap();
        assert_eq!(out[at - 1].event().unwrap()["delta"], "Wor");
        assert_eq!(out[at + 1].event().unwrap()["delta"], "k");
        assert_eq!(
            out[at + 2].event().unwrap()["item"]["content"][0]["text"],
            "Work"
        );
        let r = reply(0, &steps(json!([{"kind": "error_note"}])));
        assert_eq!(
            events(&r).len(),
            1,
            "only response.created, then the stream drops"
        );
        assert_eq!(
            reply(
                0,
                &steps(json!([{"kind": "http_error", "status": 429, "body": "x"}]))
            ),
            Reply::Http {
                status: 429,
                body: "x".into(),
                headers: Vec::new(),
            }
        );
    }

    #[test]
    fn patches_from_seed_fields() {
        let f = |v: Value| match Step::parse(&v).unwrap() {
            Step::FileChange(f) => patch(&f),
            _ => unreachable!(),
        };
        assert_eq!(
            f(json!({"kind": "file_change", "path": "a.txt", "diff": "+hello\n"})),
            "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch"
        );
        assert_eq!(
            f(
                json!({"kind": "file_change", "path": "a.txt", "change": "update",
                     "diff": "--- a\n+++ b\n@@\n-x\n+y\n"})
            ),
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch"
        );
        assert_eq!(
            f(json!({"kind": "file_change", "path": "a.txt", "change": "delete"})),
            "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"
        );
    }
}
