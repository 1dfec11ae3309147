//! Transports: stdio (newline-delimited JSON), and WebSocket over TCP (`ws://IP:PORT`) or over
//! a Unix socket (`unix://PATH`), as the real server serves them — framing, the inbound queue
//! and its overload replies, batching. The bottom room of the fake: it serves any
//! [`Connection`] a [`Host`] makes, and knows nothing of what a line means.

use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use tungstenite::protocol::{Role, WebSocket};
use tungstenite::Message;

/// Where a connection's outbound lines go (stdout, a socket, a WebSocket writer): each call gets
/// one or more whole lines, each ending in `\n`.
pub type Sink = Box<dyn FnMut(&str) -> std::io::Result<()> + Send>;

/// What the transport loop does after a line.
#[derive(PartialEq, Eq, Debug)]
pub enum Next {
    Continue,
    Close,
}

/// One client connection, as a transport drives it.
pub trait Connection: Send + Sync {
    /// One inbound line (without its newline).
    fn line(self: Arc<Self>, line: &[u8]) -> Next;
    /// Holds output back while more input is queued (a batch), until [`Connection::release`].
    fn hold(&self);
    fn release(&self);
    /// The peer is gone.
    fn close(&self);
    /// Answers a request that finds the queue full; false when `line` is not a request.
    fn overloaded(&self, line: &[u8]) -> bool;
    /// Answers a request the scenario overloads (`overload`); whether it did.
    fn overload_scripted(&self, line: &[u8], scenario: &Value) -> bool;
}

/// The process behind the transports: makes connections, records transport events.
pub trait Host: Send + Sync {
    fn connect(&self, sink: Sink) -> Arc<dyn Connection>;
    /// A transcript event (`listen`, `ws_closed`, `exit`, …).
    fn record(&self, event: Value);
    /// `scenario.json` as it is now.
    fn scenario(&self) -> Value;
}

/// Serves `listen` (`stdio://`, `ws://IP:PORT`, `unix://PATH`) until it ends.
pub fn serve(host: Arc<dyn Host>, listen: &str, token: Option<String>) -> ExitCode {
    if listen == "stdio://" || listen == "stdio" || listen == "-" {
        return stdio(host);
    }
    if let Some(addr) = listen.strip_prefix("ws://") {
        ws_tcp(host, addr, token)
    } else if let Some(path) = listen.strip_prefix("unix://") {
        ws_unix(host, Path::new(path), token)
    } else {
        eprintln!(
            "error: unsupported --listen URL `{listen}` (stdio://, unix://PATH, ws://IP:PORT)"
        );
        ExitCode::from(2)
    }
}

/// Inbound messages queued between the transport and the processor, as in the real server
/// (`CHANNEL_CAPACITY`): a request arriving on a full queue is answered at once with
/// `-32001 Server overloaded; retry later.`; anything else waits for room.
const QUEUE: usize = 128;

fn stdio(host: Arc<dyn Host>) -> ExitCode {
    let sink: Sink = Box::new(|lines: &str| {
        let mut out = io::stdout().lock();
        out.write_all(lines.as_bytes())?;
        out.flush()
    });
    let conn = host.connect(sink);
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
    let (reader, reader_host) = (conn.clone(), host.clone());
    // The reader admits lines into the queue; this thread processes them in order.
    let _ = std::thread::Builder::new()
        .name("fake-stdin".into())
        .spawn(move || {
            let mut input = io::stdin().lock();
            let mut partial = Vec::new();
            'read: loop {
                let (chunk, eof) = match input.fill_buf() {
                    // A last line without its newline ends as if it had one.
                    Ok([]) => (b"\n".as_slice(), true),
                    Ok(c) => (c, false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                if eof && partial.is_empty() {
                    break;
                }
                let mut rest = chunk;
                // `scenario.json` read once per read of input: every line in it was sent
                // before this snapshot, as when it is read for each line.
                let mut sc = None;
                while let Some(nl) = memchr::memchr(b'\n', rest) {
                    let mut line = std::mem::take(&mut partial);
                    line.extend_from_slice(&rest[..nl]);
                    rest = &rest[nl + 1..];
                    let sc = sc.get_or_insert_with(|| reader_host.scenario());
                    if reader.overload_scripted(&line, sc) {
                        continue;
                    }
                    match tx.try_send(line) {
                        Ok(()) => {}
                        Err(mpsc::TrySendError::Full(line)) => {
                            if !reader.overloaded(&line) && tx.send(line).is_err() {
                                break 'read;
                            }
                        }
                        Err(mpsc::TrySendError::Disconnected(_)) => break 'read,
                    }
                }
                partial.extend_from_slice(rest);
                if eof {
                    break;
                }
                let used = chunk.len();
                input.consume(used);
            }
        });
    // Lines already queued are answered as one batch: their replies and transcript entries go
    // out in one write each when the batch ends. A batch ends after BATCH lines or HELD time
    // (slow handlers), so that no reply or turn message waits long behind later lines.
    const BATCH: usize = 256;
    const HELD: Duration = Duration::from_millis(2);
    while let Ok(mut line) = rx.recv() {
        conn.hold();
        let (mut n, mut since) = (0, std::time::Instant::now());
        let next = loop {
            if conn.clone().line(&line) == Next::Close {
                break Next::Close;
            }
            n += 1;
            match rx.try_recv() {
                Ok(l) => {
                    if n >= BATCH || since.elapsed() >= HELD {
                        conn.release();
                        conn.hold();
                        (n, since) = (0, std::time::Instant::now());
                    }
                    line = l;
                }
                Err(_) => break Next::Continue,
            }
        };
        conn.release();
        if next == Next::Close {
            conn.close();
            host.record(json!({"event": "exit", "how": "connection_closed"}));
            return ExitCode::SUCCESS;
        }
    }
    conn.close();
    host.record(json!({"event": "stdin_eof"}));
    host.record(json!({"event": "exit", "how": "stdin_eof"}));
    ExitCode::SUCCESS
}

fn ws_tcp(host: Arc<dyn Host>, addr: &str, token: Option<String>) -> ExitCode {
    // Binds exactly the address given: `127.0.0.1:0` picks a free port, reported on stderr.
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Error: failed to bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    host.record(json!({"event": "listen", "url": format!("ws://{local}")}));
    // One write, errors ignored: a harness that stops reading stderr must not kill the fake.
    let banner = format!("codex app-server (WebSockets)\n  listening on: ws://{local}\n  readyz: http://{local}/readyz\n  healthz: http://{local}/healthz\n");
    let _ = io::stderr().write_all(banner.as_bytes());
    for stream in listener.incoming().flatten() {
        let (host, token) = (host.clone(), token.clone());
        let _ = std::thread::Builder::new().spawn(move || {
            let s2 = stream.try_clone();
            if let Ok(s2) = s2 {
                serve_ws(host, stream, move |d| s2.set_read_timeout(d), token);
            }
        });
    }
    ExitCode::SUCCESS
}

fn ws_unix(host: Arc<dyn Host>, path: &Path, token: Option<String>) -> ExitCode {
    let _ = std::fs::remove_file(path);
    // The socket is created user-only: the umask covers the window between bind and chmod.
    // SAFETY: umask only changes this process's file creation mask.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    // SAFETY: as above, restoring the previous mask.
    unsafe { libc::umask(old) };
    let listener = match bound {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Error: failed to bind {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    host.record(json!({"event": "listen", "url": format!("unix://{}", path.display())}));
    for stream in listener.incoming().flatten() {
        let (host, token) = (host.clone(), token.clone());
        let _ = std::thread::Builder::new().spawn(move || {
            if let Ok(s2) = stream.try_clone() {
                serve_ws(host, stream, move |d| s2.set_read_timeout(d), token);
            }
        });
    }
    ExitCode::SUCCESS
}

/// Reads the HTTP request head (up to the blank line), byte by byte so nothing of the
/// WebSocket stream that follows is consumed.
fn read_head(s: &mut impl Read) -> Option<String> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 || s.read(&mut b).ok()? == 0 {
            return None;
        }
        head.push(b[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

fn http_date() -> String {
    let secs = super::state::now_secs();
    let days = secs.div_euclid(86_400);
    let (y, m, d, h, mi, sec) = super::state::civil(secs);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WD[days.rem_euclid(7) as usize],
        d,
        MON[(m - 1) as usize],
        y,
        h,
        mi,
        sec
    )
}

/// The handshake as the real server answers it, then messages until either side closes.
fn serve_ws<S: Read + Write + Send + 'static>(
    host: Arc<dyn Host>,
    mut stream: S,
    set_timeout: impl Fn(Option<Duration>) -> io::Result<()>,
    token: Option<String>,
) {
    let _ = set_timeout(Some(Duration::from_secs(10)));
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |k: &str| {
        headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let upgrade = header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let date = http_date();
    if !upgrade {
        let status = if path == "/healthz" || path == "/readyz" {
            "200 OK"
        } else {
            "404 Not Found"
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-length: 0\r\ndate: {date}\r\n\r\n"
        );
        return;
    }
    if let Some(token) = &token {
        let given = header("authorization").and_then(|a| a.strip_prefix("Bearer "));
        let refusal = match given {
            None => Some("missing websocket bearer token"),
            Some(g) if g.trim() != token => Some("invalid websocket bearer token"),
            Some(_) => None,
        };
        if let Some(body) = refusal {
            host.record(json!({"event": "ws_refused", "reason": body}));
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\ndate: {date}\r\n\r\n{body}",
                body.len()
            );
            return;
        }
    }
    let key = header("sec-websocket-key").unwrap_or_default();
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    if write!(
        stream,
        "HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\nsec-websocket-accept: {accept}\r\ndate: {date}\r\n\r\n"
    )
    .is_err()
    {
        return;
    }
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, None);
    let (tx, rx) = mpsc::channel::<String>();
    let sink: Sink = Box::new(move |lines: &str| {
        // One WebSocket message per line (JSON text never holds a raw newline).
        lines.lines().try_for_each(|line| {
            tx.send(line.to_string())
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
        })
    });
    let conn = host.connect(sink);
    // Short read timeouts let this one thread both read frames and flush queued output.
    let _ = set_timeout(Some(Duration::from_millis(5)));
    'outer: loop {
        while let Ok(line) = rx.try_recv() {
            if ws.write(Message::text(line)).is_err() {
                break 'outer;
            }
        }
        if ws.flush().is_err() {
            break;
        }
        match ws.read() {
            Ok(Message::Text(t)) => {
                if conn.overload_scripted(t.as_bytes(), &host.scenario()) {
                    continue;
                }
                if conn.clone().line(t.as_bytes()) == Next::Close {
                    break;
                }
            }
            Ok(Message::Binary(b)) => {
                if conn.overload_scripted(&b, &host.scenario()) {
                    continue;
                }
                if conn.clone().line(&b) == Next::Close {
                    break;
                }
            }
            Ok(Message::Close(_)) => break,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    conn.close();
    host.record(json!({"event": "ws_closed"}));
}
