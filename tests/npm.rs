//! The npm packages are self-contained: built by `cargo xtask npm` (here `--debug`, which reuses
//! this test build), installed with no network into fresh directories outside the checkout, and
//! driven by Node suites (`tests/npm/`):
//! - the `codex-wire` launcher runs, the step builders pass the cases of `clients/steps.json` (the
//!   ones the Python helpers pass), and Node's runner drives the fake through a raw stdio client:
//!   a clean client passes, one sending a field the real server drops fails naming the path, and
//!   the same turn in real mode (the real codex behind the scripted model) shows the client the
//!   same notifications;
//! - one suite (`tests/npm/suite/helper.body.js`) as an ES module and as CommonJS, each importing
//!   every name by name (the builders of `clients/steps.json`, everything `index.js` exports),
//!   under Node's runner, vitest and jest, its versioned tests once per supported codex release
//!   (`codexTest(test, { versions: "all" })`); a builder the ES module entry lacks fails it;
//! - the types, under TypeScript's `node16` (ES module and CommonJS) and `bundler` resolutions;
//! - a real client library from the registry (`ai-sdk-provider-codex-cli`, which spawns `codex
//!   app-server` itself), unchanged, on the fake: one turn and one approval per release, with the
//!   wire check on.
//!
//! The runners, TypeScript and the client library come from the npm registry at the versions
//! `tests/npm/tools/*/package-lock.json` pin, installed once into `target/npm-tools/` (the first
//! run needs the registry; later ones reuse the install and need no network). Needs Node, npm and
//! the real binary; nothing here is skipped: a missing tool fails the test, saying which.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

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

/// The two tarballs (platform package, main package), packed once per test process.
fn tarballs() -> &'static [PathBuf; 2] {
    static PACKED: OnceLock<[PathBuf; 2]> = OnceLock::new();
    PACKED.get_or_init(|| {
        let t0 = Instant::now();
        ok(
            codex_wire::harness::cargo()
                .args(["xtask", "npm", "--debug"])
                .current_dir(repo()),
            "cargo xtask npm --debug",
        );
        eprintln!(
            "cargo xtask npm --debug: {:.1}s",
            t0.elapsed().as_secs_f64()
        );
        let version = env!("CARGO_PKG_VERSION");
        let npm = repo().join("target/npm");
        let main = npm.join(format!("codex-wire-{version}.tgz"));
        let platform = std::fs::read_dir(&npm)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                name.starts_with("codex-wire-")
                    && name.ends_with(&format!("-{version}.tgz"))
                    && name != format!("codex-wire-{version}.tgz")
            })
            .expect("a platform package");
        assert!(main.is_file(), "no {}", main.display());
        [platform, main]
    })
}

/// A fresh project outside the checkout with the packed tarballs installed offline: nothing of
/// the repository is reachable from it but the tarballs (and the tools `link` adds). Removed when
/// dropped, kept when its test failed.
struct Project {
    dir: PathBuf,
}

impl Project {
    fn new(name: &str) -> Project {
        let [platform, main] = tarballs();
        let dir =
            std::env::temp_dir().join(format!("codex-wire-npm-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{"name": "client-suite", "private": true}"#,
        )
        .unwrap();
        let t0 = Instant::now();
        ok(
            Command::new("npm")
                .args(["install", "--offline", "--no-audit", "--no-fund"])
                .arg(platform)
                .arg(main)
                .current_dir(&dir),
            "npm install --offline",
        );
        eprintln!(
            "{name}: npm install --offline: {:.1}s",
            t0.elapsed().as_secs_f64()
        );
        Project { dir }
    }

    fn copy(&self, from: &str, files: &[&str]) {
        for f in files {
            std::fs::copy(repo().join(from).join(f), self.dir.join(f))
                .unwrap_or_else(|e| panic!("{from}/{f}: {e}"));
        }
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.dir.join(file), text).unwrap();
    }

    /// Makes the packages a tool set installs (its package.json's own dependencies) importable
    /// here: `node_modules/<name>` links to the install, whose own dependencies resolve beside it.
    fn link(&self, set: &Tools) {
        for name in &set.packages {
            let link = self.dir.join("node_modules").join(name);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(set.dir.join("node_modules").join(name), &link)
                .unwrap_or_else(|e| panic!("link {}: {e}", link.display()));
        }
    }

    fn node(&self) -> Command {
        let mut cmd = Command::new("node");
        cmd.env_remove("CODEX_WIRE_BIN")
            .env_remove("NODE_OPTIONS")
            .env("CODEX_WIRE_STEPS_JSON", repo().join("clients/steps.json"))
            .env(
                "CODEX_WIRE_INSTALL_CASES",
                repo().join("clients/install_cases.json"),
            )
            .current_dir(&self.dir);
        cmd
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for a look: {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A set of pinned npm packages (`tests/npm/tools/<name>/`: package.json and its lock), installed.
struct Tools {
    dir: PathBuf,
    packages: Vec<String>,
}

/// FNV-1a: a stable name for an install of given manifests.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The tool set `name`, installed by `npm ci` (exactly its lock) into
/// `target/npm-tools/<name>-<hash of the manifests>/` unless already there: the first run takes it
/// from the registry, later runs (and other test processes) reuse it. An install is made in a
/// directory of its own and renamed into place when complete, so a half install is never used.
fn tools(name: &str, npm_args: &[&str]) -> Tools {
    let src = repo().join("tests/npm/tools").join(name);
    let manifest = std::fs::read(src.join("package.json")).unwrap();
    let lock = std::fs::read(src.join("package-lock.json"))
        .unwrap_or_else(|e| panic!("{}/package-lock.json: {e}", src.display()));
    let json: Value = serde_json::from_slice(&manifest).unwrap();
    let packages = ["dependencies", "devDependencies"]
        .iter()
        .filter_map(|k| json[k].as_object())
        .flat_map(|deps| deps.keys().cloned())
        .collect();
    let key = fnv(&[&manifest[..], &lock[..], npm_args.join(" ").as_bytes()].concat());
    let base = repo().join("target/npm-tools");
    let dir = base.join(format!("{name}-{key:016x}"));
    // One install at a time in this process (its tests run in parallel).
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if !dir.join("node_modules/.package-lock.json").is_file() {
        let t0 = Instant::now();
        let partial = base.join(format!(".{name}-{key:016x}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial).unwrap();
        for f in ["package.json", "package-lock.json"] {
            std::fs::copy(src.join(f), partial.join(f)).unwrap();
        }
        let (success, text) = run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .args(npm_args)
                .current_dir(&partial),
            "npm ci",
        );
        assert!(
            success,
            "installing the pinned {name} (tests/npm/tools/{name}) from the npm registry into {} \
             failed; the first run of this test needs the registry:\n{text}",
            partial.display()
        );
        if std::fs::rename(&partial, &dir).is_err() {
            // Another test process installed the same set meanwhile.
            let _ = std::fs::remove_dir_all(&partial);
        }
        eprintln!(
            "npm ci tests/npm/tools/{name} into {}: {:.1}s",
            dir.display(),
            t0.elapsed().as_secs_f64()
        );
    }
    assert!(
        dir.join("node_modules/.package-lock.json").is_file(),
        "no install at {}",
        dir.display()
    );
    Tools { dir, packages }
}

fn runners() -> Tools {
    tools("runners", &[])
}

/// The client library set: without optional dependencies (the provider's optional
/// `@openai/codex`, a real codex, is never run: the fake is its `codexPath`).
fn clients() -> Tools {
    tools("clients", &["--omit=optional"])
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Esm,
    Cjs,
}

#[derive(Clone, Copy, PartialEq)]
enum Runner {
    Node,
    Vitest,
    Jest,
}

impl Runner {
    fn name(self) -> &'static str {
        match self {
            Runner::Node => "node",
            Runner::Vitest => "vitest",
            Runner::Jest => "jest",
        }
    }
}

fn camel(kind: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in kind.chars() {
        match c {
            '_' => up = true,
            c if up => {
                out.extend(c.to_uppercase());
                up = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// Every name a suite imports from codex-wire: each builder `description` (clients/steps.json)
/// describes and every name the installed CommonJS entry exports.
fn codex_wire_names(project: &Project, description: &Value) -> Vec<String> {
    let out = ok(
        project.node().args([
            "-e",
            "console.log(JSON.stringify(Object.keys(require('codex-wire'))))",
        ]),
        "the names of require('codex-wire')",
    );
    let exported: Vec<String> = serde_json::from_str(out.trim()).unwrap();
    let builders: Vec<String> = description["builders"]
        .as_array()
        .expect("builders in clients/steps.json")
        .iter()
        .map(|b| camel(b["kind"].as_str().unwrap()))
        .collect();
    let mut names: BTreeSet<String> = exported.into_iter().collect();
    names.extend(builders);
    names.into_iter().collect()
}

/// What tests/npm.rs puts before the helper suite's body (tests/npm/suite/helper.body.js): its
/// imports in one module format, for one runner.
fn suite_head(format: Format, runner: Runner, names: &[String]) -> String {
    let list = names.join(", ");
    let mut head = Vec::new();
    match format {
        Format::Esm => {
            head.push("import assert from \"node:assert\";".to_string());
            head.push("import fs from \"node:fs\";".into());
            head.push("import { createRequire } from \"node:module\";".into());
            head.push("import client from \"./client.js\";".into());
            match runner {
                Runner::Node => head.push("import { test } from \"node:test\";".into()),
                Runner::Vitest => head.push("import { test } from \"vitest\";".into()),
                Runner::Jest => {} // jest's `test` is a global
            }
            head.push(format!("import {{ {list} }} from \"codex-wire\";"));
            head.push("import * as MODULE from \"codex-wire\";".into());
            head.push("const { oneTurn } = client;".into());
            head.push(
                "const otherEntry = async () => createRequire(import.meta.url)(\"codex-wire\");"
                    .into(),
            );
        }
        Format::Cjs => {
            head.push("\"use strict\";".to_string());
            head.push("const assert = require(\"node:assert\");".into());
            head.push("const fs = require(\"node:fs\");".into());
            match runner {
                Runner::Node => head.push("const { test } = require(\"node:test\");".into()),
                // vitest cannot be required: its `test` is a global (vitest.config.mjs), as jest's.
                Runner::Vitest | Runner::Jest => {}
            }
            head.push(format!("const {{ {list} }} = require(\"codex-wire\");"));
            head.push("const MODULE = require(\"codex-wire\");".into());
            head.push("const { oneTurn } = require(\"./client.js\");".into());
            head.push("const otherEntry = () => import(\"codex-wire\");".into());
        }
    }
    head.push(format!("const IMPORTED = {{ {list} }};"));
    head.join("\n") + "\n\n"
}

/// What a runner reported: each test's title and whether it passed, by file.
type Results = BTreeMap<String, Vec<(String, bool)>>;

/// Node's runner on one file (TAP: `ok N - title` for each top-level test).
fn run_node(project: &Project, file: &str) -> Results {
    let (success, text) = run(
        project.node().args(["--test", "--test-reporter=tap", file]),
        file,
    );
    let mut tests = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("ok ") {
            tests.push((rest.split_once(" - ").unwrap().1.to_string(), true));
        } else if let Some(rest) = line.strip_prefix("not ok ") {
            tests.push((rest.split_once(" - ").unwrap().1.to_string(), false));
        }
    }
    assert!(success, "node --test {file} failed:\n{text}");
    assert!(text.contains("\n# fail 0"), "node --test {file}:\n{text}");
    BTreeMap::from([(file.to_string(), tests)])
}

/// A jest-shaped JSON report (jest's `--json`, vitest's json reporter), read into [`Results`].
fn read_report(project: &Project, report: &str, what: &str, text: &str) -> Results {
    let json: Value = std::fs::read(project.dir.join(report))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("{what} wrote no report {report}:\n{text}"));
    let mut results = Results::new();
    for file in json["testResults"].as_array().unwrap() {
        let name = Path::new(file["name"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let tests = file["assertionResults"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let title = t["title"].as_str().unwrap().to_string();
                (title, t["status"] == "passed")
            })
            .collect();
        results.insert(name, tests);
    }
    assert!(
        json["success"] == true && json["numFailedTestSuites"] == 0,
        "{what} failed:\n{text}\n{}",
        serde_json::to_string_pretty(&json["testResults"]).unwrap_or_default()
    );
    results
}

fn run_vitest(project: &Project, runners: &Tools, filter: &str) -> Results {
    let vitest = runners.dir.join("node_modules/vitest/vitest.mjs");
    let report = format!("vitest-{filter}.json");
    let (_, text) = run(
        project
            .node()
            .arg(vitest)
            .args(["run", "--config", "vitest.config.mjs", "--reporter=json"])
            .arg(format!("--outputFile={report}"))
            .arg(filter),
        "vitest",
    );
    read_report(project, &report, &format!("vitest run {filter}"), &text)
}

fn run_jest(project: &Project, runners: &Tools, pattern: &str) -> Results {
    let jest = runners.dir.join("node_modules/jest/bin/jest.js");
    let report = format!("jest-{}.json", pattern.replace(['.', '*', '\\'], ""));
    let (_, text) = run(
        project
            .node()
            // ES module test files need it, in jest's workers too.
            .env("NODE_OPTIONS", "--experimental-vm-modules")
            .arg(jest)
            .args(["--config", "jest.config.json", "--ci", "--json"])
            .arg(format!("--outputFile={report}"))
            .arg(pattern),
        "jest",
    );
    read_report(project, &report, &format!("jest {pattern}"), &text)
}

/// Every test passed; the tests named `… (codex V)` ran once for every supported version and no
/// other; `files` each ran, and ran the same tests.
fn check_results(results: &Results, files: &[String]) -> usize {
    let versions: BTreeSet<String> = codex_wire::versions()
        .iter()
        .map(|p| p.version.to_string())
        .collect();
    let mut reference: Option<(&str, BTreeSet<&str>)> = None;
    for file in files {
        let tests = results
            .get(file)
            .unwrap_or_else(|| panic!("{file} did not run: {results:?}"));
        let failed: Vec<_> = tests.iter().filter(|t| !t.1).collect();
        assert!(failed.is_empty(), "{file}: failed {failed:?}");
        let titles: BTreeSet<&str> = tests.iter().map(|t| t.0.as_str()).collect();
        let mut by_version: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for title in &titles {
            if let Some((base, rest)) = title.rsplit_once(" (codex ") {
                let version = rest.strip_suffix(')').expect("a version in parentheses");
                by_version
                    .entry(base)
                    .or_default()
                    .insert(version.to_string());
            }
        }
        assert!(
            !by_version.is_empty(),
            "{file}: no test named with a release: {titles:?}"
        );
        for (base, seen) in &by_version {
            assert_eq!(seen, &versions, "{file}: {base:?} ran for these releases");
        }
        match &reference {
            None => reference = Some((file, titles)),
            Some((first, want)) => {
                assert_eq!(&titles, want, "{file} ran other tests than {first}")
            }
        }
    }
    reference.map_or(0, |r| r.1.len())
}

#[test]
fn the_npm_package_installs_offline_and_its_helper_checks_a_client() {
    let project = Project::new("helper");
    let version = env!("CARGO_PKG_VERSION");
    let out = ok(
        Command::new(project.dir.join("node_modules/.bin/codex-wire"))
            .arg("--version")
            .env_remove("CODEX_WIRE_BIN"),
        "codex-wire --version",
    );
    assert_eq!(out.trim(), format!("codex-wire {version}"));
    let out = ok(
        Command::new("npx")
            .args(["--offline", "codex-wire", "versions"])
            .env_remove("CODEX_WIRE_BIN")
            .current_dir(&project.dir),
        "npx codex-wire versions",
    );
    let newest = codex_wire::newest().version;
    assert!(out.contains(newest), "{out}");

    project.copy(
        "tests/npm",
        &[
            "client.js",
            "fake.test.js",
            "steps.test.js",
            "dirty.test.js",
            "install.test.js",
        ],
    );
    // Real mode runs the real binary; this test never passes without it.
    let real = codex_wire::harness::real_codex(repo()).unwrap_or_else(|e| panic!("{e}"));
    let node = |file: &str| {
        let mut cmd = project.node();
        cmd.args(["--test", file])
            .env("CODEX_WIRE_REAL_CODEX", &real);
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
}

fn description() -> Value {
    serde_json::from_slice(&std::fs::read(repo().join("clients/steps.json")).unwrap()).unwrap()
}

/// One suite, two module formats, three runners: `suite.<runner>.test.<mjs|cjs>`, each the same
/// body after the head of its format and runner.
#[test]
fn one_suite_as_es_module_and_commonjs_under_node_vitest_and_jest() {
    let runners = runners();
    let project = Project::new("suite");
    project.link(&runners);
    project.copy("tests/npm", &["client.js"]);
    project.copy(
        "tests/npm/suite",
        &["vitest.config.mjs", "jest.config.json"],
    );
    let names = codex_wire_names(&project, &description());
    let body = std::fs::read_to_string(repo().join("tests/npm/suite/helper.body.js")).unwrap();
    for runner in [Runner::Node, Runner::Vitest, Runner::Jest] {
        for (format, ext) in [(Format::Esm, "mjs"), (Format::Cjs, "cjs")] {
            project.write(
                &format!("suite.{}.test.{ext}", runner.name()),
                &(suite_head(format, runner, &names) + &body),
            );
        }
    }
    let files =
        |runner: Runner| ["mjs", "cjs"].map(|ext| format!("suite.{}.test.{ext}", runner.name()));
    let mut all = Results::new();
    for runner in [Runner::Node, Runner::Vitest, Runner::Jest] {
        let t0 = Instant::now();
        let results = match runner {
            Runner::Node => {
                let [esm, cjs] = files(runner);
                let mut r = run_node(&project, &esm);
                r.extend(run_node(&project, &cjs));
                r
            }
            Runner::Vitest => run_vitest(&project, &runners, "suite.vitest."),
            Runner::Jest => run_jest(&project, &runners, "suite\\.jest\\."),
        };
        let count = check_results(&results, &files(runner));
        eprintln!(
            "{}: {count} tests in each of {:?}: {:.1}s",
            runner.name(),
            files(runner),
            t0.elapsed().as_secs_f64()
        );
        all.extend(results);
    }
    let every: Vec<String> = [Runner::Node, Runner::Vitest, Runner::Jest]
        .into_iter()
        .flat_map(files)
        .collect();
    check_results(&all, &every);
}

/// A builder added to clients/steps.json that the ES module entry does not export fails a suite
/// that imports the builders by name (the suite's head lists them from clients/steps.json): the
/// check above is shown to catch what it is for.
#[test]
fn a_builder_the_es_module_entry_lacks_fails_the_suite() {
    let project = Project::new("missing-builder");
    project.copy("tests/npm", &["client.js"]);
    let mut description = description();
    description["builders"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"kind": "new_step", "args": []}));
    let names = codex_wire_names(&project, &description);
    assert!(names.iter().any(|n| n == "newStep"));
    let body = std::fs::read_to_string(repo().join("tests/npm/suite/helper.body.js")).unwrap();
    project.write(
        "suite.node.test.mjs",
        &(suite_head(Format::Esm, Runner::Node, &names) + &body),
    );
    let (success, text) = run(
        project.node().args(["--test", "suite.node.test.mjs"]),
        "node --test suite.node.test.mjs",
    );
    assert!(
        !success,
        "a builder missing from the ES module entry must fail:\n{text}"
    );
    assert!(
        text.contains("does not provide an export named 'newStep'"),
        "the failure names the builder:\n{text}"
    );
}

/// The package's types as a TypeScript suite compiles them: `moduleResolution: node16` as an ES
/// module (index.d.mts) and as CommonJS (index.d.ts), and `bundler` (index.d.mts), each file
/// importing every name by name.
#[test]
fn the_types_resolve_under_node16_and_bundler() {
    let runners = runners();
    let project = Project::new("types");
    project.link(&runners);
    project.copy(
        "tests/npm/suite",
        &["tsconfig.node16.json", "tsconfig.bundler.json"],
    );
    let names = codex_wire_names(&project, &description()).join(", ");
    let body = std::fs::read_to_string(repo().join("tests/npm/suite/types.body.ts")).unwrap();
    let esm = format!(
        "import {{ {names} }} from \"codex-wire\";\nimport codexWire from \"codex-wire\";\n"
    );
    let cjs = format!(
        "import {{ {names} }} from \"codex-wire\";\nimport codexWire = require(\"codex-wire\");\n"
    );
    project.write("types.mts", &(esm.clone() + &body));
    project.write("types.cts", &(cjs + &body));
    project.write("types.ts", &(esm + &body));
    let tsc = runners.dir.join("node_modules/typescript/bin/tsc");
    for (config, want) in [
        (
            "tsconfig.node16.json",
            &[
                ("types.mts", "node_modules/codex-wire/index.d.mts"),
                ("types.cts", "node_modules/codex-wire/index.d.ts"),
            ][..],
        ),
        (
            "tsconfig.bundler.json",
            &[("types.ts", "node_modules/codex-wire/index.d.mts")][..],
        ),
    ] {
        let t0 = Instant::now();
        let text = ok(
            project
                .node()
                .arg(&tsc)
                .args(["-p", config, "--explainFiles"]),
            &format!("tsc -p {config}"),
        );
        // `--explainFiles`: each file, then why it is in (`Imported via "codex-wire" from file
        // 'types.mts' ...`).
        for (from, types) in want {
            let why = text
                .split(&format!("\n{types}\n"))
                .nth(1)
                .unwrap_or_else(|| panic!("{config}: {types} not compiled:\n{text}"));
            let why: String = why.lines().take_while(|l| l.starts_with("  ")).collect();
            assert!(
                why.contains(&format!("Imported via \"codex-wire\" from file '{from}'")),
                "{config}: {from} does not get {types}:\n{text}"
            );
        }
        eprintln!("tsc -p {config}: {:.1}s", t0.elapsed().as_secs_f64());
    }
}

/// A real client library from the registry, unchanged, on the fake: ai-sdk-provider-codex-cli
/// (the AI SDK's codex provider; it spawns `codex app-server` itself, here the fake as its
/// `codexPath`), one turn and one approval per supported release with the wire check on, under
/// each runner (the library is ES modules only).
#[test]
fn a_real_client_library_runs_on_the_fake() {
    let runners = runners();
    let clients = clients();
    let project = Project::new("ai-sdk");
    project.link(&runners);
    project.link(&clients);
    project.copy(
        "tests/npm/suite",
        &["vitest.config.mjs", "jest.config.json"],
    );
    let body = std::fs::read_to_string(repo().join("tests/npm/suite/ai-sdk.body.mjs")).unwrap();
    for (runner, head) in [
        (Runner::Node, "import { test } from \"node:test\";\n"),
        (Runner::Vitest, "import { test } from \"vitest\";\n"),
        (Runner::Jest, ""),
    ] {
        project.write(
            &format!("ai-sdk.{}.test.mjs", runner.name()),
            &format!("import assert from \"node:assert\";\n{head}{body}"),
        );
    }
    for runner in [Runner::Node, Runner::Vitest, Runner::Jest] {
        let t0 = Instant::now();
        let file = format!("ai-sdk.{}.test.mjs", runner.name());
        let results = match runner {
            Runner::Node => run_node(&project, &file),
            Runner::Vitest => run_vitest(&project, &runners, "ai-sdk.vitest."),
            Runner::Jest => run_jest(&project, &runners, "ai-sdk\\.jest\\."),
        };
        let count = check_results(&results, std::slice::from_ref(&file));
        assert_eq!(
            count,
            2 * codex_wire::versions().len(),
            "one turn and one approval per release: {results:?}"
        );
        eprintln!(
            "{}: {count} tests: {:.1}s",
            runner.name(),
            t0.elapsed().as_secs_f64()
        );
    }
}
