//! `cargo xtask fidelity`: generated client sessions, each run against the real binary (behind
//! the scripted model, `codex-wire scripted`) and against the fake, compared under the one
//! masking rule (`codex_wire::diff`). A session that differs is run on the real server a second
//! time: when the real server differs from itself the difference is its own race, else it is the
//! fake's. Each difference gets a class (where the two transcripts part: the message and the
//! path), and the first session of each class is shrunk to a minimal session that still shows
//! it, ready to be kept as a corpus case (`--keep`).
//!
//! The generator's dimensions (`generate.rs`): `initialize` (experimentalApi on, off, absent;
//! notification opt-outs; client names), config.toml and `-c` (approval policy × sandbox mode,
//! known and unknown models, stream and request retries, features, service tier, reasoning
//! effort, deprecated keys), every field of `thread/start`, `turn/start` and `thread/resume`
//! params (absent, `null`, or a value drawn from the schema: every enum variant, object variant,
//! path forms, empty lists), model scripts from the step kinds (texts: unicode, escapes, empty,
//! long; commands: both quotes, `$`, exit codes, stderr, output over time; reasoning parts, usage,
//! stream drops, provider HTTP errors, tool calls, user input, permissions), the client's
//! answers to approvals (every decision, a JSON-RPC error, a malformed result, no answer then an
//! interrupt), restarts with resume params, interrupts, and read-backs.

mod generate;
pub mod methods;

use crate::gen::Schema;
use codex_wire::diff;
use codex_wire::harness::{self, Case, Server};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(clap::Parser, Debug)]
#[command(name = "cargo xtask fidelity")]
struct Cli {
    /// The generator's seed [default: from the clock, printed]
    #[arg(long)]
    seed: Option<u64>,
    /// How many sessions to generate and run
    #[arg(long, default_value_t = 50)]
    sessions: usize,
    /// Which methods sessions send: `turns` (the harness's turns, resumes and read-backs) or
    /// `wide` (those, and calls of every other client method the schema lists)
    #[arg(long, default_value = "wide", value_parser = ["turns", "wide"])]
    net: String,
    /// The codex version (default: the newest)
    #[arg(long)]
    version: Option<String>,
    /// Sessions run at once
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Do not shrink the differences found
    #[arg(long)]
    no_shrink: bool,
    /// Most runs one shrink may spend (per class)
    #[arg(long, default_value_t = 40)]
    shrink_budget: usize,
    /// Keep each class's shrunk session (or the `--case`) as a corpus case: the case in
    /// tests/corpus/fidelity/, the real server's transcript in tests/corpus/<V>/fidelity/
    #[arg(long)]
    keep: bool,
    /// Fail unless at least this share (percent) of the sessions the real server agrees with
    /// itself on are identical (the races are reported apart)
    #[arg(long, value_name = "PERCENT")]
    require: Option<f64>,
    /// Print the generated sessions (JSON, one a line) and run nothing
    #[arg(long)]
    print: bool,
    /// Run only these session numbers
    #[arg(long, value_delimiter = ',')]
    only: Vec<usize>,
    /// Run a case file (a generated or kept session) instead of generating
    #[arg(long, value_name = "FILE")]
    case: Option<PathBuf>,
    /// The codex-wire binary [default: target/debug/codex-wire, built]
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Leave each run's directories (state, CODEX_HOME with the real rollout, work dir) in the
    /// temp dir
    #[arg(long)]
    keep_runs: bool,
    /// Judge again the sessions of an earlier run's directory (target/fidelity/<seed>/) from
    /// their saved transcripts, with this build's comparison; runs nothing
    #[arg(long, value_name = "DIR")]
    rejudge: Option<PathBuf>,
    /// Another fake to judge (an older build, a team's own `codex` wrapper taking the fake's
    /// arguments) [default: the codex-wire binary's]
    #[arg(long, value_name = "PATH")]
    fake_bin: Option<PathBuf>,
    /// Save the per-method tally (sessions that sent each client method, and how many of them
    /// were identical) as tests/corpus/<V>/fidelity_methods.json, the generated column of
    /// docs/methods.md
    #[arg(long)]
    save_methods: bool,
}

/// How one session came out.
#[derive(Clone, Debug)]
pub(crate) enum Verdict {
    Identical,
    /// The fake parts from the real server here (the real server agrees with itself).
    Differs {
        class: String,
        detail: String,
    },
    /// The real server differs from itself, and the fake from both of its runs: a race of the
    /// real server's, not counted as identical.
    RealRace {
        class: String,
        detail: String,
    },
}

/// Where two transcripts part, as a class: the message (method, or the request a result answers)
/// and the path, values left out.
fn classify(a: &[diff::Entry], m: &diff::Mismatch) -> String {
    let label = |e: &Option<diff::Entry>| -> String {
        let Some(e) = e else {
            return "(end)".into();
        };
        if let Some(method) = e.msg["method"].as_str() {
            return format!("{} {method}", e.dir);
        }
        // A result or error: name the request it answers, the last one with its id before it
        // (ids start again in a new process).
        let id = &e.msg["id"];
        let at = a.iter().position(|x| x == e).unwrap_or(a.len());
        let req = a[..at]
            .iter()
            .rev()
            .find(|x| x.dir != e.dir && &x.msg["id"] == id && x.msg.get("method").is_some())
            .and_then(|x| x.msg["method"].as_str())
            .unwrap_or("?");
        let kind = if e.msg.get("error").is_some() {
            "error"
        } else {
            "result"
        };
        format!("{} {kind} of {req}", e.dir)
    };
    if m.why.starts_with("background") {
        let methods = |s: &str| -> Vec<String> {
            s.split("\\\"method\\\":\\\"")
                .skip(1)
                .filter_map(|x| x.split("\\\"").next())
                .map(str::to_string)
                .collect()
        };
        return format!("background notifications differ {:?}", methods(&m.why));
    }
    let (la, lb) = (label(&m.a), label(&m.b));
    let what = if la == lb { la } else { format!("{la} / {lb}") };
    // The path up to its first value, indices generalized.
    let why = m.why.split(": ").next().unwrap_or("");
    let mut path = String::new();
    let mut in_index = false;
    for c in why.chars() {
        match c {
            '[' => {
                in_index = true;
                path.push_str("[]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => path.push(c),
        }
    }
    let kind = if m.why.contains("only in A") {
        " (only real)"
    } else if m.why.contains("only in B") {
        " (only fake)"
    } else if m.why.contains("key order") {
        " (key order)"
    } else {
        ""
    };
    format!("{what} {path}{kind}")
}

fn read_masked(p: &Path) -> Result<Vec<diff::Entry>, String> {
    std::fs::read_to_string(p)
        .map_err(|e| format!("{}: {e}", p.display()))
        .and_then(|t| diff::masked(&t))
}

fn short(e: &Option<diff::Entry>) -> String {
    let s = e
        .as_ref()
        .map(|e| format!("{} {}", e.dir, e.msg))
        .unwrap_or_default();
    s.chars().take(600).collect()
}

pub(crate) struct Runner {
    bin: PathBuf,
    fake_bin: PathBuf,
    codex: PathBuf,
    version: String,
    work: PathBuf,
}

/// The directory a run works in: as long for the second real run as for the first and the fake,
/// so that what the real server derives from a path's length (a search snippet's window, a
/// compaction's token estimate of the history that names the cwd) cannot differ between two
/// real runs and excuse a fake's difference as a race (before: `real2`, one character longer,
/// excused seven compaction estimates and search snippets on seeds 37370001 and 40400001).
pub(crate) fn run_dir(server: &str) -> &str {
    match server {
        "real2" => "rea2",
        other => other,
    }
}

/// Where a session's run on `server` left its transcript.
pub(crate) fn run_transcript(work: &Path, case: &str, server: &str) -> PathBuf {
    work.join(case)
        .join(run_dir(server))
        .join("state/transcript.jsonl")
}

impl Runner {
    fn run(&self, case: &Case, server: &str) -> Result<(PathBuf, Option<String>), String> {
        let root = self.work.join(&case.name).join(run_dir(server));
        let s = if server.starts_with("real") {
            Server::Real {
                bin: &self.bin,
                codex: &self.codex,
            }
        } else {
            Server::Fake {
                bin: &self.fake_bin,
                version: Some(&self.version),
            }
        };
        harness::run_outcome(case, &s, &root)
    }

    /// Runs a session on both servers (and the real one again when they differ).
    fn judge(&self, case: &Case) -> Result<Verdict, String> {
        let (real, _) = self.run(case, "real")?;
        let (fake, _) = self.run(case, "fake")?;
        verdict(&real, &fake, || Ok(self.run(case, "real2")?.0))
    }

    /// Whether `case` still shows `class` (the fake against one real run).
    fn shows(&self, case: &Case, class: &str) -> bool {
        let run = || -> Result<bool, String> {
            let (real, _) = self.run(case, "real")?;
            let (fake, _) = self.run(case, "fake")?;
            let r = read_masked(&real)?;
            Ok(match diff::compare(&r, &read_masked(&fake)?) {
                Ok(()) => false,
                Err(m) => classify(&r, &m) == class,
            })
        };
        run().unwrap_or(false)
    }

    /// A smaller session that still shows `class`.
    fn shrink(&self, case: &Case, class: &str, budget: usize) -> (Case, usize) {
        shrink(case, budget, |c| self.shows(c, class))
    }
}

/// A smaller session for which `shows` still holds: parts removed one at a time while it holds,
/// within `budget` trials.
fn shrink(case: &Case, budget: usize, mut shows: impl FnMut(&Case) -> bool) -> (Case, usize) {
    let mut best = case.clone();
    let mut trials = 0;
    'outer: loop {
        for cand in candidates(&best) {
            if trials >= budget {
                break 'outer;
            }
            trials += 1;
            if shows(&cand) {
                best = cand;
                continue 'outer;
            }
        }
        break;
    }
    (best, trials)
}

/// How a session came out from its transcripts: the real server's and the fake's, and (asked only
/// when they differ) a second real run's. Strict: the fake passes when it equals the first real
/// run, or the second (it then shows one of the real server's own outcomes); a real server that
/// differs from itself excuses nothing — the session is a race, reported apart and never counted
/// as identical.
fn verdict(
    real: &Path,
    fake: &Path,
    real2: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<Verdict, String> {
    let (r, f) = (read_masked(real)?, read_masked(fake)?);
    let Err(m) = diff::compare(&r, &f) else {
        return Ok(Verdict::Identical);
    };
    let class = classify(&r, &m);
    let detail = format!(
        "message {}: {}\n    real {}\n    fake {}",
        m.index,
        m.why.chars().take(400).collect::<String>(),
        short(&m.a),
        short(&m.b)
    );
    let r2 = read_masked(&real2()?)?;
    if diff::compare(&r2, &f).is_ok() {
        return Ok(Verdict::Identical);
    }
    if let Err(m2) = diff::compare(&r, &r2) {
        let detail = format!(
            "real against real, message {}: {}\n    real  {}\n    real2 {}",
            m2.index,
            m2.why.chars().take(400).collect::<String>(),
            short(&m2.a),
            short(&m2.b)
        );
        return Ok(Verdict::RealRace {
            class: classify(&r, &m2),
            detail,
        });
    }
    Ok(Verdict::Differs { class, detail })
}

/// Every session one step simpler than `case`: a turn, a step, a param, a setting, an answer
/// or a control removed or reset to the harness's default.
fn candidates(case: &Case) -> Vec<Case> {
    let v = serde_json::to_value(case).expect("a case serializes");
    let default: Value = serde_json::to_value(
        serde_json::from_value::<Case>(json!({"name": case.name, "scenario": {}}))
            .expect("a minimal case"),
    )
    .expect("a case serializes");
    let mut out: Vec<Value> = Vec::new();
    let turns = v["scenario"]["turns"].as_array().map_or(0, Vec::len);
    // Whole turns (with their input and per-turn params).
    for t in 0..turns {
        if turns > 1 {
            let mut c = v.clone();
            c["scenario"]["turns"].as_array_mut().map(|a| a.remove(t));
            if let Some(a) = c["inputs"].as_array_mut() {
                if t < a.len() {
                    a.remove(t);
                }
            }
            if let Some(a) = c["turn_params_each"].as_array_mut() {
                if t < a.len() {
                    a.remove(t);
                }
            }
            out.push(c);
        }
    }
    // Steps.
    for t in 0..turns {
        let n = v["scenario"]["turns"][t]["steps"]
            .as_array()
            .map_or(0, Vec::len);
        for s in 0..n {
            let mut c = v.clone();
            c["scenario"]["turns"][t]["steps"]
                .as_array_mut()
                .map(|a| a.remove(s));
            out.push(c);
        }
    }
    // Members of the param maps, then whole settings.
    for key in [
        "thread_params",
        "turn_params",
        "resume_params",
        "replies",
        "initialize",
    ] {
        if let Some(m) = v[key].as_object() {
            for k in m.keys() {
                let mut c = v.clone();
                c[key].as_object_mut().map(|m| m.remove(k));
                out.push(c);
            }
        }
    }
    if let Some(each) = v["turn_params_each"].as_array() {
        for (i, m) in each.iter().enumerate() {
            for k in m.as_object().into_iter().flatten().map(|(k, _)| k) {
                let mut c = v.clone();
                c["turn_params_each"][i]
                    .as_object_mut()
                    .map(|m| m.remove(k));
                out.push(c);
            }
        }
    }
    if let Some(caps) = v["initialize"]["capabilities"].as_object() {
        for k in caps.keys() {
            let mut c = v.clone();
            c["initialize"]["capabilities"]
                .as_object_mut()
                .map(|m| m.remove(k));
            out.push(c);
        }
    }
    for key in [
        "initialize",
        "config_extra",
        "args",
        "dirs",
        "features",
        "decisions",
        "interrupt_on",
        "restart_before_turn",
        "after",
        "approval_policy",
        "sandbox_mode",
        "model",
        "stream_retries",
        "turn_params_each",
    ] {
        if v[key] != default[key] {
            let mut c = v.clone();
            c[key] = default[key].clone();
            out.push(c);
        }
    }
    for key in ["args", "features", "decisions", "after", "dirs"] {
        let n = v[key].as_array().map_or(0, Vec::len);
        for i in 0..n {
            let mut c = v.clone();
            c[key].as_array_mut().map(|a| a.remove(i));
            out.push(c);
        }
    }
    out.into_iter()
        .filter_map(|c| serde_json::from_value(c).ok())
        .collect()
}

/// Where kept sessions live: `tests/corpus/fidelity/` (cases), with the real server's
/// transcript of each in `tests/corpus/<V>/fidelity/`.
pub fn kept_dir() -> PathBuf {
    crate::codex_bin::repo_root().join("tests/corpus/fidelity")
}

pub fn main(args: &[String]) -> Result<(), String> {
    use clap::Parser;
    let cli =
        Cli::try_parse_from(std::iter::once("fidelity".to_string()).chain(args.iter().cloned()))
            .map_err(|e| e.to_string())?;
    let version = crate::codex_bin::pick_version(cli.version.as_deref())?;
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let schema = Schema::load(
        &crate::codex_bin::schema_dir(&version).join("json/codex_app_server_protocol.schemas.json"),
    )?;
    let mut g = generate::Generator::new(&schema, seed);
    g.wide = cli.net == "wide";
    let cases: Vec<Case> = match &cli.case {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            vec![serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?]
        }
        None => (0..cli.sessions)
            .map(|n| g.session(&format!("s{seed}_{n:04}")))
            .enumerate()
            .filter(|(n, _)| cli.only.is_empty() || cli.only.contains(n))
            .map(|(_, c)| c)
            .collect(),
    };
    if cli.print {
        for c in &cases {
            println!("{}", serde_json::to_string(c).map_err(|e| e.to_string())?);
        }
        return Ok(());
    }
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    let bin = match &cli.bin {
        Some(b) => b.canonicalize().map_err(|e| format!("--bin: {e}"))?,
        None => crate::codex_bin::codex_wire_bin()?,
    };
    let out = crate::codex_bin::repo_root()
        .join("target/fidelity")
        .join(match cli.case {
            Some(_) => "cases".to_string(),
            None => seed.to_string(),
        });
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    // Outside any git repository: the real server reports git state for a cwd inside one.
    let fake_bin = match &cli.fake_bin {
        Some(b) => b.canonicalize().map_err(|e| format!("--fake-bin: {e}"))?,
        None => bin.clone(),
    };
    let runner = Runner {
        fake_bin,
        bin,
        codex,
        version: version.clone(),
        work: std::env::temp_dir().join(format!("codex-wire-fidelity-{seed}")),
    };
    println!(
        "fidelity: codex {version}, seed {seed}, {} sessions, {} at once",
        cases.len(),
        cli.jobs
    );
    let started = std::time::Instant::now();
    if let Some(dir) = &cli.rejudge {
        return rejudge(&cli, &runner, dir, started);
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Verdict)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..cli.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let v = runner.judge(case).unwrap_or_else(|e| Verdict::Differs {
                    class: "harness error".into(),
                    detail: e,
                });
                let tag = match &v {
                    Verdict::Identical => "identical".to_string(),
                    Verdict::Differs { class, .. } => format!("DIFFERS  {class}"),
                    Verdict::RealRace { class, .. } => format!("REAL RACE  {class}"),
                };
                println!("  {:<24} {tag}", case.name);
                let _ = std::fs::write(
                    out.join(format!("{}.case.json", case.name)),
                    serde_json::to_string_pretty(case).unwrap_or_default(),
                );
                if !matches!(v, Verdict::Identical) {
                    for side in ["real", "fake", "real2"] {
                        let from = run_transcript(&runner.work, &case.name, side);
                        let _ =
                            std::fs::copy(&from, out.join(format!("{}.{side}.jsonl", case.name)));
                    }
                }
                if !cli.keep_runs {
                    let _ = std::fs::remove_dir_all(runner.work.join(&case.name));
                }
                results.lock().expect("results").push((i, v));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    let elapsed = started.elapsed();
    report(&cli, &runner, &cases, &results, &out, elapsed)
}

/// `--rejudge DIR`: the sessions of an earlier run, judged again from their saved transcripts
/// (a session without any was identical).
fn rejudge(
    cli: &Cli,
    runner: &Runner,
    dir: &Path,
    started: std::time::Instant,
) -> Result<(), String> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".case.json") && !n.ends_with(".shrunk.case.json")
        })
        .collect();
    names.sort();
    let mut cases = Vec::new();
    let mut results = Vec::new();
    for (i, p) in names.iter().enumerate() {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let case: Case =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        let at = |side: &str| dir.join(format!("{}.{side}.jsonl", case.name));
        let v = if at("real").exists() && at("fake").exists() {
            let real2 = at("real2");
            verdict(&at("real"), &at("fake"), || Ok(real2))?
        } else {
            Verdict::Identical
        };
        cases.push(case);
        results.push((i, v));
    }
    report(cli, runner, &cases, &results, dir, started.elapsed())
}

fn report(
    cli: &Cli,
    runner: &Runner,
    cases: &[Case],
    results: &[(usize, Verdict)],
    out: &Path,
    elapsed: std::time::Duration,
) -> Result<(), String> {
    let identical = results
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Identical))
        .count();
    let mut classes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut races: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut details = BTreeMap::new();
    for (i, v) in results {
        match v {
            Verdict::Identical => {}
            Verdict::Differs { class, detail } => {
                classes.entry(class.clone()).or_default().push(*i);
                details
                    .entry(class.clone())
                    .or_insert_with(|| detail.clone());
            }
            Verdict::RealRace { class, detail } => {
                races.entry(class.clone()).or_default().push(*i);
                details
                    .entry(class.clone())
                    .or_insert_with(|| detail.clone());
            }
        }
    }
    let race_count: usize = races.values().map(Vec::len).sum();
    println!(
        "\nfidelity: {identical}/{} sessions identical ({:.1} %, strict: equal to a real run), \
         {race_count} the real server's own races (not counted), in {:.0} s",
        results.len(),
        100.0 * identical as f64 / results.len().max(1) as f64,
        elapsed.as_secs_f64()
    );
    let tally = method_tally(&runner.version, cases, results);
    // The client methods sent, of those the version's schema lists.
    let listed = codex_wire::by_version(&runner.version)
        .unwrap_or_else(codex_wire::newest)
        .client_methods
        .len();
    let coverage = (tally.len(), listed);
    println!(
        "method coverage: {}/{} client methods of codex {} sent ({:.1} %)",
        coverage.0,
        coverage.1,
        runner.version,
        100.0 * coverage.0 as f64 / coverage.1.max(1) as f64
    );
    let tally_json = serde_json::to_string_pretty(&json!({
        "seed": cli.seed, "sessions": results.len(), "methods": tally,
    }))
    .unwrap_or_default()
        + "\n";
    let _ = std::fs::write(out.join("methods.json"), &tally_json);
    if cli.save_methods {
        let path = crate::codex_bin::corpus_dir(&runner.version).join("fidelity_methods.json");
        std::fs::write(&path, &tally_json).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("per-method tally saved to {}", path.display());
    }
    let mut by_count: Vec<(&String, &Vec<usize>)> = classes.iter().collect();
    by_count.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let mut summary = Vec::new();
    for (class, sessions) in &by_count {
        println!("\n{:>4}  {class}", sessions.len());
        println!(
            "      e.g. {}: {}",
            cases[sessions[0]].name, details[*class]
        );
        summary.push(json!({"class": class, "count": sessions.len(),
            "sessions": sessions.iter().map(|i| &cases[*i].name).collect::<Vec<_>>()}));
    }
    for (class, sessions) in &races {
        println!("\n{:>4}  real race: {class}", sessions.len());
        println!("      e.g. {}: {}", cases[sessions[0]].name, details[class]);
    }
    let _ = std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&json!({"identical": identical, "total": results.len(),
            "classes": summary,
            "races": races.iter().map(|(c, s)| json!({"class": c, "count": s.len()}))
                .collect::<Vec<_>>()}))
        .unwrap_or_default(),
    );
    if !cli.no_shrink {
        for (class, sessions) in &by_count {
            let first = &cases[sessions[0]];
            let (small, trials) = runner.shrink(first, class, cli.shrink_budget);
            let path = out.join(format!("{}.shrunk.case.json", first.name));
            let text = serde_json::to_string_pretty(&small).map_err(|e| e.to_string())?;
            std::fs::write(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!(
                "shrunk ({trials} trials): {class}\n      {}",
                path.display()
            );
            if cli.keep {
                keep(runner, &small)?;
            }
        }
    }
    if cli.keep && cli.case.is_some() {
        for c in cases {
            keep(runner, c)?;
        }
    }
    println!("sessions, transcripts and report.json in {}", out.display());
    if let Some(floor) = cli.require {
        // Of the sessions where the real server agrees with itself.
        let judged = results.len().saturating_sub(race_count);
        let share = 100.0 * identical as f64 / judged.max(1) as f64;
        if share < floor {
            return Err(format!(
                "fidelity: {share:.1} % of the sessions the real server agrees with itself on \
                 are identical, below the required {floor} %"
            ));
        }
    }
    Ok(())
}

/// Per client method of the version's schema that some session sent: `[identical, races,
/// sessions]`, the sessions that sent it, how many of them were identical (the strict verdict)
/// and how many the real server's own races left unjudged.
/// Per client method sent: `[identical, races, sessions, own]`, where `own` counts the
/// differing sessions whose first difference is that method's own answer (see
/// [`answered_methods`]); a session that parts elsewhere (a notification, another method's
/// answer) counts against every method it sent but against none as its own.
fn method_tally(
    version: &str,
    cases: &[Case],
    results: &[(usize, Verdict)],
) -> BTreeMap<String, [usize; 4]> {
    let protocol = codex_wire::by_version(version).unwrap_or_else(codex_wire::newest);
    let mut tally: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for (i, v) in results {
        let mut sent = generate::methods_sent(&cases[*i]);
        sent.sort();
        sent.dedup();
        let own = match v {
            Verdict::Differs { class, .. } => answered_methods(class),
            _ => Vec::new(),
        };
        for m in sent {
            if !protocol.client_methods.contains(&m.as_str()) {
                continue;
            }
            let t = tally.entry(m.clone()).or_default();
            match v {
                Verdict::Identical => t[0] += 1,
                Verdict::RealRace { .. } => t[1] += 1,
                Verdict::Differs { .. } => {}
            }
            t[2] += 1;
            if own.contains(&m) {
                t[3] += 1;
            }
        }
    }
    tally
}

/// The methods whose answer (a result or an error, on either side) is where a difference's
/// class says two transcripts part: `out result of thread/fork $.result…`,
/// `out error of a / out result of b …`.
fn answered_methods(class: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in class.split(" / ") {
        for kind in ["result of ", "error of "] {
            if let Some(rest) = part.split_once(kind).map(|(_, r)| r) {
                let method = rest.split_whitespace().next().unwrap_or_default();
                if !method.is_empty() && method != "?" && !out.iter().any(|m| m == method) {
                    out.push(method.to_string());
                }
            }
        }
    }
    out
}

/// Keeps a session as a corpus case: the case, and the real server's transcript of it
/// (`tests/turns_kept.rs` replays it against the fake offline).
fn keep(runner: &Runner, case: &Case) -> Result<(), String> {
    let dir = kept_dir();
    let recorded = crate::codex_bin::corpus_dir(&runner.version).join("fidelity");
    for d in [&dir, &recorded] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let (real, error) = runner.run(case, "real")?;
    if let Some(e) = error {
        println!("  kept {} (the real run ended early: {e})", case.name);
    }
    let text = serde_json::to_string_pretty(case).map_err(|e| e.to_string())? + "\n";
    std::fs::write(dir.join(format!("{}.case.json", case.name)), text)
        .map_err(|e| e.to_string())?;
    let to = recorded.join(format!("{}.real.jsonl", case.name));
    std::fs::copy(&real, &to).map_err(|e| format!("{}: {e}", to.display()))?;
    println!("  kept {} as {}", case.name, to.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_works_under_a_path_of_one_length() {
        let len = |server| run_dir(server).len();
        assert_eq!(len("real"), len("fake"));
        assert_eq!(len("real2"), len("real"));
        assert_ne!(run_dir("real2"), run_dir("real"));
        // The second run's transcript is read from where it ran.
        let t = run_transcript(Path::new("/w"), "s1", "real2");
        assert_eq!(
            t,
            Path::new("/w/s1")
                .join(run_dir("real2"))
                .join("state/transcript.jsonl")
        );
    }

    #[test]
    fn a_difference_is_owned_by_the_answers_it_names_only() {
        assert_eq!(
            answered_methods("out result of thread/resume $.result.itemsBackwardsCursor"),
            ["thread/resume"]
        );
        assert_eq!(
            answered_methods(
                "out error of thread/name/set / out result of thread/name/set $.error"
            ),
            ["thread/name/set"]
        );
        assert_eq!(
            answered_methods("out account/login/completed / out result of plugin/list different"),
            ["plugin/list"]
        );
        // A notification, or an answer to a request the class could not name, is no method's.
        assert!(answered_methods("out item/completed $.params.item.status").is_empty());
        assert!(answered_methods("out result of ? $.result").is_empty());
    }

    /// A one-turn case that sends `after` once its turn is done.
    fn case(name: &str, after: Value) -> Case {
        serde_json::from_value(json!({"name": name, "scenario": {"turns": []},
                                      "inputs": ["x"], "after": after}))
        .unwrap()
    }

    #[test]
    fn the_tally_charges_a_difference_to_its_own_method_only() {
        let read = json!({"method": "config/read", "params": {}});
        let list = json!({"method": "thread/list", "params": {}});
        let cases = vec![
            case("a", json!([read.clone(), list])),
            case("b", json!([read])),
        ];
        let results = vec![
            (
                0,
                Verdict::Differs {
                    class: "out result of thread/list $.result.data".into(),
                    detail: String::new(),
                },
            ),
            (1, Verdict::Identical),
        ];
        let t = method_tally("0.171.0", &cases, &results);
        assert_eq!(t["config/read"], [1, 0, 2, 0]);
        assert_eq!(t["thread/list"], [0, 0, 1, 1]);
    }

    /// A transcript file of out-lines (methods with a text), and the path it is at.
    fn transcript(dir: &Path, name: &str, lines: &[(&str, &str)]) -> PathBuf {
        let text: String = lines
            .iter()
            .map(|(m, t)| {
                json!({"dir": "out", "msg": {"method": m, "params": {"text": t}}}).to_string()
                    + "\n"
            })
            .collect();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A test's own temp dir, removed when the test ends (passed or not).
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = std::path::Path;
        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("fidelity-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// The strict verdict: equal to a real run, or a difference; a real server differing from
    /// itself excuses nothing the fake does differently from both runs.
    #[test]
    fn the_verdict_is_strict() {
        let d = dir("verdict");
        let a = transcript(&d, "a", &[("x", "1"), ("y", "2")]);
        let b = transcript(&d, "b", &[("x", "1"), ("y", "3")]);
        let c = transcript(&d, "c", &[("x", "1"), ("y", "4")]);
        let never = || -> Result<PathBuf, String> { panic!("no second run needed") };
        assert!(matches!(
            verdict(&a, &a, never).unwrap(),
            Verdict::Identical
        ));
        // The fake equals the second real run: one of the real server's outcomes.
        let second = b.clone();
        assert!(matches!(
            verdict(&a, &b, || Ok(second)).unwrap(),
            Verdict::Identical
        ));
        // The real server differs from itself and the fake from both: a race, not a pass.
        let second = b.clone();
        assert!(matches!(
            verdict(&a, &c, || Ok(second)).unwrap(),
            Verdict::RealRace { .. }
        ));
        // The real server agrees with itself: the fake's difference.
        let second = a.clone();
        match verdict(&a, &b, || Ok(second)).unwrap() {
            Verdict::Differs { class, detail } => {
                assert_eq!(class, "out y $.params.text");
                assert!(detail.contains("message 1"), "{detail}");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_class_names_the_message_and_the_path_without_values() {
        let d = dir("classify");
        let masked =
            |lines: &[(&str, &str)], n: &str| read_masked(&transcript(&d, n, lines)).unwrap();
        let a = masked(&[("x", "1"), ("item/completed", "2")], "a");
        let b = masked(&[("x", "1"), ("item/completed", "3")], "b");
        let m = diff::compare(&a, &b).unwrap_err();
        assert_eq!(classify(&a, &m), "out item/completed $.params.text");
        let c = masked(&[("x", "1")], "c");
        let m = diff::compare(&a, &c).unwrap_err();
        assert_eq!(classify(&a, &m), "out item/completed / (end) B ends here");
        // A result is named by the request it answers.
        let req = |id: i64, m: &str| json!({"dir": "in", "msg": {"id": id, "method": m}});
        let res = |id: i64, v: i64| json!({"dir": "out", "msg": {"id": id, "result": {"n": [v]}}});
        let t = |v: i64| {
            let text: String = [req(1, "thread/list"), res(1, v)]
                .iter()
                .map(|l| l.to_string() + "\n")
                .collect();
            diff::masked(&text).unwrap()
        };
        let (x, y) = (t(1), t(2));
        let m = diff::compare(&x, &y).unwrap_err();
        assert_eq!(classify(&x, &m), "out result of thread/list $.result.n[]");
    }

    /// The shrinker keeps what makes the class show and drops the rest.
    #[test]
    fn the_shrinker_keeps_only_what_shows_the_class() {
        let case: Case = serde_json::from_value(json!({
            "name": "s",
            "scenario": {"turns": [
                {"steps": [{"kind": "message", "text": "a"}, {"kind": "command", "command": "ls"},
                           {"kind": "usage", "input": 3}]},
                {"steps": [{"kind": "message", "text": "b"}]}]},
            "inputs": ["one", "two"],
            "approval_policy": "never",
            "thread_params": {"ephemeral": true}
        }))
        .unwrap();
        let has_command = |c: &Case| c.scenario.to_string().contains("\"command\"");
        let (small, trials) = shrink(&case, 100, has_command);
        assert!(has_command(&small));
        assert!(trials <= 100);
        let turns = small.scenario["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 1, "{small:?}");
        assert_eq!(
            turns[0]["steps"],
            json!([{"kind": "command", "command": "ls"}]),
            "{small:?}"
        );
        assert!(small.thread_params.is_empty());
        // A budget of one trial stops after one.
        let (_, trials) = shrink(&case, 1, has_command);
        assert_eq!(trials, 1);
    }

    /// The per-method tally counts each session once per method it sent, by its verdict: a
    /// differing session is drawn but not identical, a race is counted apart.
    #[test]
    fn the_method_tally_counts_sessions_by_verdict() {
        let read = json!({"method": "config/read", "params": {}});
        let models = json!({"method": "model/list", "params": {}});
        let cases = vec![
            case("a", json!([read.clone(), read.clone()])),
            case("b", json!([read.clone(), models.clone()])),
            case("c", json!([models.clone()])),
            case("d", json!([read.clone()])),
        ];
        let differs = Verdict::Differs {
            class: "x".into(),
            detail: String::new(),
        };
        let race = Verdict::RealRace {
            class: "y".into(),
            detail: String::new(),
        };
        let results = vec![
            (0, Verdict::Identical),
            (1, differs),
            (2, Verdict::Identical),
            (3, race),
        ];
        let t = method_tally("0.171.0", &cases, &results);
        // No method's own answer named ("x"): the difference is none's own.
        assert_eq!(t["config/read"], [1, 1, 3, 0]);
        assert_eq!(t["model/list"], [1, 0, 2, 0]);
        // Every session sends the harness's own requests.
        assert_eq!(t["turn/start"], [2, 1, 4, 0]);
        // Not a client method of the schema: not tallied.
        assert!(!t.contains_key("initialized"));
    }
}
