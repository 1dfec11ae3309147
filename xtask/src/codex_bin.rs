//! Obtaining the pinned real `codex` binary: from npm into an uncommitted cache under `target/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of the `xtask` crate).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The codex versions the repo supports: the directories `schema/<V>/`, oldest first.
pub fn versions() -> Result<Vec<String>, String> {
    let dir = repo_root().join("schema");
    let out = codex_wire::version_dirs(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if out.is_empty() {
        return Err(format!(
            "no schema/<version>/ directory in {}",
            dir.display()
        ));
    }
    Ok(out)
}

/// The newest supported version: the default of every command.
pub fn newest_version() -> Result<String, String> {
    Ok(versions()?.pop().expect("versions() is never empty"))
}

/// `--version V` if given (it must be supported unless `allow_new`), else the newest.
pub fn pick_version(v: Option<&str>) -> Result<String, String> {
    match v {
        None => newest_version(),
        Some(v) if versions()?.iter().any(|s| s == v) => Ok(v.to_string()),
        Some(v) => Err(format!(
            "codex {v} is not supported here (schema/{v}/ is missing; `cargo xtask schema --version {v}` adds it); supported: {}",
            versions()?.join(", ")
        )),
    }
}

/// `schema/<V>/`.
pub fn schema_dir(version: &str) -> PathBuf {
    repo_root().join("schema").join(version)
}

/// `tests/corpus/<V>/`: everything recorded from the real binary of that version.
pub fn corpus_dir(version: &str) -> PathBuf {
    repo_root().join("tests").join("corpus").join(version)
}

/// Returns the path of a runnable `codex` for `version`.
///
/// With `explicit`, that file is used as is (it must exist). Otherwise the npm package
/// `@openai/codex@<version>` is installed (once) into `<repo>/target/codex-cache/<version>/`
/// and `node_modules/.bin/codex` from there is returned.
pub fn ensure_codex(version: &str, explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        if p.is_file() {
            // Absolute: the servers run in sandbox directories of their own (a relative path
            // made every case of a live run fail to spawn).
            return std::path::absolute(p).map_err(|e| format!("--codex {}: {e}", p.display()));
        }
        return Err(format!(
            "--codex {}: no such file (give the path of a `codex` executable)",
            p.display()
        ));
    }
    if version.is_empty()
        || !version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    {
        return Err(format!("invalid codex version {version:?}"));
    }
    let cache = repo_root().join("target").join("codex-cache").join(version);
    let bin = cache.join("node_modules").join(".bin").join("codex");
    if bin.is_file() && installed_version(&cache).as_deref() == Some(version) {
        return Ok(bin);
    }
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    eprintln!(
        "installing @openai/codex@{version} into {} (npm)...",
        cache.display()
    );
    let status = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(&cache)
        .args(["--no-save", "--no-audit", "--no-fund", "--loglevel=error"])
        .arg(format!("@openai/codex@{version}"))
        .status()
        .map_err(|e| format!("could not run npm (is Node.js installed?): {e}"))?;
    if !status.success() {
        return Err(format!(
            "npm install @openai/codex@{version} failed ({status}); pass --codex PATH to use an installed binary"
        ));
    }
    match installed_version(&cache) {
        Some(v) if v == version && bin.is_file() => Ok(bin),
        other => Err(format!(
            "after npm install, {} is missing or has version {other:?}",
            bin.display()
        )),
    }
}

fn installed_version(cache: &Path) -> Option<String> {
    let manifest = cache
        .join("node_modules")
        .join("@openai")
        .join("codex")
        .join("package.json");
    let text = std::fs::read_to_string(manifest).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("version")?.as_str().map(str::to_string)
}

/// The value of `--version V` among a command's arguments, if given.
pub fn version_arg(args: &[String]) -> Result<Option<&str>, String> {
    args.iter()
        .position(|a| a == "--version")
        .map(|i| {
            args.get(i + 1)
                .map(String::as_str)
                .ok_or_else(|| "--version needs a value".to_string())
        })
        .transpose()
}

/// Builds `codex-wire` (debug) and returns its path.
pub fn codex_wire_bin() -> Result<PathBuf, String> {
    let root = repo_root();
    let status = codex_wire::harness::cargo()
        .args(["build", "--quiet", "--bin", "codex-wire"])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err("cargo build --bin codex-wire failed".into());
    }
    Ok(root.join("target/debug/codex-wire"))
}
