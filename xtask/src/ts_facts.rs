//! Declaration-order facts from the TypeScript bindings that
//! `codex app-server generate-ts` writes (ts-rs output).
//!
//! The JSON schema bundle sorts `properties` and `required` alphabetically,
//! which loses two facts that serde puts into its error messages: the
//! declaration order of enum variants (`expected one of ...`) and of struct
//! fields (which `missing field` is reported first). ts-rs emits one
//! `export type Name = <type>;` per file in declaration order, so this module
//! tokenizes and parses those type expressions and records, per type:
//!
//! * `objects`: every object literal in source order, as its ordered keys
//!   (`name`, `optional` for `key?:`, and `nulls`, the number of `null`
//!   members of the field's top-level union: `T | null | null` is 2);
//! * `unions`: every union in source order, as ordered member descriptors.
//!
//! The result is written as `schema/<V>/facts/ts.json` by `cargo xtask schema`.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

// ---------------------------------------------------------------- tokens

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// Byte offset into the source, for error messages.
    pos: usize,
}

const PUNCT: &str = "=;|&(){}[]<>,:?.-*";

fn tokenize(src: &str) -> Result<Vec<Token>, String> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(bytes.len(), |n| i + n + 1);
        } else if src[i..].starts_with("/*") {
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| format!("unterminated comment at byte {i}"))?;
            i = i + 2 + end + 2;
        } else if c == b'"' || c == b'\'' {
            let (s, next) = lex_string(src, i)?;
            out.push(Token {
                tok: Tok::Str(s),
                pos: i,
            });
            i = next;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Num(src[start..i].to_string()),
                pos: start,
            });
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
            {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(src[start..i].to_string()),
                pos: start,
            });
        } else if PUNCT.as_bytes().contains(&c) {
            out.push(Token {
                tok: Tok::Punct(c as char),
                pos: i,
            });
            i += 1;
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(format!("unexpected character {ch:?} at byte {i}"));
        }
    }
    Ok(out)
}

/// Lexes a quoted string starting at `start`; returns its value and the
/// offset just past the closing quote.
fn lex_string(src: &str, start: usize) -> Result<(String, usize), String> {
    let quote = src.as_bytes()[start] as char;
    let mut out = String::new();
    let mut chars = src[start + 1..].char_indices();
    while let Some((off, ch)) = chars.next() {
        match ch {
            c if c == quote => return Ok((out, start + 1 + off + 1)),
            '\\' => {
                let (_, esc) = chars
                    .next()
                    .ok_or_else(|| format!("unterminated string at byte {start}"))?;
                match esc {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    'u' => {
                        let hex: String =
                            (0..4).filter_map(|_| chars.next().map(|x| x.1)).collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("bad \\u escape in string at byte {start}"))?;
                        out.push(code);
                    }
                    other => out.push(other),
                }
            }
            '\n' => return Err(format!("newline in string at byte {start}")),
            c => out.push(c),
        }
    }
    Err(format!("unterminated string at byte {start}"))
}

// ---------------------------------------------------------------- AST

/// A TypeScript type expression, as far as ts-rs emits them.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Union(Vec<Ty>),
    Intersection(Vec<Ty>),
    Object(Vec<Field>),
    /// `{ [key in K]?: V }` (or an index signature `{ [key: K]: V }`).
    Mapped {
        key: Box<Ty>,
        optional: bool,
        value: Box<Ty>,
    },
    /// `Array<T>` or `T[]`.
    Array(Box<Ty>),
    Tuple(Vec<Ty>),
    /// A named type, possibly generic (`Record<string, never>`), including
    /// the primitive keywords (`string`, `number`, ...).
    Ref {
        name: String,
        args: Vec<Ty>,
    },
    Str(String),
    Num(String),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// Whether the key was written as a string literal (`"type": ...`).
    pub quoted: bool,
    pub optional: bool,
    pub ty: Ty,
}

/// One `export type Name<...> = <ty>;` declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Alias {
    pub name: String,
    pub ty: Ty,
}

// ---------------------------------------------------------------- parser

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    i: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Self, String> {
        Ok(Parser {
            src,
            toks: tokenize(src)?,
            i: 0,
        })
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }

    fn peek_at(&self, n: usize) -> Option<&Tok> {
        self.toks.get(self.i + n).map(|t| &t.tok)
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(x)) if x == s)
    }

    fn err(&self, what: &str) -> String {
        let (pos, found) = match self.toks.get(self.i) {
            Some(t) => (t.pos, format!("{:?}", t.tok)),
            None => (self.src.len(), "end of input".to_string()),
        };
        let line = self.src[..pos].matches('\n').count() + 1;
        format!("line {line}: expected {what}, found {found}")
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).map(|t| t.tok.clone());
        if t.is_some() {
            self.i += 1;
        }
        t
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), String> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.err(&format!("`{c}`")))
        }
    }

    fn expect_ident(&mut self) -> Result<String, String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            _ => Err(self.err("an identifier")),
        }
    }

    /// Parses a whole ts-rs file: `import` statements, re-exports
    /// (`export type { X } from "..."` and `export * as v2 from "./v2"`, as
    /// in index.ts) and type aliases.
    fn file(&mut self) -> Result<Vec<Alias>, String> {
        let mut aliases = Vec::new();
        while self.peek().is_some() {
            if self.is_ident("import")
                || (self.is_ident("export") && self.peek_at(1) == Some(&Tok::Punct('*')))
            {
                // `import type { A } from "./A";`, `export * as v2 from "./v2";`
                self.skip_statement()?;
            } else if self.is_ident("export")
                && matches!(self.peek_at(1), Some(Tok::Ident(t)) if t == "type")
            {
                if self.peek_at(2) == Some(&Tok::Punct('{')) {
                    self.skip_statement()?;
                } else {
                    self.i += 2;
                    aliases.push(self.alias()?);
                }
            } else {
                return Err(self.err("`import` or `export type`"));
            }
        }
        Ok(aliases)
    }

    fn skip_statement(&mut self) -> Result<(), String> {
        while let Some(t) = self.bump() {
            if t == Tok::Punct(';') {
                return Ok(());
            }
        }
        Err(self.err("`;`"))
    }

    fn alias(&mut self) -> Result<Alias, String> {
        let name = self.expect_ident()?;
        if self.eat_punct('<') {
            // Generic parameters (`<T, U extends X = Y>`) carry no order
            // facts: skip to the matching `>`.
            let mut depth = 1;
            while depth > 0 {
                match self.bump() {
                    Some(Tok::Punct('<')) => depth += 1,
                    Some(Tok::Punct('>')) => depth -= 1,
                    Some(_) => {}
                    None => return Err(self.err("`>`")),
                }
            }
        }
        self.expect_punct('=')?;
        let ty = self.ty()?;
        self.expect_punct(';')?;
        Ok(Alias { name, ty })
    }

    /// type := `|`? intersection (`|` intersection)*
    fn ty(&mut self) -> Result<Ty, String> {
        self.eat_punct('|');
        let mut members = vec![self.intersection()?];
        while self.eat_punct('|') {
            members.push(self.intersection()?);
        }
        Ok(if members.len() == 1 {
            members.pop().unwrap_or(Ty::Null)
        } else {
            Ty::Union(members)
        })
    }

    /// intersection := `&`? postfix (`&` postfix)*
    fn intersection(&mut self) -> Result<Ty, String> {
        self.eat_punct('&');
        let mut members = vec![self.postfix()?];
        while self.eat_punct('&') {
            members.push(self.postfix()?);
        }
        Ok(if members.len() == 1 {
            members.pop().unwrap_or(Ty::Null)
        } else {
            Ty::Intersection(members)
        })
    }

    /// postfix := primary (`[` `]`)*
    fn postfix(&mut self) -> Result<Ty, String> {
        let mut ty = self.primary()?;
        while self.is_punct('[') && self.peek_at(1) == Some(&Tok::Punct(']')) {
            self.i += 2;
            ty = Ty::Array(Box::new(ty));
        }
        Ok(ty)
    }

    fn primary(&mut self) -> Result<Ty, String> {
        match self.peek().cloned() {
            Some(Tok::Punct('(')) => {
                self.i += 1;
                let ty = self.ty()?;
                self.expect_punct(')')?;
                Ok(ty)
            }
            Some(Tok::Punct('{')) => self.object(),
            Some(Tok::Punct('[')) => {
                self.i += 1;
                let mut items = Vec::new();
                while !self.eat_punct(']') {
                    items.push(self.ty()?);
                    if !self.eat_punct(',') {
                        self.expect_punct(']')?;
                        break;
                    }
                }
                Ok(Ty::Tuple(items))
            }
            Some(Tok::Str(s)) => {
                self.i += 1;
                Ok(Ty::Str(s))
            }
            Some(Tok::Num(n)) => {
                self.i += 1;
                Ok(Ty::Num(n))
            }
            Some(Tok::Punct('-')) => {
                self.i += 1;
                match self.bump() {
                    Some(Tok::Num(n)) => Ok(Ty::Num(format!("-{n}"))),
                    _ => {
                        self.i -= 1;
                        Err(self.err("a number after `-`"))
                    }
                }
            }
            Some(Tok::Ident(id)) => {
                self.i += 1;
                match id.as_str() {
                    "null" => return Ok(Ty::Null),
                    "true" => return Ok(Ty::Bool(true)),
                    "false" => return Ok(Ty::Bool(false)),
                    _ => {}
                }
                let mut name = id;
                while self.is_punct('.') {
                    self.i += 1;
                    name.push('.');
                    name.push_str(&self.expect_ident()?);
                }
                let mut args = Vec::new();
                if self.eat_punct('<') {
                    loop {
                        args.push(self.ty()?);
                        if self.eat_punct('>') {
                            break;
                        }
                        self.expect_punct(',')?;
                    }
                }
                if name == "Array" && args.len() == 1 {
                    return Ok(Ty::Array(Box::new(args.remove(0))));
                }
                Ok(Ty::Ref { name, args })
            }
            _ => Err(self.err("a type")),
        }
    }

    /// object := `{` member ((`,` | `;`) member)* (`,` | `;`)? `}`
    fn object(&mut self) -> Result<Ty, String> {
        self.expect_punct('{')?;
        let mut fields = Vec::new();
        loop {
            if self.eat_punct('}') {
                return Ok(Ty::Object(fields));
            }
            if self.is_punct('[') {
                // `[key in K]?: V` or `[key: K]: V`
                self.i += 1;
                self.expect_ident()?;
                if self.is_ident("in") {
                    self.i += 1;
                } else {
                    self.expect_punct(':')?;
                }
                let key = self.ty()?;
                self.expect_punct(']')?;
                let optional = self.eat_punct('?');
                self.expect_punct(':')?;
                let value = self.ty()?;
                self.eat_punct(',');
                self.eat_punct(';');
                if !fields.is_empty() || !self.is_punct('}') {
                    return Err(self.err("`}` closing a mapped type"));
                }
                self.i += 1;
                return Ok(Ty::Mapped {
                    key: Box::new(key),
                    optional,
                    value: Box::new(value),
                });
            }
            let (name, quoted) = match self.bump() {
                Some(Tok::Ident(s)) => (s, false),
                Some(Tok::Str(s)) => (s, true),
                _ => {
                    self.i -= 1;
                    return Err(self.err("an object key or `}`"));
                }
            };
            let optional = self.eat_punct('?');
            self.expect_punct(':')?;
            let ty = self.ty()?;
            fields.push(Field {
                name,
                quoted,
                optional,
                ty,
            });
            if !self.eat_punct(',') && !self.eat_punct(';') && !self.is_punct('}') {
                return Err(self.err("`,` or `}`"));
            }
        }
    }
}

/// Parses the source of one ts-rs file into its type aliases.
pub fn parse_file(src: &str) -> Result<Vec<Alias>, String> {
    Parser::new(src)?.file()
}

/// Parses a single type expression.
#[cfg(test)]
pub fn parse_type(src: &str) -> Result<Ty, String> {
    let mut p = Parser::new(src)?;
    let ty = p.ty()?;
    if p.peek().is_some() {
        return Err(p.err("end of input"));
    }
    Ok(ty)
}

// ---------------------------------------------------------------- rendering

const PRIMITIVES: &[&str] = &[
    "string",
    "number",
    "boolean",
    "bigint",
    "unknown",
    "any",
    "never",
    "undefined",
    "object",
    "symbol",
    "void",
];

/// Renders a type compactly (for `{"other": ...}` descriptors).
pub fn render(ty: &Ty) -> String {
    let mut s = String::new();
    render_into(ty, &mut s);
    s
}

fn render_into(ty: &Ty, s: &mut String) {
    let join = |items: &[Ty], sep: &str, s: &mut String, paren_unions: bool| {
        for (i, t) in items.iter().enumerate() {
            if i > 0 {
                s.push_str(sep);
            }
            let wrap = paren_unions && matches!(t, Ty::Union(_) | Ty::Intersection(_));
            if wrap {
                s.push('(');
            }
            render_into(t, s);
            if wrap {
                s.push(')');
            }
        }
    };
    match ty {
        Ty::Union(m) => join(m, " | ", s, true),
        Ty::Intersection(m) => join(m, " & ", s, true),
        Ty::Object(fields) => {
            s.push_str("{ ");
            for f in fields {
                if f.quoted {
                    s.push_str(&Value::String(f.name.clone()).to_string());
                } else {
                    s.push_str(&f.name);
                }
                s.push_str(if f.optional { "?: " } else { ": " });
                render_into(&f.ty, s);
                s.push_str(", ");
            }
            s.push('}');
        }
        Ty::Mapped {
            key,
            optional,
            value,
        } => {
            s.push_str("{ [key in ");
            render_into(key, s);
            s.push_str(if *optional { "]?: " } else { "]: " });
            render_into(value, s);
            s.push_str(" }");
        }
        Ty::Array(t) => {
            s.push_str("Array<");
            render_into(t, s);
            s.push('>');
        }
        Ty::Tuple(items) => {
            s.push('[');
            join(items, ", ", s, false);
            s.push(']');
        }
        Ty::Ref { name, args } => {
            s.push_str(name);
            if !args.is_empty() {
                s.push('<');
                join(args, ", ", s, false);
                s.push('>');
            }
        }
        Ty::Str(v) => s.push_str(&Value::String(v.clone()).to_string()),
        Ty::Num(n) => s.push_str(n),
        Ty::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Ty::Null => s.push_str("null"),
    }
}

const OTHER_MAX_CHARS: usize = 80;

fn short(ty: &Ty) -> String {
    let full = render(ty);
    if full.chars().count() <= OTHER_MAX_CHARS {
        return full;
    }
    let mut cut: String = full.chars().take(OTHER_MAX_CHARS).collect();
    cut.push_str("...");
    cut
}

// ---------------------------------------------------------------- facts

/// `{"tag": key, "value": lit}` if `fields` starts with a quoted key whose
/// value is a string literal (an internally tagged variant).
fn tag_of(fields: &[Field]) -> Option<Value> {
    match fields.first() {
        Some(Field {
            name,
            quoted: true,
            ty: Ty::Str(v),
            ..
        }) => Some(json!({ "tag": name, "value": v })),
        _ => None,
    }
}

fn is_literal(ty: &Ty) -> bool {
    matches!(ty, Ty::Str(_) | Ty::Num(_) | Ty::Bool(_) | Ty::Null)
}

/// Describes one member of a union.
pub fn describe_member(ty: &Ty) -> Value {
    match ty {
        Ty::Str(s) => json!({ "lit": s }),
        Ty::Object(fields) => {
            if let Some(tag) = tag_of(fields) {
                return tag;
            }
            if let [f] = fields.as_slice() {
                if f.quoted && !is_literal(&f.ty) {
                    return json!({ "key": f.name });
                }
            }
            json!({ "other": short(ty) })
        }
        Ty::Intersection(members) => members
            .iter()
            .find_map(|m| match m {
                Ty::Object(fields) => tag_of(fields),
                _ => None,
            })
            .unwrap_or_else(|| json!({ "other": short(ty) })),
        Ty::Ref { name, args } if args.is_empty() && !PRIMITIVES.contains(&name.as_str()) => {
            json!({ "ref": name })
        }
        _ => json!({ "other": short(ty) }),
    }
}

fn null_count(ty: &Ty) -> usize {
    match ty {
        Ty::Null => 1,
        Ty::Union(m) => m.iter().filter(|t| **t == Ty::Null).count(),
        _ => 0,
    }
}

/// Appends the facts of `ty` and everything inside it, in source order
/// (pre-order: an enclosing literal starts before the ones it contains).
fn collect(ty: &Ty, objects: &mut Vec<Value>, unions: &mut Vec<Value>) {
    match ty {
        Ty::Union(members) => {
            unions.push(Value::Array(members.iter().map(describe_member).collect()));
            for m in members {
                collect(m, objects, unions);
            }
        }
        Ty::Intersection(members) | Ty::Tuple(members) => {
            for m in members {
                collect(m, objects, unions);
            }
        }
        Ty::Object(fields) => {
            objects.push(Value::Array(
                fields
                    .iter()
                    .map(|f| {
                        json!({
                            "name": f.name,
                            "optional": f.optional,
                            "nulls": null_count(&f.ty),
                        })
                    })
                    .collect(),
            ));
            for f in fields {
                collect(&f.ty, objects, unions);
            }
        }
        Ty::Mapped { key, value, .. } => {
            collect(key, objects, unions);
            collect(value, objects, unions);
        }
        Ty::Array(t) => collect(t, objects, unions),
        Ty::Ref { args, .. } => {
            for a in args {
                collect(a, objects, unions);
            }
        }
        Ty::Str(_) | Ty::Num(_) | Ty::Bool(_) | Ty::Null => {}
    }
}

/// The facts of one type: `{"objects": [...], "unions": [...]}`.
pub fn type_facts(ty: &Ty) -> Value {
    let mut objects = Vec::new();
    let mut unions = Vec::new();
    collect(ty, &mut objects, &mut unions);
    json!({ "objects": objects, "unions": unions })
}

/// Walks a `generate-ts` output directory and returns the facts of every
/// type, keyed by its path relative to `root` without `.ts` (`v2/UserInput`,
/// `ClientRequest`, `serde_json/JsonValue`). Files without a type alias
/// (the `index.ts` re-export lists) are skipped.
pub fn facts_from_dir(root: &Path) -> Result<Value, String> {
    let mut files = Vec::new();
    list_ts(root, "", &mut files)?;
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for (key, path) in files {
        let src =
            fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let aliases = parse_file(&src).map_err(|e| format!("{}: {e}", path.display()))?;
        let stem = key.rsplit('/').next().unwrap_or(&key);
        match aliases.as_slice() {
            [] => continue,
            [alias] if alias.name == stem => {
                out.insert(key.clone(), type_facts(&alias.ty));
            }
            _ => {
                let names: Vec<&str> = aliases.iter().map(|a| a.name.as_str()).collect();
                return Err(format!(
                    "{}: expected exactly one type alias named {stem}, found {names:?}",
                    path.display()
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no TypeScript types found under {}",
            root.display()
        ));
    }
    Ok(Value::Object(out.into_iter().collect::<Map<_, _>>()))
}

fn list_ts(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<(String, std::path::PathBuf)>,
) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            list_ts(&path, &format!("{prefix}{name}/"), out)?;
        } else if let Some(stem) = name.strip_suffix(".ts") {
            out.push((format!("{prefix}{stem}"), path));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- output

/// Serializes `v` deterministically: object keys sorted, two-space indent,
/// containers holding only scalars written on one line, trailing newline.
pub fn to_stable_json(v: &Value) -> String {
    let mut s = String::new();
    write_value(v, 0, &mut s);
    s.push('\n');
    s
}

fn is_flat(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.iter().all(|x| !x.is_array() && !x.is_object()),
        Value::Object(o) => o.values().all(|x| !x.is_array() && !x.is_object()),
        _ => true,
    }
}

fn write_value(v: &Value, indent: usize, s: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match v {
        Value::Array(a) if a.is_empty() => s.push_str("[]"),
        Value::Object(o) if o.is_empty() => s.push_str("{}"),
        Value::Array(a) => {
            if is_flat(v) {
                let items: Vec<String> = a.iter().map(|x| x.to_string()).collect();
                let _ = write!(s, "[{}]", items.join(", "));
            } else {
                s.push_str("[\n");
                for (i, x) in a.iter().enumerate() {
                    s.push_str(&pad(indent + 1));
                    write_value(x, indent + 1, s);
                    s.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
                }
                s.push_str(&pad(indent));
                s.push(']');
            }
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            if is_flat(v) {
                let items: Vec<String> = keys
                    .iter()
                    .map(|k| format!("{}: {}", Value::String((*k).clone()), o[*k]))
                    .collect();
                let _ = write!(s, "{{{}}}", items.join(", "));
            } else {
                s.push_str("{\n");
                for (i, k) in keys.iter().enumerate() {
                    s.push_str(&pad(indent + 1));
                    let _ = write!(s, "{}: ", Value::String((*k).clone()));
                    write_value(&o[*k], indent + 1, s);
                    s.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
                }
                s.push_str(&pad(indent));
                s.push('}');
            }
        }
        scalar => s.push_str(&scalar.to_string()),
    }
}

// ---------------------------------------------------------------- tests

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str) -> Ty {
        Ty::Ref {
            name: name.into(),
            args: vec![],
        }
    }

    fn facts_of(src: &str) -> Value {
        let aliases = parse_file(src).unwrap();
        assert_eq!(aliases.len(), 1);
        type_facts(&aliases[0].ty)
    }

    const HEADER: &str = "// GENERATED CODE! DO NOT MODIFY BY HAND!\n\n// This file was generated by [ts-rs](https://github.com/Aleph-Alpha/ts-rs). Do not edit this file manually.\n";

    #[test]
    fn tokenizer_skips_comments_and_reads_strings() {
        let toks = tokenize("/** doc */ a // x\n \"q\\\"r\" 'y' 12 $schema").unwrap();
        let toks: Vec<Tok> = toks.into_iter().map(|t| t.tok).collect();
        assert_eq!(
            toks,
            vec![
                Tok::Ident("a".into()),
                Tok::Str("q\"r".into()),
                Tok::Str("y".into()),
                Tok::Num("12".into()),
                Tok::Ident("$schema".into()),
            ]
        );
        assert!(tokenize("\"open").is_err());
        assert!(tokenize("/* open").is_err());
        assert!(tokenize("a # b").is_err());
    }

    #[test]
    fn precedence_intersection_binds_tighter_than_union() {
        let ty = parse_type("{ a: string, } & ({ b: string, } | { c: string, }) | \"x\"").unwrap();
        let Ty::Union(members) = ty else {
            panic!("not a union")
        };
        assert_eq!(members.len(), 2);
        assert!(matches!(&members[0], Ty::Intersection(m) if m.len() == 2
            && matches!(&m[1], Ty::Union(u) if u.len() == 2)));
        assert_eq!(members[1], Ty::Str("x".into()));
    }

    #[test]
    fn parses_all_constructs() {
        assert_eq!(
            parse_type("Array<Array<string>>").unwrap(),
            Ty::Array(Box::new(Ty::Array(Box::new(r("string")))))
        );
        assert_eq!(
            parse_type("Record<string, never>").unwrap(),
            Ty::Ref {
                name: "Record".into(),
                args: vec![r("string"), r("never")]
            }
        );
        assert_eq!(
            parse_type("[number, string | null]").unwrap(),
            Ty::Tuple(vec![r("number"), Ty::Union(vec![r("string"), Ty::Null])])
        );
        assert_eq!(
            parse_type("{ [key in string]?: JsonValue }").unwrap(),
            Ty::Mapped {
                key: Box::new(r("string")),
                optional: true,
                value: Box::new(r("JsonValue"))
            }
        );
        assert_eq!(
            parse_type("1 | -2 | true | false | null").unwrap(),
            Ty::Union(vec![
                Ty::Num("1".into()),
                Ty::Num("-2".into()),
                Ty::Bool(true),
                Ty::Bool(false),
                Ty::Null
            ])
        );
        assert_eq!(
            parse_type("string[]").unwrap(),
            Ty::Array(Box::new(r("string")))
        );
        assert_eq!(parse_type("{ }").unwrap(), Ty::Object(vec![]));
        assert_eq!(
            parse_type("{ \"a-b\"?: X, c: Y }").unwrap(),
            Ty::Object(vec![
                Field {
                    name: "a-b".into(),
                    quoted: true,
                    optional: true,
                    ty: r("X")
                },
                Field {
                    name: "c".into(),
                    quoted: false,
                    optional: false,
                    ty: r("Y")
                },
            ])
        );
    }

    #[test]
    fn rejects_malformed_input() {
        for bad in [
            "{ a: string",
            "{ a string }",
            "Array<string",
            "A | ",
            "(A",
            "{ [key in string]: A, b: B }",
        ] {
            assert!(parse_type(bad).is_err(), "{bad} should not parse");
        }
        assert!(parse_file("export type A = string").is_err());
        assert!(parse_file("let x = 1;").is_err());
    }

    #[test]
    fn file_skips_imports_and_reexports() {
        let src = format!(
            "{HEADER}import type {{ A }} from \"./A\";\n\n/**\n * Doc.\n */\nexport type B = A;\n"
        );
        assert_eq!(
            parse_file(&src).unwrap(),
            vec![Alias {
                name: "B".into(),
                ty: r("A")
            }]
        );
        let index = "export type { A } from \"./A\";\nexport * as v2 from \"./v2\";\n";
        assert_eq!(parse_file(index).unwrap(), vec![]);
    }

    #[test]
    fn ask_for_approval_variant_order() {
        let src = format!("{HEADER}\nexport type AskForApproval = \"untrusted\" | \"on-request\" | {{ \"granular\": {{ sandbox_approval: boolean, rules: boolean, skill_approval: boolean, request_permissions: boolean, mcp_elicitations: boolean, }} }} | \"never\";\n");
        let f = facts_of(&src);
        assert_eq!(
            f["unions"],
            json!([[{"lit": "untrusted"}, {"lit": "on-request"}, {"key": "granular"}, {"lit": "never"}]])
        );
        assert_eq!(f["objects"].as_array().unwrap().len(), 2);
        assert_eq!(
            f["objects"][0],
            json!([{"name": "granular", "optional": false, "nulls": 0}])
        );
        let inner: Vec<&str> = f["objects"][1]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            inner,
            [
                "sandbox_approval",
                "rules",
                "skill_approval",
                "request_permissions",
                "mcp_elicitations"
            ]
        );
    }

    #[test]
    fn user_input_tags_through_intersections_and_doc_comments() {
        let src = "export type UserInput = { \"type\": \"text\", text: string,\n/**\n * UI spans.\n */\ntext_elements: Array<TextElement>, } | { \"type\": \"image\", detail?: ImageDetail, } & ({ url: string, } | { fileId: string, }) | { \"type\": \"localImage\", detail?: ImageDetail, path: string, };";
        let f = facts_of(src);
        assert_eq!(
            f["unions"],
            json!([
                [
                    {"tag": "type", "value": "text"},
                    {"tag": "type", "value": "image"},
                    {"tag": "type", "value": "localImage"}
                ],
                [{"other": "{ url: string, }"}, {"other": "{ fileId: string, }"}]
            ])
        );
        assert_eq!(
            f["objects"][0],
            json!([
                {"name": "type", "optional": false, "nulls": 0},
                {"name": "text", "optional": false, "nulls": 0},
                {"name": "text_elements", "optional": false, "nulls": 0}
            ])
        );
        // text, image, url, fileId, localImage: in source order.
        assert_eq!(f["objects"].as_array().unwrap().len(), 5);
        assert_eq!(f["objects"][2][0]["name"], "url");
        assert_eq!(f["objects"][3][0]["name"], "fileId");
        assert_eq!(
            f["objects"][4][1],
            json!({"name": "detail", "optional": true, "nulls": 0})
        );
    }

    #[test]
    fn double_option_counts_nulls() {
        let f = facts_of(
            "export type P = { a?: string | null | null, b: string | null, c: X, d: null, };",
        );
        let nulls: Vec<u64> = f["objects"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["nulls"].as_u64().unwrap())
            .collect();
        assert_eq!(nulls, [2, 1, 0, 1]);
        assert_eq!(f["objects"][0][0]["optional"], true);
        assert_eq!(
            f["unions"],
            json!([
                [{"other": "string"}, {"other": "null"}, {"other": "null"}],
                [{"other": "string"}, {"other": "null"}]
            ])
        );
    }

    #[test]
    fn member_descriptors() {
        let d = |s: &str| describe_member(&parse_type(s).unwrap());
        assert_eq!(d("\"x\""), json!({"lit": "x"}));
        assert_eq!(d("Foo"), json!({"ref": "Foo"}));
        assert_eq!(d("string"), json!({"other": "string"}));
        assert_eq!(d("Array<Foo>"), json!({"other": "Array<Foo>"}));
        assert_eq!(
            d("{ \"method\": \"a/b\", id: RequestId, }"),
            json!({"tag": "method", "value": "a/b"})
        );
        assert_eq!(d("{ \"Ok\": Foo }"), json!({"key": "Ok"}));
        assert_eq!(
            d("{ \"Ok\": \"lit\" }"),
            json!({"tag": "Ok", "value": "lit"})
        );
        assert_eq!(d("{ ok: Foo }"), json!({"other": "{ ok: Foo, }"}));
        assert_eq!(
            d("{ \"a\": Foo, \"b\": Bar }"),
            json!({"other": "{ \"a\": Foo, \"b\": Bar, }"})
        );
        let long = d(&format!("{{ {} }}", "abcdefghij: string, ".repeat(10)));
        let text = long["other"].as_str().unwrap();
        assert!(text.ends_with("...") && text.chars().count() == OTHER_MAX_CHARS + 3);
    }

    #[test]
    fn stable_json_sorts_keys_and_inlines_flat_containers() {
        let v = json!({"b": [{"z": 1, "a": "x"}], "a": {"k": []}, "c": [1, 2]});
        assert_eq!(
            to_stable_json(&v),
            "{\n  \"a\": {\n    \"k\": []\n  },\n  \"b\": [\n    {\"a\": \"x\", \"z\": 1}\n  ],\n  \"c\": [1, 2]\n}\n"
        );
    }

    #[test]
    fn facts_from_dir_keys_root_and_v2_separately() {
        let dir = std::env::temp_dir().join(format!("ts_facts_test_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("v2")).unwrap();
        fs::write(dir.join("Same.ts"), "export type Same = \"a\" | \"b\";").unwrap();
        fs::write(dir.join("v2/Same.ts"), "export type Same = { x: string, };").unwrap();
        fs::write(
            dir.join("index.ts"),
            "export type { Same } from \"./Same\";",
        )
        .unwrap();
        let facts = facts_from_dir(&dir).unwrap();
        let keys: Vec<&String> = facts.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["Same", "v2/Same"]);
        assert_eq!(
            facts["Same"]["unions"],
            json!([[{"lit": "a"}, {"lit": "b"}]])
        );
        assert_eq!(facts["v2/Same"]["objects"][0][0]["name"], "x");
        fs::write(dir.join("v2/Wrong.ts"), "export type Other = string;").unwrap();
        assert!(facts_from_dir(&dir).unwrap_err().contains("Wrong"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
