//! The one reading of `scenario.json`: a turn's script and its steps, typed, with their
//! defaults. The scripted model (`script.rs`), the fake's turn engine and `record`'s translator
//! all read steps through these types, so a step means one thing to both servers: an unknown
//! kind or a misspelt field is refused the same way everywhere (`Step::parse`).
//!
//! A step is either something the model streams (rendered into Responses API events by
//! [`super::script::reply`], the only renderer) or something only the fake can do (a crash, a
//! notification; [`Step::model_plays`] is false and the model skips it).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A string or a list of strings (the seed writes both for reasoning parts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Strings {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl Strings {
    pub fn list(&self) -> Vec<String> {
        match self {
            Strings::None => Vec::new(),
            Strings::One(s) => vec![s.clone()],
            Strings::Many(v) => v.clone(),
        }
    }
}

/// One piece of a message's stream: a text delta, or a pause before the next event (the model
/// at work inside a message, where an interrupt or a steer can land).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Delta {
    Text(String),
    Pause {
        /// Seconds.
        sleep: f64,
    },
}

fn three() -> u64 {
    3
}
fn yes() -> bool {
    true
}
fn complete() -> String {
    "complete".into()
}
fn lookup() -> String {
    "lookup".into()
}
fn server_error() -> String {
    "server_error".into()
}
fn turn_failed() -> String {
    "turn failed".into()
}
fn status_500() -> u64 {
    500
}
fn one() -> i64 {
    1
}
fn fatal() -> String {
    "fake codex: fatal error".into()
}
fn one_second() -> f64 {
    1.0
}
fn quarter_second() -> f64 {
    0.25
}
fn readme() -> String {
    "README.md".into()
}
fn add() -> String {
    "add".into()
}

/// Fields a server request step may override in the request's params.
pub type Params = Option<Map<String, Value>>;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// The whole text (the completed item's); default: the deltas joined.
    #[serde(default)]
    pub text: Option<String>,
    /// Deltas of at most ceil(len/chunks) chars each (the split both servers stream).
    #[serde(default = "three")]
    pub chunks: u64,
    /// The deltas as given (a recording's own split), with pauses among them.
    #[serde(default)]
    pub deltas: Option<Vec<Delta>>,
    #[serde(default)]
    pub phase: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    #[serde(default)]
    pub summary: Strings,
    #[serde(default)]
    pub content: Strings,
    /// Each summary part's deltas (default: two halves of the part).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_deltas: Option<Vec<Vec<String>>>,
    /// Each content part's deltas (default: the part in one delta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_deltas: Option<Vec<Vec<String>>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    pub command: String,
    /// The model asks to run outside the sandbox (`sandbox_permissions: require_escalated`).
    #[serde(default = "yes")]
    pub approval: bool,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// The fake only: the command's output, instead of running it (the seed's way).
    #[serde(default)]
    pub output: Option<String>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub params: Params,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileChange {
    /// A whole `apply_patch` input (`*** Begin Patch` …), verbatim.
    #[serde(default)]
    pub patch: Option<String>,
    #[serde(default = "readme")]
    pub path: String,
    /// `add`, `update` or `delete`.
    #[serde(default = "add")]
    pub change: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub diff: Option<String>,
    /// Not sent to anyone (the seed's step carried it).
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub approval: Option<bool>,
    #[serde(default)]
    pub params: Params,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    #[serde(default = "lookup")]
    pub tool: String,
    /// An object, or the JSON text the model sends.
    #[serde(default)]
    pub arguments: Option<Value>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub params: Params,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserInput {
    #[serde(default)]
    pub questions: Option<Value>,
    #[serde(default)]
    pub params: Params,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub permissions: Option<Value>,
    #[serde(default)]
    pub params: Params,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub cached: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub reasoning: u64,
    /// The seed's context window: the real one is the model's (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpError {
    #[serde(default = "status_500")]
    pub status: u64,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub headers: Map<String, Value>,
}

impl HttpError {
    pub fn status(&self) -> u16 {
        self.status.clamp(100, 599) as u16
    }
    /// The headers whose values are strings.
    pub fn header_list(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    #[serde(default = "one_second")]
    pub seconds: f64,
    #[serde(default = "quarter_second")]
    pub interval: f64,
    #[serde(default)]
    pub text: Option<String>,
}

/// One step of a scripted turn (`{"kind": …, …}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    Message(Message),
    Reasoning(Reasoning),
    Command(Command),
    FileChange(FileChange),
    ToolCall(ToolCall),
    UserInput(UserInput),
    Permissions(Permissions),
    /// The model reports the thread goal's status (`update_goal`).
    Goal {
        #[serde(default = "complete")]
        status: String,
    },
    /// The current model response's token usage.
    Usage(Usage),
    /// `response.failed` with this error.
    Fail {
        #[serde(default = "turn_failed")]
        message: String,
        #[serde(default = "server_error")]
        code: String,
    },
    /// A message whose stream ends after one delta.
    MessagePartial {
        #[serde(default)]
        text: String,
    },
    /// The stream ends without `response.completed` (`message` and `will_retry` are the
    /// seed's; codex decides both).
    ErrorNote {
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        will_retry: Option<bool>,
    },
    /// The provider answers with an HTTP error instead of a stream.
    HttpError(HttpError),
    /// A pause in the model's stream.
    Sleep {
        #[serde(default)]
        seconds: f64,
    },
    /// A pause in the model's stream, in milliseconds.
    Delay {
        #[serde(default)]
        ms: u64,
    },
    /// A Responses API event, sent as it is (a recording's).
    Raw {
        event: Value,
    },
    // The fake's own: no model response makes the real server do these.
    Crash {
        #[serde(default = "one")]
        code: i64,
        #[serde(default = "fatal")]
        stderr: String,
    },
    Progress(Progress),
    Grandchild {},
    Notify {
        #[serde(default)]
        method: String,
        #[serde(default)]
        params: Option<Value>,
    },
    Compaction {},
    Elicitation {
        #[serde(default)]
        server: Option<String>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        schema: Option<Value>,
        #[serde(default)]
        params: Params,
    },
    AuthRefresh {
        #[serde(default)]
        params: Params,
    },
    Attestation {
        #[serde(default)]
        params: Params,
    },
    Request {
        #[serde(default)]
        method: String,
        #[serde(default)]
        params: Params,
    },
}

impl Step {
    /// Reads one step; the error names the step and what is wrong with it.
    pub fn parse(v: &Value) -> Result<Step, String> {
        Step::deserialize(v).map_err(|e| format!("step {v}: {e}"))
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Step::Message(_) => "message",
            Step::Reasoning(_) => "reasoning",
            Step::Command(_) => "command",
            Step::FileChange(_) => "file_change",
            Step::ToolCall(_) => "tool_call",
            Step::UserInput(_) => "user_input",
            Step::Permissions(_) => "permissions",
            Step::Goal { .. } => "goal",
            Step::Usage(_) => "usage",
            Step::Fail { .. } => "fail",
            Step::MessagePartial { .. } => "message_partial",
            Step::ErrorNote { .. } => "error_note",
            Step::HttpError(_) => "http_error",
            Step::Sleep { .. } => "sleep",
            Step::Delay { .. } => "delay",
            Step::Raw { .. } => "raw",
            Step::Crash { .. } => "crash",
            Step::Progress(_) => "progress",
            Step::Grandchild {} => "grandchild",
            Step::Notify { .. } => "notify",
            Step::Compaction {} => "compaction",
            Step::Elicitation { .. } => "elicitation",
            Step::AuthRefresh { .. } => "auth_refresh",
            Step::Attestation { .. } => "attestation",
            Step::Request { .. } => "request",
        }
    }

    /// Whether the model streams this step (the rest are the fake's own doing).
    pub fn model_plays(&self) -> bool {
        !matches!(
            self,
            Step::Crash { .. }
                | Step::Progress(_)
                | Step::Grandchild {}
                | Step::Notify { .. }
                | Step::Compaction {}
                | Step::Elicitation { .. }
                | Step::AuthRefresh { .. }
                | Step::Attestation { .. }
                | Step::Request { .. }
        )
    }

    /// A tool call: the model waits for its output, then is asked again.
    pub fn is_tool(&self) -> bool {
        matches!(
            self,
            Step::Command(_)
                | Step::FileChange(_)
                | Step::ToolCall(_)
                | Step::UserInput(_)
                | Step::Permissions(_)
                | Step::Goal { .. }
        )
    }

    /// The response (one POST) ends after this step: a tool call waits for its output, the
    /// others end or drop the stream.
    pub fn ends_response(&self) -> bool {
        self.is_tool()
            || matches!(
                self,
                Step::Fail { .. }
                    | Step::MessagePartial { .. }
                    | Step::ErrorNote { .. }
                    | Step::HttpError(_)
            )
    }
}

/// One scripted turn: `steps` (cut into model responses, [`Script::responses`]) or
/// `responses` given one by one; a goal's `continuations`; the fake's `start_error` and
/// `rollover_ms`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    #[serde(default)]
    pub steps: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<Vec<Vec<Value>>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continuations: Vec<Script>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollover_ms: Option<u64>,
}

/// A script's steps read, the ones that do not read kept as errors (in order).
pub type Parsed = Vec<Result<Step, String>>;

fn parse_all(steps: &[Value]) -> Parsed {
    steps.iter().map(Step::parse).collect()
}

impl Script {
    /// A scripted turn from its JSON (anything not a script reads as an empty one).
    pub fn from_value(v: &Value) -> Script {
        Script::deserialize(v).unwrap_or_default()
    }

    pub fn of_steps(steps: Vec<Step>) -> Script {
        Script {
            steps: steps
                .iter()
                .filter_map(|s| serde_json::to_value(s).ok())
                .collect(),
            ..Script::default()
        }
    }

    /// The answer to a turn with no script left (more turns, or more follow-ups, than
    /// scripted): one definition for both servers, so they answer an unscripted turn alike.
    pub fn default_turn() -> Script {
        Script::of_steps(vec![
            Step::Message(Message {
                text: Some("Hello from the codex-wire fake.".into()),
                chunks: 3,
                deltas: None,
                phase: None,
            }),
            Step::Usage(Usage {
                input: 12,
                output: 8,
                ..Usage::default()
            }),
        ])
    }

    /// The answer to a goal's continuation with no script left: the model declares the goal
    /// complete, then answers as in [`Script::default_turn`] (without it codex would run goal
    /// turns for ever).
    pub fn default_goal_turn() -> Script {
        let mut t = Script::default_turn();
        t.steps.insert(0, goal_complete());
        t
    }

    /// The server turns this script stands for: itself, then its `continuations` (the seed's
    /// goal continuation turns, each a turn codex runs by itself while the goal is active).
    /// The last continuation starts by completing the goal, which is what ends codex's
    /// continuations.
    pub fn server_turns(&self) -> Vec<Script> {
        let mut first = self.clone();
        let continuations = std::mem::take(&mut first.continuations);
        let count = continuations.len();
        let mut out = vec![first];
        for (i, mut c) in continuations.into_iter().enumerate() {
            if i + 1 == count {
                c.steps.insert(0, goal_complete());
            }
            out.push(c);
        }
        out
    }

    /// The turn as model responses, one per `POST /v1/responses`, each with every step that
    /// reads (a step that does not is kept as its error, where it stood). `responses` when
    /// given, else `steps` cut after every step that ends a response — where a `usage` step
    /// right after a tool call is that response's usage (the place its report shows on the
    /// wire) unless the response already had one before the call (the older way to write it).
    /// The first response's steps (those that parse): what a one-request turn plays (a
    /// compaction's summary, a review's child).
    pub fn first_response(&self) -> Vec<Step> {
        let first = self.responses().into_iter().next().unwrap_or_default();
        first.into_iter().filter_map(Result::ok).collect()
    }

    pub fn responses(&self) -> Vec<Parsed> {
        if let Some(rs) = &self.responses {
            return rs.iter().map(|r| parse_all(r)).collect();
        }
        let mut out: Vec<Parsed> = Vec::new();
        let mut cur: Parsed = Vec::new();
        // The response just cut after a tool call, with or without its usage.
        let mut after_tool: Option<bool> = None;
        for step in parse_all(&self.steps) {
            if let (Ok(Step::Usage(_)), Some(false)) = (&step, after_tool) {
                if let Some(last) = out.last_mut() {
                    last.push(step);
                }
                after_tool = Some(true);
                continue;
            }
            after_tool = None;
            let ends = step.as_ref().is_ok_and(Step::ends_response);
            let tool = step.as_ref().is_ok_and(Step::is_tool);
            cur.push(step);
            if ends {
                if tool {
                    let has_usage = cur.iter().any(|s| matches!(s, Ok(Step::Usage(_))));
                    after_tool = Some(has_usage);
                }
                out.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() || out.is_empty() {
            out.push(cur);
        }
        out
    }
}

fn goal_complete() -> Value {
    serde_json::json!({"kind": "goal", "status": "complete"})
}

/// A `scenario.json`: the fields both servers read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Scenario {
    #[serde(default)]
    pub turns: Vec<Value>,
    /// codex's approval reviewer's verdict: `allow` (the default) or `deny`.
    #[serde(default)]
    pub guardian: Option<String>,
}

impl Scenario {
    pub fn from_value(v: &Value) -> Scenario {
        Scenario::deserialize(v).unwrap_or_default()
    }

    pub fn turn(&self, i: usize) -> Option<Script> {
        self.turns.get(i).map(Script::from_value)
    }

    pub fn guardian_allows(&self) -> bool {
        self.guardian.as_deref() != Some("deny")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(r: &Parsed) -> Vec<&'static str> {
        r.iter()
            .map(|s| s.as_ref().map_or("?", Step::kind))
            .collect()
    }

    #[test]
    fn a_usage_right_after_a_tool_call_is_that_response_s_unless_it_had_one() {
        let script = |steps: Value| Script::from_value(&json!({ "steps": steps }));
        // Written in the order the notifications appear.
        let r = script(
            json!([{"kind": "command", "command": "ls"}, {"kind": "usage", "input": 1},
                              {"kind": "message", "text": "ok"}, {"kind": "usage", "input": 2}]),
        )
        .responses();
        assert_eq!(
            r.iter().map(kinds).collect::<Vec<_>>(),
            [vec!["command", "usage"], vec!["message", "usage"]]
        );
        // The older form: usage before the call, the next usage the follow-up's.
        let r = script(
            json!([{"kind": "usage", "input": 1}, {"kind": "command", "command": "ls"},
                              {"kind": "usage", "input": 2}, {"kind": "message", "text": "ok"}]),
        )
        .responses();
        assert_eq!(
            r.iter().map(kinds).collect::<Vec<_>>(),
            [vec!["usage", "command"], vec!["usage", "message"]]
        );
        // A failure is not a tool call: the usage after it starts the next response.
        let r = script(json!([{"kind": "error_note"}, {"kind": "usage", "input": 1}])).responses();
        assert_eq!(
            r.iter().map(kinds).collect::<Vec<_>>(),
            [vec!["error_note"], vec!["usage"]]
        );
    }

    #[test]
    fn steps_read_with_the_seed_s_defaults_and_refuse_what_they_do_not_know() {
        let Step::Command(c) = Step::parse(&json!({"kind": "command", "command": "ls"})).unwrap()
        else {
            panic!()
        };
        assert!(c.approval);
        let e = Step::parse(&json!({"kind": "comand"})).unwrap_err();
        assert!(e.contains("unknown variant `comand`"), "{e}");
        let e = Step::parse(&json!({"kind": "message", "txt": "x"})).unwrap_err();
        assert!(e.contains("unknown field `txt`"), "{e}");
        // The seed's usage carries a window; it reads (and is ignored).
        assert!(Step::parse(&json!({"kind": "usage", "input": 1, "window": 9})).is_ok());
        assert!(Step::parse(&json!({"kind": "goal", "status": "paused"})).is_ok());
        let e = Step::parse(&json!({"kind": "goal", "state": "paused"})).unwrap_err();
        assert!(e.contains("unknown field `state`"), "{e}");
        assert_eq!(
            Step::parse(&json!({"kind": "message", "deltas": ["a", {"sleep": 0.5}, "b"]})).unwrap(),
            Step::Message(Message {
                text: None,
                chunks: 3,
                deltas: Some(vec![
                    Delta::Text("a".into()),
                    Delta::Pause { sleep: 0.5 },
                    Delta::Text("b".into())
                ]),
                phase: None
            })
        );
    }

    /// What the typed step says of itself in serde's errors: `expected `a``, `expected `a` or
    /// `b``, `expected one of `a`, `b`, `c``, `there are no fields`.
    fn listed(err: &str) -> Vec<String> {
        let Some((_, list)) = err.split_once("expected ") else {
            return Vec::new();
        };
        let list = list.strip_prefix("one of ").unwrap_or(list);
        list.split(", ")
            .flat_map(|w| w.split(" or "))
            .map(|w| {
                w.trim_matches(|c: char| c == '`' || c.is_whitespace())
                    .to_string()
            })
            .collect()
    }

    /// `clients/steps.json` (the Python and npm builders' description) says what this type
    /// reads: the same kinds, model and fake-only; every builder arg a field the kind takes; every
    /// described step one it reads.
    #[test]
    fn the_client_step_description_is_this_type() {
        let d: Value =
            serde_json::from_str(include_str!("../../clients/steps.json")).expect("steps.json");
        let names = |k: &str| -> Vec<String> {
            let mut v: Vec<String> = d[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect();
            v.sort();
            v
        };
        let (model, fake_only) = (names("model_kinds"), names("fake_only_kinds"));
        let mut kinds = listed(&Step::parse(&json!({"kind": "?"})).unwrap_err());
        kinds.sort();
        let mut described = [model.clone(), fake_only.clone()].concat();
        described.sort();
        assert_eq!(
            described, kinds,
            "steps.json kinds against the Step variants"
        );
        for b in d["builders"].as_array().unwrap() {
            let kind = b["kind"].as_str().unwrap();
            let err = Step::parse(&json!({"kind": kind, "?": 1})).unwrap_err();
            let fields = listed(&err);
            for a in b["args"].as_array().unwrap() {
                let name = a["name"].as_str().unwrap();
                assert!(
                    fields.iter().any(|f| f == name),
                    "{kind}: steps.json's `{name}` is not a field the step reads ({err})"
                );
            }
        }
        for c in d["cases"].as_array().unwrap() {
            let Some(step) = c.get("step") else { continue };
            let s = Step::parse(step).unwrap_or_else(|e| panic!("steps.json case: {e}"));
            assert_eq!(
                s.model_plays(),
                model.iter().any(|k| k == s.kind()),
                "{step}: model kind or fake-only"
            );
        }
    }
}
