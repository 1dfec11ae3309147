//! `codex-wire validate`: what the real server makes of captured traffic, message by message.
//!
//! Inputs are plain client→server JSONL or transcripts (both directions, several sessions kept
//! apart by `pid`). Input is read in batches of whole lines, so memory stays flat in the file
//! size. Plain client input is checked on all cores: a client session's verdicts depend on
//! the connection state only through the first accepted `initialize` (server requests, the
//! other state, only appear in transcripts), so each batch runs in a fresh
//! [`Session`] primed with that line. The first batch, where a capture initializes, is checked
//! before the others start; a later batch that guessed the state wrong (it started before a
//! late `initialize` was known) is checked again in order. Output stays in input order.

pub mod glob;
pub mod input;
pub mod locate;
pub mod report;
pub mod traffic;

use crate::{Outcome, Session};
use input::{Batch, Batcher, Dir, Entry, Format};
use report::{OutFormat, Record, Stats, Style};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Check captured traffic: what the real server makes of each client line, and whether
/// each server line is what the schema says.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit: 0 clean, 1 findings (an error reply, a violation, an ignored field \
or a missing always-sent field), 2 usage or I/O error."
)]
pub struct Cli {
    /// Output (default: human on a terminal, json otherwise)
    #[arg(long, value_enum)]
    pub format: Option<OutFormat>,
    /// Input format (default: detected per file)
    #[arg(long, value_enum)]
    pub input: Option<Format>,
    /// Ignored field paths the team sends knowingly (repeatable), e.g.
    /// 'params.input[*].priority' or '**.jsonrpc'
    #[arg(long = "allow-ignored", value_name = "GLOB")]
    pub allow_ignored: Vec<String>,
    /// Worker threads (default: the number of cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Judge as this codex version (default: the version in the server's `userAgent` when the
    /// input has one, else the newest this build speaks)
    #[arg(long, value_name = "X.Y.Z", value_parser = crate::parse_codex_version)]
    pub codex_version: Option<&'static crate::Protocol>,
    /// Capture files (`-` or none: standard input)
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
}

/// A line on stderr. A closed stderr is no reason to stop (`eprintln!` would panic): the
/// exit code still tells.
fn note(what: std::fmt::Arguments) {
    let _ = writeln!(io::stderr(), "codex-wire validate: {what}");
}

/// Bytes of whole lines per batch: large enough to amortize hand-offs between threads,
/// small enough that memory stays a few MB whatever the input size.
const BATCH_BYTES: usize = 256 * 1024;

/// Inputs bigger than this get a progress bar (on a terminal).
const PROGRESS_BYTES: u64 = 4 * 1024 * 1024;

/// How to run a validation.
#[derive(Clone)]
pub struct Config {
    pub format: OutFormat,
    pub color: bool,
    pub allow: Vec<glob::Glob>,
    pub jobs: usize,
    /// `None`: detect per input.
    pub input: Option<Format>,
    pub progress: bool,
    /// `None`: detect per input (see [`detect_version`]).
    pub protocol: Option<&'static crate::Protocol>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            format: OutFormat::Json,
            color: false,
            allow: Vec::new(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            input: None,
            progress: false,
            protocol: None,
        }
    }
}

/// Entry point of `codex-wire validate`.
pub fn main(cli: Cli) -> ExitCode {
    let mut cfg = Config {
        allow: cli
            .allow_ignored
            .iter()
            .map(|g| glob::Glob::new(g))
            .collect(),
        input: cli.input,
        protocol: cli.codex_version,
        ..Config::default()
    };
    if let Some(n) = cli.jobs {
        cfg.jobs = usize::from(n);
    }
    let format = cli.format;
    let mut files = cli.files;
    if files.is_empty() {
        files.push("-".into());
    }
    let stdout = io::stdout();
    cfg.format = format.unwrap_or(if stdout.is_terminal() {
        OutFormat::Human
    } else {
        OutFormat::Json
    });
    cfg.color = cfg.format == OutFormat::Human
        && stdout.is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    cfg.progress = io::stderr().is_terminal();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut total = Stats::default();
    let mut failed = false;
    for file in &files {
        let (result, name) = if file == "-" {
            (run(io::stdin(), None, "<stdin>", &cfg, &mut out), "<stdin>")
        } else {
            match std::fs::File::open(file) {
                Ok(f) => (run_file(f, file, &cfg, &mut out), file.as_str()),
                Err(e) => {
                    note(format_args!("cannot read {file}: {e}"));
                    failed = true;
                    continue;
                }
            }
        };
        match result {
            Ok(stats) => total.merge(stats),
            Err(e) => {
                // What was checked before the error is already written.
                note(format_args!("{name}: {e}"));
                failed = true;
            }
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    drop(out);
    let table = match cfg.format {
        OutFormat::Human => report::summary(&total, &mut io::stdout()),
        OutFormat::Json if cfg.progress => report::summary(&total, &mut io::stderr()),
        OutFormat::Json => Ok(()),
    };
    if failed || table.is_err() {
        ExitCode::from(2)
    } else if total.findings() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Validates one input, writing records to `out` in input order.
pub fn run(
    reader: impl Read + Send,
    size: Option<u64>,
    name: &str,
    cfg: &Config,
    out: &mut dyn Write,
) -> io::Result<Stats> {
    run_batches(Batcher::new(reader, BATCH_BYTES), size, name, cfg, out)
}

/// [`run`] on a file: a regular file is read through mapped windows (no copy out of the page
/// cache), anything else as a stream.
pub fn run_file(
    file: std::fs::File,
    name: &str,
    cfg: &Config,
    out: &mut dyn Write,
) -> io::Result<Stats> {
    let size = file.metadata().ok().map(|m| m.len());
    run_batches(Batcher::for_file(file, BATCH_BYTES), size, name, cfg, out)
}

fn run_batches<R: Read + Send>(
    mut batcher: Batcher<R>,
    size: Option<u64>,
    name: &str,
    cfg: &Config,
    out: &mut dyn Write,
) -> io::Result<Stats> {
    let Some(first) = batcher.next_batch()? else {
        return Ok(Stats::default());
    };
    let format = cfg.input.unwrap_or_else(|| {
        first
            .lines()
            .map(|(_, l)| l)
            .find(|l| !l.iter().all(u8::is_ascii_whitespace))
            .map_or(Format::Raw, input::detect)
    });
    let protocol = match cfg.protocol {
        Some(p) => p,
        None => {
            let (p, how) = match detect_version(&first.buf) {
                Some(p) => (p, "from the server's userAgent"),
                None => (
                    crate::newest(),
                    "the newest; no userAgent of a known version",
                ),
            };
            note(format_args!(
                "{name}: judged as codex {} ({how})",
                p.version
            ));
            p
        }
    };
    let style = Style {
        format: cfg.format,
        color: cfg.color,
        allow: cfg.allow.clone(),
        source: name.to_string(),
        protocol,
    };
    let mut progress = Progress::new(cfg.progress, size);
    let r = match format {
        Format::Raw if cfg.jobs <= 1 => raw_sequential(first, batcher, &style, out, &mut progress),
        Format::Raw => raw_parallel(first, batcher, &style, cfg.jobs, out, &mut progress),
        Format::Transcript => transcript(first, batcher, &style, out, &mut progress),
    };
    progress.clear();
    r
}

/// The codex version a capture was recorded from: the first `userAgent` (`name/X.Y.Z (…`) of a
/// server's `initialize` result in the input's first batch, raw or inside a transcript's
/// escaped `line`, when this build speaks that version.
pub fn detect_version(bytes: &[u8]) -> Option<&'static crate::Protocol> {
    const KEY: &[u8] = b"userAgent";
    let mut at = 0;
    while let Some(i) = memchr::memmem::find(&bytes[at..], KEY) {
        let rest = &bytes[at + i + KEY.len()..];
        at += i + KEY.len();
        // `":"` or `\":\"` then the value: `name/X.Y.Z (…`.
        let start = rest
            .iter()
            .position(|b| !matches!(b, b'"' | b'\\' | b':' | b' '))
            .unwrap_or(rest.len());
        let value = &rest[start..rest.len().min(start + 200)];
        let end = value
            .iter()
            .position(|b| matches!(b, b'"' | b'\\'))
            .unwrap_or(value.len());
        let Ok(ua) = std::str::from_utf8(&value[..end]) else {
            continue;
        };
        let version = ua
            .split_whitespace()
            .next()
            .and_then(|first| first.rsplit_once('/'))
            .map(|(_, v)| v);
        if let Some(p) = version.and_then(crate::by_version) {
            return Some(p);
        }
    }
    None
}

/// The connection state a batch of client lines starts from: the accepted `initialize` line,
/// if any (see the module docs for why that is all of it).
type Prime = Option<Arc<[u8]>>;

fn same(a: &Prime, b: &Prime) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
        _ => false,
    }
}

/// One checked batch of client lines.
struct Done {
    batch: Batch,
    prime: Prime,
    /// The line that initialized the session in this batch (it started uninitialized).
    init: Prime,
    /// Lines checked; fewer than the batch when the connection closed.
    checked: usize,
    closed: bool,
    out: Vec<u8>,
    stats: Stats,
}

fn check_raw(batch: Batch, prime: Prime, style: &Style) -> Done {
    // Raw captures hold the client's lines only.
    let mut s = Session::with_protocol(style.protocol).client_only();
    if let Some(p) = &prime {
        s.feed(p);
    }
    // About a JSON record a line: grown by doubling, the buffer was copied several times.
    let mut out = Vec::with_capacity(batch.ends.len() * 192);
    let mut stats = Stats::default();
    let mut init = None;
    let mut checked = 0;
    let mut closed = false;
    for (n, line) in batch.lines() {
        let was = s.initialized();
        let verdict = s.feed(line);
        if !was && s.initialized() {
            init = Some(Arc::from(line));
        }
        checked += 1;
        closed = verdict.outcome == Outcome::Close;
        let rec = Record {
            line: n,
            dir: Dir::In,
            pid: None,
            text: line,
            verdict,
        };
        style.emit(rec, &mut out, &mut stats);
        if closed {
            break;
        }
    }
    Done {
        batch,
        prime,
        init,
        checked,
        closed,
        out,
        stats,
    }
}

/// In-order bookkeeping shared by the sequential and parallel raw paths.
struct Collector<'a> {
    state: Prime,
    closed: bool,
    stats: Stats,
    out: &'a mut dyn Write,
}

impl Collector<'_> {
    /// Takes the next batch in order; re-checks it when it guessed the state wrong.
    fn take(&mut self, mut d: Done, style: &Style) -> io::Result<()> {
        if self.closed {
            self.stats.after_close += d.batch.ends.len() as u64;
            return Ok(());
        }
        if !same(&d.prime, &self.state) {
            d = check_raw(d.batch, self.state.clone(), style);
        }
        self.out.write_all(&d.out)?;
        self.stats.merge(d.stats);
        if d.init.is_some() {
            self.state = d.init;
        }
        if d.closed {
            self.closed = true;
            self.stats.after_close += (d.batch.ends.len() - d.checked) as u64;
        }
        Ok(())
    }
}

fn raw_sequential<R: Read>(
    first: Batch,
    mut batcher: Batcher<R>,
    style: &Style,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> io::Result<Stats> {
    let mut c = Collector {
        state: None,
        closed: false,
        stats: Stats::default(),
        out,
    };
    let mut next = Some(first);
    while let Some(batch) = next {
        progress.add(batch.buf.len() as u64);
        let d = check_raw(batch, c.state.clone(), style);
        c.take(d, style)?;
        next = batcher.next_batch()?;
    }
    Ok(c.stats)
}

fn raw_parallel<R: Read + Send>(
    first: Batch,
    mut batcher: Batcher<R>,
    style: &Style,
    jobs: usize,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> io::Result<Stats> {
    // No reader or collector thread: whoever needs a batch cuts the next one (cheap: mapped
    // input is cut without being read), and this thread, a worker too, writes the checked
    // batches in order. Hand-offs that woke a sleeping thread for every batch cost more than
    // the cutting and the writing on two cores.
    let mut c = Collector {
        state: None,
        closed: false,
        stats: Stats::default(),
        out,
    };
    // The first batch is checked before any other: a capture initializes there, and a batch
    // checked from the uninitialized state it had before is all "Not initialized" errors
    // (the slow path), then checked again in order. Workers start from its state.
    progress.add(first.buf.len() as u64);
    let after = (first.seq + 1, first.first + first.ends.len() as u64);
    c.take(check_raw(first, None, style), style)?;
    if c.closed {
        c.stats.after_close += lines_left(batcher)?;
        return Ok(c.stats);
    }
    batcher.lazy = true;
    let feed = Mutex::new(Feed { batcher, err: None });
    // Room for a few batches a worker: it must rarely wait for this thread to take them.
    let (dtx, drx) = sync_channel::<Done>(jobs * 4);
    // The latest known state; workers guess from it, the collector corrects.
    let known: Mutex<Prime> = Mutex::new(c.state.clone());
    let stop = AtomicBool::new(false);
    let mut write_err = None;
    // Line numbers of lazily cut batches: each worker indexes its batch, then takes the
    // numbers after its predecessor's (batches are cut in order, so this never waits on a
    // later one).
    let numbering = (Mutex::new(after), std::sync::Condvar::new());
    let next_checked = |feed: &Mutex<Feed<R>>| -> Option<Done> {
        let mut batch = {
            let mut f = feed.lock().ok()?;
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            match f.batcher.next_batch().transpose()? {
                Ok(b) => b,
                Err(e) => {
                    f.err = Some(e);
                    stop.store(true, Ordering::Relaxed);
                    return None;
                }
            }
        };
        let (lock, turn) = &numbering;
        let lazy = batch.ends.is_empty();
        if lazy {
            batch.index();
        }
        let mut state = lock.lock().ok()?;
        while state.0 != batch.seq {
            state = turn.wait(state).ok()?;
        }
        if lazy {
            batch.first = state.1;
        }
        *state = (state.0 + 1, batch.first + batch.ends.len() as u64);
        turn.notify_all();
        drop(state);
        let prime = known.lock().map(|k| k.clone()).unwrap_or(None);
        Some(check_raw(batch, prime, style))
    };
    std::thread::scope(|sc| {
        for _ in 1..jobs {
            let dtx = dtx.clone();
            let (feed, next_checked) = (&feed, &next_checked);
            sc.spawn(move || {
                while let Some(d) = next_checked(feed) {
                    if dtx.send(d).is_err() {
                        return;
                    }
                }
            });
        }
        drop(dtx);
        let mut pending = BTreeMap::new();
        let mut next = after.0;
        let mut commit = |pending: &mut BTreeMap<u64, Done>| {
            while let Some(d) = pending.remove(&next) {
                next += 1;
                progress.add(d.batch.buf.len() as u64);
                if write_err.is_some() {
                    continue;
                }
                let had = c.state.is_some();
                if let Err(e) = c.take(d, style) {
                    // Stop cutting; keep draining so the workers can finish.
                    write_err = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
                if !had && c.state.is_some() {
                    if let Ok(mut k) = known.lock() {
                        *k = c.state.clone();
                    }
                }
                if c.closed {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        };
        loop {
            pending.extend(drx.try_iter().map(|d| (d.batch.seq, d)));
            commit(&mut pending);
            // Checked batches waiting for an earlier one stay few: past that, wait for it
            // instead of checking more (memory stays bounded by the batches in flight).
            if pending.len() > 2 * jobs {
                match drx.recv() {
                    Ok(d) => {
                        pending.insert(d.batch.seq, d);
                        continue;
                    }
                    Err(_) => break,
                }
            }
            match next_checked(&feed) {
                Some(d) => {
                    pending.insert(d.batch.seq, d);
                }
                None => break,
            }
        }
        // Input done (or stopped): what the other workers still check.
        for d in drx.iter() {
            pending.insert(d.batch.seq, d);
            commit(&mut pending);
        }
        commit(&mut pending);
    });
    let feed = feed
        .into_inner()
        .map_err(|_| io::Error::other("a worker panicked"))?;
    if let Some(e) = write_err.or(feed.err) {
        return Err(e);
    }
    if c.closed {
        // As `--jobs 1` counts them: every line after the close, not only those cut by then.
        c.stats.after_close += lines_left(feed.batcher)?;
    }
    Ok(c.stats)
}

/// The lines of the batches not yet cut.
fn lines_left<R: Read>(mut batcher: Batcher<R>) -> io::Result<u64> {
    let mut n = 0;
    while let Some(mut b) = batcher.next_batch()? {
        if b.ends.is_empty() {
            b.index();
        }
        n += b.ends.len() as u64;
    }
    Ok(n)
}

/// The batches still to check in [`raw_parallel`], shared by its workers.
struct Feed<R> {
    batcher: Batcher<R>,
    err: Option<io::Error>,
}

/// Transcripts: each session (pid) has its own [`Session`], fed in input order, both
/// directions. Server requests registered from `out` lines make the client's responses
/// checkable; results are matched to the client's requests.
fn transcript<R: Read + Send>(
    first: Batch,
    mut batcher: Batcher<R>,
    style: &Style,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> io::Result<Stats> {
    let (btx, brx) = sync_channel::<Batch>(4);
    let mut read_err = None;
    let mut stats = Stats::default();
    let mut write_err = None;
    std::thread::scope(|sc| {
        let read_err = &mut read_err;
        // Reading and splitting overlap with checking.
        sc.spawn(move || {
            let mut next = Some(first);
            while let Some(b) = next {
                if btx.send(b).is_err() {
                    return;
                }
                match batcher.next_batch() {
                    Ok(b) => next = b,
                    Err(e) => {
                        *read_err = Some(e);
                        return;
                    }
                }
            }
        });
        let mut sessions: HashMap<Box<str>, (Session, bool)> = HashMap::new();
        let mut buf = Vec::new();
        for batch in brx.iter() {
            progress.add(batch.buf.len() as u64);
            buf.clear();
            for (n, line) in batch.lines() {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match input::entry(line) {
                    Entry::Bad(why) => style.emit_bad(n, &why, line, &mut buf, &mut stats),
                    Entry::Event { pid, spawn } => {
                        if spawn {
                            sessions.remove(pid.as_deref().unwrap_or(""));
                        }
                    }
                    Entry::Message { dir, pid, bytes } => {
                        let key = pid.as_deref().unwrap_or("");
                        let (s, closed) = sessions
                            .entry(Box::from(key))
                            .or_insert_with(|| (Session::with_protocol(style.protocol), false));
                        if *closed {
                            stats.after_close += 1;
                            continue;
                        }
                        let verdict = match dir {
                            Dir::In => s.feed(&bytes),
                            Dir::Out => s.feed_server(&bytes),
                        };
                        *closed = dir == Dir::In && verdict.outcome == Outcome::Close;
                        let rec = Record {
                            line: n,
                            dir,
                            pid: pid.as_deref(),
                            text: &bytes,
                            verdict,
                        };
                        style.emit(rec, &mut buf, &mut stats);
                    }
                }
            }
            if write_err.is_none() {
                if let Err(e) = out.write_all(&buf) {
                    write_err = Some(e);
                }
            }
        }
    });
    if let Some(e) = write_err.or(read_err) {
        return Err(e);
    }
    Ok(stats)
}

/// A progress line on stderr for big inputs, redrawn at most every 200 ms.
struct Progress {
    on: bool,
    total: Option<u64>,
    done: u64,
    start: Instant,
    last: Option<Instant>,
    drawn: bool,
}

impl Progress {
    fn new(terminal: bool, total: Option<u64>) -> Self {
        Progress {
            on: terminal,
            total,
            done: 0,
            start: Instant::now(),
            last: None,
            drawn: false,
        }
    }

    fn add(&mut self, n: u64) {
        self.done += n;
        let big = self.total.unwrap_or(self.done) > PROGRESS_BYTES;
        if !self.on || !big {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now - l < Duration::from_millis(200))
        {
            return;
        }
        self.last = Some(now);
        let mb = |b: u64| b as f64 / 1e6;
        let rate = mb(self.done) / (now - self.start).as_secs_f64().max(1e-3);
        let line = match self.total {
            Some(t) if t > 0 => {
                let frac = (self.done as f64 / t as f64).min(1.0);
                let bar = (frac * 30.0) as usize;
                format!(
                    "[{}{}] {:>3.0}% {:.0}/{:.0} MB {rate:.0} MB/s",
                    "#".repeat(bar),
                    " ".repeat(30 - bar),
                    frac * 100.0,
                    mb(self.done),
                    mb(t)
                )
            }
            _ => format!("{:.0} MB {rate:.0} MB/s", mb(self.done)),
        };
        eprint!("\r\x1b[2K{line}");
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }
}
