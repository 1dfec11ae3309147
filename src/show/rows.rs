//! The timeline's rows: one per line (a message, a process event, or not an entry) with its
//! links, findings, counterpart badge and JSON; an item's block of joined deltas; the first
//! difference's marker.

use super::align::{Align, Marker};
use super::model::{Block, Finding, Model};
use super::parse::{as_text, clip, esc, method, pretty, strs, Body, Line};
use serde_json::Value;
use std::fmt::Write as _;

/// Notifications shown dimmed (and hidden by the page's "hide noise" switch).
const NOISE: &[&str] = &[
    "account/rateLimits/updated",
    "thread/tokenUsage/updated",
    "remoteControl/status/changed",
];

/// One line of what a message says.
fn headline(msg: &Value) -> String {
    let params = &msg["params"];
    let one = |v: &Value| clip(&v.to_string(), 160);
    if let Some(e) = msg.get("error").filter(|_| method(msg).is_none()) {
        return format!("{}: {}", as_text(&e["code"]), as_text(&e["message"]));
    }
    if let Some(r) = msg.get("result") {
        if let Some(d) = r.get("decision") {
            return format!("decision: {}", clip(&as_text(d), 160));
        }
        if let Some(t) = r.get("thread").and_then(|t| t.get("id")) {
            return format!("thread {}", as_text(t));
        }
        if let Some(t) = r.get("turn") {
            return format!("turn {} {}", as_text(&t["id"]), as_text(&t["status"]));
        }
        if let Some(ua) = r.get("userAgent") {
            return as_text(ua);
        }
        return one(r);
    }
    match method(msg) {
        Some("turn/start") | Some("turn/steer") => {
            let texts: Vec<String> = params["input"]
                .as_array()
                .map(|a| a.iter().map(|x| as_text(&x["text"])).collect())
                .unwrap_or_default();
            format!("“{}”", clip(&texts.join(" "), 160))
        }
        Some("turn/started") | Some("turn/completed") => format!(
            "turn {} {}",
            as_text(&params["turn"]["id"]),
            as_text(&params["turn"]["status"])
        ),
        Some("thread/status/changed") => {
            let flags = strs(&params["status"]["activeFlags"]);
            let t = as_text(&params["status"]["type"]);
            if flags.is_empty() {
                t
            } else {
                format!("{t} ({})", flags.join(", "))
            }
        }
        Some("item/started") | Some("item/completed") => {
            let item = &params["item"];
            let mut s = format!("{} {}", as_text(&item["type"]), as_text(&item["id"]));
            if let Some(st) = item.get("status").filter(|s| !s.is_null()) {
                let _ = write!(s, " · {}", as_text(st));
            }
            if let Some(c) = item.get("exitCode").filter(|s| !s.is_null()) {
                let _ = write!(s, " · exit {}", as_text(c));
            }
            s
        }
        Some("error") => format!(
            "{}{}",
            as_text(&params["error"]["message"]),
            if params["willRetry"] == true {
                " (will retry)"
            } else {
                ""
            }
        ),
        Some(m) if m.ends_with("/requestApproval") => {
            let what = ["command", "reason", "grantRoot"]
                .iter()
                .find_map(|k| params.get(*k).filter(|v| !v.is_null()))
                .map(as_text)
                .unwrap_or_default();
            clip(&what, 160)
        }
        Some("thread/tokenUsage/updated") => {
            let u = &params["tokenUsage"];
            let part = |p: &Value| {
                format!(
                    "{} (input {}, cached {}, output {})",
                    as_text(&p["totalTokens"]),
                    as_text(&p["inputTokens"]),
                    as_text(&p["cachedInputTokens"]),
                    as_text(&p["outputTokens"])
                )
            };
            format!("last {} · total {}", part(&u["last"]), part(&u["total"]))
        }
        Some("item/tool/call") => format!(
            "{} {}",
            as_text(&params["tool"]),
            clip(&params["arguments"].to_string(), 120)
        ),
        _ if params.is_null() => String::new(),
        _ => one(params),
    }
}

pub(super) fn marker(h: &mut String, mk: &Marker) {
    let _ = write!(
        h,
        "<div class=\"difference\" id=\"first-difference\" data-side=\"{}\" data-line=\"{}\" \
         data-index=\"{}\"><b>⚑ first difference</b> (message {} in <code>diff</code>'s order): {}",
        mk.side,
        mk.line.map(|l| l.to_string()).unwrap_or_default(),
        mk.index,
        mk.index,
        esc(&mk.why)
    );
    for (name, e) in [("this run", &mk.a), ("the other run", &mk.b)] {
        match e {
            Some(e) => {
                let _ = write!(
                    h,
                    "<details><summary>{name}, masked</summary><pre>{} {}</pre></details>",
                    esc(&e.dir),
                    esc(&pretty(&e.msg))
                );
            }
            None => {
                let _ = write!(h, "<div class=\"ends\">{name}: no message here</div>");
            }
        }
    }
    h.push_str("</div>\n");
}

fn rel(m: &Model, t: Option<f64>) -> String {
    match (m.t0, t) {
        (Some(a), Some(b)) => format!("+{:.3}", b - a),
        _ => String::new(),
    }
}

pub(super) fn row(h: &mut String, m: &Model, i: usize, line: &Line, align: Option<&Align>) {
    let n = line.n;
    let findings = m.findings.get(&i);
    let has = if findings.is_some() {
        " has-finding"
    } else {
        ""
    };
    let mk = align
        .and_then(|a| a.marker.as_ref())
        .filter(|mk| mk.side == 'a' && mk.line == Some(n));
    let pid = line
        .pid
        .as_deref()
        .map(|p| p.trim_matches('"'))
        .unwrap_or("");
    let meta = |h: &mut String| {
        let _ = write!(
            h,
            "<div class=\"meta\"><a class=\"ln\" href=\"#L{n}\">{n}</a> <span class=\"t\">{}</span>\
             {}</div>",
            rel(m, line.t),
            if pid.is_empty() {
                String::new()
            } else {
                format!(" <span class=\"pid\">pid {}</span>", esc(pid))
            }
        );
    };
    match &line.body {
        Body::Raw(why) => {
            let _ = write!(h, "<div class=\"row raw{has}\" id=\"L{n}\">");
            meta(h);
            let _ = write!(
                h,
                "<div class=\"bubble\"><div class=\"head\"><span class=\"kind\">not an entry</span> \
                 {}</div>",
                esc(why)
            );
            if let Some(mk) = mk {
                marker(h, mk);
            }
            findings_html(h, findings);
            let _ = writeln!(
                h,
                "<pre class=\"rawtext\">{}</pre></div></div>",
                esc(&clip(&String::from_utf8_lossy(line.text), 4000))
            );
        }
        Body::Event(kind, v) => {
            let what = match kind.as_str() {
                "spawn" => {
                    let argv: Vec<String> = v["argv"]
                        .as_array()
                        .map(|a| a.iter().map(as_text).collect())
                        .unwrap_or_default();
                    format!("process {pid} started: {}", clip(&argv.join(" "), 200))
                }
                "exit" => {
                    let mut how = Vec::new();
                    for k in ["code", "signal", "how"] {
                        if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
                            how.push(format!("{k} {}", as_text(x)));
                        }
                    }
                    format!("process {pid} exited: {}", how.join(", "))
                }
                "stdin_eof" => format!("process {pid}: the client closed its input"),
                other => format!("process {pid}: {other}"),
            };
            let _ = write!(
                h,
                "<div class=\"row event ev-{}{has}\" id=\"L{n}\">",
                esc(&kind.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
            );
            meta(h);
            let _ = write!(
                h,
                "<div class=\"bubble\"><div class=\"head\">{}",
                esc(&what)
            );
            badge(h, align, n);
            h.push_str("</div>");
            if let Some(mk) = mk {
                marker(h, mk);
            }
            findings_html(h, findings);
            json_details(h, v);
            h.push_str("</div></div>\n");
        }
        Body::Message { dir, msg, wire } => {
            let meth = msg.as_ref().and_then(method);
            let id = msg.as_ref().and_then(|v| v.get("id"));
            let kind = match (meth, id, msg) {
                (_, _, None) => "not JSON",
                (Some(_), Some(_), _) => "request",
                (Some(_), None, _) => "notification",
                (None, Some(_), Some(v)) if v.get("error").is_some() => "error",
                (None, Some(_), _) => "reply",
                _ => "message",
            };
            let noise = if meth.is_some_and(|x| NOISE.contains(&x)) {
                " noise"
            } else {
                ""
            };
            let _ = write!(
                h,
                "<div class=\"row {} k-{}{noise}{has}\" id=\"L{n}\">",
                dir.as_str(),
                kind.replace(' ', "-")
            );
            meta(h);
            let _ = write!(
                h,
                "<div class=\"bubble\"><div class=\"head\"><span class=\"kind\">{kind}</span>"
            );
            if let Some(x) = meth {
                let _ = write!(h, " <b class=\"method\">{}</b>", esc(x));
            }
            if let Some(id) = id {
                let _ = write!(h, " <span class=\"id\">id {}</span>", esc(&id.to_string()));
            }
            if let Some(&r) = m.reply.get(&i) {
                let rn = m.lines[r].n;
                let _ = write!(
                    h,
                    " <a class=\"link to-reply\" href=\"#L{rn}\">→ reply, line {rn}</a>"
                );
            } else if meth.is_some() && id.is_some() {
                h.push_str(" <span class=\"link none\">no reply in the transcript</span>");
            }
            if let Some(&q) = m.request.get(&i) {
                let qn = m.lines[q].n;
                let of = m.lines[q]
                    .body
                    .msg()
                    .and_then(method)
                    .unwrap_or("")
                    .to_string();
                let _ = write!(
                    h,
                    " <a class=\"link to-request\" href=\"#L{qn}\">← answers {} (line {qn})</a>",
                    esc(&of)
                );
            }
            badge(h, align, n);
            h.push_str("</div>");
            if let Some(mk) = mk {
                marker(h, mk);
            }
            findings_html(h, findings);
            if let Some(note) = m.notes.get(&i) {
                let _ = write!(h, "<div class=\"note\">{}</div>", esc(note));
            }
            match msg {
                Some(v) => {
                    let hl = headline(v);
                    if !hl.is_empty() {
                        let _ = write!(h, "<div class=\"body\">{}</div>", esc(&hl));
                    }
                }
                None => {
                    let _ = write!(h, "<pre class=\"rawtext\">{}</pre>", esc(&clip(wire, 4000)));
                }
            }
            if let Some(&b) = m.block_row.get(&i) {
                block(h, m, &m.blocks[b], align);
            }
            if let Some(&b) = m.completes.get(&i) {
                let sn = m.lines[m.blocks[b].row].n;
                let _ = write!(
                    h,
                    "<div class=\"body\"><a class=\"link\" href=\"#L{sn}\">↑ the item's block, line \
                     {sn}</a></div>"
                );
            }
            if let Some(v) = msg {
                json_details(h, v);
            }
            h.push_str("</div></div>\n");
        }
    }
}

fn badge(h: &mut String, align: Option<&Align>, n: usize) {
    let Some(a) = align else { return };
    if !a.a_compared.contains(&n) {
        return;
    }
    match a.a_to_b.get(&n) {
        Some(b) => {
            let _ = write!(
                h,
                " <a class=\"badge same\" href=\"#B{b}\" title=\"the same message, masked, in \
                 the other run\">= other:{b}</a>"
            );
        }
        None => h.push_str(
            " <span class=\"badge only\" title=\"no identical message (masked) in the other \
             run\">≠ only here</span>",
        ),
    }
}

fn findings_html(h: &mut String, findings: Option<&Vec<Finding>>) {
    for f in findings.into_iter().flatten() {
        let _ = write!(
            h,
            "<div class=\"finding {}\">⚠ {}</div>",
            f.class,
            esc(&clip(&f.text, 2000))
        );
    }
}

fn json_details(h: &mut String, v: &Value) {
    let _ = write!(
        h,
        "<details class=\"json\"><summary>JSON</summary><pre>{}</pre></details>",
        esc(&pretty(v))
    );
}

fn block(h: &mut String, m: &Model, b: &Block, align: Option<&Align>) {
    let item = b.completed.as_ref().map(|(_, v)| v).or(b.started.as_ref());
    let field = |k: &str| item.and_then(|i| i.get(k)).filter(|v| !v.is_null());
    let _ = write!(
        h,
        "<div class=\"item it-{}\"><div class=\"item-head\">item <b>{}</b> <code>{}</code>",
        esc(&b.ty),
        esc(if b.ty.is_empty() { "?" } else { &b.ty }),
        esc(&b.id)
    );
    if let Some(s) = field("status") {
        let _ = write!(h, " · {}", esc(&as_text(s)));
    }
    if let Some(c) = field("exitCode") {
        let _ = write!(h, " · exit {}", esc(&as_text(c)));
    }
    match &b.completed {
        Some((c, _)) => {
            let cn = m.lines[*c].n;
            let _ = write!(h, " · <a href=\"#L{cn}\">completed at line {cn}</a>");
        }
        None => h.push_str(" · <span class=\"cut\">never completed</span>"),
    }
    h.push_str("</div>");
    if let Some(cmd) = field("command") {
        let _ = write!(
            h,
            "<pre class=\"cmd\">$ {}</pre>",
            esc(&clip(&as_text(cmd), 4000))
        );
    }
    // What streamed, joined; else the item's own text.
    for (channel, text) in &b.channels {
        let _ = write!(
            h,
            "<div class=\"stream-label\">{channel} (streamed, {} delta{} joined)</div>\
             <pre class=\"stream ch-{channel}\">{}</pre>",
            b.deltas.len(),
            if b.deltas.len() == 1 { "" } else { "s" },
            esc(&clip(text, 20_000))
        );
    }
    if b.channels.is_empty() {
        let own = match b.ty.as_str() {
            "agentMessage" | "plan" => field("text").map(as_text),
            "commandExecution" => field("aggregatedOutput").map(as_text),
            "reasoning" => field("summary").map(|s| strs(s).join("\n\n")),
            "userMessage" => field("content").map(|c| {
                c.as_array()
                    .map(|a| a.iter().map(|x| as_text(&x["text"])).collect::<Vec<_>>())
                    .unwrap_or_default()
                    .join("\n")
            }),
            "fileChange" => field("changes").map(|c| {
                c.as_array()
                    .map(|a| {
                        a.iter()
                            .map(|x| {
                                format!("{} {}", as_text(&x["kind"]["type"]), as_text(&x["path"]))
                            })
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
                    .join("\n")
            }),
            _ => None,
        };
        if let Some(t) = own.filter(|t| !t.is_empty()) {
            let _ = write!(h, "<pre class=\"stream\">{}</pre>", esc(&clip(&t, 20_000)));
        }
    }
    if !b.deltas.is_empty() {
        let _ = write!(
            h,
            "<details class=\"deltas\"><summary>{} delta{}</summary><ol>",
            b.deltas.len(),
            if b.deltas.len() == 1 { "" } else { "s" }
        );
        for &d in &b.deltas {
            let l = &m.lines[d];
            // The delta that started a block is its row: its id, marker and findings are there.
            let own = d == b.row;
            let mk = align
                .and_then(|a| a.marker.as_ref())
                .filter(|mk| !own && mk.side == 'a' && mk.line == Some(l.n));
            let _ = write!(
                h,
                "<li{}><span class=\"t\">{}</span> <a class=\"ln\" href=\"#L{}\">{}</a> ",
                if own {
                    String::new()
                } else {
                    format!(" id=\"L{}\"", l.n)
                },
                rel(m, l.t),
                l.n,
                l.n
            );
            if let Some(mk) = mk {
                marker(h, mk);
            }
            let _ = write!(
                h,
                "<code>{}</code>",
                esc(&clip(
                    &l.body.msg().map(Value::to_string).unwrap_or_default(),
                    2000
                ))
            );
            // A folded delta's findings are still shown (and counted) at its line.
            if !own {
                findings_html(h, m.findings.get(&d));
            }
            h.push_str("</li>");
        }
        h.push_str("</ol></details>");
    }
    h.push_str("</div>");
}
