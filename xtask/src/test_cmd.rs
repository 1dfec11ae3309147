//! `cargo xtask test`: the README's test command. Installs the real `codex` binary of every
//! supported version (npm, into `target/codex-cache/<V>/`), runs every workspace test with
//! `CODEX_WIRE_CODEX` pointing at the newest and, beside them, the README's exactness tables and,
//! per version, the live differential conformance run and the ignored-path oracle against that
//! version's binary; then the turn corpus (real server with the scripted model against the
//! fake), and a fixed-seed run of generated sessions (`fidelity`).

use std::path::PathBuf;

pub fn main(args: &[String]) -> Result<(), String> {
    let versions = crate::codex_bin::versions()?;
    let (live_versions, args) = live_versions(args, &versions)?;
    let args = &args[..];
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
    let live_bins: Vec<_> = bins
        .iter()
        .filter(|(v, _)| live_versions.contains(v))
        .cloned()
        .collect();
    let live = live_beside_the_tests(&live_bins)?;
    let newest = &bins.last().expect("versions() is never empty").1;
    let status = codex_wire::harness::cargo()
        .args(["test", "--workspace"])
        .args(args)
        .env("CODEX_WIRE_CODEX", newest)
        .current_dir(crate::codex_bin::repo_root())
        .status()
        .map_err(|e| format!("running cargo test: {e}"));
    let live = live
        .join()
        .map_err(|_| "the live checks' thread panicked".to_string())?;
    let status = status?;
    // The live checks' output, whole and in order, after the tests' (they ran side by side).
    let mut failed = Vec::new();
    for (title, log, outcome) in &live {
        println!("== {title}");
        let text = std::fs::read(log).unwrap_or_default();
        let _ = std::fs::remove_file(log);
        print!("{}", String::from_utf8_lossy(&text));
        match outcome {
            Ok(s) if s.success() => {}
            Ok(s) => failed.push(format!("{title}: {s}")),
            Err(e) => failed.push(format!("{title}: {e}")),
        }
    }
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    if !failed.is_empty() {
        return Err(format!("live checks failed: {}", failed.join("; ")));
    }
    // The live turn corpus plays on the newest version.
    if live_versions.contains(&bins.last().expect("versions() is never empty").0) {
        println!("== live turn corpus: the real server (scripted model) against the fake");
        crate::turns::main(&[])?;
    }
    // Every supported version: the fake plays each as that version's real server does.
    let mut failed = Vec::new();
    for version in live_versions {
        println!(
            "== live fidelity on {version}: generated sessions, the real server against the fake"
        );
        if let Err(e) = crate::fidelity::main(&[
            "--seed".into(),
            FIDELITY_SEED.to_string(),
            "--sessions".into(),
            FIDELITY_SESSIONS.to_string(),
            "--version".into(),
            version.clone(),
            // The methods the fake answers by rule so far; the wide net is measured apart
            // (docs/turns.md) until every method is.
            "--net".into(),
            "turns".into(),
            "--no-shrink".into(),
            "--require".into(),
            FIDELITY_REQUIRED.to_string(),
        ]) {
            failed.push(format!("{version}: {e}"));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("live fidelity: {}", failed.join("; ")))
    }
}

/// `--live-versions V[,V…]` (first): the live checks against the real server run for those
/// versions only; every offline test runs whatever it says. `add-version V --try` passes V: its
/// copy differs from the tree CI has just checked live only by V's files, and re-running the other
/// versions' live checks there cost CI a quarter of an hour for nothing they could show.
fn live_versions(
    args: &[String],
    versions: &[String],
) -> Result<(Vec<String>, Vec<String>), String> {
    let Some(pos) = args.iter().position(|a| a == "--live-versions") else {
        return Ok((versions.to_vec(), args.to_vec()));
    };
    let list = args
        .get(pos + 1)
        .ok_or("--live-versions needs a comma-separated list of versions")?;
    let chosen: Vec<String> = list.split(',').map(str::to_string).collect();
    if let Some(v) = chosen.iter().find(|v| !versions.contains(v)) {
        return Err(format!("--live-versions: codex {v} is not in schema/"));
    }
    let mut rest = args.to_vec();
    rest.drain(pos..=pos + 1);
    Ok((chosen, rest))
}

type LiveStep = (String, PathBuf, std::io::Result<std::process::ExitStatus>);

/// The checks that need only the recorded corpora and the real binaries (the exactness tables,
/// each version's live conformance and oracle), each a run of this xtask, one after another in a
/// thread while `cargo test` runs: a whole run kept the two cores 1.33 busy on average, and
/// these runs are mostly servers starting (fresh clones the same hour: tests and live runs 5 min 33 s
/// together against 6 min 34 s one after the other). Their timing cannot change a verdict: a reply is
/// waited for up to 20 s, and an accepted request is judged by its acceptance alone. The turn
/// corpus and the fidelity run (which compare the real server's timing) run after, alone.
fn live_beside_the_tests(
    bins: &[(String, PathBuf)],
) -> Result<std::thread::JoinHandle<Vec<LiveStep>>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this xtask's path: {e}"))?;
    let mut steps: Vec<(String, Vec<String>)> = vec![
        (
            "README exactness tables against the recorded corpora".into(),
            vec!["exactness".into(), "--check".into()],
        ),
        (
            "the fake's answer times against the recordings".into(),
            vec!["latency".into(), "--check".into()],
        ),
    ];
    for (v, codex) in bins {
        steps.push((
            format!(
                "codex {v}: live differential conformance against {}",
                codex.display()
            ),
            vec![
                "conformance".into(),
                "--version".into(),
                v.clone(),
                "--codex".into(),
                codex.display().to_string(),
            ],
        ));
        steps.push((
            format!("codex {v}: live ignored-path oracle"),
            vec!["oracle".into(), "--version".into(), v.clone()],
        ));
    }
    let logs = crate::codex_bin::repo_root().join("target/xtask-test");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    Ok(std::thread::spawn(move || {
        let mut done = Vec::new();
        for (i, (title, args)) in steps.into_iter().enumerate() {
            let log = logs.join(format!("live-{i}.log"));
            let outcome = std::fs::File::create(&log).and_then(|out| {
                let err = out.try_clone()?;
                std::process::Command::new(&exe)
                    .args(&args)
                    .current_dir(crate::codex_bin::repo_root())
                    .stdin(std::process::Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .status()
            });
            done.push((title, log, outcome));
        }
        done
    }))
}

/// The live fidelity run of `cargo xtask test`: a fixed seed, sized to about a minute; every
/// session the real server agrees with itself on must be identical (the strict verdict: equal to
/// one of its real runs); the real server's own races are reported apart (docs/turns.md).
const FIDELITY_SEED: u64 = 20261202;
const FIDELITY_SESSIONS: usize = 30;
const FIDELITY_REQUIRED: f64 = 100.0;

#[cfg(test)]
mod tests {
    use super::live_versions;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn live_versions_are_taken_out_of_the_test_arguments() {
        let all = s(&["0.163.0", "0.168.0", "0.171.0"]);
        let (live, rest) = live_versions(&s(&["--live-versions", "0.168.0", "--", "-q"]), &all)
            .expect("a listed version");
        assert_eq!(live, s(&["0.168.0"]));
        assert_eq!(rest, s(&["--", "-q"]));
        let (live, rest) = live_versions(&s(&["-q"]), &all).expect("no option");
        assert_eq!(live, all);
        assert_eq!(rest, s(&["-q"]));
        // A version the tree does not carry, or no list, is refused: never a silent "none".
        assert!(live_versions(&s(&["--live-versions", "0.1.0"]), &all).is_err());
        assert!(live_versions(&s(&["--live-versions"]), &all).is_err());
    }
}
