//! The handlers of the methods the fake implements by rule (threads, turns, goals); every
//! other method answers with its recorded result (`defaults.rs`). Nothing imports the handlers:
//! the process gives [`dispatch`] to each connection. Rooms: `view.rs` (how a thread shows),
//! `session.rs` (`initialize`, session starts), `threads.rs` (`thread/*`), `thread_state.rs` (a thread's terminals, queue, memory), `turns.rs` (`turn/*`,
//! goals, compaction), `fs.rs` (`fs/*`, done for real), `config_rw.rs` (`config/*`), `account.rs`
//! (the login and what it gates), `plugins.rs` (`plugin/*` for local marketplaces), `rules.rs` (refusals, unsupported methods, fixed answers).

mod account;
mod clouds;
mod config_rw;
mod exec;
mod file_search;
mod fs;
mod imports;
mod mcp;
mod params;
mod plugins;
mod projects;
mod providers;
mod rules;
mod sections;
mod session;
mod skills;
mod thread_state;
mod threads;
mod turns;
mod view;

use super::defaults;
use super::rpc::Conn;
use super::state::scenario;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use view::H;

/// An accepted request: a scripted answer (`scenario.json` `methods`), a handler, else the
/// method's recorded result.
pub fn dispatch(conn: &Arc<Conn>, id: &Value, method: &str, params: &Value) {
    H { c: conn }.dispatch(id, method, params)
}

/// The methods codex queues with the logins (`serialization: global("account-auth")`, or its
/// shared read, in the protocol's table): a login's completion comes first (turn scenarios 41,
/// 219, 271 on every version: a read, a logout, a second login, `accountSession/switch`, a
/// credits nudge wait; `account/rateLimits/read`, `account/usage/read` (unqueued) and
/// `remoteControl/enable` (a queue of its own) do not, fidelity s50500001_0122).
const ACCOUNT_AUTH: &[&str] = &[
    "account/login/start",
    "account/login/cancel",
    "account/logout",
    "account/read",
    "getAuthStatus",
    "account/bedrock/setup",
    "account/bedrock/discover",
    "account/rateLimitResetCredit/consume",
    "account/sendAddCreditsNudgeEmail",
    "accountSession/switch",
];

/// The methods codex runs outside its request queues (`serialization: None` in
/// app-server-protocol's `client_request_definitions!`, read at openai/codex@0015060), and
/// `server/diagnostics` (newer than that table; seen not to register the queue's gauge: turn
/// scenario 260 on every version). 148 of 148 recorded diagnostics agree.
const UNQUEUED: &[&str] = &[
    "initialize",
    "thread/start",
    "thread/list",
    "thread/loaded/list",
    "thread/turns/list",
    "thread/turns/items/list",
    "plugin/list",
    "plugin/installed",
    "plugin/read",
    "app/list",
    "fs/readFile",
    "fs/writeFile",
    "fs/createDirectory",
    "fs/getMetadata",
    "fs/readDirectory",
    "fs/remove",
    "fs/copy",
    "thread/realtime/listVoices",
    "model/list",
    "modelProvider/capabilities/read",
    "collaborationMode/list",
    "mock/experimentalMethod",
    "account/rateLimits/read",
    "feedback/upload",
    "getConversationSummary",
    "gitDiffToRemote",
    "fuzzyFileSearch",
    "server/diagnostics",
];

/// A handler: `(connection, id, params)`.
type Handler = fn(&H, &Value, &Value) -> Result<(), String>;

/// The methods the fake answers by rule, and their handlers (`params.rs` decides each of
/// their params fields).
const RULES: &[(&str, Handler)] = &[
    ("initialize", |h, id, p| h.initialize(id, p)),
    ("thread/start", |h, id, p| h.thread_start(id, p)),
    ("thread/resume", |h, id, p| h.thread_resume(id, p)),
    ("thread/fork", |h, id, p| h.thread_fork(id, p)),
    ("thread/read", |h, id, p| h.thread_read(id, p)),
    ("thread/turns/list", |h, id, p| h.turns_list(id, p)),
    ("thread/readState/update", |h, id, p| {
        h.read_state_update(id, p)
    }),
    ("thread/loaded/list", |h, id, p| h.loaded_list(id, p)),
    ("thread/unsubscribe", |h, id, p| h.unsubscribe(id, p)),
    ("thread/delete", |h, id, p| h.thread_delete(id, p)),
    ("thread/items/list", |h, id, p| h.items_list(id, p)),
    ("thread/list", |h, id, p| h.thread_list(id, p)),
    ("thread/archive", |h, id, p| h.thread_archive(id, p, true)),
    ("thread/unarchive", |h, id, p| {
        h.thread_archive(id, p, false)
    }),
    ("thread/name/set", |h, id, p| h.thread_name_set(id, p)),
    ("thread/goal/set", |h, id, p| h.goal_set(id, p)),
    ("thread/goal/get", |h, id, p| h.goal_get(id, p)),
    ("thread/goal/clear", |h, id, p| h.goal_clear(id, p)),
    ("turn/start", |h, id, p| h.turn_start(id, p)),
    ("turn/interrupt", |h, id, p| h.turn_interrupt(id, p)),
    ("thread/shellCommand", |h, id, p| h.shell_command(id, p)),
    ("thread/backgroundTerminals/list", |h, id, p| {
        h.background_terminals(id, p, false)
    }),
    ("thread/backgroundTerminals/clean", |h, id, p| {
        h.background_terminals(id, p, true)
    }),
    ("thread/queue/list", |h, id, p| h.queue_list(id, p)),
    ("thread/queue/reorder", |h, id, p| {
        h.queue_change(id, "thread/queue/reorder", p)
    }),
    ("thread/queue/delete", |h, id, p| {
        h.queue_change(id, "thread/queue/delete", p)
    }),
    ("thread/memoryMode/set", |h, id, p| h.memory_mode_set(id, p)),
    ("thread/memory/read", |h, id, p| h.memory_read(id, p)),
    ("turn/steer", |h, id, p| h.turn_steer(id, p)),
    ("thread/compact/start", |h, id, p| h.compact_start(id, p)),
    ("fs/readFile", |h, id, p| h.fs_read_file(id, p)),
    ("fs/writeFile", |h, id, p| h.fs_write_file(id, p)),
    ("fs/createDirectory", |h, id, p| {
        h.fs_create_directory(id, p)
    }),
    ("fs/getMetadata", |h, id, p| h.fs_get_metadata(id, p)),
    ("fs/readDirectory", |h, id, p| h.fs_read_directory(id, p)),
    ("fs/remove", |h, id, p| h.fs_remove(id, p)),
    ("fs/copy", |h, id, p| h.fs_copy(id, p)),
    ("fs/watch", |h, id, p| h.fs_watch(id, p)),
    ("account/read", |h, id, p| h.account_read(id, p)),
    ("config/read", |h, id, p| h.config_read(id, p)),
    ("config/value/write", |h, id, p| {
        h.config_write(id, p, false)
    }),
    ("config/batchWrite", |h, id, p| h.config_write(id, p, true)),
    ("account/login/start", |h, id, p| h.login_start(id, p)),
    ("account/login/cancel", |h, id, p| h.login_cancel(id, p)),
    ("account/logout", |h, id, p| h.logout(id, p)),
    ("account/bedrock/setup", |h, id, p| h.bedrock_setup(id, p)),
    ("account/bedrock/discover", |h, id, _| {
        h.bedrock_discover(id)
    }),
    ("account/gcp/setup", |h, id, p| h.gcp_setup(id, p)),
    ("feedback/upload", |h, id, p| h.feedback_upload(id, p)),
    ("feedback/save", |h, id, p| h.feedback_save(id, p)),
    ("account/rateLimits/read", |h, _, _| {
        h.account_gated("account/rateLimits/read")
    }),
    ("account/rateLimitResetCredit/consume", |h, _, _| {
        h.account_gated("account/rateLimitResetCredit/consume")
    }),
    ("account/usage/read", |h, _, _| {
        h.account_gated("account/usage/read")
    }),
    ("account/workspaceMessages/read", |h, _, _| {
        h.account_gated("account/workspaceMessages/read")
    }),
    ("account/sendAddCreditsNudgeEmail", |h, _, _| {
        h.account_gated("account/sendAddCreditsNudgeEmail")
    }),
    ("accountSession/list", |h, id, p| h.account_sessions(id, p)),
    ("accountSession/switch", |h, id, p| {
        h.account_session_switch(id, p)
    }),
    ("remoteControl/enable", |h, _, _| {
        h.account_gated("remoteControl/enable")
    }),
    ("remoteControl/disable", |h, _, _| {
        h.account_gated("remoteControl/disable")
    }),
    // Names checked (trimmed), then any cursor is one this server never gave (probed on
    // 0.171.0).
    ("thread/attachmentOwner/list", |h, id, p| {
        for key in ["attachmentType", "identityKey"] {
            if p[key].as_str().is_none_or(|s| s.trim().is_empty()) {
                return Err(rules::invalid(&format!("{key} must not be empty")));
            }
        }
        if !p["cursor"].is_null() {
            return Err(rules::invalid("invalid pagination cursor"));
        }
        // The stored threads holding such an attachment (83).
        let data: Vec<Value> = h.fake.store.load()["threads"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, t)| {
                t["attachments"].as_array().is_some_and(|a| {
                    a.iter().any(|x| {
                        x["attachmentType"] == p["attachmentType"]
                            && x["identityKey"] == p["identityKey"]
                    })
                })
            })
            .map(|(tid, t)| json!({"threadId": tid, "archived": t["archived"] == true}))
            .collect();
        if data.len() > 1 {
            // Their order and paging are not modeled.
            return h.not_modeled("thread/attachmentOwner/list");
        }
        h.result(id, json!({"data": data, "nextCursor": null}));
        Ok(())
    }),
    // The params are checked before the login (codex's remote control `clients` module).
    ("remoteControl/client/list", |h, _, p| {
        if p["environmentId"].as_str().is_none_or(str::is_empty) {
            return Err("remote control client list requires environmentId".into());
        }
        if p["limit"].as_u64().is_some_and(|l| !(1..=100).contains(&l)) {
            return Err("remote control client list limit must be between 1 and 100".into());
        }
        h.account_gated("remoteControl/client/list")
    }),
    ("remoteControl/client/revoke", |h, _, p| {
        for key in ["environmentId", "clientId"] {
            if p[key].as_str().is_none_or(str::is_empty) {
                return Err(format!("remote control client revoke requires {key}"));
            }
        }
        h.account_gated("remoteControl/client/revoke")
    }),
    ("remoteControl/status/read", |h, id, p| {
        h.remote_control_status(id, p)
    }),
    ("thread/searchOccurrences", |h, id, p| {
        h.search_occurrences(id, p)
    }),
    ("thread/timeline/list", |h, id, p| h.timeline_list(id, p)),
    ("thread/prediction/request", |h, id, _| {
        h.unsupported(id, "thread/prediction/request")
    }),
    ("command/exec/write", |h, _, p| {
        h.process_call("command/exec/write", p)
    }),
    ("command/exec/resize", |h, _, p| {
        h.process_call("command/exec/resize", p)
    }),
    ("command/exec/terminate", |h, _, p| {
        h.process_call("command/exec/terminate", p)
    }),
    ("process/writeStdin", |h, _, p| {
        h.process_call("process/writeStdin", p)
    }),
    ("process/resizePty", |h, _, p| {
        h.process_call("process/resizePty", p)
    }),
    ("process/kill", |h, _, p| h.process_call("process/kill", p)),
    ("thread/increment_elicitation", |h, id, p| {
        h.elicitation(id, p, true)
    }),
    ("thread/decrement_elicitation", |h, id, p| {
        h.elicitation(id, p, false)
    }),
    ("thread/items/read", |h, id, p| h.items_read(id, p)),
    ("thread/inject_items", |h, _, p| {
        h.refused("thread/inject_items", p)
    }),
    ("thread/metadata/update", |h, id, p| {
        h.metadata_update(id, p)
    }),
    ("thread/queue/start", |h, _, p| {
        h.refused("thread/queue/start", p)
    }),
    ("project/create", |h, id, p| {
        h.project_create(id, "project/create", p)
    }),
    ("project/import", |h, id, p| {
        h.project_create(id, "project/import", p)
    }),
    ("project/list", |h, id, p| h.project_list(id, p)),
    ("project/read", |h, id, p| h.project_read(id, p)),
    ("project/update", |h, id, p| h.project_update(id, p)),
    ("project/move", |h, id, p| h.project_move(id, p)),
    ("project/delete", |h, id, p| h.project_delete(id, p)),
    ("thread/search", |h, id, p| {
        h.thread_search(id, "thread/search", p)
    }),
    ("thread/search/stream", |h, id, p| {
        h.thread_search(id, "thread/search/stream", p)
    }),
    ("mcpServer/oauth/login", |h, _, p| {
        h.refused("mcpServer/oauth/login", p)
    }),
    ("mcpServer/resource/read", |h, _, p| {
        h.refused("mcpServer/resource/read", p)
    }),
    ("mcpServer/tool/call", |h, _, p| {
        h.refused("mcpServer/tool/call", p)
    }),
    ("fuzzyFileSearch/sessionStart", |h, id, p| {
        h.search_session_start(id, p)
    }),
    ("fuzzyFileSearch/sessionUpdate", |h, id, p| {
        h.search_session_update(id, p)
    }),
    ("fuzzyFileSearch/sessionStop", |h, id, p| {
        h.search_session_stop(id, p)
    }),
    ("environment/info", |h, _, p| {
        h.refused("environment/info", p)
    }),
    ("userVerification/status", |h, id, p| {
        h.fixed(id, "userVerification/status", p)
    }),
    ("memory/status", |h, id, p| h.fixed(id, "memory/status", p)),
    ("memory/reset", |h, id, _| h.memory_reset(id)),
    ("app/list", |h, id, p| h.app_list(id, p)),
    ("app/installed", |h, id, p| h.app_installed(id, p)),
    ("environment/add", |h, id, p| h.environment_add(id, p)),
    ("config/mcpServer/reload", |h, id, _| h.mcp_reload(id)),
    ("externalAgentConfig/detect", |h, id, p| {
        h.external_detect(id, p)
    }),
    ("externalAgentConfig/import", |h, id, p| {
        h.external_import(id, p)
    }),
    ("externalAgentConfig/import/recordHistory", |h, id, p| {
        h.record_history(id, p)
    }),
    ("externalAgentConfig/import/readHistories", |h, id, _| {
        h.read_histories(id)
    }),
    ("windowsSandbox/setupStart", |h, id, p| {
        h.windows_sandbox_setup(id, p)
    }),
    ("windowsSandbox/readiness", |h, id, p| {
        h.fixed(id, "windowsSandbox/readiness", p)
    }),
    ("thread/prepareApprovedPlan", |h, id, p| {
        h.fixed(id, "thread/prepareApprovedPlan", p)
    }),
    ("mock/experimentalMethod", |h, id, p| {
        h.fixed(id, "mock/experimentalMethod", p)
    }),
    ("environment/status", |h, id, p| {
        h.fixed(id, "environment/status", p)
    }),
    ("modelProvider/capabilities/read", |h, id, p| {
        h.fixed(id, "modelProvider/capabilities/read", p)
    }),
    ("permissionProfile/list", |h, id, p| {
        h.fixed(id, "permissionProfile/list", p)
    }),
    ("hooks/list", |h, id, p| h.fixed(id, "hooks/list", p)),
    ("command/exec", |h, id, p| h.command_exec(id, p)),
    ("fuzzyFileSearch", |h, id, p| h.fuzzy_file_search(id, p)),
    ("review/start", |h, id, p| h.review_start(id, p)),
    ("app/read", |h, id, p| h.app_read(id, p)),
    ("thread/backgroundTerminals/terminate", |h, id, p| {
        h.terminate_background(id, p)
    }),
    ("mcpServerStatus/list", |h, id, p| {
        h.on_loaded_thread(id, "mcpServerStatus/list", p)
    }),
    // Appending to a realtime session that never started fails the thread (probed on
    // 0.171.0: audio, text and speech alike).
    ("thread/realtime/appendAudio", |h, id, p| {
        h.realtime_append_audio(id, p)
    }),
    ("thread/realtime/appendText", |h, id, p| {
        h.realtime_append_audio(id, p)
    }),
    ("thread/realtime/appendSpeech", |h, id, p| {
        h.realtime_append_audio(id, p)
    }),
    ("thread/realtime/start", |h, id, p| h.realtime_start(id, p)),
    ("thread/realtime/stop", |h, id, p| h.realtime_stop(id, p)),
    ("thread/queue/update", |h, id, p| {
        h.queue_update(id, "thread/queue/update", p)
    }),
    ("thread/settings/update", |h, id, p| {
        h.settings_update(id, p)
    }),
    ("plugin/share/list", |h, _, _| {
        h.plugin_share("plugin/share/list")
    }),
    ("plugin/share/delete", |h, _, p| {
        h.share_by_id("plugin/share/delete", p)
    }),
    ("plugin/share/checkout", |h, _, p| {
        h.share_by_id("plugin/share/checkout", p)
    }),
    ("plugin/share/save", |h, _, p| {
        h.share_by_id("plugin/share/save", p)
    }),
    ("plugin/share/updateTargets", |h, _, p| h.share_targets(p)),
    ("marketplace/add", |h, _, p| h.marketplace_add(p)),
    ("marketplace/upgrade", |h, id, p| {
        h.marketplace_upgrade(id, p)
    }),
    ("account/gatewayOAuth/login", |h, _, p| h.gateway_login(p)),
    ("remoteControl/pairing/start", |h, _, p| {
        h.pairing("remoteControl/pairing/start", p)
    }),
    ("remoteControl/pairing/status", |h, _, p| {
        h.pairing("remoteControl/pairing/status", p)
    }),
    ("experimentalFeature/list", |h, id, p| h.feature_list(id, p)),
    ("experimentalFeature/enablement/set", |h, id, p| {
        h.enablement_set(id, p)
    }),
    ("model/list", |h, id, p| h.model_list(id, p)),
    ("configRequirements/read", |h, id, p| {
        h.fixed(id, "configRequirements/read", p)
    }),
    ("skills/extraRoots/set", |h, id, p| {
        h.skills_extra_roots(id, p)
    }),
    ("skills/config/write", |h, id, p| {
        h.skills_config_write(id, p)
    }),
    ("skills/list", |h, id, p| h.skills_list(id, p)),
    ("plugin/install", |h, id, p| h.plugin_install(id, p)),
    ("plugin/uninstall", |h, id, p| h.plugin_uninstall(id, p)),
    ("plugin/list", |h, id, p| h.plugin_list(id, p)),
    ("server/diagnostics", |h, id, _| h.server_diagnostics(id)),
    ("plugin/installed", |h, id, p| h.plugin_installed(id, p)),
    ("plugin/read", |h, id, p| h.plugin_read(id, p)),
    ("plugin/search", |h, id, p| h.plugin_search(id, p)),
    ("threadSection/create", |h, id, p| h.section_create(id, p)),
    ("threadSection/list", |h, id, p| h.section_list(id, p)),
    ("threadSection/update", |h, id, p| h.section_update(id, p)),
    ("threadSection/delete", |h, id, p| h.section_delete(id, p)),
    ("modelProvider/default/set", |h, id, p| {
        h.default_provider_set(id, p)
    }),
    ("thread/attachment/add", |h, id, p| {
        h.attachments(id, "thread/attachment/add", p)
    }),
    ("thread/attachment/list", |h, id, p| {
        h.attachments(id, "thread/attachment/list", p)
    }),
    ("thread/attachment/remove", |h, id, p| {
        h.attachments(id, "thread/attachment/remove", p)
    }),
    ("thread/approveGuardianDeniedAction", |h, _, p| {
        h.approve_denied(p)
    }),
    ("thread/guardianReview", |h, _, p| h.guardian_review(p)),
    ("thread/section/move", |h, id, p| h.section_move(id, p)),
    ("mcpServer/event/stream/start", |_, _, _| {
        Err("MCP event subscriptions are only supported for hosted apps".into())
    }),
    ("thread/realtime/list", |h, id, p| h.realtime_list(id, p)),
    ("thread/revert", |h, _, p| h.revert(p)),
    ("thread/sample", |h, _, p| h.sample(p)),
    ("turn/settings/update", |h, id, p| h.turn_settings(id, p)),
    ("process/spawn", |h, _, p| h.process_spawn(p)),
    ("userVerification/enroll", |h, id, _| {
        h.user_verification(id, "userVerification/enroll")
    }),
    ("userVerification/delete", |h, id, _| {
        h.user_verification(id, "userVerification/delete")
    }),
    ("userVerification/verify", |h, id, _| {
        h.user_verification(id, "userVerification/verify")
    }),
    ("marketplace/remove", |h, _, p| h.marketplace_remove(p)),
    ("plugin/skill/read", |h, _, p| {
        h.share_by_id("plugin/skill/read", p)
    }),
    ("thread/queue/add", |h, id, p| {
        h.queue_update(id, "thread/queue/add", p)
    }),
    ("modelProvider/config/write", |h, id, p| {
        h.provider_write(id, p)
    }),
    ("modelProvider/list", |h, id, p| {
        h.providers(id, "modelProvider/list", p)
    }),
    ("account/gatewayOAuth/read", |h, id, p| {
        h.providers(id, "account/gatewayOAuth/read", p)
    }),
];

/// The methods the fake answers by rule (the others: their captured or minimal result).
pub fn ruled_methods() -> Vec<&'static str> {
    let mut m: Vec<&'static str> = RULES.iter().map(|(name, _)| *name).collect();
    m.sort_unstable();
    m
}

/// The names of [`RULES`].
#[cfg(test)]
const RULED: [&str; RULES.len()] = {
    let mut out = [""; RULES.len()];
    let mut i = 0;
    while i < RULES.len() {
        out[i] = RULES[i].0;
        i += 1;
    }
    out
};

impl H<'_> {
    /// Tells the transcript, once per process and field, that a client relies on a params field
    /// the fake answers as if absent (`params.rs`): `{"event": "unmodeled", "method", "field",
    /// "why"}`.
    fn note_unmodeled(&self, method: &str, params: &Value) {
        static NOTED: std::sync::OnceLock<
            std::sync::Mutex<std::collections::HashSet<(String, &'static str)>>,
        > = std::sync::OnceLock::new();
        for (field, why) in params::unmodeled(method, params) {
            let new = super::state::lock(NOTED.get_or_init(Default::default))
                .insert((method.to_string(), field));
            if new {
                self.fake
                    .record(json!({"event": "unmodeled", "method": method,
                                        "field": field, "why": why}));
            }
        }
    }

    pub(super) fn dispatch(&self, id: &Value, method: &str, params: &Value) {
        // A steer counts from here to its answer (the end of this call): codex's steer holds
        // the turn's state while the message being streamed waits to complete.
        let _steer = (method == "turn/steer")
            .then(|| params["threadId"].as_str())
            .flatten()
            .and_then(crate::fake::turn::steer_arriving);
        // A request codex schedules on one of its serialization queues registers the queue's
        // gauge for `server/diagnostics` (codex `QUEUED_REQUESTS`, a gauge registered on first
        // use): every method but those its protocol table gives no scope.
        if !UNQUEUED.contains(&method) {
            self.fake
                .requests_queued
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // A method on the logins' queue waits for a login being completed (its handler sends
        // the completion before it ends); the others read the login as it stands.
        if ACCOUNT_AUTH.contains(&method) {
            self.after_logins();
        }
        // A request sent while a review enters review mode is answered as it comes: of 42
        // recorded, 18 were answered before the `enteredReviewMode` item, 15 between its start
        // and its completion, 9 after (a race of the review's task against the request's
        // handler; fidelity seeds 27270001 to 40400001, two real runs each).
        // A scripted answer in scenario.json wins over everything but initialize.
        if method != "initialize" {
            let sc = scenario(&self.fake.dir);
            if let Some(s) = sc["methods"].get(method) {
                // A slow handler: holds the processor, as a busy real server does.
                if let Some(ms) = s["delay_ms"].as_u64() {
                    self.flush_held();
                    std::thread::sleep(Duration::from_millis(ms.min(60_000)));
                }
                if let Some(e) = s.get("error") {
                    let code = e["code"].as_i64().unwrap_or(-32600);
                    let message = e["message"].as_str().unwrap_or("scripted error");
                    self.send(json!({"error": {"code": code, "message": message}, "id": id}));
                } else {
                    self.result(id, s.get("result").cloned().unwrap_or_else(|| json!({})));
                }
                return;
            }
        }
        // A configuration codex cannot parse refuses the methods that load it first.
        if let Some(answered) = self.config_load_refusal(id, method, params) {
            if let Err(refusal) = answered {
                self.error(id, refusal);
            }
            return;
        }
        let r = match RULES.iter().find(|(m, _)| *m == method) {
            Some((_, handler)) => {
                self.note_unmodeled(method, params);
                handler(self, id, params)
            }
            None => {
                self.result(id, defaults::result_for(self.fake.protocol, method));
                Ok(())
            }
        };
        match r {
            // A rule that does not apply to these params: the method's default answer.
            Err(m) if m.starts_with(rules::NOT_MODELED) => {
                self.result(id, defaults::result_for(self.fake.protocol, method));
            }
            Err(message) => self.error(id, message),
            Ok(()) => {}
        }
    }
}
