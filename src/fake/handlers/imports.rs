//! `externalAgentConfig/import`, `…/import/recordHistory` and `…/import/readHistories` as
//! 0.171.0's real server answers them (probed: `57_method_rules_sources`): an import with
//! nothing to migrate gets an id and records nothing; a recorded history gets an id and the
//! time, its successes and failures flattened across the item types in order, every optional
//! field written (null when absent); the histories are listed newest first, with no connector
//! candidates. Kept in the state dir (`import_history.json`), so a restarted fake lists them
//! too. An import with items to migrate (files copied from another agent) is not modeled.

use super::view::H;
use crate::fake::state::{lock, now_ms};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::{Mutex, OnceLock};

#[derive(Serialize, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct History {
    import_id: String,
    provider_id: String,
    completed_at_ms: i64,
    successes: Vec<Success>,
    failures: Vec<Failure>,
}

#[derive(Serialize, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct Success {
    item_type: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Serialize, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct Failure {
    item_type: String,
    #[serde(default)]
    error_type: Option<String>,
    #[serde(default)]
    sub_error_type: Option<String>,
    failure_stage: String,
    message: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    source: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeResult {
    #[serde(default)]
    successes: Vec<Success>,
    #[serde(default)]
    failures: Vec<Failure>,
}

/// One writer at a time for the state dir's file.
fn file_lock() -> &'static Mutex<()> {
    static L: OnceLock<Mutex<()>> = OnceLock::new();
    L.get_or_init(Default::default)
}

impl H<'_> {
    fn history_file(&self) -> std::path::PathBuf {
        self.fake.dir.join("import_history.json")
    }

    fn histories(&self) -> Vec<History> {
        std::fs::read(self.history_file())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub(super) fn external_import(&self, id: &Value, p: &Value) -> Result<(), String> {
        if p["migrationItems"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            return self.not_modeled("externalAgentConfig/import");
        }
        let import_id = uuid::Uuid::new_v4().to_string();
        self.result(id, json!({"importId": import_id}));
        Ok(())
    }

    pub(super) fn record_history(&self, id: &Value, p: &Value) -> Result<(), String> {
        let Ok(results) = serde_json::from_value::<Vec<TypeResult>>(p["itemTypeResults"].clone())
        else {
            return self.not_modeled("externalAgentConfig/import/recordHistory");
        };
        let _guard = lock(file_lock());
        let mut all = self.histories();
        let history = History {
            import_id: uuid::Uuid::new_v4().to_string(),
            provider_id: p["providerId"].as_str().unwrap_or_default().to_string(),
            completed_at_ms: now_ms(),
            successes: results.iter().flat_map(|r| r.successes.clone()).collect(),
            failures: results.iter().flat_map(|r| r.failures.clone()).collect(),
        };
        let import_id = history.import_id.clone();
        all.insert(0, history);
        if let Ok(text) = serde_json::to_vec(&all) {
            let _ = std::fs::write(self.history_file(), text);
        }
        self.result(id, json!({"importId": import_id}));
        Ok(())
    }

    pub(super) fn read_histories(&self, id: &Value) -> Result<(), String> {
        let _guard = lock(file_lock());
        let data = serde_json::to_value(self.histories()).unwrap_or_default();
        self.result(id, json!({"data": data, "connectors": []}));
        Ok(())
    }
}
