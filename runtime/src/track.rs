//! The unknown-field tracker: which keys of an accepted message the real server drops.
//!
//! serde_ignored cannot see through internally tagged enums, untagged enums and `flatten`
//! (serde buffers those into private `Content`), so the generated code walks the `Value`
//! alongside the types instead, dispatching exactly as serde does.

use crate::segment::push_key;
use serde_json::{Map, Value};

/// A JSON path being walked, rendered like `$.params.input[0].extra`.
///
/// A server-direction walk ([`JsonPath::server`]) also collects the always-sent keys it finds
/// absent: the walk already visits every object with its type's fields at hand, and the
/// client direction (hot path) pays one `None` check per object.
#[derive(Debug, Default)]
pub struct JsonPath {
    buf: String,
    marks: Vec<usize>,
    /// Paths of keys the real server always writes (TS `x: T | null`) that the object lacks;
    /// `None` on a client walk, where a client may leave them out.
    missing: Option<Vec<String>>,
    /// On a shaping walk ([`JsonPath::shaping`]): each struct object visited, by path, with its
    /// members in declaration order (the order the real server writes them in).
    orders: Option<Vec<(String, Vec<&'static str>)>>,
}

impl JsonPath {
    pub fn root() -> Self {
        JsonPath {
            buf: "$".to_string(),
            marks: Vec::new(),
            missing: None,
            orders: None,
        }
    }

    /// A server walk that also notes each struct object's declared key order: what it takes
    /// to write a value as the real server would (its absent always-sent keys, its key order).
    pub fn shaping() -> Self {
        JsonPath {
            orders: Some(Vec::new()),
            ..Self::server()
        }
    }

    /// The struct objects a shaping walk visited: path, members in declaration order.
    pub fn take_orders(&mut self) -> Vec<(String, Vec<&'static str>)> {
        self.orders.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Back to a client walk's root, keeping the buffers (one path serves every line).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.buf.push('$');
        self.marks.clear();
        self.missing = None;
        self.orders = None;
    }

    /// The root of a walk over a message the server wrote (collects absent always-sent keys).
    pub fn server() -> Self {
        JsonPath {
            missing: Some(Vec::new()),
            ..Self::root()
        }
    }

    /// Whether absent always-sent keys are collected (generated code skips the lookups if not).
    pub fn wants_missing(&self) -> bool {
        self.missing.is_some()
    }

    /// Records that child key `k`, always sent by the real server, is absent.
    pub fn missing(&mut self, k: &str) {
        let path = self.child(k);
        if let Some(m) = &mut self.missing {
            m.push(path);
        }
    }

    /// The absent always-sent keys collected so far.
    pub fn take_missing(&mut self) -> Vec<String> {
        self.missing
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub fn key(&mut self, k: &str) {
        self.marks.push(self.buf.len());
        push_key(&mut self.buf, k);
    }

    /// Descends into a declared key by its segment, rendered by the build script (`.name`).
    #[inline]
    pub fn seg(&mut self, segment: &str) {
        self.marks.push(self.buf.len());
        self.buf.push_str(segment);
    }

    pub fn index(&mut self, i: usize) {
        self.marks.push(self.buf.len());
        self.buf.push('[');
        self.buf.push_str(itoa::Buffer::new().format(i));
        self.buf.push(']');
    }

    pub fn pop(&mut self) {
        if let Some(m) = self.marks.pop() {
            self.buf.truncate(m);
        }
    }

    /// The path of child key `k`, without descending.
    pub fn child(&self, k: &str) -> String {
        let mut s = self.buf.clone();
        push_key(&mut s, k);
        s
    }

    pub fn as_str(&self) -> &str {
        &self.buf
    }
}

/// Reports a value the server never reads, by what it carries: nothing for `null`, `{}` or
/// `[]`; the path of each key of an object and of each element of an array; the value's own
/// path otherwise. (An empty container holds nothing a client could lose.)
pub fn dropped(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
    match v {
        Value::Null => {}
        Value::Object(m) => out.extend(m.keys().map(|k| p.child(k))),
        Value::Array(a) => {
            for i in 0..a.len() {
                p.index(i);
                out.push(p.as_str().to_string());
                p.pop();
            }
        }
        _ => out.push(p.as_str().to_string()),
    }
}

/// A type that knows which keys serde takes when deserializing it from a `Value`.
pub trait Track {
    /// Report into `out` every key under `v` that deserializing `Self` would drop.
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>);
    /// As a `#[serde(flatten)]` member: take the keys of `m` this type consumes (marking them
    /// in `taken`) and track their values.
    fn flat(m: &Map<String, Value>, p: &mut JsonPath, out: &mut Vec<String>, taken: &mut [bool]) {
        let _ = (m, p, out, taken);
    }
}

/// A struct's `Track` walk as data: one walker ([`track_members`], [`claim_members`]) serves
/// every generated struct, which keeps a per-struct copy of the walk out of the generated
/// crate's code (it was a tenth of its compiled code).
pub struct Members {
    /// Its members that are not flattened, in declaration order (the order serde reads an
    /// array in); a key named twice is taken by the first.
    pub fields: &'static [Member],
    /// Its flattened members, in declaration order: each takes its keys from what is left.
    pub flats: &'static [FlatFn],
    /// Keys the real server always sends: a server walk notes those an object lacks.
    pub sent: &'static [&'static str],
}

/// One member of [`Members`].
pub struct Member {
    pub key: &'static str,
    /// Its path segment (`segment::segment` of the key, computed at build time).
    pub seg: &'static str,
    pub track: TrackFn,
}

/// [`Track::track`] of a member's type.
pub type TrackFn = fn(&Value, &mut JsonPath, &mut Vec<String>);
/// [`Track::flat`] of a flattened member's type.
pub type FlatFn = fn(&Map<String, Value>, &mut JsonPath, &mut Vec<String>, &mut [bool]);

impl Members {
    fn member(&self, k: &str) -> Option<&Member> {
        self.fields.iter().find(|f| f.key == k)
    }

    fn note_missing(&self, m: &Map<String, Value>, p: &mut JsonPath) {
        if !self.sent.is_empty() && p.wants_missing() {
            for k in self.sent {
                if !m.contains_key(*k) {
                    p.missing(k);
                }
            }
        }
    }
}

/// [`Track::track`] of a struct: an object's keys by member (flattened members take theirs
/// from what the others leave), an array's elements by position (serde reads a struct from
/// either; not with a flattened member, which makes serde refuse arrays).
pub fn track_members(s: &Members, v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if !s.flats.is_empty() => {
            let mut taken = vec![false; m.len()];
            claim_members(s, m, p, out, &mut taken);
            report_untaken(m, &taken, p, out);
        }
        Value::Object(m) => {
            for (k, v) in m {
                match s.member(k) {
                    Some(f) => {
                        p.seg(f.seg);
                        (f.track)(v, p, out);
                        p.pop();
                    }
                    None => out.push(p.child(k)),
                }
            }
            s.note_missing(m, p);
            if let Some(o) = &mut p.orders {
                o.push((p.buf.clone(), s.fields.iter().map(|f| f.key).collect()));
            }
        }
        Value::Array(a) if s.flats.is_empty() => {
            for (n, (f, v)) in s.fields.iter().zip(a).enumerate() {
                p.index(n);
                (f.track)(v, p, out);
                p.pop();
            }
        }
        _ => {}
    }
}

/// [`Track::flat`] of a struct: take the keys of `m` its members consume, in `m`'s order, then
/// its flattened members' from what is left.
pub fn claim_members(
    s: &Members,
    m: &Map<String, Value>,
    p: &mut JsonPath,
    out: &mut Vec<String>,
    taken: &mut [bool],
) {
    if !s.fields.is_empty() {
        for (i, (k, v)) in m.iter().enumerate() {
            if taken[i] {
                continue;
            }
            if let Some(f) = s.member(k) {
                taken[i] = true;
                p.seg(f.seg);
                (f.track)(v, p, out);
                p.pop();
            }
        }
    }
    for flat in s.flats {
        flat(m, p, out, taken);
    }
    s.note_missing(m, p);
}

/// Keys no member took are dropped by serde.
pub fn report_untaken(m: &Map<String, Value>, taken: &[bool], p: &JsonPath, out: &mut Vec<String>) {
    for (i, k) in m.keys().enumerate() {
        if !taken[i] {
            out.push(p.child(k));
        }
    }
}

/// Types whose values have no keys of their own to drop.
macro_rules! leaf {
    ($($t:ty),*) => {$(
        impl $crate::track::Track for $t {
            fn track(_: &serde_json::Value, _: &mut $crate::track::JsonPath, _: &mut Vec<String>) {}
        }
    )*};
}
pub(crate) use leaf;
leaf!(
    String,
    bool,
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    (),
    std::path::PathBuf
);

/// Free-form JSON: its keys are data, never dropped.
impl Track for Value {
    fn track(_: &Value, _: &mut JsonPath, _: &mut Vec<String>) {}
}

impl<T: Track> Track for Option<T> {
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
        if !v.is_null() {
            T::track(v, p, out)
        }
    }
    fn flat(m: &Map<String, Value>, p: &mut JsonPath, out: &mut Vec<String>, taken: &mut [bool]) {
        T::flat(m, p, out, taken)
    }
}

impl<T: Track> Track for Box<T> {
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
        T::track(v, p, out)
    }
    fn flat(m: &Map<String, Value>, p: &mut JsonPath, out: &mut Vec<String>, taken: &mut [bool]) {
        T::flat(m, p, out, taken)
    }
}

impl<T: Track> Track for Vec<T> {
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
        if let Value::Array(a) = v {
            for (i, x) in a.iter().enumerate() {
                p.index(i);
                T::track(x, p, out);
                p.pop();
            }
        }
    }
}

impl<T: Track> Track for std::collections::HashMap<String, T> {
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
        if let Value::Object(m) = v {
            for (k, x) in m {
                p.key(k);
                T::track(x, p, out);
                p.pop();
            }
        }
    }
    /// A flattened map takes every key nobody else took.
    fn flat(m: &Map<String, Value>, p: &mut JsonPath, out: &mut Vec<String>, taken: &mut [bool]) {
        for (i, (k, x)) in m.iter().enumerate() {
            if !taken[i] {
                taken[i] = true;
                p.key(k);
                T::track(x, p, out);
                p.pop();
            }
        }
    }
}

macro_rules! tuple {
    ($($n:tt $t:ident),*) => {
        impl<$($t: Track),*> Track for ($($t,)*) {
            fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
                if let Value::Array(a) = v {
                    $(if let Some(x) = a.get($n) { p.index($n); $t::track(x, p, out); p.pop(); })*
                }
            }
        }
    };
}
tuple!(0 A);
tuple!(0 A, 1 B);
tuple!(0 A, 1 B, 2 C);
