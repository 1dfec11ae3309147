//! The page: its head and header (counts, verdict, the findings' index), the timeline with each
//! turn a foldable section, and the other run of `--against`.

use super::align::{align, Against, Align};
use super::assets::{CSS, SCRIPT};
use super::model::{build, Finding, Model, Turn};
use super::parse::{as_text, clip, esc, pretty, Input};
use super::rows::{marker, row};
use crate::validate::input::Format;
use serde_json::Value;
use std::fmt::Write as _;

/// A rendered page and what it counts.
pub struct Page {
    pub html: String,
    /// Messages of the transcript (client and server lines, deltas included).
    pub messages: usize,
    /// Turns (`turn/started` notifications), each a section.
    pub turns: usize,
    /// Findings: error replies, and the engine's findings (as `codex-wire validate` counts them).
    pub findings: usize,
    /// With `--against`: the verdict.
    pub against: Option<Against>,
}

/// Renders the page of `input` (and of its alignment with `against`).
pub fn render(
    input: &Input,
    against: Option<&Input>,
    protocol: Option<&'static crate::Protocol>,
) -> Page {
    let m = build(input, protocol);
    let align = against.map(|b| align(input.bytes, b));
    let findings = m.errors + m.engine_findings;
    let mut h = String::with_capacity(input.bytes.len() * 2 + 16 * 1024);
    let verdict_attr = match align.as_ref().map(|a| &a.verdict) {
        None => "",
        Some(Against::Same { .. }) => " data-verdict=\"same\"",
        Some(Against::Differ { .. }) => " data-verdict=\"differ\"",
        Some(Against::Incomparable(_)) => " data-verdict=\"incomparable\"",
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\" data-turns=\"{}\" data-findings=\"{findings}\" \
         data-messages=\"{}\"{verdict_attr}>\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>codex-wire show: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        m.turns.len(),
        m.messages,
        esc(&m.name)
    );
    header(&mut h, &m, align.as_ref(), findings);
    h.push_str("<main id=\"timeline\">\n");
    if let Some(mk) = align.as_ref().and_then(|a| a.marker.as_ref()) {
        if mk.side == '-' {
            marker(&mut h, mk);
        }
    }
    timeline(&mut h, &m, align.as_ref());
    h.push_str("</main>\n");
    if let Some(a) = &align {
        other_run(&mut h, a);
    }
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    Page {
        html: h,
        messages: m.messages,
        turns: m.turns.len(),
        findings,
        against: align.map(|a| a.verdict),
    }
}

fn secs(d: f64) -> String {
    if d.abs() < 10.0 {
        format!("{:.3} s", d)
    } else {
        format!("{:.1} s", d)
    }
}

fn header(h: &mut String, m: &Model, align: Option<&Align>, findings: usize) {
    let span = match (m.t0, m.lines.iter().rev().find_map(|l| l.t)) {
        (Some(a), Some(b)) => format!(" · {}", secs(b - a)),
        _ => String::new(),
    };
    let _ = write!(
        h,
        "<header>\n<h1><span class=\"tool\">codex-wire show</span> {}</h1>\n\
         <p class=\"sub\">{} · judged as codex {} ({}) · {} messages ({} client, {} server) · \
         {} turn{} · {} process{}{span}</p>\n",
        esc(&m.name),
        if m.format == Format::Raw {
            "raw client capture"
        } else {
            "transcript"
        },
        esc(m.engine.version),
        esc(m.engine.how),
        m.messages,
        m.client,
        m.server,
        m.turns.len(),
        if m.turns.len() == 1 { "" } else { "s" },
        m.processes,
        if m.processes == 1 { "" } else { "es" },
    );
    if let Some(a) = align {
        let (class, link) = match &a.verdict {
            Against::Same { .. } => ("same", String::new()),
            Against::Differ { .. } => (
                "differ",
                " <a href=\"#first-difference\">go to the first difference</a>".to_string(),
            ),
            Against::Incomparable(_) => ("incomparable", String::new()),
        };
        let _ = writeln!(
            h,
            "<div class=\"verdict {class}\">against <code>{}</code> (<code>codex-wire diff</code>'s \
             masking rule): <b>{}</b>{link}</div>",
            esc(&a.b_name),
            esc(&a.verdict.text())
        );
    }
    let _ = write!(
        h,
        "<div class=\"summary\"><b>{findings} finding{}</b>: {} error repl{}, {} from the engine \
         (as <code>codex-wire validate</code> judges the lines)",
        if findings == 1 { "" } else { "s" },
        m.errors,
        if m.errors == 1 { "y" } else { "ies" },
        m.engine_findings
    );
    if m.engine.findings as usize != m.engine_findings {
        let _ = write!(
            h,
            " <span class=\"warn\">(validate counts {})</span>",
            m.engine.findings
        );
    }
    if findings > 0 {
        h.push_str("\n<ol class=\"finding-index\">\n");
        let mut all: Vec<(usize, &Finding)> = m
            .findings
            .iter()
            .flat_map(|(i, fs)| fs.iter().map(move |f| (*i, f)))
            .collect();
        all.sort_by_key(|(i, _)| *i);
        const MAX: usize = 500;
        for (i, f) in all.iter().take(MAX) {
            let n = m.lines[*i].n;
            let _ = writeln!(
                h,
                "<li class=\"{}\"><a href=\"#L{n}\">line {n}</a> {}</li>",
                f.class,
                esc(&clip(&f.text, 300))
            );
        }
        if all.len() > MAX {
            let _ = writeln!(h, "<li>… {} more</li>", all.len() - MAX);
        }
        h.push_str("</ol>");
    }
    h.push_str("</div>\n");
    h.push_str(
        "<nav><button type=\"button\" data-act=\"expand\">expand all</button> \
         <button type=\"button\" data-act=\"collapse\">collapse all</button> \
         <label><input type=\"checkbox\" data-toggle=\"only-findings\"> only findings</label> \
         <label><input type=\"checkbox\" data-toggle=\"hide-noise\"> hide usage and rate-limit \
         notifications</label>\
         <span class=\"legend\"><span class=\"lg in\">client → server</span>\
         <span class=\"lg out\">server → client</span></span></nav>\n</header>\n",
    );
}

fn timeline(h: &mut String, m: &Model, align: Option<&Align>) {
    let mut open = 0usize;
    let close = |h: &mut String, n: usize, open: &mut usize| {
        for _ in 0..n.min(*open) {
            h.push_str("</div></details>\n");
        }
        *open -= n.min(*open);
    };
    for (i, line) in m.lines.iter().enumerate() {
        let ops = &m.ops[i];
        close(h, ops.close_before, &mut open);
        if let Some(k) = ops.open {
            turn_start(h, m, &m.turns[k]);
            open += 1;
        }
        if !m.folded.contains_key(&i) {
            row(h, m, i, line, align);
        }
        close(h, ops.close_after, &mut open);
    }
    close(h, open, &mut open);
}

fn turn_start(h: &mut String, m: &Model, t: &Turn) {
    let status = t
        .status
        .clone()
        .unwrap_or_else(|| "not completed".to_string());
    let dur = match (m.lines[t.start].t, t.end.and_then(|e| m.lines[e].t)) {
        (Some(a), Some(b)) => format!(" · {}", secs(b - a)),
        _ => String::new(),
    };
    let lines = match t.end {
        Some(e) => format!(" · lines {}–{}", m.lines[t.start].n, m.lines[e].n),
        None => format!(" · from line {}", m.lines[t.start].n),
    };
    let mut extra = String::new();
    if let Some(e) = &t.error {
        let _ = write!(
            extra,
            " · <span class=\"err\">{}</span>",
            esc(&clip(e, 200))
        );
    }
    if let Some(c) = t.cut {
        let _ = write!(
            extra,
            " · <span class=\"cut\">no turn/completed: {}</span>",
            esc(c)
        );
    }
    let _ = writeln!(
        h,
        "<details class=\"turn\" open id=\"turn-{}\" data-status=\"{}\"><summary>\
         <b>Turn {}</b> <span class=\"status s-{}\">{}</span>{dur}{lines} · \
         <code>{}</code>{extra}</summary><div class=\"turn-body\">",
        t.number,
        esc(&status),
        t.number,
        esc(&status.replace(' ', "-")),
        esc(&status),
        esc(&t.id),
    );
}

fn other_run(h: &mut String, a: &Align) {
    let _ = write!(
        h,
        "<section id=\"against\"><details open><summary><b>The other run</b>: <code>{}</code>, \
         {} messages as <code>diff</code> compares them (masked; each direction in its own \
         order)</summary>\n<div class=\"other\">\n",
        esc(&a.b_name),
        a.b_rows.len()
    );
    for (n, e, counterpart) in &a.b_rows {
        let mk = a
            .marker
            .as_ref()
            .filter(|mk| mk.side == 'b' && mk.line == Some(*n));
        let what = match e.msg.get("method").and_then(Value::as_str) {
            Some(x) => x.to_string(),
            None if e.dir == "exit" => format!("exit: {}", as_text(&e.msg)),
            None => match e.msg.get("id") {
                Some(id) => format!("reply to id {id}"),
                None => "message".into(),
            },
        };
        let _ = write!(
            h,
            "<div class=\"orow {}\" id=\"B{n}\"><span class=\"ln\">{n}</span> \
             <span class=\"dir\">{}</span> <b>{}</b> ",
            esc(&e.dir),
            esc(&e.dir),
            esc(&what)
        );
        match counterpart {
            Some(l) => {
                let _ = write!(h, "<a class=\"badge same\" href=\"#L{l}\">= this:{l}</a>");
            }
            None => h.push_str("<span class=\"badge only\">≠ only there</span>"),
        }
        if let Some(mk) = mk {
            marker(h, mk);
        }
        let _ = writeln!(
            h,
            "<details class=\"json\"><summary>masked JSON</summary><pre>{}</pre></details></div>",
            esc(&pretty(&e.msg))
        );
    }
    h.push_str("</div></details></section>\n");
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::path::Path;

    pub(in crate::show) fn page(text: &[u8]) -> Page {
        render(
            &Input {
                name: "t.jsonl",
                bytes: text,
            },
            None,
            None,
        )
    }

    pub(in crate::show) fn corpus(name: &str) -> Vec<u8> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        std::fs::read(dir.join(crate::newest().version).join("turns").join(name)).unwrap()
    }

    /// A small xorshift generator: reproducible noise without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
    }

    #[test]
    fn random_bytes_and_malformed_lines_never_panic() {
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        // Random bytes, with and without newlines.
        for len in [0usize, 1, 2, 7, 64, 513, 4096] {
            for _ in 0..4 {
                inputs.push((0..len).map(|_| rng.next() as u8).collect());
                inputs.push(
                    (0..len)
                        .map(|_| match rng.next() % 8 {
                            0 => b'\n',
                            1 => b'{',
                            2 => b'"',
                            _ => rng.next() as u8,
                        })
                        .collect(),
                );
            }
        }
        // Entries that are almost right.
        let malformed = [
            "{",
            "[]",
            "null",
            "5",
            "\"x\"",
            "{}",
            r#"{"dir":"in"}"#,
            r#"{"dir":"sideways","msg":{}}"#,
            r#"{"dir":"in","msg":5}"#,
            r#"{"dir":"out","msg":null}"#,
            r#"{"dir":"out","msg":[1,2]}"#,
            r#"{"dir":"in","raw":"{not json"}"#,
            r#"{"dir":"in","hex":"ff00fe"}"#,
            r#"{"dir":"in","hex":"zz"}"#,
            r#"{"event":null}"#,
            r#"{"event":{"a":1},"pid":[1]}"#,
            r#"{"event":"exit","pid":{"x":1},"code":"nine"}"#,
            r#"{"event":"spawn","pid":1,"argv":"not a list","t":"soon"}"#,
            r#"{"pid":1,"t":1e400,"dir":"out","msg":{"method":"turn/started","params":{"turn":7}}}"#,
            r#"{"pid":1,"t":-5,"dir":"out","msg":{"method":"turn/completed","params":{"turn":{"id":null,"error":5}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"turn/started","params":{"turn":{"id":"t1"}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"turn/started","params":{"turn":{"id":"t2"}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"turn/completed","params":{"turn":{"id":"t1","status":{"x":1},"error":{"message":"<b>"}}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"item/agentMessage/delta","params":{"itemId":"m","delta":{"nested":true}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"m"}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"item/started","params":{"item":"nope"}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"item/completed","params":{"item":{"id":"m","type":3}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"method":"item/completed","params":{"item":{"id":"m","type":"fileChange","changes":[{"path":1},"x"]}}}}"#,
            r#"{"pid":1,"dir":"out","msg":{"id":{},"method":5}}"#,
            r#"{"pid":1,"dir":"out","msg":{"id":0,"method":"item/commandExecution/requestApproval","params":{"command":["a"]}}}"#,
            r#"{"pid":1,"dir":"in","msg":{"id":0,"result":{"decision":{"deep":[1]}}}}"#,
            r#"{"pid":1,"dir":"in","msg":{"id":0,"error":"not an object"}}"#,
            r#"{"pid":1,"dir":"out","msg":{"id":9,"error":{"code":"x","message":["y"]}}}"#,
            r#"{"pid":1,"dir":"in","msg":{"id":1,"method":"turn/start","params":{"input":"x"}}}"#,
            r#"{"pid":1,"dir":"in","msg":{"method":"<script>alert(1)</script>"}}"#,
            r#"{"pid":1,"event":"exit","code":1}"#,
            "{\"dir\":\"in\",\"msg\":{\"method\":\"\u{0}\u{1b}\u{fffe}\"}}",
        ];
        let joined = malformed.join("\n");
        inputs.push(joined.clone().into_bytes());
        inputs.push(joined.replace('\n', "\r\n").into_bytes());
        for l in malformed {
            inputs.push(l.as_bytes().to_vec());
        }
        // Recorded transcripts, cut and flipped at random places.
        let real = corpus("03_command_approved.real.jsonl");
        for _ in 0..40 {
            let mut t = real.clone();
            let at = (rng.next() as usize) % t.len();
            match rng.next() % 3 {
                0 => t.truncate(at),
                1 => t[at] = rng.next() as u8,
                _ => t.insert(at, b'\n'),
            }
            inputs.push(t);
        }
        inputs
            .push(b"\xff\xfe\n\xc3\x28\n{\"dir\":\"in\",\"msg\":{\"x\":\"\xe2\x82\"}}\n".to_vec());
        for (k, input) in inputs.iter().enumerate() {
            let p = page(input);
            assert!(p.html.starts_with("<!DOCTYPE html>"), "input {k}");
            assert!(p.html.ends_with("</html>\n"), "input {k}");
            // What the page counts is what it shows.
            let shown = p.html.matches("<div class=\"finding ").count();
            assert_eq!(shown, p.findings, "input {k}");
            let turns = p.html.matches("<details class=\"turn\"").count();
            assert_eq!(turns, p.turns, "input {k}");
            // With --against: each against the recording and against itself.
            let b = Input {
                name: "b",
                bytes: &real,
            };
            let a = Input {
                name: "a",
                bytes: input,
            };
            for (x, y) in [(&a, &b), (&b, &a), (&a, &a)] {
                let p = render(x, Some(y), None);
                // A first difference is marked exactly when the runs differ, once.
                let marks = p.html.matches("id=\"first-difference\"").count();
                let differ = matches!(p.against, Some(Against::Differ { .. }));
                assert_eq!(marks, usize::from(differ), "input {k}: {:?}", p.against);
            }
        }
    }

    #[test]
    fn everything_shown_is_escaped() {
        let t = concat!(
            r#"{"pid":1,"t":1,"dir":"in","msg":{"id":1,"method":"x</pre><script>alert(1)</script>","params":{"a":"<img src=x onerror=alert(2)>"}}}"#,
            "\n",
            r#"{"pid":1,"t":2,"dir":"out","msg":{"id":1,"error":{"code":-1,"message":"<b>bold</b> & \"q\""}}}"#,
            "\n",
            "<script>alert(3)</script>\n",
        );
        let p = page(t.as_bytes());
        assert!(!p.html.contains("<script>alert"), "{}", p.html);
        assert!(!p.html.contains("<img"));
        assert!(!p.html.contains("<b>bold"));
        assert!(p
            .html
            .contains("&lt;b&gt;bold&lt;/b&gt; &amp; &quot;q&quot;"));
        assert_eq!(p.html.matches("<script>").count(), 1);
        // The error reply and the two lines validate finds (an unknown method, a line that
        // is not an entry).
        assert_eq!(p.messages, 2);
        assert!(p.findings >= 2, "{}", p.findings);
    }

    #[test]
    fn the_first_difference_is_the_one_diff_reports() {
        let a = corpus("22_compact.real.jsonl");
        let text = String::from_utf8(a.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // A repeated message (the usage report comes three times): the marker must find the
        // occurrence `compare` stopped at, not the first.
        let changed = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains("thread/tokenUsage/updated"))
            .map(|(i, _)| i)
            .nth(2)
            .unwrap();
        let mut b_lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        b_lines[changed] = b_lines[changed].replacen("\"totalTokens\":0", "\"totalTokens\":7", 1);
        let b = b_lines.join("\n");
        let p = render(
            &Input {
                name: "a",
                bytes: &a,
            },
            Some(&Input {
                name: "b",
                bytes: b.as_bytes(),
            }),
            None,
        );
        match p.against {
            Some(Against::Differ { line_a, line_b, .. }) => {
                assert_eq!(line_a, Some(changed + 1));
                assert_eq!(line_b, Some(changed + 1));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.html.matches("id=\"first-difference\"").count(), 1);
        let same = render(
            &Input {
                name: "a",
                bytes: &a,
            },
            Some(&Input {
                name: "a",
                bytes: &a,
            }),
            None,
        );
        assert!(matches!(same.against, Some(Against::Same { .. })));
        assert!(!same.html.contains("first-difference\""));
    }
}
