//! The conversation model of one transcript: its turns, the items' blocks (deltas folded),
//! requests linked to their replies, and the findings at each line (error replies, and the
//! engine's verdicts exactly as `codex-wire validate` gives them).

use super::parse::{as_text, format_of, method, parse, split, strs, Body, Dir, Input, Line};
use crate::validate::{self, input::Format, report::OutFormat};
use serde_json::Value;
use std::collections::HashMap;

/// A finding shown at its line.
pub(super) struct Finding {
    /// `error-reply`, or the engine's: `engine`.
    pub(super) class: &'static str,
    pub(super) text: String,
}

/// The engine's verdict per line, as `codex-wire validate` gives it (its JSON records), and its
/// count of findings.
pub(super) struct Engine {
    pub(super) version: &'static str,
    pub(super) how: &'static str,
    pub(super) records: HashMap<usize, Value>,
    pub(super) findings: u64,
}

fn engine(input: &Input, format: Format, protocol: Option<&'static crate::Protocol>) -> Engine {
    let (protocol, how) = match protocol {
        Some(p) => (p, "--codex-version"),
        None => match validate::detect_version(input.bytes) {
            Some(p) => (p, "from the server's userAgent"),
            None => (
                crate::newest(),
                "the newest; no userAgent of a known version",
            ),
        },
    };
    let cfg = validate::Config {
        format: OutFormat::Json,
        color: false,
        allow: Vec::new(),
        jobs: 1,
        input: Some(format),
        progress: false,
        protocol: Some(protocol),
    };
    let mut out = Vec::new();
    let stats = validate::run(
        input.bytes,
        Some(input.bytes.len() as u64),
        input.name,
        &cfg,
        &mut out,
    );
    let records = out
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter_map(|r| Some((usize::try_from(r["line"].as_u64()?).ok()?, r)))
        .collect();
    Engine {
        version: protocol.version,
        how,
        records,
        findings: stats.map_or(0, |s| s.findings()),
    }
}

/// A `validate` record as a finding, when `validate` counts it as one
/// (`validate::report::is_finding`, and lines that are not entries); the server's keys beyond
/// the schema come back as a note.
fn engine_finding(r: &Value) -> (Option<Finding>, Option<String>) {
    let kind = r["kind"].as_str().unwrap_or("");
    let client = r["dir"] == "in";
    let mut parts = Vec::new();
    if kind == "unreadable" {
        parts.push(
            r["message"]
                .as_str()
                .unwrap_or("not a transcript entry")
                .to_string(),
        );
    }
    if let Some(e) = r["error"].as_object() {
        parts.push(format!(
            "the real server replies error {}: {}",
            e.get("code").map(Value::to_string).unwrap_or_default(),
            e.get("message").and_then(Value::as_str).unwrap_or("")
        ));
    }
    if let Some(v) = r["violation"].as_str() {
        parts.push(format!("violation: {v}"));
    }
    let ignored = strs(&r["ignored"]);
    if client && !ignored.is_empty() {
        parts.push(format!(
            "ignored by the real server: {}",
            ignored.join(", ")
        ));
    }
    let missing = strs(&r["missing"]);
    if !missing.is_empty() {
        parts.push(format!(
            "lacks keys the real server always sends: {}",
            missing.join(", ")
        ));
    }
    if r["closes"] == true {
        parts.push("not UTF-8: the server closes the connection".into());
    } else if kind == "unparsed" && r["error"].is_null() {
        parts.push(if client {
            "not a JSON-RPC message: the server says nothing".into()
        } else {
            "not a message of the protocol".into()
        });
    }
    let note = (!client && !ignored.is_empty()).then(|| {
        format!(
            "keys the schema does not declare (not a finding): {}",
            ignored.join(", ")
        )
    });
    let finding = (!parts.is_empty()).then(|| Finding {
        class: "engine",
        text: parts.join("; "),
    });
    (finding, note)
}

/// An item's block: its deltas joined.
pub(super) struct Block {
    pub(super) ty: String,
    pub(super) id: String,
    /// The line index of the row that carries the block.
    pub(super) row: usize,
    /// Streams by channel (`text`, `summary`, `content`, `output`, `plan`), in order of first
    /// appearance.
    pub(super) channels: Vec<(&'static str, String)>,
    pub(super) deltas: Vec<usize>,
    pub(super) started: Option<Value>,
    pub(super) completed: Option<(usize, Value)>,
}

/// Delta notifications folded into their item's block, and the channel each feeds.
const DELTAS: &[(&str, &str)] = &[
    ("item/agentMessage/delta", "text"),
    ("item/reasoning/summaryTextDelta", "summary"),
    ("item/reasoning/summaryPartAdded", "summary"),
    ("item/reasoning/textDelta", "content"),
    ("item/commandExecution/outputDelta", "output"),
    ("item/fileChange/outputDelta", "output"),
    ("item/plan/delta", "plan"),
];

pub(super) struct Turn {
    pub(super) number: usize,
    pub(super) id: String,
    pub(super) pid: Option<String>,
    pub(super) start: usize,
    pub(super) end: Option<usize>,
    pub(super) status: Option<String>,
    pub(super) error: Option<String>,
    /// Why the section closed without its `turn/completed`.
    pub(super) cut: Option<&'static str>,
}

#[derive(Default, Clone)]
pub(super) struct Ops {
    pub(super) close_before: usize,
    pub(super) open: Option<usize>,
    pub(super) close_after: usize,
}

/// Everything the page shows of one transcript.
pub(super) struct Model<'a> {
    pub(super) name: String,
    pub(super) format: Format,
    pub(super) lines: Vec<Line<'a>>,
    pub(super) t0: Option<f64>,
    pub(super) ops: Vec<Ops>,
    pub(super) turns: Vec<Turn>,
    pub(super) blocks: Vec<Block>,
    /// Line index → the block its row carries.
    pub(super) block_row: HashMap<usize, usize>,
    /// Line index of a delta folded into a block → that block.
    pub(super) folded: HashMap<usize, usize>,
    /// Line index of an `item/completed` → its block.
    pub(super) completes: HashMap<usize, usize>,
    pub(super) reply: HashMap<usize, usize>,
    pub(super) request: HashMap<usize, usize>,
    pub(super) findings: HashMap<usize, Vec<Finding>>,
    pub(super) notes: HashMap<usize, String>,
    pub(super) messages: usize,
    pub(super) client: usize,
    pub(super) server: usize,
    pub(super) processes: usize,
    pub(super) errors: usize,
    pub(super) engine_findings: usize,
    pub(super) engine: Engine,
}

pub(super) fn build<'a>(
    input: &Input<'a>,
    protocol: Option<&'static crate::Protocol>,
) -> Model<'a> {
    let split = split(input.bytes);
    let format = format_of(&split);
    let lines = parse(&split, format);
    let engine = engine(input, format, protocol);
    let mut m = Model {
        name: input.name.to_string(),
        format,
        t0: lines.iter().find_map(|l| l.t),
        ops: vec![Ops::default(); lines.len()],
        turns: Vec::new(),
        blocks: Vec::new(),
        block_row: HashMap::new(),
        folded: HashMap::new(),
        completes: HashMap::new(),
        reply: HashMap::new(),
        request: HashMap::new(),
        findings: HashMap::new(),
        notes: HashMap::new(),
        messages: 0,
        client: 0,
        server: 0,
        processes: 0,
        errors: 0,
        engine_findings: 0,
        engine,
        lines: Vec::new(),
    };
    let mut stack: Vec<usize> = Vec::new();
    let mut pending: HashMap<(Option<String>, Dir, String), usize> = HashMap::new();
    let mut items: HashMap<(Option<String>, String), usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(r) = m.engine.records.get(&line.n) {
            let (finding, note) = engine_finding(r);
            if let Some(f) = finding {
                m.engine_findings += 1;
                m.findings.entry(i).or_default().push(f);
            }
            if let Some(n) = note {
                m.notes.insert(i, n);
            }
        }
        match &line.body {
            Body::Raw(_) => {}
            Body::Event(kind, _) => {
                if kind == "spawn" {
                    m.processes += 1;
                }
                if kind == "spawn" || kind == "exit" {
                    // The process's open turns end here.
                    if let Some(pos) = stack.iter().position(|&k| m.turns[k].pid == line.pid) {
                        for &k in &stack[pos..] {
                            m.turns[k].cut = Some(if kind == "exit" {
                                "the process exited"
                            } else {
                                "a new process started"
                            });
                        }
                        m.ops[i].close_before += stack.len() - pos;
                        stack.truncate(pos);
                    }
                }
            }
            Body::Message { dir, msg, .. } => {
                m.messages += 1;
                match dir {
                    Dir::In => m.client += 1,
                    Dir::Out => m.server += 1,
                }
                let Some(msg @ Value::Object(o)) = msg else {
                    continue;
                };
                let meth = method(msg);
                // Error replies.
                if meth.is_none() {
                    if let Some(e) = o.get("error").and_then(Value::as_object) {
                        m.errors += 1;
                        m.findings.entry(i).or_default().push(Finding {
                            class: "error-reply",
                            text: format!(
                                "error reply {}: {}",
                                e.get("code").map(as_text).unwrap_or_default(),
                                e.get("message").map(as_text).unwrap_or_default()
                            ),
                        });
                    }
                }
                // Requests and their replies.
                if let Some(id) = o.get("id") {
                    let id = id.to_string();
                    if meth.is_some() {
                        pending.insert((line.pid.clone(), *dir, id), i);
                    } else {
                        let other = match dir {
                            Dir::In => Dir::Out,
                            Dir::Out => Dir::In,
                        };
                        if let Some(req) = pending.remove(&(line.pid.clone(), other, id)) {
                            m.reply.insert(req, i);
                            m.request.insert(i, req);
                        }
                    }
                }
                let params = &msg["params"];
                // Items and their deltas.
                let delta = DELTAS.iter().find(|(d, _)| Some(*d) == meth);
                match (meth, delta, params["itemId"].as_str()) {
                    (_, Some((dm, channel)), Some(item_id)) if o.get("id").is_none() => {
                        let key = (line.pid.clone(), item_id.to_string());
                        let b = match items.get(&key) {
                            Some(&b) => {
                                m.folded.insert(i, b);
                                b
                            }
                            None => {
                                // A delta of an item never started: the block starts here.
                                m.blocks.push(Block {
                                    ty: String::new(),
                                    id: item_id.to_string(),
                                    row: i,
                                    channels: Vec::new(),
                                    deltas: Vec::new(),
                                    started: None,
                                    completed: None,
                                });
                                let b = m.blocks.len() - 1;
                                items.insert(key, b);
                                m.block_row.insert(i, b);
                                b
                            }
                        };
                        let block = &mut m.blocks[b];
                        block.deltas.push(i);
                        let text = if *dm == "item/reasoning/summaryPartAdded" {
                            String::new()
                        } else {
                            as_text(&params["delta"])
                        };
                        match block.channels.iter_mut().find(|(c, _)| c == channel) {
                            Some((_, s)) => {
                                if *dm == "item/reasoning/summaryPartAdded" && !s.is_empty() {
                                    s.push_str("\n\n");
                                }
                                s.push_str(&text);
                            }
                            None => block.channels.push((channel, text)),
                        }
                    }
                    (Some("item/started"), _, _) => {
                        let item = &params["item"];
                        let id = as_text(&item["id"]);
                        m.blocks.push(Block {
                            ty: as_text(&item["type"]),
                            id: id.clone(),
                            row: i,
                            channels: Vec::new(),
                            deltas: Vec::new(),
                            started: Some(item.clone()),
                            completed: None,
                        });
                        let b = m.blocks.len() - 1;
                        items.insert((line.pid.clone(), id), b);
                        m.block_row.insert(i, b);
                    }
                    (Some("item/completed"), _, _) => {
                        let item = &params["item"];
                        let key = (line.pid.clone(), as_text(&item["id"]));
                        if let Some(&b) = items.get(&key) {
                            let block = &mut m.blocks[b];
                            if block.ty.is_empty() {
                                block.ty = as_text(&item["type"]);
                            }
                            block.completed = Some((i, item.clone()));
                            m.completes.insert(i, b);
                        }
                    }
                    _ => {}
                }
                // Turns.
                if *dir == Dir::Out && o.get("id").is_none() {
                    let turn_id = as_text(&params["turn"]["id"]);
                    match meth {
                        Some("turn/started") => {
                            m.turns.push(Turn {
                                number: m.turns.len() + 1,
                                id: turn_id,
                                pid: line.pid.clone(),
                                start: i,
                                end: None,
                                status: None,
                                error: None,
                                cut: None,
                            });
                            let k = m.turns.len() - 1;
                            stack.push(k);
                            m.ops[i].open = Some(k);
                        }
                        Some("turn/completed") => {
                            if let Some(pos) = stack.iter().rposition(|&k| m.turns[k].id == turn_id)
                            {
                                let k = stack[pos];
                                for &inner in &stack[pos + 1..] {
                                    m.turns[inner].cut = Some("an enclosing turn completed");
                                }
                                let t = &mut m.turns[k];
                                t.end = Some(i);
                                t.status = Some(as_text(&params["turn"]["status"]));
                                let err = &params["turn"]["error"];
                                if !err.is_null() {
                                    t.error = Some(
                                        err["message"]
                                            .as_str()
                                            .map_or_else(|| err.to_string(), str::to_string),
                                    );
                                }
                                m.ops[i].close_after += stack.len() - pos;
                                stack.truncate(pos);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    for &k in &stack {
        m.turns[k].cut = Some("the transcript ends");
    }
    m.lines = lines;
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    use crate::show::render::tests::{corpus, page};

    /// The page's counts against what `validate` counts on every recorded turn transcript:
    /// the engine's findings are validate's, plus the error replies.
    #[test]
    fn counts_match_validate_on_the_corpus() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(crate::newest().version)
            .join("turns");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".real.jsonl"))
            .collect();
        files.sort();
        assert!(files.len() > 50);
        let mut any_findings = false;
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            let m = build(
                &Input {
                    name: "x",
                    bytes: &bytes,
                },
                None,
            );
            assert_eq!(
                m.engine_findings as u64,
                m.engine.findings,
                "{}",
                f.display()
            );
            let text = String::from_utf8(bytes.clone()).unwrap();
            let values: Vec<Value> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let messages = values.iter().filter(|v| v.get("msg").is_some()).count();
            let started = values
                .iter()
                .filter(|v| v["msg"]["method"] == "turn/started")
                .count();
            let errors = values
                .iter()
                .filter(|v| v["msg"]["error"].is_object() && v["msg"].get("method").is_none())
                .count();
            assert_eq!(m.messages, messages, "{}", f.display());
            assert_eq!(m.turns.len(), started, "{}", f.display());
            assert_eq!(m.errors, errors, "{}", f.display());
            any_findings |= m.engine_findings > 0 && m.errors > 0;
        }
        assert!(any_findings);
    }

    #[test]
    fn deltas_are_folded_into_their_item() {
        let real = corpus("02_reasoning_message.real.jsonl");
        let m = build(
            &Input {
                name: "x",
                bytes: &real,
            },
            None,
        );
        let text = String::from_utf8(real.clone()).unwrap();
        let deltas = text
            .lines()
            .filter(|l| {
                DELTAS
                    .iter()
                    .any(|(d, _)| l.contains(&format!("\"method\":\"{d}\"")))
            })
            .count();
        assert!(deltas > 1);
        // Every delta folded, but the first of an item never started.
        assert_eq!(
            m.folded.len() + m.blocks.iter().filter(|b| b.started.is_none()).count(),
            deltas
        );
        let p = page(&real);
        assert!(p.html.contains("class=\"stream ch-text\""));
    }
}
