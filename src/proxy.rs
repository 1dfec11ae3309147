//! `codex-wire proxy [--transcript FILE] -- <codex command…>`: sits between a client and the
//! real server over stdio. Bytes are forwarded unchanged, chunk by chunk (not line by line);
//! each complete line is first judged by the engine, written to the transcript and flagged on
//! stderr. The child's exit code or signal is passed through.
//!
//! A line is in the transcript *before* the chunk that completes it is forwarded: the analyzer
//! sees a server request before the client can answer it, and a client that read a reply can
//! read its transcript entry, even when it kills the proxy at once (the Python SDK's `close`
//! sends SIGKILL 2 s after SIGTERM; a transcript written behind the traffic lost its tail).

use crate::validate::input::to_hex;
use crate::validate::report::{self, Record, Stats, Style};
use crate::validate::{glob::Glob, input::Dir};
use crate::{Outcome, Session};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

/// Run a real `codex app-server` behind a checking proxy: stdio is forwarded unchanged,
/// findings go to stderr, every message (both directions) to the transcript.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit: the command's own exit code (128+N when a signal N ends it), \
127 when it cannot start, 2 on a usage error.\n\
Example: codex-wire proxy --transcript t.jsonl -- codex app-server"
)]
pub struct Cli {
    /// Write every message, both directions, to FILE (the fake's transcript format)
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<String>,
    /// Ignored field paths not to flag (repeatable)
    #[arg(long = "allow-ignored", value_name = "GLOB")]
    pub allow_ignored: Vec<String>,
    /// Do not print findings
    #[arg(long)]
    pub quiet: bool,
    /// Judge as this codex version (default: what `COMMAND --version` prints)
    #[arg(long, value_name = "X.Y.Z", value_parser = crate::parse_codex_version)]
    pub codex_version: Option<&'static crate::Protocol>,
    /// The server command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The child, for the signal handler (0 = none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);

/// A signal that arrived before the child existed (delivered to it once it does).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe {
            libc::kill(pid, sig);
        }
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

pub fn main(cli: Cli) -> ExitCode {
    run(&Options {
        name: "codex-wire proxy",
        command: &cli.command,
        transcript: cli.transcript.as_deref().map(Path::new),
        append: false,
        allow_ignored: &cli.allow_ignored,
        quiet: cli.quiet,
        protocol: cli.codex_version,
        redact: None,
    })
    .exit_code()
}

/// What [`run`] proxies and where it records.
pub struct Options<'a> {
    /// Prefix of its messages on stderr.
    pub name: &'a str,
    /// The server command and its arguments.
    pub command: &'a [String],
    pub transcript: Option<&'a Path>,
    /// Append to the transcript (several processes on one state dir) instead of truncating it.
    pub append: bool,
    /// Ignored field paths not to flag.
    pub allow_ignored: &'a [String],
    /// Do not print findings.
    pub quiet: bool,
    /// The codex version to judge as (`None`: ask the command's `--version`).
    pub protocol: Option<&'static crate::Protocol>,
    /// What the transcript must not contain (`codex-wire record`): lines are judged as they
    /// are and written redacted.
    pub redact: Option<&'a crate::record::redact::Redactor>,
}

/// How the proxied command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Its exit code, or ours (127 cannot start, 2 usage or I/O error).
    Code(u8),
    /// The signal that ended it.
    Signal(i32),
}

impl Exit {
    /// The process's own exit: a signal is re-raised, so the caller sees what it would have
    /// seen without the proxy. Call it last (after cleanup): it may not return.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Exit::Code(c) => ExitCode::from(c),
            Exit::Signal(sig) => {
                // SAFETY: resetting to the default action and raising is the documented way.
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    libc::raise(sig);
                }
                ExitCode::from(128u8.wrapping_add(sig as u8))
            }
        }
    }
}

/// The codex version `program --version` names (`codex-cli X.Y.Z`), if this build speaks it.
/// A program that does not answer within a few seconds is not waited for.
pub(crate) fn child_version(program: &str) -> Result<&'static crate::Protocol, String> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("`{program} --version`: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("`{program} --version` did not answer"));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = io::Read::read_to_string(&mut out, &mut text);
    }
    let line = text.lines().next().unwrap_or_default().trim();
    let version = line.rsplit(' ').next().unwrap_or_default();
    crate::by_version(version).ok_or_else(|| {
        format!("`{program} --version` printed {line:?}, not a version this build speaks")
    })
}

/// Runs `o.command` behind the proxy on this process's stdio until it exits.
pub fn run(o: &Options) -> Exit {
    let allow: Vec<Glob> = o.allow_ignored.iter().map(|g| Glob::new(g)).collect();
    let (name, quiet, command) = (o.name, o.quiet, o.command);
    let Some((program, rest)) = command.split_first() else {
        eprintln!("{name}: no command given after `--`");
        return Exit::Code(2);
    };
    let opened = o.transcript.map(|p| {
        let mut f = OpenOptions::new();
        if o.append {
            f.append(true);
        } else {
            f.write(true).truncate(true);
        }
        f.create(true).open(p).map_err(|e| (p, e))
    });
    let transcript = match opened {
        None => None,
        Some(Ok(f)) => Some(f),
        Some(Err((p, e))) => {
            eprintln!("{name}: cannot write transcript {}: {e}", p.display());
            return Exit::Code(2);
        }
    };
    for sig in [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
    ] {
        // SAFETY: the handler only calls kill(2).
        unsafe {
            libc::signal(sig, forward_signal as *const () as libc::sighandler_t);
        }
    }
    let protocol = o.protocol.unwrap_or_else(|| match child_version(program) {
        Ok(p) => p,
        Err(why) => {
            let p = crate::newest();
            eprintln!("{name}: judging as codex {} ({why})", p.version);
            p
        }
    });
    let mut child = match Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{name}: cannot start {program}: {e}");
            return Exit::Code(127);
        }
    };
    let pid = child.id() as i32;
    CHILD.store(pid, Ordering::SeqCst);
    // A signal from before the child existed (the version probe takes a moment) is its now.
    let early = PENDING.swap(0, Ordering::SeqCst);
    if early != 0 {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(pid, early);
        }
    }
    let mut child_in = child.stdin.take().expect("piped stdin");
    let mut child_out = child.stdout.take().expect("piped stdout");
    let argv: Vec<&String> = command.iter().collect();
    let mut an = Analyzer::new(transcript, allow, quiet, pid, name.to_string(), protocol);
    an.redact = o.redact.cloned();
    an.event(serde_json::json!({"event": "spawn", "argv": argv, "ppid": std::process::id()}));
    let an = Shared(Arc::new(Mutex::new(an)));
    let an_in = an.clone();
    // Client → server. When the client closes, the child's stdin is closed too.
    std::thread::spawn(move || {
        let stdin = io::stdin();
        let mut stdin = stdin.lock();
        pump(&mut stdin, &mut child_in, Dir::In, &an_in);
    });
    // Server → client.
    let an_out = an.clone();
    let pump_out = std::thread::spawn(move || {
        let stdout = io::stdout();
        let mut stdout = stdout.lock();
        pump(&mut child_out, &mut stdout, Dir::Out, &an_out);
    });
    let status = child.wait();
    // The child is gone: forward what it wrote, then finish the analysis.
    let _ = pump_out.join();
    let mut an = an.lock();
    use std::os::unix::process::ExitStatusExt;
    let (code, signal) = match &status {
        Ok(s) => (s.code(), s.signal()),
        Err(_) => (None, None),
    };
    an.event(match (code, signal) {
        (_, Some(sig)) => serde_json::json!({"event": "exit", "signal": sig}),
        (c, None) => serde_json::json!({"event": "exit", "code": c}),
    });
    an.finish();
    match (signal, code) {
        (Some(sig), _) => Exit::Signal(sig),
        (None, Some(c)) => Exit::Code(c as u8),
        (None, None) => Exit::Code(2),
    }
}

/// The analyzer both readers feed, one line at a time.
#[derive(Clone)]
struct Shared(Arc<Mutex<Analyzer>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Analyzer> {
        // A reader that panicked mid-line leaves the analyzer usable: the transcript's lines
        // are whole (one write each).
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Copies `from` to `to` chunk by chunk, flushing each, after the analyzer has taken the
/// complete lines of the chunk.
fn pump(from: &mut impl Read, to: &mut impl Write, dir: Dir, an: &Shared) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut partial = Vec::new();
    let mut forwarding = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let mut start = 0;
        // One lock for the chunk's lines, released before the chunk is forwarded.
        let mut judged = None;
        for i in memchr::memchr_iter(b'\n', chunk) {
            partial.extend_from_slice(&chunk[start..i]);
            judged.get_or_insert_with(|| an.lock()).line(dir, &partial);
            partial.clear();
            start = i + 1;
        }
        drop(judged);
        partial.extend_from_slice(&chunk[start..]);
        // A peer that went away stops the forwarding, not the recording.
        if forwarding && (to.write_all(chunk).is_err() || to.flush().is_err()) {
            forwarding = false;
        }
    }
    let mut an = an.lock();
    if !partial.is_empty() {
        an.line(dir, &partial);
    }
    an.eof(dir);
}

struct Analyzer {
    session: Session,
    style: Style,
    stats: Stats,
    /// Written one whole line per locked write, so processes appending to one file never
    /// interleave.
    transcript: Option<File>,
    quiet: bool,
    pid: i32,
    count: [u64; 2],
    name: String,
    redact: Option<crate::record::redact::Redactor>,
    /// The server's output ended: the session is over, later client lines are not judged.
    closed: bool,
}

impl Analyzer {
    fn new(
        transcript: Option<File>,
        allow: Vec<Glob>,
        quiet: bool,
        pid: i32,
        name: String,
        protocol: &'static crate::Protocol,
    ) -> Self {
        Analyzer {
            session: Session::with_protocol(protocol),
            style: Style {
                format: report::OutFormat::Human,
                color: false,
                allow,
                source: String::new(),
                protocol,
            },
            stats: Stats::default(),
            transcript,
            quiet,
            pid,
            count: [0, 0],
            name,
            redact: None,
            closed: false,
        }
    }

    fn stamp() -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }

    fn event(&mut self, mut e: serde_json::Value) {
        let Some(t) = self.transcript.as_mut() else {
            return;
        };
        let mut obj = serde_json::Map::new();
        obj.insert("pid".into(), self.pid.into());
        obj.insert("t".into(), serde_json::json!(Self::stamp()));
        if let Some(r) = &self.redact {
            r.json(&mut e);
        }
        if let Some(m) = e.as_object_mut() {
            obj.append(m);
        }
        append_line(
            t,
            format!("{}\n", serde_json::Value::Object(obj)).as_bytes(),
        );
    }

    fn eof(&mut self, dir: Dir) {
        match dir {
            _ if self.closed => {}
            Dir::In => self.event(serde_json::json!({"event": "stdin_eof"})),
            Dir::Out => self.closed = true,
        }
    }

    fn line(&mut self, dir: Dir, line: &[u8]) {
        if self.closed {
            return;
        }
        let i = (dir == Dir::Out) as usize;
        self.count[i] += 1;
        let n = self.count[i];
        let verdict = match dir {
            Dir::In => self.session.feed(line),
            Dir::Out => self.session.feed_server(line),
        };
        if let Some(t) = self.transcript.as_mut() {
            let mut buf = Vec::with_capacity(line.len() + 128);
            let shown = match &self.redact {
                Some(r) => r.line(line),
                None => std::borrow::Cow::Borrowed(line),
            };
            let _ = write_entry(&mut buf, self.pid, dir, &shown, &verdict);
            append_line(t, &buf);
        }
        let rec = Record {
            line: n,
            dir,
            pid: None,
            text: line,
            verdict,
        };
        let mut out = Vec::new();
        self.style.source = dir.as_str().to_string();
        let finding = self.style.emit(rec, &mut out, &mut self.stats);
        if finding && !self.quiet {
            let mut err = io::stderr().lock();
            let _ = write!(err, "{}: ", self.name);
            let _ = err.write_all(&out);
        }
    }

    fn finish(&mut self) {
        if !self.quiet {
            let mut err = io::stderr().lock();
            let _ = writeln!(err, "{}: summary", self.name);
            let _ = report::summary(&self.stats, &mut err);
        }
    }
}

/// One write of a whole line under an exclusive lock (flock, as the fake's transcript).
fn append_line(f: &mut File, line: &[u8]) {
    let _ = f.lock();
    let _ = f.write_all(line);
    let _ = f.unlock();
}

/// A transcript entry in the seed's format. A JSON line is embedded verbatim as `msg`, so a
/// reader gets the exact bytes back; anything else is `raw` (or `hex` when not UTF-8). The
/// engine's view is recorded with the seed's keys (`violation`, `ignored`, `reply_to`), plus
/// `missing`.
fn write_entry(
    t: &mut impl Write,
    pid: i32,
    dir: Dir,
    line: &[u8],
    v: &crate::Verdict,
) -> io::Result<()> {
    write!(
        t,
        "{{\"pid\":{pid},\"t\":{},\"dir\":\"{}\",",
        Analyzer::stamp(),
        dir.as_str()
    )?;
    let body = line.strip_suffix(b"\r").unwrap_or(line);
    let is_json = std::str::from_utf8(body).is_ok()
        && !body.iter().all(u8::is_ascii_whitespace)
        && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
    if is_json && line.len() == body.len() {
        t.write_all(b"\"msg\":")?;
        t.write_all(body)?;
    } else if let Ok(s) = std::str::from_utf8(line) {
        write!(t, "\"raw\":{}", serde_json::Value::from(s))?;
    } else {
        write!(t, "\"hex\":\"{}\"", to_hex(line))?;
    }
    if let Some(e) = v.error() {
        write!(
            t,
            ",\"violation\":{}",
            serde_json::Value::from(e.message.as_str())
        )?;
    } else if let Some(m) = &v.violation {
        write!(t, ",\"violation\":{}", serde_json::Value::from(m.as_str()))?;
    } else if v.kind == crate::Kind::Unparsed && dir == Dir::In {
        let why = if v.outcome == Outcome::Close {
            "not UTF-8 (the server closes the connection)"
        } else {
            "not a JSON-RPC message (no reply)"
        };
        write!(t, ",\"violation\":\"{why}\"")?;
    }
    if !v.ignored.is_empty() {
        write!(t, ",\"ignored\":{}", serde_json::json!(v.ignored))?;
    }
    if !v.missing.is_empty() {
        write!(t, ",\"missing\":{}", serde_json::json!(v.missing))?;
    }
    if let Some(m) = &v.reply_to {
        write!(t, ",\"reply_to\":{}", serde_json::Value::from(m.as_str()))?;
    }
    writeln!(t, "}}")?;
    t.flush()
}
