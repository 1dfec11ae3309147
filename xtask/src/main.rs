//! `cargo xtask <command>`: project automation.
//!
//! Every supported codex version V has `schema/V/` and `tests/corpus/V/`; `--version V` picks
//! one (default: the newest).
//! - `conformance [--record] [--version V] [--codex PATH] [--limit N] [--dry-run]`: record the
//!   real server's answers into `tests/corpus/V/conformance.jsonl` (`--record`; with `--limit`, a
//!   subset under `target/`), or replay the corpus live and report how many recorded
//!   expectations still hold. `--dry-run` prints the generated cases without running them.
//! - `probe [--version V] [--codex PATH] [--write]`: facts the schema bundle lacks, asked of the
//!   binary (printed, or written to `schema/V/facts/probed.json`).
//! - `oracle [--record] [--version V]`: the ignored-path oracle (`tests/corpus/V/oracle.jsonl`).
//! - `sessions [--version V]`: the real server's side of the scripts in `tests/corpus/sessions/`.
//! - `exactness [--write | --check]`: the README's exactness tables, from every version's corpora.
//! - `wheel [--debug|--no-pgo|--pip-check]`: the pip wheel (the binary and the pytest plugin)
//!   into `target/wheels/`; `--pip-check`: `pip wheel .` ships the same stripped binary as
//!   `--no-pgo` (a CI step).
//! - `npm [--debug|--no-pgo]`: the npm packages (the binary, the Node test helper) into
//!   `target/npm/`.
//! - `pgo`: the `dist` binary with profile-guided optimisation (what the wheel and npm ship).
//! - `add-version V [--from STEP]`: a new codex release, every step of the recipe (`add_version`).
//! - `test`: install every supported binary, run every test, then the live differentials.
//! - `turns [--record] [NAME…]`: run the turn corpus against the real server (scripted model)
//!   and the fake; `--record` keeps the real transcripts in `tests/corpus/V/turns/`.
//! - `fidelity [--seed S] [--sessions N] [--version V] [--keep] …`: generated client sessions
//!   run against the real server (scripted model) and the fake, differences classed and shrunk.
//! - `record [--version V] [NAME…]`: each turn case recorded with `codex-wire record` (the
//!   scripted model as the upstream), replayed on the fake and the real binary, compared.
//! - `schema [--version V | --codex PATH] [--check]`: add or regenerate (or verify) `schema/V/`
//!   from the real binary: the JSON schema bundle, `facts/ts.json`, `facts/probed.json`,
//!   PROVENANCE.md. `schema --diff A B`: the protocol changelog between two versions.

mod add_version;
mod changelog;
mod codex_bin;
mod config_facts;
mod conformance;
mod exactness;
mod fidelity;
mod gen;
mod latency;
mod npm;
mod oracle;
mod pgo;
mod probe;
mod races;
mod record;
mod schema_cmd;
mod server;
mod sessions;
mod test_cmd;
mod ts_facts;
mod turns;
mod wheel;

const USAGE: &str =
    "usage: cargo xtask <command>     (V: a supported codex version, default the newest)
  conformance [--record] [--version V] [--codex PATH] [--limit N] [--dry-run]
  probe [--version V] [--codex PATH] [--write]
  schema [--version V | --codex PATH] [--check]   add/refresh schema/V (all versions by default)
  schema --diff A B        the protocol changelog from codex A to codex B
  oracle [--record] [--version V]   ignored-path oracle against the real server
  sessions [--version V]   record the real server's side of tests/corpus/sessions/*.jsonl
  exactness [--write|--check]  README's exactness tables from every version's corpora
  latency [--write|--check]  the real server's answer times (src/fake/latency.json) from the recordings
  wheel [--debug|--no-pgo|--pip-check]  the pip wheel (binary + pytest plugin) into
                           target/wheels/; --pip-check: `pip wheel .` ships the same stripped
                           binary as --no-pgo
  npm [--debug|--no-pgo]   the npm packages (binary + Node test helper) into target/npm/
  pgo                      the profile-guided dist binary (what ships): train, merge, build
  add-version V [--from S] a new codex release: schema, corpora, turn facts, tables (one command)
  turns [--record] [NAME..] the turn corpus: real server (scripted model) vs fake
  fidelity [--seed S] [--sessions N] [--version V] [--keep]  generated sessions: real vs fake
  record [--version V] [NAME..]  codex-wire record over the turn corpus, replayed on both servers
  races [--version V] [--runs N] [--keep] [NAME..]  the real server against itself: diff's tolerances' evidence
  methods [--version V] [METHOD..]  every client method once on both servers: which the fake answers as codex does
  test [cargo test args]   install every supported codex, run all tests and the live differentials";

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
        Some("sessions") => sessions::main(rest),
        Some("exactness") => exactness::main(rest),
        Some("latency") => latency::main(rest),
        Some("wheel") => wheel::main(rest),
        Some("npm") => npm::main(rest),
        Some("pgo") => pgo::main(rest),
        Some("add-version") => add_version::main(rest),
        Some("fidelity") => fidelity::main(rest),
        Some("record") => record::main(rest),
        Some("races") => races::main(rest),
        Some("methods") => fidelity::methods::main(rest),
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
