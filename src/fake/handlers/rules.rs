//! Methods whose answer, in what the fake can be asked, is a rule of a few lines: requests
//! codex refuses before doing anything (missing input, an id nothing here ever names — no
//! process, project, MCP server, environment or search session is ever started), methods it
//! does not support yet, and answers that do not depend on anything the fake does not model.
//! Each shown by `tests/corpus/turns/42_method_rules` on every version.

use super::view::H;
use crate::fake::defaults;
use crate::fake::state::lock;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Methods codex answers `-32601 … is not supported yet` (or `not implemented yet`).
pub(super) const UNSUPPORTED: &[(&str, &str)] = &[
    ("thread/searchOccurrences", "is not supported yet"),
    ("thread/timeline/list", "is not supported yet"),
    ("thread/prediction/request", "is not implemented yet"),
];

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

/// Invalid params (`-32602`), as the real server marks them.
fn invalid(message: &str) -> String {
    format!("{}{message}", crate::fake::rpc::INVALID_PARAMS_PREFIX)
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
        Err(if exec {
            format!("no active command/exec for process id {id:?}")
        } else {
            format!("no active process for process handle {id:?}")
        })
    }

    /// `thread/increment_elicitation` / `thread/decrement_elicitation`: a per-thread count of
    /// out-of-band elicitations the client holds open, kept by this process; the thread is
    /// paused while it is above zero.
    pub(super) fn elicitation(&self, id: &Value, p: &Value, up: bool) -> Result<(), String> {
        static COUNTS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
        let (thread_id, _) = self.fake.stored(p, "thread", "thread not loaded: ")?;
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
            "thread/items/read" => {
                let n = p["itemIds"].as_array().map_or(0, Vec::len);
                if (1..=100).contains(&n) {
                    return self.not_modeled(method);
                }
                "itemIds must contain 1 to 100 IDs".into()
            }
            "thread/inject_items" if p["items"].as_array().is_none_or(Vec::is_empty) => {
                "items must not be empty".into()
            }
            "thread/metadata/update"
                if ["daybreakEnabled", "gitInfo", "projectId"]
                    .iter()
                    .all(|k| p[*k].is_null()) =>
            {
                "thread metadata update must include at least one field".into()
            }
            "thread/queue/start" => "queue is empty".into(),
            "project/read" | "project/update" | "project/move" | "project/delete" => {
                invalid(&format!("project not found: {}", s(p, "projectId")))
            }
            "mcpServer/oauth/login" => format!("No MCP server named '{}' found.", s(p, "name")),
            "mcpServer/resource/read" | "mcpServer/tool/call" => format!(
                "{}unknown MCP server '{}'",
                crate::fake::rpc::INTERNAL_PREFIX,
                s(p, "server")
            ),
            "fuzzyFileSearch/sessionStart" if p["roots"].as_array().is_none_or(Vec::is_empty) => {
                format!(
                    "{}failed to start fuzzy file search session: at least one search directory \
                     is required",
                    crate::fake::rpc::INTERNAL_PREFIX
                )
            }
            "fuzzyFileSearch/sessionUpdate" => {
                format!("fuzzy file search session not found: {}", s(p, "sessionId"))
            }
            "environment/info" => {
                format!("unknown environment id `{}`", s(p, "environmentId"))
            }
            _ => return self.not_modeled(method),
        })
    }

    /// What the method answers when no rule above applies: its recorded or minimal result.
    fn not_modeled(&self, method: &str) -> Result<(), String> {
        Err(format!("{}{method}", NOT_MODELED))
    }

    /// Answers that depend on nothing the fake does not model.
    pub(super) fn fixed(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        let v = match method {
            "userVerification/status" => json!({"credentialId": null,
                "unavailableReason": "providerUnavailable",
                "unavailableMessage": "User verification is not available in this build or account."}),
            "memory/status" => json!({"v2ConsolidatedThreads": 0,
                "v2Ready": !self.fake.turn_facts.memory_v2_not_ready}),
            "windowsSandbox/readiness" => json!({"status": "notConfigured"}),
            "thread/prepareApprovedPlan" => json!({"prompt": "Implement the plan."}),
            "mock/experimentalMethod" => json!({"echoed": p["value"]}),
            "environment/status" => json!({"status": "unknown",
                "error": format!("unknown environment id `{}`", s(p, "environmentId"))}),
            "modelProvider/capabilities/read" => {
                json!({"imageGeneration": true, "webSearch": true})
            }
            // codex's built-in permission profiles, all allowed (no requirements file here).
            "permissionProfile/list" => json!({"data": [
                {"id": ":read-only", "description": null, "allowed": true},
                {"id": ":workspace", "description": null, "allowed": true},
                {"id": ":danger-full-access", "description": null, "allowed": true}],
                "nextCursor": null}),
            // No hooks: one entry per cwd asked about (the server's own by default).
            "hooks/list" => {
                let cwds: Vec<Value> = match p["cwds"].as_array() {
                    Some(c) if !c.is_empty() => c.clone(),
                    _ => vec![json!(self.fake.cwd)],
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
