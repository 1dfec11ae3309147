//! A server under test, as the client sees it: the fake or the real binary (behind
//! `codex-wire scripted`) or a recording of it (`codex-wire record`), started in a run's
//! layout, its messages read on a thread of their own.

use super::case::PROVIDER;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Which server plays the other side.
/// The scripted model's address as the fake is told it (it plays turns itself).
const FAKE_MODEL_URL: &str = "http://127.0.0.1:9/v1";

pub enum Server<'a> {
    /// `codex-wire fake` (this binary), as codex `version` (None: the newest).
    Fake {
        bin: &'a Path,
        version: Option<&'a str>,
    },
    /// The real binary behind `codex-wire scripted` (the scripted model in front of it).
    Real { bin: &'a Path, codex: &'a Path },
    /// The real binary behind `codex-wire record --out OUT --upstream URL`: the recording of
    /// a run whose model is the one at `upstream`.
    Record {
        bin: &'a Path,
        codex: &'a Path,
        out: &'a Path,
        upstream: &'a str,
    },
}

impl Server<'_> {
    /// Where a run's transcript is written.
    pub fn transcript(&self, l: &Layout) -> PathBuf {
        match self {
            Server::Record { out, .. } => out.join("transcript.jsonl"),
            _ => l.transcript(),
        }
    }
}

/// Where a run lives.
pub struct Layout {
    pub root: PathBuf,
    pub state: PathBuf,
    pub codex_home: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> std::io::Result<Layout> {
        let l = Layout::at(root);
        for d in [&l.state, &l.codex_home, &l.home, &l.work] {
            std::fs::create_dir_all(d)?;
        }
        Ok(l)
    }

    /// The layout under `root`, as [`Layout::new`] makes it, without touching the disk.
    pub fn at(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            state: root.join("state"),
            codex_home: root.join("codex_home"),
            home: root.join("home"),
            work: root.join("work"),
        }
    }

    pub fn transcript(&self) -> PathBuf {
        self.state.join("transcript.jsonl")
    }
}

/// A running server and the client's view of it.
pub(crate) struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) rx: Receiver<Value>,
    next_id: i64,
}

impl Peer {
    /// `provider`: the provider the real server is pointed at the scripted model through
    /// (`None`: `scripted`'s own).
    pub(crate) fn spawn(
        server: &Server,
        l: &Layout,
        args: &[String],
        provider: Option<&str>,
    ) -> Result<Peer, String> {
        let mut cmd = match server {
            Server::Fake { bin, version } => {
                let mut c = Command::new(bin);
                c.arg("fake").arg("--state-dir").arg(&l.state);
                if let Some(v) = version {
                    c.arg("--codex-version").arg(v);
                }
                // The session-flags layer `scripted` gives the real server, at an address
                // nothing listens on (the diff masks ports and layer versions).
                let config =
                    std::fs::read_to_string(l.codex_home.join("config.toml")).unwrap_or_default();
                let provider = provider.filter(|p| *p != PROVIDER);
                c.arg("app-server").args(crate::model::with_model_overrides(
                    args,
                    &config,
                    FAKE_MODEL_URL,
                    provider,
                ));
                c
            }
            Server::Real { bin, codex } => {
                let mut c = Command::new(bin);
                c.arg("scripted").arg("--state-dir").arg(&l.state);
                if let Some(p) = provider.filter(|p| *p != PROVIDER) {
                    c.arg("--provider").arg(p);
                }
                c.arg("--").arg(codex).arg("app-server").args(args);
                c
            }
            Server::Record {
                bin,
                codex,
                out,
                upstream,
            } => {
                let mut c = Command::new(bin);
                c.arg("record")
                    .arg("--out")
                    .arg(out)
                    .arg("--upstream")
                    .arg(upstream)
                    .arg("--")
                    .arg(codex)
                    .arg("app-server")
                    .args(args);
                c
            }
        };
        // Only what the case sets: no credentials or settings of the machine leak in.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            // codex-wire's own turn-facts knob (`cargo xtask add-version`) is not the machine's.
            let ours = k == crate::fake::TURN_FACTS_ENV;
            if (k.starts_with("CODEX") || k.starts_with("OPENAI") || k == "RUST_LOG") && !ours {
                cmd.env_remove(&k);
            }
        }
        let mut child = cmd
            .env("HOME", &l.home)
            .env("CODEX_HOME", &l.codex_home)
            .current_dir(&l.work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Peer {
            stdin: child.stdin.take(),
            child,
            rx,
            next_id: 0,
        })
    }

    pub(crate) fn send(&mut self, msg: &Value) -> Result<(), String> {
        self.send_bytes(format!("{msg}\n").as_bytes())
    }

    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) -> Result<(), String> {
        let w = self.stdin.as_mut().ok_or("stdin closed")?;
        w.write_all(bytes)
            .and_then(|_| w.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// Ends the server with `sig` as the recording's ended (SIGKILL: as a crash, the codex
    /// process itself; another signal goes to the process the client started, which passes
    /// it on).
    pub(crate) fn signal(mut self, server: &Server, l: &Layout, sig: i32) {
        if sig == libc::SIGKILL {
            return self.crash(server, l);
        }
        // SAFETY: kill(2) on a child this run started.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
        self.end();
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<i64, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Kills the server process outright, as a crash would: the fake itself, or the real codex
    /// under `scripted` (its pid from the transcript's last `spawn`; the wrapper then ends).
    pub(crate) fn crash(&mut self, server: &Server, l: &Layout) {
        let pid = match server {
            Server::Fake { .. } => Some(self.child.id() as i32),
            Server::Real { .. } | Server::Record { .. } => {
                std::fs::read_to_string(server.transcript(l))
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .find(|e| e["event"] == "spawn")
                    .and_then(|e| e["pid"].as_i64())
                    .map(|p| p as i32)
            }
        };
        if let Some(pid) = pid {
            // SAFETY: kill(2) on a pid this run started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        self.end();
    }

    pub(crate) fn close(mut self) {
        self.end();
    }

    /// Closes the server's input and waits for it to end (10 s, then it is killed).
    pub(crate) fn end(&mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
