//! `codex-wire proxy -- codex app-server` with the real binary: a client drives it, the
//! replies are what the engine predicts, and the transcript passes through `validate` with
//! the same findings the proxy printed live. Needs the pinned binary (`cargo xtask test`
//! installs it; or set $CODEX_WIRE_CODEX); fails loudly without it.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn codex() -> PathBuf {
    codex_wire::harness::real_codex(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `codex-wire proxy --transcript T -- CODEX app-server` in a fresh work dir `name` (its own
/// `CODEX_HOME` and cwd), stdio piped; with the transcript's path.
fn proxied(codex: &std::path::Path, name: &str) -> (std::process::Child, PathBuf) {
    let work = tmp(name);
    let (home, cwd) = (work.join("home"), work.join("cwd"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let transcript = work.join("transcript.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_codex-wire"))
        .arg("proxy")
        .arg("--transcript")
        .arg(&transcript)
        .arg("--")
        .arg(codex)
        .arg("app-server")
        .env("CODEX_HOME", &home)
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, transcript)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "codex-wire-proxy-real-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The finding headers of human output, without their location prefix, in order.
fn headers(text: &str, location: impl Fn(&str) -> Option<usize>) -> Vec<String> {
    text.lines()
        .map(|l| l.strip_prefix("codex-wire proxy: ").unwrap_or(l))
        .filter_map(|l| location(l).map(|n| l[n..].to_string()))
        .collect()
}

#[test]
fn proxy_in_front_of_the_real_server() {
    let codex = codex();
    let (mut child, transcript) = proxied(&codex, "work");
    let mut w = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
        s
    });
    let lines = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"proxy-test","version":"1"},"capabilities":{"experimentalApi":true}}}"#,
        r#"{"method":"initialized"}"#,
        r#"{"id":1,"method":"config/read","params":{"includeLayers":false,"verbose":true}}"#,
        r#"{"id":2,"method":"turn/start","params":{}}"#,
        r#"{"id":3,"method":"thread/compact","params":{}}"#,
        r#"{"id":4,"method":"initialize","params":{"clientInfo":{"name":"again","version":"1"}}}"#,
        r#"{"id":5,"method":"thread/list","params":{"limit":"ten"}}"#,
    ];
    let mut session = codex_wire::Session::new();
    for line in lines {
        writeln!(w, "{line}").unwrap();
        w.flush().unwrap();
        let v = session.feed(line.as_bytes());
        let Some(id) = v.id.as_ref().map(codex_wire::Id::to_value) else {
            continue;
        };
        // The reply to this id, skipping notifications.
        let reply = loop {
            let l = rx
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no reply to {line}"));
            let m: serde_json::Value = serde_json::from_str(&l).unwrap();
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                break l;
            }
        };
        if let Some(e) = v.error() {
            assert_eq!(reply, e.line(), "the real server's reply to {line}");
        } else {
            assert!(reply.contains("\"result\""), "{line} → {reply}");
        }
    }
    drop(w);
    let status = {
        let mut waited = 0;
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(waited < 300, "the server did not exit after stdin closed");
            std::thread::sleep(Duration::from_millis(100));
            waited += 1;
        }
    };
    assert_eq!(status.code(), Some(0), "exit code passed through");
    let live = err_reader.join().unwrap();

    let proxy_findings = headers(&live, |l| {
        let rest = l.strip_prefix("in:").or_else(|| l.strip_prefix("out:"))?;
        let n = rest.find(": ")?;
        rest[..n].parse::<u64>().ok()?;
        Some(l.len() - rest.len() + n + 2)
    });
    let v = Command::new(env!("CARGO_BIN_EXE_codex-wire"))
        .args(["validate", "--format", "human"])
        .arg(&transcript)
        .output()
        .unwrap();
    assert_eq!(v.status.code(), Some(1));
    let text = String::from_utf8_lossy(&v.stdout).to_string();
    let prefix = format!("{}:", transcript.display());
    let validate_findings = headers(&text, |l| {
        let rest = l.strip_prefix(&prefix)?;
        let n = rest.find("]: ")?;
        Some(prefix.len() + n + 3)
    });
    assert!(
        proxy_findings.len() >= 5,
        "the proxy flagged too little:\n{live}"
    );
    assert_eq!(
        proxy_findings, validate_findings,
        "live:\n{live}\nvalidate:\n{text}"
    );
    for want in [
        "`$.jsonrpc` is ignored",
        "`$.params.verbose` is ignored",
        "missing field `threadId`",
        "unknown variant `thread/compact`",
        "Already initialized",
        "invalid type: string \"ten\"",
    ] {
        assert!(
            proxy_findings.iter().any(|f| f.contains(want)),
            "{want}: {proxy_findings:#?}"
        );
    }
    // No drift: everything the real server wrote matches the schema.
    assert!(
        !proxy_findings.iter().any(|f| f.contains("drift")),
        "{proxy_findings:#?}"
    );
    if let Some(work) = transcript.parent() {
        let _ = std::fs::remove_dir_all(work);
    }
}

/// Without `--codex-version` the proxy judges a server as the version its `--version` names: in
/// front of an older binary, a method only the newer versions have is predicted refused with that
/// binary's own unknown-variant reply, which is the reply the binary really sends.
#[test]
fn proxy_judges_each_binary_as_its_own_version() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let newest = codex_wire::newest();
    for &p in codex_wire::versions() {
        let Some(method) = newest
            .client_methods
            .iter()
            .find(|m| !p.client_methods.contains(m))
        else {
            continue; // the newest itself
        };
        let codex =
            codex_wire::harness::real_codex_of(root, p.version).unwrap_or_else(|e| panic!("{e}"));
        let (mut child, transcript) = proxied(&codex, &format!("as-{}", p.version));
        let input = format!(
            "{}\n{}\n",
            r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"v","version":"1"}}}"#,
            format_args!(r#"{{"id":1,"method":"{method}","params":{{}}}}"#)
        );
        let mut w = child.stdin.take().unwrap();
        w.write_all(input.as_bytes()).unwrap();
        // The end of input closes a server that has not answered yet: wait for the answer.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut seen = Vec::new();
        let reply: serde_json::Value = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{}: no reply to {method}: {seen:?}", p.version));
            match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(m) if m["id"] == 1 => break m,
                _ => seen.push(line),
            }
        };
        drop(w);
        child.wait().unwrap();
        let real = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(real.contains("unknown variant"), "{}: {reply}", p.version);
        // The transcript records the proxy's prediction for each client line.
        let predicted = std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["dir"] == "in" && e["msg"]["id"] == 1)
            .map(|e| e["violation"].clone())
            .expect("the request in the transcript");
        assert_eq!(predicted, real, "{}: the proxy's prediction", p.version);
        if let Some(work) = transcript.parent() {
            let _ = std::fs::remove_dir_all(work);
        }
    }
}
