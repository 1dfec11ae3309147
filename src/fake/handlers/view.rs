//! How the handlers show a thread: the `Thread` and `Turn` objects, the settings a thread
//! runs with, as the real server shapes them; and the connection as the handlers see it.

use crate::fake::rpc::Conn;
use crate::fake::settings;
use crate::fake::state::{lock, now_secs};
use crate::fake::turn;
use serde_json::{json, Value};
use std::sync::Arc;

/// A connection as its handlers see it (handlers are methods of this, not of the connection).
pub(super) struct H<'a> {
    pub c: &'a Arc<Conn>,
}

impl std::ops::Deref for H<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.c
    }
}

impl H<'_> {
    /// A thread's model: its own (thread/start `model`), else the configured one.
    pub(super) fn model_of(&self, info: &Value) -> String {
        self.fake.model_of(info)
    }

    /// A stored turn as the real server lists it: `view` `full` (every item), `summary` (the
    /// first user message and the final answer) or `notLoaded`.
    pub(super) fn turn_payload(&self, thread_id: &str, t: &Value, view: &str) -> Value {
        // A turn still in progress in the store but running nowhere here: its process died
        // mid-turn, which the real server reports as an interrupt.
        let running = turn::running()
            .get(thread_id)
            .is_some_and(|c| t["id"] == c.turn_id().as_str());
        let status = if t["status"] == "inProgress" && !running {
            json!("interrupted")
        } else {
            t["status"].clone()
        };
        let all = t["items"].as_array().cloned().unwrap_or_default();
        let items: Vec<Value> = match view {
            "notLoaded" => Vec::new(),
            "summary" => {
                let user = all.iter().find(|i| i["type"] == "userMessage");
                // The answer: the last message marked final, else the last that is not
                // commentary (fidelity s6060001_0083, _0100 on 0.171.0).
                let messages = || all.iter().rev().filter(|i| i["type"] == "agentMessage");
                // A legacy thread's history, rebuilt from its rollout, answers with its last
                // message whatever its phase (fidelity s32320001_0052; turn scenario 188).
                let legacy =
                    self.fake.store.load()["threads"][thread_id]["historyMode"] == "legacy";
                let answer = messages()
                    .find(|i| legacy || i["phase"] == "final_answer")
                    .or_else(|| messages().find(|i| i["phase"] != "commentary"));
                user.into_iter().chain(answer).cloned().collect()
            }
            _ => all,
        };
        // A review's child turn names the review turn as its root.
        let root = t.get("reviewRoot").unwrap_or(&t["id"]);
        json!({"id": t["id"], "rootTurnId": root, "items": items,
               "itemsView": view, "status": status,
               "error": t.get("error").cloned().unwrap_or(Value::Null),
               "startedAt": t.get("startedAt").cloned().unwrap_or(Value::Null),
               "completedAt": t.get("completedAt").cloned().unwrap_or(Value::Null),
               "durationMs": t.get("durationMs").cloned().unwrap_or(Value::Null)})
    }

    /// The full `Thread` object, shaped like the real server's.
    pub fn thread_payload(&self, thread_id: &str, info: &Value, with_turns: bool) -> Value {
        let cwd = info["cwd"].as_str().unwrap_or("/").to_string();
        // A turn whose task has not begun (a shell command's, a review's) leaves the thread as
        // it was (fidelity s30300001_0103: `thread/list` right after `thread/shellCommand`).
        let begun = turn::running()
            .get(thread_id)
            .is_some_and(|c| !c.queued.load(std::sync::atomic::Ordering::SeqCst));
        let status = if begun {
            json!({"type": "active", "activeFlags": []})
        } else if lock(&self.fake.loaded).contains(thread_id) {
            if info["systemError"] == true {
                json!({"type": "systemError"})
            } else {
                json!({"type": "idle"})
            }
        } else {
            json!({"type": "notLoaded"})
        };
        let turns: Vec<Value> = if with_turns {
            legacy_numbered(info)["turns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.turn_payload(thread_id, t, "full"))
                .collect()
        } else {
            vec![]
        };
        let created = info["createdAt"].as_i64().unwrap_or_else(now_secs);
        let updated = info["updatedAt"].as_i64().unwrap_or(created);
        // A thread not loaded here has no live environments, nor an answer on direct input.
        let loaded = lock(&self.fake.loaded).contains(thread_id);
        let environments = if loaded {
            self.environments_of(info)
        } else {
            Value::Null
        };
        // Read from its rollout, a thread not loaded here has the model and effort of its last
        // turn's context: none before a turn (codex's session header names neither; turn
        // scenario 249).
        let turnless = info["turns"].as_array().is_none_or(Vec::is_empty);
        let (model, effort) = if !loaded && turnless {
            (Value::Null, Value::Null)
        } else {
            (json!(self.model_of(info)), info["effort"].clone())
        };
        // An ephemeral thread has no rollout file.
        let path = if info["ephemeral"] == true {
            Value::Null
        } else {
            json!(self.fake.rollout_path(thread_id, info))
        };
        json!({
            "id": thread_id,
            "environments": environments,
            "extra": null, "sessionId": thread_id,
            "forkedFromId": info.get("forkedFromId").cloned().unwrap_or(Value::Null),
            "attachedToThreadId": info["attachedToThreadId"], "parentThreadId": null,
            "preview": info["preview"].as_str().unwrap_or(""),
            "ephemeral": info["ephemeral"].as_bool().unwrap_or(false),
            "section": self.section_view(&info["section"]),
            "sectionEnteredAt": info["sectionEnteredAt"], "projectId": info["projectId"],
            "historyMode": info["historyMode"].as_str().unwrap_or("paginated"),
            "modelProvider": self.provider_of(info), "model": model,
            "reasoningEffort": effort,
            "createdAt": created, "updatedAt": updated, "recencyAt": updated,
            "status": status,
            "path": path,
            "cwd": cwd, "cliVersion": self.fake.protocol.version,
            "originator": lock(&self.client_name).clone(), "source": "vscode",
            "canAcceptDirectInput": if loaded { json!(true) } else { Value::Null },
            "threadSource": info["threadSource"], "agentNickname": null,
            "agentRole": null, "gitInfo": info["gitInfo"],
            "name": info.get("name").cloned().unwrap_or(Value::Null),
            "daybreakEnabled": info["daybreakEnabled"],
            "turns": turns,
        })
    }

    /// `thread/start`, `thread/resume` and `thread/fork` results.
    pub(super) fn thread_response(&self, thread_id: &str, info: &Value, with_turns: bool) -> Value {
        let cwd = info["cwd"].as_str().unwrap_or("/").to_string();
        let (sandbox, profile) = self.sandbox_of(info);
        json!({
            "thread": self.thread_payload(thread_id, info, with_turns),
            "model": self.model_of(info), "modelProvider": self.provider_of(info),
            "serviceTier": self.fake.catalog.served_tier(&info["serviceTier"], &self.model_of(info)),
            "disabledPluginIds": plugins_of(info), "cwd": cwd,
            "runtimeWorkspaceRoots": self.roots_of(info),
            "instructionSources": [],
            "approvalPolicy": self.approval_policy_of(info),
            "approvalsReviewer": self.reviewer_of(info),
            "sandbox": sandbox,
            "activePermissionProfile": profile,
            "reasoningEffort": info["effort"], "multiAgentMode": "explicitRequestOnly",
        })
    }

    pub(super) fn approval_policy_of(&self, info: &Value) -> Value {
        info.get("approvalPolicy")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!(self.fake.config().approval_policy))
    }

    pub(super) fn reviewer_of(&self, info: &Value) -> Value {
        info.get("approvalsReviewer")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!("user"))
    }

    pub(super) fn provider_of(&self, info: &Value) -> String {
        info["provider"]
            .as_str()
            .map_or_else(|| self.fake.config().provider.clone(), str::to_string)
    }

    /// The thread's settings as resolved when it started (a thread stored before they were
    /// kept: as the configuration resolves them for its cwd).
    pub(super) fn resolved_of(&self, info: &Value) -> Option<settings::Resolved> {
        settings::for_start(
            &self.fake.config(),
            &self.fake.catalog,
            &self.fake.turn_facts,
            &self.fake.cwd,
            &json!({"cwd": info["cwd"]}),
        )
        .ok()
    }

    /// `sandbox` and `activePermissionProfile`.
    pub(super) fn sandbox_of(&self, info: &Value) -> (Value, Value) {
        if info["sandbox"].is_object() {
            return (info["sandbox"].clone(), info["permissionProfile"].clone());
        }
        self.resolved_of(info)
            .map_or((Value::Null, Value::Null), |r| (r.sandbox, r.profile))
    }

    /// The thread's own runtime workspace roots (by default its cwd).
    pub(super) fn own_roots(&self, info: &Value) -> Vec<String> {
        match &info["roots"] {
            Value::Array(r) => r
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => info["cwd"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect(),
        }
    }

    /// The roots it works in: its environments' when it names any.
    pub(super) fn roots_of(&self, info: &Value) -> Value {
        let envs = info["environments"].as_array().cloned();
        json!(settings::shown_roots(&envs, &self.own_roots(info)))
    }

    /// The thread's environments: the local one at its cwd, unless it started with others.
    pub(super) fn environments_of(&self, info: &Value) -> Value {
        match &info["environments"] {
            Value::Array(e) => Value::Array(e.clone()),
            _ => json!([{"environmentId": "local", "cwd": info["cwd"],
                         "runtimeWorkspaceRoots": self.own_roots(info)}]),
        }
    }

    /// The collaboration mode a thread runs in (codex's default mode, with the thread's model
    /// and effort).
    pub(super) fn collaboration_mode(&self, info: &Value) -> Value {
        if info["collaborationMode"].is_object() {
            return info["collaborationMode"].clone();
        }
        json!({"mode": "default", "settings": {"model": self.model_of(info),
               "reasoning_effort": info["effort"], "developer_instructions": null}})
    }

    /// `thread/settings/updated`'s settings, in the real server's key order.
    pub(super) fn thread_settings(&self, info: &Value) -> Value {
        let cwd = info["cwd"].as_str().unwrap_or("/").to_string();
        let (sandbox, profile) = self.sandbox_of(info);
        json!({
            "disabledPluginIds": plugins_of(info), "cwd": cwd,
            "environments": self.environments_of(info),
            "approvalPolicy": self.approval_policy_of(info),
            "approvalsReviewer": self.reviewer_of(info),
            "sandboxPolicy": sandbox,
            "activePermissionProfile": profile,
            "model": self.model_of(info), "modelProvider": self.provider_of(info),
            "serviceTier": info["serviceTier"], "effort": info["effort"], "summary": info["summary"],
            "collaborationMode": self.collaboration_mode(info),
            "multiAgentMode": "explicitRequestOnly", "personality": info["personality"],
        })
    }

    /// A thread taken up with turns (resumed, forked) reports its usage as of its last turn
    /// (only once a model response has reported usage: a turn that died first left none).
    /// A loaded thread resumed, or a thread forked, without its turns (`excludeTurns`) reports
    /// none: codex skips the history replay (app-server
    /// `send_thread_token_usage_update_to_connection`; turn scenario 104); a cold resume
    /// restores it either way (the callers decide).
    /// The turn named is the one the latest usage came in (app-server
    /// `restored_token_usage_turn_id`: a later turn that failed before any response reported
    /// none; fidelity s14140001_0287), else the last.
    /// A running thread rejoined (`running`) names its last turn that completed or failed,
    /// else its last: codex passes no owner for it and falls back to
    /// `latest_token_usage_turn_id` (turn scenario 289 on every version, 289b on 0.169.0 and
    /// 0.171.0: a later turn that failed before any response is named, an interrupted one is
    /// not; fidelity s61610001_0088); a legacy history's rebuilt turns name the usage's turn
    /// (`293b`).
    pub(super) fn report_usage(&self, thread_id: &str, info: &Value, running: bool) {
        let turns = info["turns"].as_array();
        // A legacy history names the turn its usage came in, rejoined or not (turn scenario
        // `293b` on every version).
        let owner = if running && info["historyMode"] != "legacy" {
            turns.and_then(|t| {
                t.iter()
                    .rev()
                    .find(|t| matches!(t["status"].as_str(), Some("completed" | "failed")))
            })
        } else {
            turns.and_then(|t| t.iter().find(|t| t["id"] == info["usageTurnId"]))
        };
        let last_turn = owner.or_else(|| turns.and_then(|t| t.last()));
        if let (Some(last_turn), true) = (last_turn, info["usage"].is_object()) {
            let zeros = turn::breakdown(0, 0, 0, 0);
            let or_zeros = |v: &Value| {
                if v.is_object() {
                    v.clone()
                } else {
                    zeros.clone()
                }
            };
            // The window recorded with the usage (a fork under another model reports its
            // source's: turn scenario 152 on 0.171.0).
            let window = info["usageWindow"]
                .as_i64()
                .unwrap_or_else(|| turn::context_window(self, thread_id));
            self.notify(
                "thread/tokenUsage/updated",
                json!({"threadId": thread_id, "turnId": last_turn["id"],
                       "tokenUsage": {"total": or_zeros(&info["usage"]),
                                      "last": or_zeros(&info["lastUsage"]),
                                      "modelContextWindow": window}}),
            );
        }
    }
}

/// A thread's stored turns as the real server rebuilds a legacy history from its rollout's
/// events (reads, resumes, forks and turn pages alike; 0.171.0, fidelity s7070001_0017 and
/// `89_legacy_history_items`): messages and reasoning are numbered `item-1`, `item-2`, … in
/// the thread's order (reasoning without its raw content), a file change keeps its call's id,
/// a command is not shown, and no item has times. Other threads keep their items as they are.
pub(super) fn legacy_numbered(info: &Value) -> std::borrow::Cow<'_, Value> {
    if info["historyMode"] != "legacy" {
        return std::borrow::Cow::Borrowed(info);
    }
    let mut out = info.clone();
    let mut n = 0;
    for turn in out["turns"].as_array_mut().into_iter().flatten() {
        let Some(items) = turn["items"].as_array_mut() else {
            continue;
        };
        items.retain(|i| i["type"] != "commandExecution");
        // codex skips an event with no text and adds a reasoning summary to the reasoning item
        // just before it (`ThreadHistoryBuilder::handle_agent_message`,
        // `handle_agent_reasoning`; `121_legacy_history_skips_empty_texts`).
        let mut kept: Vec<Value> = Vec::with_capacity(items.len());
        for mut item in items.drain(..) {
            if item["type"] == "agentMessage" && item["text"] == "" {
                continue;
            }
            if item["type"] == "reasoning" {
                let parts: Vec<Value> = item["summary"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p.as_str().is_some_and(|p| !p.is_empty()))
                    .cloned()
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                if let Some(last) = kept.last_mut().filter(|l| l["type"] == "reasoning") {
                    if let Some(summary) = last["summary"].as_array_mut() {
                        summary.extend(parts);
                    }
                    continue;
                }
                item["summary"] = Value::Array(parts);
            }
            kept.push(item);
        }
        *items = kept;
        for item in items.iter_mut() {
            if matches!(
                item["type"].as_str(),
                Some("userMessage" | "agentMessage" | "reasoning")
            ) {
                n += 1;
                item["id"] = json!(format!("item-{n}"));
            }
            if item["type"] == "reasoning" {
                item["content"] = json!([]);
            }
            // codex rebuilds a legacy user message from its event's text, which it keeps only
            // when it says something (`build_user_inputs`: fidelity s21210001_0268, an empty
            // input shown with no content).
            if item["type"] == "userMessage" {
                if let Some(content) = item["content"].as_array_mut() {
                    let text: String = content
                        .iter()
                        .filter(|c| c["type"] == "text")
                        .filter_map(|c| c["text"].as_str())
                        .collect();
                    if text.trim().is_empty() {
                        content.retain(|c| c["type"] != "text");
                    }
                    // An element without a placeholder shows the text it spans, where that
                    // range is a whole slice of the text (`124_legacy_history_text_element_
                    // placeholders`, fidelity s22220001_0034).
                    for c in content.iter_mut() {
                        let text = c["text"].as_str().unwrap_or_default().to_string();
                        for e in c["text_elements"].as_array_mut().into_iter().flatten() {
                            let range = &e["byteRange"];
                            let slice = range["start"]
                                .as_u64()
                                .zip(range["end"].as_u64())
                                .and_then(|(a, b)| text.get(a as usize..b as usize));
                            if let Some(slice) = slice.filter(|_| e["placeholder"].is_null()) {
                                e["placeholder"] = json!(slice);
                            }
                        }
                    }
                }
            }
            item["startedAtMs"] = Value::Null;
            item["completedAtMs"] = Value::Null;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The strings of a JSON array param (anything else in it skipped; not an array: none).
pub(super) fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The plugins a thread's turns or settings updates disabled: a fork or a resume shows them too
/// (fidelity s14140001_0172 on 0.171.0).
fn plugins_of(info: &Value) -> Value {
    match &info["disabledPluginIds"] {
        Value::Array(a) => Value::Array(a.clone()),
        _ => json!([]),
    }
}
