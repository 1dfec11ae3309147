//! Offline differential conformance, per supported codex version: the engine of that version
//! against its real server's recorded replies (`tests/corpus/<V>/conformance.jsonl`, written by
//! `cargo xtask conformance --record --version V`).
//!
//! Every recorded line must get the same verdict: the byte-identical error reply, accepted,
//! no reply, or close. Cases listed in `tests/corpus/<V>/known_differences.txt` are reported but
//! tolerated; a listed case that starts to pass fails the test too, so the list stays true.

use codex_wire::{Outcome, Session};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Whether the engine's outcome agrees with one recorded expectation.
fn agrees(outcome: &Outcome, expect: &Value) -> bool {
    let status = expect["status"].as_str().unwrap_or_default();
    match (status, outcome) {
        ("error", Outcome::Reply(e)) => expect["reply"].as_str() == Some(e.line().as_str()),
        ("accepted", Outcome::Accepted) => true,
        // An accepted request may simply not have been answered in the recording window.
        ("none", Outcome::NoReply | Outcome::Accepted) => true,
        ("close", Outcome::Close) => true,
        _ => false,
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Reply(e) => e.line(),
        other => format!("{other:?}"),
    }
}

#[test]
fn corpus_matches_the_real_server_of_every_version() {
    for p in codex_wire::versions() {
        eprintln!("== codex {}", p.version);
        version_matches(p);
    }
}

fn version_matches(p: &'static codex_wire::Protocol) {
    let dir = format!("{}/tests/corpus/{}", env!("CARGO_MANIFEST_DIR"), p.version);
    let corpus = std::fs::read_to_string(format!("{dir}/conformance.jsonl")).unwrap_or_else(|e| {
        panic!(
            "{dir}/conformance.jsonl: {e} (every supported version has its recorded corpus: \
             cargo xtask conformance --record --version {})",
            p.version
        )
    });
    let known: BTreeSet<String> = std::fs::read_to_string(format!("{dir}/known_differences.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut by_cat: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    let mut all_diffs = Vec::new();
    for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("corpus line is JSON");
        let name = case["name"].as_str().unwrap_or_default().to_string();
        let lines: Vec<Vec<u8>> = if let Some(h) = case["lines_hex"].as_array() {
            h.iter()
                .map(|x| hex(x.as_str().unwrap_or_default()))
                .collect()
        } else {
            case["lines"]
                .as_array()
                .expect("lines")
                .iter()
                .map(|x| x.as_str().unwrap_or_default().as_bytes().to_vec())
                .collect()
        };
        let expects = case["expect"].as_array().expect("expect");
        let mut session = Session::with_protocol(p);
        let mut diff = None;
        for (n, (l, e)) in lines.iter().zip(expects).enumerate() {
            let v = session.feed(l);
            if !agrees(&v.outcome, e) {
                diff = Some(format!(
                    "{name} line {}: real {} {}, engine {}",
                    n + 1,
                    e["status"],
                    e["reply"].as_str().unwrap_or(""),
                    describe(&v.outcome)
                ));
                break;
            }
            if v.outcome == Outcome::Close {
                break;
            }
        }
        let cat = case["category"].as_str().unwrap_or("?").to_string();
        let entry = by_cat.entry(cat).or_default();
        entry.1 += 1;
        if let Some(d) = &diff {
            all_diffs.push(format!("{name}\t{}", d.replace(['\n', '\t'], " ")));
        }
        match diff {
            None => {
                entry.0 += 1;
                if known.contains(&name) {
                    stale.push(name);
                }
            }
            Some(d) if !known.contains(&name) => unexpected.push(d),
            Some(_) => {}
        }
    }
    let (ok, total) = by_cat
        .values()
        .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
    for (cat, (x, y)) in &by_cat {
        eprintln!("{cat:>24}: {x}/{y} identical");
    }
    eprintln!("{:>24}: {ok}/{total} identical", "total");
    for d in unexpected.iter().take(40) {
        eprintln!("DIFF {d}");
    }
    if std::env::var_os("CODEX_WIRE_BLESS").is_some() {
        // Rewrites the list to exactly the cases that differ now (review the diff).
        let mut text = String::from(
            "# Corpus cases where the engine still differs from the real server.\n\
             # Rewritten by `CODEX_WIRE_BLESS=1 cargo test --test conformance`; review every change.\n",
        );
        for d in &all_diffs {
            text.push_str(d);
            text.push('\n');
        }
        std::fs::write(format!("{dir}/known_differences.txt"), text).unwrap();
        return;
    }
    let v = p.version;
    assert!(
        total >= 1000,
        "codex {v}: the corpus has only {total} cases"
    );
    assert!(
        unexpected.is_empty(),
        "codex {v}: {} cases differ from the real server (first shown above)",
        unexpected.len()
    );
    assert!(
        stale.is_empty(),
        "codex {v}: listed as known differences but now identical: {stale:?}"
    );
}
