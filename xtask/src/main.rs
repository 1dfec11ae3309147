//! `cargo xtask <command>`: project automation.
//!
//! - `conformance [--record] [--codex PATH] [--limit N] [--dry-run]`: record the real server's
//!   answers into `tests/corpus/conformance.jsonl` (`--record`; with `--limit`, a subset into
//!   `target/conformance-limited.jsonl`), or replay the corpus live and report how many recorded
//!   expectations still hold. `--dry-run` prints the generated cases without running them.
//! - `probe [--codex PATH] [--write]`: facts the schema bundle lacks, asked of the binary
//!   (printed, or written to `schema/facts/probed.json`).
//! - `test`: install the pinned binary, run every test, then the live differential conformance.
//! - `turns [--record] [NAME…]`: run the turn corpus against the real server (scripted model)
//!   and the fake; `--record` keeps the real transcripts in `tests/corpus/turns/`.
//! - `schema [--version V | --codex PATH] [--check]`: regenerate (or verify) `schema/` from the
//!   real binary: the JSON schema bundle, `facts/ts.json`, `facts/probed.json`, VERSION, PROVENANCE.md.

mod codex_bin;
mod conformance;
mod gen;
mod oracle;
mod probe;
mod schema_cmd;
mod server;
mod test_cmd;
mod ts_facts;
mod turns;

const USAGE: &str = "usage: cargo xtask <command>
  conformance [--record] [--codex PATH] [--limit N] [--dry-run]
  probe [--codex PATH] [--write]
  schema [--version V | --codex PATH] [--check]
  oracle [--record]        ignored-path oracle against the real server
  turns [--record] [NAME..] the turn corpus: real server (scripted model) vs fake
  test [cargo test args]   install the pinned codex, run all tests and the live differential";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    let result = match args.first().map(String::as_str) {
        Some("conformance") => conformance::main(rest),
        Some("probe") => probe::main(rest),
        Some("schema") => schema_cmd::run(rest),
        Some("test") => test_cmd::main(rest),
        Some("oracle") => oracle::main(rest),
        Some("turns") => turns::main(rest),
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
