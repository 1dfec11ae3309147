//! `codex-wire record` and `codex-wire replay`, offline: sessions of the turn corpus recorded
//! against the scripted model as the upstream (the real codex behind record), then replayed on
//! the fake and on the real binary; each replay must be the recording's conversation under
//! `diff`'s masking rule. And nothing secret reaches a recording.

use codex_wire::harness::{self, Case, Server};
use codex_wire::replay;
use std::path::{Path, PathBuf};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_codex-wire"))
}

fn real() -> PathBuf {
    harness::real_codex(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("the record tests need the real codex: {e}"))
}

fn work(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("codex-wire-record-{}-{name}", std::process::id()))
}

fn corpus_case(name: &str) -> Case {
    let cases = harness::load_cases(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/turns"
    )))
    .expect("the turn corpus");
    cases
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no corpus case {name}"))
}

/// Records `case`, replays it on the fake and on the real server: the differences, if any.
fn round_trip(case: &Case) -> Vec<String> {
    round_trip_keep(case, |_| {})
}

/// [`round_trip`], with a look at the recording first.
fn round_trip_keep(case: &Case, look: impl Fn(&Path)) -> Vec<String> {
    let root = work(&case.name);
    let codex = real();
    let (rec, stopped) = codex_wire::record::record_case(case, bin(), &codex, &root)
        .unwrap_or_else(|e| panic!("{}: cannot record: {e}", case.name));
    look(&rec);
    let mut problems = Vec::new();
    if let Some(s) = stopped {
        problems.push(format!(
            "{}: the recording's client stopped: {s}",
            case.name
        ));
    }
    let version = codex_wire::newest().version;
    let servers = [
        (
            "fake",
            Server::Fake {
                bin: bin(),
                version: Some(version),
            },
        ),
        (
            "real",
            Server::Real {
                bin: bin(),
                codex: &codex,
            },
        ),
    ];
    for (kind, server) in servers {
        // The real server against its own recording: a second replay is asked for only when
        // the first differs, as fidelity's strict verdict asks for a second real run (its own
        // races, e.g. a steer's result and the next rate-limit report on a loaded machine, seen
        // on `s8_steer_mid_message`); the fake gets one replay.
        let tries = if kind == "real" { 2 } else { 1 };
        let mut outcome = None;
        for attempt in 0..tries {
            let dir = root.join(format!("{kind}{attempt}"));
            let (t, stopped) = replay::replay(&rec, &server, &dir)
                .unwrap_or_else(|e| panic!("{}: cannot replay: {e}", case.name));
            let compared = replay::compare(&rec, &t, &dir).expect("transcripts");
            let done = compared.is_ok();
            outcome = Some((stopped, compared));
            if done {
                break;
            }
        }
        let Some((stopped, compared)) = outcome else {
            continue;
        };
        if let Some(s) = stopped {
            problems.push(format!(
                "{} on the {kind}: the replayed client stopped: {s}",
                case.name
            ));
        }
        match compared {
            Ok(_) => {}
            Err(m) => problems.push(format!(
                "{} on the {kind}: message {} differs: {}\n  recording {:?}\n  replay    {:?}",
                case.name,
                m.index,
                m.why,
                m.a.map(|e| e.msg.to_string()),
                m.b.map(|e| e.msg.to_string())
            )),
        }
    }
    if problems.is_empty() && std::env::var_os("CODEX_WIRE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
    problems
}

/// An approval, a dropped stream retried, two turns, a restart that resumes the thread in a new
/// process, a steer mid-stream (`cargo xtask record` runs the whole corpus).
#[test]
fn corpus_sessions_recorded_and_replayed_on_both_servers() {
    let names = std::env::var("CODEX_WIRE_RECORD_CASES").unwrap_or_else(|_| {
        "01_message,03_command_approved,07b_partial_then_retry,08_two_turns,17_restart_resume,\
         21_steer"
            .into()
    });
    let mut problems = Vec::new();
    for name in names.split(',') {
        problems.extend(round_trip(&corpus_case(name.trim())));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The provider's HTTP errors (a 503 retried as a turn, then a 429 with its headers that
/// fails the turn: codex does not retry a 429 without `Retry-After`, so the second scripted
/// answer is never asked for) come back as `http_error` steps, and replay as recorded.
#[test]
fn http_errors_recorded_as_steps_and_replayed() {
    let case: Case = serde_json::from_value(serde_json::json!({
        "name": "http_errors",
        "stream_retries": 1,
        "scenario": {"turns": [
            {"steps": [
                {"kind": "http_error", "status": 503, "body": "{\"error\":{\"message\":\"busy\"}}"},
                {"kind": "message", "text": "after a retry"}]},
            {"steps": [
                {"kind": "http_error", "status": 429, "body": "slow down",
                 "headers": {"x-request-id": "req-1"}},
                {"kind": "http_error", "status": 429, "body": "slow down",
                 "headers": {"x-request-id": "req-2"}}]}]},
        "inputs": ["one", "two"]
    }))
    .unwrap();
    let problems = round_trip_keep(&case, |rec| {
        let scenario = std::fs::read_to_string(rec.join("scenario.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&scenario).unwrap();
        let kinds: Vec<String> = v["turns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["steps"].as_array().unwrap().clone())
            .map(|s| s["kind"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(kinds, ["http_error", "message", "http_error"], "{scenario}");
        assert!(
            scenario.contains("req-1"),
            "the provider's headers are kept: {scenario}"
        );
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A credential planted in the environment, in `config.toml` (a provider header and the
/// provider's key, sent as `Authorization`), on the command line, and in the client's own
/// traffic (an API-key login), plus a `--redact` pattern: the upstream receives them, the
/// recording holds none.
#[test]
fn no_secret_reaches_a_recording() {
    let root = work("secrets");
    let _ = std::fs::remove_dir_all(&root);
    let (home, codex_home, cwd, upstream, out) = (
        root.join("home"),
        root.join("codex_home"),
        root.join("work"),
        root.join("upstream"),
        root.join("recording"),
    );
    for d in [&home, &codex_home, &cwd, &upstream] {
        std::fs::create_dir_all(d).unwrap();
    }
    let secrets = [
        "sk-env-secret-4c7a55e1",
        "envkey-secret-93ab27f0",
        "hdr-secret-8d1f0c2b",
        "cli-hdr-secret-6e0d11",
        "sk-client-secret-1f2e3d4c",
        "planted-word-77aa01",
    ];
    std::fs::write(
        codex_home.join("config.toml"),
        "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\n\
         [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\
         env_key = \"PLANTED_PROVIDER_KEY\"\nhttp_headers = { \"X-Planted\" = \"hdr-secret-8d1f0c2b\" }\n",
    )
    .unwrap();
    std::fs::write(
        upstream.join("scenario.json"),
        r#"{"turns": [{"steps": [{"kind": "message", "text": "I saw planted-word-77aa01."}]}]}"#,
    )
    .unwrap();
    let model = codex_wire::model::Model::start("127.0.0.1:0", &upstream).unwrap();
    let codex = real();
    let mut child = std::process::Command::new(bin())
        .arg("record")
        .arg("--out")
        .arg(&out)
        .arg("--upstream")
        .arg(model.base_url())
        .args(["--redact", "planted-[a-z0-9-]+", "--"])
        .arg(&codex)
        .args([
            "app-server",
            "-c",
            "model_providers.scripted.http_headers.X-Cli=\"cli-hdr-secret-6e0d11\"",
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CODEX_HOME", &codex_home)
        .env("OPENAI_API_KEY", secrets[0])
        .env("PLANTED_PROVIDER_KEY", secrets[1])
        .current_dir(&cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("codex-wire record starts");
    use std::io::{BufRead, Write};
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
    let mut until = |pred: &dyn Fn(&serde_json::Value) -> bool| -> serde_json::Value {
        for l in lines.by_ref() {
            let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap_or_default();
            if pred(&v) {
                return v;
            }
        }
        panic!("the server ended early");
    };
    send(
        serde_json::json!({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}),
    );
    until(&|v| v["id"] == 0);
    send(serde_json::json!({"method": "initialized"}));
    send(
        serde_json::json!({"id": 1, "method": "account/login/start", "params": {"type": "apiKey", "apiKey": secrets[4]}}),
    );
    until(&|v| v["id"] == 1);
    send(serde_json::json!({"id": 2, "method": "thread/start", "params": {}}));
    let thread = until(&|v| v["id"] == 2)["result"]["thread"]["id"].clone();
    send(
        serde_json::json!({"id": 3, "method": "turn/start", "params": {"threadId": thread,
        "input": [{"type": "text", "text": "say planted-word-77aa01"}]}}),
    );
    until(&|v| v["method"] == "turn/completed");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    drop(model);
    // The upstream got them (so the recording had them to hide).
    let sent = std::fs::read_to_string(upstream.join("model-requests.jsonl")).unwrap();
    for s in &secrets[1..4] {
        assert!(
            sent.contains(s),
            "the upstream never received {s}: the test plants nothing"
        );
    }
    let mut files = 0;
    for e in std::fs::read_dir(&out).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        files += 1;
        for s in &secrets {
            assert!(
                !text.contains(s),
                "{} holds the secret {s}",
                e.path().display()
            );
        }
    }
    assert!(files >= 6, "the recording wrote {files} files");
    let transcript = std::fs::read_to_string(out.join("transcript.jsonl")).unwrap();
    assert!(
        transcript.contains("[REDACTED]"),
        "the login's apiKey is masked, not dropped"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The README's replay commands on the recording the repository ships (`examples/recording`:
/// an approved command, then a message): same conversation on the fake and on the real binary.
#[test]
fn the_shipped_recording_replays_from_the_command_line() {
    let rec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/recording");
    let root = work("cli");
    let codex = real();
    for (kind, extra) in [
        ("fake", vec![]),
        ("real", vec!["--real".into(), codex.clone()]),
    ] {
        let out = std::process::Command::new(bin())
            .arg("replay")
            .arg(&rec)
            .arg("--out")
            .arg(root.join(kind))
            .args(&extra)
            .output()
            .expect("codex-wire replay runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "replay on the {kind}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("\nsame conversation as the recording"),
            "{text}"
        );
    }
    // A recording that is not one is a usage error, not a panic.
    let out = std::process::Command::new(bin())
        .args(["replay", "/nonexistent-recording"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-recording/case.json"));
    let _ = std::fs::remove_dir_all(&root);
}

/// `record --derive` reads a recording back again: on the shipped recording it writes exactly
/// the shipped `scenario.json` and `case.json` (so they are what this build derives).
#[test]
fn derive_reads_the_shipped_recording_back_the_same() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/recording");
    let copy = work("derive");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["transcript.jsonl", "model.jsonl", "sessions.jsonl"] {
        std::fs::copy(shipped.join(f), copy.join(f)).unwrap();
    }
    let out = std::process::Command::new(bin())
        .args(["record", "--derive", "--out"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("2 model answers as steps"), "{said}");
    for f in ["scenario.json", "notes.txt"] {
        assert_eq!(
            std::fs::read_to_string(copy.join(f)).unwrap(),
            std::fs::read_to_string(shipped.join(f)).unwrap(),
            "{f}"
        );
    }
    // The case names its directory; the rest is the same.
    let case = |p: &Path| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("case.json")).unwrap()).unwrap();
        v["name"] = serde_json::Value::Null;
        v
    };
    assert_eq!(case(&copy), case(&shipped));
    let _ = std::fs::remove_dir_all(&copy);
}

/// Sessions whose model streams every event a real Responses API stream carries
/// (`tests/corpus/streams/`, written from the API's event reference by `make.py`, not from the
/// scripted model's renderer): a message, reasoning then a message, an approved command, a
/// failed stream, two commands accepted for the session, an HTTP 429 then success, an interrupt
/// and a steer on the first delta of a paced message. Each is recorded and replays as the same
/// conversation on the fake and on the real server.
#[test]
fn realistic_streams_recorded_and_replayed_on_both_servers() {
    let cases = harness::load_cases(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/streams"
    )))
    .expect("the stream sessions");
    assert_eq!(cases.len(), 8, "the eight stream sessions");
    let mut problems = Vec::new();
    for case in &cases {
        problems.extend(round_trip(case));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
