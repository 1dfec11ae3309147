//! An inline `review/start`, as codex's review task plays it (core `tasks/review.rs`): the
//! review runs as a child conversation whose events are forwarded into the parent turn — its
//! turn start, its user message (the review prompt), the start of each agent message — while
//! the message deltas, completions and the child's usage are held back; when the child's task
//! completes, its last agent message is parsed as the review, rendered, and shown as the
//! `exitedReviewMode` item and a final agent message (app-server `render_review_output_text`).
//! Shown on 0.163.0, 0.169.0 and 0.171.0 by turn scenario `115_review_inline`.

use super::ctl::{running, stale_turns, End, TurnCtl};
use super::ctx::Ctx;
use super::items::{agent_message, save_turn, turn_obj};
use super::rollout::Rollout;
use super::stream::message_id;
use crate::fake::rpc::Conn;
use crate::fake::state::{now_ms, now_secs};
use crate::model::events::{Event, Item};
use crate::model::script::{self, Out, Reply};
use crate::model::step::Script;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What the review shows (`user_facing_hint`) and what the child is asked (the prompt).
pub struct Request {
    pub hint: String,
    pub prompt: String,
}

/// `review/start`'s result: the review turn, its user message the hint under the turn's own id.
pub fn answer(thread_id: &str, turn_id: &str, hint: &str) -> Value {
    json!({"turn": {"id": turn_id, "rootTurnId": null,
                    "items": [{"type": "userMessage", "id": turn_id, "clientId": null,
                               "content": [{"type": "text", "text": hint, "text_elements": []}],
                               "startedAtMs": null, "completedAtMs": null}],
                    "itemsView": "notLoaded", "status": "inProgress", "error": null,
                    "startedAt": null, "completedAt": null, "durationMs": null},
           "reviewThreadId": thread_id})
}

/// The child's last message as codex reads it (`ReviewOutputEvent`): every field required, as
/// 0.171.0 parses it (a message holding only `overall_explanation` or only `findings` is
/// taken as plain text: `115_review_inline`).
#[derive(Deserialize)]
struct Output {
    findings: Vec<Finding>,
    #[allow(dead_code)]
    overall_correctness: String,
    overall_explanation: String,
    #[allow(dead_code)]
    overall_confidence_score: f32,
}

#[derive(Deserialize)]
struct Finding {
    title: String,
    body: String,
    #[allow(dead_code)]
    confidence_score: f32,
    #[allow(dead_code)]
    priority: i32,
    code_location: Location,
}

#[derive(Deserialize)]
struct Location {
    absolute_file_path: String,
    line_range: Range,
}

#[derive(Deserialize)]
struct Range {
    start: u32,
    end: u32,
}

/// codex `parse_review_output_event`: the text as a review, else its outermost braces, else the
/// text itself as the explanation.
fn parse(text: &str) -> (String, Vec<Finding>) {
    let whole = serde_json::from_str::<Output>(text).ok();
    let inner = || {
        let (start, end) = (text.find('{')?, text.rfind('}')?);
        (start < end)
            .then(|| serde_json::from_str::<Output>(&text[start..=end]).ok())
            .flatten()
    };
    match whole.or_else(inner) {
        Some(o) => (o.overall_explanation, o.findings),
        None => (text.to_string(), Vec::new()),
    }
}

/// app-server `render_review_output_text` with core `format_review_findings_block`.
fn render(text: &str) -> String {
    let (explanation, findings) = parse(text);
    let mut sections = Vec::new();
    if !explanation.trim().is_empty() {
        sections.push(explanation.trim().to_string());
    }
    if !findings.is_empty() {
        let mut lines = vec![if findings.len() > 1 {
            "Full review comments:".to_string()
        } else {
            "Review comment:".to_string()
        }];
        for f in &findings {
            let at = &f.code_location;
            lines.push(String::new());
            lines.push(format!(
                "- {} — {}:{}-{}",
                f.title, at.absolute_file_path, at.line_range.start, at.line_range.end
            ));
            lines.extend(f.body.lines().map(|l| format!("  {l}")));
        }
        sections.push(lines.join("\n").trim().to_string());
    }
    if sections.is_empty() {
        "Reviewer failed to output a response.".to_string()
    } else {
        sections.join("\n\n")
    }
}

/// An item started and completed at once; returns it as completed.
fn show(ctx: &Ctx, item: Value) -> Value {
    let at = ctx.started(&item);
    let done = now_ms();
    let mut item = item;
    item["startedAtMs"] = json!(at);
    item["completedAtMs"] = json!(done);
    ctx.item_notify(
        "item/completed",
        json!({"item": item}),
        json!({"contentTokenCount": null, "completedAtMs": done}),
    );
    item
}

/// The child's model requests: each agent message's start is forwarded, its text kept. A
/// response that called a tool is followed by another request (the turn's next scripted
/// response, past the script the default answer; a shell command runs, its item shown unless
/// codex's reviewer refuses it: turn scenarios 143, 186 on every version); the last message of
/// the last response is the review.
/// A provider's HTTP error is the child's as a turn's (resent or retried as codex does); one
/// that fails it is the review's failure: `Err` with the turn's error (the thread's status and
/// the `error` notification already sent: fidelity s31310001_0576, turn scenario 180).
fn child_stream(ctx: &mut Ctx, script: &Script) -> Result<Option<String>, Value> {
    let mut responses = script.responses().into_iter();
    let mut last = None;
    loop {
        std::thread::sleep(MODEL);
        ctx.next_response();
        let parsed = responses
            .next()
            .unwrap_or_else(|| Script::default_turn().responses().remove(0));
        let steps: Vec<_> = parsed.into_iter().filter_map(Result::ok).collect();
        let outs = match script::reply(ctx.resp, &steps) {
            Reply::Stream(outs) => outs,
            Reply::Http {
                status,
                body,
                headers,
            } => match ctx.http_error(status, &body, &headers) {
                Ok(()) => continue,
                Err(End::Failed(error)) => return Err(error),
                Err(_) => return Ok(last),
            },
        };
        last = None;
        for o in &outs {
            match o {
                Out::Delay(ms) => std::thread::sleep(Duration::from_millis(*ms)),
                Out::Local(_) => {}
                Out::Event(e, origin) => match Event::read(e) {
                    Event::Added {
                        item: Item::Message { id, phase, .. },
                    } => {
                        ctx.started(&agent_message(&message_id(id), "", &json!(phase)));
                    }
                    Event::Done {
                        item: Item::Message { content, .. },
                    } => last = Some(Item::message_text(&content)),
                    Event::Completed { .. } => break,
                    // A shell command runs as in any turn, under the reviewer's `never`
                    // approval policy: one that needs no approval shows its item, an escalation
                    // is refused unseen (turn scenarios 186, 143 on every version).
                    Event::Done {
                        item: item @ Item::FunctionCall { .. },
                    } if matches!(&item, Item::FunctionCall { name, .. } if name == "exec_command") =>
                    {
                        let step = origin.and_then(|i| steps.get(i));
                        if ctx.tool_call(item, step).is_err() {
                            return Ok(last);
                        }
                    }
                    _ => {}
                },
            }
        }
        if !steps.iter().any(|s| s.is_tool()) {
            return Ok(last);
        }
    }
}

/// How long each step of a review takes on the real server, idle (the medians of turn
/// scenario 115 on 0.169.0 and 0.171.0, three reviews each, after the answer): entering review
/// mode (1.2 ms; 6.9 ms while two requests sent after the answer were answered first,
/// s17170001_0261), the child conversation's start (+9 ms), its user message (+6 ms), the
/// model's first event (+18 ms), the review's exit (+7 ms) and the turn's end (+7 ms).
const ENTER: Duration = Duration::from_micros(2000);
/// When the review's task begins, after the answer: until then the thread has no active turn
/// (an interrupt sent 0.8 ms after the answer found none, fidelity s27270001_0210; one sent
/// 1.4 ms after interrupted the review, turn scenario 142's first recording on 0.171.0).
const TASK_START: Duration = Duration::from_micros(1000);
const CHILD_START: Duration = Duration::from_millis(9);
const PROMPT: Duration = Duration::from_millis(6);
const MODEL: Duration = Duration::from_millis(18);
const EXIT: Duration = Duration::from_millis(7);
const END: Duration = Duration::from_millis(7);

/// The review turn `parent` (already answered), played to its end; `next_script` takes the
/// scripted turn the child's model requests answer from.
pub(super) fn play(
    conn: &Arc<Conn>,
    ctl: &Arc<TurnCtl>,
    req: &Request,
    next_script: fn(&Conn) -> Script,
) {
    let thread_id = ctl.thread_id.clone();
    let parent = ctl.turn_id();
    let started = now_secs();
    let mut ctx = Ctx::new(conn, ctl, &parent);
    ctx.review_child = true;
    // The parent turn writes no start of its own: its items' events, the child's turn start
    // and user message, the review's user and assistant messages, its end (0.171.0's rollout).
    // The review's turn context, then the child conversation's, each on a model without
    // metadata says so (fidelity s16160001_0014: before entering review mode, and before the
    // child turn starts).
    let thread = conn.fake.store.load()["threads"][&thread_id].clone();
    let model = conn.fake.model_of(&thread);
    let warning = conn.fake.catalog.unknown_model_warning(&model);
    let warn = || {
        if let Some(message) = &warning {
            conn.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
    };
    std::thread::sleep(TASK_START);
    ctl.queued.store(false, Ordering::SeqCst);
    std::thread::sleep(ENTER - TASK_START);
    warn();
    let entered = show(
        &ctx,
        json!({"type": "enteredReviewMode", "id": uuid::Uuid::now_v7().to_string(),
               "review": req.hint}),
    );
    let mut rollout = Rollout::load(&thread["rollout"]);
    let entered_at = rollout.add(1);
    // Interruptible until the child starts (an interrupt sent in the first ~1.5 ms after the
    // answer may find no active turn on the real server, its task not begun: a race, not
    // modeled).
    let child_due = std::time::Instant::now() + CHILD_START;
    loop {
        if ctl.interrupted() {
            return interrupted(&mut ctx, started, entered, entered_at, rollout);
        }
        let now = std::time::Instant::now();
        if now >= child_due {
            break;
        }
        std::thread::sleep((child_due - now).min(Duration::from_millis(1)));
    }
    // The child conversation's session start repeats the warnings of the configuration the
    // parent's session loaded (ignored keys, features under development), on the parent
    // thread (fidelity s25250001_0227, s29290001_0356 and 0576), before its turn context's
    // model warning.
    let loaded = conn.fake.store.load()["threads"][&thread_id]
        [crate::fake::threads::SESSION_WARNINGS]
        .clone();
    for message in loaded.as_array().into_iter().flatten() {
        conn.notify(
            "warning",
            json!({"threadId": thread_id, "message": message}),
        );
    }
    // Then the deprecated names its configuration uses, as a session start says them
    // (fidelity s35350001_0381: `[features].codex_hooks`, both real runs on 0.171.0).
    for (summary, details) in conn.fake.config().deprecations() {
        conn.notify(
            "deprecationNotice",
            json!({"summary": summary, "details": details}),
        );
    }
    warn();
    let child = uuid::Uuid::now_v7().to_string();
    let child_started = now_secs();
    // The thread is out of an earlier turn's error once this one runs (turn scenario 180).
    conn.fake.store.update(|d| {
        if let Some(t) = d["threads"][&thread_id].as_object_mut() {
            t.remove("systemError");
        }
    });
    ctx.status(json!({"type": "active", "activeFlags": []}));
    conn.notify(
        "turn/started",
        json!({"threadId": thread_id,
               "turn": turn_obj(&child, &parent, "inProgress", Some(child_started), None, &[])}),
    );
    let child_at = rollout.add(1);
    std::thread::sleep(PROMPT);
    let prompt = show(
        &ctx,
        json!({"type": "userMessage", "id": uuid::Uuid::now_v7().to_string(), "clientId": null,
               "content": [{"type": "text", "text": req.prompt, "text_elements": []}]}),
    );
    let prompt_at = rollout.add(1);
    let script = next_script(conn);
    // The child's items follow its user message.
    let offset = rollout.ordinal;
    let (text, failed) = match child_stream(&mut ctx, &script) {
        Ok(text) => (text.unwrap_or_default(), None),
        Err(error) => (String::new(), Some(error)),
    };
    let review = render(&text);
    let child_items = std::mem::take(&mut ctx.items);
    let child_ordinals: Vec<u64> = (1..=child_items.len() as u64).map(|k| offset + k).collect();
    // The child conversation's tools write its own rollout, not the thread's (turn scenario
    // 186: the thread's cursors as without them); its items are the thread's events.
    rollout.add(child_ordinals.len() as u64);
    std::thread::sleep(EXIT);
    rollout.add(1);
    let exited = show(
        &ctx,
        json!({"type": "exitedReviewMode", "id": uuid::Uuid::now_v7().to_string(),
               "review": review}),
    );
    let exited_at = rollout.add(1);
    // A failed review tells the client it was interrupted (its thread stays in error).
    let answer = show(
        &ctx,
        agent_message(
            &format!("msg_{}", uuid::Uuid::now_v7()),
            if failed.is_some() {
                INTERRUPTED
            } else {
                &review
            },
            &Value::Null,
        ),
    );
    rollout.add(1);
    let answer_at = rollout.add(1);
    rollout.item = answer_at;
    let end = rollout.add(1);
    rollout.turn = end;
    std::thread::sleep(END);
    ctx.read_state();
    if failed.is_none() {
        ctx.status(json!({"type": "idle"}));
    }
    // The child turn never completes in the parent's history (its end is not forwarded).
    let mut items = vec![prompt];
    items.extend(child_items);
    let mut ordinals = vec![prompt_at];
    ordinals.extend(child_ordinals);
    let child_turn = json!({"id": child, "reviewRoot": parent, "items": items,
                            "status": "interrupted", "error": null, "startedAt": child_started,
                            "completedAt": null, "durationMs": null,
                            "rolloutOrdinal": child_at, "itemOrdinals": ordinals});
    save_turn(conn, &thread_id, &child_turn, rollout);
    let turn = match &failed {
        None => turn_obj(
            &parent,
            &parent,
            "completed",
            Some(started),
            None,
            std::slice::from_ref(&answer),
        ),
        Some(error) => turn_obj(&parent, &parent, "failed", Some(started), Some(error), &[]),
    };
    stale_turns().insert(thread_id.clone(), child);
    let items = [
        (entered, entered_at),
        (exited, exited_at),
        (answer, answer_at),
    ];
    close(conn, &thread_id, turn, items, end, rollout);
}

/// The review turn's end: stored with its three items at their rollout positions, the rollout
/// written, the thread free again, then `turn/completed` with the turn as shown.
fn close(
    conn: &Arc<Conn>,
    thread_id: &str,
    turn: Value,
    items: [(Value, u64); 3],
    end: u64,
    rollout: Rollout,
) {
    let mut stored = turn.clone();
    let (shown, ordinals): (Vec<Value>, Vec<u64>) = items.into_iter().unzip();
    stored["items"] = json!(shown);
    stored["rolloutOrdinal"] = json!(end);
    stored["itemOrdinals"] = json!(ordinals);
    stored["endOrdinal"] = json!(end);
    save_turn(conn, thread_id, &stored, rollout);
    conn.fake.write_rollout(thread_id);
    running().remove(thread_id);
    conn.notify(
        "turn/completed",
        json!({"threadId": thread_id, "turn": turn}),
    );
}

/// What an inline review's task is told when interrupted before its child starts (turn
/// scenario 142 on every version): the review exits with no output, a message says so, and
/// the turn ends interrupted with no start time and no items, after the `turn/interrupt`
/// reply (no status was shown, so none goes back to idle).
fn interrupted(ctx: &mut Ctx, started: i64, entered: Value, entered_at: u64, mut rollout: Rollout) {
    let (conn, ctl) = (ctx.conn, ctx.ctl);
    let thread_id = ctl.thread_id.clone();
    let parent = ctl.turn_id();
    let exited = show(
        ctx,
        json!({"type": "exitedReviewMode", "id": uuid::Uuid::now_v7().to_string(),
               "review": render("")}),
    );
    let exited_at = rollout.add(1);
    let answer = show(
        ctx,
        agent_message(
            &format!("msg_{}", uuid::Uuid::now_v7()),
            INTERRUPTED,
            &Value::Null,
        ),
    );
    let answer_at = rollout.add(1);
    rollout.item = answer_at;
    let end = rollout.add(1);
    rollout.turn = end;
    ctx.read_state();
    ctl.acked.store(true, Ordering::SeqCst);
    ctx.finish_interrupt();
    let mut turn = turn_obj(&parent, &parent, "interrupted", None, None, &[]);
    turn["durationMs"] = json!((now_secs() - started) * 1000);
    let items = [
        (entered, entered_at),
        (exited, exited_at),
        (answer, answer_at),
    ];
    close(conn, &thread_id, turn, items, end, rollout);
}

/// codex's message for a review interrupted before it could answer.
const INTERRUPTED: &str =
    "Review was interrupted. Please re-run /review and wait for it to complete.";

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn a_review_renders_as_codex_renders_it() {
        // 115_review_inline's answers on 0.171.0.
        assert_eq!(render("Looks fine to me."), "Looks fine to me.");
        let partial = r#"Result: {"overall_explanation": "Partial."} end"#;
        assert_eq!(render(partial), partial);
        assert_eq!(render(r#"{"findings": []}"#), r#"{"findings": []}"#);
        let two = r#"x {"findings":[{"title":"[P1] A","body":"b\nc","confidence_score":0.8,
            "priority":1,"code_location":{"absolute_file_path":"/a.rs","line_range":
            {"start":1,"end":2}}},{"title":"B","body":"d","confidence_score":1,"priority":3,
            "code_location":{"absolute_file_path":"/b.rs","line_range":{"start":7,"end":7}}}],
            "overall_correctness":"no","overall_explanation":"  Two.  ",
            "overall_confidence_score":0.7} y"#;
        assert_eq!(
            render(two),
            "Two.\n\nFull review comments:\n\n- [P1] A — /a.rs:1-2\n  b\n  c\n\n- B — /b.rs:7-7\n  d"
        );
        assert_eq!(
            render(
                r#"{"findings":[],"overall_correctness":"","overall_explanation":" ","overall_confidence_score":0}"#
            ),
            "Reviewer failed to output a response."
        );
    }
}
