//! `cargo xtask schema [--version V | --codex PATH] [--check]`
//!
//! Regenerates (or, with `--check`, verifies) everything under `schema/`
//! that comes from the real `codex` binary:
//!
//! * `schema/json/`: `codex app-server generate-json-schema --experimental`,
//!   verbatim, stale files deleted;
//! * `schema/stable/codex_app_server_protocol.schemas.json`: the same bundle
//!   without `--experimental` (what it lacks is what needs `experimentalApi`);
//! * `schema/facts/ts.json`: declaration-order facts parsed from
//!   `codex app-server generate-ts --experimental` (see `ts_facts`);
//! * `schema/facts/probed.json`: facts probed from the running server
//!   (see `probe`);
//! * `schema/VERSION` and `schema/PROVENANCE.md`.
//!
//! Without `--version` the version in `schema/VERSION` is used; `--version V`
//! upgrades to `@openai/codex@V`. Each codex command runs with `CODEX_HOME`
//! set to a fresh empty directory and a fresh empty working directory, so
//! nothing on the machine leaks into the output.

use crate::{codex_bin, probe, ts_facts};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const NPM_PACKAGE: &str = "@openai/codex";

/// The generated parts of `schema/`, relative to it. Directories are
/// compared and synced as whole trees; nothing else under `schema/` is
/// touched.
const MANAGED: &[&str] = &[
    "json",
    "stable",
    "facts/ts.json",
    "facts/probed.json",
    "VERSION",
    "PROVENANCE.md",
];

const JSON_CMD: &[&str] = &[
    "app-server",
    "generate-json-schema",
    "--experimental",
    "--out",
];
const STABLE_CMD: &[&str] = &["app-server", "generate-json-schema", "--out"];
/// The one file of the stable bundle that is vendored.
const BUNDLE: &str = "codex_app_server_protocol.schemas.json";
const TS_CMD: &[&str] = &["app-server", "generate-ts", "--experimental", "--out"];

struct Args {
    version: Option<String>,
    codex: Option<PathBuf>,
    check: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        version: None,
        codex: None,
        check: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => out.check = true,
            "--version" => {
                let v = it.next().ok_or("--version needs a value")?;
                out.version = Some(v.clone());
            }
            "--codex" => {
                let p = it.next().ok_or("--codex needs a path")?;
                out.codex = Some(PathBuf::from(p));
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}\nusage: cargo xtask schema [--version V | --codex PATH] [--check]"
                ))
            }
        }
    }
    Ok(out)
}

/// A fresh empty directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Result<TempDir, String> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "codex-wire-{label}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs `codex ARGS` with a fresh `CODEX_HOME` and a fresh working
/// directory; returns its stdout.
fn run_codex(codex: &Path, args: &[&str]) -> Result<String, String> {
    let home = TempDir::new("codex-home")?;
    let cwd = TempDir::new("codex-cwd")?;
    let shown = format!("{} {}", codex.display(), args.join(" "));
    let out = Command::new(codex)
        .args(args)
        .current_dir(cwd.path())
        .env("CODEX_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("{shown}: output is not UTF-8: {e}"))
}

fn write(path: &Path, contents: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    fs::write(path, contents).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn provenance(codex_version_line: &str, version: &str) -> String {
    let json_cmd = JSON_CMD.join(" ");
    let ts_cmd = TS_CMD.join(" ");
    let stable_cmd = STABLE_CMD.join(" ");
    format!(
        "# Provenance of schema/

Generated by `cargo xtask schema` (xtask/src/schema_cmd.rs); do not edit by
hand. `cargo xtask schema --check` regenerates everything into a temporary
directory and fails if any file here differs.

- codex: `{codex_version_line}` (output of `codex --version`)
- npm package: `{NPM_PACKAGE}@{version}` (the platform binary it ships)
- version file: `schema/VERSION` = `{version}`

Each command below ran with `CODEX_HOME` set to a fresh empty directory and
a fresh empty directory as its working directory:

```sh
codex --version
codex {json_cmd} <T1>
codex {ts_cmd} <T2>
codex {stable_cmd} <T3>
```

| file | source |
| --- | --- |
| `json/` | `<T1>`, byte for byte (stale files deleted) |
| `stable/{BUNDLE}` | `<T3>/{BUNDLE}`, byte for byte: the methods and fields it lacks need `experimentalApi` |
| `facts/ts.json` | derived from `<T2>` by xtask/src/ts_facts.rs: per TypeScript type, the declaration order of object keys and union members that the JSON schema loses |
| `facts/probed.json` | observed from the running binary by xtask/src/probe.rs |
| `VERSION` | the codex version above |
"
    )
}

/// Produces the full generated content of `schema/` into `stage`.
fn generate(
    codex: &Path,
    requested: &str,
    explicit_version: bool,
    stage: &Path,
) -> Result<(), String> {
    let version_line = run_codex(codex, &["--version"])?.trim().to_string();
    let version = version_line
        .split_whitespace()
        .last()
        .ok_or_else(|| format!("`codex --version` printed nothing usable: {version_line:?}"))?
        .to_string();
    if explicit_version && version != requested {
        return Err(format!(
            "asked for codex {requested}, but {} reports {version_line:?}",
            codex.display()
        ));
    }
    if version != requested {
        eprintln!("note: schema/VERSION says {requested}, the binary is {version}");
    }

    let work = TempDir::new("schema-gen")?;
    let t1 = work.path().join("json");
    let t2 = work.path().join("ts");
    let t3 = work.path().join("stable");
    for (cmd, out) in [(JSON_CMD, &t1), (TS_CMD, &t2), (STABLE_CMD, &t3)] {
        let out_str = out.to_str().ok_or("temp dir path is not UTF-8")?;
        let mut args = cmd.to_vec();
        args.push(out_str);
        run_codex(codex, &args)?;
    }

    copy_tree(&t1, &stage.join("json"))?;
    let stable = fs::read(t3.join(BUNDLE)).map_err(|e| format!("stable bundle: {e}"))?;
    fs::create_dir_all(stage.join("stable")).map_err(|e| e.to_string())?;
    fs::write(stage.join("stable").join(BUNDLE), stable).map_err(|e| e.to_string())?;
    let facts = ts_facts::facts_from_dir(&t2)?;
    write(
        &stage.join("facts/ts.json"),
        &ts_facts::to_stable_json(&facts),
    )?;
    let probed = probe::probe_facts(codex);
    let probed = serde_json::to_string_pretty(&probed).map_err(|e| e.to_string())? + "\n";
    write(&stage.join("facts/probed.json"), &probed)?;
    write(&stage.join("VERSION"), &format!("{version}\n"))?;
    write(
        &stage.join("PROVENANCE.md"),
        &provenance(&version_line, &version),
    )?;
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    for (rel, bytes) in read_tree(from)? {
        let dst = to.join(&rel);
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        fs::write(&dst, bytes).map_err(|e| format!("writing {}: {e}", dst.display()))?;
    }
    Ok(())
}

/// Every file under `root` (or `root` itself if it is a file), keyed by its
/// path relative to `root` with `/` separators; empty if it does not exist.
fn read_tree(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), String> {
        let entries = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let rel = format!("{prefix}{name}");
            if path.is_dir() {
                walk(&path, &format!("{rel}/"), out)?;
            } else {
                let bytes =
                    fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
                out.insert(rel, bytes);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    if root.is_dir() {
        walk(root, "", &mut out)?;
    } else if root.is_file() {
        let bytes = fs::read(root).map_err(|e| format!("reading {}: {e}", root.display()))?;
        out.insert(String::new(), bytes);
    }
    Ok(out)
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Diff {
    /// Generated, but not in the vendored tree.
    Missing(String),
    /// In the vendored tree, but no longer generated.
    Extra(String),
    /// In both, with different bytes.
    Changed(String),
}

impl Diff {
    fn describe(&self) -> String {
        match self {
            Diff::Missing(p) => format!("missing: schema/{p}"),
            Diff::Extra(p) => format!("extra:   schema/{p}"),
            Diff::Changed(p) => format!("changed: schema/{p}"),
        }
    }
}

/// Compares the managed parts of `generated` and `vendored` (both laid out
/// like `schema/`).
fn diff_trees(generated: &Path, vendored: &Path) -> Result<Vec<Diff>, String> {
    let mut diffs = Vec::new();
    for managed in MANAGED {
        let join = |rel: &str| {
            if rel.is_empty() {
                managed.to_string()
            } else {
                format!("{managed}/{rel}")
            }
        };
        let want = read_tree(&generated.join(managed))?;
        let have = read_tree(&vendored.join(managed))?;
        for (rel, bytes) in &want {
            match have.get(rel) {
                None => diffs.push(Diff::Missing(join(rel))),
                Some(b) if b != bytes => diffs.push(Diff::Changed(join(rel))),
                Some(_) => {}
            }
        }
        for rel in have.keys().filter(|r| !want.contains_key(*r)) {
            diffs.push(Diff::Extra(join(rel)));
        }
    }
    diffs.sort_by(|a, b| path_of(a).cmp(path_of(b)).then(a.cmp(b)));
    Ok(diffs)
}

fn path_of(d: &Diff) -> &str {
    match d {
        Diff::Missing(p) | Diff::Extra(p) | Diff::Changed(p) => p,
    }
}

/// Makes the managed parts of `vendored` equal to `generated`, writing only
/// files that differ and deleting stale ones.
fn sync(generated: &Path, vendored: &Path, diffs: &[Diff]) -> Result<(), String> {
    for d in diffs {
        match d {
            Diff::Missing(p) | Diff::Changed(p) => {
                let src = generated.join(p);
                let dst = vendored.join(p);
                if let Some(parent) = dst.parent() {
                    fs::create_dir_all(parent)
                        .map_err(|e| format!("creating {}: {e}", parent.display()))?;
                }
                fs::copy(&src, &dst).map_err(|e| format!("copying to {}: {e}", dst.display()))?;
            }
            Diff::Extra(p) => {
                let dst = vendored.join(p);
                fs::remove_file(&dst).map_err(|e| format!("removing {}: {e}", dst.display()))?;
                // Drop directories the deletion left empty (never `schema/` itself).
                let mut dir = dst.parent();
                while let Some(d) = dir {
                    if d == vendored || fs::remove_dir(d).is_err() {
                        break;
                    }
                    dir = d.parent();
                }
            }
        }
    }
    Ok(())
}

/// Entry point: `args` are the arguments after `schema`.
pub fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let schema_dir = codex_bin::repo_root().join("schema");
    let (requested, explicit_version) = match &args.version {
        Some(v) => (v.clone(), true),
        None => (codex_bin::pinned_version()?, false),
    };
    let codex = codex_bin::ensure_codex(&requested, args.codex.as_deref())?;

    let stage = TempDir::new("schema-stage")?;
    generate(&codex, &requested, explicit_version, stage.path())?;
    let diffs = diff_trees(stage.path(), &schema_dir)?;

    if args.check {
        if diffs.is_empty() {
            eprintln!(
                "schema: up to date ({} generated files match)",
                count_managed(stage.path())?
            );
            return Ok(());
        }
        let list: Vec<String> = diffs.iter().map(Diff::describe).collect();
        return Err(format!(
            "schema: {} file(s) differ from what {} generates:\n  {}\nrun `cargo xtask schema` to update them",
            diffs.len(),
            codex.display(),
            list.join("\n  ")
        ));
    }
    sync(stage.path(), &schema_dir, &diffs)?;
    if diffs.is_empty() {
        eprintln!("schema: already up to date");
    } else {
        for d in &diffs {
            eprintln!("{}", d.describe());
        }
        eprintln!("schema: updated {} file(s)", diffs.len());
    }
    Ok(())
}

fn count_managed(root: &Path) -> Result<usize, String> {
    let mut n = 0;
    for managed in MANAGED {
        n += read_tree(&root.join(managed))?.len();
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> TempDir {
        let dir = TempDir::new("schema-test").unwrap();
        for (rel, body) in files {
            write(&dir.path().join(rel), body).unwrap();
        }
        dir
    }

    #[test]
    fn args() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = parse_args(&s(&["--check", "--version", "1.2.3"])).unwrap();
        assert!(a.check && a.version.as_deref() == Some("1.2.3") && a.codex.is_none());
        let a = parse_args(&s(&["--codex", "/x/codex"])).unwrap();
        assert_eq!(a.codex.as_deref(), Some(Path::new("/x/codex")));
        assert!(!a.check);
        assert!(parse_args(&s(&["--version"])).is_err());
        assert!(parse_args(&s(&["--bogus"])).is_err());
    }

    #[test]
    fn diff_and_sync_cover_missing_extra_changed_and_ignore_unmanaged() {
        let generated = tree(&[
            ("json/A.json", "a"),
            ("json/v2/B.json", "b"),
            ("json/v2/New.json", "n"),
            ("facts/ts.json", "ts"),
            ("facts/probed.json", "p"),
            ("VERSION", "1\n"),
            ("PROVENANCE.md", "prov"),
        ]);
        let vendored = tree(&[
            ("json/A.json", "a"),
            ("json/v2/B.json", "old"),
            ("json/v1/Stale.json", "s"),
            ("facts/ts.json", "ts"),
            ("facts/other.json", "not ours"),
            ("VERSION", "1\n"),
            ("PROVENANCE.md", "prov"),
        ]);
        let diffs = diff_trees(generated.path(), vendored.path()).unwrap();
        assert_eq!(
            diffs,
            vec![
                Diff::Missing("facts/probed.json".into()),
                Diff::Extra("json/v1/Stale.json".into()),
                Diff::Changed("json/v2/B.json".into()),
                Diff::Missing("json/v2/New.json".into()),
            ]
        );
        sync(generated.path(), vendored.path(), &diffs).unwrap();
        assert!(diff_trees(generated.path(), vendored.path())
            .unwrap()
            .is_empty());
        assert!(!vendored.path().join("json/v1").exists());
        assert_eq!(
            fs::read_to_string(vendored.path().join("facts/other.json")).unwrap(),
            "not ours"
        );
    }

    #[test]
    fn provenance_is_stable_and_names_the_commands() {
        let p = provenance("codex-cli 0.171.0", "0.171.0");
        assert_eq!(p, provenance("codex-cli 0.171.0", "0.171.0"));
        assert!(p.contains("`codex-cli 0.171.0`"));
        assert!(p.contains("@openai/codex@0.171.0"));
        assert!(p.contains("codex app-server generate-json-schema --experimental --out <T1>"));
        assert!(p.contains("codex app-server generate-ts --experimental --out <T2>"));
    }
}
