//! The threads of the state dir as the process sees them: lookups with the real server's
//! errors (a bad id, an unknown rollout, a thread not loaded here), rollout files and paths,
//! read states, paging cursors.

use super::rpc::{Fake, INTERNAL_PREFIX};
use super::state::{civil, lock, path_str, scenario};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

impl Fake {
    /// A stored thread, with the real server's errors for a bad or unknown id.
    pub fn stored(
        &self,
        params: &Value,
        what: &str,
        missing: &str,
    ) -> Result<(String, Value), String> {
        let thread_id = params["threadId"].as_str().unwrap_or_default().to_string();
        check_uuid(&thread_id, what)?;
        let forget = scenario(&self.dir)["forget_threads"].as_bool() == Some(true);
        // An ephemeral thread lives only in the process that started it; a paginated one not
        // stored yet (no persisted change), only while it is loaded.
        let gone = |info: &Value| {
            let unstored = info["ephemeral"] == true
                || (!materialized(info) && info["historyMode"].as_str() != Some("legacy"));
            unstored && !lock(&self.loaded).contains(&thread_id)
        };
        match self.store.load()["threads"].get(&thread_id) {
            Some(info) if !forget && !gone(info) => Ok((thread_id, info.clone())),
            _ => Err(format!("{missing}{thread_id}")),
        }
    }

    /// The installation's id, kept in `CODEX_HOME/installation_id` as the real server keeps it
    /// (so a restarted server reports the same one).
    pub fn installation_id(&self) -> String {
        let path = self.codex_home.join("installation_id");
        match std::fs::read_to_string(&path) {
            Ok(id) if uuid::Uuid::parse_str(id.trim()).is_ok() => id.trim().to_string(),
            _ => {
                let id = uuid::Uuid::new_v4().to_string();
                let _ = std::fs::write(&path, &id);
                id
            }
        }
    }

    /// A stored thread that can have goals (an ephemeral one cannot).
    pub fn loaded_with_goals(&self, params: &Value) -> Result<(String, Value), String> {
        // Goals live in the state database: a stored thread not loaded here has them too
        // (turn scenario 140b: set, read, paused and cleared after a failed resume).
        let (thread_id, info) = self.stored(params, "thread", "thread not found: ")?;
        if info["ephemeral"] == true {
            return Err(format!(
                "ephemeral thread does not support goals: {thread_id}"
            ));
        }
        // An archived one is not among the sessions codex looks in (turn scenarios 224, 224b
        // on every version; fidelity s38380001_0181).
        if info["archived"] == true && !lock(&self.loaded).contains(&thread_id) {
            return Err(format!("thread not found: {thread_id}"));
        }
        Ok((thread_id, info))
    }

    /// A thread this process has loaded (turns, goals, compaction need one).
    pub fn loaded_thread(&self, params: &Value) -> Result<(String, Value), String> {
        let thread_id = params["threadId"].as_str().unwrap_or_default().to_string();
        check_uuid(&thread_id, "thread")?;
        let info = self.store.load()["threads"].get(&thread_id).cloned();
        match info {
            Some(info) if lock(&self.loaded).contains(&thread_id) => Ok((thread_id, info)),
            _ => Err(format!("thread not found: {thread_id}")),
        }
    }

    /// Where a thread's rollout lives, as the real server names it:
    /// `CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDTHH-MM-SS-<id>.jsonl`, stamped with the
    /// time in the thread's UUIDv7; an archived thread's in `CODEX_HOME/archived_sessions/`.
    pub fn rollout_path(&self, thread_id: &str, info: &Value) -> String {
        path_str(&self.rollout_path_as(thread_id, info["archived"] == true))
    }

    pub fn rollout_path_as(&self, thread_id: &str, archived: bool) -> PathBuf {
        let ms = uuid::Uuid::parse_str(thread_id)
            .ok()
            .and_then(|u| u.get_timestamp())
            .map_or(0, |t| t.to_unix().0);
        let (y, mo, d, h, mi, s) = civil(ms as i64);
        let name = format!("rollout-{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}-{thread_id}.jsonl");
        if archived {
            self.codex_home.join("archived_sessions").join(name)
        } else {
            self.codex_home
                .join("sessions")
                .join(format!("{y:04}/{mo:02}/{d:02}"))
                .join(name)
        }
    }

    /// Writes the rollout file a thread's `path` names (the real server writes it on the first
    /// turn, or at once for a history resume), so that `thread/resume {path}` finds it.
    pub fn write_rollout(&self, thread_id: &str) {
        // Written for a thread at work: never an archived one.
        let path = self.rollout_path_as(thread_id, false);
        if path.exists() {
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let meta = json!({"type": "session_meta", "payload": {"id": thread_id}});
        let _ = std::fs::write(&path, format!("{meta}\n"));
    }

    /// The thread whose rollout is at `path`, with the real server's errors.
    pub fn stored_at_path(
        &self,
        given: &str,
        running: bool,
        path: &str,
    ) -> Result<(String, Value), String> {
        let abs = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.codex_home.join(path)
        };
        let shown = path_str(&abs);
        if running {
            let active = path_str(&self.rollout_path_as(given, false));
            if active != shown {
                return Err(format!(
                    "cannot resume running thread {given} with stale path: requested `{shown}`, \
                     active `{active}`"
                ));
            }
        }
        if abs.is_dir() {
            return Err(format!(
                "failed to resolve rollout path `{shown}`: path is a directory"
            ));
        }
        let text = std::fs::read_to_string(&abs).map_err(|_| {
            format!("failed to resolve rollout path `{shown}`: file does not exist")
        })?;
        let meta_id = text
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .and_then(|m| m["payload"]["id"].as_str().map(str::to_string));
        let info = meta_id
            .as_ref()
            .and_then(|t| self.store.load()["threads"].get(t).cloned());
        match (meta_id, info) {
            (Some(t), Some(info)) => Ok((t, info)),
            _ => Err(format!(
                "{INTERNAL_PREFIX}failed to read thread: thread-store internal error: failed to \
                 read session metadata {shown}: rollout at {shown} is empty"
            )),
        }
    }
}

/// `invalid thread id: <uuid parse error>`, the real server's text.
pub fn check_uuid(id: &str, what: &str) -> Result<(), String> {
    uuid::Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|e| format!("invalid {what} id: {e}"))
}

/// A paging cursor as the real server writes it: a position in the thread's rollout (None: no
/// cursor).
pub fn rollout_cursor(thread_id: &str, ordinal: Option<u64>, include: bool, kind: &str) -> Value {
    match ordinal {
        Some(n) => json!(json!({"requestedThreadId": thread_id, "rolloutOrdinal": n,
                                "includeAnchor": include, "scope": {"kind": kind}})
        .to_string()),
        None => Value::Null,
    }
}

/// One page of entries keyed by rollout position, as `thread/turns/list` and
/// `thread/items/list` page: sorted (`desc`: newest first), after the `cursor` param's anchor
/// (itself too when the cursor includes it), `limit` long. Returns the page and the positions
/// of its last entry (when more follow: the next cursor) and its first (the backwards one).
pub fn page<T>(
    mut entries: Vec<(u64, T)>,
    params: &Value,
    desc: bool,
) -> (Vec<T>, Option<u64>, Option<u64>) {
    let anchor = params["cursor"].as_str().map(|c| {
        let c: Value = serde_json::from_str(c).unwrap_or(Value::Null);
        (
            c["rolloutOrdinal"].as_u64().unwrap_or(0),
            c["includeAnchor"].as_bool().unwrap_or(false),
        )
    });
    entries.sort_by_key(|(o, _)| *o);
    if desc {
        entries.reverse();
    }
    entries.retain(|(o, _)| match anchor {
        None => true,
        Some((a, incl)) => (incl && *o == a) || if desc { *o < a } else { *o > a },
    });
    // A limit of 0 pages one entry (0.171.0: 69_page_limit_zero).
    let limit = params["limit"]
        .as_u64()
        .map_or(usize::MAX, |l| (l as usize).max(1));
    let more = entries.len() > limit;
    entries.truncate(limit);
    let next = entries.last().filter(|_| more).map(|(o, _)| *o);
    let back = entries.first().map(|(o, _)| *o);
    (entries.into_iter().map(|(_, e)| e).collect(), next, back)
}

/// A thread's read state as `thread/read` reports it: none until a turn has ended.
/// A thread's read state: none for threads codex keeps no read state for (ephemeral ones, and
/// those of another source than the user's), else the last one published, or the initial one
/// (app-server `read_state::eligible`).
pub fn read_state(thread_id: &str, info: &Value) -> Value {
    if !has_read_state(info) || !materialized(info) {
        return Value::Null;
    }
    revision_state(thread_id, info)
}

/// The read state kept for a thread: its unread position and revision (the initial one until
/// marked).
pub fn revision_state(thread_id: &str, info: &Value) -> Value {
    match info["readRevision"].as_str() {
        Some(revision) => {
            json!({"firstUnread": info["firstUnread"], "revision": revision})
        }
        None => json!({"firstUnread": null, "revision": format!("initial:{thread_id}")}),
    }
}

/// Where a thread keeps the `warning`s its session start sent: an inline review's child
/// session repeats them.
pub const SESSION_WARNINGS: &str = "sessionWarnings";

/// Whether the thread has its row in codex's thread store: written at its first persisted
/// change (a turn, a name, a goal, a memory mode), not at `thread/start`. Before it, the
/// thread has no read state, and resuming, sampling or reverting it finds no rollout.
pub fn materialized(info: &Value) -> bool {
    info["materialized"] == true || info["turns"].as_array().is_some_and(|t| !t.is_empty())
}

/// Stored by a metadata change alone (`thread/memoryMode/set`, `thread/metadata/update` before
/// the first user message): the state database knows the thread but no rollout file exists,
/// so its paged history cannot be resolved (`120_history_of_a_thread_stored_without_rollout`).
pub fn rolloutless(info: &Value) -> bool {
    info["noRollout"] == true && info["turns"].as_array().is_none_or(Vec::is_empty)
}

/// Marks a thread stored by a metadata change: without a rollout unless it was stored already.
pub fn store_metadata(t: &mut Value) {
    if !materialized(t) {
        t["noRollout"] = json!(true);
    }
    t["materialized"] = json!(true);
}

/// Marks a thread's rollout written: a name set, a turn, a full hydration (`thread/read`
/// with its turns, `thread/resume` without `excludeTurns`) write it (120b, 120d, 120h).
pub fn write_rollout(t: &mut Value) {
    t["materialized"] = json!(true);
    if let Some(o) = t.as_object_mut() {
        o.remove("noRollout");
    }
}

/// codex's refusal to page the history of a thread stored without a rollout.
pub fn missing_rollout(thread_id: &str) -> String {
    format!("invalid paginated history lineage for {thread_id}: missing source rollout")
}

/// Whether a string cursor of `thread/turns/list` or `thread/items/list` is one this thread's
/// list gives out: codex's `HistoryCursor` (thread, ordinal, anchor flag, `scope.kind`).
pub fn valid_history_cursor(cursor: &str, thread_id: &str, kind: &str) -> bool {
    let v: Value = serde_json::from_str(cursor).unwrap_or(Value::Null);
    v["includeAnchor"].is_boolean()
        && v["requestedThreadId"] == thread_id
        && v["rolloutOrdinal"].is_u64()
        && v["scope"]["kind"] == kind
}

/// Whether the thread has a rollout of its own: stored, and not ephemeral (an ephemeral thread
/// is never written: fidelity s15150001_0170, s18180001_0047, s18180001_0282).
pub fn has_rollout(info: &Value) -> bool {
    materialized(info) && info["ephemeral"] != true
}

/// The thread as a read of it shows it: a stored legacy history is read from its rollout,
/// which keeps no thread source (`220_a_legacy_thread_read_shows_no_source`).
pub fn as_read(info: &Value) -> Value {
    let mut read = info.clone();
    if info["historyMode"] == "legacy" && materialized(info) {
        read["threadSource"] = Value::Null;
    }
    read
}

/// Whether codex keeps a read state for the thread.
pub fn has_read_state(info: &Value) -> bool {
    info["ephemeral"] != true && (info["threadSource"].is_null() || info["threadSource"] == "user")
}
