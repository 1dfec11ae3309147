//! `codex-wire`: a thin CLI over the library.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Knows the `codex app-server` JSON-RPC protocol as exactly as the real server does.
#[derive(Debug, Parser)]
#[command(name = "codex-wire", version, propagate_version = false)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// What the real server makes of captured traffic (raw client lines or transcripts)
    Validate(codex_wire::validate::Cli),
    /// Run a real `codex app-server` behind a checking proxy
    Proxy(codex_wire::proxy::Cli),
    /// A scriptable fake `codex` (`codex-wire fake [OPTIONS] app-server`); also runs as a
    /// binary named `codex`
    Fake(Box<codex_wire::fake::Cli>),
    /// Compare two transcripts (fake, proxy or scripted runs) under the one masking rule
    Diff(codex_wire::diff::Cli),
    /// Judge captured traffic by every supported codex release: counts per release, and the
    /// lines whose verdict changes between releases, with the reason
    Compat(codex_wire::compat::Cli),
    /// A transcript as one self-contained HTML page (`codex-wire show T.jsonl -o page.html`),
    /// optionally aligned with another run (`--against`)
    Show(codex_wire::show::Cli),
    /// Serve a scenario as a scripted model (Responses API on loopback) for a real codex
    Model(codex_wire::model::Cli),
    /// Run a real `codex app-server` against the scripted model, behind the checking proxy
    /// (`codex-wire scripted --state-dir DIR -- codex app-server`)
    Scripted(codex_wire::scripted::Cli),
    /// Record a real `codex app-server` session for offline replay
    /// (`codex-wire record --out DIR -- codex app-server`)
    Record(codex_wire::record::Cli),
    /// Replay a recording on the fake or the real server and compare it with the recording
    Replay(codex_wire::replay::Cli),
    /// Create a test install (state dir, CODEX_HOME, a `codex` wrapper): what the Python and
    /// Node helpers run
    Install(codex_wire::install::Cli),
    /// What a transcript shows the client sent that the real server refuses or drops
    WireCheck(codex_wire::install::WireCli),
    /// The codex versions this build speaks, oldest first (the last is the default)
    Versions,
    /// The config.toml a test install (the Python and Node helpers) puts in CODEX_HOME: the
    /// scripted provider, on-request approvals in a writable workspace
    ConfigToml,
    /// Print a shell completion script
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    // Installed or linked as `codex`, the binary is the fake, with codex's own command line.
    if std::path::Path::new(argv.first().map_or("", String::as_str)).file_name()
        == Some("codex".as_ref())
    {
        let cli = codex_wire::fake::Cli::parse_from(&argv);
        return codex_wire::fake::main(cli, &argv[1..]);
    }
    let cli = Cli::parse_from(&argv);
    // A report cut short by its reader (`| head`) ends quietly, as other tools' do; the
    // servers keep handling a closed peer themselves, and `validate` stops with exit 2.
    if matches!(
        cli.command,
        Cmd::Diff(_) | Cmd::Compat(_) | Cmd::Versions | Cmd::ConfigToml | Cmd::Completions { .. }
    ) {
        // SAFETY: restores the default action of one signal before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match cli.command {
        Cmd::Validate(c) => codex_wire::validate::main(c),
        Cmd::Proxy(c) => codex_wire::proxy::main(c),
        Cmd::Fake(c) => codex_wire::fake::main(*c, &argv[2..]),
        Cmd::Diff(c) => codex_wire::diff::main(c),
        Cmd::Compat(c) => codex_wire::compat::main(c),
        Cmd::Show(c) => codex_wire::show::main(c),
        Cmd::Model(c) => codex_wire::model::main(c),
        Cmd::Scripted(c) => codex_wire::scripted::main(c),
        Cmd::Record(c) => codex_wire::record::main(c),
        Cmd::Replay(c) => codex_wire::replay::main(c),
        Cmd::Install(c) => codex_wire::install::main(c),
        Cmd::WireCheck(c) => codex_wire::install::wire_main(c),
        Cmd::Versions => {
            for p in codex_wire::versions() {
                println!("{}", p.version);
            }
            ExitCode::SUCCESS
        }
        Cmd::ConfigToml => {
            print!("{}", codex_wire::harness::install_config_toml());
            ExitCode::SUCCESS
        }
        Cmd::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "codex-wire",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
    }
}
