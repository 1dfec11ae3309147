//! `codex-wire fake` driven as a process: every line it writes is checked against the schema
//! with the engine's server-direction checker, every line a client writes is judged as the
//! real server judges it, and the state files keep the seed's formats.

use codex_wire::Session;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_codex-wire");

fn state_dir(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A client on the fake's stdio that checks both directions with one engine session.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<String>,
    check: Session,
    next: i64,
    /// Every server line seen, for assertions.
    seen: Vec<Value>,
}

impl Client {
    fn spawn(dir: &Path, scenario: Value) -> Client {
        Client::spawn_with(dir, scenario, &[])
    }

    /// With extra `codex` arguments (e.g. `--enable FEATURE`).
    fn spawn_with(dir: &Path, scenario: Value, extra: &[&str]) -> Client {
        std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
        let mut child = Command::new(BIN)
            .args(["fake", "--state-dir"])
            .arg(dir)
            .args(["-c", "model=x"])
            .args(extra)
            .args(["app-server", "--listen", "stdio://"])
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Client {
            child,
            stdin,
            rx,
            check: Session::new(),
            next: 100,
            seen: vec![],
        }
    }

    /// Requests `method` (empty params) with each id of `ids`, written at once, unchecked.
    fn burst(&mut self, ids: std::ops::Range<i64>, method: &str) {
        let mut burst = Vec::new();
        for id in ids {
            let line = json!({"id": id, "method": method, "params": {}}).to_string();
            burst.extend_from_slice(line.as_bytes());
            burst.push(b'\n');
        }
        let w = self.stdin.as_mut().unwrap();
        w.write_all(&burst).unwrap();
        w.flush().unwrap();
    }

    fn write_raw(&mut self, line: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    fn write(&mut self, msg: &Value) {
        let line = msg.to_string();
        let v = self.check.feed(line.as_bytes());
        assert!(v.is_clean(), "test client sent a bad line {line}: {v:?}");
        self.write_raw(line.as_bytes());
    }

    /// Next server line, schema-checked.
    fn read(&mut self) -> Value {
        let line = self
            .rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the fake went quiet");
        let v = self.check.feed_server(line.as_bytes());
        assert!(
            v.violation.is_none(),
            "fake wrote an invalid line: {line}\n{v:?}"
        );
        assert!(
            v.ignored.is_empty(),
            "fake wrote undeclared keys: {line}\n{:?}",
            v.ignored
        );
        let msg: Value = serde_json::from_str(&line).unwrap();
        self.seen.push(msg.clone());
        msg
    }

    /// The next line that answers a request (notifications skipped).
    fn read_reply(&mut self) -> Value {
        loop {
            let m = self.read();
            if m.get("id").is_some() && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// Sends a request and returns its response, answering server requests with `answer`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.write(&json!({"id": id, "method": method, "params": params}));
        loop {
            let m = self.read();
            if m["id"] == json!(id) && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// Reads until `method` arrives, answering server requests with `answer(method)`.
    fn until(&mut self, method: &str, answer: &dyn Fn(&str) -> Value) -> Value {
        loop {
            let m = self.read();
            if m.get("id").is_some() && m["method"].is_string() {
                let r = answer(m["method"].as_str().unwrap());
                // Not asserted clean: some tests answer badly on purpose.
                let line = json!({"id": m["id"], "result": r}).to_string();
                self.check.feed(line.as_bytes());
                self.write_raw(line.as_bytes());
                continue;
            }
            if m["method"] == method {
                return m;
            }
        }
    }

    fn init(&mut self) {
        let r = self.request(
            "initialize",
            json!({"clientInfo": {"name": "fake_test", "version": "1.0"},
                   "capabilities": {"experimentalApi": true}}),
        );
        assert!(r["result"]["userAgent"]
            .as_str()
            .unwrap()
            .starts_with(&format!("fake_test/{}", codex_wire::newest().version)));
        self.write(&json!({"method": "initialized"}));
    }

    fn thread(&mut self) -> String {
        let r = self.request("thread/start", json!({}));
        r["result"]["thread"]["id"].as_str().unwrap().to_string()
    }

    fn close(mut self) -> std::process::ExitStatus {
        self.stdin.take();
        self.child.wait().unwrap()
    }
}

fn accept(method: &str) -> Value {
    match method {
        "item/commandExecution/requestApproval" | "item/fileChange/requestApproval" => {
            json!({"decision": "accept"})
        }
        "item/permissions/requestApproval" => json!({"permissions": {}, "scope": "turn"}),
        "item/tool/requestUserInput" => json!({"answers": {"q1": {"answers": ["Yes"]}}}),
        "mcpServer/elicitation/request" => json!({"action": "accept", "content": {"ok": true}}),
        "item/tool/call" => {
            json!({"success": true, "contentItems": [{"type": "inputText", "text": "42"}]})
        }
        "account/chatgptAuthTokens/refresh" => {
            json!({"accessToken": "tok", "chatgptAccountId": "acct", "chatgptPlanType": null})
        }
        "attestation/generate" => json!({"token": "att"}),
        _ => json!({}),
    }
}

fn transcript(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("transcript.jsonl")).unwrap();
    // The fake may be writing now: what follows the last newline is an entry still being
    // written (a live reader sees a prefix of the fake's one locked write).
    let whole = text.rfind('\n').map_or("", |i| &text[..i]);
    whole
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole transcript lines"))
        .collect()
}

#[test]
fn every_step_kind_emits_schema_valid_messages_in_order() {
    let dir = state_dir("steps");
    let steps = json!([
        {"kind": "reasoning", "summary": ["looking around"]},
        {"kind": "command", "command": "ls -la", "output": "a\nb\n"},
        {"kind": "command", "command": "false", "output": "", "exit_code": 1, "approval": false},
        {"kind": "file_change", "path": "/tmp/x.txt", "diff": "+x\n"},
        {"kind": "permissions", "reason": "network"},
        {"kind": "user_input"},
        {"kind": "elicitation"},
        {"kind": "tool_call", "tool": "lookup", "arguments": {"q": 1}},
        {"kind": "auth_refresh"},
        {"kind": "attestation"},
        {"kind": "error_note", "message": "retrying"},
        {"kind": "compaction"},
        {"kind": "message", "text": "all done", "phase": "final_answer"},
        {"kind": "usage", "input": 100, "output": 20},
        {"kind": "no-such-kind"},
    ]);
    // `request_user_input` reaches the client in Default mode only with its feature, the
    // permissions tool exists only with its own, and a patch needs a model with codex's patch tool.
    let mut c = Client::spawn_with(
        &dir,
        json!({"turns": [{"steps": steps}, {"steps": [{"kind": "fail", "message": "boom"},
                                                      {"kind": "fail", "message": "boom"}]}]}),
        &[
            "--enable",
            "default_mode_request_user_input",
            "--enable",
            "request_permissions_tool",
            "-c",
            "model=\"gpt-5.5\"",
            // A dropped or failed stream is retried once.
            "-c",
            "model_providers.openai.stream_max_retries=1",
        ],
    );
    c.init();
    // `tool_call` reaches the client only for a tool the thread declares.
    let r = c.request(
        "thread/start",
        json!({"dynamicTools": [{"type": "function", "name": "lookup", "description": "d",
                                 "inputSchema": {"type": "object"}}]}),
    );
    let tid = r["result"]["thread"]["id"].as_str().unwrap().to_string();
    let r = c.request(
        "turn/start",
        json!({"threadId": tid, "input": [{"type": "text", "text": "go"}]}),
    );
    assert_eq!(r["result"]["turn"]["status"], "inProgress");
    let done = c.until("turn/completed", &accept);
    assert_eq!(done["params"]["turn"]["status"], "completed");
    let methods: Vec<&str> = c.seen.iter().filter_map(|m| m["method"].as_str()).collect();
    let pos = |m: &str| methods.iter().position(|x| *x == m).unwrap_or(usize::MAX);
    let last = |m: &str| methods.iter().rposition(|x| *x == m).unwrap_or(0);
    assert!(pos("turn/started") < pos("item/started"));
    // Each model response ends with its usage: the last one comes after the answer.
    assert!(last("item/agentMessage/delta") < last("thread/tokenUsage/updated"));
    assert!(last("thread/tokenUsage/updated") < pos("turn/completed"));
    for m in [
        "item/commandExecution/requestApproval",
        "item/fileChange/requestApproval",
        "item/permissions/requestApproval",
        "item/tool/requestUserInput",
        "mcpServer/elicitation/request",
        "item/tool/call",
        "account/chatgptAuthTokens/refresh",
        "attestation/generate",
        "error",
        "item/reasoning/summaryTextDelta",
        "serverRequest/resolved",
        "account/rateLimits/updated",
    ] {
        assert!(methods.contains(&m), "{m} missing from {methods:?}");
    }
    // The second scripted turn fails (its stream is retried once, and fails again).
    c.request("turn/start", json!({"threadId": tid, "input": []}));
    let done = c.until("turn/completed", &accept);
    assert_eq!(done["params"]["turn"]["status"], "failed");
    // As the real server names a failed model stream.
    assert_eq!(
        done["params"]["turn"]["error"]["message"],
        "stream disconnected before completion: boom"
    );
    assert_eq!(done["params"]["turn"]["error"]["codexErrorInfo"], "other");
    // Out of script: the default turn streams a short answer.
    c.request("turn/start", json!({"threadId": tid, "input": []}));
    let done = c.until("turn/completed", &accept);
    assert_eq!(done["params"]["turn"]["status"], "completed");
    assert!(c.close().success());

    let t = transcript(&dir);
    assert!(t.iter().all(|e| e["pid"].is_u64() && e["t"].is_f64()));
    let replies: Vec<&Value> = t.iter().filter(|e| e["reply_to"].is_string()).collect();
    assert_eq!(replies.len(), 8, "one recorded reply per server request");
    assert!(replies
        .iter()
        .all(|e| e.get("violation").is_none() && e.get("ignored").is_none()));
    assert!(t.iter().any(|e| e["event"] == "scenario_error"));
    assert!(t.iter().any(|e| e["event"] == "spawn"));
    assert!(t.iter().any(|e| e["event"] == "stdin_eof"));
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("threads.json")).unwrap()).unwrap();
    assert_eq!(store["turn_cursor"], 3);
    assert_eq!(store["threads"][&tid]["turns"].as_array().unwrap().len(), 3);
}

#[test]
fn invalid_input_gets_the_real_servers_replies_and_bad_responses_are_recorded() {
    let dir = state_dir("errors");
    let mut c = Client::spawn(
        &dir,
        json!({"turns": [{"steps": [{"kind": "command", "command": "ls", "output": ""}]}]}),
    );
    // Before initialize.
    c.write_raw(br#"{"id":1,"method":"thread/start","params":{}}"#);
    assert_eq!(
        c.read(),
        json!({"error": {"code": -32600, "message": "Not initialized"}, "id": 1})
    );
    c.init();
    let bad: &[&[u8]] = &[
        br#"{"id":2,"method":"turn/start","params":{}}"#,
        br#"{"id":3,"method":"nope"}"#,
        br#"{"id":4,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}"#,
        br#"{"id":5,"method":"thread/read","params":{"threadId":"zz"}}"#,
        br#"{"id":6,"method":"thread/resume","params":{"threadId":"nope"}}"#,
        br#"{"id":7,"method":"turn/start","params":{"threadId":"01a22b21-7fe8-7983-bc24-99d1065561f2","input":[]}}"#,
        br#"{"id":8,"method":"thread/resume","params":{"threadId":"01a22b21-7fe8-7983-bc24-99d1065561f2"}}"#,
    ];
    let mut engine = Session::new();
    engine.feed(
        br#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}"#,
    );
    for line in bad {
        c.write_raw(line);
        let got = c.read_reply();
        if let Some(e) = engine.feed(line).error() {
            assert_eq!(
                got.to_string(),
                e.line(),
                "protocol errors are byte-identical"
            );
        }
    }
    let errs: Vec<String> = c
        .seen
        .iter()
        .rev()
        .take(4)
        .map(|m| m["error"]["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(errs, [
        "no rollout found for thread id 01a22b21-7fe8-7983-bc24-99d1065561f2",
        "thread not found: 01a22b21-7fe8-7983-bc24-99d1065561f2",
        "invalid session id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1",
        "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `z` at 1",
    ]);
    // Not JSON-RPC, unknown notification, a stray response: no reply at all.
    c.write_raw(b"not json");
    c.write_raw(br#"{"method":"whatever"}"#);
    c.write_raw(br#"{"id":77,"result":{}}"#);
    // A bad approval answer is a violation in the transcript; the client hears nothing.
    let tid = c.thread();
    c.request("turn/start", json!({"threadId": tid, "input": []}));
    c.until(
        "turn/completed",
        &|_| json!({"decision": "maybe", "extra": 1}),
    );
    // Invalid UTF-8 closes the connection, like the real server.
    c.write_raw(b"{\"id\":9,\"method\":\"\xff\"}");
    assert!(c.close().success());
    let t = transcript(&dir);
    let v: Vec<&str> = t.iter().filter_map(|e| e["violation"].as_str()).collect();
    assert!(v.contains(&"not JSON"));
    assert!(v.iter().any(|s| s.starts_with("unknown notification")));
    assert!(v.contains(&"response to unknown server request id"));
    assert!(
        v.iter().any(|s| s.contains("unknown variant `maybe`")),
        "{v:?}"
    );
    assert!(v.iter().any(|s| s.starts_with("invalid UTF-8")));
    assert!(t
        .iter()
        .any(|e| e["event"] == "exit" && e["how"] == "connection_closed"));
}

#[test]
fn threads_resume_fork_list_goal_steer_interrupt_compact() {
    let dir = state_dir("lifecycle");
    let goal = json!({"steps": [{"kind": "message", "text": "working"}, {"kind": "usage", "input": 2, "output": 3}],
                      "continuations": [{"steps": [{"kind": "message", "text": "done", "phase": "final_answer"},
                                                   {"kind": "usage", "input": 20, "output": 30}]}]});
    // Steering abandons the first response and plays the next one: both are long, so the
    // interrupt cannot lose a race with a quick default answer on a loaded machine.
    let slow = json!({"steps": [{"kind": "progress", "seconds": 30, "interval": 0.05},
                                {"kind": "command", "command": "ls", "output": ""},
                                {"kind": "progress", "seconds": 30, "interval": 0.05}]});
    let mut c = Client::spawn(&dir, json!({"turns": [goal, slow]}));
    c.init();
    let tid = c.thread();
    // Goal: set → goal/updated(active) → turn → continuation → goal/updated(complete).
    c.request("thread/goal/clear", json!({"threadId": tid}));
    let r = c.request(
        "thread/goal/set",
        json!({"threadId": tid, "objective": "ship", "status": "active"}),
    );
    assert_eq!(r["result"]["goal"]["status"], "active");
    let first = c.until("turn/completed", &accept);
    let second = c.until("turn/completed", &accept);
    assert_ne!(
        first["params"]["turn"]["id"],
        second["params"]["turn"]["id"]
    );
    let goals: Vec<&Value> = c
        .seen
        .iter()
        .filter(|m| m["method"] == "thread/goal/updated")
        .map(|m| &m["params"]["goal"]["status"])
        .collect();
    assert_eq!(goals.last().unwrap().as_str(), Some("complete"));
    let usage = c
        .seen
        .iter()
        .rev()
        .find(|m| m["method"] == "thread/tokenUsage/updated")
        .unwrap();
    assert_eq!(
        usage["params"]["tokenUsage"]["total"]["totalTokens"], 55,
        "usage totals add up"
    );
    // Steer and interrupt a long turn.
    let r = c.request(
        "turn/start",
        json!({"threadId": tid, "input": [{"type": "text", "text": "slow"}]}),
    );
    let turn = r["result"]["turn"]["id"].as_str().unwrap().to_string();
    let s = c.request(
        "turn/steer",
        json!({"threadId": tid, "expectedTurnId": "other", "input": []}),
    );
    assert_eq!(
        s["error"]["message"],
        format!("expected active turn id `other` but found `{turn}`")
    );
    let s = c.request("turn/steer", json!({"threadId": tid, "expectedTurnId": turn, "input": [{"type": "text", "text": "more"}]}));
    assert_eq!(s["result"]["turnId"], turn.as_str());
    let i = c.request("turn/interrupt", json!({"threadId": tid, "turnId": turn}));
    assert_eq!(i["result"], json!({}));
    let done = c.until("turn/completed", &accept);
    assert_eq!(done["params"]["turn"]["status"], "interrupted");
    let s = c.request("turn/interrupt", json!({"threadId": tid, "turnId": turn}));
    assert_eq!(s["error"]["message"], "no active turn to interrupt");
    // Compaction runs as its own turn.
    assert_eq!(
        c.request("thread/compact/start", json!({"threadId": tid}))["result"],
        json!({})
    );
    c.until("turn/completed", &accept);
    // Name, fork, read, list, archive.
    c.request("thread/name/set", json!({"threadId": tid, "name": "mine"}));
    let f = c.request("thread/fork", json!({"threadId": tid}));
    let fid = f["result"]["thread"]["id"].as_str().unwrap().to_string();
    assert_eq!(f["result"]["thread"]["forkedFromId"], tid.as_str());
    let rd = c.request(
        "thread/read",
        json!({"threadId": tid, "includeTurns": true}),
    );
    assert_eq!(rd["result"]["thread"]["name"], "mine");
    assert_eq!(rd["result"]["thread"]["turns"].as_array().unwrap().len(), 4);
    let l = c.request("thread/list", json!({}));
    assert_eq!(l["result"]["data"].as_array().unwrap().len(), 2);
    c.request("thread/archive", json!({"threadId": fid}));
    let l = c.request("thread/list", json!({}));
    assert_eq!(l["result"]["data"].as_array().unwrap().len(), 1);
    // Every other method answers with a schema-valid result (checked by `read`).
    for m in [
        "model/list",
        "config/read",
        "account/read",
        "skills/list",
        "thread/loaded/list",
        "collaborationMode/list",
        "experimentalFeature/list",
        "getAuthStatus",
        "mcpServerStatus/list",
    ] {
        let r = c.request(m, json!({}));
        assert!(r.get("result").is_some(), "{m}: {r}");
    }
    assert!(c.close().success());

    // A new process resumes the thread from the store.
    let mut c = Client::spawn(&dir, json!({"turns": []}));
    c.init();
    let r = c.request("thread/resume", json!({"threadId": tid}));
    assert_eq!(r["result"]["thread"]["turns"].as_array().unwrap().len(), 4);
    c.request("turn/start", json!({"threadId": tid, "input": []}));
    c.until("turn/completed", &accept);
    c.close();
    // forget_threads: resume falls back to the real server's error.
    let mut c = Client::spawn(&dir, json!({"forget_threads": true}));
    c.init();
    let r = c.request("thread/resume", json!({"threadId": tid}));
    assert_eq!(
        r["error"]["message"],
        format!("no rollout found for thread id {tid}")
    );
    c.close();
}

#[test]
fn scripted_methods_and_start_error() {
    let dir = state_dir("scripted");
    let mut c = Client::spawn(
        &dir,
        json!({
            "turns": [{"start_error": "rate limited"}],
            "methods": {"model/list": {"result": {"data": [], "nextCursor": null}},
                        "account/read": {"error": {"code": -32603, "message": "nope"}}},
        }),
    );
    c.init();
    let tid = c.thread();
    let r = c.request("turn/start", json!({"threadId": tid, "input": []}));
    assert_eq!(r["error"]["message"], "rate limited");
    assert_eq!(
        c.request("model/list", json!({}))["result"]["data"],
        json!([])
    );
    assert_eq!(
        c.request("account/read", json!({}))["error"]["code"],
        -32603
    );
    c.close();
}

#[test]
fn crash_mid_turn_leaves_a_consistent_store_and_sigterm_is_recorded() {
    let dir = state_dir("crash");
    let mut c = Client::spawn(
        &dir,
        json!({"turns": [
        {"steps": [{"kind": "message_partial", "text": "half"}, {"kind": "crash", "code": 3}]}]}),
    );
    c.init();
    let tid = c.thread();
    c.request("turn/start", json!({"threadId": tid, "input": []}));
    c.until("item/agentMessage/delta", &accept);
    let status = c.child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let t = transcript(&dir);
    assert!(t.iter().any(|e| e["event"] == "crash" && e["code"] == 3));
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("threads.json")).unwrap()).unwrap();
    assert!(store["threads"][&tid].is_object());

    // SIGTERM while idle: a graceful end, as codex's (exit 0); SIGINT ends it by the signal.
    let mut c = Client::spawn(&dir, json!({}));
    c.init();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.child.id() as i32, libc::SIGTERM) };
    let status = c.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(transcript(&dir)
        .iter()
        .any(|e| e["event"] == "exit" && e["how"] == "SIGTERM"));
    let mut c = Client::spawn(&dir, json!({}));
    c.init();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.child.id() as i32, libc::SIGINT) };
    let status = c.child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGINT)
    );
}

#[test]
fn concurrent_processes_share_store_and_transcript_cleanly() {
    let dir = state_dir("concurrent");
    let scenario = json!({"turns": (0..40).map(|i| json!({"steps": [{"kind": "message", "text": format!("turn {i}")}]})).collect::<Vec<_>>()});
    std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let dir = dir.clone();
            let scenario = scenario.clone();
            std::thread::spawn(move || {
                let mut c = Client::spawn(&dir, scenario);
                c.init();
                let mut ids = vec![];
                for _ in 0..3 {
                    let tid = c.thread();
                    for _ in 0..3 {
                        c.request("turn/start", json!({"threadId": tid, "input": []}));
                        c.until("turn/completed", &accept);
                    }
                    ids.push(tid);
                }
                c.close();
                ids
            })
        })
        .collect();
    let ids: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("threads.json")).unwrap()).unwrap();
    assert_eq!(
        store["turn_cursor"], 36,
        "each turn took exactly one script"
    );
    for id in &ids {
        assert_eq!(store["threads"][id]["turns"].as_array().unwrap().len(), 3);
    }
    transcript(&dir); // every line parses: no interleaving
}

/// Runs `cmd` with `input` on its stdin (then closed); its stdout.
fn stdio_run(cmd: &mut Command, input: &str) -> String {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

#[test]
fn version_and_argv0_codex() {
    let out = Command::new(BIN)
        .args(["fake", "--version"])
        .output()
        .unwrap();
    let newest = codex_wire::newest().version;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("codex-cli {newest}")
    );
    let dir = state_dir("argv0");
    let link = dir.join("codex");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let out = Command::new(&link).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("codex-cli {newest}")
    );
    let out = stdio_run(
        Command::new(&link)
            .args(["app-server"])
            .env("CODEX_WIRE_FAKE_STATE_DIR", &dir),
        "{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientInfo\":{\"name\":\"n\",\"version\":\"1\"}}}\n",
    );
    assert!(out.contains(&format!("\"userAgent\":\"n/{newest}")));
    assert!(dir.join("transcript.jsonl").exists());
}

/// `--codex-version V` (or `CODEX_WIRE_CODEX_VERSION`): the fake answers as V — its version, its
/// `userAgent`, and its methods: a method V does not have gets V's own unknown-variant reply,
/// which the engine of V predicts byte for byte.
#[test]
fn answers_as_any_supported_version() {
    let newest = codex_wire::newest();
    for &p in codex_wire::versions() {
        let v = p.version;
        let out = Command::new(BIN)
            .args(["fake", "--codex-version", v, "--version"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("codex-cli {v}")
        );
        // A method only the newest has, if V lacks one.
        let only_newest = newest
            .client_methods
            .iter()
            .find(|m| !p.client_methods.contains(m))
            .copied()
            .unwrap_or("codex-wire/none");
        let lines = [
            r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"n","version":"1"}}}"#
                .to_string(),
            format!(r#"{{"id":2,"method":"{only_newest}","params":{{}}}}"#),
        ];
        let dir = state_dir(&format!("as-{v}"));
        let out = stdio_run(
            Command::new(BIN)
                .args(["fake", "app-server"])
                .env("CODEX_WIRE_FAKE_STATE_DIR", &dir)
                .env("CODEX_WIRE_CODEX_VERSION", v),
            &(lines.join("\n") + "\n"),
        );
        assert!(
            out.contains(&format!("\"userAgent\":\"n/{v} (")),
            "{v}: {out}"
        );
        let mut engine = codex_wire::Session::with_protocol(p);
        engine.feed(lines[0].as_bytes());
        let verdict = engine.feed(lines[1].as_bytes());
        if p.version != newest.version && only_newest != "codex-wire/none" {
            let reply = verdict.error().expect("a method V lacks is refused").line();
            assert!(reply.contains("unknown variant"), "{reply}");
            assert!(
                out.lines().any(|l| l == reply),
                "{v}: want {reply} in {out}"
            );
        }
    }
    let bad = Command::new(BIN)
        .args(["fake", "--codex-version", "0.0.1", "--version"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a version this build speaks"));
}

#[test]
fn default_results_are_valid_for_every_method_of_every_version() {
    for &p in codex_wire::versions() {
        let methods = codex_wire::fake::default_methods(p);
        assert!(methods.len() > 150, "{}", methods.len());
        for m in methods {
            let r = codex_wire::fake::default_result(p, &m);
            if let Some(check) = p.check_result(&m, &r) {
                let ignored = check.unwrap_or_else(|e| panic!("{} {m}: {e}: {r}", p.version));
                assert!(ignored.is_empty(), "{} {m}: {ignored:?}", p.version);
            }
        }
    }
}

/// `thread/resume` with `history` or `path`, as probed on the real 0.171.0 server: a history
/// starts a fresh thread whatever `threadId` says; a path is resolved against `CODEX_HOME`.
#[test]
fn resume_with_history_and_path() {
    let dir = state_dir("resume-history");
    let mut c = Client::spawn(&dir, json!({"turns": []}));
    c.init();
    let user = json!({"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": "hi"}]});
    let before = c.seen.len();
    let r = c.request(
        "thread/resume",
        json!({"threadId": "not-a-uuid", "history": [user]}),
    );
    let thread = &r["result"]["thread"];
    let tid = thread["id"].as_str().unwrap().to_string();
    assert!(uuid::Uuid::parse_str(&tid).is_ok(), "a fresh thread id");
    assert_eq!(thread["preview"], "hi");
    assert_eq!(thread["turns"], json!([]));
    let keys: Vec<&str> = r["result"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        &keys[keys.len() - 5..],
        [
            "collaborationMode",
            "multiAgentMode",
            "initialTurnsPage",
            "turnsBackwardsCursor",
            "itemsBackwardsCursor"
        ]
    );
    // Status first, then the result, then the goal clearing (no thread/started).
    let status = c.seen[before..]
        .iter()
        .position(|m| m["method"] == "thread/status/changed")
        .expect("a status change");
    let result = c.seen[before..]
        .iter()
        .position(|m| m.get("result").is_some())
        .unwrap();
    assert!(status < result);
    assert_eq!(c.seen[before + status]["params"]["threadId"], tid.as_str());
    assert!(!c.seen[before..]
        .iter()
        .any(|m| m["method"] == "thread/started"));
    let after = loop {
        let m = c.read();
        if m["method"] != "configWarning" && m["method"] != "remoteControl/status/changed" {
            break m;
        }
    };
    assert_eq!(after["method"], "thread/goal/cleared");
    // Errors, with the real texts.
    let e = c.request("thread/resume", json!({"threadId": "x", "history": []}));
    assert_eq!(e["error"]["message"], "history must not be empty");
    let e = c.request("thread/resume", json!({"threadId": tid, "history": [user]}));
    assert_eq!(
        e["error"]["message"],
        format!("cannot resume thread {tid} with history while it is already running")
    );
    let e = c.request(
        "thread/resume",
        json!({"threadId": "x", "path": "/nonexistent/rollout.jsonl"}),
    );
    assert_eq!(
        e["error"]["message"],
        "failed to resolve rollout path `/nonexistent/rollout.jsonl`: file does not exist"
    );
    let e = c.request(
        "thread/resume",
        json!({"threadId": "x", "path": "relative/rollout.jsonl"}),
    );
    let home = r["result"]["thread"]["path"].as_str().unwrap();
    assert!(home.ends_with(&format!("-{tid}.jsonl")) && home.contains("/sessions/"));
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .ends_with("/relative/rollout.jsonl`: file does not exist"));
    let e = c.request(
        "thread/resume",
        json!({"threadId": "x", "path": dir.to_str().unwrap()}),
    );
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .ends_with("path is a directory"));
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let e = c.request(
        "thread/resume",
        json!({"threadId": "x", "path": empty.to_str().unwrap()}),
    );
    assert_eq!(e["error"]["code"], -32603);
    assert!(c.close().success());
    // A new process resumes the history thread from its rollout path, whatever threadId says.
    let mut c = Client::spawn(&dir, json!({"turns": []}));
    c.init();
    let r = c.request(
        "thread/resume",
        json!({"threadId": "anything", "path": home, "excludeTurns": true}),
    );
    assert_eq!(r["result"]["thread"]["id"], tid.as_str());
    let r = c.request("thread/resume", json!({"threadId": tid}));
    assert_eq!(r["result"]["thread"]["id"], tid.as_str());
    assert!(c.seen.iter().any(|m| m["method"] == "deprecationNotice"));
    assert!(c.close().success());
}

/// Backpressure: `scenario.json` `overload` answers chosen requests with the real overload
/// reply (deterministic retries); a flood behind a slow handler overflows the real server's
/// 128-message queue and the requests past it get the same reply at once.
#[test]
fn overload_replies_scripted_and_under_flood() {
    const OVERLOADED: &str =
        r#"{"error":{"code":-32001,"message":"Server overloaded; retry later."}"#;
    let dir = state_dir("overload");
    let mut c = Client::spawn(
        &dir,
        json!({"overload": {"thread/start": 2},
               "methods": {"model/list": {"result": {"data": [], "nextCursor": null}, "delay_ms": 20}}}),
    );
    c.init();
    for _ in 0..2 {
        let r = c.request("thread/start", json!({}));
        assert_eq!(r["error"]["code"], -32001, "{r}");
        assert_eq!(r["error"]["message"], "Server overloaded; retry later.");
    }
    let r = c.request("thread/start", json!({}));
    assert!(
        r["result"]["thread"]["id"].is_string(),
        "the third try goes through: {r}"
    );
    // The flood: 300 slow requests written at once.
    c.burst(1000..1300, "model/list");
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < 300 {
        let line =
            c.rx.recv_timeout(Duration::from_secs(30))
                .expect("every request is answered");
        let m: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = m["id"].as_i64() else {
            continue; // a notification of the earlier thread/start
        };
        assert!(
            answered.insert(id, line.starts_with(OVERLOADED)).is_none(),
            "answered twice: {id}"
        );
    }
    let overloaded: Vec<i64> = answered
        .iter()
        .filter(|(_, o)| **o)
        .map(|(i, _)| *i)
        .collect();
    assert!(
        !overloaded.is_empty(),
        "a 300-request burst behind a 20 ms handler overflows"
    );
    assert!(
        overloaded[0] >= 1000 + 128,
        "the first 128 queue up before any overload: {overloaded:?}"
    );
    let t = transcript(&dir);
    assert_eq!(
        t.iter().filter(|e| e["overloaded"] == true).count(),
        overloaded.len() + 2,
        "each overloaded request is recorded"
    );
    assert!(c.close().success());
}

/// A burst is answered in batches (one write for many replies), yet a reply is never visible
/// before its transcript entry is on disk; a transcript removed mid-run is created anew.
#[test]
fn burst_replies_follow_their_transcript_entries() {
    let dir = state_dir("burst");
    let mut c = Client::spawn(&dir, json!({}));
    c.init();
    let n = 2000;
    c.burst(10_000..10_000 + n, "turn/start");
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < n as usize {
        let line =
            c.rx.recv_timeout(Duration::from_secs(30))
                .expect("every request is answered");
        let m: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = m["id"].as_i64().filter(|i| *i >= 10_000) else {
            continue;
        };
        assert!(m["error"]["code"].is_i64(), "{line}");
        assert!(answered.insert(id), "answered twice: {id}");
        if answered.len() % 97 == 1 {
            let t = transcript(&dir);
            assert!(
                t.iter().any(|e| e["dir"] == "out" && e["msg"] == m),
                "reply {id} was readable before its transcript entry"
            );
        }
    }
    let t = transcript(&dir);
    for dir_ in ["in", "out"] {
        assert_eq!(
            t.iter()
                .filter(|e| e["dir"] == dir_ && e["msg"]["id"].as_i64() >= Some(10_000))
                .count(),
            n as usize,
            "every {dir_} line of the burst is recorded once"
        );
    }
    std::fs::remove_file(dir.join("transcript.jsonl")).unwrap();
    c.write_raw(br#"{"id":9999,"method":"turn/start","params":{}}"#);
    let r = loop {
        let line =
            c.rx.recv_timeout(Duration::from_secs(30))
                .expect("answered");
        let m: Value = serde_json::from_str(&line).unwrap();
        if m["id"] == 9999 {
            break m;
        }
    };
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let t = transcript(&dir);
    assert!(
        t.iter().any(|e| e["dir"] == "out" && e["msg"] == r),
        "entries after the transcript was removed go to a new file: {t:?}"
    );
    assert!(c.close().success());
}

/// One thread changed at once from several processes on one state dir: one starts turns on it
/// (each `turn/start` writes the turn's settings back to the thread), others take it up cold
/// again and again (a resume writes its settings back too), one renames it over and over,
/// reading the name back each time. Every write is kept: no rename is undone by settings
/// written from an older copy of the thread, and every turn is stored.
#[test]
fn concurrent_writes_to_one_thread_are_all_kept() {
    const RENAMES: usize = 150;
    let dir = state_dir("lost-write");
    let scenario = json!({"turns": []});
    let mut a = Client::spawn(&dir, scenario.clone());
    a.init();
    let tid = a.thread();
    // A first turn writes the thread's rollout: another process can find it from then on.
    a.request("turn/start", json!({"threadId": tid, "input": []}));
    a.until("turn/completed", &accept);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let renamer = {
        let (dir, tid, done) = (dir.clone(), tid.clone(), done.clone());
        std::thread::spawn(move || {
            let mut b = Client::spawn(&dir, scenario);
            b.init();
            let mut undone = Vec::new();
            for i in 0..RENAMES {
                let name = format!("name {i}");
                b.request("thread/name/set", json!({"threadId": tid, "name": name}));
                let r = b.request("thread/read", json!({"threadId": tid}));
                let now = r["result"]["thread"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                if now != name {
                    undone.push(format!("{name} read back as {now:?}"));
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            b.close();
            undone
        })
    };
    let resumer = {
        let (dir, tid, done) = (dir.clone(), tid.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let mut c = Client::spawn(&dir, json!({"turns": []}));
                c.init();
                let r = c.request(
                    "thread/resume",
                    json!({"threadId": tid, "excludeTurns": true}),
                );
                assert!(r.get("result").is_some(), "{r}");
                c.close();
            }
        })
    };
    let mut turns = 1;
    let efforts = ["low", "high"];
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        a.request(
            "turn/start",
            json!({"threadId": tid, "input": [], "effort": efforts[turns % 2]}),
        );
        a.until("turn/completed", &accept);
        turns += 1;
    }
    let undone = renamer.join().unwrap();
    resumer.join().unwrap();
    a.close();
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("threads.json")).unwrap()).unwrap();
    let thread = &store["threads"][&tid];
    assert!(
        undone.is_empty(),
        "renames lost to stale writes: {undone:?}"
    );
    assert_eq!(thread["name"], format!("name {}", RENAMES - 1));
    assert_eq!(thread["turns"].as_array().unwrap().len(), turns);
}
