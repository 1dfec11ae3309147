//! `codex-wire validate`: output contract, formats, sessions, parallel = sequential, and
//! robustness on arbitrary bytes.

use codex_wire::validate::{self, report::OutFormat, Config};
use codex_wire::Session;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codex-wire"))
}

fn validate_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut c = bin()
        .arg("validate")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = c.stdin.take().unwrap();
    let input = input.to_vec();
    // Written from a thread: the output pipe must be drained meanwhile.
    let t = std::thread::spawn(move || {
        let _ = w.write_all(&input);
    });
    let out = c.wait_with_output().unwrap();
    t.join().unwrap();
    out
}

fn records(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn sample_json_contract() {
    let out = bin()
        .args([
            "validate",
            "--format",
            "json",
            "samples/client-session.jsonl",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r = records(&out);
    assert_eq!(r.len(), 8);
    assert_eq!(
        r[2].to_string(),
        r#"{"line":3,"dir":"in","kind":"request","id":1,"method":"thread/start","error":null,"ignored":["$.params.temperature"],"closes":false}"#
    );
    assert_eq!(
        r[4]["error"].to_string(),
        r#"{"code":-32600,"message":"Invalid request: missing field `threadId`"}"#
    );
}

#[test]
fn clean_input_exits_zero_and_allow_ignored_silences_known_fields() {
    let init =
        r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}"#;
    let ok = format!("{init}\n{{\"method\":\"initialized\"}}\n");
    assert_eq!(validate_stdin(&[], ok.as_bytes()).status.code(), Some(0));
    let extra = format!(
        "{init}\n{{\"id\":1,\"method\":\"thread/start\",\"params\":{{\"temperature\":1}}}}\n"
    );
    assert_eq!(validate_stdin(&[], extra.as_bytes()).status.code(), Some(1));
    let out = validate_stdin(&["--allow-ignored", "params.temperature"], extra.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(records(&out)[1]["ignored"], serde_json::json!([]));
}

#[test]
fn usage_and_io_errors_exit_two() {
    assert_eq!(
        validate_stdin(&["--format", "xml"], b"").status.code(),
        Some(2)
    );
    assert_eq!(validate_stdin(&["--bogus"], b"").status.code(), Some(2));
    let out = bin()
        .args(["validate", "/nonexistent/capture.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent"));
}

/// A reader that goes away (`validate … 2>&1 | head -1`) closes both stdout and stderr: the
/// validator stops with exit 2, on one core and on two, and does not panic.
#[test]
fn closed_output_exits_two_without_a_panic() {
    let file = std::env::temp_dir().join(format!("closed-out-{}.jsonl", std::process::id()));
    let line = r#"{"id":1,"method":"turn/start","params":{"threadId":"t","input":[],"x":1}}"#;
    std::fs::write(&file, format!("{line}\n").repeat(50_000)).unwrap();
    for jobs in ["1", "2"] {
        let mut c = bin()
            .args(["validate", "--format", "json", "--jobs", jobs])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(c.stdout.take());
        drop(c.stderr.take());
        assert_eq!(c.wait().unwrap().code(), Some(2), "--jobs {jobs}");
    }
    let _ = std::fs::remove_file(&file);
}

#[test]
fn human_output_quotes_the_line_and_points_at_the_field() {
    let input = concat!(
        r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}"#,
        "\n",
        r#"{"id":1,"method":"thread/start","params":{"model":"m","temperature":0.2}}"#,
        "\n",
        r#"{"id":2,"method":"thread/start","params":{"approvalPolicy":"sometimes"}}"#,
        "\n"
    );
    let out = validate_stdin(&["--format", "human"], input.as_bytes());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.contains("`$.params.temperature` is ignored by the server"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(lines[i].starts_with("<stdin>:2: warning: request thread/start (id 1)"));
    // The caret line underlines exactly `"temperature":0.2`.
    let quoted = lines[i + 1];
    let carets = lines[i + 2];
    let at = quoted.find(r#""temperature""#).unwrap();
    assert_eq!(carets.find('^'), Some(at), "{quoted}\n{carets}");
    assert_eq!(carets.trim_end().len() - at, r#""temperature":0.2"#.len());
    let j = lines
        .iter()
        .position(|l| l.contains("unknown variant `sometimes`"))
        .unwrap();
    assert!(lines[j + 2].contains('^'));
    assert!(lines[j + 3].contains(r#"= the server replies {"error":{"code":-32600"#));
    assert!(text.contains("total"), "summary table: {text}");
}

/// The reference: one session, one line at a time.
fn reference(input: &[u8]) -> Vec<String> {
    let mut s = Session::new();
    let mut out = Vec::new();
    let lines = input.iter().filter(|&&b| b == b'\n').count();
    for line in input.split(|&b| b == b'\n').take(lines) {
        let v = s.feed(line);
        out.push(format!("{:?} {:?} {:?}", v.outcome, v.ignored, v.kind));
        if v.outcome == codex_wire::Outcome::Close {
            break;
        }
    }
    out
}

/// Output, findings and lines left unchecked after a close, of a stream or (`mapped`) a file.
fn run_as(input: &[u8], jobs: usize, mapped: bool) -> (Vec<u8>, u64, u64) {
    let cfg = Config {
        format: OutFormat::Json,
        jobs,
        ..Config::default()
    };
    let mut out = Vec::new();
    let stats = if mapped {
        let path = std::env::temp_dir().join(format!("run-as-{}-{jobs}.jsonl", std::process::id()));
        std::fs::write(&path, input).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let stats = validate::run_file(f, "t", &cfg, &mut out).unwrap();
        let _ = std::fs::remove_file(&path);
        stats
    } else {
        validate::run(input, None, "t", &cfg, &mut out).unwrap()
    };
    (out, stats.findings(), stats.after_close)
}

fn run(input: &[u8], jobs: usize) -> (Vec<u8>, u64) {
    let (out, findings, _) = run_as(input, jobs, false);
    (out, findings)
}

#[test]
fn parallel_output_is_the_sequential_output() {
    let mut traffic = Vec::new();
    validate::traffic::generate(20_000, 7, &mut traffic).unwrap();
    // Also a capture whose `initialize` comes late: the batches before it are checked with
    // an uninitialized session, and the ones the workers guessed wrong are re-checked.
    let mut late = Vec::new();
    let body: Vec<&[u8]> = traffic.split(|&b| b == b'\n').collect();
    for l in &body[2..8_000] {
        late.extend_from_slice(l);
        late.push(b'\n');
    }
    late.extend_from_slice(body[0]);
    late.push(b'\n');
    for l in &body[8_000..body.len() - 1] {
        late.extend_from_slice(l);
        late.push(b'\n');
    }
    for input in [&traffic, &late] {
        let (one, f1) = run(input, 1);
        let (three, f3) = run(input, 3);
        assert!(one == three, "parallel output differs");
        assert_eq!(f1, f3);
        // And both are what a plain one-line-at-a-time session says.
        let want = reference(input);
        let got: Vec<Value> = String::from_utf8_lossy(&one)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got.len(), want.len());
        let errors = got.iter().filter(|r| !r["error"].is_null()).count();
        let want_errors = want.iter().filter(|w| w.starts_with("Reply")).count();
        assert_eq!(errors, want_errors);
        assert!(errors > 500, "the traffic has invalid lines");
    }
    let (late_out, _) = run(&late, 2);
    assert!(String::from_utf8_lossy(&late_out).contains("Not initialized"));
    // A line that is not UTF-8 closes the connection: every line after it goes unchecked and
    // is counted, however many batches the workers had cut by then, early or late in the file.
    for at in [3, 15_000] {
        let mut closing = Vec::new();
        for (k, l) in body[..body.len() - 1].iter().enumerate() {
            closing.extend_from_slice(if k == at { b"\xff\xfe" } else { l });
            closing.push(b'\n');
        }
        let after = (body.len() - 2 - at) as u64;
        for mapped in [false, true] {
            let one = run_as(&closing, 1, mapped);
            assert_eq!(one.2, after, "jobs 1, mapped {mapped}, close at {at}");
            for jobs in [2, 3] {
                assert!(
                    run_as(&closing, jobs, mapped) == one,
                    "jobs {jobs}, mapped {mapped}, close at {at}"
                );
            }
        }
    }
}

#[test]
fn transcripts_check_both_directions_and_keep_sessions_apart() {
    let t = [
        r#"{"pid":1,"t":0,"event":"spawn","argv":["codex","app-server"]}"#,
        r#"{"pid":1,"t":0,"dir":"in","msg":{"id":0,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}}"#,
        r#"{"pid":2,"t":0,"dir":"in","msg":{"id":5,"method":"thread/list","params":{}}}"#,
        r#"{"pid":1,"t":0,"dir":"out","msg":{"id":9001,"method":"item/commandExecution/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"i","startedAtMs":1}}}"#,
        r#"{"pid":1,"t":0,"dir":"in","msg":{"id":9001,"result":{"decision":"maybe"}}}"#,
        r#"{"pid":1,"t":0,"dir":"out","msg":{"method":"thread/started","params":{"thread":42}}}"#,
        r#"{"pid":1,"t":0,"dir":"in","raw":"not json"}"#,
        "garbage",
        r#"{"pid":1,"t":0,"event":"exit","code":0}"#,
    ]
    .join("\n");
    let out = validate_stdin(&["--format", "json"], t.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let r = records(&out);
    assert_eq!(r.len(), 7, "{r:#?}");
    assert_eq!(r[0]["line"], 2);
    assert!(r[0]["error"].is_null());
    // pid 2 never initialized its own connection.
    assert_eq!(r[1]["pid"], 2);
    assert_eq!(r[1]["error"]["message"], "Not initialized");
    assert_eq!(r[2]["dir"], "out");
    assert_eq!(r[2]["kind"], "request");
    assert!(r[2].get("violation").is_none(), "{}", r[2]);
    assert_eq!(r[3]["replyTo"], "item/commandExecution/requestApproval");
    assert!(
        r[3]["violation"].as_str().unwrap().contains("maybe"),
        "{}",
        r[3]
    );
    assert!(r[4]["violation"].is_string(), "drift: {}", r[4]);
    assert_eq!(r[5]["kind"], "unparsed");
    assert_eq!(r[6]["kind"], "unreadable");
}

/// Each version's captured session is clean when judged as that version, which `validate`
/// detects from the server's `userAgent` and names on stderr.
#[test]
fn the_real_session_transcript_of_every_version_is_clean() {
    for &p in codex_wire::versions() {
        let v = p.version;
        let file = format!("tests/corpus/{v}/real_session.jsonl");
        let out = bin()
            .args(["validate", "--format", "json", &file])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "judged as codex {v} (from the server's userAgent)"
            )),
            "{stderr}"
        );
        let r = records(&out);
        // One verdict per line of the capture.
        let lines =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&file))
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
        assert_eq!(r.len(), lines, "{v}");
        assert!(r.iter().all(|x| x.get("violation").is_none()), "{v}");
        assert!(r
            .iter()
            .any(|x| x["dir"] == "out" && x["replyTo"] == "thread/start"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{v}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Judged as another version than the capture's, the same session has findings: the versions
/// really differ, and `--codex-version` overrides the detection.
#[test]
fn codex_version_overrides_the_detected_one() {
    let versions = codex_wire::versions();
    let (oldest, newest) = (versions[0].version, codex_wire::newest().version);
    if oldest == newest {
        return;
    }
    let file = format!("tests/corpus/{newest}/real_session_turn.jsonl");
    let run = |extra: &[&str]| {
        let mut args = vec!["validate", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(&file);
        bin()
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    assert_eq!(run(&[]).status.code(), Some(0));
    let out = run(&["--codex-version", oldest]);
    assert!(String::from_utf8_lossy(&out.stderr).is_empty());
    assert_eq!(out.status.code(), Some(1), "judged as {oldest}");
    let out = run(&["--codex-version", "9.9.9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a version this build speaks"));
}

#[test]
fn arbitrary_bytes_never_crash_it() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut bytes = Vec::new();
    let pieces: [&[u8]; 8] = [
        b"{",
        b"}",
        b"\"dir\":\"in\"",
        b"\"msg\":",
        b"\n",
        b"\xff",
        b"[1,",
        b"\"id\":1,",
    ];
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x.is_multiple_of(3) {
            bytes.extend_from_slice(pieces[(x >> 8) as usize % pieces.len()]);
        } else {
            bytes.push((x >> 16) as u8);
        }
    }
    for input in ["raw", "transcript"] {
        for format in ["json", "human"] {
            let out = validate_stdin(&["--input", input, "--format", format], &bytes);
            let code = out.status.code();
            assert!(
                matches!(code, Some(0 | 1)),
                "{input}/{format}: {code:?} {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// A server line lacking a key the real server always sends (`x: T | null` in its TS) is a
/// finding of its own: `missing` in JSON, a warning in human output, a column in the summary.
#[test]
fn an_absent_always_sent_key_is_reported() {
    let real = std::fs::read_to_string(format!(
        "{}/tests/corpus/{}/real_session.jsonl",
        env!("CARGO_MANIFEST_DIR"),
        codex_wire::newest().version
    ))
    .unwrap();
    let mut transcript = String::new();
    for entry in real.lines() {
        let e: Value = serde_json::from_str(entry).unwrap();
        let mut msg: Value = serde_json::from_str(e["line"].as_str().unwrap()).unwrap();
        // initialize and thread/start (ids 0 and 1) with their results, and thread/started.
        let keep = msg["id"] == 0 || msg["id"] == 1 || msg["method"] == "thread/started";
        if !keep {
            continue;
        }
        if msg["method"] == "thread/started" {
            msg["params"]["thread"]
                .as_object_mut()
                .unwrap()
                .remove("name");
        }
        let entry = serde_json::json!({"pid": 1, "dir": e["dir"], "msg": msg});
        transcript.push_str(&format!("{entry}\n"));
    }
    let out = validate_stdin(&["--format", "json"], transcript.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let r = records(&out);
    assert_eq!(r.len(), 5, "{r:#?}");
    let started = r.iter().find(|x| x["method"] == "thread/started").unwrap();
    assert_eq!(
        started["missing"],
        serde_json::json!(["$.params.thread.name"])
    );
    // Every server record carries the key; client records do not.
    assert!(r
        .iter()
        .all(|x| (x["dir"] == "out") == x.get("missing").is_some()));

    let out = validate_stdin(&["--format", "human"], transcript.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "warning: server notification thread/started: `$.params.thread.name` is always \
             sent by the real server but missing"
        ),
        "{text}"
    );
    let header = text.lines().find(|l| l.starts_with("dir ")).unwrap();
    assert!(header.contains("missing"), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("out  notification"))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    // dir kind lines findings errors violations ignored missing silent closes
    assert_eq!(cols[7], "1", "{text}");
}

/// The README's first commands show their output: every line shown (the `...` elisions aside)
/// is printed by the command today, in that order, so the first thing a newcomer runs cannot
/// drift from what the README says it prints.
#[test]
fn the_readme_shows_what_its_first_commands_print() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let mut checked = 0;
    for format in ["human", "json"] {
        let cmd = format!(
            "$ cargo run --release -- validate --format {format} samples/client-session.jsonl"
        );
        let at = readme
            .find(&cmd)
            .unwrap_or_else(|| panic!("README no longer shows `{cmd}`"));
        let block = &readme[at + cmd.len()..];
        let block = &block[..block.find("```").expect("the block ends")];
        let out = bin()
            .args(["validate", "--format", format])
            .arg(format!("{root}/samples/client-session.jsonl"))
            .current_dir(root)
            .output()
            .unwrap();
        // Human output names the file as given: the README gives it relative to the repo.
        let printed = String::from_utf8_lossy(&out.stdout).replace(&format!("{root}/"), "");
        // Whole lines, in order: each is searched after the one before it.
        let printed = format!("\n{printed}");
        let mut rest = printed.as_str();
        for line in block.lines().filter(|l| !l.is_empty() && *l != "...") {
            let want = format!("\n{line}\n");
            let found = rest.find(&want).unwrap_or_else(|| {
                panic!("README shows a line `--format {format}` does not print (in order):\n{line}\n--- printed:{printed}")
            });
            rest = &rest[found + want.len() - 1..];
            checked += 1;
        }
        assert_eq!(out.status.code(), Some(1), "the sample has findings");
    }
    assert!(checked >= 10, "only {checked} README lines checked");
}
