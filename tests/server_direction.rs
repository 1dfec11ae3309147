//! Server→client checking on sessions captured from the real server of every supported version
//! (`tests/corpus/<V>/real_session*.jsonl`, recorded by `cargo xtask sessions`): everything the
//! real server wrote is valid against that version's generated types (no false drift), and
//! tampered copies of it are reported.

use codex_wire::{Protocol, Session};
use serde_json::Value;

fn session() -> Vec<(String, String)> {
    read_session(codex_wire::newest(), "real_session.jsonl")
}

/// `real_session_turn.jsonl` is wider: ~30 methods, a thread forked, resumed and read with its
/// turns, and a turn whose model request fails offline (turn and item notifications, error
/// notifications).
fn read_session(p: &Protocol, name: &str) -> Vec<(String, String)> {
    let path = format!(
        "{}/tests/corpus/{}/{name}",
        env!("CARGO_MANIFEST_DIR"),
        p.version
    );
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (cargo xtask sessions --version {})", p.version));
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["dir"].as_str().unwrap().to_string(),
                v["line"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn replay(lines: &[(String, String)]) -> Vec<codex_wire::Verdict> {
    replay_in(codex_wire::newest(), lines)
}

fn replay_in(p: &'static Protocol, lines: &[(String, String)]) -> Vec<codex_wire::Verdict> {
    let mut s = Session::with_protocol(p);
    lines
        .iter()
        .map(|(dir, l)| match dir.as_str() {
            "in" => s.feed(l.as_bytes()),
            _ => s.feed_server(l.as_bytes()),
        })
        .collect()
}

#[test]
fn the_real_servers_own_messages_are_valid_in_every_version() {
    for &p in codex_wire::versions() {
        for name in ["real_session.jsonl", "real_session_turn.jsonl"] {
            real_session_is_valid(p, name);
        }
    }
}

fn real_session_is_valid(p: &'static Protocol, name: &str) {
    let lines = read_session(p, name);
    let verdicts = replay_in(p, &lines);
    let name = format!("{} {name}", p.version);
    let mut results = 0;
    for ((dir, line), v) in lines.iter().zip(&verdicts) {
        assert!(
            v.violation.is_none(),
            "{name}: {dir} {line}: {:?}",
            v.violation
        );
        // The real server writes every always-sent key: no `missing` is a false alarm.
        assert!(
            v.missing.is_empty(),
            "{name}: {dir} {line}: {:?}",
            v.missing
        );
        if dir == "out" && v.reply_to.is_some() {
            results += 1;
        }
    }
    // Every result was matched to its request and checked against its response type.
    assert!(
        results >= 9,
        "only {results} results were matched to a request"
    );
}

#[test]
fn tampered_server_messages_are_reported() {
    let mut lines = session();
    for (dir, line) in lines.iter_mut() {
        if dir != "out" {
            continue;
        }
        let mut v: Value = serde_json::from_str(line).unwrap();
        if v.get("id") == Some(&Value::from(2)) {
            // thread/list result: `data` must be an array.
            v["result"]["data"] = Value::from("oops");
        }
        if v["method"] == "thread/started" {
            v["params"]["thread"]["surprise"] = Value::from(1);
        }
        *line = v.to_string();
    }
    let verdicts = replay(&lines);
    let list = lines
        .iter()
        .zip(&verdicts)
        .find(|((d, l), _)| d == "out" && l.starts_with(r#"{"id":2,"#))
        .unwrap()
        .1;
    assert_eq!(list.reply_to.as_deref(), Some("thread/list"));
    assert!(list
        .violation
        .as_deref()
        .unwrap()
        .contains("expected a sequence"));
    let started = lines
        .iter()
        .zip(&verdicts)
        .find(|((_, l), _)| l.contains("thread/started"))
        .unwrap()
        .1;
    assert_eq!(
        started.ignored,
        vec!["$.params.thread.surprise".to_string()]
    );
}

/// A key the real server always writes (TS `x: T | null`) but that deserializes when absent is
/// reported as `missing`, with its path; nothing else about the line changes.
#[test]
fn absent_always_sent_keys_are_reported() {
    let mut lines = session();
    for (dir, line) in lines.iter_mut() {
        if dir != "out" {
            continue;
        }
        let mut v: Value = serde_json::from_str(line).unwrap();
        if v["method"] == "thread/started" {
            v["params"]["thread"]
                .as_object_mut()
                .unwrap()
                .remove("name");
        }
        if v.get("id") == Some(&Value::from(1)) {
            // thread/start result.
            v["result"]["thread"]
                .as_object_mut()
                .unwrap()
                .remove("gitInfo");
        }
        *line = v.to_string();
    }
    // Through an internally tagged enum (`ThreadItem`, tag `type`): `phase` is always sent.
    lines.push((
        "out".into(),
        r#"{"method":"item/started","params":{"item":{"type":"agentMessage","id":"i","text":"hi","moderation":null,"memoryCitation":null,"delivery":null,"questions":null},"threadId":"t","turnId":"u","startedAtMs":1}}"#.into(),
    ));
    let verdicts = replay(&lines);
    let missing: Vec<(&str, &[String])> = lines
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| !v.missing.is_empty())
        .map(|((_, l), v)| (&l[..40], &v.missing[..]))
        .collect();
    assert_eq!(missing.len(), 3, "{missing:#?}");
    assert!(verdicts.iter().all(|v| v.violation.is_none()));
    let find = |needle: &str| {
        let i = lines.iter().position(|(_, l)| l.contains(needle)).unwrap();
        verdicts[i].missing.clone()
    };
    assert_eq!(
        find(r#""method":"thread/started""#),
        ["$.params.thread.name"]
    );
    assert_eq!(find(r#"{"id":1,"result""#), ["$.result.thread.gitInfo"]);
    assert_eq!(find(r#""method":"item/started""#), ["$.params.item.phase"]);
}

/// The client direction never reports `missing`: a client may leave such keys out.
#[test]
fn client_lines_never_report_missing() {
    let mut s = Session::new();
    for (dir, line) in session() {
        if dir == "in" {
            assert!(s.feed(line.as_bytes()).missing.is_empty());
        }
    }
}
