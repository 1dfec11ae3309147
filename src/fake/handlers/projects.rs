//! Projects as codex keeps them (probed on 0.171.0 and 0.169.0; kept in the state dir's
//! `projects.json`, as codex keeps them in its state database across restarts): created or
//! imported once per idempotency key (a replay gives the original back, silently; the key of a
//! deleted project stays refused), listed by position, updated, moved and deleted with
//! `project/changed` before the answer; an import files its threads (`thread/project/updated`
//! each), a delete takes its threads out. Shown by `tests/corpus/turns/63_projects`.

use super::rules::invalid;
use super::view::H;
use crate::fake::defaults;
use crate::fake::state::{lock, now_secs};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

#[derive(Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Project {
    id: String,
    name: String,
    roots: Vec<Root>,
    metadata: Map<String, Value>,
    position: i64,
    created_at: i64,
    updated_at: i64,
    recency_at: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, PartialEq)]
struct Root {
    path: String,
}

#[derive(Serialize, Deserialize, Default)]
struct Projects {
    projects: Vec<Project>,
    /// Idempotency key → project id (deleted ones included).
    keys: Map<String, Value>,
}

impl Projects {
    /// Where a project is, or codex's refusal of an unknown id.
    fn at(&self, pid: &str) -> Result<usize, String> {
        self.projects
            .iter()
            .position(|x| x.id == pid)
            .ok_or_else(|| not_found(pid))
    }
}

fn file_lock() -> &'static Mutex<()> {
    static L: OnceLock<Mutex<()>> = OnceLock::new();
    L.get_or_init(Default::default)
}

/// A path with `.` and `..` resolved as text (codex's lexical normalization).
fn normal(path: &str) -> String {
    let mut out = PathBuf::new();
    for c in Path::new(path).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out.to_string_lossy().into_owned()
}

/// The roots given, normalized; a root twice is refused.
fn roots(p: &Value) -> Result<Vec<Root>, String> {
    let mut out: Vec<Root> = Vec::new();
    for r in p["roots"].as_array().into_iter().flatten() {
        let path = normal(r["path"].as_str().unwrap_or_default());
        if out.iter().any(|x| x.path == path) {
            return Err(invalid(&format!("duplicate project root: {path}")));
        }
        out.push(Root { path });
    }
    Ok(out)
}

fn not_found(id: &str) -> String {
    invalid(&format!("project not found: {id}"))
}

impl H<'_> {
    fn projects_file(&self) -> PathBuf {
        self.fake.dir.join("projects.json")
    }

    fn projects(&self) -> Projects {
        std::fs::read(self.projects_file())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn save_projects(&self, all: &Projects) {
        if let Ok(text) = serde_json::to_vec(all) {
            let _ = std::fs::write(self.projects_file(), text);
        }
    }

    /// A project as a method's result shows it (the version's keys only: `position` is gone
    /// from 0.171.0's).
    fn project_result(&self, method: &str, p: &Project) -> Value {
        let p = self.with_recency(p);
        defaults::shaped(self.fake.protocol, method, json!({"project": p}))
    }

    /// A project as it is shown: its recency the latest update of the threads it holds now, none
    /// once they moved to another project (fidelity s34340001_0074 on 0.169.0: a thread
    /// imported again elsewhere leaves the first project's `recencyAt` null).
    fn with_recency(&self, p: &Project) -> Project {
        let store = self.fake.store.load();
        let recency = store["threads"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, t)| t["projectId"] == p.id.as_str())
            .filter_map(|(_, t)| t["updatedAt"].as_i64())
            .max();
        Project {
            recency_at: recency,
            ..p.clone()
        }
    }

    fn project_changed(&self, id: &str, change: &str) {
        self.notify(
            "project/changed",
            json!({"projectId": id, "changeType": change}),
        );
    }

    /// `project/create` and `project/import`: the name, the key, the roots, then the key's
    /// history; an import's threads must be stored ones (not ephemeral).
    pub(super) fn project_create(&self, id: &Value, method: &str, p: &Value) -> Result<(), String> {
        let name = p["name"].as_str().unwrap_or_default().trim().to_string();
        let key = p["idempotencyKey"].as_str().unwrap_or_default();
        // A creation checks its key (trimmed) first (fidelity s9090001_0268; probed on
        // 0.171.0); an import its name.
        if method == "project/create" && key.trim().is_empty() {
            return Err(invalid("idempotencyKey must not be empty"));
        }
        if name.is_empty() {
            return Err(invalid("project name must not be empty"));
        }
        if key.is_empty() {
            return Err(invalid("idempotencyKey must not be empty"));
        }
        let roots = roots(p)?;
        let _guard = lock(file_lock());
        let mut all = self.projects();
        if let Some(known) = all.keys.get(key).and_then(Value::as_str) {
            return match all.projects.iter().find(|x| x.id == known) {
                Some(x) => {
                    self.result(id, self.project_result(method, x));
                    Ok(())
                }
                None => Err(invalid(&format!(
                    "idempotency key refers to deleted project: {key}"
                ))),
            };
        }
        let threads = super::view::strs(&p["threads"]);
        let store = self.fake.store.load();
        let mut recency: Option<i64> = None;
        for t in &threads {
            let info = &store["threads"][t];
            // codex's thread store holds neither a thread with no persisted change nor an
            // ephemeral one, turns or not (fidelity s13130001_0192 on 0.171.0).
            let stored = info.is_object()
                && info["ephemeral"] != true
                && crate::fake::threads::materialized(info);
            if !stored {
                return Err(invalid(&format!("thread not found: {t}")));
            }
            recency = recency.max(info["updatedAt"].as_i64());
        }
        let now = now_secs();
        let project = Project {
            id: uuid::Uuid::now_v7().to_string(),
            name,
            roots,
            metadata: p["metadata"].as_object().cloned().unwrap_or_default(),
            position: all
                .projects
                .iter()
                .map(|x| x.position + 1)
                .max()
                .unwrap_or(0),
            created_at: now,
            updated_at: now,
            recency_at: recency,
        };
        all.keys.insert(key.into(), json!(project.id));
        all.projects.push(project.clone());
        self.save_projects(&all);
        self.project_changed(&project.id, "created");
        for t in &threads {
            self.fake
                .store
                .update(|d| d["threads"][t]["projectId"] = json!(project.id));
            self.notify(
                "thread/project/updated",
                json!({"threadId": t, "projectId": project.id}),
            );
        }
        self.result(id, self.project_result(method, &project));
        Ok(())
    }

    pub(super) fn project_read(&self, id: &Value, p: &Value) -> Result<(), String> {
        let pid = p["projectId"].as_str().unwrap_or_default();
        let all = self.projects();
        let x = &all.projects[all.at(pid)?];
        self.result(id, self.project_result("project/read", x));
        Ok(())
    }

    /// `project/list` as codex's state store pages it (`list_projects`): by position, or by
    /// recency with projects of no recency last, ascending or descending, ties by id; after a
    /// cursor of the sort it was given for (`parse_project_cursor`: the legacy `<position>|<id>`
    /// for position ascending, `v1|<key>|<direction>|<value>|<id>` otherwise), `limit` a page
    /// (one at least), the next cursor the page's last (fidelity s40400001_0111 on 0.169.0;
    /// turn scenario 231 on every version).
    pub(super) fn project_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        if p["sortKey"].is_null() && !p["sortDirection"].is_null() {
            return Err(invalid("sortDirection requires sortKey"));
        }
        let by_recency = p["sortKey"] == "recencyAt";
        // By recency, newest first unless asked (turn scenario 231: an ascending cursor is
        // refused when no direction is given).
        let desc = match p["sortDirection"].as_str() {
            Some(d) => d == "desc",
            None => by_recency,
        };
        let anchor = match p["cursor"].as_str() {
            Some(c) => Some(project_cursor_anchor(c, by_recency, desc).ok_or_else(|| {
                invalid("invalid project cursor: malformed or mismatched sort anchor")
            })?),
            None => None,
        };
        let mut all: Vec<(Option<i64>, Project)> = self
            .projects()
            .projects
            .iter()
            .map(|x| (self.recency_ms(&x.id), x.clone()))
            .collect();
        // The sort's value (none: a project of no recency, listed last either way).
        let value = |(ms, x): &(Option<i64>, Project)| {
            if by_recency {
                *ms
            } else {
                Some(x.position)
            }
        };
        let order = |a: &(Option<i64>, Project), b: &(Option<i64>, Project)| {
            let (va, vb) = (value(a), value(b));
            let by_value = match (va, vb) {
                (Some(x), Some(y)) => x.cmp(&y),
                (None, None) => std::cmp::Ordering::Equal,
                _ => return va.is_none().cmp(&vb.is_none()),
            };
            let o = by_value.then_with(|| a.1.id.cmp(&b.1.id));
            if desc {
                o.reverse()
            } else {
                o
            }
        };
        all.sort_by(order);
        if let Some((at, after_id)) = &anchor {
            let past = |v: Option<i64>, pid: &str| {
                let beyond = |o: std::cmp::Ordering| {
                    if desc {
                        o.is_lt()
                    } else {
                        o.is_gt()
                    }
                };
                match (at, v) {
                    (Some(a), Some(v)) => {
                        beyond(v.cmp(a)) || (v == *a && beyond(pid.cmp(after_id.as_str())))
                    }
                    (Some(_), None) => true,
                    (None, None) => beyond(pid.cmp(after_id.as_str())),
                    (None, Some(_)) => false,
                }
            };
            all.retain(|e| past(value(e), &e.1.id));
        }
        let cursor = |e: &(Option<i64>, Project)| {
            if !by_recency && !desc {
                return format!("{}|{}", e.1.position, e.1.id);
            }
            let key = if by_recency { "recencyAt" } else { "position" };
            let dir = if desc { "desc" } else { "asc" };
            let v = value(e).map_or_else(|| "null".to_string(), |v| v.to_string());
            format!("v1|{key}|{dir}|{v}|{}", e.1.id)
        };
        let (page, next) = super::sections::keyset_page(&all, p, cursor);
        let page: Vec<Project> = page.iter().map(|x| self.with_recency(&x.1)).collect();
        let v = json!({"data": page, "nextCursor": next});
        self.result(id, defaults::shaped(self.fake.protocol, "project/list", v));
        Ok(())
    }

    /// A project's recency in milliseconds: the latest update of the threads it holds.
    fn recency_ms(&self, project: &str) -> Option<i64> {
        let store = self.fake.store.load();
        store["threads"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, t)| t["projectId"] == project)
            .filter_map(|(_, t)| {
                t["updatedAtMs"]
                    .as_i64()
                    .or_else(|| t["updatedAt"].as_i64().map(|s| s * 1000))
            })
            .max()
    }

    /// What is given replaces; `project/changed` only when something changed.
    pub(super) fn project_update(&self, id: &Value, p: &Value) -> Result<(), String> {
        let pid = p["projectId"].as_str().unwrap_or_default();
        let _guard = lock(file_lock());
        let mut all = self.projects();
        let at = all.at(pid)?;
        let mut x = all.projects[at].clone();
        if let Some(n) = p["name"].as_str() {
            let n = n.trim();
            if n.is_empty() {
                return Err(invalid("project name must not be empty"));
            }
            x.name = n.into();
        }
        if p["roots"].is_array() {
            x.roots = roots(p)?;
        }
        if let Some(m) = p["metadata"].as_object() {
            x.metadata = m.clone();
        }
        if x != all.projects[at] {
            x.updated_at = now_secs();
            all.projects[at] = x.clone();
            self.save_projects(&all);
            self.project_changed(pid, "updated");
        }
        self.result(id, self.project_result("project/update", &x));
        Ok(())
    }

    /// Before another project (which must exist and not be itself), or last.
    pub(super) fn project_move(&self, id: &Value, p: &Value) -> Result<(), String> {
        let pid = p["projectId"].as_str().unwrap_or_default();
        let _guard = lock(file_lock());
        let mut all = self.projects();
        all.projects.sort_by_key(|x| x.position);
        let at = all.at(pid)?;
        let before = p["beforeProjectId"].as_str();
        if let Some(b) = before {
            if !all.projects.iter().any(|x| x.id == b) {
                return Err(invalid(&format!("before project not found: {b}")));
            }
            if b == pid {
                return Err(invalid(&format!(
                    "project {pid} cannot be moved before itself"
                )));
            }
        }
        let mut x = all.projects.remove(at);
        let to = before
            .and_then(|b| all.projects.iter().position(|y| y.id == b))
            .unwrap_or(all.projects.len());
        // A move that leaves the order as it was changes nothing and says nothing (the last
        // project moved to the end, one moved before its own successor: fidelity
        // s11110001_0133, probed on 0.171.0).
        if to == at {
            self.result(id, json!({}));
            return Ok(());
        }
        x.updated_at = now_secs();
        all.projects.insert(to, x);
        for (i, y) in all.projects.iter_mut().enumerate() {
            y.position = i as i64;
        }
        self.save_projects(&all);
        self.project_changed(pid, "updated");
        self.result(id, json!({}));
        Ok(())
    }

    /// Its threads leave it (`thread/project/updated` each); its key stays taken.
    pub(super) fn project_delete(&self, id: &Value, p: &Value) -> Result<(), String> {
        let pid = p["projectId"].as_str().unwrap_or_default();
        let _guard = lock(file_lock());
        let mut all = self.projects();
        let at = all.at(pid)?;
        all.projects.remove(at);
        self.save_projects(&all);
        self.project_changed(pid, "deleted");
        let members: Vec<String> = self.fake.store.update(|d| {
            let mut out = Vec::new();
            if let Some(threads) = d["threads"].as_object_mut() {
                for (tid, t) in threads.iter_mut() {
                    if t["projectId"] == pid {
                        t["projectId"] = Value::Null;
                        out.push(tid.clone());
                    }
                }
            }
            out
        });
        for t in members {
            self.notify(
                "thread/project/updated",
                json!({"threadId": t, "projectId": null}),
            );
        }
        self.result(id, json!({}));
        Ok(())
    }

    /// Whether `thread/start`'s project exists.
    pub(super) fn project_exists(&self, pid: &str) -> bool {
        self.projects().projects.iter().any(|x| x.id == pid)
    }
}

/// A `project/list` cursor's anchor (its value, none for no recency, and its project id), if
/// it is one of the sort it is given for (codex `parse_project_cursor`).
fn project_cursor_anchor(c: &str, by_recency: bool, desc: bool) -> Option<(Option<i64>, String)> {
    if c.len() > 128 {
        return None;
    }
    let parts: Vec<&str> = c.split('|').collect();
    let key = if by_recency { "recencyAt" } else { "position" };
    let dir = if desc { "desc" } else { "asc" };
    let (value, id) = match parts.as_slice() {
        [value, id] if !by_recency && !desc => (*value, *id),
        ["v1", k, d, value, id] if *k == key && *d == dir => (*value, *id),
        _ => return None,
    };
    let value = if value == "null" && by_recency {
        None
    } else {
        let parsed: i64 = value.parse().ok()?;
        if parsed.to_string() != value || (!by_recency && parsed < 0) {
            return None;
        }
        Some(parsed)
    };
    let uuid = uuid::Uuid::parse_str(id).ok()?;
    (uuid.to_string() == id).then(|| (value, id.to_string()))
}
