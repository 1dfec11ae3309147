//! `codex-wire diff A B`: are two transcripts (fake, proxy or `scripted`, the same format) the
//! same conversation? The one masking rule that makes a fake's run comparable with a real one:
//! what is nondeterministic in the real server is masked, everything else must be equal.
//!
//! Masked (each consistently, by first appearance, so "the same id twice" still has to hold):
//! - uuids (thread, turn, item and request ids) → `<uuid:N>`;
//! - the model's item ids (`msg_…`, `rs_…`, `fc_…`, `call_…`, `ctc_…`) → `<item:N>`;
//! - timestamps and durations (keys such as `createdAt`, `emittedAtMs`, `durationMs`): a number
//!   becomes `<time>`; `null` stays `null`, because null against a number is a difference;
//! - process ids (`processId`, `pid`, `server/diagnostics`' `process.id`) → `<pid>`, and that
//!   process's memory (`residentMemoryBytes`, `physicalFootprintBytes`) → `<bytes>`;
//! - `config/read`'s `config` and `origins` are compared with their keys sorted (codex
//!   serializes them from hash maps: their order differs from one read to the next);
//! - the version of the session-flags config layer (it hashes the `-c` overrides that name the
//!   scripted model's port) → `<flags-version>`; every other layer's version is compared;
//! - the temp root a run lives in (`codexHome`, thread `cwd` and `path`) → `<root>`, and rollout
//!   paths' dates (`sessions/<date>/rollout-<stamp>-…`).
//!
//! Order is compared as sent, except where the real server itself races (`races.rs`: each
//! tolerance named, bounded and shown by a kept real-against-real pair). The processes' exits
//! are compared too: each server process's exit status, in order.

#[cfg(test)]
mod mutations;
mod races;

use races::is_floating;
pub use races::{
    compare, compare_with, needed, Rules, Tolerance, BACKGROUND_WINDOW, FLOATING, OPTIONAL,
    TOLERANCES,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

/// Keys whose numeric values are clock readings or durations.
const TIME_KEYS: &[&str] = &[
    "createdAt",
    "updatedAt",
    "recencyAt",
    "sectionEnteredAt",
    "startedAt",
    "completedAt",
    "startedAtMs",
    "completedAtMs",
    "emittedAtMs",
    "durationMs",
    "recordedAt",
    "timestamp",
    "resetsAt",
    "lastUpdated",
    "modifiedAtMs",
    // `accountSession/list`: the time of the call.
    "lastUsedAt",
];

const PID_KEYS: &[&str] = &["processId", "pid"];

/// One message of a transcript, masked: its direction and body.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub dir: String,
    pub msg: Value,
}

/// The mask state of one transcript: ids numbered by first appearance.
#[derive(Default)]
pub struct Masker {
    uuids: HashMap<String, usize>,
    items: HashMap<String, usize>,
    roots: Vec<String>,
}

pub(crate) fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

pub(crate) fn is_item_id(s: &str) -> bool {
    ["msg_", "rs_", "fc_", "call_", "ctc_", "ws_", "ig_"]
        .iter()
        .any(|p| {
            s.strip_prefix(p).is_some_and(|r| {
                !r.is_empty()
                    && r.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
            })
        })
}

impl Masker {
    /// Learns the run's temp roots from the messages that name them (the `initialize` result's
    /// `codexHome`, a thread's `cwd`), longest first so the most specific wins.
    fn learn_roots(&mut self, entries: &[Entry]) {
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        match (k.as_str(), x.as_str()) {
                            // A run's files live beside its CODEX_HOME (the harness's layout),
                            // or under the temp dir.
                            ("codexHome", Some(s)) => {
                                if let Some(parent) = Path::new(s).parent() {
                                    out.push(parent.to_string_lossy().into_owned());
                                }
                                out.extend(temp_root(s));
                            }
                            ("cwd", Some(s)) => out.extend(temp_root(s)),
                            _ => {}
                        }
                        walk(x, out);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        for e in entries {
            walk(&e.msg, &mut self.roots);
        }
        self.roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
        self.roots.dedup();
        self.roots.retain(|r| r.len() > 1);
    }

    fn string(&mut self, s: &str) -> String {
        if is_uuid(s) {
            let n = self.uuids.len();
            return format!("<uuid:{}>", self.uuids.entry(s.to_string()).or_insert(n));
        }
        if is_item_id(s) {
            let n = self.items.len();
            return format!("<item:{}>", self.items.entry(s.to_string()).or_insert(n));
        }
        let mut out = s.to_string();
        for r in &self.roots {
            if out.contains(r.as_str()) {
                out = out.replace(r.as_str(), "<root>");
            }
        }
        // Uuids inside longer strings (rollout paths, messages naming a thread).
        let mut masked = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(i) = find_uuid(rest) {
            masked.push_str(&rest[..i]);
            let u = &rest[i..i + 36];
            let n = self.uuids.len();
            masked.push_str(&format!(
                "<uuid:{}>",
                self.uuids.entry(u.to_string()).or_insert(n)
            ));
            rest = &rest[i + 36..];
        }
        masked.push_str(rest);
        mask_debug_duration(&mask_temp_name(&mask_port(&mask_rollout_stamp(
            &mask_keyset_time(&masked),
        ))))
    }

    fn value(&mut self, key: Option<&str>, v: &Value) -> Value {
        match v {
            Value::Number(_) if key.is_some_and(|k| TIME_KEYS.contains(&k)) => "<time>".into(),
            // Process ids are numbers in some messages, strings in others.
            Value::Number(_) | Value::String(_) if key.is_some_and(|k| PID_KEYS.contains(&k)) => {
                "<pid>".into()
            }
            // An ISO-8601 clock reading (`thread/list` cursors).
            Value::String(s) if is_iso_time(s) => "<iso-time>".into(),
            Value::String(s) => Value::String(self.string(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(None, x)).collect()),
            // `config/read`'s result (the only one with both keys): codex serializes its
            // `config` and `origins` from hash maps, so their key order differs run to run
            // (two reads in one real process already differ): compared sorted.
            Value::Object(m) if m.contains_key("config") && m.contains_key("origins") => {
                let masked = self.value(
                    None,
                    &Value::Object(
                        m.iter()
                            .filter(|(k, _)| *k != "config" && *k != "origins")
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                    ),
                );
                let mut out = masked.as_object().cloned().unwrap_or_default();
                for k in ["config", "origins"] {
                    let v = self.value(Some(k), &m[k]);
                    out.insert(k.to_string(), sorted_keys(&v));
                }
                Value::Object(out)
            }
            // `server/diagnostics`' process: its id and memory are the process's own.
            Value::Object(m) if m.contains_key("residentMemoryBytes") => {
                let mut out = Map::new();
                for (k, x) in m {
                    let masked = match (k.as_str(), x) {
                        ("id", Value::Number(_)) => "<pid>".into(),
                        ("residentMemoryBytes" | "physicalFootprintBytes", Value::Number(_)) => {
                            "<bytes>".into()
                        }
                        _ => self.value(Some(k), x),
                    };
                    out.insert(k.clone(), masked);
                }
                Value::Object(out)
            }
            Value::Object(m) => {
                // The session-flags layer's version hashes the `-c` overrides, which name the
                // scripted model's port (`config/read`, a write overridden by the flags).
                let flags = m.get("name").is_some_and(|n| n["type"] == "sessionFlags");
                let mut out = Map::new();
                for (k, x) in m {
                    // Keys can be ids too (`thread/list`'s `readStates` by thread).
                    let key = self.string(k);
                    let masked = match (flags, k.as_str(), x) {
                        (true, "version", Value::String(_)) => "<flags-version>".into(),
                        _ => self.value(Some(k), x),
                    };
                    out.insert(key, masked);
                }
                Value::Object(out)
            }
            _ => v.clone(),
        }
    }
}

/// A value with every object's keys in name order.
fn sorted_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted_keys(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

/// `http://127.0.0.1:<port>`: the scripted model listens on a port of the run's own (codex
/// names it in its HTTP error texts).
fn mask_port(s: &str) -> String {
    const LOOPBACK: &str = "http://127.0.0.1:";
    if !s.contains(LOOPBACK) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(LOOPBACK) {
        let after = &rest[i + LOOPBACK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..i + LOOPBACK.len()]);
        out.push_str(if digits > 0 { "<port>" } else { "" });
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// `2026-12-01T04:34:13.096Z` (fraction optional).
fn is_iso_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    shape
        && match &b[19..] {
            [b'Z'] => true,
            [b'.', frac @ .., b'Z'] => !frac.is_empty() && frac.iter().all(u8::is_ascii_digit),
            _ => false,
        }
}

/// `/tmp/abc` of `/tmp/abc/x/y`: the first component under the temp dir.
fn temp_root(path: &str) -> Option<String> {
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_str()?.trim_end_matches('/');
    for base in [tmp, "/tmp", "/var/folders"] {
        if let Some(rest) = path.strip_prefix(base).and_then(|r| r.strip_prefix('/')) {
            let first = rest.split('/').next()?;
            if !first.is_empty() {
                return Some(format!("{base}/{first}"));
            }
        }
    }
    None
}

fn find_uuid(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(35))
        .find(|&i| s.is_char_boundary(i) && s.get(i..i + 36).is_some_and(is_uuid))
}

/// An attachment page's cursor, `<thread>|<created at, Unix seconds>|<attachment>` (uuids
/// already masked): its clock reading masked as a `createdAt` is (the real server against its
/// own recording of 83_thread_attachments parts there only).
/// A `thread/list` page's next cursor, `<updated at, to the second>Z|<thread>`: its clock
/// reading masked as the list's other ISO times are (turn scenario 177: the real server against
/// its own recording parts there only).
fn mask_keyset_time(s: &str) -> String {
    let parts: Vec<&str> = s.split('|').collect();
    let uuid = |p: &str| p.starts_with("<uuid:") && p.ends_with('>');
    match parts.as_slice() {
        [a, t, b]
            if uuid(a) && uuid(b) && !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) =>
        {
            format!("{a}|<time>|{b}")
        }
        [t, b] if is_iso_time(t) && uuid(b) => format!("<iso-time>|{b}"),
        // A project page's cursor by recency, `v1|recencyAt|<direction>|<ms>|<project>`: the
        // clock reading (the latest turn start of the project's threads) masked (turn scenario
        // 231: the real server against itself parts there only).
        ["v1", "recencyAt", d, t, b]
            if (*d == "asc" || *d == "desc")
                && uuid(b)
                && t.len() == 13
                && t.bytes().all(|c| c.is_ascii_digit()) =>
        {
            format!("v1|recencyAt|{d}|<time>|{b}")
        }
        _ => s.to_string(),
    }
}

/// `timed_out: true } })` errors' `duration: 6.822165ms` → `duration: <time>`: how long a
/// command ran before its deadline killed it, in Rust's debug form, which codex shows in a
/// user's shell command's output (turn scenario 283: the real runs on three versions part there
/// only; fidelity s56560001_0216's two real runs too). Only a number with a unit followed by
/// `, timed_out` is masked.
fn mask_debug_duration(s: &str) -> String {
    const KEY: &str = "duration: ";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(KEY) {
        out.push_str(&rest[..i + KEY.len()]);
        rest = &rest[i + KEY.len()..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let unit = ["ns", "µs", "ms", "s"]
            .into_iter()
            .find(|u| rest[digits..].starts_with(&format!("{u}, timed_out")));
        if let (true, Some(unit)) = (digits > 0, unit) {
            out.push_str("<time>");
            rest = &rest[digits + unit.len()..];
        }
    }
    out.push_str(rest);
    out
}

/// `/dir/.tmpjQP8OD"` → `/dir/.tmp<random>"`: the name of a temporary file the real server
/// creates (Rust's `tempfile`: `.tmp` and six random letters or digits) before it moves the
/// file in place, which a `feedback/save` that cannot write names (fidelity s31310001_0143:
/// two real runs part there only); and `/bindfileIFBHak` → `/bindfile<random>`, the file
/// bubblewrap binds (`mkstemp`) that its failure to mount a missing writable root names (turn
/// scenario 280: its real runs on three versions and fidelity s55550001_0218's two real runs
/// part there only). Only a whole path component is masked.
fn mask_temp_name(s: &str) -> String {
    let mut out = s.to_string();
    for prefix in ["/.tmp", "/bindfile"] {
        out = mask_random_after(&out, prefix);
    }
    out
}

/// Six random letters or digits after `prefix` (a path component's start) → `<random>`.
fn mask_random_after(s: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(prefix) {
        let name = &rest[i + prefix.len()..];
        let random = name
            .bytes()
            .take(6)
            .filter(u8::is_ascii_alphanumeric)
            .count()
            == 6;
        let ends = name
            .as_bytes()
            .get(6)
            .is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'.' && *b != b'_');
        out.push_str(&rest[..i + prefix.len()]);
        if random && name.len() >= 6 && ends {
            out.push_str("<random>");
            rest = &name[6..];
        } else {
            rest = name;
        }
    }
    out.push_str(rest);
    out
}

/// `sessions/2026/11/30/rollout-2026-11-30T20-31-07-` → `sessions/<date>/rollout-<stamp>-`: the
/// day a rollout was written is the day of the run (a recording is replayed on later days).
fn mask_rollout_stamp(s: &str) -> String {
    let Some(i) = s.find("rollout-") else {
        return s.to_string();
    };
    let start = i + "rollout-".len();
    let stamp_len = "2026-11-30T20-31-07".len();
    let stamped = match s.get(start..start + stamp_len) {
        Some(st) if st.as_bytes()[4] == b'-' && st.as_bytes()[10] == b'T' => {
            format!("{}<stamp>{}", &s[..start], &s[start + stamp_len..])
        }
        _ => return s.to_string(),
    };
    // `YYYY/MM/DD/` just before `rollout-`.
    let day_len = "2026/11/30/".len();
    let is_day = i >= day_len
        && s[i - day_len..i].bytes().enumerate().all(|(k, b)| match k {
            4 | 7 | 10 => b == b'/',
            _ => b.is_ascii_digit(),
        });
    if is_day {
        format!("{}<date>/{}", &stamped[..i - day_len], &stamped[i..])
    } else {
        stamped
    }
}

/// The messages of a transcript (events and unparsable lines left out), masked.
pub fn masked(transcript: &str) -> Result<Vec<Entry>, String> {
    let mut raw = Vec::new();
    // Each server process (a `spawn` event) and how it ended.
    let mut spawns: Vec<Value> = Vec::new();
    let mut exits: HashMap<String, String> = HashMap::new();
    for (n, line) in transcript.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", n + 1))?;
        match v["event"].as_str() {
            Some("spawn") => spawns.push(v["pid"].clone()),
            Some("exit") => {
                exits.insert(v["pid"].to_string(), exit_status(&v));
            }
            _ => {}
        }
        let (Some(dir), Some(msg)) = (v["dir"].as_str(), v.get("msg")) else {
            continue;
        };
        raw.push(Entry {
            dir: dir.to_string(),
            msg: msg.clone(),
        });
    }
    let mut m = Masker::default();
    m.learn_roots(&raw);
    // Ids are numbered over the positional messages first: a floating notification's own ids
    // (an `installationId`) must not shift the others' numbers with its position.
    let mut out: Vec<Option<Entry>> = vec![None; raw.len()];
    for pass in [false, true] {
        for (i, e) in raw.iter().enumerate() {
            if is_floating(e) == pass {
                out[i] = Some(Entry {
                    dir: e.dir.clone(),
                    msg: m.value(None, &e.msg),
                });
            }
        }
    }
    let mut out: Vec<Entry> = out.into_iter().flatten().collect();
    // How each server process ended, in the order they started: killed (a process killed with
    // SIGKILL records nothing of itself: the fake; the proxy in front of the real one records the
    // signal), or its exit code or signal.
    for pid in spawns {
        let status = exits
            .get(&pid.to_string())
            .cloned()
            .unwrap_or_else(|| "killed".into());
        out.push(Entry {
            dir: "exit".into(),
            msg: Value::String(status),
        });
    }
    Ok(out)
}

/// A process's exit as the fake records it (`how`: input ended, a signal; `code`) and as the
/// proxy records the real server's (`code`, `signal`), in one form.
fn exit_status(v: &Value) -> String {
    match (v["how"].as_str(), v["code"].as_i64(), v["signal"].as_i64()) {
        // codex ends with 0 when its input ends, on SIGTERM too (a graceful shutdown).
        (Some("stdin_eof" | "connection_closed" | "SIGTERM"), _, _) => "code 0".into(),
        (Some("SIGINT"), _, _) => "signal 2".into(),
        (Some("SIGHUP"), _, _) => "signal 1".into(),
        (_, _, Some(9)) => "killed".into(),
        (_, _, Some(s)) => format!("signal {s}"),
        (_, Some(c), _) => format!("code {c}"),
        _ => format!("exit {v}"),
    }
}

pub(crate) fn method(e: &Entry) -> Option<&str> {
    e.msg.get("method").and_then(Value::as_str)
}

/// Where two masked transcripts part ways.
#[derive(Debug)]
pub struct Mismatch {
    /// Index among the positional messages (floating ones excluded).
    pub index: usize,
    pub a: Option<Entry>,
    pub b: Option<Entry>,
    pub why: String,
}

/// Equal as the comparison sees them: as text, key order included (`Value`'s `==` is blind to
/// key order).
fn same_text(a: &Value, b: &Value) -> bool {
    serde_json::to_string(a).ok() == serde_json::to_string(b).ok()
}

/// The first path where two values differ, with both values.
pub fn first_difference(a: &Value, b: &Value, path: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            for k in &kx {
                match y.get(k.as_str()) {
                    None => return format!("{path}.{k}: only in A ({})", x[k.as_str()]),
                    // As text: the comparison is order-sensitive, `Value`'s `==` is not.
                    Some(v) if !same_text(v, &x[k.as_str()]) => {
                        return first_difference(&x[k.as_str()], v, &format!("{path}.{k}"))
                    }
                    _ => {}
                }
            }
            if let Some(k) = ky.iter().find(|k| !x.contains_key(k.as_str())) {
                return format!("{path}.{k}: only in B ({})", y[k.as_str()]);
            }
            format!("{path}: key order differs: A {kx:?}, B {ky:?}")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find(|(_, (p, q))| !same_text(p, q))
            .map(|(i, (p, q))| first_difference(p, q, &format!("{path}[{i}]")))
            .unwrap_or_default(),
        _ => format!("{path}: A {a}, B {b}"),
    }
}

/// `codex-wire diff`'s command line.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit: 0 the same conversation, 1 they differ (the first difference is \
printed), 2 a file cannot be read."
)]
pub struct Cli {
    /// A transcript (fake, proxy or scripted run)
    pub a: std::path::PathBuf,
    /// The transcript to compare it with
    pub b: std::path::PathBuf,
    /// Print both masked transcripts too
    #[arg(long)]
    pub show: bool,
}

pub fn main(cli: Cli) -> std::process::ExitCode {
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .map_err(|e| format!("cannot read {}: {e}", p.display()))
            .and_then(|t| masked(&t).map_err(|e| format!("{}: {e}", p.display())))
    };
    let (a, b) = match (read(&cli.a), read(&cli.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("codex-wire diff: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if cli.show {
        for (name, t) in [("A", &a), ("B", &b)] {
            for e in t {
                println!("{name} {} {}", e.dir, e.msg);
            }
        }
    }
    match compare(&a, &b) {
        Ok(()) => {
            println!("same conversation: {} messages", a.len());
            // Which of the real server's races the verdict leaned on: a pass is only as
            // honest as the tolerances it needed.
            let used = needed(&a, &b);
            if !used.is_empty() {
                println!("tolerances needed: {}", used.join(", "));
            }
            std::process::ExitCode::SUCCESS
        }
        Err(m) => {
            println!("message {} differs: {}", m.index, m.why);
            if let Some(x) = m.a {
                println!("  A {} {}", x.dir, x.msg);
            }
            if let Some(y) = m.b {
                println!("  B {} {}", y.dir, y.msg);
            }
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_clock_readings_are_times() {
        assert!(super::is_iso_time("2026-12-01T04:34:13.096Z"));
        assert!(super::is_iso_time("2026-12-01T04:34:13Z"));
        assert!(!super::is_iso_time("2026-12-01T04:34:13.Z"));
        assert!(!super::is_iso_time("2026-12-01 04:34:13Z"));
        assert!(!super::is_iso_time("rollout-2026-12-01T04-34-13"));
    }

    use super::*;

    /// A temporary file's random name is masked; a name of another length, other letters, or
    /// text around it are not.
    #[test]
    fn temp_file_names_mask_their_random_part_only() {
        let a = mask_temp_name(r#"denied at path "/proc/x/.tmpjQP8OD""#);
        assert_eq!(a, r#"denied at path "/proc/x/.tmp<random>""#);
        assert_eq!(a, mask_temp_name(r#"denied at path "/proc/x/.tmpcyPID1""#));
        assert_ne!(a, mask_temp_name(r#"denied at path "/proc/y/.tmpjQP8OD""#));
        assert_ne!(a, mask_temp_name(r#"missing at path "/proc/x/.tmpjQP8OD""#));
        for other in [
            "/a/.tmpjQP8O",
            "/a/.tmpjQP8ODx",
            "/a/.tmpjQ-8OD",
            "/a/.tmpjQP8OD.zip",
        ] {
            assert_eq!(mask_temp_name(other), other, "{other}");
        }
        assert_eq!(
            mask_temp_name("/a/.tmpAAAAAA/b/.tmpBBBBBB"),
            "/a/.tmp<random>/b/.tmp<random>"
        );
        // bubblewrap's bound file, in its mount failure: the name only.
        let b = mask_temp_name("bwrap: Can't bind mount /bindfileIFBHak on /newroot/w/sub: x");
        assert_eq!(
            b,
            "bwrap: Can't bind mount /bindfile<random> on /newroot/w/sub: x"
        );
        assert_eq!(
            b,
            mask_temp_name("bwrap: Can't bind mount /bindfileKHoIIB on /newroot/w/sub: x")
        );
        assert_ne!(
            b,
            mask_temp_name("bwrap: Can't bind mount /bindfileKHoIIB on /newroot/w/zz: x")
        );
        assert_eq!(mask_temp_name("/bindfileAB-DEF"), "/bindfileAB-DEF");
    }

    /// A deadline's debug duration is masked; a number without its unit, or not followed by
    /// `timed_out`, is not.
    #[test]
    fn timeout_durations_mask_their_number_only() {
        let a = mask_debug_duration("output: \"\", duration: 6.822165ms, timed_out: true } })");
        assert_eq!(a, "output: \"\", duration: <time>, timed_out: true } })");
        assert_eq!(
            a,
            mask_debug_duration("output: \"\", duration: 55.40628ms, timed_out: true } })")
        );
        assert_eq!(
            mask_debug_duration("duration: 950µs, timed_out"),
            mask_debug_duration("duration: 1.2s, timed_out")
        );
        assert_ne!(
            a,
            mask_debug_duration("output: \"x\", duration: 6.822165ms, timed_out: true } })")
        );
        for other in [
            "duration: 5, timed_out",
            "duration: 5ms, done",
            "duration: ms, timed_out",
        ] {
            assert_eq!(mask_debug_duration(other), other, "{other}");
        }
    }

    /// `server/diagnostics`: the process's id and memory are masked; its gauges, a missing
    /// memory reading and an `id` anywhere else are compared.
    #[test]
    fn diagnostics_mask_the_process_s_own_numbers_only() {
        use serde_json::json;
        let line = |id: u64, mem: Value, threads: u64, other_id: u64| {
            json!({"dir": "out", "msg": {"id": other_id, "result": {
                "process": {"id": id, "residentMemoryBytes": mem, "physicalFootprintBytes": null},
                "gauges": [{"name": "core.threads.live", "value": threads}]}}})
            .to_string()
        };
        let one = |l: String| masked(&l).unwrap();
        let a = one(line(11512, json!(153337856), 1, 3));
        assert_eq!(a, one(line(11989, json!(153481216), 1, 3)));
        // A gauge, a reading against none, another message id: differences.
        assert_ne!(a, one(line(11512, json!(153337856), 2, 3)));
        assert_ne!(a, one(line(11512, Value::Null, 1, 3)));
        assert_ne!(a, one(line(11512, json!(153337856), 1, 4)));
    }

    /// A thread list's next cursor: its clock reading is masked; its id, its shape and a
    /// reading that is not an ISO time are not.
    #[test]
    fn thread_list_cursors_mask_their_time_only() {
        let a = mask_keyset_time("2026-12-06T02:17:37Z|<uuid:4>");
        assert_eq!(a, "<iso-time>|<uuid:4>");
        assert_eq!(a, mask_keyset_time("2026-12-06T02:18:06Z|<uuid:4>"));
        assert_ne!(a, mask_keyset_time("2026-12-06T02:17:37Z|<uuid:5>"));
        assert_ne!(a, mask_keyset_time("1796387751|<uuid:4>"));
        assert_ne!(a, mask_keyset_time("2026-12-06T02:17:37Z|x|<uuid:4>"));
    }

    /// A project cursor by recency: its clock reading is masked; its direction, its id, a
    /// missing recency and a position are not.
    #[test]
    fn project_recency_cursors_mask_their_time_only() {
        let a = mask_keyset_time("v1|recencyAt|asc|1796564885333|<uuid:5>");
        assert_eq!(a, "v1|recencyAt|asc|<time>|<uuid:5>");
        assert_eq!(
            a,
            mask_keyset_time("v1|recencyAt|asc|1796564886196|<uuid:5>")
        );
        assert_ne!(
            a,
            mask_keyset_time("v1|recencyAt|desc|1796564885333|<uuid:5>")
        );
        assert_ne!(
            a,
            mask_keyset_time("v1|recencyAt|asc|1796564885333|<uuid:6>")
        );
        assert_ne!(a, mask_keyset_time("v1|recencyAt|asc|null|<uuid:5>"));
        assert_ne!(
            a,
            mask_keyset_time("v1|position|asc|1796564885333|<uuid:5>")
        );
    }

    /// An attachment cursor's clock reading is masked; its ids and shape are not.
    #[test]
    fn attachment_cursors_mask_their_time_only() {
        assert_eq!(
            mask_keyset_time("<uuid:0>|1796387751|<uuid:4>"),
            "<uuid:0>|<time>|<uuid:4>"
        );
        assert_eq!(
            mask_keyset_time("<uuid:0>|1796387751|<uuid:4>"),
            mask_keyset_time("<uuid:0>|1796387792|<uuid:4>")
        );
        assert_ne!(
            mask_keyset_time("<uuid:0>|1796387751|<uuid:4>"),
            mask_keyset_time("<uuid:0>|1796387751|<uuid:5>")
        );
        for other in [
            "<uuid:0>|17x|<uuid:4>",
            "a|1|b",
            "<uuid:0>||<uuid:1>",
            "1|2|3|4",
        ] {
            assert_eq!(mask_keyset_time(other), other);
        }
    }

    /// A recording replayed on another day: the rollout's day directory and stamp are masked.
    #[test]
    fn rollout_paths_mask_their_day() {
        let a = mask_rollout_stamp("/r/sessions/2026/11/30/rollout-2026-11-30T20-31-07-x.jsonl");
        let b = mask_rollout_stamp("/r/sessions/2026/12/01/rollout-2026-12-01T00-02-09-x.jsonl");
        assert_eq!(a, "/r/sessions/<date>/rollout-<stamp>-x.jsonl");
        assert_eq!(a, b);
        // Not a day directory: only the stamp.
        assert_eq!(
            mask_rollout_stamp("/r/x/rollout-2026-11-30T20-31-07-y"),
            "/r/x/rollout-<stamp>-y"
        );
    }

    /// The real server against its own recording, where it sent a status change twice.
    #[test]
    fn a_repeated_status_change_is_one() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/0.171.0");
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
        let twice = masked(&read(
            "races/status_repeat/36_read_state_and_unload.b.jsonl",
        ))
        .unwrap();
        let once = masked(&read("turns/36_read_state_and_unload.real.jsonl")).unwrap();
        let not_loaded = |t: &[Entry]| {
            t.iter()
                .filter(|e| e.msg["params"]["status"]["type"] == "notLoaded")
                .count()
        };
        assert_eq!((not_loaded(&twice), not_loaded(&once)), (2, 1));
        compare(&twice, &once).unwrap();
        compare(&once, &twice).unwrap();
        // Two changes that differ stay two.
        let mut other = once.clone();
        let at = other
            .iter()
            .position(|e| e.msg["params"]["status"]["type"] == "notLoaded")
            .unwrap();
        let mut idle = other[at].clone();
        idle.msg["params"]["status"]["type"] = "idle".into();
        other.insert(at, idle);
        assert!(compare(&other, &once).is_err());
    }

    fn t(lines: &[&str]) -> String {
        lines
            .iter()
            .map(|l| format!("{{\"dir\":\"out\",\"msg\":{l}}}\n"))
            .collect()
    }

    #[test]
    fn floating_notifications_do_not_shift_id_numbers() {
        let rc = r#"{"method":"remoteControl/status/changed","params":{"installationId":"11111111-1111-1111-1111-111111111111"}}"#;
        let a = t(&[
            rc,
            r#"{"id":1,"result":{"id":"22222222-2222-2222-2222-222222222222"}}"#,
        ]);
        let b = t(&[
            r#"{"id":1,"result":{"id":"33333333-3333-3333-3333-333333333333"}}"#,
            rc,
        ]);
        assert!(compare(&masked(&a).unwrap(), &masked(&b).unwrap()).is_ok());
    }

    #[test]
    fn a_real_difference_is_found_and_null_is_not_a_time() {
        let a = t(&[r#"{"method":"x","params":{"startedAt":5,"text":"a"}}"#]);
        let b = t(&[r#"{"method":"x","params":{"startedAt":9,"text":"a"}}"#]);
        assert!(compare(&masked(&a).unwrap(), &masked(&b).unwrap()).is_ok());
        let c = t(&[r#"{"method":"x","params":{"startedAt":null,"text":"a"}}"#]);
        assert!(compare(&masked(&a).unwrap(), &masked(&c).unwrap()).is_err());
        let d = t(&[r#"{"method":"x","params":{"startedAt":5,"text":"b"}}"#]);
        let m = compare(&masked(&a).unwrap(), &masked(&d).unwrap()).unwrap_err();
        assert!(m.why.contains("$.params.text"), "{}", m.why);
    }

    #[test]
    fn the_same_id_twice_must_hold() {
        let a = t(&[
            r#"{"method":"x","params":{"a":"11111111-1111-1111-1111-111111111111","b":"11111111-1111-1111-1111-111111111111"}}"#,
        ]);
        let b = t(&[
            r#"{"method":"x","params":{"a":"11111111-1111-1111-1111-111111111111","b":"22222222-2222-2222-2222-222222222222"}}"#,
        ]);
        assert!(compare(&masked(&a).unwrap(), &masked(&b).unwrap()).is_err());
    }
}
