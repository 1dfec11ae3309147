//! The crate's rooms import one way (ARCHITECTURE.md): no module uses, directly or through
//! others, a module that uses it. Read off the sources: every path a module's code names
//! (`crate::a::b`, `super::x`, a child module's `x::`), resolved to the file module that defines
//! it; the names the crate root re-exports from the protocol crate are that crate's, not the
//! root's. Inline test modules are left out (a test may look at anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file module: its path (`fake::turn::engine`), the child modules it declares.
struct Module {
    children: BTreeSet<String>,
    code: String,
}

/// The source without comments, string and char literals (kept as spaces, so nothing in them
/// reads as a path).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(b.len(), |n| i + n);
            out.push_str(&" ".repeat(end - i));
            i = end;
        } else if let Some(body) = rest.strip_prefix("/*") {
            let end = body.find("*/").map_or(b.len(), |n| i + n + 4);
            out.push_str(&" ".repeat(end - i));
            i = end;
        } else if let Some(hashes) = raw_string_start(src, i) {
            let body = i + 2 + hashes;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = src[body..]
                .find(&close)
                .map_or(b.len(), |n| body + n + close.len());
            out.push_str(&" ".repeat(end - i));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.push_str(&" ".repeat(end - i));
            i = end;
        } else if b[i] == b'\'' && char_literal_len(rest).is_some() {
            let n = char_literal_len(rest).unwrap_or(1);
            out.push_str(&" ".repeat(n));
            i += n;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, … at `i` (not inside an identifier): the number of `#`.
fn raw_string_start(src: &str, i: usize) -> Option<usize> {
    let b = src.as_bytes();
    if b[i] != b'r' || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
        return None;
    }
    let hashes = src[i + 1..].bytes().take_while(|&c| c == b'#').count();
    (b.get(i + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The length of a char literal at the start of `s` (`'a'`, `'\n'`, `'\u{1F600}'`), or None
/// for a lifetime.
fn char_literal_len(s: &str) -> Option<usize> {
    let mut it = s.char_indices().skip(1);
    let (_, c) = it.next()?;
    if c == '\\' {
        let close = s[2..].find('\'')?;
        return Some(close + 3);
    }
    let (j, q) = it.next()?;
    (q == '\'').then_some(j + 1)
}

/// The code outside `#[cfg(test)] mod … { … }` blocks.
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let Some(open) = out[at..].find('{').map(|n| at + n) else {
            break;
        };
        let mut depth = 0;
        let mut end = out.len();
        for (k, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..end, "");
    }
    out
}

fn load(src: &Path) -> BTreeMap<String, Module> {
    let mut mods = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel: PathBuf = p.strip_prefix(src).expect("under src").to_path_buf();
            let mut parts: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            if parts == ["lib"] {
                parts.clear();
            } else if parts == ["main"] {
                continue;
            }
            let code = without_tests(&code_only(&std::fs::read_to_string(&p).expect("read")));
            let children = code
                .lines()
                .filter_map(|l| {
                    let l = l.trim();
                    let l = l
                        .strip_prefix("pub ")
                        .or_else(|| l.strip_prefix("pub(crate) "))
                        .unwrap_or(l);
                    l.strip_prefix("mod ")?
                        .strip_suffix(';')
                        .map(|n| n.trim().to_string())
                })
                .collect();
            mods.insert(parts.join("::"), Module { children, code });
        }
    }
    mods
}

fn ident(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The leaf paths of a use tree or path at `s` (after a `prefix::`): `a::b`, `{a, b::{c, d}}`.
fn paths(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let s = s.trim_start();
    if let Some(inner) = s.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    paths(&inner[start..k], prefix, out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    paths(&inner[start..k], prefix, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let Some(id) = ident(s) else {
        out.push(prefix.to_vec());
        return;
    };
    let mut p = prefix.to_vec();
    p.push(id.to_string());
    let rest = s[id.len()..].trim_start();
    match rest.strip_prefix("::") {
        Some(r) => paths(r, &p, out),
        None => out.push(p),
    }
}

/// The file modules `name`'s code refers to.
fn uses(
    name: &str,
    m: &Module,
    mods: &BTreeMap<String, Module>,
    root_reexports: &BTreeSet<String>,
) -> BTreeSet<String> {
    let here: Vec<String> = if name.is_empty() {
        Vec::new()
    } else {
        name.split("::").map(str::to_string).collect()
    };
    let mut found = Vec::new();
    let code = &m.code;
    let b = code.as_bytes();
    let starts: Vec<(usize, &str)> = ["crate::", "super::", "self::"]
        .iter()
        .flat_map(|kw| code.match_indices(kw).map(move |(i, _)| (i, *kw)))
        .chain(m.children.iter().flat_map(|c| {
            code.match_indices(c.as_str())
                .filter(move |(i, _)| code[i + c.len()..].starts_with("::"))
                .map(|(i, _)| (i, ""))
        }))
        .collect();
    for (i, kw) in starts {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':') {
            continue;
        }
        let base: Vec<String> = match kw {
            "crate::" => Vec::new(),
            "super::" => {
                let mut h = here.clone();
                h.pop();
                h
            }
            "self::" => here.clone(),
            _ => here.clone(),
        };
        let mut out = Vec::new();
        paths(&code[i + kw.len()..], &base, &mut out);
        found.extend(out);
    }
    let mut deps = BTreeSet::new();
    for path in found {
        // The deepest file module the path lies in.
        if path.len() == 1 && kw_root(&path, root_reexports) {
            continue;
        }
        let mut p = path.clone();
        while !p.is_empty() && !mods.contains_key(&p.join("::")) {
            p.pop();
        }
        let target = p.join("::");
        if target.is_empty() && path.first().is_some_and(|f| root_reexports.contains(f)) {
            continue;
        }
        if target != name {
            deps.insert(target);
        }
    }
    deps
}

fn kw_root(path: &[String], root_reexports: &BTreeSet<String>) -> bool {
    path.first().is_some_and(|f| root_reexports.contains(f))
}

/// Every cycle's modules (Tarjan's strongly connected components of more than one module).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.g.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.g.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[w].min(self.low[v]);
                    self.low.insert(v, l);
                } else if self.on.contains(w) {
                    let l = self.index[w].min(self.low[v]);
                    self.low.insert(v, l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = load(&src);
    // `pub use codex_wire_protocol::{…}` at the root: names of the protocol crate.
    let root = &mods[""].code;
    let mut reexports = BTreeSet::new();
    if let Some(at) = root.find("pub use codex_wire_protocol::{") {
        let list = &root[at + "pub use codex_wire_protocol::{".len()..];
        let list = &list[..list.find('}').unwrap_or(list.len())];
        reexports.extend(list.split(',').map(|s| s.trim().to_string()));
    }
    mods.iter()
        .map(|(name, m)| (name.clone(), uses(name, m, &mods, &reexports)))
        .collect()
}

#[test]
fn no_module_depends_on_a_module_that_depends_on_it() {
    let g = graph();
    // The reading sees what it should: the turn engine stands on the connection room.
    assert!(g.contains_key("fake::turn::ctx") && g["fake::turn::ctx"].contains("fake::rpc"));
    let found = cycles(&g);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let inner: Vec<String> = c
                .iter()
                .map(|m| {
                    let deps: Vec<&String> = g[m].iter().filter(|d| c.contains(d)).collect();
                    format!("{m} → {deps:?}")
                })
                .collect();
            inner.join("; ")
        })
        .collect();
    assert!(found.is_empty(), "import cycles:\n{}", shown.join("\n"));
}

/// The check itself: a cycle written into a copy of two modules is found.
#[test]
fn a_cycle_is_found() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycles(&g), vec![vec!["a", "b", "c"]]);
    let mut out = Vec::new();
    paths("{a, b::{c, d::E}, f}", &["x".to_string()], &mut out);
    assert_eq!(
        out,
        vec![
            vec!["x", "a"],
            vec!["x", "b", "c"],
            vec!["x", "b", "d", "E"],
            vec!["x", "f"]
        ]
    );
    let src = "let s = \"crate::a\"; // super::b\nlet c = 'x'; fn f<'a>() {}";
    let code = code_only(src);
    assert_eq!(code.len(), src.len());
    assert!(!code.contains("crate::") && !code.contains("super::") && !code.contains('x'));
    assert!(code.contains("fn f<'a>()"), "a lifetime is code: {code}");
}
