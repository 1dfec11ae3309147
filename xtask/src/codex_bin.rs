//! Obtaining the pinned real `codex` binary: from npm into an uncommitted cache under `target/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of the `xtask` crate).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The pinned codex version, read from `schema/VERSION` (created with the default if absent).
pub fn pinned_version() -> Result<String, String> {
    const DEFAULT: &str = "0.171.0";
    let path = repo_root().join("schema").join("VERSION");
    match std::fs::read_to_string(&path) {
        Ok(s) => {
            let v = s.trim().to_string();
            if v.is_empty() {
                Err(format!("{} is empty", path.display()))
            } else {
                Ok(v)
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            std::fs::write(&path, format!("{DEFAULT}\n"))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(DEFAULT.to_string())
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Returns the path of a runnable `codex` for `version`.
///
/// With `explicit`, that file is used as is (it must exist). Otherwise the npm package
/// `@openai/codex@<version>` is installed (once) into `<repo>/target/codex-cache/<version>/`
/// and `node_modules/.bin/codex` from there is returned.
pub fn ensure_codex(version: &str, explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
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
