//! The version's facts the fake answers from: its model catalog
//! (`schema/<V>/facts/models.json`: context windows, tiers, the patch tool) and its features
//! under development (`schema/<V>/facts/features.json`).

use super::config::Config;
use serde_json::{json, Value};

/// One model of the version's catalog (`schema/<V>/facts/models.json`).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct ModelInfo {
    pub slug: String,
    pub context_window: Option<i64>,
    pub effective_context_window_percent: Option<i64>,
    #[serde(default)]
    pub service_tiers: Vec<String>,
    /// `freeform` when codex offers the model its `apply_patch` tool as a custom tool.
    #[serde(default)]
    pub apply_patch_tool_type: Option<String>,
    /// Models of different hashes need the history compacted when a thread switches.
    #[serde(default)]
    pub comp_hash: Option<String>,
}

/// The model catalog of the version the fake answers as.
#[derive(Clone, Debug, Default)]
pub struct Catalog(Vec<ModelInfo>);

/// The context window codex assumes for a model it has no metadata for.
const FALLBACK_WINDOW: i64 = 272_000;
/// The share of the window codex reports when the catalog names none.
const FALLBACK_PERCENT: i64 = 95;

impl Catalog {
    pub fn of(p: &crate::Protocol) -> Catalog {
        // Checked by the protocol's tests: a catalog that does not parse is a build bug.
        Catalog(serde_json::from_str(p.models).unwrap_or_default())
    }

    /// The catalog entry of a slug: codex matches a catalog slug that the requested one starts
    /// with (`gpt-5.55` is `gpt-5.5`), case-sensitively; the longest such slug wins.
    pub fn find(&self, slug: &str) -> Option<&ModelInfo> {
        self.0
            .iter()
            .filter(|m| slug.starts_with(&m.slug))
            .max_by_key(|m| m.slug.len())
    }

    /// `modelContextWindow` of token usage reports: the configured window (else the catalog's,
    /// else codex's fallback), times the share the catalog reports (codex's
    /// `TurnContext::model_context_window`).
    pub fn context_window(&self, slug: &str, cfg: &Config) -> i64 {
        let info = self.find(slug);
        let window = cfg
            .context_window
            .or(info.and_then(|m| m.context_window))
            .unwrap_or(FALLBACK_WINDOW);
        let percent = info
            .and_then(|m| m.effective_context_window_percent)
            .unwrap_or(FALLBACK_PERCENT);
        window * percent / 100
    }

    /// The warning codex sends for a model it has no metadata for, if it is one.
    pub fn unknown_model_warning(&self, slug: &str) -> Option<String> {
        self.find(slug).is_none().then(|| {
            format!(
                "Model metadata for `{slug}` not found. Defaulting to fallback metadata; this can \
                 degrade performance and cause issues."
            )
        })
    }

    /// A thread's service tier as configured: `null` asks for `default`, `fast` is `priority`;
    /// a tier the model does not advertise (`default` and `flex` always are) stays the thread's
    /// setting but is left out of its requests, with a warning (see [`Catalog::served_tier`]).
    /// `requested`: the param (`None`: absent), else the configured tier.
    pub fn service_tier(
        &self,
        requested: Option<&Value>,
        cfg: &Config,
        model: &str,
    ) -> (Value, Option<String>) {
        let tier = match requested {
            Some(Value::String(s)) => s.clone(),
            Some(_) => "default".into(),
            None => match &cfg.service_tier {
                Some(t) => t.clone(),
                None => return (Value::Null, None),
            },
        };
        let tier = if tier == "fast" {
            "priority".to_string()
        } else {
            tier
        };
        if !self.served_tier(&json!(tier), model).is_null() {
            return (json!(tier), None);
        }
        let warning = format!(
            "Configured service tier `{tier}` is not advertised as supported for model \
             `{model}` and will be omitted from requests."
        );
        (json!(tier), Some(warning))
    }

    /// The tier a thread's requests carry (what thread results show): the configured one if
    /// the model advertises it, else none.
    pub fn served_tier(&self, tier: &Value, model: &str) -> Value {
        let Some(t) = tier.as_str() else {
            return Value::Null;
        };
        let advertised = self
            .find(model)
            .is_some_and(|m| m.service_tiers.iter().any(|x| x == t));
        if t == "default" || t == "flex" || advertised {
            json!(t)
        } else {
            Value::Null
        }
    }
}

/// The version's default model: the one its `model/list` marks `isDefault` (the captured
/// real result); a capture without one: the newest version's.
pub fn default_model(p: &'static crate::Protocol) -> String {
    let list = super::defaults::result_for(p, "model/list");
    list["data"]
        .as_array()
        .and_then(|d| d.iter().find(|m| m["isDefault"] == true))
        .and_then(|m| m["model"].as_str())
        .map_or_else(|| Config::parse("", &[]).model, str::to_string)
}

/// The version's features under development (`schema/<V>/facts/features.json`): codex warns
/// when a session turns any of them on.
pub fn unstable_features(p: &crate::Protocol) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Feature {
        name: String,
        stage: String,
    }
    let list: Vec<Feature> = serde_json::from_str(p.features).unwrap_or_default();
    list.into_iter()
        .filter(|f| f.stage == "under development")
        .map(|f| f.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_s_catalog_parses_and_prefix_matches() {
        for p in crate::versions() {
            let c = Catalog::of(p);
            assert!(!c.0.is_empty(), "schema/{}/facts/models.json", p.version);
            let first = c.0[0].slug.clone();
            assert_eq!(
                c.find(&format!("{first}x")).map(|m| m.slug.as_str()),
                Some(first.as_str())
            );
            assert!(c.find("no-such-model").is_none());
        }
    }
}
