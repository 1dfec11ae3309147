//! An `apply_patch` as codex verifies and applies it, and the turn's diff as `turn/diff/updated`
//! shows it. Rooms, each importing only the ones before it: `parse.rs` (the patch text),
//! `seek.rs` (finding lines, with codex's fuzz), `text.rs` (an update applied to a file's text),
//! `tracker.rs` (the turn's diff), `mod.rs` (verification, the item's changes, the writes).
//!
//! codex verifies a patch against the files before any item exists
//! (codex-rs/apply-patch `maybe_parse_apply_patch_verified`): a patch that does not parse, is
//! empty, names a file twice, deletes or updates a file it cannot read, or whose lines are not
//! found is refused, and only the model hears why. Checked on 0.163.0, 0.169.0 and 0.171.0
//! (`10d_patch_update_delete_move`, `10e_patch_rejected`).

mod parse;
mod seek;
mod text;
mod tracker;

pub(crate) use tracker::TurnTracker;

use crate::fake::state::path_str;
use parse::{Chunk, Hunk};
use serde_json::{json, Value};
use std::path::{Component, Path, PathBuf};
use tracker::Applied;

/// One verified file change, its paths absolute.
enum Change {
    Add {
        path: PathBuf,
        content: String,
    },
    /// `content`: the file as it was read (the item shows it).
    Delete {
        path: PathBuf,
        content: String,
    },
    /// `diff`: codex's unified diff of the update (one line of context).
    Update {
        path: PathBuf,
        move_path: Option<PathBuf>,
        chunks: Vec<Chunk>,
        diff: String,
    },
}

/// A patch codex accepted, its changes in the patch's order.
pub(super) struct Patch {
    changes: Vec<Change>,
}

/// A path of the patch made absolute as codex makes it (`AbsolutePathBuf`: `~/` is the home
/// directory, then `.` and `..` resolved without touching the disk). A move's destination too
/// (`./sub/../b.txt` shows as `<cwd>/b.txt`, seen on 0.171.0).
fn absolute(path: &str, cwd: &str) -> PathBuf {
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    let expanded = match (path.strip_prefix('~'), home) {
        (Some(""), Some(h)) => PathBuf::from(h),
        (Some(rest), Some(h)) if rest.starts_with('/') => {
            Path::new(&h).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    let mut out = PathBuf::new();
    for part in Path::new(cwd).join(expanded).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The patch as codex verifies it against the files in `cwd`, or why it is refused.
pub(super) fn verify(input: &str, cwd: &str) -> Result<Patch, String> {
    let hunks = parse::parse(input)?;
    // codex's safety check refuses a patch without a file before anything else.
    if hunks.is_empty() {
        return Err("empty patch".into());
    }
    let mut changes = Vec::new();
    for hunk in hunks {
        let path = absolute(hunk.path(), cwd);
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| format!("Failed to read {}: {e}", p.display()))
        };
        changes.push(match hunk {
            Hunk::Add { contents, .. } => Change::Add {
                path,
                content: contents,
            },
            Hunk::Delete { .. } => Change::Delete {
                content: read(&path)?,
                path,
            },
            Hunk::Update {
                move_path, chunks, ..
            } => {
                let before = read(&path)?;
                let content = text::updated(&before, &chunks)?;
                let diff = similar::TextDiff::from_lines(&before, &content)
                    .unified_diff()
                    .context_radius(1)
                    .to_string();
                Change::Update {
                    move_path: move_path.map(|m| absolute(&m, cwd)),
                    path,
                    chunks,
                    diff,
                }
            }
        });
    }
    // One section per file: a file named twice (added twice, deleted then added, updated
    // twice) refuses the whole patch (seen on 0.171.0; a move onto another section's file does
    // not).
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = changes.iter().map(Change::path).find(|p| !seen.insert(*p)) {
        return Err(format!("{} is named twice", twice.display()));
    }
    Ok(Patch { changes })
}

impl Change {
    fn path(&self) -> &Path {
        match self {
            Change::Add { path, .. }
            | Change::Delete { path, .. }
            | Change::Update { path, .. } => path,
        }
    }
}

impl Patch {
    /// The item's `changes`, by path (app-server `convert_patch_changes` sorts them): an add
    /// shows its content, a delete the file's, an update codex's diff, a move `Moved to:` after
    /// it (`format_file_change_diff`).
    pub(super) fn item_changes(&self) -> Vec<Value> {
        let mut changes: Vec<(String, Value)> = self
            .changes
            .iter()
            .map(|c| {
                let path = path_str(c.path());
                let (kind, diff) = match c {
                    Change::Add { content, .. } => (json!({"type": "add"}), content.clone()),
                    Change::Delete { content, .. } => (json!({"type": "delete"}), content.clone()),
                    Change::Update {
                        move_path, diff, ..
                    } => {
                        let dest = move_path.as_deref().map(path_str);
                        let shown = match &dest {
                            Some(d) => format!("{diff}\n\nMoved to: {d}"),
                            None => diff.clone(),
                        };
                        (json!({"type": "update", "move_path": dest}), shown)
                    }
                };
                let change = json!({"path": path, "kind": kind, "diff": diff});
                (path, change)
            })
            .collect();
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        changes.into_iter().map(|(_, c)| c).collect()
    }

    /// Every path the patch writes, a move's destination included: what codex's safety check
    /// holds to the sandbox's writable roots (`is_write_patch_constrained_to_writable_paths`).
    pub(super) fn written(&self) -> Vec<&Path> {
        let mut out = Vec::new();
        for c in &self.changes {
            out.push(c.path());
            if let Change::Update {
                move_path: Some(dest),
                ..
            } = c
            {
                out.push(dest.as_path());
            }
        }
        out
    }

    /// The files the patch names, in its order (an approval review's `files`).
    pub(super) fn files(&self) -> Vec<String> {
        // Each change's path, then a move's destination (codex `file_paths_for_action`;
        // fidelity s16160001_0081).
        let mut files = Vec::new();
        for c in &self.changes {
            files.push(path_str(c.path()));
            if let Change::Update {
                move_path: Some(dest),
                ..
            } = c
            {
                files.push(path_str(dest));
            }
        }
        files
    }

    /// Whether applying needs a directory made for a new file. (A move's destination in a
    /// new directory is not refused by the read-only sandbox this is asked for: fidelity
    /// s13130001_0137, probed on 0.171.0 beside an added file in a new directory, which fails.)
    pub(super) fn makes_dirs(&self) -> bool {
        self.changes.iter().any(|c| match c {
            Change::Add { path, .. } => path.parent().is_some_and(|d| !d.exists()),
            _ => false,
        })
    }

    /// Writes the patch, section after section as codex's `apply_hunks_to_files` does (an
    /// update is applied to the file as it is then; a move writes the destination and removes
    /// the source), and adds it to the turn's diff. An error stops it where it happened (what
    /// was written stays, the turn's diff does not learn of it: codex tracks successful
    /// patches only).
    pub(super) fn apply(&self, tracker: &mut TurnTracker) -> Result<(), String> {
        fn io(what: &'static str, p: &Path) -> impl FnOnce(std::io::Error) -> String {
            let p = p.display().to_string();
            move |e| format!("{what} {p}: {e}")
        }
        let make_parent = |p: &Path| match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => {
                std::fs::create_dir_all(d).map_err(io("Failed to create parent directories for", p))
            }
            _ => Ok(()),
        };
        let mut applied = Vec::new();
        for change in &self.changes {
            applied.push(match change {
                Change::Add { path, content } => {
                    make_parent(path)?;
                    let before = std::fs::read_to_string(path).ok();
                    std::fs::write(path, content).map_err(io("Failed to write file", path))?;
                    Applied::Add {
                        path: path.clone(),
                        content: content.clone(),
                        before,
                    }
                }
                Change::Delete { path, content } => {
                    std::fs::remove_file(path).map_err(io("Failed to delete file", path))?;
                    Applied::Delete {
                        path: path.clone(),
                        content: content.clone(),
                    }
                }
                Change::Update {
                    path,
                    move_path,
                    chunks,
                    ..
                } => {
                    let before = std::fs::read_to_string(path)
                        .map_err(io("Failed to read file to update", path))?;
                    let content = text::updated(&before, chunks)?;
                    let overwritten = move_path
                        .as_ref()
                        .and_then(|d| std::fs::read_to_string(d).ok());
                    match move_path {
                        Some(dest) => {
                            make_parent(dest)?;
                            std::fs::write(dest, &content)
                                .map_err(io("Failed to write file", dest))?;
                            std::fs::remove_file(path)
                                .map_err(io("Failed to remove original", path))?;
                        }
                        None => std::fs::write(path, &content)
                            .map_err(io("Failed to write file", path))?,
                    }
                    Applied::Update {
                        path: path.clone(),
                        move_path: move_path.clone(),
                        before,
                        overwritten,
                        content,
                    }
                }
            });
        }
        tracker.track(&applied);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{absolute, verify};
    use std::path::PathBuf;

    #[test]
    fn paths_resolve_as_codex_resolves_them() {
        assert_eq!(absolute("./a.txt", "/w"), PathBuf::from("/w/a.txt"));
        assert_eq!(absolute("sub/../b.txt", "/w"), PathBuf::from("/w/b.txt"));
        assert_eq!(absolute("sub//c.txt", "/w"), PathBuf::from("/w/sub/c.txt"));
        assert_eq!(absolute("/var/tmp/x", "/w"), PathBuf::from("/var/tmp/x"));
    }

    #[test]
    fn verified_against_the_files() {
        let dir = std::env::temp_dir().join(format!("codex-wire-patch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cwd = dir.to_string_lossy().to_string();
        std::fs::write(dir.join("old.txt"), "one\ntwo\nthree\n").unwrap();
        let ok = |p: &str| verify(&format!("*** Begin Patch\n{p}\n*** End Patch"), &cwd);
        let patch =
            ok("*** Update File: old.txt\n*** Move to: new.txt\n@@\n one\n-two\n+TWO").unwrap();
        let changes = patch.item_changes();
        assert_eq!(changes[0]["kind"]["move_path"], format!("{cwd}/new.txt"));
        assert_eq!(
            changes[0]["diff"],
            format!("@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n\n\nMoved to: {cwd}/new.txt")
        );
        assert_eq!(patch.written().len(), 2);
        for refused in [
            "*** Delete File: missing.txt",
            "*** Update File: missing.txt\n@@\n-a\n+b",
            "*** Update File: old.txt\n@@\n-nowhere\n+b",
            "*** Add File: a\n+1\n*** Add File: a\n+2",
            "*** Delete File: old.txt\n*** Add File: old.txt\n+x",
        ] {
            assert!(ok(refused).is_err(), "{refused}");
        }
        assert!(verify("*** Begin Patch\n*** End Patch", &cwd).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
