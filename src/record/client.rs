//! The client's part of a recording, read off its transcript: each line the client wrote, what
//! the server had sent before it (so a replay waits for the same), the values it took from the
//! server (ids), and how each server process ended.

use crate::harness::{background, key_of, Bind, ClientStep};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// What one recording process knew when it started (`sessions.jsonl`).
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
pub struct Session {
    /// The recording process (the transcript's `spawn` event names it as `ppid`).
    pub record_pid: u32,
    /// `codex app-server`'s arguments as the client gave them.
    pub args: Vec<String>,
    pub cwd: String,
    pub codex_home: String,
    pub home: Option<String>,
    /// `CODEX_HOME/config.toml` (redacted), empty when there is none.
    pub config_toml: String,
    /// The codex version the proxy judged the traffic as.
    pub version: String,
    /// Directories under the cwd (relative), as found at the start.
    pub dirs: Vec<String>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default)]
    dir: Option<String>,
    #[serde(borrow, default)]
    msg: Option<&'a RawValue>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    hex: Option<String>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    pid: Option<i64>,
    #[serde(default)]
    ppid: Option<u32>,
    #[serde(default)]
    signal: Option<i32>,
}

/// One server process's reading state.
#[derive(Default)]
struct Proc {
    /// Its place among the recording's server processes.
    index: usize,
    count: HashMap<String, u64>,
    waited: HashMap<String, u64>,
    requests: HashMap<String, String>,
    closed: bool,
}

impl Proc {
    /// Counts that grew since the last client line, background messages aside.
    fn after(&mut self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (k, n) in &self.count {
            if !background(k) && self.waited.get(k) != Some(n) {
                out.insert(k.clone(), *n);
                self.waited.insert(k.clone(), *n);
            }
        }
        out
    }

    fn settle(&self) -> BTreeMap<String, u64> {
        self.count
            .iter()
            .filter(|(k, _)| background(k))
            .map(|(k, n)| (k.clone(), *n))
            .collect()
    }

    fn server(&mut self, msg: &Value, origins: &mut HashMap<String, Bind>) {
        let Some(k) = key_of(msg) else { return };
        let n = self.count.entry(k.clone()).or_insert(0);
        let name = format!("{k}#{n}");
        *n += 1;
        if k.starts_with("request:") {
            self.requests.insert(msg["id"].to_string(), name.clone());
        }
        let mut found = Vec::new();
        ids(msg, String::new(), &mut found);
        for (value, at) in found {
            origins.entry(value.clone()).or_insert(Bind {
                value,
                process: self.index,
                from: name.clone(),
                at,
            });
        }
    }
}

/// Strings that are server-made values a client passes back (uuids, the model's item ids,
/// paging cursors), with their JSON pointers.
fn ids(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    let cursor = at.rsplit('/').next().is_some_and(|k| k.ends_with("ursor"));
    match v {
        Value::String(s)
            if crate::diff::is_uuid(s) || crate::diff::is_item_id(s) || (cursor && s.len() > 1) =>
        {
            out.push((s.clone(), at))
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                ids(x, format!("{at}/{i}"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                ids(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// The client's steps, from the transcript of every recorded process (in order) and their
/// sessions. `spawn` returns a process's `Spawn` step from its session.
pub fn steps(
    transcript: &str,
    spawn: &mut dyn FnMut(Option<u32>) -> Result<ClientStep, String>,
) -> Result<Vec<ClientStep>, String> {
    let mut out = Vec::new();
    let mut procs: HashMap<i64, Proc> = HashMap::new();
    // Where each server-made value first appeared, over every process.
    let mut origins: HashMap<String, Bind> = HashMap::new();
    let mut started = 0;
    for (i, text) in transcript.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let l: Line =
            serde_json::from_str(text).map_err(|e| format!("transcript line {}: {e}", i + 1))?;
        let pid = l.pid.unwrap_or(0);
        match (l.event.as_deref(), l.dir.as_deref()) {
            (Some("spawn"), _) => {
                procs.insert(
                    pid,
                    Proc {
                        index: started,
                        ..Proc::default()
                    },
                );
                started += 1;
                out.push(spawn(l.ppid)?);
            }
            (Some("stdin_eof"), _) => {
                let p = procs.entry(pid).or_default();
                p.closed = true;
                out.push(ClientStep::Close {
                    after: p.after(),
                    settle: p.settle(),
                });
            }
            (Some("exit"), _) => {
                let p = procs.remove(&pid).unwrap_or_default();
                if p.closed {
                    continue;
                }
                let mut p = p;
                out.push(match l.signal {
                    Some(signal) => ClientStep::Signal {
                        signal,
                        after: p.after(),
                    },
                    None => ClientStep::Wait { after: p.after() },
                });
            }
            (None, Some("out")) => {
                if let Some(m) = l
                    .msg
                    .and_then(|m| serde_json::from_str::<Value>(m.get()).ok())
                {
                    procs.entry(pid).or_default().server(&m, &mut origins);
                }
            }
            (None, Some("in")) => {
                let p = procs.entry(pid).or_default();
                let after = p.after();
                let Some(raw) = l.msg else {
                    out.push(ClientStep::Send {
                        line: l.raw.unwrap_or_default(),
                        hex: l.hex,
                        after,
                        bind: Vec::new(),
                        answers: None,
                    });
                    continue;
                };
                let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let mut found = Vec::new();
                ids(&v, String::new(), &mut found);
                let mut bind: Vec<Bind> = Vec::new();
                for (value, _) in found {
                    if let Some(b) = origins.get(&value) {
                        if !bind.iter().any(|x| x.value == value) {
                            bind.push(b.clone());
                        }
                    }
                }
                let answer = v.get("method").is_none()
                    && (v.get("result").is_some() || v.get("error").is_some());
                let answers = v
                    .get("id")
                    .filter(|_| answer)
                    .and_then(|id| p.requests.get(&id.to_string()).cloned());
                out.push(ClientStep::Send {
                    line: raw.get().to_string(),
                    hex: None,
                    after,
                    bind,
                    answers,
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_binds_and_answers() {
        let t = [
            r#"{"pid":7,"t":1,"event":"spawn","argv":[],"ppid":5}"#,
            r#"{"pid":7,"t":1,"dir":"in","msg":{"id":0,"method":"thread/start","params":{}}}"#,
            r#"{"pid":7,"t":1,"dir":"out","msg":{"method":"warning","params":{}}}"#,
            r#"{"pid":7,"t":1,"dir":"out","msg":{"id":0,"result":{"thread":{"id":"0199a0b0-0000-7000-8000-000000000001"}}}}"#,
            r#"{"pid":7,"t":1,"dir":"out","msg":{"id":0,"method":"item/commandExecution/requestApproval","params":{"itemId":"call_1_0"}}}"#,
            r#"{"pid":7,"t":1,"dir":"in","msg":{"id":0,"result":{"decision":"accept"}}}"#,
            r#"{"pid":7,"t":1,"dir":"in","msg":{"id":1,"method":"turn/start","params":{"threadId":"0199a0b0-0000-7000-8000-000000000001"}}}"#,
            r#"{"pid":7,"t":1,"event":"stdin_eof"}"#,
            r#"{"pid":7,"t":1,"event":"exit","code":0}"#,
        ]
        .join("\n");
        let mut spawned = Vec::new();
        let steps = steps(&t, &mut |ppid| {
            spawned.push(ppid);
            Ok(ClientStep::Spawn {
                args: Vec::new(),
                config_toml: String::new(),
                provider: None,
            })
        })
        .expect("reads");
        assert_eq!(spawned, [Some(5)]);
        assert_eq!(steps.len(), 5, "{steps:?}");
        let ClientStep::Send { answers, after, .. } = &steps[2] else {
            panic!()
        };
        assert_eq!(
            answers.as_deref(),
            Some("request:item/commandExecution/requestApproval#0")
        );
        assert_eq!(after.get("reply:0"), Some(&1));
        assert!(
            !after.contains_key("warning"),
            "background messages are not waited on"
        );
        let ClientStep::Send { bind, after, .. } = &steps[3] else {
            panic!()
        };
        assert!(after.is_empty());
        assert_eq!(bind.len(), 1);
        assert_eq!(bind[0].from, "reply:0#0");
        assert_eq!(bind[0].at, "/result/thread/id");
        let ClientStep::Close { settle, .. } = &steps[4] else {
            panic!()
        };
        assert_eq!(settle.get("warning"), Some(&1));
    }
}
