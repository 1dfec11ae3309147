//! The yardstick's own tests: recorded real transcripts broken the ways a wrong fake would break
//! them, each of which the comparison must report; and every tolerance's kept evidence (a pair
//! of real-against-real transcripts) the same conversation with the tolerance and not without.

use super::*;
use serde_json::json;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// A recorded real transcript's lines (JSON values).
fn lines(version: &str, name: &str) -> Vec<Value> {
    let p = corpus()
        .join(version)
        .join("turns")
        .join(format!("{name}.real.jsonl"));
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn text(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn method_of(l: &Value) -> &str {
    l["msg"]["method"].as_str().unwrap_or("")
}

fn position(lines: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    lines.iter().position(f).expect("the line to break")
}

fn rposition(lines: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    lines.iter().rposition(f).expect("the line to break")
}

/// The comparison reports `broken` against `original`, both ways.
fn caught(what: &str, original: &[Value], broken: &[Value]) {
    let (a, b) = (
        masked(&text(original)).unwrap(),
        masked(&text(broken)).unwrap(),
    );
    compare(&a, &a).unwrap_or_else(|m| panic!("{what}: the original against itself: {}", m.why));
    assert!(
        compare(&a, &b).is_err(),
        "{what}: not caught (A = original)"
    );
    assert!(compare(&b, &a).is_err(), "{what}: not caught (A = broken)");
}

#[test]
fn a_reply_moved_past_its_turn_s_end_is_caught() {
    let orig = lines("0.171.0", "03_command_approved");
    let mut t = orig.clone();
    let at = position(&t, |l| {
        l["dir"] == "out" && l["msg"]["id"] == 2 && l["msg"].get("result").is_some()
    });
    let reply = t.remove(at);
    let end = rposition(&t, |l| method_of(l) == "turn/completed");
    t.insert(end + 1, reply);
    caught("turn/start result after turn/completed", &orig, &t);
}

#[test]
fn an_interrupt_reply_moved_out_of_its_window_is_caught() {
    let orig = lines("0.171.0", "12_interrupt");
    let mut t = orig.clone();
    let at = position(&t, |l| l["dir"] == "out" && l["msg"]["id"] == 3);
    let reply = t.remove(at);
    // Back to before the turn's start: no longer among the turn's last messages.
    let start = position(&t, |l| method_of(l) == "turn/started");
    t.insert(start, reply);
    caught("interrupt reply before the turn started", &orig, &t);
}

#[test]
fn a_missing_delta_and_an_extra_or_missing_notification_are_caught() {
    let orig = lines("0.171.0", "08_two_turns");
    let mut t = orig.clone();
    t.remove(position(&t, |l| method_of(l) == "item/agentMessage/delta"));
    caught("a delta left out", &orig, &t);
    let mut t = orig.clone();
    let at = position(&t, |l| method_of(l) == "item/completed");
    let extra = t[at].clone();
    t.insert(at, extra);
    caught("an item completed twice", &orig, &t);
    let mut t = orig.clone();
    t.remove(rposition(&t, |l| method_of(l) == "turn/started"));
    caught("a turn/started left out", &orig, &t);
    let mut t = orig.clone();
    t.remove(position(&t, |l| method_of(l) == "configWarning"));
    caught("a background notification left out", &orig, &t);
}

#[test]
fn usage_in_the_wrong_turn_is_caught() {
    let orig = lines("0.171.0", "08_two_turns");
    let mut t = orig.clone();
    // The first turn's usage report, moved into the second turn (its content unchanged).
    let at = position(&t, |l| method_of(l) == "thread/tokenUsage/updated");
    let usage = t.remove(at);
    let second = rposition(&t, |l| method_of(l) == "turn/started");
    t.insert(second + 1, usage);
    caught("a usage report in the next turn", &orig, &t);
    // A usage report with other numbers.
    let mut t = orig.clone();
    let at = position(&t, |l| method_of(l) == "thread/tokenUsage/updated");
    t[at]["msg"]["params"]["tokenUsage"]["last"]["inputTokens"] = json!(999);
    caught("a usage report's numbers", &orig, &t);
}

#[test]
fn a_background_notification_moved_far_is_caught() {
    let orig = lines("0.171.0", "08_two_turns");
    let mut t = orig.clone();
    let at = position(&t, |l| method_of(l) == "configWarning");
    let warning = t.remove(at);
    let end = rposition(&t, |l| method_of(l) == "turn/completed");
    t.insert(end, warning);
    caught("a startup warning at the session's end", &orig, &t);
}

#[test]
fn a_search_session_s_end_moved_or_given_to_another_session_is_caught() {
    let orig = lines("0.171.0", "107_file_search_sessions");
    let completed = |l: &Value, s: &str| {
        method_of(l) == "fuzzyFileSearch/sessionCompleted" && l["msg"]["params"]["sessionId"] == s
    };
    // Past the next request's reply: beyond the adjacent swap the real server shows.
    let mut t = orig.clone();
    let at = position(&t, |l| completed(l, "gone"));
    let done = t.remove(at);
    let reply = position(&t, |l| l["dir"] == "out" && l["msg"]["id"] == 3);
    t.insert(reply + 1, done);
    caught("a session's completion after the next reply", &orig, &t);
    // Swapped with another session's update.
    let mut t = orig.clone();
    let at = position(&t, |l| completed(l, "gone"));
    t[at]["msg"]["params"]["sessionId"] = json!("s1");
    caught("another session's completion", &orig, &t);
    // Missing.
    let mut t = orig.clone();
    let at = rposition(&t, |l| completed(l, "s1"));
    t.remove(at);
    caught("a missing completion", &orig, &t);
}

#[test]
fn a_search_partial_outside_its_stream_is_caught() {
    let orig = lines(
        "0.171.0",
        "245_thread_search_stream_in_the_environment_context",
    );
    let stream = position(&orig, |l| {
        l["dir"] == "in" && method_of(l) == "thread/search/stream"
    });
    let id = orig[stream]["msg"]["id"].clone();
    let answer = position(&orig, |l| {
        l["dir"] == "out" && l["msg"]["id"] == id && l["msg"].get("method").is_none()
    });
    let partial = |request: Value| {
        let mut l = orig[answer].clone();
        l["msg"] = json!({"method": "thread/search/partial",
                         "params": {"requestId": request, "data": []}});
        l
    };
    // After its search's answer: the protocol sends none past it.
    let mut t = orig.clone();
    t.insert(answer + 1, partial(id.clone()));
    caught("a partial after its answer", &orig, &t);
    // Naming a request that is no stream search.
    let mut t = orig.clone();
    t.insert(answer, partial(json!(1)));
    caught("a partial of another request", &orig, &t);
    // The answer itself is still compared.
    let mut t = orig.clone();
    t[answer]["msg"]["result"]["data"] = json!([]);
    caught("a stream's answer emptied", &orig, &t);
}

/// `lastUsedAt` is masked as a clock reading only: a time in other units, or a session's other
/// fields, are still compared.
#[test]
fn an_account_session_s_time_is_masked_and_nothing_else() {
    let orig = lines("0.171.0", "264_chatgpt_login_on_disk");
    let at = position(&orig, |l| l["msg"]["result"]["sessions"][0].is_object());
    let mut t = orig.clone();
    t[at]["msg"]["result"]["sessions"][0]["lastUsedAt"] = json!(1);
    let (a, b) = (masked(&text(&orig)).unwrap(), masked(&text(&t)).unwrap());
    assert!(compare(&a, &b).is_ok(), "another time");
    let mut t = orig.clone();
    t[at]["msg"]["result"]["sessions"][0]["lastUsedAt"] = json!("2026-12-07T00:00:00Z");
    caught("a time in other units", &orig, &t);
    let mut t = orig.clone();
    t[at]["msg"]["result"]["sessions"][0]["userId"] = json!("user-2");
    caught("another user", &orig, &t);
}

#[test]
fn an_mcp_starting_announcement_past_its_threads_start_is_caught() {
    let orig = lines("0.171.0", "258_mcp_server_status");
    let starting = |l: &Value| l["msg"]["params"]["status"] == "starting";
    let ready = |l: &Value| l["msg"]["params"]["status"] == "ready";
    // After the server's `ready`: past more than the thread's answer and `thread/started`.
    let mut t = orig.clone();
    let note = t.remove(position(&t, starting));
    t.insert(position(&t, ready) + 1, note);
    caught("a `starting` after its `ready`", &orig, &t);
    // Before the answer to `initialize`: more than the thread's two messages away.
    let mut t = orig.clone();
    let note = t.remove(position(&t, starting));
    let init = position(&t, |l| l["msg"]["id"] == 0 && l["dir"] == "out");
    t.insert(init, note);
    caught("a `starting` before the session's first answer", &orig, &t);
    // Missing.
    let mut t = orig.clone();
    t.remove(position(&t, starting));
    caught("a missing `starting`", &orig, &t);
}

#[test]
fn a_queued_submission_s_answer_moved_past_its_turn_s_start_is_caught() {
    let orig = lines("0.171.0", "194_queue_add_on_an_idle_thread");
    let answer =
        |l: &Value| l["dir"] == "out" && l["msg"]["result"]["queuedSubmission"].is_object();
    // After the turn it started: beyond the adjacent swap with the queue's change.
    let mut t = orig.clone();
    let at = position(&t, answer);
    let reply = t.remove(at);
    let started = position(&t, |l| method_of(l) == "turn/started");
    t.insert(started + 1, reply);
    caught(
        "a queue addition's answer after its turn's start",
        &orig,
        &t,
    );
    // Before the first change: only the second one races the answer.
    let mut t = orig.clone();
    let at = position(&t, answer);
    let reply = t.remove(at);
    let first = position(&t, |l| method_of(l) == "thread/queue/changed");
    t.insert(first, reply);
    caught(
        "a queue addition's answer before the queue changed",
        &orig,
        &t,
    );
    // One change missing.
    let mut t = orig.clone();
    let at = position(&t, |l| method_of(l) == "thread/queue/changed");
    t.remove(at);
    caught("a missing queue change", &orig, &t);
}

#[test]
fn a_wrong_exit_status_and_a_missing_exit_are_caught() {
    let orig = lines("0.171.0", "17_restart_resume");
    let mut t = orig.clone();
    let at = rposition(&t, |l| l["event"] == "exit");
    t[at]["code"] = json!(1);
    caught("the last process exiting 1", &orig, &t);
    let mut t = orig.clone();
    let at = position(&t, |l| l["event"] == "exit");
    t.remove(at);
    caught("a process with no exit (killed)", &orig, &t);
}

#[test]
fn a_time_in_other_units_is_caught() {
    let orig = lines("0.171.0", "03_command_approved");
    let mut t = orig.clone();
    let at = position(&t, |l| method_of(l) == "turn/started");
    t[at]["msg"]["params"]["turn"]["startedAt"] = json!("2026-12-03T10:00:00Z");
    caught("a start time as a date string", &orig, &t);
}

#[test]
fn output_deltas_are_compared_by_their_joined_content() {
    let item = |out: &str| {
        json!({"dir": "out", "msg": {"method": "item/completed", "params": {"item": {
            "type": "commandExecution", "id": "call_1", "aggregatedOutput": out}}}})
    };
    let delta = |d: &str| {
        json!({"dir": "out", "msg": {"method": "item/commandExecution/outputDelta",
                                     "params": {"itemId": "call_1", "delta": d}}})
    };
    let streamed = vec![delta("ab"), delta("c\n"), item("abc\n")];
    let split_otherwise = vec![delta("a"), delta("bc\n"), item("abc\n")];
    let quick = vec![item("abc\n")];
    let tail_only = vec![delta("c\n"), item("abc\n")];
    let same = |x: &[Value], y: &[Value]| {
        compare(&masked(&text(x)).unwrap(), &masked(&text(y)).unwrap()).is_ok()
    };
    assert!(
        same(&streamed, &split_otherwise),
        "the same output, split otherwise"
    );
    assert!(
        same(&streamed, &quick),
        "streamed against not streamed (the early-exit race)"
    );
    assert!(
        same(&quick, &tail_only),
        "the output read late streams: its end"
    );
    assert!(
        !same(&streamed, &tail_only),
        "both streamed, different content"
    );
    let wrong = vec![delta("xyz"), item("abc\n")];
    assert!(
        !same(&quick, &wrong),
        "deltas that are not the item's output"
    );
}

#[test]
fn exec_output_chunks_are_compared_joined_per_process_and_stream() {
    use base64::Engine;
    let delta = |process: &str, stream: &str, d: &str| {
        let d = base64::engine::general_purpose::STANDARD.encode(d);
        json!({"dir": "out", "msg": {"method": "command/exec/outputDelta", "params": {
            "processId": process, "stream": stream, "deltaBase64": d, "capReached": false}}})
    };
    let done = json!({"dir": "out", "msg": {"id": 3, "result": {"exitCode": 101}}});
    let two = vec![
        delta("p", "stderr", "ab\n"),
        delta("p", "stderr", "c\n"),
        done.clone(),
    ];
    let three = vec![
        delta("p", "stderr", "a"),
        delta("p", "stderr", "b\n"),
        delta("p", "stderr", "c\n"),
        done.clone(),
    ];
    let same = |x: &[Value], y: &[Value]| {
        compare(&masked(&text(x)).unwrap(), &masked(&text(y)).unwrap()).is_ok()
    };
    assert!(same(&two, &three), "the same bytes, read in other chunks");
    let other = vec![
        delta("p", "stderr", "ab\n"),
        delta("p", "stderr", "d\n"),
        done.clone(),
    ];
    assert!(!same(&two, &other), "other bytes");
    let fewer = vec![delta("p", "stderr", "ab\n"), done.clone()];
    assert!(!same(&two, &fewer), "a missing chunk");
    let streams = vec![
        delta("p", "stderr", "ab\n"),
        delta("p", "stdout", "c\n"),
        done.clone(),
    ];
    assert!(!same(&two, &streams), "a chunk on the other stream");
    let late = vec![
        delta("p", "stderr", "ab\n"),
        done.clone(),
        delta("p", "stderr", "c\n"),
    ];
    assert!(!same(&two, &late), "a chunk after the command's answer");
}

/// Every tolerance has a kept real-against-real pair that needs it, in some version's
/// `races/<name>/`, and each kept pair is the same conversation with every tolerance and differs
/// without its own.
#[test]
fn every_tolerance_is_shown_by_a_kept_real_against_real_pair() {
    let mut shown: Vec<&str> = Vec::new();
    let mut problems = Vec::new();
    for p in crate::versions() {
        let races = corpus().join(p.version).join("races");
        for t in TOLERANCES {
            let dir = races.join(t.name);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_suffix(".a.jsonl").map(str::to_string)
                })
                .collect();
            names.sort();
            for n in names {
                let read = |side: &str| {
                    let f = dir.join(format!("{n}.{side}.jsonl"));
                    masked(&std::fs::read_to_string(&f).unwrap()).unwrap()
                };
                let (a, b) = (read("a"), read("b"));
                let label = format!("{}/races/{}/{n}", p.version, t.name);
                if let Err(m) = compare(&a, &b) {
                    problems.push(format!("{label}: differs with every tolerance: {}", m.why));
                }
                if compare_with(&a, &b, &Rules::without(t.name)).is_ok() {
                    problems.push(format!("{label}: the same without `{}`", t.name));
                } else {
                    shown.push(t.name);
                }
            }
        }
    }
    for t in TOLERANCES {
        if !shown.contains(&t.name) {
            problems.push(format!("`{}` has no kept real-against-real pair", t.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `config/read` result of a recording, and its index.
fn config_read(t: &[Value]) -> usize {
    position(t, |l| l["msg"]["result"].get("origins").is_some())
}

/// What the config masks leave compared: a user layer's version, a value, the layers' order.
#[test]
fn config_reads_are_compared_but_for_their_hash_map_order_and_the_flags_version() {
    let orig = lines("0.171.0", "51_settings");
    let at = config_read(&orig);
    let mut t = orig.clone();
    let layers = t[at]["msg"]["result"]["layers"].as_array_mut().unwrap();
    let user = layers
        .iter_mut()
        .find(|l| l["name"]["type"] == "user")
        .unwrap();
    let v = user["version"]
        .as_str()
        .unwrap()
        .replacen("sha256:", "sha256:0", 1);
    user["version"] = json!(v);
    caught("a wrong user layer version", &orig, &t);

    let mut t = orig.clone();
    t[at]["msg"]["result"]["config"]["model"] = json!("gpt-wrong");
    caught("a wrong value in config", &orig, &t);

    let mut t = orig.clone();
    t[at]["msg"]["result"]["layers"]
        .as_array_mut()
        .unwrap()
        .reverse();
    caught("the layers in the wrong order", &orig, &t);

    let mut t = orig.clone();
    let origins = t[at]["msg"]["result"]["origins"].as_object_mut().unwrap();
    let first = origins.keys().next().unwrap().clone();
    origins.shift_remove(&first);
    caught("a missing origin", &orig, &t);

    // Masked: the order of config's keys, and the flags layer's version (it hashes a port).
    let mut t = orig.clone();
    let config = t[at]["msg"]["result"]["config"].take();
    let reversed: Map<String, Value> = config
        .as_object()
        .unwrap()
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    t[at]["msg"]["result"]["config"] = Value::Object(reversed);
    let layers = t[at]["msg"]["result"]["layers"].as_array_mut().unwrap();
    let flags = layers
        .iter_mut()
        .find(|l| l["name"]["type"] == "sessionFlags")
        .unwrap();
    flags["version"] = json!("sha256:0000");
    let (a, b) = (masked(&text(&orig)).unwrap(), masked(&text(&t)).unwrap());
    compare(&a, &b).unwrap_or_else(|m| panic!("masked parts compared: {}", m.why));
}
