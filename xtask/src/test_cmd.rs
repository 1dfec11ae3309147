//! `cargo xtask test`: the README's test command. Installs the real `codex` binary of every
//! supported version (npm, into `target/codex-cache/<V>/`), runs every workspace test with
//! `CODEX_WIRE_CODEX` pointing at the newest, then, per version, the live differential
//! conformance run and the ignored-path oracle against that version's binary, the turn corpus
//! (real server with the scripted model against the fake), and a fixed-seed run of generated
//! sessions (`fidelity`).

pub fn main(args: &[String]) -> Result<(), String> {
    let versions = crate::codex_bin::versions()?;
    // The tests build while npm installs the binaries (on a fresh clone, both take a while).
    let prebuild = args.is_empty().then(|| {
        std::thread::spawn(|| {
            codex_wire::harness::cargo()
                .args(["test", "--workspace", "--no-run", "--quiet"])
                .current_dir(crate::codex_bin::repo_root())
                .status()
        })
    });
    let mut bins = Vec::new();
    for v in &versions {
        let codex = crate::codex_bin::ensure_codex(v, None)?;
        println!("real codex {v}: {}", codex.display());
        bins.push((v.clone(), codex));
    }
    // Its failure shows again, with the errors, in the run below.
    let _ = prebuild.map(std::thread::JoinHandle::join);
    let newest = &bins.last().expect("versions() is never empty").1;
    let status = codex_wire::harness::cargo()
        .args(["test", "--workspace"])
        .args(args)
        .env("CODEX_WIRE_CODEX", newest)
        .current_dir(crate::codex_bin::repo_root())
        .status()
        .map_err(|e| format!("running cargo test: {e}"))?;
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    println!("== README exactness tables against the recorded corpora");
    crate::exactness::main(&["--check".into()])?;
    for (v, codex) in &bins {
        println!(
            "== codex {v}: live differential conformance against {}",
            codex.display()
        );
        crate::conformance::main(&[
            "--version".into(),
            v.clone(),
            "--codex".into(),
            codex.display().to_string(),
        ])?;
        println!("== codex {v}: live ignored-path oracle");
        crate::oracle::main(&["--version".into(), v.clone()])?;
    }
    println!("== live turn corpus: the real server (scripted model) against the fake");
    crate::turns::main(&[])?;
    println!("== live fidelity: generated sessions, the real server against the fake");
    crate::fidelity::main(&[
        "--seed".into(),
        FIDELITY_SEED.to_string(),
        "--sessions".into(),
        FIDELITY_SESSIONS.to_string(),
        "--no-shrink".into(),
        "--require".into(),
        FIDELITY_REQUIRED.to_string(),
    ])
}

/// The live fidelity run of `cargo xtask test`: a fixed seed, sized to about a minute; the
/// share required leaves room for the real server's own races and timing (see docs/turns.md).
const FIDELITY_SEED: u64 = 20261202;
const FIDELITY_SESSIONS: usize = 30;
const FIDELITY_REQUIRED: f64 = 90.0;
