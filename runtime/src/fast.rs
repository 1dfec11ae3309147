//! The fast path: one scan of the line's bytes that checks it against the generated types and
//! collects the ignored paths, with no `Value` and no serde `Content` built.
//!
//! It is one-sided by design: it answers only when it is sure the exact path (parse into a
//! `Value`, deserialize as the real server does, track) would accept the message with the
//! same ignored paths, and otherwise [`Bail`]s so the exact path decides. Anything unusual
//! (duplicate keys, escaped keys, `flatten`, odd number literals, positional structs) bails.
//! `tests/fast_path.rs` and the fuzzer hold it to that: a fast verdict must equal the exact one.

use crate::track::JsonPath;
use std::borrow::Cow;

/// Not sure: the exact path decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

pub type R<T = ()> = Result<T, Bail>;

/// A type's check as a value: an entry of a method or field table.
pub type Check = fn(&mut Scan, &mut JsonPath, &mut Vec<String>) -> R;

/// Nesting the fast path walks; serde_json's own limit is 128, deeper input bails well before.
const MAX_DEPTH: u32 = 100;

/// At most this many unknown keys per object before bailing (their duplicate check is linear).
const MAX_UNKNOWN: usize = 64;

/// Bytes that end a plain ASCII run inside a string: the quote, the backslash, control
/// characters, and the lead bytes of multi-byte UTF-8 (validated here, not in a second pass).
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    let mut i = 0x80;
    while i < 0x100 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The end of the run of plain string bytes starting at `j`: eight bytes at a time while
/// none of them is a quote, a backslash, a control character or non-ASCII, then byte by byte.
#[inline]
fn plain_run(b: &[u8], j: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        plain_run_sse2(b, j)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        plain_run_swar(b, j)
    }
}

/// [`plain_run`] over at most the 16 bytes at `j`: where the first stopping byte is, or `j + 16`
/// if none of them stops; `None` if fewer than 16 bytes are left.
#[inline(always)]
fn plain_run16(b: &[u8], j: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if j + 16 > b.len() {
            return None;
        }
        // SAFETY: as in `plain_run_sse2`: baseline SSE2, b[j..j + 16] in bounds.
        let mask = unsafe { stop_mask_sse2(b, j) };
        Some(j + (mask | 1 << 16).trailing_zeros() as usize)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (b, j);
        None
    }
}

/// Bit `n` set where byte `j + n` stops a plain run. Caller: `j + 16 <= b.len()`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stop_mask_sse2(b: &[u8], j: usize) -> i32 {
    use std::arch::x86_64::*;
    let x = _mm_loadu_si128(b.as_ptr().add(j) as *const __m128i);
    // Signed: below 0x20 is a control character or (negative) a byte >= 0x80.
    let stop = _mm_or_si128(
        _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
        _mm_or_si128(
            _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8)),
        ),
    );
    _mm_movemask_epi8(stop)
}

/// Whether `b` is all plain ASCII (no quote, backslash or control character): text a JSON
/// string holds as is.
pub fn plain_ascii(b: &[u8]) -> bool {
    plain_run(b, 0) == b.len()
}

/// [`plain_run`] sixteen bytes at a time (SSE2 is part of every x86_64), then word by word.
#[cfg(target_arch = "x86_64")]
#[inline]
fn plain_run_sse2(b: &[u8], mut j: usize) -> usize {
    while j + 16 <= b.len() {
        // SAFETY: SSE2 is baseline on x86_64; the load reads b[j..j + 16], in bounds.
        let mask = unsafe { stop_mask_sse2(b, j) };
        if mask != 0 {
            return j + mask.trailing_zeros() as usize;
        }
        j += 16;
    }
    plain_run_swar(b, j)
}

/// [`plain_run`] eight bytes at a time in a `u64`, then byte by byte.
#[inline]
fn plain_run_swar(b: &[u8], mut j: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Nonzero high bits where a byte of `x` is zero (never misses one).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = b.get(j..j + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        if control | (x & HIGH) | zero(x ^ (ONES * b'"' as u64)) | zero(x ^ (ONES * b'\\' as u64))
            != 0
        {
            break;
        }
        j += 8;
    }
    while j < b.len() && !STOP[b[j] as usize] {
        j += 1;
    }
    j
}

/// The end of the UTF-8 sequence starting at `j` (a non-ASCII byte), as `str::from_utf8`
/// judges it: no overlong forms, no surrogates, nothing above U+10FFFF.
fn utf8_seq(b: &[u8], j: usize) -> R<usize> {
    let cont = |k: usize, lo: u8, hi: u8| b.get(j + k).is_some_and(|c| (lo..=hi).contains(c));
    let n = match b[j] {
        0xC2..=0xDF => 2,
        0xE0 if cont(1, 0xA0, 0xBF) => 3,
        0xE1..=0xEC | 0xEE..=0xEF => 3,
        0xED if cont(1, 0x80, 0x9F) => 3,
        0xF0 if cont(1, 0x90, 0xBF) => 4,
        0xF1..=0xF3 => 4,
        0xF4 if cont(1, 0x80, 0x8F) => 4,
        _ => return Err(Bail),
    };
    if (1..n).all(|k| cont(k, 0x80, 0xBF)) {
        Ok(j + n)
    } else {
        Err(Bail)
    }
}

/// Bytes the scan has validated as UTF-8 (or ASCII grammar) read as text. Checked again only in
/// debug builds: a second UTF-8 pass over every string was a sixth of the fast path's time.
fn text_of(b: &[u8]) -> R<&str> {
    debug_assert!(std::str::from_utf8(b).is_ok(), "text_of on unscanned bytes");
    // SAFETY: every caller passes bytes the scan accepted (strings through `raw_str`, which
    // validates UTF-8 as `str::from_utf8` does — see the test below —, or ASCII grammar).
    Ok(unsafe { std::str::from_utf8_unchecked(b) })
}

/// A cursor over one line of JSON bytes, strict where serde_json is strict. Every byte it
/// accepts is valid UTF-8: a line it scans to the end needs no separate validation.
#[derive(Debug)]
pub struct Scan<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
    /// Set just before a [`Bail`] that is in fact a sure error (see [`Invalid`]).
    invalid: Option<Invalid>,
}

/// The first error serde would report, found by the scan, and sure: the check that found it
/// returns `Err(Bail)` at once, and every caller passes that on unchanged (an untagged enum,
/// whose message would differ, clears it). Only a wrong JSON kind other than a number (whose
/// `Content` form depends on the literal), a missing field, or an untagged enum no variant of
/// which takes the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// `invalid type: <the value at byte at>, expected <expecting>`.
    Type { at: usize, expecting: &'static str },
    /// ``missing field `<name>` ``.
    Missing(&'static str),
    /// `data did not match any variant of untagged enum <name>`.
    Untagged(&'static str),
}

/// A saved cursor position (to read an internally tagged object twice).
#[derive(Clone, Copy, Debug)]
pub struct Mark(usize, u32);

impl<'a> Scan<'a> {
    pub fn new(s: &'a [u8]) -> Self {
        Scan {
            s,
            i: 0,
            depth: 0,
            invalid: None,
        }
    }

    /// The value at the cursor is of a kind a type expecting `expecting` never takes: a sure
    /// error unless it is a number (or not JSON at all: the caller's rescan decides that).
    #[cold]
    #[inline(never)]
    pub fn wrong(&mut self, expecting: &'static str) -> Bail {
        if let Ok(c) = self.peek() {
            if matches!(c, b'n' | b't' | b'f' | b'"' | b'[' | b'{') {
                self.invalid = Some(Invalid::Type {
                    at: self.i,
                    expecting,
                });
            }
        }
        Bail
    }

    /// A required field is absent (the first in declaration order, as serde checks them).
    #[cold]
    #[inline(never)]
    pub fn missing(&mut self, field: &'static str) -> Bail {
        self.invalid = Some(Invalid::Missing(field));
        Bail
    }

    /// No variant of untagged enum `name` takes the value's kind.
    #[cold]
    #[inline(never)]
    pub fn untagged(&mut self, name: &'static str) -> Bail {
        self.invalid = Some(Invalid::Untagged(name));
        Bail
    }

    /// The sure error behind the last `Bail`, if it was one (and forgets it).
    pub fn take_invalid(&mut self) -> Option<Invalid> {
        self.invalid.take()
    }

    /// serde's message for a sure error, appended to `out` (`serde_json`'s wording: `null`
    /// for a unit).
    pub fn write_message(&self, e: Invalid, out: &mut String) -> R {
        use std::fmt::Write;
        let written = match e {
            Invalid::Type { at, expecting } => {
                let mut s = Scan::new(self.s);
                s.i = at;
                out.push_str("invalid type: ");
                match s.peek()? {
                    b'n' => out.push_str("null"),
                    b't' => out.push_str("boolean `true`"),
                    b'f' => out.push_str("boolean `false`"),
                    b'"' => write!(out, "string {:?}", s.str()?).map_err(|_| Bail)?,
                    b'[' => out.push_str("sequence"),
                    b'{' => out.push_str("map"),
                    _ => return Err(Bail),
                }
                out.push_str(", expected ");
                out.push_str(expecting);
                Ok(())
            }
            Invalid::Missing(f) => {
                out.push_str("missing field `");
                out.push_str(f);
                out.push('`');
                Ok(())
            }
            Invalid::Untagged(name) => {
                write!(
                    out,
                    "data did not match any variant of untagged enum {name}"
                )
            }
        };
        written.map_err(|_| Bail)
    }

    pub fn mark(&self) -> Mark {
        Mark(self.i, self.depth)
    }

    pub fn reset(&mut self, m: Mark) {
        self.i = m.0;
        self.depth = m.1;
    }

    /// The text between two positions.
    pub fn text(&self, from: Mark, to: Mark) -> R<&'a str> {
        // Checked: marks are plain positions (one of another line would slip through).
        std::str::from_utf8(self.s.get(from.0..to.0).ok_or(Bail)?).map_err(|_| Bail)
    }

    #[inline]
    fn ws(&mut self) {
        let b = self.s;
        while let Some(&c) = b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    /// The next significant byte, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> R<u8> {
        // Most values and keys follow their `:` or `,` directly: one compare, no loop.
        match self.s.get(self.i) {
            Some(&c) if c > b' ' => Ok(c),
            _ => self.peek_past_ws(),
        }
    }

    /// [`Scan::peek`] past whitespace (or at the end): out of line, as captured lines are
    /// mostly compact, and every walker inlines `peek`.
    #[cold]
    #[inline(never)]
    fn peek_past_ws(&mut self) -> R<u8> {
        self.ws();
        self.s.get(self.i).copied().ok_or(Bail)
    }

    /// Only whitespace is left.
    pub fn end(&mut self) -> R {
        self.ws();
        if self.i == self.s.len() {
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// A string at the cursor: its body between the quotes, and whether it has escapes.
    #[inline(always)]
    pub fn raw_str(&mut self) -> R<(&'a [u8], bool)> {
        if self.peek()? != b'"' {
            return Err(Bail);
        }
        // Inlined: one probe of the next 16 bytes finds the end of a short plain string (most
        // keys and values); anything longer or unusual continues out of line.
        let start = self.i + 1;
        let Some(j) = plain_run16(self.s, start) else {
            return self.raw_str_rest(start, start);
        };
        if self.s.get(j) == Some(&b'"') {
            self.i = j + 1;
            return Ok((&self.s[start..j], false));
        }
        self.raw_str_rest(start, j)
    }

    /// [`Scan::raw_str`] from byte `j` on (the bytes from `start` to `j` are plain ASCII).
    #[inline(never)]
    fn raw_str_rest(&mut self, start: usize, mut j: usize) -> R<(&'a [u8], bool)> {
        let b = self.s;
        let mut escaped = false;
        loop {
            j = plain_run(b, j);
            match b.get(j) {
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    match b.get(j + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                        Some(b'u') => {
                            let hex = b.get(j + 2..j + 6).ok_or(Bail)?;
                            let hex = std::str::from_utf8(hex).map_err(|_| Bail)?;
                            let u = u16::from_str_radix(hex, 16).map_err(|_| Bail)?;
                            // Surrogates (pairs or lone) are left to serde_json.
                            if !hex.bytes().all(|c| c.is_ascii_hexdigit())
                                || (0xD800..0xE000).contains(&u)
                            {
                                return Err(Bail);
                            }
                            j += 6;
                        }
                        _ => return Err(Bail),
                    }
                }
                Some(&c) if c >= 0x80 => j = utf8_seq(b, j)?,
                // A control character or the end of the line.
                _ => return Err(Bail),
            }
        }
        self.i = j + 1;
        Ok((&self.s[start..j], escaped))
    }

    /// A string at the cursor as it is written (escapes kept), and whether it has any.
    pub fn raw_text(&mut self) -> R<(&'a str, bool)> {
        let (raw, escaped) = self.raw_str()?;
        Ok((text_of(raw)?, escaped))
    }

    /// A string at the cursor, unescaped.
    pub fn str(&mut self) -> R<Cow<'a, str>> {
        let (raw, escaped) = self.raw_str()?;
        let raw = text_of(raw)?;
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        let mut it = raw.char_indices();
        while let Some((k, c)) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let (_, e) = it.next().ok_or(Bail)?;
            out.push(match e {
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    let u = u32::from_str_radix(raw.get(k + 2..k + 6).ok_or(Bail)?, 16)
                        .map_err(|_| Bail)?;
                    for _ in 0..4 {
                        it.next();
                    }
                    char::from_u32(u).ok_or(Bail)?
                }
                c => c,
            });
        }
        Ok(Cow::Owned(out))
    }

    /// A number token, checked against the JSON grammar.
    pub fn number(&mut self) -> R<&'a str> {
        self.ws();
        let b = self.s;
        let start = self.i;
        let mut j = start;
        let digits = |j: &mut usize| {
            let s = *j;
            while b.get(*j).is_some_and(u8::is_ascii_digit) {
                *j += 1;
            }
            *j > s
        };
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        match b.get(j) {
            Some(b'0') => j += 1,
            Some(b'1'..=b'9') => {
                digits(&mut j);
            }
            _ => return Err(Bail),
        }
        if b.get(j) == Some(&b'.') {
            j += 1;
            if !digits(&mut j) {
                return Err(Bail);
            }
        }
        if matches!(b.get(j), Some(b'e' | b'E')) {
            j += 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if !digits(&mut j) {
                return Err(Bail);
            }
        }
        self.i = j;
        text_of(&self.s[start..j])
    }

    fn literal(&mut self, word: &str) -> R {
        self.ws();
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    pub fn null(&mut self) -> R {
        self.literal("null")
    }

    pub fn bool(&mut self) -> R {
        match self.peek()? {
            b't' => self.literal("true"),
            _ => self.literal("false"),
        }
    }

    /// Opens an object (the cursor must be on `{`).
    pub fn obj_begin(&mut self) -> R {
        if self.peek()? != b'{' {
            return Err(Bail);
        }
        self.open()
    }

    /// Opens an array (the cursor must be on `[`).
    pub fn arr_begin(&mut self) -> R {
        if self.peek()? != b'[' {
            return Err(Bail);
        }
        self.open()
    }

    fn open(&mut self) -> R {
        self.i += 1;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        Ok(())
    }

    /// The next key of an open object (its value is next), or `None` at its end. Keys with
    /// escapes bail: they are rare, and the gate's key search relies on their absence.
    pub fn next_key(&mut self, first: &mut bool) -> R<Option<&'a str>> {
        let c = self.peek()?;
        // After a comma a key must follow: `{"a":1,}` bails in `raw_str`.
        if c == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Ok(None);
        }
        if *first {
            *first = false;
        } else if c == b',' {
            self.i += 1;
        } else {
            return Err(Bail);
        }
        let (k, escaped) = self.raw_str()?;
        if escaped || self.peek()? != b':' {
            return Err(Bail);
        }
        self.i += 1;
        Ok(Some(text_of(k)?))
    }

    /// Whether an open array has another element (positioned on it).
    pub fn next_elem(&mut self, first: &mut bool) -> R<bool> {
        let c = self.peek()?;
        if c == b']' {
            self.i += 1;
            self.depth -= 1;
            return Ok(false);
        }
        if *first {
            *first = false;
        } else if c == b',' {
            self.i += 1;
        } else {
            return Err(Bail);
        }
        Ok(true)
    }

    /// Any JSON value (its keys are data: duplicates and escapes are fine here).
    pub fn skip(&mut self) -> R {
        self.skip_as::<false>()
    }

    /// [`Scan::skip`], but bails on a repeated (or escaped) key in any object: parsed into a
    /// `Value`, the last of two equal keys wins in the first one's place, so an error the scan
    /// found before it may be no error the server sees.
    pub fn skip_unique(&mut self) -> R {
        self.skip_as::<true>()
    }

    fn skip_as<const UNIQUE: bool>(&mut self) -> R {
        match self.peek()? {
            b'"' => self.raw_str().map(drop),
            b'{' if UNIQUE => {
                self.open()?;
                let mut keys = Unknown::new();
                let mut first = true;
                while let Some(k) = self.next_key(&mut first)? {
                    keys.add(k)?;
                    self.skip_as::<true>()?;
                }
                Ok(())
            }
            b'{' => {
                self.open()?;
                if self.peek()? == b'}' {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                loop {
                    self.raw_str()?;
                    if self.peek()? != b':' {
                        return Err(Bail);
                    }
                    self.i += 1;
                    self.skip_as::<false>()?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(());
                        }
                        _ => return Err(Bail),
                    }
                }
            }
            b'[' => {
                self.open()?;
                let mut first = true;
                while self.next_elem(&mut first)? {
                    self.skip_as::<UNIQUE>()?;
                }
                Ok(())
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => {
                // serde's buffered `Content` (inside tagged or untagged enums) rejects
                // integers beyond 64 bits even where any value is fine: let the exact path
                // say so.
                let t = self.number()?;
                let integer = !t.contains(['.', 'e', 'E']);
                if integer && t.parse::<i64>().is_err() && t.parse::<u64>().is_err() {
                    return Err(Bail);
                }
                Ok(())
            }
        }
    }

    /// Reads an open object's keys up to `tag` and returns its string value (unescaped
    /// values only). Used on a copy of the position: the caller resets afterwards.
    pub fn find_tag(&mut self, tag: &str) -> R<&'a str> {
        let mut first = true;
        while let Some(k) = self.next_key(&mut first)? {
            if k == tag {
                let (v, escaped) = self.raw_str()?;
                return if escaped { Err(Bail) } else { text_of(v) };
            }
            self.skip()?;
        }
        Err(Bail)
    }
}

/// The JSON kinds a value can have, as bits: what an untagged variant could accept.
pub mod kinds {
    pub const NULL: u8 = 1;
    pub const BOOL: u8 = 2;
    pub const NUMBER: u8 = 4;
    pub const STRING: u8 = 8;
    pub const ARRAY: u8 = 16;
    pub const OBJECT: u8 = 32;
    pub const ANY: u8 = 63;

    /// The kind of the value starting with byte `c`.
    pub fn of(c: u8) -> u8 {
        match c {
            b'n' => NULL,
            b't' | b'f' => BOOL,
            b'"' => STRING,
            b'[' => ARRAY,
            b'{' => OBJECT,
            _ => NUMBER,
        }
    }
}

/// Unknown keys of one object: duplicates bail, and in a tagged (buffered) object the paths
/// are reported after the known fields' own, as serde's tracker sees them.
pub struct Unknown<'a> {
    /// The first keys, without an allocation (the rescan of an erroneous params has one of
    /// these per object, and most objects have few keys), and without writing them up front
    /// (every walked object has one of these, and most never see an unknown key).
    first: [std::mem::MaybeUninit<&'a str>; 8],
    n: usize,
    more: Vec<&'a str>,
}

impl Default for Unknown<'_> {
    fn default() -> Self {
        Unknown {
            first: [std::mem::MaybeUninit::uninit(); 8],
            n: 0,
            more: Vec::new(),
        }
    }
}

impl<'a> Unknown<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn keys(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.first[..self.n.min(8)]
            .iter()
            // SAFETY: `add` writes slot `n` before counting it, and `n` only grows.
            .map(|k| unsafe { k.assume_init() })
            .chain(self.more.iter().copied())
    }

    #[inline]
    pub fn add(&mut self, k: &'a str) -> R {
        if self.n >= MAX_UNKNOWN || self.keys().any(|s| s == k) {
            return Err(Bail);
        }
        if self.n < 8 {
            self.first[self.n] = std::mem::MaybeUninit::new(k);
        } else {
            self.more.push(k);
        }
        self.n += 1;
        Ok(())
    }

    pub fn report(&self, p: &JsonPath, out: &mut Vec<String>) {
        for k in self.keys() {
            out.push(p.child(k));
        }
    }
}

/// A type the fast path can check. Implemented by the generated types that client requests
/// and client responses reach, and by the leaves below.
pub trait Fast {
    /// A type with no keys of its own below it: callers skip path bookkeeping.
    const LEAF: bool = false;

    /// Checks the value at the cursor, consuming it.
    fn fast(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>) -> R;

    /// As the body of an internally tagged variant: the object is open, `tag` is its tag key
    /// (to be skipped once) and unknown keys are reported after the known fields' paths.
    fn fast_fields(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>, tag: &str) -> R {
        let _ = (s, p, out, tag);
        Err(Bail)
    }
}

/// A declared field of a struct, for [`walk`].
pub struct Field {
    pub key: crate::names::Key,
    /// Its path segment (`.name`), rendered by the build script.
    pub seg: &'static str,
    pub check: Check,
    /// Nothing below it can be reported: no path bookkeeping.
    pub leaf: bool,
}

/// A struct's fields as data, for [`walk`]: one walker for every struct keeps the code a line
/// runs through small (generated per struct, the walkers of traffic over every method did not
/// fit the instruction cache together).
pub struct Fields {
    /// In declaration order (at most 64).
    pub fields: &'static [Field],
    /// `fields` by key (see `crate::names`).
    pub slots: &'static [u16],
    /// Bit `n`: field `n` must be present.
    pub required: u64,
    /// `deny_unknown_fields`: an unknown key is an error (the exact path words it).
    pub deny: bool,
}

/// Checks an open object's keys against `d`. In a tagged body, `tag` is skipped once and
/// unknown keys are reported after the known fields' paths (as serde's buffered tracker sees
/// them). serde checks absent fields after the last key, in declaration order.
pub fn walk(
    s: &mut Scan,
    p: &mut JsonPath,
    out: &mut Vec<String>,
    d: &Fields,
    tag: Option<&str>,
) -> R {
    let mut seen = 0u64;
    let mut unknown = Unknown::new();
    let mut tag_seen = false;
    let mut first = true;
    while let Some(k) = s.next_key(&mut first)? {
        if let Some((n, f)) = crate::names::find(d.slots, d.fields, |f| &f.key, k) {
            let bit = 1u64 << n;
            if seen & bit != 0 {
                return Err(Bail);
            }
            seen |= bit;
            if f.leaf {
                (f.check)(s, p, out)?;
            } else {
                p.seg(f.seg);
                (f.check)(s, p, out)?;
                p.pop();
            }
        } else if tag == Some(k) {
            if tag_seen {
                return Err(Bail);
            }
            tag_seen = true;
            s.skip()?;
        } else if d.deny {
            return Err(Bail);
        } else {
            unknown.add(k)?;
            if tag.is_none() {
                out.push(p.child(k));
            }
            s.skip()?;
        }
    }
    if tag.is_some() {
        unknown.report(p, out);
    }
    let absent = d.required & !seen;
    if absent == 0 {
        return Ok(());
    }
    Err(s.missing(d.fields[absent.trailing_zeros() as usize].key.name))
}

impl Fast for String {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        if s.peek()? != b'"' {
            return Err(s.wrong("a string"));
        }
        s.raw_str().map(drop)
    }
}

impl Fast for std::path::PathBuf {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        if s.peek()? != b'"' {
            return Err(s.wrong("path string"));
        }
        s.raw_str().map(drop)
    }
}

impl Fast for bool {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        if !matches!(s.peek()?, b't' | b'f') {
            return Err(s.wrong("a boolean"));
        }
        s.bool()
    }
}

impl Fast for () {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        // serde takes an empty map (or sequence) as a unit too: the exact path decides those.
        if !matches!(s.peek()?, b'n' | b'{' | b'[') {
            return Err(s.wrong("unit"));
        }
        s.null()
    }
}

/// Free-form JSON: any value, keys are data.
impl Fast for serde_json::Value {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        s.skip()
    }
}

/// An integer literal both of serde's routes accept: the server's direct `str::parse` (a
/// `Value` with `arbitrary_precision`) and the buffered `Content` one (`as_u64`/`as_i64`,
/// then a range check). Fractions, exponents and `-0` bail.
fn int(s: &mut Scan, min: i128, max: i128, name: &'static str) -> R {
    if !matches!(s.peek()?, b'-' | b'0'..=b'9') {
        return Err(s.wrong(name));
    }
    let t = s.number()?;
    if t.len() > 20 || t.contains(['.', 'e', 'E']) || t == "-0" {
        return Err(Bail);
    }
    let n: i128 = t.parse().map_err(|_| Bail)?;
    if n < min || n > max {
        return Err(Bail);
    }
    Ok(())
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Fast for $t {
            const LEAF: bool = true;
            fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
                int(s, <$t>::MIN as i128, <$t>::MAX as i128, stringify!($t))
            }
        }
    )*};
}
ints!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

/// An integer literal, or a decimal one that is `f64`'s own shortest rendering (the buffered
/// route turns any other into an opaque number and fails).
impl Fast for f64 {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        if !matches!(s.peek()?, b'-' | b'0'..=b'9') {
            return Err(s.wrong("f64"));
        }
        let t = s.number()?;
        if !t.contains(['.', 'e', 'E']) {
            return if t.len() <= 15 && t != "-0" {
                Ok(())
            } else {
                Err(Bail)
            };
        }
        match t.parse::<f64>() {
            Ok(f) if f.is_finite() && f.to_string() == t => Ok(()),
            _ => Err(Bail),
        }
    }
}

impl Fast for f32 {
    const LEAF: bool = true;
    fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        int(s, -(1 << 24), 1 << 24, "f32")
    }
}

impl<T: Fast> Fast for Option<T> {
    const LEAF: bool = T::LEAF;
    fn fast(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>) -> R {
        if s.peek()? == b'n' {
            s.null()
        } else {
            T::fast(s, p, out)
        }
    }
}

impl<T: Fast> Fast for Box<T> {
    const LEAF: bool = T::LEAF;
    fn fast(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>) -> R {
        T::fast(s, p, out)
    }
    fn fast_fields(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>, tag: &str) -> R {
        T::fast_fields(s, p, out, tag)
    }
}

impl<T: Fast> Fast for Vec<T> {
    const LEAF: bool = T::LEAF;
    fn fast(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>) -> R {
        if s.peek()? != b'[' {
            return Err(s.wrong("a sequence"));
        }
        s.arr_begin()?;
        let mut first = true;
        let mut i = 0;
        while s.next_elem(&mut first)? {
            if T::LEAF {
                T::fast(s, p, out)?;
            } else {
                p.index(i);
                T::fast(s, p, out)?;
                p.pop();
            }
            i += 1;
        }
        Ok(())
    }
}

impl<T: Fast> Fast for std::collections::HashMap<String, T> {
    const LEAF: bool = T::LEAF;
    fn fast(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>) -> R {
        if s.peek()? != b'{' {
            return Err(s.wrong("a map"));
        }
        s.obj_begin()?;
        let mut first = true;
        // A map's keys are all "unknown" to the bitset: the same duplicate check applies.
        let mut keys = Unknown::new();
        while let Some(k) = s.next_key(&mut first)? {
            keys.add(k)?;
            if T::LEAF {
                T::fast(s, p, out)?;
            } else {
                p.key(k);
                T::fast(s, p, out)?;
                p.pop();
            }
        }
        Ok(())
    }
}

/// Tuples are positional and rare: the exact path takes them.
macro_rules! bail_tuple {
    ($($t:ident),*) => {
        impl<$($t),*> Fast for ($($t,)*) {
            fn fast(_: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
                Err(Bail)
            }
        }
    };
}
bail_tuple!(A);
bail_tuple!(A, B);
bail_tuple!(A, B, C);

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time run must stop exactly where the byte loop does.
    #[test]
    fn plain_run_matches_the_byte_loop() {
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..20_000 {
            let len = rng.below(80);
            let pool = [b'a', b'"', b'\\', 0x1f, 0x20, 0x7f, 0x80, 0xff, b'!', 0x00];
            let b: Vec<u8> = (0..len).map(|_| pool[rng.below(pool.len())]).collect();
            let start = rng.below(len + 1);
            let mut j = start;
            while j < b.len() && !STOP[b[j] as usize] {
                j += 1;
            }
            assert_eq!(plain_run(&b, start), j, "{b:?} from {start}");
            #[cfg(target_arch = "x86_64")]
            {
                let probe = (start + 16 <= b.len()).then(|| j.min(start + 16));
                assert_eq!(plain_run16(&b, start), probe, "{b:?} from {start}");
            }
            assert_eq!(plain_run_swar(&b, start), j, "{b:?} from {start}");
        }
    }

    /// Strings the scan accepts are exactly the valid UTF-8 ones.
    #[test]
    fn strings_are_utf8_exactly_when_std_says_so() {
        let mut rng = crate::rng::Rng::new(5);
        let pool = [
            0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
            0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff,
        ];
        for _ in 0..200_000 {
            let len = rng.below(6);
            let body: Vec<u8> = (0..len).map(|_| pool[rng.below(pool.len())]).collect();
            let mut line = vec![b'"'];
            line.extend_from_slice(&body);
            line.push(b'"');
            let scanned = Scan::new(&line).raw_str().is_ok();
            assert_eq!(scanned, std::str::from_utf8(&body).is_ok(), "{body:x?}");
        }
    }
}
