//! One input judged by every release: validate run once per release (a file read again for
//! each, standard input read once), and the lines whose findings differ, with their reasons.

use super::reasons::{reasons, Reason};
use super::verdict::{Counts, Seen, Sink};
use crate::validate::{
    self,
    input::{self, Batcher, Entry, Format},
    report::Stats,
    Config,
};
use crate::Protocol;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Read, Write};

/// An input: a file (read again for each release) or standard input (read once).
pub(super) enum Source {
    File(String),
    Stdin(Vec<u8>),
}

impl Source {
    pub(super) fn name(&self) -> &str {
        match self {
            Source::File(f) => f,
            Source::Stdin(_) => "<stdin>",
        }
    }

    fn judge(&self, cfg: &Config, out: &mut dyn Write) -> io::Result<Stats> {
        match self {
            Source::File(f) => validate::run_file(std::fs::File::open(f)?, f, cfg, out),
            Source::Stdin(b) => validate::run(
                io::Cursor::new(&b[..]),
                Some(b.len() as u64),
                "<stdin>",
                cfg,
                out,
            ),
        }
    }

    /// The message bytes of the wanted lines (a transcript entry's `msg`), for the reasons.
    fn texts(
        &self,
        forced: Option<Format>,
        want: &BTreeSet<u64>,
    ) -> io::Result<HashMap<u64, Vec<u8>>> {
        match self {
            Source::File(f) => pick(
                Batcher::for_file(std::fs::File::open(f)?, 256 * 1024),
                forced,
                want,
            ),
            Source::Stdin(b) => pick(Batcher::new(&b[..], 256 * 1024), forced, want),
        }
    }
}

fn pick<R: Read>(
    mut batcher: Batcher<R>,
    forced: Option<Format>,
    want: &BTreeSet<u64>,
) -> io::Result<HashMap<u64, Vec<u8>>> {
    let mut format = forced;
    let mut out = HashMap::new();
    let last = want.iter().next_back().copied().unwrap_or(0);
    while let Some(mut batch) = batcher.next_batch()? {
        if batch.ends.is_empty() {
            batch.index();
        }
        for (n, line) in batch.lines() {
            if format.is_none() && !line.iter().all(u8::is_ascii_whitespace) {
                // As validate decides it: the first non-blank line.
                format = Some(input::detect(line));
            }
            if !want.contains(&n) {
                continue;
            }
            let bytes = match format {
                Some(Format::Transcript) => match input::entry(line) {
                    Entry::Message { bytes, .. } => bytes.into_owned(),
                    _ => continue,
                },
                _ => line.to_vec(),
            };
            out.insert(n, bytes);
        }
        if batch.first + batch.ends.len() as u64 > last {
            break;
        }
    }
    Ok(out)
}

/// A line whose verdict differs between releases.
pub(super) struct Change {
    pub(super) file: String,
    pub(super) line: u64,
    pub(super) seen: Seen,
    pub(super) reasons: Vec<Reason>,
}

/// Every release's run over one input; the lines whose findings differ, with their reasons.
pub(super) fn judge(
    source: &Source,
    base: &Config,
    releases: &[&'static Protocol],
    counts: &mut [Counts],
) -> io::Result<Vec<Change>> {
    let mut seen = BTreeMap::new();
    for (i, &p) in releases.iter().enumerate() {
        let cfg = Config {
            protocol: Some(p),
            ..base.clone()
        };
        let mut c = Counts::default();
        let mut sink = Sink {
            buf: Vec::new(),
            release: i,
            releases: releases.len(),
            seen: &mut seen,
            counts: &mut c,
        };
        let stats = source.judge(&cfg, &mut sink)?;
        sink.finish()?;
        c.lines = stats.rows.iter().map(|(_, r)| r.lines).sum::<u64>() + stats.bad_entries;
        c.findings = stats.findings();
        let t = &mut counts[i];
        t.lines += c.lines;
        t.findings += c.findings;
        t.errors += c.errors;
        t.violations += c.violations;
        t.ignored += c.ignored;
        t.missing += c.missing;
    }
    let changed: Vec<(u64, Seen)> = seen
        .into_iter()
        .filter(|(_, s)| s.verdicts.windows(2).any(|w| w[0] != w[1]))
        .collect();
    if changed.is_empty() {
        return Ok(Vec::new());
    }
    let want: BTreeSet<u64> = changed.iter().map(|(n, _)| *n).collect();
    let texts = source.texts(base.input, &want)?;
    Ok(changed
        .into_iter()
        .map(|(line, seen)| {
            let value = texts
                .get(&line)
                .and_then(|t| serde_json::from_slice::<Value>(t).ok());
            let reasons = value
                .map(|v| reasons(&v, &seen, releases))
                .unwrap_or_default();
            Change {
                file: source.name().to_string(),
                line,
                seen,
                reasons,
            }
        })
        .collect())
}
