//! The turn's diff as `turn/diff/updated` carries it (codex-rs/core `turn_diff_tracker.rs`): each
//! file's content before the turn first touched it and now, kept from the applied patches (the
//! disk is not read again), rendered as git diffs against paths shown relative to the cwd.

use crate::fake::state::path_str;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const ZERO_OID: &str = "0000000000000000000000000000000000000000";

/// One applied change, as the tracker learns it.
pub(super) enum Applied {
    /// `before`: the file this add overwrote, if one was there.
    Add {
        path: PathBuf,
        content: String,
        before: Option<String>,
    },
    Delete {
        path: PathBuf,
        content: String,
    },
    /// `before`: the source's content as it was applied; `overwritten`: the move destination's
    /// content it replaced, if any.
    Update {
        path: PathBuf,
        move_path: Option<PathBuf>,
        before: String,
        overwritten: Option<String>,
        content: String,
    },
}

/// The files a turn's patches touched: their content when first touched (absent: the file did
/// not exist), now (absent: it does not), and where a moved file came from.
#[derive(Default)]
pub(crate) struct TurnTracker {
    baseline: HashMap<PathBuf, String>,
    current: HashMap<PathBuf, String>,
    origin: HashMap<PathBuf, PathBuf>,
}

impl TurnTracker {
    pub(super) fn track(&mut self, changes: &[Applied]) {
        for change in changes {
            match change {
                Applied::Add {
                    path,
                    content,
                    before,
                } => {
                    self.origin.remove(path);
                    if let Some(before) = before.as_ref().filter(|_| self.untouched(path)) {
                        self.baseline.insert(path.clone(), before.clone());
                    }
                    self.current.insert(path.clone(), content.clone());
                }
                Applied::Delete { path, content } => {
                    if self.current.remove(path).is_none() && !self.baseline.contains_key(path) {
                        self.baseline.insert(path.clone(), content.clone());
                    }
                    self.origin.remove(path);
                }
                Applied::Update {
                    path,
                    move_path,
                    before,
                    overwritten,
                    content,
                } => {
                    if self.untouched(path) {
                        self.baseline.insert(path.clone(), before.clone());
                    }
                    let Some(dest) = move_path else {
                        self.current.insert(path.clone(), content.clone());
                        continue;
                    };
                    if let Some(o) = overwritten.as_ref().filter(|_| self.untouched(dest)) {
                        self.baseline.insert(dest.clone(), o.clone());
                    }
                    let origin = self.origin.remove(path).unwrap_or_else(|| path.clone());
                    self.current.remove(path);
                    self.current.insert(dest.clone(), content.clone());
                    self.origin.remove(dest);
                    if *dest != origin {
                        self.origin.insert(dest.clone(), origin);
                    }
                }
            }
        }
    }

    fn untouched(&self, path: &Path) -> bool {
        !self.current.contains_key(path) && !self.baseline.contains_key(path)
    }

    /// The turn's diff (None: the turn changed nothing, net), files in the order of the paths
    /// shown; a file moved within the turn is one diff from its old path to its new one.
    pub(crate) fn diff(&self, cwd: &str) -> Option<String> {
        let shown = |p: &Path| path_str(p.strip_prefix(cwd).unwrap_or(p));
        // A move pairs its origin with its destination only when the origin existed before the
        // turn and is gone, and the destination is new and there.
        let renames: BTreeMap<&PathBuf, &PathBuf> = self
            .origin
            .iter()
            .filter(|(dest, origin)| {
                dest != origin
                    && !self.current.contains_key(*origin)
                    && self.current.contains_key(*dest)
                    && self.baseline.contains_key(*origin)
                    && !self.baseline.contains_key(*dest)
            })
            .map(|(dest, origin)| (origin, dest))
            .collect();
        let destinations: BTreeSet<&PathBuf> = renames.values().copied().collect();
        let mut paths: Vec<&PathBuf> = self.baseline.keys().chain(self.current.keys()).collect();
        paths.sort_by_key(|p| shown(p));
        paths.dedup();
        let mut out = String::new();
        for path in paths {
            if destinations.contains(path) {
                continue;
            }
            let right = renames.get(path).copied().unwrap_or(path);
            let one = render(
                &shown(path),
                self.baseline.get(path).map(String::as_str),
                &shown(right),
                self.current.get(right).map(String::as_str),
            );
            if let Some(one) = one {
                out.push_str(&one);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// The git blob id of a file's content.
fn blob_id(content: &str) -> String {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(format!("blob {}\0", content.len()).as_bytes());
    sha.update(content.as_bytes());
    sha.digest().to_string()
}

/// One file's git diff from `left` (absent: did not exist) to `right`, three lines of context.
fn render(
    left_path: &str,
    left: Option<&str>,
    right_path: &str,
    right: Option<&str>,
) -> Option<String> {
    if left == right {
        return None;
    }
    let mut out = format!("diff --git a/{left_path} b/{right_path}\n");
    match (left, right) {
        (None, Some(_)) => out.push_str("new file mode 100644\n"),
        (Some(_), None) => out.push_str("deleted file mode 100644\n"),
        _ => {}
    }
    let oid = |c: Option<&str>| c.map_or_else(|| ZERO_OID.to_string(), blob_id);
    out.push_str(&format!("index {}..{}\n", oid(left), oid(right)));
    let old = left.map_or_else(|| "/dev/null".to_string(), |_| format!("a/{left_path}"));
    let new = right.map_or_else(|| "/dev/null".to_string(), |_| format!("b/{right_path}"));
    let unified = similar::TextDiff::from_lines(left.unwrap_or(""), right.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    out.push_str(&unified);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{Applied, TurnTracker};
    use std::path::PathBuf;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(format!("/w/{s}"))
    }

    #[test]
    fn added_then_deleted_is_no_diff() {
        let mut t = TurnTracker::default();
        t.track(&[Applied::Add {
            path: p("a"),
            content: "x\n".into(),
            before: None,
        }]);
        assert!(t.diff("/w").is_some_and(|d| d.contains("new file mode")));
        t.track(&[Applied::Delete {
            path: p("a"),
            content: "x\n".into(),
        }]);
        assert_eq!(t.diff("/w"), None);
    }

    #[test]
    fn a_moved_file_is_one_diff_between_its_paths() {
        let mut t = TurnTracker::default();
        t.track(&[Applied::Update {
            path: p("old.txt"),
            move_path: Some(p("sub/new.txt")),
            before: "one\ntwo\n".into(),
            overwritten: None,
            content: "one\nTWO\n".into(),
        }]);
        let d = t.diff("/w").unwrap();
        assert!(
            d.starts_with("diff --git a/old.txt b/sub/new.txt\nindex "),
            "{d}"
        );
        assert!(
            d.ends_with("--- a/old.txt\n+++ b/sub/new.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n")
        );
    }
}
