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

/// Output read later than this after the start also streams as `outputDelta` (codex waits
/// this long for a quick exit before it streams).
const STREAM_AFTER: Duration = Duration::from_millis(150);

/// Runs the command as the shell tool does (`/bin/bash -lc`, stdout and stderr on one pipe)
/// unless the step scripts its `output` (and `exit_code`). `started` gets the process id once it
/// runs; `delta` each piece of output read after [`STREAM_AFTER`] (at most 8 KiB each), or
/// every piece when `stream_all` (a user's shell command streams from the start).
pub(super) fn run_command(
    scripted: Option<(&str, i64)>,
    command: &str,
    cwd: &str,
    stream_all: bool,
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
        };
    }
    let mut spawn_failed = |e: std::io::Error| {
        let pid = Value::Null;
        started(&pid);
        Ran {
            pid,
            output: json!(format!("Failed to create unified exec process: {e}")),
            code: -1,
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
    started(&pid);
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    // Bytes held back from a delta until they complete a UTF-8 character.
    let mut held = Vec::new();
    loop {
        match std::io::Read::read(&mut reader, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if stream_all || since.elapsed() >= STREAM_AFTER {
                    held.extend_from_slice(&buf[..n]);
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
