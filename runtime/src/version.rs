//! What a codex version directory is: `major.minor.patch`, ordered as numbers. One definition,
//! used by the generator (`build.rs` includes this file), the library and xtask.

use std::path::Path;

/// `major.minor.patch` as numbers (pre-release tags are not supported versions).
pub fn version_key(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.split('.').map(|p| p.parse::<u32>().ok());
    let t = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(t)
}

/// The version directories under `dir` (`schema/`), oldest first.
pub fn version_dirs(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|v| version_key(v).is_some())
        .collect();
    out.sort_by_key(|v| version_key(v));
    Ok(out)
}
