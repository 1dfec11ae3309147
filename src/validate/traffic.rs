//! Deterministic synthetic client traffic, shaped like a real client session: one
//! `initialize`, then turns with long prompts, approval responses, interrupts and listings;
//! about 5% of lines are invalid and about 5% carry fields the server ignores. Used by the
//! benchmark and by the tests that compare parallel and sequential validation.

use std::io::{self, Write};

/// A small xorshift generator: reproducible traffic without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "refactor",
    "the",
    "parser",
    "so",
    "that",
    "tests",
    "pass",
    "and",
    "explain",
    "why",
    "module",
    "async",
    "error",
    "handling",
    "in",
    "src/lib.rs",
    "café",
    "naïve",
    "\\\"quoted\\\"",
    "line\\nbreak",
    "function",
    "benchmark",
    "review",
    "this",
    "diff",
    "carefully",
];

const THREAD: &str = "01a22b04-8038-7e22-b3f6-60fd34ea1839";

/// Writes `lines` client→server lines (each followed by `\n`) generated from `seed`.
pub fn generate(lines: u64, seed: u64, out: &mut impl Write) -> io::Result<()> {
    let mut rng = Rng(seed | 1);
    let mut id: u64 = 0;
    let mut text = String::new();
    for n in 0..lines {
        id += 1;
        if n == 0 {
            writeln!(
                out,
                r#"{{"id":0,"method":"initialize","params":{{"clientInfo":{{"name":"bench","title":"Bench","version":"1.0.0"}},"capabilities":{{"experimentalApi":true}}}}}}"#
            )?;
            continue;
        }
        if n == 1 {
            writeln!(out, r#"{{"method":"initialized"}}"#)?;
            continue;
        }
        let roll = rng.below(100);
        match roll {
            // ~5% invalid: missing field, wrong type, unknown method, broken JSON, bad enum.
            0 => writeln!(
                out,
                r#"{{"id":{id},"method":"turn/start","params":{{"input":[{{"type":"text","text":"no thread"}}]}}}}"#
            )?,
            1 => writeln!(
                out,
                r#"{{"id":{id},"method":"turn/interrupt","params":{{"threadId":{id},"turnId":"t"}}}}"#
            )?,
            2 => writeln!(
                out,
                r#"{{"id":{id},"method":"thread/frobnicate","params":{{}}}}"#
            )?,
            3 => writeln!(
                out,
                r#"{{"id":{id},"method":"turn/start","params":{{"threadId":"{THREAD}","input":[{{"type":"text","text":"cut"#
            )?,
            4 => writeln!(
                out,
                r#"{{"id":{id},"method":"thread/start","params":{{"approvalPolicy":"sometimes"}}}}"#
            )?,
            // ~5% unknown fields, at several depths.
            5 => writeln!(
                out,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"thread/list","params":{{}}}}"#
            )?,
            6 | 7 => {
                prompt(&mut rng, &mut text, 8);
                writeln!(
                    out,
                    r#"{{"id":{id},"method":"turn/start","params":{{"threadId":"{THREAD}","input":[{{"type":"text","text":"{text}","priority":"high"}}]}}}}"#
                )?
            }
            8 => writeln!(
                out,
                r#"{{"id":{id},"method":"thread/start","params":{{"model":"gpt-5","cwd":"/home/dev/project","temperature":0.2}}}}"#
            )?,
            9 => writeln!(
                out,
                r#"{{"id":{},"result":{{"decision":"accept","note":"ok"}}}}"#,
                9000 + id
            )?,
            // The bulk: long prompts, approvals, steering, interrupts, listings.
            10..=44 => {
                let words = 20 + rng.below(200) as usize;
                prompt(&mut rng, &mut text, words);
                writeln!(
                    out,
                    r#"{{"id":{id},"method":"turn/start","params":{{"threadId":"{THREAD}","input":[{{"type":"text","text":"{text}","text_elements":[]}}],"effort":"medium","summary":"auto"}}}}"#
                )?
            }
            45..=69 => {
                let decision =
                    ["accept", "acceptForSession", "decline", "cancel"][rng.below(4) as usize];
                writeln!(
                    out,
                    r#"{{"id":{},"result":{{"decision":"{decision}"}}}}"#,
                    9000 + id
                )?
            }
            70..=79 => writeln!(
                out,
                r#"{{"id":{id},"method":"turn/interrupt","params":{{"threadId":"{THREAD}","turnId":"turn-{id}"}}}}"#
            )?,
            80..=84 => writeln!(
                out,
                r#"{{"id":{id},"method":"thread/list","params":{{"limit":50}}}}"#
            )?,
            85..=89 => writeln!(
                out,
                r#"{{"id":{id},"method":"thread/read","params":{{"threadId":"{THREAD}","includeTurns":true}}}}"#
            )?,
            90..=94 => writeln!(out, r#"{{"id":{id},"method":"model/list","params":{{}}}}"#)?,
            _ => {
                prompt(&mut rng, &mut text, 30);
                writeln!(
                    out,
                    r#"{{"id":{id},"method":"thread/start","params":{{"model":"gpt-5","cwd":"/home/dev/project","approvalPolicy":"on-request","sandbox":"workspace-write","developerInstructions":"{text}"}}}}"#
                )?
            }
        }
    }
    Ok(())
}

/// A JSON-string-safe prompt of `words` words (escapes are already escaped).
fn prompt(rng: &mut Rng, text: &mut String, words: usize) {
    text.clear();
    for i in 0..words {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
}

/// The kinds of line in the all-method mix.
pub struct Samples {
    /// Accepted requests, every method with a sample (several shapes each).
    pub valid: Vec<serde_json::Value>,
    /// Client results for every server request method.
    pub responses: Vec<serde_json::Value>,
    /// Client request methods with no accepted sample (their params need live state).
    pub methods_without_sample: Vec<String>,
}

/// Samples of what a busy client sends, built from the newest schema: for every client method,
/// params with every optional field filled (several union variants) and the minimal params,
/// kept when the engine accepts them; for every server request, a full and a minimal result.
pub fn samples() -> Samples {
    use crate::fake::defaults::{full_of, minimal_of, request_types};
    use serde_json::{json, Value};
    let p = crate::newest();
    let init = br#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"},"capabilities":{"experimentalApi":true}}}"#;
    let mut valid = Vec::new();
    let mut without = Vec::new();
    for &m in p.client_methods {
        if m == "initialize" {
            continue;
        }
        let Some((ty, _)) = request_types(p, "ClientRequest", m) else {
            // A params-less method.
            valid.push(json!({"id": 1, "method": m}));
            continue;
        };
        let mut shapes: Vec<Value> = (0..4).map(|pick| full_of(p, ty, pick)).collect();
        shapes.push(minimal_of(p, ty));
        let before = valid.len();
        for params in shapes {
            let line = json!({"id": 1, "method": m, "params": params});
            let mut s = crate::Session::with_protocol(p);
            s.feed(init);
            let accepted = s.feed(line.to_string().as_bytes()).outcome == crate::Outcome::Accepted;
            if accepted && !valid[before..].contains(&line) {
                valid.push(line);
            }
        }
        if valid.len() == before {
            without.push(m.to_string());
        }
    }
    let mut responses = Vec::new();
    for &m in p.server_request_methods {
        let Some((_, Some(resp))) = request_types(p, "ServerRequest", m) else {
            continue;
        };
        for result in [full_of(p, resp, 0), minimal_of(p, resp)] {
            responses.push(json!({"id": "s", "result": result}));
        }
    }
    Samples {
        valid,
        responses,
        methods_without_sample: without,
    }
}

/// Writes `lines` lines of traffic that spans every method the way a busy client's capture does:
/// one `initialize`, then accepted requests of every method in their real shapes (~80 %),
/// client results for server requests (~10 %), ~5 % invalid (a params field poisoned with a
/// value no type takes) and ~5 % with an unknown field.
pub fn generate_all_methods(lines: u64, seed: u64, out: &mut impl Write) -> io::Result<()> {
    all_methods(lines, seed, false, out)
}

/// The all-method mix with every line after `initialize` made invalid (a poisoned field): the
/// error path's throughput.
pub fn generate_all_invalid(lines: u64, seed: u64, out: &mut impl Write) -> io::Result<()> {
    all_methods(lines, seed, true, out)
}

fn all_methods(lines: u64, seed: u64, invalid_only: bool, out: &mut impl Write) -> io::Result<()> {
    use serde_json::{json, Value};
    let s = samples();
    let mut rng = Rng(seed | 1);
    writeln!(
        out,
        r#"{{"id":0,"method":"initialize","params":{{"clientInfo":{{"name":"bench","version":"1"}},"capabilities":{{"experimentalApi":true}}}}}}"#
    )?;
    for id in 1..lines {
        let roll = if invalid_only {
            10 + rng.below(5)
        } else {
            rng.below(100)
        };
        let mut msg = if roll < 10 && !s.responses.is_empty() {
            s.responses[rng.below(s.responses.len() as u64) as usize].clone()
        } else {
            s.valid[rng.below(s.valid.len() as u64) as usize].clone()
        };
        msg["id"] = if roll < 10 {
            json!(format!("srv-{id}"))
        } else {
            json!(id)
        };
        let params = if msg.get("params").is_some() {
            Some("params")
        } else if msg.get("result").is_some() {
            Some("result")
        } else {
            None
        };
        match (roll, params) {
            // Invalid: the first field poisoned (no string, number, bool, struct, map or enum
            // takes it); a free-form field may still accept it.
            (10..=14, Some(key)) => {
                if let Some(Value::Object(o)) = msg.get_mut(key) {
                    if let Some((_, v)) = o.iter_mut().next() {
                        *v = json!([[["poison"]]]);
                    } else {
                        msg[key] = json!("not an object");
                    }
                }
            }
            // An unknown field, at the top of params or the result.
            (15..=19, Some(key)) => {
                if let Some(Value::Object(o)) = msg.get_mut(key) {
                    o.insert("clientTraceId".into(), json!(format!("trace-{id}")));
                }
            }
            _ => {}
        }
        serde_json::to_writer(&mut *out, &msg)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
