//! `docs/methods.md`: every client method of the newest version, how the fake answers it (a
//! rule, the captured real result, or the minimal valid result) and the turn-corpus scenarios
//! that send it (each recorded on every supported version, fake = real: `tests/turns.rs`).
//! The table is computed here from the fake's own lists and the corpus; the test fails when the
//! committed page differs (`CODEX_WIRE_BLESS=1 cargo test --test method_table` rewrites it).

use std::collections::BTreeMap;
use std::path::Path;

/// Methods every scenario sends through the harness (a session, a thread, its turns).
const EVERY_SCENARIO: &[&str] = &["initialize", "thread/start", "turn/start"];

fn scenarios_by_method() -> BTreeMap<String, Vec<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/turns");
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    files.sort();
    for f in files {
        let case: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let name = case["name"].as_str().unwrap_or_default().to_string();
        let mut methods = Vec::new();
        collect_methods(&case, &mut methods);
        // The harness's own requests for the case's fields.
        for (field, method) in [
            ("goal", "thread/goal/set"),
            ("restart_before_turn", "thread/resume"),
            ("kill_on", "thread/resume"),
            ("interrupt_on", "turn/interrupt"),
            ("steer", "turn/steer"),
        ] {
            if !case[field].is_null() {
                methods.push(method.to_string());
            }
        }
        if case["compact"] == true {
            methods.push("thread/compact/start".to_string());
        }
        for (field, method) in [("decisions", "turn/interrupt")] {
            if case[field]
                .as_array()
                .is_some_and(|d| d.iter().any(|x| x == "$none"))
            {
                methods.push(method.to_string());
            }
        }
        methods.sort();
        methods.dedup();
        for m in methods {
            by.entry(m).or_default().push(name.clone());
        }
    }
    by
}

/// Every `"method"` a case names (its `after` calls, its scripted `methods`).
fn collect_methods(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(o) => {
            if let Some(m) = o.get("method").and_then(|m| m.as_str()) {
                out.push(m.to_string());
            }
            for x in o.values() {
                collect_methods(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_methods(x, out)),
        _ => {}
    }
}

/// Per version (newest first): the seed and session count of its saved fidelity run, and per
/// method `[identical, races, sessions, own]` (`own`: differing sessions whose first
/// difference is the method's own answer; `cargo xtask fidelity --save-methods`).
type Tally = (String, u64, BTreeMap<String, [u64; 4]>);

fn generated_by_version() -> Vec<Tally> {
    let mut out = Vec::new();
    for p in codex_wire::versions().iter().rev() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(p.version)
            .join("fidelity_methods.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Runs saved before the `own` count have three numbers: none is known then.
        let methods: BTreeMap<String, Vec<u64>> =
            serde_json::from_value(v["methods"].clone()).unwrap();
        let methods = methods
            .into_iter()
            .map(|(m, t)| {
                let at = |i: usize| t.get(i).copied().unwrap_or(0);
                (m, [at(0), at(1), at(2), at(3)])
            })
            .collect();
        out.push((
            format!("{} (seed {})", p.version, v["seed"]),
            v["sessions"].as_u64().unwrap_or(0),
            methods,
        ));
    }
    out
}

fn table() -> String {
    let newest = codex_wire::newest();
    let ruled = codex_wire::fake::ruled_methods();
    let captured = codex_wire::fake::captured_methods(newest);
    let shown = scenarios_by_method();
    let versions = codex_wire::versions();
    let methods = codex_wire::fake::default_methods(newest);
    let (mut by_rule, mut by_capture) = (0, 0);
    let generated = generated_by_version();
    let mut rows = String::new();
    for m in &methods {
        let how = if ruled.contains(&m.as_str()) {
            by_rule += 1;
            "rule"
        } else if captured.contains(m) {
            by_capture += 1;
            "captured real result"
        } else {
            "minimal valid result"
        };
        let since: Vec<&str> = versions
            .iter()
            .filter(|p| codex_wire::fake::default_methods(p).contains(m))
            .map(|p| p.version)
            .collect();
        let since = if since.len() == versions.len() {
            "all".to_string()
        } else {
            since.join(", ")
        };
        let by = if EVERY_SCENARIO.contains(&m.as_str()) {
            "every scenario".to_string()
        } else {
            shown
                .get(m)
                .map(|s| s.join(", "))
                .unwrap_or_else(|| "—".to_string())
        };
        let drawn: Vec<String> = generated
            .iter()
            .map(|(_, _, t)| match t.get(m) {
                Some([same, races, n, own]) => {
                    let mut cell = format!("{same}/{}", n - races);
                    if *races > 0 {
                        cell += &format!(" (+{races} races)");
                    }
                    if *own > 0 {
                        cell += &format!(" [{own} at its answer]");
                    }
                    cell
                }
                None => "—".to_string(),
            })
            .collect();
        rows += &format!(
            "| `{m}` | {how} | {since} | {} | {by} |\n",
            drawn.join(" · ")
        );
    }
    format!(
        "# Every client method, and how the fake answers it\n\n\
         Generated by `CODEX_WIRE_BLESS=1 cargo test --test method_table` (the test fails when \
         this page is stale). Codex {v}: {n} client methods; {by_rule} answered by a rule \
         (`src/fake/handlers/`, docs/fake.md), {by_capture} with the real server's result from \
         the captured session (`tests/corpus/<V>/real_session.jsonl`), {rest} with the minimal \
         valid result written as the real server writes it. \"Shown by\": the turn-corpus \
         scenarios that send the method, each recorded from every supported version's real \
         server and replayed against the fake (`tests/turns.rs`: fake = real). \
         \"Generated\": of the sessions of one `cargo xtask fidelity` run per version that sent \
         the method, how many were identical to a real run (the strict verdict; sessions the \
         real server raced on itself are counted apart; \"[k at its answer]\": of those \
         that differed, the k whose first difference was this method's own answer — the others \
         parted elsewhere, at a notification or another method's answer), in the order \
         {gen_order} \
         (`cargo xtask fidelity --seed S --sessions N --version V --save-methods` writes \
         `tests/corpus/<V>/fidelity_methods.json`).\n\n\
         | Method | Answered by | Versions | Generated | Shown by |\n|---|---|---|---|---|\n{rows}",
        gen_order = generated
            .iter()
            .map(|(v, n, _)| format!("{v}, {n} sessions"))
            .collect::<Vec<_>>()
            .join("; "),
        v = newest.version,
        n = methods.len(),
        rest = methods.len() - by_rule - by_capture,
    )
}

#[test]
fn docs_methods_md_is_the_table_of_every_method() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/methods.md");
    let want = table();
    if std::env::var_os("CODEX_WIRE_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/methods.md is stale: CODEX_WIRE_BLESS=1 cargo test --test method_table"
    );
}

#[test]
fn every_ruled_method_is_shown_by_a_scenario() {
    let shown = scenarios_by_method();
    let unshown: Vec<&str> = codex_wire::fake::ruled_methods()
        .into_iter()
        .filter(|m| !EVERY_SCENARIO.contains(m) && !shown.contains_key(*m))
        .collect();
    // Ruled methods no scenario sends yet: listed so the list can only shrink.
    const KNOWN_UNSHOWN: &[&str] = &[];
    let new: Vec<&&str> = unshown
        .iter()
        .filter(|m| !KNOWN_UNSHOWN.contains(m))
        .collect();
    assert!(new.is_empty(), "ruled but sent by no scenario: {new:?}");
}
