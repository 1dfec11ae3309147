//! What a thread holds besides its turns, as the real server answers about a thread that has
//! none of it (the fake starts no background terminal, queues no submission, writes no memory):
//! codex's checks in its order (the id, then a loaded thread or a stored rollout, then the
//! cursor), then the empty answer. Each seen on 0.171.0 and shown by
//! `tests/corpus/turns/55_thread_state` on every version.

use super::view::H;
use crate::fake::rpc::INTERNAL_PREFIX;
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
        let missing = format!(
            "{INTERNAL_PREFIX}failed to read thread: invalid thread-store request: no rollout \
             found for thread id "
        );
        self.fake.stored(p, "thread", &missing)?;
        check_cursor(p, "invalid queue pagination cursor")?;
        self.result(id, json!({"data": [], "nextCursor": null}));
        Ok(())
    }

    /// `thread/memoryMode/set`: a stored thread's (nothing it changes shows here).
    pub(super) fn memory_mode_set(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.fake
            .stored(p, "thread", "no rollout found for thread id ")?;
        self.result(id, json!({}));
        Ok(())
    }

    /// `thread/memory/read`: a loaded thread's memory summary (none written here).
    pub(super) fn memory_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.fake.loaded_thread(p)?;
        self.result(id, json!({"summary": null}));
        Ok(())
    }
}
