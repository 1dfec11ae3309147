//! The npm packages are self-contained: built by `cargo xtask npm` (here `--debug`, which reuses
//! this test build), installed with no network into a fresh directory outside the checkout, the
//! `codex-wire` launcher runs, the step builders pass the cases of `clients/steps.json` (the ones
//! the Python helpers pass), and a Node test suite (`tests/npm/`, Node's own runner) drives the
//! fake through a raw stdio client: a clean client passes, one sending a field the real server
//! drops fails naming the path, and the same turn in real mode (the real codex behind the scripted
//! model) shows the client the same notifications. Needs Node, npm and the real binary.

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command, what: &str) -> (bool, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run (Node and npm are needed): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn ok(cmd: &mut Command, what: &str) -> String {
    let (success, text) = run(cmd, what);
    assert!(success, "{what} failed:\n{text}");
    text
}

#[test]
fn the_npm_package_installs_offline_and_its_helper_checks_a_client() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ok(
        codex_wire::harness::cargo()
            .args(["xtask", "npm", "--debug"])
            .current_dir(root),
        "cargo xtask npm --debug",
    );
    let version = env!("CARGO_PKG_VERSION");
    let npm = root.join("target/npm");
    let main = npm.join(format!("codex-wire-{version}.tgz"));
    let platform = std::fs::read_dir(&npm)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with("codex-wire-") && name != format!("codex-wire-{version}.tgz")
        })
        .expect("a platform package");
    assert!(main.is_file(), "no {}", main.display());

    // A fresh project outside the checkout: nothing of the repo is reachable but the tarballs.
    let work = std::env::temp_dir().join(format!("codex-wire-npm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("package.json"),
        r#"{"name": "client-suite", "private": true}"#,
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    ok(
        Command::new("npm")
            .args(["install", "--offline", "--no-audit", "--no-fund"])
            .arg(&platform)
            .arg(&main)
            .current_dir(&work),
        "npm install --offline",
    );
    eprintln!("npm install: {:.1}s", t0.elapsed().as_secs_f64());

    let out = ok(
        Command::new(work.join("node_modules/.bin/codex-wire"))
            .arg("--version")
            .env_remove("CODEX_WIRE_BIN"),
        "codex-wire --version",
    );
    assert_eq!(out.trim(), format!("codex-wire {version}"));
    let out = ok(
        Command::new("npx")
            .args(["--offline", "codex-wire", "versions"])
            .env_remove("CODEX_WIRE_BIN")
            .current_dir(&work),
        "npx codex-wire versions",
    );
    let newest = codex_wire::newest().version;
    assert!(out.contains(newest), "{out}");

    for f in [
        "client.js",
        "fake.test.js",
        "steps.test.js",
        "dirty.test.js",
        "install.test.js",
    ] {
        std::fs::copy(root.join("tests/npm").join(f), work.join(f)).unwrap();
    }
    // Real mode runs the real binary; this test never passes without it.
    let real = codex_wire::harness::real_codex(root).unwrap_or_else(|e| panic!("{e}"));
    let node = |file: &str| {
        let mut cmd = Command::new("node");
        cmd.args(["--test", file])
            .env_remove("CODEX_WIRE_BIN")
            .env("CODEX_WIRE_STEPS_JSON", root.join("clients/steps.json"))
            .env(
                "CODEX_WIRE_INSTALL_CASES",
                root.join("clients/install_cases.json"),
            )
            .env("CODEX_WIRE_REAL_CODEX", &real)
            .current_dir(&work);
        cmd
    };
    for file in ["steps.test.js", "fake.test.js", "install.test.js"] {
        let text = ok(&mut node(file), file);
        assert!(text.contains("# fail 0"), "{file}:\n{text}");
        assert!(!text.contains("# pass 0"), "{file} ran no test:\n{text}");
    }
    let (success, text) = run(&mut node("dirty.test.js"), "dirty.test.js");
    assert!(
        !success,
        "a client sending a dropped field must fail:\n{text}"
    );
    assert!(
        text.contains("ignored by the real server: $.params.temperature (in thread/start)"),
        "the failure names the path:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
