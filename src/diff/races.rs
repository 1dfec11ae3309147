//! The comparison of two masked transcripts, and the real server's own races it tolerates —
//! each one named ([`TOLERANCES`]), bounded to the neighbourhood where the real server was seen
//! to race, and shown by a pair of real-against-real transcripts kept in
//! `tests/corpus/<V>/races/<name>/` (the tests require each pair to differ without its rule and
//! to be the same conversation with it). Everything else is compared byte for byte, in order.

use super::{first_difference, method, Entry, Mismatch};
use std::collections::BTreeMap;

/// A race of the real server the comparison tolerates.
#[derive(Debug)]
pub struct Tolerance {
    pub name: &'static str,
    /// What varies from run to run, and why.
    pub what: &'static str,
    /// How far it may vary.
    pub bound: &'static str,
}

/// Every tolerance, and only these.
pub const TOLERANCES: &[Tolerance] = &[
    Tolerance {
        name: "background",
        what: "notifications codex sends from background tasks (`configWarning`, \
               `remoteControl/status/changed`, `warning`, `deprecationNotice`, \
               `thread/goal/cleared`) come at no fixed place against the turn's messages",
        bound: "matched as a multiset, each with an identical one at most BACKGROUND_WINDOW \
                positions away",
    },
    Tolerance {
        name: "output_deltas",
        what: "a command's output streams as `item/commandExecution/outputDelta` only when read \
               after codex's ~150 ms early-exit wait, which a quick command may or may not \
               outlast",
        bound: "per item, the joined deltas equal, or one side has none and the other's are the \
                end of that item's `aggregatedOutput`",
    },
    Tolerance {
        name: "exec_chunks",
        what: "a standalone command's streamed output (`command/exec/outputDelta`) is sent as \
               codex reads the pipe: what the program wrote in two writes comes in one read or \
               two",
        bound: "adjacent deltas of one stream only (the process id as masked), their joined \
                bytes compared (and the last one's `capReached`); never across another message",
    },
    Tolerance {
        name: "resolved_order",
        what: "right after `serverRequest/resolved`, the thread's status change and the item's \
               completion come in either order",
        bound: "the two adjacent messages only",
    },
    Tolerance {
        name: "turn_result",
        what: "a `turn/start` result is sent by the request's handler while the turn's task \
               starts the turn: it comes before or after the turn turning active and \
               `turn/started`",
        bound: "moved to just before its turn's start only over that turn's own start messages \
                (`thread/status/changed` active, `turn/started`, `thread/settings/updated`)",
    },
    Tolerance {
        name: "search_session_end",
        what: "a fuzzy file search session's `sessionUpdated` and `sessionCompleted` are sent by \
               two of its threads (the matcher's, the walker's): for one session they come in \
               either order",
        bound: "the two adjacent messages only, of the same session",
    },
    Tolerance {
        name: "queue_taken",
        what: "`thread/queue/add` on an idle thread: the request's handler answers while the \
               thread's task takes the submission off the queue, so the answer comes before or \
               after the queue's second `thread/queue/changed`",
        bound: "the two adjacent messages only",
    },
    Tolerance {
        name: "search_partial",
        what: "a `thread/search/stream`'s `thread/search/partial` batches are best-effort (the \
               protocol: \"may be dropped under load\"): codex sends one or none for the same \
               search as its scan's output arrives",
        bound: "only a batch naming a `thread/search/stream` request of the client whose \
                answer comes after it; the answers are compared",
    },
    Tolerance {
        name: "mcp_starting",
        what: "a new thread's MCP servers are started by its session's task: their `starting` \
               announcements come before or after the request's answer and `thread/started`",
        bound: "a run of one thread's `starting` announcements moved to just after that \
                thread's answer and `thread/started`, only over those two messages",
    },
    Tolerance {
        name: "status_repeat",
        what: "a thread's status change sent twice in a row with the same status (a deleted \
               thread is marked unloaded by the request and by its listener seeing it shut down)",
        bound: "two identical adjacent status changes count once",
    },
];

/// How far a background notification may be from its counterpart (positions among the
/// other server messages).
pub const BACKGROUND_WINDOW: usize = 2;

pub const OPTIONAL: &[&str] = &["item/commandExecution/outputDelta"];
pub const FLOATING: &[&str] = &[
    "remoteControl/status/changed",
    "configWarning",
    "warning",
    "deprecationNotice",
    "thread/goal/cleared",
];

/// Which tolerances apply, and their windows (all of them, at their bounds, but for the tests
/// and the evidence search that show each one is needed and how far).
#[derive(Clone, Debug)]
pub struct Rules {
    off: Vec<&'static str>,
    pub background_window: usize,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            off: Vec::new(),
            background_window: BACKGROUND_WINDOW,
        }
    }
}

impl Rules {
    pub fn all() -> Rules {
        Rules::default()
    }
    /// All but `name`.
    pub fn without(name: &'static str) -> Rules {
        Rules {
            off: vec![name],
            ..Rules::default()
        }
    }
    fn on(&self, name: &str) -> bool {
        !self.off.contains(&name)
    }
}

pub(super) fn is_floating(e: &Entry) -> bool {
    method(e).is_some_and(|m| FLOATING.contains(&m)) && e.msg.get("id").is_none()
}

fn is_delta(e: &Entry) -> bool {
    method(e).is_some_and(|m| OPTIONAL.contains(&m))
}

fn text(e: &Entry) -> String {
    format!("{} {}", e.dir, e.msg)
}

/// A message set apart from the ordered ones, with where it stood: the number of ordered
/// messages before it.
struct Apart {
    at: usize,
    entry: Entry,
}

/// One side prepared for comparison.
struct Side {
    ordered: Vec<Entry>,
    background: Vec<Apart>,
    /// Per command item (masked id): its output deltas joined.
    deltas: BTreeMap<String, String>,
    /// Per command item: its `aggregatedOutput` when completed.
    outputs: BTreeMap<String, String>,
}

fn prepare(t: &[Entry], rules: &Rules) -> Side {
    // Each direction on its own: server lines against server lines, then the client's, then the
    // processes' exits.
    let mut all: Vec<Entry> = t.iter().filter(|e| e.dir == "out").cloned().collect();
    all.extend(t.iter().filter(|e| e.dir == "in").cloned());
    all.extend(
        t.iter()
            .filter(|e| e.dir != "out" && e.dir != "in")
            .cloned(),
    );
    let mut side = Side {
        ordered: Vec::new(),
        background: Vec::new(),
        deltas: BTreeMap::new(),
        outputs: BTreeMap::new(),
    };
    let mut ordered = Vec::new();
    let answered_later = partials_answered_later(t);
    for (i, e) in all.into_iter().enumerate() {
        if rules.on("search_partial") && answered_later.contains(&i) {
            continue;
        }
        if rules.on("output_deltas") && is_delta(&e) {
            let id = e.msg["params"]["itemId"].as_str().unwrap_or("").to_string();
            let d = e.msg["params"]["delta"].as_str().unwrap_or("");
            side.deltas.entry(id).or_default().push_str(d);
            continue;
        }
        if rules.on("background") && is_floating(&e) {
            side.background.push(Apart {
                at: ordered.len(),
                entry: e,
            });
            continue;
        }
        let item = &e.msg["params"]["item"];
        if method(&e) == Some("item/completed") && item["type"] == "commandExecution" {
            if let (Some(id), Some(out)) = (item["id"].as_str(), item["aggregatedOutput"].as_str())
            {
                side.outputs.insert(id.to_string(), out.to_string());
            }
        }
        ordered.push(e);
    }
    settle(&mut ordered, rules);
    side.ordered = ordered;
    side
}

/// The `thread/search/partial` batches of `t` (as indices among its server messages, the order
/// [`prepare`] reads them in) that name a `thread/search/stream` request of the client whose
/// answer comes after them.
fn partials_answered_later(t: &[Entry]) -> Vec<usize> {
    let streams: Vec<&serde_json::Value> = t
        .iter()
        .filter(|e| e.dir == "in" && method(e) == Some("thread/search/stream"))
        .map(|e| &e.msg["id"])
        .collect();
    let out: Vec<&Entry> = t.iter().filter(|e| e.dir == "out").collect();
    (0..out.len())
        .filter(|&i| {
            let id = &out[i].msg["params"]["requestId"];
            method(out[i]) == Some("thread/search/partial")
                && streams.contains(&id)
                && out[i + 1..]
                    .iter()
                    .any(|e| method(e).is_none() && &e.msg["id"] == id)
        })
        .collect()
}

/// Adjacent output deltas of one standalone command's stream, as one.
fn join_exec_chunks(t: &mut Vec<Entry>) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let chunk = |e: &Entry| {
        (method(e) == Some("command/exec/outputDelta") && e.dir == "out").then(|| {
            let p = &e.msg["params"];
            (p["processId"].clone(), p["stream"].clone())
        })
    };
    let mut i = 0;
    while i + 1 < t.len() {
        let key = chunk(&t[i]);
        if key.is_some() && key == chunk(&t[i + 1]) {
            let next = t.remove(i + 1);
            let decode = |e: &Entry| {
                b64.decode(e.msg["params"]["deltaBase64"].as_str().unwrap_or(""))
                    .unwrap_or_default()
            };
            let mut bytes = decode(&t[i]);
            bytes.extend(decode(&next));
            let params = &mut t[i].msg["params"];
            params["deltaBase64"] = b64.encode(bytes).into();
            params["capReached"] = next.msg["params"]["capReached"].clone();
            continue;
        }
        i += 1;
    }
}

/// The real server's reorderings, each within its bound, put back in one order.
fn settle(t: &mut Vec<Entry>, rules: &Rules) {
    if rules.on("exec_chunks") {
        join_exec_chunks(t);
    }
    if rules.on("status_repeat") {
        t.dedup_by(|later, earlier| {
            method(earlier) == Some("thread/status/changed")
                && earlier.dir == "out"
                && later.dir == "out"
                && later.msg == earlier.msg
        });
    }
    if rules.on("resolved_order") {
        for i in 0..t.len().saturating_sub(2) {
            if method(&t[i]) == Some("serverRequest/resolved")
                && method(&t[i + 1]) == Some("item/completed")
                && method(&t[i + 2]) == Some("thread/status/changed")
            {
                t.swap(i + 1, i + 2);
            }
        }
    }
    if rules.on("search_session_end") {
        let session = |e: &Entry, m: &str| {
            (method(e) == Some(m) && e.dir == "out").then(|| e.msg["params"]["sessionId"].clone())
        };
        for i in 0..t.len().saturating_sub(1) {
            let done = session(&t[i], "fuzzyFileSearch/sessionCompleted");
            if done.is_some() && done == session(&t[i + 1], "fuzzyFileSearch/sessionUpdated") {
                t.swap(i, i + 1);
            }
        }
    }
    if rules.on("queue_taken") {
        // One swap per answer: it never passes more than the one change.
        let mut i = 0;
        while i + 1 < t.len() {
            let answer = &t[i];
            if answer.dir == "out"
                && method(answer).is_none()
                && answer.msg["result"]["queuedSubmission"].is_object()
                && method(&t[i + 1]) == Some("thread/queue/changed")
            {
                t.swap(i, i + 1);
                i += 1;
            }
            i += 1;
        }
    }
    if rules.on("mcp_starting") {
        settle_mcp_starting(t);
    }
    if rules.on("turn_result") {
        // A turn's result just before its turn's own start messages, only over those.
        let start_message = |e: &Entry| match method(e) {
            Some("turn/started") | Some("thread/settings/updated") => true,
            Some("thread/status/changed") => e.msg["params"]["status"]["type"] == "active",
            _ => false,
        };
        let mut i = 0;
        while i < t.len() {
            let turn = t[i].msg["result"]["turn"]["id"].clone();
            if method(&t[i]).is_none() && t[i].dir == "out" && turn.is_string() {
                // The run of start messages around it: its turn's start among them puts the
                // result at the run's top.
                let before = t[..i].iter().rev().take_while(|e| start_message(e)).count();
                let after = t[i + 1..].iter().take_while(|e| start_message(e)).count();
                let (top, end) = (i - before, i + 1 + after);
                let its_start = t[top..end].iter().any(|e| {
                    method(e) == Some("turn/started") && e.msg["params"]["turn"]["id"] == turn
                });
                if its_start && top < i {
                    let result = t.remove(i);
                    t.insert(top, result);
                }
            }
            i += 1;
        }
    }
}

/// A run of one thread's MCP `starting` announcements put after that thread's answer and
/// `thread/started` when they come right after it (at most those two messages passed).
fn settle_mcp_starting(t: &mut [Entry]) {
    let starting = |e: &Entry| {
        (e.dir == "out"
            && method(e) == Some("mcpServer/startupStatus/updated")
            && e.msg["params"]["status"] == "starting")
            .then(|| e.msg["params"]["threadId"].clone())
    };
    let announces = |e: &Entry, thread: &serde_json::Value| {
        e.dir == "out"
            && match method(e) {
                Some("thread/started") => &e.msg["params"]["thread"]["id"] == thread,
                None => &e.msg["result"]["thread"]["id"] == thread,
                _ => false,
            }
    };
    let mut i = 0;
    while i < t.len() {
        let Some(thread) = starting(&t[i]) else {
            i += 1;
            continue;
        };
        let run = t[i..]
            .iter()
            .take_while(|e| starting(e).as_ref() == Some(&thread))
            .count();
        let passed = t[i + run..]
            .iter()
            .take(2)
            .take_while(|e| announces(e, &thread))
            .count();
        t[i..i + run + passed].rotate_left(run);
        i += run + passed;
    }
}

/// Compares two masked transcripts under every tolerance.
// Called once per run, and the mismatch is the whole report: its size costs nothing.
#[allow(clippy::result_large_err)]
pub fn compare(a: &[Entry], b: &[Entry]) -> Result<(), Mismatch> {
    compare_with(a, b, &Rules::all())
}

/// The tolerances two transcripts that are the same conversation need: each one without
/// which they differ.
pub fn needed(a: &[Entry], b: &[Entry]) -> Vec<&'static str> {
    TOLERANCES
        .iter()
        .filter(|t| compare_with(a, b, &Rules::without(t.name)).is_err())
        .map(|t| t.name)
        .collect()
}

/// [`compare`] under the given tolerances.
#[allow(clippy::result_large_err)]
pub fn compare_with(a: &[Entry], b: &[Entry], rules: &Rules) -> Result<(), Mismatch> {
    let (sa, sb) = (prepare(a, rules), prepare(b, rules));
    let (pa, pb) = (&sa.ordered, &sb.ordered);
    for i in 0..pa.len().max(pb.len()) {
        let (x, y) = (pa.get(i), pb.get(i));
        // Byte for byte: key order counts (a `Value` comparison would ignore it).
        if x.map(text) != y.map(text) {
            let why = match (x, y) {
                (Some(x), Some(y)) if method(x) != method(y) || x.dir != y.dir => {
                    "different message".to_string()
                }
                (Some(x), Some(y)) => first_difference(&x.msg, &y.msg, "$"),
                (None, _) => "A ends here".into(),
                (_, None) => "B ends here".into(),
            };
            return Err(Mismatch {
                index: i,
                a: x.cloned(),
                b: y.cloned(),
                why,
            });
        }
    }
    // Output deltas: per item, the same output, or none on one side and the end of the item's
    // output on the other.
    let ids: Vec<&String> = sa.deltas.keys().chain(sb.deltas.keys()).collect();
    for id in ids {
        let (x, y) = (
            sa.deltas.get(id).map_or("", String::as_str),
            sb.deltas.get(id).map_or("", String::as_str),
        );
        let ends_output = |side: &Side, d: &str| {
            side.outputs
                .get(id.as_str())
                .is_some_and(|o| o.ends_with(d))
        };
        let fine = x == y
            || (x.is_empty() && ends_output(&sb, y))
            || (y.is_empty() && ends_output(&sa, x));
        if !fine {
            return Err(Mismatch {
                index: pa.len(),
                a: None,
                b: None,
                why: format!("output deltas of {id} differ: A {x:?}, B {y:?}"),
            });
        }
    }
    // Background notifications: the same ones, each near its counterpart.
    let mut unmatched: Vec<&Apart> = sb.background.iter().collect();
    let mut only_a = Vec::new();
    for x in &sa.background {
        let found = unmatched.iter().position(|y| {
            text(&y.entry) == text(&x.entry) && y.at.abs_diff(x.at) <= rules.background_window
        });
        match found {
            Some(k) => {
                unmatched.remove(k);
            }
            None => only_a.push(format!("{} (at {})", text(&x.entry), x.at)),
        }
    }
    if !only_a.is_empty() || !unmatched.is_empty() {
        let only_b: Vec<String> = unmatched
            .iter()
            .map(|y| format!("{} (at {})", text(&y.entry), y.at))
            .collect();
        return Err(Mismatch {
            index: pa.len(),
            a: None,
            b: None,
            why: format!(
                "background notifications differ (within {} messages): only in A {only_a:?}, \
                 only in B {only_b:?}",
                rules.background_window
            ),
        });
    }
    Ok(())
}
