//! The handlers of the methods the fake implements by rule (threads, turns, goals); every
//! other method answers with its recorded result (`defaults.rs`). Nothing imports the handlers:
//! the process gives [`dispatch`] to each connection. Rooms: `view.rs` (how a thread shows),
//! `session.rs` (`initialize`, session starts), `threads.rs` (`thread/*`), `turns.rs` (`turn/*`,
//! goals, compaction).

mod session;
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

impl H<'_> {
    pub(super) fn dispatch(&self, id: &Value, method: &str, params: &Value) {
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
        let r = match method {
            "initialize" => self.initialize(id, params),
            "thread/start" => self.thread_start(id, params),
            "thread/resume" => self.thread_resume(id, params),
            "thread/fork" => self.thread_fork(id, params),
            "thread/read" => self.thread_read(id, params),
            "thread/turns/list" => self.turns_list(id, params),
            "thread/readState/update" => self.read_state_update(id, params),
            "thread/loaded/list" => self.loaded_list(id),
            "thread/unsubscribe" => self.unsubscribe(id, params),
            "thread/delete" => self.thread_delete(id, params),
            "thread/items/list" => self.items_list(id, params),
            "thread/list" => self.thread_list(id, params),
            "thread/archive" => self.thread_archive(id, params, true),
            "thread/unarchive" => self.thread_archive(id, params, false),
            "thread/name/set" => self.thread_name_set(id, params),
            "thread/goal/set" => self.goal_set(id, params),
            "thread/goal/get" => self.goal_get(id, params),
            "thread/goal/clear" => self.goal_clear(id, params),
            "turn/start" => self.turn_start(id, params),
            "turn/interrupt" => self.turn_interrupt(id, params),
            "turn/steer" => self.turn_steer(id, params),
            "thread/compact/start" => self.compact_start(id, params),
            _ => {
                self.result(id, defaults::result_for(self.fake.protocol, method));
                Ok(())
            }
        };
        if let Err(message) = r {
            self.error(id, message);
        }
    }
}
