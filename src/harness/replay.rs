//! A recorded client, played again (`codex-wire record` writes it, the harness plays it against
//! the fake or the real server): the client's own lines, byte for byte, each sent once the
//! server has sent what the recording shows it had sent before it; the values the client took
//! from the server (thread, turn, item ids) are taken from the replay's server instead, and the
//! recording's paths (cwd, `CODEX_HOME`, `HOME`) become the run's.

use super::case::{Case, ClientStep, Recorded};
use super::peer::{Layout, Peer, Server};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// How a server message is counted: `reply:<id>` (the answer to the client's request `id`),
/// `request:<method>` (a server request), or the notification's method.
pub fn key_of(msg: &Value) -> Option<String> {
    match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
        (Some(m), Some(_)) => Some(format!("request:{m}")),
        (Some(m), None) => Some(m.to_string()),
        (None, Some(id)) => Some(format!("reply:{id}")),
        (None, None) => None,
    }
}

/// Messages whose position the real server itself does not keep (`diff`'s floating and
/// optional ones): a replay does not wait on them.
pub fn background(key: &str) -> bool {
    crate::diff::FLOATING.contains(&key) || crate::diff::OPTIONAL.contains(&key)
}

/// How long a server may stay silent before a wait that may go unmet gives up.
const QUIET: Duration = Duration::from_secs(10);

/// What the replay's servers have sent: counts in the current process, messages of every
/// process (a client takes a thread id from one process to resume it in the next).
#[derive(Default)]
struct Seen {
    process: usize,
    count: HashMap<String, u64>,
    msgs: HashMap<(usize, String), Value>,
}

impl Seen {
    fn take(&mut self, msg: Value) {
        if let Some(k) = key_of(&msg) {
            let n = self.count.entry(k.clone()).or_insert(0);
            self.msgs.insert((self.process, format!("{k}#{n}")), msg);
            *n += 1;
        }
    }

    /// A new server process: counting starts again.
    fn next_process(&mut self, first: bool) {
        if !first {
            self.process += 1;
        }
        self.count.clear();
    }

    fn has(&self, need: &BTreeMap<String, u64>) -> bool {
        need.iter()
            .all(|(k, n)| self.count.get(k).copied().unwrap_or(0) >= *n)
    }

    /// Reads the server until `need` holds. `strict`: a timeout is the run's failure.
    fn wait(
        &mut self,
        p: &mut Peer,
        need: &BTreeMap<String, u64>,
        limit: Duration,
        strict: bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        while !self.has(need) {
            let mut left = deadline.saturating_duration_since(Instant::now());
            if !strict {
                // A wait that may go unmet ends once the server has been quiet a while.
                left = left.min(QUIET);
            }
            match p.rx.recv_timeout(left) {
                Ok(m) => self.take(m),
                Err(_) if strict => {
                    let missing: Vec<String> = need
                        .iter()
                        .filter(|(k, n)| self.count.get(*k).copied().unwrap_or(0) < **n)
                        .map(|(k, n)| format!("{k} ×{n}"))
                        .collect();
                    return Err(format!(
                        "the server went quiet (waiting for {})",
                        missing.join(", ")
                    ));
                }
                Err(_) => return Ok(()),
            }
        }
        // What has arrived meanwhile is counted too (the next step may need it).
        while let Ok(m) = p.rx.try_recv() {
            self.take(m);
        }
        Ok(())
    }

    /// The message `<key>#<n>` of server process `process`, waiting for it when it is the
    /// current one's.
    fn get(
        &mut self,
        p: &mut Peer,
        process: usize,
        name: &str,
        limit: Duration,
    ) -> Result<&Value, String> {
        if process == self.process {
            let (k, n) = name.rsplit_once('#').ok_or("a binding without #n")?;
            let n: u64 = n.parse().map_err(|_| "a binding with a bad #n")?;
            let need = BTreeMap::from([(k.to_string(), n + 1)]);
            self.wait(p, &need, limit, true)?;
        }
        self.msgs
            .get(&(process, name.to_string()))
            .ok_or_else(|| format!("{name} (server process {process}) never came"))
    }
}

/// The recording's paths → the run's, longest first.
fn path_map(rec: &Recorded, l: &Layout) -> Vec<(String, String)> {
    let mut m: Vec<(String, String)> = [
        (&rec.paths.cwd, &l.work),
        (&rec.paths.codex_home, &l.codex_home),
        (&rec.paths.home, &l.home),
    ]
    .into_iter()
    .filter_map(|(from, to)| Some((from.clone()?, to.to_string_lossy().into_owned())))
    .filter(|(from, _)| from.len() > 1)
    .collect();
    m.sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
    m
}

/// `text` with the recording's paths made the run's.
pub fn relocate(text: &str, rec: &Recorded, l: &Layout) -> String {
    let mut out = text.to_string();
    for (from, to) in path_map(rec, l) {
        out = out.replace(&from, &to);
    }
    out
}

/// Plays the recorded client against `server` in the layout `l` (set up by the harness).
pub fn play(case: &Case, rec: &Recorded, server: &Server, l: &Layout) -> Result<(), String> {
    let limit = Duration::from_secs(case.wait_secs.unwrap_or(60));
    let mut peer: Option<Peer> = None;
    let mut seen = Seen::default();
    let mut first = true;
    let result = (|| -> Result<(), String> {
        for step in &rec.steps {
            match step {
                ClientStep::Spawn {
                    args,
                    config_toml,
                    provider,
                } => {
                    if let Some(p) = peer.take() {
                        p.close();
                    }
                    std::fs::write(
                        l.codex_home.join("config.toml"),
                        relocate(config_toml, rec, l),
                    )
                    .map_err(|e| e.to_string())?;
                    let args: Vec<String> = args.iter().map(|a| relocate(a, rec, l)).collect();
                    peer = Some(Peer::spawn(server, l, &args, provider.as_deref())?);
                    seen.next_process(first);
                    first = false;
                }
                ClientStep::Send {
                    line,
                    hex,
                    after,
                    bind,
                    answers,
                } => {
                    let p = peer.as_mut().ok_or("a line before any server started")?;
                    seen.wait(p, after, limit, true)?;
                    if let Some(h) = hex {
                        p.send_bytes(&crate::validate::input::from_hex(h).unwrap_or_default())?;
                        continue;
                    }
                    let mut text = relocate(line, rec, l);
                    for b in bind {
                        let now = seen
                            .get(p, b.process, &b.from, limit)?
                            .pointer(&b.at)
                            .cloned();
                        if let Some(v) = now.as_ref().and_then(Value::as_str) {
                            text = text.replace(&b.value, v);
                        }
                    }
                    if let Some(req) = answers {
                        let current = seen.process;
                        let id = seen.get(p, current, req, limit)?["id"].clone();
                        if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
                            v["id"] = id;
                            text = v.to_string();
                        }
                    }
                    p.send_bytes(format!("{text}\n").as_bytes())?;
                }
                ClientStep::Close { after, settle } => {
                    let mut p = peer.take().ok_or("a close before any server started")?;
                    // Not required: nothing the client sent depends on them, and a message the
                    // recording has and the replay lacks (a race of the real server's, such as a
                    // repeated status change) is the comparison's to report.
                    seen.wait(&mut p, after, limit, false)?;
                    seen.wait(&mut p, settle, Duration::from_secs(2), false)?;
                    p.close();
                }
                ClientStep::Signal { signal, after } => {
                    let mut p = peer.take().ok_or("a signal before any server started")?;
                    seen.wait(&mut p, after, limit, true)?;
                    p.signal(server, l, *signal);
                }
                ClientStep::Wait { after } => {
                    let mut p = peer.take().ok_or("no server to wait for")?;
                    seen.wait(&mut p, after, limit, false)?;
                    p.close();
                }
            }
        }
        Ok(())
    })();
    if let Some(p) = peer {
        p.close();
    }
    result
}
