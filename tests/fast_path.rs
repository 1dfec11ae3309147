//! The fast path (one scan of the text) against the exact path (`Value` parse, serde, tracker,
//! as the real server does): on every line, a default session and an exact-only session must
//! give the same verdict. The fast path may decline a line, never answer it differently; and
//! on ordinary traffic it must answer most lines, or the speed it exists for is gone.

use codex_wire::{Protocol, Session, Verdict};
use serde_json::{json, Map, Value};

const INIT_EXPERIMENTAL: &str = r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"},"capabilities":{"experimentalApi":true}}}"#;
const INIT_STABLE: &str =
    r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}"#;

/// Feeds `lines` (client lines, or server lines when `dir` is "out") to both sessions and
/// asserts equal verdicts. Returns the fast session.
fn agree<'a>(lines: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Session {
    agree_in(codex_wire::newest(), lines)
}

/// [`agree`] in one codex version.
fn agree_in<'a>(
    p: &'static Protocol,
    lines: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Session {
    let (mut fast, mut exact) = (Session::with_protocol(p), Session::exact_with(p));
    for (dir, l) in lines {
        let (a, b): (Verdict, Verdict) = if dir == "out" {
            (fast.feed_server(l), exact.feed_server(l))
        } else {
            (fast.feed(l), exact.feed(l))
        };
        assert_eq!(
            a,
            b,
            "fast and exact paths disagree on {}",
            String::from_utf8_lossy(l)
        );
    }
    fast
}

/// A recorded corpus file of one version (`tests/corpus/<V>/<name>`).
fn corpus(p: &Protocol, name: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/corpus/{}/{name}",
        env!("CARGO_MANIFEST_DIR"),
        p.version
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn case_lines(case: &Value) -> Vec<Vec<u8>> {
    case["lines"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|l| l.as_str().unwrap_or_default().as_bytes().to_vec())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn recorded_cases_get_the_same_verdicts() {
    for &p in codex_wire::versions() {
        let mut hits = 0;
        let mut lines = 0;
        for file in ["conformance.jsonl", "oracle.jsonl"] {
            for case in corpus(p, file) {
                let ls = case_lines(&case);
                lines += ls.len();
                let s = agree_in(p, ls.iter().map(|l| ("in", l.as_slice())));
                hits += s.fast_hits();
            }
        }
        // Most recorded cases are invalid on purpose; the valid ones still take the fast path.
        assert!(
            hits > 2_000,
            "codex {}: fast path answered only {hits} of {lines} lines",
            p.version
        );
    }
}

#[test]
fn generated_traffic_is_mostly_fast_and_identical() {
    let mut buf = Vec::new();
    codex_wire::validate::traffic::generate(30_000, 9, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let s = agree(lines.iter().map(|l| ("in", l.as_bytes())));
    let share = s.fast_hits() as f64 / lines.len() as f64;
    assert!(
        share > 0.85,
        "fast path answered {:.1}% of lines",
        share * 100.0
    );
    // Without the experimental capability the gate's fields send lines to the exact path.
    let stable = std::iter::once(INIT_STABLE).chain(lines[1..].iter().copied());
    agree(stable.map(|l| ("in", l.as_bytes())));
}

#[test]
fn a_real_session_both_directions() {
    let lines: Vec<(String, String)> = corpus(codex_wire::newest(), "real_session.jsonl")
        .iter()
        .map(|v| {
            (
                v["dir"].as_str().unwrap().to_string(),
                v["line"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    agree(lines.iter().map(|(d, l)| (d.as_str(), l.as_bytes())));
}

/// Every variant of `v` with one structural change: an unknown key at the front and at the
/// back of each object, each object's keys reversed, each value replaced by edge values.
fn variants(v: &Value, out: &mut Vec<Value>) {
    fn walk(root: &Value, path: &mut Vec<Value>, out: &mut Vec<Value>) {
        let here = at(root, path).clone();
        let mut replace = |new: Value| {
            let mut r = root.clone();
            *at_mut(&mut r, path) = new;
            out.push(r);
        };
        match &here {
            Value::Object(m) => {
                let mut front = Map::new();
                front.insert("zzFront".into(), json!({"k": [1]}));
                front.extend(m.clone());
                replace(Value::Object(front));
                let mut back = m.clone();
                back.insert("zzBack".into(), json!(null));
                replace(Value::Object(back));
                replace(Value::Object(
                    m.iter()
                        .rev()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ));
                replace(json!([]));
            }
            Value::Array(a) => {
                if let Some(x) = a.first() {
                    replace(Value::Array(vec![x.clone(), x.clone()]));
                }
                replace(json!({}));
            }
            Value::Number(_) => {
                for n in [
                    "-0",
                    "0",
                    "1.0",
                    "1.50",
                    "0.25",
                    "1e2",
                    "-1",
                    "4294967296",
                    "1e400",
                ] {
                    replace(serde_json::from_str(n).unwrap());
                }
            }
            Value::String(_) => {
                for s in [
                    json!(""),
                    json!("relative/path"),
                    json!("/abs/path"),
                    json!("01a22b04-8038-7e22-b3f6-60fd34ea1839"),
                    json!("caf\u{e9}\n\"q\""),
                    json!(true),
                    json!(7),
                ] {
                    replace(s);
                }
            }
            _ => {
                replace(json!("x"));
                replace(json!(false));
            }
        }
        if !matches!(here, Value::Null) {
            replace(Value::Null);
        }
        match &here {
            Value::Object(m) => {
                for k in m.keys() {
                    path.push(json!(k));
                    walk(root, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for i in 0..a.len().min(3) {
                    path.push(json!(i));
                    walk(root, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    fn at<'a>(v: &'a Value, path: &[Value]) -> &'a Value {
        path.iter().fold(v, |v, seg| match seg {
            Value::String(k) => &v[k.as_str()],
            _ => &v[seg.as_u64().unwrap() as usize],
        })
    }
    fn at_mut<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
        path.iter().fold(v, |v, seg| match seg {
            Value::String(k) => &mut v[k.as_str()],
            _ => &mut v[seg.as_u64().unwrap() as usize],
        })
    }
    walk(v, &mut Vec::new(), out);
}

#[test]
fn structural_variants_of_accepted_lines() {
    // A version a thread: one after another, this was the suite's longest test (~50 s, debug).
    std::thread::scope(|s| {
        for &p in codex_wire::versions() {
            s.spawn(move || variants_agree(p));
        }
    });
}

fn variants_agree(p: &'static Protocol) {
    let mut bases = Vec::new();
    for file in ["conformance.jsonl", "oracle.jsonl"] {
        for case in corpus(p, file) {
            let ls = case_lines(&case);
            for (l, e) in ls.iter().zip(case["expect"].as_array().unwrap()) {
                if e["status"] == "accepted" {
                    if let Ok(v) = serde_json::from_slice::<Value>(l) {
                        if v["method"] != "initialize" {
                            bases.push(v);
                        }
                    }
                }
            }
        }
    }
    assert!(bases.len() > 150, "{} accepted lines", bases.len());
    let (mut fed, mut hits) = (0usize, 0u64);
    for base in &bases {
        let mut vs = vec![base.clone()];
        variants(base, &mut vs);
        let lines: Vec<String> = vs.iter().map(Value::to_string).collect();
        for init in [INIT_EXPERIMENTAL, INIT_STABLE] {
            let all = std::iter::once(init).chain(lines.iter().map(String::as_str));
            let s = agree_in(p, all.map(|l| ("in", l.as_bytes())));
            hits += s.fast_hits();
            fed += lines.len() + 1;
        }
    }
    assert!(hits > fed as u64 / 10, "fast path answered {hits} of {fed}");
}

/// Client responses to every server request method: minimal valid results and their
/// structural variants, matched by id.
#[test]
fn responses_to_server_requests() {
    for &p in codex_wire::versions() {
        responses_agree(p);
    }
}

fn responses_agree(p: &'static Protocol) {
    let mut checked = 0;
    let mut hits = 0;
    for &method in p.server_request_methods {
        let Some((_, Some(resp))) =
            codex_wire::fake::defaults::request_types(p, "ServerRequest", method)
        else {
            continue;
        };
        let base = codex_wire::fake::defaults::minimal_of(p, resp);
        let mut results = vec![base.clone(), json!({}), json!(null), json!([])];
        variants(&base, &mut results);
        let (mut fast, mut exact) = (Session::with_protocol(p), Session::exact_with(p));
        for s in [&mut fast, &mut exact] {
            s.feed(INIT_EXPERIMENTAL.as_bytes());
        }
        for (n, r) in results.iter().enumerate() {
            let id = json!(format!("s{n}"));
            fast.expect_response(&id, method);
            exact.expect_response(&id, method);
            let line = json!({"id": id, "result": r}).to_string();
            let (a, b) = (fast.feed(line.as_bytes()), exact.feed(line.as_bytes()));
            assert_eq!(a, b, "{method}: {line}");
            checked += 1;
        }
        hits += fast.fast_hits();
    }
    assert!(checked > 120, "{checked} responses");
    assert!(
        hits > checked as u64 / 5,
        "fast path answered {hits} of {checked}"
    );
}

/// Lines written to trip a byte-level scanner: escapes, whitespace, duplicates, odd ids.
#[test]
fn hazards() {
    let t = "01a22b04-8038-7e22-b3f6-60fd34ea1839";
    let lines: Vec<String> = [
        r#"{"id":1,"method":"turn/start","params":{"threadId":"TID","input":[{"text":"hi","type":"text"}]}}"#,
        r#"{"params":{"threadId":"TID","input":[{"type":"text","text":"hi","zz":1}]},"method":"turn/start","id":2}"#,
        r#" { "id" : 3 , "method" : "turn/start" , "params" : { "threadId" : "TID" , "input" : [ ] } } "#,
        r#"{"id":4,"method":"turn/start","params":{"threadId":"TID","input":[],"input":[]}}"#,
        r#"{"id":5,"method":"turn/start","params":{"threadId":"TID","input":[],"zz":1,"zz":2}}"#,
        r#"{"id":6,"method":"turn/start","params":{"thread\u0049d":"TID","input":[]}}"#,
        r#"{"id":7,"method":"turn/st\u0061rt","params":{"threadId":"TID","input":[]}}"#,
        r#"{"id":"a\"b","method":"turn/start","params":{"threadId":"TID","input":[]}}"#,
        r#"{"id":-0,"method":"turn/start","params":{"threadId":"TID","input":[]}}"#,
        r#"{"id":1.0,"method":"turn/start","params":{"threadId":"TID","input":[]}}"#,
        r#"{"id":8,"method":"turn/start","params":{"threadId":"TID","input":[]},"jsonrpc":"2.0"}"#,
        r#"{"id":9,"method":"turn/start","params":{"threadId":"TID","input":[{"type":"text","text":"\ud83d\ude00"}]}}"#,
        r#"{"id":10,"method":"turn/start","params":{"threadId":"TID","input":[{"type":"text","text":"a	b"}]}}"#,
        r#"{"id":11,"method":"turn/start","params":{"threadId":"TID","input":[]}} x"#,
        r#"{"id":12,"method":"turn/start","params":{"threadId":"TID","input":[]},}"#,
        r#"{"id":13,"method":"turn/start","params":{"threadId":"TID","input":[{"type":"text","text":"x","type":"text"}]}}"#,
        r#"{"id":14,"method":"turn/start","params":{"threadId":"TID","input":[{"type":"text","text":"x","text_elements":[{"byteRange":{"start":0,"end":1,"zz":0},"placeholder":null,"zy":1}],"zx":2}]}}"#,
        r#"{"id":15,"method":"turn/start","params":{"threadId":"TID","input":[]},"result":1}"#,
        r#"{"id":16,"method":"turn/start","params":null}"#,
        r#"{"id":17,"method":"turn/start"}"#,
        r#"{"id":18,"method":"thread/list","params":{"limit":5e0}}"#,
        r#"{"id":19,"method":"thread/list","params":{"limit":-5}}"#,
        r#"{"id":20,"method":"thread/list","params":{"limit":00}}"#,
        r#"{"id":21,"method":"thread/list","params":{"limit":5}}"#,
        r#"{"id":22,"result":{"decision":"accept"},"jsonrpc":"2.0","zz":[1,{"a":2}]}"#,
        // Found by the differential fuzzer: buffered `Content` rejects integers beyond 64 bits
        // even under an ignored key or a free-form value.
        r#"{"id":28,"method":"thread/list","params":{"zz":18446744073709551616}}"#,
        r#"{"id":29,"method":"thread/list","params":{"zz":-9223372036854775809}}"#,
        r#"{"id":30,"method":"thread/list","params":{"zz":18446744073709551615,"zy":1e400,"zx":1.50}}"#,
        r#"{"id":31,"method":"turn/start","params":{"threadId":"TID","input":[],"outputSchema":{"a":340282366920938463463374607431768211456}}}"#,
        r#"{"id":23,"result":{},"result":{}}"#,
        r#"{"id":24,"result":[1,2,]}"#,
        "{\"id\":25,\"method\":\"thread/list\",\"params\":{\"limit\":5}}\r",
        r#"{"id":26,"method":"thread/start","params":{"approvalPolicy":{"granular":{"sandbox_approval":true,"rules":true,"mcp_elicitations":true}}}}"#,
        r#"{"id":27,"method":"thread/start","params":{"approvalPolicy":"never","sandbox":"read-only"}}"#,
    ]
    .iter()
    .map(|l| l.replace("TID", t))
    .collect();
    for init in [INIT_EXPERIMENTAL, INIT_STABLE] {
        let all: Vec<&str> = std::iter::once(init)
            .chain(lines.iter().map(String::as_str))
            .collect();
        let s = agree(all.iter().map(|l| ("in", l.as_bytes())));
        assert!(s.fast_hits() >= 5, "only {} fast answers", s.fast_hits());
    }
}

/// Traffic over every method (`traffic::generate_all_methods`): fast = exact on every line; the
/// sample covers nearly every method and the share the fast path answers is printed.
#[test]
fn all_method_traffic_is_identical_fast_and_exact() {
    let s = codex_wire::validate::traffic::samples();
    let methods = codex_wire::newest().client_methods.len();
    let covered: std::collections::HashSet<&str> = s
        .valid
        .iter()
        .filter_map(|v| v["method"].as_str())
        .collect();
    println!(
        "all-method samples: {} accepted lines over {} of {methods} methods; without: {:?}",
        s.valid.len(),
        covered.len(),
        s.methods_without_sample
    );
    assert!(covered.len() * 10 >= methods * 9, "too few methods sampled");
    let mut buf = Vec::new();
    codex_wire::validate::traffic::generate_all_methods(20_000, 7, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (mut fast, mut exact) = (Session::new(), Session::exact());
    let (mut accepted, mut accepted_fast) = (0u64, 0u64);
    let mut slow: std::collections::BTreeMap<String, u64> = Default::default();
    for l in &lines {
        let before = fast.fast_hits();
        let (a, b) = (fast.feed(l.as_bytes()), exact.feed(l.as_bytes()));
        assert_eq!(a, b, "fast and exact paths disagree on {l}");
        if a.error().is_none() && a.kind != codex_wire::Kind::Unparsed {
            accepted += 1;
            let hit = fast.fast_hits() - before;
            accepted_fast += hit;
            if hit == 0 {
                let what = a
                    .method
                    .as_deref()
                    .map(str::to_string)
                    .or(a.reply_to.clone())
                    .unwrap_or_else(|| "response".into());
                *slow.entry(what).or_default() += 1;
            }
        }
    }
    let mut slow: Vec<(u64, String)> = slow.into_iter().map(|(k, v)| (v, k)).collect();
    slow.sort_unstable_by(|a, b| b.cmp(a));
    println!(
        "accepted lines the exact path took, by method: {:?}",
        &slow[..slow.len().min(15)]
    );
    println!(
        "all-method traffic: {} lines, {:.0} bytes a line; the fast path answered {:.1} % of the accepted lines",
        lines.len(),
        text.len() as f64 / lines.len() as f64,
        100.0 * accepted_fast as f64 / accepted.max(1) as f64
    );
}
