//! `externalAgentConfig/import`, `…/import/recordHistory` and `…/import/readHistories` as
//! 0.171.0's real server answers them (probed: `57_method_rules_sources`): an import with
//! nothing to migrate gets an id and records nothing; a recorded history gets an id and the
//! time, its successes and failures flattened across the item types in order, every optional
//! field written (null when absent); the histories are listed newest first, with no connector
//! candidates. Kept in the state dir (`import_history.json`), so a restarted fake lists them
//! too. An import with items where there is nothing to migrate (no other agent's files in the
//! home or the item's cwd) is answered as codex answers it
//! (`131_external_import_with_nothing_to_migrate`, all three versions): a memory item is
//! refused; every other item but sessions reports its (empty) result in a progress
//! notification; the completion groups them by type in codex's order; the import is recorded.
//! Files that would be migrated, plugin and session details, are not modeled.

use super::view::H;
use crate::fake::state::{lock, now_ms};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::{Mutex, OnceLock};

#[derive(Serialize, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct History {
    import_id: String,
    provider_id: Option<String>,
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
        let items: Vec<Value> = p["migrationItems"].as_array().cloned().unwrap_or_default();
        if items.iter().any(|i| i["itemType"] == "MEMORY") {
            return Err("external agent memory import is disabled".into());
        }
        let import_id = uuid::Uuid::new_v4().to_string();
        if items.is_empty() {
            self.result(id, json!({"importId": import_id}));
            return Ok(());
        }
        // Another agent's files where an item looks (its cwd, else the home): not modeled.
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let found = items.iter().any(|i| {
            let scope = i["cwd"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map(std::path::PathBuf::from)
                .or_else(|| home.clone());
            scope.is_some_and(|d| {
                [".claude", ".claude.json", "CLAUDE.md", ".mcp.json"]
                    .iter()
                    .any(|f| d.join(f).exists())
            })
        });
        let detailed = items.iter().any(|i| {
            matches!(i["itemType"].as_str(), Some("PLUGINS" | "SESSIONS"))
                && !i["details"].is_null()
        });
        if found || detailed {
            return self.not_modeled("externalAgentConfig/import");
        }
        self.result(id, json!({"importId": import_id}));
        // Each item but sessions (imported apart) reports its result as it is done; a plugins
        // item without details fails (codex `import_plugins`).
        let mut results: Vec<(String, Vec<Failure>)> = Vec::new();
        for item in items.iter().filter(|i| i["itemType"] != "SESSIONS") {
            let kind = item["itemType"].as_str().unwrap_or_default().to_string();
            let failures = if kind == "PLUGINS" {
                vec![Failure {
                    item_type: kind.clone(),
                    error_type: None,
                    sub_error_type: None,
                    failure_stage: "plugin_import".into(),
                    message: "plugins migration item is missing details".into(),
                    cwd: item["cwd"].as_str().map(str::to_string),
                    source: None,
                }]
            } else {
                Vec::new()
            };
            self.notify(
                "externalAgentConfig/import/progress",
                json!({"importId": import_id, "itemTypeResults": [
                    {"itemType": kind, "successes": [], "failures": failures}]}),
            );
            match results.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, f)) => f.extend(failures),
                None => results.push((kind, failures)),
            }
        }
        // Grouped by type in codex's display order (`completed_notification`).
        const ORDER: [&str; 10] = [
            "CONFIG",
            "SKILLS",
            "AGENTS_MD",
            "PLUGINS",
            "MCP_SERVER_CONFIG",
            "SUBAGENTS",
            "HOOKS",
            "COMMANDS",
            "SESSIONS",
            "MEMORY",
        ];
        results.sort_by_key(|(k, _)| ORDER.iter().position(|o| o == k));
        let type_results: Vec<Value> = results
            .iter()
            .map(|(k, f)| json!({"itemType": k, "successes": [], "failures": f}))
            .collect();
        self.notify(
            "externalAgentConfig/import/completed",
            json!({"importId": import_id, "itemTypeResults": type_results}),
        );
        let history = History {
            import_id,
            provider_id: p["providerId"].as_str().map(str::to_string),
            completed_at_ms: now_ms(),
            successes: Vec::new(),
            failures: results.into_iter().flat_map(|(_, f)| f).collect(),
        };
        self.record(history);
        Ok(())
    }

    /// Keeps a completed import, newest first.
    fn record(&self, history: History) {
        let _guard = lock(file_lock());
        let mut all = self.histories();
        all.insert(0, history);
        if let Ok(text) = serde_json::to_vec(&all) {
            let _ = std::fs::write(self.history_file(), text);
        }
    }

    pub(super) fn record_history(&self, id: &Value, p: &Value) -> Result<(), String> {
        let Ok(results) = serde_json::from_value::<Vec<TypeResult>>(p["itemTypeResults"].clone())
        else {
            return self.not_modeled("externalAgentConfig/import/recordHistory");
        };
        let history = History {
            import_id: uuid::Uuid::new_v4().to_string(),
            provider_id: Some(p["providerId"].as_str().unwrap_or_default().to_string()),
            completed_at_ms: now_ms(),
            successes: results.iter().flat_map(|r| r.successes.clone()).collect(),
            failures: results.iter().flat_map(|r| r.failures.clone()).collect(),
        };
        let import_id = history.import_id.clone();
        self.record(history);
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

impl H<'_> {
    /// `externalAgentConfig/detect`: Claude's files under `$HOME` and each repository named,
    /// as codex finds them (`fake/external_agent.rs`); an error of codex's is internal.
    pub(super) fn external_detect(&self, id: &Value, p: &Value) -> Result<(), String> {
        use crate::fake::external_agent::{detect, Refusal, Roots};
        let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
        let process_cwd = std::env::current_dir().unwrap_or_default();
        let roots = Roots {
            home: &home,
            codex_home: &self.fake.codex_home,
            process_cwd: &process_cwd,
        };
        let cwds: Vec<String> = p["cwds"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().map(String::from))
            .collect();
        let cursor = p["migrationSource"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("cursor"));
        match detect(&roots, p["includeHome"] == true, &cwds, cursor) {
            Ok(items) => {
                let v = json!({"items": items, "connectors": []});
                let v = crate::fake::defaults::shaped(
                    self.fake.protocol,
                    "externalAgentConfig/detect",
                    v,
                );
                self.result(id, v);
                Ok(())
            }
            Err(Refusal::Error(e)) => Err(format!("{}{e}", crate::fake::rpc::INTERNAL_PREFIX)),
            Err(Refusal::NotModeled) => self.not_modeled("externalAgentConfig/detect"),
        }
    }
}
