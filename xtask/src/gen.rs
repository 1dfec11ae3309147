//! Deterministic conformance-case generator driven by the vendored schema bundle.
//!
//! No randomness at all: cases come out in schema order, so a regeneration from the same bundle
//! gives the same list. Every case is self-contained: its lines start with `initialize` (except
//! the lifecycle cases that are about not doing so).
//!
//! The real server executes what it accepts, so values are chosen to be harmless: paths live
//! under `/proc/nonexistent/` (nothing can be created there, even as root), commands name a
//! program that cannot exist, URLs point at a closed local port, and methods that could reach
//! out (login, uploads, installs, remote control...) only get mutations that fail validation.

use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

pub const INIT_EXPERIMENTAL: &str = r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"codex-wire-conformance","version":"0.1.0"},"capabilities":{"experimentalApi":true}}}"#;
pub const INIT_PLAIN: &str = r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"codex-wire-conformance","version":"0.1.0"}}}"#;

pub const SAFE_PATH: &str = "/proc/nonexistent/codex-wire";
const SAFE_URL: &str = "http://127.0.0.1:9/codex-wire";
const SAFE_STR: &str = "codex-wire";
const BOGUS: &str = "codex-wire-bogus";
const UNKNOWN_KEY: &str = "codexWireUnknown";
const MAX_DEPTH: usize = 8;

/// Methods the schema bundle does not list but the server knows.
pub const UNLISTED_METHODS: [&str; 3] =
    ["getConversationSummary", "gitDiffToRemote", "getAuthStatus"];

/// Methods whose accepted requests could act outside the sandbox (network, installs, uploads,
/// credentials, unsandboxed processes): only mutations that fail validation are generated.
pub const UNSAFE_METHODS: &[&str] = &[
    "feedback/upload",
    "account/login/start",
    "account/gatewayOAuth/login",
    "account/bedrock/setup",
    "account/bedrock/discover",
    "account/gcp/setup",
    "account/sendAddCreditsNudgeEmail",
    "account/rateLimitResetCredit/consume",
    "accountSession/switch",
    "mcpServer/oauth/login",
    "marketplace/add",
    "marketplace/upgrade",
    "plugin/install",
    "plugin/share/save",
    "plugin/share/updateTargets",
    "plugin/share/checkout",
    "plugin/share/delete",
    "remoteControl/enable",
    "remoteControl/pairing/start",
    "remoteControl/client/revoke",
    "userVerification/enroll",
    "userVerification/delete",
    "userVerification/verify",
    "windowsSandbox/setupStart",
    "externalAgentConfig/import",
    "gitDiffToRemote",
];

#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub category: String,
    pub lines: Vec<Vec<u8>>,
    /// For `untagged_nomatch` cases: JSON pointer (into the bundle) of the untagged node.
    /// Not part of the corpus.
    pub ptr: Option<String>,
}

impl Case {
    /// The line the case is about: the second for framing and notification cases (a plain
    /// request follows it), else the last.
    pub fn focus(&self) -> usize {
        match self.category.as_str() {
            "framing" | "notification" | "oracle_notification" if self.lines.len() == 3 => 1,
            _ => self.lines.len().saturating_sub(1),
        }
    }

    /// Lifecycle and framing cases always get a process of their own.
    pub fn solo(&self) -> bool {
        matches!(
            self.category.as_str(),
            "lifecycle" | "framing" | "notification" | "envelope" | "oracle_notification"
        )
    }
}

/// The vendored bundle with `$ref` resolution.
pub struct Schema {
    pub root: Value,
}

/// One client request method: its name and params schema (absent for the unlisted ones).
pub struct Method {
    pub name: String,
    pub params: Option<Value>,
    /// JSON pointer of the params schema (the `$ref` target when there is one).
    pub params_ptr: String,
}

/// A schema node, classified the way serde will treat it.
#[derive(Clone, Debug)]
pub enum Shape {
    Any,
    Nullable(Box<Node>),
    Object(ObjectShape),
    Map(Box<Node>),
    Array(Box<Node>),
    StrEnum(Vec<String>),
    /// Internally tagged enum: tag key, (tag value, variant object).
    Tagged(String, Vec<(String, Node)>),
    /// Mix of unit variants (strings) and single-key objects (externally tagged).
    External(Vec<String>, Vec<(String, Node)>),
    Untagged(Vec<Node>),
    Str,
    Int {
        min: Option<i64>,
    },
    Num,
    Bool,
    Null,
}

#[derive(Clone, Debug)]
pub struct ObjectShape {
    pub props: Vec<(String, Value)>,
    pub required: Vec<String>,
    pub deny_unknown: bool,
    /// Flattened untagged part (`properties` + `anyOf` in one node).
    pub flat: Vec<Node>,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub shape: Shape,
    /// JSON pointer (into the bundle) of the node after `$ref` resolution.
    pub ptr: String,
}

impl Schema {
    pub fn load(path: &std::path::Path) -> Result<Schema, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let root = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Schema { root })
    }

    fn lookup(&self, r: &str) -> Option<&Value> {
        self.root.pointer(r.strip_prefix('#')?)
    }

    /// Follow `$ref`s and single-element `allOf`s.
    fn deref(&self, mut s: Value, mut ptr: String) -> (Value, String) {
        for _ in 0..32 {
            if let Some(r) = s.get("$ref").and_then(Value::as_str) {
                let r = r.to_string();
                match self.lookup(&r) {
                    Some(t) => {
                        s = t.clone();
                        ptr = r.trim_start_matches('#').to_string();
                        continue;
                    }
                    None => return (Value::Bool(true), ptr),
                }
            }
            if let Some(Value::Array(a)) = s.get("allOf") {
                if a.len() == 1 {
                    s = a[0].clone();
                    ptr = format!("{ptr}/allOf/0");
                    continue;
                }
            }
            break;
        }
        (s, ptr)
    }

    pub fn methods(&self) -> Vec<Method> {
        let mut out = Vec::new();
        let variants = self
            .root
            .pointer("/definitions/ClientRequest/oneOf")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, v) in variants.iter().enumerate() {
            let Some(name) = v
                .pointer("/properties/method/enum/0")
                .and_then(Value::as_str)
            else {
                continue;
            };
            let params = v.pointer("/properties/params").cloned();
            let ptr = match params
                .as_ref()
                .and_then(|p| p.get("$ref"))
                .and_then(Value::as_str)
            {
                Some(r) => r.trim_start_matches('#').to_string(),
                None => format!("/definitions/ClientRequest/oneOf/{i}/properties/params"),
            };
            out.push(Method {
                name: name.to_string(),
                params,
                params_ptr: ptr,
            });
        }
        out
    }

    /// Classify a schema node.
    pub fn node(&self, s: &Value, ptr: &str) -> Node {
        let (s, ptr) = self.deref(s.clone(), ptr.to_string());
        let shape = self.shape(&s, &ptr);
        Node { shape, ptr }
    }

    fn shape(&self, s: &Value, ptr: &str) -> Shape {
        if let Value::Bool(_) = s {
            return Shape::Any;
        }
        if let Some(Value::Array(types)) = s.get("type") {
            let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
            if non_null.len() == 1 {
                let mut inner = s.clone();
                inner["type"] = non_null[0].clone();
                let inner_node = Node {
                    shape: self.shape(&inner, ptr),
                    ptr: ptr.to_string(),
                };
                return if non_null.len() < types.len() {
                    Shape::Nullable(Box::new(inner_node))
                } else {
                    inner_node.shape
                };
            }
            return Shape::Any;
        }
        if let Some(Value::Array(any)) = s.get("anyOf") {
            let mut non_null = Vec::new();
            let mut has_null = false;
            for (i, v) in any.iter().enumerate() {
                if v.get("type") == Some(&Value::from("null")) && v.get("$ref").is_none() {
                    has_null = true;
                } else {
                    non_null.push(self.node(v, &format!("{ptr}/anyOf/{i}")));
                }
            }
            if s.get("properties").is_some() {
                let mut o = self.object_shape(s);
                o.flat = non_null;
                return Shape::Object(o);
            }
            // Keep the variant's own node (and pointer) when there is a single one.
            let inner = if non_null.len() == 1 {
                non_null.pop().unwrap_or(Node {
                    shape: Shape::Any,
                    ptr: ptr.to_string(),
                })
            } else {
                Node {
                    shape: Shape::Untagged(non_null),
                    ptr: ptr.to_string(),
                }
            };
            return if has_null {
                Shape::Nullable(Box::new(inner))
            } else {
                inner.shape
            };
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let nodes: Vec<Node> = one
                .iter()
                .enumerate()
                .map(|(i, v)| self.node(v, &format!("{ptr}/oneOf/{i}")))
                .collect();
            let mut strings = Vec::new();
            let mut objects = Vec::new();
            for n in &nodes {
                match &n.shape {
                    Shape::StrEnum(v) => strings.extend(v.iter().cloned()),
                    Shape::Object(_) => objects.push(n.clone()),
                    _ => return Shape::Untagged(nodes),
                }
            }
            if objects.is_empty() {
                return Shape::StrEnum(strings);
            }
            if let Some(tag) = common_tag(&objects) {
                if strings.is_empty() {
                    let vs = objects
                        .into_iter()
                        .map(|n| (tag_value(&n, &tag).unwrap_or_default(), n))
                        .collect();
                    return Shape::Tagged(tag, vs);
                }
            }
            // Externally tagged: every object has exactly one required property.
            let mut ext = Vec::new();
            for n in &objects {
                if let Shape::Object(o) = &n.shape {
                    if o.props.len() == 1 && o.required.len() == 1 {
                        let (k, v) = &o.props[0];
                        ext.push((
                            k.clone(),
                            self.node(v, &format!("{}/properties/{k}", n.ptr)),
                        ));
                        continue;
                    }
                }
                return Shape::Untagged(nodes);
            }
            return Shape::External(strings, ext);
        }
        if let Some(Value::Array(e)) = s.get("enum") {
            let strs: Vec<String> = e
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            if strs.len() == e.len() {
                return Shape::StrEnum(strs);
            }
            return Shape::Any;
        }
        match s.get("type").and_then(Value::as_str) {
            Some("object") => {
                if s.get("properties").is_some() {
                    return Shape::Object(self.object_shape(s));
                }
                match s.get("additionalProperties") {
                    Some(v @ Value::Object(_)) => Shape::Map(Box::new(
                        self.node(v, &format!("{ptr}/additionalProperties")),
                    )),
                    _ => Shape::Map(Box::new(Node {
                        shape: Shape::Any,
                        ptr: ptr.to_string(),
                    })),
                }
            }
            Some("array") => match s.get("items") {
                Some(v @ Value::Object(_)) => {
                    Shape::Array(Box::new(self.node(v, &format!("{ptr}/items"))))
                }
                _ => Shape::Array(Box::new(Node {
                    shape: Shape::Any,
                    ptr: ptr.to_string(),
                })),
            },
            Some("string") => Shape::Str,
            Some("integer") => Shape::Int {
                min: s.get("minimum").and_then(Value::as_f64).map(|f| f as i64),
            },
            Some("number") => Shape::Num,
            Some("boolean") => Shape::Bool,
            Some("null") => Shape::Null,
            _ => {
                if s.get("properties").is_some() {
                    Shape::Object(self.object_shape(s))
                } else {
                    Shape::Any
                }
            }
        }
    }

    fn object_shape(&self, s: &Value) -> ObjectShape {
        let props = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let required = s
            .get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        ObjectShape {
            props,
            required,
            deny_unknown: s.get("additionalProperties") == Some(&Value::Bool(false)),
            flat: Vec::new(),
        }
    }

    /// A minimal valid instance (harmless values).
    pub fn minimal(&self, n: &Node, name: &str, depth: usize) -> Value {
        match &n.shape {
            Shape::Any => json!({}),
            Shape::Nullable(inner) => self.minimal(inner, name, depth),
            Shape::Object(o) => {
                let mut m = Map::new();
                if depth > 12 {
                    return Value::Object(m);
                }
                for (k, v) in &o.props {
                    if o.required.contains(k) {
                        let c = self.node(v, &format!("{}/properties/{k}", n.ptr));
                        m.insert(k.clone(), self.minimal(&c, k, depth + 1));
                    }
                }
                if let Some(f) = o.flat.first() {
                    if let Value::Object(fm) = self.minimal(f, name, depth + 1) {
                        m.extend(fm);
                    }
                }
                Value::Object(m)
            }
            Shape::Map(_) => json!({}),
            Shape::Array(item) => {
                if is_command_name(name) {
                    if let Shape::Str = item.shape {
                        return json!([SAFE_PATH]);
                    }
                }
                json!([])
            }
            Shape::StrEnum(v) => Value::from(v.first().cloned().unwrap_or_default()),
            Shape::Tagged(_, vs) => vs
                .first()
                .map(|(_, v)| self.minimal(v, name, depth + 1))
                .unwrap_or(json!({})),
            Shape::External(strs, objs) => match (strs.first(), objs.first()) {
                (Some(s), _) => Value::from(s.as_str()),
                (None, Some((k, v))) => {
                    let mut m = Map::new();
                    m.insert(k.clone(), self.minimal(v, k, depth + 1));
                    Value::Object(m)
                }
                _ => Value::Null,
            },
            Shape::Untagged(vs) => vs
                .first()
                .map(|v| self.minimal(v, name, depth + 1))
                .unwrap_or(Value::Null),
            Shape::Str => Value::from(safe_string(name)),
            Shape::Int { min, .. } => Value::from(min.unwrap_or(0).max(0)),
            Shape::Num => Value::from(0),
            Shape::Bool => Value::Bool(false),
            Shape::Null => Value::Null,
        }
    }
}

fn common_tag(objects: &[Node]) -> Option<String> {
    let Shape::Object(first) = &objects.first()?.shape else {
        return None;
    };
    'cand: for (k, _) in &first.props {
        for n in objects {
            if tag_value(n, k).is_none() {
                continue 'cand;
            }
        }
        return Some(k.clone());
    }
    None
}

fn tag_value(n: &Node, key: &str) -> Option<String> {
    let Shape::Object(o) = &n.shape else {
        return None;
    };
    if !o.required.iter().any(|r| r == key) {
        return None;
    }
    let (_, v) = o.props.iter().find(|(k, _)| k == key)?;
    let e = v.get("enum")?.as_array()?;
    if e.len() != 1 {
        return None;
    }
    e[0].as_str().map(str::to_string)
}

fn lower(name: &str) -> String {
    name.to_ascii_lowercase()
}

fn is_command_name(name: &str) -> bool {
    let n = lower(name);
    n == "command" || n == "argv" || n == "cmd" || n == "args" || n == "program"
}

fn is_path_name(name: &str) -> bool {
    let n = lower(name);
    [
        "path",
        "cwd",
        "dir",
        "root",
        "file",
        "destination",
        "source",
        "home",
        "location",
    ]
    .iter()
    .any(|p| n.contains(p))
        && !n.ends_with("id")
}

fn is_url_name(name: &str) -> bool {
    let n = lower(name);
    n.contains("url") || n.contains("uri") || n.contains("endpoint") || n.contains("host")
}

/// A harmless string for a field of this name.
pub fn safe_string(name: &str) -> String {
    if is_command_name(name) || is_path_name(name) {
        SAFE_PATH.to_string()
    } else if is_url_name(name) {
        SAFE_URL.to_string()
    } else {
        SAFE_STR.to_string()
    }
}

/// JSON types a node accepts (`integer` counts as number; structs also take arrays).
fn accepted_types(n: &Node, out: &mut BTreeSet<&'static str>, depth: usize) {
    if depth > 16 {
        out.extend(ALL_TYPES);
        return;
    }
    match &n.shape {
        Shape::Any => out.extend(ALL_TYPES),
        Shape::Nullable(i) => {
            out.insert("null");
            accepted_types(i, out, depth + 1);
        }
        Shape::Object(o) => {
            out.insert("object");
            // A struct also deserializes from a sequence; only an empty all-optional struct
            // accepts `[]`, which we avoid by listing "array" as accepted then.
            if o.required.is_empty() && o.flat.is_empty() {
                out.insert("array");
            }
        }
        Shape::Map(_) => {
            out.insert("object");
        }
        Shape::Array(_) => {
            out.insert("array");
        }
        Shape::StrEnum(_) | Shape::Str => {
            out.insert("string");
        }
        Shape::Tagged(..) => {
            out.insert("object");
        }
        Shape::External(strs, objs) => {
            if !strs.is_empty() {
                out.insert("string");
            }
            if !objs.is_empty() {
                out.insert("object");
            }
        }
        Shape::Untagged(vs) => {
            for v in vs {
                accepted_types(v, out, depth + 1);
            }
        }
        Shape::Int { .. } | Shape::Num => {
            out.insert("number");
        }
        Shape::Bool => {
            out.insert("bool");
        }
        Shape::Null => {
            out.insert("null");
        }
    }
}

const ALL_TYPES: [&str; 6] = ["string", "number", "bool", "null", "array", "object"];

fn wrong_value(t: &str) -> Value {
    match t {
        "string" => Value::from(SAFE_STR),
        "number" => Value::from(7),
        "bool" => Value::Bool(true),
        "null" => Value::Null,
        "array" => json!([]),
        _ => json!({}),
    }
}

fn wrong_types(n: &Node) -> Vec<&'static str> {
    let mut acc = BTreeSet::new();
    accepted_types(n, &mut acc, 0);
    ALL_TYPES
        .iter()
        .copied()
        .filter(|t| !acc.contains(t))
        .collect()
}

/// Number literals for integer fields (raw text: `1.50` must stay `1.50`).
const NUMBER_EDGES: [&str; 13] = [
    "-1",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1.5",
    "1.50",
    "100.0",
    "1e3",
    "-0",
    "123456789012345678901234567890",
    "1e400",
    "-9223372036854775809",
];

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Idx(usize),
    /// A variant label for names only (`<tag>`); not a step in the value.
    Variant(String),
}

fn path_text(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Idx(i) => s.push_str(&format!("[{i}]")),
            Seg::Variant(v) => s.push_str(&format!("<{v}>")),
        }
    }
    if s.is_empty() {
        "$".into()
    } else {
        s
    }
}

fn get_mut<'a>(v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    let mut cur = v;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => cur.as_object_mut()?.get_mut(k)?,
            Seg::Idx(i) => cur.as_array_mut()?.get_mut(*i)?,
            Seg::Variant(_) => cur,
        };
    }
    Some(cur)
}

fn get<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut cur = v;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => cur.as_object()?.get(k)?,
            Seg::Idx(i) => cur.as_array()?.get(*i)?,
            Seg::Variant(_) => cur,
        };
    }
    Some(cur)
}

/// Set the value at `path` (the parent must exist); new object keys go last.
fn with(base: &Value, path: &[Seg], val: Value) -> Value {
    let mut b = base.clone();
    if let Some((Seg::Variant(_), parent)) = path.split_last() {
        return with(base, parent, val);
    }
    if path.is_empty() {
        return val;
    }
    let (last, parent) = path.split_last().expect("non-empty path");
    if let Some(p) = get_mut(&mut b, parent) {
        match (last, p) {
            (Seg::Key(k), Value::Object(m)) => {
                m.insert(k.clone(), val);
            }
            (Seg::Idx(i), Value::Array(a)) => {
                if *i < a.len() {
                    a[*i] = val;
                } else {
                    a.push(val);
                }
            }
            _ => {}
        }
    }
    b
}

fn without(base: &Value, path: &[Seg], key: &str) -> Value {
    let mut b = base.clone();
    if let Some(Value::Object(m)) = get_mut(&mut b, path) {
        m.shift_remove(key);
    }
    b
}

fn push(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// Build a request line: `{"id":1,"method":M,"params":P}` (params omitted when `None`).
pub fn request(id: i64, method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("id".into(), Value::from(id));
    m.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        m.insert("params".into(), p.clone());
    }
    serde_json::to_vec(&Value::Object(m)).expect("serializable")
}

/// Same, with params given as raw JSON text.
fn request_raw(id: i64, method: &str, params_raw: &str) -> Vec<u8> {
    let m = serde_json::to_string(method).expect("string");
    format!(r#"{{"id":{id},"method":{m},"params":{params_raw}}}"#).into_bytes()
}

struct Gen<'a> {
    s: &'a Schema,
    method: String,
    safe: bool,
    out: Vec<Case>,
    stack: Vec<String>,
    /// Inside an untagged enum every error is the same "did not match" message: only the
    /// untagged enums nested there are worth a case.
    quiet: bool,
}

impl Gen<'_> {
    fn emit(&mut self, category: &str, what: &str, params: Option<&Value>) {
        if self.quiet && category != "untagged_nomatch" {
            return;
        }
        self.out.push(Case {
            name: format!("{}#{what}", self.method),
            category: category.into(),
            lines: vec![
                INIT_EXPERIMENTAL.as_bytes().to_vec(),
                request(1, &self.method, params),
            ],
            ptr: None,
        });
    }

    fn emit_raw(&mut self, category: &str, what: &str, line: Vec<u8>) {
        if self.quiet && category != "untagged_nomatch" {
            return;
        }
        self.out.push(Case {
            name: format!("{}#{what}", self.method),
            category: category.into(),
            lines: vec![INIT_EXPERIMENTAL.as_bytes().to_vec(), line],
            ptr: None,
        });
    }

    /// Name the untagged node a case is about, unless it sits inside another untagged enum
    /// (whose own "did not match" message then hides the inner name).
    fn mark_ptr(&mut self, ptr: &str) {
        if self.quiet && self.stack.iter().any(|p| p.starts_with("untagged:")) {
            return;
        }
        if let Some(c) = self.out.last_mut() {
            c.ptr = Some(ptr.to_string());
        }
    }

    /// Mutations of the value at `path` (which exists in `base`), described by node `n`.
    fn mutate_value(&mut self, base: &Value, path: &[Seg], n: &Node, name: &str) {
        let p = path_text(path);
        let string_ptr = match &n.shape {
            Shape::Str => Some(n.ptr.clone()),
            Shape::Nullable(i) if matches!(i.shape, Shape::Str) => Some(i.ptr.clone()),
            _ => None,
        };
        for t in wrong_types(n) {
            self.emit(
                "wrong_type",
                &format!("type:{p}={t}"),
                Some(&with(base, path, wrong_value(t))),
            );
            // A number where a string goes tells `String` (`a string`) from `PathBuf`
            // (`path string`): the probe records the pointer of such fields.
            if t == "number" && !self.quiet {
                if let (Some(ptr), Some(c)) = (&string_ptr, self.out.last_mut()) {
                    c.ptr = Some(ptr.clone());
                }
            }
        }
        let inner = match &n.shape {
            Shape::Nullable(i) => i.as_ref(),
            _ => n,
        };
        match &inner.shape {
            Shape::StrEnum(_) => {
                self.emit(
                    "bad_enum",
                    &format!("enum:{p}"),
                    Some(&with(base, path, Value::from(BOGUS))),
                );
            }
            Shape::External(strs, objs) => {
                if !strs.is_empty() {
                    self.emit(
                        "bad_enum",
                        &format!("enum:{p}"),
                        Some(&with(base, path, Value::from(BOGUS))),
                    );
                }
                if !objs.is_empty() {
                    self.emit(
                        "bad_enum",
                        &format!("enum:{p}=map"),
                        Some(&with(base, path, json!({ BOGUS: {} }))),
                    );
                    if let Some((k, v)) = objs.first() {
                        let mut m = Map::new();
                        m.insert(k.clone(), self.s.minimal(v, k, 1));
                        m.insert(UNKNOWN_KEY.into(), json!(1));
                        self.emit(
                            "bad_enum",
                            &format!("enum:{p}=two-keys"),
                            Some(&with(base, path, Value::Object(m))),
                        );
                    }
                }
            }
            Shape::Tagged(tag, vs) => {
                if let Some((_, v)) = vs.first() {
                    let min = self.s.minimal(v, name, 1);
                    let mut bad = min.clone();
                    bad[tag.as_str()] = Value::from(BOGUS);
                    self.emit("bad_tag", &format!("tag:{p}"), Some(&with(base, path, bad)));
                    let mut missing = min.clone();
                    if let Some(m) = missing.as_object_mut() {
                        m.shift_remove(tag.as_str());
                    }
                    self.emit(
                        "bad_tag",
                        &format!("notag:{p}"),
                        Some(&with(base, path, missing)),
                    );
                    let mut wrong = min;
                    wrong[tag.as_str()] = Value::from(7);
                    self.emit(
                        "bad_tag",
                        &format!("tagtype:{p}"),
                        Some(&with(base, path, wrong)),
                    );
                }
            }
            Shape::Untagged(vs) => {
                let mut acc = BTreeSet::new();
                for v in vs {
                    accepted_types(v, &mut acc, 0);
                }
                let pick = ["bool", "number", "string", "array", "object"]
                    .into_iter()
                    .find(|t| !acc.contains(t));
                let val = match pick {
                    Some(t) => wrong_value(t),
                    None => json!({ UNKNOWN_KEY: [1, 2, 3] }),
                };
                self.emit(
                    "untagged_nomatch",
                    &format!("nomatch:{p}"),
                    Some(&with(base, path, val)),
                );
                self.mark_ptr(&inner.ptr);
            }
            Shape::Int { .. } if self.safe => {
                let base_text = serde_json::to_string(base).unwrap_or_default();
                let marker = "\"__codex_wire_num__\"";
                let with_marker = with(base, path, Value::from("__codex_wire_num__"));
                let text = serde_json::to_string(&with_marker).unwrap_or_default();
                if text.matches(marker).count() == 1 && !base_text.contains(marker) {
                    for e in NUMBER_EDGES {
                        let params = text.replace(marker, e);
                        self.emit_raw(
                            "number_edge",
                            &format!("num:{p}={e}"),
                            request_raw(1, &self.method.clone(), &params),
                        );
                    }
                }
            }
            Shape::Str if self.safe => {
                for (tag, v) in [("empty", ""), ("relative", "relative/codex-wire")] {
                    self.emit(
                        "string_value",
                        &format!("str:{p}={tag}"),
                        Some(&with(base, path, Value::from(v))),
                    );
                }
            }
            _ => {}
        }
    }

    /// Recurse into the structure of the value at `path`.
    fn descend(&mut self, base: &Value, path: &[Seg], n: &Node, name: &str, depth: usize) {
        if depth > MAX_DEPTH || self.stack.contains(&n.ptr) && !n.ptr.is_empty() {
            return;
        }
        self.stack.push(n.ptr.clone());
        match &n.shape {
            Shape::Nullable(inner) => {
                let inner = inner.as_ref().clone();
                self.stack.pop();
                self.descend(base, path, &inner, name, depth);
                return;
            }
            Shape::Object(o) => self.object(base, path, n, o, depth),
            Shape::Array(item) => {
                let v = self.s.minimal(item, name, 1);
                let b = with(base, path, json!([v]));
                let ip = push(path, Seg::Idx(0));
                self.mutate_value(&b, &ip, item, name);
                self.descend(&b, &ip, item, name, depth + 1);
            }
            Shape::Map(val) if !matches!(val.shape, Shape::Any) => {
                let v = self.s.minimal(val, name, 1);
                let mut m = Map::new();
                m.insert("codexWireKey".into(), v);
                let b = with(base, path, Value::Object(m));
                let kp = push(path, Seg::Key("codexWireKey".into()));
                self.mutate_value(&b, &kp, val, name);
                self.descend(&b, &kp, val, name, depth + 1);
            }
            Shape::Tagged(_, vs) => {
                for (tagv, v) in vs.clone() {
                    let b = with(base, path, self.s.minimal(&v, name, 1));
                    if depth < MAX_DEPTH {
                        self.stack.push(format!("{}<{tagv}>", n.ptr));
                        let vp = push(path, Seg::Variant(tagv.clone()));
                        self.descend(&b, &vp, &v, name, depth + 1);
                        self.stack.pop();
                    }
                }
            }
            Shape::Untagged(vs) => {
                let was = self.quiet;
                self.quiet = true;
                self.stack.push(format!("untagged:{}", n.ptr));
                for (i, v) in vs.clone().into_iter().enumerate() {
                    let b = with(base, path, self.s.minimal(&v, name, 1));
                    let vp = push(path, Seg::Variant(format!("#{i}")));
                    self.descend(&b, &vp, &v, name, depth + 1);
                }
                self.stack.pop();
                self.quiet = was;
            }
            Shape::External(_, objs) => {
                for (k, v) in objs.clone() {
                    let mut m = Map::new();
                    m.insert(k.clone(), self.s.minimal(&v, &k, 1));
                    let b = with(base, path, Value::Object(m));
                    let kp = push(path, Seg::Key(k.clone()));
                    self.mutate_value(&b, &kp, &v, &k);
                    self.descend(&b, &kp, &v, &k, depth + 1);
                }
            }
            _ => {}
        }
        self.stack.pop();
    }

    fn object(&mut self, base: &Value, path: &[Seg], n: &Node, o: &ObjectShape, depth: usize) {
        let p = path_text(path);
        for r in &o.required {
            self.emit(
                "missing_field",
                &format!("missing:{}", path_text(&push(path, Seg::Key(r.clone())))),
                Some(&without(base, path, r)),
            );
        }
        let children: Vec<(String, Node)> = o
            .props
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    self.s.node(v, &format!("{}/properties/{k}", n.ptr)),
                )
            })
            .collect();
        for (k, c) in &children {
            let cp = push(path, Seg::Key(k.clone()));
            let b = if get(base, &cp).is_some() {
                base.clone()
            } else {
                with(base, &cp, self.s.minimal(c, k, 1))
            };
            self.mutate_value(&b, &cp, c, k);
            self.descend(&b, &cp, c, k, depth + 1);
        }
        // Flattened untagged part: nothing of it given, or one variant with wrong types.
        if !o.flat.is_empty() {
            let mut b = base.clone();
            if let Some(Value::Object(m)) = get_mut(&mut b, path) {
                for f in &o.flat {
                    if let Shape::Object(fo) = &f.shape {
                        for (k, _) in &fo.props {
                            m.shift_remove(k);
                        }
                    }
                }
            }
            self.emit(
                "untagged_nomatch",
                &format!("nomatch:{p}{{flat}}"),
                Some(&b),
            );
            self.mark_ptr(&n.ptr);
            for f in &o.flat {
                if let Shape::Object(fo) = &f.shape {
                    for (k, _) in &fo.props {
                        let mut b2 = b.clone();
                        if let Some(Value::Object(m)) = get_mut(&mut b2, path) {
                            m.insert(k.clone(), Value::from(7));
                        }
                        self.emit(
                            "untagged_nomatch",
                            &format!("nomatch:{p}{{flat.{k}=number}}"),
                            Some(&b2),
                        );
                        self.mark_ptr(&n.ptr);
                    }
                }
            }
        }
        // Unknown members: ignored unless the type denies them.
        if self.safe || o.deny_unknown {
            let mut b = base.clone();
            if let Some(Value::Object(m)) = get_mut(&mut b, path) {
                m.insert(UNKNOWN_KEY.into(), json!(1));
                self.emit("unknown_field", &format!("unknown:{p}"), Some(&b));
            }
        }
        // Two errors in one object, in both input orders.
        let wrongs: Vec<(String, Value)> = children
            .iter()
            .filter_map(|(k, c)| wrong_types(c).first().map(|t| (k.clone(), wrong_value(t))))
            .take(2)
            .collect();
        if wrongs.len() == 2 {
            for (a, b) in [(0, 1), (1, 0)] {
                let mut v = base.clone();
                if let Some(Value::Object(m)) = get_mut(&mut v, path) {
                    m.shift_remove(&wrongs[a].0);
                    m.shift_remove(&wrongs[b].0);
                    m.insert(wrongs[a].0.clone(), wrongs[a].1.clone());
                    m.insert(wrongs[b].0.clone(), wrongs[b].1.clone());
                }
                self.emit(
                    "two_errors",
                    &format!("two:{p}:{},{}", wrongs[a].0, wrongs[b].0),
                    Some(&v),
                );
            }
        }
        // A missing required field and a wrongly typed one: which is reported?
        if let (Some(r), Some((w, wv))) = (
            o.required.first(),
            wrongs.iter().find(|(k, _)| Some(k) != o.required.first()),
        ) {
            let mut v = without(base, path, r);
            if let Some(Value::Object(m)) = get_mut(&mut v, path) {
                m.insert(w.clone(), wv.clone());
            }
            self.emit("two_errors", &format!("two:{p}:missing {r},{w}"), Some(&v));
        }
        // Duplicate-free positional form of a nested struct (arrays as structs).
        if depth > 0 && !o.props.is_empty() {
            self.emit(
                "params_shape",
                &format!("seq:{p}"),
                Some(&with(base, path, json!([]))),
            );
        }
    }

    fn params_shapes(&mut self, min: &Value, n: &Node) {
        let nprops = match &n.shape {
            Shape::Object(o) => o.props.len(),
            Shape::Nullable(i) => match &i.shape {
                Shape::Object(o) => o.props.len(),
                _ => 0,
            },
            _ => 0,
        };
        let mut shapes: Vec<(String, Option<Value>)> = vec![
            ("absent".into(), None),
            ("null".into(), Some(Value::Null)),
            ("empty-array".into(), Some(json!([]))),
            ("array1".into(), Some(json!([null]))),
            ("number".into(), Some(json!(1))),
            ("string".into(), Some(json!("codex-wire"))),
            ("bool".into(), Some(json!(false))),
            ("empty-object".into(), Some(json!({}))),
        ];
        if nprops > 0 {
            // Positional: the right length (all null), and one too many.
            shapes.push((
                format!("array{nprops}-null"),
                Some(Value::Array(vec![Value::Null; nprops])),
            ));
            shapes.push((
                format!("array{}-null", nprops + 1),
                Some(Value::Array(vec![Value::Null; nprops + 1])),
            ));
            if let Value::Object(m) = min {
                if !m.is_empty() && self.safe {
                    shapes.push((
                        "array-values".into(),
                        Some(Value::Array(m.values().cloned().collect())),
                    ));
                }
            }
        }
        for (what, p) in shapes {
            let accepted_risk = matches!(p, Some(Value::Object(ref m)) if m.is_empty())
                || p.is_none()
                || p == Some(Value::Null);
            if accepted_risk && !self.safe {
                // May be accepted (all-optional params): only for safe methods.
                if !matches!(&n.shape, Shape::Object(o) if !o.required.is_empty()) {
                    continue;
                }
            }
            self.emit("params_shape", &format!("params:{what}"), p.as_ref());
        }
    }
}

/// Generate all cases from the bundle.
pub fn generate(s: &Schema) -> Vec<Case> {
    let mut out = Vec::new();
    let methods = s.methods();
    for m in &methods {
        let safe = !UNSAFE_METHODS.contains(&m.name.as_str());
        let mut g = Gen {
            s,
            method: m.name.clone(),
            safe,
            out: Vec::new(),
            stack: Vec::new(),
            quiet: false,
        };
        let Some(ps) = &m.params else { continue };
        let n = s.node(ps, &m.params_ptr);
        let min = s.minimal(&n, "", 0);
        if safe && m.name != "initialize" {
            g.emit("valid", "valid", Some(&min));
        }
        g.params_shapes(&min, &n);
        if m.name != "initialize" {
            g.descend(&min, &[], &n, "", 0);
        } else {
            // initialize itself only makes sense as the first line: lifecycle cases cover it.
            g.out.clear();
        }
        out.extend(g.out);
    }
    out.extend(unlisted_cases());
    out.extend(unknown_method_cases());
    out.extend(envelope_cases());
    out.extend(experimental_cases(s, &methods));
    out.extend(lifecycle_cases());
    out.extend(notification_cases());
    out.extend(framing_cases());
    dedupe_names(&mut out);
    out
}

fn init_case(name: &str, category: &str, line: Vec<u8>) -> Case {
    Case {
        name: name.into(),
        category: category.into(),
        lines: vec![INIT_EXPERIMENTAL.as_bytes().to_vec(), line],
        ptr: None,
    }
}

fn unlisted_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for m in UNLISTED_METHODS {
        let safe = !UNSAFE_METHODS.contains(&m);
        let mut shapes = vec![
            ("null", Some(Value::Null)),
            ("empty-array", Some(json!([]))),
            ("number", Some(json!(1))),
            ("string", Some(json!("codex-wire"))),
            ("unknown-only", Some(json!({ UNKNOWN_KEY: 7 }))),
            ("path-number", Some(json!({"path": 7, "cwd": 7}))),
            (
                "conversation-number",
                Some(json!({"conversationId": 7, "rolloutPath": 7})),
            ),
        ];
        if safe {
            shapes.push(("absent", None));
            shapes.push(("empty-object", Some(json!({}))));
        }
        for (what, p) in shapes {
            out.push(init_case(
                &format!("{m}#params:{what}"),
                "unlisted_method",
                request(1, m, p.as_ref()),
            ));
        }
    }
    out
}

fn unknown_method_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (what, m) in [
        ("bogus", "codex-wire-bogus"),
        ("empty", ""),
        ("case", "Thread/start"),
        ("trailing-slash", "thread/start/"),
        ("space", "thread/start "),
        ("v1-style", "newConversation"),
        ("notification-name", "initialized"),
        (
            "server-request-name",
            "item/commandExecution/requestApproval",
        ),
    ] {
        out.push(init_case(
            &format!("unknown#{what}"),
            "unknown_method",
            request(1, m, Some(&json!({}))),
        ));
    }
    out.push(init_case(
        "unknown#no-params",
        "unknown_method",
        request(1, "codex-wire-bogus", None),
    ));
    out.push(init_case(
        "unknown#method-number",
        "unknown_method",
        br#"{"id":1,"method":7,"params":{}}"#.to_vec(),
    ));
    out
}

/// Envelope variations on an otherwise valid, side-effect free request.
fn envelope_cases() -> Vec<Case> {
    let mk = |name: &str, line: &str| init_case(name, "envelope", line.as_bytes().to_vec());
    vec![
        mk(
            "envelope#jsonrpc",
            r#"{"jsonrpc":"2.0","id":1,"method":"thread/loaded/list","params":{}}"#,
        ),
        mk(
            "envelope#trace",
            r#"{"id":1,"method":"thread/loaded/list","params":{},"trace":{}}"#,
        ),
        mk(
            "envelope#trace-number",
            r#"{"id":1,"method":"thread/loaded/list","params":{},"trace":7}"#,
        ),
        mk(
            "envelope#unknown",
            r#"{"id":1,"method":"thread/loaded/list","params":{},"codexWireUnknown":1}"#,
        ),
        mk(
            "envelope#method-last",
            r#"{"params":{},"id":1,"method":"thread/loaded/list"}"#,
        ),
        mk(
            "envelope#string-id",
            r#"{"id":"codex-wire","method":"thread/loaded/list","params":{}}"#,
        ),
        mk(
            "envelope#negative-id",
            r#"{"id":-5,"method":"thread/loaded/list","params":[]}"#,
        ),
        mk(
            "envelope#max-id",
            r#"{"id":9223372036854775807,"method":"thread/loaded/list","params":[]}"#,
        ),
        mk(
            "envelope#min-id",
            r#"{"id":-9223372036854775808,"method":"thread/loaded/list","params":[]}"#,
        ),
        mk(
            "envelope#empty-string-id",
            r#"{"id":"","method":"thread/loaded/list","params":[]}"#,
        ),
    ]
}

/// Connections initialized without `experimentalApi`: every safe method with minimal params,
/// and every top-level optional field / enum variant set.
fn experimental_cases(s: &Schema, methods: &[Method]) -> Vec<Case> {
    let mut out = Vec::new();
    let mut push = |name: String, line: Vec<u8>| {
        out.push(Case {
            name,
            category: "experimental_gate".into(),
            lines: vec![INIT_PLAIN.as_bytes().to_vec(), line],
            ptr: None,
        });
    };
    for m in methods {
        if m.name == "initialize" || UNSAFE_METHODS.contains(&m.name.as_str()) {
            continue;
        }
        let Some(ps) = &m.params else { continue };
        let n = s.node(ps, &m.params_ptr);
        let min = s.minimal(&n, "", 0);
        push(
            format!("{}#plain:valid", m.name),
            request(1, &m.name, Some(&min)),
        );
        let o = match &n.shape {
            Shape::Object(o) => o.clone(),
            Shape::Nullable(i) => match &i.shape {
                Shape::Object(o) => o.clone(),
                _ => continue,
            },
            _ => continue,
        };
        for (k, v) in &o.props {
            let c = s.node(v, &format!("{}/properties/{k}", n.ptr));
            let inner = match &c.shape {
                Shape::Nullable(i) => i.as_ref().clone(),
                _ => c.clone(),
            };
            let mut values: Vec<(String, Value)> = Vec::new();
            match &inner.shape {
                Shape::StrEnum(vs) => {
                    for e in vs {
                        values.push((e.clone(), Value::from(e.as_str())));
                    }
                }
                Shape::External(strs, objs) => {
                    for e in strs {
                        values.push((e.clone(), Value::from(e.as_str())));
                    }
                    for (ok, ov) in objs {
                        let mut mm = Map::new();
                        mm.insert(ok.clone(), s.minimal(ov, ok, 1));
                        values.push((ok.clone(), Value::Object(mm)));
                    }
                }
                Shape::Tagged(_, vs) => {
                    for (t, v) in vs {
                        values.push((t.clone(), s.minimal(v, k, 1)));
                    }
                }
                // What counts as "set" for the gate: `false` may not, `null` may (double options).
                Shape::Bool => {
                    values.push(("true".into(), Value::Bool(true)));
                    values.push(("false".into(), Value::Bool(false)));
                }
                _ => {
                    if !o.required.contains(k) {
                        values.push(("set".into(), s.minimal(&inner, k, 1)));
                    }
                }
            }
            if matches!(c.shape, Shape::Nullable(_)) && !o.required.contains(k) {
                values.push(("null".into(), Value::Null));
            }
            for (what, val) in values {
                let p = with(&min, &[Seg::Key(k.clone())], val);
                push(
                    format!("{}#plain:{k}={what}", m.name),
                    request(1, &m.name, Some(&p)),
                );
            }
        }
    }
    out
}

fn lifecycle_cases() -> Vec<Case> {
    let init = INIT_EXPERIMENTAL.as_bytes().to_vec();
    let plain = INIT_PLAIN.as_bytes().to_vec();
    let list = br#"{"id":1,"method":"thread/loaded/list","params":{}}"#.to_vec();
    let bad = br#"{"id":1,"method":"thread/read","params":{}}"#.to_vec();
    let mk = |name: &str, lines: Vec<Vec<u8>>| Case {
        name: format!("lifecycle#{name}"),
        category: "lifecycle".into(),
        lines,
        ptr: None,
    };
    let l = |s: &str| s.as_bytes().to_vec();
    vec![
        mk("no-init:valid", vec![list.clone()]),
        mk("no-init:bad-params", vec![bad.clone()]),
        mk(
            "no-init:unknown-method",
            vec![l(r#"{"id":1,"method":"codex-wire-bogus","params":{}}"#)],
        ),
        mk(
            "no-init:unit-params",
            vec![l(r#"{"id":1,"method":"account/logout"}"#)],
        ),
        mk(
            "no-init:initialized-notification",
            vec![l(r#"{"method":"initialized"}"#), list.clone()],
        ),
        mk(
            "double-init",
            vec![
                init.clone(),
                l(
                    r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}"#,
                ),
            ],
        ),
        mk(
            "double-init:bad-params",
            vec![
                init.clone(),
                l(r#"{"id":1,"method":"initialize","params":{}}"#),
            ],
        ),
        mk("double-init:same-id", vec![init.clone(), init.clone()]),
        mk(
            "init:missing-clientInfo",
            vec![
                l(r#"{"id":0,"method":"initialize","params":{}}"#),
                list.clone(),
            ],
        ),
        mk(
            "init:no-params",
            vec![l(r#"{"id":0,"method":"initialize"}"#), list.clone()],
        ),
        mk(
            "init:capabilities-null",
            vec![
                l(
                    r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"},"capabilities":null}}"#,
                ),
                list.clone(),
            ],
        ),
        mk(
            "init:experimentalApi-string",
            vec![
                l(
                    r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"},"capabilities":{"experimentalApi":"yes"}}}"#,
                ),
                list.clone(),
            ],
        ),
        mk(
            "init:clientInfo-number",
            vec![
                l(r#"{"id":0,"method":"initialize","params":{"clientInfo":7}}"#),
                list.clone(),
            ],
        ),
        mk(
            "init:unknown-capability",
            vec![
                l(
                    r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"},"capabilities":{"codexWireUnknown":true}}}"#,
                ),
                list.clone(),
            ],
        ),
        mk(
            "init:string-id",
            vec![
                l(
                    r#"{"id":"init","method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}"#,
                ),
                list.clone(),
            ],
        ),
        mk(
            "init:bad-then-good",
            vec![
                l(r#"{"id":0,"method":"initialize","params":{}}"#),
                l(
                    r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}"#,
                ),
                l(r#"{"id":2,"method":"thread/loaded/list","params":{}}"#),
            ],
        ),
        mk(
            "init:as-notification",
            vec![
                l(r#"{"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}"#),
                list.clone(),
            ],
        ),
        mk(
            "init:then-initialized",
            vec![init.clone(), l(r#"{"method":"initialized"}"#), list.clone()],
        ),
        mk(
            "plain:experimental-method",
            vec![
                plain.clone(),
                l(r#"{"id":1,"method":"mock/experimentalMethod","params":{}}"#),
            ],
        ),
        mk(
            "plain:experimental-method-bad-params",
            vec![
                plain.clone(),
                l(r#"{"id":1,"method":"mock/experimentalMethod","params":[1,2,3]}"#),
            ],
        ),
        mk(
            "plain:experimental-field",
            vec![
                plain.clone(),
                l(r#"{"id":1,"method":"thread/start","params":{"mockExperimentalField":"x"}}"#),
            ],
        ),
        mk(
            "experimentalApi-false",
            vec![
                l(
                    r#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"},"capabilities":{"experimentalApi":false}}}"#,
                ),
                l(r#"{"id":1,"method":"mock/experimentalMethod","params":{}}"#),
            ],
        ),
        mk("request-ids-reused", vec![init.clone(), bad.clone(), bad]),
    ]
}

fn notification_cases() -> Vec<Case> {
    let mk = |name: &str, line: &str| Case {
        name: format!("notification#{name}"),
        category: "notification".into(),
        lines: vec![
            INIT_EXPERIMENTAL.as_bytes().to_vec(),
            line.as_bytes().to_vec(),
            br#"{"id":1,"method":"thread/loaded/list","params":{}}"#.to_vec(),
        ],
        ptr: None,
    };
    vec![
        mk("initialized", r#"{"method":"initialized"}"#),
        mk(
            "initialized-params",
            r#"{"method":"initialized","params":{}}"#,
        ),
        mk(
            "initialized-bad-params",
            r#"{"method":"initialized","params":7}"#,
        ),
        mk("unknown", r#"{"method":"codex-wire-bogus"}"#),
        mk(
            "unknown-params",
            r#"{"method":"codex-wire-bogus","params":{"a":1}}"#,
        ),
        mk("request-method", r#"{"method":"thread/start","params":{}}"#),
        mk(
            "request-method-bad-params",
            r#"{"method":"thread/read","params":7}"#,
        ),
    ]
}

fn nested(depth: usize, open: &str, close: &str) -> String {
    format!("{}{}", open.repeat(depth), close.repeat(depth))
}

fn framing_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let after = br#"{"id":99,"method":"account/logout","params":7}"#.to_vec();
    let mut mk = |name: &str, line: Vec<u8>| {
        out.push(Case {
            name: format!("framing#{name}"),
            category: "framing".into(),
            lines: vec![INIT_EXPERIMENTAL.as_bytes().to_vec(), line, after.clone()],
            ptr: None,
        });
    };
    let l = |s: &str| s.as_bytes().to_vec();
    for (name, line) in [
        ("array", "[]"),
        (
            "array-of-request",
            r#"[{"id":1,"method":"thread/read","params":{}}]"#,
        ),
        ("number", "1"),
        ("string", "\"x\""),
        ("null", "null"),
        ("true", "true"),
        ("garbage", "codex-wire garbage"),
        ("open-brace", "{"),
        ("empty-object", "{}"),
        ("empty", ""),
        ("spaces", "   "),
        (
            "trailing-garbage",
            r#"{"id":1,"method":"thread/read","params":{}} x"#,
        ),
        (
            "trailing-object",
            r#"{"id":1,"method":"thread/read","params":{}}{}"#,
        ),
        (
            "two-requests-one-line",
            r#"{"id":1,"method":"thread/read","params":{}} {"id":2,"method":"thread/read","params":{}}"#,
        ),
        (
            "leading-space",
            r#"  {"id":1,"method":"thread/read","params":{}}"#,
        ),
        (
            "trailing-space",
            r#"{"id":1,"method":"thread/read","params":{}}  "#,
        ),
        (
            "crlf",
            "{\"id\":1,\"method\":\"thread/read\",\"params\":{}}\r",
        ),
        (
            "tab-inside",
            "{\"id\":1,\t\"method\":\"thread/read\",\"params\":{}}",
        ),
        (
            "id-float",
            r#"{"id":1.5,"method":"thread/read","params":{}}"#,
        ),
        (
            "id-float-integral",
            r#"{"id":1.0,"method":"thread/read","params":{}}"#,
        ),
        ("id-exp", r#"{"id":1e0,"method":"thread/read","params":{}}"#),
        (
            "id-null",
            r#"{"id":null,"method":"thread/read","params":{}}"#,
        ),
        (
            "id-object",
            r#"{"id":{},"method":"thread/read","params":{}}"#,
        ),
        (
            "id-array",
            r#"{"id":[1],"method":"thread/read","params":{}}"#,
        ),
        (
            "id-bool",
            r#"{"id":true,"method":"thread/read","params":{}}"#,
        ),
        (
            "id-u64",
            r#"{"id":9223372036854775808,"method":"thread/read","params":{}}"#,
        ),
        (
            "id-huge",
            r#"{"id":123456789012345678901234567890,"method":"thread/read","params":{}}"#,
        ),
        (
            "id-negative-zero",
            r#"{"id":-0,"method":"thread/read","params":{}}"#,
        ),
        (
            "id-string-number",
            r#"{"id":"1","method":"thread/read","params":{}}"#,
        ),
        (
            "id-unicode",
            r#"{"id":"\u00e9\ud83d\ude00","method":"thread/read","params":{}}"#,
        ),
        (
            "id-lone-surrogate",
            r#"{"id":"\ud800","method":"thread/read","params":{}}"#,
        ),
        ("no-id-no-method", r#"{"params":{}}"#),
        ("id-only", r#"{"id":1}"#),
        ("response-unknown-id", r#"{"id":1,"result":{}}"#),
        ("response-string-id", r#"{"id":"x","result":null}"#),
        (
            "error-unknown-id",
            r#"{"id":1,"error":{"code":1,"message":"x"}}"#,
        ),
        ("error-bad-shape", r#"{"id":1,"error":7}"#),
        (
            "result-and-method",
            r#"{"id":1,"method":"thread/read","result":{}}"#,
        ),
        (
            "method-and-error",
            r#"{"id":1,"method":"thread/read","params":{},"error":{"code":1,"message":"x"}}"#,
        ),
        (
            "dup-method",
            r#"{"id":1,"method":"codex-wire-bogus","method":"thread/read","params":{}}"#,
        ),
        (
            "dup-method-rev",
            r#"{"id":1,"method":"thread/read","method":"codex-wire-bogus","params":{}}"#,
        ),
        (
            "dup-id",
            r#"{"id":"a","id":1,"method":"thread/read","params":{}}"#,
        ),
        (
            "dup-params",
            r#"{"id":1,"method":"thread/read","params":7,"params":{}}"#,
        ),
        (
            "dup-params-rev",
            r#"{"id":1,"method":"thread/read","params":{},"params":7}"#,
        ),
        (
            "dup-field",
            r#"{"id":1,"method":"thread/read","params":{"threadId":7,"threadId":"x"}}"#,
        ),
        (
            "dup-field-rev",
            r#"{"id":1,"method":"thread/read","params":{"threadId":"x","threadId":7}}"#,
        ),
        ("method-null", r#"{"id":1,"method":null,"params":{}}"#),
        (
            "method-escaped",
            r#"{"id":1,"method":"thread\/read","params":{}}"#,
        ),
        (
            "method-unicode-escape",
            r#"{"id":1,"method":"\u0074hread/read","params":{}}"#,
        ),
        (
            "key-escaped",
            r#"{"id":1,"\u006dethod":"thread/read","params":{}}"#,
        ),
        (
            "nan",
            r#"{"id":1,"method":"thread/read","params":{"threadId":NaN}}"#,
        ),
        ("single-quotes", r#"{'id':1,'method':'thread/read'}"#),
        (
            "trailing-comma",
            r#"{"id":1,"method":"thread/read","params":{},}"#,
        ),
        (
            "comment",
            r#"{"id":1,"method":"thread/read","params":{}} // c"#,
        ),
        (
            "nul-in-string",
            "{\"id\":1,\"method\":\"thread/read\",\"params\":{\"threadId\":\"a\u{0}b\"}}",
        ),
        (
            "control-in-string",
            "{\"id\":1,\"method\":\"thread/read\",\"params\":{\"threadId\":\"a\u{1}b\"}}",
        ),
    ] {
        mk(name, l(line));
    }
    // Nesting depth around serde_json's recursion limit (128).
    for d in [126usize, 127, 128, 129] {
        mk(
            &format!("params-depth-{d}"),
            format!(
                r#"{{"id":1,"method":"thread/read","params":{{"threadId":{}}}}}"#,
                nested(d - 2, "[", "]")
            )
            .into_bytes(),
        );
        mk(
            &format!("unknown-field-depth-{d}"),
            format!(
                r#"{{"id":1,"method":"thread/loaded/list","params":{{"codexWireUnknown":{}}}}}"#,
                nested(d - 2, "[", "]")
            )
            .into_bytes(),
        );
        mk(
            &format!("object-depth-{d}"),
            format!(
                r#"{{"id":1,"method":"thread/loaded/list","params":{{"codexWireUnknown":{}}}}}"#,
                nested(d - 2, "{\"a\":", "}").replace(":}", ":1}")
            )
            .into_bytes(),
        );
    }
    let bom: Vec<u8> = [
        &[0xEF, 0xBB, 0xBF][..],
        br#"{"id":1,"method":"thread/read","params":{}}"#,
    ]
    .concat();
    mk("bom", bom);
    let bad_utf8_string: Vec<u8> = [
        &br#"{"id":1,"method":"thread/read","params":{"threadId":""#[..],
        &[0xFF, 0xFE],
        br#""}}"#,
    ]
    .concat();
    mk("invalid-utf8-in-string", bad_utf8_string);
    mk("invalid-utf8-garbage", vec![0xC3, 0x28, b'x']);
    mk("invalid-utf8-truncated", vec![b'{', 0xE2, 0x82]);
    mk(
        "overlong-utf8",
        [
            &br#"{"id":1,"method":"thread/read","params":{"threadId":""#[..],
            &[0xC0, 0xAF],
            br#""}}"#,
        ]
        .concat(),
    );
    mk(
        "surrogate-utf8",
        [
            &br#"{"id":1,"method":"thread/read","params":{"threadId":""#[..],
            &[0xED, 0xA0, 0x80],
            br#""}}"#,
        ]
        .concat(),
    );
    mk(
        "latin1",
        [
            &br#"{"id":1,"method":"thread/read","params":{"threadId":"caf"#[..],
            &[0xE9],
            br#""}}"#,
        ]
        .concat(),
    );
    mk(
        "valid-utf8-multibyte",
        r#"{"id":1,"method":"thread/read","params":{"threadId":"café 😀"}}"#
            .as_bytes()
            .to_vec(),
    );
    // Lines without an initialize first.
    out.push(Case {
        name: "framing#invalid-utf8-before-init".into(),
        category: "framing".into(),
        lines: vec![vec![0xFF], INIT_EXPERIMENTAL.as_bytes().to_vec()],
        ptr: None,
    });
    out.push(Case {
        name: "framing#garbage-before-init".into(),
        category: "framing".into(),
        lines: vec![b"garbage".to_vec(), INIT_EXPERIMENTAL.as_bytes().to_vec()],
        ptr: None,
    });
    out.push(Case {
        name: "framing#long-line".into(),
        category: "framing".into(),
        lines: vec![
            INIT_EXPERIMENTAL.as_bytes().to_vec(),
            format!(
                r#"{{"id":1,"method":"thread/read","params":{{"threadId":7,"codexWireUnknown":"{}"}}}}"#,
                "x".repeat(200_000)
            )
            .into_bytes(),
        ],
        ptr: None,
    });
    out
}

fn dedupe_names(cases: &mut [Case]) {
    let mut seen = std::collections::HashMap::new();
    for c in cases.iter_mut() {
        let n = seen.entry(c.name.clone()).or_insert(0usize);
        *n += 1;
        if *n > 1 {
            c.name = format!("{}~{}", c.name, n);
        }
    }
}
