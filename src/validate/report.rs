//! Rendering verdicts: JSON lines, human diagnostics that quote the line and point at the
//! offending value, and the summary table.

use super::glob::Glob;
use super::input::Dir;
use super::locate;
use crate::{Id, Kind, Outcome, Verdict};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    Json,
    Human,
}

/// What the reporter needs to know, shared by every worker.
pub struct Style {
    pub format: OutFormat,
    pub color: bool,
    pub allow: Vec<Glob>,
    /// Shown before `:line` in human output.
    pub source: String,
    /// The codex version the input is judged as.
    pub protocol: &'static crate::Protocol,
}

/// Counters of one (direction, kind) row.
#[derive(Clone, Copy, Default, Debug)]
pub struct Row {
    pub lines: u64,
    pub findings: u64,
    pub errors: u64,
    pub violations: u64,
    pub ignored: u64,
    /// Server lines lacking a key the real server always sends.
    pub missing: u64,
    pub allowed: u64,
    pub silent: u64,
    pub closes: u64,
}

/// The counters of every (direction, kind), in the summary's order: direction, then kind by
/// name. A fixed table, not a map: a row is counted on every line.
#[derive(Clone, Default, Debug)]
pub struct Rows([[Row; 5]; 2]);

/// Kinds in the order of their names.
const KINDS: [Kind; 5] = [
    Kind::Error,
    Kind::Notification,
    Kind::Request,
    Kind::Response,
    Kind::Unparsed,
];

impl Rows {
    fn at(&mut self, dir: Dir, kind: Kind) -> &mut Row {
        let k = match kind {
            Kind::Error => 0,
            Kind::Notification => 1,
            Kind::Request => 2,
            Kind::Response => 3,
            Kind::Unparsed => 4,
        };
        &mut self.0[dir as usize][k]
    }

    /// The rows that counted a line.
    pub fn iter(&self) -> impl Iterator<Item = ((Dir, &'static str), &Row)> {
        [Dir::In, Dir::Out].into_iter().flat_map(move |d| {
            KINDS
                .iter()
                .zip(&self.0[d as usize])
                .filter(|(_, r)| r.lines > 0)
                .map(move |(k, r)| ((d, k.as_str()), r))
        })
    }
}

/// The summary of a run, merged from batches.
#[derive(Default, Debug)]
pub struct Stats {
    pub rows: Rows,
    /// Ignored path → (count, method), kept for the most frequent paths.
    pub paths: HashMap<String, (u64, String)>,
    pub bad_entries: u64,
    /// Lines not checked because their session's connection was closed before them.
    pub after_close: u64,
}

/// Distinct ignored paths remembered (paths carry array indices; this bounds memory).
const MAX_PATHS: usize = 4096;

impl Stats {
    pub fn findings(&self) -> u64 {
        self.rows.iter().map(|(_, r)| r.findings).sum::<u64>() + self.bad_entries
    }

    pub fn merge(&mut self, other: Stats) {
        for (m, r) in self
            .rows
            .0
            .iter_mut()
            .flatten()
            .zip(other.rows.0.iter().flatten())
        {
            m.lines += r.lines;
            m.findings += r.findings;
            m.errors += r.errors;
            m.violations += r.violations;
            m.ignored += r.ignored;
            m.missing += r.missing;
            m.allowed += r.allowed;
            m.silent += r.silent;
            m.closes += r.closes;
        }
        for (p, (n, m)) in other.paths {
            self.add_path(Cow::Owned(p), n, || m);
        }
        self.bad_entries += other.bad_entries;
        self.after_close += other.after_close;
    }

    /// Counts a path; the method's label is built only for a path seen the first time.
    fn add_path(&mut self, path: Cow<str>, n: u64, method: impl FnOnce() -> String) {
        if let Some(e) = self.paths.get_mut(path.as_ref()) {
            e.0 += n;
        } else if self.paths.len() < MAX_PATHS {
            self.paths.insert(path.into_owned(), (n, method()));
        }
    }
}

/// One checked message.
pub struct Record<'a> {
    pub line: u64,
    pub dir: Dir,
    pub pid: Option<&'a str>,
    pub text: &'a [u8],
    pub verdict: Verdict,
}

/// Whether a verdict is worth a client author's attention.
/// Keys a server sends beyond the schema are counted but are not findings: the schema allows
/// them, and the client cannot act on them. Keys it lacks that the real server always sends
/// are: a client written against the real server may rely on them.
pub fn is_finding(dir: Dir, v: &Verdict) -> bool {
    v.error().is_some()
        || v.violation.is_some()
        || (dir == Dir::In && !v.ignored.is_empty())
        || !v.missing.is_empty()
        || v.kind == Kind::Unparsed
        || v.outcome == Outcome::Close
}

/// Human output shortens the server's very long messages (`expected one of` 190 methods);
/// `--format json` keeps them whole.
fn shorten(msg: &str) -> String {
    const MAX: usize = 220;
    if msg.len() <= MAX {
        return msg.to_string();
    }
    let mut cut = MAX;
    while !msg.is_char_boundary(cut) {
        cut -= 1;
    }
    let more = msg[cut..].matches(", `").count();
    if more > 0 {
        format!("{}… ({more} more)", &msg[..cut])
    } else {
        format!("{}…", &msg[..cut])
    }
}

impl Style {
    /// Applies `--allow-ignored`, counts, and renders `rec` into `out`. Returns whether it is
    /// a finding.
    pub fn emit(&self, mut rec: Record, out: &mut Vec<u8>, stats: &mut Stats) -> bool {
        let before = rec.verdict.ignored.len();
        if !self.allow.is_empty() {
            rec.verdict
                .ignored
                .retain(|p| !self.allow.iter().any(|g| g.matches(p)));
        }
        let v = &rec.verdict;
        let finding = is_finding(rec.dir, v);
        let row = stats.rows.at(rec.dir, v.kind);
        row.lines += 1;
        row.findings += finding as u64;
        row.errors += v.error().is_some() as u64;
        row.violations += v.violation.is_some() as u64;
        row.ignored += !v.ignored.is_empty() as u64;
        row.missing += !v.missing.is_empty() as u64;
        row.allowed += (before - v.ignored.len()) as u64;
        row.silent += (rec.dir == Dir::In && v.kind == Kind::Unparsed) as u64;
        row.closes += (v.outcome == Outcome::Close) as u64;
        if !v.ignored.is_empty() {
            for p in &v.ignored {
                stats.add_path(Cow::Borrowed(p), 1, || method_label(v));
            }
        }
        match self.format {
            OutFormat::Json => json(&rec, out),
            OutFormat::Human if finding => self.human(&rec, out),
            OutFormat::Human => {}
        }
        finding
    }

    /// A transcript line that is not an entry.
    pub fn emit_bad(
        &self,
        line: u64,
        why: &str,
        text: &[u8],
        out: &mut Vec<u8>,
        stats: &mut Stats,
    ) {
        stats.bad_entries += 1;
        match self.format {
            OutFormat::Json => {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::json!({"line": line, "dir": null, "kind": "unreadable", "message": why})
                );
            }
            OutFormat::Human => {
                let head = self.paint("1;31", "error");
                let _ = writeln!(out, "{}:{line}: {head}: {why}", self.source);
                quote(out, line, text, None, self.color);
            }
        }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    fn human(&self, rec: &Record, out: &mut Vec<u8>) {
        let v = &rec.verdict;
        let at = match rec.pid {
            Some(pid) => format!("{}:{} [pid {pid}]", self.source, rec.line),
            None => format!("{}:{}", self.source, rec.line),
        };
        let what = describe(rec.dir, v);
        let err = self.paint("1;31", "error");
        let warn = self.paint("1;33", "warning");
        let drift = self.paint("1;35", "drift");
        if v.outcome == Outcome::Close {
            let _ = writeln!(
                out,
                "{at}: {err}: the line is not UTF-8: the server closes the connection"
            );
            quote(out, rec.line, rec.text, None, self.color);
        } else if v.kind == Kind::Unparsed && rec.dir == Dir::In {
            let _ = writeln!(
                out,
                "{at}: {err}: not a JSON-RPC message: the server drops it without a reply"
            );
            quote(out, rec.line, rec.text, None, self.color);
        }
        if let Some(e) = v.error() {
            let _ = writeln!(out, "{at}: {err}: {what}: {}", shorten(&e.message));
            let span = locate::for_message(rec.text, &e.message);
            quote(out, rec.line, rec.text, span, self.color);
            let reply = e.line();
            let _ = writeln!(out, "      = the server replies {}", shorten(&reply));
        }
        if let Some(msg) = &v.violation {
            let label = if rec.dir == Dir::Out { &drift } else { &err };
            let tail = if rec.dir == Dir::Out {
                "does not match the schema"
            } else {
                "does not match its type (the server only logs it)"
            };
            let _ = writeln!(out, "{at}: {label}: {what} {tail}: {}", shorten(msg));
            let span = locate::for_message(rec.text, msg);
            quote(out, rec.line, rec.text, span, self.color);
        }
        // A server's extra keys are counted only (see `is_finding`).
        for p in v.ignored.iter().filter(|_| rec.dir == Dir::In) {
            let _ = writeln!(out, "{at}: {warn}: {what}: `{p}` is ignored by the server");
            quote(
                out,
                rec.line,
                rec.text,
                locate::path(rec.text, p),
                self.color,
            );
        }
        // An absent key has no span of its own: point at the object that lacks it.
        for p in &v.missing {
            let _ = writeln!(
                out,
                "{at}: {warn}: {what}: `{p}` is always sent by the real server but missing"
            );
            let parent = p.rfind(['.', '[']).map_or("$", |i| &p[..i]);
            quote(
                out,
                rec.line,
                rec.text,
                locate::path(rec.text, parent),
                self.color,
            );
        }
    }
}

/// `request turn/start (id 3)`, `response to item/tool/call (id 9001)`, `server notification x`.
fn describe(dir: Dir, v: &Verdict) -> String {
    let id =
        v.id.as_ref()
            .map(|i| format!(" (id {i})"))
            .unwrap_or_default();
    let who = if dir == Dir::Out { "server " } else { "" };
    match v.kind {
        Kind::Request | Kind::Notification => format!(
            "{who}{} {}{id}",
            v.kind.as_str(),
            v.method.as_deref().unwrap_or("?")
        ),
        Kind::Response | Kind::Error => match &v.reply_to {
            Some(m) => format!("{who}{} to {m}{id}", v.kind.as_str()),
            None => format!("{who}{}{id}", v.kind.as_str()),
        },
        Kind::Unparsed => format!("{who}message"),
    }
}

fn method_label(v: &Verdict) -> String {
    v.method
        .as_deref()
        .map(str::to_string)
        .or_else(|| v.reply_to.as_ref().map(|m| format!("response to {m}")))
        .unwrap_or_default()
}

/// The `--format json` record: `line, dir, kind, id, method, [replyTo], error, [violation],
/// ignored, [missing], closes` (`missing` on server lines, `pid` in transcripts).
fn json(rec: &Record, out: &mut Vec<u8>) {
    // Pieces pushed by hand: `write!` through `fmt` was a third of validate's time, as a
    // record is written for every line.
    let v = &rec.verdict;
    out.extend_from_slice(b"{\"line\":");
    out.extend_from_slice(itoa::Buffer::new().format(rec.line).as_bytes());
    // Whole constant pieces (copied inline; a piece of varying length is a `memcpy` call).
    out.extend_from_slice(match rec.dir {
        Dir::In => b",\"dir\":\"in\",",
        Dir::Out => b",\"dir\":\"out\",",
    });
    if let Some(pid) = rec.pid {
        out.extend_from_slice(b"\"pid\":");
        out.extend_from_slice(pid.as_bytes());
        out.push(b',');
    }
    out.extend_from_slice(match v.kind {
        Kind::Request => b"\"kind\":\"request\",\"id\":",
        Kind::Notification => b"\"kind\":\"notification\",\"id\":",
        Kind::Response => b"\"kind\":\"response\",\"id\":",
        Kind::Error => b"\"kind\":\"error\",\"id\":",
        Kind::Unparsed => b"\"kind\":\"unparsed\",\"id\":",
    });
    match &v.id {
        None => out.extend_from_slice(b"null"),
        Some(Id::Int(n)) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        Some(Id::Json(serde_json::Value::String(s))) => json_str(out, s),
        // The literal as read (`arbitrary_precision`), as serde_json writes it.
        Some(Id::Json(serde_json::Value::Number(n))) => {
            out.extend_from_slice(n.as_str().as_bytes())
        }
        Some(Id::Json(other)) => write_json(out, other),
    }
    out.extend_from_slice(b",\"method\":");
    match &v.method {
        // One of the protocol's own method names: plain ASCII (a test holds every version's
        // table to that), nothing to check or escape.
        Some(Cow::Borrowed(m)) => {
            out.push(b'"');
            out.extend_from_slice(m.as_bytes());
            out.push(b'"');
        }
        m => json_opt_str(out, m.as_deref()),
    }
    if matches!(v.kind, Kind::Response | Kind::Error) {
        out.extend_from_slice(b",\"replyTo\":");
        json_opt_str(out, v.reply_to.as_deref());
    }
    // The clean client line (most of them), in one piece.
    if v.error().is_none()
        && v.violation.is_none()
        && v.ignored.is_empty()
        && rec.dir == Dir::In
        && v.outcome != Outcome::Close
    {
        out.extend_from_slice(b",\"error\":null,\"ignored\":[],\"closes\":false}\n");
        return;
    }
    out.extend_from_slice(b",\"error\":");
    match v.error() {
        Some(e) => {
            out.extend_from_slice(b"{\"code\":");
            out.extend_from_slice(itoa::Buffer::new().format(e.code).as_bytes());
            out.extend_from_slice(b",\"message\":");
            json_str(out, &e.message);
            out.push(b'}');
        }
        None => out.extend_from_slice(b"null"),
    }
    if let Some(msg) = &v.violation {
        out.extend_from_slice(b",\"violation\":");
        json_str(out, msg);
    }
    out.extend_from_slice(b",\"ignored\":");
    json_strs(out, &v.ignored);
    if rec.dir == Dir::Out {
        out.extend_from_slice(b",\"missing\":");
        json_strs(out, &v.missing);
    }
    out.extend_from_slice(if v.outcome == Outcome::Close {
        b",\"closes\":true}\n"
    } else {
        b",\"closes\":false}\n"
    });
}

/// A JSON string, as serde_json writes it: plain ASCII (nothing to escape) is copied as is.
fn json_str(out: &mut Vec<u8>, s: &str) {
    if crate::fast::plain_ascii(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, s);
    }
}

fn json_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn json_strs(out: &mut Vec<u8>, list: &[String]) {
    out.push(b'[');
    for (n, s) in list.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        json_str(out, s);
    }
    out.push(b']');
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Widest quote of a line; longer lines are shown as a window around the offending span.
const WIDTH: usize = 110;

/// Quotes `text` under a gutter, with carets under `span` (byte range) when known.
fn quote(out: &mut Vec<u8>, line: u64, text: &[u8], span: Option<(usize, usize)>, color: bool) {
    let text = String::from_utf8_lossy(text);
    // Byte offsets into `text` stay valid: lossy conversion only changes invalid UTF-8, and
    // spans are only computed on valid JSON text.
    let chars: Vec<(usize, char)> = text
        .char_indices()
        .map(|(i, c)| (i, if c.is_control() { '·' } else { c }))
        .collect();
    let col = |byte: usize| chars.partition_point(|(i, _)| *i < byte);
    let (s, e) = span
        .map(|(s, e)| (col(s), col(e).max(col(s) + 1)))
        .unwrap_or((0, 0));
    let from = if chars.len() <= WIDTH || s < WIDTH / 3 {
        0
    } else {
        (s - WIDTH / 3).min(chars.len().saturating_sub(WIDTH))
    };
    let to = (from + WIDTH).min(chars.len());
    let mut shown: String = chars[from..to].iter().map(|(_, c)| *c).collect();
    let lead = if from > 0 { "…" } else { "" };
    if to < chars.len() {
        shown.push('…');
    }
    let gutter = line.to_string();
    let pad = " ".repeat(gutter.len());
    let _ = writeln!(out, "  {gutter} | {lead}{shown}");
    if span.is_some() {
        let start = s.saturating_sub(from) + lead.chars().count();
        let len = e.min(to).saturating_sub(s.max(from)).max(1);
        let carets = "^".repeat(len);
        let carets = if color {
            format!("\x1b[1;31m{carets}\x1b[0m")
        } else {
            carets
        };
        let _ = writeln!(out, "  {pad} | {}{carets}", " ".repeat(start));
    }
}

/// The summary table.
pub fn summary(stats: &Stats, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\n{:<4} {:<13} {:>10} {:>9} {:>8} {:>10} {:>8} {:>8} {:>7} {:>7}",
        "dir",
        "kind",
        "lines",
        "findings",
        "errors",
        "violations",
        "ignored",
        "missing",
        "silent",
        "closes"
    )?;
    let mut total = Row::default();
    for ((dir, kind), r) in stats.rows.iter() {
        writeln!(
            out,
            "{:<4} {:<13} {:>10} {:>9} {:>8} {:>10} {:>8} {:>8} {:>7} {:>7}",
            dir.as_str(),
            kind,
            r.lines,
            r.findings,
            r.errors,
            r.violations,
            r.ignored,
            r.missing,
            r.silent,
            r.closes
        )?;
        total.lines += r.lines;
        total.findings += r.findings;
        total.errors += r.errors;
        total.violations += r.violations;
        total.ignored += r.ignored;
        total.missing += r.missing;
        total.allowed += r.allowed;
        total.silent += r.silent;
        total.closes += r.closes;
    }
    writeln!(
        out,
        "{:<18} {:>10} {:>9} {:>8} {:>10} {:>8} {:>8} {:>7} {:>7}",
        "total",
        total.lines,
        total.findings,
        total.errors,
        total.violations,
        total.ignored,
        total.missing,
        total.silent,
        total.closes
    )?;
    if total.allowed > 0 {
        writeln!(
            out,
            "{} ignored fields allowed by --allow-ignored",
            total.allowed
        )?;
    }
    if stats.bad_entries > 0 {
        writeln!(
            out,
            "{} transcript lines were not entries",
            stats.bad_entries
        )?;
    }
    if stats.after_close > 0 {
        writeln!(
            out,
            "{} lines after a connection close were not checked",
            stats.after_close
        )?;
    }
    if !stats.paths.is_empty() {
        let mut paths: Vec<_> = stats.paths.iter().collect();
        paths.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
        writeln!(out, "\nmost frequent ignored fields:")?;
        for (p, (n, m)) in paths.iter().take(10) {
            writeln!(out, "  {n:>9}  {p}  ({m})")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ErrorReply;
    use serde_json::{json, Value};

    /// A borrowed method name is written unchecked: every version's table is plain ASCII.
    #[test]
    fn protocol_method_names_need_no_escaping() {
        for p in crate::versions() {
            for m in p.client_methods {
                assert!(crate::fast::plain_ascii(m.as_bytes()), "{m:?}");
            }
        }
    }

    /// The hand-pushed record is what serde_json writes for the same fields, escapes and all.
    #[test]
    fn json_record_is_serde_jsons() {
        let awkward = "tab\there \"quoted\" back\\slash \u{1} é";
        let ids = [
            None,
            Some(json!(7)),
            Some(Value::Number(serde_json::Number::from_string_unchecked(
                "-0".into(),
            ))),
            Some(json!("plain")),
            Some(json!(awkward)),
        ];
        let cases = [false, true]
            .into_iter()
            .flat_map(|clean| ids.iter().cloned().enumerate().map(move |c| (clean, c)));
        for (clean, (n, id)) in cases {
            for dir in [Dir::In, Dir::Out] {
                let mut v = crate::Session::new().feed(b"{}");
                v.kind = if n % 2 == 0 {
                    Kind::Response
                } else {
                    Kind::Request
                };
                v.id = id.clone().map(Id::from_value);
                v.method = (n > 1).then(|| awkward.to_string().into());
                v.reply_to = (n == 3).then(|| "item/tool/call".to_string());
                v.outcome = if n == 4 {
                    Outcome::Close
                } else {
                    Outcome::Reply(Box::new(ErrorReply {
                        code: -32600,
                        message: awkward.into(),
                        id: Value::Null,
                    }))
                };
                v.violation = (n == 2).then(|| awkward.to_string());
                v.ignored = vec!["$.a".into(), format!("$[{:?}]", awkward)];
                v.missing = vec!["$.b".into()];
                if clean {
                    // As most lines are: no error, no violation, nothing ignored or missing.
                    v.outcome = Outcome::Accepted;
                    v.violation = None;
                    v.ignored.clear();
                    v.missing.clear();
                }
                let pid = (n == 1).then_some("42");
                let rec = Record {
                    line: 1234567890123,
                    dir,
                    pid,
                    text: b"",
                    verdict: v.clone(),
                };
                let mut out = Vec::new();
                json(&rec, &mut out);
                let mut want = serde_json::Map::new();
                want.insert("line".into(), json!(1234567890123u64));
                want.insert("dir".into(), json!(dir.as_str()));
                if let Some(pid) = pid {
                    want.insert("pid".into(), serde_json::from_str(pid).unwrap());
                }
                want.insert("kind".into(), json!(v.kind.as_str()));
                want.insert("id".into(), v.id.as_ref().map_or(Value::Null, Id::to_value));
                want.insert("method".into(), json!(v.method));
                if matches!(v.kind, Kind::Response | Kind::Error) {
                    want.insert("replyTo".into(), json!(v.reply_to));
                }
                want.insert(
                    "error".into(),
                    v.error().map_or(Value::Null, |e| e.error_object()),
                );
                if let Some(m) = &v.violation {
                    want.insert("violation".into(), json!(m));
                }
                want.insert("ignored".into(), json!(v.ignored));
                if dir == Dir::Out {
                    want.insert("missing".into(), json!(v.missing));
                }
                want.insert("closes".into(), json!(v.outcome == Outcome::Close));
                let want = format!("{}\n", Value::Object(want));
                assert_eq!(String::from_utf8(out).unwrap(), want);
            }
        }
    }
}
