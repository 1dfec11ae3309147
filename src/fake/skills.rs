//! Skills on disk as codex finds them (`codex-rs/core-skills/src/loader.rs`): the roots of a
//! cwd, each walked breadth first for `SKILL.md` files, each file's YAML frontmatter read with
//! the crate codex reads it with (so a refusal carries codex's words), the optional
//! `agents/openai.yaml` beside it; then the skills a user's `[[skills.config]]` turns off
//! (`skills/config/write`, codex's `ConfigEdit::SetSkillConfig*`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashSet, VecDeque};
use std::path::{Component, Path, PathBuf};

/// The scope of a skill found on disk (the bundled `system` ones are the caller's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Repo,
    User,
    Admin,
}

impl Scope {
    /// codex's rank of a scope by name: a lower rank lists first.
    fn rank(name: &str) -> u8 {
        match name {
            "repo" => 0,
            "user" => 1,
            "system" => 2,
            _ => 3,
        }
    }
}

/// Where skills are looked for, in codex's order.
pub struct Root {
    pub path: PathBuf,
    pub scope: Scope,
}

// codex's limits (loader.rs).
const MAX_NAME_LEN: usize = 64;
const MAX_DESCRIPTION_LEN: usize = 1024;
const MAX_SCAN_DEPTH: usize = 6;
const MAX_DIRS_PER_ROOT: usize = 2000;

#[derive(Deserialize)]
struct Frontmatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    metadata: FrontmatterMetadata,
}

#[derive(Default, Deserialize)]
struct FrontmatterMetadata {
    #[serde(default, rename = "short-description")]
    short_description: Option<String>,
}

#[derive(Default, Deserialize)]
struct MetadataFile {
    #[serde(default)]
    interface: Option<InterfaceFile>,
    #[serde(default)]
    dependencies: Option<DependenciesFile>,
}

#[derive(Default, Deserialize)]
struct InterfaceFile {
    display_name: Option<String>,
    short_description: Option<String>,
    icon_small: Option<PathBuf>,
    icon_large: Option<PathBuf>,
    brand_color: Option<String>,
    default_prompt: Option<String>,
}

#[derive(Default, Deserialize)]
struct DependenciesFile {
    #[serde(default)]
    tools: Vec<ToolFile>,
}

#[derive(Default, Deserialize)]
struct ToolFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    value: Option<String>,
    description: Option<String>,
    transport: Option<String>,
    command: Option<String>,
    url: Option<String>,
}

/// A skill as `skills/list` shows it (codex's `SkillMetadata`, its key order and omissions).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<Interface>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Dependencies>,
    pub path: String,
    pub scope: Scope,
    pub enabled: bool,
    pub plugin_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    display_name: Option<String>,
    short_description: Option<String>,
    icon_small: Option<String>,
    icon_large: Option<String>,
    icon_small_url: Option<String>,
    icon_large_url: Option<String>,
    brand_color: Option<String>,
    default_prompt: Option<String>,
}

#[derive(Serialize)]
pub struct Dependencies {
    tools: Vec<Tool>,
}

#[derive(Serialize)]
pub struct Tool {
    #[serde(rename = "type")]
    kind: String,
    value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transport: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
}

/// A `SKILL.md` codex refused (`SkillErrorInfo`).
#[derive(Serialize)]
pub struct SkillError {
    pub path: String,
    pub message: String,
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// codex's `sanitize_single_line`: whitespace runs become one space, ends trimmed.
fn single_line(raw: &str) -> String {
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines between a first `---` line and the next one (none when unclosed or empty).
fn frontmatter(contents: &str) -> Option<String> {
    let mut lines = contents.lines();
    if lines.next()?.trim() != "---" {
        return None;
    }
    let mut body = Vec::new();
    for line in lines {
        if line.trim() == "---" {
            return (!body.is_empty()).then(|| body.join("\n"));
        }
        body.push(line);
    }
    None
}

/// codex's line-wise repair of a frontmatter strict YAML refused: on each `key: value` line
/// (block scalars and their lines, quoted values and comments left alone), a plain value that
/// holds a `: ` or starts a flow or reserved token YAML cannot read (`[`, `{`, `@`, `` ` ``)
/// is single-quoted. None when no line changed.
fn quote_prose(front: &str) -> Option<String> {
    let mut changed = false;
    let mut block: Option<usize> = None;
    let mut out: Vec<String> = Vec::new();
    for line in front.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(at) = block {
            if line.trim().is_empty() || indent > at {
                out.push(line.to_string());
                continue;
            }
            block = None;
        }
        let Some((key, rest)) = line.split_once(':') else {
            out.push(line.to_string());
            continue;
        };
        if key.trim().is_empty() || rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
            out.push(line.to_string());
            continue;
        }
        let value = rest.trim_start();
        let gap = &rest[..rest.len() - value.len()];
        // A comment starts at a `#` that opens the value or follows whitespace.
        let cut = value
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || value[..i].ends_with(char::is_whitespace)))
            .map_or(value.len(), |(i, _)| value[..i].trim_end().len());
        let (scalar, comment) = (value[..cut].trim_end(), &value[cut..]);
        let Some(first) = scalar.chars().next() else {
            out.push(line.to_string());
            continue;
        };
        if first == '|' || first == '>' {
            block = Some(indent);
            out.push(line.to_string());
            continue;
        }
        let colon = scalar
            .char_indices()
            .any(|(i, c)| c == ':' && scalar[i + 1..].starts_with(char::is_whitespace));
        let flow =
            "[{@`".contains(first) && serde_yaml::from_str::<serde_yaml::Value>(scalar).is_err();
        if first == '\'' || first == '"' || !(colon || flow) {
            out.push(line.to_string());
            continue;
        }
        out.push(format!(
            "{key}:{gap}'{}'{comment}",
            scalar.replace('\'', "''")
        ));
        changed = true;
    }
    changed.then(|| out.join("\n"))
}

fn check_len(value: &str, max: usize, field: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("missing field `{field}`"));
    }
    if value.chars().count() > max {
        return Err(format!(
            "invalid {field}: exceeds maximum length of {max} characters"
        ));
    }
    Ok(())
}

/// An optional text of `agents/openai.yaml`: one line, dropped when empty or too long.
fn optional(value: Option<String>, max: usize) -> Option<String> {
    let v = single_line(&value?);
    (!v.is_empty() && v.chars().count() <= max).then_some(v)
}

/// An icon: a relative path under the skill's `assets/` (no `..` outside a plugin).
fn icon(skill_dir: &Path, path: Option<PathBuf>) -> Option<String> {
    let path = path?;
    if path.as_os_str().is_empty() || path.is_absolute() {
        return None;
    }
    let mut normal = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(x) => normal.push(x),
            _ => return None,
        }
    }
    (normal.components().next() == Some(Component::Normal("assets".as_ref())))
        .then(|| path_str(&skill_dir.join(normal)))
}

fn color(value: Option<String>) -> Option<String> {
    let v = value?.trim().to_string();
    let hex = v.len() == 7 && v.starts_with('#') && v[1..].chars().all(|c| c.is_ascii_hexdigit());
    hex.then_some(v)
}

/// `agents/openai.yaml` beside a skill: read fail-open (anything wrong in it is ignored).
fn metadata(skill_dir: &Path) -> (Option<Interface>, Option<Dependencies>) {
    let file = skill_dir.join("agents").join("openai.yaml");
    let Some(parsed) = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_yaml::from_str::<MetadataFile>(&t).ok())
    else {
        return (None, None);
    };
    let interface = parsed.interface.and_then(|i| {
        let out = Interface {
            display_name: optional(i.display_name, MAX_NAME_LEN),
            short_description: optional(i.short_description, MAX_DESCRIPTION_LEN),
            icon_small: icon(skill_dir, i.icon_small),
            icon_large: icon(skill_dir, i.icon_large),
            icon_small_url: None,
            icon_large_url: None,
            brand_color: color(i.brand_color),
            default_prompt: optional(i.default_prompt, MAX_DESCRIPTION_LEN),
        };
        let any = out.display_name.is_some()
            || out.short_description.is_some()
            || out.icon_small.is_some()
            || out.icon_large.is_some()
            || out.brand_color.is_some()
            || out.default_prompt.is_some();
        any.then_some(out)
    });
    let tools: Vec<Tool> = parsed
        .dependencies
        .map(|d| d.tools)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| {
            Some(Tool {
                kind: optional(Some(t.kind?), MAX_NAME_LEN)?,
                value: optional(Some(t.value?), MAX_DESCRIPTION_LEN)?,
                description: optional(t.description, MAX_DESCRIPTION_LEN),
                transport: optional(t.transport, MAX_NAME_LEN),
                command: optional(t.command, MAX_DESCRIPTION_LEN),
                url: optional(t.url, MAX_DESCRIPTION_LEN),
            })
        })
        .collect();
    let deps = (!tools.is_empty()).then_some(Dependencies { tools });
    (interface, deps)
}

/// One `SKILL.md` read as codex's `parse_skill_file` reads it.
fn parse(file: &Path, scope: Scope) -> Result<Skill, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("failed to read file: {e}"))?;
    let front = frontmatter(&text).ok_or("missing YAML frontmatter delimited by ---")?;
    // Strict YAML first; when it fails, once more with the prose values quoted, and a
    // failure then reports the first error (codex's repair of third-party frontmatter).
    let parsed: Frontmatter = serde_yaml::from_str(&front)
        .or_else(|first| {
            quote_prose(&front)
                .and_then(|again| serde_yaml::from_str(&again).ok())
                .ok_or(first)
        })
        .map_err(|e| format!("invalid YAML: {e}"))?;
    let name = parsed
        .name
        .as_deref()
        .map(single_line)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| {
            file.parent()
                .and_then(Path::file_name)
                .map(|n| single_line(&n.to_string_lossy()))
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "skill".into())
        });
    let description = parsed
        .description
        .as_deref()
        .map(single_line)
        .unwrap_or_default();
    let short = parsed
        .metadata
        .short_description
        .as_deref()
        .map(single_line)
        .filter(|s| !s.is_empty());
    let (interface, dependencies) = metadata(file.parent().unwrap_or(file));
    check_len(&name, MAX_NAME_LEN, "name")?;
    // The versions served here bound the name only: a 20,000-character description or short
    // description is listed whole (probed on 0.163.0 and 0.171.0; newer codex bounds them).
    check_len(&description, usize::MAX, "description")?;
    Ok(Skill {
        name,
        description,
        short_description: short,
        interface,
        dependencies,
        path: path_str(&canonical(file)),
        scope,
        enabled: true,
        plugin_id: None,
    })
}

/// A root walked breadth first as codex walks it: directory entries by name (a root's
/// refusals are listed in that order on every version), hidden ones skipped, symlinks
/// followed, at most six levels down and 2,000 directories.
fn walk(root: &Root, skills: &mut Vec<Skill>, errors: &mut Vec<SkillError>) {
    let start = canonical(&root.path);
    if !start.is_dir() {
        return;
    }
    let mut seen: HashSet<PathBuf> = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([(start, 0usize)]);
    while let Some((dir, depth)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = dir.join(&name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if depth < MAX_SCAN_DEPTH && seen.len() < MAX_DIRS_PER_ROOT {
                    let resolved = canonical(&path);
                    if seen.insert(resolved.clone()) {
                        queue.push_back((resolved, depth + 1));
                    }
                }
            } else if meta.is_file() && name == "SKILL.md" {
                match parse(&path, root.scope) {
                    Ok(skill) => skills.push(skill),
                    Err(message) => errors.push(SkillError {
                        path: path_str(&path),
                        message,
                    }),
                }
            }
        }
    }
}

/// The directories from the project root (the nearest ancestor holding one of `markers`; the
/// cwd when none or no markers) down to the cwd.
fn project_dirs(cwd: &Path, markers: &[String]) -> Vec<PathBuf> {
    let root = if markers.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.ancestors()
            .find(|a| markers.iter().any(|m| a.join(m).exists()))
            .unwrap_or(cwd)
            .to_path_buf()
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for a in cwd.ancestors() {
        dirs.push(a.to_path_buf());
        if a == root {
            break;
        }
    }
    dirs.reverse();
    dirs
}

/// A cwd's skill roots, codex's `skill_roots`: the user layer's (`$CODEX_HOME/skills`,
/// `$HOME/.agents/skills`; the bundled system skills are the caller's), the system layer's
/// (`/etc/codex/skills`, admin), the client's extra roots, then each `.agents/skills` from the
/// project root down to the cwd. Duplicates dropped.
pub fn roots(
    codex_home: &Path,
    home: Option<&Path>,
    extra: &[PathBuf],
    cwd: &Path,
    markers: &[String],
) -> Vec<Root> {
    let mut out = vec![Root {
        path: codex_home.join("skills"),
        scope: Scope::User,
    }];
    if let Some(h) = home {
        out.push(Root {
            path: h.join(".agents").join("skills"),
            scope: Scope::User,
        });
    }
    out.push(Root {
        path: PathBuf::from("/etc/codex/skills"),
        scope: Scope::Admin,
    });
    out.extend(extra.iter().map(|p| Root {
        path: p.clone(),
        scope: Scope::User,
    }));
    out.extend(
        project_dirs(cwd, markers)
            .into_iter()
            .map(|d| d.join(".agents").join("skills"))
            .filter(|p| p.is_dir())
            .map(|path| Root {
                path,
                scope: Scope::Repo,
            }),
    );
    let mut seen = HashSet::new();
    out.retain(|r| seen.insert(r.path.clone()));
    out
}

/// A project's own config layers (`.codex/config.toml` between its root and the cwd) add
/// skill roots codex reads only for trusted projects: not modeled.
pub fn has_project_layer(cwd: &Path, markers: &[String]) -> bool {
    project_dirs(cwd, markers)
        .iter()
        .any(|d| d.join(".codex").join("config.toml").is_file())
}

/// Every skill and refusal under the roots, each skill found once (by its resolved path).
pub fn discover(roots: &[Root]) -> (Vec<Skill>, Vec<SkillError>) {
    let (mut skills, mut errors) = (Vec::new(), Vec::new());
    for r in roots {
        walk(r, &mut skills, &mut errors);
    }
    let mut seen = HashSet::new();
    skills.retain(|s| seen.insert(s.path.clone()));
    (skills, errors)
}

/// codex's listing order: scope rank, then name, then path.
pub fn sort(skills: &mut [Value]) {
    skills.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                Scope::rank(v["scope"].as_str().unwrap_or_default()),
                v["name"].as_str().unwrap_or_default().to_string(),
                PathBuf::from(v["path"].as_str().unwrap_or_default()),
            )
        };
        key(a).cmp(&key(b))
    });
}

/// A `[[skills.config]]` selector: one of `path` (resolved) or `name` (trimmed, not empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Path(String),
    Name(String),
}

impl Selector {
    fn of_entry(entry: &Value) -> Option<Selector> {
        let path = entry["path"]
            .as_str()
            .map(|p| Selector::Path(path_str(&canonical(Path::new(p)))));
        let name = entry["name"]
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| Selector::Name(n.to_string()));
        match (path, name) {
            (Some(s), None) | (None, Some(s)) => Some(s),
            _ => None,
        }
    }

    pub fn of_path(p: &str) -> Selector {
        Selector::Path(path_str(&canonical(Path::new(p))))
    }

    fn matches(&self, skill: &Value) -> bool {
        match self {
            Selector::Path(p) => skill["path"] == p.as_str(),
            Selector::Name(n) => skill["name"] == n.as_str(),
        }
    }
}

/// Each skill's `enabled` from the user's `[[skills.config]]` entries: the last entry that
/// names it (by path or by name) decides.
pub fn apply_enabled(skills: &mut [Value], user: &Map<String, Value>) {
    let entries = user
        .get("skills")
        .and_then(|s| s.get("config"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for skill in skills.iter_mut() {
        let decided = entries.iter().rev().find_map(|e| {
            let sel = Selector::of_entry(e)?;
            sel.matches(skill).then(|| e["enabled"].as_bool())?
        });
        if let Some(enabled) = decided {
            skill["enabled"] = Value::Bool(enabled);
        }
    }
}

/// codex's `set_skill_config` on the user table: turning a skill off adds (or rewrites) its
/// entry with `enabled = false`; turning it on removes its entry, and the emptied tables.
pub fn set_enabled(user: &mut Map<String, Value>, selector: &Selector, enabled: bool) {
    let has_entries = user
        .get("skills")
        .and_then(|s| s.get("config"))
        .is_some_and(Value::is_array);
    if enabled && !has_entries {
        return;
    }
    let skills = user
        .entry("skills")
        .or_insert_with(|| Value::Object(Map::new()));
    if !skills.is_object() {
        *skills = Value::Object(Map::new());
    }
    let table = skills.as_object_mut().expect("made a table above");
    let config = table
        .entry("config")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !config.is_array() {
        *config = Value::Array(Vec::new());
    }
    let list = config.as_array_mut().expect("made an array above");
    let at = list
        .iter()
        .position(|e| Selector::of_entry(e).as_ref() == Some(selector));
    let entry = match selector {
        Selector::Path(p) => serde_json::json!({"path": p, "enabled": false}),
        Selector::Name(n) => serde_json::json!({"name": n, "enabled": false}),
    };
    match (enabled, at) {
        (true, Some(i)) => {
            list.remove(i);
            if list.is_empty() {
                table.remove("config");
                if table.is_empty() {
                    user.remove("skills");
                }
            }
        }
        (true, None) => {}
        (false, Some(i)) => list[i] = entry,
        (false, None) => list.push(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill_file(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let f = dir.join(rel).join("SKILL.md");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, text).unwrap();
        f
    }

    /// The refusals and fallbacks codex's loader has (each message as 0.171.0 wrote it).
    #[test]
    fn a_skill_file_is_read_as_codex_reads_it() {
        let d = std::env::temp_dir().join(format!("cw-skills-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let cases = [
            ("noname", "---\ndescription: d\n---\n", Ok("noname")),
            ("prose", "---\nname: [x\ndescription: a: b {\"c\": 1}\n---\n", Ok("[x")),
            (
                "alias",
                "---\nname: x\ndescription: *nope\n---\n",
                Err("invalid YAML: unknown anchor at line 2 column 14"),
            ),
            (
                "nested",
                "---\nname: n\ndescription: first\n  more: y\n---\n",
                Err("invalid YAML: mapping values are not allowed in this context at line 3 column 7"),
            ),
            (
                "ws",
                "---\nname: \"  a   b \"\ndescription: x\n---\n",
                Ok("a b"),
            ),
            (
                "nodesc",
                "---\nname: x\n---\n",
                Err("missing field `description`"),
            ),
            (
                "empty",
                "---\n---\n",
                Err("missing YAML frontmatter delimited by ---"),
            ),
            (
                "open",
                "---\nname: x\n",
                Err("missing YAML frontmatter delimited by ---"),
            ),
            (
                "long",
                &format!("---\nname: {}\ndescription: x\n---\n", "n".repeat(65)),
                Err("invalid name: exceeds maximum length of 64 characters"),
            ),
        ];
        for (dir, text, want) in cases {
            let f = skill_file(&d, dir, text);
            let got = parse(&f, Scope::User).map(|s| s.name);
            assert_eq!(got.as_deref().map_err(String::as_str), want, "{dir}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_last_entry_naming_a_skill_decides_and_turning_on_removes_the_entry() {
        let mut user = Map::new();
        let by_name = Selector::Name("dup".into());
        set_enabled(&mut user, &by_name, false);
        set_enabled(&mut user, &Selector::Path("/s/dup1/SKILL.md".into()), false);
        let mut skills = vec![
            json!({"name": "dup", "path": "/s/dup1/SKILL.md", "enabled": true}),
            json!({"name": "other", "path": "/s/o/SKILL.md", "enabled": true}),
        ];
        apply_enabled(&mut skills, &user);
        assert_eq!(skills[0]["enabled"], false);
        assert_eq!(skills[1]["enabled"], true);
        set_enabled(&mut user, &by_name, true);
        set_enabled(&mut user, &Selector::Path("/s/dup1/SKILL.md".into()), true);
        assert!(user.is_empty(), "{user:?}");
    }
}
