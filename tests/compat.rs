//! `codex-wire compat`: a capture judged by every supported release; the lines whose verdict
//! changes named with the reason. The field a later release added is read off the oldest's and
//! the newest's schema bundles here, never written down, so the tests keep their meaning when
//! the supported versions change.

use codex_wire::{Outcome, Protocol, Session};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codex-wire"))
}

fn compat_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut c = bin()
        .arg("compat")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = c.stdin.take().unwrap();
    let input = input.to_vec();
    // Written from a thread: the output pipe must be drained meanwhile.
    let t = std::thread::spawn(move || {
        let _ = w.write_all(&input);
    });
    let out = c.wait_with_output().unwrap();
    t.join().unwrap();
    out
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// An `initialize` that opens the experimental API: a field behind the gate is then judged by
/// its schema alone.
const INIT: &str = r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"compat","version":"1"},"capabilities":{"experimentalApi":true}}}"#;

/// A release's definitions, the `v2` ones flattened in.
fn defs(p: &Protocol) -> Map<String, Value> {
    let bundle: Value = serde_json::from_str(p.bundle).unwrap();
    let mut defs = bundle["definitions"].as_object().unwrap().clone();
    if let Some(Value::Object(v2)) = defs.remove("v2") {
        defs.extend(v2);
    }
    defs
}

/// Client request method → its params type, per the release's `ClientRequest` union.
fn params_types(defs: &Map<String, Value>) -> Vec<(String, String)> {
    defs["ClientRequest"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| {
            let method = m["properties"]["method"]["enum"][0].as_str()?;
            let params = m["properties"]["params"]["$ref"].as_str()?;
            Some((method.to_string(), params.rsplit('/').next()?.to_string()))
        })
        .collect()
}

fn props(defs: &Map<String, Value>, ty: &str) -> Vec<String> {
    defs.get(ty)
        .and_then(|d| d["properties"].as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// A client line with a params field the oldest release drops and the newest accepts: (the line,
/// the method, the field, the first release whose bundle declares it). Fields only the newest
/// declares come first (then "the release that knows it" and "the release that added it" are
/// one); the line is the newest's minimal params plus the field with a value of its type, kept
/// only when the engines agree: clean on the newest, that one path ignored on the oldest.
fn later_field() -> (String, String, String, &'static str) {
    let vs = codex_wire::versions();
    let (oldest, newest) = (vs[0], vs[vs.len() - 1]);
    assert_ne!(oldest.version, newest.version, "needs two releases");
    let all: Vec<Map<String, Value>> = vs.iter().map(|p| defs(p)).collect();
    let (old, new) = (&all[0], &all[all.len() - 1]);
    let old_types: std::collections::HashMap<String, String> =
        params_types(old).into_iter().collect();
    let mut candidates = Vec::new();
    for (method, ty) in params_types(new) {
        let Some(old_ty) = old_types.get(&method) else {
            continue;
        };
        let before = props(old, old_ty);
        for field in props(new, &ty) {
            if before.contains(&field) {
                continue;
            }
            let first = vs
                .iter()
                .zip(&all)
                .find(|(_, d)| {
                    params_types(d)
                        .iter()
                        .any(|(m, t)| *m == method && props(d, t).contains(&field))
                })
                .map(|(p, _)| p.version)
                .unwrap();
            let only_newest = first == newest.version;
            candidates.push((!only_newest, method.clone(), ty.clone(), field, first));
        }
    }
    candidates.sort();
    for (_, method, ty, field, first) in candidates {
        let mut params = codex_wire::fake::defaults::minimal_of(newest, &ty);
        let full = codex_wire::fake::defaults::full_of(newest, &ty, 0);
        let (Some(obj), Some(value)) = (params.as_object_mut(), full.get(&field)) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        obj.insert(field.clone(), value.clone());
        let line = json!({"id": 1, "method": method, "params": params}).to_string();
        let judge = |p: &'static Protocol| {
            let mut s = Session::with_protocol(p);
            s.feed(INIT.as_bytes());
            s.feed(line.as_bytes())
        };
        let (on_new, on_old) = (judge(newest), judge(oldest));
        let path = format!("$.params.{field}");
        if on_new.is_clean() && on_old.outcome == Outcome::Accepted && on_old.ignored == [path] {
            return (line, method, field, first);
        }
    }
    panic!(
        "no params field {} lacks and {} accepts on a minimal line",
        oldest.version, newest.version
    );
}

#[test]
fn a_field_a_later_release_added_is_named_with_that_release() {
    let vs = codex_wire::versions();
    let oldest = vs[0].version;
    let (line, method, field, added) = later_field();
    println!("{method}: `{field}`, unknown to {oldest}, added in {added}: {line}");
    let capture = format!("{INIT}\n{{\"method\":\"initialized\"}}\n{line}\n");
    let out = compat_stdin(&["--format", "json"], capture.as_bytes());
    // The oldest drops the field: a finding on one release is exit 1.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert_eq!(r["clean"], false);
    let releases = r["releases"].as_array().unwrap();
    assert_eq!(releases.len(), vs.len());
    assert_eq!(releases[0]["version"], oldest);
    assert_eq!(releases[0]["ignored"], 1, "{r:#}");
    assert_eq!(releases[vs.len() - 1]["findings"], 0, "{r:#}");
    let changes = r["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{r:#}");
    let c = &changes[0];
    assert_eq!(c["line"], 3);
    assert_eq!(c["method"], method.as_str());
    let path = format!("$.params.{field}");
    assert_eq!(c["verdicts"][oldest]["ignored"], json!([path]), "{c:#}");
    assert_eq!(
        c["verdicts"][vs[vs.len() - 1].version]["clean"],
        true,
        "{c:#}"
    );
    let reason = c["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "field" && x["name"] == field.as_str())
        .unwrap_or_else(|| panic!("no reason names `{field}`: {c:#}"));
    assert_eq!(reason["path"], path.as_str());
    assert_eq!(reason["added"], json!([added]), "{reason:#}");
    assert_eq!(reason["states"][oldest], "unknown");
    let text = reason["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("`{field}`")) && text.contains(added) && text.contains(oldest),
        "{text}"
    );

    // The same, for a person.
    let out = compat_stdin(&[], capture.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains(&format!("<stdin>:3: request {method} (id 1)")),
        "{human}"
    );
    let why = human
        .lines()
        .find(|l| l.trim_start().starts_with("why:") && l.contains(&format!("`{field}`")))
        .unwrap_or_else(|| panic!("no reason line names `{field}`:\n{human}"));
    assert!(why.contains(&format!("added in {added}")), "{why}");
    for p in vs {
        assert!(
            human.lines().any(|l| l.starts_with(p.version)),
            "a count row for {}:\n{human}",
            p.version
        );
    }
}

#[test]
fn a_clean_capture_exits_zero() {
    let capture = format!(
        "{INIT}\n{{\"method\":\"initialized\"}}\n{}\n{}\n",
        r#"{"id":1,"method":"thread/start","params":{}}"#,
        r#"{"id":2,"method":"model/list","params":{}}"#
    );
    let out = compat_stdin(&["--format", "json"], capture.as_bytes());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let r = report(&out);
    assert_eq!(r["clean"], true);
    assert_eq!(r["changes"], json!([]));
    for rel in r["releases"].as_array().unwrap() {
        assert_eq!(rel["lines"], 4, "{rel}");
        assert_eq!(rel["findings"], 0, "{rel}");
    }
    let out = compat_stdin(&[], capture.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no line's verdict changes"));
}

#[test]
fn a_line_invalid_everywhere_exits_one() {
    // `turn/start` without its thread: refused by every release.
    let capture = format!(
        "{INIT}\n{}\n",
        r#"{"id":1,"method":"turn/start","params":{"input":[]}}"#
    );
    let out = compat_stdin(&["--format", "json"], capture.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(r["clean"], false);
    for rel in r["releases"].as_array().unwrap() {
        assert_eq!(rel["errors"], 1, "{rel}");
    }
}

#[test]
fn unreadable_input_exits_two() {
    let out = bin()
        .args(["compat", "/nonexistent/capture.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let pieces: [&[u8]; 12] = [
        b"{",
        b"}",
        b"\"dir\":\"in\"",
        b"\"dir\":\"out\"",
        b"\"msg\":",
        b"\n",
        b"\xff",
        b"[1,",
        b"\"id\":1,",
        b"\"method\":\"thread/start\",",
        b"\"params\":{\"cwd\":[",
        b"\"result\":{",
    ];
    let mut bytes = INIT.as_bytes().to_vec();
    bytes.push(b'\n');
    for _ in 0..60_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if !x.is_multiple_of(3) {
            bytes.extend_from_slice(pieces[(x >> 8) as usize % pieces.len()]);
        } else {
            bytes.push((x >> 16) as u8);
        }
    }
    for input in ["raw", "transcript"] {
        for format in ["json", "human"] {
            let out = compat_stdin(&["--input", input, "--format", format], &bytes);
            let code = out.status.code();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(code, Some(0 | 1)),
                "{input}/{format}: {code:?} {err}"
            );
            assert!(!err.contains("panicked"), "{input}/{format}: {err}");
            if format == "json" {
                report(&out);
            }
        }
    }
}
