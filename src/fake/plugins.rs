//! Local plugin marketplaces as codex reads them (`codex-rs/core-plugins`: `marketplace.rs`,
//! `manifest.rs`, the plugins manager): where `marketplace.json` files are found, which of
//! their entries survive, how a plugin's manifest becomes the `PluginSummary` every plugin
//! method shows, and what installing and uninstalling do on disk (the plugin cache under
//! `CODEX_HOME/plugins/cache`). The rules were probed on 0.163.0, 0.169.0 and 0.171.0, which
//! agree; shown by `tests/corpus/turns/59_plugins_local`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Component, Path, PathBuf};

/// What discovery and the summaries read: the homes and the user's `config.toml`.
pub struct Env<'a> {
    pub codex_home: &'a Path,
    pub home: Option<&'a Path>,
    pub config: &'a Map<String, Value>,
}

/// A marketplace file that could not be read (`marketplaceLoadErrors`).
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LoadError {
    pub marketplace_path: String,
    pub message: String,
}

/// Where a plugin's files come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    Local(PathBuf),
    Git {
        url: String,
        path: Option<String>,
        ref_name: Option<String>,
        sha: Option<String>,
    },
    Npm {
        package: String,
        version: Option<String>,
        registry: Option<String>,
    },
}

/// One surviving entry of a marketplace file.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub source: Source,
    pub installation: &'static str,
    pub authentication: &'static str,
    pub category: Option<String>,
    /// The entry's other keys, in file order: a manifest when the plugin has none.
    pub extra: Map<String, Value>,
    /// `policy.products` names Codex (or is absent): else listed nowhere and not installable.
    pub for_codex: bool,
}

/// A parsed marketplace file.
#[derive(Clone, Debug)]
pub struct Marketplace {
    pub name: String,
    pub path: PathBuf,
    pub display_name: Option<String>,
    /// Whether the name is one codex accepts (else none of its plugins is listed).
    pub valid_name: bool,
    pub entries: Vec<Entry>,
    /// Every entry's name as the file gives it (`plugin/read` and `plugin/install` look a
    /// name up among these before checking anything).
    pub raw_names: Vec<String>,
}

#[derive(Deserialize)]
struct RawMarketplace {
    name: String,
    #[serde(default)]
    interface: Option<RawMarketInterface>,
    plugins: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMarketInterface {
    #[serde(default)]
    display_name: Option<String>,
}

// The entry's other keys are taken from the file as parsed in its own order.
#[derive(Deserialize)]
struct RawEntry {
    name: String,
    source: Value,
    #[serde(default)]
    policy: Option<RawPolicy>,
    #[serde(default)]
    category: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawPolicy {
    #[serde(default)]
    installation: Option<Installation>,
    #[serde(default)]
    authentication: Option<Authentication>,
    #[serde(default)]
    products: Option<Vec<String>>,
}

// Declared in codex's order: serde names the variants in it when one is unknown.
#[derive(Deserialize, Clone, Copy)]
enum Installation {
    #[serde(rename = "NOT_AVAILABLE")]
    NotAvailable,
    #[serde(rename = "AVAILABLE")]
    Available,
    #[serde(rename = "INSTALLED_BY_DEFAULT")]
    InstalledByDefault,
}

#[derive(Deserialize, Clone, Copy)]
enum Authentication {
    #[serde(rename = "ON_INSTALL")]
    OnInstall,
    #[serde(rename = "ON_USE")]
    OnUse,
}

/// Names codex accepts for a marketplace or a plugin: ASCII letters, digits, `_`, `-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Names codex accepts for a plugin: a marketplace name's characters and `.` (not leading,
/// trailing or doubled).
pub fn valid_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

pub const INVALID_PLUGIN_NAME: &str =
    "invalid plugin name: only ASCII letters, digits, `.`, `_`, and `-` are allowed";

pub const INVALID_MARKETPLACE_NAME: &str =
    "invalid marketplace name: only ASCII letters, digits, `_`, and `-` are allowed";

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The marketplace file of a root: `.agents/plugins/marketplace.json`, else
/// `.claude-plugin/marketplace.json`.
pub fn manifest_in(dir: &Path) -> Option<PathBuf> {
    [
        dir.join(".agents").join("plugins").join("marketplace.json"),
        dir.join(".claude-plugin").join("marketplace.json"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// The directory a marketplace file's relative paths start from: the one holding its
/// `.agents/plugins/` or `.claude-plugin/` (None when the file lies elsewhere).
pub fn marketplace_root(file: &Path) -> Option<PathBuf> {
    let dir = file.parent()?;
    if dir.file_name()? == ".claude-plugin" {
        return dir.parent().map(Path::to_path_buf);
    }
    if dir.file_name()? == "plugins" && dir.parent()?.file_name()? == ".agents" {
        return dir.parent()?.parent().map(Path::to_path_buf);
    }
    None
}

/// A local source path: `./` then normal components only (`.` or `./` alone: the root).
fn local_path(root: &Path, rel: &str) -> Option<PathBuf> {
    if rel == "." || rel == "./" {
        return Some(root.to_path_buf());
    }
    let rest = rel.strip_prefix("./")?;
    let ok = Path::new(rest)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    ok.then(|| root.join(rest))
}

/// npm's package names: an optional `@scope/`, then lowercase letters, digits, `-._~`.
fn valid_npm(package: &str) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c))
    };
    match package.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, name)| part(scope) && part(name)),
        None => part(package),
    }
}

/// A git url as codex shows it: `owner/repo` is GitHub's, a GitHub url ends in `.git`.
fn git_url(url: &str) -> String {
    let shorthand = !url.contains(':')
        && url.split('/').count() == 2
        && url.split('/').all(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
    let url = if shorthand {
        format!("https://github.com/{url}")
    } else {
        url.to_string()
    };
    if url.starts_with("https://github.com/") && !url.ends_with(".git") {
        format!("{url}.git")
    } else {
        url
    }
}

fn opt_str(v: &Value, k: &str) -> Option<String> {
    v[k].as_str().map(str::to_string)
}

/// An entry's source, or None when codex skips the entry.
fn source_of(root: Option<&Path>, v: &Value) -> Option<Source> {
    let local = |rel: &str| Some(Source::Local(local_path(root?, rel)?));
    match v {
        Value::String(rel) => local(rel),
        Value::Object(o) => match o.get("source").and_then(Value::as_str)? {
            "local" => local(o.get("path")?.as_str()?),
            "url" | "git-subdir" => Some(Source::Git {
                url: git_url(o.get("url")?.as_str()?),
                path: opt_str(v, "path"),
                ref_name: opt_str(v, "ref"),
                sha: opt_str(v, "sha"),
            }),
            "npm" => {
                let package = o.get("package")?.as_str()?;
                valid_npm(package).then(|| Source::Npm {
                    package: package.to_string(),
                    version: opt_str(v, "version"),
                    registry: opt_str(v, "registry"),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// A marketplace file read as codex reads it; the error is the `message` of a load error.
pub fn parse_marketplace(file: &Path) -> Result<Marketplace, String> {
    let invalid =
        |e: &dyn std::fmt::Display| format!("invalid marketplace file `{}`: {e}", file.display());
    let text = std::fs::read_to_string(file).map_err(|e| invalid(&e))?;
    let raw: RawMarketplace = serde_json::from_str(&text).map_err(|e| invalid(&e))?;
    let whole: Value = serde_json::from_str(&text).map_err(|e| invalid(&e))?;
    let root = marketplace_root(file);
    let mut entries: Vec<Entry> = Vec::new();
    for (i, e) in raw.plugins.iter().enumerate() {
        let value = &whole["plugins"][i];
        if !valid_plugin_name(&e.name) || entries.iter().any(|x| x.name == e.name) {
            continue;
        }
        let Some(source) = source_of(root.as_deref(), &e.source) else {
            continue;
        };
        let policy = e.policy.as_ref();
        let installation = match policy.and_then(|p| p.installation) {
            Some(Installation::NotAvailable) => "NOT_AVAILABLE",
            Some(Installation::InstalledByDefault) => "INSTALLED_BY_DEFAULT",
            Some(Installation::Available) | None => "AVAILABLE",
        };
        let authentication = match policy.and_then(|p| p.authentication) {
            Some(Authentication::OnUse) => "ON_USE",
            Some(Authentication::OnInstall) | None => "ON_INSTALL",
        };
        let for_codex = policy
            .and_then(|p| p.products.as_ref())
            .is_none_or(|p| p.iter().any(|x| x == "CODEX"));
        let extra: Map<String, Value> = value
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !["name", "source", "policy", "category"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        entries.push(Entry {
            name: e.name.clone(),
            source,
            installation,
            authentication,
            category: e.category.clone(),
            extra,
            for_codex,
        });
    }
    Ok(Marketplace {
        valid_name: valid_name(&raw.name),
        name: raw.name,
        path: file.to_path_buf(),
        display_name: raw.interface.and_then(|i| i.display_name),
        entries,
        raw_names: raw.plugins.iter().map(|e| e.name.clone()).collect(),
    })
}

/// The nearest ancestor of `dir` (itself included) holding `.git`.
fn git_root(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|a| a.join(".git").exists())
}

/// The marketplace file a `cwds` entry names: its own, else its git repository root's.
fn cwd_manifest(cwd: &Path) -> Option<PathBuf> {
    if !cwd.is_dir() {
        return None;
    }
    manifest_in(cwd).or_else(|| manifest_in(git_root(cwd)?))
}

/// The roots of the user's `[marketplaces.<name>]` tables: a local one's `source`, any other
/// kind's checkout under `CODEX_HOME/.tmp/marketplaces`.
fn configured_roots(env: &Env) -> Vec<PathBuf> {
    let Some(tables) = env.config.get("marketplaces").and_then(Value::as_object) else {
        return Vec::new();
    };
    tables
        .iter()
        .filter(|(name, t)| t.is_object() && valid_name(name))
        .filter_map(|(name, t)| {
            if t["source_type"] == "local" {
                t["source"].as_str().map(PathBuf::from)
            } else {
                Some(env.codex_home.join(".tmp").join("marketplaces").join(name))
            }
        })
        .collect()
}

/// The marketplace files codex reads, in its order: the home's first; then the configured
/// roots and the first cwd, sorted by path; then the other cwds as given. Each file once.
pub fn marketplace_files(env: &Env, cwds: &[PathBuf]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = env.home.and_then(manifest_in).into_iter().collect();
    let mut sorted: Vec<(PathBuf, Option<PathBuf>)> = configured_roots(env)
        .into_iter()
        .map(|r| (r.clone(), manifest_in(&r)))
        .collect();
    if let Some(first) = cwds.first() {
        sorted.push((first.clone(), cwd_manifest(first)));
    }
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    files.extend(sorted.into_iter().filter_map(|(_, f)| f));
    files.extend(cwds.iter().skip(1).filter_map(|c| cwd_manifest(c)));
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.clone()));
    files
}

/// Every discoverable marketplace, and the files that failed to load, in codex's order.
pub fn discover(env: &Env, cwds: &[PathBuf]) -> (Vec<Marketplace>, Vec<LoadError>) {
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    for file in marketplace_files(env, cwds) {
        match parse_marketplace(&file) {
            Ok(m) => found.push(m),
            Err(message) => errors.push(LoadError {
                marketplace_path: path_str(&file),
                message,
            }),
        }
    }
    (found, errors)
}

/// A plugin's manifest file: `.codex-plugin/plugin.json`, else `.claude-plugin/plugin.json`.
fn manifest_file(dir: &Path) -> Option<PathBuf> {
    [".codex-plugin", ".claude-plugin"]
        .iter()
        .map(|d| dir.join(d).join("plugin.json"))
        .find(|p| p.is_file())
}

/// What a local plugin's directory holds for a manifest.
pub enum Manifest {
    /// Read from its `plugin.json`, or made from the entry's own metadata.
    Found {
        map: Map<String, Value>,
        inline: bool,
    },
    /// The directory does not exist.
    NoDir,
    /// No `plugin.json` (and no metadata in the entry).
    Missing,
    /// A `plugin.json` that is not a JSON object: serde's words.
    Invalid(String),
}

impl Manifest {
    pub fn map(&self) -> Option<&Map<String, Value>> {
        match self {
            Manifest::Found { map, .. } => Some(map),
            _ => None,
        }
    }
}

/// The manifest codex makes of a marketplace entry's own keys (Claude's style): the keys in
/// file order, then `name`, then an interface from `displayName`, `author.name`, `homepage`
/// and an `interface` object.
fn inline_manifest(entry: &Entry) -> Map<String, Value> {
    let mut map = entry.extra.clone();
    map.insert("name".into(), Value::String(entry.name.clone()));
    let mut iface: Map<String, Value> = entry
        .extra
        .get("interface")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let from = [
        ("displayName", entry.extra.get("displayName")),
        (
            "developerName",
            entry.extra.get("author").and_then(|a| a.get("name")),
        ),
        ("websiteUrl", entry.extra.get("homepage")),
    ];
    for (k, v) in from {
        if let Some(v) = v.filter(|v| v.is_string()) {
            iface.insert(k.into(), v.clone());
        }
    }
    if !iface.is_empty() {
        map.insert("interface".into(), Value::Object(iface));
    }
    map
}

/// The manifest of a local entry whose files are in `dir`.
pub fn manifest(dir: &Path, entry: &Entry) -> Manifest {
    if !dir.is_dir() {
        return Manifest::NoDir;
    }
    let inline = !entry.extra.is_empty() || entry.category.is_some();
    let read = manifest_file(dir).map(|f| {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        serde_json::from_str::<Value>(&text).map_err(|e| e.to_string())
    });
    match read {
        Some(Ok(Value::Object(map))) => Manifest::Found { map, inline: false },
        _ if inline => Manifest::Found {
            map: inline_manifest(entry),
            inline: true,
        },
        Some(Ok(_)) => Manifest::Invalid("invalid type: expected a map".into()),
        Some(Err(e)) => Manifest::Invalid(e),
        None => Manifest::Missing,
    }
}

/// A manifest's `version`, trimmed (empty: none).
pub fn version_of(m: &Map<String, Value>) -> Option<String> {
    m.get("version")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// `PluginInterface`, in codex's key order; the `*Url` assets are remote plugins' only.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PluginInterface {
    display_name: Option<String>,
    short_description: Option<String>,
    long_description: Option<String>,
    developer_name: Option<String>,
    category: Option<String>,
    capabilities: Vec<String>,
    website_url: Option<String>,
    privacy_policy_url: Option<String>,
    terms_of_service_url: Option<String>,
    default_prompt: Option<Vec<String>>,
    brand_color: Option<String>,
    composer_icon: Option<String>,
    composer_icon_url: Option<String>,
    logo: Option<String>,
    logo_dark: Option<String>,
    logo_url: Option<String>,
    logo_url_dark: Option<String>,
    screenshots: Vec<String>,
    screenshot_urls: Vec<String>,
}

/// An asset path: `./` and normal components, under the plugin's directory.
fn asset(dir: &Path, v: Option<&Value>) -> Option<String> {
    let rel = v?.as_str()?.strip_prefix("./")?;
    let ok = !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    ok.then(|| path_str(&dir.join(rel)))
}

/// codex's default prompts: each one-lined, the empty and those over 512 characters dropped
/// (the binaries' limit, probed; not the 128 of some sources), at most three.
fn default_prompts(v: Option<&Value>) -> Option<Vec<String>> {
    let raw: Vec<&str> = match v? {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let kept: Vec<String> = raw
        .into_iter()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty() && s.chars().count() <= 512)
        .take(3)
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// The interface of a manifest (the marketplace's category over its own); None when nothing
/// in it is set.
pub fn interface(
    dir: &Path,
    manifest: Option<&Map<String, Value>>,
    category: Option<&str>,
) -> Option<PluginInterface> {
    let empty = Value::Null;
    let i = manifest.and_then(|m| m.get("interface")).unwrap_or(&empty);
    let s = |k: &str| i.get(k).and_then(Value::as_str).map(str::to_string);
    let either = |a: &str, b: &str| s(a).or_else(|| s(b));
    let out = PluginInterface {
        display_name: s("displayName"),
        short_description: s("shortDescription"),
        long_description: s("longDescription"),
        developer_name: s("developerName"),
        category: category.map(str::to_string).or_else(|| s("category")),
        capabilities: strings(i.get("capabilities")),
        website_url: either("websiteUrl", "websiteURL"),
        privacy_policy_url: either("privacyPolicyUrl", "privacyPolicyURL"),
        terms_of_service_url: either("termsOfServiceUrl", "termsOfServiceURL"),
        default_prompt: default_prompts(i.get("defaultPrompt")),
        brand_color: s("brandColor"),
        composer_icon: asset(dir, i.get("composerIcon")),
        logo: asset(dir, i.get("logo")),
        logo_dark: asset(dir, i.get("logoDark")),
        screenshots: i
            .get("screenshots")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| asset(dir, Some(v)))
            .collect(),
        ..Default::default()
    };
    let any = out.display_name.is_some()
        || out.short_description.is_some()
        || out.long_description.is_some()
        || out.developer_name.is_some()
        || out.category.is_some()
        || !out.capabilities.is_empty()
        || out.website_url.is_some()
        || out.privacy_policy_url.is_some()
        || out.terms_of_service_url.is_some()
        || out.default_prompt.is_some()
        || out.brand_color.is_some()
        || out.composer_icon.is_some()
        || out.logo.is_some()
        || out.logo_dark.is_some()
        || !out.screenshots.is_empty();
    any.then_some(out)
}

/// `PluginSource`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SourceOut {
    Local {
        path: String,
    },
    Git {
        url: String,
        path: Option<String>,
        #[serde(rename = "refName")]
        ref_name: Option<String>,
        sha: Option<String>,
    },
    Npm {
        package: String,
        version: Option<String>,
        registry: Option<String>,
    },
}

/// `PluginSummary`, in codex's key order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub id: String,
    remote_plugin_id: Option<String>,
    version: Option<String>,
    local_version: Option<String>,
    pub name: String,
    share_context: Option<Value>,
    source: SourceOut,
    pub installed: bool,
    installed_at: Option<i64>,
    pub enabled: bool,
    install_policy: &'static str,
    install_policy_source: Option<String>,
    must_show_installation_interstitial: Option<bool>,
    auth_policy: &'static str,
    availability: &'static str,
    disabled_reason: Option<String>,
    eligible_plan_types: Option<Vec<String>>,
    pub interface: Option<PluginInterface>,
    pub keywords: Vec<String>,
}

impl Summary {
    /// The display name search ranks by.
    pub fn display_name(&self) -> Option<&str> {
        self.interface.as_ref()?.display_name.as_deref()
    }
}

/// The cache directory of one plugin (each installed version a directory in it).
pub fn cache_dir(codex_home: &Path, marketplace: &str, plugin: &str) -> PathBuf {
    codex_home
        .join("plugins")
        .join("cache")
        .join(marketplace)
        .join(plugin)
}

/// The user's `[plugins."<id>"]` table.
fn config_entry<'a>(config: &'a Map<String, Value>, id: &str) -> Option<&'a Value> {
    config.get("plugins")?.get(id).filter(|t| t.is_object())
}

/// Whether some version of the plugin is in the cache.
fn cached(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|r| r.flatten().any(|e| e.path().is_dir()))
        .unwrap_or(false)
}

/// An entry's summary: its manifest read from its source (never the cache); installed when
/// configured and cached, enabled as configured.
pub fn summary(env: &Env, market: &str, entry: &Entry) -> Summary {
    let id = format!("{}@{market}", entry.name);
    let (source, manifest) = match &entry.source {
        Source::Local(dir) => (
            SourceOut::Local {
                path: path_str(dir),
            },
            Some(manifest(dir, entry)),
        ),
        Source::Git {
            url,
            path,
            ref_name,
            sha,
        } => (
            SourceOut::Git {
                url: url.clone(),
                path: path.clone(),
                ref_name: ref_name.clone(),
                sha: sha.clone(),
            },
            None,
        ),
        Source::Npm {
            package,
            version,
            registry,
        } => (
            SourceOut::Npm {
                package: package.clone(),
                version: version.clone(),
                registry: registry.clone(),
            },
            None,
        ),
    };
    let map = manifest.as_ref().and_then(Manifest::map);
    let dir = match &entry.source {
        Source::Local(d) => d.clone(),
        _ => PathBuf::new(),
    };
    let configured = config_entry(env.config, &id);
    Summary {
        remote_plugin_id: None,
        version: None,
        local_version: map.and_then(version_of),
        name: entry.name.clone(),
        share_context: None,
        source,
        installed: configured.is_some() && cached(&cache_dir(env.codex_home, market, &entry.name)),
        installed_at: None,
        enabled: configured.is_some_and(|t| t["enabled"] == true),
        install_policy: entry.installation,
        install_policy_source: None,
        must_show_installation_interstitial: None,
        auth_policy: entry.authentication,
        availability: "AVAILABLE",
        disabled_reason: None,
        eligible_plan_types: None,
        interface: match manifest {
            Some(Manifest::Found { .. }) | None => interface(&dir, map, entry.category.as_deref()),
            // Without a manifest the marketplace's category is not shown either.
            _ => None,
        },
        keywords: strings(map.and_then(|m| m.get("keywords"))),
        id,
    }
}

/// The summaries of a marketplace codex lists: its plugins for Codex, each `name@marketplace`
/// once across marketplaces (`seen`).
pub fn summaries(
    env: &Env,
    m: &Marketplace,
    seen: &mut std::collections::HashSet<String>,
) -> Vec<Summary> {
    if !m.valid_name {
        return Vec::new();
    }
    m.entries
        .iter()
        .filter(|e| e.for_codex)
        .filter(|e| seen.insert(format!("{}@{}", e.name, m.name)))
        .map(|e| summary(env, &m.name, e))
        .collect()
}

/// Why an install failed (codex's words).
pub fn install_error(m: &Manifest, name: &str) -> Option<String> {
    match m {
        Manifest::NoDir | Manifest::Missing => Some("missing plugin.json".into()),
        Manifest::Invalid(e) => Some(format!("failed to parse plugin.json: {e}")),
        Manifest::Found { map, .. } => {
            let declared = map.get("name").and_then(Value::as_str).unwrap_or_default();
            (!declared.is_empty() && declared != name).then(|| {
                format!(
                    "plugin.json name `{declared}` does not match marketplace plugin name `{name}`"
                )
            })
        }
    }
}

/// Copies a tree as codex's installer does: files and directories, symlinks left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let kind = e.file_type()?;
        let target = to.join(e.file_name());
        if kind.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// Puts a local plugin in the cache: `<version|local>/` a copy of its directory (with the
/// made manifest when it came from the entry), every other version removed.
pub fn install_files(
    codex_home: &Path,
    market: &str,
    entry: &Entry,
    dir: &Path,
    m: &Manifest,
) -> std::io::Result<()> {
    let Manifest::Found { map, inline } = m else {
        return Ok(());
    };
    let version = version_of(map).unwrap_or_else(|| "local".into());
    let base = cache_dir(codex_home, market, &entry.name);
    let target = base.join(&version);
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            if e.file_name() != version.as_str() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&target);
    copy_tree(dir, &target)?;
    if *inline {
        let at = target.join(".codex-plugin");
        std::fs::create_dir_all(&at)?;
        let text = serde_json::to_string_pretty(&Value::Object(map.clone())).unwrap_or_default();
        std::fs::write(at.join("plugin.json"), text)?;
    }
    Ok(())
}

/// The version directory the cache holds for a plugin, if one.
pub fn cached_version(codex_home: &Path, market: &str, plugin: &str) -> Option<String> {
    std::fs::read_dir(cache_dir(codex_home, market, plugin))
        .ok()?
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .next()
}

/// The line span `[start, end)` of the `[plugins."<id>"]` table in a config's text: its
/// header line through the line before the next header.
fn table_span(lines: &[&str], id: &str) -> Option<(usize, usize)> {
    let header = format!("[plugins.\"{id}\"]");
    let start = lines.iter().position(|l| l.trim() == header)?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| start + 1 + i);
    Some((start, end))
}

/// The config text with `[plugins."<id>"] enabled = true`, edited as codex's editor edits it
/// (the rest of the file kept): an existing `enabled` flipped in place, else the key added to
/// the table, else the table appended after a blank line. None when the table is written in a
/// way this does not find (the caller rewrites the whole file).
pub fn enable_in_text(text: &str, id: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let Some((start, end)) = table_span(&lines, id) else {
        if crate::fake::user_config::from_toml(text)
            .get("plugins")
            .and_then(|p| p.get(id))
            .is_some()
        {
            return None;
        }
        let header = format!("[plugins.\"{id}\"]\nenabled = true\n");
        return Some(if text.trim().is_empty() {
            header
        } else if text.ends_with('\n') {
            format!("{text}\n{header}")
        } else {
            format!("{text}\n\n{header}")
        });
    };
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let key = (start + 1..end).find(|&i| {
        lines[i]
            .split_once('=')
            .is_some_and(|(k, _)| k.trim() == "enabled")
    });
    match key {
        Some(i) => {
            let (k, _) = lines[i].split_once('=').unwrap_or_default();
            out[i] = format!("{k}= true");
        }
        None => {
            // After the table's last key, before the blank lines that end it.
            let last = (start..end)
                .rev()
                .find(|&i| !lines[i].trim().is_empty())
                .unwrap_or(start);
            out.insert(last + 1, "enabled = true".into());
        }
    }
    Some(out.join("\n") + "\n")
}

/// The config text without the `[plugins."<id>"]` table (and the blank line before it); None
/// when the table is not found as a header (the caller rewrites the whole file).
pub fn remove_from_text(text: &str, id: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut start, mut end) = table_span(&lines, id)?;
    // Blank lines before a header are that header's: the ones ending the table stay with
    // whatever follows, the one before it goes with it.
    while end > start + 1 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    if start > 0 && lines[start - 1].trim().is_empty() {
        start -= 1;
    }
    let kept: Vec<&str> = lines[..start]
        .iter()
        .chain(&lines[end..])
        .copied()
        .collect();
    Some(if kept.is_empty() {
        String::new()
    } else {
        kept.join("\n") + "\n"
    })
}

/// What a `plugin/uninstall` id names.
#[derive(Debug, PartialEq, Eq)]
pub enum UninstallId<'a> {
    /// `name@marketplace`.
    Local {
        name: &'a str,
        marketplace: &'a str,
    },
    /// A remote plugin id (`[A-Za-z0-9_~-]+`).
    Remote,
    Invalid,
}

pub fn uninstall_id(id: &str) -> UninstallId<'_> {
    if let Some((name, marketplace)) = id.split_once('@') {
        if valid_plugin_name(name) && valid_name(marketplace) {
            return UninstallId::Local { name, marketplace };
        }
    }
    let remote = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_~".contains(c));
    if remote {
        UninstallId::Remote
    } else {
        UninstallId::Invalid
    }
}

/// A skill of a plugin as `plugin/read` shows it (`SkillSummary`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSkill {
    pub name: String,
    pub description: String,
    pub short_description: Option<String>,
    pub interface: Option<crate::fake::skills::Interface>,
    pub path: String,
    pub enabled: bool,
}

/// The skill directories a manifest names (`skills`: a `./` path or a list of them), else
/// `skills/`.
pub fn skill_dirs(dir: &Path, m: &Map<String, Value>) -> Vec<PathBuf> {
    let named: Vec<&str> = match m.get("skills") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => return vec![dir.join("skills")],
    };
    named
        .into_iter()
        .filter_map(|rel| local_path(dir, rel.trim_end_matches('/')))
        .collect()
}

/// Skills found, and the skill files refused.
pub type SkillsFound = (
    Vec<crate::fake::skills::Skill>,
    Vec<crate::fake::skills::SkillError>,
);

/// A plugin's skills, named `<plugin>:<skill>`, sorted by name (refused files left out).
pub fn skills(dir: &Path, plugin: &str, m: &Map<String, Value>) -> Vec<crate::fake::skills::Skill> {
    skills_and_errors(dir, plugin, m).0
}

/// A plugin's skills, named `<plugin>:<skill>` and sorted by name, and its refused skill files.
fn skills_and_errors(dir: &Path, plugin: &str, m: &Map<String, Value>) -> SkillsFound {
    use crate::fake::skills::{discover, Root, Scope};
    let roots: Vec<Root> = skill_dirs(dir, m)
        .into_iter()
        .map(|path| Root {
            path,
            scope: Scope::User,
        })
        .collect();
    let (mut found, errors) = discover(&roots);
    for s in &mut found {
        s.name = format!("{plugin}:{}", s.name);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, errors)
}

/// The skills of the plugins the user's config turns on (`[plugins."<name>@<marketplace>"]
/// enabled = true`), read from their cached copies, each with its plugin's id, and the skill
/// files refused there; None when a configured id is not a local plugin's (remote plugins are
/// not modeled).
pub fn installed_skills(codex_home: &Path, config: &Map<String, Value>) -> Option<SkillsFound> {
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let tables = config.get("plugins").and_then(Value::as_object);
    for (id, table) in tables.into_iter().flatten() {
        let UninstallId::Local { name, marketplace } = uninstall_id(id) else {
            return None;
        };
        if table["enabled"] != true {
            continue;
        }
        let Some(version) = cached_version(codex_home, marketplace, name) else {
            continue;
        };
        let dir = cache_dir(codex_home, marketplace, name).join(version);
        let manifest = manifest_file(&dir)
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let (found, refused) = skills_and_errors(&dir, name, &manifest);
        out.extend(found.into_iter().map(|mut s| {
            s.plugin_id = Some(id.clone());
            s
        }));
        errors.extend(refused);
    }
    Some((out, errors))
}

/// The MCP servers a plugin declares (`mcpServers`: a path or an object; else `.mcp.json`),
/// by name.
pub fn mcp_servers(dir: &Path, m: &Map<String, Value>) -> Vec<String> {
    let declared = match m.get("mcpServers") {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        other => {
            let rel = other.and_then(Value::as_str).unwrap_or("./.mcp.json");
            let Some(file) = local_path(dir, rel) else {
                return Vec::new();
            };
            let parsed: Value = std::fs::read_to_string(file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            parsed.get("mcpServers").cloned().unwrap_or(Value::Null)
        }
    };
    let mut names: Vec<String> = declared
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// `PluginHookSummary`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hook {
    key: String,
    event_name: String,
}

fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn camel(event: &str) -> String {
    let mut c = event.chars();
    c.next()
        .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// A plugin's hooks from `hooks/hooks.json` (or the manifest's `hooks` path): one per command,
/// keyed `<id>:<file>:<event>:<group>:<hook>`.
pub fn hooks(dir: &Path, id: &str, m: &Map<String, Value>) -> Vec<Hook> {
    let rel = m
        .get("hooks")
        .and_then(Value::as_str)
        .unwrap_or("./hooks/hooks.json");
    let Some(file) = local_path(dir, rel) else {
        return Vec::new();
    };
    let shown = rel.trim_start_matches("./");
    let parsed: Value = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (event, groups) in parsed["hooks"].as_object().into_iter().flatten() {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            for (h, _) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                out.push(Hook {
                    key: format!("{id}:{shown}:{}:{g}:{h}", snake(event)),
                    event_name: camel(event),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uninstall_ids_are_local_remote_or_invalid() {
        assert_eq!(
            uninstall_id("good-plugin@local-market"),
            UninstallId::Local {
                name: "good-plugin",
                marketplace: "local-market"
            }
        );
        assert_eq!(uninstall_id("bad"), UninstallId::Remote);
        for id in ["", "a@b@c", "inline@", "@det", "in line@det"] {
            assert_eq!(uninstall_id(id), UninstallId::Invalid, "{id}");
        }
    }

    /// codex's editor keeps the rest of the file: a table appended after a blank line, a
    /// flag flipped in place, a removed table's blank line removed with it.
    #[test]
    fn config_edits_keep_the_rest_of_the_file() {
        let text = "# my comment\nmodel = \"gpt-5\"   # trailing comment\n\n[plugins.\"p1@st\"]\nenabled = true\n\n[plugins.\"p3@st\"]\nenabled = false\n";
        let added = enable_in_text(text, "p4@st").unwrap();
        let flipped = enable_in_text(&added, "p3@st").unwrap();
        assert_eq!(
            flipped,
            "# my comment\nmodel = \"gpt-5\"   # trailing comment\n\n[plugins.\"p1@st\"]\nenabled = true\n\n[plugins.\"p3@st\"]\nenabled = true\n\n[plugins.\"p4@st\"]\nenabled = true\n"
        );
        let removed = remove_from_text(&flipped, "p1@st").unwrap();
        assert_eq!(
            removed,
            "# my comment\nmodel = \"gpt-5\"   # trailing comment\n\n[plugins.\"p3@st\"]\nenabled = true\n\n[plugins.\"p4@st\"]\nenabled = true\n"
        );
        let fresh = enable_in_text("", "g@m").unwrap();
        assert_eq!(fresh, "[plugins.\"g@m\"]\nenabled = true\n");
        assert_eq!(remove_from_text(&fresh, "g@m").unwrap(), "");
    }

    #[test]
    fn local_paths_start_with_dot_slash_and_stay_inside() {
        let root = Path::new("/r");
        assert_eq!(local_path(root, "./p/x"), Some(PathBuf::from("/r/p/x")));
        assert_eq!(local_path(root, "./"), Some(PathBuf::from("/r")));
        assert_eq!(local_path(root, "p/x"), None);
        assert_eq!(local_path(root, "./../x"), None);
    }

    /// The home's file first, then configured roots and the first cwd by path, then the
    /// other cwds as given.
    #[test]
    fn marketplaces_are_found_in_codex_order() {
        let d = std::env::temp_dir().join(format!("cw-plugins-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let mk = |dir: &str| {
            let p = d.join(dir).join(".agents/plugins");
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("marketplace.json"), "{}").unwrap();
            d.join(dir)
        };
        let home = mk("home");
        let (cc, mm) = (mk("cc-cfg"), mk("mm-cfg"));
        let (aa, zz, nn) = (mk("aa"), mk("zz"), mk("nn"));
        let mut config = Map::new();
        let table = |p: &Path| serde_json::json!({"source_type": "local", "source": path_str(p)});
        config.insert(
            "marketplaces".into(),
            serde_json::json!({"b": table(&mm), "a": table(&cc)}),
        );
        let env = Env {
            codex_home: &d.join("ch"),
            home: Some(&home),
            config: &config,
        };
        let names = |cwds: &[PathBuf]| -> Vec<String> {
            marketplace_files(&env, cwds)
                .iter()
                .map(|f| {
                    marketplace_root(f)
                        .unwrap()
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        };
        assert_eq!(
            names(&[zz.clone(), aa.clone(), nn.clone()]),
            ["home", "cc-cfg", "mm-cfg", "zz", "aa", "nn"]
        );
        assert_eq!(
            names(&[aa.clone(), zz.clone(), aa.clone()]),
            ["home", "aa", "cc-cfg", "mm-cfg", "zz"]
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
