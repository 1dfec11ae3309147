//! The ignored-path oracle, offline, per supported codex version: `tests/corpus/<V>/oracle.jsonl`
//! (written by `cargo xtask oracle --record --version V`) holds, for every key of generated
//! accepted requests, the real server's answer when that key carries a value no typed field
//! accepts.
//! - `oracle_ignored`: the engine reported the key as ignored; the real server accepted the
//!   poison, and the engine must still accept it and report the key.
//! - `oracle_declared`: a key the engine did not report; the engine's verdict on the poisoned
//!   request must be the real one (an exact error reply, or accepted for free-form JSON).

use codex_wire::{Outcome, Protocol, Session};
use serde_json::Value;

#[test]
fn ignored_paths_are_exactly_the_ones_the_real_server_drops_in_every_version() {
    for p in codex_wire::versions() {
        eprintln!("== codex {}", p.version);
        version_agrees(p);
    }
}

fn version_agrees(p: &'static Protocol) {
    let path = format!(
        "{}/tests/corpus/{}/oracle.jsonl",
        env!("CARGO_MANIFEST_DIR"),
        p.version
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{path}: {e} (cargo xtask oracle --record --version {})",
            p.version
        )
    });
    let (mut ignored, mut declared, mut bad) = (0, 0, Vec::new());
    let mut notifications = 0;
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap();
        if case["category"] == "oracle_notification" {
            notifications += 1;
            if let Some(bad_case) = check_notification(p, &case) {
                bad.push(bad_case);
            }
            continue;
        }
        let path = &name[name.rfind(":$").expect("path in name") + 1..];
        let lines = lines_of(&case);
        let expect = &case["expect"][1];
        let mut s = Session::with_protocol(p);
        s.feed(lines[0].as_bytes());
        let v = s.feed(lines[1].as_bytes());
        let agrees = match (expect["status"].as_str().unwrap(), &v.outcome) {
            ("error", Outcome::Reply(e)) => expect["reply"].as_str() == Some(e.line().as_str()),
            ("accepted", Outcome::Accepted) => true,
            _ => false,
        };
        let reported = v.ignored.iter().any(|p| p == path);
        match case["category"].as_str().unwrap() {
            "oracle_ignored" => {
                ignored += 1;
                if !agrees || !reported {
                    bad.push(format!("{name}: real {expect}, engine {:?}", v.outcome));
                }
            }
            _ => {
                declared += 1;
                if !agrees || reported {
                    bad.push(format!(
                        "{name}: real {expect}, engine {:?} {:?}",
                        v.outcome, v.ignored
                    ));
                }
            }
        }
    }
    eprintln!(
        "oracle: {ignored} ignored paths, {declared} declared paths, {notifications} \
         notification params checked"
    );
    assert!(
        ignored > 100 && declared > 500 && notifications >= 14,
        "codex {}: oracle corpus too small",
        p.version
    );
    assert!(
        bad.is_empty(),
        "codex {}: {} disagreements, first: {:?}",
        p.version,
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

/// A client notification's params: the real server stayed silent on the poisoned notification
/// and answered the next request, so every key (element) it carried was dropped. The engine
/// must say so, key by key, and say nothing of an empty container.
fn check_notification(p: &'static Protocol, case: &Value) -> Option<String> {
    let name = case["name"].as_str().unwrap();
    let lines = lines_of(case);
    let real_silent = case["expect"][1]["status"] == "none";
    let real_alive = case["expect"][2]["status"] == "accepted";
    if !(real_silent && real_alive) {
        return Some(format!(
            "{name}: the real server did not drop it: {}",
            case["expect"]
        ));
    }
    let msg: Value = serde_json::from_str(lines[1]).unwrap();
    let want: Vec<String> = match &msg["params"] {
        Value::Object(m) => m.keys().map(|k| format!("$.params.{k}")).collect(),
        Value::Array(a) => (0..a.len()).map(|i| format!("$.params[{i}]")).collect(),
        Value::Null => vec![],
        _ => vec!["$.params".into()],
    };
    let mut s = Session::with_protocol(p);
    s.feed(lines[0].as_bytes());
    let v = s.feed(lines[1].as_bytes());
    let next = s.feed(lines[2].as_bytes());
    (v.outcome != Outcome::NoReply || v.ignored != want || next.outcome != Outcome::Accepted).then(
        || {
            format!(
                "{name}: engine {:?} {:?}, want ignored {want:?}",
                v.outcome, v.ignored
            )
        },
    )
}

/// A recorded case's lines.
fn lines_of(case: &Value) -> Vec<&str> {
    case["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect()
}
