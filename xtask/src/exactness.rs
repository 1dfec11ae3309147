//! `cargo xtask exactness [--write | --check]`: the README's "How exact" tables, computed from
//! the recorded corpora of every supported version (offline: the engine against what each real
//! binary answered). `--write` replaces the part of README.md between the `exactness` markers;
//! `--check` fails when it is stale (`cargo xtask test` runs it), so the figures never drift
//! from the corpora after an upgrade.

use crate::conformance::{compare, engine_predict, read_corpus, Report};
use std::fmt::Write;

const BEGIN: &str = "<!-- exactness:begin (cargo xtask exactness --write) -->";
const END: &str = "<!-- exactness:end -->";

fn totals(r: &Report) -> (usize, usize) {
    r.by_category
        .values()
        .fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A version's recorded turn scenarios and how many are listed as known differences. The rest
/// are identical: `tests/turns.rs` fails on an unlisted difference and on a listed match.
fn turn_counts(version: &str) -> Result<(usize, usize), String> {
    let dir = crate::turns::corpus_dir(version);
    let read = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let all = read
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".real.jsonl"))
        .count();
    let known = std::fs::read_to_string(dir.join("known_differences.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count();
    Ok((all, known))
}

/// The tables, as Markdown.
pub fn tables() -> Result<String, String> {
    let versions = crate::codex_bin::versions()?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| codex | differential conformance (generated cases over every method) | ignored-path oracle (poisoned keys, notification params) | turn corpus (the fake's transcript against the real server's, after the masking rule) |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    let mut corpora = Vec::new();
    for v in &versions {
        let conf = read_corpus(&crate::conformance::corpus_path(v))?;
        let oracle = read_corpus(&crate::oracle::corpus_path(v))?;
        let (c_ok, c_all) = totals(&compare(&conf, &|l| engine_predict(v, l)));
        let (o_ok, o_all) = totals(&compare(&oracle, &|l| engine_predict(v, l)));
        let (t_all, t_known) = turn_counts(v)?;
        let _ = writeln!(
            out,
            "| {v} | {} / {} byte-identical | {} / {} agree | {} / {t_all} scenarios identical ({t_known} in `known_differences.txt`) |",
            thousands(c_ok),
            thousands(c_all),
            thousands(o_ok),
            thousands(o_all),
            t_all - t_known,
        );
        corpora.push(conf);
    }
    if versions.len() > 1 {
        let _ = writeln!(
            out,
            "\nWhy a client is judged by its own version: the engine of one version (rows) against \
             the conformance corpus recorded from another's real server (columns), identical cases:\n"
        );
        let _ = writeln!(out, "| engine \\ real server | {} |", versions.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(versions.len()));
        for engine in &versions {
            let cells: Vec<String> = corpora
                .iter()
                .map(|conf| {
                    let (ok, all) = totals(&compare(conf, &|l| engine_predict(engine, l)));
                    format!("{:.1} %", 100.0 * ok as f64 / all.max(1) as f64)
                })
                .collect();
            let _ = writeln!(out, "| {engine} | {} |", cells.join(" | "));
        }
    }
    Ok(out)
}

/// The README's opening sentence names the supported versions between these markers.
const VERSIONS_BEGIN: &str = "<!-- versions -->";
const VERSIONS_END: &str = "<!-- /versions -->";

/// `readme` with the version list (`**A**, **B** and **C**`) written from `schema/`.
fn with_version_list(readme: &str) -> Result<String, String> {
    let (Some(a), Some(b)) = (readme.find(VERSIONS_BEGIN), readme.find(VERSIONS_END)) else {
        return Err(format!(
            "README.md lacks the markers {VERSIONS_BEGIN} … {VERSIONS_END}"
        ));
    };
    let versions: Vec<String> = crate::codex_bin::versions()?
        .iter()
        .map(|v| format!("**{v}**"))
        .collect();
    let list = match versions.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    Ok(format!(
        "{}{VERSIONS_BEGIN}{list}{}",
        &readme[..a],
        &readme[b..]
    ))
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mode = args.first().map(String::as_str);
    let text = tables()?;
    let path = crate::codex_bin::repo_root().join("README.md");
    let readme = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(a), Some(b)) = (readme.find(BEGIN), readme.find(END)) else {
        return Err(format!("README.md lacks the markers {BEGIN} … {END}"));
    };
    let fresh = format!("{}{BEGIN}\n{text}{}", &readme[..a], &readme[b..]);
    let fresh = with_version_list(&fresh)?;
    match mode {
        None => print!("{text}"),
        Some("--write") => {
            std::fs::write(&path, &fresh).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("README.md: exactness tables written");
        }
        Some("--check") if fresh == readme => eprintln!("README.md: exactness tables up to date"),
        Some("--check") => return Err(
            "README.md's exactness tables differ from the corpora: cargo xtask exactness --write"
                .into(),
        ),
        Some(other) => return Err(format!("exactness: unknown argument {other:?}")),
    }
    Ok(())
}
