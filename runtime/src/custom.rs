//! Hand-written deserializers the real server uses where the schema shows a plain type.
//! Each message is probed from the binary (see `schema/facts/`), and the corpus checks it.

use crate::fast::{Bail, Fast, Scan, R};
use crate::track::{JsonPath, Track};
use serde::de::{Deserialize, Deserializer, Error};
use serde_json::Value;
use std::path::PathBuf;

/// An absolute path: deserialized like `PathBuf`, then rejected when relative.
#[derive(Debug)]
pub struct AbsolutePathBuf(pub PathBuf);

impl<'de> Deserialize<'de> for AbsolutePathBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = PathBuf::deserialize(d)?;
        if p.is_absolute() {
            Ok(AbsolutePathBuf(p))
        } else {
            Err(D::Error::custom(
                "AbsolutePathBuf deserialized without a base path",
            ))
        }
    }
}

/// A string that must not be empty (reasoning effort names).
#[derive(Debug)]
pub struct ReasoningEffort(pub String);

impl<'de> Deserialize<'de> for ReasoningEffort {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            Err(D::Error::custom("reasoning_effort must not be empty"))
        } else {
            Ok(ReasoningEffort(s))
        }
    }
}

crate::track::leaf!(
    AbsolutePathBuf,
    ReasoningEffort,
    ThreadId,
    StrictAbsolutePath,
    MapOnly
);

/// The fast path's view of the hand-written string types: the same checks on the string.
macro_rules! fast_string {
    ($($t:ty, $expecting:literal => $ok:expr),*) => {$(
        impl Fast for $t {
            const LEAF: bool = true;
            fn fast(s: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
                // Each reads a `PathBuf` or a `String` first: that type's wrong kinds.
                if s.peek()? != b'"' {
                    return Err(s.wrong($expecting));
                }
                let v = s.str()?;
                let ok: fn(&str) -> bool = $ok;
                if ok(&v) { Ok(()) } else { Err(Bail) }
            }
        }
    )*};
}
fast_string!(
    AbsolutePathBuf, "path string" => |v| std::path::Path::new(v).is_absolute(),
    StrictAbsolutePath, "a string" => |v| std::path::Path::new(v).is_absolute(),
    ReasoningEffort, "a string" => |v| !v.is_empty(),
    ThreadId, "a string" => is_uuid
);

/// Rare shapes with their own rules: the exact path takes them.
impl Fast for MapOnly {
    fn fast(_: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        Err(Bail)
    }
}

impl<T> Fast for DynamicToolSpecs<T> {
    fn fast(_: &mut Scan, _: &mut JsonPath, _: &mut Vec<String>) -> R {
        Err(Bail)
    }
}

impl<T: Fast> Fast for Dflt<T> {
    const LEAF: bool = T::LEAF;
    fn fast(s: &mut Scan, p: &mut JsonPath, out: &mut Vec<String>) -> R {
        T::fast(s, p, out)
    }
}

/// A `#[serde(default)]` field: deserialized exactly as `T`, absent without needing
/// `T: Default` (the real types' defaults are values we never need, only the absence rule).
#[derive(Debug)]
pub struct Dflt<T>(pub Option<T>);

impl<T> Default for Dflt<T> {
    fn default() -> Self {
        Dflt(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Dflt<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|t| Dflt(Some(t)))
    }
}

impl<T: Track> Track for Dflt<T> {
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
        T::track(v, p, out)
    }
}

/// A nullable field that must be present: `deserialize_with` makes serde report a missing
/// field instead of defaulting the `Option` to `None`, as the real server's custom
/// deserializers do.
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// A thread id: a UUID string (hyphenated or simple, optionally `urn:uuid:`-prefixed).
#[derive(Debug)]
pub struct ThreadId(pub String);

fn is_uuid(s: &str) -> bool {
    let s = s.strip_prefix("urn:uuid:").unwrap_or(s);
    let s = s
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(s);
    let hex = |p: &str| p.bytes().all(|b| b.is_ascii_hexdigit());
    match s.len() {
        32 => hex(s),
        36 => {
            let parts: Vec<&str> = s.split('-').collect();
            parts.len() == 5
                && [8, 4, 4, 4, 12]
                    .iter()
                    .zip(&parts)
                    .all(|(n, p)| p.len() == *n && hex(p))
        }
        _ => false,
    }
}

impl<'de> Deserialize<'de> for ThreadId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if is_uuid(&s) {
            Ok(ThreadId(s))
        } else {
            Err(D::Error::custom(format!("invalid thread id: {s}")))
        }
    }
}

/// A path that must be absolute, with the message of the server's own check (not the
/// `AbsolutePathBuf` one): ``path `x` is not absolute``.
#[derive(Debug)]
pub struct StrictAbsolutePath(pub PathBuf);

impl<'de> Deserialize<'de> for StrictAbsolutePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let p = PathBuf::from(&s);
        if p.is_absolute() {
            Ok(StrictAbsolutePath(p))
        } else {
            Err(D::Error::custom(format!("path `{s}` is not absolute")))
        }
    }
}

/// A flattened member that takes no keys: the struct it is in then deserializes from maps
/// only, like the server's types with a flattened or hand-written map visitor.
#[derive(Debug)]
pub struct MapOnly;

impl<'de> Deserialize<'de> for MapOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(serde::de::IgnoredAny).map(|_| MapOnly)
    }
}

/// `thread/start.dynamicTools`: the server accepts the canonical tagged specs or a legacy
/// untagged shape, never both in one request. Canonical elements are deserialized from a
/// `Value` (hence `invalid type: number, expected variant identifier`), legacy ones as
/// `LegacyDynamicToolSpec`. `T` is the version's generated `DynamicToolSpec`.
#[derive(Debug)]
pub struct DynamicToolSpecs<T>(std::marker::PhantomData<T>);

/// The legacy shape: the server's struct has six fields (`… with 6 elements`); the last two
/// are not documented anywhere we can read, so they are only counted here.
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct LegacyDynamicToolSpec {
    name: String,
    description: String,
    #[serde(rename = "inputSchema")]
    input_schema: Value,
    #[serde(rename = "deferLoading", default)]
    defer_loading: Option<bool>,
    #[serde(rename = "__codexWireLegacy4", default)]
    legacy4: Option<Value>,
    #[serde(rename = "__codexWireLegacy5", default)]
    legacy5: Option<Value>,
}

const LEGACY_FIELDS: &[&str] = &["name", "description", "inputSchema", "deferLoading"];

fn is_canonical(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.contains_key("type"))
}

/// Whether the specs mix canonical and legacy elements (namespace tools included).
fn mixed(items: &[Value]) -> bool {
    let (mut canonical, mut legacy) = (false, false);
    for it in items {
        if is_canonical(it) {
            canonical = true;
            if it["type"] == "namespace" {
                for t in it["tools"].as_array().into_iter().flatten() {
                    if is_canonical(t) {
                        canonical = true;
                    } else {
                        legacy = true;
                    }
                }
            }
        } else {
            legacy = true;
        }
    }
    canonical && legacy
}

impl<'de, T: for<'a> Deserialize<'a>> Deserialize<'de> for DynamicToolSpecs<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default();
        if mixed(&items) {
            return Err(D::Error::custom(
                "dynamic tools must use either canonical or legacy format consistently",
            ));
        }
        for it in &items {
            let r = if is_canonical(it) {
                T::deserialize(it).map(drop)
            } else {
                LegacyDynamicToolSpec::deserialize(it).map(drop)
            };
            r.map_err(D::Error::custom)?;
        }
        Ok(DynamicToolSpecs(std::marker::PhantomData))
    }
}

impl<T: Track> Track for DynamicToolSpecs<T> {
    fn track(v: &Value, p: &mut JsonPath, out: &mut Vec<String>) {
        let Value::Array(items) = v else { return };
        for (i, it) in items.iter().enumerate() {
            p.index(i);
            if is_canonical(it) {
                T::track(it, p, out);
            } else if let Value::Object(m) = it {
                for k in m.keys().filter(|k| !LEGACY_FIELDS.contains(&k.as_str())) {
                    out.push(p.child(k));
                }
            }
            p.pop();
        }
    }
}
