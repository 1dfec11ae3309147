//! A line's verdict on each release, read back from validate's JSON records as they are
//! written: each release's counts, and the lines with a finding on some release.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// One release's counts over every input: `lines` and `findings` are validate's summary (lines
/// with a finding, transcript lines that are not entries included); `ignored` counts the paths
/// client lines carry that the release drops, `missing` the always-sent keys server lines lack.
#[derive(Clone, Debug, Default)]
pub(super) struct Counts {
    pub(super) lines: u64,
    pub(super) findings: u64,
    pub(super) errors: u64,
    pub(super) violations: u64,
    pub(super) ignored: u64,
    pub(super) missing: u64,
}

/// A line's verdict on one release, as far as findings go (a clean line has none).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Judged {
    pub(super) error: Option<(i64, String)>,
    pub(super) violation: Option<String>,
    /// Client lines only: a server's extra keys are not findings.
    pub(super) ignored: Vec<String>,
    pub(super) missing: Vec<String>,
    pub(super) closes: bool,
    /// Not a JSON-RPC message (the server drops it), or not a transcript entry (the reason).
    pub(super) unparsed: bool,
    pub(super) unreadable: Option<String>,
}

/// What a line is, as its records say.
#[derive(Clone, Debug, Default)]
pub(super) struct Head {
    pub(super) dir: Option<String>,
    pub(super) pid: Option<String>,
    pub(super) kind: String,
    pub(super) id: Option<Value>,
    pub(super) method: Option<String>,
    pub(super) reply_to: Option<String>,
}

/// A line with a finding on some release: its verdict per release (`None`: clean).
pub(super) struct Seen {
    pub(super) head: Head,
    pub(super) verdicts: Vec<Option<Judged>>,
}

/// One JSON record of `validate --format json`.
#[derive(Deserialize)]
struct Rec {
    line: u64,
    #[serde(default)]
    dir: Option<String>,
    #[serde(default)]
    pid: Option<Box<serde_json::value::RawValue>>,
    kind: String,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, rename = "replyTo")]
    reply_to: Option<String>,
    #[serde(default)]
    error: Option<RecError>,
    #[serde(default)]
    violation: Option<String>,
    #[serde(default)]
    ignored: Vec<String>,
    #[serde(default)]
    missing: Vec<String>,
    #[serde(default)]
    closes: bool,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct RecError {
    code: i64,
    message: String,
}

/// Reads validate's records as they are written (memory: the lines with a finding only).
pub(super) struct Sink<'a> {
    pub(super) buf: Vec<u8>,
    pub(super) release: usize,
    pub(super) releases: usize,
    pub(super) seen: &'a mut BTreeMap<u64, Seen>,
    pub(super) counts: &'a mut Counts,
}

impl Sink<'_> {
    fn record(&mut self, text: &[u8]) -> io::Result<()> {
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let r: Rec = serde_json::from_slice(text)
            .map_err(|e| io::Error::other(format!("unreadable validate record: {e}")))?;
        let client = r.dir.as_deref() == Some("in");
        // `report::is_finding`, on the record it wrote.
        let judged = Judged {
            error: r.error.map(|e| (e.code, e.message)),
            violation: r.violation,
            ignored: if client { r.ignored } else { Vec::new() },
            missing: r.missing,
            closes: r.closes,
            unparsed: r.kind == "unparsed",
            unreadable: (r.kind == "unreadable").then(|| r.message.unwrap_or_default()),
        };
        let c = &mut *self.counts;
        c.errors += judged.error.is_some() as u64;
        c.violations += judged.violation.is_some() as u64;
        c.ignored += judged.ignored.len() as u64;
        c.missing += judged.missing.len() as u64;
        if judged == Judged::default() {
            return Ok(());
        }
        let n = self.releases;
        let seen = self.seen.entry(r.line).or_insert_with(|| Seen {
            head: Head {
                dir: r.dir.clone(),
                pid: r.pid.as_ref().map(|p| p.get().to_string()),
                kind: r.kind.clone(),
                id: r.id.clone().filter(|v| !v.is_null()),
                method: r.method.clone(),
                reply_to: r.reply_to.clone(),
            },
            verdicts: vec![None; n],
        });
        seen.verdicts[self.release] = Some(judged);
        Ok(())
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if let Some(end) = memchr::memrchr(b'\n', &self.buf) {
            let done: Vec<u8> = self.buf.drain(..=end).collect();
            for rec in done.split(|c| *c == b'\n') {
                self.record(rec)?;
            }
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink<'_> {
    /// The last record, when it had no newline.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        let rest = std::mem::take(&mut self.buf);
        self.record(&rest)
    }
}
