//! From `scenario.json` steps to the Responses API events that make the real server show them.
//! Pure: no I/O, so the translation is testable without a socket.
//!
//! Steps are read as loose JSON with the fake's defaults (`docs/fake.md`), so one scenario
//! drives both servers unchanged. Kinds only the fake can play are skipped here.

use serde_json::{json, Value};

/// Kinds the model plays (the rest are the fake's own; see [`plays`]).
const MODEL_KINDS: &[&str] = &[
    "message",
    "reasoning",
    "command",
    "message_partial",
    "usage",
    "fail",
    "error_note",
    "file_change",
    "tool_call",
    "user_input",
    "permissions",
    "goal",
    // A pause in the stream: the model at work (the fake waits the same way).
    "sleep",
    // The provider's HTTP error (both servers play it).
    "http_error",
    // Model-only: the fake reports them as unknown.
    "delay",
    "raw",
];

/// Steps after which the response (one POST) ends: a tool call waits for its output, the
/// others end or drop the stream.
pub const ENDS_RESPONSE: &[&str] = &[
    "command",
    "file_change",
    "tool_call",
    "user_input",
    "permissions",
    "goal",
    "fail",
    "message_partial",
    "error_note",
    "http_error",
];

/// The answer to a turn with no script left (more turns, or more follow-ups, than scripted):
/// one definition for both servers, so they answer an unscripted turn alike.
pub fn default_turn() -> Value {
    json!({"steps": [
        {"kind": "message", "text": "Hello from the codex-wire fake."},
        {"kind": "usage", "input": 12, "output": 8},
    ]})
}

/// The answer to a goal's continuation with no script left: the model declares the goal
/// complete, then answers as in [`default_turn`] (one definition for both servers; without it
/// codex would run goal turns for ever).
pub fn default_goal_turn() -> Value {
    let mut t = default_turn();
    if let Some(steps) = t["steps"].as_array_mut() {
        steps.insert(0, json!({"kind": "goal", "status": "complete"}));
    }
    t
}

/// The server turns one scripted turn stands for: itself, then its `continuations` (the seed's
/// goal continuation turns, each a turn codex runs by itself while the goal is active). The
/// last continuation starts by completing the goal, which is what ends codex's continuations.
pub fn server_turns(turn: &Value) -> Vec<Value> {
    let continuations = turn["continuations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut first = turn.clone();
    if let Some(o) = first.as_object_mut() {
        o.remove("continuations");
    }
    let mut out = vec![first];
    let count = continuations.len();
    for (i, mut c) in continuations.into_iter().enumerate() {
        if i + 1 == count {
            if let Some(steps) = c["steps"].as_array_mut() {
                steps.insert(0, json!({"kind": "goal", "status": "complete"}));
            }
        }
        out.push(c);
    }
    out
}

fn kind(step: &Value) -> &str {
    step["kind"].as_str().unwrap_or_default()
}

/// Whether the model plays this step (fake-only kinds such as `crash`, `progress`, `notify` are
/// skipped: nothing in a model response can make the real server do them).
pub fn plays(step: &Value) -> bool {
    MODEL_KINDS.contains(&kind(step))
}

/// A scripted turn as model responses, one per `POST /v1/responses`: `responses` when given
/// (a list of step lists), else `steps` cut after every step that ends a response.
pub fn responses(turn: &Value) -> Vec<Vec<Value>> {
    if let Some(rs) = turn["responses"].as_array() {
        return rs
            .iter()
            .map(|r| {
                r.as_array()
                    .into_iter()
                    .flatten()
                    .filter(|s| plays(s))
                    .cloned()
                    .collect()
            })
            .collect();
    }
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for step in turn["steps"].as_array().into_iter().flatten() {
        if !plays(step) {
            continue;
        }
        cur.push(step.clone());
        if ENDS_RESPONSE.contains(&kind(step)) {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

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
    Event(Value),
    Delay(u64),
}

fn str_of(step: &Value, key: &str, default: &str) -> String {
    step[key].as_str().unwrap_or(default).to_string()
}

/// A string or a list of strings (the seed writes both).
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// A `message` step's deltas: `deltas` as given (a recording's own split), else `chunks` pieces
/// of `text` (default 3). One definition for both servers.
pub fn message_deltas(step: &Value) -> Vec<String> {
    if let Some(d) = step["deltas"].as_array() {
        return d
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
    }
    let chunks = step["chunks"].as_u64().unwrap_or(3).max(1) as usize;
    split(&str_of(step, "text", ""), chunks)
}

/// `chunks` pieces of at most ceil(len/chunks) chars, the fake's split, so both servers
/// stream the same deltas.
pub fn split(text: &str, chunks: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(chunks.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Whether codex's approval reviewer allows: `scenario.json` `guardian` (`"allow"`, the
/// default, or `"deny"`). The model answers the real reviewer with it; the fake plays it.
pub fn guardian_allows(scenario: &Value) -> bool {
    scenario["guardian"] != "deny"
}

/// The rationale of every scripted review (it shows in `guardianWarning` and the review item).
pub const GUARDIAN_RATIONALE: &str = "scripted review";

/// The approval reviewer's answer: a message carrying the assessment codex parses.
pub fn guardian_verdict(scenario: &str) -> Value {
    let sc: Value = serde_json::from_str(scenario).unwrap_or(Value::Null);
    let outcome = if guardian_allows(&sc) {
        "allow"
    } else {
        "deny"
    };
    let assessment = json!({"risk_level": "low", "user_authorization": "high",
                            "outcome": outcome, "rationale": GUARDIAN_RATIONALE});
    json!({"kind": "message", "text": assessment.to_string(), "chunks": 1})
}

/// The reply to response number `n` (ids `resp_<n>`, `<prefix>_<n>_<step>`).
pub fn reply(n: u64, steps: &[Value]) -> Reply {
    if let Some(s) = steps.iter().find(|s| kind(s) == "http_error") {
        let headers = s["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        return Reply::Http {
            status: s["status"].as_u64().unwrap_or(500).clamp(100, 599) as u16,
            body: str_of(s, "body", ""),
            headers,
        };
    }
    let mut w = Writer {
        out: Vec::new(),
        index: 0,
    };
    let resp_id = format!("resp_{n}");
    w.event(json!({"type": "response.created", "response": {"id": resp_id}}));
    let mut usage = usage(&json!({}));
    for (i, step) in steps.iter().enumerate() {
        let id = format!("{n}_{i}");
        match kind(step) {
            "message" => w.message(&id, step),
            "reasoning" => w.reasoning(&id, step),
            "command" => {
                let command = str_of(step, "command", "true");
                let mut args = json!({"cmd": command});
                if let Some(cwd) = step["cwd"].as_str() {
                    args["workdir"] = json!(cwd);
                }
                // The seed's default: ask. Escalation is what makes codex ask under
                // `on-request`; the justification becomes the request's `reason`.
                if step["approval"].as_bool().unwrap_or(true) {
                    args["sandbox_permissions"] = json!("require_escalated");
                    if let Some(r) = step["reason"].as_str() {
                        args["justification"] = json!(r);
                    }
                }
                w.function_call(&id, "exec_command", &args.to_string());
            }
            "file_change" => w.custom_call(&id, "apply_patch", &patch(step)),
            "tool_call" => {
                let args = match step.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) if !v.is_null() => v.to_string(),
                    _ => "{}".into(),
                };
                w.function_call(&id, &str_of(step, "tool", "lookup"), &args);
            }
            "user_input" => {
                let questions = step.get("questions").cloned().unwrap_or_else(|| {
                    json!([{"id": "q1", "header": "Question", "question": "Proceed?",
                            "options": [{"label": "Yes", "description": "Go ahead"},
                                        {"label": "No", "description": "Stop"}]}])
                });
                let args = json!({"questions": questions}).to_string();
                w.function_call(&id, "request_user_input", &args);
            }
            // The model reports the thread goal's progress (`update_goal`; codex offers the tool
            // while a goal is set).
            "goal" => {
                let args = json!({"status": str_of(step, "status", "complete")}).to_string();
                w.function_call(&id, "update_goal", &args);
            }
            "permissions" => {
                let mut args = json!({"permissions": step.get("permissions").cloned()
                    .unwrap_or_else(|| json!({"network": {"enabled": true}}))});
                if let Some(r) = step["reason"].as_str() {
                    args["reason"] = json!(r);
                }
                w.function_call(&id, "request_permissions", &args.to_string());
            }
            "usage" => usage = self::usage(step),
            "fail" => {
                let code = step["code"].as_str().unwrap_or("server_error");
                w.event(
                    json!({"type": "response.failed", "response": {"id": resp_id,
                    "error": {"code": code, "message": str_of(step, "message", "turn failed")}}}),
                );
                return Reply::Stream(w.out);
            }
            "message_partial" => {
                let mid = format!("msg_{id}");
                w.added(json!({"type": "message", "role": "assistant", "id": mid,
                               "status": "in_progress", "content": []}));
                w.event(json!({"type": "response.output_text.delta", "item_id": mid,
                    "output_index": w.index, "content_index": 0,
                    "delta": str_of(step, "text", "")}));
                // The stream ends here, before response.completed.
                return Reply::Stream(w.out);
            }
            // A dropped stream: codex retries it only if the provider's stream_max_retries
            // allows (the notice's text and willRetry are codex's own).
            "error_note" => return Reply::Stream(w.out),
            "delay" => w.out.push(Out::Delay(step["ms"].as_u64().unwrap_or(0))),
            "sleep" => {
                let secs = step["seconds"].as_f64().unwrap_or(0.0).clamp(0.0, 3600.0);
                w.out.push(Out::Delay((secs * 1000.0) as u64));
            }
            "raw" => w.event(step["event"].clone()),
            _ => {}
        }
    }
    w.event(json!({"type": "response.completed", "response": {"id": resp_id, "usage": usage}}));
    Reply::Stream(w.out)
}

fn usage(step: &Value) -> Value {
    let n = |k: &str| step[k].as_u64().unwrap_or(0);
    json!({"input_tokens": n("input"),
           "input_tokens_details": {"cached_tokens": n("cached")},
           "output_tokens": n("output"),
           "output_tokens_details": {"reasoning_tokens": n("reasoning")},
           "total_tokens": n("input") + n("output")})
}

/// The `apply_patch` input for a `file_change` step: `patch` verbatim, else built from
/// `path` (default `README.md`, relative to the turn's cwd), `change` (add | delete | update)
/// and `content` or `diff`.
pub fn patch(step: &Value) -> String {
    if let Some(p) = step["patch"].as_str() {
        return p.to_string();
    }
    let path = str_of(step, "path", "README.md");
    let diff = step["diff"].as_str();
    let mut p = String::from("*** Begin Patch\n");
    match step["change"].as_str().unwrap_or("add") {
        "delete" => p.push_str(&format!("*** Delete File: {path}\n")),
        "update" => {
            p.push_str(&format!("*** Update File: {path}\n"));
            // A unified diff's hunks are apply_patch's change lines; its file headers are not.
            let body: Vec<&str> = match (diff, step["content"].as_str()) {
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
            let content = match (step["content"].as_str(), diff) {
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
}

impl Writer {
    fn event(&mut self, e: Value) {
        self.out.push(Out::Event(e));
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

    fn message(&mut self, id: &str, step: &Value) {
        let id = format!("msg_{id}");
        let text = str_of(step, "text", "");
        let mut item = json!({"type": "message", "role": "assistant", "id": id,
                              "status": "in_progress", "content": []});
        if let Some(p) = step["phase"].as_str() {
            item["phase"] = json!(p);
        }
        self.added(item.clone());
        for d in message_deltas(step) {
            let i = self.index;
            self.event(json!({"type": "response.output_text.delta", "item_id": id,
                              "output_index": i, "content_index": 0, "delta": d}));
        }
        item["status"] = json!("completed");
        item["content"] = json!([{"type": "output_text", "text": text, "annotations": []}]);
        self.done(item);
    }

    fn reasoning(&mut self, id: &str, step: &Value) {
        let id = format!("rs_{id}");
        let (summary, content) = (strings(&step["summary"]), strings(&step["content"]));
        self.added(json!({"type": "reasoning", "id": id, "summary": []}));
        let i = self.index;
        for (k, part) in summary.iter().enumerate() {
            self.event(
                json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                "output_index": i, "summary_index": k,
                "part": {"type": "summary_text", "text": ""}}),
            );
            // Two halves, as the fake streams a summary part.
            let chars: Vec<char> = part.chars().collect();
            let (a, b) = chars.split_at(chars.len() / 2);
            for half in [a, b].into_iter().filter(|h| !h.is_empty()) {
                self.event(json!({"type": "response.reasoning_summary_text.delta",
                    "item_id": id, "output_index": i, "summary_index": k,
                    "delta": half.iter().collect::<String>()}));
            }
        }
        for (k, part) in content.iter().enumerate() {
            self.event(
                json!({"type": "response.reasoning_text.delta", "item_id": id,
                              "output_index": i, "content_index": k, "delta": part}),
            );
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

    #[test]
    fn steps_split_after_stream_ending_steps_and_skip_fake_only_kinds() {
        let turn = json!({"steps": [
            {"kind": "reasoning", "summary": "s"},
            {"kind": "command", "command": "echo hi"},
            {"kind": "notify", "method": "x"},
            {"kind": "message", "text": "done"},
        ]});
        let rs = responses(&turn);
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0].len(), 2);
        assert_eq!(rs[1], vec![json!({"kind": "message", "text": "done"})]);
        assert_eq!(responses(&json!({"steps": []})).len(), 1);
    }

    #[test]
    fn command_defaults_to_approval_and_maps_seed_fields() {
        let Reply::Stream(out) = reply(
            2,
            &[json!({"kind": "command", "command": "ls", "reason": "why", "cwd": "/w"})],
        ) else {
            panic!("stream expected")
        };
        let done = out
            .iter()
            .find_map(|o| match o {
                Out::Event(e) if e["type"] == "response.output_item.done" => Some(e),
                _ => None,
            })
            .expect("item done");
        assert_eq!(done["item"]["call_id"], "call_2_0");
        let args: Value =
            serde_json::from_str(done["item"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            args,
            json!({"cmd": "ls", "workdir": "/w", "sandbox_permissions": "require_escalated",
                   "justification": "why"})
        );
        assert!(matches!(out.last(), Some(Out::Event(e)) if e["type"] == "response.completed"));
    }

    #[test]
    fn message_deltas_and_drops() {
        let Reply::Stream(out) = reply(0, &[json!({"kind": "message", "text": "abcde"})]) else {
            panic!()
        };
        let deltas: Vec<&str> = out
            .iter()
            .filter_map(|o| match o {
                Out::Event(e) if e["type"] == "response.output_text.delta" => e["delta"].as_str(),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, ["ab", "cd", "e"]);
        let Reply::Stream(out) = reply(0, &[json!({"kind": "error_note"})]) else {
            panic!()
        };
        assert_eq!(out.len(), 1, "only response.created, then the stream drops");
        assert_eq!(
            reply(
                0,
                &[json!({"kind": "http_error", "status": 429, "body": "x"})]
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
        assert_eq!(
            patch(&json!({"path": "a.txt", "diff": "+hello\n"})),
            "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch"
        );
        assert_eq!(
            patch(
                &json!({"path": "a.txt", "change": "update", "diff": "--- a\n+++ b\n@@\n-x\n+y\n"})
            ),
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch"
        );
        assert_eq!(
            patch(&json!({"path": "a.txt", "change": "delete"})),
            "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"
        );
    }
}
