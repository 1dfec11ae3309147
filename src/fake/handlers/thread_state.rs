//! What a thread holds besides its turns, as the real server answers about a thread that has
//! none of it (the fake starts no background terminal, queues no submission, writes no memory):
//! codex's checks in its order (the id, then a loaded thread or a stored rollout, then the
//! cursor), then the empty answer. Each seen on 0.171.0 and shown by
//! `tests/corpus/turns/55_thread_state` on every version.

use super::view::H;
use crate::fake::rpc::INTERNAL_PREFIX;
use crate::fake::state::lock;
use serde_json::{json, Value};

/// A cursor that is not a number, in codex's words for the list (`invalid cursor`, `invalid
/// queue pagination cursor`).
fn check_cursor(p: &Value, what: &str) -> Result<(), String> {
    match p["cursor"].as_str() {
        Some(c) => c
            .parse::<u64>()
            .map(|_| ())
            .map_err(|e| format!("{what}: {e}")),
        None => Ok(()),
    }
}

/// The submissions a thread's queue holds (`thread/queue/add` after an interrupted turn).
pub(super) const QUEUE_HELD: &str = "queueHeld";

impl H<'_> {
    /// `thread/backgroundTerminals/list` and `…/clean`: a loaded thread's (none here).
    pub(super) fn background_terminals(
        &self,
        id: &Value,
        p: &Value,
        clean: bool,
    ) -> Result<(), String> {
        self.fake.loaded_thread(p)?;
        if clean {
            self.result(id, json!({}));
            return Ok(());
        }
        check_cursor(p, "invalid cursor")?;
        self.result(id, json!({"data": [], "nextCursor": null}));
        Ok(())
    }

    /// `thread/queue/list`: a stored thread's queued submissions (none here); an unknown one is
    /// codex's internal error of the thread store.
    pub(super) fn queue_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        let thread_id = self.queue_thread(p)?;
        check_cursor(p, "invalid queue pagination cursor")?;
        let held = self.fake.store.load()["threads"][&thread_id][QUEUE_HELD].clone();
        // Paging a queue that holds something is not modeled.
        if self.queue_holds(&thread_id) && !(p["cursor"].is_null() && p["limit"].is_null()) {
            return self.not_modeled("thread/queue/list");
        }
        let data = if held.is_array() { held } else { json!([]) };
        self.result(id, json!({"data": data, "nextCursor": null}));
        Ok(())
    }

    /// Whether the thread's queue holds submissions ([`QUEUE_HELD`]).
    pub(super) fn queue_holds(&self, thread_id: &str) -> bool {
        self.fake.store.load()["threads"][thread_id][QUEUE_HELD]
            .as_array()
            .is_some_and(|h| !h.is_empty())
    }

    /// The thread a queue call names, checked as codex's queue service checks it: its id, not
    /// ephemeral, known loaded or stored (else the thread store's internal error).
    pub(super) fn queue_thread(&self, p: &Value) -> Result<String, String> {
        let missing = format!(
            "{INTERNAL_PREFIX}failed to read thread: invalid thread-store request: no rollout \
             found for thread id "
        );
        let (thread_id, info) = self.fake.stored(p, "thread", &missing)?;
        // An archived thread's queue is not read (fidelity s45450001_0277; turn scenario 252 on
        // every version): before its params are looked at.
        if info["archived"] == true {
            return Err(format!(
                "session {thread_id} is archived. Run `codex unarchive {thread_id}` to unarchive \
                 it first."
            ));
        }
        if info["ephemeral"] == true {
            return Err(format!(
                "ephemeral thread does not support queued submissions: {thread_id}"
            ));
        }
        Ok(thread_id)
    }

    /// `thread/queue/reorder` and `thread/queue/delete` on a queue that holds nothing here (an
    /// addition runs at once on an idle thread and is not modeled on a busy one): a reorder
    /// must name exactly the queue (so none), answered then `thread/queue/changed`; a delete
    /// finds nothing and says so, with no notification.
    pub(super) fn queue_change(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        let thread_id = self.queue_thread(p)?;
        if self.queue_holds(&thread_id) {
            return self.not_modeled(method);
        }
        if method == "thread/queue/delete" {
            self.result(id, json!({"deleted": false}));
            return Ok(());
        }
        if p["queuedSubmissionIds"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            return Err("queue reorder must include every queued submission exactly once".into());
        }
        self.result(id, json!({}));
        // Heard by the thread's subscribers only: none for a thread not loaded (fidelity
        // s52520001_0098 on 0.163.0, a resume refused after a restart; turn scenario 278 on
        // every version: after an unsubscribe, then again after a resume).
        if lock(&self.fake.loaded).contains(&thread_id) {
            self.notify("thread/queue/changed", json!({"threadId": thread_id}));
        }
        Ok(())
    }

    /// `thread/memoryMode/set`: a stored thread's (nothing it changes shows here).
    pub(super) fn memory_mode_set(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (thread_id, info) = self
            .fake
            .stored(p, "thread", "no rollout found for thread id ")?;
        ephemeral_refused(&thread_id, &info)?;
        // codex updates the metadata of unarchived rollouts only (`include_archived: false`,
        // as for `thread/name/set`; fidelity s51510001_0680, turn scenario 274 on every version).
        if info["archived"] == true {
            return Err(format!("no rollout found for thread id {thread_id}"));
        }
        self.fake
            .store
            .update(|d| crate::fake::threads::store_metadata(&mut d["threads"][&thread_id]));
        self.result(id, json!({}));
        Ok(())
    }

    /// `thread/memory/read`: a loaded thread's memory summary (none written here).
    pub(super) fn memory_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.fake.loaded_thread(p)?;
        self.result(id, json!({"summary": null}));
        Ok(())
    }

    /// `thread/metadata/update`: the thread (its id, then whether it exists), at least one
    /// field, the project, a non-empty `gitInfo`, not ephemeral; then the fields are kept, the
    /// thread stored, and the thread answered (probed on 0.171.0: 78, 170). Filing into an
    /// existing project is not modeled.
    pub(super) fn metadata_update(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (thread_id, info) = self.fake.stored(p, "thread", "thread not found: ")?;
        if ["daybreakEnabled", "gitInfo", "projectId"]
            .iter()
            .all(|k| p[*k].is_null())
        {
            return Err("thread metadata update must include at least one field".into());
        }
        // A missing project, then an empty `gitInfo`, are refused before an ephemeral thread is
        // (fidelity s30300001_0671; turn scenario 170).
        let project = p["projectId"].as_str();
        if let Some(project) = project.filter(|p| !self.project_exists(p)) {
            return Err(format!("project not found: {project}"));
        }
        let git = p["gitInfo"].as_object();
        if git.is_some_and(|g| g.is_empty()) {
            return Err("gitInfo must include at least one field".into());
        }
        ephemeral_refused(&thread_id, &info)?;
        if project.is_some() {
            return self.not_modeled("thread/metadata/update");
        }
        let info = self.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            if let Some(g) = git {
                let mut now = t["gitInfo"].as_object().cloned().unwrap_or_else(|| {
                    json!({"sha": null, "branch": null, "originUrl": null})
                        .as_object()
                        .cloned()
                        .unwrap_or_default()
                });
                for (k, v) in g {
                    now.insert(k.clone(), v.clone());
                }
                t["gitInfo"] = Value::Object(now);
            }
            if !p["daybreakEnabled"].is_null() {
                t["daybreakEnabled"] = p["daybreakEnabled"].clone();
            }
            crate::fake::threads::store_metadata(t);
            t.clone()
        });
        // Answered as read back from the store: no word on direct input (as a list shows).
        let mut thread = self.thread_payload(&thread_id, &info, false);
        thread["canAcceptDirectInput"] = Value::Null;
        self.result(id, json!({ "thread": thread }));
        Ok(())
    }
}

/// An ephemeral thread keeps no metadata (fidelity s6060001_0088 on 0.171.0: its memory mode).
fn ephemeral_refused(thread_id: &str, info: &Value) -> Result<(), String> {
    if info["ephemeral"] == true {
        return Err(format!(
            "ephemeral thread does not support metadata updates: {thread_id}"
        ));
    }
    Ok(())
}
