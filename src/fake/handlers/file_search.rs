//! `fuzzyFileSearch`: the files and directories under the request's roots that match its
//! query, as codex's app-server finds them (`fuzzy_file_search.rs` over the `file-search`
//! crate): each root walked as ripgrep walks (the `ignore` crate: hidden entries and symlinks
//! followed, `.gitignore` without a repository, `.ignore`, `.git/info/exclude`; the root itself
//! is an entry, its path empty), each entry named by its path relative to the deepest root that
//! holds it, scored by nucleo's matcher for paths (the same crate and settings: case ignored,
//! the query parsed as nucleo parses it, so `^`, `$`, `!` and `'` work and spaces separate
//! atoms), the best 50 by score then path, with the matched characters' indices.
//!
//! Newer versions rank by the name too (probed on 0.169.0 and 0.171.0): a file whose name
//! holds the whole query as one fuzzy atom scores that match plus 2^16, its indices those of
//! the name; an entry whose name is the query (case ignored) gains 2^17 more, a directory only
//! that. 0.163.0 scores the path alone (`TurnFacts::file_search_path_score_only`). An entry
//! under two of the roots is listed once on 0.171.0, once for each root before
//! (`TurnFacts::file_search_overlapping_roots_twice`). An empty query finds nothing; one of
//! spaces only finds everything, with score 0.

use super::view::H;
use crate::fake::settings;
use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use serde::Serialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// How long a search session without roots takes to be refused (see `search_session_start`).
const EMPTY_SESSION_REFUSED: std::time::Duration = std::time::Duration::from_millis(5);

/// codex's `MATCH_LIMIT`.
const MATCH_LIMIT: usize = 50;
/// What a file's name matching the query adds (0.169.0 and later).
const NAME_MATCH: u32 = 1 << 16;
/// What an entry's name equal to the query adds (0.169.0 and later).
const NAME_EXACT: u32 = 1 << 17;

/// One entry of the result, in the order codex serializes `FuzzyFileSearchResult`.
#[derive(Serialize)]
struct Found {
    root: String,
    path: String,
    match_type: &'static str,
    file_name: String,
    score: u32,
    indices: Vec<u32>,
}

/// An entry of a walk: its root (as given), its path relative to that root, whether a
/// directory.
struct Entry {
    root: usize,
    rel: String,
    dir: bool,
}

impl H<'_> {
    pub(super) fn fuzzy_file_search(&self, id: &Value, p: &Value) -> Result<(), String> {
        let query = p["query"].as_str().unwrap_or_default();
        let files = self.search_roots(query, &roots_of(p));
        self.result(id, json!({ "files": files }));
        Ok(())
    }

    /// [`search`] as this version ranks and lists.
    fn search_roots(&self, query: &str, roots: &[String]) -> Vec<Found> {
        let facts = &self.fake.turn_facts;
        search(
            query,
            roots,
            &self.fake.cwd,
            !facts.file_search_path_score_only,
            !facts.file_search_overlapping_roots_twice,
        )
    }

    /// `fuzzyFileSearch/sessionStart`: a session over its roots (at least one). Its walk done,
    /// it reports its (empty) query's matches, none, then that it completed
    /// (107_file_search_sessions, 0.171.0). The real session reports from two threads as they
    /// tick: a query sent before the walk is done is often reported alone, and the two
    /// notifications of one report come in either order (tolerance `search_session_end`).
    pub(super) fn search_session_start(&self, id: &Value, p: &Value) -> Result<(), String> {
        let session = p["sessionId"].as_str().unwrap_or_default().to_string();
        let roots = roots_of(p);
        if roots.is_empty() {
            // Refused only after codex has set the session up: 5.6–15.3 ms after the request
            // (turn scenario 42 on three versions, fidelity s33330001_0597 twice), after a
            // settings announcement due meanwhile. Answered 5 ms on, below the least seen.
            let message = format!(
                "{}failed to start fuzzy file search session: at least one search directory is \
                 required",
                crate::fake::rpc::INTERNAL_PREFIX
            );
            let (conn, id) = (std::sync::Arc::clone(self.c), id.clone());
            std::thread::spawn(move || {
                std::thread::sleep(EMPTY_SESSION_REFUSED);
                conn.error(&id, message);
            });
            return Ok(());
        }
        crate::fake::state::lock(&self.fake.search_sessions).insert(session.clone(), roots);
        self.result(id, json!({}));
        self.search_session_report(&session, "", Vec::new());
        Ok(())
    }

    /// `fuzzyFileSearch/sessionUpdate`: the session searches its roots for the new query (as
    /// `fuzzyFileSearch` does) and reports the matches, then that it completed, after its
    /// answer (107_file_search_sessions).
    pub(super) fn search_session_update(&self, id: &Value, p: &Value) -> Result<(), String> {
        let session = p["sessionId"].as_str().unwrap_or_default().to_string();
        let Some(roots) = crate::fake::state::lock(&self.fake.search_sessions)
            .get(&session)
            .cloned()
        else {
            return Err(format!("fuzzy file search session not found: {session}"));
        };
        let query = p["query"].as_str().unwrap_or_default();
        let files = self.search_roots(query, &roots);
        self.result(id, json!({}));
        self.search_session_report(&session, query, files);
        Ok(())
    }

    /// `fuzzyFileSearch/sessionStop`: the session is gone (an unknown one is no error).
    pub(super) fn search_session_stop(&self, id: &Value, p: &Value) -> Result<(), String> {
        let session = p["sessionId"].as_str().unwrap_or_default();
        crate::fake::state::lock(&self.fake.search_sessions).remove(session);
        self.result(id, json!({}));
        Ok(())
    }

    fn search_session_report(&self, session: &str, query: &str, files: Vec<Found>) {
        self.notify(
            "fuzzyFileSearch/sessionUpdated",
            json!({"sessionId": session, "query": query, "files": files}),
        );
        self.notify(
            "fuzzyFileSearch/sessionCompleted",
            json!({"sessionId": session}),
        );
    }
}

/// A request's `roots`.
fn roots_of(p: &Value) -> Vec<String> {
    super::view::strs(&p["roots"])
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// The walk of every root, in the order given: an entry is named from the deepest root that
/// holds it (codex's `get_file_path`); `once` lists an entry found under two roots once.
fn walk(roots: &[String], cwd: &Path, once: bool) -> Vec<Entry> {
    let dirs: Vec<PathBuf> = roots.iter().map(|r| cwd.join(r)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for dir in &dirs {
        let walker = ignore::WalkBuilder::new(dir)
            .hidden(false)
            .follow_links(true)
            .require_git(false)
            .build();
        for entry in walker.flatten() {
            let path = entry.path();
            let Some((root, rel)) = deepest_root(path, &dirs) else {
                continue;
            };
            if once && !seen.insert(path.to_path_buf()) {
                continue;
            }
            out.push(Entry {
                root,
                rel: rel.to_string(),
                dir: entry.file_type().is_some_and(|t| t.is_dir()),
            });
        }
    }
    out
}

/// The deepest of `roots` holding `path`, and the path relative to it (a name that is not
/// UTF-8 is skipped, as codex skips it).
fn deepest_root<'a>(path: &'a Path, roots: &[PathBuf]) -> Option<(usize, &'a str)> {
    let mut best: Option<(usize, &Path)> = None;
    for (i, root) in roots.iter().enumerate() {
        if let Ok(rel) = path.strip_prefix(root) {
            let depth = root.components().count();
            if best.is_none_or(|(b, _)| roots[b].components().count() < depth) {
                best = Some((i, rel));
            }
        }
    }
    let (i, rel) = best?;
    rel.to_str().map(|r| (i, r))
}

fn search(query: &str, roots: &[String], cwd: &Path, by_name: bool, once: bool) -> Vec<Found> {
    if query.is_empty() || roots.is_empty() {
        return Vec::new();
    }
    let cwd = Path::new(&settings::resolve_path("", cwd)).to_path_buf();
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let pattern = Pattern::parse(query, CaseMatching::Ignore, Normalization::Smart);
    let name_atom = Atom::new(
        query,
        CaseMatching::Ignore,
        Normalization::Smart,
        AtomKind::Fuzzy,
        false,
    );
    let lower = query.to_lowercase();
    let mut buf = Vec::new();
    let mut found = Vec::new();
    for e in walk(roots, &cwd, once) {
        let mut indices = Vec::new();
        let Some(mut score) =
            pattern.indices(Utf32Str::new(&e.rel, &mut buf), &mut matcher, &mut indices)
        else {
            continue;
        };
        let name = Path::new(&e.rel)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if by_name {
            if !e.dir {
                let mut at = Vec::new();
                if let Some(s) =
                    name_atom.indices(Utf32Str::new(&name, &mut buf), &mut matcher, &mut at)
                {
                    // The name's indices, counted from the path's start (in nucleo's
                    // characters).
                    let before = &e.rel[..e.rel.len() - name.len()];
                    let offset = Utf32Str::new(before, &mut buf).len() as u32;
                    indices = at.into_iter().map(|i| i + offset).collect();
                    score = u32::from(s) + NAME_MATCH;
                }
            }
            if name.to_lowercase() == lower {
                score += NAME_EXACT;
            }
        }
        indices.sort_unstable();
        indices.dedup();
        found.push(Found {
            root: roots[e.root].clone(),
            path: e.rel,
            match_type: if e.dir { "directory" } else { "file" },
            file_name: name,
            score,
            indices,
        });
    }
    found.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
    found.truncate(MATCH_LIMIT);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree for one test (tests run at once: each its own directory).
    fn tree(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cw-file-search-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in [
            ("src/main.rs", "a"),
            ("src/util/helpers.rs", "b"),
            ("build/out.o", "c"),
            (".gitignore", "build/\n"),
            ("docs/Guide.md", "d"),
        ] {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn run(query: &str, roots: &[&str], by_name: bool, once: bool) -> Vec<(String, u32)> {
        let test = std::thread::current()
            .name()
            .unwrap_or("t")
            .replace("::", "-");
        let dir = tree(&test);
        let roots: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
        let found = search(query, &roots, &dir, by_name, once);
        let _ = std::fs::remove_dir_all(&dir);
        found.into_iter().map(|f| (f.path, f.score)).collect()
    }

    #[test]
    fn a_name_match_outranks_a_path_match_only_where_the_version_ranks_by_name() {
        // "s" in `src/main.rs`: at the path's start (34) or in the name (16 + 2^16).
        let newer = run("s", &["."], true, true);
        assert_eq!(
            newer[0],
            ("src/main.rs".into(), 16 + NAME_MATCH),
            "{newer:?}"
        );
        let older = run("s", &["."], false, true);
        assert!(older.contains(&("src/main.rs".into(), 34)), "{older:?}");
        // A directory gains only from a name equal to the query.
        let dirs = run("util", &["."], true, true);
        assert_eq!(dirs[0], ("src/util".into(), 109 + NAME_EXACT), "{dirs:?}");
    }

    #[test]
    fn ignored_entries_are_not_walked_and_the_root_is_an_entry() {
        let all = run("  ", &["."], true, true);
        let paths: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
        assert!(paths.contains(&""), "{paths:?}");
        assert!(!paths.iter().any(|p| p.starts_with("build")), "{paths:?}");
        assert!(run("", &["."], true, true).is_empty());
    }

    #[test]
    fn overlapping_roots_list_an_entry_once_or_once_a_root() {
        assert_eq!(run("help", &[".", "src"], true, true).len(), 1);
        assert_eq!(run("help", &[".", "src"], true, false).len(), 2);
    }
}
