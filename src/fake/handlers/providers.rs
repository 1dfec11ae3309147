//! `modelProvider/list` and `account/gatewayOAuth/read` from the configuration;
//! `modelProvider/config/write` for custom gateways: codex's checks in its order, a new
//! provider's id made from its name, a patch of an existing one, written to the user layer as
//! codex writes it (probed on 0.171.0; 76_model_provider_write); a Bedrock provider's AWS
//! profile and region; the GCP provider's project, location and credential file.

use super::H;
use crate::fake::defaults;
use crate::fake::user_config::{self as uc, WriteError};
use serde_json::{json, Map, Value};

/// codex's texts for a refused write.
const NO_NAME: &str = "Enter a provider name.";
const NO_URL: &str = "A base URL is required to create a custom provider.";
const BAD_URL: &str = "Enter an HTTP(S) base URL without credentials, a query, or a fragment.";
// Probed on 0.169.0 and 0.171.0 (0.168.0 says "A custom gateway cannot use …"; no scenario
// records it, so that a new release may word it either way).
const BUILT_IN: &str = "A custom provider or gateway cannot use a built-in provider ID.";
const RESERVED: &str =
    "This name is reserved for a built-in provider. Enter a different custom provider name.";

const EMPTY: &str = "Configuration values must not be empty; use null to clear a field.";

/// codex's names of its Bedrock providers.
fn bedrock_name(id: &str) -> &'static str {
    if id == "amazon-bedrock-runtime" {
        "Amazon Bedrock Runtime"
    } else {
        "Amazon Bedrock Mantle"
    }
}

/// Whether a Bedrock provider's table sets no AWS field.
fn aws_empty(provider: &Value) -> bool {
    provider["aws"].as_object().is_none_or(Map::is_empty)
}

/// One of codex's cloud providers (`amazon-bedrock`, `amazon-bedrock-runtime`, `gcp`) as a
/// write answers it and `modelProvider/list` lists it, from its config table (turn scenario
/// 287 on 0.171.0 and 0.169.0); `None` for another id.
fn cloud_provider(id: &str, table: &Value) -> Option<Value> {
    let field = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    let settings = match id {
        "amazon-bedrock" | "amazon-bedrock-runtime" => {
            let aws = &table["aws"];
            json!({"type": "bedrock", "profile": field(aws, "profile"),
                   "region": field(aws, "region")})
        }
        "gcp" => json!({"type": "gcp", "projectId": field(table, "project_id"),
                        "location": field(table, "location"),
                        "credentialFile": field(table, "credential_file")}),
        _ => return None,
    };
    let name = if id == "gcp" {
        "Google Cloud Vertex AI"
    } else {
        bedrock_name(id)
    };
    Some(
        json!({"id": id, "name": name, "canEdit": true, "baseUrl": null,
                "settings": settings}),
    )
}

/// A base URL codex accepts: http(s), a host, no credentials, query or fragment.
fn url_ok(raw: &str) -> bool {
    let Some((scheme, rest)) = raw.split_once("://") else {
        return false;
    };
    let host = rest.split('/').next().unwrap_or_default();
    matches!(scheme, "http" | "https")
        && !host.is_empty()
        && !host.contains('@')
        && !rest.contains('?')
        && !rest.contains('#')
}

/// A name in lower case, runs of anything else than letters and digits as one `-`, none at
/// the ends ("My GW! ✓" is `my-gw`).
fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_string()
}

/// A new provider's id: its name's slug, `-2`, `-3`… while taken.
fn new_id(name: &str, taken: &[String]) -> String {
    let slug = slug(name);
    let free = |id: &str| !taken.iter().any(|t| t == id) && !uc::BUILT_IN_PROVIDERS.contains(&id);
    if free(&slug) {
        return slug;
    }
    (2..)
        .map(|n| format!("{slug}-{n}"))
        .find(|id| free(id))
        .unwrap_or(slug)
}

/// A provider as the write answers it.
fn summary(id: &str, t: &Map<String, Value>) -> Value {
    let auth = match t.get("env_key").and_then(Value::as_str) {
        Some(k) => json!({"mode": "environmentVariable", "envKey": k}),
        None => json!({"mode": "none"}),
    };
    json!({"provider": {"id": id, "name": t.get("name").cloned().unwrap_or(json!(id)),
                        "canEdit": true, "baseUrl": t.get("base_url").cloned().unwrap_or(Value::Null),
                        "settings": {"type": "customGateway", "auth": auth}}})
}

/// A cloud provider's settings patched into its config table: each param (`fields`: param
/// name, config key) set by a string, cleared by null, left by absence; an empty one refuses
/// the whole write, as codex's "use null to clear" check does.
fn patch(
    table: &mut Map<String, Value>,
    s: &Value,
    fields: &[(&str, &str)],
) -> Result<(), WriteError> {
    if fields.iter().any(|(f, _)| s[*f] == "") {
        return Err(uc::refusal(uc::VALIDATION, EMPTY));
    }
    for (f, key) in fields {
        match s.get(*f) {
            Some(Value::String(v)) => {
                table.insert((*key).into(), json!(v));
            }
            Some(Value::Null) => {
                table.remove(*key);
            }
            _ => {}
        }
    }
    Ok(())
}

impl H<'_> {
    /// The model providers as codex lists them (`modelProvider/list`: the built-in `openai`,
    /// then the configured ones; `account/gatewayOAuth/read`: the configured one), for
    /// providers that need no authentication (one with an `env_key`, a bearer token, headers
    /// or an OpenAI login is not modeled).
    pub(super) fn providers(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        let config = &self.fake.config();
        // Another provider than the configured one is not modeled.
        if p["modelProvider"]
            .as_str()
            .is_some_and(|m| m != config.provider)
        {
            return self.not_modeled(method);
        }
        let providers = config.custom_providers();
        const AUTH: [&str; 5] = [
            "env_key",
            "experimental_bearer_token",
            "requires_openai_auth",
            "http_headers",
            "auth",
        ];
        if providers
            .iter()
            .any(|(_, t)| AUTH.iter().any(|k| t.contains_key(*k)))
        {
            return self.not_modeled(method);
        }
        let name = |id: &str, t: &toml::Table| {
            t.get("name")
                .and_then(toml::Value::as_str)
                .unwrap_or(id)
                .to_string()
        };
        let v = if method == "modelProvider/list" {
            let mut data = vec![json!({"id": "openai", "name": "OpenAI", "canEdit": false,
                                       "baseUrl": null, "settings": {"type": "openai"}})];
            data.extend(providers.iter().map(|(pid, t)| {
                // A cloud provider by its own settings (turn scenario 287 on 0.171.0 and
                // 0.169.0; fidelity s61610001_0019).
                let as_json = serde_json::to_value(t).unwrap_or_default();
                cloud_provider(pid, &as_json).unwrap_or_else(|| {
                    json!({"id": pid, "name": name(pid, t), "canEdit": true,
                           "baseUrl": t.get("base_url").and_then(toml::Value::as_str),
                           "settings": {"type": "customGateway", "auth": {"mode": "none"}}})
                })
            }));
            // Listed by id, the built-in among the others (76_model_provider_write).
            data.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
            json!({"data": data, "defaultProviderId": config.provider, "canChangeDefault": false})
        } else {
            let Some((pid, t)) = providers.iter().find(|(p, _)| *p == config.provider) else {
                return self.not_modeled(method);
            };
            json!({"providerId": pid, "providerName": name(pid, t), "required": false,
                   "supportsDeviceAuth": false, "status": null, "error": null})
        };
        self.result(id, defaults::shaped(self.fake.protocol, method, v));
        Ok(())
    }

    pub(super) fn provider_write(&self, id: &Value, p: &Value) -> Result<(), String> {
        let s = &p["settings"];
        let written = match s["type"].as_str() {
            Some("customGateway") => self.write_gateway(s),
            Some("bedrock") => self.write_bedrock(s),
            Some("gcp") => self.write_gcp(s),
            _ => return self.not_modeled("modelProvider/config/write"),
        };
        self.config_written(id, written);
        Ok(())
    }

    /// A Bedrock provider's AWS profile and region, patched into
    /// `[model_providers.<id>.aws]` (null clears a field, empty is refused); the answer shows
    /// them as they stand. No cloud is asked (fidelity s11110001_0033; probed on 0.171.0).
    fn write_bedrock(&self, s: &Value) -> Result<Value, WriteError> {
        // The id is one of codex's two Bedrock providers (serde refused any other).
        let pid = s["providerId"].as_str().unwrap_or_default();
        let mut table = self.user_table();
        let all = table.entry("model_providers").or_insert_with(|| json!({}));
        if !all.is_object() {
            *all = json!({});
        }
        let had = all[pid]["aws"].is_object();
        let mut aws = all[pid]["aws"].as_object().cloned().unwrap_or_default();
        patch(&mut aws, s, &[("profile", "profile"), ("region", "region")])?;
        let mut provider = json!({"aws": aws});
        let answer = json!({"provider": cloud_provider(pid, &provider)});
        // A write that sets nothing adds no table; one that clears the last field keeps its
        // table, empty (probed on 0.171.0: the provider is then listed, with nulls).
        if had || !aws_empty(&provider) {
            if !all[pid].is_object() {
                all[pid] = json!({});
            }
            all[pid]["aws"] = provider["aws"].take();
        }
        self.write_user_table(&table);
        Ok(answer)
    }

    /// The GCP provider's project, location and credential file, patched into
    /// `[model_providers.gcp]` as `project_id`, `location` and `credential_file` (null clears a
    /// field, empty is refused, then a credential file left relative fails codex's validation
    /// of the result); the answer shows them as they stand. No cloud is asked (fidelity
    /// s13130001_0241; probed on 0.171.0).
    fn write_gcp(&self, s: &Value) -> Result<Value, WriteError> {
        let mut table = self.user_table();
        let all = table.entry("model_providers").or_insert_with(|| json!({}));
        if !all.is_object() {
            *all = json!({});
        }
        let mut gcp = all["gcp"].as_object().cloned().unwrap_or_default();
        let fields = [
            ("projectId", "project_id"),
            ("location", "location"),
            ("credentialFile", "credential_file"),
        ];
        patch(&mut gcp, s, &fields)?;
        if gcp
            .get("credential_file")
            .and_then(Value::as_str)
            .is_some_and(|f| !f.starts_with('/'))
        {
            return Err(uc::refusal(
                uc::VALIDATION,
                "Invalid configuration: model_providers.gcp: provider credential_file must be an \
                 absolute path\nin `model_providers`\n",
            ));
        }
        let gcp = Value::Object(gcp);
        let answer = json!({"provider": cloud_provider("gcp", &gcp)});
        // As a Bedrock write: a table only once something is set.
        if all["gcp"].is_object() || gcp.as_object().is_some_and(|t| !t.is_empty()) {
            all["gcp"] = gcp;
        }
        self.write_user_table(&table);
        Ok(answer)
    }

    fn write_gateway(&self, s: &Value) -> Result<Value, WriteError> {
        let mut table = self.user_table();
        let flags = uc::flags(&self.fake.overrides);
        let providers = |t: &Map<String, Value>| -> Vec<String> {
            t.get("model_providers")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let name = s["name"].as_str();
        // The named provider first, then the fields (76: an unknown id with a blank name).
        let check_fields = || {
            if name.is_some_and(|n| n.trim().is_empty()) {
                return Err(uc::refusal(uc::VALIDATION, NO_NAME));
            }
            match s["baseUrl"].as_str() {
                Some(u) if !url_ok(u) => Err(uc::refusal(uc::VALIDATION, BAD_URL)),
                _ => Ok(()),
            }
        };
        let pid = match s["providerId"].as_str() {
            Some(pid) => {
                if uc::BUILT_IN_PROVIDERS.contains(&pid) {
                    return Err(uc::refusal(uc::VALIDATION, BUILT_IN));
                }
                if providers(&flags).iter().any(|x| x == pid) {
                    return Err(uc::refusal(
                        uc::READONLY,
                        "This configuration field is read-only.",
                    ));
                }
                if !providers(&table).iter().any(|x| x == pid) {
                    return Err(uc::refusal(PATH_NOT_FOUND, "Unknown provider ID."));
                }
                check_fields()?;
                pid.to_string()
            }
            None => {
                check_fields()?;
                let Some(name) = name else {
                    return Err(uc::refusal(uc::VALIDATION, NO_NAME));
                };
                if uc::BUILT_IN_PROVIDERS.contains(&slug(name).as_str()) {
                    return Err(uc::refusal(uc::VALIDATION, RESERVED));
                }
                if !s["baseUrl"].is_string() {
                    return Err(uc::refusal(uc::VALIDATION, NO_URL));
                }
                let mut taken = providers(&table);
                taken.extend(providers(&flags));
                new_id(name, &taken)
            }
        };
        let all = table.entry("model_providers").or_insert_with(|| json!({}));
        if !all.is_object() {
            *all = json!({});
        }
        let entry = all[&pid].as_object().cloned().unwrap_or_default();
        let mut next = Map::new();
        // The file keeps the keys in order (codex writes the table sorted).
        for (key, field) in [
            ("base_url", "baseUrl"),
            ("env_key", "envKey"),
            ("name", "name"),
        ] {
            let v = match s.get(field) {
                None => entry.get(key).cloned(),
                Some(Value::Null) => None,
                Some(v) => Some(v.clone()),
            };
            if let Some(v) = v {
                next.insert(key.into(), v);
            }
        }
        next.insert("wire_api".into(), json!("responses"));
        // Other keys the entry had stay (the ones above are the patch's to keep or clear).
        for (k, v) in entry {
            if !["base_url", "env_key", "name", "wire_api"].contains(&k.as_str()) {
                next.insert(k, v);
            }
        }
        all[&pid] = Value::Object(next.clone());
        self.write_user_table(&table);
        Ok(summary(&pid, &next))
    }
}

/// codex's `ConfigWriteErrorCode::ConfigPathNotFound`.
const PATH_NOT_FOUND: &str = "configPathNotFound";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_urls_as_codex_makes_and_checks_them() {
        assert_eq!(new_id("My GW! ✓", &[]), "my-gw");
        assert_eq!(new_id("GW", &["gw".into()]), "gw-2");
        assert_eq!(slug("OpenAI"), "openai");
        assert!(url_ok("https://x.example/v1") && url_ok("http://z.example"));
        for bad in [
            "notaurl",
            "ftp://x",
            "https://u:p@x",
            "https://x/?a=1",
            "https://x/#f",
        ] {
            assert!(!url_ok(bad), "{bad}");
        }
    }
}
