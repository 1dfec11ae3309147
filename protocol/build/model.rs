//! Schema bundle + facts → a small type model with the serde shape of the real server's types.
//!
//! Every schema node is addressed by its JSON pointer into the bundle (`#/definitions/v2/X/...`);
//! facts in `schema/<V>/facts/` attach to those pointers.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Str,
    /// `std::path::PathBuf`: serde says `expected path string`.
    Path,
    Bool,
    Int(&'static str),
    Float(&'static str),
    Value,
    Unit,
    Vec(Box<Ty>),
    Map(Box<Ty>),
    Opt(Box<Ty>),
    Named(usize),
    /// A type implemented by hand in `runtime/src/custom.rs` (custom deserializers of the real server).
    Custom(String),
    Tuple(Vec<Ty>),
}

#[derive(Clone, Debug)]
pub struct Field {
    pub json: String,
    pub ty: Ty,
    pub presence: Presence,
    pub flatten: bool,
    /// The real server always writes this key (TS `x: T | null`, not `x?: T`). Only known when
    /// the TS literal of the type was found; `false` otherwise.
    pub sent: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Presence {
    /// No serde attribute (an `Option` is still absent-tolerant in a map).
    Required,
    /// An `Option` that must be present (the server uses a custom deserializer).
    RequiredNullable,
    /// `#[serde(default)]`.
    Default,
}

#[derive(Clone, Debug)]
pub enum Body {
    Unit,
    /// `#[serde(other)]` catch-all unit variant.
    Other,
    Newtype(Ty),
    Struct {
        fields: Vec<Field>,
        deny: bool,
    },
}

#[derive(Clone, Debug)]
pub struct Variant {
    pub ident: String,
    pub json: String,
    pub body: Body,
}

#[derive(Clone, Debug)]
pub enum Repr {
    External,
    Internal(String),
    Untagged,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Struct { fields: Vec<Field>, deny: bool },
    Enum { repr: Repr, variants: Vec<Variant> },
    Alias(Ty),
}

#[derive(Clone, Debug)]
pub struct TypeDef {
    pub ident: String,
    /// The name serde reports (`expected struct X`, `untagged enum X`) when it is not the
    /// ident: two real types can share a name, or the real type is a private shadow.
    pub serde_name: Option<String>,
    pub kind: Kind,
}

pub struct Model {
    pub types: Vec<TypeDef>,
    /// Methods in the real server's declaration order.
    pub client_methods: Vec<String>,
    /// Server→client request method → the type of the client's response.
    pub server_responses: Vec<(String, usize)>,
    /// Client request method → the type of the server's result (`XParams` → `XResponse`).
    pub client_results: Vec<(String, usize)>,
    /// Client request method → its result type's definition name (the fake's default results).
    pub client_result_types: Vec<(String, String)>,
    /// Methods present only in the `--experimental` bundle.
    pub experimental_methods: Vec<String>,
    /// Per method: the gate's checks on params fields, in the order the server makes them.
    pub experimental_checks: Vec<(String, Vec<ExperimentalCheck>)>,
}

/// Per method: gated params fields with (null counts as set, false counts as set).
type GatedFields = Vec<(String, Vec<(String, bool, bool)>)>;

/// One experimental-gate check on a params field.
pub struct ExperimentalCheck {
    pub field: String,
    /// Empty: the field itself is gated; else only this enum variant of it.
    pub variant: String,
    /// Empty: `method.field`.
    pub reason: String,
    /// Whether `null` counts as set (double options).
    pub null_set: bool,
    /// Whether `false` counts as set (`Option<bool>`; a plain `bool` is set only when true).
    pub false_set: bool,
}

fn flatten_defs(bundle: &Value) -> BTreeMap<String, Value> {
    let mut defs = BTreeMap::new();
    for (k, v) in obj_of(bundle.get("definitions")) {
        if k == "v2" {
            for (k2, v2) in obj_of(Some(&v)) {
                defs.insert(format!("v2/{k2}"), v2);
            }
        } else {
            defs.insert(k, v);
        }
    }
    defs
}

fn request_members(defs: &BTreeMap<String, Value>, root: &str) -> Vec<(String, Value)> {
    defs.get(root)
        .and_then(|r| r.get("oneOf"))
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .filter_map(|m| {
                    single_enum_str(&m["properties"]["method"]).map(|s| (s.to_string(), m.clone()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn params_key(member: &Value) -> Option<String> {
    let p = &member["properties"]["params"];
    let r = p.get("$ref").or_else(|| {
        p.get("anyOf")
            .and_then(|a| a.get(0))
            .and_then(|x| x.get("$ref"))
    })?;
    r.as_str()?
        .strip_prefix("#/definitions/")
        .map(str::to_string)
}

/// What the `--experimental` bundle adds to the stable one: whole methods, and params fields.
fn experimental_diff(
    exp: &BTreeMap<String, Value>,
    stable: &BTreeMap<String, Value>,
) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let stable_methods: HashSet<String> = request_members(stable, "ClientRequest")
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    let mut methods = Vec::new();
    let mut fields = Vec::new();
    for (m, member) in request_members(exp, "ClientRequest") {
        if !stable_methods.contains(&m) {
            methods.push(m);
            continue;
        }
        let Some(key) = params_key(&member) else {
            continue;
        };
        let props = |d: &BTreeMap<String, Value>| -> Vec<String> {
            obj_of(d.get(&key).and_then(|x| x.get("properties")))
                .keys()
                .cloned()
                .collect()
        };
        let st: HashSet<String> = props(stable).into_iter().collect();
        let extra: Vec<String> = props(exp).into_iter().filter(|f| !st.contains(f)).collect();
        if !extra.is_empty() {
            fields.push((m, extra));
        }
    }
    (methods, fields)
}

struct Facts {
    /// Per TS type name: object literals' key orders, unions' member orders.
    ts: Map<String, Value>,
    /// pointer → Rust type override (`PathBuf`, custom types).
    rust_type: HashMap<String, String>,
    /// pointer → name of an untagged enum (serde's `untagged enum NAME`).
    untagged_names: HashMap<String, String>,
    /// pointer of a definition → the name serde reports for it (a private shadow type).
    type_names: HashMap<String, String>,
    /// Pointers of enums with a `#[serde(other)]` variant.
    other_variants: HashSet<String>,
    /// Pointers of structs the server deserializes from a map only (`expected struct X` for a
    /// sequence: a flattened member or a custom visitor).
    map_only: HashSet<String>,
    /// pointer → extra (hidden) properties the schema omits.
    hidden_fields: HashMap<String, Map<String, Value>>,
    /// pointer → type is `deny_unknown_fields` although the schema does not say so (or vice versa).
    deny: HashMap<String, bool>,
    /// Pointers of fields whose strings are `PathBuf` (serde: `expected path string`).
    path_fields: Vec<String>,
    /// Pointers of `Option` fields that are `#[serde(default)]` although the schema shows no
    /// default (double options: absent and null differ).
    default_fields: HashSet<String>,
    /// Pointers of fields the server leaves out when `None` (`skip_serializing_if`) although
    /// the TS says `x: T | null`: not always sent.
    omitted_fields: HashSet<String>,
    /// pointer → the full variant name list of a unit enum (hidden variants and aliases included).
    variants: HashMap<String, Vec<String>>,
    /// Enum variants that need the experimentalApi capability: (type key, variant, reason).
    experimental_variants: Vec<(String, String, String)>,
}

fn read_json(path: &Path) -> Result<Option<Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(s) => serde_json::from_str(&s)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn obj_of(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The strings of a JSON array (nothing when absent).
fn str_list(v: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
}

fn str_map(v: Option<&Value>) -> HashMap<String, String> {
    obj_of(v)
        .into_iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
        .collect()
}

impl Facts {
    fn load(dir: &Path) -> Result<(Facts, Map<String, Value>), String> {
        let facts_dir = dir.join("facts");
        let ts = read_json(&facts_dir.join("ts.json"))?.unwrap_or(Value::Null);
        let mut merged = Map::new();
        // probed.json is machine-written by `cargo xtask schema`; overrides.json holds the facts
        // that only reading the server's source gave, each checked by the conformance corpus.
        for name in ["probed.json", "overrides.json"] {
            if let Some(Value::Object(m)) = read_json(&facts_dir.join(name))? {
                for (k, v) in m {
                    match (merged.get_mut(&k), v) {
                        (Some(Value::Object(dst)), Value::Object(src)) => dst.extend(src),
                        (Some(Value::Array(dst)), Value::Array(src)) => dst.extend(src),
                        (_, v) => {
                            merged.insert(k, v);
                        }
                    }
                }
            }
        }
        let facts = Facts {
            ts: obj_of(Some(&ts)),
            rust_type: str_map(merged.get("rust_type")),
            type_names: str_map(merged.get("type_names")),
            map_only: str_list(merged.get("map_only")).collect(),
            other_variants: str_list(merged.get("other_variants")).collect(),
            untagged_names: {
                // probed.json: `untagged_enums` keyed by JSON pointer (no `#`) → {name}.
                let mut m = str_map(merged.get("untagged_names"));
                for (k, v) in obj_of(merged.get("untagged_enums")) {
                    if let Some(name) = v.get("name").and_then(Value::as_str) {
                        m.entry(format!("#{k}")).or_insert_with(|| name.to_string());
                    }
                }
                m
            },
            hidden_fields: obj_of(merged.get("hidden_fields"))
                .into_iter()
                .map(|(k, v)| (k, obj_of(Some(&v))))
                .collect(),
            deny: obj_of(merged.get("deny_unknown_fields"))
                .into_iter()
                .filter_map(|(k, v)| v.as_bool().map(|b| (k, b)))
                .collect(),
            path_fields: str_list(merged.get("path_fields")).collect(),
            default_fields: str_list(merged.get("default_fields")).collect(),
            omitted_fields: str_list(merged.get("omitted_fields")).collect(),
            variants: obj_of(merged.get("variants"))
                .into_iter()
                .filter_map(|(k, v)| {
                    let names = v
                        .as_array()?
                        .iter()
                        .map(|x| x.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()?;
                    Some((k, names))
                })
                .collect(),
            experimental_variants: merged
                .get("experimental_variants")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| {
                            Some((
                                x["type"].as_str()?.to_string(),
                                x["variant"].as_str()?.to_string(),
                                x["reason"].as_str()?.to_string(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        Ok((facts, merged))
    }
}

struct Builder<'a> {
    defs: BTreeMap<String, Value>,
    facts: &'a Facts,
    types: Vec<TypeDef>,
    by_key: BTreeMap<String, usize>,
    idents: HashSet<String>,
}

pub fn camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if up {
                out.extend(c.to_uppercase());
            } else {
                out.push(c);
            }
            up = false;
        } else {
            up = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

fn is_null(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("null")
}

/// A schema that says nothing (`true`, `{}` or only annotations) accepts any value.
fn is_any(s: &Value) -> bool {
    match s {
        Value::Bool(true) => true,
        Value::Object(m) => m.keys().all(|k| {
            matches!(
                k.as_str(),
                "description" | "title" | "default" | "examples" | "deprecated"
            )
        }),
        _ => false,
    }
}

fn single_enum_str(s: &Value) -> Option<&str> {
    match s.get("enum")?.as_array()?.as_slice() {
        [Value::String(v)] => Some(v),
        _ => None,
    }
}

fn string_enum_values(s: &Value) -> Option<Vec<String>> {
    let vals = s.get("enum")?.as_array()?;
    vals.iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

impl<'a> Builder<'a> {
    fn fresh_ident(&mut self, want: &str) -> String {
        let base = camel(want);
        let mut name = base.clone();
        let mut n = 2;
        while !self.idents.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        name
    }

    fn push(&mut self, ident: String) -> usize {
        self.types.push(TypeDef {
            ident,
            serde_name: None,
            kind: Kind::Alias(Ty::Unit),
        });
        self.types.len() - 1
    }

    /// A fresh type whose serde name is `want` even when its ident must differ.
    fn push_named(&mut self, want: &str) -> usize {
        let ident = self.fresh_ident(want);
        let name = camel(want);
        let i = self.push(ident.clone());
        if ident != name {
            self.types[i].serde_name = Some(name);
        }
        i
    }

    /// The TS facts entry for a definition key (`v2/X` or `X`).
    fn ts_of(&self, key: &str) -> Option<&Map<String, Value>> {
        self.facts.ts.get(key).and_then(Value::as_object)
    }

    /// Declaration order of an object's keys and their TS `?` marks, from the TS object
    /// literal with the same key set: first in the type's own file, else anywhere. `None` for
    /// the marks when no literal matched (nothing is known about them then).
    fn order_fields(
        &self,
        key: &str,
        names: Vec<String>,
    ) -> (Vec<String>, Option<HashSet<String>>) {
        let want: HashSet<&str> = names.iter().map(String::as_str).collect();
        let matches = |o: &Value, slack: usize| -> Option<(Vec<String>, Option<HashSet<String>>)> {
            let keys = o.as_array()?;
            let ks: Vec<(String, bool)> = keys
                .iter()
                .filter_map(|k| {
                    Some((
                        k.get("name")?.as_str()?.to_string(),
                        k.get("optional").and_then(Value::as_bool).unwrap_or(false),
                    ))
                })
                .collect();
            let set: HashSet<&str> = ks.iter().map(|(k, _)| k.as_str()).collect();
            // The literal may also carry the tag key (internally tagged variants).
            if !want.is_subset(&set) || set.len() > want.len() + slack {
                return None;
            }
            let optional = ks
                .iter()
                .filter(|(_, o)| *o)
                .map(|(k, _)| k.clone())
                .collect();
            let order = ks
                .into_iter()
                .map(|(k, _)| k)
                .filter(|k| want.contains(k.as_str()))
                .collect();
            Some((order, Some(optional)))
        };
        let own = self
            .ts_of(key)
            .and_then(|t| t.get("objects"))
            .and_then(Value::as_array);
        for o in own.into_iter().flatten() {
            if let Some(r) = matches(o, 1) {
                return r;
            }
        }
        for slack in [0, 1] {
            for t in self.facts.ts.values() {
                for o in t
                    .get("objects")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(r) = matches(o, slack) {
                        return r;
                    }
                }
            }
        }
        (names, None)
    }

    /// Declaration order of some fields of a type: the first TS object literal of the type's
    /// file that has them all.
    fn declared_order(&self, key: &str, names: &[String]) -> Vec<String> {
        let objs = self
            .ts_of(key)
            .and_then(|t| t.get("objects"))
            .and_then(Value::as_array);
        for o in objs.into_iter().flatten() {
            let ks: Vec<String> = o
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k.get("name").and_then(Value::as_str).map(str::to_string))
                .collect();
            if names.iter().all(|n| ks.contains(n)) {
                return ks;
            }
        }
        names.to_vec()
    }

    /// Declaration order of enum members, from the TS union with the same member set.
    fn order_variants(&self, key: &str, names: &[String]) -> Option<Vec<String>> {
        let unions = self.ts_of(key)?.get("unions")?.as_array()?;
        let want: HashSet<&str> = names.iter().map(String::as_str).collect();
        for u in unions {
            let Some(members) = u.as_array() else {
                continue;
            };
            let ms: Vec<String> = members
                .iter()
                .filter_map(|m| {
                    m.get("lit")
                        .or_else(|| m.get("value"))
                        .or_else(|| m.get("key"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect();
            let set: HashSet<&str> = ms.iter().map(String::as_str).collect();
            if set == want {
                return Some(ms);
            }
        }
        None
    }

    fn resolve_ref(&mut self, r: &str) -> Result<usize, String> {
        let key = r
            .strip_prefix("#/definitions/")
            .ok_or_else(|| format!("unsupported $ref {r}"))?
            .to_string();
        self.def(&key)
    }

    /// The type of a definition, building it on first use.
    fn def(&mut self, key: &str) -> Result<usize, String> {
        if let Some(&i) = self.by_key.get(key) {
            return Ok(i);
        }
        let schema = self
            .defs
            .get(key)
            .cloned()
            .ok_or_else(|| format!("no definition {key}"))?;
        let short = key.rsplit('/').next().unwrap_or(key).to_string();
        // The same definition may exist in both namespaces (AbsolutePathBuf, RequestId).
        let twin = if let Some(s) = key.strip_prefix("v2/") {
            Some(s.to_string())
        } else {
            Some(format!("v2/{key}"))
        };
        if let Some(t) = twin {
            if self.defs.get(&t) == Some(&schema) {
                if let Some(&i) = self.by_key.get(&t) {
                    self.by_key.insert(key.to_string(), i);
                    return Ok(i);
                }
            }
        }
        let ptr = format!("#/definitions/{key}");
        if let Some(custom) = self.facts.rust_type.get(&ptr).cloned() {
            let ident = self.fresh_ident(&short);
            let i = self.push(ident);
            self.types[i].kind = Kind::Alias(custom_ty(&custom));
            self.by_key.insert(key.to_string(), i);
            return Ok(i);
        }
        let i = self.push_named(&short);
        if let Some(name) = self.facts.type_names.get(&ptr) {
            self.types[i].serde_name = Some(name.clone());
        }
        self.by_key.insert(key.to_string(), i);
        let kind = self.kind_of(key, &schema, &ptr, &short)?;
        self.types[i].kind = kind;
        Ok(i)
    }

    /// An inline type named by the node's `title`, else `want`.
    fn inline_titled(
        &mut self,
        ts_key: &str,
        s: &Value,
        ptr: &str,
        want: &str,
    ) -> Result<Ty, String> {
        let name = s
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(want)
            .to_string();
        self.inline(ts_key, s, ptr, &name)
    }

    /// Builds a type for an inline schema node, named `want`.
    fn inline(&mut self, ts_key: &str, s: &Value, ptr: &str, want: &str) -> Result<Ty, String> {
        let i = self.push_named(want);
        let ident = self.types[i].ident.clone();
        let kind = self.kind_of(ts_key, s, ptr, &ident)?;
        self.types[i].kind = kind;
        Ok(Ty::Named(i))
    }

    fn kind_of(&mut self, ts_key: &str, s: &Value, ptr: &str, name: &str) -> Result<Kind, String> {
        let members = s
            .get("oneOf")
            .map(|m| ("oneOf", m))
            .or_else(|| s.get("anyOf").map(|m| ("anyOf", m)));
        let has_props = s.get("properties").is_some();
        if let Some((which, Value::Array(ms))) = members {
            let non_null: Vec<&Value> = ms.iter().filter(|m| !is_null(m)).collect();
            if non_null.len() < ms.len() && !has_props {
                // `anyOf: [X, null]` as a whole definition: an Option alias.
                let inner = if non_null.len() == 1 {
                    self.ty(ts_key, non_null[0], &format!("{ptr}/{which}/0"), name)?
                } else {
                    return Err(format!("{ptr}: nullable union"));
                };
                return Ok(Kind::Alias(Ty::Opt(Box::new(inner))));
            }
            let mut enum_kind = self.enum_of(ts_key, which, ms, ptr, name)?;
            if self.facts.other_variants.contains(ptr) {
                // `#[serde(other)]`: an unknown (or integer) tag is accepted as `Other`.
                if let Kind::Enum { variants, .. } = &mut enum_kind {
                    variants.push(Variant {
                        ident: "UnknownVariant".into(),
                        json: String::new(),
                        body: Body::Other,
                    });
                }
            }
            if !has_props {
                return Ok(enum_kind);
            }
            // Common properties + a union: a struct with the enum flattened into it.
            let flat_ident = self.fresh_ident(&format!("{name}Kind"));
            let fi = self.push(flat_ident);
            self.types[fi].kind = enum_kind;
            let (mut fields, deny) = self.fields_of(ts_key, s, ptr, name)?;
            fields.push(Field {
                json: "__flatten".into(),
                ty: Ty::Named(fi),
                presence: Presence::Required,
                flatten: true,
                sent: false,
            });
            return Ok(Kind::Struct { fields, deny });
        }
        if let Some(vals) = string_enum_values(s) {
            let vals = self.facts.variants.get(ptr).cloned().unwrap_or(vals);
            return Ok(self.unit_enum(ts_key, vals));
        }
        // A definition that is an object without a value schema for other keys is a struct
        // (possibly empty: `expected struct X`, `expected 0 elements in sequence`).
        let is_def = ptr.starts_with("#/definitions/")
            && !ptr["#/definitions/".len()..]
                .trim_start_matches("v2/")
                .contains('/');
        if s.get("type").and_then(Value::as_str) == Some("object")
            && (has_props
                || s.get("additionalProperties") == Some(&Value::Bool(false))
                || (is_def && !s.get("additionalProperties").is_some_and(Value::is_object)))
        {
            let (fields, deny) = self.fields_of(ts_key, s, ptr, name)?;
            return Ok(Kind::Struct { fields, deny });
        }
        Ok(Kind::Alias(self.ty(ts_key, s, ptr, name)?))
    }

    fn unit_enum(&mut self, ts_key: &str, vals: Vec<String>) -> Kind {
        let ordered = self.order_variants(ts_key, &vals).unwrap_or(vals);
        Kind::Enum {
            repr: Repr::External,
            variants: unique_variants(
                ordered
                    .into_iter()
                    .map(|v| (camel(&v), v, Body::Unit))
                    .collect(),
            ),
        }
    }

    fn enum_of(
        &mut self,
        ts_key: &str,
        which: &str,
        ms: &[Value],
        ptr: &str,
        name: &str,
    ) -> Result<Kind, String> {
        // Internally tagged: every member is an object with one common single-value string key.
        let tag = internal_tag(ms);
        let mut variants: Vec<(String, String, Body)> = Vec::new();
        if let (Some(tag), "oneOf") = (tag.clone(), which) {
            for (n, m) in ms.iter().enumerate() {
                let mptr = format!("{ptr}/{which}/{n}");
                let value = m["properties"][&tag]
                    .as_str()
                    .or_else(|| single_enum_str(&m["properties"][&tag]))
                    .unwrap_or_default()
                    .to_string();
                let ident = variant_ident(m, name, &value);
                let mut body_schema = m.clone();
                if let Some(Value::Object(props)) = body_schema.get_mut("properties") {
                    props.remove(&tag);
                }
                let body =
                    self.struct_body(ts_key, &body_schema, &mptr, &format!("{name}{ident}"))?;
                variants.push((ident, value, body));
            }
            let ordered = self.order_variants(
                ts_key,
                &variants.iter().map(|v| v.1.clone()).collect::<Vec<_>>(),
            );
            return Ok(Kind::Enum {
                repr: Repr::Internal(tag),
                variants: reorder(variants, ordered),
            });
        }
        let external = which == "oneOf"
            && ms.iter().all(|m| {
                string_enum_values(m).is_some()
                    || (m.get("type").and_then(Value::as_str) == Some("object")
                        && m.get("required").and_then(Value::as_array).map(Vec::len) == Some(1)
                        && m.get("properties").and_then(Value::as_object).map(Map::len) == Some(1))
            });
        if external {
            for (n, m) in ms.iter().enumerate() {
                let mptr = format!("{ptr}/{which}/{n}");
                if let Some(vals) = string_enum_values(m) {
                    for v in vals {
                        variants.push((camel(&v), v, Body::Unit));
                    }
                    continue;
                }
                let (key, inner) = m["properties"].as_object().unwrap().iter().next().unwrap();
                let iptr = format!("{mptr}/properties/{}", escape_ptr(key));
                let ident = camel(key);
                let body = if inner.get("properties").is_some() && inner.get("oneOf").is_none() {
                    self.struct_body(ts_key, inner, &iptr, &format!("{name}{ident}"))?
                } else {
                    Body::Newtype(self.ty(ts_key, inner, &iptr, &format!("{name}{ident}"))?)
                };
                variants.push((ident, key.clone(), body));
            }
            let mut ordered = self.order_variants(
                ts_key,
                &variants.iter().map(|v| v.1.clone()).collect::<Vec<_>>(),
            );
            if let Some(all) = self.facts.variants.get(ptr) {
                // Hidden unit variants (and aliases) the schema does not show, in declared order.
                for name in all {
                    if !variants.iter().any(|v| &v.1 == name) {
                        variants.push((camel(name), name.clone(), Body::Unit));
                    }
                }
                ordered = Some(all.clone());
            }
            return Ok(Kind::Enum {
                repr: Repr::External,
                variants: reorder(variants, ordered),
            });
        }
        // Untagged: serde tries the members in declaration order (the schema keeps it).
        for (n, m) in ms.iter().enumerate() {
            let mptr = format!("{ptr}/{which}/{n}");
            let want = m
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{name}V{n}"));
            let ty = if m.get("properties").is_some() || m.get("oneOf").is_some() {
                self.inline(ts_key, m, &mptr, &want)?
            } else {
                self.ty(ts_key, m, &mptr, &want)?
            };
            variants.push((format!("V{n}"), String::new(), Body::Newtype(ty)));
        }
        Ok(Kind::Enum {
            repr: Repr::Untagged,
            variants: unique_variants(variants),
        })
    }

    fn struct_body(
        &mut self,
        ts_key: &str,
        s: &Value,
        ptr: &str,
        name: &str,
    ) -> Result<Body, String> {
        let (fields, deny) = self.fields_of(ts_key, s, ptr, name)?;
        if fields.is_empty() && !deny {
            return Ok(Body::Unit);
        }
        Ok(Body::Struct { fields, deny })
    }

    fn fields_of(
        &mut self,
        ts_key: &str,
        s: &Value,
        ptr: &str,
        name: &str,
    ) -> Result<(Vec<Field>, bool), String> {
        let mut props = obj_of(s.get("properties"));
        if let Some(hidden) = self.facts.hidden_fields.get(ptr) {
            for (k, v) in hidden {
                props.insert(k.clone(), v.clone());
            }
        }
        let required: HashSet<String> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let (names, ts_optional) = self.order_fields(ts_key, props.keys().cloned().collect());
        let mut fields = Vec::new();
        for json in names {
            let fs = &props[&json];
            let fptr = format!("{ptr}/properties/{}", escape_ptr(&json));
            let ty = self.ty(ts_key, fs, &fptr, &format!("{name}{}", camel(&json)))?;
            let is_opt = matches!(ty, Ty::Opt(_));
            let presence = if required.contains(&json) {
                // Required although nullable: a custom deserializer, absent is an error.
                if is_opt {
                    Presence::RequiredNullable
                } else {
                    Presence::Required
                }
            } else if is_opt
                && fs.get("default").is_none()
                && !self.facts.default_fields.contains(&fptr)
            {
                // A plain `Option`: absent from a map is fine, but a short sequence is not.
                Presence::Required
            } else {
                Presence::Default
            };
            let sent = ts_optional.as_ref().is_some_and(|o| !o.contains(&json))
                && !self.facts.omitted_fields.contains(&fptr);
            fields.push(Field {
                presence,
                json,
                ty,
                flatten: false,
                sent,
            });
        }
        // Flattened untagged union of alternative key sets (e.g. an image's url | fileId).
        if let Some(Value::Array(alts)) = s.get("anyOf") {
            let aptr = format!("{ptr}/anyOf");
            let uname = self
                .facts
                .untagged_names
                .get(&aptr)
                .or_else(|| self.facts.untagged_names.get(ptr))
                .cloned()
                .unwrap_or_else(|| format!("{name}Source"));
            let ty = self.inline(ts_key, &serde_json::json!({ "anyOf": alts }), ptr, &uname)?;
            fields.push(Field {
                json: "__flatten".into(),
                ty,
                presence: Presence::Required,
                flatten: true,
                sent: false,
            });
        }
        if self.facts.map_only.contains(ptr) {
            // A flattened member that takes nothing makes serde refuse sequences.
            fields.push(Field {
                json: "__map_only".into(),
                ty: Ty::Custom("MapOnly".into()),
                presence: Presence::Required,
                flatten: true,
                sent: false,
            });
        }
        let mut deny = s.get("additionalProperties") == Some(&Value::Bool(false));
        if let Some(&d) = self.facts.deny.get(ptr) {
            deny = d;
        }
        if s.get("additionalProperties") == Some(&Value::Bool(true)) {
            // `true` beside declared fields is a flattened map of any value (codex's
            // `Config.additional`): other keys are kept, not dropped.
            fields.push(Field {
                json: "__extra".into(),
                ty: Ty::Map(Box::new(Ty::Value)),
                presence: Presence::Required,
                flatten: true,
                sent: false,
            });
        }
        if let Some(ap) = s.get("additionalProperties").filter(|ap| ap.is_object()) {
            // Declared fields plus a map that takes every other key.
            let ty = self.ty(ts_key, ap, &format!("{ptr}/additionalProperties"), name)?;
            fields.push(Field {
                json: "__extra".into(),
                ty: Ty::Map(Box::new(ty)),
                presence: Presence::Required,
                flatten: true,
                sent: false,
            });
        }
        Ok((fields, deny))
    }

    fn ty(&mut self, ts_key: &str, s: &Value, ptr: &str, want: &str) -> Result<Ty, String> {
        if let Some(custom) = self.facts.rust_type.get(ptr) {
            return Ok(custom_ty(custom));
        }
        if is_any(s) {
            return Ok(Ty::Value);
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            return Ok(Ty::Named(self.resolve_ref(r)?));
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            if all.len() == 1 {
                return self.ty(ts_key, &all[0], &format!("{ptr}/allOf/0"), want);
            }
            return Err(format!("{ptr}: allOf with {} members", all.len()));
        }
        for which in ["anyOf", "oneOf"] {
            if let Some(Value::Array(ms)) = s.get(which) {
                let non_null: Vec<(usize, &Value)> =
                    ms.iter().enumerate().filter(|(_, m)| !is_null(m)).collect();
                if non_null.len() < ms.len() && s.get("properties").is_none() {
                    let inner = if non_null.len() == 1 {
                        let (n, m) = non_null[0];
                        self.ty(ts_key, m, &format!("{ptr}/{which}/{n}"), want)?
                    } else {
                        let rest: Vec<Value> = non_null.iter().map(|(_, m)| (*m).clone()).collect();
                        let name = self
                            .facts
                            .untagged_names
                            .get(ptr)
                            .cloned()
                            .unwrap_or(want.to_string());
                        self.inline(ts_key, &serde_json::json!({ which: rest }), ptr, &name)?
                    };
                    return Ok(Ty::Opt(Box::new(inner)));
                }
                let name = self
                    .facts
                    .untagged_names
                    .get(&format!("{ptr}/{which}"))
                    .cloned()
                    .unwrap_or(want.to_string());
                return self.inline(ts_key, s, ptr, &name);
            }
        }
        if string_enum_values(s).is_some() {
            return self.inline_titled(ts_key, s, ptr, want);
        }
        match s.get("type") {
            Some(Value::Array(ts)) => {
                let non_null: Vec<&Value> =
                    ts.iter().filter(|t| t.as_str() != Some("null")).collect();
                let mut inner_schema = s.clone();
                if non_null.len() == 1 {
                    inner_schema["type"] = non_null[0].clone();
                    let inner = self.ty(ts_key, &inner_schema, ptr, want)?;
                    if non_null.len() < ts.len() {
                        return Ok(Ty::Opt(Box::new(inner)));
                    }
                    return Ok(inner);
                }
                // Several JSON types and no further shape: anything goes for our purposes.
                if non_null.len() < ts.len() {
                    return Ok(Ty::Opt(Box::new(Ty::Value)));
                }
                Ok(Ty::Value)
            }
            Some(Value::String(t)) => match t.as_str() {
                "string"
                    if self
                        .facts
                        .path_fields
                        .iter()
                        .any(|f| ptr.starts_with(f.as_str())) =>
                {
                    Ok(Ty::Path)
                }
                "string" => Ok(Ty::Str),
                "boolean" => Ok(Ty::Bool),
                "null" => Ok(Ty::Unit),
                "integer" => Ok(Ty::Int(int_kind(s.get("format").and_then(Value::as_str)))),
                "number" => Ok(Ty::Float(
                    if s.get("format").and_then(Value::as_str) == Some("float") {
                        "f32"
                    } else {
                        "f64"
                    },
                )),
                "array" => match s.get("items") {
                    Some(Value::Array(items)) => {
                        let mut tys = Vec::new();
                        for (n, it) in items.iter().enumerate() {
                            tys.push(self.ty(ts_key, it, &format!("{ptr}/items/{n}"), want)?);
                        }
                        Ok(Ty::Tuple(tys))
                    }
                    Some(items) => Ok(Ty::Vec(Box::new(self.ty(
                        ts_key,
                        items,
                        &format!("{ptr}/items"),
                        want,
                    )?))),
                    None => Ok(Ty::Vec(Box::new(Ty::Value))),
                },
                "object" => {
                    if s.get("properties").is_some()
                        || s.get("additionalProperties") == Some(&Value::Bool(false))
                    {
                        return self.inline_titled(ts_key, s, ptr, want);
                    }
                    match s.get("additionalProperties") {
                        Some(ap) if ap.is_object() => Ok(Ty::Map(Box::new(self.ty(
                            ts_key,
                            ap,
                            &format!("{ptr}/additionalProperties"),
                            want,
                        )?))),
                        _ => Ok(Ty::Map(Box::new(Ty::Value))),
                    }
                }
                other => Err(format!("{ptr}: unsupported type {other}")),
            },
            _ => Err(format!("{ptr}: unsupported schema {s}")),
        }
    }
}

fn custom_ty(name: &str) -> Ty {
    match name {
        "PathBuf" => Ty::Path,
        "Value" => Ty::Value,
        other => Ty::Custom(other.to_string()),
    }
}

fn escape_ptr(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn int_kind(format: Option<&str>) -> &'static str {
    match format {
        Some("int8") => "i8",
        Some("int16") => "i16",
        Some("int32") => "i32",
        Some("uint8") => "u8",
        Some("uint16") => "u16",
        Some("uint32") => "u32",
        Some("uint64") => "u64",
        Some("uint") => "usize",
        Some("int") => "isize",
        _ => "i64",
    }
}

fn internal_tag(ms: &[Value]) -> Option<String> {
    let first = ms.first()?.get("properties")?.as_object()?;
    'cand: for (k, v) in first {
        if single_enum_str(v).is_none() {
            continue;
        }
        for m in ms {
            let req = m.get("required").and_then(Value::as_array);
            let ok = m
                .get("properties")
                .and_then(|p| p.get(k))
                .and_then(single_enum_str)
                .is_some()
                && req.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(k)));
            if !ok {
                continue 'cand;
            }
        }
        return Some(k.clone());
    }
    None
}

fn variant_ident(m: &Value, enum_name: &str, value: &str) -> String {
    if let Some(t) = m.get("title").and_then(Value::as_str) {
        if let Some(stripped) = t.strip_suffix(enum_name) {
            if !stripped.is_empty() && stripped.chars().all(|c| c.is_ascii_alphanumeric()) {
                return stripped.to_string();
            }
        }
    }
    camel(value)
}

fn unique_variants(vs: Vec<(String, String, Body)>) -> Vec<Variant> {
    let mut seen = HashSet::new();
    vs.into_iter()
        .map(|(ident, json, body)| {
            let mut id = camel(&ident);
            let mut n = 2;
            while !seen.insert(id.clone()) {
                id = format!("{}{n}", camel(&ident));
                n += 1;
            }
            Variant {
                ident: id,
                json,
                body,
            }
        })
        .collect()
}

fn reorder(vs: Vec<(String, String, Body)>, order: Option<Vec<String>>) -> Vec<Variant> {
    let Some(order) = order else {
        return unique_variants(vs);
    };
    let mut vs: Vec<Option<(String, String, Body)>> = vs.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for o in order {
        if let Some(slot) = vs.iter_mut().find(|v| v.as_ref().is_some_and(|v| v.1 == o)) {
            out.push(slot.take().unwrap());
        }
    }
    out.extend(vs.into_iter().flatten());
    unique_variants(out)
}

impl Model {
    pub fn load(dir: &Path) -> Result<Model, String> {
        let bundle = read_json(&dir.join("json/codex_app_server_protocol.schemas.json"))?
            .ok_or("the schema bundle is missing")?;
        let (facts, merged) = Facts::load(dir)?;
        let mut defs = flatten_defs(&bundle);
        let stable = read_json(&dir.join("stable/codex_app_server_protocol.schemas.json"))?
            .ok_or("the stable schema bundle is missing")?;
        let (experimental_methods, experimental_fields) =
            experimental_diff(&defs, &flatten_defs(&stable));
        // Definitions and methods the bundle omits, probed from the binary.
        for (k, v) in obj_of(merged.get("extra_definitions")) {
            defs.insert(k, v);
        }
        let mut client_request = defs
            .get("ClientRequest")
            .cloned()
            .ok_or("no ClientRequest")?;
        if let Some(extra) = merged.get("extra_methods").and_then(Value::as_array) {
            let members = client_request["oneOf"]
                .as_array_mut()
                .ok_or("ClientRequest.oneOf")?;
            for e in extra {
                let after = e["after"].as_str().unwrap_or_default();
                let pos = members
                    .iter()
                    .position(|m| single_enum_str(&m["properties"]["method"]) == Some(after))
                    .map(|p| p + 1)
                    .unwrap_or(members.len());
                members.insert(pos, e["request"].clone());
            }
        }
        let client_methods = client_request["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| single_enum_str(&m["properties"]["method"]).map(str::to_string))
            .collect();
        defs.insert("ClientRequest".into(), client_request);
        let mut b = Builder {
            defs,
            facts: &facts,
            types: Vec::new(),
            by_key: BTreeMap::new(),
            idents: HashSet::new(),
        };
        for root in [
            "JSONRPCMessage",
            "ClientRequest",
            "ClientNotification",
            "ServerRequest",
            "ServerNotification",
        ] {
            b.def(root)?;
        }
        // Every response type, for both directions.
        // Every definition, reachable or not (hand-written types refer to some directly).
        let keys: Vec<String> = b.defs.keys().cloned().collect();
        for k in keys {
            b.def(&k)?;
        }
        let mut client_results = Vec::new();
        let mut client_result_types = Vec::new();
        // A result type is named after the params type (`FooParams` → `FooResponse`), but for
        // the methods codex pairs otherwise (no params, a shared response): overrides.json's
        // `responses`, from codex's `client_request_definitions!` (protocol/common.rs).
        let named = obj_of(merged.get("responses"));
        for (method, member) in request_members(&b.defs, "ClientRequest") {
            let by_name = params_key(&member)
                .and_then(|p| p.strip_suffix("Params").map(|s| format!("{s}Response")))
                .filter(|r| b.defs.contains_key(r));
            // Named as the bundle names it (the v2 definitions under `v2/`).
            let by_source = named.get(&method).and_then(Value::as_str).and_then(|r| {
                [format!("v2/{r}"), r.to_string()]
                    .into_iter()
                    .find(|k| b.defs.contains_key(k))
            });
            if let Some(resp) = by_name.or(by_source) {
                client_results.push((method.clone(), b.def(&resp)?));
                client_result_types.push((method, resp));
            }
        }
        let mut server_responses = Vec::new();
        for (method, member) in request_members(&b.defs, "ServerRequest") {
            let Some(params) = params_key(&member) else {
                continue;
            };
            let resp = format!(
                "{}Response",
                params.strip_suffix("Params").unwrap_or(&params)
            );
            if b.defs.contains_key(&resp) {
                server_responses.push((method, b.def(&resp)?));
            }
        }
        // What the binary gates, as probed (`method#plain:field=value` → message), wins over
        // the bundle diff: some experimental-only fields are not gated at all.
        let gating = obj_of(merged.get("experimental_gating"));
        let experimental_fields: GatedFields = if gating.is_empty() {
            experimental_fields
                .into_iter()
                .map(|(m, fs)| (m, fs.into_iter().map(|f| (f, false, true)).collect()))
                .collect()
        } else {
            // Per (method, field): which probed values were gated.
            let mut seen: BTreeMap<(String, String), HashSet<String>> = BTreeMap::new();
            for (case, msg) in &gating {
                let (Some((method, rest)), Some(msg)) = (case.split_once("#plain:"), msg.as_str())
                else {
                    continue;
                };
                let (field, value) = rest.split_once('=').unwrap_or((rest, "set"));
                if msg == format!("{method}.{field} requires experimentalApi capability") {
                    seen.entry((method.to_string(), field.to_string()))
                        .or_default()
                        .insert(value.to_string());
                }
            }
            // Keep the declaration order of the diff (the server reports the first gated field).
            experimental_fields
                .into_iter()
                .filter_map(|(m, fs)| {
                    let fs: Vec<(String, bool, bool)> = fs
                        .into_iter()
                        .filter_map(|f| {
                            let vals = seen.get(&(m.clone(), f.clone()))?;
                            Some((f, vals.contains("null"), vals.contains("false")))
                        })
                        .collect();
                    (!fs.is_empty()).then_some((m, fs))
                })
                .collect()
        };
        // One ordered list of checks per method: plain gated fields and gated enum variants
        // (e.g. `askForApproval.granular`); the server reports the first one in declaration
        // order (TS), not sorted.
        let members = request_members(&b.defs, "ClientRequest");
        let mut checks: BTreeMap<String, Vec<ExperimentalCheck>> = BTreeMap::new();
        for (m, fs) in experimental_fields {
            for (field, null_set, false_set) in fs {
                checks
                    .entry(m.clone())
                    .or_default()
                    .push(ExperimentalCheck {
                        field,
                        variant: String::new(),
                        reason: String::new(),
                        null_set,
                        false_set,
                    });
            }
        }
        for (method, member) in &members {
            let Some(params) = params_key(member) else {
                continue;
            };
            for (field, fs) in obj_of(b.defs.get(&params).and_then(|p| p.get("properties"))) {
                let text = fs.to_string();
                for (ty, variant, reason) in &facts.experimental_variants {
                    if text.contains(&format!("\"#/definitions/{ty}\"")) {
                        checks
                            .entry(method.clone())
                            .or_default()
                            .push(ExperimentalCheck {
                                field: field.clone(),
                                variant: variant.clone(),
                                reason: reason.clone(),
                                null_set: false,
                                false_set: false,
                            });
                    }
                }
            }
        }
        let mut experimental_checks = Vec::new();
        for (m, mut cs) in checks {
            let key = members
                .iter()
                .find(|(name, _)| *name == m)
                .and_then(|(_, member)| params_key(member));
            if let Some(key) = key {
                let names: Vec<String> = cs.iter().map(|c| c.field.clone()).collect();
                let order = b.declared_order(&key, &names);
                cs.sort_by_key(|c| {
                    order
                        .iter()
                        .position(|o| *o == c.field)
                        .unwrap_or(usize::MAX)
                });
            }
            experimental_checks.push((m, cs));
        }
        Ok(Model {
            client_results,
            client_result_types,
            types: b.types,
            client_methods,
            server_responses,
            experimental_methods,
            experimental_checks,
        })
    }
}
