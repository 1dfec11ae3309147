//! The recording pass-through: a loopback HTTP server that codex's model provider points at.
//! Each request is forwarded to the upstream (the provider codex would have used, or
//! `--upstream`), its answer streamed back to codex chunk by chunk as it arrives, and the
//! exchange — request, status, headers, every server-sent event with its arrival time — appended
//! to `model.jsonl`, redacted. Nothing is changed on the way: codex sees the upstream's bytes.

use super::redact::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const LOG_FILE: &str = "model.jsonl";

/// One request and what the upstream answered, as `model.jsonl` holds it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Exchange {
    /// Arrival order within the recording process.
    pub n: u64,
    /// The recording process (several may append to one recording).
    pub pid: u32,
    /// When the request arrived (seconds since the epoch, as the transcript's `t`).
    pub t: f64,
    pub method: String,
    pub path: String,
    /// The request's headers, credentials left out.
    pub headers: Vec<(String, String)>,
    /// The request body: JSON when it parses, else its text (lossy).
    pub body: Value,
    /// The upstream's status (502: it could not be reached).
    pub status: u16,
    pub response_headers: Vec<(String, String)>,
    /// A server-sent event stream, event by event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Any other answer's body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// When the answer ended.
    pub t_end: f64,
    /// How it ended: `complete` (the upstream closed it), `codex closed` (codex went away first),
    /// or `error: …` (the upstream failed mid-answer).
    pub end: String,
}

/// One server-sent event.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Event {
    pub t: f64,
    /// The `data:` payload (JSON when it parses).
    pub data: Value,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

struct Shared {
    upstream: String,
    log: PathBuf,
    redactor: Redactor,
    agent: ureq::Agent,
    next: AtomicU64,
    written: Mutex<()>,
}

/// A running pass-through. [`Passthrough::finish`] waits for the exchanges in flight.
pub struct Passthrough {
    server: crate::model::Loopback,
    base_url: String,
}

/// `scheme://host[:port]` and the path of a base URL.
fn split_url(url: &str) -> (String, String) {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => (
            url[..after + i].to_string(),
            url[after + i..].trim_end_matches('/').to_string(),
        ),
        None => (url.trim_end_matches('/').to_string(), String::new()),
    }
}

impl Passthrough {
    /// Listens on loopback and forwards to `upstream` (a provider base URL such as
    /// `https://api.openai.com/v1`): codex's `<base>/responses` goes to `<upstream>/responses`.
    pub fn start(upstream: &str, dir: &Path, redactor: Redactor) -> io::Result<Passthrough> {
        let (_, path) = split_url(upstream);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(30)))
            .build()
            .into();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            log: dir.join(LOG_FILE),
            redactor,
            agent,
            next: AtomicU64::new(0),
            written: Mutex::new(()),
        });
        let server = crate::model::Loopback::start("127.0.0.1:0", "record", stop, move |req| {
            handle(req, &shared)
        })?;
        let base_url = format!("http://{}{path}", server.addr());
        Ok(Passthrough { server, base_url })
    }

    /// The base URL codex is given.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Stops accepting, then waits up to `grace` for the exchanges in flight to be written
    /// (an upstream still streaming to a codex that is gone is not waited for longer).
    pub fn finish(mut self, grace: Duration) {
        self.server.stop(Some(grace));
    }
}

/// Headers that belong to one connection, not to the message.
const HOP: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "content-length",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
    // Asked for by the pass-through's own client: the upstream answers uncompressed, so the
    // recording can read the events.
    "accept-encoding",
];

fn handle(mut req: tiny_http::Request, sh: &Shared) {
    let t = now();
    let n = sh.next.fetch_add(1, Ordering::SeqCst);
    let (body, read) = crate::model::read_body(&mut req);
    let method = req.method().as_str().to_string();
    let url = req.url().to_string();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_string(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let mut ex = Exchange {
        n,
        pid: std::process::id(),
        t,
        method: method.clone(),
        path: url.clone(),
        headers: Vec::new(),
        body: Value::Null,
        ..Exchange::default()
    };
    // The credentials this request carries are secrets wherever they show up later.
    let mut redactor = sh.redactor.clone();
    for (k, v) in &headers {
        if !Redactor::keeps_header(k) {
            redactor.learn(v);
            if let Some(token) = v.strip_prefix("Bearer ") {
                redactor.learn(token);
            }
        }
    }
    ex.headers = kept(&headers, &redactor);
    ex.body = match serde_json::from_slice::<Value>(&body) {
        Ok(mut v) => {
            redactor.json(&mut v);
            v
        }
        Err(_) => Value::String(redactor.text(&String::from_utf8_lossy(&body)).into_owned()),
    };
    if !read {
        let _ =
            req.respond(tiny_http::Response::from_string("body too large").with_status_code(413));
        return;
    }
    let (origin, _) = split_url(&sh.upstream);
    // codex's path under its base URL is the same path under the upstream's (the base URL's
    // path was kept when codex was pointed here).
    let target = format!("{origin}{url}");
    let mut up = http::Request::builder()
        .method(method.as_str())
        .uri(&target);
    for (k, v) in &headers {
        if !HOP.contains(&k.to_ascii_lowercase().as_str()) {
            up = up.header(k, v);
        }
    }
    let answer = up
        .body(body)
        .map_err(|e| e.to_string())
        .and_then(|r| sh.agent.run(r).map_err(|e| e.to_string()));
    let resp = match answer {
        Ok(r) => r,
        Err(e) => {
            let text = format!(
                "codex-wire record: the upstream {} cannot be reached: {e}",
                sh.upstream
            );
            ex.status = 502;
            ex.text = Some(redactor.text(&text).into_owned());
            ex.t_end = now();
            ex.end = "complete".into();
            write(sh, &ex);
            let _ = req.respond(tiny_http::Response::from_string(text).with_status_code(502));
            return;
        }
    };
    let (parts, rbody) = resp.into_parts();
    ex.status = parts.status.as_u16();
    let rheaders: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    ex.response_headers = kept(&rheaders, &redactor);
    let sse = rheaders
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.contains("text/event-stream"));
    let mut w = req.into_writer();
    let reason = parts.status.canonical_reason().unwrap_or("");
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", ex.status);
    for (k, v) in &rheaders {
        if !HOP.contains(&k.to_ascii_lowercase().as_str()) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str("transfer-encoding: chunked\r\n\r\n");
    let mut codex_here = w
        .write_all(head.as_bytes())
        .and_then(|()| w.flush())
        .is_ok();
    let mut reader = rbody.into_reader();
    let mut buf = vec![0u8; 16 * 1024];
    let mut all = Vec::new();
    let mut sse_buf = Vec::new();
    let mut end = "complete".to_string();
    loop {
        let got = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                end = format!("error: {e}");
                break;
            }
        };
        let chunk = &buf[..got];
        let at = now();
        if codex_here {
            codex_here = write!(w, "{got:x}\r\n")
                .and_then(|()| w.write_all(chunk))
                .and_then(|()| w.write_all(b"\r\n"))
                .and_then(|()| w.flush())
                .is_ok();
            if !codex_here {
                end = "codex closed".into();
            }
        }
        if sse {
            sse_buf.extend_from_slice(chunk);
            for data in take_events(&mut sse_buf) {
                ex.events.push(Event {
                    t: at,
                    data: parse_data(&data, &redactor),
                });
            }
        } else {
            all.extend_from_slice(chunk);
        }
        // codex stopped reading (an interrupt): the answer is still recorded to its end, so
        // that it translates whole however much of it codex took (`finish` bounds the wait).
    }
    if codex_here {
        let _ = w.write_all(b"0\r\n\r\n").and_then(|()| w.flush());
    }
    if !sse {
        ex.text = Some(redactor.text(&String::from_utf8_lossy(&all)).into_owned());
    }
    ex.t_end = now();
    ex.end = end;
    write(sh, &ex);
}

fn kept(headers: &[(String, String)], r: &Redactor) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(k, _)| Redactor::keeps_header(k))
        .map(|(k, v)| (k.to_ascii_lowercase(), r.text(v).into_owned()))
        .collect()
}

/// Complete events at the front of `buf` (a blank line ends one), as their joined `data:`
/// lines; the incomplete rest stays.
fn take_events(buf: &mut Vec<u8>) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let text = String::from_utf8_lossy(buf).into_owned();
        let norm = text.replace("\r\n", "\n");
        let Some(i) = norm.find("\n\n") else { break };
        let block = &norm[..i];
        let data: Vec<&str> = block
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            out.push(data.join("\n"));
        }
        // The consumed bytes, in the original (possibly CRLF) text.
        let consumed = consumed_len(&text, i + 2);
        buf.drain(..consumed);
    }
    out
}

/// The byte length in `text` of its first `norm_len` bytes once CRLFs are made LFs.
fn consumed_len(text: &str, norm_len: usize) -> usize {
    let (mut raw, mut norm) = (0, 0);
    let b = text.as_bytes();
    while norm < norm_len && raw < b.len() {
        if b[raw] == b'\r' && b.get(raw + 1) == Some(&b'\n') {
            raw += 1;
        }
        raw += 1;
        norm += 1;
    }
    raw
}

fn parse_data(data: &str, r: &Redactor) -> Value {
    match serde_json::from_str::<Value>(data) {
        Ok(mut v) => {
            r.json(&mut v);
            v
        }
        Err(_) => Value::String(r.text(data).into_owned()),
    }
}

fn write(sh: &Shared, ex: &Exchange) {
    let Ok(line) = serde_json::to_string(ex) else {
        return;
    };
    let _g = sh.written.lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&sh.log) {
        // One whole line per locked write: recording processes share the file.
        let _ = f.lock();
        let _ = f.write_all(format!("{line}\n").as_bytes());
        let _ = f.unlock();
    }
}

/// The exchanges of a recording, in arrival order over every process.
pub fn load(dir: &Path) -> Result<Vec<Exchange>, String> {
    let p = dir.join(LOG_FILE);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", p.display())),
    };
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        out.push(
            serde_json::from_str::<Exchange>(line)
                .map_err(|e| format!("{}:{}: {e}", p.display(), i + 1))?,
        );
    }
    out.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.n.cmp(&b.n)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_on_blank_lines_in_either_line_ending() {
        let mut b = b"event: a\ndata: {\"x\":1}\n\nevent: b\r\ndata: 2\r\n\r\ndata: par".to_vec();
        assert_eq!(take_events(&mut b), ["{\"x\":1}", "2"]);
        assert_eq!(b, b"data: par");
    }

    #[test]
    fn base_urls_split_into_origin_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:9/v1/"),
            ("http://127.0.0.1:9".into(), "/v1".into())
        );
        assert_eq!(
            split_url("https://chatgpt.com/backend-api/codex"),
            ("https://chatgpt.com".into(), "/backend-api/codex".into())
        );
        assert_eq!(
            split_url("http://h:1"),
            ("http://h:1".into(), String::new())
        );
    }
}
