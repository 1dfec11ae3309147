//! The ignored-path oracle, offline: `tests/corpus/oracle.jsonl` (written by
//! `cargo xtask oracle --record`) holds, for every key of generated accepted requests, the
//! real server's answer when that key carries a value no typed field accepts.
//! - `oracle_ignored`: the engine reported the key as ignored; the real server accepted the
//!   poison, and the engine must still accept it and report the key.
//! - `oracle_declared`: a key the engine did not report; the engine's verdict on the poisoned
//!   request must be the real one (an exact error reply, or accepted for free-form JSON).

use codex_wire::{Outcome, Session};
use serde_json::Value;

#[test]
fn ignored_paths_are_exactly_the_ones_the_real_server_drops() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/oracle.jsonl"
    ))
    .expect("tests/corpus/oracle.jsonl (cargo xtask oracle --record)");
    let (mut ignored, mut declared, mut bad) = (0, 0, Vec::new());
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap();
        let path = &name[name.rfind(":$").expect("path in name") + 1..];
        let lines: Vec<&str> = case["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let expect = &case["expect"][1];
        let mut s = Session::new();
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
    eprintln!("oracle: {ignored} ignored paths and {declared} declared paths checked");
    assert!(ignored > 100 && declared > 500, "oracle corpus too small");
    assert!(
        bad.is_empty(),
        "{} disagreements, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}
