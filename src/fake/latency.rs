//! How long the real server takes to answer a request: the median of the real answers in the
//! repository's recordings (`src/fake/latency.json`, written by `cargo xtask latency`), per
//! method and per outcome (a result, an error). The fake answers a request no sooner: a
//! notification the real server sends on a task of its own while a slow request is being
//! answered (a review's entry while `marketplace/remove` reads the marketplaces, fidelity
//! s52520001_0134) then comes before the answer here too. Medians under 0.5 ms are left out
//! (the fake's own work takes about that), and so are the requests
//! the fake times by rules of their own (`initialize`, those that start a turn, a thread's
//! session, a server: xtask/src/latency.rs `OWN_TIMING`).

use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// A method's real answer times in µs: its result's, its error's.
type Times = (Option<u64>, Option<u64>);

/// Method → its answer times.
static TABLE: LazyLock<HashMap<String, Times>> = LazyLock::new(|| {
    let v: Value = serde_json::from_str(include_str!("latency.json")).unwrap_or(Value::Null);
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(m, e)| (m.clone(), (e["result"].as_u64(), e["error"].as_u64())))
        .collect()
});

thread_local! {
    /// The request this thread is answering: its id, method and arrival.
    static CURRENT: RefCell<Option<(Value, String, Instant)>> = const { RefCell::new(None) };
    /// A time of its own for the answer being prepared (see [`answer_after`]).
    static OWN: RefCell<Option<Duration>> = const { RefCell::new(None) };
}

/// The answer to the request this thread is handling comes this long after its arrival, not
/// at the table's time: for a method whose time a rule of its own decides.
pub fn answer_after(after: Duration) {
    OWN.with(|o| *o.borrow_mut() = Some(after));
}

/// The class a config write refused by the configuration codex then builds is timed under
/// ("Invalid configuration: …", 6.5–23 ms recorded), apart from the write's other refusals
/// (its key path, its layer, its version: under 2 ms).
pub const VALIDATION: &str = "config/validation";

/// Whether an error answer to `method` is of the [`VALIDATION`] class (`xtask latency` times it
/// so; `handlers::config_rw` answers it so).
pub fn is_validation(method: &str, message: &str) -> bool {
    matches!(method, "config/value/write" | "config/batchWrite")
        && message.starts_with("Invalid configuration:")
}

/// The table's time for a method's (or a named class's) error, if timed.
pub fn error_time(name: &str) -> Option<Duration> {
    TABLE
        .get(name)
        .and_then(|(_, e)| *e)
        .map(Duration::from_micros)
}

/// A request's handling starts on this thread.
pub fn begin(id: &Value, method: &str) {
    CURRENT.with(|c| *c.borrow_mut() = Some((id.clone(), method.to_string(), Instant::now())));
}

/// Its handling ended.
pub fn end() {
    CURRENT.with(|c| *c.borrow_mut() = None);
    OWN.with(|o| *o.borrow_mut() = None);
}

/// Before messages go out: when one answers the request this thread is handling, waits until
/// the real server's time for that answer has passed since the request arrived.
pub fn before_reply(msgs: &[Value]) {
    let due = CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        let (id, method, at) = c.as_ref()?;
        let answer = msgs
            .iter()
            .find(|m| m.get("method").is_none() && m.get("id") == Some(id))?;
        let own = OWN.with(|o| o.borrow_mut().take());
        let after = match own {
            Some(after) => after,
            None => {
                let (result, error) = TABLE.get(method.as_str()).copied()?;
                let us = if answer.get("error").is_some() {
                    error
                } else {
                    result
                };
                Duration::from_micros(us?)
            }
        };
        let due = *at + after;
        // One answer per request.
        *c = None;
        Some(due)
    });
    if let Some(due) = due {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_waits_out_its_methods_time_once() {
        // The slowest error: the checks that nothing waited have the most room.
        let (method, (_, error)) = TABLE
            .iter()
            .filter(|(_, (_, e))| e.is_some())
            .max_by_key(|(_, (_, e))| *e)
            .expect("the table times some method's errors");
        let want = Duration::from_micros(error.expect("found above"));
        let id = json!(7);
        begin(&id, method);
        let at = Instant::now();
        // A notification and another request's answer do not count.
        before_reply(&[json!({"method": "turn/started", "params": {}})]);
        before_reply(&[json!({"id": 8, "error": {}})]);
        assert!(at.elapsed() < want);
        before_reply(&[json!({"id": 7, "error": {"code": -32600}})]);
        assert!(at.elapsed() >= want);
        // Answered: a second message with the id waits no more.
        let again = Instant::now();
        before_reply(&[json!({"id": 7, "error": {}})]);
        assert!(again.elapsed() < want);
        end();
    }

    /// A time of the answer's own wins over the table (even for a method it lacks), for that
    /// answer only.
    #[test]
    fn an_answer_of_its_own_time_waits_that_long_once() {
        let want = Duration::from_millis(20);
        begin(&json!(3), "codex-wire/not-a-method");
        answer_after(want);
        let at = Instant::now();
        before_reply(&[json!({"id": 3, "result": {}})]);
        assert!(at.elapsed() >= want);
        end();
        begin(&json!(4), "codex-wire/not-a-method");
        let at = Instant::now();
        before_reply(&[json!({"id": 4, "result": {}})]);
        assert!(at.elapsed() < want);
        end();
    }

    #[test]
    fn a_method_the_table_lacks_is_answered_at_once() {
        begin(&json!(1), "codex-wire/not-a-method");
        let at = Instant::now();
        before_reply(&[json!({"id": 1, "result": {}})]);
        assert!(at.elapsed() < Duration::from_millis(5));
        end();
    }
}
