//! What each tool call of the model does, as codex runs it: commands, patches, dynamic tools,
//! questions to the user, permission requests, goal updates — the gates, approval requests and
//! reviews around them; and the steps only the fake plays (crash, notifications, requests).

use super::ctl::{Decision, End, Gate};
use super::ctx::{Ctx, TOOL_DISPATCH};
use super::exec::{self, run_command};
use super::items::agent_message;
use super::patch;
use crate::fake::rpc::Conn;
use crate::fake::settings;
use crate::fake::shell;
use crate::fake::state::{lock, path_str};
use crate::fake::state::{now_ms, scenario};
use crate::model::events::Item;
use crate::model::script::GUARDIAN_RATIONALE;
use crate::model::step::{Command, Params, Progress, Scenario, Step};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `exec_command`'s arguments, as codex's shell tool reads them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ExecArgs {
    cmd: String,
    #[serde(default)]
    workdir: Option<String>,
    #[serde(default)]
    sandbox_permissions: Option<String>,
    #[serde(default)]
    justification: Option<Value>,
}

/// The arguments of a function call, or None when they do not read (codex answers the model
/// with the error; the client sees nothing).
fn args<T: for<'de> Deserialize<'de>>(arguments: &str) -> Option<T> {
    serde_json::from_str(arguments).ok()
}

#[derive(Deserialize)]
struct UserInputArgs {
    #[serde(default)]
    questions: Value,
}

#[derive(Deserialize)]
struct GoalArgs {
    status: String,
}

#[derive(Deserialize)]
struct PermissionArgs {
    #[serde(default)]
    reason: Value,
}

/// The request overrides a step gives (`params`).
fn overrides(step: Option<&Step>) -> Params {
    match step? {
        Step::Command(c) => c.params.clone(),
        Step::FileChange(f) => f.params.clone(),
        Step::ToolCall(t) => t.params.clone(),
        Step::UserInput(u) => u.params.clone(),
        Step::Permissions(p) => p.params.clone(),
        _ => None,
    }
}

impl<'a> Ctx<'a> {
    /// A tool call the stream carried, run as codex routes it by name (an unknown tool or
    /// arguments that do not read: codex answers the model itself, the client sees nothing).
    pub(super) fn tool_call(&mut self, item: Item, step: Option<&Step>) -> Result<(), End> {
        let over = overrides(step);
        match item {
            Item::FunctionCall {
                call_id,
                name,
                arguments,
                namespace,
            } => match name.as_str() {
                "exec_command" => match args::<ExecArgs>(&arguments) {
                    Some(a) => {
                        let c = match step {
                            Some(Step::Command(c)) => Some(c),
                            _ => None,
                        };
                        return self.command(&call_id, &a, c);
                    }
                    None => self.rollout.unkept(),
                },
                "request_user_input" => match args::<UserInputArgs>(&arguments) {
                    Some(a) => self.user_input(&call_id, &a.questions, &over),
                    None => self.rollout.unkept(),
                },
                "request_permissions" => match args::<PermissionArgs>(&arguments) {
                    Some(a) => return self.permissions(&call_id, &a.reason, &over),
                    None => self.rollout.unkept(),
                },
                "update_goal" => {
                    if let Some(a) = args::<GoalArgs>(&arguments) {
                        self.goal_update(&a.status);
                    }
                    // Its call, the response's usage record and its output: no item (0.171.0,
                    // fidelity s7070001_0475).
                    self.rollout.unkept();
                }
                _ => self.dynamic_tool(&call_id, &name, namespace.as_deref(), &arguments, &over),
            },
            Item::CustomToolCall {
                call_id,
                name,
                input,
            } if name == "apply_patch" => return self.file_change(&call_id, &input, &over),
            _ => self.rollout.unkept(),
        }
        Ok(())
    }

    /// `request_permissions`: the tool exists only with its feature, and codex refuses it
    /// without asking under `never` (or a granular policy without `request_permissions`).
    fn permissions(&mut self, id: &str, reason: &Value, over: &Params) -> Result<(), End> {
        let policy = self.approval_policy_value();
        let has_tool = self
            .conn
            .fake
            .config()
            .features
            .iter()
            .any(|f| f == "request_permissions_tool");
        // No item either way: the call and its output are in the rollout.
        self.rollout.unkept();
        if !has_tool || policy == "never" || policy["granular"]["request_permissions"] == false {
            return Ok(());
        }
        // Nor without an environment to grant them in (`129_permissions_without_environments`,
        // fidelity s23230001_0107).
        if self.no_environment() {
            return Ok(());
        }
        let permissions = json!({"network": {"enabled": true}, "fileSystem": null});
        if self.auto_review() {
            // The reviewer decides instead of the client (seen on all three versions).
            let action = json!({"type": "requestPermissions", "reason": reason,
                                "permissions": permissions});
            self.review(id, now_ms(), action);
            return Ok(());
        }
        self.status(json!({"type": "active", "activeFlags": ["waitingOnApproval"]}));
        let params = self.scope(json!({"itemId": id, "environmentId": "local",
            "startedAtMs": now_ms(), "cwd": self.cwd(), "reason": reason,
            "permissions": permissions}));
        // Unanswered when the turn is interrupted: resolved only after the turn's end, as a
        // command's approval (fidelity s28280001_0002 on 0.171.0).
        if self
            .request("item/permissions/requestApproval", params, over)
            .is_none()
        {
            return self.unanswered();
        }
        self.resolved();
        self.status(json!({"type": "active", "activeFlags": []}));
        Ok(())
    }

    /// A step only the fake plays (`index`: its place in the response, which names its item).
    pub(super) fn local(&mut self, step: &Step, index: usize) -> Result<(), End> {
        match step {
            Step::Compaction {} => {
                let id = uuid::Uuid::now_v7().to_string();
                self.item(json!({"type": "contextCompaction", "id": id}));
            }
            Step::Crash { code, stderr } => crash(self.conn, *code, stderr),
            Step::Progress(p) => return self.progress(&format!("msg_{}_{index}", self.resp), p),
            Step::Grandchild {} => grandchild(self.conn),
            Step::Elicitation {
                server,
                message,
                schema,
                params,
            } => {
                let p = self.scope(json!({
                    "serverName": server.as_deref().unwrap_or("fake-mcp"),
                    "mode": "form",
                    "message": message.as_deref().unwrap_or("Please confirm"),
                    "requestedSchema": schema.clone().unwrap_or_else(|| json!(
                        {"type": "object", "properties": {"ok": {"type": "boolean"}}})),
                }));
                self.request("mcpServer/elicitation/request", p, params);
            }
            Step::AuthRefresh { params } => {
                self.request(
                    "account/chatgptAuthTokens/refresh",
                    json!({"reason": "unauthorized", "previousAccountId": null}),
                    params,
                );
            }
            Step::Attestation { params } => {
                self.request("attestation/generate", json!({}), params);
            }
            Step::Request { method, params } => {
                self.request(method, json!({}), params);
            }
            Step::Notify { method, params } => {
                self.conn
                    .notify(method, params.clone().unwrap_or_else(|| json!({})));
            }
            // The model's steps never reach here (they are events).
            _ => {}
        }
        Ok(())
    }

    pub(super) fn timeout(&self) -> Duration {
        let secs = scenario(&self.conn.fake.dir)["request_timeout"]
            .as_f64()
            .unwrap_or(60.0);
        Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))
    }

    /// A server→client request: `params` (defaults) overridden by the step's own `params`.
    pub(super) fn request(&self, method: &str, params: Value, over: &Params) -> Option<Value> {
        self.request_answer(method, params, over).map(|a| a.msg)
    }

    /// [`Self::request`], with what the engine found wrong with the reply.
    fn request_answer(
        &self,
        method: &str,
        params: Value,
        over: &Params,
    ) -> Option<crate::fake::rpc::Answer> {
        let mut params = params;
        if let (Some(p), Some(over)) = (params.as_object_mut(), over) {
            p.extend(over.clone());
        }
        let ctl = self.ctl;
        self.conn
            .server_request(method, params, self.timeout(), &|| ctl.interrupted())
    }

    /// An approval request answered; `serverRequest/resolved` follows the answer.
    pub(super) fn approval(&self, method: &str, params: Value, over: &Params) -> Option<Value> {
        let reply = self.request(method, params, over);
        if let Some(id) = self.conn.last_request_id() {
            self.notify_thread("serverRequest/resolved", json!({"requestId": id}));
        }
        reply
    }

    pub(super) fn notify_thread(&self, method: &str, extra: Value) {
        let mut m = Map::new();
        m.insert("threadId".into(), json!(self.ctl.thread_id));
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        self.conn.notify(method, Value::Object(m));
    }

    /// The thread's approval policy as set (a string, or a granular object).
    pub(super) fn approval_policy_value(&self) -> Value {
        // codex's reviewer asks no one.
        if self.review_child {
            return json!("never");
        }
        let data = self.conn.fake.store.load();
        match &data["threads"][&self.ctl.thread_id]["approvalPolicy"] {
            Value::Null => json!(self.conn.fake.config().approval_policy),
            v => v.clone(),
        }
    }

    /// The thread's sandbox policy type (`readOnly`, `workspaceWrite`, `dangerFullAccess`).
    /// The workspace-write sandbox's writable roots beyond the cwd, in the thread's order.
    fn writable_roots(&self) -> Vec<String> {
        let data = self.conn.fake.store.load();
        data["threads"][&self.ctl.thread_id]["sandbox"]["writableRoots"]
            .as_array()
            .map(|roots| {
                roots
                    .iter()
                    .filter_map(|r| r.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn sandbox_type(&self) -> String {
        let data = self.conn.fake.store.load();
        let t = &data["threads"][&self.ctl.thread_id];
        match t["sandbox"]["type"].as_str() {
            Some(s) => s.to_string(),
            None => match self.conn.fake.config().sandbox_mode.as_deref() {
                Some("workspace-write") => "workspaceWrite".into(),
                Some("danger-full-access") => "dangerFullAccess".into(),
                _ => "readOnly".into(),
            },
        }
    }

    /// Where the model's tools work: the thread's first environment's cwd when it names
    /// environments (a `cwd` param beside them is only the thread's own; seen on 0.171.0),
    /// else the thread's cwd.
    pub(super) fn cwd(&self) -> String {
        let data = self.conn.fake.store.load();
        let thread = &data["threads"][&self.ctl.thread_id];
        thread["environments"][0]["cwd"]
            .as_str()
            .or_else(|| thread["cwd"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| path_str(&self.conn.fake.cwd))
    }

    /// codex's exec policy file, where an approval "with execpolicy amendment" lands.
    pub(super) fn rules_file(&self) -> std::path::PathBuf {
        self.conn.fake.codex_home.join("rules/default.rules")
    }

    /// Appends an allow rule for a command prefix, as codex writes it.
    pub(super) fn allow_prefix(&self, pattern: &[Value]) {
        let words: Vec<String> = pattern.iter().map(Value::to_string).collect();
        let rule = format!(
            "prefix_rule(pattern=[{}], decision=\"allow\")\n",
            words.join(", ")
        );
        let path = self.rules_file();
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, rule.as_bytes()));
    }

    /// The commands of the script no allow rule of the policy file covers (a rule covers a
    /// command whose words start with its pattern), in the script's order.
    pub(super) fn policy_unmatched(&self, raw: &str) -> Vec<Vec<String>> {
        // codex checks each command of a script it can parse as plain commands (else
        // `/bin/bash -lc <script>` whole) and takes the strictest decision, so one command no
        // rule allows is asked about, and the amendment it proposes is that command's
        // (codex `check_multiple`; fidelity s16160001_0164: with an `echo` rule,
        // `echo a; sleep 0.3; echo b` asks, proposing `sleep 0.3`).
        let text = std::fs::read_to_string(self.rules_file()).unwrap_or_default();
        let patterns: Vec<Vec<String>> = text
            .lines()
            .filter_map(|line| {
                let rest = line.trim().strip_prefix("prefix_rule(pattern=")?;
                let (pattern, tail) = rest.split_once(']')?;
                let pattern: Vec<String> =
                    serde_json::from_str(&format!("{pattern}]")).unwrap_or_default();
                (tail.contains("decision=\"allow\"") && !pattern.is_empty()).then_some(pattern)
            })
            .collect();
        shell::policy_commands(raw)
            .into_iter()
            .filter(|words| {
                !patterns
                    .iter()
                    .any(|p| words.len() >= p.len() && p.iter().zip(words).all(|(p, w)| p == w))
            })
            .collect()
    }

    /// What codex does with a shell call under the thread's approval policy and sandbox (checked
    /// on 0.171.0 for every policy × sandbox × escalation): an escalation (`approval`, the
    /// seed's default) is asked about under `on-request` unless the sandbox is full access, and
    /// refused outright under `never` (or a granular policy without `sandbox_approval`);
    /// `untrusted` asks about every command.
    pub(super) fn command_gate(&self, escalated: bool) -> Gate {
        let policy = self.approval_policy_value();
        // An external sandbox is the client's: codex runs commands as under full access.
        let sandbox = self.sandbox_type();
        let full = sandbox == "dangerFullAccess" || sandbox == "externalSandbox";
        match (&policy, policy.get("granular")) {
            (_, Some(g)) => match (g["sandbox_approval"] == true, escalated, full) {
                (false, true, _) => Gate::Refuse,
                (true, true, false) => Gate::Ask,
                _ => Gate::Run,
            },
            (Value::String(p), None) if p == "never" => {
                if escalated {
                    Gate::Refuse
                } else {
                    Gate::Run
                }
            }
            (Value::String(p), None) if p == "untrusted" => Gate::Ask,
            _ if escalated && !full => Gate::Ask,
            _ => Gate::Run,
        }
    }

    /// A shell tool call: asked about, refused or run as [`Self::command_gate`] says; an
    /// approved or plain command runs for real (unless the step scripts its output), as the real
    /// shell tool does.
    pub(super) fn command(
        &mut self,
        id: &str,
        args: &ExecArgs,
        step: Option<&Command>,
    ) -> Result<(), End> {
        let over = step.and_then(|s| s.params.clone());
        if self.no_environment() {
            self.rollout.unkept();
            return Ok(());
        }
        let raw = args.cmd.clone();
        let command = shell::shell_display(&raw);
        // The model's `workdir`, against the thread's cwd.
        let cwd = settings::resolve_path(
            args.workdir.as_deref().unwrap_or_default(),
            Path::new(&self.cwd()),
        );
        let actions = json!(shell::command_actions(&raw, &cwd));
        let item =
            |source: &str, status: &str, pid: Value, output: Value, code: Value, ms: Value| {
                json!({"type": "commandExecution", "id": id, "pluginId": null, "scriptPath": null,
                   "command": command, "cwd": cwd, "processId": pid, "source": source,
                   "status": status, "commandActions": actions, "aggregatedOutput": output,
                   "exitCode": code, "durationMs": ms})
            };
        // A command that has not run (waiting for a verdict, declined or failed by the answer).
        let unrun = |status: &str| {
            item(
                "agent",
                status,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            )
        };
        let escalated = args.sandbox_permissions.as_deref() == Some("require_escalated");
        let session_ok = lock(&self.ctl.session_approved).contains(&raw)
            || self.policy_unmatched(&raw).is_empty();
        let gate = match self.command_gate(escalated) {
            Gate::Ask if session_ok => Gate::Run,
            g => g,
        };
        // Set when the command was approved: its item started before the request.
        let mut approved_at = None;
        match gate {
            // codex tells the model it cannot escalate; the client hears nothing of it.
            Gate::Refuse => {
                self.rollout.unkept();
                return Ok(());
            }
            Gate::Run => {}
            Gate::Ask if self.auto_review() => {
                // The reviewer, not the client, decides (`scenario.json` `guardian`).
                let reviewed = json!([{"type": "unknown", "command": command}]);
                let mut pending = unrun("inProgress");
                pending["commandActions"] = reviewed.clone();
                let at = self.started(&pending);
                let action = json!({"type": "command", "source": "unifiedExec",
                                    "command": command, "cwd": cwd});
                if !self.review(id, at, action) {
                    let mut declined = unrun("declined");
                    declined["commandActions"] = reviewed;
                    self.completed(declined, at);
                    return Ok(());
                }
                approved_at = Some(at);
            }
            Gate::Ask => {
                self.status(json!({"type": "active", "activeFlags": ["waitingOnApproval"]}));
                let at = self.started(&unrun("inProgress"));
                let argv = self
                    .policy_unmatched(&raw)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| shell::execpolicy_amendment(&raw));
                let mut params = Map::new();
                for (k, v) in [
                    ("kind", json!("command")),
                    ("threadId", json!(self.ctl.thread_id)),
                    ("turnId", json!(self.turn_id)),
                    ("itemId", json!(id)),
                    ("startedAtMs", json!(at)),
                    ("environmentId", json!("local")),
                ] {
                    params.insert(k.into(), v);
                }
                // The model's justification; codex leaves the key out when there is none (and
                // for a command only `untrusted` asks about).
                if let Some(r) = args.justification.as_ref().filter(|_| escalated) {
                    params.insert("reason".into(), r.clone());
                }
                for (k, v) in [
                    ("command", json!(command)),
                    ("cwd", json!(cwd)),
                    (
                        "commandActions",
                        json!(shell::approval_command_actions(&raw, &cwd)),
                    ),
                    ("proposedExecpolicyAmendment", json!(argv)),
                    (
                        "availableDecisions",
                        json!(["accept",
                            {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": argv}},
                            "cancel"]),
                    ),
                ] {
                    params.insert(k.into(), v);
                }
                let method = "item/commandExecution/requestApproval";
                let Some(reply) = self.request(method, Value::Object(params), &over) else {
                    return self.unanswered_call();
                };
                self.resolved();
                match self.decision(method, &reply) {
                    Decision::Accept(d) => {
                        if d == "acceptForSession" {
                            lock(&self.ctl.session_approved).push(raw.clone());
                        }
                        if let Some(a) =
                            d["acceptWithExecpolicyAmendment"]["execpolicy_amendment"].as_array()
                        {
                            self.allow_prefix(a);
                            // codex tells the model in a developer message ("Approved command
                            // prefix saved") with a world-state entry: two rollout entries
                            // after the response (kept fidelity session s5150001_0039 on
                            // 0.171.0; s34340001_0479).
                            self.rollout.defer(2);
                        }
                        self.status(json!({"type": "active", "activeFlags": []}));
                        // An interrupt sent with the answer stops the command before it runs.
                        std::thread::sleep(TOOL_DISPATCH);
                        if self.ctl.interrupted() {
                            return self.interrupted_after_response();
                        }
                        approved_at = Some(at);
                    }
                    // A declined command (or one whose request failed) is not kept in the turn.
                    d => {
                        let status = if d == Decision::Failed {
                            "failed"
                        } else {
                            "declined"
                        };
                        self.completed_unkept(unrun(status), at);
                        self.status(json!({"type": "active", "activeFlags": []}));
                        if d == Decision::Cancel {
                            self.end_cancelled_response();
                            return Err(End::Cancelled);
                        }
                        return Ok(());
                    }
                }
            }
        }
        let started_item = |pid: &Value| {
            item(
                "unifiedExecStartup",
                "inProgress",
                pid.clone(),
                Value::Null,
                Value::Null,
                Value::Null,
            )
        };
        let (conn, scope) = (self.conn.clone(), self.scope(json!({"itemId": id})));
        let scripted = step.and_then(|s| {
            s.output
                .as_deref()
                .map(|out| (out, s.exit_code.unwrap_or(0)))
        });
        // A plain command runs in the thread's sandbox (an escalated one outside it). codex
        // says nothing of a sandboxed command until it knows whether the sandbox denied it
        // (`exec::sandbox_denied`): its item starts once it has run for unified exec's grace
        // period, or at its end.
        let sandbox = self.sandbox_type();
        let sandboxed = scripted.is_none()
            && !escalated
            && matches!(sandbox.as_str(), "workspaceWrite" | "readOnly");
        let refused = if sandboxed && sandbox == "workspaceWrite" {
            exec::sandbox_missing_root(&self.writable_roots())
        } else {
            None
        };
        let mut at = approved_at;
        let ran = match refused {
            Some(ran) => ran,
            None => run_command(
                scripted,
                &raw,
                &cwd,
                exec::Run {
                    announce_after: sandboxed.then_some(exec::STREAM_AFTER),
                    ..Default::default()
                },
                &mut |pid| {
                    if at.is_none() {
                        at = Some(self.started(&started_item(pid)));
                    }
                },
                &mut |delta| {
                    let mut p = scope.clone();
                    p["delta"] = json!(delta);
                    conn.notify("item/commandExecution/outputDelta", p);
                },
            ),
        };
        // Denied by the sandbox, as codex judges a quick exit: the model reads the output, the
        // client hears of no item, and the thread keeps none (turn scenario 281 on every
        // version; a denial printed after the grace period shows, as there).
        if !ran.announced && at.is_none() && exec::sandbox_denied(&ran) {
            self.rollout.unkept();
            return Ok(());
        }
        let at = at.unwrap_or_else(|| self.started(&started_item(&ran.pid)));
        let status = if ran.code == 0 { "completed" } else { "failed" };
        let done = item(
            "unifiedExecStartup",
            status,
            ran.pid,
            ran.output,
            json!(ran.code),
            json!(0),
        );
        self.completed(done, at);
        Ok(())
    }

    /// `thread/shellCommand`'s command, the turn's one item: run in the thread's cwd outside
    /// any sandbox or approval (the user asked for it), its output streamed as it comes, no
    /// process id shown (codex's `userShell` items).
    pub(super) fn user_shell(&mut self, raw: &str, timeout_ms: Option<u64>) -> Result<(), End> {
        // The user's shell runs in the thread's local environment: a thread with none fails the
        // turn, no item (codex `tasks/user_shell`: "shell is unavailable in this session";
        // fidelity s50500001_0816, both real runs; turn scenario 273).
        if self.no_environment() {
            return self.fail_after("shell is unavailable in this session".into(), Value::Null);
        }
        let id = uuid::Uuid::new_v4().to_string();
        let cwd = self.cwd();
        let item = json!({"type": "commandExecution", "id": id, "pluginId": null,
            "scriptPath": null, "command": shell::shell_display(raw), "cwd": cwd,
            "processId": null, "source": "userShell", "status": "inProgress",
            "commandActions": shell::command_actions(raw, &cwd), "aggregatedOutput": null,
            "exitCode": null, "durationMs": null});
        let at = self.started(&item);
        let (conn, scope) = (self.conn.clone(), self.scope(json!({"itemId": id})));
        let run = exec::Run {
            stream_all: true,
            deadline: timeout_ms.map(std::time::Duration::from_millis),
            split_streams: true,
            ..Default::default()
        };
        let ran = run_command(None, raw, &cwd, run, &mut |_| {}, &mut |delta| {
            let mut p = scope.clone();
            p["delta"] = json!(delta);
            conn.notify("item/commandExecution/outputDelta", p);
        });
        let mut done = item;
        done["status"] = json!(if ran.code == 0 { "completed" } else { "failed" });
        done["durationMs"] = json!(now_ms() - at);
        match ran.timed_out {
            // The command's `timeoutMs` ran out: codex reports its sandbox's timeout error as
            // the output (Rust's debug form), exit code -1 and no duration (turn scenario 283
            // on every version; fidelity s56560001_0216).
            Some(after) => {
                done["status"] = json!("failed");
                done["aggregatedOutput"] = json!(exec::timeout_error(&ran, after));
                done["exitCode"] = json!(-1);
                done["durationMs"] = json!(0);
            }
            None => {
                done["aggregatedOutput"] = ran.output;
                done["exitCode"] = json!(ran.code);
            }
        }
        self.completed(done, at);
        Ok(())
    }

    /// The client's answer to an approval request of `method`: a decision its response type
    /// takes, else (a JSON-RPC error, a result that does not deserialize) a failed request.
    pub(super) fn decision(&self, method: &str, reply: &Value) -> Decision {
        let Some(result) = reply.get("result") else {
            return Decision::Failed;
        };
        if matches!(
            (self.conn.fake.protocol.check_response)(method, result),
            Some(Err(_))
        ) {
            return Decision::Failed;
        }
        match result["decision"].as_str() {
            Some("decline") => Decision::Decline,
            Some("cancel") => Decision::Cancel,
            _ => Decision::Accept(result["decision"].clone()),
        }
    }

    /// The approval request just answered is resolved.
    pub(super) fn resolved(&self) {
        if let Some(id) = self.conn.last_request_id() {
            self.notify_thread("serverRequest/resolved", json!({"requestId": id}));
        }
    }

    /// An approval request left unanswered until the turn was interrupted: the response's usage
    /// is reported, the turn ends, and only then is the request resolved (checked on 0.171.0);
    /// the request timing out ends the turn the same way.
    pub(super) fn unanswered(&mut self) -> Result<(), End> {
        self.pending_resolved = self.conn.last_request_id();
        self.interrupted_after_response()
    }

    /// A command's or a patch's approval left unanswered: codex writes the call and its
    /// aborted output to the rollout, with no item (fidelity s51510001_0008 on 0.163.0; turn
    /// scenario 275 on every version: the next turn's cursor).
    fn unanswered_call(&mut self) -> Result<(), End> {
        self.rollout.unkept();
        self.unanswered()
    }

    /// The turn interrupted once its response is complete (its usage reported): while a tool
    /// call waits (the tool never runs), or as the turn's last response finishes.
    pub(super) fn interrupted_after_response(&mut self) -> Result<(), End> {
        // Aborted, the turn reports no diff after the response, as a cancelled approval's
        // (0.169.0, fidelity s62620001_0208: an approval left unanswered, then an interrupt).
        self.end_cancelled_response();
        // As any interrupt: a turn with an answer asks for attention (see `check`).
        if self.says_something() {
            self.read_state();
        }
        self.ctl.acked.store(true, Ordering::SeqCst);
        Err(End::Interrupted)
    }

    /// Whether the thread's approvals go to codex's reviewer: `approvalsReviewer: "auto_review"`
    /// under an `on-request` or granular policy (`routes_approval_to_guardian`); under
    /// `untrusted` the client is asked still (seen on 0.163.0, 0.169.0 and 0.171.0).
    pub(super) fn auto_review(&self) -> bool {
        let store = self.conn.fake.store.load();
        let thread = &store["threads"][&self.ctl.thread_id];
        let policy = &thread["approvalPolicy"];
        thread["approvalsReviewer"] == "auto_review"
            && (policy == "on-request" || policy.get("granular").is_some())
    }

    /// codex's automatic approval review of `action` for item `target`, as the real server
    /// reports it; the verdict is `scenario.json` `guardian` (`allow`, the default, or `deny`).
    pub(super) fn review(&self, target: &str, at: i64, action: Value) -> bool {
        let allow = Scenario::from_value(&scenario(&self.conn.fake.dir)).guardian_allows();
        // The reviewer is a sub-agent thread of codex's, live from the thread's first review
        // on (`server/diagnostics`' `core.threads.live`: fidelity s41410001_0568; turn scenario
        // 236 on every version).
        let thread_id = self.ctl.thread_id.clone();
        self.conn.fake.store.update(|d| {
            d["threads"][&thread_id][crate::fake::settings::REVIEWER_LIVE] = json!(true)
        });
        let review_id = uuid::Uuid::now_v7().to_string();
        self.notify(
            "item/autoApprovalReview/started",
            json!({"startedAtMs": at, "reviewId": review_id, "targetItemId": target,
                   "review": {"status": "inProgress", "riskLevel": null,
                              "userAuthorization": null, "rationale": null},
                   "action": action}),
        );
        let verdict = if allow { "approved" } else { "denied" };
        self.notify_thread(
            "guardianWarning",
            json!({"message": format!(
                "Automatic approval review {verdict} (risk: low, authorization: high): \
                 {GUARDIAN_RATIONALE}")}),
        );
        self.notify(
            "item/autoApprovalReview/completed",
            json!({"startedAtMs": at, "completedAtMs": now_ms(), "reviewId": review_id,
                   "targetItemId": target, "decisionSource": "agent",
                   "review": {"status": verdict, "riskLevel": "low", "userAuthorization": "high",
                              "rationale": GUARDIAN_RATIONALE},
                   "action": action}),
        );
        allow
    }

    /// An `apply_patch` call: codex verifies the patch against the files first (a refused one
    /// makes no item: only the model hears why), asks for approval only when a path it writes
    /// lies outside the sandbox's writable roots, applies it, and reports the turn's diff.
    pub(super) fn file_change(&mut self, id: &str, input: &str, over: &Params) -> Result<(), End> {
        if self.no_environment() {
            self.rollout.unkept();
            return Ok(());
        }
        // A model without codex's freeform patch tool (one it has no metadata for) calls a tool
        // codex does not offer: codex tells the model, the client sees nothing.
        if !self.has_patch_tool() {
            self.rollout.unkept();
            return Ok(());
        }
        let cwd = self.cwd();
        let Ok(patch) = patch::verify(input, &cwd) else {
            self.rollout.unkept();
            return Ok(());
        };
        // Files a patch approval accepted for the session are written again unasked (fidelity
        // s29290001_0407 on 0.171.0: a second patch of the same file in the turn).
        let keys: Vec<String> = patch
            .written()
            .iter()
            .map(|p| format!("patch:{}", p.display()))
            .collect();
        let mut gate = self.patch_gate(&patch.written(), &cwd);
        if gate == Gate::Ask {
            let approved = lock(&self.ctl.session_approved);
            if keys.iter().all(|k| approved.contains(k)) {
                gate = Gate::Run;
            }
        }
        if gate == Gate::Refuse {
            // codex rejects the patch before any item exists; the model is told why.
            self.rollout.unkept();
            return Ok(());
        }
        let base = json!({"type": "fileChange", "id": id, "changes": patch.item_changes()});
        let at = self.started(&merge(&base, json!({"status": "inProgress"})));
        let mut status = "completed";
        // The sandbox cannot start while one of its writable roots is missing (the thread's cwd
        // or a runtime root not made yet): the patch it would run fails, and codex asks to
        // retry without it where the policy lets it ask (fidelity s15150001_0081, s18180001_0002
        // under `never`; once made, the root holds later patches: probed on 0.171.0).
        let sandbox_down = gate == Gate::Run
            && self.sandbox_type() == "workspaceWrite"
            && self.missing_writable_root();
        let mut reason = Value::Null;
        if sandbox_down {
            // The sandboxed attempt failed: the turn's diff stops as after a failed patch (no
            // diff for the rest of the turn, even for patches applied later: probed on 0.171.0).
            self.stop_diff();
        }
        let gate = if sandbox_down {
            let policy = self.approval_policy_value();
            if policy == "never" || policy["granular"]["sandbox_approval"] == false {
                Gate::Refuse
            } else {
                reason = json!("command failed; retry without sandbox?");
                Gate::Ask
            }
        } else {
            gate
        };
        if gate == Gate::Refuse {
            self.completed(merge(&base, json!({"status": "failed"})), at);
            return Ok(());
        }
        if gate == Gate::Ask && self.auto_review() && !sandbox_down {
            // The reviewer, not the client, decides a patch too (seen on 0.171.0).
            let action = json!({"type": "applyPatch", "cwd": cwd, "files": patch.files()});
            if !self.review(id, at, action) {
                self.completed(merge(&base, json!({"status": "declined"})), at);
                return Ok(());
            }
        } else if gate == Gate::Ask {
            self.status(json!({"type": "active", "activeFlags": ["waitingOnApproval"]}));
            let params = self.scope(json!({"itemId": id, "startedAtMs": now_ms(),
                                           "reason": reason, "grantRoot": null}));
            let method = "item/fileChange/requestApproval";
            let Some(reply) = self.request(method, params, over) else {
                return self.unanswered_call();
            };
            self.resolved();
            let decision = self.decision(method, &reply);
            self.status(json!({"type": "active", "activeFlags": []}));
            // A patch whose request failed reads as declined (unlike a command).
            match &decision {
                Decision::Accept(d) => {
                    if *d == "acceptForSession" {
                        lock(&self.ctl.session_approved).extend(keys.iter().cloned());
                    }
                }
                Decision::Decline | Decision::Cancel | Decision::Failed => status = "declined",
            }
            // A cancelled patch is never completed: its call and output are in the rollout,
            // the turn ends (`135_patch_approval_cancelled`, fidelity s24240001_0111).
            if decision == Decision::Cancel {
                self.rollout.unkept();
                self.end_cancelled_response();
                return Err(End::Cancelled);
            }
            if status != "completed" {
                self.completed(merge(&base, json!({"status": status})), at);
                return Ok(());
            }
        }
        // An approved patch is still applied inside a read-only sandbox, which can write a file
        // where a directory exists but cannot make one for a new file: such a patch fails (seen
        // on 0.171.0), as one whose writes fail does; a move into a new directory succeeds.
        let sandbox_refuses =
            gate == Gate::Ask && !sandbox_down && self.sandbox_type() == "readOnly";
        if (sandbox_refuses && patch.makes_dirs()) || patch.apply(&mut self.tracker).is_err() {
            self.completed(merge(&base, json!({"status": "failed"})), at);
            self.stop_diff();
            return Ok(());
        }
        self.completed(merge(&base, json!({"status": status})), at);
        // The turn's whole diff after each patch, even when it comes to nothing once it was
        // something (a file added then deleted: `""`, seen on 0.163.0–0.171.0); a patch that
        // changed nothing in a turn with no diff yet reports none (a file written again as it
        // was: fidelity s21210001_0191); only a non-empty one is reported again after a
        // response or at the turn's end.
        let diff = self.tracker.diff(&cwd);
        if !self.diff_stopped && (diff.is_some() || self.turn_diff.is_some()) {
            let shown = diff.clone().unwrap_or_default();
            self.notify("turn/diff/updated", json!({"diff": shown}));
        }
        self.turn_diff = diff;
        Ok(())
    }

    /// Whether the thread's model has codex's freeform `apply_patch` tool (its catalog entry
    /// says so).
    pub(super) fn has_patch_tool(&self) -> bool {
        let model = self.conn.fake.thread_model(&self.ctl.thread_id);
        self.conn
            .fake
            .catalog
            .find(&model)
            .is_some_and(|m| m.apply_patch_tool_type.as_deref() == Some("freeform"))
    }

    /// Whether the thread has no execution environment (`environments: []`): codex then runs
    /// no tool and shows nothing of it (checked on 0.171.0).
    pub(super) fn no_environment(&self) -> bool {
        let data = self.conn.fake.store.load();
        data["threads"][&self.ctl.thread_id]["environments"]
            .as_array()
            .is_some_and(Vec::is_empty)
    }

    /// What codex's patch safety check decides for a patch (`assess_patch_safety`, checked on
    /// 0.171.0 for every policy × sandbox): `untrusted` asks about every patch; full access
    /// applies any; otherwise a write the sandbox does not allow (anything under read-only,
    /// outside the writable roots under workspace-write) is asked about, or refused under
    /// `never` (and a granular policy without `sandbox_approval`). `written`: every path the
    /// patch writes, a move's destination too (`is_write_patch_constrained_to_writable_paths`;
    /// `10d_patch_update_delete_move` moves a file out of the cwd and is asked about).
    /// A patch failed: the turn's diff is reset once, and no more diffs follow in this turn.
    fn stop_diff(&mut self) {
        if self.turn_diff.is_some() && !self.diff_stopped {
            self.notify("turn/diff/updated", json!({"diff": ""}));
        }
        self.diff_stopped = true;
    }

    /// Whether a writable root of the workspace sandbox is missing: the thread's cwd or one of
    /// its runtime roots.
    fn missing_writable_root(&self) -> bool {
        let data = self.conn.fake.store.load();
        let t = &data["threads"][&self.ctl.thread_id];
        let roots = crate::fake::state::strings(&t["roots"]);
        // A thread working in no root writes `/tmp` only: its cwd is no root of it (fidelity
        // s33330001_0794: resumed into a cwd not made yet, its patch under `/tmp` ran).
        let shown = if crate::fake::settings::works_nowhere(t) {
            Vec::new()
        } else {
            crate::fake::settings::shown_roots(&t["environments"].as_array().cloned(), &roots)
        };
        let cwd = t["cwd"].as_str().filter(|_| !shown.is_empty());
        cwd.into_iter()
            .chain(shown.iter().map(String::as_str))
            .any(|r| !Path::new(r).exists())
    }

    pub(super) fn patch_gate(&self, written: &[&Path], cwd: &str) -> Gate {
        let policy = self.approval_policy_value();
        if policy == "untrusted" {
            return Gate::Ask;
        }
        let sandbox = self.sandbox_type();
        if sandbox == "dangerFullAccess" || sandbox == "externalSandbox" {
            return Gate::Run;
        }
        let writable = |path: &Path| {
            sandbox == "workspaceWrite" && {
                let tmpdir = std::env::var("TMPDIR").unwrap_or_default();
                [cwd, "/tmp", tmpdir.as_str()]
                    .iter()
                    .filter(|r| !r.is_empty())
                    .any(|r| path.starts_with(r))
            }
        };
        if written.iter().all(|p| writable(p)) {
            return Gate::Run;
        }
        let refuses = policy == "never" || policy["granular"]["sandbox_approval"] == false;
        if refuses {
            Gate::Refuse
        } else {
            Gate::Ask
        }
    }

    pub(super) fn has_dynamic_tool(&self, tool: &str, namespace: Option<&str>) -> bool {
        let data = self.conn.fake.store.load();
        let specs = &data["threads"][&self.ctl.thread_id]["dynamicTools"];
        specs.as_array().is_some_and(|specs| {
            specs.iter().any(|s| match namespace {
                None => s["type"] != "namespace" && s["name"] == tool,
                Some(ns) => {
                    s["type"] == "namespace"
                        && s["name"] == ns
                        && s["tools"]
                            .as_array()
                            .is_some_and(|t| t.iter().any(|t| t["name"] == tool))
                }
            })
        })
    }

    /// `request_user_input`: outside Plan mode (unless `default_mode_request_user_input` is on)
    /// and without options for every question the tool answers the model with an error and
    /// the client sees nothing; otherwise a request (blocking in Plan mode) every question
    /// of which the server opens to free-form answers (`isOther`).
    pub(super) fn user_input(&mut self, id: &str, questions: &Value, over: &Params) {
        // No item, asked or not: the call and its output are in the rollout.
        self.rollout.unkept();
        let features = &self.conn.fake.config().features;
        let plan = self.plan_mode;
        if !plan
            && !features
                .iter()
                .any(|f| f == "default_mode_request_user_input")
        {
            return;
        }
        let Some(questions) = questions.as_array().and_then(|qs| {
            qs.iter()
                .map(|q| {
                    let options = q["options"].as_array().filter(|o| !o.is_empty())?;
                    Some(json!({"id": q["id"], "header": q["header"], "question": q["question"],
                                "isOther": true, "isSecret": q["isSecret"].as_bool().unwrap_or(false),
                                "options": options}))
                })
                .collect::<Option<Vec<Value>>>()
        }) else {
            return;
        };
        self.status(json!({"type": "active", "activeFlags": ["waitingOnUserInput"]}));
        let params = self.scope(json!({"itemId": id, "questions": questions,
                                       "isBlocking": plan, "autoResolutionMs": null}));
        let reply = self.approval("item/tool/requestUserInput", params, over);
        // An answer to one of the questions is kept in the rollout as retained context (a
        // `verified_answer` entry before the call's output; 0.163.0, 0.169.0 and 0.171.0): it
        // moves the ordinals a resume's cursors name. Answers to no question leave none.
        let answers = reply.as_ref().map(|r| &r["result"]["answers"]);
        if questions.iter().any(|q| {
            q["id"].as_str().is_some_and(|id| {
                answers.is_some_and(|a| a[id]["answers"].as_array().is_some_and(|v| !v.is_empty()))
            })
        }) {
            self.rollout.add(1);
        }
        self.status(json!({"type": "active", "activeFlags": []}));
    }

    /// A dynamic tool call reaches the client only for a tool the thread was started with
    /// (`dynamicTools`); codex answers the model itself for any other name.
    pub(super) fn dynamic_tool(
        &mut self,
        id: &str,
        tool: &str,
        namespace: Option<&str>,
        arguments: &str,
        over: &Params,
    ) {
        if !self.has_dynamic_tool(tool, namespace) {
            self.rollout.unkept();
            return;
        }
        // The model sends arguments as a JSON string, which the real server parses (a recorded
        // call's string arguments show as the object, 27_dynamic_tool through `record`).
        let arguments: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments));
        let base = json!({"type": "dynamicToolCall", "id": id, "namespace": namespace,
                          "tool": tool, "arguments": arguments});
        let at = self.started(&merge(
            &base,
            json!({"status": "inProgress", "contentItems": null,
                                           "success": null, "durationMs": null}),
        ));
        let params = self.scope(json!({"callId": id, "namespace": namespace,
                                       "tool": tool, "arguments": arguments}));
        let answer = self.request_answer("item/tool/call", params, over);
        // An error reply, or a result codex cannot read as the response, gives the model
        // codex's own failure text (app-server `dynamic_tools.rs`; fidelity s13130001_0124).
        let fallback = |text: &str| json!([{"type": "inputText", "text": text}]);
        let (items, success) = match answer {
            None => (json!([]), false),
            Some(a) if a.msg.get("error").is_some() => {
                (fallback("dynamic tool request failed"), false)
            }
            Some(a) if a.violation.is_some() => {
                (fallback("dynamic tool response was invalid"), false)
            }
            Some(a) => (
                a.msg["result"]["contentItems"].clone(),
                a.msg["result"]["success"].as_bool().unwrap_or(false),
            ),
        };
        let status = if success { "completed" } else { "failed" };
        self.completed(
            merge(
                &base,
                json!({"status": status, "contentItems": items,
                                           "success": success, "durationMs": 3}),
            ),
            at,
        );
    }

    /// Keeps the turn busy for `seconds`, a delta every `interval` (a model at work).
    pub(super) fn progress(&mut self, id: &str, p: &Progress) -> Result<(), End> {
        let at = self.started(&agent_message(id, "", &Value::Null));
        let deadline = Instant::now() + Duration::from_secs_f64(p.seconds.clamp(0.0, 86_400.0));
        let interval = Duration::from_secs_f64(p.interval.clamp(0.001, 60.0));
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
        let text = p.text.clone().unwrap_or(text);
        self.completed(agent_message(id, &text, &Value::Null), at);
        Ok(())
    }
}

fn merge(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    if let (Some(o), Value::Object(e)) = (out.as_object_mut(), extra) {
        o.extend(e);
    }
    out
}

/// The process dies mid-turn, as a crashing codex would: the store holds only whole writes.
fn crash(conn: &Conn, code: i64, stderr: &str) {
    let code = code as i32;
    conn.fake.record(json!({"event": "crash", "code": code}));
    // What was sent before the crash left the process (and its entries reached the transcript).
    conn.flush_held();
    conn.fake.transcript.flush();
    let msg = format!("{stderr}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
    std::process::exit(code);
}

/// A descendant in its own session (like codex's stdio MCP servers); it lives until the
/// harness creates `release-grandchildren` in the state dir, or 600 s.
fn grandchild(conn: &Conn) {
    use std::os::unix::process::CommandExt;
    let release = conn.fake.dir.join(crate::fake::cli::GRANDCHILD_RELEASE);
    let script = "i=0; while [ ! -e \"$1\" ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i+1)); done";
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", script, "grandchild", &path_str(&release)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::fake::shell::signals_as_codex_gives_them(&mut cmd);
    // SAFETY: setsid is async-signal-safe and touches no parent memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
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
