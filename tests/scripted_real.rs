//! `codex-wire scripted` and `codex-wire model` with the real binary: scenarios played by the
//! real `codex app-server` against the scripted model, through the harness. Needs the pinned
//! binary (`cargo xtask schema` installs it; or set $CODEX_REAL_BIN); fails loudly without it.

use codex_wire::harness::{self, Case, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_codex-wire");

/// The real binary (`codex_wire::harness::real_codex`); these tests never pass without it.
fn codex() -> PathBuf {
    codex_wire::harness::real_codex(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn root(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("codex-wire-scripted-{}-{name}", std::process::id()))
}

/// The transcript's messages as (dir, msg).
fn messages(path: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .expect("transcript")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.get("msg").is_some())
        .map(|e| {
            (
                e["dir"].as_str().unwrap_or_default().to_string(),
                e["msg"].clone(),
            )
        })
        .collect()
}

fn run(case: Value, name: &str) -> (Vec<(String, Value)>, PathBuf) {
    let case: Case = serde_json::from_value(case).expect("case");
    let codex = codex();
    let root = root(name);
    let server = Server::Real {
        bin: Path::new(BIN),
        codex: &codex,
    };
    let t = harness::run(&case, &server, &root).expect("the case runs");
    (messages(&t), root.join("state"))
}

fn notifications<'a>(msgs: &'a [(String, Value)], method: &str) -> Vec<&'a Value> {
    msgs.iter()
        .filter(|(d, m)| d == "out" && m["method"] == method)
        .map(|(_, m)| &m["params"])
        .collect()
}

fn agent_texts(msgs: &[(String, Value)]) -> Vec<String> {
    notifications(msgs, "item/completed")
        .into_iter()
        .filter(|p| p["item"]["type"] == "agentMessage")
        .filter_map(|p| p["item"]["text"].as_str().map(str::to_string))
        .collect()
}

fn assert_completed(msgs: &[(String, Value)], state: &Path) {
    let done = notifications(msgs, "turn/completed");
    assert_eq!(done.len(), 1, "one turn/completed");
    assert_eq!(done[0]["turn"]["status"], "completed", "{}", done[0]);
    assert_eq!(
        codex_wire::model::unserved(state),
        0,
        "every scripted response served: {:?}",
        codex_wire::model::Cursor::load(state)
    );
}

#[test]
fn a_message_turn_completes() {
    let (msgs, state) = run(
        json!({"name": "message", "scenario": {"turns": [{"steps": [
            {"kind": "message", "text": "Hello there, friend."},
            {"kind": "usage", "input": 1200, "cached": 200, "output": 34, "reasoning": 12},
        ]}]}}),
        "message",
    );
    assert_completed(&msgs, &state);
    assert_eq!(agent_texts(&msgs), ["Hello there, friend."]);
    let deltas: Vec<&str> = notifications(&msgs, "item/agentMessage/delta")
        .into_iter()
        .filter_map(|p| p["delta"].as_str())
        .collect();
    assert_eq!(deltas, ["Hello t", "here, f", "riend."], "three chunks");
    let item = &notifications(&msgs, "item/completed")
        .into_iter()
        .find(|p| p["item"]["type"] == "agentMessage")
        .unwrap()["item"];
    assert_eq!(item["id"], "msg_0_0", "the model's item id");
    let usage = notifications(&msgs, "thread/tokenUsage/updated");
    assert_eq!(usage[0]["tokenUsage"]["last"]["inputTokens"], 1200);
}

#[test]
fn a_command_is_approved_and_runs() {
    let (msgs, state) = run(
        json!({"name": "command", "decisions": ["accept"],
               "scenario": {"turns": [{"steps": [
            {"kind": "command", "command": "echo hi", "reason": "need to echo",
             "output": "ignored", "exit_code": 3},
            {"kind": "message", "text": "Ran it."},
        ]}]}}),
        "command",
    );
    assert_completed(&msgs, &state);
    let (_, req) = msgs
        .iter()
        .find(|(d, m)| d == "out" && m["method"] == "item/commandExecution/requestApproval")
        .expect("an approval request");
    assert_eq!(req["params"]["reason"], "need to echo");
    assert_eq!(req["params"]["itemId"], "call_0_0");
    let answered = msgs
        .iter()
        .any(|(d, m)| d == "in" && m["id"] == req["id"] && m["result"]["decision"] == "accept");
    assert!(answered, "the approval request was answered");
    let cmd = notifications(&msgs, "item/completed")
        .into_iter()
        .find(|p| p["item"]["type"] == "commandExecution")
        .expect("the command item")["item"]
        .clone();
    // The real command ran: the step's output/exit_code are the fake's business.
    assert_eq!(cmd["aggregatedOutput"], "hi\n", "{cmd}");
    assert_eq!(cmd["exitCode"], 0);
    assert_eq!(agent_texts(&msgs), ["Ran it."]);
    let log = std::fs::read_to_string(state.join(codex_wire::model::LOG_FILE)).unwrap();
    assert_eq!(
        log.lines().count(),
        2,
        "two POSTs: the call and its follow-up"
    );
}

/// The next line of the child's stdout (it prints its lines at once).
fn next_line(r: &mut BufReader<std::process::ChildStdout>) -> Option<String> {
    let mut s = String::new();
    r.read_line(&mut s).ok().filter(|n| *n > 0).map(|_| s)
}

#[test]
fn model_serves_a_stream_and_frees_its_port() {
    let state = root("model-cli");
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("scenario.json"),
        json!({"turns": [{"steps": [{"kind": "message", "text": "pong", "chunks": 2}]}]})
            .to_string(),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["model", "--state-dir"])
        .arg(&state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let port: u16 = next_line(&mut out)
        .expect("the port line")
        .trim()
        .parse()
        .expect("a port number");
    let mut rest = String::new();
    for _ in 0..5 {
        rest.push_str(&next_line(&mut out).unwrap_or_default());
    }
    assert!(
        rest.contains(&format!("base_url=\"http://127.0.0.1:{port}/v1\"")),
        "{rest}"
    );

    let exchange = |req: String| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut got = String::new();
        let _ = s.read_to_string(&mut got);
        got
    };
    let body = json!({"model": "m", "input": [], "client_metadata": {"turn_id": "t1"}}).to_string();
    let got = exchange(format!(
        "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("text/event-stream"), "{got}");
    for needle in [
        "event: response.created",
        "\"delta\":\"po\"",
        "\"delta\":\"ng\"",
        "event: response.completed",
    ] {
        assert!(got.contains(needle), "{needle} in {got}");
    }
    let bad = exchange(
        "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{{{"
            .into(),
    );
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    let missing =
        exchange("GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".into());
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    drop(child.stdin.take()); // stdin closes: the model stops
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the model did not stop on stdin EOF"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("0 scripted responses unserved"), "{err}");
    TcpListener::bind(("127.0.0.1", port)).expect("the port is free again");
    let log = std::fs::read_to_string(state.join("model-requests.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 3, "every request logged");
    let cursor = codex_wire::model::Cursor::load(&state);
    assert_eq!((cursor.served, cursor.scripted), (1, 1));
}
