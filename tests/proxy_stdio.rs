//! `codex-wire proxy` around ordinary commands: bytes pass unchanged both ways, the exit code
//! and the signal pass through, and the transcript reads back through `validate`.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_codex-wire")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("codex-wire-proxy-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn forwards_bytes_unchanged_and_passes_the_exit_code() {
    let dir = tmp("bytes");
    let transcript = dir.join("t.jsonl");
    let input: &[u8] = b"{\"id\":0,\"method\":\"initialize\",\"params\":{\"clientInfo\":{\"name\":\"a\",\"version\":\"1\"}}}\n\
{\"id\":1,\"method\":\"turn/start\",\"params\":{}}\r\n\
not json at all\n\
\xff\xfe bytes\n\
{\"id\":2,\"method\":\"thread/list\",\"params\":{\"x\":1}}";
    let mut c = Command::new(bin())
        .args(["proxy", "--transcript"])
        .arg(&transcript)
        .args(["--", "sh", "-c", "cat; exit 7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input).unwrap();
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.stdout, input, "bytes changed on the way");
    assert_eq!(out.status.code(), Some(7));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing field `threadId`"), "{err}");
    assert!(err.contains("summary"), "{err}");

    // The transcript: spawn, 5 messages in, the echo 5 messages out, stdin_eof, exit.
    let text = std::fs::read_to_string(&transcript).unwrap();
    let entries: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries[0]["event"], "spawn");
    assert_eq!(entries.last().unwrap()["event"], "exit");
    assert_eq!(entries.last().unwrap()["code"], 7);
    assert_eq!(entries.iter().filter(|e| e["dir"] == "in").count(), 5);
    assert!(entries.iter().any(|e| e["hex"].is_string()));
    // And validate reads it back with the same client-side verdicts.
    let v = Command::new(bin())
        .args(["validate", "--format", "json"])
        .arg(&transcript)
        .output()
        .unwrap();
    let recs: Vec<serde_json::Value> = String::from_utf8_lossy(&v.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ins: Vec<_> = recs.iter().filter(|r| r["dir"] == "in").collect();
    assert_eq!(
        ins.len(),
        4,
        "the line after the invalid UTF-8 one is after the close"
    );
    assert_eq!(
        ins[1]["error"]["message"],
        "Invalid request: missing field `threadId`"
    );
    assert_eq!(ins[2]["kind"], "unparsed");
    assert_eq!(ins[3]["closes"], true);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn passes_the_childs_signal_through() {
    let out = Command::new(bin())
        .args(["proxy", "--quiet", "--", "sh", "-c", "kill -TERM $$"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{:?}", out.status);
}

#[test]
fn forwards_a_signal_it_receives_to_the_child() {
    // The child says when it is up (the proxy sets its handlers before it spawns), and answers
    // SIGINT with exit code 7: the code shows the signal reached the child through the proxy (a
    // proxy killed by it would end by the signal instead). No clock: the test waits for `ready`.
    let script = r#"trap 'kill $! 2>/dev/null; exit 7' INT; sleep 30 & echo ready; wait"#;
    let mut c = Command::new(bin())
        .args(["proxy", "--quiet", "--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line.trim_end(), "ready", "the child's first line");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(c.id() as i32, libc::SIGINT);
    }
    let status = c.wait().unwrap();
    assert_eq!(status.code(), Some(7), "{status:?}");
}

#[test]
fn a_missing_command_is_a_clear_error() {
    let out = Command::new(bin())
        .args(["proxy", "--", "/nonexistent/codex"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot start /nonexistent/codex"));
    let out = Command::new(bin()).args(["proxy"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A line the client has read is already in the transcript, even when the client kills the
/// proxy the moment it has it (the Python SDK's `close` kills 2 s after SIGTERM; a reader of
/// the transcript after that must see everything the client saw).
#[test]
fn a_line_the_client_read_is_in_the_transcript_even_if_it_kills_the_proxy_at_once() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let dir = tmp("killed");
    let transcript = dir.join("t.jsonl");
    let n = 3000;
    let script = format!(
        r#"seq 1 {n} | sed 's/.*/{{"method":"warning","params":{{"threadId":null,"message":"&"}}}}/'; exec cat"#
    );
    let mut c = Command::new(bin())
        .args(["proxy", "--quiet", "--transcript"])
        .arg(&transcript)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":1,\"method\":\"thread/list\",\"params\":{}}\n")
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..=n {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "output ended early");
    }
    assert!(line.contains("thread/list"), "the echo comes last: {line}");
    // SAFETY: killing the process group this test made (the proxy and its child).
    unsafe {
        libc::kill(-(c.id() as i32), libc::SIGKILL);
    }
    c.wait().unwrap();
    let text = std::fs::read_to_string(&transcript).unwrap();
    let dirs: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["dir"].to_string())
        .collect();
    assert_eq!(dirs.iter().filter(|d| *d == "\"in\"").count(), 1, "{text}");
    assert_eq!(dirs.iter().filter(|d| *d == "\"out\"").count(), n + 1);
    let _ = std::fs::remove_dir_all(dir);
}
