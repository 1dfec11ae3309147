//! Methods whose answer, in what the fake can be asked, is a rule of a few lines: requests
//! codex refuses before doing anything (missing input, an id nothing here ever names — no
//! process, project, MCP server, environment or search session is ever started), methods it
//! does not support yet, and answers that do not depend on anything the fake does not model.
//! Each shown by `tests/corpus/turns/42_method_rules` on every version.

use super::view::H;
use crate::fake::defaults;
use crate::fake::state::lock;
use crate::fake::turn;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Methods codex answers `-32601 … is not supported yet` (or `not implemented yet`).
pub(super) const UNSUPPORTED: &[(&str, &str)] =
    &[("thread/prediction/request", "is not implemented yet")];

fn s<'a>(p: &'a Value, k: &str) -> &'a str {
    p[k].as_str().unwrap_or_default()
}

/// A stream write needs something to write (`deltaBase64` or `closeStdin`).
fn writes(p: &Value) -> bool {
    p["deltaBase64"].is_string() || p["closeStdin"] == true
}

fn sized(p: &Value) -> bool {
    p["size"]["rows"].as_u64().is_some_and(|r| r > 0)
        && p["size"]["cols"].as_u64().is_some_and(|c| c > 0)
}

/// One page of a list codex pages by offset (`experimentalFeature/list`, `model/list`): the
/// cursor an offset (`invalid cursor: …`, `cursor N exceeds total <what> M`), `limit` at least
/// one, the next cursor the offset after the page.
pub(super) fn offset_page(data: &[Value], p: &Value, what: &str) -> Result<Value, String> {
    let start = match p["cursor"].as_str() {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| format!("invalid cursor: {c}"))?,
    };
    if start > data.len() {
        return Err(format!(
            "cursor {start} exceeds total {what} {}",
            data.len()
        ));
    }
    let limit = p["limit"]
        .as_u64()
        .map_or(data.len(), |l| (l as usize).max(1));
    let end = (start + limit).min(data.len());
    let next = (end < data.len()).then(|| end.to_string());
    Ok(json!({"data": data[start..end], "nextCursor": next}))
}

/// Every path in `v` under the captured `CODEX_HOME` moved under this one (a skill's file, its
/// icons).
pub(super) fn rehome(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::String(s) if s.starts_with(from) => *s = s.replacen(from, to, 1),
        Value::Array(a) => a.iter_mut().for_each(|x| rehome(x, from, to)),
        Value::Object(o) => o.values_mut().for_each(|x| rehome(x, from, to)),
        _ => {}
    }
}

/// How long after `thread/realtime/start`'s result its failure comes (the real median), on a
/// thread nothing is stored of yet.
const REALTIME_ERROR_US: u64 = 1_100;
/// The same on a stored thread, for a failure found after codex reads the thread's history
/// for the session's startup context (initial items, voice, login): 3.8–12 ms in the turn
/// corpus on three versions (the median 5.8 on 0.171.0; 3.8 taken, the least seen on a quiet
/// machine, scenario 193), where an unsubscribe sent at once after the result withholds it
/// (fidelity s33330001_0016; a text modality without v2 too: 2.2–2.7 ms, s34340001_0856). A
/// session started with `includeStartupContext: false` reads nothing: 0.1 ms on a stored thread
/// (fidelity s33330001_0143, both real runs on 0.163.0).
const REALTIME_ERROR_STORED_US: u64 = 3_800;
/// How long codex takes to find that the realtime websocket's host does not resolve, and what it
/// then says (turn scenario 291: 7.2, 12.4 and 6.6 ms on 0.171.0, 0.169.0 and 0.163.0; 1.5 and
/// 9 ms in fidelity s62620001_0251's real runs).
const REALTIME_CONNECT_FAILED: std::time::Duration = std::time::Duration::from_millis(7);
const REALTIME_UNRESOLVED: &str = "stream disconnected before completion: failed to connect \
                                   realtime websocket: IO error: failed to lookup address \
                                   information: Name does not resolve";
const REALTIME_NO_CONTEXT_STORED_US: u64 = 100;

/// How long codex takes to fail a Windows sandbox setup off Windows (see
/// `windows_sandbox_setup`).
const SANDBOX_SETUP_MS: u64 = 8;
/// How long codex takes to answer a Windows sandbox setup's start (see `windows_sandbox_setup`).
const SANDBOX_ANSWER_US: u64 = 4_000;
/// How long codex takes to find a review's merge base is missing (below the 9 ms least seen).
const MERGE_BASE_MS: u64 = 7;

/// A remote plugin id codex accepts: `[A-Za-z0-9_~-]+` (`is_valid_remote_plugin_id`).
fn remote_plugin_id(p: &Value) -> Result<(), String> {
    let id = s(p, "remotePluginId");
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_~".contains(c));
    if valid {
        Ok(())
    } else {
        Err("invalid remote plugin id".into())
    }
}

/// Invalid params (`-32602`), as the real server marks them.
pub(super) fn invalid(message: &str) -> String {
    format!("{}{message}", crate::fake::rpc::INVALID_PARAMS_PREFIX)
}

/// codex's limits on a realtime session's initial items (`REALTIME_INITIAL_ITEMS_MAX_COUNT`,
/// `REALTIME_INITIAL_ITEMS_MAX_TOKENS`): the refusal, if any.
fn initial_items_refusal(p: &Value, version: &str) -> Option<&'static str> {
    let items = p["initialItems"].as_array().filter(|a| !a.is_empty())?;
    if version != "v3" {
        return Some("initial realtime items require realtime v3");
    }
    if items.len() > 128 {
        return Some("initial realtime items must contain no more than 128 items");
    }
    let tokens = |i: &Value| i["text"].as_str().unwrap_or_default().len().div_ceil(4);
    if items.iter().any(|i| tokens(i) > 8192) {
        return Some("each initial realtime item must not exceed 8192 estimated tokens");
    }
    if items.iter().map(tokens).sum::<usize>() > 8192 {
        return Some("initial realtime items must not exceed 8192 estimated tokens in total");
    }
    None
}

impl H<'_> {
    pub(super) fn unsupported(&self, id: &Value, method: &str) -> Result<(), String> {
        let tail = UNSUPPORTED
            .iter()
            .find(|(m, _)| *m == method)
            .map_or("is not supported yet", |(_, t)| t);
        self.send(
            json!({"error": {"code": -32601, "message": format!("{method} {tail}")},
                         "id": id}),
        );
        Ok(())
    }

    /// `thread/items/read`: the ids' count, then the thread's id, then (but on a stored thread
    /// with turns) not supported (fidelity s14140001_0160; probed on 0.163.0, 0.169.0 and
    /// 0.171.0).
    pub(super) fn items_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        let n = p["itemIds"].as_array().map_or(0, Vec::len);
        if !(1..=100).contains(&n) {
            return Err("itemIds must contain 1 to 100 IDs".into());
        }
        crate::fake::threads::check_uuid(s(p, "threadId"), "thread")?;
        // A stored thread with turns is read: ids not in the named turn give nothing (turn
        // scenario 150, fidelity s28280001_0070); what a found item reads as is not modeled.
        if let Ok((_, info)) = self.fake.stored(p, "thread", "") {
            let turns = info["turns"].as_array().cloned().unwrap_or_default();
            let turn = turns.iter().find(|t| t["id"] == p["turnId"]);
            let found = turn.is_some_and(|t| {
                t["items"].as_array().into_iter().flatten().any(|i| {
                    p["itemIds"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|x| *x == i["id"])
                })
            });
            if !turns.is_empty() && !found {
                self.result(id, json!({"data": []}));
                return Ok(());
            }
        }
        self.unsupported(id, "thread/items/read")
    }

    /// `command/exec/*` and `process/*` on a process: no such process is running here.
    pub(super) fn process_call(&self, method: &str, p: &Value) -> Result<(), String> {
        let (exec, id) = match method.strip_prefix("command/exec/") {
            Some(_) => (true, s(p, "processId")),
            None => (false, s(p, "processHandle")),
        };
        match method {
            "command/exec/write" if !writes(p) => {
                return Err(invalid(
                    "command/exec/write requires deltaBase64 or closeStdin",
                ))
            }
            "process/writeStdin" if !writes(p) => {
                return Err(invalid(
                    "process/writeStdin requires deltaBase64 or closeStdin",
                ))
            }
            "command/exec/resize" if !sized(p) => {
                return Err(invalid(
                    "command/exec size rows and cols must be greater than 0",
                ))
            }
            "process/resizePty" if !sized(p) => {
                return Err(invalid("process size rows and cols must be greater than 0"))
            }
            _ => {}
        }
        // The bytes are decoded before the process is looked up (base64's own error text).
        if let Some(delta) = p["deltaBase64"].as_str() {
            if let Err(e) = base64::engine::general_purpose::STANDARD.decode(delta) {
                return Err(invalid(&format!("invalid deltaBase64: {e}")));
            }
        }
        Err(if exec {
            format!("no active command/exec for process id {id:?}")
        } else {
            format!("no active process for process handle {id:?}")
        })
    }

    /// `command/exec`: what codex refuses before running anything, in its order (app-server
    /// `command_exec`); a command that passes runs in `exec.rs`.
    pub(super) fn command_exec_refusals(&self, p: &Value) -> Result<(), String> {
        let set = |k: &str| !p[k].is_null();
        let on = |k: &str| p[k] == true;
        if p["command"].as_array().is_some_and(Vec::is_empty) {
            return Err("command must not be empty".into());
        }
        if set("sandboxPolicy") && set("permissionProfile") {
            return Err("`permissionProfile` cannot be combined with `sandboxPolicy`".into());
        }
        if set("size") && !on("tty") {
            return Err(invalid("command/exec size requires tty: true"));
        }
        if on("disableOutputCap") && set("outputBytesCap") {
            return Err(invalid(
                "command/exec cannot set both outputBytesCap and disableOutputCap",
            ));
        }
        if on("disableTimeout") && set("timeoutMs") {
            return Err(invalid(
                "command/exec cannot set both timeoutMs and disableTimeout",
            ));
        }
        if let Some(t) = p["timeoutMs"].as_i64().filter(|t| *t < 0) {
            return Err(invalid(&format!(
                "command/exec timeoutMs must be non-negative, got {t}"
            )));
        }
        Ok(())
    }

    /// `command/exec`'s terminal size, checked once the permissions are resolved (fidelity
    /// s44440001_0953: a refused profile first; scenario 190b) and before a streaming run's
    /// process id is required (fidelity s32320001_0446; scenario 190).
    pub(super) fn command_exec_size(&self, p: &Value) -> Result<(), String> {
        if !p["size"].is_null() && !sized(p) {
            return Err(invalid(
                "command/exec size rows and cols must be greater than 0",
            ));
        }
        Ok(())
    }

    /// `thread/backgroundTerminals/terminate`: the process id is read as an `i32` before the
    /// thread is looked at; no background terminal runs here.
    pub(super) fn terminate_background(&self, id: &Value, p: &Value) -> Result<(), String> {
        s(p, "processId")
            .parse::<i32>()
            .map_err(|e| format!("invalid background terminal process id: {e}"))?;
        self.fake.loaded_thread(p)?;
        self.result(id, json!({"terminated": false}));
        Ok(())
    }

    /// Methods on a loaded thread whose answer, once the thread is found, is not modeled
    /// (`mcpServerStatus/list` only when it names a thread).
    pub(super) fn on_loaded_thread(
        &self,
        id: &Value,
        method: &str,
        p: &Value,
    ) -> Result<(), String> {
        if method == "mcpServerStatus/list"
            && !p["environmentId"].is_null()
            && (p["serverName"].is_null() || p["threadId"].is_null())
        {
            return Err("environmentId requires serverName and threadId".into());
        }
        let mut cwd = None;
        if method != "mcpServerStatus/list" || !p["threadId"].is_null() {
            let (_, info) = self.fake.loaded_thread(p)?;
            cwd = info["cwd"].as_str().map(std::path::PathBuf::from);
        }
        if method == "mcpServerStatus/list" {
            match self.mcp_servers() {
                // With no server configured the list pages an empty list by offset (fidelity
                // s7070001_0266: `invalid cursor`, `cursor N exceeds total MCP servers 0`).
                Ok(servers) if servers.is_empty() => {
                    offset_page(&[], p, "MCP servers")?;
                }
                Ok(servers) => return self.mcp_status_list(id, p, servers, cwd),
                Err(_) => {}
            }
        }
        self.not_modeled(method)
    }

    /// `thread/search` and `thread/search/stream`: the term (trimmed) must not be empty, then a
    /// cursor must be one of the list's (an RFC 3339 time); the stream refuses a cursor as
    /// invalid params (fidelity s7070001_0411, probed on 0.171.0). Then both find the threads
    /// whose history holds the term (`threads.rs`, `thread_search_results`): the stream's
    /// final answer is the search's page (turn scenario 245; fidelity s44440001_0058, 0238);
    /// its best-effort `thread/search/partial` batches were never seen for one thread.
    pub(super) fn thread_search(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        if s(p, "searchTerm").trim().is_empty() {
            return Err("thread/search requires a non-empty searchTerm".into());
        }
        if let Some(c) = p["cursor"].as_str() {
            if !super::threads::rfc3339(c) {
                let prefix = if method == "thread/search/stream" {
                    crate::fake::rpc::INVALID_PARAMS_PREFIX
                } else {
                    ""
                };
                return Err(format!("{prefix}invalid cursor: {c}"));
            }
        }
        if let Some(result) = self.thread_search_results(p)? {
            self.result(id, result);
            return Ok(());
        }
        self.not_modeled(method)
    }

    /// `memory/reset`: codex empties its memory directories (`memories`, `memories_extensions`
    /// under its home) and keeps them; one that is absent stays absent (0.163.0 creates it:
    /// `memory_reset_creates_roots`), one that is a file refuses the reset (turn scenario 248 on every version; codex `clear_memory_roots_contents`).
    /// The memories' rows in codex's database the fake never writes.
    pub(super) fn memory_reset(&self, id: &Value) -> Result<(), String> {
        let home = &self.fake.codex_home;
        for name in ["memories", "memories_extensions"] {
            let root = home.join(name);
            if self.fake.turn_facts.memory_reset_creates_roots && !root.exists() {
                let _ = std::fs::create_dir_all(&root);
            }
            let Ok(meta) = std::fs::metadata(&root) else {
                continue;
            };
            if !meta.is_dir() {
                return Err(format!(
                    "{}failed to clear memory directories under {}: File exists (os error 17)",
                    crate::fake::rpc::INTERNAL_PREFIX,
                    home.display()
                ));
            }
            for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
                let path = entry.path();
                let _ = if path.is_dir() && !path.is_symlink() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
        self.result(id, json!({}));
        Ok(())
    }

    /// `thread/realtime/appendAudio` on a loaded thread with no realtime conversation (none is
    /// ever started here): accepted, then the submission fails — the thread turns
    /// `systemError` and an `error` names the submission as its turn (seen on every version).
    pub(super) fn realtime_append_audio(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (thread_id, _) = self.realtime_thread(p)?;
        self.result(id, json!({}));
        let turn_id = uuid::Uuid::now_v7().to_string();
        submission_failed(
            self.c,
            &thread_id,
            &turn_id,
            "conversation is not running",
            "badRequest",
        );
        Ok(())
    }

    /// The loaded thread a realtime method names; codex attaches the connection's listener to
    /// it, so a connection that unsubscribed hears the thread again
    /// (`prepare_realtime_conversation_thread`; turn scenario 193).
    fn realtime_thread(&self, p: &Value) -> Result<(String, Value), String> {
        let (thread_id, info) = self.fake.loaded_thread(p)?;
        lock(&self.c.unsubscribed).remove(&thread_id);
        Ok((thread_id, info))
    }

    /// `thread/realtime/start` on a loaded thread: answered, then the session fails without
    /// an API key login (probed on 0.171.0); with one it would reach the network (not
    /// modeled).
    pub(super) fn realtime_start(&self, id: &Value, p: &Value) -> Result<(), String> {
        // An existing call takes no prompt, even a null one, before the thread is looked up
        // (fidelity s7070001_0468; probed on 0.163.0 and 0.171.0).
        let existing_call = p["transport"]["type"] == "existingCall";
        if existing_call && p.get("prompt").is_some() {
            return Err("existingCall transport does not support prompt".into());
        }
        // Then a model (a null one is none: fidelity s37370001_0996; turn scenario 221), then
        // a voice (a null one is none), still before the thread (fidelity s26260001_0173; turn
        // scenario 139 on every version).
        if existing_call && !p["model"].is_null() {
            return Err("existingCall transport does not support model".into());
        }
        if existing_call && !p["voice"].is_null() {
            return Err("existingCall transport does not support voice".into());
        }
        let (thread_id, info) = self.realtime_thread(p)?;
        // Accepted, then failed as codex builds the session's config, before it connects
        // (`build_realtime_session_config`): text output needs realtime v2, whatever the login
        // (the version asked for; else v1 on a call's transport, else the configured one, v2 by
        // default: fidelity s13130001_0013 asked v3 on 0.171.0). Then a session needs an API
        // key (what either would do once running is not modeled).
        // A call's transport (an existing call, WebRTC) is v1 unless asked; a websocket the
        // configured one (turn scenario 139 on every version).
        let call = existing_call || p["transport"]["type"] == "webrtc";
        let default = if call { "v1" } else { "v2" };
        let version = p["version"].as_str().unwrap_or(default);
        // The voice asked for must be one of the version's (`validate_realtime_voice`), the
        // lists `thread/realtime/listVoices` gives (fidelity s14140001_0076 on 0.171.0); a
        // voice from config.toml is not modeled.
        let voices = defaults::result_for(self.fake.protocol, "thread/realtime/listVoices");
        let supported: Vec<&str> = voices["voices"][version]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let voice = p["voice"].as_str().filter(|v| !supported.contains(v));
        // Initial items first: they need v3, at most 128 of them, each and all together at most
        // 8192 estimated tokens (codex's bytes/4, rounded up); then the modality, then the
        // voice (codex `build_realtime_session_config`; turn scenarios 110, 110b on every
        // version; fidelity s16160001_0040, s44440001_0946).
        let message = if let Some(refusal) = initial_items_refusal(p, version) {
            refusal.to_string()
        } else if p["outputModality"] == "text" && version != "v2" {
            "text realtime output modality requires realtime v2".to_string()
        } else if let Some(voice) = voice {
            format!(
                "realtime voice `{voice}` is not supported for {version}; supported voices: {}",
                supported.join(", ")
            )
        } else if existing_call && version == "v2" {
            // Answered, then refused at once (turn scenario 291 on every version).
            "AVAS realtime calls require realtime v1 or v3".to_string()
        } else if existing_call {
            // No login is asked: codex joins the call over its realtime websocket, whose host
            // does not resolve without a network (turn scenario 291 on every version: the
            // failure 6.6–12.4 ms after the result; fidelity s62620001_0251). A websocket
            // base URL of the configuration's is not modeled.
            if self.fake.config().has("experimental_realtime_ws_base_url") {
                return self.not_modeled("thread/realtime/start");
            }
            self.result(id, json!({}));
            let error = json!({"threadId": thread_id, "message": REALTIME_UNRESOLVED});
            let conn = std::sync::Arc::clone(self.c);
            std::thread::spawn(move || {
                std::thread::sleep(REALTIME_CONNECT_FAILED);
                conn.notify("thread/realtime/error", error);
            });
            return Ok(());
        } else {
            if self.has_api_key() {
                return self.not_modeled("thread/realtime/start");
            }
            "realtime conversation requires API key auth".to_string()
        };
        self.result(id, json!({}));
        // codex fails the session on a task of its own: the error came a median 1.1 ms after
        // the result (0.5–7 ms in the turn corpus's 33 recordings on three versions), after
        // the reply to a quick request sent meanwhile (fidelity s23230001_0265).
        // An existing call carries no startup context (codex refuses one for it in later
        // versions): its failure comes at once on a stored thread too (fidelity
        // s51510001_0447, 0.1 and 0.9 ms in both real runs on 0.171.0).
        let context = p["includeStartupContext"] != false && !existing_call;
        let delay = match (crate::fake::threads::has_rollout(&info), context) {
            (true, true) => REALTIME_ERROR_STORED_US,
            (true, false) => REALTIME_NO_CONTEXT_STORED_US,
            (false, _) => REALTIME_ERROR_US,
        };
        let error = json!({"threadId": thread_id, "message": message});
        // With no history to read the failure comes a tenth of a millisecond after the result,
        // before a request the client sends on the result (fidelity s47470001_0258, both real
        // runs): said at once, not left to a sleeping thread a loaded machine wakes late.
        if delay <= REALTIME_NO_CONTEXT_STORED_US {
            self.notify("thread/realtime/error", error);
            return Ok(());
        }
        let conn = std::sync::Arc::clone(self.c);
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_micros(delay));
            conn.notify("thread/realtime/error", error);
        });
        Ok(())
    }

    /// `thread/realtime/stop` on a loaded thread: answered and closed as requested, whether a
    /// session ran or not (probed on 0.171.0).
    pub(super) fn realtime_stop(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (thread_id, _) = self.realtime_thread(p)?;
        self.result(id, json!({}));
        self.notify(
            "thread/realtime/closed",
            json!({"threadId": thread_id, "reason": "requested"}),
        );
        Ok(())
    }

    /// `thread/queue/add` and `thread/queue/update`: the thread read from its rollout, then the
    /// input checked. An addition to a loaded idle thread runs at once (`turn::start_queued`;
    /// fidelity s33330001_0144, turn scenario 194); one to a busy or unloaded thread is not
    /// modeled, so no submission is ever left queued here.
    pub(super) fn queue_update(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        // An addition's input is checked as a turn's first (remote images: scenario 194).
        if method == "thread/queue/add" {
            super::turns::check_input(&p["input"])?;
        }
        let thread_id = self.queue_thread(p)?;
        if p["input"].as_array().is_none_or(Vec::is_empty) {
            return Err("only user input can be added to the user-message queue".into());
        }
        if method == "thread/queue/add" {
            if self.fake.loaded_thread(p).is_err() || turn::running().contains_key(&thread_id) {
                return self.not_modeled(method);
            }
            // After an interrupted turn the queue holds what it is given: answered, changed
            // once, listed, not taken (fidelity s45450001_0647 twice; turn scenario 254 on
            // every version). What then takes it is not modeled.
            let info = self.fake.store.load()["threads"][&thread_id].clone();
            let last = info["turns"].as_array().and_then(|t| t.last()).cloned();
            if last.is_some_and(|t| t["status"] == "interrupted") {
                let submission = turn::queued_submission(p);
                self.fake.store.update(|d| {
                    let q = &mut d["threads"][&thread_id][super::thread_state::QUEUE_HELD];
                    let mut held = q.as_array().cloned().unwrap_or_default();
                    held.push(submission.clone());
                    *q = json!(held);
                });
                self.result(id, json!({"queuedSubmission": submission}));
                self.notify("thread/queue/changed", json!({"threadId": thread_id}));
                return Ok(());
            }
            turn::start_queued(self.c, id, &thread_id, p);
            return Ok(());
        }
        if self.queue_holds(&thread_id) {
            return self.not_modeled(method);
        }
        Err(format!(
            "queued submission not found: {}",
            s(p, "queuedSubmissionId")
        ))
    }

    /// `thread/settings/update`: a loaded thread, and a named permission profile codex can
    /// resolve (a built-in, or a `[permissions]` table this fake never has).
    pub(super) fn settings_update(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.fake.loaded_thread(p)?;
        // Before the profile is resolved (fidelity s40400001_0230 on 0.169.0).
        crate::fake::settings::profile_without_policy(p)?;
        if let Some(name) = p["permissions"].as_str() {
            const BUILT_IN: [&str; 3] = [":read-only", ":workspace", ":danger-full-access"];
            if name.starts_with(':') && !BUILT_IN.contains(&name) {
                return Err(format!(
                    "failed to load configuration: default_permissions refers to unknown \
                     built-in profile `{name}`"
                ));
            }
            if !name.starts_with(':') {
                return Err(
                    "failed to load configuration: default_permissions requires a \
                            `[permissions]` table"
                        .into(),
                );
            }
        }
        self.thread_settings_update(id, p)
    }

    /// The remote plugin catalog needs a ChatGPT login, which no login here is.
    pub(super) fn plugin_share(&self, method: &str) -> Result<(), String> {
        let what = match method {
            "plugin/share/list" => "list remote plugin shares",
            "plugin/share/checkout" => "checkout plugin share",
            "plugin/share/save" => "save remote plugin share",
            "plugin/skill/read" => "read remote plugin skill details",
            "plugin/share/updateTargets" => "update remote plugin share targets",
            _ => "delete remote plugin share",
        };
        Err(self.remote_catalog_refused(what))
    }

    /// The remote plugin catalog refused: it needs a ChatGPT login, and says so of an API key
    /// login (turn scenario 118 on every version).
    pub(super) fn remote_catalog_refused(&self, what: &str) -> String {
        let api_key = if self.has_api_key() {
            "; api key auth is not supported"
        } else {
            ""
        };
        format!("{what}: chatgpt authentication required for remote plugin catalog{api_key}")
    }

    /// Remote control pairing: codes are checked first, then remote control must be on — and
    /// enabling it needs a ChatGPT login, which no login here is.
    pub(super) fn pairing(&self, method: &str, p: &Value) -> Result<(), String> {
        if method == "remoteControl/pairing/status"
            && p["pairingCode"].is_null()
            && p["manualPairingCode"].is_null()
        {
            return Err(
                "remoteControl/pairing/status requires pairingCode or manualPairingCode".into(),
            );
        }
        if method == "remoteControl/pairing/status"
            && !p["pairingCode"].is_null()
            && !p["manualPairingCode"].is_null()
        {
            return Err(
                "remoteControl/pairing/status accepts either pairingCode or \
                        manualPairingCode, not both"
                    .into(),
            );
        }
        Err("remote control pairing requires remote control to be enabled".into())
    }

    /// `experimentalFeature/list`: the version's feature flags (the captured list), paged by
    /// offset (`limit` at least one).
    pub(super) fn feature_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        let method = "experimentalFeature/list";
        let all = defaults::result_for(self.fake.protocol, method);
        let Some(data) = all["data"].as_array() else {
            return self.not_modeled(method);
        };
        // A thread's flags: its own `config` layer over the process's (codex loads the latest
        // config for the thread, `load_latest_config_for_thread`); the id is checked first,
        // then that the thread is loaded, then the cursor (fidelity s14140001_0232, turn
        // scenario 105).
        let thread_flags = match p["threadId"].as_str() {
            Some(_) => {
                let (_, info) = self.fake.loaded_thread(p)?;
                info["configFeatures"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            }
            None => Map::new(),
        };
        // Each flag as this process has it: configured, else enabled at run time (the
        // configuration read once: once a flag, the answer took 65 ms under load where the
        // real server takes 2, and a thread's settings announcement overtook it:
        // s19190001_0135).
        let enabled = self.features_enabled();
        let data: Vec<Value> = data
            .iter()
            .map(|f| {
                let mut f = f.clone();
                let name = f["name"].as_str().unwrap_or_default();
                let on = thread_flags
                    .get(name)
                    .and_then(Value::as_bool)
                    .or_else(|| enabled(name));
                if let Some(on) = on {
                    f["enabled"] = json!(on);
                }
                f
            })
            .collect();
        let page = offset_page(&data, p, "feature flags")?;
        self.result(id, page);
        Ok(())
    }

    /// `app/list`: a named thread must be loaded here (its id parsed first); without a ChatGPT
    /// login no app is known, so the list is empty whatever the cursor (108_app_list_checks,
    /// fidelity s16160001_0292).
    pub(super) fn app_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.no_apps(id, p, "app/list", json!({"data": [], "nextCursor": null}))
    }

    /// `app/installed`: as `app/list`, the named thread checked, then no app installed
    /// (turn scenario 112 on every version).
    pub(super) fn app_installed(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.no_apps(id, p, "app/installed", json!({"apps": []}))
    }

    fn no_apps(&self, id: &Value, p: &Value, method: &str, empty: Value) -> Result<(), String> {
        if !p["threadId"].is_null() {
            self.fake.loaded_thread(p)?;
        }
        self.result(id, defaults::shaped(self.fake.protocol, method, empty));
        Ok(())
    }

    /// `environment/add`: codex's exec-server registry refuses an empty id, the built-in
    /// `local` and an empty URL; any other id is registered (again, or with a URL it cannot
    /// reach) without connecting (turn scenarios 112 and 241 on every version). Its info and
    /// status then show the connection attempt's failure where it fails without the network
    /// ([`exec_server_refusal`]).
    pub(super) fn environment_add(&self, id: &Value, p: &Value) -> Result<(), String> {
        let env = s(p, "environmentId");
        if env.is_empty() {
            return Err("exec-server protocol error: environment id cannot be empty".into());
        }
        if env == "local" {
            return Err(format!(
                "exec-server protocol error: environment id `{env}` is reserved for EnvironmentManager"
            ));
        }
        if p["execServerUrl"] == "" {
            return Err(
                "exec-server protocol error: remote environment requires an exec-server url".into(),
            );
        }
        self.fake.store.update(|d| {
            d["environmentsAdded"][env] = p["execServerUrl"].clone();
        });
        self.result(id, json!({}));
        Ok(())
    }

    /// `model/list`: the version's catalog as the real server lists it (captured with its
    /// hidden models, `tests/corpus/sessions/real_session.jsonl`), the hidden ones only with
    /// `includeHidden`, paged by offset; a provider the configuration does not define refused.
    pub(super) fn model_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        let method = "model/list";
        if let Some(m) = p["modelProvider"].as_str() {
            let known = m == "openai"
                || self
                    .fake
                    .config()
                    .custom_providers()
                    .iter()
                    .any(|(k, _)| *k == m);
            if !known {
                let message = format!(
                    "This chat uses model provider \u{201c}{m}\u{201d}, which is no longer \
                     configured. Restore this provider\u{2019}s configuration to continue."
                );
                self.send(json!({"error": {"code": -32600,
                    "data": {"type": "modelProviderNotConfigured", "modelProvider": m},
                    "message": message}, "id": id}));
                return Ok(());
            }
        }
        let all = defaults::result_for(self.fake.protocol, method);
        let Some(data) = all["data"].as_array() else {
            return self.not_modeled(method);
        };
        let hidden = p["includeHidden"] == true;
        let data: Vec<Value> = data
            .iter()
            .filter(|m| hidden || m["hidden"] != true)
            .cloned()
            .collect();
        let page = offset_page(&data, p, "models")?;
        self.result(id, defaults::shaped(self.fake.protocol, method, page));
        Ok(())
    }

    /// `modelProvider/default/set`: a provider the configuration does not define is refused
    /// as codex's config writer refuses it; setting a defined one is not modeled.
    pub(super) fn default_provider_set(&self, id: &Value, p: &Value) -> Result<(), String> {
        let provider = s(p, "providerId");
        let known = provider == "openai"
            || self
                .fake
                .config()
                .custom_providers()
                .iter()
                .any(|(k, _)| *k == provider);
        if known {
            return self.not_modeled("modelProvider/default/set");
        }
        self.send(json!({"error": {"code": -32600,
            "data": {"config_write_error_code": "configValidationError"},
            "message": format!("Model provider `{provider}` is not configured.")}, "id": id}));
        Ok(())
    }

    /// `thread/approveGuardianDeniedAction`: the event is read first (serde's first missing
    /// field); approving one is not modeled (no reviewer denies anything here unasked).
    pub(super) fn approve_denied(&self, p: &Value) -> Result<(), String> {
        for field in ["id", "status"] {
            if p["event"].get(field).is_none() {
                return Err(format!(
                    "invalid Guardian denial event: missing field `{field}`"
                ));
            }
        }
        self.not_modeled("thread/approveGuardianDeniedAction")
    }

    /// `thread/guardianReview` on a loaded thread: before its first turn there is no call to
    /// review.
    pub(super) fn guardian_review(&self, p: &Value) -> Result<(), String> {
        let (_, info) = self.fake.loaded_thread(p)?;
        if info["turns"].as_array().is_none_or(Vec::is_empty) {
            return Err("expected a final plaintext exec_command, apply_patch, \
                        request_permissions, or MCP call"
                .into());
        }
        // A completed turn ends with the model's answer, not with a call codex could review
        // (0.171.0: after a message, a command run or approved, a patch, a reasoning).
        // A turn that holds no call has nothing to review either, whatever its end (fidelity
        // s16160001_0126: a failed turn with a message and a reasoning), nor one whose only
        // calls are patches, written as freeform calls (s34340001_0744 on 0.171.0, _0069 on
        // 0.169.0: a failed turn of two patches).
        let last = info["turns"].as_array().and_then(|t| t.last());
        let no_call = |t: &Value| {
            t["items"].as_array().is_none_or(|items| {
                !items
                    .iter()
                    .any(|i| matches!(i["type"].as_str(), Some("commandExecution" | "mcpToolCall")))
            })
        };
        if last.is_some_and(|t| t["status"] == "completed" || no_call(t)) {
            return Err("expected a completed plaintext exec_command, apply_patch, request_permissions, or MCP call with a nonempty call ID"
                .into());
        }
        self.not_modeled("thread/guardianReview")
    }

    /// `marketplace/remove`: no marketplace is configured or installed here.
    /// `marketplace/upgrade`: every Git marketplace, or the one named, which must be
    /// configured as one (fidelity s14140001_0037; probed on 0.163.0, 0.169.0 and 0.171.0).
    /// Upgrading one would reach the network (not modeled).
    pub(super) fn marketplace_upgrade(&self, id: &Value, p: &Value) -> Result<(), String> {
        let marketplaces = self.user_table().remove("marketplaces").unwrap_or_default();
        let git = |m: &Value| m["source_type"] == "git";
        match p["marketplaceName"].as_str() {
            Some(name) if !marketplaces.get(name).is_some_and(git) => Err(format!(
                "marketplace `{name}` is not configured as a Git marketplace"
            )),
            None if !marketplaces
                .as_object()
                .is_some_and(|m| m.values().any(git)) =>
            {
                self.result(
                    id,
                    json!({"selectedMarketplaces": [], "upgradedRoots": [], "errors": []}),
                );
                Ok(())
            }
            _ => self.not_modeled("marketplace/upgrade"),
        }
    }

    pub(super) fn marketplace_remove(&self, p: &Value) -> Result<(), String> {
        let name = s(p, "marketplaceName");
        if name.is_empty() {
            return Err("invalid marketplace name: must not be empty".into());
        }
        Err(format!(
            "marketplace `{name}` is not configured or installed"
        ))
    }

    /// A stored thread's attachments (probed on 0.171.0: 83): `add` keeps the first of a
    /// type and identity key (`created`, then `existing` with what was kept), `list` pages
    /// them in the order added, `remove` deletes one silently when absent; a change is
    /// announced after its answer.
    pub(super) fn attachments(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        let thread_id = s(p, "threadId").to_string();
        crate::fake::threads::check_uuid(&thread_id, "thread").map_err(|e| invalid(&e))?;
        // A list's cursor is parsed (this thread's, a time, an id) before the thread is looked
        // up (fidelity s30300001_0494: refused on a thread with no rollout yet).
        let parsed = |c: &str| {
            let parts: Vec<&str> = c.split('|').collect();
            parts.len() == 3 && parts[0] == thread_id && parts[1].parse::<i64>().is_ok()
        };
        if method == "thread/attachment/list" && p["cursor"].as_str().is_some_and(|c| !parsed(c)) {
            return Err(invalid("invalid pagination cursor"));
        }
        // An attachment's keys are checked before the thread is looked up (turn scenario 251
        // on every version).
        if method != "thread/attachment/list" {
            for key in ["attachmentType", "identityKey"] {
                if s(p, key).trim().is_empty() {
                    return Err(invalid(&format!("{key} must not be empty")));
                }
            }
        }
        let info = self.fake.store.load()["threads"][&thread_id].clone();
        if !info.is_object() || !crate::fake::threads::has_rollout(&info) {
            if method == "thread/attachment/list" {
                self.result(id, json!({"data": [], "nextCursor": null}));
                return Ok(());
            }
            return Err(invalid(&format!("thread not found: {thread_id}")));
        }
        let kept: Vec<Value> = info["attachments"].as_array().cloned().unwrap_or_default();
        if method == "thread/attachment/list" {
            let from = match p["cursor"].as_str() {
                None => 0,
                Some(c) => {
                    let at = c
                        .split('|')
                        .nth(2)
                        .and_then(|aid| kept.iter().position(|a| a["id"] == aid))
                        .filter(|_| c.starts_with(&format!("{thread_id}|")));
                    match at {
                        Some(at) => at + 1,
                        None => return Err(invalid("invalid pagination cursor")),
                    }
                }
            };
            let limit = p["limit"]
                .as_u64()
                .map_or(usize::MAX, |l| (l as usize).max(1));
            let page: Vec<Value> = kept.iter().skip(from).take(limit).cloned().collect();
            let next = (from + page.len() < kept.len())
                .then(|| page.last())
                .flatten()
                .map(|a| format!("{thread_id}|{}|{}", a["createdAt"], s(a, "id")));
            self.result(id, json!({"data": page, "nextCursor": next}));
            return Ok(());
        }
        let same = |a: &Value| {
            a["attachmentType"] == p["attachmentType"] && a["identityKey"] == p["identityKey"]
        };
        let existing = kept.iter().find(|a| same(a)).cloned();
        let (answer, change) = match (method, existing) {
            ("thread/attachment/add", Some(a)) => {
                (json!({"outcome": "existing", "attachment": a}), None)
            }
            ("thread/attachment/add", None) => {
                let a = json!({"id": uuid::Uuid::now_v7().to_string(),
                               "attachmentType": p["attachmentType"], "identityKey": p["identityKey"],
                               "payload": p["payload"], "createdAt": crate::fake::state::now_secs()});
                (
                    json!({"outcome": "created", "attachment": a}),
                    Some((a, "created")),
                )
            }
            (_, Some(a)) => (json!({}), Some((a, "deleted"))),
            (_, None) => (json!({}), None),
        };
        if let Some((a, op)) = &change {
            self.fake.store.update(|d| {
                let t = &mut d["threads"][&thread_id];
                let mut list: Vec<Value> = t["attachments"].as_array().cloned().unwrap_or_default();
                if *op == "created" {
                    list.push(a.clone());
                } else {
                    list.retain(|x| x["id"] != a["id"]);
                }
                t["attachments"] = json!(list);
            });
        }
        self.result(id, answer);
        if let Some((a, op)) = change {
            self.notify(
                "thread/attachment/updated",
                json!({"threadId": thread_id, "attachmentType": a["attachmentType"],
                       "identityKey": a["identityKey"], "attachmentId": a["id"], "operation": op}),
            );
        }
        Ok(())
    }

    /// `thread/realtime/list` on a loaded thread with no realtime session (none runs here):
    /// no cursor is known; before the first turn, nothing is projected.
    pub(super) fn realtime_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        crate::fake::threads::check_uuid(s(p, "threadId"), "thread")?;
        // A stored thread not loaded (archived, unloaded) is read from its rollout (fidelity
        // s33330001_0575: listed after its archive).
        let found = self
            .fake
            .loaded_thread(p)
            .or_else(|_| self.fake.stored(p, "thread", ""));
        let Ok((_, info)) = found else {
            return self.not_modeled("thread/realtime/list");
        };
        // (fidelity s9090001 sessions; probed on 0.171.0)
        if p["limit"].as_u64().is_some_and(|l| !(1..=500).contains(&l)) {
            return Err("realtime page size must be between 1 and 500".into());
        }
        // An observation window must hold some time (fidelity s29290001_0025: 0 to 0).
        if let (Some(from), Some(to)) =
            (p["fromObservedAtMs"].as_i64(), p["toObservedAtMs"].as_i64())
        {
            if from >= to {
                return Err("realtime observation time range must be nonempty".into());
            }
        }
        let unsupported = json!({"data": [], "nextCursor": null, "snapshotEnd": 0,
                                 "projectedThroughItemIndex": 0, "coverage": "unsupported"});
        // A legacy history is never projected, whatever the cursor
        // (`132_realtime_list_of_a_legacy_thread`, fidelity s24240001_0006).
        if info["historyMode"] == "legacy" {
            self.result(id, unsupported);
            return Ok(());
        }
        if !p["cursor"].is_null() {
            return Err("invalid realtime cursor".into());
        }
        // A stored thread is projected through its rollout: as many entries as it has,
        // no realtime item among them; a named event not seen yet leaves the coverage pending,
        // a session named (none runs here) changes nothing (turn scenario 147; fidelity
        // s28280001_0056).
        // A thread with nothing stored yet has nothing projected, whatever is asked: coverage
        // unsupported (turn scenarios 119b, 172b and 172c; fidelity s21210001_0248). Once
        // stored (a turn, a section move: 48, 172d) it is projected through its rollout.
        // An ephemeral thread has no rollout to project, turns or not (fidelity
        // s34340001_0093; turn scenario 199).
        if !crate::fake::threads::materialized(&info) || info["ephemeral"] == true {
            self.result(id, unsupported);
            return Ok(());
        }
        let end = info["rollout"]["ordinal"].as_u64().unwrap_or(0) + 1;
        // A snapshot end the client pinned is answered as it is, pending past what is
        // projected; so is a position required that is not projected yet (turn scenario 172,
        // fidelity s30300001_0908).
        let snapshot = p["snapshotEnd"].as_u64().unwrap_or(end);
        let pending = p["eventId"].is_string()
            || snapshot > end
            || p["requiredThroughPosition"]
                .as_u64()
                .is_some_and(|r| r >= end);
        let coverage = if pending { "pending" } else { "ready" };
        self.result(
            id,
            json!({"data": [], "nextCursor": null, "snapshotEnd": snapshot,
                   "projectedThroughItemIndex": end, "coverage": coverage}),
        );
        Ok(())
    }

    /// `thread/revert`: a well-formed id of a thread that exists; reverting (0.163.0 unloads the
    /// thread first, later versions look for the turn) is not modeled.
    pub(super) fn revert(&self, p: &Value) -> Result<(), String> {
        let method = "thread/revert";
        crate::fake::threads::check_uuid(s(p, "threadId"), "thread")?;
        let Ok((thread_id, info)) = self.fake.loaded_thread(p) else {
            return Err(format!("thread not found: {}", s(p, "threadId")));
        };
        if info["ephemeral"] == true {
            return Err("ephemeral threads do not support thread/revert".into());
        }
        // Before the turn is looked for (fidelity s32320001_0172; turn scenario 187).
        if info["historyMode"] == "legacy" {
            return Err("thread/revert only supports paginated threads".into());
        }
        let turns = info["turns"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let known = turns.iter().any(|t| t["id"] == p["beforeTurnId"]);
        // Reverting a running thread (interrupted first) or to a real turn is not modeled.
        if known || turn::running().contains_key(&thread_id) {
            return self.not_modeled(method);
        }
        // codex unloads the thread before it reads the history back.
        lock(&self.fake.loaded).remove(&thread_id);
        self.notify(
            "thread/status/changed",
            json!({"threadId": thread_id, "status": {"type": "notLoaded"}}),
        );
        // Nothing stored yet: the thread stays unloaded.
        if !crate::fake::threads::materialized(&info) {
            return Err(format!("no rollout found for thread id {thread_id}"));
        }
        // No such turn: the thread is loaded again first, as a session starts (its notices:
        // fidelity s28280001_0603, a deprecated feature), its last turn's failure still
        // showing (fidelity s6060001_0120: `systemError` after a failed turn).
        lock(&self.fake.loaded).insert(thread_id.clone());
        // Its settings are resolved again as a cold resume's are: a tier its model does not
        // advertise is warned about again (fidelity s41410001_0038 on 0.171.0; turn scenario
        // 233 on every version; 0.163.0 takes no tier a turn set back).
        let tier = crate::fake::settings::configured_tier(&info)
            .or_else(|| info["serviceTier"].as_str())
            .map(|t| json!(t))
            .filter(|_| !self.fake.turn_facts.service_tier_not_resumed);
        if let Some(tier) = tier {
            let model = self.model_of(&info);
            let config = self.fake.config();
            if let (_, Some(message)) = self.fake.catalog.service_tier(Some(&tier), &config, &model)
            {
                self.notify(
                    "warning",
                    json!({"threadId": thread_id, "message": message}),
                );
            }
        }
        self.session_repeated(&thread_id);
        let status = if info["systemError"] == true {
            "systemError"
        } else {
            "idle"
        };
        self.notify(
            "thread/status/changed",
            json!({"threadId": thread_id, "status": {"type": status}}),
        );
        Err(format!("turn not found: {}", s(p, "beforeTurnId")))
    }

    /// `thread/sample`: a loaded source whose latest finished turn is the expected one; the
    /// sample itself is not modeled.
    pub(super) fn sample(&self, p: &Value) -> Result<(), String> {
        // The id is parsed bare here: the uuid error without codex's usual prefix.
        uuid::Uuid::parse_str(s(p, "threadId")).map_err(|e| e.to_string())?;
        let Ok((thread_id, info)) = self.fake.loaded_thread(p) else {
            return Err("thread/sample requires a loaded source".into());
        };
        let prompt = s(p, "prompt");
        if prompt.trim().is_empty() || prompt.len() > 4000 || s(p, "expectedTurnId").is_empty() {
            return Err(
                "thread/sample requires expectedTurnId and a prompt of at most 4000 bytes".into(),
            );
        }
        if info["ephemeral"] == true {
            return Err("sample source must be a persistent root thread".into());
        }
        let in_progress = p["allowInProgressTurn"] == true;
        let busy = turn::running()
            .get(&thread_id)
            .is_some_and(|c| !c.queued.load(std::sync::atomic::Ordering::SeqCst));
        if !in_progress && busy {
            return Err("sample source must be idle".into());
        }
        if !crate::fake::threads::materialized(&info) {
            return Err(format!(
                "invalid thread-store request: no rollout found for thread id {thread_id}"
            ));
        }
        let turns = info["turns"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let latest = if in_progress {
            turns.last()
        } else {
            turns.iter().rev().find(|t| t["status"] != "inProgress")
        };
        if latest.map(|t| &t["id"]) != Some(&p["expectedTurnId"]) {
            return Err(if in_progress {
                "sample source turn must be the latest turn".into()
            } else {
                "sample source turn must be the latest finished turn".into()
            });
        }
        self.not_modeled("thread/sample")
    }

    /// `process/spawn`: the command, then the handle, then what the spawn itself would meet, as
    /// the OS words it (a working directory that is missing or not a directory, a program not
    /// found where it names or on the `PATH` it runs with); a process that would start is not
    /// run here (fidelity s9090001_0219; probed on 0.171.0).
    pub(super) fn process_spawn(&self, p: &Value) -> Result<(), String> {
        let command = p["command"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let Some(program) = command.first() else {
            return Err("command must not be empty".into());
        };
        if s(p, "processHandle").is_empty() {
            return Err("processHandle must not be empty".into());
        }
        // Then the terminal size (fidelity s11110001_0134; probed on 0.171.0).
        if !p["size"].is_null() {
            if p["tty"] != true {
                return Err(invalid("process/spawn size requires tty: true"));
            }
            if !sized(p) {
                return Err(invalid("process size rows and cols must be greater than 0"));
            }
        }
        let failed = |why: String| {
            Err(format!(
                "{}failed to spawn process: {why}",
                crate::fake::rpc::INTERNAL_PREFIX
            ))
        };
        // A terminal's spawn of an absolute program that is not there fails: in
        // portable-pty's own words, the errno's name, when the working directory is missing
        // too (fidelity s17170001_0266), else as the system's exec error (s30300001_0223;
        // turn scenario 176 on every version). Its PATH search, a directory and the rest are
        // not modeled.
        if p["tty"] == true {
            let program = program.as_str().unwrap_or_default();
            if program.starts_with('/') && !std::path::Path::new(program).exists() {
                if std::path::Path::new(s(p, "cwd")).is_dir() {
                    return failed("No such file or directory (os error 2)".into());
                }
                return failed(format!(
                    "Unable to spawn {program} because it doesn't exist on the filesystem \
                     (ENOENT: No such file or directory)"
                ));
            }
            return self.not_modeled("process/spawn");
        }
        let program = program.as_str().unwrap_or_default();
        if program.is_empty() && p["tty"] != true {
            return failed("missing program for pipe spawn".into());
        }
        if let Some(e) = crate::fake::turn::spawn_dir_error(s(p, "cwd")) {
            return failed(e.to_string());
        }
        let found = if program.contains('/') {
            std::path::Path::new(program).exists()
        } else {
            let path = match p["env"]["PATH"].as_str() {
                Some(given) => given.to_string(),
                None => std::env::var("PATH").unwrap_or_default(),
            };
            std::env::split_paths(&path).any(|d| d.join(program).is_file())
        };
        if !found {
            return failed(std::io::Error::from_raw_os_error(libc::ENOENT).to_string());
        }
        self.not_modeled("process/spawn")
    }

    /// `app/read`: at most 100 ids (counted before duplicates go), then the thread when one
    /// is named; no app is known here (no ChatGPT login reaches the connectors directory), so
    /// every id is missing, each once in the order first asked (fidelity s13130001_0243;
    /// probed on 0.163.0 and 0.171.0).
    pub(super) fn app_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        let ids = super::view::strs(&p["appIds"]);
        if ids.len() > 100 {
            return Err(format!(
                "{}app/read accepts at most 100 appIds",
                crate::fake::rpc::INVALID_PARAMS_PREFIX
            ));
        }
        if p["threadId"].is_string() {
            self.fake.loaded_thread(p)?;
        }
        let mut missing: Vec<&str> = Vec::new();
        for app in ids {
            if !missing.contains(&app) {
                missing.push(app);
            }
        }
        self.result(id, json!({"apps": [], "missingAppIds": missing}));
        Ok(())
    }

    /// `review/start`: the thread (its id, then loaded here), then the target codex cleans
    /// (a branch, commit sha or custom instructions empty once trimmed is refused), as
    /// app-server's `review_start_inner` and `review_request_from_target` do (fidelity
    /// s12120001_0120). 0.163.0 first says a detached review is deprecated, whatever follows
    /// (`review_detached_deprecated`). An inline review on an idle thread runs as codex's review
    /// task does (`turn::start_review`; turn scenario 115): the hint and prompt per target
    /// (codex `review_prompts`), a base branch outside a git repository failing at once. A
    /// detached review (a new thread), a review over a running turn and a base branch inside a
    /// repository (its merge base) are not modeled.
    pub(super) fn review_start(&self, id: &Value, p: &Value) -> Result<(), String> {
        if p["delivery"] == "detached" && self.fake.turn_facts.review_detached_deprecated {
            self.notify(
                "deprecationNotice",
                json!({"summary": "review/start with delivery \"detached\" is deprecated and \
                                   will be removed in a future release.",
                       "details": "Use thread/start followed by review/start with delivery \
                                   \"inline\" for a separate review thread, or thread/fork \
                                   followed by turn/start with your own review instructions."}),
            );
        }
        let (thread_id, info) = self.fake.loaded_thread(p)?;
        let target = &p["target"];
        let field = match target["type"].as_str() {
            Some("baseBranch") => "branch",
            Some("commit") => "sha",
            Some("custom") => "instructions",
            Some("uncommittedChanges") => "",
            _ => return self.not_modeled("review/start"),
        };
        let value = target[field].as_str().unwrap_or_default().trim();
        if !field.is_empty() && value.is_empty() {
            return Err(format!("{field} must not be empty"));
        }
        let running = turn::running().contains_key(&thread_id);
        if p["delivery"] == "detached" || running {
            return self.not_modeled("review/start");
        }
        let cwd = std::path::PathBuf::from(info["cwd"].as_str().unwrap_or("/"));
        let (hint, prompt) = match field {
            "branch" => {
                if cwd.ancestors().any(|d| d.join(".git").exists()) {
                    return self.not_modeled("review/start");
                }
                (format!("changes against '{value}'"), String::new())
            }
            "sha" => {
                let short: String = value.chars().take(7).collect();
                let title = target["title"]
                    .as_str()
                    .map(str::trim)
                    .filter(|t| !t.is_empty());
                match title {
                    Some(t) => (
                        format!("commit {short}: {t}"),
                        format!(
                            "Review the code changes introduced by commit {value} \
                                 (\"{t}\"). Provide prioritized, actionable findings."
                        ),
                    ),
                    None => (
                        format!("commit {short}"),
                        format!(
                            "Review the code changes introduced by commit {value}. \
                                 Provide prioritized, actionable findings."
                        ),
                    ),
                }
            }
            "instructions" => (value.to_string(), value.to_string()),
            _ => (
                "current changes".to_string(),
                "Review the current code changes (staged, unstaged, and untracked files) and \
                 provide prioritized findings."
                    .to_string(),
            ),
        };
        if field == "branch" {
            // The merge base is looked for once the review turn is answered: outside a
            // repository the thread fails (0.171.0, turn scenario 115).
            let turn_id = uuid::Uuid::now_v7().to_string();
            self.result(id, turn::review_answer(&thread_id, &turn_id, &hint));
            let message = format!("{} is not a git repository", json!(cwd.to_string_lossy()));
            // codex looks for it on a task of its own, with git: the failure came 9-36 ms
            // after the answer (turn scenarios 115 and 137 on three versions, fidelity
            // s28280001_0038 and 0097 twice each), after the reply to a quick request sent
            // meanwhile.
            // The review's turn context comes first: on a model without metadata it says so,
            // just before the failure (fidelity s30300001_0304 on 0.171.0), as an inline
            // review's does before entering review mode.
            let warning = self
                .fake
                .catalog
                .unknown_model_warning(&self.model_of(&info));
            let conn = std::sync::Arc::clone(self.c);
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(MERGE_BASE_MS));
                if let Some(message) = warning {
                    conn.notify(
                        "warning",
                        json!({"threadId": thread_id, "message": message}),
                    );
                }
                submission_failed(&conn, &thread_id, &turn_id, &message, "other");
            });
            return Ok(());
        }
        turn::start_review(self.c, id, &thread_id, turn::ReviewRequest { hint, prompt });
        Ok(())
    }

    /// `turn/settings/update`: the thread; then a change of model, effort, summary or tier (or
    /// of nothing) needs the feature that allows it, while one of only the reviewer or the
    /// environments does not; then the turn must be the one running, else the target is
    /// unavailable (fidelity s8080001_0128; probed on 0.163.0, 0.169.0 and 0.171.0).
    pub(super) fn turn_settings(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (thread_id, _) = self.fake.loaded_thread(p)?;
        let switches = ["model", "effort", "summary"]
            .iter()
            .any(|k| !p[*k].is_null())
            || p.get("serviceTier").is_some();
        let others = !p["approvalsReviewer"].is_null() || !p["environments"].is_null();
        let allowed = self
            .fake
            .config()
            .features
            .iter()
            .any(|f| f == "step_model_switching");
        if (switches || !others) && !allowed {
            return Err("turn settings updates require the step_model_switching feature".into());
        }
        let running = turn::running()
            .get(&thread_id)
            .is_some_and(|c| p["turnId"] == c.turn_id().as_str());
        if !running {
            self.result(id, json!({"status": "targetUnavailable"}));
            return Ok(());
        }
        self.not_modeled("turn/settings/update")
    }

    /// User verification needs a platform provider this build does not have: enrolling and
    /// deleting are unavailable; a challenge to verify is refused as invalid.
    pub(super) fn user_verification(&self, id: &Value, method: &str) -> Result<(), String> {
        let error = if method == "userVerification/verify" {
            json!({"code": -32602, "data": {"type": "invalidRequest", "reason": "invalidParams"},
                   "message": "Invalid verification challenge or display text."})
        } else {
            json!({"code": -32603,
                   "data": {"type": "unavailable", "reason": "providerUnavailable"},
                   "message": "User verification is not available in this build or account."})
        };
        self.send(json!({"error": error, "id": id}));
        Ok(())
    }

    /// `plugin/share/delete`, `plugin/share/checkout`, `plugin/skill/read` and a
    /// `plugin/share/save` that names a remote plugin: the id's shape, then the login.
    pub(super) fn share_by_id(&self, method: &str, p: &Value) -> Result<(), String> {
        // A save's share settings first: for a new share only, never listed (fidelity
        // s9090001 sessions; probed on 0.171.0).
        if method == "plugin/share/save" {
            if !p["remotePluginId"].is_null()
                && (!p["discoverability"].is_null() || !p["shareTargets"].is_null())
            {
                return Err(
                    "discoverability and shareTargets are only supported when creating \
                            a plugin share; use plugin/share/updateTargets to update share \
                            settings"
                        .into(),
                );
            }
            if p["discoverability"] == "LISTED" {
                return Err(
                    "discoverability LISTED is not supported for plugin/share/save; use \
                            UNLISTED or PRIVATE"
                        .into(),
                );
            }
        }
        if method == "plugin/skill/read" {
            // This one says which characters are allowed.
            remote_plugin_id(p).map_err(|e| {
                format!("{e}: only ASCII letters, digits, `_`, `-`, and `~` are allowed")
            })?;
        } else if method != "plugin/share/save" || !p["remotePluginId"].is_null() {
            remote_plugin_id(p)?;
        }
        self.plugin_share(method)
    }

    /// `plugin/share/updateTargets`: the id's shape first (`[A-Za-z0-9_~-]+`), then no
    /// workspace among the targets, then the remote catalog's login.
    pub(super) fn share_targets(&self, p: &Value) -> Result<(), String> {
        remote_plugin_id(p)?;
        let targets = p["shareTargets"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if targets.iter().any(|t| t["principalType"] == "workspace") {
            return Err(
                "shareTargets cannot include workspace principals; use discoverability \
                        UNLISTED for workspace link access"
                    .into(),
            );
        }
        self.plugin_share("plugin/share/updateTargets")
    }

    /// `marketplace/add`'s source read as codex's `parse_marketplace_source` reads it: a local
    /// path (absolute, `./`, `../`, `~/`, `.`, `..`) must resolve to a directory and takes no
    /// ref; a git URL or an `owner/repo` shorthand is cloned (the network: not modeled), and
    /// adding a local directory is not modeled either.
    pub(super) fn marketplace_add(&self, p: &Value) -> Result<(), String> {
        let source = s(p, "source").trim();
        if source.is_empty() {
            return Err("marketplace source must not be empty".into());
        }
        let local = |x: &str| {
            x.starts_with('/')
                || ["./", "../", "~/"].iter().any(|pre| x.starts_with(pre))
                || x == "."
                || x == ".."
        };
        let ssh = |x: &str| x.starts_with("ssh://") || (x.starts_with("git@") && x.contains(':'));
        let (base, mut reference) = match source.rsplit_once('#') {
            Some((b, r)) => (b, Some(r)),
            None => match source.rsplit_once('@') {
                Some((b, r)) if !local(source) && !source.contains("://") && !ssh(source) => {
                    (b, Some(r))
                }
                _ => (source, None),
            },
        };
        reference = reference.filter(|r| !r.trim().is_empty());
        if p["refName"].is_string() {
            reference = p["refName"].as_str();
        }
        if local(base) {
            if reference.is_some() {
                return Err("--ref is only supported for git marketplace sources".into());
            }
            let path = match base.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME")
                    .map_or_else(|| base.into(), |h| std::path::PathBuf::from(h).join(rest)),
                None => std::path::PathBuf::from(base),
            };
            let path = self.fake.cwd.join(path);
            let path = std::fs::canonicalize(&path)
                .map_err(|e| format!("failed to resolve local marketplace source path: {e}"))?;
            if path.is_file() {
                return Err("local marketplace source must be a directory, not a file".into());
            }
            return self.not_modeled("marketplace/add");
        }
        let segment = |x: &str| {
            !x.is_empty()
                && x.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        let mut parts = base.split('/');
        let shorthand = parts.next().is_some_and(segment)
            && parts.next().is_some_and(segment)
            && parts.next().is_none();
        if ssh(base) || base.starts_with("http://") || base.starts_with("https://") || shorthand {
            return self.not_modeled("marketplace/add");
        }
        Err(
            "invalid marketplace source format; expected owner/repo, a git URL, or a local \
             marketplace path"
                .into(),
        )
    }

    /// `account/gatewayOAuth/login` for the configured provider when it has no gateway OAuth
    /// (`auth`): codex refuses it; a provider with one, or another provider, is not modeled.
    pub(super) fn gateway_login(&self, p: &Value) -> Result<(), String> {
        let config = self.fake.config();
        let named = p["modelProvider"].as_str().unwrap_or(&config.provider);
        let gateway = config
            .custom_providers()
            .iter()
            .find(|(id, _)| *id == named)
            .is_some_and(|(_, t)| t.contains_key("auth"));
        if named != config.provider || gateway {
            return self.not_modeled("account/gatewayOAuth/login");
        }
        // A version whose login takes no params (0.163.0) speaks of the current provider.
        let selectable =
            !defaults::minimal_of(self.fake.protocol, "GatewayOAuthLoginParams").is_null();
        let which = if selectable { "selected" } else { "current" };
        Err(format!("The {which} provider does not use gateway OAuth"))
    }

    /// `thread/increment_elicitation` / `thread/decrement_elicitation`: a per-thread count of
    /// out-of-band elicitations the client holds open, kept by this process; the thread is
    /// paused while it is above zero.
    pub(super) fn elicitation(&self, id: &Value, p: &Value, up: bool) -> Result<(), String> {
        static COUNTS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
        // A loaded thread's (unknown, archived or deleted: not found; all three versions,
        // `127_archived_and_deleted_thread_lookups`).
        let (thread_id, _) = self.fake.loaded_thread(p)?;
        let mut counts = lock(COUNTS.get_or_init(Default::default));
        let n = counts.entry(thread_id).or_default();
        if up {
            *n += 1;
        } else if *n == 0 {
            return Err("out-of-band elicitation count is already zero".into());
        } else {
            *n -= 1;
        }
        self.result(id, json!({"count": *n, "paused": *n > 0}));
        Ok(())
    }

    /// Refusals of an id nothing here names, and of requests missing their input.
    pub(super) fn refused(&self, method: &str, p: &Value) -> Result<(), String> {
        Err(match method {
            // The thread's id is parsed first (fidelity s7070001_0157), then the thread must be
            // loaded, before the items are looked at (fidelity s33330001_0049 on 0.169.0; turn
            // scenario 197 on every version).
            "thread/inject_items" if self.fake.loaded_thread(p).is_err() => {
                self.fake.loaded_thread(p).err().unwrap_or_default()
            }
            "thread/inject_items" if p["items"].as_array().is_none_or(Vec::is_empty) => {
                "items must not be empty".into()
            }
            "thread/inject_items"
                if injected_item_error(
                    &p["items"],
                    self.fake.turn_facts.inject_items_tagged_only,
                )
                .is_some() =>
            {
                injected_item_error(&p["items"], self.fake.turn_facts.inject_items_tagged_only)
                    .unwrap_or_default()
            }
            // The thread as the other queue methods read it first (fidelity s8080001_0076).
            "thread/queue/start" => {
                self.queue_thread(p)?;
                // A stored thread not loaded here is not started from (fidelity s45450001_0208
                // on 0.169.0; turn scenario 255 on every version).
                if self.fake.loaded_thread(p).is_err() {
                    return Err("resume the thread before starting a queued message".into());
                }
                // A submission named is looked for (fidelity s9090001_0155).
                match p["queuedSubmissionId"].as_str() {
                    Some(q) => format!("queued submission not found: {q}"),
                    None => "queue is empty".into(),
                }
            }
            // A thread named must be loaded here, then an environment is named with the
            // server (fidelity s7070001_0221, s27270001_0052; turn scenario 144).
            "mcpServer/oauth/login" => {
                if !p["threadId"].is_null() {
                    self.fake.loaded_thread(p)?;
                }
                match p["environmentId"].as_str() {
                    Some(env) => format!(
                        "No MCP server named '{} (environment {env})' found.",
                        s(p, "name")
                    ),
                    None => format!("No MCP server named '{}' found.", s(p, "name")),
                }
            }
            // codex checks a target first, only when no origin call is named; a link id must be
            // null or real (codex-rs/app-server `read_mcp_resource`; scenario 192; fidelity
            // s34340001_0799: before the thread's id).
            "mcpServer/resource/read"
                if !p["target"].is_null()
                    && p["originCallId"].is_null()
                    && (s(p, "server") != "codex_apps"
                        || s(&p["target"], "connectorId").trim().is_empty()
                        || p["target"]["linkId"].as_str().is_some_and(|l| {
                            l.trim().is_empty() || l.starts_with("synthetic_link::")
                        })
                        || (!p["environmentId"].is_null()
                            && !self.fake.turn_facts.mcp_target_any_scope)) =>
            {
                if self.fake.turn_facts.mcp_target_any_scope {
                    "target requires codex_apps, a connectorId, and a real linkId or null".into()
                } else {
                    "target requires unscoped codex_apps, a connectorId, and a real linkId or null"
                        .into()
                }
            }
            // A thread named is parsed first (fidelity s6060001_0086), then must be loaded
            // here (fidelity s28280001_0050; turn scenario 149).
            "mcpServer/resource/read" | "mcpServer/tool/call"
                if p["threadId"].is_string() && self.fake.loaded_thread(p).is_err() =>
            {
                self.fake.loaded_thread(p).err().unwrap_or_default()
            }
            // Then a read's origin needs its thread (fidelity s8080001_0016; its target: above,
            // s7070001_0577).
            "mcpServer/resource/read"
                if !p["originCallId"].is_null() && p["threadId"].is_null() =>
            {
                "originCallId requires threadId".into()
            }
            // An origin on the apps server is looked up among the thread's finished MCP
            // calls; the fake's threads make none (scenario 192).
            "mcpServer/resource/read"
                if !p["originCallId"].is_null() && s(p, "server") == "codex_apps" =>
            {
                format!(
                    "{}originating MCP tool call was not found or did not complete successfully",
                    crate::fake::rpc::INTERNAL_PREFIX
                )
            }
            // An environment is named with the server (fidelity s7070001_0033).
            "mcpServer/resource/read" | "mcpServer/tool/call" => {
                let server = match p["environmentId"].as_str() {
                    Some(env) => format!("{} (environment {env})", s(p, "server")),
                    None => s(p, "server").to_string(),
                };
                format!(
                    "{}unknown MCP server '{server}'",
                    crate::fake::rpc::INTERNAL_PREFIX
                )
            }
            "environment/info" => {
                let env = s(p, "environmentId");
                match self.fake.store.load()["environmentsAdded"].get(env) {
                    None => format!("unknown environment id `{env}`"),
                    Some(url) => match exec_server_refusal(url.as_str().unwrap_or_default()) {
                        Some(why) => format!(
                            "{}failed to get info for environment `{env}`: {why}",
                            crate::fake::rpc::INTERNAL_PREFIX
                        ),
                        None => return self.not_modeled(method),
                    },
                }
            }
            _ => return self.not_modeled(method),
        })
    }

    /// What the method answers when no rule above applies: its recorded or minimal result.
    pub(super) fn not_modeled(&self, method: &str) -> Result<(), String> {
        Err(format!("{}{method}", NOT_MODELED))
    }

    /// Answers that depend on nothing the fake does not model.
    /// `windowsSandbox/setupStart` off Windows: started, then failed by codex's words for the
    /// mode (`elevated`, else the `legacy` setup).
    /// `server/diagnostics`: this process and its gauges as codex names them (seen on every
    /// version: the request itself in flight, none queued, the threads loaded, the turns
    /// running). The id and memory are this process's own (the comparison masks them).
    pub(super) fn server_diagnostics(&self, id: &Value) -> Result<(), String> {
        // Resident pages, as `/proc/self/statm` counts them.
        let rss = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|pages| pages * 4096);
        // The loaded threads, and the reviewer sub-agent each one that had a review keeps.
        let loaded: Vec<String> = lock(&self.fake.loaded).iter().cloned().collect();
        let store = self.fake.store.load();
        let reviewers = loaded
            .iter()
            .filter(|t| store["threads"][t.as_str()][crate::fake::settings::REVIEWER_LIVE] == true)
            .count();
        let threads = loaded.len() + reviewers;
        let turns = crate::fake::turn::running()
            .values()
            .filter(|c| !c.queued.load(std::sync::atomic::Ordering::SeqCst))
            .count()
            + crate::fake::turn::lingering();
        let gauge = |name: &str, value: usize| json!({"name": name, "value": value});
        let mut gauges = vec![gauge("app.requests.in_flight", 1)];
        if self
            .fake
            .requests_queued
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            gauges.push(gauge("app.requests.queued", 0));
        }
        // Gauged once the process has sent a server→client request (an approval, a question):
        // every real answer after one has it, none before (fidelity s39390001_0477 and 14 more
        // sessions on the three versions).
        if let Some(pending) = *lock(&self.fake.server_requests) {
            gauges.push(gauge("app.server_requests.pending", pending));
        }
        gauges.push(gauge("core.threads.live", threads));
        if self
            .fake
            .turns_gauged
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            gauges.push(gauge("core.turns.active", turns));
        }
        if let Some(live) = crate::fake::mcp::connections_gauge() {
            gauges.push(gauge("mcp.connections.live", live));
        }
        self.result(
            id,
            json!({"process": {"id": std::process::id(), "residentMemoryBytes": rss,
                               "physicalFootprintBytes": null},
                   "gauges": gauges}),
        );
        Ok(())
    }

    pub(super) fn windows_sandbox_setup(&self, id: &Value, p: &Value) -> Result<(), String> {
        let mode = s(p, "mode");
        let kind = if mode == "elevated" {
            "elevated"
        } else {
            "legacy"
        };
        // codex answers once the setup's task is under way: 2.1–12.9 ms after the request,
        // 5.3 ms the median of eleven real answers (turn scenarios on every version, fidelity
        // s35350001_0027, s36360001_0217, s37370001_0623 and _0767, two runs each): a compaction
        // turn started just before shows its start first.
        self.c.flush_held();
        std::thread::sleep(std::time::Duration::from_micros(SANDBOX_ANSWER_US));
        self.result(id, json!({"started": true}));
        let done = json!({"mode": mode, "success": false,
            "error": format!("{kind} Windows sandbox setup is only supported on Windows")});
        // codex fails the setup on a task of its own: the failure came 7–11 ms after the
        // result on 0.171.0 (five starts in a row), after the client's next quick requests.
        let conn = std::sync::Arc::clone(self.c);
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(SANDBOX_SETUP_MS));
            conn.notify("windowsSandbox/setupCompleted", done);
        });
        Ok(())
    }

    pub(super) fn fixed(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        // The thread, then the plan (fidelity s8080001_0233; probed on 0.171.0).
        if method == "thread/prepareApprovedPlan" {
            let (thread_id, _) = self.fake.loaded_thread(p)?;
            if s(p, "markdown").trim().is_empty() {
                return Err("The approved plan is empty.".into());
            }
            // The plan is written to the thread's history: the thread is stored (fidelity
            // s28280001_0262: a revert then found its rollout; turn scenario 148).
            self.fake
                .store
                .update(|d| crate::fake::threads::write_rollout(&mut d["threads"][&thread_id]));
            self.fake.write_rollout(&thread_id);
        }
        // codex's supported range of the threshold (default 20).
        if method == "memory/status"
            && p["minConsolidatedThreads"]
                .as_u64()
                .is_some_and(|n| !(1..=4096).contains(&n))
        {
            return Err(invalid("minConsolidatedThreads must be between 1 and 4096"));
        }
        let v = match method {
            "userVerification/status" => json!({"credentialId": null,
                "unavailableReason": "providerUnavailable",
                "unavailableMessage": "User verification is not available in this build or account."}),
            "memory/status" => {
                // The process's first status opens codex's memories database: 4.8–15.2 ms
                // (median 6.9) in six recordings over three versions, the later ones 0.4–0.6
                // (`42_method_rules`, `58_import_history`; fidelity s58580001_0035: a thread's
                // settings announced meanwhile came first, both real runs).
                let first = !self
                    .fake
                    .memories_opened
                    .swap(true, std::sync::atomic::Ordering::SeqCst);
                if first {
                    crate::fake::latency::answer_after(std::time::Duration::from_micros(6900));
                }
                json!({"v2ConsolidatedThreads": 0,
                       "v2Ready": !self.fake.turn_facts.memory_v2_not_ready})
            }
            "windowsSandbox/readiness" => json!({"status": "notConfigured"}),
            "thread/prepareApprovedPlan" => json!({"prompt": "Implement the plan."}),
            "mock/experimentalMethod" => json!({"echoed": p["value"]}),
            "environment/status" => {
                let env = s(p, "environmentId");
                match self.fake.store.load()["environmentsAdded"].get(env) {
                    None => json!({"status": "unknown",
                                   "error": format!("unknown environment id `{env}`")}),
                    Some(url) => match exec_server_refusal(url.as_str().unwrap_or_default()) {
                        Some(why) => json!({"status": "disconnected", "error": why}),
                        None => return self.not_modeled(method),
                    },
                }
            }
            // No requirements file here; the catalog's models have independent speed tiers.
            "configRequirements/read" => {
                json!({"supportsIndependentSpeedModes": true, "requirements": null})
            }
            "modelProvider/capabilities/read" => {
                json!({"imageGeneration": true, "webSearch": true})
            }
            // codex's built-in permission profiles, all allowed (no requirements file here).
            // The built-in profiles, paged by offset (fidelity s7070001_0994).
            "permissionProfile/list" => offset_page(
                &[":read-only", ":workspace", ":danger-full-access"]
                    .map(|id| json!({"id": id, "description": null, "allowed": true})),
                p,
                "permission profiles",
            )?,
            // No hooks: one entry per cwd asked about (the server's own by default), or the
            // loaded thread's, named instead of cwds (from 0.169.0: an older version drops
            // `threadId`; probed on 0.163.0, 0.169.0 and 0.171.0, fidelity s14140001_0157).
            "hooks/list" => {
                let asked = p["cwds"].as_array().filter(|c| !c.is_empty());
                let cwds: Vec<Value> = match (p["threadId"].is_string(), asked) {
                    (true, Some(_)) => return Err("specify either threadId or cwds".into()),
                    (true, None) => {
                        let (_, info) = self.fake.loaded_thread(p)?;
                        vec![info
                            .get("cwd")
                            .cloned()
                            .unwrap_or_else(|| json!(self.fake.cwd))]
                    }
                    (false, Some(c)) => c.clone(),
                    (false, None) => vec![json!(self.fake.cwd)],
                };
                json!({"data": cwds.iter().map(|c| json!({"cwd": c, "hooks": [],
                                                          "warnings": [], "errors": []}))
                                       .collect::<Vec<_>>()})
            }
            _ => defaults::result_for(self.fake.protocol, method),
        };
        self.result(id, defaults::shaped(self.fake.protocol, method, v));
        Ok(())
    }
}

/// The marker of a rule that does not apply: the dispatcher answers the method's recorded or
/// minimal result instead.
pub(super) const NOT_MODELED: &str = "\u{0}not-modeled:";

/// codex's refusal of an injected item that is neither a response item (an object with a
/// `type`) nor, from 0.171.0, one wrapped as `{"item": …}`: serde's words for the last shape it
/// tried (fidelity s7070001_0484; probed on 0.163.0, 0.169.0 and 0.171.0).
fn injected_item_error(items: &Value, tagged_only: bool) -> Option<String> {
    let expected = if tagged_only {
        "internally tagged enum ResponseItem"
    } else {
        "struct WrappedItem"
    };
    items.as_array()?.iter().enumerate().find_map(|(i, item)| {
        let why = match item {
            Value::Object(o) if o.contains_key("type") => return None,
            Value::Object(_) if tagged_only => "missing field `type`".to_string(),
            Value::Object(o) => match o.get("item") {
                None => "missing field `item`".to_string(),
                Some(Value::Object(w)) if w.contains_key("type") => return None,
                Some(Value::Object(_)) => "missing field `type`".to_string(),
                Some(_) => return None,
            },
            // The tagged enum names the value; the wrapper struct only its kind.
            other if tagged_only => format!(
                "invalid type: {}, expected {expected}",
                crate::fake::user_config::unexpected(other).unwrap_or_else(|| "null".into())
            ),
            Value::String(s) => format!("invalid type: string {s:?}, expected {expected}"),
            Value::Bool(b) => format!("invalid type: boolean `{b}`, expected {expected}"),
            Value::Number(_) => format!("invalid type: number, expected {expected}"),
            Value::Array(_) => format!("invalid type: sequence, expected {expected}"),
            Value::Null => format!("invalid type: null, expected {expected}"),
        };
        Some(format!("items[{i}] is not a valid response item: {why}"))
    })
}

/// A submission failed before its turn ran: the thread turns `systemError` (the status
/// changes once: a thread already failed says only the error again), then an `error` names
/// the submission as its turn.
fn submission_failed(
    conn: &crate::fake::rpc::Conn,
    thread_id: &str,
    turn_id: &str,
    message: &str,
    info: &str,
) {
    let before = conn.fake.store.update(|d| {
        let t = &mut d["threads"][thread_id]["systemError"];
        std::mem::replace(t, json!(true))
    });
    if before != true {
        conn.notify(
            "thread/status/changed",
            json!({"threadId": thread_id, "status": {"type": "systemError"}}),
        );
    }
    conn.notify(
        "error",
        json!({"error": {"message": message, "codexErrorInfo": info,
                         "additionalDetails": null, "misalignment": null},
               "willRetry": false, "threadId": thread_id, "turnId": turn_id}),
    );
}

/// Why codex's exec-server client cannot open a websocket to `url` without reaching the
/// network (tungstenite's checks, in order): a character a URI cannot hold, a scheme other
/// than `ws`/`wss` (case-sensitive: `WS://` is refused too), a bare word; `None` for a URL it
/// would try to connect to (the outcome depends on the network: not modeled). Turn scenario
/// 241 on every version; fidelity s42420001_0101.
fn exec_server_refusal(url: &str) -> Option<String> {
    const URI_CHARS: &str = "-._~:/?#[]@!$&'()*+,;=%";
    let why = if !url
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || URI_CHARS.contains(c))
    {
        "HTTP format error: invalid uri character"
    } else if let Some((scheme, _)) = url.split_once("://") {
        if scheme == "ws" || scheme == "wss" {
            return None;
        }
        "URL error: URL scheme not supported"
    } else if !url.is_empty() && !url.contains([':', '/']) {
        "IO error: invalid WebSocket URL"
    } else {
        return None;
    };
    Some(format!(
        "exec-server connection attempt failed: failed to connect to exec-server websocket \
         `{url}`: {why}"
    ))
}
