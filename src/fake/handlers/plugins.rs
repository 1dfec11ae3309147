//! `plugin/list`, `plugin/installed`, `plugin/read`, `plugin/install`, `plugin/uninstall` and
//! `plugin/search` for local marketplaces, as codex's plugin processor answers them (the rules
//! in `src/fake/plugins.rs`). Shown by `tests/corpus/turns/59_plugins_local` and
//! `59b_plugins_disabled` on every version. Not modeled (the recorded answer): an
//! `openai-curated` marketplace (its featured plugins are remote), installing a git or npm
//! plugin (needs the network), reading one that is installed, an npm entry in a marketplace
//! file outside the `.agents/plugins/` and `.claude-plugin/` layouts.

use super::view::H;
use crate::fake::plugins::{self, Entry, Env, Manifest, Marketplace, Source, UninstallId};
use crate::fake::rpc::INTERNAL_PREFIX;
use crate::fake::state::path_str;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const NOT_ABSOLUTE: &str = "Invalid request: AbsolutePathBuf deserialized without a base path";

/// A marketplace as `plugin/list` and `plugin/installed` show it.
#[derive(Serialize)]
struct MarketplaceOut {
    name: String,
    path: String,
    interface: Option<Value>,
    plugins: Vec<plugins::Summary>,
}

/// `PluginDetail`, in codex's key order; apps need a ChatGPT login (always none here).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    marketplace_name: String,
    marketplace_path: String,
    summary: plugins::Summary,
    share_url: Option<String>,
    description: Option<String>,
    skills: Vec<Value>,
    onboarding_skill: Option<Value>,
    hooks: Vec<plugins::Hook>,
    apps: Vec<Value>,
    app_templates: Vec<Value>,
    mcp_servers: Vec<String>,
    scheduled_tasks: Option<Value>,
}

/// The marketplaces a list shows, each with its summaries, and the files that failed to load.
type Listed = (
    Vec<(Marketplace, Vec<plugins::Summary>)>,
    Vec<plugins::LoadError>,
);

/// A `plugin/search` hit.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SearchHit {
    plugin: plugins::Summary,
    marketplace_name: String,
    marketplace_path: String,
}

/// The `cwds` of a request, each absolute.
fn cwds(p: &Value) -> Result<Vec<PathBuf>, String> {
    let list = super::view::strs(&p["cwds"]);
    if list.iter().any(|c| !c.starts_with('/')) {
        return Err(NOT_ABSOLUTE.into());
    }
    Ok(list.into_iter().map(PathBuf::from).collect())
}

/// codex's search normalization: lowercase alphanumeric runs joined by one space.
fn norm(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A plugin's rank for a normalized query (lower first), None when it does not match.
fn search_rank(s: &plugins::Summary, q: &str) -> Option<u8> {
    let display = norm(s.display_name().unwrap_or_default());
    let name = norm(&s.name);
    let names = [&display, &name];
    let kws: Vec<String> = s.keywords.iter().map(|k| norm(k)).collect();
    let all = norm(&format!(
        "{} {} {}",
        s.name,
        s.display_name().unwrap_or_default(),
        s.keywords.join(" ")
    ));
    if display == q {
        Some(0)
    } else if name == q {
        Some(1)
    } else if names.iter().any(|n| n.starts_with(q)) {
        Some(2)
    } else if names.iter().any(|n| n.contains(q)) {
        Some(3)
    } else if kws.iter().any(|k| k == q) {
        Some(4)
    } else if kws.iter().any(|k| k.contains(q)) || all.contains(q) {
        Some(5)
    } else {
        None
    }
}

impl H<'_> {
    fn plugins_env<'a>(
        &'a self,
        config: &'a Map<String, Value>,
        home: Option<&'a Path>,
    ) -> Env<'a> {
        Env {
            codex_home: &self.fake.codex_home,
            home,
            config,
        }
    }

    /// Whether the user turned plugins off (`[features] plugins = false`).
    fn plugins_off(&self) -> bool {
        self.feature_enabled("plugins") == Some(false)
    }

    /// The discovered marketplaces, each with the summaries it lists (empty ones left out),
    /// and the load errors; None when an `openai-curated` marketplace is among them.
    fn listed(&self, p: &Value) -> Result<Option<Listed>, String> {
        let cwds = cwds(p)?;
        let config = self.user_table();
        let home = home_dir();
        let env = self.plugins_env(&config, home.as_deref());
        let (found, errors) = plugins::discover(&env, &cwds);
        if found.iter().any(|m| m.name == "openai-curated") {
            return Ok(None);
        }
        let mut seen = HashSet::new();
        let listed = found
            .into_iter()
            .map(|m| {
                let s = plugins::summaries(&env, &m, &mut seen);
                (m, s)
            })
            .filter(|(_, s)| !s.is_empty())
            .collect();
        Ok(Some((listed, errors)))
    }

    pub(super) fn plugin_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        let empty =
            json!({"marketplaces": [], "marketplaceLoadErrors": [], "featuredPluginIds": []});
        let local = p["marketplaceKinds"]
            .as_array()
            .is_none_or(|k| k.iter().any(|x| x == "local"));
        if !local || self.plugins_off() {
            cwds(p)?;
            self.result(id, empty);
            return Ok(());
        }
        let Some((listed, errors)) = self.listed(p)? else {
            return self.not_modeled("plugin/list");
        };
        let refresh: Vec<(String, Entry)> = listed
            .iter()
            .flat_map(|(m, _)| m.entries.iter().map(|e| (m.name.clone(), e.clone())))
            .collect();
        let out: Vec<MarketplaceOut> = listed.into_iter().map(marketplace_out).collect();
        self.result(
            id,
            json!({"marketplaces": out, "marketplaceLoadErrors": errors, "featuredPluginIds": []}),
        );
        self.refresh_cache(refresh);
        Ok(())
    }

    /// codex's cache refresh after a list: each configured plugin of a listed marketplace
    /// whose cache is missing or holds another version than its source is installed again
    /// (the config untouched). Which ones is decided now; the copies land in the background,
    /// as codex's do (a request sent right after the list still sees the cache as it was).
    fn refresh_cache(&self, entries: Vec<(String, Entry)>) {
        let codex_home = self.fake.codex_home.clone();
        let config = self.user_table();
        let stale: Vec<(String, Entry)> = entries
            .into_iter()
            .filter(|(market, e)| stale(&codex_home, &config, market, e))
            .collect();
        if stale.is_empty() {
            return;
        }
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(REFRESH_DELAY_MS));
            for (market, e) in &stale {
                if let Source::Local(dir) = &e.source {
                    let m = plugins::manifest(dir, e);
                    let _ = plugins::install_files(&codex_home, market, e, dir, &m);
                }
            }
        });
    }

    pub(super) fn plugin_installed(&self, id: &Value, p: &Value) -> Result<(), String> {
        if self.plugins_off() {
            cwds(p)?;
            self.result(id, json!({"marketplaces": [], "marketplaceLoadErrors": []}));
            return Ok(());
        }
        let Some((listed, errors)) = self.listed(p)? else {
            return self.not_modeled("plugin/installed");
        };
        let suggested: Vec<&str> = p["installSuggestionPluginNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let out: Vec<MarketplaceOut> = listed
            .into_iter()
            .map(|(m, s)| {
                let kept = s
                    .into_iter()
                    .filter(|s| s.installed || suggested.contains(&s.name.as_str()))
                    .collect();
                (m, kept)
            })
            .filter(|(_, s): &(Marketplace, Vec<plugins::Summary>)| !s.is_empty())
            .map(marketplace_out)
            .collect();
        self.result(
            id,
            json!({"marketplaces": out, "marketplaceLoadErrors": errors}),
        );
        Ok(())
    }

    pub(super) fn plugin_search(&self, id: &Value, p: &Value) -> Result<(), String> {
        let empty = json!({"data": [], "nextCursor": null});
        let term = norm(p["searchTerm"].as_str().unwrap_or_default().trim());
        let scoped = p["scope"].is_null() || p["scope"] == "personal";
        if term.is_empty() || !p["cursor"].is_null() || !scoped || self.plugins_off() {
            cwds(p)?;
            self.result(id, empty);
            return Ok(());
        }
        let Some((listed, _)) = self.listed(p)? else {
            return self.not_modeled("plugin/search");
        };
        let mut hits: Vec<(u8, SearchHit)> = Vec::new();
        for (m, summaries) in listed {
            for mut s in summaries {
                if let Some(rank) = search_rank(&s, &term) {
                    s.enabled = false;
                    hits.push((
                        rank,
                        SearchHit {
                            plugin: s,
                            marketplace_name: m.name.clone(),
                            marketplace_path: path_str(&m.path),
                        },
                    ));
                }
            }
        }
        hits.sort_by_key(|(rank, _)| *rank);
        let data: Vec<SearchHit> = hits.into_iter().map(|(_, h)| h).collect();
        self.result(id, json!({"data": data, "nextCursor": null}));
        Ok(())
    }

    /// The marketplace file a `plugin/read` or `plugin/install` names, parsed, and its entry.
    fn named_entry(
        &self,
        method: &str,
        p: &Value,
    ) -> Result<Result<(Marketplace, Entry), String>, String> {
        let verb = if method == "plugin/read" {
            "read remote plugin details"
        } else {
            "read remote plugin details before install"
        };
        let (path, remote) = (p["marketplacePath"].as_str(), &p["remoteMarketplaceName"]);
        if path.is_some_and(|p| !p.starts_with('/')) {
            return Err(NOT_ABSOLUTE.into());
        }
        let path = match (path, remote.is_null()) {
            (Some(_), false) | (None, true) => {
                return Err(format!(
                    "{method} requires exactly one of marketplacePath or remoteMarketplaceName"
                ))
            }
            (None, false) => return Err(self.remote_catalog_refused(verb)),
            (Some(path), true) => PathBuf::from(path),
        };
        if method == "plugin/read" && self.plugins_off() {
            return Err("plugins feature is disabled".into());
        }
        if !path.exists() {
            return Err(format!(
                "marketplace file `{}` does not exist",
                path.display()
            ));
        }
        // A file that cannot be read (a directory) is codex's internal error.
        if let Err(e) = std::fs::read(&path) {
            let what = if method == "plugin/read" {
                "failed to read plugin details"
            } else {
                "failed to install plugin"
            };
            return Err(format!(
                "{INTERNAL_PREFIX}{what}: failed to read marketplace file: {e}"
            ));
        }
        let m = plugins::parse_marketplace(&path)?;
        let name = p["pluginName"].as_str().unwrap_or_default();
        let not_found = || format!("plugin `{name}` was not found in marketplace `{}`", m.name);
        if !m.raw_names.iter().any(|n| n == name) {
            return Err(not_found());
        }
        if !m.valid_name {
            return Err(plugins::INVALID_MARKETPLACE_NAME.into());
        }
        if !plugins::valid_plugin_name(name) {
            return Err(plugins::INVALID_PLUGIN_NAME.into());
        }
        let found = m
            .entries
            .iter()
            .find(|e| e.name == name && (e.for_codex || method == "plugin/install"))
            .cloned();
        let Some(entry) = found else {
            return Err(not_found());
        };
        // A file outside `.agents/plugins/` or `.claude-plugin/` has no root a remote source
        // resolves against (an npm one's words there were not probed).
        if plugins::marketplace_root(&path).is_none() {
            match entry.source {
                Source::Git { .. } => {
                    let file = format!("invalid marketplace file `{}`", path.display());
                    return Err(format!(
                        "{file}: {file}: marketplace file is not in a supported location"
                    ));
                }
                Source::Npm { .. } => return Ok(Err(method.into())),
                Source::Local(_) => {}
            }
        }
        Ok(Ok((m, entry)))
    }

    pub(super) fn plugin_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (m, entry) = match self.named_entry("plugin/read", p)? {
            Ok(found) => found,
            Err(method) => return self.not_modeled(&method),
        };
        let config = self.user_table();
        let home = home_dir();
        let env = self.plugins_env(&config, home.as_deref());
        let summary = plugins::summary(&env, &m.name, &entry);
        let source_of = |what: &str, from: &str| {
            format!(
                "This is {what}. Install it to view more detailed information. The source of \
                 the plugin is {from}."
            )
        };
        let mut detail = Detail {
            marketplace_name: m.name.clone(),
            marketplace_path: path_str(&m.path),
            summary,
            share_url: None,
            description: None,
            skills: Vec::new(),
            onboarding_skill: None,
            hooks: Vec::new(),
            apps: Vec::new(),
            app_templates: Vec::new(),
            mcp_servers: Vec::new(),
            scheduled_tasks: None,
        };
        let dir = match &entry.source {
            Source::Local(dir) => dir,
            // A remote plugin not installed is only named; installed, its details come from
            // its fetched copy (not modeled).
            _ if detail.summary.installed => return self.not_modeled("plugin/read"),
            Source::Git { url, .. } => {
                detail.description = Some(source_of("a cross-repo plugin", url));
                self.result(id, json!({ "plugin": detail }));
                return Ok(());
            }
            Source::Npm { package, .. } => {
                detail.description = Some(source_of("an npm plugin", package));
                self.result(id, json!({ "plugin": detail }));
                return Ok(());
            }
        };
        let manifest = plugins::manifest(dir, &entry);
        let map = match &manifest {
            Manifest::NoDir => return Err("path does not exist or is not a directory".into()),
            Manifest::Missing | Manifest::Invalid(_) => {
                return Err("missing or invalid plugin.json".into())
            }
            Manifest::Found { map, .. } => map,
        };
        let mut skills: Vec<Value> = plugins::skills(dir, &entry.name, map)
            .into_iter()
            .map(|s| plugins::PluginSkill {
                name: s.name,
                description: s.description,
                short_description: s.short_description,
                interface: s.interface,
                path: s.path,
                enabled: true,
            })
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect();
        crate::fake::skills::apply_enabled(&mut skills, &config);
        detail.description = map
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string);
        detail.skills = skills;
        detail.hooks = plugins::hooks(dir, &detail.summary.id, map);
        detail.mcp_servers = plugins::mcp_servers(dir, map);
        self.result(id, json!({ "plugin": detail }));
        Ok(())
    }

    /// `plugin/install`: the plugin's files into the cache, `[plugins."<id>"] enabled = true`
    /// into the user's config.
    pub(super) fn plugin_install(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (m, entry) = match self.named_entry("plugin/install", p)? {
            Ok(found) => found,
            Err(method) => return self.not_modeled(&method),
        };
        if entry.installation == "NOT_AVAILABLE" || !entry.for_codex {
            return Err(format!(
                "plugin `{}` is not available for install in marketplace `{}`",
                entry.name, m.name
            ));
        }
        let Source::Local(dir) = &entry.source else {
            return self.not_modeled("plugin/install");
        };
        let manifest = plugins::manifest(dir, &entry);
        if let Some(e) = plugins::install_error(&manifest, &entry.name) {
            return Err(e);
        }
        plugins::install_files(&self.fake.codex_home, &m.name, &entry, dir, &manifest)
            .map_err(|e| format!("{INTERNAL_PREFIX}failed to install plugin: {e}"))?;
        let plugin_id = format!("{}@{}", entry.name, m.name);
        let text = std::fs::read_to_string(self.user_file()).unwrap_or_default();
        let edited = plugins::enable_in_text(&text, &plugin_id).unwrap_or_else(|| {
            let mut config = self.user_table();
            let tables = config
                .entry("plugins")
                .or_insert_with(|| Value::Object(Map::new()));
            if !tables.is_object() {
                *tables = Value::Object(Map::new());
            }
            let t = tables
                .as_object_mut()
                .expect("made a table above")
                .entry(plugin_id)
                .or_insert_with(|| Value::Object(Map::new()));
            if !t.is_object() {
                *t = Value::Object(Map::new());
            }
            t["enabled"] = Value::Bool(true);
            crate::fake::user_config::edited_toml(&text, &config)
        });
        self.write_user_config(&edited);
        self.result(
            id,
            json!({"authPolicy": entry.authentication, "appsNeedingAuth": []}),
        );
        Ok(())
    }

    /// `plugin/uninstall`: a local id's cache directory and config table removed, whatever
    /// the marketplace holds; an id without `@marketplace` names a remote plugin, which needs
    /// a ChatGPT login.
    pub(super) fn plugin_uninstall(&self, id: &Value, p: &Value) -> Result<(), String> {
        let plugin_id = p["pluginId"].as_str().unwrap_or_default();
        let (name, market) = match plugins::uninstall_id(plugin_id) {
            UninstallId::Local { name, marketplace } => (name, marketplace),
            UninstallId::Remote => {
                return Err(self.remote_catalog_refused("resolve remote plugin before uninstall"))
            }
            UninstallId::Invalid => return Err("invalid remote plugin id".into()),
        };
        let _ = std::fs::remove_dir_all(plugins::cache_dir(&self.fake.codex_home, market, name));
        let mut config = self.user_table();
        let removed = config
            .get_mut("plugins")
            .and_then(Value::as_object_mut)
            .is_some_and(|t| t.shift_remove(plugin_id).is_some());
        if removed {
            let text = std::fs::read_to_string(self.user_file()).unwrap_or_default();
            let edited = plugins::remove_from_text(&text, plugin_id).unwrap_or_else(|| {
                if config
                    .get("plugins")
                    .and_then(Value::as_object)
                    .is_some_and(Map::is_empty)
                {
                    config.remove("plugins");
                }
                crate::fake::user_config::edited_toml(&text, &config)
            });
            self.write_user_config(&edited);
        }
        self.result(id, json!({}));
        Ok(())
    }

    /// The user's config written back, owner-only as codex writes it.
    fn write_user_config(&self, text: &str) {
        let file = self.user_file();
        let _ = std::fs::write(&file, text);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// About how long after a list codex's refresh lands (15 to 20 ms on the machine probed: a
/// request sent at once still sees the cache as it was).
const REFRESH_DELAY_MS: u64 = 20;

/// Whether the refresh installs a plugin again: configured, installable, and its cache
/// missing or of another version.
fn stale(codex_home: &Path, config: &Map<String, Value>, market: &str, e: &Entry) -> bool {
    let id = format!("{}@{market}", e.name);
    let configured = config
        .get("plugins")
        .and_then(|t| t.get(&id))
        .is_some_and(Value::is_object);
    let Source::Local(dir) = &e.source else {
        return false;
    };
    if !configured || !e.for_codex {
        return false;
    }
    let m = plugins::manifest(dir, e);
    if plugins::install_error(&m, &e.name).is_some() {
        return false;
    }
    let want = m
        .map()
        .and_then(plugins::version_of)
        .unwrap_or_else(|| "local".into());
    plugins::cached_version(codex_home, market, &e.name).as_deref() != Some(want.as_str())
}

fn marketplace_out((m, plugins): (Marketplace, Vec<plugins::Summary>)) -> MarketplaceOut {
    MarketplaceOut {
        name: m.name,
        path: path_str(&m.path),
        interface: m.display_name.map(|d| json!({ "displayName": d })),
        plugins,
    }
}

/// The user's home, as codex finds its home marketplace.
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_normalizes_and_ranks() {
        assert_eq!(norm("  TOOL!  my-Tool "), "tool my tool");
    }
}
