//! A command the model runs, run as codex's shell tool runs it.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// What running a command gave, as its item shows it.
pub(super) struct Ran {
    /// The process id (`null` when it could not start).
    pub pid: Value,
    /// stdout and stderr as they arrived (`null` when there was none).
    pub output: Value,
    pub code: i64,
    /// Whether `started` was called (see [`Run::announce_after`]).
    pub announced: bool,
    /// How long it had run when its deadline killed it (see [`Run::deadline`]).
    pub timed_out: Option<Duration>,
    /// stdout and stderr apart (see [`Run::split_streams`]; else all of it is stdout's).
    pub streams: [String; 2],
}

/// How [`run_command`] runs a command beyond the command itself.
#[derive(Clone, Copy, Default)]
pub(super) struct Run {
    /// Every piece of output streams (a user's shell command), not only what comes after
    /// [`STREAM_AFTER`].
    pub stream_all: bool,
    /// Announce the command (`started`) only once it has run this long or its output streams,
    /// never for a quicker exit.
    pub announce_after: Option<Duration>,
    /// Kill it when it runs this long.
    pub deadline: Option<Duration>,
    /// stdout and stderr on pipes of their own (the output joins them as they come).
    pub split_streams: bool,
}

/// The item's output is capped: the first and last half MiB, the rest counted (codex's
/// head/tail buffer).
const OUTPUT_CAP: usize = 1 << 20;

fn capped(bytes: &[u8]) -> String {
    if bytes.len() <= OUTPUT_CAP {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let half = OUTPUT_CAP / 2;
    format!(
        "{}\n... {} bytes omitted ...\n{}",
        String::from_utf8_lossy(&bytes[..half]),
        bytes.len() - OUTPUT_CAP,
        String::from_utf8_lossy(&bytes[bytes.len() - half..])
    )
}

/// A command codex runs in its workspace-write sandbox on Linux fails before it starts when a
/// writable root does not exist: codex's bubblewrap binds each root into the sandbox's new
/// root, and the first missing one (in the thread's order) stops it, exit 1, the message on
/// the output (turn scenario 280 on 0.171.0, 0.169.0 and 0.163.0; fidelity s55550001_0218).
/// The bound file's name is bubblewrap's `mkstemp` name (`/bindfileXXXXXX`), new each run.
pub(super) fn sandbox_missing_root(writable_roots: &[String]) -> Option<Ran> {
    let missing = writable_roots
        .iter()
        .find(|r| !std::path::Path::new(r).exists())?;
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let name: String = uuid::Uuid::new_v4().as_bytes()[..6]
        .iter()
        .map(|b| LETTERS[usize::from(*b) % LETTERS.len()] as char)
        .collect();
    Some(Ran {
        pid: json!(std::process::id().to_string()),
        output: json!(format!(
            "bwrap: Can't bind mount /bindfile{name} on /newroot{missing}: Unable to mount \
             source on destination: No such file or directory\n"
        )),
        code: 1,
        announced: false,
        timed_out: None,
        streams: Default::default(),
    })
}

/// codex's error for a command its deadline killed, as a user's shell command reports it:
/// the sandbox's `Timeout` in Rust's debug form, with the output read so far (stdout, stderr,
/// and both as they came) and how long it ran.
pub(super) fn timeout_error(ran: &Ran, after: Duration) -> String {
    let stream = |t: &str| format!("StreamOutput {{ text: {t:?}, truncated_after_lines: None }}");
    format!(
        "execution error: Sandbox(Timeout {{ output: ExecToolCallOutput {{ exit_code: 124, \
         stdout: {}, stderr: {}, aggregated_output: {}, duration: {after:?}, timed_out: true }} \
         }})",
        stream(&ran.streams[0]),
        stream(&ran.streams[1]),
        stream(ran.output.as_str().unwrap_or_default())
    )
}

/// Whether codex judges a sandboxed command's failure the sandbox's denial
/// (`is_likely_sandbox_denied`): a non-zero exit whose output names one of the sandbox's
/// usual refusals, any case (turn scenario 281 on 0.171.0, 0.169.0 and 0.163.0: exit 1 and 2
/// with a keyword denied; exit 3 without one, and exit 0 with one, not).
pub(super) fn sandbox_denied(ran: &Ran) -> bool {
    const KEYWORDS: [&str; 7] = [
        "operation not permitted",
        "permission denied",
        "read-only file system",
        "seccomp",
        "sandbox",
        "landlock",
        "failed to write file",
    ];
    let output = ran.output.as_str().unwrap_or_default().to_lowercase();
    ran.code != 0 && KEYWORDS.iter().any(|k| output.contains(k))
}

/// Output read later than this after the start also streams as `outputDelta` (codex waits
/// this long for a quick exit before it streams: unified exec's early-exit grace period).
pub(super) const STREAM_AFTER: Duration = Duration::from_millis(150);

/// Runs the command as the shell tool does (`/bin/bash -lc`, stdout and stderr on one pipe)
/// unless the step scripts its `output` (and `exit_code`). `started` gets the process id once it
/// runs (see [`Run::announce_after`]); `delta` each piece of output read after
/// [`STREAM_AFTER`] (at most 8 KiB each), or every piece with [`Run::stream_all`].
pub(super) fn run_command(
    scripted: Option<(&str, i64)>,
    command: &str,
    cwd: &str,
    run: Run,
    started: &mut dyn FnMut(&Value),
    delta: &mut dyn FnMut(&str),
) -> Ran {
    if let Some((out, code)) = scripted {
        let pid = json!(std::process::id().to_string());
        started(&pid);
        return Ran {
            pid,
            output: if out.is_empty() {
                Value::Null
            } else {
                json!(out)
            },
            code,
            announced: true,
            timed_out: None,
            streams: Default::default(),
        };
    }
    let mut spawn_failed = |e: std::io::Error| {
        let pid = Value::Null;
        started(&pid);
        Ran {
            pid,
            output: json!(format!("Failed to create unified exec process: {e}")),
            code: -1,
            announced: true,
            timed_out: None,
            streams: Default::default(),
        }
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return spawn_failed(e),
    };
    // stderr on a pipe of its own when the streams are told apart, else on stdout's.
    let (err_reader, err_writer) = if run.split_streams {
        match std::io::pipe() {
            Ok((r, w)) => (Some(r), w),
            Err(e) => return spawn_failed(e),
        }
    } else {
        match writer.try_clone() {
            Ok(w) => (None, w),
            Err(e) => return spawn_failed(e),
        }
    };
    let mut cmd = std::process::Command::new("/bin/bash");
    cmd.arg("-lc")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(err_writer);
    crate::fake::shell::signals_as_codex_gives_them(&mut cmd);
    let spawned = cmd.spawn();
    // The parent's copies of the pipes' write ends go with `cmd`: end of output is the child's.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return spawn_failed(e),
    };
    let since = Instant::now();
    let pid = json!(child.id().to_string());
    let mut announced = run.announce_after.is_none();
    if announced {
        started(&pid);
    }
    // The output, read on threads of their own so that the announcement and the deadline can
    // come on time; each piece tagged with its stream (true: stderr).
    let (tx, rx) = std::sync::mpsc::channel::<(bool, Vec<u8>)>();
    let read = |mut reader: std::io::PipeReader, is_err: bool| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match std::io::Read::read(&mut reader, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send((is_err, buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    };
    read(reader, false);
    if let Some(r) = err_reader {
        read(r, true);
    }
    drop(tx);
    let mut streams: [Vec<u8>; 2] = Default::default();
    let mut out = Vec::new();
    // Bytes held back from a delta until they complete a UTF-8 character.
    let mut held = Vec::new();
    let mut timed_out = None;
    loop {
        // The next moment something is due: the announcement, else the deadline.
        let due = run
            .announce_after
            .filter(|_| !announced)
            .into_iter()
            .chain(run.deadline)
            .min();
        let (is_err, chunk) = match due {
            Some(due) => match rx.recv_timeout(due.saturating_sub(since.elapsed())) {
                Ok(c) => c,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if run.deadline.is_some_and(|d| since.elapsed() >= d) {
                        timed_out = Some(since.elapsed());
                        let _ = child.kill();
                        break;
                    }
                    announced = true;
                    started(&pid);
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            },
            None => match rx.recv() {
                Ok(c) => c,
                Err(_) => break,
            },
        };
        out.extend_from_slice(&chunk);
        streams[usize::from(is_err)].extend_from_slice(&chunk);
        if run.stream_all || since.elapsed() >= STREAM_AFTER {
            if !announced {
                announced = true;
                started(&pid);
            }
            held.extend_from_slice(&chunk);
            let cut = match std::str::from_utf8(&held) {
                Ok(_) => held.len(),
                Err(e) => e.valid_up_to(),
            };
            if cut > 0 {
                let text = String::from_utf8_lossy(&held[..cut]).into_owned();
                held.drain(..cut);
                delta(&text);
            }
        }
    }
    let code = match child.wait() {
        Ok(st) => exit_code(st),
        Err(_) => -1,
    };
    Ran {
        pid,
        output: if out.is_empty() {
            Value::Null
        } else {
            json!(capped(&out))
        },
        code,
        announced,
        timed_out,
        streams: streams.map(|s| String::from_utf8_lossy(&s).into_owned()),
    }
}

/// An exit status as codex reports it: the code, or 128 + the signal that ended it.
pub fn exit_code(st: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .map(i64::from)
        .or_else(|| st.signal().map(|s| 128 + i64::from(s)))
        .unwrap_or(-1)
}

/// What spawning a program in `dir` fails with before the program is looked at, as the OS
/// says it: a missing directory (`NotFound`), or a file in its place (`ENOTDIR`).
pub fn spawn_dir_error(dir: &str) -> Option<std::io::Error> {
    match std::fs::metadata(dir) {
        Err(e) => Some(e),
        Ok(m) if !m.is_dir() => Some(std::io::Error::from_raw_os_error(libc::ENOTDIR)),
        Ok(_) => None,
    }
}
