//! One fake process: its state ([`Fake`]), signals turned into transcript entries, and the
//! transport its command line asks for, whose connections go to the handlers. The top room:
//! the only one that knows them all.

use super::cli::Args;
use super::handlers;
use super::listen::{self, Connection, Host, Sink};
use super::rpc::{Conn, Fake};
use super::state::scenario;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// How long codex 0.171.0 takes to load its configuration and fail on a bad one (measured:
/// 150–250 ms on this machine's kind).
const STARTUP_MS: u64 = 200;

/// Runs one fake process: its state, the transport its command line asks for.
pub fn run(a: &Args, dir: PathBuf, args: &[String]) -> ExitCode {
    let fake = Fake::new(dir, &a.overrides, a.protocol.unwrap_or_else(crate::newest));
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    fake.record(json!({"event": "spawn", "argv": args, "ppid": ppid}));
    // A configuration codex refuses: it says why and exits without answering. It takes codex
    // a moment to load its configuration: the lines a client writes meanwhile are in the
    // transcript, as a proxy in front of the real server records them.
    if let Some(e) = fake.config().startup_error() {
        let early = fake.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines().map_while(Result::ok) {
                let msg = serde_json::from_str::<serde_json::Value>(&line).ok();
                early.record(match msg {
                    Some(m) => json!({"dir": "in", "msg": m}),
                    None => json!({"dir": "in", "raw": line}),
                });
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(STARTUP_MS));
        eprintln!("Error: {e}");
        fake.record(json!({"event": "exit", "code": 1}));
        fake.transcript.flush();
        return ExitCode::FAILURE;
    }
    watch_signals(fake.clone());
    // After the signal mask: a thread started before it would take SIGTERM by default. At the
    // lowest priority, so that it never delays what the fake says at start-up (a kept
    // session's start-up order raced once under load when it ran at the normal one).
    let protocol = fake.protocol;
    std::thread::spawn(move || {
        // SAFETY: gettid and setpriority on the calling thread, no pointers involved.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
        }
        super::defaults::warm(protocol)
    });
    let listen = a.listen.as_deref().unwrap_or("stdio://");
    let token = match (&a.ws_auth, &a.ws_token_file) {
        (None, _) => None,
        (Some(m), Some(f)) if m == "capability-token" => match std::fs::read_to_string(f) {
            Ok(t) => Some(t.trim().to_string()),
            Err(e) => {
                eprintln!(
                    "Error: failed to read websocket auth secret {}: {}",
                    f.display(),
                    e
                );
                return ExitCode::FAILURE;
            }
        },
        (Some(m), None) if m == "capability-token" => {
            eprintln!("Error: `--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` is set");
            return ExitCode::FAILURE;
        }
        (Some(m), _) => {
            eprintln!("error: invalid value '{m}' for '--ws-auth <MODE>'");
            return ExitCode::from(2);
        }
    };
    let code = listen::serve(Arc::new(Process { fake }), listen, token);
    super::mcp::stop_all();
    code
}

/// The process as its transports see it: connections answered by the handlers.
struct Process {
    fake: Arc<Fake>,
}

impl Host for Process {
    fn connect(&self, sink: Sink) -> Arc<dyn Connection> {
        Conn::new(self.fake.clone(), sink, handlers::dispatch)
    }
    fn record(&self, event: Value) {
        self.fake.record(event);
    }
    fn scenario(&self) -> Value {
        scenario(&self.fake.dir)
    }
}

/// SIGTERM/SIGINT/SIGHUP are blocked in every thread and taken by `sigwait` here, so the exit
/// is recorded before the process goes (a handler could not safely write the transcript).
fn watch_signals(fake: Arc<Fake>) {
    // SAFETY: plain libc signal-set calls on a zeroed local set; done before other threads
    // start (except none), so every later thread inherits the mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let _ = std::thread::Builder::new()
            .name("fake-signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                if libc::sigwait(&set, &mut sig) == 0 {
                    let how = match sig {
                        libc::SIGTERM => "SIGTERM",
                        libc::SIGINT => "SIGINT",
                        _ => "SIGHUP",
                    };
                    fake.record(json!({"event": "exit", "how": how}));
                    // The MCP servers the threads started end with the process.
                    super::mcp::stop_all();
                    // Entries a transport holds back must not die with the process.
                    fake.transcript.flush();
                    // As codex 0.171.0: SIGTERM is a graceful shutdown (exit 0); SIGINT and
                    // SIGHUP end it by the signal itself.
                    if sig == libc::SIGTERM {
                        std::process::exit(0);
                    }
                    libc::signal(sig, libc::SIG_DFL);
                    let mut only: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut only);
                    libc::sigaddset(&mut only, sig);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
                    libc::raise(sig);
                    std::process::exit(128 + sig);
                }
            });
    }
}
