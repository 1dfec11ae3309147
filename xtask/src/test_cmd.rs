//! `cargo xtask test`: the README's test command. Installs the pinned real `codex` binary (npm,
//! into `target/codex-cache/`), runs every workspace test with `CODEX_WIRE_CODEX` pointing at
//! it, then the live differential conformance run, the ignored-path oracle and the turn
//! corpus (real server with the scripted model against the fake) against it.

use std::process::Command;

pub fn main(args: &[String]) -> Result<(), String> {
    let version = crate::codex_bin::pinned_version()?;
    let codex = crate::codex_bin::ensure_codex(&version, None)?;
    println!("real codex: {}", codex.display());
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["test", "--workspace"])
        .args(args)
        .env("CODEX_WIRE_CODEX", &codex)
        .current_dir(crate::codex_bin::repo_root())
        .status()
        .map_err(|e| format!("running cargo test: {e}"))?;
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    println!(
        "== live differential conformance against {}",
        codex.display()
    );
    crate::conformance::main(&["--codex".to_string(), codex.display().to_string()])?;
    println!("== live ignored-path oracle");
    crate::oracle::main(&[])?;
    println!("== live turn corpus: the real server (scripted model) against the fake");
    crate::turns::main(&[])
}
