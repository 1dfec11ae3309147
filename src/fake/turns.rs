//! Turn playback: one scripted turn per `turn/start` (consumed across processes through the
//! store's `turn_cursor`), notifications in the real server's order, server→client requests
//! whose answers the engine judges. A script may carry `continuations`: further server turns
//! (a goal rolling over) reported as `turn/completed` → `turn/started` pairs.

use super::server::{lock, path_str, Conn};
use super::state::{default_turn, now_ms, now_secs, scenario};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Control of a running turn, shared with `turn/interrupt`, `turn/steer` and `thread/goal/set`.
pub struct TurnCtl {
    pub thread_id: String,
    turn_id: Mutex<String>,
    interrupted: AtomicBool,
    steers: Mutex<Vec<Value>>,
    goal_status: Mutex<Option<String>>,
}

impl TurnCtl {
    pub fn turn_id(&self) -> String {
        lock(&self.turn_id).clone()
    }
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }
    fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
    pub fn steer(&self, input: Value) {
        lock(&self.steers).push(input);
    }
    pub fn set_goal_status(&self, status: &str) {
        *lock(&self.goal_status) = Some(status.to_string());
    }
}

/// How a turn ended early.
enum End {
    Failed(String),
    Interrupted,
}

/// Takes the next scripted turn (or the default one) and advances the shared cursor.
fn next_script(conn: &Conn) -> Value {
    let turns = scenario(&conn.fake.dir)["turns"].clone();
    conn.fake.store.update(|d| {
        let cursor = d["turn_cursor"].as_u64().unwrap_or(0);
        d["turn_cursor"] = json!(cursor + 1);
        turns
            .get(cursor as usize)
            .cloned()
            .unwrap_or_else(default_turn)
    })
}

fn turn_obj(id: &str, status: &str, started: i64, error: Option<&str>) -> Value {
    let done = status != "inProgress";
    let now = now_secs();
    json!({
        "id": id, "items": [], "status": status,
        "error": error.map(|m| json!({"message": m})).unwrap_or(Value::Null),
        "startedAt": started,
        "completedAt": if done { json!(now) } else { Value::Null },
        "durationMs": if done { json!((now - started) * 1000) } else { Value::Null },
    })
}

/// `turn/start`: answer with the new turn, then play it on its own thread.
pub fn start_for_request(
    conn: &Arc<Conn>,
    id: &Value,
    thread_id: &str,
    params: &Value,
) -> Result<(), String> {
    let script = next_script(conn);
    if let Some(e) = script["start_error"].as_str() {
        return Err(e.to_string());
    }
    let (ctl, started) = register(conn, thread_id);
    let turn_id = ctl.turn_id();
    conn.send(
        json!({"id": id, "result": {"turn": turn_obj(&turn_id, "inProgress", started, None)}}),
    );
    spawn(
        conn,
        ctl,
        started,
        Some(params["input"].clone()),
        script,
        false,
    );
    Ok(())
}

/// A turn the server starts by itself (goal, compaction). `script` None: the next scripted one.
pub fn start(
    conn: &Arc<Conn>,
    thread_id: &str,
    script: Option<Value>,
    goal: bool,
) -> Result<String, String> {
    let script = script.unwrap_or_else(|| next_script(conn));
    let (ctl, started) = register(conn, thread_id);
    let turn_id = ctl.turn_id();
    spawn(conn, ctl, started, None, script, goal);
    Ok(turn_id)
}

fn register(conn: &Conn, thread_id: &str) -> (Arc<TurnCtl>, i64) {
    let ctl = Arc::new(TurnCtl {
        thread_id: thread_id.to_string(),
        turn_id: Mutex::new(uuid::Uuid::now_v7().to_string()),
        interrupted: AtomicBool::new(false),
        steers: Mutex::new(Vec::new()),
        goal_status: Mutex::new(None),
    });
    lock(&conn.fake.active).insert(thread_id.to_string(), ctl.clone());
    (ctl, now_secs())
}

fn spawn(
    conn: &Arc<Conn>,
    ctl: Arc<TurnCtl>,
    started: i64,
    input: Option<Value>,
    script: Value,
    goal: bool,
) {
    let conn = conn.clone();
    let spawned = std::thread::Builder::new()
        .name("fake-turn".into())
        .spawn(move || play(&conn, &ctl, started, input, &script, goal));
    if let Err(e) = spawned {
        // Out of threads: the turn cannot run; the client still gets a completed turn.
        let _ = e;
    }
}

fn play(
    conn: &Arc<Conn>,
    ctl: &Arc<TurnCtl>,
    mut started: i64,
    input: Option<Value>,
    script: &Value,
    goal: bool,
) {
    let thread_id = ctl.thread_id.clone();
    let mut parts = vec![script.clone()];
    parts.extend(
        script["continuations"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    let rollover = Duration::from_millis(script["rollover_ms"].as_u64().unwrap_or(50));
    let count = parts.len();
    for (n, part) in parts.iter().enumerate() {
        if n > 0 {
            std::thread::sleep(rollover);
            *lock(&ctl.turn_id) = uuid::Uuid::now_v7().to_string();
            started = now_secs();
        }
        let turn_id = ctl.turn_id();
        let mut ctx = Ctx::new(conn, ctl, &turn_id);
        if goal && n == 0 {
            ctx.goal_update("active");
        }
        conn.notify(
            "turn/started",
            json!({"threadId": thread_id, "turn": turn_obj(&turn_id, "inProgress", started, None)}),
        );
        if let Some(input) = input.as_ref().filter(|_| n == 0) {
            // codex echoes the submitted input as a userMessage item
            ctx.user_message(input);
        }
        let mut outcome = Ok(());
        for step in part["steps"].as_array().into_iter().flatten() {
            outcome = ctx.check().and_then(|_| ctx.step(step));
            if outcome.is_err() {
                break;
            }
        }
        if outcome.is_ok() {
            outcome = ctx.check();
        }
        let paused = lock(&ctl.goal_status)
            .as_deref()
            .is_some_and(|s| s != "active");
        let last = n + 1 == count || outcome.is_err() || paused;
        let (status, error) = match &outcome {
            Ok(()) => ("completed", None),
            Err(End::Interrupted) => ("interrupted", None),
            Err(End::Failed(m)) => ("failed", Some(m.as_str())),
        };
        if goal && last && status == "completed" && !paused {
            ctx.goal_update("complete");
        }
        let turn = turn_obj(&turn_id, status, started, error);
        let mut stored = turn.clone();
        stored["items"] = json!(ctx.items);
        conn.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            if !t["turns"].is_array() {
                t["turns"] = json!([]);
            }
            if let Some(ts) = t["turns"].as_array_mut() {
                ts.push(stored.clone());
            }
            t["updatedAt"] = json!(now_secs());
        });
        conn.write_rollout(&thread_id);
        if last {
            lock(&conn.fake.active).remove(&thread_id);
        }
        conn.notify(
            "turn/completed",
            json!({"threadId": thread_id, "turn": turn}),
        );
        if last {
            break;
        }
    }
}

struct Ctx<'a> {
    conn: &'a Arc<Conn>,
    ctl: &'a TurnCtl,
    turn_id: String,
    items: Vec<Value>,
    n: usize,
}

impl<'a> Ctx<'a> {
    fn new(conn: &'a Arc<Conn>, ctl: &'a TurnCtl, turn_id: &str) -> Self {
        Ctx {
            conn,
            ctl,
            turn_id: turn_id.to_string(),
            items: Vec::new(),
            n: 0,
        }
    }

    fn new_id(&mut self) -> String {
        self.n += 1;
        let short: String = self
            .turn_id
            .chars()
            .filter(|c| *c != '-')
            .take(12)
            .collect();
        format!("item_{short}_{}", self.n)
    }

    fn scope(&self, extra: Value) -> Value {
        let mut m = Map::new();
        m.insert("threadId".into(), json!(self.ctl.thread_id));
        m.insert("turnId".into(), json!(self.turn_id));
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        Value::Object(m)
    }

    fn notify(&self, method: &str, extra: Value) {
        self.conn.notify(method, self.scope(extra));
    }

    fn started(&self, item: &Value) {
        self.notify(
            "item/started",
            json!({"item": item, "startedAtMs": now_ms()}),
        );
    }

    fn completed(&mut self, item: Value) {
        self.notify(
            "item/completed",
            json!({"item": item, "completedAtMs": now_ms()}),
        );
        self.items.push(item);
    }

    fn item(&mut self, item: Value) {
        self.started(&item);
        self.completed(item);
    }

    fn user_message(&mut self, input: &Value) {
        let id = self.new_id();
        self.item(json!({"type": "userMessage", "id": id, "content": input}));
    }

    fn goal_update(&self, status: &str) {
        let thread_id = self.ctl.thread_id.clone();
        let goal = self.conn.fake.store.update(|d| {
            let g = &mut d["threads"][&thread_id]["goal"];
            if !g.is_object() {
                let now = now_secs();
                *g = json!({"createdAt": now, "objective": "", "status": status,
                            "threadId": thread_id, "timeUsedSeconds": 0, "tokenBudget": null,
                            "tokensUsed": 0, "updatedAt": now});
            }
            g["status"] = json!(status);
            g["updatedAt"] = json!(now_secs());
            g.clone()
        });
        self.notify("thread/goal/updated", json!({"goal": goal}));
    }

    /// Between steps: steered input becomes a userMessage item; an interrupt ends the turn.
    fn check(&mut self) -> Result<(), End> {
        let steers: Vec<Value> = std::mem::take(&mut *lock(&self.ctl.steers));
        for s in steers {
            self.user_message(&s);
        }
        if self.ctl.interrupted() || self.conn.is_closed() {
            return Err(End::Interrupted);
        }
        Ok(())
    }

    fn timeout(&self) -> Duration {
        let secs = scenario(&self.conn.fake.dir)["request_timeout"]
            .as_f64()
            .unwrap_or(60.0);
        Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))
    }

    /// A server→client request: `params` (defaults) overridden by the step's own `params`.
    fn request(&self, method: &str, params: Value, step: &Value) -> Option<Value> {
        let mut params = params;
        if let (Some(p), Some(over)) = (params.as_object_mut(), step["params"].as_object()) {
            p.extend(over.clone());
        }
        self.conn.server_request(method, params, self.timeout())
    }

    fn cwd(&self) -> String {
        let data = self.conn.fake.store.load();
        data["threads"][&self.ctl.thread_id]["cwd"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| path_str(&self.conn.fake.cwd))
    }

    fn step(&mut self, step: &Value) -> Result<(), End> {
        let kind = step["kind"].as_str().unwrap_or_default();
        match kind {
            "reasoning" => self.reasoning(step),
            "command" => self.command(step),
            "message" => self.message(step),
            "message_partial" => {
                let id = self.new_id();
                self.started(&json!({"type": "agentMessage", "id": id, "text": ""}));
                self.notify(
                    "item/agentMessage/delta",
                    json!({"itemId": id, "delta": str_of(step, "text", "")}),
                );
            }
            "usage" => self.usage(step),
            "compaction" => {
                let id = self.new_id();
                self.item(json!({"type": "contextCompaction", "id": id}));
            }
            "error_note" => self.notify(
                "error",
                json!({"error": {"message": str_of(step, "message", "error")},
                       "willRetry": step["will_retry"].as_bool().unwrap_or(true)}),
            ),
            "fail" => return Err(End::Failed(str_of(step, "message", "turn failed"))),
            "crash" => crash(self.conn, step),
            "progress" => return self.progress(step),
            "sleep" => {
                return self.wait(Duration::from_secs_f64(
                    step["seconds"].as_f64().unwrap_or(0.0).clamp(0.0, 86_400.0),
                ))
            }
            "permissions" => {
                let id = self.new_id();
                let params = self.scope(json!({"itemId": id, "startedAtMs": now_ms(),
                    "cwd": self.cwd(), "reason": step["reason"],
                    "permissions": {"network": {"enabled": true}}}));
                self.request("item/permissions/requestApproval", params, step);
            }
            "grandchild" => grandchild(self.conn),
            "file_change" => self.file_change(step),
            "user_input" => {
                let id = self.new_id();
                let questions = step.get("questions").cloned().unwrap_or_else(|| {
                    json!([{"id": "q1", "header": "Question", "question": "Proceed?",
                            "options": [{"label": "Yes", "description": "Go ahead"},
                                        {"label": "No", "description": "Stop"}]}])
                });
                let params =
                    self.scope(json!({"itemId": id, "questions": questions, "isBlocking": true}));
                self.request("item/tool/requestUserInput", params, step);
            }
            "elicitation" => {
                let params = self.scope(json!({
                    "serverName": str_of(step, "server", "fake-mcp"),
                    "mode": "form",
                    "message": str_of(step, "message", "Please confirm"),
                    "requestedSchema": step.get("schema").cloned().unwrap_or_else(|| json!(
                        {"type": "object", "properties": {"ok": {"type": "boolean"}}})),
                }));
                self.request("mcpServer/elicitation/request", params, step);
            }
            "tool_call" => self.tool_call(step),
            "auth_refresh" => {
                self.request(
                    "account/chatgptAuthTokens/refresh",
                    json!({"reason": "unauthorized", "previousAccountId": null}),
                    step,
                );
            }
            "attestation" => {
                self.request("attestation/generate", json!({}), step);
            }
            "request" => {
                let method = str_of(step, "method", "");
                self.request(&method, json!({}), step);
            }
            "notify" => {
                let method = str_of(step, "method", "");
                self.conn
                    .notify(&method, step.get("params").cloned().unwrap_or(json!({})));
            }
            other => self.conn.fake.record(json!({
                "event": "scenario_error", "message": format!("unknown step kind `{other}`")})),
        }
        Ok(())
    }

    fn reasoning(&mut self, step: &Value) {
        let id = self.new_id();
        let summary: Vec<String> = strings(&step["summary"]);
        self.started(&json!({"type": "reasoning", "id": id, "summary": [], "content": []}));
        for (index, part) in summary.iter().enumerate() {
            let chars: Vec<char> = part.chars().collect();
            let (a, b) = chars.split_at(chars.len() / 2);
            for chunk in [a, b] {
                let delta: String = chunk.iter().collect();
                self.notify(
                    "item/reasoning/summaryTextDelta",
                    json!({"itemId": id, "delta": delta, "summaryIndex": index}),
                );
            }
        }
        self.completed(json!({"type": "reasoning", "id": id, "summary": summary,
                              "content": strings(&step["content"])}));
    }

    fn command(&mut self, step: &Value) {
        let id = self.new_id();
        let command = str_of(step, "command", "true");
        let cwd = step["cwd"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| self.cwd());
        let base = json!({"type": "commandExecution", "id": id, "command": command, "cwd": cwd,
            "processId": null, "source": "agent",
            "commandActions": [{"type": "unknown", "command": command}]});
        let with = |extra: Value| merge(&base, extra);
        self.started(&with(
            json!({"status": "inProgress", "aggregatedOutput": null,
                                  "exitCode": null, "durationMs": null}),
        ));
        let mut accepted = true;
        if step["approval"].as_bool().unwrap_or(true) {
            let params = self.scope(json!({"itemId": id, "startedAtMs": now_ms(),
                "command": command, "cwd": cwd, "reason": step["reason"]}));
            let reply = self.request("item/commandExecution/requestApproval", params, step);
            let decision = reply.map(|r| r["result"]["decision"].clone());
            accepted = match decision {
                Some(Value::String(d)) => d == "accept" || d == "acceptForSession",
                Some(Value::Object(o)) => o.contains_key("acceptWithExecpolicyAmendment"),
                _ => false,
            };
        }
        if !accepted {
            self.completed(with(json!({"status": "declined", "aggregatedOutput": null,
                                       "exitCode": null, "durationMs": null})));
            return;
        }
        let output = str_of(step, "output", "");
        self.notify(
            "item/commandExecution/outputDelta",
            json!({"itemId": id, "delta": output}),
        );
        let code = step["exit_code"].as_i64().unwrap_or(0);
        let status = if code == 0 { "completed" } else { "failed" };
        self.completed(with(json!({"status": status, "aggregatedOutput": output,
                                   "exitCode": code, "durationMs": 7})));
    }

    fn file_change(&mut self, step: &Value) {
        let id = self.new_id();
        let path = step["path"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{}/README.md", self.cwd()));
        let kind = step["change"].as_str().unwrap_or("add");
        let changes = json!([{"path": path, "kind": {"type": kind},
                              "diff": str_of(step, "diff", "+hello\n")}]);
        let base = json!({"type": "fileChange", "id": id, "changes": changes});
        self.started(&merge(&base, json!({"status": "inProgress"})));
        let mut accepted = true;
        if step["approval"].as_bool().unwrap_or(true) {
            let params = self.scope(json!({"itemId": id, "startedAtMs": now_ms(),
                                           "reason": step["reason"], "grantRoot": null}));
            let reply = self.request("item/fileChange/requestApproval", params, step);
            let d = reply.map(|r| r["result"]["decision"].clone());
            accepted = matches!(
                d.as_ref().and_then(Value::as_str),
                Some("accept" | "acceptForSession")
            );
        }
        let status = if accepted { "completed" } else { "declined" };
        self.completed(merge(&base, json!({"status": status})));
    }

    fn tool_call(&mut self, step: &Value) {
        let id = self.new_id();
        let tool = str_of(step, "tool", "lookup");
        let arguments = step.get("arguments").cloned().unwrap_or(json!({}));
        let base = json!({"type": "dynamicToolCall", "id": id, "tool": tool,
                          "arguments": arguments, "namespace": step["namespace"]});
        self.started(&merge(
            &base,
            json!({"status": "inProgress", "contentItems": null,
                                           "success": null, "durationMs": null}),
        ));
        let params = self.scope(json!({"callId": id, "tool": tool, "arguments": arguments,
                                       "namespace": step["namespace"]}));
        let reply = self.request("item/tool/call", params, step);
        let result = reply.map(|r| r["result"].clone()).unwrap_or(Value::Null);
        let success = result["success"].as_bool().unwrap_or(false);
        let items = result
            .get("contentItems")
            .filter(|v| v.is_array())
            .cloned()
            .unwrap_or(json!([]));
        let status = if success { "completed" } else { "failed" };
        self.completed(merge(
            &base,
            json!({"status": status, "contentItems": items,
                                           "success": success, "durationMs": 3}),
        ));
    }

    fn message(&mut self, step: &Value) {
        let id = self.new_id();
        let text = str_of(step, "text", "");
        let phase = step.get("phase").cloned().unwrap_or(Value::Null);
        self.started(&json!({"type": "agentMessage", "id": id, "text": "", "phase": phase}));
        let chars: Vec<char> = text.chars().collect();
        let chunks = step["chunks"].as_u64().unwrap_or(3).max(1) as usize;
        let size = chars.len().div_ceil(chunks).max(1);
        for chunk in chars.chunks(size) {
            let delta: String = chunk.iter().collect();
            self.notify(
                "item/agentMessage/delta",
                json!({"itemId": id, "delta": delta}),
            );
        }
        self.completed(json!({"type": "agentMessage", "id": id, "text": text, "phase": phase}));
    }

    /// `last` is this step; `total` is the thread's running sum, as the real server reports.
    fn usage(&mut self, step: &Value) {
        let n = |k: &str, d: i64| step[k].as_i64().unwrap_or(d);
        let (input, output) = (n("input", 0), n("output", 10));
        let last = json!({"inputTokens": input, "cachedInputTokens": n("cached", 0),
            "outputTokens": output, "reasoningOutputTokens": n("reasoning", 0),
            "totalTokens": input + output});
        let thread_id = self.ctl.thread_id.clone();
        let total = self.conn.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id]["usage"];
            let mut sum = Map::new();
            for (k, v) in last.as_object().into_iter().flatten() {
                let prev = t[k].as_i64().unwrap_or(0);
                sum.insert(k.clone(), json!(prev + v.as_i64().unwrap_or(0)));
            }
            *t = Value::Object(sum);
            t.clone()
        });
        self.notify(
            "thread/tokenUsage/updated",
            json!({"tokenUsage": {"last": last, "total": total,
                                  "modelContextWindow": n("window", 272000)}}),
        );
    }

    /// Keeps the turn busy for `seconds`, a delta every `interval` (a model at work).
    fn progress(&mut self, step: &Value) -> Result<(), End> {
        let id = self.new_id();
        self.started(&json!({"type": "agentMessage", "id": id, "text": ""}));
        let deadline = Instant::now()
            + Duration::from_secs_f64(step["seconds"].as_f64().unwrap_or(1.0).clamp(0.0, 86_400.0));
        let interval =
            Duration::from_secs_f64(step["interval"].as_f64().unwrap_or(0.25).clamp(0.001, 60.0));
        let mut text = String::new();
        while Instant::now() < deadline {
            self.check()?;
            text.push('.');
            self.notify(
                "item/agentMessage/delta",
                json!({"itemId": id, "delta": "."}),
            );
            self.wait(interval)?;
        }
        self.check()?;
        let text = step["text"].as_str().map(str::to_string).unwrap_or(text);
        self.completed(json!({"type": "agentMessage", "id": id, "text": text}));
        Ok(())
    }

    /// Sleeps, waking early for steered input and interrupts.
    fn wait(&mut self, d: Duration) -> Result<(), End> {
        let end = Instant::now() + d;
        while Instant::now() < end {
            // Steered input shows up while the model works; an interrupt wakes the turn.
            self.check()?;
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
        }
        Ok(())
    }
}

fn str_of(v: &Value, key: &str, default: &str) -> String {
    v[key].as_str().unwrap_or(default).to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn merge(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    if let (Some(o), Value::Object(e)) = (out.as_object_mut(), extra) {
        o.extend(e);
    }
    out
}

/// The process dies mid-turn, as a crashing codex would: the store holds only whole writes.
fn crash(conn: &Conn, step: &Value) {
    let code = step["code"].as_i64().unwrap_or(1) as i32;
    conn.fake.record(json!({"event": "crash", "code": code}));
    let msg = format!("{}\n", str_of(step, "stderr", "fake codex: fatal error"));
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
    std::process::exit(code);
}

/// A descendant in its own session (like codex's stdio MCP servers); it lives until the
/// harness creates `release-grandchildren` in the state dir, or 600 s.
fn grandchild(conn: &Conn) {
    use std::os::unix::process::CommandExt;
    let release = conn.fake.dir.join(super::GRANDCHILD_RELEASE);
    let script = "i=0; while [ ! -e \"$1\" ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i+1)); done";
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", script, "grandchild", &path_str(&release)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid and sigprocmask are async-signal-safe and touch no parent memory. The
    // fake blocks SIGTERM for its sigwait thread; the grandchild must not inherit that.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => conn
            .fake
            .record(json!({"event": "grandchild", "child_pid": child.id()})),
        Err(e) => conn
            .fake
            .record(json!({"event": "scenario_error", "message": format!("grandchild: {e}")})),
    }
}
