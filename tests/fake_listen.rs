//! The fake's WebSocket listeners: `ws://IP:PORT` binds only that address and refuses a missing
//! or wrong capability token with the real server's 401 bytes; `unix://PATH` is user-only.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::Message;

const BIN: &str = env!("CARGO_BIN_EXE_codex-wire");
const INIT: &str =
    r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"ws","version":"1"}}}"#;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn dir(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts `ws://127.0.0.1:0` and returns the bound address from the banner.
fn start_ws(dir: &Path, extra: &[&str]) -> (Killed, String) {
    let mut child = Command::new(BIN)
        .args(["fake", "--state-dir"])
        .arg(dir)
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "no banner");
        if let Some(a) = line.trim().strip_prefix("listening on: ws://") {
            break a.to_string();
        }
    };
    (Killed(child), addr)
}

fn raw_upgrade(addr: &str, auth: Option<&str>) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = auth
        .map(|a| format!("Authorization: Bearer {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{auth}\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.windows(4).any(|w| w == b"\r\n\r\n") && !out.starts_with(b"HTTP/1.1 401") {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Drops the `date:` header, the one line that differs between runs.
fn without_date(s: &str) -> String {
    s.split("\r\n")
        .filter(|l| !l.starts_with("date:"))
        .collect::<Vec<_>>()
        .join("\r\n")
}

#[test]
fn ws_capability_token_refusals_match_the_real_server() {
    let d = dir("ws-auth");
    let token = d.join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let (_child, addr) = start_ws(
        &d,
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            token.to_str().unwrap(),
        ],
    );
    assert!(addr.starts_with("127.0.0.1:"));
    // Recorded from codex-cli 0.171.0 (`--ws-auth capability-token --ws-token-file F`).
    let refusal = |body: &str| {
        format!("HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\r\n{body}", body.len())
    };
    assert_eq!(
        without_date(&raw_upgrade(&addr, None)),
        refusal("missing websocket bearer token")
    );
    assert_eq!(
        without_date(&raw_upgrade(&addr, Some("wrong"))),
        refusal("invalid websocket bearer token")
    );
    assert!(raw_upgrade(&addr, Some("s3cret")).starts_with("HTTP/1.1 101 Switching Protocols\r\n"));

    let mut req =
        tungstenite::client::IntoClientRequest::into_client_request(format!("ws://{addr}/"))
            .unwrap();
    req.headers_mut()
        .insert("Authorization", "Bearer s3cret".parse().unwrap());
    let (mut ws, _) = tungstenite::connect(req).unwrap();
    ws.send(Message::text(INIT)).unwrap();
    let reply = ws.read().unwrap().into_text().unwrap();
    assert!(
        reply.contains(&format!(
            "\"userAgent\":\"ws/{}",
            codex_wire::newest().version
        )),
        "{reply}"
    );
    // A protocol error over ws is the same line as over stdio.
    ws.send(Message::text(
        r#"{"id":2,"method":"turn/start","params":{}}"#,
    ))
    .unwrap();
    // Past the notifications the server sends after initializing (configWarning, …).
    let reply = loop {
        let m = ws.read().unwrap().into_text().unwrap();
        if m.contains("\"id\":2") {
            break m;
        }
    };
    assert_eq!(
        reply.as_str(),
        r#"{"error":{"code":-32600,"message":"Invalid request: missing field `threadId`"},"id":2}"#
    );
}

#[test]
fn ws_token_file_is_required_and_health_endpoints_answer() {
    let d = dir("ws-flags");
    let out = Command::new(BIN)
        .args(["fake", "--state-dir"])
        .arg(&d)
        .args([
            "app-server",
            "--listen",
            "ws://127.0.0.1:0",
            "--ws-auth",
            "capability-token",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("`--ws-token-file` or `--ws-token-sha256` is required"));
    let (_child, addr) = start_ws(&d, &[]);
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(s, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.starts_with("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n"),
        "{out}"
    );
}

#[test]
fn unix_socket_is_user_only_and_speaks_websocket() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("unix");
    let sock = d.join("app.sock");
    let _child = Killed(
        Command::new(BIN)
            .args(["fake", "--state-dir"])
            .arg(&d)
            .args(["app-server", "--listen"])
            .arg(format!("unix://{}", sock.display()))
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stream = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    let (mut ws, _) = tungstenite::client::client("ws://localhost/", stream).unwrap();
    ws.send(Message::text(INIT)).unwrap();
    let reply = ws.read().unwrap().into_text().unwrap();
    assert!(
        reply.contains(&format!(
            "\"userAgent\":\"ws/{}",
            codex_wire::newest().version
        )),
        "{reply}"
    );
}
