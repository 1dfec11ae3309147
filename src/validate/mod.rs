//! `codex-wire validate`: what the real server makes of captured traffic, message by message.
//!
//! Inputs are plain client→server JSONL or transcripts (both directions, several sessions kept
//! apart by `pid`). Input is read in batches of whole lines, so memory stays flat in the file
//! size. Plain client input is checked on all cores: a client session's verdicts depend on
//! the connection state only through the first accepted `initialize` (server requests, the
//! other state, only appear in transcripts), so each batch runs in a [`Session`] primed with
//! that line (a thread keeps its session for its next batch while the line is the same). The
//! first batch, where a capture initializes, is checked before the others; a later batch that
//! guessed the state wrong (it started before a late `initialize` was known) is checked again in
//! order. Output stays in input order.

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
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, Mutex};
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
    // Not the stdout lock (not `Send`): any worker may write the next batch.
    let mut out = io::BufWriter::new(io::stdout());
    let mut total = Stats::default();
    let mut failed = false;
    for file in &files {
        let (result, name) = if file == "-" {
            let stdin = Input::Stream(io::stdin(), None);
            (
                run_to(stdin, "<stdin>", &cfg, Sink::Shared(&mut out)),
                "<stdin>",
            )
        } else {
            match std::fs::File::open(file) {
                Ok(f) => {
                    let f = Input::<io::Empty>::File(f);
                    (run_to(f, file, &cfg, Sink::Shared(&mut out)), file.as_str())
                }
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

/// Validates one input, writing records to `out` in input order (on several cores, the workers
/// hand their batches to this thread, the only one that may write `out`).
pub fn run(
    reader: impl Read + Send,
    size: Option<u64>,
    name: &str,
    cfg: &Config,
    out: &mut dyn Write,
) -> io::Result<Stats> {
    run_to(Input::Stream(reader, size), name, cfg, Sink::Local(out))
}

/// [`run`] on a file: a regular file is read through mapped windows (no copy out of the page
/// cache), anything else as a stream.
pub fn run_file(
    file: std::fs::File,
    name: &str,
    cfg: &Config,
    out: &mut dyn Write,
) -> io::Result<Stats> {
    run_to(Input::<io::Empty>::File(file), name, cfg, Sink::Local(out))
}

/// What [`run_to`] reads: a stream (with its size, when known, for the progress bar) or a file.
pub enum Input<R> {
    Stream(R, Option<u64>),
    File(std::fs::File),
}

/// Where [`run_to`] writes the records.
pub enum Sink<'a> {
    /// A writer any worker may write itself (`codex-wire validate`'s standard output):
    /// whichever completes the batch next in order writes it, and no batch is handed over.
    Shared(&'a mut (dyn Write + Send)),
    /// A writer only the calling thread may use: the workers hand it their batches.
    Local(&'a mut dyn Write),
}

/// [`run`] or [`run_file`], to either kind of writer.
pub fn run_to<R: Read + Send>(
    input: Input<R>,
    name: &str,
    cfg: &Config,
    out: Sink,
) -> io::Result<Stats> {
    match input {
        Input::Stream(r, size) => run_batches(Batcher::new(r, BATCH_BYTES), size, name, cfg, out),
        Input::File(f) => {
            let size = f.metadata().ok().map(|m| m.len());
            run_batches(Batcher::for_file(f, BATCH_BYTES), size, name, cfg, out)
        }
    }
}

impl<'a> Sink<'a> {
    /// For a path that writes on the calling thread only.
    fn any(self) -> &'a mut dyn Write {
        match self {
            Sink::Shared(w) => w,
            Sink::Local(w) => w,
        }
    }
}

/// A [`Sink::Local`] writer seen from the workers: each batch is copied to the calling thread,
/// which writes it (until the last worker drops the sender).
struct Hand<'a>(&'a Mutex<Option<SyncSender<Vec<u8>>>>);

impl Write for Hand<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let tx = self.0.lock().ok().and_then(|t| t.clone());
        match tx.map(|tx| tx.send(buf.to_vec())) {
            Some(Ok(())) => Ok(buf.len()),
            _ => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn run_batches<R: Read + Send>(
    mut batcher: Batcher<R>,
    size: Option<u64>,
    name: &str,
    cfg: &Config,
    out: Sink,
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
        // A capture that fits in one batch (most hand-made ones) starts no thread.
        Format::Raw if cfg.jobs <= 1 || batcher.exhausted() => {
            raw_sequential(first, batcher, &style, out.any(), &mut progress)
        }
        Format::Raw => raw_parallel(first, batcher, &style, cfg.jobs, out, &mut progress),
        Format::Transcript => transcript(first, batcher, &style, out.any(), &mut progress),
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

/// Output buffers of written batches, reused: a fresh ~150 KB buffer a batch was often memory
/// the allocator had just given back to the kernel (two threads: 3,300–6,700 page faults on
/// 300,000 lines, against 2,250 on one; a worker's arena trims what another thread frees).
#[derive(Default)]
struct Spare(Mutex<Vec<Vec<u8>>>);

impl Spare {
    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default()
    }

    fn give(&self, mut out: Vec<u8>) {
        out.clear();
        if let Ok(mut s) = self.0.lock() {
            s.push(out);
        }
    }
}

/// A thread's session, kept for its next batch while that batch starts from the same state:
/// priming a fresh one (the `initialize` line, on the exact path) cost ~39,000 instructions a
/// batch. That line is all of a client session's state (module docs).
#[derive(Default)]
struct Primed(Option<(Prime, Session)>);

fn check_raw(
    batch: Batch,
    prime: Prime,
    style: &Style,
    mut out: Vec<u8>,
    primed: &mut Primed,
) -> Done {
    let mut s = match primed.0.take() {
        Some((from, s)) if same(&from, &prime) => s,
        _ => {
            // Raw captures hold the client's lines only.
            let mut s = Session::with_protocol(style.protocol).client_only();
            if let Some(p) = &prime {
                s.feed(p);
            }
            s
        }
    };
    // About a JSON record a line: grown by doubling, the buffer was copied several times.
    out.clear();
    out.reserve(batch.ends.len() * 192);
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
    if !closed {
        primed.0 = Some((init.clone().or_else(|| prime.clone()), s));
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

/// A mapped file's checked records are written this many bytes at a time, in one `writev`: a
/// batch's ~100 KB written alone cost a one-core run ~4 % more (40 MB of verdicts into a fresh
/// ext4 file: 14.6 ms in 150 KB writes, 10.0–10.4 ms in writes of 0.5–2 MiB, best of 8; the
/// page cache takes a large write in large folios). Gathered, not copied: the buffers wait.
/// A stream's records go out batch by batch: a live capture's verdicts must not wait for a
/// mebibyte more of traffic.
const GATHER: usize = 1 << 20;

/// How many bytes of records to gather before a write, for this input (see [`GATHER`]).
fn gather_for<R: Read>(batcher: &Batcher<R>) -> usize {
    if batcher.mapped() {
        GATHER
    } else {
        0
    }
}

/// In-order bookkeeping shared by the sequential and parallel raw paths.
struct Collector<'a, W: Write + ?Sized> {
    state: Prime,
    closed: bool,
    stats: Stats,
    out: &'a mut W,
    spare: &'a Spare,
    /// For batches checked again.
    primed: Primed,
    /// Records checked and not yet written, in order, up to `gather` bytes (see [`GATHER`]).
    pending: Vec<Vec<u8>>,
    pending_len: usize,
    gather: usize,
}

impl<W: Write + ?Sized> Drop for Collector<'_, W> {
    /// What was checked before an error is written all the same (best effort: the error
    /// that stopped the run is the one reported).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl<'a, W: Write + ?Sized> Collector<'a, W> {
    /// `gather`: bytes of records kept before a write ([`GATHER`], or 0 to write each batch
    /// as it comes).
    fn new(out: &'a mut W, spare: &'a Spare, gather: usize) -> Self {
        Collector {
            state: None,
            closed: false,
            stats: Stats::default(),
            out,
            spare,
            primed: Primed::default(),
            pending: Vec::new(),
            pending_len: 0,
            gather,
        }
    }

    /// Writes the records gathered so far, in one `writev` where the writer takes it.
    fn flush(&mut self) -> io::Result<()> {
        let mut slices: Vec<io::IoSlice> =
            self.pending.iter().map(|b| io::IoSlice::new(b)).collect();
        let mut rest = &mut slices[..];
        let mut written = Ok(());
        while !rest.is_empty() {
            match self.out.write_vectored(rest) {
                Ok(0) => {
                    written = Err(io::ErrorKind::WriteZero.into());
                    break;
                }
                Ok(n) => io::IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    written = Err(e);
                    break;
                }
            }
        }
        for b in self.pending.drain(..) {
            self.spare.give(b);
        }
        self.pending_len = 0;
        written
    }

    /// Takes the next batch in order; re-checks it when it guessed the state wrong.
    fn take(&mut self, mut d: Done, style: &Style) -> io::Result<()> {
        if self.closed {
            self.stats.after_close += d.batch.ends.len() as u64;
            self.spare.give(d.out);
            return Ok(());
        }
        if !same(&d.prime, &self.state) {
            d = check_raw(d.batch, self.state.clone(), style, d.out, &mut self.primed);
        }
        self.pending_len += d.out.len();
        self.pending.push(d.out);
        if self.pending_len >= self.gather {
            self.flush()?;
        }
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
    let spare = Spare::default();
    let mut c = Collector::new(out, &spare, gather_for(&batcher));
    // One session for the whole input, as a client's connection.
    let mut primed = Primed::default();
    let mut next = Some(first);
    while let Some(batch) = next {
        progress.add(batch.buf.len() as u64);
        let d = check_raw(batch, c.state.clone(), style, spare.take(), &mut primed);
        c.take(d, style)?;
        next = batcher.next_batch()?;
    }
    c.flush()?;
    Ok(std::mem::take(&mut c.stats))
}

fn raw_parallel<R: Read + Send>(
    first: Batch,
    mut batcher: Batcher<R>,
    style: &Style,
    jobs: usize,
    out: Sink,
    progress: &mut Progress,
) -> io::Result<Stats> {
    // Every thread, this one too, is a worker: it cuts the next batch (cheap: mapped input is
    // cut without being read), checks it, and whichever thread completes the batch next in
    // order writes it and the checked ones after it. No reader, collector or writer thread:
    // hand-offs that woke a sleeping thread for every batch cost more than the cutting and the
    // writing on two cores, and a single writer also paid for every batch's unmapping, frees
    // and output read from another core's cache. Only a writer no other thread may use
    // (`Sink::Local`) gets the batches through a channel, and this thread then only writes.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4 * jobs);
    let sender = Mutex::new(Some(tx));
    let mut hand = Hand(&sender);
    // A local writer's batches go through the channel, which closes when the last worker
    // leaves: nothing may wait in the collector for a write after that.
    let (out, mut local, gather): (&mut (dyn Write + Send), _, _) = match out {
        Sink::Shared(w) => (w, None, gather_for(&batcher)),
        Sink::Local(w) => (&mut hand, Some(w), 0),
    };
    let spare = Spare::default();
    let after = (first.seq + 1, first.first + first.ends.len() as u64);
    batcher.lazy = true;
    let feed = Mutex::new(Feed { batcher, err: None });
    let stop = AtomicBool::new(false);
    // A worker panicked: the others stop waiting for its batch (see `Unblock`).
    let failed = AtomicBool::new(false);
    // The state workers guess from (the collector corrects): none until the first batch, where
    // a capture initializes, is written (a batch checked from the state before would be all
    // "Not initialized" errors, then checked again). The others cut and index meanwhile.
    let known: (Mutex<Option<Prime>>, Condvar) = (Mutex::new(None), Condvar::new());
    // Line numbers of lazily cut batches: each worker indexes its batch, then takes the
    // numbers after its predecessor's (batches are cut in order, so this never waits on a
    // later one).
    let numbering = (Mutex::new(after), Condvar::new());
    let order = (
        Mutex::new(Order {
            next: after.0,
            ready: BTreeMap::new(),
            writing: false,
            waiting: 0,
        }),
        Condvar::new(),
    );
    let writer = Mutex::new(Writer {
        c: Collector::new(out, &spare, gather),
        progress,
        err: None,
    });
    // Writes one checked batch in order; a write error stops the cutting, and what is still
    // checked is drained unwritten.
    let commit = |d: Done| {
        let Ok(mut w) = writer.lock() else { return };
        let w = &mut *w;
        w.progress.add(d.batch.buf.len() as u64);
        if w.err.is_some() {
            spare.give(d.out);
            return;
        }
        let had = w.c.state.clone();
        if let Err(e) = w.c.take(d, style) {
            w.err = Some(e);
            stop.store(true, Ordering::Relaxed);
        }
        if w.c.closed {
            stop.store(true, Ordering::Relaxed);
        }
        if !same(&had, &w.c.state) {
            if let Ok(mut k) = known.0.lock() {
                *k = Some(w.c.state.clone());
            }
        }
    };
    let next_batch = |feed: &Mutex<Feed<R>>| -> Option<Batch> {
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
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            state = turn.wait(state).ok()?;
        }
        if lazy {
            batch.first = state.1;
        }
        *state = (state.0 + 1, batch.first + batch.ends.len() as u64);
        turn.notify_all();
        Some(batch)
    };
    let unblock = || Unblock {
        failed: &failed,
        stop: &stop,
        numbering: &numbering,
        known: &known,
        order: &order,
    };
    // Threads still working: the last one drops the sender (see `Hand`).
    let running = std::sync::atomic::AtomicUsize::new(jobs);
    let work = || {
        let _unblock = unblock();
        let _leave = Leave {
            running: &running,
            sender: &sender,
        };
        let mut primed = Primed::default();
        while let Some(batch) = next_batch(&feed) {
            let prime = {
                let (lock, set) = &known;
                let Ok(mut k) = lock.lock() else { return };
                while k.is_none() {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(next) = set.wait(k) else { return };
                    k = next;
                }
                k.clone().unwrap_or(None)
            };
            let d = check_raw(batch, prime, style, spare.take(), &mut primed);
            // In order: the batch goes to the thread writing, or this one writes it and the
            // checked ones after it (the batch next in order is always either being checked
            // or written).
            let (lock, room) = &order;
            let Ok(mut o) = lock.lock() else { return };
            o.ready.insert(d.batch.seq, d);
            if !o.writing {
                o.writing = true;
                loop {
                    let next = o.next;
                    let Some(d) = o.ready.remove(&next) else {
                        break;
                    };
                    o.next += 1;
                    drop(o);
                    commit(d);
                    let Ok(next) = lock.lock() else { return };
                    o = next;
                    if o.waiting > 0 {
                        room.notify_all();
                    }
                }
                o.writing = false;
            }
            // Checked batches waiting for an earlier one stay few (memory stays bounded by the
            // batches in flight): past that, wait for the one being checked to be written.
            while o.ready.len() > 4 * jobs {
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                o.waiting += 1;
                let Ok(next) = room.wait(o) else { return };
                o = next;
                o.waiting -= 1;
            }
        }
    };
    let mut local_err = None;
    std::thread::scope(|sc| {
        for _ in usize::from(local.is_none())..jobs {
            sc.spawn(work);
        }
        let _unblock = unblock();
        commit(check_raw(
            first,
            None,
            style,
            Vec::new(),
            &mut Primed::default(),
        ));
        // Only now do the workers check: from the first batch's state.
        let state = writer.lock().map(|w| w.c.state.clone()).unwrap_or(None);
        if let Ok(mut k) = known.0.lock() {
            *k = Some(state);
            known.1.notify_all();
        }
        match local.as_mut() {
            // After a write error, what comes is drained (the workers finish their batches).
            Some(w) => {
                for buf in rx.iter() {
                    if local_err.is_none() {
                        if let Err(e) = w.write_all(&buf) {
                            local_err = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            None => work(),
        }
    });
    let feed = feed
        .into_inner()
        .map_err(|_| io::Error::other("a worker panicked"))?;
    let w = writer
        .into_inner()
        .map_err(|_| io::Error::other("a worker panicked"))?;
    if let Some(e) = local_err.or(w.err).or(feed.err) {
        return Err(e);
    }
    let mut c = w.c;
    if c.closed {
        // As `--jobs 1` counts them: every line after the close, not only those cut by then.
        c.stats.after_close += lines_left(feed.batcher)?;
    }
    c.flush()?;
    Ok(std::mem::take(&mut c.stats))
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

/// Checked batches of [`raw_parallel`] waiting to be written in order.
struct Order {
    /// The batch to write next.
    next: u64,
    ready: BTreeMap<u64, Done>,
    /// A thread is writing (it takes `next` and what follows as they come).
    writing: bool,
    /// Threads waiting for the writer to catch up.
    waiting: usize,
}

/// What writes [`raw_parallel`]'s batches, one thread at a time.
struct Writer<'a> {
    c: Collector<'a, dyn Write + Send + 'a>,
    progress: &'a mut Progress,
    err: Option<io::Error>,
}

/// A worker of [`raw_parallel`] leaving, however it leaves: the last one drops the sender of a
/// [`Hand`], so that the thread writing for the workers knows it has every batch.
struct Leave<'a> {
    running: &'a std::sync::atomic::AtomicUsize,
    sender: &'a Mutex<Option<SyncSender<Vec<u8>>>>,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.sender.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

/// Wakes every waiting worker of [`raw_parallel`] when one panics: they would wait for its
/// batch forever (the panic still propagates, from the scope).
struct Unblock<'a> {
    failed: &'a AtomicBool,
    stop: &'a AtomicBool,
    numbering: &'a (Mutex<(u64, u64)>, Condvar),
    known: &'a (Mutex<Option<Prime>>, Condvar),
    order: &'a (Mutex<Order>, Condvar),
}

impl Drop for Unblock<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        self.failed.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        // Each lock taken and released first: a waiter is then either before its look at
        // `failed` or asleep, not in between.
        drop(self.numbering.0.lock());
        self.numbering.1.notify_all();
        drop(self.known.0.lock());
        self.known.1.notify_all();
        drop(self.order.0.lock());
        self.order.1.notify_all();
    }
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
    let (btx, brx) = std::sync::mpsc::sync_channel::<Batch>(4);
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
