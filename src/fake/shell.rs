//! How the codex app-server (0.171.0) presents a shell command the model asked to run.
//!
//! * [`shell_display`]: the `command` string of a `commandExecution` item and of
//!   `item/commandExecution/requestApproval`: `/bin/bash -lc <script>` with shell quoting.
//! * [`command_actions`] / [`approval_command_actions`]: the `commandActions` array (reads,
//!   listings, searches, or one `unknown`) of the item and of the approval request.
//! * [`execpolicy_amendment`]: the `proposedExecpolicyAmendment` of an approval request for an
//!   escalated command.
//!
//! Every rule here was checked against the real binary (see the tests); the rule names in the
//! comments follow codex's own (`parse_command`, `shlex_join`, ...) so the two can be compared.
//! Written from those observations: it shares no code with codex.

use serde_json::{Map, Value};

/// What codex shows instead of the command when a word holds a NUL byte.
const NUL_PLACEHOLDER: &str = "<command included NUL byte>";

/// The login shell and flag codex wraps the model's script in.
pub(crate) const SHELL: &str = "/bin/bash";
const SHELL_FLAG: &str = "-lc";

// ================================================================================================
// Public API
// ================================================================================================

/// The command as the server shows it: `/bin/bash -lc <script>`, each word quoted the way
/// codex's `shlex_join` does it.
pub fn shell_display(command: &str) -> String {
    join_words(&[SHELL, SHELL_FLAG, command])
}

/// The `commandActions` of a `commandExecution` item (`item/started`, `item/completed`) for
/// `command` run in `cwd` (the item's `cwd`: absolute and normalized). A `read` path is
/// resolved against `cwd` as written (`~` stays a plain name); a `read` whose path holds a NUL
/// byte cannot be resolved and is left out.
pub fn command_actions(command: &str, cwd: &str) -> Vec<Value> {
    summarize_script(command)
        .into_iter()
        .filter_map(|action| action.to_json(cwd, ReadPaths::Item))
        .collect()
}

/// The `commandActions` of `item/commandExecution/requestApproval`. They differ from the item's
/// in `read` paths only: `~` and `~/…` are expanded with `$HOME`, and a path with a NUL byte is
/// kept.
pub fn approval_command_actions(command: &str, cwd: &str) -> Vec<Value> {
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    approval_command_actions_with_home(command, cwd, home.as_deref())
}

/// [`approval_command_actions`] with an explicit home directory (`None`: no `~` expansion).
pub fn approval_command_actions_with_home(
    command: &str,
    cwd: &str,
    home: Option<&str>,
) -> Vec<Value> {
    summarize_script(command)
        .into_iter()
        .filter_map(|action| action.to_json(cwd, ReadPaths::ApprovalRequest { home }))
        .collect()
}

/// The commands codex's exec policy checks one by one: each plain command of the script, else
/// the whole `["/bin/bash", "-lc", script]` as one.
pub fn policy_commands(command: &str) -> Vec<Vec<String>> {
    match plain_commands(command) {
        Some(commands) if !commands.is_empty() => commands,
        _ => vec![vec![
            SHELL.to_string(),
            SHELL_FLAG.to_string(),
            command.to_string(),
        ]],
    }
}

/// `proposedExecpolicyAmendment` of the approval request codex sends for an escalated command:
/// the words of the script's first command when the script is a plain sequence of simple
/// commands, otherwise the whole `["/bin/bash", "-lc", script]`.
pub fn execpolicy_amendment(command: &str) -> Vec<String> {
    policy_commands(command)
        .into_iter()
        .next()
        .unwrap_or_default()
}

// ================================================================================================
// Quoting: the `shlex` crate's `try_join` (1.3)
// ================================================================================================

/// Quotes each word and joins them with single spaces; a NUL byte anywhere replaces the whole
/// result with [`NUL_PLACEHOLDER`].
fn join_words<S: AsRef<str>>(words: &[S]) -> String {
    let mut quoted = Vec::with_capacity(words.len());
    for word in words {
        match quote_word(word.as_ref()) {
            Some(q) => quoted.push(q),
            None => return NUL_PLACEHOLDER.to_string(),
        }
    }
    quoted.join(" ")
}

/// Ways a piece of a word can be written.
const BARE: u8 = 1;
const SINGLE_QUOTED: u8 = 2;
const DOUBLE_QUOTED: u8 = 4;

/// Which ways can hold this byte.
fn styles_for(byte: u8) -> u8 {
    if byte >= 0x80 {
        return SINGLE_QUOTED | DOUBLE_QUOTED;
    }
    let mut styles = BARE | SINGLE_QUOTED | DOUBLE_QUOTED;
    if !(byte.is_ascii_alphanumeric() || b"+-./:@]_".contains(&byte)) {
        styles &= !BARE;
    }
    if b"'^\\".contains(&byte) {
        styles &= !SINGLE_QUOTED;
    }
    if b"`$!^".contains(&byte) {
        styles &= !DOUBLE_QUOTED;
    }
    styles
}

/// The longest prefix one style can hold, and that style (bare, then '…', then "…").
fn next_chunk(bytes: &[u8]) -> (usize, u8) {
    // A leading caret is always single-quoted (old zsh reads a bare one as a glob).
    let (mut ok, mut len) = if bytes[0] == b'^' {
        (SINGLE_QUOTED, 1)
    } else {
        (BARE | SINGLE_QUOTED | DOUBLE_QUOTED, 0)
    };
    while let Some(&byte) = bytes.get(len) {
        let narrowed = ok & styles_for(byte);
        if narrowed == 0 {
            break;
        }
        ok = narrowed;
        len += 1;
    }
    let style = if ok & BARE != 0 {
        BARE
    } else if ok & SINGLE_QUOTED != 0 {
        SINGLE_QUOTED
    } else {
        DOUBLE_QUOTED
    };
    (len, style)
}

/// One word, quoted; `None` if it holds a NUL byte.
fn quote_word(word: &str) -> Option<String> {
    if word.is_empty() {
        return Some("''".to_string());
    }
    if word.contains('\0') {
        return None;
    }
    let mut rest = word.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(word.len() + 2);
    while !rest.is_empty() {
        let (len, style) = next_chunk(rest);
        if len == rest.len() && style == BARE && out.is_empty() {
            return Some(word.to_string());
        }
        let (chunk, tail) = rest.split_at(len);
        match style {
            BARE => out.extend_from_slice(chunk),
            SINGLE_QUOTED => {
                out.push(b'\'');
                out.extend_from_slice(chunk);
                out.push(b'\'');
            }
            _ => {
                out.push(b'"');
                for &byte in chunk {
                    if matches!(byte, b'$' | b'`' | b'"' | b'\\') {
                        out.push(b'\\');
                    }
                    out.push(byte);
                }
                out.push(b'"');
            }
        }
        rest = tail;
    }
    // Chunks only ever end before an ASCII byte, so the bytes stay valid UTF-8.
    Some(String::from_utf8_lossy(&out).into_owned())
}

// ================================================================================================
// Splitting: the `shlex` crate's `split` (1.3), POSIX-ish word splitting
// ================================================================================================

/// Splits like `shlex::split`: blanks are space, tab and newline; `#` at the start of a word
/// comments out the rest of the line; `\` escapes one byte (a newline vanishes); in "…" only
/// `\$ \` \" \\` and `\⏎` are escapes. `None` for an unterminated quote or a trailing `\`.
fn shlex_split(input: &str) -> Option<Vec<String>> {
    let bytes = input.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        // Blanks and comments between words.
        loop {
            match bytes.get(i) {
                Some(b' ' | b'\t' | b'\n') => i += 1,
                Some(b'#') => {
                    while let Some(&b) = bytes.get(i) {
                        i += 1;
                        if b == b'\n' {
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        if i >= bytes.len() {
            return Some(words);
        }
        let mut word: Vec<u8> = Vec::new();
        while let Some(&b) = bytes.get(i) {
            i += 1;
            match b {
                b' ' | b'\t' | b'\n' => break,
                b'\\' => {
                    let escaped = *bytes.get(i)?;
                    i += 1;
                    if escaped != b'\n' {
                        word.push(escaped);
                    }
                }
                b'\'' => loop {
                    let c = *bytes.get(i)?;
                    i += 1;
                    if c == b'\'' {
                        break;
                    }
                    word.push(c);
                },
                b'"' => loop {
                    let c = *bytes.get(i)?;
                    i += 1;
                    match c {
                        b'"' => break,
                        b'\\' => {
                            let escaped = *bytes.get(i)?;
                            i += 1;
                            match escaped {
                                b'$' | b'`' | b'"' | b'\\' => word.push(escaped),
                                b'\n' => {}
                                other => word.extend_from_slice(&[b'\\', other]),
                            }
                        }
                        other => word.push(other),
                    }
                },
                other => word.push(other),
            }
        }
        words.push(String::from_utf8_lossy(&word).into_owned());
    }
}

// ================================================================================================
// The script as a sequence of simple commands (what codex reads with tree-sitter-bash)
// ================================================================================================

/// Why a script is not a plain sequence. Only used to stop the scan.
struct NotPlain;

type Scan<T> = Result<T, NotPlain>;

/// One piece of a shell word.
enum Piece {
    Bare(String),
    SingleQuoted(String),
    DoubleQuoted(String),
}

/// A word as written: its pieces and the text they stand for.
struct Word {
    pieces: Vec<Piece>,
}

impl Word {
    fn text(&self) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Bare(s) | Piece::SingleQuoted(s) | Piece::DoubleQuoted(s) => s.as_str(),
            })
            .collect()
    }

    /// The word is one unquoted piece (what may name a command).
    fn bare_text(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Bare(s)] => Some(s),
            _ => None,
        }
    }
}

/// Words that start something other than a simple command in bash's grammar.
const NON_COMMAND_KEYWORDS: &[&str] = &[
    "if", "for", "while", "until", "case", "select", "function", "declare", "typeset", "export",
    "readonly", "local", "unset", "unsetenv", "!",
];

/// Characters that make an unquoted word subject to expansion (globs, braces, tilde, history,
/// parameters, commands) or escaping; codex does not trust such a word's spelling.
const EXPANDING_CHARS: &[char] = &['{', '}', '*', '?', '[', ']', '\\', '~', '^', '#', '$', '`'];

/// Blanks between words (a newline separates commands instead).
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\u{b}' | '\u{c}')
}

/// Characters that end an unquoted piece.
fn ends_bare_piece(c: char) -> bool {
    is_blank(c)
        || matches!(
            c,
            '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '\'' | '"' | '\\'
        )
}

/// Separators between commands.
#[derive(Clone, Copy, PartialEq)]
enum Separator {
    /// `&&`, `||`, `|`: another command must follow (newlines may come first).
    Joiner,
    /// `;` or a newline.
    Terminator,
}

struct Scanner {
    chars: Vec<char>,
    pos: usize,
}

impl Scanner {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// Length of a line continuation (`\⏎` or `\␍⏎`) at the cursor, if there is one.
    fn continuation_len(&self) -> Option<usize> {
        match (self.peek(), self.peek_at(1), self.peek_at(2)) {
            (Some('\\'), Some('\n'), _) => Some(2),
            (Some('\\'), Some('\r'), Some('\n')) => Some(3),
            _ => None,
        }
    }

    /// Skips blanks, line continuations and escaped blanks (`\ ` between words); tells whether
    /// it skipped one of the escapes (tree-sitter-bash rejects one that only blanks follow to
    /// the end of the script).
    fn skip_blanks(&mut self) -> bool {
        let mut escaped = false;
        loop {
            if let Some(len) = self.continuation_len() {
                self.pos += len;
                escaped = true;
                continue;
            }
            match (self.peek(), self.peek_at(1)) {
                (Some(c), _) if is_blank(c) => self.pos += 1,
                (Some('\\'), Some(' ' | '\t' | '\u{b}' | '\u{c}')) => {
                    self.pos += 2;
                    escaped = true;
                }
                _ => return escaped,
            }
        }
    }

    /// Skips blanks; `Err` when the script ends right after an escaped blank or continuation.
    fn skip_blanks_checked(&mut self) -> Scan<()> {
        if self.skip_blanks() && self.peek().is_none() {
            return Err(NotPlain);
        }
        Ok(())
    }

    /// The separator at the cursor, if any (consumed). Operators codex does not accept
    /// (`&`, `;;`, `|&`, redirections, parentheses) are an error.
    fn separator(&mut self) -> Scan<Option<Separator>> {
        let two = (self.peek(), self.peek_at(1));
        let (sep, len) = match two {
            (Some('&'), Some('&')) | (Some('|'), Some('|')) => (Separator::Joiner, 2),
            (Some('|'), Some('&')) | (Some(';'), Some(';' | '&')) => return Err(NotPlain),
            (Some('|'), _) => (Separator::Joiner, 1),
            (Some(';' | '\n'), _) => (Separator::Terminator, 1),
            (Some('&' | '<' | '>' | '(' | ')'), _) => return Err(NotPlain),
            _ => return Ok(None),
        };
        self.pos += len;
        Ok(Some(sep))
    }

    /// One word (the cursor is on its first character).
    fn word(&mut self) -> Scan<Word> {
        if self.peek() == Some('#') {
            return Err(NotPlain); // a comment
        }
        let mut pieces = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                '\'' => pieces.push(Piece::SingleQuoted(self.single_quoted()?)),
                '"' => pieces.push(Piece::DoubleQuoted(self.double_quoted()?)),
                '\\' => match self.peek_at(1) {
                    // `\⏎`, `\<tab>` end the word (tree-sitter skips them as blanks) ...
                    Some('\n' | '\t' | '\u{b}' | '\u{c}') => break,
                    Some('\r') if self.peek_at(2) == Some('\n') => break,
                    // ... so does `\ ` where a new piece would start; inside an unquoted piece
                    // it is an escaped space, and any other escape is one too.
                    Some(' ') if !matches!(pieces.last(), Some(Piece::Bare(_))) => break,
                    _ => return Err(NotPlain),
                },
                c if ends_bare_piece(c) => break,
                _ => pieces.push(Piece::Bare(self.bare_piece()?)),
            }
        }
        let word = Word { pieces };
        // `''""` and the like: tree-sitter drops an empty concatenation.
        if word.pieces.is_empty() || word.pieces.len() > 1 && word.text().is_empty() {
            return Err(NotPlain);
        }
        Ok(word)
    }

    fn bare_piece(&mut self) -> Scan<String> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if ends_bare_piece(c) {
                break;
            }
            if EXPANDING_CHARS.contains(&c) {
                return Err(NotPlain);
            }
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if text.starts_with('=') {
            return Err(NotPlain);
        }
        Ok(text)
    }

    fn single_quoted(&mut self) -> Scan<String> {
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '\'' {
                return Ok(self.chars[start..self.pos - 1].iter().collect());
            }
        }
        Err(NotPlain)
    }

    /// "…" with no expansion in it and no backslash that bash would remove; the text is kept
    /// as written.
    fn double_quoted(&mut self) -> Scan<String> {
        self.pos += 1;
        let mut text = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '"' => return Ok(text),
                '$' | '`' => return Err(NotPlain),
                '\\' => {
                    let next = self.peek().ok_or(NotPlain)?;
                    if matches!(next, '$' | '`' | '"' | '\\' | '\n') {
                        return Err(NotPlain);
                    }
                    self.pos += 1;
                    text.push('\\');
                    text.push(next);
                }
                other => text.push(other),
            }
        }
        Err(NotPlain)
    }
}

/// Checks the first word of a command: it must be a plain word, not a keyword that starts
/// another construct, not a number and not a variable assignment.
fn check_command_name(word: &Word) -> Scan<()> {
    if let Some(Piece::Bare(first)) = word.pieces.first() {
        if is_assignment_prefix(first) {
            return Err(NotPlain);
        }
    }
    let name = word.bare_text().ok_or(NotPlain)?;
    if NON_COMMAND_KEYWORDS.contains(&name) || is_number(name) {
        return Err(NotPlain);
    }
    Ok(())
}

/// A command name that tree-sitter-bash reads as a variable: `NAME=` or `NAME+=` (an
/// assignment), or `NAME%…` / `NAME@…` (a syntax error there). `--NAME` counts as a name too.
fn is_assignment_prefix(text: &str) -> bool {
    let text = text.strip_prefix("--").unwrap_or(text);
    let name_len = text
        .char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(text.len(), |(i, _)| i);
    let rest = &text[name_len..];
    name_len > 0
        && (rest.starts_with('=')
            || rest.starts_with("+=")
            || rest.starts_with('%')
            || rest.starts_with('@'))
}

fn is_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The script's commands, each as its words, when the script is only simple commands made of
/// literal words, joined by `&&`, `||`, `|`, `;` or newlines. `None` for anything else
/// (expansions, redirections, subshells, assignments, comments, control flow, syntax errors).
fn plain_commands(script: &str) -> Option<Vec<Vec<String>>> {
    let mut scanner = Scanner {
        chars: script.chars().collect(),
        pos: 0,
    };
    let mut commands = Vec::new();
    // After `&&`, `||` or `|` another command must come (newlines may come first).
    let mut needs_command = false;
    loop {
        scanner.skip_blanks_checked().ok()?;
        match scanner.peek() {
            None => return (!needs_command).then_some(commands),
            Some('\n') => {
                scanner.pos += 1;
                continue;
            }
            // An operator where a command should be (`;;`, `&& ls`, `ls; ;`, …).
            Some(';' | '&' | '|' | '<' | '>' | '(' | ')') => return None,
            Some(_) => {}
        }
        // A command: words up to a separator.
        let mut words: Vec<String> = Vec::new();
        loop {
            scanner.skip_blanks_checked().ok()?;
            match scanner.peek() {
                None | Some(';' | '&' | '|' | '<' | '>' | '(' | ')' | '\n') => break,
                Some(_) => {
                    let word = scanner.word().ok()?;
                    if words.is_empty() {
                        check_command_name(&word).ok()?;
                    }
                    words.push(word.text());
                }
            }
        }
        commands.push(words);
        match scanner.separator().ok()? {
            None => return Some(commands), // end of input
            Some(separator) => needs_command = separator == Separator::Joiner,
        }
    }
}

// ================================================================================================
// Classifying commands (codex's `parse_command`)
// ================================================================================================

/// One summarized command, as codex's core has it before the app-server converts it.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    Read {
        cmd: String,
        name: String,
        path: String,
    },
    ListFiles {
        cmd: String,
        path: Option<String>,
    },
    Search {
        cmd: String,
        query: Option<String>,
        path: Option<String>,
    },
    Unknown {
        cmd: String,
    },
}

impl Action {
    fn unknown(cmd: impl Into<String>) -> Self {
        Action::Unknown { cmd: cmd.into() }
    }

    fn read(words: &[String], path: &str) -> Self {
        Action::Read {
            cmd: join_words(words),
            name: short_display_path(path),
            path: path.to_string(),
        }
    }

    fn set_cmd(&mut self, new_cmd: String) {
        match self {
            Action::Read { cmd, .. }
            | Action::ListFiles { cmd, .. }
            | Action::Search { cmd, .. }
            | Action::Unknown { cmd } => *cmd = new_cmd,
        }
    }

    /// The app-server's JSON (`CommandAction`), with `read.path` made absolute against `cwd`;
    /// `None` when an item cannot show the read.
    fn to_json(&self, cwd: &str, read_paths: ReadPaths) -> Option<Value> {
        let mut obj = Map::new();
        let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
        match self {
            Action::Read { cmd, name, path } => {
                let path = match read_paths {
                    ReadPaths::Item if path.contains('\0') => return None,
                    ReadPaths::Item => absolute_path(cwd, path, None),
                    ReadPaths::ApprovalRequest { home } => absolute_path(cwd, path, home),
                };
                obj.insert("type".into(), "read".into());
                obj.insert("command".into(), cmd.clone().into());
                obj.insert("name".into(), name.clone().into());
                obj.insert("path".into(), path.into());
            }
            Action::ListFiles { cmd, path } => {
                obj.insert("type".into(), "listFiles".into());
                obj.insert("command".into(), cmd.clone().into());
                obj.insert("path".into(), opt(path));
            }
            Action::Search { cmd, query, path } => {
                obj.insert("type".into(), "search".into());
                obj.insert("command".into(), cmd.clone().into());
                obj.insert("query".into(), opt(query));
                obj.insert("path".into(), opt(path));
            }
            Action::Unknown { cmd } => {
                obj.insert("type".into(), "unknown".into());
                obj.insert("command".into(), cmd.clone().into());
            }
        }
        Some(Value::Object(obj))
    }
}

/// How the app-server resolves `read` paths: items go through a path-URI join (no `~`, no NUL),
/// approval requests through an absolute-path join that expands `~`.
#[derive(Clone, Copy)]
enum ReadPaths<'a> {
    Item,
    ApprovalRequest { home: Option<&'a str> },
}

/// The whole script: a list of known actions, or one `unknown` carrying the script verbatim.
fn summarize_script(script: &str) -> Vec<Action> {
    let mut actions: Vec<Action> = Vec::new();
    for action in summarize_sequence(script) {
        if actions.last() != Some(&action) {
            actions.push(action);
        }
    }
    if actions.iter().any(|a| matches!(a, Action::Unknown { .. })) {
        vec![Action::unknown(script)]
    } else {
        actions
    }
}

fn summarize_sequence(script: &str) -> Vec<Action> {
    let commands = match plain_commands(script) {
        Some(commands) if !commands.is_empty() => commands,
        _ => return vec![Action::unknown(script)],
    };
    let script_words = shlex_split(script).unwrap_or_else(|| vec![script.to_string()]);
    let several_commands = commands.len() > 1;

    let commands: Vec<Vec<String>> = commands
        .into_iter()
        .filter(|words| !is_formatting_helper(words))
        .collect();
    if commands.is_empty() {
        return vec![Action::unknown(script)];
    }

    // `cd DIR` is dropped; DIR becomes the base of later relative read paths.
    let mut base_dir: Option<String> = None;
    let mut actions = Vec::new();
    for words in &commands {
        if words[0] == "cd" {
            if let Some(dir) = cd_target(&words[1..]) {
                base_dir = Some(match &base_dir {
                    Some(base) => join_path(base, &dir),
                    None => dir,
                });
            }
            continue;
        }
        let mut action = summarize_command(words);
        if let (Action::Read { path, .. }, Some(base)) = (&mut action, &base_dir) {
            *path = join_path(base, path);
        }
        actions.push(action);
    }

    if actions.len() > 1 {
        actions.retain(|a| !matches!(a, Action::Unknown { cmd } if cmd == "true"));
        while let Some(simpler) = simplify_once(&actions) {
            actions = simpler;
        }
    }

    if let [only] = actions.as_mut_slice() {
        let is_connector = |w: &String| matches!(w.as_str(), "|" | "&&" | "||" | ";");
        let had_connectors = several_commands || script_words.iter().any(is_connector);
        match only {
            Action::Read { .. } if had_connectors => {
                let has_pipe = script_words.iter().any(|w| w == "|");
                let has_sed_n = script_words
                    .windows(2)
                    .any(|w| w[0] == "sed" && w[1] == "-n");
                if has_pipe && has_sed_n {
                    only.set_cmd(script.to_string());
                }
            }
            Action::Read { .. } | Action::ListFiles { .. } | Action::Search { .. }
                if !had_connectors =>
            {
                only.set_cmd(join_words(&script_words));
            }
            _ => {}
        }
    }
    actions
}

/// One step of codex's clean-up of a multi-command summary; `None` when nothing applies.
fn simplify_once(actions: &[Action]) -> Option<Vec<Action>> {
    if actions.len() <= 1 {
        return None;
    }
    let unknown_words = |a: &Action| match a {
        Action::Unknown { cmd } => shlex_split(cmd),
        _ => None,
    };
    let first_word_is = |a: &Action, name: &str| {
        unknown_words(a).is_some_and(|w| w.first().map(String::as_str) == Some(name))
    };
    // (codex also drops a `cd …` and a `true` here; neither can be left at this point: `cd` was
    // consumed above and `true` removed before the loop.)

    // A leading `echo …` is dropped.
    if first_word_is(&actions[0], "echo") {
        return Some(actions[1..].to_vec());
    }
    // `nl` with flags only (a numbering stage of a pipeline).
    if let Some(idx) = actions.iter().position(|a| {
        unknown_words(a).is_some_and(|w| {
            w.first().map(String::as_str) == Some("nl") && w[1..].iter().all(|t| t.starts_with('-'))
        })
    }) {
        let mut rest = actions.to_vec();
        rest.remove(idx);
        return Some(rest);
    }
    None
}

/// Pipeline helpers that only reshape output (`wc`, `sort`, `head -n 5`, `sed` without a file
/// to read, …); codex leaves them out of the summary.
fn is_formatting_helper(words: &[String]) -> bool {
    let Some((name, args)) = words.split_first() else {
        return false;
    };
    match name.as_str() {
        "wc" | "tr" | "cut" | "sort" | "uniq" | "tee" | "column" | "yes" | "printf" => true,
        "xargs" => !xargs_mutates(args),
        "awk" => awk_data_file(args).is_none(),
        "head" => match args {
            [] => true,
            [arg] => arg.starts_with('-'),
            [flag, count] => (flag == "-n" || flag == "-c") && all_digits(count),
            _ => false,
        },
        "tail" => match args {
            [] => true,
            [arg] => arg.starts_with('-'),
            [flag, count] => (flag == "-n" || flag == "-c") && is_line_count(count, true),
            _ => false,
        },
        "sed" => !sed_edits_in_place(args) && sed_read_path(args).is_none(),
        _ => false,
    }
}

/// Every character is an ASCII digit (vacuously true for "").
fn all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// `N` or `+N` (with `allow_empty`, the digits may be missing, as codex's helper check allows).
fn is_line_count(s: &str, allow_empty: bool) -> bool {
    let digits = s.strip_prefix('+').unwrap_or(s);
    (allow_empty || !digits.is_empty()) && all_digits(digits)
}

/// `xargs … perl -i …`, `xargs sed -i …`, `xargs rg --replace …`: these edit files.
fn xargs_mutates(args: &[String]) -> bool {
    let mut i = 0;
    let sub: &[String] = loop {
        let Some(arg) = args.get(i) else {
            return false;
        };
        if arg == "--" {
            break &args[i + 1..];
        }
        if !arg.starts_with('-') {
            break &args[i..];
        }
        let takes_value = matches!(arg.as_str(), "-E" | "-e" | "-I" | "-L" | "-n" | "-P" | "-s");
        i += if takes_value { 2 } else { 1 };
    };
    let Some((tool, tool_args)) = sub.split_first() else {
        return false;
    };
    let in_place = |args: &[String]| {
        args.iter()
            .any(|a| a.starts_with("-i") || a.starts_with("-pi"))
    };
    match tool.as_str() {
        "perl" | "ruby" => in_place(tool_args),
        "sed" => in_place(tool_args) || tool_args.iter().any(|a| a == "--in-place"),
        "rg" => tool_args.iter().any(|a| a == "--replace"),
        _ => false,
    }
}

/// The words before the first word that is literally a connector (`|`, `&&`, `||`, `;`):
/// codex's helpers stop there (it matters only for a quoted `'|'` argument).
fn before_connector(args: &[String]) -> &[String] {
    let end = args
        .iter()
        .position(|a| matches!(a.as_str(), "|" | "&&" | "||" | ";"))
        .unwrap_or(args.len());
    &args[..end]
}

/// The arguments without the values of `flags_with_values` and without `--opt=value`
/// arguments; everything after `--` is kept. Other flags stay (callers drop `-…` words).
fn without_flag_values<'a>(args: &'a [String], flags_with_values: &[&str]) -> Vec<&'a String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            out.extend(&args[i..]);
            break;
        }
        if arg.starts_with("--") && arg.contains('=') {
            continue;
        }
        if flags_with_values.contains(&arg.as_str()) {
            if i < args.len() {
                i += 1;
            }
            continue;
        }
        out.push(arg);
    }
    out
}

/// The words that are not flags (nor flag values); after `--`, every word.
fn operands<'a>(args: &'a [String], flags_with_values: &[&str]) -> Vec<&'a String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            out.extend(&args[i..]);
            break;
        }
        if arg.starts_with("--") && arg.contains('=') {
            continue;
        }
        if flags_with_values.contains(&arg.as_str()) {
            if i < args.len() {
                i += 1;
            }
            continue;
        }
        if !arg.starts_with('-') {
            out.push(arg);
        }
    }
    out
}

fn first_operand(args: &[String], flags_with_values: &[&str]) -> Option<String> {
    operands(args, flags_with_values)
        .first()
        .map(|s| s.to_string())
}

fn only_operand(args: &[String], flags_with_values: &[&str]) -> Option<String> {
    match operands(args, flags_with_values).as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

fn non_flags(words: Vec<&String>) -> Vec<&String> {
    words.into_iter().filter(|w| !w.starts_with('-')).collect()
}

/// The path as codex displays it in `listFiles`/`search` and as a read's `name`: the last
/// component that is not `build`, `dist`, `node_modules` or `src`.
fn short_display_path(path: &str) -> String {
    let normalized = path.replace('\\', "/");
    let trimmed = normalized.trim_end_matches('/');
    trimmed
        .rsplit('/')
        .find(|part| !matches!(*part, "" | "build" | "dist" | "node_modules" | "src"))
        .unwrap_or(trimmed)
        .to_string()
}

/// `cd`'s directory: the last operand; `cd -- DIR` takes DIR (or nothing).
fn cd_target(args: &[String]) -> Option<String> {
    let mut target = None;
    for (i, arg) in args.iter().enumerate() {
        if arg == "--" {
            return args.get(i + 1).cloned();
        }
        if !arg.starts_with('-') {
            target = Some(arg.clone());
        }
    }
    target
}

/// `sed -n '<N>p'` / `sed -n '<N>,<M>p'`.
fn is_sed_print_range(arg: Option<&str>) -> bool {
    let Some(range) = arg.and_then(|a| a.strip_suffix('p')) else {
        return false;
    };
    let mut bounds = range.split(',');
    let (first, second, extra) = (bounds.next(), bounds.next(), bounds.next());
    let is_num = |s: &str| !s.is_empty() && all_digits(s);
    extra.is_none() && first.is_some_and(is_num) && second.is_none_or(is_num)
}

/// The file `sed -n <range> FILE` reads, if the command is such a read.
fn sed_read_path(args: &[String]) -> Option<String> {
    let args = before_connector(args);
    if !args.iter().any(|a| a == "-n") {
        return None;
    }
    let mut has_range = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-e" | "--expression" => {
                has_range |= is_sed_print_range(args.get(i + 1).map(String::as_str));
                i += 2;
            }
            "-f" | "--file" => i += 2,
            _ => i += 1,
        }
    }
    has_range = has_range
        || args
            .iter()
            .any(|a| !a.starts_with('-') && is_sed_print_range(Some(a)));
    if !has_range {
        return None;
    }
    let candidates = non_flags(without_flag_values(
        args,
        &["-e", "-f", "--expression", "--file"],
    ));
    match candidates.as_slice() {
        [] => None,
        [first, rest @ ..] if is_sed_print_range(Some(first)) => {
            rest.first().map(|s| s.to_string())
        }
        [first, ..] => Some(first.to_string()),
    }
}

/// `sed -i…` / `sed --in-place[=SUFFIX]` (found the way sed's own option parser would: the
/// values of `-e`/`-f`/`--expression`/`--file` are skipped, a short cluster ends at its `e` or
/// `f`, nothing after `--` is an option). Such a sed edits files: never a read, never a helper.
fn sed_edits_in_place(args: &[String]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        match arg.as_str() {
            "--" => return false,
            "-e" | "-f" | "--expression" | "--file" => i += 1,
            "--in-place" => return true,
            a if a.starts_with("--in-place=") => return true,
            a if a.starts_with('-') && !a.starts_with("--") => {
                for c in a[1..].chars() {
                    match c {
                        'i' => return true,
                        'e' | 'f' => break,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// The data file of `awk PROGRAM FILE` (or `awk -f PROGFILE FILE`).
fn awk_data_file(args: &[String]) -> Option<String> {
    if args.is_empty() {
        return None;
    }
    let args = before_connector(args);
    let has_program_file = args.iter().any(|a| a == "-f" || a == "--file");
    let candidates = non_flags(without_flag_values(
        args,
        &["-F", "-v", "-f", "--field-separator", "--assign", "--file"],
    ));
    let index = if has_program_file { 0 } else { 1 };
    candidates.get(index).map(|s| s.to_string())
}

fn is_python(name: &str) -> bool {
    matches!(name, "python" | "python2" | "python3")
        || name.starts_with("python2.")
        || name.starts_with("python3.")
}

/// `python -c '…'` whose program lists directories.
fn python_lists_files(args: &[String]) -> bool {
    let args = before_connector(args);
    let Some(pos) = args.iter().position(|a| a == "-c") else {
        return false;
    };
    let Some(program) = args.get(pos + 1) else {
        return false;
    };
    [
        "os.walk",
        "os.listdir",
        "os.scandir",
        "glob.glob",
        "glob.iglob",
        "pathlib.Path",
        ".rglob(",
    ]
    .iter()
    .any(|needle| program.contains(needle))
}

fn looks_like_path(s: &str) -> bool {
    matches!(s, "." | "..") || s.contains('/') || s.contains('\\')
}

fn grep_like(words: &[String], args: &[String]) -> Action {
    let args = before_connector(args);
    let mut operands: Vec<&String> = Vec::new();
    let mut pattern: Option<String> = None;
    let mut after_dashes = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if after_dashes {
            operands.push(arg);
            continue;
        }
        match arg.as_str() {
            "--" => after_dashes = true,
            "-e" | "--regexp" | "-f" | "--file" => {
                if let Some(value) = iter.next() {
                    pattern.get_or_insert_with(|| value.clone());
                }
            }
            "-m" | "--max-count" | "-C" | "--context" | "-A" | "--after-context" | "-B"
            | "--before-context" => {
                iter.next();
            }
            a if a.starts_with('-') => {}
            _ => operands.push(arg),
        }
    }
    let path_index = if pattern.is_some() { 0 } else { 1 };
    let path = operands.get(path_index).map(|p| short_display_path(p));
    let query = pattern.or_else(|| operands.first().map(|s| s.to_string()));
    Action::Search {
        cmd: join_words(words),
        query,
        path,
    }
}

/// `head`/`tail` reading a file: `-n N FILE`, `-nN FILE` (tail also `+N`), or just `FILE`.
fn head_tail_read(words: &[String], args: &[String], allow_plus: bool) -> Action {
    let is_count = |s: &str| {
        if allow_plus {
            is_line_count(s, false)
        } else {
            all_digits(s)
        }
    };
    let has_count = match args.split_first() {
        Some((first, rest)) if first == "-n" => rest.first().is_some_and(|n| is_count(n)),
        Some((first, _)) => first.strip_prefix("-n").is_some_and(&is_count),
        None => false,
    };
    if has_count {
        let skip = if args[0] == "-n" && args.get(1).is_some_and(|n| is_count(n)) {
            2
        } else {
            0
        };
        if let Some(file) = args[skip..].iter().find(|a| !a.starts_with('-')) {
            return Action::read(words, file);
        }
    }
    if let [file] = args {
        if !file.starts_with('-') {
            return Action::read(words, file);
        }
    }
    Action::unknown(join_words(words))
}

/// One command's summary.
fn summarize_command(words: &[String]) -> Action {
    let (name, args) = words
        .split_first()
        .map(|(n, a)| (n.as_str(), a))
        .unwrap_or(("", &[]));
    let list = |path: Option<String>| Action::ListFiles {
        cmd: join_words(words),
        path: path.map(|p| short_display_path(&p)),
    };
    let read_only_operand = |flags: &[&str]| match only_operand(args, flags) {
        Some(path) => Action::read(words, &path),
        None => Action::unknown(join_words(words)),
    };
    match name {
        "ls" => list(first_operand(
            args,
            &[
                "-I",
                "-w",
                "--block-size",
                "--format",
                "--time-style",
                "--color",
                "--quoting-style",
            ],
        )),
        "eza" | "exa" => list(first_operand(
            args,
            &[
                "-I",
                "--ignore-glob",
                "--color",
                "--sort",
                "--time-style",
                "--time",
            ],
        )),
        "tree" => list(first_operand(
            args,
            &["-L", "-P", "-I", "--charset", "--filelimit", "--sort"],
        )),
        "du" => list(first_operand(
            args,
            &[
                "-d",
                "--max-depth",
                "-B",
                "--block-size",
                "--exclude",
                "--time-style",
            ],
        )),
        "rg" | "rga" | "ripgrep-all" => {
            let args = before_connector(args);
            let rest = non_flags(without_flag_values(
                args,
                &[
                    "-g",
                    "--glob",
                    "--iglob",
                    "-t",
                    "--type",
                    "--type-add",
                    "--type-not",
                    "-m",
                    "--max-count",
                    "-A",
                    "-B",
                    "-C",
                    "--context",
                    "--max-depth",
                ],
            ));
            if args.iter().any(|a| a == "--files") {
                list(rest.first().map(|s| s.to_string()))
            } else {
                Action::Search {
                    cmd: join_words(words),
                    query: rest.first().map(|s| s.to_string()),
                    path: rest.get(1).map(|p| short_display_path(p)),
                }
            }
        }
        "git" => match args.split_first() {
            Some((sub, sub_args)) if sub == "grep" => grep_like(words, sub_args),
            Some((sub, sub_args)) if sub == "ls-files" => list(first_operand(
                sub_args,
                &["--exclude", "--exclude-from", "--pathspec-from-file"],
            )),
            _ => Action::unknown(join_words(words)),
        },
        "fd" => {
            let rest = non_flags(without_flag_values(
                before_connector(args),
                &[
                    "-t",
                    "--type",
                    "-e",
                    "--extension",
                    "-E",
                    "--exclude",
                    "--search-path",
                ],
            ));
            let (query, path) = match rest.as_slice() {
                [one] if looks_like_path(one) => (None, Some(short_display_path(one))),
                [one] => (Some(one.to_string()), None),
                [query, path, ..] => (Some(query.to_string()), Some(short_display_path(path))),
                [] => (None, None),
            };
            match query {
                Some(_) => Action::Search {
                    cmd: join_words(words),
                    query,
                    path,
                },
                None => Action::ListFiles {
                    cmd: join_words(words),
                    path,
                },
            }
        }
        "find" => {
            let args = before_connector(args);
            let path = args
                .iter()
                .find(|a| !a.starts_with('-') && !matches!(a.as_str(), "!" | "(" | ")"))
                .map(|p| short_display_path(p));
            let query = args
                .iter()
                .position(|a| matches!(a.as_str(), "-name" | "-iname" | "-path" | "-regex"))
                .and_then(|i| args.get(i + 1).cloned());
            match query {
                Some(_) => Action::Search {
                    cmd: join_words(words),
                    query,
                    path,
                },
                None => Action::ListFiles {
                    cmd: join_words(words),
                    path,
                },
            }
        }
        "grep" | "egrep" | "fgrep" => grep_like(words, args),
        "ag" | "ack" | "pt" => {
            let rest = non_flags(without_flag_values(
                before_connector(args),
                &[
                    "-G",
                    "-g",
                    "--file-search-regex",
                    "--ignore-dir",
                    "--ignore-file",
                    "--path-to-ignore",
                ],
            ));
            Action::Search {
                cmd: join_words(words),
                query: rest.first().map(|s| s.to_string()),
                path: rest.get(1).map(|p| short_display_path(p)),
            }
        }
        "cat" | "more" => read_only_operand(&[]),
        "bat" | "batcat" => read_only_operand(&[
            "--theme",
            "--language",
            "--style",
            "--terminal-width",
            "--tabs",
            "--line-range",
            "--map-syntax",
        ]),
        "less" => read_only_operand(&[
            "-p",
            "-P",
            "-x",
            "-y",
            "-z",
            "-j",
            "--pattern",
            "--prompt",
            "--tabs",
            "--shift",
            "--jump-target",
        ]),
        "head" => head_tail_read(words, args, false),
        "tail" => head_tail_read(words, args, true),
        "awk" => match awk_data_file(args) {
            Some(path) => Action::read(words, &path),
            None => Action::unknown(join_words(words)),
        },
        "nl" => {
            let candidates = without_flag_values(args, &["-s", "-w", "-v", "-i", "-b"]);
            match candidates.into_iter().find(|a| !a.starts_with('-')) {
                Some(path) => Action::read(words, path),
                None => Action::unknown(join_words(words)),
            }
        }
        "sed" => match sed_read_path(args) {
            Some(path) if !sed_edits_in_place(args) => Action::read(words, &path),
            _ => Action::unknown(join_words(words)),
        },
        n if is_python(n) && python_lists_files(args) => Action::ListFiles {
            cmd: join_words(words),
            path: None,
        },
        _ => Action::unknown(join_words(words)),
    }
}

// ================================================================================================
// Paths
// ================================================================================================

/// codex treats these as absolute when joining a `cd` directory and a read path (it also knows
/// Windows drive and UNC spellings).
fn is_absolute_like(path: &str) -> bool {
    let mut chars = path.chars();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || matches!(
            (chars.next(), chars.next(), chars.next()),
            (Some(d), Some(':'), Some('\\')) if d.is_ascii_alphabetic()
        )
}

/// `base/rel` (rel wins when absolute), as a path string.
fn join_path(base: &str, rel: &str) -> String {
    if is_absolute_like(rel) || base.is_empty() {
        return rel.to_string();
    }
    if base.ends_with('/') {
        format!("{base}{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

/// The read path as the app-server sends it: `~` / `~/…` expanded with `home`, then resolved
/// against `cwd` and normalized lexically (`.` dropped, `..` pops, no trailing `/`).
fn absolute_path(cwd: &str, path: &str, home: Option<&str>) -> String {
    let expanded = match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_string(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            format!("{home}/{}", rest.trim_start_matches('/'))
        }
        _ => path.to_string(),
    };
    // A plain POSIX join here: `C:\x` is just a relative name to the app-server.
    let full = if expanded.starts_with('/') {
        expanded
    } else {
        format!("{cwd}/{expanded}")
    };
    normalize(&full)
}

fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

// ================================================================================================
// Internals exposed for the differential tests (not part of the API)
// ================================================================================================

#[doc(hidden)]
pub mod internals {
    /// The script's commands as codex's word-only parser sees them.
    pub fn plain_commands(script: &str) -> Option<Vec<Vec<String>>> {
        crate::fake::shell::plain_commands(script)
    }

    /// `shlex::split` semantics.
    pub fn shlex_split(input: &str) -> Option<Vec<String>> {
        crate::fake::shell::shlex_split(input)
    }
}

/// A program the fake starts meets the signals codex's would: none blocked and the usual ones
/// at their defaults. The fake blocks HUP, INT and TERM in every thread for its own `sigwait`
/// (`process.rs`), an ignored disposition may come from whoever started the fake, and both
/// survive exec (`kill -TERM $$` in a command then did nothing; codex's ends with 143).
pub fn signals_as_codex_gives_them(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: sigprocmask(2) and signal(2) only, between fork and exec: async-signal-safe, no
    // parent memory touched.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}
