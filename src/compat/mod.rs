//! `codex-wire compat FILE…`: a capture judged by every supported codex release at once.
//!
//! Each release judges every line exactly as `codex-wire validate --codex-version V` does (the
//! same [`validate::run_file`], its JSON records read back), so the per-release counts are
//! validate's. A line whose findings differ between releases (an error on one, an ignored field
//! on another, clean on a third) is listed with each release's verdict and the reason, computed
//! from the releases' own schema bundles ([`crate::Protocol::bundle`], what `cargo xtask schema
//! --diff A B` reads for `docs/changelog/`, which an installed binary does not have): the line is
//! walked against each bundle, and what the walks disagree on is the reason — a method, field or
//! enum variant one release does not know (and the release that added or removed it), a field
//! required by one and not another, an `experimentalApi` gate, the variant list an error quotes.
//!
//! Only findings count (as validate counts them): keys a server line carries beyond a release's
//! schema are not findings, so they make no change either.

mod judge;
mod reasons;
mod report;
mod schema;
mod verdict;

use crate::validate::{self, input::Format, report::OutFormat, Config};
use judge::{judge, Source};
use report::{human, json_report};
use std::io::{self, Read, Write};
use std::process::ExitCode;
use verdict::Counts;

/// Judge captures by every supported codex release: per-release counts, then the lines whose
/// verdict changes between releases, each with the reason.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit: 0 every line clean on every release, 1 a finding on some release, \
2 usage or I/O error."
)]
pub struct Cli {
    /// Output
    #[arg(long, value_enum, default_value = "human")]
    pub format: OutFormat,
    /// Input format (default: detected per file)
    #[arg(long, value_enum)]
    pub input: Option<Format>,
    /// Ignored field paths the team sends knowingly (repeatable), as `validate` reads them
    #[arg(long = "allow-ignored", value_name = "GLOB")]
    pub allow_ignored: Vec<String>,
    /// Worker threads of each release's run (default: the number of cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Capture files (`-` or none: standard input)
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
}

fn note(what: std::fmt::Arguments) {
    let _ = writeln!(io::stderr(), "codex-wire compat: {what}");
}

/// Entry point of `codex-wire compat`.
pub fn main(cli: Cli) -> ExitCode {
    let releases = crate::versions();
    let mut base = Config {
        format: OutFormat::Json,
        color: false,
        allow: cli
            .allow_ignored
            .iter()
            .map(|g| validate::glob::Glob::new(g))
            .collect(),
        input: cli.input,
        progress: false,
        protocol: None,
        ..Config::default()
    };
    if let Some(n) = cli.jobs {
        base.jobs = usize::from(n);
    }
    let mut files = cli.files;
    if files.is_empty() {
        files.push("-".into());
    }
    let mut counts = vec![Counts::default(); releases.len()];
    let mut changes = Vec::new();
    let mut failed = false;
    for file in &files {
        let source = if file == "-" {
            let mut buf = Vec::new();
            if let Err(e) = io::stdin().lock().read_to_end(&mut buf) {
                note(format_args!("cannot read <stdin>: {e}"));
                failed = true;
                continue;
            }
            Source::Stdin(buf)
        } else {
            match std::fs::File::open(file).and_then(|f| f.metadata()) {
                Ok(m) if m.is_dir() => {
                    note(format_args!("cannot read {file}: a directory"));
                    failed = true;
                    continue;
                }
                Ok(_) => Source::File(file.clone()),
                Err(e) => {
                    note(format_args!("cannot read {file}: {e}"));
                    failed = true;
                    continue;
                }
            }
        };
        match judge(&source, &base, releases, &mut counts) {
            Ok(c) => changes.extend(c),
            Err(e) => {
                note(format_args!("{}: {e}", source.name()));
                failed = true;
            }
        }
    }
    let clean = !failed && counts.iter().all(|c| c.findings == 0);
    let mut out = io::BufWriter::new(io::stdout().lock());
    let written = match cli.format {
        OutFormat::Human => human(&mut out, releases, &counts, &changes, files.len()),
        OutFormat::Json => {
            let doc = json_report(releases, &counts, &changes, clean);
            writeln!(out, "{doc}")
        }
    };
    if written.and_then(|()| out.flush()).is_err() || failed {
        ExitCode::from(2)
    } else if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
