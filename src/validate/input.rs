//! Reading captures: line batches off a reader (memory bounded by the batch size, not the file),
//! format detection, and transcript entries.
//!
//! Transcript entries (one JSON object a line, as the seed fake, `codex-wire fake` and
//! `codex-wire proxy` write them): `{"pid":…,"t":…,"dir":"in"|"out","msg":{…}}`; a line that
//! was not JSON is `"raw":"…"` (or `"hex":"…"` when it was not even UTF-8); the test corpus
//! form `"line":"…"` is read too. Entries with `"event"` (spawn, exit, …) carry no message.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{self, Read};

/// A run of whole lines, numbered from `first` (1-based).
pub struct Batch {
    pub seq: u64,
    pub first: u64,
    pub buf: Vec<u8>,
    /// End offset (exclusive, without the `\n`) of each line in `buf`.
    pub ends: Vec<usize>,
}

impl Batch {
    pub fn lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let mut start = 0;
        self.ends.iter().enumerate().map(move |(i, &end)| {
            let line = &self.buf[start..end];
            start = end + 1;
            (self.first + i as u64, line)
        })
    }
}

/// Splits a reader into batches of about `target` bytes of whole lines. A line longer than
/// `target` makes a batch of its own: the server also needs the whole line.
pub struct Batcher<R> {
    reader: R,
    target: usize,
    carry: Vec<u8>,
    next_line: u64,
    seq: u64,
    eof: bool,
    /// Bytes read so far (for the progress bar).
    pub read: u64,
}

impl<R: Read> Batcher<R> {
    pub fn new(reader: R, target: usize) -> Self {
        Batcher {
            reader,
            target: target.max(1),
            carry: Vec::new(),
            next_line: 1,
            seq: 0,
            eof: false,
            read: 0,
        }
    }

    /// The next batch, `None` at the end of input.
    pub fn next_batch(&mut self) -> io::Result<Option<Batch>> {
        let mut buf = std::mem::take(&mut self.carry);
        let mut scanned = 0;
        let mut ends = Vec::new();
        loop {
            while let Some(p) = memchr(b'\n', &buf[scanned..]) {
                ends.push(scanned + p);
                scanned += p + 1;
            }
            if (scanned >= self.target && !ends.is_empty()) || self.eof {
                break;
            }
            let len = buf.len();
            let want = self.target.max(64 * 1024);
            buf.resize(len + want, 0);
            let n = loop {
                match self.reader.read(&mut buf[len..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            };
            buf.truncate(len + n);
            self.read += n as u64;
            if n == 0 {
                self.eof = true;
                // A last line without its newline is still a line.
                if scanned < buf.len() {
                    buf.push(b'\n');
                    ends.push(buf.len() - 1);
                    scanned = buf.len();
                }
            }
        }
        if ends.is_empty() {
            return Ok(None);
        }
        self.carry = buf[scanned..].to_vec();
        buf.truncate(scanned);
        let batch = Batch {
            seq: self.seq,
            first: self.next_line,
            buf,
            ends,
        };
        self.seq += 1;
        self.next_line += batch.ends.len() as u64;
        Ok(Some(batch))
    }
}

fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == b)
}

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    /// Client → server.
    In,
    /// Server → client.
    Out,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::In => "in",
            Dir::Out => "out",
        }
    }
}

/// How an input is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One client→server line per line.
    Raw,
    /// Transcript entries.
    Transcript,
}

/// Decides the format from the first non-blank line: a transcript entry is an object with a
/// `dir` of `in`/`out` or an `event`; JSON-RPC messages have neither key.
pub fn detect(first_line: &[u8]) -> Format {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        dir: Option<&'a str>,
        #[serde(borrow, default)]
        event: Option<&'a RawValue>,
    }
    match serde_json::from_slice::<Probe>(first_line) {
        Ok(Probe {
            dir: Some("in" | "out"),
            ..
        })
        | Ok(Probe { event: Some(_), .. }) => Format::Transcript,
        _ => Format::Raw,
    }
}

/// One transcript line, as read.
pub enum Entry<'a> {
    /// A message: its bytes as they were on the wire (or as the writer re-serialized them).
    Message {
        dir: Dir,
        pid: Option<Box<str>>,
        bytes: std::borrow::Cow<'a, [u8]>,
    },
    /// A process event: `spawn` starts a fresh session for its pid.
    Event { pid: Option<Box<str>>, spawn: bool },
    /// Not a transcript entry: why.
    Bad(String),
}

/// Parses one transcript line. `msg` is borrowed verbatim: the engine sees the message's own
/// bytes (key order, number text, escapes), not a re-serialization.
pub fn entry(line: &[u8]) -> Entry<'_> {
    #[derive(Deserialize)]
    struct E<'a> {
        #[serde(borrow, default)]
        dir: Option<&'a str>,
        #[serde(borrow, default)]
        msg: Option<&'a RawValue>,
        #[serde(default)]
        raw: Option<String>,
        #[serde(default)]
        line: Option<String>,
        #[serde(default)]
        hex: Option<String>,
        #[serde(borrow, default)]
        pid: Option<&'a RawValue>,
        #[serde(borrow, default)]
        event: Option<&'a RawValue>,
    }
    let e: E = match serde_json::from_slice(line) {
        Ok(e) => e,
        Err(e) => return Entry::Bad(format!("not a transcript entry: {e}")),
    };
    let pid = e.pid.map(|p| Box::from(p.get()));
    if let Some(ev) = e.event {
        return Entry::Event {
            pid,
            spawn: ev.get() == "\"spawn\"",
        };
    }
    let dir = match e.dir {
        Some("in") => Dir::In,
        Some("out") => Dir::Out,
        Some(d) => return Entry::Bad(format!("unknown dir `{d}` (expected `in` or `out`)")),
        None => return Entry::Bad("entry has neither `dir` nor `event`".into()),
    };
    let bytes = if let Some(m) = e.msg {
        std::borrow::Cow::Borrowed(m.get().as_bytes())
    } else if let Some(r) = e.raw.or(e.line) {
        std::borrow::Cow::Owned(r.into_bytes())
    } else if let Some(h) = e.hex {
        match from_hex(&h) {
            Some(b) => std::borrow::Cow::Owned(b),
            None => return Entry::Bad("`hex` is not an even run of hex digits".into()),
        }
    } else {
        return Entry::Bad("message entry has no `msg`, `raw`, `line` or `hex`".into());
    };
    Entry::Message { dir, pid, bytes }
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batches(input: &str, target: usize) -> Vec<Vec<(u64, String)>> {
        let mut b = Batcher::new(input.as_bytes(), target);
        let mut out = Vec::new();
        while let Some(batch) = b.next_batch().unwrap() {
            out.push(
                batch
                    .lines()
                    .map(|(n, l)| (n, String::from_utf8(l.to_vec()).unwrap()))
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn batches_keep_every_line_and_its_number() {
        let all: Vec<_> = batches("a\nbb\n\nccc\nlast", 3).concat();
        let want = ["a", "bb", "", "ccc", "last"];
        assert_eq!(all.len(), want.len());
        for (i, (n, l)) in all.iter().enumerate() {
            assert_eq!(*n, i as u64 + 1);
            assert_eq!(l, want[i]);
        }
        assert!(batches("", 10).is_empty());
    }

    #[test]
    fn detects_formats() {
        assert_eq!(detect(br#"{"id":1,"method":"x"}"#), Format::Raw);
        assert_eq!(
            detect(br#"{"pid":1,"dir":"in","msg":{}}"#),
            Format::Transcript
        );
        assert_eq!(
            detect(br#"{"pid":1,"t":0.5,"event":"spawn"}"#),
            Format::Transcript
        );
        assert_eq!(detect(b"\xff garbage"), Format::Raw);
    }

    #[test]
    fn entries_keep_message_bytes() {
        let Entry::Message { dir, pid, bytes } =
            entry(br#"{"pid":7,"dir":"out","msg":{"b":1.50,"a":"\u00e9"}}"#)
        else {
            panic!()
        };
        assert_eq!(dir, Dir::Out);
        assert_eq!(pid.as_deref(), Some("7"));
        assert_eq!(&*bytes, br#"{"b":1.50,"a":"\u00e9"}"#);
        let Entry::Message { bytes, .. } = entry(br#"{"dir":"in","hex":"ff00"}"#) else {
            panic!()
        };
        assert_eq!(&*bytes, b"\xff\x00");
        assert!(matches!(entry(b"nope"), Entry::Bad(_)));
        assert!(matches!(entry(br#"{"dir":"up","msg":1}"#), Entry::Bad(_)));
    }
}
