//! The releases' schema bundles ([`crate::Protocol::bundle`]), and a line walked against one:
//! the facts the walk records (methods, fields, variants, absent keys, types, the lists an
//! error quotes), each as that release sees it.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

/// One release's bundle, flattened (the `v2` definitions beside the others).
pub(super) struct Schema {
    pub(super) defs: Map<String, Value>,
    /// Server request method → the client's response type (`FooParams` → `FooResponse`, the
    /// changelog's rule).
    pub(super) server_responses: HashMap<String, String>,
    /// Client request method → the server's result type.
    pub(super) results: HashMap<String, String>,
}

fn ref_name(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// The schemas of every release, in [`crate::versions`] order, parsed once when first needed.
pub(super) fn schemas() -> &'static [Schema] {
    static S: OnceLock<Vec<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        crate::versions()
            .iter()
            .map(|p| {
                let defs = p.definitions();
                let mut server_responses = HashMap::new();
                for m in defs["ServerRequest"]["oneOf"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let method = m["properties"]["method"]["enum"][0].as_str();
                    let params = m["properties"]["params"]["$ref"].as_str().map(ref_name);
                    if let (Some(method), Some(params)) = (method, params) {
                        let stem = params.strip_suffix("Params").unwrap_or(params);
                        let resp = format!("{stem}Response");
                        if defs.contains_key(&resp) {
                            server_responses.insert(method.to_string(), resp);
                        }
                    }
                }
                let results = p
                    .client_result_types
                    .iter()
                    .map(|(m, t)| (m.to_string(), ref_name(t).to_string()))
                    .collect();
                Schema {
                    defs,
                    server_responses,
                    results,
                }
            })
            .collect()
    })
}

/// What a fact is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum What {
    /// A method of a root union: known or not.
    Method,
    /// A key the line carries: a declared field or not.
    Field,
    /// An enum value or a union's tag the line carries: a variant or not.
    Variant,
    /// A key the line lacks: undeclared, optional or required.
    Absent,
    /// An `experimentalApi` gate on the method or a field the line sets.
    Gate,
    /// A value none of the releases knows: the variants its error lists.
    Variants,
    /// A key a struct refuses (`deny_unknown_fields`) that no release knows: the fields its
    /// error lists.
    Keys,
    /// A struct the line gives as an array (serde reads it by position): its fields.
    Fields,
    /// A declared field's type.
    Type,
}

impl What {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            What::Method => "method",
            What::Field => "field",
            What::Variant => "variant",
            What::Absent => "absent",
            What::Gate => "gate",
            What::Variants => "variants",
            What::Fields => "fields",
            What::Keys => "keys",
            What::Type => "type",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FactKey {
    pub(super) path: String,
    pub(super) what: What,
    pub(super) name: String,
}

/// A fact as one release sees it: the type it is about, and the state (`known` / `unknown`,
/// `undeclared` / `optional` / `required`, `gated` / `open`, a variant list, a type).
#[derive(Clone, Debug)]
pub(super) struct State {
    pub(super) owner: String,
    pub(super) state: String,
}

pub(super) type Facts = BTreeMap<FactKey, Vec<Option<State>>>;

/// The roots a line is walked from; their tag is `method`.
pub(super) const ROOTS: [&str; 4] = [
    "ClientRequest",
    "ClientNotification",
    "ServerRequest",
    "ServerNotification",
];

const MAX_DEPTH: usize = 96;

pub(super) struct Walk<'a> {
    pub(super) s: &'a Schema,
    pub(super) release: usize,
    pub(super) releases: usize,
    pub(super) facts: &'a mut Facts,
    /// Absent keys (full paths) to describe: always-sent keys a verdict reports, required keys
    /// a walk found absent.
    pub(super) absent: &'a BTreeSet<String>,
    /// The absent keys this release's verdict says it always sends.
    pub(super) sent: BTreeSet<&'a str>,
    /// Required keys this walk found absent.
    pub(super) required_absent: BTreeSet<String>,
}

pub(super) fn push_key(path: &str, k: &str) -> String {
    let mut p = path.to_string();
    codex_wire_protocol::segment::push_key(&mut p, k);
    p
}

impl<'a> Walk<'a> {
    fn record(&mut self, path: &str, what: What, name: &str, owner: &str, state: &str) {
        let e = self
            .facts
            .entry(FactKey {
                path: path.to_string(),
                what,
                name: name.to_string(),
            })
            .or_insert_with(|| vec![None; self.releases]);
        if e[self.release].is_none() {
            e[self.release] = Some(State {
                owner: owner.to_string(),
                state: state.to_string(),
            });
        }
    }

    /// A schema node through `$ref`s, with the name of the last definition it named.
    fn resolve(&self, mut node: &'a Value, owner: &str) -> (&'a Value, String) {
        let mut owner = owner.to_string();
        for _ in 0..16 {
            match node.get("$ref").and_then(Value::as_str) {
                Some(r) => match self.s.defs.get(ref_name(r)) {
                    Some(d) => {
                        owner = ref_name(r).to_string();
                        node = d;
                    }
                    None => break,
                },
                None => break,
            }
        }
        (node, owner)
    }

    pub(super) fn walk(
        &mut self,
        v: &Value,
        node: &'a Value,
        path: &str,
        owner: &str,
        depth: usize,
    ) {
        if depth > MAX_DEPTH || v.is_null() {
            return;
        }
        let (node, owner) = self.resolve(node, owner);
        let Some(obj) = node.as_object() else {
            return; // `true`: any value
        };
        for m in obj
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.walk(v, m, path, &owner, depth + 1);
        }
        let alts = obj
            .get("oneOf")
            .or_else(|| obj.get("anyOf"))
            .and_then(Value::as_array);
        match v {
            Value::Object(m) => match alts {
                Some(alts) if obj.contains_key("properties") => {
                    self.flattened(m, obj, alts, path, &owner, depth)
                }
                Some(alts) => self.union(v, alts, path, &owner, depth),
                None => self.object(m, obj, Vec::new(), path, &owner, depth),
            },
            Value::String(s) => {
                if let Some(e) = obj.get("enum").and_then(Value::as_array) {
                    let names: Vec<&str> = e.iter().filter_map(Value::as_str).collect();
                    self.variant(path, s, &names, &owner);
                } else if let Some(alts) = alts {
                    self.union(v, alts, path, &owner, depth);
                }
            }
            Value::Array(a) => {
                if let Some(items) = obj.get("items") {
                    for (i, x) in a.iter().enumerate() {
                        self.walk(x, items, &format!("{path}[{i}]"), &owner, depth + 1);
                    }
                } else if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                    // serde reads a struct from an array too, field by field in declaration
                    // order (which the bundle does not keep): the count is what an error says.
                    let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
                    names.sort_unstable();
                    self.record(path, What::Fields, &owner, &owner, &names.join("\n"));
                } else if let Some(alts) = alts {
                    self.union(v, alts, path, &owner, depth);
                }
            }
            _ => {}
        }
    }

    /// A string the schema enumerates: a variant or not (and the list, when it is not).
    fn variant(&mut self, path: &str, s: &str, names: &[&str], owner: &str) {
        let known = names.contains(&s);
        self.record(
            path,
            What::Variant,
            s,
            owner,
            if known { "known" } else { "unknown" },
        );
        if !known {
            let mut list: Vec<&str> = names.to_vec();
            list.sort_unstable();
            self.record(path, What::Variants, s, owner, &list.join("\n"));
        }
    }

    /// A union's members, through `$ref`s, without `null`.
    fn members(&self, alts: &'a [Value], owner: &str) -> Vec<(&'a Value, String)> {
        alts.iter()
            .map(|m| self.resolve(m, owner))
            .filter(|(m, _)| m.get("type").and_then(Value::as_str) != Some("null"))
            .collect()
    }

    /// An internally tagged union (one key every object member fixes to one value): records
    /// the line's tag as a variant (a method, for the roots) and returns the member it names
    /// (`Some(None)`: none does); `None`: not a tagged union.
    #[allow(clippy::option_option)]
    fn tagged(
        &mut self,
        o: &Map<String, Value>,
        members: &[(&'a Value, String)],
        path: &str,
        owner: &str,
    ) -> Option<Option<(&'a Value, String)>> {
        let objects: Vec<&(&'a Value, String)> = members
            .iter()
            .filter(|(m, _)| m.get("properties").is_some())
            .collect();
        if objects.len() < 2 {
            return None;
        }
        let tag = objects[0].0["properties"]
            .as_object()?
            .keys()
            .find(|k| objects.iter().all(|(m, _)| single_enum(m, k).is_some()))?;
        let Some(Value::String(t)) = o.get(tag.as_str()) else {
            return Some(None);
        };
        let names: Vec<String> = objects
            .iter()
            .filter_map(|(m, _)| single_enum(m, tag))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let at = push_key(path, tag);
        if path == "$" && tag == "method" && ROOTS.contains(&owner) {
            let known = names.contains(&t.as_str());
            let state = if known { "known" } else { "unknown" };
            self.record(&at, What::Method, t, owner, state);
            if !known {
                let mut list = names.clone();
                list.sort_unstable();
                self.record(&at, What::Variants, t, owner, &list.join("\n"));
            }
        } else {
            self.variant(&at, t, &names, owner);
        }
        let hit = objects
            .iter()
            .find(|(m, _)| single_enum(m, tag).as_deref() == Some(t.as_str()))
            .map(|&&(m, ref o2)| {
                let inner = if o2 == owner {
                    format!("{owner} (`{t}`)")
                } else {
                    o2.clone()
                };
                (m, inner)
            });
        Some(hit)
    }

    /// A value against a union's members.
    fn union(&mut self, v: &Value, alts: &'a [Value], path: &str, owner: &str, depth: usize) {
        let members = self.members(alts, owner);
        if members.len() == 1 {
            let (m, o) = &members[0];
            self.walk(v, m, path, o, depth + 1);
            return;
        }
        match v {
            Value::Object(o) => {
                if let Some(hit) = self.tagged(o, &members, path, owner) {
                    if let Some((m, inner)) = hit {
                        if let Some(mo) = m.as_object() {
                            self.object(o, mo, Vec::new(), path, &inner, depth + 1);
                        }
                    }
                    return;
                }
                let objects: Vec<(&'a Value, &str)> = members
                    .iter()
                    .filter(|(m, _)| m.get("properties").is_some())
                    .map(|(m, o2)| (*m, o2.as_str()))
                    .collect();
                // Externally tagged: members of one required key each; the line's one key.
                let external: Vec<(&'a str, &'a Value)> = objects
                    .iter()
                    .filter_map(|&(m, _)| {
                        let p = m.get("properties")?.as_object()?;
                        let req = m.get("required")?.as_array()?;
                        if p.len() == 1 && req.len() == 1 {
                            p.iter().next().map(|(k, s)| (k.as_str(), s))
                        } else {
                            None
                        }
                    })
                    .collect();
                if !external.is_empty() && external.len() == objects.len() && o.len() == 1 {
                    if let Some((k, x)) = o.iter().next() {
                        let names: Vec<&str> = external.iter().map(|(k, _)| *k).collect();
                        self.variant(path, k, &names, owner);
                        if let Some(&(_, s)) = external.iter().find(|(n, _)| n == k) {
                            self.walk(x, s, &push_key(path, k), owner, depth + 1);
                        }
                    }
                    return;
                }
                // Untagged: the member declaring most of the line's keys (the first of equals:
                // serde tries them in order).
                let best = objects.iter().min_by_key(|(m, _)| {
                    let p = m.get("properties").and_then(Value::as_object);
                    let hits = o.keys().filter(|k| p.is_some_and(|p| p.contains_key(*k)));
                    std::cmp::Reverse(hits.count())
                });
                if let Some(&(m, o2)) = best {
                    if let Some(mo) = m.as_object() {
                        self.object(o, mo, Vec::new(), path, o2, depth + 1);
                    }
                }
            }
            Value::String(s) => {
                let open = members.iter().any(|(m, _)| {
                    m.get("enum").is_none()
                        && (m.get("type").and_then(Value::as_str) == Some("string")
                            || m["type"]
                                .as_array()
                                .is_some_and(|t| t.iter().any(|t| t == "string")))
                });
                let names: Vec<&str> = members
                    .iter()
                    .filter_map(|(m, _)| m.get("enum").and_then(Value::as_array))
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if !open && !names.is_empty() {
                    self.variant(path, s, &names, owner);
                }
            }
            Value::Array(_) => {
                if let Some((m, o2)) = members.iter().find(|(m, _)| m.get("items").is_some()) {
                    self.walk(v, m, path, o2, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// An object with properties of its own and a union beside them (serde's `flatten`): a
    /// tagged union's member named by the line, else every member's properties count.
    fn flattened(
        &mut self,
        o: &Map<String, Value>,
        obj: &'a Map<String, Value>,
        alts: &'a [Value],
        path: &str,
        owner: &str,
        depth: usize,
    ) {
        let members = self.members(alts, owner);
        let (chosen, inner) = match self.tagged(o, &members, path, owner) {
            Some(Some((m, inner))) => (vec![m], inner),
            Some(None) => (Vec::new(), owner.to_string()),
            None => (members.iter().map(|(m, _)| *m).collect(), owner.to_string()),
        };
        let flat: Vec<&'a Map<String, Value>> = chosen
            .into_iter()
            .filter_map(|m| m.get("properties").and_then(Value::as_object))
            .collect();
        self.object(o, obj, flat, path, &inner, depth);
    }

    /// An object against an object schema (plus the properties flattened into it).
    fn object(
        &mut self,
        m: &Map<String, Value>,
        obj: &'a Map<String, Value>,
        flattened: Vec<&'a Map<String, Value>>,
        path: &str,
        owner: &str,
        depth: usize,
    ) {
        let props = obj.get("properties").and_then(Value::as_object);
        let extra = obj.get("additionalProperties");
        if props.is_none() && flattened.is_empty() {
            // A map, or free-form.
            if let Some(ap @ Value::Object(_)) = extra {
                for (k, x) in m {
                    self.walk(x, ap, &push_key(path, k), owner, depth + 1);
                }
            }
            return;
        }
        for (k, x) in m {
            let declared = props
                .and_then(|p| p.get(k))
                .or_else(|| flattened.iter().find_map(|p| p.get(k)));
            let at = push_key(path, k);
            match declared {
                Some(s) => {
                    self.record(&at, What::Field, k, owner, "known");
                    self.record(&at, What::Type, k, owner, &render(s));
                    self.walk(x, s, &at, owner, depth + 1);
                }
                None => match extra {
                    Some(ap @ Value::Object(_)) => self.walk(x, ap, &at, owner, depth + 1),
                    Some(Value::Bool(true)) => {}
                    Some(Value::Bool(false)) => {
                        // Refused (`deny_unknown_fields`): the error lists the fields.
                        self.record(&at, What::Field, k, owner, "unknown");
                        let mut names: Vec<&str> = props
                            .into_iter()
                            .chain(flattened.iter().copied())
                            .flat_map(|p| p.keys().map(String::as_str))
                            .collect();
                        names.sort_unstable();
                        self.record(&at, What::Keys, k, owner, &names.join("\n"));
                    }
                    _ => self.record(&at, What::Field, k, owner, "unknown"),
                },
            }
        }
        let required: BTreeSet<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for k in &required {
            if !m.contains_key(*k) {
                self.required_absent.insert(push_key(path, k));
            }
        }
        let absent = self.absent;
        for full in absent.iter() {
            let Some(k) = child_key(full, path) else {
                continue;
            };
            if m.contains_key(&k) {
                continue;
            }
            let declared = props.is_some_and(|p| p.contains_key(&k))
                || flattened.iter().any(|p| p.contains_key(&k));
            let state = if required.contains(k.as_str()) {
                "required"
            } else if self.sent.contains(full.as_str()) {
                "always sent"
            } else if declared {
                "optional"
            } else {
                "undeclared"
            };
            self.record(full, What::Absent, &k, owner, state);
        }
    }
}

/// The one value a union member fixes `k` to (`"type": {"enum": ["text"]}`).
fn single_enum(m: &Value, k: &str) -> Option<String> {
    let e = m.get("properties")?.get(k)?.get("enum")?.as_array()?;
    if e.len() == 1 {
        e[0].as_str().map(str::to_string)
    } else {
        None
    }
}

/// `full`'s last key when its parent is `parent` (`$.a.b` under `$.a` → `b`).
fn child_key(full: &str, parent: &str) -> Option<String> {
    let rest = full.strip_prefix(parent)?;
    if let Some(k) = rest.strip_prefix('.') {
        return (!k.contains(['.', '['])).then(|| k.to_string());
    }
    let inner = rest.strip_prefix('[')?.strip_suffix(']')?;
    serde_json::from_str::<String>(inner).ok()
}

/// A short rendering of a property's type (the changelog's): `string | null`, `ThreadItem[]`.
fn render(v: &Value) -> String {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return ref_name(r).to_string();
    }
    if let Some(alts) = v
        .get("anyOf")
        .or_else(|| v.get("oneOf"))
        .or_else(|| v.get("allOf"))
        .and_then(Value::as_array)
    {
        return alts.iter().map(render).collect::<Vec<_>>().join(" | ");
    }
    if let Some(e) = v.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    let one = |t: &str| {
        if t == "array" {
            format!("{}[]", v.get("items").map_or("?".into(), render))
        } else {
            t.to_string()
        }
    };
    match v.get("type") {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts
            .iter()
            .map(|t| one(t.as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "any".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_keys() {
        assert_eq!(child_key("$.a.b", "$.a").as_deref(), Some("b"));
        assert_eq!(child_key("$.a.b.c", "$.a"), None);
        assert_eq!(child_key(r#"$.a["x y"]"#, "$.a").as_deref(), Some("x y"));
        assert_eq!(child_key("$.ab", "$.a"), None);
    }
}
