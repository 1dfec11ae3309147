//! An update's chunks applied to a file's text as codex applies them (codex-rs/apply-patch
//! `lib.rs` `compute_replacements`, `text_file.rs`): lines matched without their `\r`, each line
//! keeping its own ending, new lines taking the file's first ending, and every line ending
//! with one afterwards (an update always leaves a final newline; seen on 0.163.0–0.171.0).

use super::parse::Chunk;
use super::seek::seek;

#[derive(Clone, Copy)]
enum Ending {
    Lf,
    CrLf,
}

struct Line {
    text: String,
    ending: Option<Ending>,
}

/// A file's lines; `preferred` is the ending of its first line (`\n` for a file without one).
struct Source {
    lines: Vec<Line>,
    preferred: Ending,
}

impl Source {
    fn parse(contents: &str) -> Source {
        let mut lines = Vec::new();
        let mut preferred = None;
        let mut rest = contents;
        while let Some(n) = rest.find('\n') {
            let line = &rest[..n];
            let (text, ending) = match line.strip_suffix('\r') {
                Some(t) => (t, Ending::CrLf),
                None => (line, Ending::Lf),
            };
            preferred.get_or_insert(ending);
            lines.push(Line {
                text: text.to_string(),
                ending: Some(ending),
            });
            rest = &rest[n + 1..];
        }
        if !rest.is_empty() {
            lines.push(Line {
                text: rest.to_string(),
                ending: None,
            });
        }
        Source {
            lines,
            preferred: preferred.unwrap_or(Ending::Lf),
        }
    }

    fn texts(&self) -> Vec<String> {
        self.lines.iter().map(|l| l.text.clone()).collect()
    }

    /// `(start, old length, new lines)`, sorted by start.
    fn replace(&mut self, replacements: &[(usize, usize, Vec<String>)]) {
        let mut source = std::mem::take(&mut self.lines).into_iter();
        let mut out = Vec::new();
        let mut at = 0;
        for (start, old_len, new) in replacements {
            out.extend(source.by_ref().take(start.saturating_sub(at)));
            source.by_ref().take(*old_len).for_each(drop);
            out.extend(new.iter().map(|t| Line {
                text: t.clone(),
                ending: Some(self.preferred),
            }));
            at = start + old_len;
        }
        out.extend(source);
        for line in &mut out {
            line.ending.get_or_insert(self.preferred);
        }
        self.lines = out;
    }

    fn contents(&self) -> String {
        let mut s = String::new();
        for line in &self.lines {
            s.push_str(&line.text);
            s.push_str(match line.ending {
                Some(Ending::CrLf) => "\r\n",
                Some(Ending::Lf) => "\n",
                None => "",
            });
        }
        s
    }
}

/// The file's new contents once `chunks` are applied, or why codex refuses the update (a
/// context or old lines not found).
pub(super) fn updated(original: &str, chunks: &[Chunk]) -> Result<String, String> {
    let mut source = Source::parse(original);
    let lines = source.texts();
    let mut replacements = Vec::new();
    let mut at = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            match seek(&lines, std::slice::from_ref(context), at, false) {
                Some(i) => at = i + 1,
                None => return Err(format!("Failed to find context '{context}'")),
            }
        }
        if chunk.old.is_empty() {
            // A pure addition goes at the end (before a final empty line, if there is one).
            let end = if lines.last().is_some_and(String::is_empty) {
                lines.len() - 1
            } else {
                lines.len()
            };
            replacements.push((end, 0, chunk.new.clone()));
            continue;
        }
        let (mut old, mut new) = (&chunk.old[..], &chunk.new[..]);
        let mut found = seek(&lines, old, at, chunk.eof);
        // A trailing empty line stands for the file's final newline: tried again without it.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, at, chunk.eof);
        }
        let Some(start) = found else {
            return Err(format!(
                "Failed to find expected lines:\n{}",
                chunk.old.join("\n")
            ));
        };
        replacements.push((start, old.len(), new.to_vec()));
        at = start + old.len();
    }
    replacements.sort_by_key(|r| r.0);
    source.replace(&replacements);
    Ok(source.contents())
}

#[cfg(test)]
mod tests {
    use super::super::parse::{parse, Hunk};
    use super::updated;

    fn apply(original: &str, patch_body: &str) -> Result<String, String> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{patch_body}\n*** End Patch");
        match parse(&patch).unwrap().pop() {
            Some(Hunk::Update { chunks, .. }) => updated(original, &chunks),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn endings_kept_and_a_final_newline_added() {
        assert_eq!(apply("x\r\ny\r\n", "@@\n-x\n+X").unwrap(), "X\r\ny\r\n");
        assert_eq!(apply("a\n\n", "@@\n-a\n+b").unwrap(), "b\n\n");
        assert_eq!(apply("p\nq", "@@\n-p\n+P").unwrap(), "P\nq\n");
        assert_eq!(apply("p\nq\n", "@@\n+r").unwrap(), "p\nq\nr\n");
    }

    #[test]
    fn contexts_and_end_of_file() {
        let text = "alpha\nBETA\ngamma\ndelta\nepsilon\nzeta\n";
        let body = "@@ gamma\n-delta  \n+DELTA\n epsilon\n zeta\n*** End of File";
        assert_eq!(
            apply(text, body).unwrap(),
            "alpha\nBETA\ngamma\nDELTA\nepsilon\nzeta\n"
        );
        assert!(apply(text, "@@ nowhere\n-delta\n+d").is_err());
        assert!(apply(text, "@@\n-missing\n+m").is_err());
    }
}
