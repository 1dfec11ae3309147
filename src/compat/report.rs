//! The output: each release's counts and the changed lines with their verdicts and reasons,
//! for a terminal (`--format human`) or as one JSON document (`--format json`).

use super::judge::Change;
use super::schema::What;
use super::verdict::{Counts, Head, Judged};
use crate::Protocol;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// `request turn/start (id 3)`, `server notification x`, `response to item/tool/call (id 9)`.
fn describe(h: &Head) -> String {
    let id =
        h.id.as_ref()
            .map(|i| format!(" (id {i})"))
            .unwrap_or_default();
    let who = if h.dir.as_deref() == Some("out") {
        "server "
    } else {
        ""
    };
    match h.kind.as_str() {
        "request" | "notification" => {
            format!("{who}{} {}{id}", h.kind, h.method.as_deref().unwrap_or("?"))
        }
        "response" | "error" => match &h.reply_to {
            Some(m) => format!("{who}{} to {m}{id}", h.kind),
            None => format!("{who}{}{id}", h.kind),
        },
        "unreadable" => "transcript line".into(),
        _ => format!("{who}message"),
    }
}

/// Long server messages (`expected one of` 190 methods) cut for a terminal; JSON keeps them.
fn shorten(msg: &str) -> String {
    const MAX: usize = 160;
    if msg.len() <= MAX {
        return msg.to_string();
    }
    let mut cut = MAX;
    while !msg.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &msg[..cut])
}

fn verdict_text(j: &Option<Judged>) -> String {
    let Some(j) = j else {
        return "clean".into();
    };
    let mut parts = Vec::new();
    if let Some(why) = &j.unreadable {
        parts.push(format!("not a transcript entry: {why}"));
    }
    if j.closes {
        parts.push("not UTF-8: the server closes the connection".into());
    } else if j.unparsed {
        parts.push("not a JSON-RPC message: dropped without a reply".into());
    }
    if let Some((code, msg)) = &j.error {
        parts.push(format!("error {code}: {}", shorten(msg)));
    }
    if let Some(v) = &j.violation {
        parts.push(format!("violation: {}", shorten(v)));
    }
    if !j.ignored.is_empty() {
        let p: Vec<String> = j.ignored.iter().map(|p| format!("`{p}`")).collect();
        parts.push(format!("ignores {}", p.join(", ")));
    }
    if !j.missing.is_empty() {
        let p: Vec<String> = j.missing.iter().map(|p| format!("`{p}`")).collect();
        parts.push(format!("lacks always-sent {}", p.join(", ")));
    }
    parts.join("; ")
}

pub(super) fn human(
    out: &mut impl Write,
    releases: &[&'static Protocol],
    counts: &[Counts],
    changes: &[Change],
    files: usize,
) -> io::Result<()> {
    let lines = counts.first().map_or(0, |c| c.lines);
    writeln!(
        out,
        "{lines} lines of {files} input{} judged by {} releases\n",
        if files == 1 { "" } else { "s" },
        releases.len()
    )?;
    writeln!(
        out,
        "{:<10} {:>10} {:>9} {:>8} {:>10} {:>8} {:>8}",
        "release", "lines", "findings", "errors", "violations", "ignored", "missing"
    )?;
    for (p, c) in releases.iter().zip(counts) {
        writeln!(
            out,
            "{:<10} {:>10} {:>9} {:>8} {:>10} {:>8} {:>8}",
            p.version, c.lines, c.findings, c.errors, c.violations, c.ignored, c.missing
        )?;
    }
    writeln!(
        out,
        "(ignored: paths client lines carry that the release drops; missing: always-sent keys \
         server lines lack)\n"
    )?;
    if changes.is_empty() {
        writeln!(out, "no line's verdict changes between releases")?;
        return Ok(());
    }
    writeln!(
        out,
        "{} line{} whose verdict changes between releases:",
        changes.len(),
        if changes.len() == 1 { "" } else { "s" }
    )?;
    for c in changes {
        let pid = c
            .seen
            .head
            .pid
            .as_ref()
            .map(|p| format!(" [pid {p}]"))
            .unwrap_or_default();
        writeln!(
            out,
            "\n{}:{}{pid}: {}",
            c.file,
            c.line,
            describe(&c.seen.head)
        )?;
        // Releases with the same verdict together, in release order of their first.
        let mut groups: Vec<(Vec<&str>, &Option<Judged>)> = Vec::new();
        for (p, v) in releases.iter().zip(&c.seen.verdicts) {
            match groups.iter_mut().find(|(_, g)| *g == v) {
                Some((names, _)) => names.push(p.version),
                None => groups.push((vec![p.version], v)),
            }
        }
        for (names, v) in &groups {
            writeln!(out, "  {}: {}", names.join(", "), verdict_text(v))?;
        }
        if c.reasons.is_empty() {
            writeln!(
                out,
                "  why: no schema difference on the line's own keys and values explains it (the \
                 releases' checks differ)"
            )?;
        }
        for r in &c.reasons {
            writeln!(out, "  why: {}", r.text)?;
        }
    }
    Ok(())
}

fn judged_json(j: &Option<Judged>) -> Value {
    let d = Judged::default();
    let j = j.as_ref().unwrap_or(&d);
    json!({
        "clean": *j == d,
        "error": j.error.as_ref().map(|(c, m)| json!({"code": c, "message": m})),
        "violation": j.violation,
        "ignored": j.ignored,
        "missing": j.missing,
        "closes": j.closes,
        "unparsed": j.unparsed,
    })
}

pub(super) fn json_report(
    releases: &[&'static Protocol],
    counts: &[Counts],
    changes: &[Change],
    clean: bool,
) -> Value {
    let rel: Vec<Value> = releases
        .iter()
        .zip(counts)
        .map(|(p, c)| {
            json!({"version": p.version, "lines": c.lines, "findings": c.findings,
                   "errors": c.errors, "violations": c.violations, "ignored": c.ignored,
                   "missing": c.missing})
        })
        .collect();
    let ch: Vec<Value> = changes
        .iter()
        .map(|c| {
            let h = &c.seen.head;
            let verdicts: Map<String, Value> = releases
                .iter()
                .zip(&c.seen.verdicts)
                .map(|(p, v)| (p.version.to_string(), judged_json(v)))
                .collect();
            let reasons: Vec<Value> = c
                .reasons
                .iter()
                .map(|r| {
                    let states: Map<String, Value> = releases
                        .iter()
                        .zip(&r.states)
                        .filter_map(|(p, s)| {
                            s.as_ref().map(|s| {
                                let listed =
                                    matches!(r.what, What::Variants | What::Fields | What::Keys);
                                let s = if listed {
                                    json!(s.split('\n').collect::<Vec<_>>())
                                } else {
                                    json!(s)
                                };
                                (p.version.to_string(), s)
                            })
                        })
                        .collect();
                    json!({"kind": r.what.as_str(), "path": r.path, "name": r.name,
                           "type": (!r.owner.is_empty()).then_some(&r.owner),
                           "states": states, "added": r.added, "removed": r.removed,
                           "text": r.text})
                })
                .collect();
            json!({"file": c.file, "line": c.line, "dir": h.dir,
                   "pid": h.pid.as_ref().and_then(|p| serde_json::from_str::<Value>(p).ok()),
                   "kind": h.kind, "id": h.id, "method": h.method, "replyTo": h.reply_to,
                   "verdicts": verdicts, "reasons": reasons})
        })
        .collect();
    json!({"releases": rel, "clean": clean, "changes": ch})
}
