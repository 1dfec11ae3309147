//! Another agent's configuration on disk as codex's `externalAgentConfig/detect` finds it
//! (Claude's: `$HOME/.claude` and each repository named), item by item in codex's order —
//! settings, MCP servers, skills, commands, subagents, memory file — each reported only when
//! codex's counterpart lacks something (codex app-server `config/external_agent_config`,
//! read at openai/codex@0332a6dd; turn scenario 265 on every version). Hooks, enabled plugins,
//! recent sessions and Cursor's files are not modeled.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Why a detection has no answer of the fake's.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// codex's error text (an internal error).
    Error(String),
    /// Something the fake does not model was found.
    NotModeled,
}

/// Where the scan runs.
pub struct Roots<'a> {
    /// `$HOME`: Claude's home is `$HOME/.claude`, its MCP files are under `$HOME`.
    pub home: &'a Path,
    pub codex_home: &'a Path,
    /// The process's directory, a relative cwd's base.
    pub process_cwd: &'a Path,
}

/// The items, home first (`includeHome`), then each cwd's repository in the order given (no
/// repository twice removed).
pub fn detect(
    roots: &Roots,
    include_home: bool,
    cwds: &[String],
    cursor: bool,
) -> Result<Vec<Value>, Refusal> {
    if cursor {
        return Err(Refusal::NotModeled);
    }
    let mut items = Vec::new();
    if include_home {
        scope(roots, None, &mut items)?;
    }
    for cwd in cwds {
        if let Some(root) = repo_root(cwd, roots.process_cwd) {
            scope(roots, Some(&root), &mut items)?;
        }
    }
    Ok(items)
}

/// codex's `find_repo_root`: the nearest directory up from `cwd` (a file's parent) that has a
/// `.git` (a directory or a file), else `cwd` itself; an empty or absent one is skipped. The
/// path is kept as written (joined, not canonicalized).
fn repo_root(cwd: &str, process_cwd: &Path) -> Option<PathBuf> {
    if cwd.is_empty() {
        return None;
    }
    let mut dir = process_cwd.join(cwd);
    if !dir.exists() {
        return None;
    }
    if dir.is_file() {
        dir = dir.parent()?.to_path_buf();
    }
    let found = dir.ancestors().find(|a| a.join(".git").exists());
    Some(found.map_or(dir.clone(), Path::to_path_buf))
}

fn text(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// An item's `details`: every list present, the one of its kind filled.
fn details(kind: &str, names: &[String]) -> Value {
    let mut d = Map::new();
    for k in [
        "plugins",
        "skills",
        "sessions",
        "mcpServers",
        "hooks",
        "subagents",
        "commands",
    ] {
        let list: Vec<Value> = if k == kind {
            names.iter().map(|n| json!({"name": n})).collect()
        } else {
            Vec::new()
        };
        d.insert(k.to_string(), Value::Array(list));
    }
    Value::Object(d)
}

fn item(kind: &str, description: String, cwd: Option<&Path>, details: Value) -> Value {
    json!({"itemType": kind, "description": description, "cwd": cwd.map(shown),
           "details": details})
}

/// The settings codex reads (`settings.json` merged over by `settings.local.json`), or none.
fn settings(dir: &Path) -> Result<Option<Value>, Refusal> {
    let main = dir.join("settings.json");
    let local = dir.join("settings.local.json");
    let mut out: Option<Value> = None;
    if main.is_file() {
        let v: Value = serde_json::from_str(&text(&main).unwrap_or_default())
            .map_err(|e| Refusal::Error(e.to_string()))?;
        if !v.is_object() {
            return Err(Refusal::Error(
                "external agent settings root must be an object".into(),
            ));
        }
        out = Some(v);
    }
    // A local file that does not parse is left out.
    if let Some(Value::Object(l)) = text(&local).and_then(|t| serde_json::from_str(&t).ok()) {
        let mut base = out.unwrap_or_else(|| json!({}));
        merge(&mut base, &Value::Object(l));
        out = Some(base);
    }
    Ok(out)
}

fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The codex configuration an item would add to: its table, or the file's parse error.
fn target_config(path: &Path) -> Result<toml::Table, Refusal> {
    match text(path) {
        None => Ok(toml::Table::new()),
        Some(t) => t
            .parse::<toml::Table>()
            .map_err(|e| Refusal::Error(format!("invalid existing config.toml: {e}"))),
    }
}

fn scope(roots: &Roots, repo: Option<&Path>, items: &mut Vec<Value>) -> Result<(), Refusal> {
    let ext = roots.home.join(".claude");
    let src_dir = repo.map_or(ext.clone(), |r| r.join(".claude"));
    let codex_dir = repo.map_or(roots.codex_home.to_path_buf(), |r| r.join(".codex"));
    let config_path = codex_dir.join("config.toml");
    let skills_target = match repo {
        Some(r) => r.join(".agents").join("skills"),
        None => roots
            .codex_home
            .parent()
            .unwrap_or(roots.codex_home)
            .join(".agents")
            .join("skills"),
    };
    let settings = settings(&src_dir)?;
    let s = settings.clone().unwrap_or(Value::Null);
    for unmodeled in [
        "hooks",
        "enabledPlugins",
        "enabledMcpjsonServers",
        "disabledMcpjsonServers",
    ] {
        if s[unmodeled].as_object().is_some_and(|o| !o.is_empty())
            || s[unmodeled].as_array().is_some_and(|a| !a.is_empty())
        {
            return Err(Refusal::NotModeled);
        }
    }
    // 1. The settings codex has a key for: the environment and the sandbox.
    if settings.is_some() {
        let mut migrated = toml::Table::new();
        let set: toml::Table = s["env"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                let v = match v {
                    Value::String(x) => x.clone(),
                    Value::Number(_) | Value::Bool(_) => v.to_string(),
                    _ => return None,
                };
                Some((k.clone(), toml::Value::String(v)))
            })
            .collect();
        if !set.is_empty() {
            let mut policy = toml::Table::new();
            policy.insert("inherit".into(), toml::Value::String("core".into()));
            policy.insert("set".into(), toml::Value::Table(set));
            migrated.insert(
                "shell_environment_policy".into(),
                toml::Value::Table(policy),
            );
        }
        if s["sandbox"]["enabled"] == true {
            migrated.insert(
                "sandbox_mode".into(),
                toml::Value::String("workspace-write".into()),
            );
        }
        if !migrated.is_empty() && adds_a_key(&target_config(&config_path)?, &migrated) {
            let description = format!(
                "Migrate {} into {}",
                shown(&src_dir.join("settings.json")),
                shown(&config_path)
            );
            items.push(item("CONFIG", description, repo, Value::Null));
        }
    }
    // 2. MCP servers from the agent's MCP files, less those codex's config names.
    let src_root = repo.map_or(roots.home.to_path_buf(), Path::to_path_buf);
    let mut servers = std::collections::BTreeMap::new();
    mcp_servers(&src_root, &src_root, &mut servers)?;
    if let Some(r) = repo {
        let claude_json = roots.home.join(".claude.json");
        if let Some(t) = text(&claude_json) {
            let v: Value = serde_json::from_str(&t)
                .map_err(|e| Refusal::Error(format!("invalid MCP config: {e}")))?;
            add_servers(&v["projects"][shown(r)]["mcpServers"], &mut servers);
        }
    }
    if !servers.is_empty() {
        let config = target_config(&config_path)?;
        let known = config.get("mcp_servers").and_then(toml::Value::as_table);
        let names: Vec<String> = servers
            .into_keys()
            .filter(|n| !known.is_some_and(|k| k.contains_key(n)))
            .collect();
        if !names.is_empty() {
            let description = format!(
                "Migrate MCP servers from {} into {}",
                shown(&src_root),
                shown(&config_path)
            );
            items.push(item(
                "MCP_SERVER_CONFIG",
                description,
                repo,
                details("mcpServers", &names),
            ));
        }
    }
    // 4. Skill folders the target lacks.
    let skills_src = src_dir.join("skills");
    let names: Vec<String> = entries(&skills_src)
        .into_iter()
        .filter(|(_, p)| p.is_dir())
        .map(|(n, _)| n)
        .filter(|n| !skills_target.join(n).is_dir())
        .collect();
    let copies = Copies { repo, names };
    copies.push(items, "SKILLS", "skills", &skills_src, &skills_target);
    // 5. Commands, each a skill `source-command-<name>`.
    let commands = src_dir.join("commands");
    let names: Vec<String> = entries(&commands)
        .into_iter()
        .filter_map(|(n, p)| Some(n.strip_suffix(".md")?.to_string()).filter(|_| p.is_file()))
        .map(|stem| format!("source-command-{stem}"))
        .filter(|n| !skills_target.join(n).exists())
        .collect();
    let copies = Copies { repo, names };
    copies.push(items, "COMMANDS", "commands", &commands, &skills_target);
    // 6. Subagents: a file with a name and a description in its frontmatter.
    let agents = src_dir.join("agents");
    let agents_target = codex_dir.join("agents");
    let names: Vec<String> = entries(&agents)
        .into_iter()
        .filter_map(|(n, p)| {
            let stem = n.strip_suffix(".md")?;
            let front = frontmatter(&text(&p)?)?;
            front["description"].as_str()?;
            let name = front["name"].as_str()?.to_string();
            (!agents_target.join(format!("{stem}.toml")).exists()).then_some(name)
        })
        .collect();
    let copies = Copies { repo, names };
    copies.push(items, "SUBAGENTS", "subagents", &agents, &agents_target);
    // 7. The agent's memory file, where codex's is missing or blank.
    let sources = match repo {
        Some(r) => vec![r.join("CLAUDE.md"), r.join(".claude").join("CLAUDE.md")],
        None => vec![ext.join("CLAUDE.md")],
    };
    let source = sources
        .into_iter()
        .find(|p| p.is_file() && text(p).is_some_and(|t| !t.trim().is_empty()));
    let target = repo.map_or(roots.codex_home.join("AGENTS.md"), |r| r.join("AGENTS.md"));
    let open = !target.exists()
        || (target.is_file() && text(&target).is_some_and(|t| t.trim().is_empty()));
    if let (Some(source), true) = (source, open) {
        let description = format!("Migrate {} to {}", shown(&source), shown(&target));
        items.push(item("AGENTS_MD", description, repo, Value::Null));
    }
    // 9. Recent sessions (home only): not modeled.
    if repo.is_none() && !entries(&ext.join("projects")).is_empty() {
        return Err(Refusal::NotModeled);
    }
    Ok(())
}

/// What one kind of folder or file would be copied: the names its target lacks.
struct Copies<'a> {
    repo: Option<&'a Path>,
    names: Vec<String>,
}

impl Copies<'_> {
    /// The item (`Migrate <kind> from <source> to <target>`), when anything is missing.
    fn push(&self, items: &mut Vec<Value>, item_type: &str, kind: &str, src: &Path, to: &Path) {
        if self.names.is_empty() {
            return;
        }
        let description = format!("Migrate {kind} from {} to {}", shown(src), shown(to));
        items.push(item(
            item_type,
            description,
            self.repo,
            details(kind, &self.names),
        ));
    }
}

/// A directory's entries by name, sorted.
fn entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    out
}

fn frontmatter(text: &str) -> Option<Value> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    serde_yaml::from_str(&rest[..end]).ok()
}

/// The servers of `root/.mcp.json` and `root/.claude.json` (its own and its project's).
fn mcp_servers(
    root: &Path,
    project: &Path,
    out: &mut std::collections::BTreeMap<String, Value>,
) -> Result<(), Refusal> {
    for file in [".mcp.json", ".claude.json"] {
        let Some(t) = text(&root.join(file)) else {
            continue;
        };
        let v: Value = serde_json::from_str(&t)
            .map_err(|e| Refusal::Error(format!("invalid MCP config: {e}")))?;
        add_servers(&v["mcpServers"], out);
        if file == ".claude.json" {
            add_servers(&v["projects"][shown(project)]["mcpServers"], out);
        }
    }
    Ok(())
}

/// The servers codex can migrate: stdio commands and HTTP urls, none naming an environment
/// placeholder.
fn add_servers(servers: &Value, out: &mut std::collections::BTreeMap<String, Value>) {
    for (name, s) in servers.as_object().into_iter().flatten() {
        let kind = s["type"].as_str();
        let placeholder = |v: &Value| v.as_str().is_some_and(|x| x.contains("${"));
        let fine = if s["command"].is_string() {
            matches!(kind, None | Some("stdio"))
                && !placeholder(&s["command"])
                && !s["args"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(placeholder))
        } else if s["url"].is_string() {
            matches!(kind, None | Some("http" | "streamable_http")) && !placeholder(&s["url"])
        } else {
            false
        };
        if fine {
            out.insert(name.clone(), s.clone());
        }
    }
}

/// Whether merging `migrated` into `existing` (missing keys only, tables recursed) adds one.
fn adds_a_key(existing: &toml::Table, migrated: &toml::Table) -> bool {
    migrated.iter().any(|(k, v)| match (existing.get(k), v) {
        (None, _) => true,
        (Some(toml::Value::Table(e)), toml::Value::Table(m)) => adds_a_key(e, m),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_is_the_nearest_directory_with_git_as_written() {
        let dir = std::env::temp_dir().join(format!("cw-ext-{}", std::process::id()));
        let sub = dir.join("repo/sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(dir.join("repo/.git"), "gitdir: x").unwrap();
        std::fs::write(sub.join("f.txt"), "x").unwrap();
        let root = |c: &str| repo_root(c, &dir).map(|p| p.display().to_string());
        let want = dir.join("repo").display().to_string();
        assert_eq!(root("repo/sub/f.txt"), Some(want.clone()));
        assert_eq!(root("repo/sub"), Some(want));
        assert_eq!(root(""), None);
        assert_eq!(root("missing"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_what_codex_lacks_is_added() {
        let t = |s: &str| s.parse::<toml::Table>().unwrap();
        let m = t("sandbox_mode = \"workspace-write\"\n[shell_environment_policy]\ninherit = \"core\"\nset = { A = \"1\" }\n");
        assert!(adds_a_key(&t(""), &m));
        assert!(adds_a_key(
            &t("[shell_environment_policy]\ninherit = \"all\"\n"),
            &m
        ));
        let all = t("sandbox_mode = \"read-only\"\n[shell_environment_policy]\ninherit = \"x\"\nset = { A = \"2\" }\n");
        assert!(!adds_a_key(&all, &m));
    }
}
