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

/// The tables, as Markdown.
pub fn tables() -> Result<String, String> {
    let versions = crate::codex_bin::versions()?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| codex | differential conformance (generated cases over every method) | ignored-path oracle (poisoned keys, notification params) |"
    );
    let _ = writeln!(out, "|---|---|---|");
    let mut corpora = Vec::new();
    for v in &versions {
        let conf = read_corpus(&crate::conformance::corpus_path(v))?;
        let oracle = read_corpus(&crate::oracle::corpus_path(v))?;
        let (c_ok, c_all) = totals(&compare(&conf, &|l| engine_predict(v, l)));
        let (o_ok, o_all) = totals(&compare(&oracle, &|l| engine_predict(v, l)));
        let _ = writeln!(
            out,
            "| {v} | {} / {} byte-identical | {} / {} agree |",
            thousands(c_ok),
            thousands(c_all),
            thousands(o_ok),
            thousands(o_all)
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

pub fn main(args: &[String]) -> Result<(), String> {
    let mode = args.first().map(String::as_str);
    let text = tables()?;
    let path = crate::codex_bin::repo_root().join("README.md");
    let readme = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(a), Some(b)) = (readme.find(BEGIN), readme.find(END)) else {
        return Err(format!("README.md lacks the markers {BEGIN} … {END}"));
    };
    let fresh = format!("{}{BEGIN}\n{text}{}", &readme[..a], &readme[b..]);
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
