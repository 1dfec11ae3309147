//! `codex-wire validate`: check captured client→server traffic, one JSON message per line.

use crate::{Outcome, Session};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: codex-wire validate [--format json] [FILE|-]";

/// Entry point of `codex-wire validate ARGS…`.
pub fn main(args: &[String]) -> ExitCode {
    let mut input: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--format" => match it.next().map(String::as_str) {
                Some("json") => {}
                _ => {
                    eprintln!("codex-wire: --format takes `json`\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            s if input.is_none() => input = Some(s),
            s => {
                eprintln!("codex-wire: unexpected argument `{s}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let reader: Box<dyn Read> = match input {
        None | Some("-") => Box::new(std::io::stdin()),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("codex-wire: cannot read {path}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let mut reader = BufReader::new(reader);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut session = Session::new();
    let mut findings = false;
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("codex-wire: read error: {e}");
                return ExitCode::from(2);
            }
        }
        n += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let v = session.feed(line);
        findings |= !v.is_clean();
        let record = serde_json::json!({
            "line": n,
            "kind": v.kind.as_str(),
            "id": v.id,
            "method": v.method,
            "error": v.error().map(|e| e.error_object()),
            "ignored": v.ignored,
            "closes": v.outcome == Outcome::Close,
        });
        if writeln!(out, "{record}").is_err() {
            return ExitCode::from(2);
        }
        if v.outcome == Outcome::Close {
            break;
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    if findings {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
