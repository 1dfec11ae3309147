//! `skills/list`, `skills/config/write`, `skills/extraRoots/set` as codex's catalog processor
//! answers them (`codex-rs/app-server/src/…/catalog`: `skills_list_response`,
//! `skills_config_write_response_inner`): the skills on disk found as codex's loader finds them
//! (`src/fake/skills.rs`), the bundled system skills as the version's captured session lists
//! them, each one's `enabled` from the user's `[[skills.config]]`. Shown by
//! `tests/corpus/turns/49_skills_list`, `56_skills_on_disk` and `59_plugins_local` on every
//! version; installed plugins' skills from `src/fake/plugins.rs`. Not modeled (the recorded
//! answer): a project's own config layer (`.codex/config.toml`), remote plugins' skills.

use super::rules::{invalid, rehome};
use super::view::H;
use crate::fake::defaults;
use crate::fake::skills::{self, Selector};
use crate::fake::state::{lock, path_str};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// codex's default project root marker.
const DEFAULT_MARKERS: &[&str] = &[".git"];

fn markers(user: &Map<String, Value>) -> Vec<String> {
    match user.get("project_root_markers").and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        None => DEFAULT_MARKERS.iter().map(|m| m.to_string()).collect(),
    }
}

impl H<'_> {
    /// The directories a listing (`skills/list`, `hooks/list`) reports on: its `cwds`, else
    /// the session's cwd.
    pub(super) fn listed_cwds(&self, p: &Value) -> Vec<Value> {
        match p["cwds"].as_array() {
            Some(c) if !c.is_empty() => c.clone(),
            _ => vec![json!(self.fake.cwd)],
        }
    }

    pub(super) fn skills_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        let method = "skills/list";
        let Some((captured_home, system)) = defaults::captured_system_skills(self.fake.protocol)
        else {
            return self.not_modeled(method);
        };
        let user = self.user_table();
        // Installed plugins add their skills (`<plugin>:<skill>`, from the plugin cache); a
        // remote plugin's, or plugins turned off, are not modeled.
        let (plugin_skills, plugin_errors) = if user.contains_key("plugins") {
            match crate::fake::plugins::installed_skills(&self.fake.codex_home, &user) {
                Some(s) if self.feature_enabled("plugins") != Some(false) => s,
                _ => return self.not_modeled(method),
            }
        } else {
            (Vec::new(), Vec::new())
        };
        let markers = markers(&user);
        let cwds = self.listed_cwds(p);
        if cwds
            .iter()
            .any(|c| skills::has_project_layer(Path::new(c.as_str().unwrap_or_default()), &markers))
        {
            return self.not_modeled(method);
        }
        let bundled = user
            .get("skills")
            .and_then(|s| s.get("bundled"))
            .and_then(|b| b.get("enabled"))
            != Some(&Value::Bool(false));
        let home = path_str(&self.fake.codex_home);
        let system: Vec<Value> = if bundled {
            system
                .into_iter()
                .map(|mut k| {
                    rehome(&mut k, &captured_home, &home);
                    k
                })
                .collect()
        } else {
            Vec::new()
        };
        let user_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let extra = lock(&self.fake.skill_roots).clone();
        let mut data = Vec::new();
        for c in cwds {
            let cwd = Path::new(c.as_str().unwrap_or_default());
            let roots = skills::roots(
                &self.fake.codex_home,
                user_home.as_deref(),
                &extra,
                cwd,
                &markers,
            );
            let (found, errors) = skills::discover(&roots);
            let mut list: Vec<Value> = found
                .iter()
                .chain(&plugin_skills)
                .filter_map(|s| serde_json::to_value(s).ok())
                .chain(system.iter().cloned())
                .collect();
            skills::apply_enabled(&mut list, &user);
            skills::sort(&mut list);
            let errors: Vec<Value> = errors
                .iter()
                .chain(&plugin_errors)
                .filter_map(|e| serde_json::to_value(e).ok())
                .collect();
            data.push(json!({"cwd": c, "skills": list, "errors": errors}));
        }
        self.result(id, json!({"data": data}));
        Ok(())
    }

    /// One of `path` or a non-blank `name`; the user's `config.toml` edited as codex edits it
    /// (written only when it changed); `effectiveEnabled` is what was asked.
    pub(super) fn skills_config_write(&self, id: &Value, p: &Value) -> Result<(), String> {
        let selector = match (p["path"].as_str(), p["name"].as_str()) {
            (Some(path), None) => Selector::of_path(path),
            (None, Some(name)) if !name.trim().is_empty() => Selector::Name(name.trim().into()),
            _ => {
                return Err(invalid(
                    "skills/config/write requires exactly one of path or name",
                ))
            }
        };
        let enabled = p["enabled"].as_bool().unwrap_or_default();
        let before = self.user_table();
        let mut user = before.clone();
        skills::set_enabled(&mut user, &selector, enabled);
        if user != before {
            self.write_user_table(&user);
        }
        self.result(id, json!({"effectiveEnabled": enabled}));
        Ok(())
    }

    /// The client's extra skill roots replace the last ones; the skills are reloaded
    /// (`skills/changed`) before the answer.
    pub(super) fn skills_extra_roots(&self, id: &Value, p: &Value) -> Result<(), String> {
        let roots: Vec<PathBuf> = p["extraRoots"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default();
        *lock(&self.fake.skill_roots) = roots;
        self.notify("skills/changed", json!({}));
        self.result(id, json!({}));
        Ok(())
    }
}
