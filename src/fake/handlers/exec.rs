//! `command/exec` without streaming: a standalone command run as codex's app-server runs it
//! (app-server `command_exec.rs`, `CommandExecManager::start` and `run_command`). The params
//! are refused first in codex's order (`rules.rs`); then the sandbox is the request's
//! (`permissionProfile`, `sandboxPolicy`) or the configured one, the working directory the
//! request's resolved against the server's, each stream capped (`outputBytesCap`, else 1 MiB),
//! and the deadline (`timeoutMs`, else 10 s) ends the process with exit code 124 and what it
//! wrote so far. The fake runs the program itself, unsandboxed. What the sandbox changes that a
//! client sees is how a program that cannot start fails: inside codex's sandbox helper the exec
//! fails after the spawn, and the helper's panic is the command's stderr with exit code 101;
//! without it the spawn fails, an internal error (each probed on 0.163.0, 0.169.0, 0.171.0).
//! Streaming and PTY runs (`tty`, `streamStdin`, `streamStdoutStderr`) are not modeled, but for
//! a program that is not there when only stdin streams (it fails as an unstreamed run does).

use super::view::H;
use crate::fake::rpc::INTERNAL_PREFIX;
use crate::fake::settings;
use crate::fake::turn;
use serde_json::{json, Value};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// codex's `DEFAULT_OUTPUT_BYTES_CAP` (utils/pty): per stream.
const OUTPUT_CAP: usize = 1 << 20;
/// codex's `DEFAULT_EXEC_COMMAND_TIMEOUT_MS` (core/exec.rs).
const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// codex's `EXEC_TIMEOUT_EXIT_CODE`.
const TIMEOUT_EXIT_CODE: i64 = 124;
/// A panicking Rust program's exit code: codex's sandbox helper when the exec fails.
const HELPER_PANIC_EXIT_CODE: i64 = 101;
/// How long codex's sandbox helper takes to set the sandbox up before it execs the program:
/// a deadline shorter than this ends the command before it ran (124, no output). Measured on
/// 0.171.0 with a program that cannot start: `timeoutMs` 2-20 gave 124, 40 and 80 the helper's
/// panic; a deadline between is the real server's own race.
const HELPER_START: Duration = Duration::from_millis(30);
/// Where the helper panics when none of the version's recordings shows it (0.171.0).
const HELPER_PANIC_AT: &str = "linux-sandbox/src/linux_run_main.rs:1361:5";

fn internal(message: String) -> String {
    format!("{INTERNAL_PREFIX}{message}")
}

/// The helper's panic report when it cannot exec `program` (its thread is pid 2 of the
/// sandbox's pid namespace).
pub fn helper_panic(at: &str, program: &str, error: &std::io::Error) -> String {
    format!(
        "\nthread 'main' (2) panicked at {at}:\nFailed to execvp {program}: {error}\nstack \
         backtrace:\nnote: Some details are omitted, run with `RUST_BACKTRACE=full` for a \
         verbose backtrace.\n"
    )
}

/// The first `cap` bytes of `bytes`, as codex turns captured output into text (lossy UTF-8).
fn text(bytes: &[u8], cap: usize) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(cap)]).into_owned()
}

impl H<'_> {
    /// Whether the command runs in codex's sandbox: the request's permission profile (a
    /// refused one is `invalid permission profile: …`), else its sandbox policy, else the
    /// configured permissions. `None`: a profile the fake does not resolve.
    fn exec_sandboxed(&self, p: &Value) -> Result<Option<bool>, String> {
        if let Some(profile) = p["permissionProfile"].as_str() {
            let has_table = self.fake.config().has_permissions_table();
            return match settings::profile_mode(profile) {
                Ok(mode) => Ok(Some(mode != "danger-full-access")),
                Err(_) if has_table && !profile.starts_with(':') => Ok(None),
                Err(e) => Err(format!(
                    "invalid permission profile: {}",
                    e.strip_prefix("failed to load configuration: ")
                        .unwrap_or(&e)
                )),
            };
        }
        if let Some(kind) = p["sandboxPolicy"]["type"].as_str() {
            return Ok(Some(!matches!(
                kind,
                "dangerFullAccess" | "externalSandbox"
            )));
        }
        Ok(Some(!self.fake.config().full_access()))
    }

    /// `command/exec`, once the params passed codex's checks.
    pub(super) fn command_exec(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.command_exec_refusals(p)?;
        let on = |k: &str| p[k] == true;
        // The permissions are resolved into the exec request before codex's process manager
        // checks the streaming params (fidelity s16160001_0220).
        let sandboxed = self.exec_sandboxed(p)?;
        self.command_exec_size(p)?;
        let streams = on("tty") || on("streamStdin") || on("streamStdoutStderr");
        if streams && p["processId"].is_null() {
            return Err(
                "command/exec tty or streaming requires a client-supplied processId".into(),
            );
        }
        let argv = super::view::strs(&p["command"]);
        // A run that streams only its stdin and whose program is a path that is not there
        // fails before anything streams, as an unstreamed one does (fidelity s31310001_0231 on
        // 0.169.0: the sandbox helper's panic in the result); other streaming is not modeled.
        let unspawnable = argv
            .first()
            .is_some_and(|prog| prog.contains('/') && !std::path::Path::new(prog).exists());
        if streams && !(unspawnable && !on("tty") && !on("streamStdoutStderr")) {
            // A sandboxed run whose deadline passes before the helper starts ends with nothing
            // streamed, as an unstreamed one does (fidelity s34340001_0363: a tty run with
            // `timeoutMs` 0 on 0.171.0).
            let early = p["timeoutMs"]
                .as_u64()
                .is_some_and(|ms| Duration::from_millis(ms) < HELPER_START);
            if sandboxed == Some(true) && early && !on("disableTimeout") {
                self.result(
                    id,
                    json!({"exitCode": TIMEOUT_EXIT_CODE, "stdout": "", "stderr": ""}),
                );
                return Ok(());
            }
            // Run unsandboxed, a program that is not there cannot be spawned, streamed or not
            // (fidelity s34340001_0885 on 0.171.0: a streamed run, both real runs).
            if sandboxed == Some(false) && unspawnable {
                let e = std::io::Error::from_raw_os_error(libc::ENOENT);
                return Err(internal(format!("failed to spawn command: {e}")));
            }
            if sandboxed == Some(true) && unspawnable && !on("tty") {
                return self.helper_panic_streamed(id, p, argv[0]);
            }
            return self.not_modeled("command/exec");
        }
        let Some(sandboxed) = sandboxed else {
            return self.not_modeled("command/exec");
        };
        let Some((program, args)) = argv.split_first() else {
            return Err("command must not be empty".into());
        };
        let cwd = self.exec_cwd(p);
        // The sandbox helper is spawned in the working directory: a missing one fails the
        // spawn either way.
        if let Some(e) = turn::spawn_dir_error(&cwd) {
            return Err(internal(format!("failed to spawn command: {e}")));
        }
        let cap = match p["outputBytesCap"].as_u64() {
            _ if on("disableOutputCap") => usize::MAX,
            Some(c) => usize::try_from(c).unwrap_or(usize::MAX),
            None => OUTPUT_CAP,
        };
        let deadline = match p["timeoutMs"].as_u64() {
            _ if on("disableTimeout") => None,
            Some(ms) => Some(Duration::from_millis(ms)),
            None => Some(Duration::from_millis(DEFAULT_TIMEOUT_MS)),
        };
        let deadline = match deadline {
            Some(d) if sandboxed && d < HELPER_START => {
                self.result(
                    id,
                    json!({"exitCode": TIMEOUT_EXIT_CODE, "stdout": "", "stderr": ""}),
                );
                return Ok(());
            }
            Some(d) if sandboxed => Some(d - HELPER_START),
            d => d,
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout ends what it started too.
            .process_group(0);
        crate::fake::shell::signals_as_codex_gives_them(&mut cmd);
        if let Some(env) = p["env"].as_object() {
            for (k, v) in env {
                match v.as_str() {
                    Some(v) => cmd.env(k, v),
                    None => cmd.env_remove(k),
                };
            }
        }
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if sandboxed => {
                let stderr = self.helper_report(program, &e);
                let result = json!({"exitCode": HELPER_PANIC_EXIT_CODE, "stdout": "",
                                    "stderr": text(stderr.as_bytes(), cap)});
                // The helper fails once its sandbox is set up: the answer comes that much later
                // (a Windows sandbox setup's failure, 7-11 ms after its own answer, came first:
                // fidelity s12120001 on 0.163.0).
                let conn = Arc::clone(self.c);
                let id = id.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(HELPER_START);
                    conn.result(&id, result);
                });
                return Ok(());
            }
            Err(e) => return Err(internal(format!("failed to spawn command: {e}"))),
        };
        // codex answers once the process exits, on a task of its own: other requests are
        // answered meanwhile.
        let conn = Arc::clone(self.c);
        let id = id.clone();
        std::thread::spawn(move || {
            let result = wait(child, deadline, cap);
            conn.result(&id, result);
        });
        Ok(())
    }
}

impl H<'_> {
    /// The working directory a command runs in: the request's, resolved against the server's.
    fn exec_cwd(&self, p: &Value) -> String {
        match p["cwd"].as_str() {
            Some(c) => settings::resolve_path(c, &self.fake.cwd),
            None => self.fake.cwd.to_string_lossy().into_owned(),
        }
    }

    /// The sandbox helper's panic report for `program`, where the version's helper panics.
    fn helper_report(&self, program: &str, e: &std::io::Error) -> String {
        let at = self
            .fake
            .turn_facts
            .sandbox_helper_panic_at
            .as_deref()
            .unwrap_or(HELPER_PANIC_AT);
        helper_panic(at, program, e)
    }

    /// A sandboxed run whose program is not there, its output streamed: the helper's panic
    /// comes as two stderr deltas (the report up to its backtrace line, then the note: the
    /// helper writes them apart), then the exit code with no captured output (fidelity
    /// s40400001_0576 on 0.171.0, both real runs; turn scenario 229 on every version).
    fn helper_panic_streamed(&self, id: &Value, p: &Value, program: &str) -> Result<(), String> {
        let cwd = self.exec_cwd(p);
        if let Some(e) = turn::spawn_dir_error(&cwd) {
            return Err(internal(format!("failed to spawn command: {e}")));
        }
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        let report = self.helper_report(program, &e);
        // A cap below the report is not modeled (what `capReached` then shows).
        let cap = p["outputBytesCap"].as_u64().unwrap_or(OUTPUT_CAP as u64);
        if (cap as usize) < report.len() && p["disableOutputCap"] != true {
            return self.not_modeled("command/exec");
        }
        let split = report.find("note: ").unwrap_or(report.len());
        let (first, second) = report.split_at(split);
        let process = p["processId"].clone();
        let (conn, id) = (Arc::clone(self.c), id.clone());
        let (first, second) = (first.to_string(), second.to_string());
        std::thread::spawn(move || {
            std::thread::sleep(HELPER_START);
            for part in [first, second].iter().filter(|s| !s.is_empty()) {
                use base64::Engine;
                let delta = base64::engine::general_purpose::STANDARD.encode(part);
                conn.notify(
                    "command/exec/outputDelta",
                    json!({"processId": process, "stream": "stderr", "deltaBase64": delta,
                           "capReached": false}),
                );
            }
            conn.result(
                &id,
                json!({"exitCode": HELPER_PANIC_EXIT_CODE, "stdout": "", "stderr": ""}),
            );
        });
        Ok(())
    }
}

/// Waits for the process (killing its group at the deadline) and reads both streams.
fn wait(mut child: std::process::Child, deadline: Option<Duration>, cap: usize) -> Value {
    let reader = |s: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut s) = s {
                let _ = s.read_to_end(&mut out);
            }
            out
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let code = loop {
        match child.try_wait() {
            Ok(Some(st)) => break turn::exit_code(st),
            Ok(None) if deadline.is_some_and(|d| start.elapsed() >= d) => {
                // SAFETY: a plain kill(2) of the child's own process group.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break TIMEOUT_EXIT_CODE;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break -1,
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    json!({"exitCode": code, "stdout": text(&out, cap), "stderr": text(&err, cap)})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_panic_names_the_program_and_the_error() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            helper_panic(HELPER_PANIC_AT, "/x/y", &e),
            "\nthread 'main' (2) panicked at linux-sandbox/src/linux_run_main.rs:1361:5:\n\
             Failed to execvp /x/y: No such file or directory (os error 2)\nstack backtrace:\n\
             note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose \
             backtrace.\n"
        );
    }

    #[test]
    fn output_is_capped_per_stream_in_bytes() {
        assert_eq!(
            text(b"\nthread 'main' (2) panicked", 20),
            "\nthread 'main' (2) p"
        );
        assert_eq!(text(b"abc", 0), "");
    }

    #[test]
    fn a_deadline_ends_the_process_group_with_124() {
        let child = Command::new("sh")
            .args(["-c", "echo early; sleep 5; echo late"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("sh");
        let t = Instant::now();
        let v = wait(child, Some(Duration::from_millis(300)), OUTPUT_CAP);
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(
            v,
            json!({"exitCode": 124, "stdout": "early\n", "stderr": ""})
        );
    }
}
