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
