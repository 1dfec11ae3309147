//! `codex-wire`: a thin CLI over the library.

use std::process::ExitCode;

const USAGE: &str = "usage: codex-wire <command>
  validate [--format json] [FILE|-]   check captured client traffic";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("validate") => codex_wire::validate::main(&args[1..]),
        Some("--version") => {
            println!("codex-wire {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
