//! An `apply_patch` as codex reads it, and the turn's diff as `turn/diff/updated` shows it.

use crate::fake::state::path_str;
use std::path::Path;

/// One file an `apply_patch` touches.
pub(super) struct PatchFile {
    pub path: String,
    pub kind: &'static str,
    pub content: String,
}

/// The files an `apply_patch` input touches (`*** Add File:`, `*** Update File:`, `*** Delete
/// File:` sections, relative paths against the cwd), with an added file's content.
pub(super) fn patch_files(patch: &str, cwd: &str) -> Vec<PatchFile> {
    let abs = |p: &str| {
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            path_str(&Path::new(cwd).join(p))
        }
    };
    let mut files: Vec<PatchFile> = Vec::new();
    for line in patch.lines() {
        let section = [
            ("*** Add File: ", "add"),
            ("*** Delete File: ", "delete"),
            ("*** Update File: ", "update"),
        ]
        .iter()
        .find_map(|(prefix, kind)| line.strip_prefix(prefix).map(|p| (p, *kind)));
        if let Some((p, kind)) = section {
            files.push(PatchFile {
                path: abs(p.trim()),
                kind,
                content: String::new(),
            });
        } else if line.starts_with("***") {
            continue;
        } else if let Some(f) = files.last_mut() {
            let body = if f.kind == "add" {
                line.strip_prefix('+').unwrap_or(line)
            } else {
                line
            };
            f.content.push_str(body);
            f.content.push('\n');
        }
    }
    files
}

/// The git blob id of a file's content.
fn blob_id(content: &str) -> String {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(format!("blob {}\0", content.len()).as_bytes());
    sha.update(content.as_bytes());
    sha.digest().to_string()
}

/// A hunk header's range: `start,len`, the length left out when it is 1.
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{},0", start),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// The git diff of a file a turn changed from `old` (None: it did not exist) to `new`, as
/// `turn/diff/updated` carries it: three lines of context (paths are absolute outside a
/// repository, hence `a//tmp/…`).
pub(super) fn git_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let Some(old) = old else {
        return git_add_diff(path, new);
    };
    if old == new {
        return String::new();
    }
    let mut out = format!(
        "diff --git a/{path} b/{path}\nindex {}..{}\n--- a/{path}\n+++ b/{path}\n",
        blob_id(old),
        blob_id(new)
    );
    let diff = similar::TextDiff::from_lines(old, new);
    for group in diff.grouped_ops(3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (o_len, n_len) = (last.old_range().end - o, last.new_range().end - n);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(o, o_len),
            hunk_range(n, n_len)
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                out.push(sign);
                out.push_str(change.value());
                if change.missing_newline() {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The git diff of a new file, as `turn/diff/updated` carries it.
fn git_add_diff(path: &str, content: &str) -> String {
    let sha = blob_id(content);
    let lines = content.lines().count();
    let range = if lines == 1 {
        "1".to_string()
    } else {
        format!("1,{lines}")
    };
    let body: String = content.lines().map(|l| format!("+{l}\n")).collect();
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex \
         0000000000000000000000000000000000000000..{sha}\n--- /dev/null\n+++ b/{path}\n\
         @@ -0,0 +{range} @@\n{body}",
    )
}
