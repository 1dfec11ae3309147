//! Differential conformance: record the real server's answers into `tests/corpus/<V>/conformance.jsonl`,
//! replay them against the live server (a determinism check), and compare an engine's
//! predictions against the corpus.

use crate::gen::{self, Case};
use crate::server::{self, Observed};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What an engine predicts for one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prediction {
    /// A protocol error reply: the exact line.
    Error(String),
    /// The request is accepted (a result or a handler error follows).
    Accepted,
    /// No reply.
    None,
    /// The connection closes.
    Close,
}

impl From<&Observed> for Prediction {
    fn from(o: &Observed) -> Prediction {
        match o {
            Observed::Error(r) => Prediction::Error(r.clone()),
            Observed::Accepted(_) => Prediction::Accepted,
            Observed::None => Prediction::None,
            Observed::Close => Prediction::Close,
        }
    }
}

impl Prediction {
    fn matches(&self, o: &Observed) -> bool {
        match (self, o) {
            (Prediction::Error(a), Observed::Error(b)) => a == b,
            (Prediction::Accepted, Observed::Accepted(_)) => true,
            (Prediction::None, Observed::None) | (Prediction::Close, Observed::Close) => true,
            // An accepted request may simply not be answered within the recording window.
            (Prediction::Accepted, Observed::None) => true,
            _ => false,
        }
    }
}

/// A recorded case: the lines and the expected outcome of each.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub case: Case,
    pub expect: Vec<Observed>,
}

pub fn corpus_path(version: &str) -> PathBuf {
    crate::codex_bin::corpus_dir(version).join("conformance.jsonl")
}

pub fn schema_path(version: &str) -> PathBuf {
    crate::codex_bin::schema_dir(version)
        .join("json")
        .join("codex_app_server_protocol.schemas.json")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd hex length in {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

/// One corpus line (keys in a fixed order).
pub fn to_json(r: &Recorded) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::from(r.case.name.as_str()));
    m.insert("category".into(), Value::from(r.case.category.as_str()));
    let texts: Option<Vec<&str>> = r
        .case
        .lines
        .iter()
        .map(|l| std::str::from_utf8(l).ok())
        .collect();
    match texts {
        Some(t) => {
            m.insert(
                "lines".into(),
                Value::Array(t.into_iter().map(Value::from).collect()),
            );
        }
        None => {
            m.insert(
                "lines_hex".into(),
                Value::Array(r.case.lines.iter().map(|l| Value::from(hex(l))).collect()),
            );
        }
    }
    // The standard first `initialize` is answered the same way in every case: its reference
    // reply is kept only where the case is about something else on that line.
    let expect = r
        .expect
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let standard_init = i == 0
                && (r.case.lines[0] == gen::INIT_EXPERIMENTAL.as_bytes()
                    || r.case.lines[0] == gen::INIT_PLAIN.as_bytes());
            match o {
                Observed::Accepted(Some(_)) if standard_init => Observed::Accepted(None).to_json(),
                _ => o.to_json(),
            }
        })
        .collect();
    m.insert("expect".into(), Value::Array(expect));
    Value::Object(m)
}

pub fn from_json(v: &Value) -> Result<Recorded, String> {
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .ok_or("case without name")?
        .to_string();
    let category = v
        .get("category")
        .and_then(Value::as_str)
        .ok_or("case without category")?
        .to_string();
    let lines: Vec<Vec<u8>> = if let Some(Value::Array(a)) = v.get("lines") {
        a.iter()
            .map(|l| l.as_str().map(|s| s.as_bytes().to_vec()))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("{name}: non-string line"))?
    } else if let Some(Value::Array(a)) = v.get("lines_hex") {
        a.iter()
            .map(|l| {
                l.as_str()
                    .ok_or("non-string hex line".to_string())
                    .and_then(unhex)
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{name}: {e}"))?
    } else {
        return Err(format!("{name}: no lines"));
    };
    let expect = v
        .get("expect")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{name}: no expect"))?
        .iter()
        .map(Observed::from_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{name}: {e}"))?;
    if expect.len() != lines.len() {
        return Err(format!(
            "{name}: {} lines but {} expectations",
            lines.len(),
            expect.len()
        ));
    }
    Ok(Recorded {
        case: Case {
            name,
            category,
            lines,
            ptr: None,
        },
        expect,
    })
}

pub fn read_corpus(path: &Path) -> Result<Vec<Recorded>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (run `cargo xtask conformance --record` first)",
            path.display()
        )
    })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
            from_json(&v)
        })
        .collect()
}

pub fn write_corpus(path: &Path, recs: &[Recorded]) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut out = String::new();
    for r in recs {
        out.push_str(&serde_json::to_string(&to_json(r)).map_err(|e| e.to_string())?);
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

/// Run cases against the real server. Cases whose process failed are dropped (reported).
pub fn run(codex: &Path, cases: Vec<Case>) -> Vec<Recorded> {
    let lines: Vec<Vec<Vec<u8>>> = cases.iter().map(|c| c.lines.clone()).collect();
    let solo: Vec<bool> = cases.iter().map(Case::solo).collect();
    let obs = server::run_cases(codex, &lines, &solo);
    let mut out = Vec::with_capacity(cases.len());
    for (case, o) in cases.into_iter().zip(obs) {
        match o {
            Some(expect) => out.push(Recorded { case, expect }),
            None => eprintln!("dropped {} (server run failed)", case.name),
        }
    }
    out
}

/// Tally per category: (identical, total), plus the first differences.
#[derive(Default)]
pub struct Report {
    pub by_category: BTreeMap<String, (usize, usize)>,
    pub diffs: Vec<String>,
}

impl Report {
    fn add(&mut self, category: &str, ok: bool, diff: impl FnOnce() -> String) {
        let e = self.by_category.entry(category.to_string()).or_default();
        e.1 += 1;
        if ok {
            e.0 += 1;
        } else {
            self.diffs.push(diff());
        }
    }

    pub fn totals(&self) -> (usize, usize) {
        self.by_category
            .values()
            .fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    }

    pub fn print(&self, what: &str) {
        println!("{:<20} {:>12}", "category", what);
        for (c, (ok, n)) in &self.by_category {
            println!("{c:<20} {:>12}", format!("{ok}/{n}"));
        }
        let (ok, n) = self.totals();
        println!(
            "{:<20} {:>12}  ({:.2}%)",
            "TOTAL",
            format!("{ok}/{n}"),
            if n == 0 {
                100.0
            } else {
                100.0 * ok as f64 / n as f64
            }
        );
        if !self.diffs.is_empty() {
            println!("first differences:");
            for d in self.diffs.iter().take(20) {
                println!("  {d}");
            }
        }
    }
}

fn show(o: &Observed) -> String {
    match o {
        Observed::Error(r) => format!("error {r}"),
        Observed::Accepted(Some(r)) => format!("accepted {}", truncate(r, 160)),
        Observed::Accepted(None) => "accepted (no reply in time)".into(),
        Observed::None => "none".into(),
        Observed::Close => "close".into(),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        s.to_string()
    } else {
        let mut end = n;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}

/// Compare an engine's predictions with the corpus. `predict` gets the raw lines of one case
/// and returns one prediction per line.
pub fn compare(cases: &[Recorded], predict: &dyn Fn(&[Vec<u8>]) -> Vec<Prediction>) -> Report {
    let mut rep = Report::default();
    for r in cases {
        let p = predict(&r.case.lines);
        let bad = r
            .expect
            .iter()
            .enumerate()
            .find(|(i, e)| p.get(*i).is_none_or(|p| !p.matches(e)));
        rep.add(&r.case.category, bad.is_none(), || {
            let (i, e) = bad.expect("a difference");
            format!(
                "{} line {i}: expected {}, predicted {:?}",
                r.case.name,
                show(e),
                p.get(i)
            )
        });
    }
    rep
}

/// The engine's prediction for each line of a case, on a fresh session.
pub fn engine_predict(version: &str, lines: &[Vec<u8>]) -> Vec<Prediction> {
    let mut session = codex_wire::Session::for_version(version)
        .unwrap_or_else(|| panic!("this build of codex-wire does not speak codex {version}"));
    let mut closed = false;
    lines
        .iter()
        .map(|l| {
            if closed {
                // Lines after a close never reach the server.
                return Prediction::Close;
            }
            match session.feed(l).outcome {
                codex_wire::Outcome::Reply(e) => Prediction::Error(e.line()),
                codex_wire::Outcome::Accepted => Prediction::Accepted,
                codex_wire::Outcome::NoReply => Prediction::None,
                codex_wire::Outcome::Close => {
                    closed = true;
                    Prediction::Close
                }
            }
        })
        .collect()
}

/// Case names listed in `tests/corpus/known_differences.txt` (tolerated, with a reason).
pub fn known_differences(version: &str) -> std::collections::HashSet<String> {
    let path = crate::codex_bin::corpus_dir(version).join("known_differences.txt");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn counts(recs: &[Recorded]) {
    let mut by: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for r in recs {
        let st = r
            .expect
            .get(r.case.focus())
            .map(Observed::status)
            .unwrap_or("none");
        *by.entry(&r.case.category)
            .or_default()
            .entry(st)
            .or_default() += 1;
    }
    println!(
        "{:<20} {:>6} {:>7} {:>9} {:>6} {:>6}",
        "category", "cases", "error", "accepted", "none", "close"
    );
    let mut tot = [0usize; 5];
    for (c, m) in &by {
        let g = |k: &str| m.get(k).copied().unwrap_or(0);
        let row = [
            m.values().sum(),
            g("error"),
            g("accepted"),
            g("none"),
            g("close"),
        ];
        for (t, v) in tot.iter_mut().zip(row) {
            *t += v;
        }
        println!(
            "{c:<20} {:>6} {:>7} {:>9} {:>6} {:>6}",
            row[0], row[1], row[2], row[3], row[4]
        );
    }
    println!(
        "{:<20} {:>6} {:>7} {:>9} {:>6} {:>6}",
        "TOTAL", tot[0], tot[1], tot[2], tot[3], tot[4]
    );
}

/// Generate the cases (deterministically), optionally cut to `limit` spread over categories.
pub fn cases(version: &str, limit: Option<usize>) -> Result<Vec<Case>, String> {
    let schema = gen::Schema::load(&schema_path(version))?;
    let all = gen::generate(&schema);
    Ok(match limit {
        Some(n) if n < all.len() => {
            // Every k-th case, so each category keeps some representation.
            let step = all.len().div_ceil(n);
            all.into_iter().step_by(step).collect()
        }
        _ => all,
    })
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mut record = false;
    let mut codex_arg: Option<PathBuf> = None;
    let mut limit = None;
    let mut dry_run = false;
    let mut version = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--record" => record = true,
            "--dry-run" => dry_run = true,
            "--version" => version = Some(it.next().ok_or("--version needs a value")?.as_str()),
            "--codex" => codex_arg = Some(it.next().ok_or("--codex needs a path")?.into()),
            "--limit" => {
                limit = Some(
                    it.next()
                        .ok_or("--limit needs a number")?
                        .parse::<usize>()
                        .map_err(|e| format!("--limit: {e}"))?,
                )
            }
            other => return Err(format!("conformance: unknown argument {other:?}")),
        }
    }
    let version = crate::codex_bin::pick_version(version)?;
    if dry_run {
        // Only generate: counts by category, and the cases as JSON lines on stdout.
        let cases = cases(&version, limit)?;
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for c in &cases {
            *by.entry(&c.category).or_default() += 1;
            let r = Recorded {
                case: c.clone(),
                expect: Vec::new(),
            };
            println!("{}", to_json(&r));
        }
        for (c, n) in by {
            eprintln!("{c:<20} {n:>6}");
        }
        eprintln!("{:<20} {:>6}", "TOTAL", cases.len());
        return Ok(());
    }
    let codex = crate::codex_bin::ensure_codex(&version, codex_arg.as_deref())?;
    // A partial recording never replaces the committed corpus.
    let path = if record && limit.is_some() {
        crate::codex_bin::repo_root()
            .join("target")
            .join(format!("conformance-limited-{version}.jsonl"))
    } else {
        corpus_path(&version)
    };
    if record {
        let t0 = Instant::now();
        let cases = cases(&version, limit)?;
        let n = cases.len();
        println!("generated {n} cases; running against {}", codex.display());
        let recs = run(&codex, cases);
        write_corpus(&path, &recs)?;
        let secs = t0.elapsed().as_secs_f64();
        counts(&recs);
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!(
            "recorded {}/{n} cases in {secs:.1}s -> {} ({:.1} MB)",
            recs.len(),
            path.display(),
            size as f64 / 1e6
        );
    } else {
        let mut recs = read_corpus(&path)?;
        if let Some(n) = limit {
            let step = recs.len().div_ceil(n.max(1));
            recs = recs.into_iter().step_by(step.max(1)).collect();
        }
        let t0 = Instant::now();
        println!(
            "replaying {} recorded cases against {}",
            recs.len(),
            codex.display()
        );
        // Live differential: the same cases through the real server and through the engine.
        let cases: Vec<Case> = recs.iter().map(|r| r.case.clone()).collect();
        let live = run(&codex, cases);
        println!("live run took {:.1}s", t0.elapsed().as_secs_f64());
        let by_lines: HashMap<&Vec<Vec<u8>>, Vec<Prediction>> = live
            .iter()
            .map(|r| {
                (
                    &r.case.lines,
                    r.expect.iter().map(Prediction::from).collect(),
                )
            })
            .collect();
        let again = compare(&recs, &|lines| {
            by_lines.get(&lines.to_vec()).cloned().unwrap_or_default()
        });
        again.print("recorded expectations still hold (determinism)");
        let engine = compare(&live, &|lines| engine_predict(&version, lines));
        engine.print("identical (engine vs live server)");
        let known = known_differences(&version);
        let unexpected: Vec<&String> = engine
            .diffs
            .iter()
            .filter(|d| !known.iter().any(|k| d.starts_with(&format!("{k} line "))))
            .collect();
        if !unexpected.is_empty() {
            for d in unexpected.iter().take(20) {
                println!("UNEXPECTED {d}");
            }
            return Err(format!(
                "{} live differences not listed in tests/corpus/{version}/known_differences.txt",
                unexpected.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn newest() -> String {
        crate::codex_bin::newest_version().expect("schema/<version>/")
    }

    #[test]
    fn generation_is_deterministic_and_covers_every_method() {
        let a = cases(&newest(), None).expect("generate");
        let b = cases(&newest(), None).expect("generate");
        assert!(a.len() >= 3000, "only {} cases", a.len());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (&x.name, &x.category, &x.lines),
                (&y.name, &y.category, &y.lines)
            );
        }
        let names: std::collections::HashSet<&str> = a.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.len(), a.len(), "case names are unique");
        let schema = gen::Schema::load(&schema_path(&newest())).expect("bundle");
        let mut methods: Vec<String> = schema.methods().into_iter().map(|m| m.name).collect();
        methods.extend(gen::UNLISTED_METHODS.iter().map(|m| m.to_string()));
        for m in methods.iter().filter(|m| *m != "initialize") {
            let prefix = format!("{m}#");
            assert!(
                a.iter().any(|c| c.name.starts_with(&prefix)),
                "no case for {m}"
            );
        }
    }

    /// The committed corpus must hold exactly the cases the generator makes today
    /// (otherwise: `cargo xtask conformance --record`).
    #[test]
    fn corpus_is_up_to_date_with_the_generator() {
        let recs = read_corpus(&corpus_path(&newest())).expect("committed corpus");
        let gen = cases(&newest(), None).expect("generate");
        let rec_keys: Vec<(&str, &str, &Vec<Vec<u8>>)> = recs
            .iter()
            .map(|r| {
                (
                    r.case.name.as_str(),
                    r.case.category.as_str(),
                    &r.case.lines,
                )
            })
            .collect();
        let gen_keys: Vec<(&str, &str, &Vec<Vec<u8>>)> = gen
            .iter()
            .map(|c| (c.name.as_str(), c.category.as_str(), &c.lines))
            .collect();
        if let Some(i) =
            (0..rec_keys.len().min(gen_keys.len())).find(|&i| rec_keys[i] != gen_keys[i])
        {
            panic!(
                "corpus is stale at case {i}: recorded {:?}, generated {:?}; run `cargo xtask conformance --record`",
                rec_keys[i].0, gen_keys[i].0
            );
        }
        assert_eq!(
            rec_keys.len(),
            gen_keys.len(),
            "corpus is stale (case count); run `cargo xtask conformance --record`"
        );
    }

    #[test]
    fn corpus_lines_round_trip() {
        let case = Case {
            name: "x#y".into(),
            category: "framing".into(),
            lines: vec![b"{}".to_vec(), vec![0xff, 0x00, b'a']],
            ptr: None,
        };
        let r = Recorded {
            case,
            expect: vec![
                Observed::Accepted(Some("{\"id\":0,\"result\":{}}".into())),
                Observed::Close,
            ],
        };
        let v = to_json(&r);
        assert!(v.get("lines_hex").is_some());
        let back = from_json(&v).expect("parse");
        assert_eq!(back.case.lines, r.case.lines);
        assert_eq!(back.expect, r.expect);
    }

    #[test]
    fn compare_counts_by_category() {
        let mk = |name: &str, expect: Observed| Recorded {
            case: Case {
                name: name.into(),
                category: "c".into(),
                lines: vec![b"x".to_vec()],
                ptr: None,
            },
            expect: vec![expect],
        };
        let recs = vec![
            mk("a", Observed::Error("E".into())),
            mk("b", Observed::Accepted(None)),
            mk("c", Observed::None),
        ];
        let rep = compare(&recs, &|_| vec![Prediction::Error("E".into())]);
        assert_eq!(rep.by_category["c"], (1, 3));
        assert_eq!(rep.diffs.len(), 2);
    }
}
