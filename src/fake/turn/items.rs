//! The thread items, turns and token counts a turn shows, as the real server shapes them, and
//! the stored turn.

use super::rollout::Rollout;
use crate::fake::rpc::Conn;
use crate::fake::state::{now_ms, now_secs};
use serde_json::{json, Value};

/// A `Turn` as the real server sends it. `started`: `None` in the `turn/start` result (the
/// real one has not stamped it yet). `items`: the final agent messages of a finished turn
/// (`itemsView: "summary"`), none while it runs.
pub(super) fn turn_obj(
    id: &str,
    root: &str,
    status: &str,
    started: Option<i64>,
    error: Option<&Value>,
    items: &[Value],
) -> Value {
    let done = status != "inProgress";
    let now = now_secs();
    json!({
        "id": id, "rootTurnId": root, "items": items,
        "itemsView": if items.is_empty() { "notLoaded" } else { "summary" },
        "status": status,
        "error": error.cloned().unwrap_or(Value::Null),
        "startedAt": started,
        "completedAt": if done { json!(now) } else { Value::Null },
        "durationMs": match (done, started) {
            (true, Some(s)) => json!((now - s) * 1000),
            _ => Value::Null,
        },
    })
}

/// The error object of a failed turn and of the `error` notification.
pub(super) fn turn_error(message: &str, info: Value, details: Value) -> Value {
    json!({"message": message, "codexErrorInfo": info, "additionalDetails": details,
           "misalignment": null})
}

/// Stores a turn (replacing the one with its id) and where the rollout stands.
pub(super) fn save_turn(conn: &Conn, thread_id: &str, turn: &Value, rollout: Rollout) {
    conn.fake.store.update(|d| {
        let t = &mut d["threads"][thread_id];
        if !t["turns"].is_array() {
            t["turns"] = json!([]);
        }
        if let Some(ts) = t["turns"].as_array_mut() {
            match ts.iter_mut().find(|x| x["id"] == turn["id"]) {
                Some(x) => *x = turn.clone(),
                None => ts.push(turn.clone()),
            }
        }
        t["rollout"] = rollout.to_json();
        t["updatedAt"] = json!(now_secs());
        t["updatedAtMs"] = json!(now_ms());
    });
}

/// A fresh goal, in the real server's key order.
pub fn new_goal(thread_id: &str, objective: &str) -> Value {
    let now = now_secs();
    json!({"threadId": thread_id, "objective": objective, "status": "active",
           "tokenBudget": null, "tokensUsed": 0, "timeUsedSeconds": 0,
           "createdAt": now, "updatedAt": now})
}

/// The `tokenUsage` breakdown, in the real server's key order.
pub fn breakdown(input: i64, cached: i64, output: i64, reasoning: i64) -> Value {
    json!({"totalTokens": input + output, "inputTokens": input, "cachedInputTokens": cached,
           "cacheWriteInputTokens": 0, "outputTokens": output, "reasoningOutputTokens": reasoning})
}

/// The context window the real server reports for a thread: its model's, from the version's
/// catalog and the configuration.
pub fn context_window(conn: &Conn, thread_id: &str) -> i64 {
    let model = conn.fake.thread_model(thread_id);
    conn.fake
        .catalog
        .context_window(&model, &conn.fake.config())
}

/// A `UserInput` as a userMessage item shows it (checked on 0.171.0 for every variant): the
/// type's own keys in codex's order, defaults filled in, anything else dropped.
pub(super) fn user_content(i: &Value) -> Value {
    let or_null = |k: &str| i.get(k).cloned().unwrap_or(Value::Null);
    match i["type"].as_str() {
        Some("text") => {
            let elements: Vec<Value> = i["text_elements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    json!({"byteRange": e["byteRange"], "placeholder": e.get("placeholder")
                                .cloned().unwrap_or(Value::Null)})
                })
                .collect();
            json!({"type": "text", "text": i["text"], "text_elements": elements})
        }
        Some("image") if i.get("fileId").is_some() => {
            json!({"type": "image", "fileId": i["fileId"], "detail": or_null("detail")})
        }
        Some("image") => json!({"type": "image", "url": i["url"], "detail": or_null("detail")}),
        Some("localImage") => {
            json!({"type": "localImage", "detail": or_null("detail"), "path": i["path"]})
        }
        Some(t @ ("skill" | "mention")) => json!({"type": t, "name": i["name"], "path": i["path"]}),
        Some("audio") => json!({"type": "audio", "url": i["url"]}),
        Some("localAudio") => json!({"type": "localAudio", "path": i["path"]}),
        _ => i.clone(),
    }
}

/// An `agentMessage` item with the keys the real server always sends.
pub(super) fn agent_message(id: &str, text: &str, phase: &Value) -> Value {
    json!({"type": "agentMessage", "moderation": null, "id": id, "text": text, "phase": phase,
           "memoryCitation": null, "delivery": null, "questions": null})
}
