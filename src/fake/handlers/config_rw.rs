//! `config/read`, `config/value/write`, `config/batchWrite` as codex's config service answers
//! them (`codex-rs/app-server/src/config_manager_service.rs`; the layer logic in
//! `src/fake/user_config.rs`). A write lands in `CODEX_HOME/config.toml` and the configuration
//! is read again, so a thread started after it runs with what was written. Shown by
//! `tests/corpus/turns/51_settings` on every version. A server started with `-c key=value` has
//! codex's session-flags layer over the user's. Not modeled (the recorded answer): a project
//! layer (`cwd` with a `.codex/config.toml`).

use super::view::H;
use crate::fake::rpc::INTERNAL_PREFIX;
use crate::fake::user_config::{self as uc, WriteError};
use serde_json::{json, Map, Value};

impl H<'_> {
    pub(super) fn user_file(&self) -> std::path::PathBuf {
        self.fake.codex_home.join("config.toml")
    }

    /// The user layer as codex loads it for each request: the file, in its order.
    pub(super) fn user_table(&self) -> Map<String, Value> {
        uc::from_toml(&std::fs::read_to_string(self.user_file()).unwrap_or_default())
    }

    /// The user config written back after an edit of its table, as codex edits the file
    /// (see [`uc::edited_toml`]).
    pub(super) fn write_user_table(&self, table: &Map<String, Value>) {
        let path = self.user_file();
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::write(&path, uc::edited_toml(&old, table));
    }

    /// Whether the version's facts were probed (else the recorded answer).
    fn config_modeled(&self) -> bool {
        self.fake.config_facts.known()
    }

    pub(super) fn config_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        let project = p["cwd"].as_str().is_some_and(|cwd| {
            std::path::Path::new(cwd)
                .join(".codex/config.toml")
                .exists()
        });
        if !self.config_modeled() || project {
            return self.not_modeled("config/read");
        }
        let table = uc::as_read(&self.user_table());
        let flags = uc::flags(&self.fake.overrides);
        let config = self
            .fake
            .config_facts
            .effective(
                &uc::merged(&table, &flags),
                &crate::fake::state::lock(&self.fake.enablement),
            )
            .map_err(|m| format!("{INTERNAL_PREFIX}{m}"))?;
        let file = self.user_file().display().to_string();
        let mut origins = uc::origins(&table, &uc::user_layer(&file, &table));
        origins.extend(uc::origins(&flags, &uc::flags_layer(&flags)));
        let mut result = json!({"config": config, "origins": origins});
        if p["includeLayers"] == true {
            result["layers"] = uc::layers(&file, &table, &flags);
        }
        self.result(id, result);
        Ok(())
    }

    pub(super) fn config_write(&self, id: &Value, p: &Value, batch: bool) -> Result<(), String> {
        let method = if batch {
            "config/batchWrite"
        } else {
            "config/value/write"
        };
        if !self.config_modeled() {
            return self.not_modeled(method);
        }
        let edits: Vec<&Value> = if batch {
            p["edits"]
                .as_array()
                .map(|e| e.iter().collect())
                .unwrap_or_default()
        } else {
            vec![p]
        };
        let written = self.apply_edits(method, p, &edits);
        self.config_written(id, written);
        Ok(())
    }

    /// The answer to a write of the user layer (a config write, a provider write): the result
    /// once the configuration is read again, or codex's refusal with its write error code.
    pub(super) fn config_written(&self, id: &Value, written: Result<Value, WriteError>) {
        match written {
            Ok(result) => {
                self.fake.reload_config();
                self.result(id, result);
            }
            Err(e) => self.send(json!({"error": {"code": -32600,
                "data": {"config_write_error_code": e.code}, "message": e.message}, "id": id})),
        }
    }

    /// codex's `apply_edits`, in its order: the file, the expected version, each edit's key
    /// path and legacy keys, the whole table's check; then the file is written.
    fn apply_edits(&self, method: &str, p: &Value, edits: &[&Value]) -> Result<Value, WriteError> {
        let user = self.user_file();
        let file = match p["filePath"].as_str() {
            None => user.display().to_string(),
            Some(given) => uc::is_user_file(given, &user).ok_or_else(|| {
                uc::refusal(uc::READONLY, "Only writes to the user config are allowed")
            })?,
        };
        let mut table = self.user_table();
        let mut paths = Vec::new();
        let mut implicit = Vec::new();
        if let Some(expected) = p["expectedVersion"].as_str() {
            if expected != uc::version(&table) {
                return Err(uc::refusal(
                    uc::CONFLICT,
                    "Configuration was modified since last read. Fetch latest version and retry.",
                ));
            }
        }
        for edit in edits {
            let path = edit["keyPath"].as_str().unwrap_or_default();
            let segments = uc::key_path(path).map_err(|m| uc::refusal(uc::VALIDATION, m))?;
            let value = &edit["value"];
            if !value.is_null() {
                if segments == ["profile"] {
                    return Err(uc::refusal(uc::VALIDATION, LEGACY_PROFILE));
                }
                if segments[0] == "profiles" {
                    return Err(uc::refusal(uc::VALIDATION, LEGACY_PROFILES));
                }
            }
            // The tables along a cleared key that hold only tables: TOML writes them as no
            // header of their own (`[mcp_servers.docs]`), so one its clear leaves empty is gone.
            if value.is_null() {
                implicit.extend(uc::implicit_parents(&table, &segments));
            }
            uc::apply(
                &mut table,
                &segments,
                value,
                edit["mergeStrategy"] == "upsert",
            );
            paths.push(segments);
        }
        let checked = self.fake.config_facts.check(&table);
        // Refused by the configuration codex builds: that takes it longer than the write's
        // other checks (`latency::VALIDATION`).
        if let Err(e) = &checked {
            let built = crate::fake::is_validation(method, &e.message);
            if let (true, Some(t)) = (
                built,
                crate::fake::latency::error_time(crate::fake::VALIDATION),
            ) {
                crate::fake::latency::answer_after(t);
            }
        }
        checked?;
        let overridden = uc::overridden(&table, &uc::flags(&self.fake.overrides), &paths);
        // A table with a header of its own that a clear leaves empty keeps it, as one written
        // empty does: read back as `{}` (turn scenario 226 on every version: a value write's
        // upsert and replace and a batch write, each clearing the table's only key; fidelity
        // s39390001_0056, s17170001_0203). One that only held tables has no header: left
        // empty, it is not written back, though the answer's version still counts it
        // (`51_settings`: `mcp_servers` once its one server is cleared).
        let mut file_table = table.clone();
        for p in &implicit {
            uc::remove_if_empty(&mut file_table, p);
        }
        // Written as codex writes it; a home that cannot be written is codex's internal error,
        // which the fake does not model beyond answering as if written.
        self.write_user_table(&file_table);
        let status = if overridden.is_some() {
            "okOverridden"
        } else {
            "ok"
        };
        Ok(
            json!({"status": status, "version": uc::version(&table), "filePath": file,
                  "overriddenMetadata": overridden}),
        )
    }
}

impl H<'_> {
    /// `experimentalFeature/enablement/set`: the flags codex lets a client set at run time are
    /// kept for the process (each call adds to the last) and echoed; any other is dropped.
    pub(super) fn enablement_set(&self, id: &Value, p: &Value) -> Result<(), String> {
        if !self.config_modeled() {
            return self.not_modeled("experimentalFeature/enablement/set");
        }
        let runtime = self.fake.config_facts.runtime_features();
        // Echoed in name order (codex keeps them in a `BTreeMap`).
        let mut set: Vec<(String, Value)> = p["enablement"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| runtime.contains(name))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        set.sort_by(|a, b| a.0.cmp(&b.0));
        let set: Map<String, Value> = set.into_iter().collect();
        crate::fake::state::lock(&self.fake.enablement).extend(set.clone());
        let changed = !set.is_empty();
        self.result(id, json!({ "enablement": set }));
        // codex reloads the user configuration when the answer names a feature (fidelity
        // s48480001_0295: `hooks`, not set at run time, refreshed nothing).
        if changed {
            self.mcp_refresh_after_enablement();
        }
        Ok(())
    }

    /// Whether a flag is on for this process: the configuration's `[features]` (flags, then
    /// config.toml), else a run-time enablement, else `None` (the version's default).
    pub(super) fn feature_enabled(&self, name: &str) -> Option<bool> {
        self.features_enabled()(name)
    }

    /// [`Self::feature_enabled`] for many flags: the configuration read once.
    pub(super) fn features_enabled(&self) -> impl Fn(&str) -> Option<bool> + '_ {
        let table = uc::merged(&self.user_table(), &uc::flags(&self.fake.overrides));
        move |name| {
            let configured = table
                .get("features")
                .and_then(|f| f.get(name))
                .and_then(Value::as_bool);
            configured.or_else(|| {
                crate::fake::state::lock(&self.fake.enablement)
                    .get(name)
                    .and_then(Value::as_bool)
            })
        }
    }
}

const LEGACY_PROFILE: &str = "`profile` is a legacy config selector and can no longer be \
written; use `--profile <name>` with `<name>.config.toml` instead";
const LEGACY_PROFILES: &str = "`profiles` contains legacy config profile tables and can no \
longer be written; use `--profile <name>` with `<name>.config.toml` instead";

/// A method that loads codex's configuration before anything else it checks, and how it is
/// refused when the user's `config.toml` is not TOML.
struct Loader {
    method: &'static str,
    /// Refused as an internal error (else as an invalid request).
    internal: bool,
    /// The words before codex's reason.
    words: &'static str,
}

/// Every such method (a probe of every client method on 0.163.0, 0.169.0 and 0.171.0; turn
/// scenario 250 on each).
const CONFIG_LOADERS: &[Loader] = &[
    Loader {
        method: "account/bedrock/checkGovCloudRequirements",
        internal: true,
        words: "failed to load configuration",
    },
    Loader {
        method: "config/batchWrite",
        internal: true,
        words: "failed to load configuration",
    },
    Loader {
        method: "config/value/write",
        internal: true,
        words: "failed to load configuration",
    },
    Loader {
        method: "account/bedrock/setup",
        internal: true,
        words: "failed to load configuration layers",
    },
    Loader {
        method: "account/gcp/setup",
        internal: true,
        words: "failed to load configuration layers",
    },
    Loader {
        method: "account/gatewayOAuth/login",
        internal: false,
        words: "failed to load configuration",
    },
    Loader {
        method: "account/gatewayOAuth/read",
        internal: false,
        words: "failed to load configuration",
    },
    Loader {
        method: "config/read",
        internal: true,
        words: "failed to read configuration layers",
    },
    Loader {
        method: "configRequirements/read",
        internal: true,
        words: "failed to read configuration layers",
    },
    Loader {
        method: "config/mcpServer/reload",
        internal: true,
        words: "failed to refresh MCP servers",
    },
    Loader {
        method: "modelProvider/capabilities/read",
        internal: true,
        words: "failed to resolve feature override precedence",
    },
    Loader {
        method: "modelProvider/config/write",
        internal: true,
        words: "failed to read providers",
    },
    Loader {
        method: "modelProvider/default/set",
        internal: true,
        words: "failed to read providers",
    },
    Loader {
        method: "modelProvider/list",
        internal: true,
        words: "failed to read providers",
    },
    Loader {
        method: "app/installed",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "app/list",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "app/read",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "experimentalFeature/list",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "marketplace/add",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "marketplace/remove",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "marketplace/upgrade",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "mcpServer/oauth/login",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "mcpServer/resource/read",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "mcpServerStatus/list",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "permissionProfile/list",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/installed",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/list",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/reconcile",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/share/checkout",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/share/delete",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/share/list",
        internal: true,
        words: "failed to reload config",
    },
    Loader {
        method: "plugin/skill/read",
        internal: true,
        words: "failed to reload config",
    },
];

impl H<'_> {
    /// Why codex cannot load the user's `config.toml` now (see `config::toml_error`).
    pub(super) fn config_toml_error(&self) -> Option<String> {
        crate::fake::config::toml_error(&self.fake.codex_home.join("config.toml"))
    }

    /// A method's answer when it loads a configuration codex cannot parse: `Err` its refusal,
    /// `Ok` once answered (the listings that report it per directory: `skills/list`,
    /// `hooks/list`). `None`: the method goes on as usual.
    pub(super) fn config_load_refusal(
        &self,
        id: &Value,
        method: &str,
        p: &Value,
    ) -> Option<Result<(), String>> {
        let listing = matches!(method, "skills/list" | "hooks/list");
        let loader = CONFIG_LOADERS.iter().find(|l| l.method == method);
        if loader.is_none() && !listing {
            return None;
        }
        let reason = self.config_toml_error()?;
        if listing {
            let data: Vec<Value> = self
                .listed_cwds(p)
                .into_iter()
                .map(|cwd| {
                    if method == "skills/list" {
                        let message = format!("failed to reload config: {reason}");
                        json!({"cwd": cwd, "skills": [],
                               "errors": [{"path": cwd, "message": message}]})
                    } else {
                        json!({"cwd": cwd, "hooks": [], "warnings": [],
                               "errors": [{"path": cwd, "message": reason}]})
                    }
                })
                .collect();
            self.result(id, json!({"data": data}));
            return Some(Ok(()));
        }
        let Loader {
            mut internal,
            mut words,
            ..
        } = *loader?;
        // 0.163.0 words a gateway's as its own configuration, an internal error.
        if method.starts_with("account/gatewayOAuth/") && self.fake.turn_facts.gateway_config_words
        {
            (internal, words) = (true, "failed to load gateway configuration");
        }
        let prefix = if internal {
            crate::fake::rpc::INTERNAL_PREFIX
        } else {
            ""
        };
        Some(Err(format!("{prefix}{words}: {reason}")))
    }
}
