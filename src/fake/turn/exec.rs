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
    /// Whether `started` was called (see [`run_command`]'s `announce_after`).
    pub announced: bool,
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
    })
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
/// runs — with `announce_after`, only once it has run that long or its output streams, never
/// for a quicker exit (`Ran::announced`); `delta` each piece of output read after
/// [`STREAM_AFTER`] (at most 8 KiB each), or every piece when `stream_all` (a user's shell
/// command streams from the start).
pub(super) fn run_command(
    scripted: Option<(&str, i64)>,
    command: &str,
    cwd: &str,
    stream_all: bool,
    announce_after: Option<Duration>,
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
        }
    };
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return spawn_failed(e),
    };
    let mut cmd = std::process::Command::new("/bin/bash");
    cmd.arg("-lc")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null());
    crate::fake::shell::signals_as_codex_gives_them(&mut cmd);
    match writer.try_clone() {
        Ok(w2) => {
            cmd.stdout(writer).stderr(w2);
        }
        Err(e) => return spawn_failed(e),
    }
    let spawned = cmd.spawn();
    // The parent's copies of the pipe's write end go with `cmd`: end of output is the child's.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return spawn_failed(e),
    };
    let since = Instant::now();
    let pid = json!(child.id().to_string());
    let mut announced = announce_after.is_none();
    if announced {
        started(&pid);
    }
    // The output, read on a thread of its own so that the announcement can come on time.
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match std::io::Read::read(&mut reader, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut out = Vec::new();
    // Bytes held back from a delta until they complete a UTF-8 character.
    let mut held = Vec::new();
    loop {
        let chunk = match announce_after.filter(|_| !announced) {
            Some(after) => match rx.recv_timeout(after.saturating_sub(since.elapsed())) {
                Ok(c) => c,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
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
        if stream_all || since.elapsed() >= STREAM_AFTER {
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
