//! `codex-wire`: a thin CLI over the library.

use std::process::ExitCode;

const USAGE: &str = "usage: codex-wire <command>
  validate [OPTIONS] [FILE|-]...       what the real server makes of captured traffic
  proxy [--transcript FILE] -- CMD...  run CMD (a real `codex app-server`) behind a checking proxy
  fake [--state-dir DIR] app-server    a scriptable fake `codex app-server` (also as `codex`)";

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let argv0 = argv.next().unwrap_or_default();
    let args: Vec<String> = argv.collect();
    // Installed or linked as `codex`, the binary is the fake.
    if std::path::Path::new(&argv0).file_name() == Some("codex".as_ref()) {
        return codex_wire::fake::main(&args);
    }
    match args.first().map(String::as_str) {
        Some("validate") => codex_wire::validate::main(&args[1..]),
        Some("proxy") => codex_wire::proxy::main(&args[1..]),
        Some("fake") => codex_wire::fake::main(&args[1..]),
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
