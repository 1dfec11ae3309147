//! The session generator: seeded, one `harness::Case` per session, drawn from the dimensions a
//! client varies (see the module doc of `fidelity`). Every value comes from the version's schema
//! (enum variants, object variants, shapes) or from a small per-field domain where the schema
//! only says "string" (paths, model slugs, commands).

use crate::gen::{Node, Schema, Shape};
use codex_wire::harness::{Case, Input};
use serde_json::{json, Map, Value};

/// The fuzzer's xorshift64* (`codex_wire::fuzz::Rng`), seeded through splitmix64 so that
/// neighbouring seeds start far apart: the same seed gives the same sessions.
pub struct Rng(codex_wire::fuzz::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng(codex_wire::fuzz::Rng::new(z ^ (z >> 31)))
    }
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    /// True with probability `pct` %.
    pub fn pct(&mut self, pct: u32) -> bool {
        self.below(100) < pct as usize
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    /// A value from `(weight, value)` pairs.
    pub fn weighted<T: Clone>(&mut self, xs: &[(u32, T)]) -> T {
        let total: u32 = xs.iter().map(|(w, _)| w).sum();
        let mut r = self.below(total as usize) as u32;
        for (w, x) in xs {
            if r < *w {
                return x.clone();
            }
            r -= w;
        }
        xs[xs.len() - 1].1.clone()
    }
}

/// Model slugs a client names: the harness's default, others codex knows, one it does not.
pub const MODELS: &[&str] = &[
    "gpt-5.5",
    "gpt-5.4",
    "gpt-5.4-mini",
    "gpt-5.3-codex",
    "gpt-5.2",
    "my-local-model",
];

/// Texts the model says: plain, empty, unicode, escapes, long, markdown.
/// A message's text as deltas with a pause (0.3-0.8 s) between two of them.
fn paced(t: &str, rng: &mut Rng) -> Value {
    let chars: Vec<char> = t.chars().collect();
    let at = 1 + rng.below(chars.len() - 1);
    let pause = 0.3 + rng.below(6) as f64 / 10.0;
    let (a, b) = chars.split_at(at);
    json!([a.iter().collect::<String>(), {"sleep": pause}, b.iter().collect::<String>()])
}

fn text(rng: &mut Rng) -> String {
    rng.weighted(&[
        (30, "Done.".to_string()),
        (8, String::new()),
        (10, "héllo wörld — ✓ 🎉 日本語".to_string()),
        (
            10,
            "line one\nline two\t\"quoted\" \\back\\slash \u{7} end".to_string(),
        ),
        (6, "word ".repeat(400).trim_end().to_string()),
        (
            10,
            "# Title\n\n- a\n- `code`\n\n```sh\necho hi\n```\n".to_string(),
        ),
        (8, "It's <b>bold</b> & {\"json\": [1, 2]}".to_string()),
        (6, " leading and trailing spaces ".to_string()),
    ])
}

/// Shell commands the model asks to run: harmless, but every quoting and output shape.
const COMMANDS: &[&str] = &[
    "echo hi",
    "printf 'a b\\n'",
    "echo \"home is $HOME\"",
    "echo 'single quoted'",
    "python3 -c 'print(1+1)'",
    "python3 -c \"print('x')\"",
    "ls",
    "pwd",
    "false",
    "exit 3",
    "echo err >&2",
    // Both streams at once: how they interleave is the real server's race (docs/turns.md).
    "echo err >&2; exit 2",
    "echo a; sleep 0.3; echo b",
    "cat missing-file.txt",
    "echo $((1+2))",
    "echo héllo ✓",
    "echo 'it'\"'\"'s'",
    "true && echo ok | tr a-z A-Z",
    "seq 1 200",
    "cat README.md",
    // Not `ls -a`: codex's sandbox mounts its protected directories (`.agents`, `.codex`)
    // into the cwd, where only a sandboxed command sees them; not `ls -l`: times.
    "ls -1",
    "grep -r hello .",
    "echo a\\\\b",
    "",
];

/// Server notification methods a client may opt out of (from the schema).
fn notification_methods(s: &Schema) -> Vec<String> {
    s.root
        .pointer("/definitions/ServerNotification/oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/properties/method/enum/0")
                .and_then(Value::as_str)
        })
        .map(str::to_string)
        .collect()
}

pub struct Generator<'a> {
    pub rng: Rng,
    schema: &'a Schema,
    notifications: Vec<String>,
    /// Whether sessions also call the schema's other client methods (`--net wide`).
    pub wide: bool,
    /// The extra calls' methods not yet drawn in this run, shuffled: every method is drawn once
    /// before any is drawn twice. Drawn independently, 300 sessions (~330 calls over ~175
    /// methods) left a sixth of the methods unsent by chance.
    deck: Vec<usize>,
}

/// Methods the harness's own client sends (a session draws them through its turns, resumes and
/// read-backs), never drawn as extra calls.
const DRIVEN: &[&str] = &["initialize", "thread/start", "turn/start"];

/// The MCP server a generated session configures: newline-delimited JSON-RPC on stdio, one tool
/// and one resource (one of each: codex lists a server's tools in its hash map's order).
const MCP_SERVER: &str = r#"import sys, json
for line in sys.stdin:
    try:
        m = json.loads(line)
    except Exception:
        continue
    if "id" not in m:
        continue
    meth = m.get("method")
    if meth == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}, "resources": {}}, "serverInfo": {"name": "demo", "version": "1.0.0"}}
    elif meth == "tools/list":
        r = {"tools": [{"name": "echo", "description": "Echo the text back", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif meth == "resources/list":
        r = {"resources": [{"uri": "file:///notes.txt", "name": "notes", "mimeType": "text/plain"}]}
    elif meth == "resources/templates/list":
        r = {"resourceTemplates": []}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

/// What a turn's script asked of the client and config (so the session can enable it).
#[derive(Default)]
struct Needs {
    approvals: usize,
    dynamic_tool: bool,
    user_input: bool,
    permissions: bool,
    stream_drop: bool,
    http_error: bool,
}

impl<'a> Generator<'a> {
    pub fn new(schema: &'a Schema, seed: u64) -> Self {
        Generator {
            rng: Rng::new(seed),
            schema,
            notifications: notification_methods(schema),
            wide: true,
            deck: Vec::new(),
        }
    }

    /// The params schema of a client method, by name.
    fn params_props(&self, method: &str) -> Vec<(String, Node)> {
        let Some(m) = self.schema.methods().into_iter().find(|m| m.name == method) else {
            return Vec::new();
        };
        let Some(p) = m.params else {
            return Vec::new();
        };
        let node = self.schema.node(&p, &m.params_ptr);
        match node.shape {
            Shape::Object(o) => o
                .props
                .iter()
                .map(|(k, v)| {
                    let ptr = format!("{}/properties/{k}", node.ptr);
                    (k.clone(), self.schema.node(v, &ptr))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Values of a type as the schema gives them: every enum variant, each object variant's
    /// minimal instance, both booleans, an empty and a one-element list.
    fn values_of(&self, n: &Node, name: &str) -> Vec<Value> {
        match &n.shape {
            Shape::Nullable(inner) => self.values_of(inner, name),
            Shape::StrEnum(v) => v.iter().map(|s| json!(s)).collect(),
            Shape::External(strs, objs) => strs
                .iter()
                .map(|s| json!(s))
                .chain(objs.iter().map(|(k, v)| {
                    let mut m = Map::new();
                    m.insert(k.clone(), self.schema.minimal(v, k, 1));
                    Value::Object(m)
                }))
                .collect(),
            Shape::Tagged(_, vs) => vs
                .iter()
                .map(|(_, v)| self.schema.minimal(v, name, 1))
                .collect(),
            Shape::Untagged(vs) => vs.iter().map(|v| self.schema.minimal(v, name, 1)).collect(),
            Shape::Bool => vec![json!(true), json!(false)],
            Shape::Array(item) => vec![json!([]), json!([self.schema.minimal(item, name, 1)])],
            _ => vec![self.schema.minimal(n, name, 1)],
        }
    }

    /// A field's candidate values: the per-field domain where the schema only says "string"
    /// (or the value must be harmless), else the schema's.
    fn domain(&self, method: &str, field: &str, n: &Node) -> Vec<Value> {
        let d = match field {
            "cwd" => json!([
                "${work}",
                ".",
                "sub",
                "./sub",
                "${work}/",
                "${work}/sub",
                "sub/"
            ]),
            "model" => json!(MODELS),
            "modelProvider" => json!(["scripted"]),
            "serviceTier" => json!(["fast", "flex", "default", "priority"]),
            "serviceTierForTurn" => json!(["fast", "default"]),
            "baseInstructions" | "developerInstructions" => {
                json!(["You are terse.", "", "Ünïcode \"instructions\""])
            }
            "config" => json!([{}, {"model_reasoning_effort": "high"},
                               {"sandbox_mode": "danger-full-access"},
                               {"approval_policy": "never"}, {"service_tier": "fast"}]),
            "environments" => json!([[], [{"environmentId": "local", "cwd": "${work}"}]]),
            "runtimeWorkspaceRoots" => json!([[], ["${work}"], ["${work}/sub"]]),
            "permissions" => json!([":read-only", ":workspace", ":danger-no-sandbox", "custom"]),
            "projectId" => json!(["proj-1"]),
            "threadSource" => json!(["user", "cli", "vscode", "app"]),
            "serviceName" => json!(["svc"]),
            "mockExperimentalField" => json!(["x"]),
            "clientUserMessageId" => json!(["client-msg-1"]),
            "effort" => json!(["minimal", "low", "medium", "high", "xhigh", "none"]),
            "outputSchema" => json!([{"type": "object", "properties": {"a": {"type": "string"}},
                                      "required": ["a"], "additionalProperties": false}]),
            "responsesapiClientMetadata" | "responsesapiClientMetadataPatch" => {
                json!([{}, {"k": "v"}])
            }
            "turnTrigger" => json!(["user", "automation"]),
            "collaborationMode" => json!([
                {"mode": "plan", "settings": {"model": "gpt-5.5", "reasoning_effort": null,
                                              "developer_instructions": null}},
                {"mode": "default", "settings": {"model": "gpt-5.5", "reasoning_effort": "low",
                                                 "developer_instructions": "Be brief."}}
            ]),
            "dynamicTools" => json!([[{"type": "function", "name": "lookup",
                                       "description": "Looks a thing up",
                                       "inputSchema": {"type": "object", "properties": {}}}]]),
            // Raw events stream codex's own prompt (its built-in instructions, the environment
            // context): internal to Codex Cloud, and beyond any fake. Only its off value.
            "experimentalRawEvents" => json!([false]),
            // Ids of other turns are not known to a generated session.
            "parentTurnId" | "rootTurnId" | "beforeTurnId" | "lastTurnId" => json!([]),
            // Reaching out, or for Codex Cloud only.
            "history"
            | "path"
            | "experimentalPredictionMode"
            | "experimentalDisablePredictionMcp" => json!([]),
            _ => Value::Null,
        };
        let _ = method;
        match d {
            Value::Array(v) => v,
            _ => self.values_of(n, field),
        }
    }

    /// Params of `method` over `base`: each optional field absent (mostly), `null`, or a value
    /// of its domain.
    fn params(&mut self, method: &str, skip: &[&str], pct: u32) -> Map<String, Value> {
        let mut out = Map::new();
        for (field, node) in self.params_props(method) {
            if skip.contains(&field.as_str()) || !self.rng.pct(pct) {
                continue;
            }
            let dom = self.domain(method, &field, &node);
            let nullable = matches!(node.shape, Shape::Nullable(_));
            if dom.is_empty() || (nullable && self.rng.pct(20)) {
                if nullable {
                    out.insert(field, Value::Null);
                }
                continue;
            }
            let v = self.rng.pick(&dom).clone();
            out.insert(field, v);
        }
        out
    }

    fn step(&mut self, needs: &mut Needs, last: bool) -> Value {
        let kind = self.rng.weighted(&[
            (30, "message"),
            (10, "reasoning"),
            (20, "command"),
            (6, "file_change"),
            (3, "fail"),
            (3, "message_partial"),
            (3, "error_note"),
            (4, "http_error"),
            (3, "tool_call"),
            (2, "user_input"),
            (2, "permissions"),
            (1, "sleep"),
        ]);
        match kind {
            "message" => {
                let t = text(&mut self.rng);
                let mut s = json!({"kind": "message", "text": t});
                if self.rng.pct(15) && t.chars().count() >= 2 {
                    // Paced: the model pauses inside the message (its deltas, a pause between
                    // two of them).
                    s["deltas"] = paced(&t, &mut self.rng);
                } else if self.rng.pct(40) {
                    s["chunks"] = json!(1 + self.rng.below(4));
                }
                if self.rng.pct(15) {
                    s["phase"] = json!(self.rng.pick(&["commentary", "final_answer"]));
                }
                s
            }
            "reasoning" => {
                let parts = |g: &mut Self| -> Value {
                    let n = g.rng.below(3);
                    json!((0..n).map(|_| text(&mut g.rng)).collect::<Vec<_>>())
                };
                json!({"kind": "reasoning", "summary": parts(self), "content": parts(self)})
            }
            "command" => {
                let mut s = json!({"kind": "command", "command": self.rng.pick(COMMANDS)});
                let approval = self.rng.pct(60);
                s["approval"] = json!(approval);
                if approval {
                    needs.approvals += 1;
                    if self.rng.pct(60) {
                        s["reason"] = json!(self.rng.pick(&["need to run it", "héllo ✓"]));
                    }
                }
                if self.rng.pct(10) {
                    s["cwd"] = json!(self.rng.pick(&["sub", "."]));
                }
                s
            }
            "file_change" => {
                let path = *self.rng.pick(&["notes.txt", "sub/new.md", "README.md"]);
                json!({"kind": "file_change", "path": path, "content": text(&mut self.rng) + "\n"})
            }
            "fail" => {
                let code = *self.rng.pick(&[
                    "server_error",
                    "context_length_exceeded",
                    "insufficient_quota",
                    "rate_limit_exceeded",
                    "server_is_overloaded",
                    "invalid_prompt",
                ]);
                json!({"kind": "fail", "code": code, "message": "boom"})
            }
            "message_partial" => {
                needs.stream_drop = true;
                json!({"kind": "message_partial", "text": "Partial"})
            }
            "error_note" => {
                needs.stream_drop = true;
                json!({"kind": "error_note", "message": "net"})
            }
            "http_error" => {
                needs.http_error = true;
                let (status, body) = self.rng.weighted(&[
                    (4, (500, "")),
                    (2, (502, "bad gateway")),
                    (2, (503, "")),
                    (2, (429, r#"{"error":{"type":"rate_limit_exceeded","message":"slow down"}}"#)),
                    (
                        2,
                        (
                            429,
                            r#"{"error":{"type":"usage_limit_reached","message":"limit","plan_type":"plus","resets_in_seconds":60}}"#,
                        ),
                    ),
                    (2, (400, r#"{"error":{"message":"bad request","type":"invalid_request_error"}}"#)),
                    (1, (401, "")),
                    (1, (403, "forbidden")),
                    (1, (404, "")),
                ]);
                json!({"kind": "http_error", "status": status, "body": body})
            }
            "tool_call" => {
                needs.dynamic_tool = true;
                let tool = *self.rng.pick(&["lookup", "lookup", "unknown_tool"]);
                json!({"kind": "tool_call", "tool": tool, "arguments": {"q": "x"}})
            }
            "user_input" => {
                needs.user_input = true;
                json!({"kind": "user_input"})
            }
            "permissions" => {
                needs.permissions = true;
                json!({"kind": "permissions", "reason": "need network"})
            }
            _ => json!({"kind": "sleep", "seconds": if last { 0.0 } else { 0.2 }}),
        }
    }

    fn turn(&mut self, needs: &mut Needs) -> Value {
        let n = self.rng.weighted(&[(25, 1), (35, 2), (25, 3), (15, 4)]);
        let mut steps = Vec::new();
        for i in 0..n {
            if self.rng.pct(25) {
                steps.push(json!({"kind": "usage", "input": 100 + self.rng.below(900),
                    "cached": self.rng.below(50), "output": 1 + self.rng.below(99),
                    "reasoning": self.rng.below(20)}));
            }
            let step = self.step(needs, i + 1 == n);
            let edit = match (self.wide, step["path"].as_str(), step["content"].as_str()) {
                (true, Some(path), Some(content)) if self.rng.pct(40) => {
                    Some(self.file_edit(path, content))
                }
                _ => None,
            };
            steps.push(step);
            steps.extend(edit);
        }
        json!({"steps": steps})
    }

    /// A patch on a file the turn just wrote: a line updated, the file deleted, or moved (and
    /// updated on the way).
    fn file_edit(&mut self, path: &str, content: &str) -> Value {
        let first = content.lines().next().unwrap_or("");
        let kind = if first.is_empty() {
            *self.rng.pick(&["delete", "move"])
        } else {
            *self.rng.pick(&["update", "delete", "move", "move_update"])
        };
        let to = if path.contains('/') {
            "moved.txt"
        } else {
            "sub/moved.txt"
        };
        let body = match kind {
            "update" => format!("*** Update File: {path}\n@@\n-{first}\n+{first} (edited)\n"),
            "delete" => format!("*** Delete File: {path}\n"),
            "move" => format!("*** Update File: {path}\n*** Move to: {to}\n"),
            _ => format!(
                "*** Update File: {path}\n*** Move to: {to}\n@@\n-{first}\n+{first} (moved)\n"
            ),
        };
        json!({"kind": "file_change", "patch": format!("*** Begin Patch\n{body}*** End Patch")})
    }

    fn decision(&mut self) -> Value {
        self.rng.weighted(&[
            (40, json!("accept")),
            (15, json!("decline")),
            (8, json!("cancel")),
            (10, json!("acceptForSession")),
            (
                7,
                json!({"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["echo"]}}),
            ),
            (
                8,
                json!({"$error": {"code": -32000, "message": "client refused"}}),
            ),
            (3, json!({"$result": {"decision": "bogus"}})),
            (3, json!({"$result": {}})),
            (6, json!("$none")),
        ])
    }

    /// Session number `n`.
    pub fn session(&mut self, name: &str) -> Case {
        let mut needs = Needs::default();
        let turns = self.rng.weighted(&[(60, 1), (30, 2), (10, 3)]);
        let mut scripts: Vec<Value> = (0..turns).map(|_| self.turn(&mut needs)).collect();
        // A full context window makes codex compact the history before the next turn, and the
        // compaction's last usage report is codex's estimate of its own prompt: beyond a fake
        // (docs/turns.md). A window runs out only in a session's last turn.
        for script in scripts.iter_mut().take(turns - 1) {
            for step in script["steps"].as_array_mut().into_iter().flatten() {
                if step["code"] == "context_length_exceeded" {
                    step["code"] = json!("server_error");
                }
            }
        }
        let mut case: Case = serde_json::from_value(json!({
            "name": name, "scenario": {"turns": scripts}, "wait_secs": 30,
        }))
        .expect("a minimal case");
        case.inputs = (0..turns)
            .map(|_| {
                if self.rng.pct(90) {
                    Input::Text(
                        self.rng
                            .pick(&["hi", "Run it.", "héllo ✓", "", "multi\nline"])
                            .to_string(),
                    )
                } else {
                    Input::Items(vec![json!({"type": "text", "text": "with elements",
                               "text_elements": [{"byteRange": {"start": 0, "end": 4},
                                                  "placeholder": null}]})])
                }
            })
            .collect();
        // config.toml and -c: approval policy × sandbox mode, model, retries, features.
        case.approval_policy = self
            .rng
            .weighted(&[
                (40, "on-request"),
                (20, "never"),
                (15, "untrusted"),
                (10, "on-failure"),
                (15, ""),
            ])
            .to_string();
        case.sandbox_mode = self
            .rng
            .weighted(&[
                (35, "workspace-write"),
                (25, "read-only"),
                (25, "danger-full-access"),
                (15, ""),
            ])
            .to_string();
        let other = self.rng_model();
        case.model = self
            .rng
            .weighted(&[(80, MODELS[0]), (15, other), (5, "my-local-model")])
            .to_string();
        if needs.stream_drop {
            case.stream_retries = self.rng.weighted(&[(50, 0), (30, 1), (20, 2)]);
        }
        if needs.http_error && self.rng.pct(50) {
            let n = self.rng.weighted(&[(50, 1), (50, 2)]);
            case.args.extend([
                "-c".into(),
                format!("model_providers.scripted.request_max_retries={n}"),
            ]);
        }
        if needs.user_input && self.rng.pct(60) {
            case.features.push("default_mode_request_user_input".into());
            if self.wide && self.rng.pct(60) {
                // The user's answer, with content (else the harness answers `{}`).
                let answer = self.rng.weighted(&[
                    (3, json!({"answers": {"q1": {"answers": ["Yes"]}}})),
                    (
                        1,
                        json!({"answers": {"q1": {"answers": ["No", "and more ✓"]}}}),
                    ),
                    (1, json!({"answers": {"other": {"answers": []}}})),
                ]);
                case.replies
                    .insert("item/tool/requestUserInput".into(), answer);
            }
        }
        if needs.permissions && self.rng.pct(60) {
            case.features.push("request_permissions_tool".into());
        }
        if self.rng.pct(5) {
            case.config_extra.push_str(&format!(
                "service_tier = {:?}\n",
                self.rng.pick(&["fast", "flex"])
            ));
        }
        if self.rng.pct(5) {
            case.config_extra.push_str(&format!(
                "model_reasoning_effort = {:?}\n",
                self.rng.pick(&["low", "high"])
            ));
        }
        // Keys codex no longer reads, and replaced feature names (set to their defaults).
        if self.rng.pct(5) {
            let line = *self.rng.pick(&[
                "experimental_use_exec_command_tool = true\n",
                "experimental_instructions_file = \"instr.md\"\n",
                "include_apply_patch_tool = true\n",
                "experimental_use_freeform_apply_patch = false\n",
            ]);
            case.config_extra.push_str(line);
        }
        if self.rng.pct(5) {
            let alias = *self.rng.pick(&[
                "codex_hooks",
                "connectors",
                "imagegenext",
                "web_search_cached",
            ]);
            case.features.push(alias.into());
        }
        if self.rng.pct(8) {
            let (k, v) = *self.rng.pick(&[
                ("approval_policy", "\"never\""),
                ("approval_policy", "\"on-request\""),
                ("sandbox_mode", "\"danger-full-access\""),
                ("sandbox_mode", "\"workspace-write\""),
                ("model", "\"gpt-5.4\""),
            ]);
            case.args.extend(["-c".into(), format!("{k}={v}")]);
        }
        // The client: initialize, thread/start, turn/start params.
        if self.rng.pct(30) {
            case.initialize = Some(self.initialize());
        }
        let experimental = case
            .initialize
            .as_ref()
            .is_none_or(|i| i["capabilities"]["experimentalApi"] == true);
        let pct = if experimental { 7 } else { 4 };
        case.thread_params = self.params("thread/start", &[], pct);
        if needs.dynamic_tool && self.rng.pct(70) {
            case.thread_params.insert(
                "dynamicTools".into(),
                json!([{"type": "function", "name": "lookup", "description": "Looks a thing up",
                        "inputSchema": {"type": "object", "properties": {}}}]),
            );
            case.replies.insert(
                "item/tool/call".into(),
                self.rng.weighted(&[
                    (
                        3,
                        json!({"contentItems": [{"type": "inputText", "text": "found"}],
                                   "success": true}),
                    ),
                    (1, json!({"contentItems": [], "success": false})),
                ]),
            );
        }
        let uses = |c: &Case, v: &str| {
            c.thread_params
                .values()
                .any(|x| x.as_str().is_some_and(|s| s.contains(v)))
        };
        let turn_params = self.params("turn/start", &["threadId", "input"], pct / 2);
        if self.rng.pct(60) {
            case.turn_params = turn_params;
        } else if !turn_params.is_empty() {
            // Settings on one turn only (a later turn repeats or leaves them).
            let at = self.rng.below(turns);
            case.turn_params_each = vec![Map::new(); at + 1];
            case.turn_params_each[at] = turn_params;
        }
        if uses(&case, "sub") || case.turn_params.values().any(|x| x == "sub") {
            case.dirs.push("sub".into());
        }
        if self.rng.pct(50) {
            case.dirs.push("sub".into());
        }
        case.dirs.dedup();
        // The client's answers and turn controls.
        case.decisions = (0..needs.approvals).map(|_| self.decision()).collect();
        // An interrupt or a steer lands while the model's stream pauses: a client acting on a
        // stream in full flow races the server's own handling (how far the stream got differs
        // real against real). A request left unanswered is interrupted by the harness itself.
        // The trigger fires in every turn, so every turn pauses: after its first message, or
        // inside it, after its first delta.
        let control = self.rng.weighted(&[
            (90, "none"),
            (3, "interrupt_after_message"),
            (4, "interrupt_on_delta"),
            (3, "steer_on_delta"),
        ]);
        if control != "none" {
            let lead = match control {
                "interrupt_after_message" => vec![
                    json!({"kind": "message", "text": "Working on it."}),
                    json!({"kind": "sleep", "seconds": 1.0}),
                ],
                _ => vec![json!({"kind": "message", "text": "Working on it.",
                                 "deltas": ["Working", {"sleep": 1.0}, " on it."]})],
            };
            if let Some(turns) = case.scenario["turns"].as_array_mut() {
                for turn in turns {
                    if let Some(steps) = turn["steps"].as_array_mut() {
                        steps.splice(0..0, lead.clone());
                    }
                }
            }
            match control {
                "interrupt_after_message" => {
                    case.interrupt_on = Some("item/completed:agentMessage".into())
                }
                "interrupt_on_delta" => case.interrupt_on = Some("item/agentMessage/delta".into()),
                _ => {
                    case.steer = Some(self.rng.pick(&["also this", "and check ✓"]).to_string());
                    case.steer_on = Some("item/agentMessage/delta".into());
                }
            }
        }
        if turns >= 2 && self.rng.pct(15) {
            case.restart_before_turn = Some(1 + self.rng.below(turns - 1));
            case.resume_params = self.params("thread/resume", &["threadId", "history", "path"], 8);
        }
        if self.wide && self.rng.pct(6) {
            // A goal first: the server runs turns of its own (one script each) until the model
            // completes or blocks it, then the client's turns follow.
            let n = 1 + self.rng.below(2);
            let mut goal_turns = Vec::new();
            for i in 0..n {
                let mut steps = vec![json!({"kind": "message", "text": text(&mut self.rng)})];
                if self.rng.pct(50) {
                    steps.push(json!({"kind": "usage", "input": 1 + self.rng.below(40),
                                      "output": 1 + self.rng.below(40)}));
                }
                if i == n - 1 {
                    let status = *self.rng.pick(&["complete", "blocked"]);
                    steps.push(json!({"kind": "goal", "status": status}));
                    if self.rng.pct(50) {
                        steps.push(json!({"kind": "message", "text": text(&mut self.rng)}));
                    }
                }
                goal_turns.push(json!({"steps": steps}));
            }
            if let Some(turns) = case.scenario["turns"].as_array_mut() {
                goal_turns.append(turns);
                *turns = goal_turns;
            }
            case.goal = Some(
                self.rng
                    .pick(&["Write the report", "Fix ✓ the build"])
                    .to_string(),
            );
            if !case.features.iter().any(|f| f == "goals") {
                case.features.push("goals".into());
            }
        }
        if self.wide && self.rng.pct(10) {
            // A settings panel: writes (some refused), then what a read shows of them.
            let calls = self.settings();
            case.after.extend(calls);
        }
        if self.wide && self.rng.pct(10) {
            // Skills on disk: files in the user and project roots (some refused), then what
            // the lists show of them as they are turned off and on and roots are added.
            self.skills(&mut case);
        }
        if self.wide && self.rng.pct(5) {
            // An MCP server the configuration names, then what the status list shows of it.
            self.mcp(&mut case);
        }
        if self.wide && self.rng.pct(10) {
            // A sidebar: sections and projects made, renamed, moved, deleted, threads filed.
            let calls = self.organize();
            case.after.extend(calls);
        }
        if self.wide {
            // The wide net: some of the schema's other client methods, each with its required
            // params and a draw of its optional ones (the session's thread where one is named).
            let n = self.rng.weighted(&[(40, 0), (30, 1), (20, 2), (10, 4)]);
            for _ in 0..n {
                let call = self.call();
                case.after.push(call);
            }
        }
        if self.rng.pct(10) {
            case.after.push(self.rng.weighted(&[
                (
                    3,
                    json!({"method": "thread/read", "params": {"threadId": "${thread}",
                                                                "includeTurns": true}}),
                ),
                (
                    2,
                    json!({"method": "thread/turns/list", "params": {"threadId": "${thread}"}}),
                ),
                (
                    2,
                    json!({"method": "thread/fork", "params": {"threadId": "${thread}"}}),
                ),
                (1, json!({"method": "thread/list", "params": {}})),
            ]));
        }
        case
    }

    /// A settings sequence: one to three writes (by value or in a batch; keys of every kind,
    /// values of every JSON kind, so some are refused), a run-time feature flag now and then,
    /// then `config/read` (with its layers, sometimes) and the feature list.
    fn settings(&mut self) -> Vec<Value> {
        const KEYS: &[&str] = &[
            "model",
            "model_reasoning_effort",
            "approval_policy",
            "sandbox_mode",
            "features.memories",
            "features.hooks",
            "notify",
            "model_context_window",
            "hide_agent_reasoning",
            "sandbox_workspace_write",
            "project_doc_max_bytes",
            "unknown_panel.width",
            "\"a.b\".c",
            "profile",
            "",
            "a..b",
        ];
        let values = [
            json!("x"),
            json!("high"),
            json!("never"),
            json!("read-only"),
            json!("gpt-5.5"),
            json!(5),
            json!(-1),
            json!(2.5),
            json!(true),
            json!(false),
            json!(["notify-send", "done"]),
            json!({}),
            Value::Null,
        ];
        let mut out = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let edit = |rng: &mut Rng| {
                json!({"keyPath": *rng.pick(KEYS), "value": rng.pick(&values).clone(),
                       "mergeStrategy": *rng.pick(&["replace", "upsert"])})
            };
            let mut call = if self.rng.pct(60) {
                json!({"method": "config/value/write", "params": edit(&mut self.rng)})
            } else {
                let n = 1 + self.rng.below(3);
                let edits: Vec<Value> = (0..n).map(|_| edit(&mut self.rng)).collect();
                json!({"method": "config/batchWrite", "params": {"edits": edits}})
            };
            if self.rng.pct(10) {
                call["params"]["expectedVersion"] = json!("sha256:0");
            }
            if self.rng.pct(10) {
                call["params"]["filePath"] = json!(self
                    .rng
                    .pick(&["${root}/codex_home/config.toml", "/tmp/elsewhere.toml"]));
            }
            out.push(call);
        }
        if self.rng.pct(30) {
            let flag = *self
                .rng
                .pick(&["memories", "tool_suggest", "remote_plugin", "hooks"]);
            out.push(json!({"method": "experimentalFeature/enablement/set",
                            "params": {"enablement": {flag: self.rng.pct(50)}}}));
        }
        out.push(json!({"method": "config/read",
                        "params": {"includeLayers": self.rng.pct(50)}}));
        if self.rng.pct(30) {
            out.push(json!({"method": "experimentalFeature/list", "params": {"limit": 300}}));
        }
        out
    }

    /// An MCP sequence: one stdio server started (a small one in Python that lists a tool and
    /// a resource, or a program that does not exist), sometimes a second one turned off, then
    /// status lists (whole, a thread's, tools only, paged) and reloads. One enabled server at
    /// most: codex announces two servers' starts in its hash map's order.
    fn mcp(&mut self, case: &mut Case) {
        let code = serde_json::to_string(MCP_SERVER).unwrap_or_default();
        let server = match self.rng.weighted(&[(3, 0), (1, 1)]) {
            0 => format!("demo = {{ command = \"python3\", args = [\"-c\", {code}] }}"),
            _ => "demo = { command = \"/nonexistent/mcp-server\" }".to_string(),
        };
        let off = if self.rng.pct(30) {
            ", off = { command = \"python3\", enabled = false }"
        } else {
            ""
        };
        case.config_extra
            .push_str(&format!("mcp_servers = {{ {server}{off} }}\n"));
        let n = self.rng.weighted(&[(2, 1), (2, 2), (1, 3)]);
        for i in 0..n {
            let mut call = self.rng.weighted(&[
                (3, json!({"method": "mcpServerStatus/list", "params": {}})),
                (
                    2,
                    json!({"method": "mcpServerStatus/list", "params": {"threadId": "${thread}"}}),
                ),
                (
                    2,
                    json!({"method": "mcpServerStatus/list",
                           "params": {"threadId": "${thread}", "detail": "toolsAndAuthOnly"}}),
                ),
                (
                    1,
                    json!({"method": "mcpServerStatus/list", "params": {"limit": 1}}),
                ),
                (
                    1,
                    json!({"method": "mcpServerStatus/list", "params": {"cursor": "1"}}),
                ),
                (
                    1,
                    json!({"method": "config/mcpServer/reload", "params": null}),
                ),
            ]);
            if i == 0 {
                // After the thread's server has settled (a session may have no turn to wait
                // for it).
                call["delay_ms"] = json!(1500);
            }
            case.after.push(call);
        }
    }

    /// A skills sequence: up to three `SKILL.md` files in each of `$CODEX_HOME/skills`,
    /// `$HOME/.agents/skills`, an extra root and the project's `.agents/skills` (at most one
    /// refused file per root: codex lists a root's refusals in the file system's order), then
    /// lists, writes by name or path (some refused) and extra roots.
    fn skills(&mut self, case: &mut Case) {
        let roots = [
            "${codex_home}/skills",
            "${home}/.agents/skills",
            "${home}/extra",
            "${work}/.agents/skills",
        ];
        let mut named: Vec<(String, String)> = Vec::new();
        for root in roots {
            let mut refused = false;
            for i in 0..self.rng.below(4) {
                let dir = format!("{root}/{}{i}", self.rng.pick(&["s", "deep/x/s", "Ä"]));
                let name = format!("{}-{i}", self.rng.pick(&["lint", "deploy", "dup"]));
                let good = format!(
                    "---\nname: {name}\ndescription: {}\n---\nBody\n",
                    text(&mut self.rng)
                );
                let body = if refused || self.rng.pct(75) {
                    named.push((name.clone(), format!("{dir}/SKILL.md")));
                    good
                } else {
                    refused = true;
                    self.rng
                        .pick(&[
                            "no frontmatter\n",
                            "---\nname: only-a-name\n---\n",
                            "---\nname: [unclosed\ndescription: x: y: z\n---\n",
                            "---\n---\n",
                        ])
                        .to_string()
                };
                case.files.insert(format!("{dir}/SKILL.md"), body);
                if self.rng.pct(20) {
                    case.files.insert(
                        format!("{dir}/agents/openai.yaml"),
                        "interface:\n  display_name: Shown\n  brand_color: \"#123abc\"\n".into(),
                    );
                }
            }
        }
        let list = |rng: &mut Rng| {
            let mut p = json!({});
            if rng.pct(30) {
                p["forceReload"] = json!(true);
            }
            if rng.pct(30) {
                p["cwds"] = json!(["${work}"]);
            }
            json!({"method": "skills/list", "params": p})
        };
        case.after.push(list(&mut self.rng));
        // A path turned off is turned on again before the sequence ends: the path holds the
        // run's root, which differs between the two servers' runs, and so would the user
        // layer's hash in any later `config/read`.
        let mut off_paths = Vec::new();
        for _ in 0..1 + self.rng.below(4) {
            let enabled = self.rng.pct(40);
            let params = match (self.rng.below(5), named.is_empty()) {
                (0 | 1, false) => json!({"name": self.rng.pick(&named).0, "enabled": enabled}),
                (2 | 3, false) => {
                    let path = self.rng.pick(&named).1.clone();
                    if !enabled {
                        off_paths.push(path.clone());
                    }
                    json!({"path": path, "enabled": enabled})
                }
                _ => self.rng.weighted(&[
                    (1, json!({"name": "  ", "enabled": enabled})),
                    (1, json!({"enabled": enabled})),
                    (1, json!({"name": "no-such-skill", "enabled": enabled})),
                ]),
            };
            case.after
                .push(json!({"method": "skills/config/write", "params": params}));
            if self.rng.pct(25) {
                let roots = if self.rng.pct(70) {
                    json!(["${home}/extra"])
                } else {
                    json!([])
                };
                case.after.push(
                    json!({"method": "skills/extraRoots/set", "params": {"extraRoots": roots}}),
                );
            }
        }
        case.after.push(list(&mut self.rng));
        for path in off_paths {
            case.after.push(
                json!({"method": "skills/config/write", "params": {"path": path, "enabled": true}}),
            );
        }
    }

    /// A sidebar sequence: each step acts on what the one before it made (`${prev:…}`, the
    /// previous answer's ids), so the answers depend on the state the calls built: sections
    /// created, renamed, listed in pages and deleted, the session's thread filed under one or
    /// named (which stores it); projects created (some keys replayed, some names blank),
    /// imported with the thread, read, updated, moved, listed, deleted.
    fn organize(&mut self) -> Vec<Value> {
        let name = |rng: &mut Rng| json!(*rng.pick(&["Work", "  spaced  ", "", "Pinned", "Ünï"]));
        let mut out = Vec::new();
        for _ in 0..1 + self.rng.below(6) {
            let step = match self.rng.below(14) {
                0 => json!({"method": "threadSection/create",
                            "params": {"name": name(&mut self.rng)}}),
                1 => json!({"method": "threadSection/list",
                            "params": {"limit": self.rng.below(3)}}),
                2 => json!({"method": "threadSection/update",
                            "params": {"sectionId": "${prev:/section/id}",
                                       "name": name(&mut self.rng)}}),
                3 => json!({"method": "threadSection/delete",
                            "params": {"sectionId": "${prev:/section/id}"}}),
                4 => json!({"method": "thread/section/move",
                            "params": {"threadId": "${thread}",
                                       "sectionId": *self.rng.pick(&[
                                           "01984de2-8f74-7c91-a3b2-5c5e937cf318", "nope"])}}),
                5 => json!({"method": "thread/name/set",
                            "params": {"threadId": "${thread}", "name": "named"}}),
                6 => json!({"method": "project/create",
                            "params": {"idempotencyKey": *self.rng.pick(&["k1", "k2", ""]),
                                       "name": name(&mut self.rng),
                                       "roots": [{"path": "${work}"}]}}),
                7 => json!({"method": "project/import",
                            "params": {"idempotencyKey": *self.rng.pick(&["k3", "k1"]),
                                       "name": "Imported", "roots": [],
                                       "threads": ["${thread}"]}}),
                8 => json!({"method": "project/read",
                            "params": {"projectId": "${prev:/project/id}"}}),
                9 => json!({"method": "project/update",
                            "params": {"projectId": "${prev:/project/id}",
                                       "name": name(&mut self.rng)}}),
                10 => json!({"method": "project/list",
                             "params": {"limit": self.rng.below(3)}}),
                11 => json!({"method": "project/move",
                             "params": {"projectId": "${prev:/data/0/id}"}}),
                12 => json!({"method": "project/delete",
                             "params": {"projectId": "${prev:/project/id}"}}),
                _ => json!({"method": "thread/read", "params": {"threadId": "${thread}"}}),
            };
            out.push(step);
        }
        out
    }

    /// One call of a client method drawn from the schema (the harness-driven ones aside).
    pub fn call(&mut self) -> Value {
        let methods: Vec<crate::gen::Method> = self
            .schema
            .methods()
            .into_iter()
            .filter(|m| !DRIVEN.contains(&m.name.as_str()))
            .collect();
        if self.deck.is_empty() {
            // Fisher-Yates over the rng: the same seed gives the same order.
            self.deck = (0..methods.len()).collect();
            for i in (1..self.deck.len()).rev() {
                let j = self.rng.below(i + 1);
                self.deck.swap(i, j);
            }
        }
        let m = &methods[self.deck.pop().expect("refilled above")];
        let name = m.name.clone();
        let mut params = match &m.params {
            Some(p) => {
                let n = self.schema.node(p, &m.params_ptr);
                self.schema.minimal(&n, &name, 0)
            }
            None => Value::Null,
        };
        if let Value::Object(o) = &mut params {
            for (k, v) in self.params(&name, &[], 30) {
                o.insert(k, v);
            }
            // The session's own thread, mostly: a method about a thread is about this one.
            if o.contains_key("threadId") && self.rng.pct(85) {
                o.insert("threadId".into(), json!("${thread}"));
            }
        }
        let mut req = json!({"method": name});
        if !params.is_null() {
            req["params"] = params;
        }
        req
    }

    fn rng_model(&mut self) -> &'static str {
        MODELS[1 + self.rng.below(MODELS.len() - 2)]
    }

    fn initialize(&mut self) -> Value {
        let name = *self
            .rng
            .pick(&["codex-wire-harness", "vscode", "my_client", "Zed"]);
        let mut caps = Map::new();
        match self.rng.below(3) {
            0 => {
                caps.insert("experimentalApi".into(), json!(true));
            }
            1 => {
                caps.insert("experimentalApi".into(), json!(false));
            }
            _ => {}
        }
        if self.rng.pct(50) {
            let n = self.rng.below(3);
            let methods: Vec<Value> = (0..n)
                .map(|_| {
                    let common = [
                        "thread/started",
                        "thread/status/changed",
                        "item/agentMessage/delta",
                        "thread/tokenUsage/updated",
                        "account/rateLimits/updated",
                        "thread/readState/changed",
                        "configWarning",
                        "remoteControl/status/changed",
                        "item/started",
                    ];
                    if self.rng.pct(70) {
                        json!(self.rng.pick(&common))
                    } else {
                        json!(self.rng.pick(&self.notifications).clone())
                    }
                })
                .collect();
            caps.insert("optOutNotificationMethods".into(), Value::Array(methods));
        }
        let capabilities = if caps.is_empty() && self.rng.pct(50) {
            Value::Null
        } else {
            Value::Object(caps)
        };
        json!({"clientInfo": {"name": name,
                              "title": self.rng.pick(&[json!(null), json!("A Client")]),
                              "version": self.rng.pick(&["1", "0.1.0-beta"])},
               "capabilities": capabilities})
    }
}

/// The client methods a session sends (the harness's client: its own requests, then the
/// `after` ones; a recorded client's lines).
pub fn methods_sent(c: &Case) -> Vec<String> {
    if let Some(rec) = &c.recorded {
        return rec
            .steps
            .iter()
            .filter_map(|s| match s {
                codex_wire::harness::ClientStep::Send { line, .. } => {
                    serde_json::from_str::<Value>(line).ok()
                }
                _ => None,
            })
            .filter(|m| m.get("id").is_some())
            .filter_map(|m| m["method"].as_str().map(str::to_string))
            .collect();
    }
    let mut out: Vec<String> = vec!["initialize".into(), "thread/start".into()];
    let pauses = c.decisions.iter().any(|d| d == "$none");
    for (flag, method) in [
        (c.goal.is_some(), "thread/goal/set"),
        (!c.inputs.is_empty(), "turn/start"),
        (c.interrupt_on.is_some() || pauses, "turn/interrupt"),
        (c.steer.is_some(), "turn/steer"),
        (
            c.restart_before_turn.is_some() || c.kill_on.is_some(),
            "thread/resume",
        ),
        (c.compact, "thread/compact/start"),
    ] {
        if flag {
            out.push(method.into());
        }
    }
    out.extend(
        c.after
            .iter()
            .filter_map(|r| r["method"].as_str().map(str::to_string)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extra calls deal every method once before any twice, in a seed's own order.
    #[test]
    fn extra_calls_send_every_method_before_any_twice() {
        let v = crate::codex_bin::newest_version().expect("schema/<version>/");
        let schema = Schema::load(&crate::conformance::schema_path(&v)).expect("the newest bundle");
        let n = schema
            .methods()
            .iter()
            .filter(|m| !DRIVEN.contains(&m.name.as_str()))
            .count();
        assert!(n > 100, "{n} methods");
        let draw = |seed| {
            let mut g = Generator::new(&schema, seed);
            (0..n)
                .map(|_| g.call()["method"].as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        };
        let first = draw(1);
        let distinct: std::collections::BTreeSet<_> = first.iter().collect();
        assert_eq!(
            distinct.len(),
            n,
            "a method drawn twice in the first {n} calls"
        );
        assert_eq!(first, draw(1), "the same seed, the same calls");
        assert_ne!(first, draw(2), "another seed, another order");
    }
}
