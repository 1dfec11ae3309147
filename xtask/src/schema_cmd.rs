//! `cargo xtask schema [--version V | --codex PATH] [--check]`
//!
//! Regenerates (or, with `--check`, verifies) everything under `schema/<V>/`, one directory per
//! supported codex version, that comes from the real `codex` binary of that version:
//!
//! * `json/`: `codex app-server generate-json-schema --experimental`, verbatim, stale files
//!   deleted;
//! * `stable/codex_app_server_protocol.schemas.json`: the same bundle without `--experimental`
//!   (what it lacks is what needs `experimentalApi`);
//! * `facts/ts.json`: declaration-order facts parsed from `codex app-server generate-ts
//!   --experimental` (see `ts_facts`);
//! * `facts/probed.json`: facts probed from the running server (see `probe`);
//! * `facts/models.json`: the model catalog the binary ships (`codex debug models`), the parts
//!   that show in the server's messages: context windows, service tiers;
//! * `facts/features.json`: its feature flags with their stage and default (`codex features
//!   list`): which ones the server warns about as under development;
//! * `PROVENANCE.md`.
//!
//! Without `--version` every supported version is refreshed (checked); `--version V` adds or
//! refreshes `schema/V/` from `@openai/codex@V`. Each codex command runs with `CODEX_HOME` set to
//! a fresh empty directory and a fresh empty working directory, so nothing on the machine leaks
//! into the output.

use crate::{codex_bin, config_facts, probe, ts_facts};
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
    "facts/models.json",
    "facts/features.json",
    "facts/config.json",
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
const MODELS_CMD: &[&str] = &["debug", "models"];
const FEATURES_CMD: &[&str] = &["features", "list"];

/// `facts/features.json` from `codex features list` (`name  stage  default` per line, stages of
/// one or two words): per feature, in its order, its name, stage and default.
pub fn feature_facts(list: &str) -> Result<String, String> {
    let mut facts = Vec::new();
    for line in list.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(name), Some(default)) = (words.first(), words.last()) else {
            continue;
        };
        if words.len() < 3 || !matches!(*default, "true" | "false") {
            continue;
        }
        let stage = words[1..words.len() - 1].join(" ");
        facts
            .push(serde_json::json!({"name": name, "stage": stage, "default": *default == "true"}));
    }
    if facts.is_empty() {
        return Err(format!(
            "`codex features list` printed no features: {list:?}"
        ));
    }
    Ok(serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())? + "\n")
}

/// `facts/models.json` from `codex debug models`: per catalog model (catalog order), its slug,
/// context window, the share of it codex reports (percent), its service tier ids, its patch
/// tool and its compaction hash (a switch between models of different hashes compacts).
pub fn model_facts(catalog: &str) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_str(catalog).map_err(|e| format!("`codex debug models`: {e}"))?;
    let models = v["models"]
        .as_array()
        .ok_or("`codex debug models` printed no `models` list")?;
    let facts: Vec<serde_json::Value> = models
        .iter()
        .map(|m| {
            let tiers: Vec<&serde_json::Value> = m["service_tiers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| &t["id"])
                .collect();
            serde_json::json!({"slug": m["slug"], "context_window": m["context_window"],
                "effective_context_window_percent": m["effective_context_window_percent"],
                "service_tiers": tiers, "apply_patch_tool_type": m["apply_patch_tool_type"],
                "comp_hash": m["comp_hash"]})
        })
        .collect();
    Ok(serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())? + "\n")
}

struct Args {
    version: Option<String>,
    codex: Option<PathBuf>,
    check: bool,
    /// `--diff A B`: print the changelog instead.
    diff: Option<(String, String)>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        version: None,
        codex: None,
        check: false,
        diff: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => out.check = true,
            "--diff" => {
                let a = it.next().ok_or("--diff needs two versions")?;
                let b = it.next().ok_or("--diff needs two versions")?;
                out.diff = Some((a.clone(), b.clone()));
            }
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
    let models_cmd = MODELS_CMD.join(" ");
    let features_cmd = FEATURES_CMD.join(" ");
    format!(
        "# Provenance of schema/{version}/

Generated by `cargo xtask schema --version {version}` (xtask/src/schema_cmd.rs);
do not edit by hand. `cargo xtask schema --check` regenerates everything into a
temporary directory and fails if any file here differs.

- codex: `{codex_version_line}` (output of `codex --version`)
- npm package: `{NPM_PACKAGE}@{version}` (the platform binary it ships)
- directory: `schema/{version}/`

Each command below ran with `CODEX_HOME` set to a fresh empty directory and
a fresh empty directory as its working directory:

```sh
codex --version
codex {json_cmd} <T1>
codex {ts_cmd} <T2>
codex {stable_cmd} <T3>
codex {models_cmd}
codex {features_cmd}
```

| file | source |
| --- | --- |
| `json/` | `<T1>`, byte for byte (stale files deleted) |
| `stable/{BUNDLE}` | `<T3>/{BUNDLE}`, byte for byte: the methods and fields it lacks need `experimentalApi` |
| `facts/ts.json` | derived from `<T2>` by xtask/src/ts_facts.rs: per TypeScript type, the declaration order of object keys and union members that the JSON schema loses |
| `facts/probed.json` | observed from the running binary by xtask/src/probe.rs |
| `facts/models.json` | the model catalog `codex {models_cmd}` prints, reduced by xtask/src/schema_cmd.rs to what shows in messages |
| `facts/features.json` | the feature flags `codex {features_cmd}` prints: name, stage, default |
| `facts/config.json` | observed from the running binary by xtask/src/config_facts.rs: per top-level config key, what `config/value/write` says to a value of each JSON kind and what `config/read` then shows |
| `facts/overrides.json` | by hand (seeded from the nearest version when the directory was added) |
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
        return Err(format!(
            "schema/{requested}/ asks for codex {requested}, but {} reports {version_line:?}",
            codex.display()
        ));
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
    let probed = probe::probe_facts(codex, &stage.join("json").join(BUNDLE));
    let probed = serde_json::to_string_pretty(&probed).map_err(|e| e.to_string())? + "\n";
    write(&stage.join("facts/probed.json"), &probed)?;
    let catalog = run_codex(codex, MODELS_CMD)?;
    write(&stage.join("facts/models.json"), &model_facts(&catalog)?)?;
    let features = run_codex(codex, FEATURES_CMD)?;
    write(
        &stage.join("facts/features.json"),
        &feature_facts(&features)?,
    )?;
    let config = config_facts::probe(codex);
    let config = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())? + "\n";
    write(&stage.join("facts/config.json"), &config)?;
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
            Diff::Missing(p) => format!("missing: {p}"),
            Diff::Extra(p) => format!("extra:   {p}"),
            Diff::Changed(p) => format!("changed: {p}"),
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
///
/// `--version V` adds or refreshes `schema/V/`; without it every supported version is refreshed
/// (or, with `--check`, checked).
pub fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    if let Some((a, b)) = &args.diff {
        for v in [a, b] {
            codex_bin::pick_version(Some(v))?;
        }
        print!("{}", crate::changelog::page(a, b)?);
        return Ok(());
    }
    let targets = match &args.version {
        Some(v) => vec![v.clone()],
        None if args.codex.is_some() => vec![codex_bin::newest_version()?],
        None => codex_bin::versions()?,
    };
    let mut failures = Vec::new();
    for version in &targets {
        if let Err(e) = run_one(version, args.version.is_some(), &args) {
            failures.push(e);
        }
    }
    // The committed changelogs follow the schemas they are read from.
    if let Err(e) = crate::changelog::sync(args.check) {
        failures.push(e);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn run_one(requested: &str, explicit_version: bool, args: &Args) -> Result<(), String> {
    let schema_dir = codex_bin::schema_dir(requested);
    let codex = codex_bin::ensure_codex(requested, args.codex.as_deref())?;

    let stage = TempDir::new("schema-stage")?;
    generate(&codex, requested, explicit_version, stage.path())?;
    let diffs = diff_trees(stage.path(), &schema_dir)?;
    let label = format!("schema/{requested}");

    if args.check {
        if diffs.is_empty() {
            eprintln!(
                "{label}: up to date ({} generated files match)",
                count_managed(stage.path())?
            );
            return Ok(());
        }
        let list: Vec<String> = diffs.iter().map(Diff::describe).collect();
        return Err(format!(
            "{label}: {} file(s) differ from what {} generates:\n  {}\nrun `cargo xtask schema --version {requested}` to update them",
            diffs.len(),
            codex.display(),
            list.join("\n  ")
        ));
    }
    seed_overrides(requested)?;
    sync(stage.path(), &schema_dir, &diffs)?;
    if diffs.is_empty() {
        eprintln!("{label}: already up to date");
    } else {
        // A new version is hundreds of files: list only a refresh's few.
        for d in diffs.iter().take(20) {
            eprintln!("{label}: {}", d.describe());
        }
        eprintln!("{label}: updated {} file(s)", diffs.len());
    }
    Ok(())
}

/// A new version starts from the hand-written facts of the nearest supported version; the
/// conformance and oracle runs then say whether they still hold.
fn seed_overrides(version: &str) -> Result<(), String> {
    let dst = codex_bin::schema_dir(version).join("facts/overrides.json");
    if dst.exists() {
        return Ok(());
    }
    let key = codex_wire::version_key(version).ok_or(format!("invalid version {version:?}"))?;
    let nearest = codex_bin::versions()
        .unwrap_or_default()
        .into_iter()
        .filter(|v| v != version)
        .min_by_key(|v| {
            let k = codex_wire::version_key(v).unwrap_or_default();
            let d = |a: u32, b: u32| a.abs_diff(b) as u64;
            (d(k.0, key.0) << 40) + (d(k.1, key.1) << 20) + d(k.2, key.2)
        });
    let text = match nearest {
        Some(v) => fs::read_to_string(codex_bin::schema_dir(&v).join("facts/overrides.json"))
            .map_err(|e| format!("overrides of {v}: {e}"))?,
        None => "{}\n".to_string(),
    };
    write(&dst, &text)
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
            ("PROVENANCE.md", "prov"),
        ]);
        let vendored = tree(&[
            ("json/A.json", "a"),
            ("json/v2/B.json", "old"),
            ("json/v1/Stale.json", "s"),
            ("facts/ts.json", "ts"),
            ("facts/other.json", "not ours"),
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
