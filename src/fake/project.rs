//! What an older codex version's server sends: the fake builds its messages as the newest
//! version does, then, answering as an older one, drops the keys that version's schema does not
//! declare (`thread.attachedToThreadId` for 0.163.0, …), walking the message with that version's
//! JSON schema bundle. Conservative: where the schema does not say which shape a value has, the
//! value is left whole.

use serde_json::{Map, Value};

/// One version's bundle, ready to walk messages with.
pub struct Projector {
    bundle: Value,
}

impl Projector {
    /// None for the newest version: its messages are the fake's own.
    pub fn of(p: &'static crate::Protocol) -> Option<Projector> {
        if std::ptr::eq(p, crate::newest()) {
            return None;
        }
        serde_json::from_str(p.bundle)
            .ok()
            .map(|bundle| Projector { bundle })
    }

    /// Drops from a server message what the version does not declare. `method`: for a result,
    /// the method of the client request it answers.
    pub fn project(&self, msg: &mut Value, method: Option<&str>) {
        let defs = &self.bundle["definitions"];
        if let Some(m) = msg["method"].as_str().map(str::to_string) {
            let root = if msg.get("id").is_some() {
                "ServerRequest"
            } else {
                "ServerNotification"
            };
            // Envelope keys (`emittedAtMs`, `id`) are the transport's, not the union's.
            let Some(params) = msg.get_mut("params") else {
                return;
            };
            if let Some(branch) = defs[root]["oneOf"].as_array().and_then(|bs| {
                bs.iter()
                    .find(|b| self.resolve(&b["properties"]["method"])["enum"][0] == m.as_str())
            }) {
                self.walk(params, &branch["properties"]["params"], 0);
            }
        } else if let (Some(result), Some(m)) = (msg.get_mut("result"), method) {
            if let Some(schema) = self.response_schema(m) {
                self.walk(result, &schema, 0);
            }
        }
    }

    /// `XResponse` for the client request whose params are `XParams`.
    fn response_schema(&self, method: &str) -> Option<Value> {
        let branch = self.bundle["definitions"]["ClientRequest"]["oneOf"]
            .as_array()?
            .iter()
            .find(|b| self.resolve(&b["properties"]["method"])["enum"][0] == method)?;
        let params = branch["properties"]["params"]["$ref"].as_str()?;
        let response = params.strip_suffix("Params")?.to_string() + "Response";
        let node = serde_json::json!({ "$ref": response });
        (!self.resolve(&node).is_null()).then_some(node)
    }

    /// Follows `$ref`s (`#/definitions/v2/Name`).
    fn resolve<'a>(&'a self, node: &'a Value) -> &'a Value {
        let mut node = node;
        for _ in 0..16 {
            let Some(r) = node["$ref"].as_str() else {
                return node;
            };
            let mut at = &self.bundle;
            for part in r.trim_start_matches("#/").split('/') {
                at = &at[part];
            }
            node = at;
        }
        node
    }

    /// The keys an object schema declares (its own and its `allOf` parts'); None when a part
    /// does not say (then nothing is dropped at that level).
    fn declared(&self, node: &Value) -> Option<Map<String, Value>> {
        let node = self.resolve(node);
        let mut out = Map::new();
        if let Some(p) = node["properties"].as_object() {
            out.extend(p.clone());
        }
        if let Some(parts) = node["allOf"].as_array() {
            for part in parts {
                out.extend(self.declared(part)?);
            }
        }
        if out.is_empty() || node.get("oneOf").is_some() || node.get("anyOf").is_some() {
            return None;
        }
        if node["additionalProperties"].is_object() || node["additionalProperties"] == true {
            return None;
        }
        Some(out)
    }

    fn walk(&self, v: &mut Value, node: &Value, depth: usize) {
        self.walk_with(v, node, &Map::new(), depth);
    }

    /// `inherited`: keys a union's own `properties` add to each of its branches (serde's
    /// `flatten` of common fields next to a tagged enum).
    fn walk_with(&self, v: &mut Value, node: &Value, inherited: &Map<String, Value>, depth: usize) {
        if depth > 64 {
            return;
        }
        let node = self.resolve(node);
        if let Some(branches) = node["oneOf"].as_array().or(node["anyOf"].as_array()) {
            let mut common = inherited.clone();
            if let Some(p) = node["properties"].as_object() {
                common.extend(p.clone());
            }
            if let Some(b) = branches.iter().find(|b| self.fits(v, b)) {
                self.walk_with(v, b, &common, depth + 1);
            }
            return;
        }
        match v {
            Value::Object(obj) => {
                if let Some(mut declared) = self.declared(node) {
                    declared.extend(inherited.clone());
                    obj.retain(|k, _| declared.contains_key(k));
                    for (k, sub) in obj.iter_mut() {
                        self.walk(sub, &declared[k], depth + 1);
                    }
                } else if let Some(extra) = node["additionalProperties"].as_object() {
                    let extra = Value::Object(extra.clone());
                    for sub in obj.values_mut() {
                        self.walk(sub, &extra, depth + 1);
                    }
                }
            }
            Value::Array(items) if node["items"].is_object() => {
                for item in items {
                    self.walk(item, &node["items"], depth + 1);
                }
            }
            _ => {}
        }
    }

    /// Whether `v` has a union branch's shape: its tag values (single-value enums) and its
    /// required keys, or its type for a non-object.
    fn fits(&self, v: &Value, branch: &Value) -> bool {
        let b = self.resolve(branch);
        let types: Vec<&str> = match &b["type"] {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let type_ok = |t: &str| types.is_empty() || types.contains(&t);
        match v {
            Value::Null => types.contains(&"null"),
            Value::Object(obj) => {
                if !type_ok("object") {
                    return false;
                }
                let Some(props) = self
                    .declared(b)
                    .or_else(|| b["properties"].as_object().cloned())
                else {
                    // A nested union or a ref: fits if one of its branches does.
                    return b["oneOf"]
                        .as_array()
                        .or(b["anyOf"].as_array())
                        .is_some_and(|bs| bs.iter().any(|x| self.fits(v, x)));
                };
                let tags_match = props.iter().all(|(k, p)| {
                    let p = self.resolve(p);
                    match p["enum"].as_array() {
                        Some(one) if one.len() == 1 => obj.get(k).is_none_or(|x| *x == one[0]),
                        _ => true,
                    }
                });
                let required = b["required"].as_array().is_none_or(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .all(|k| obj.contains_key(k))
                });
                tags_match && required
            }
            Value::Array(_) => type_ok("array"),
            Value::String(_) => type_ok("string"),
            Value::Bool(_) => type_ok("boolean"),
            Value::Number(_) => type_ok("number") || type_ok("integer"),
        }
    }
}
