//! Where in a line the offending value is: byte spans for JSON paths (`$.params.input[0].x`)
//! and best guesses for serde messages. A small scanner over the text (serde_json keeps no
//! positions); anything it cannot follow yields `None` and the line is quoted without carets.

/// The span of `"key": value` at `path`, or of the element for an index.
pub fn path(text: &[u8], path: &str) -> Option<(usize, usize)> {
    let rest = path.strip_prefix('$')?;
    let mut segs = Vec::new();
    let mut r = rest;
    while !r.is_empty() {
        if let Some(t) = r.strip_prefix('.') {
            let end = t.find(['.', '[']).unwrap_or(t.len());
            segs.push(Seg::Key(&t[..end]));
            r = &t[end..];
        } else if let Some(t) = r.strip_prefix('[') {
            let end = t.find(']')?;
            segs.push(Seg::Index(t[..end].parse().ok()?));
            r = &t[end + 1..];
        } else {
            return None;
        }
    }
    let mut s = Scanner { t: text, p: 0 };
    s.ws();
    // (start of what is shown, start of the value, end of the value)
    let mut span = (s.p, s.p, s.value_end()?);
    for seg in segs {
        s.p = span.1;
        span = match seg {
            Seg::Key(k) => s.member(k)?,
            Seg::Index(i) => s.element(i)?,
        };
    }
    Some((span.0, span.2))
}

/// A best guess at the value a serde or server message is about.
pub fn for_message(text: &[u8], msg: &str) -> Option<(usize, usize)> {
    let ticked = between(msg, '`', '`');
    if msg.contains("missing field") || msg.contains("invalid length") {
        return path(text, "$.params").or_else(|| path(text, "$"));
    }
    if msg.starts_with("Not initialized") || msg.starts_with("Already initialized") {
        return path(text, "$.method");
    }
    if let Some(reason) = msg.strip_suffix(" requires experimentalApi capability") {
        if let Some((_, field)) = reason.split_once('.') {
            return path(text, &format!("$.params.{field}"));
        }
        return path(text, "$.method");
    }
    if let Some(name) = msg.strip_prefix("Invalid clientInfo.name") {
        let _ = name;
        return path(text, "$.params.clientInfo.name");
    }
    if let Some(t) = ticked {
        if msg.contains("unknown field") {
            return find(text, &format!("\"{t}\""));
        }
        // `unknown variant `x``, `invalid type: integer `42``.
        return find(text, &format!("\"{t}\"")).or_else(|| find(text, t));
    }
    if let Some(q) = between(msg, '"', '"') {
        return find(text, &format!("\"{q}\""));
    }
    path(text, "$.params")
}

fn between(s: &str, open: char, close: char) -> Option<&str> {
    let a = s.find(open)? + open.len_utf8();
    let b = s[a..].find(close)? + a;
    (b > a).then(|| &s[a..b])
}

fn find(text: &[u8], needle: &str) -> Option<(usize, usize)> {
    let n = needle.as_bytes();
    if n.is_empty() || n.len() > text.len() {
        return None;
    }
    text.windows(n.len())
        .position(|w| w == n)
        .map(|p| (p, p + n.len()))
}

enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

struct Scanner<'a> {
    t: &'a [u8],
    p: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self
            .t
            .get(self.p)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            self.p += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.t.get(self.p) == Some(&c)).then(|| self.p += 1)
    }

    /// End of the string starting at `p` (on its opening quote).
    fn string_end(&mut self) -> Option<usize> {
        self.p += 1;
        loop {
            match self.t.get(self.p)? {
                b'"' => {
                    self.p += 1;
                    return Some(self.p);
                }
                b'\\' => self.p += 2,
                _ => self.p += 1,
            }
        }
    }

    /// Skips one value (iteratively: no recursion on deep nesting), returns its end.
    fn value_end(&mut self) -> Option<usize> {
        self.ws();
        let mut depth = 0usize;
        loop {
            match *self.t.get(self.p)? {
                b'"' => {
                    self.string_end()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.p += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    self.p += 1;
                }
                b',' | b':' if depth > 0 => self.p += 1,
                c if c.is_ascii_whitespace() && depth > 0 => self.p += 1,
                _ => {
                    // A scalar: up to the next delimiter.
                    let start = self.p;
                    while self.t.get(self.p).is_some_and(|c| {
                        !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                    }) {
                        self.p += 1;
                    }
                    if self.p == start {
                        return None;
                    }
                }
            }
            if depth == 0 {
                return Some(self.p);
            }
        }
    }

    /// In the object at `p`: the last member named `key` (last wins, like serde) as
    /// (key start, value start, value end).
    fn member(&mut self, key: &str) -> Option<(usize, usize, usize)> {
        self.eat(b'{')?;
        let mut found = None;
        loop {
            self.ws();
            if self.t.get(self.p) == Some(&b'}') {
                return found;
            }
            let kstart = self.p;
            if self.t.get(self.p) != Some(&b'"') {
                return found;
            }
            let kend = self.string_end()?;
            self.eat(b':')?;
            self.ws();
            let vstart = self.p;
            let vend = self.value_end()?;
            if &self.t[kstart + 1..kend - 1] == key.as_bytes() {
                found = Some((kstart, vstart, vend));
            }
            if self.eat(b',').is_none() {
                return found;
            }
        }
    }

    /// In the array at `p`: element `i` as (start, start, end).
    fn element(&mut self, i: usize) -> Option<(usize, usize, usize)> {
        self.eat(b'[')?;
        for n in 0.. {
            self.ws();
            let start = self.p;
            let end = self.value_end()?;
            if n == i {
                return Some((start, start, end));
            }
            self.eat(b',')?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: &str, s: Option<(usize, usize)>) -> &str {
        let (a, b) = s.unwrap();
        &t[a..b]
    }

    #[test]
    fn paths() {
        let t = r#"{"id":1, "params":{"input":[{"type":"text","x":{"a":[1,2]}}, {"extra": "v"}],"t":0.2}}"#;
        assert_eq!(at(t, path(t.as_bytes(), "$.params.t")), r#""t":0.2"#);
        assert_eq!(
            at(t, path(t.as_bytes(), "$.params.input[1].extra")),
            r#""extra": "v""#
        );
        assert_eq!(
            at(t, path(t.as_bytes(), "$.params.input[0].x")),
            r#""x":{"a":[1,2]}"#
        );
        assert!(path(t.as_bytes(), "$.params.nope").is_none());
        assert!(path(b"{\"a\":[[[[", "$.a[0]").is_none());
    }

    #[test]
    fn messages() {
        let t = r#"{"id":3,"method":"thread/start","params":{"approvalPolicy":"sometimes"}}"#;
        let m = "Invalid request: unknown variant `sometimes`, expected one of `untrusted`";
        assert_eq!(at(t, for_message(t.as_bytes(), m)), r#""sometimes""#);
        let m = "Invalid request: missing field `threadId`";
        assert_eq!(
            at(t, for_message(t.as_bytes(), m)),
            r#""params":{"approvalPolicy":"sometimes"}"#
        );
    }
}
