//! The input read as `validate` reads it: its lines, whether it is a transcript or a raw
//! client capture, each line's body (a message, a process event, or not an entry); and the
//! small text helpers every room shows text with (escaping, clipping, JSON).

use crate::validate::{self, input::Format};
use serde_json::Value;
use std::fmt::Write as _;

/// One input: a name to show and its bytes (any bytes).
pub struct Input<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Dir {
    In,
    Out,
}

impl Dir {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Dir::In => "in",
            Dir::Out => "out",
        }
    }
}

/// One non-blank line of the input.
pub(super) struct Line<'a> {
    /// 1-based, as `validate` numbers lines.
    pub(super) n: usize,
    pub(super) text: &'a [u8],
    /// The entry's `pid`, as JSON text.
    pub(super) pid: Option<String>,
    pub(super) t: Option<f64>,
    pub(super) body: Body,
}

pub(super) enum Body {
    /// Not a transcript entry: why.
    Raw(String),
    /// A process event (`spawn`, `exit`, `stdin_eof`, …) and the whole entry.
    Event(String, Value),
    /// A message; `msg` is `None` when the wire text was not JSON (`raw`/`hex` entries, or a
    /// raw capture's unparsable line), then `wire` is that text.
    Message {
        dir: Dir,
        msg: Option<Value>,
        wire: String,
    },
}

impl Body {
    pub(super) fn msg(&self) -> Option<&Value> {
        match self {
            Body::Message { msg, .. } => msg.as_ref(),
            _ => None,
        }
    }
}

/// Splits the bytes into lines as `validate` does (every `\n` ends one; a last line without
/// it is still a line), blank lines left out but counted.
pub(super) fn split(bytes: &[u8]) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut n = 0;
    while !rest.is_empty() {
        n += 1;
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push((n, line));
        }
    }
    out
}

/// Whether the input is a transcript (some line is an entry) or a raw client capture.
pub(super) fn format_of(lines: &[(usize, &[u8])]) -> Format {
    let entry = lines
        .iter()
        .any(|(_, l)| validate::input::detect(l) == Format::Transcript);
    let json = lines
        .iter()
        .any(|(_, l)| serde_json::from_slice::<Value>(l).is_ok_and(|v| v.is_object()));
    if entry || !json {
        Format::Transcript
    } else {
        Format::Raw
    }
}

pub(super) fn parse<'a>(lines: &[(usize, &'a [u8])], format: Format) -> Vec<Line<'a>> {
    lines
        .iter()
        .map(|&(n, text)| {
            let parsed = serde_json::from_slice::<Value>(text);
            if format == Format::Raw {
                let wire = String::from_utf8_lossy(text).into_owned();
                return Line {
                    n,
                    text,
                    pid: None,
                    t: None,
                    body: Body::Message {
                        dir: Dir::In,
                        msg: parsed.ok(),
                        wire,
                    },
                };
            }
            let (pid, t, body) = match parsed {
                Err(e) => (None, None, Body::Raw(format!("not JSON: {e}"))),
                Ok(Value::Object(o)) => {
                    let pid = o.get("pid").map(Value::to_string);
                    let t = o.get("t").and_then(Value::as_f64).filter(|t| t.is_finite());
                    let body = entry_body(o);
                    (pid, t, body)
                }
                Ok(_) => (None, None, Body::Raw("not a JSON object".into())),
            };
            Line {
                n,
                text,
                pid,
                t,
                body,
            }
        })
        .collect()
}

fn entry_body(mut o: serde_json::Map<String, Value>) -> Body {
    if let Some(ev) = o.get("event") {
        let kind = ev.as_str().map_or_else(|| ev.to_string(), str::to_string);
        return Body::Event(kind, Value::Object(o));
    }
    let dir = match o.get("dir").and_then(Value::as_str) {
        Some("in") => Dir::In,
        Some("out") => Dir::Out,
        Some(d) => return Body::Raw(format!("unknown dir `{d}` (expected `in` or `out`)")),
        None => return Body::Raw("entry has neither `dir` nor `event`".into()),
    };
    if let Some(msg) = o.remove("msg") {
        let wire = msg.to_string();
        return Body::Message {
            dir,
            msg: Some(msg),
            wire,
        };
    }
    let text = o
        .get("raw")
        .or_else(|| o.get("line"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            o.get("hex")
                .and_then(Value::as_str)
                .and_then(validate::input::from_hex)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        });
    match text {
        Some(wire) => Body::Message {
            dir,
            msg: serde_json::from_str(&wire).ok(),
            wire,
        },
        None => Body::Raw("message entry has no `msg`, `raw`, `line` or `hex`".into()),
    }
}

pub(super) fn method(msg: &Value) -> Option<&str> {
    msg.get("method").and_then(Value::as_str)
}

pub(super) fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

pub(super) fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// HTML-escapes text (and makes control characters visible).
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control()
                || matches!(c, '\u{fdd0}'..='\u{fdef}' | '\u{fffe}' | '\u{ffff}') =>
            {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// At most `max` characters of `s`, with how much was left out.
pub(super) fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => format!("{}… ({} more bytes)", &s[..at], s.len() - at),
    }
}

pub(super) fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}
