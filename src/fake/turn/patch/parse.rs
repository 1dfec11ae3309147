//! An `apply_patch` input read as codex reads it (codex-rs/apply-patch `parser.rs`, lenient mode):
//! what is accepted and what is refused. A refusal never reaches the client (the model is told),
//! so only the verdict matters here, not codex's message.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// One file section of a patch, its paths as written (resolved later against the cwd).
#[derive(Debug, PartialEq)]
pub(super) enum Hunk {
    Add {
        path: String,
        contents: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_path: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One `@@` chunk of an update.
#[derive(Debug, PartialEq)]
pub(super) struct Chunk {
    /// The `@@ <line>` context: the chunk's lines come after the first line matching it.
    pub context: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File`: the old lines are looked for at the file's end first.
    pub eof: bool,
}

impl Hunk {
    pub(super) fn path(&self) -> &str {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// The hunks of a patch, or why codex refuses it (`parse_patch`: markers may be padded; a
/// `<<EOF` … `EOF` heredoc around the patch is taken off).
pub(super) fn parse(patch: &str) -> Result<Vec<Hunk>, String> {
    let lines: Vec<&str> = patch.trim().lines().collect();
    let body = boundaries(&lines).or_else(|e| heredoc(&lines).ok_or(e))?;
    let mut hunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (hunk, used) = one_hunk(rest)?;
        hunks.push(hunk);
        rest = &rest[used..];
    }
    Ok(hunks)
}

/// The lines between `*** Begin Patch` and `*** End Patch` (each compared trimmed).
fn boundaries<'a>(lines: &'a [&'a str]) -> Result<&'a [&'a str], String> {
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if first.trim() == BEGIN && last.trim() == END => {
            Ok(&lines[1..lines.len() - 1])
        }
        (Some(first), _) if first.trim() != BEGIN => {
            Err("The first line of the patch must be '*** Begin Patch'".into())
        }
        _ => Err("The last line of the patch must be '*** End Patch'".into()),
    }
}

/// Lenient mode: a patch wrapped in `<<EOF` (or `<<'EOF'`, `<<"EOF"`) … `EOF`, four lines at
/// least.
fn heredoc<'a>(lines: &'a [&'a str]) -> Option<&'a [&'a str]> {
    let (first, last) = (lines.first()?, lines.last()?);
    let opens = matches!(*first, "<<EOF" | "<<'EOF'" | "<<\"EOF\"");
    if opens && last.ends_with("EOF") && lines.len() >= 4 {
        boundaries(&lines[1..lines.len() - 1]).ok()
    } else {
        None
    }
}

/// The hunk at the start of `lines` and how many lines it takes.
fn one_hunk(lines: &[&str]) -> Result<(Hunk, usize), String> {
    let first = lines[0].trim();
    if let Some(path) = first.strip_prefix(ADD) {
        // Every following `+` line is content; the first other line ends the section.
        let body: Vec<&str> = lines[1..]
            .iter()
            .map_while(|l| l.strip_prefix('+'))
            .collect();
        let contents: String = body.iter().map(|l| format!("{l}\n")).collect();
        let hunk = Hunk::Add {
            path: path.to_string(),
            contents,
        };
        return Ok((hunk, 1 + body.len()));
    }
    if let Some(path) = first.strip_prefix(DELETE) {
        return Ok((
            Hunk::Delete {
                path: path.to_string(),
            },
            1,
        ));
    }
    let Some(path) = first.strip_prefix(UPDATE) else {
        return Err(format!("'{first}' is not a valid hunk header"));
    };
    let mut rest = &lines[1..];
    let mut used = 1;
    // The move line is matched as written (untrimmed), right after the header.
    let move_path = rest.first().and_then(|l| l.strip_prefix(MOVE_TO));
    if move_path.is_some() {
        rest = &rest[1..];
        used += 1;
    }
    let mut chunks = Vec::new();
    while let Some(line) = rest.first() {
        // Blank lines between chunks are skipped; a line starting with `*` is the next section.
        if line.trim().is_empty() {
            rest = &rest[1..];
            used += 1;
            continue;
        }
        if line.starts_with('*') {
            break;
        }
        let (chunk, n) = one_chunk(rest, chunks.is_empty())?;
        chunks.push(chunk);
        rest = &rest[n..];
        used += n;
    }
    // An update without a chunk (a bare move) is refused: codex has nothing to apply.
    if chunks.is_empty() {
        return Err(format!("Update file hunk for path '{path}' is empty"));
    }
    let hunk = Hunk::Update {
        path: path.to_string(),
        move_path: move_path.map(str::to_string),
        chunks,
    };
    Ok((hunk, used))
}

/// One chunk: an optional `@@` / `@@ <context>` line (only the first chunk may go without),
/// then ` `, `+`, `-` lines (an empty line is an empty context line) up to another line or
/// `*** End of File`.
fn one_chunk(lines: &[&str], first_chunk: bool) -> Result<(Chunk, usize), String> {
    let (context, start) = if lines[0] == "@@" {
        (None, 1)
    } else if let Some(c) = lines[0].strip_prefix("@@ ") {
        (Some(c.to_string()), 1)
    } else if first_chunk {
        (None, 0)
    } else {
        return Err(format!(
            "Expected update hunk to start with a @@ context marker, got: '{}'",
            lines[0]
        ));
    };
    if start >= lines.len() {
        return Err("Update hunk does not contain any lines".into());
    }
    let mut chunk = Chunk {
        context,
        old: Vec::new(),
        new: Vec::new(),
        eof: false,
    };
    let mut parsed = 0;
    for line in &lines[start..] {
        if *line == END_OF_FILE {
            if parsed == 0 {
                return Err("Update hunk does not contain any lines".into());
            }
            chunk.eof = true;
            parsed += 1;
            break;
        }
        match line.chars().next() {
            None => {
                chunk.old.push(String::new());
                chunk.new.push(String::new());
            }
            Some(' ') => {
                chunk.old.push(line[1..].to_string());
                chunk.new.push(line[1..].to_string());
            }
            Some('+') => chunk.new.push(line[1..].to_string()),
            Some('-') => chunk.old.push(line[1..].to_string()),
            Some(_) if parsed == 0 => {
                return Err(format!("Unexpected line found in update hunk: '{line}'"));
            }
            // The next chunk's `@@`, or whatever follows: this chunk ends here.
            Some(_) => break,
        }
        parsed += 1;
    }
    Ok((chunk, start + parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_section_kind() {
        let hunks = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+x\n+\n*** Delete File: b.txt\n\
             *** Update File: c.txt\n*** Move to: d.txt\n@@ fn main\n-old\n+new\n ctx\n\
             @@\n+tail\n*** End of File\n*** End Patch",
        )
        .unwrap();
        assert_eq!(
            hunks,
            vec![
                Hunk::Add {
                    path: "a.txt".into(),
                    contents: "x\n\n".into()
                },
                Hunk::Delete {
                    path: "b.txt".into()
                },
                Hunk::Update {
                    path: "c.txt".into(),
                    move_path: Some("d.txt".into()),
                    chunks: vec![
                        Chunk {
                            context: Some("fn main".into()),
                            old: vec!["old".into(), "ctx".into()],
                            new: vec!["new".into(), "ctx".into()],
                            eof: false
                        },
                        Chunk {
                            context: None,
                            old: vec![],
                            new: vec!["tail".into()],
                            eof: true
                        }
                    ]
                }
            ]
        );
    }

    #[test]
    fn refuses_what_codex_refuses() {
        for bad in [
            "hello",
            "*** Begin Patch\n*** Add File: a\n+x",
            "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch",
            "*** Begin Patch\n*** Frobnicate File: a\n*** End Patch",
            "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
            "*** Begin Patch\n*** Update File: a\n@@\n-x\nnot a diff line\n*** End Patch",
            // A blank line after an added file's content is no section header.
            "*** Begin Patch\n*** Add File: a\n+x\n\n*** Delete File: b\n*** End Patch",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // An empty patch parses (codex refuses it later, as empty).
        assert_eq!(parse("*** Begin Patch\n*** End Patch"), Ok(vec![]));
        assert!(parse("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF").is_ok());
    }
}
