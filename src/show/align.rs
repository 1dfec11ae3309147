//! `--against`: the two runs aligned under `codex-wire diff`'s masking rule
//! ([`crate::diff::masked`], [`crate::diff::compare`]): each message's counterpart in the other
//! run, the verdict, and where the first difference lies on each side.

use super::parse::Input;
use crate::diff::{self, Mismatch};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

/// The verdict of `--against`.
#[derive(Clone, Debug, PartialEq)]
pub enum Against {
    /// The same conversation: how many (masked) messages, and the tolerances it needed.
    Same {
        messages: usize,
        tolerances: Vec<&'static str>,
    },
    /// They differ: where (`codex-wire diff`'s message index and text), and the lines of the
    /// first difference on each side when it has one there.
    Differ {
        index: usize,
        why: String,
        line_a: Option<usize>,
        line_b: Option<usize>,
    },
    /// One of them is not a transcript `diff` reads.
    Incomparable(String),
}

impl Against {
    /// The verdict in `codex-wire diff`'s words.
    pub fn text(&self) -> String {
        match self {
            Against::Same {
                messages,
                tolerances,
            } => {
                let mut s = format!("same conversation: {messages} messages");
                if !tolerances.is_empty() {
                    let _ = write!(s, " (tolerances needed: {})", tolerances.join(", "));
                }
                s
            }
            Against::Differ { index, why, .. } => format!("message {index} differs: {why}"),
            Against::Incomparable(why) => format!("cannot compare: {why}"),
        }
    }
}

/// The alignment of two runs under the masking rule.
pub(super) struct Align {
    pub(super) verdict: Against,
    /// A's line → its counterpart's line in B.
    pub(super) a_to_b: HashMap<usize, usize>,
    /// A's lines that are compared (messages, exits).
    pub(super) a_compared: std::collections::HashSet<usize>,
    /// B's compared lines in order: (line, masked entry, counterpart in A).
    pub(super) b_rows: Vec<(usize, diff::Entry, Option<usize>)>,
    pub(super) b_name: String,
    /// The first difference: which side's line carries it, its index, why, both masked sides.
    pub(super) marker: Option<Marker>,
}

pub(super) struct Marker {
    pub(super) side: char,
    pub(super) line: Option<usize>,
    pub(super) index: usize,
    pub(super) why: String,
    pub(super) a: Option<diff::Entry>,
    pub(super) b: Option<diff::Entry>,
}

/// A transcript as `diff` reads it: its masked entries, and each one's line.
struct Masked {
    entries: Vec<diff::Entry>,
    lines: Vec<usize>,
}

fn masked(bytes: &[u8]) -> Result<Masked, String> {
    let text = String::from_utf8_lossy(bytes);
    let entries = diff::masked(&text)?;
    // The lines `masked` takes its entries from: messages in order, then one exit per spawn.
    let mut lines = Vec::new();
    let mut spawns = Vec::new();
    let mut exits: HashMap<String, usize> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v["event"].as_str() {
            Some("spawn") => spawns.push((v["pid"].to_string(), n + 1)),
            Some("exit") => {
                exits.insert(v["pid"].to_string(), n + 1);
            }
            _ => {}
        }
        if v["dir"].is_string() && v.get("msg").is_some() {
            lines.push(n + 1);
        }
    }
    for (pid, spawn) in spawns {
        lines.push(exits.get(&pid).copied().unwrap_or(spawn));
    }
    if lines.len() != entries.len() {
        return Err(format!(
            "{} masked messages for {} lines",
            entries.len(),
            lines.len()
        ));
    }
    Ok(Masked { entries, lines })
}

fn key(e: &diff::Entry) -> String {
    format!("{} {}", e.dir, e.msg)
}

/// A copy of `e` that compares differently from every other message.
fn probed(e: &diff::Entry) -> diff::Entry {
    let mut e = e.clone();
    match &mut e.msg {
        Value::Object(o) => {
            o.insert("codex-wire-show-probe".into(), Value::Bool(true));
        }
        other => *other = Value::Array(vec![other.clone(), "codex-wire-show-probe".into()]),
    }
    e
}

/// Which of `side`'s messages is the mismatch's (`m.a` when `is_a`, else `m.b`): among the
/// messages equal to it, the one that, made different, is reported at the same place — found
/// by bisection (an earlier one is reported earlier, a later one leaves the report as it was).
fn locate(side: &[diff::Entry], other: &[diff::Entry], m: &Mismatch, is_a: bool) -> Option<usize> {
    let target = if is_a { m.a.as_ref()? } else { m.b.as_ref()? };
    let want = key(target);
    let candidates: Vec<usize> = (0..side.len()).filter(|&i| key(&side[i]) == want).collect();
    if candidates.len() <= 1 {
        return candidates.first().copied();
    }
    let (mut lo, mut hi) = (0, candidates.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let c = candidates[mid];
        let mut copy = side.to_vec();
        copy[c] = probed(&side[c]);
        let r = if is_a {
            diff::compare(&copy, other)
        } else {
            diff::compare(other, &copy)
        };
        match r {
            Err(m2) if m2.index < m.index => lo = mid + 1,
            Err(m2) if m2.index == m.index => {
                let got = if is_a { m2.a } else { m2.b };
                if got.as_ref().map(key) == Some(key(&copy[c])) {
                    return Some(c);
                }
                hi = mid;
            }
            _ => hi = mid,
        }
    }
    candidates.first().copied()
}

/// A difference `compare` reports apart from the ordered messages (output deltas, background
/// notifications): the first message of `side` it names.
fn locate_named(side: &[diff::Entry], why: &str, is_a: bool) -> Option<usize> {
    if let Some(rest) = why.strip_prefix("output deltas of ") {
        let id = rest.split(" differ").next().unwrap_or("");
        return side.iter().position(|e| {
            diff::OPTIONAL.contains(&diff::method(e).unwrap_or(""))
                && e.msg["params"]["itemId"] == id
        });
    }
    let (only_a, only_b) = why.split_once("only in B").unwrap_or((why, ""));
    let part = if is_a { only_a } else { only_b };
    side.iter().position(|e| {
        let quoted = format!("{:?}", format!("{} (at ", key(e)));
        part.contains(&quoted[..quoted.len() - 1])
    })
}

pub(super) fn align(a: &[u8], b: &Input) -> Align {
    let (ma, mb) = match (masked(a), masked(b.bytes)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) => return incomparable(format!("this transcript: {e}"), b),
        (_, Err(e)) => return incomparable(format!("{}: {e}", b.name), b),
    };
    // Counterparts: the k-th message of a text in A is the k-th of the same text in B.
    let mut by_key: HashMap<String, VecDeque<usize>> = HashMap::new();
    for (j, e) in mb.entries.iter().enumerate() {
        by_key.entry(key(e)).or_default().push_back(j);
    }
    let mut a_to_b = HashMap::new();
    let mut b_to_a = HashMap::new();
    for (i, e) in ma.entries.iter().enumerate() {
        if let Some(j) = by_key.get_mut(&key(e)).and_then(VecDeque::pop_front) {
            a_to_b.insert(ma.lines[i], mb.lines[j]);
            b_to_a.insert(j, ma.lines[i]);
        }
    }
    let b_rows = mb
        .entries
        .iter()
        .enumerate()
        .map(|(j, e)| (mb.lines[j], e.clone(), b_to_a.get(&j).copied()))
        .collect();
    let (verdict, marker) = match diff::compare(&ma.entries, &mb.entries) {
        Ok(()) => (
            Against::Same {
                messages: ma.entries.len(),
                tolerances: diff::needed(&ma.entries, &mb.entries),
            },
            None,
        ),
        Err(m) => {
            let (ia, ib) = if m.a.is_none() && m.b.is_none() {
                (
                    locate_named(&ma.entries, &m.why, true),
                    locate_named(&mb.entries, &m.why, false),
                )
            } else {
                (
                    locate(&ma.entries, &mb.entries, &m, true),
                    locate(&mb.entries, &ma.entries, &m, false),
                )
            };
            let (la, lb) = (ia.map(|i| ma.lines[i]), ib.map(|j| mb.lines[j]));
            let marker = Marker {
                side: if la.is_some() {
                    'a'
                } else if lb.is_some() {
                    'b'
                } else {
                    '-'
                },
                line: la.or(lb),
                index: m.index,
                why: m.why.clone(),
                a: m.a.clone().or_else(|| ia.map(|i| ma.entries[i].clone())),
                b: m.b.clone().or_else(|| ib.map(|j| mb.entries[j].clone())),
            };
            (
                Against::Differ {
                    index: m.index,
                    why: m.why,
                    line_a: la,
                    line_b: lb,
                },
                Some(marker),
            )
        }
    };
    Align {
        verdict,
        a_to_b,
        a_compared: ma.lines.iter().copied().collect(),
        b_rows,
        b_name: b.name.to_string(),
        marker,
    }
}

fn incomparable(why: String, b: &Input) -> Align {
    Align {
        verdict: Against::Incomparable(why),
        a_to_b: HashMap::new(),
        a_compared: Default::default(),
        b_rows: Vec::new(),
        b_name: b.name.to_string(),
        marker: None,
    }
}
