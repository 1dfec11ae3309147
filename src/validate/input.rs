//! Reading captures: line batches off a reader (memory bounded by the batch size, not the file),
//! format detection, and transcript entries.
//!
//! Transcript entries (one JSON object a line, as the seed fake, `codex-wire fake` and
//! `codex-wire proxy` write them): `{"pid":…,"t":…,"dir":"in"|"out","msg":{…}}`; a line that
//! was not JSON is `"raw":"…"` (or `"hex":"…"` when it was not even UTF-8); the test corpus
//! form `"line":"…"` is read too. Entries with `"event"` (spawn, exit, …) carry no message.

use memchr::memchr;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{self, Read};
use std::sync::Arc;

/// A batch's bytes: read into memory, or a range of a mapped window of the file.
pub enum Buf {
    Owned(Vec<u8>),
    Mapped(Arc<Window>, std::ops::Range<usize>),
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buf::Owned(v) => v,
            Buf::Mapped(w, r) => &w.bytes()[r.clone()],
        }
    }
}

/// A read-only mapping of part of a file. Reading a large capture through `read` copies every
/// byte out of the page cache, which profiles showed as a third of `validate`'s time; windows
/// are unmapped once their batches are checked, so the resident set stays bounded by the
/// windows in flight, not the file. (Like every mmap reader, a file truncated by another
/// process while it is read can fault.)
pub struct Window {
    ptr: *mut libc::c_void,
    len: usize,
}

// The mapping is read-only and lives until the last batch using it is dropped.
unsafe impl Send for Window {}
unsafe impl Sync for Window {}

impl Window {
    fn map(file: &std::fs::File, offset: u64, len: usize) -> io::Result<Window> {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh private read-only mapping of `len` bytes of an open file at a
        // page-aligned offset; it is only read through `bytes` and unmapped in `drop`.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Window { ptr, len })
    }

    /// Maps the pages of `range` in one call: faulted in sixteen pages at a time (2,200 faults
    /// on 300,000 lines, 950 with this) they cost a one-core run ~2 % more. Best effort: an
    /// older kernel refuses, and the pages fault in as they are read.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn populate(&self, range: std::ops::Range<usize>) {
        let start = range.start / 4096 * 4096;
        if start < range.end && range.end <= self.len {
            // SAFETY: a page-aligned range inside the mapping; the call only reads it.
            unsafe {
                libc::madvise(
                    self.ptr.cast::<u8>().add(start).cast(),
                    range.end - start,
                    libc::MADV_POPULATE_READ,
                );
            }
        }
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn populate(&self, _: std::ops::Range<usize>) {}

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`, once.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

/// Bytes mapped at a time (a line longer than this gets a window of its own).
const WINDOW: usize = 4 << 20;

/// A regular file read through mapped windows.
struct MapSource {
    file: std::fs::File,
    len: u64,
    /// Offset of the first byte not yet in a batch.
    pos: u64,
    window: Option<(Arc<Window>, u64)>,
}

/// A run of whole lines, numbered from `first` (1-based).
pub struct Batch {
    pub seq: u64,
    pub first: u64,
    pub buf: Buf,
    /// End offset (exclusive, without the `\n`) of each line in `buf`.
    pub ends: Vec<usize>,
}

impl Batch {
    /// Finds the line ends of a batch the batcher cut without reading it (see
    /// [`Batcher::lazy`]): the first pass over the bytes then happens on a worker.
    pub fn index(&mut self) {
        if let Buf::Mapped(w, r) = &self.buf {
            w.populate(r.clone());
        }
        let buf: &[u8] = &self.buf;
        // Room for lines of a few hundred bytes (typical captures) without regrowing.
        let mut ends = Vec::with_capacity(buf.len() / 256 + 16);
        newlines(buf, &mut ends);
        if ends.last().map_or(0, |e| e + 1) < buf.len() {
            ends.push(buf.len());
        }
        self.ends = ends;
    }

    pub fn lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let mut start = 0;
        self.ends.iter().enumerate().map(move |(i, &end)| {
            let line = &self.buf[start..end];
            start = end + 1;
            (self.first + i as u64, line)
        })
    }
}

/// Appends the offset of every `\n` in `buf` to `ends`, in order. Sixty-four bytes at a time
/// into a bit mask (SSE2 is part of every x86_64): `memchr_iter` restarted its search for each
/// line, some 260 instructions a line of ~340 bytes, a twentieth of `validate`'s.
fn newlines(buf: &[u8], ends: &mut Vec<usize>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let blocks = buf.chunks_exact(64);
        let tail = blocks.remainder();
        let mut base = 0;
        for block in blocks {
            // SAFETY: SSE2 is baseline on x86_64; each load reads 16 of the block's 64 bytes
            // (a prefetch reads nothing and never faults).
            let mut mask = unsafe {
                // The first read of these bytes, from memory: ask for the next page early (the
                // hardware prefetcher stops at each 4 KB page; a one-core run ~5 % faster).
                _mm_prefetch::<_MM_HINT_T0>(block.as_ptr().wrapping_add(4096).cast());
                let nl = _mm_set1_epi8(b'\n' as i8);
                let at = |i: usize| {
                    let x = _mm_loadu_si128(block.as_ptr().add(16 * i) as *const __m128i);
                    _mm_cmpeq_epi8(x, nl)
                };
                let (a, b, c, d) = (at(0), at(1), at(2), at(3));
                // Most blocks of a capture hold no line end: one test for all four.
                let any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
                if _mm_movemask_epi8(any) == 0 {
                    0
                } else {
                    let m = |x| _mm_movemask_epi8(x) as u16 as u64;
                    m(a) | m(b) << 16 | m(c) << 32 | m(d) << 48
                }
            };
            while mask != 0 {
                ends.push(base + mask.trailing_zeros() as usize);
                mask &= mask - 1;
            }
            base += 64;
        }
        ends.extend(memchr::memchr_iter(b'\n', tail).map(|p| base + p));
    }
    #[cfg(not(target_arch = "x86_64"))]
    ends.extend(memchr::memchr_iter(b'\n', buf));
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
    map: Option<MapSource>,
    /// Mapped input is cut near `target` at a newline without reading the rest of the
    /// batch: `ends` stays empty and `first` unknown until a worker calls [`Batch::index`].
    /// Memory reads dominate on large captures, so the pass that touches every byte first
    /// must be on the workers for them to scale.
    pub lazy: bool,
}

impl Batcher<std::fs::File> {
    /// Batches of a regular file through mapped windows; other files (pipes, devices) are
    /// read as streams.
    pub fn for_file(file: std::fs::File, target: usize) -> Self {
        let regular = file
            .metadata()
            .ok()
            .filter(|m| m.is_file() && m.len() > 0)
            .map(|m| m.len());
        match regular {
            Some(len) => {
                let dup = file.try_clone();
                let mut b = Batcher::new(file, target);
                if let Ok(f) = dup {
                    b.map = Some(MapSource {
                        file: f,
                        len,
                        pos: 0,
                        window: None,
                    });
                }
                b
            }
            None => Batcher::new(file, target),
        }
    }
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
            map: None,
            lazy: false,
        }
    }

    /// Whether the input is a mapped file (all there, not arriving as a stream does).
    pub fn mapped(&self) -> bool {
        self.map.is_some()
    }

    /// Whether every batch has been cut (known without reading for mapped files; a stream
    /// knows only once it has read its end).
    pub fn exhausted(&self) -> bool {
        match &self.map {
            Some(m) => m.pos >= m.len,
            None => self.eof && self.carry.is_empty(),
        }
    }

    /// The next batch of a mapped file.
    fn next_mapped(&mut self) -> io::Result<Option<Batch>> {
        let target = self.target;
        let Some(m) = self.map.as_mut() else {
            return Ok(None);
        };
        let mut want = WINDOW;
        loop {
            if m.pos >= m.len {
                return Ok(None);
            }
            // The current window serves while it holds a couple of batches past `pos` (or
            // the rest of the file); otherwise a new one starts at `pos`'s page.
            let fits = m.window.as_ref().is_some_and(|(w, off)| {
                let end = off + w.len as u64;
                end == m.len || end >= m.pos + 2 * target as u64
            });
            if !fits || want > WINDOW {
                let off = m.pos / 4096 * 4096;
                let len = (want as u64).min(m.len - off) as usize;
                m.window = Some((Arc::new(Window::map(&m.file, off, len)?), off));
            }
            let Some((w, off)) = m.window.as_ref().map(|(w, o)| (w.clone(), *o)) else {
                continue;
            };
            let data = w.bytes();
            let start = (m.pos - off) as usize;
            let at_eof = off + data.len() as u64 == m.len;
            // Cut near `target` at a newline, without reading the batch (the lines are
            // indexed later, on a worker when lazy).
            let nominal = start + target;
            let cut = if nominal >= data.len() && at_eof {
                Some(data.len())
            } else if let Some(p) = data.get(nominal..).and_then(|d| memchr(b'\n', d)) {
                Some(nominal + p + 1)
            } else if at_eof {
                Some(data.len())
            } else {
                memchr::memrchr(b'\n', &data[start..]).map(|p| start + p + 1)
            };
            let end = cut.filter(|e| *e > start).unwrap_or(start);
            if end == start {
                // A line longer than the window: map a bigger one from its start.
                want = want.saturating_mul(2);
                continue;
            }
            m.pos = off + end as u64;
            self.read = m.pos;
            let mut batch = Batch {
                seq: self.seq,
                first: self.next_line,
                buf: Buf::Mapped(w, start..end),
                ends: Vec::new(),
            };
            if !self.lazy {
                batch.index();
            }
            self.seq += 1;
            self.next_line += batch.ends.len() as u64;
            return Ok(Some(batch));
        }
    }

    /// The next batch, `None` at the end of input.
    pub fn next_batch(&mut self) -> io::Result<Option<Batch>> {
        if self.map.is_some() {
            return self.next_mapped();
        }
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
            buf: Buf::Owned(buf),
            ends,
        };
        self.seq += 1;
        self.next_line += batch.ends.len() as u64;
        Ok(Some(batch))
    }
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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

pub fn from_hex(s: &str) -> Option<Vec<u8>> {
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

    /// Mapped windows give the same lines as reading, across window and batch edges.
    #[test]
    fn mapped_batches_match_read_batches() {
        let dir = std::env::temp_dir().join(format!("cw-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for i in 0..60_000 {
            text.push_str(&"x".repeat(i % 97));
            text.push('\n');
        }
        // One line longer than a window, and no final newline.
        text.push_str(&"y".repeat(WINDOW + 5000));
        text.push_str("\nlast");
        let path = dir.join("t.jsonl");
        std::fs::write(&path, &text).unwrap();
        for target in [1, 1000, 256 * 1024] {
            let want = batches(&text, target).concat();
            let mut b = Batcher::for_file(std::fs::File::open(&path).unwrap(), target);
            assert!(b.map.is_some());
            let mut got = Vec::new();
            while let Some(batch) = b.next_batch().unwrap() {
                got.extend(
                    batch
                        .lines()
                        .map(|(n, l)| (n, String::from_utf8(l.to_vec()).unwrap())),
                );
            }
            assert_eq!(got.len(), want.len(), "target {target}");
            assert!(got == want, "target {target}");
            // Lazy cuts, indexed afterwards and numbered in order, give the same lines.
            let mut b = Batcher::for_file(std::fs::File::open(&path).unwrap(), target);
            b.lazy = true;
            let mut got = Vec::new();
            let mut next = 1;
            while let Some(mut batch) = b.next_batch().unwrap() {
                assert!(batch.ends.is_empty());
                batch.index();
                batch.first = next;
                next += batch.ends.len() as u64;
                got.extend(
                    batch
                        .lines()
                        .map(|(n, l)| (n, String::from_utf8(l.to_vec()).unwrap())),
                );
            }
            assert!(got == want, "lazy, target {target}");
        }
        std::fs::remove_dir_all(&dir).ok();
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
