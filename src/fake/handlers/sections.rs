//! Thread sections as codex keeps them (probed on 0.171.0; state kept in the state dir's
//! `sections.json`, as codex keeps them in its state database across restarts): the built-in
//! "Pinned" section and those `threadSection/create` adds, listed by id (UUIDv7: creation
//! order, Pinned first); names trimmed and not empty; Pinned neither renamed nor deleted;
//! `thread/section/move` files a thread under one (answered, then `thread/section/changed`),
//! which `thread/read` then shows. Shown by `tests/corpus/turns/62_thread_sections`.

use super::rules::invalid;
use super::view::H;
use crate::fake::state::{lock, now_secs};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::{Mutex, OnceLock};

/// The id of codex's built-in "Pinned" thread section (the same on every version and run).
pub(super) const PINNED_SECTION: &str = "01984de2-8f74-7c91-a3b2-5c5e937cf318";

#[derive(Serialize, Deserialize, Clone)]
pub(super) struct Section {
    id: String,
    name: String,
    appearance: Option<Appearance>,
}

/// `{icon, color}`, in codex's key order.
#[derive(Serialize, Deserialize, Clone)]
struct Appearance {
    #[serde(default)]
    icon: Option<String>,
    #[serde(default)]
    color: Option<String>,
}

fn pinned() -> Section {
    Section {
        id: PINNED_SECTION.into(),
        name: "Pinned".into(),
        appearance: None,
    }
}

/// One writer at a time for the state dir's file.
fn file_lock() -> &'static Mutex<()> {
    static L: OnceLock<Mutex<()>> = OnceLock::new();
    L.get_or_init(Default::default)
}

/// One page of what follows a cursor, as codex's keyset lists page (sections, projects): a
/// `limit` of at least one (all when absent); the next cursor is the last one's key when more
/// follow.
pub(super) fn keyset_page<'a, T>(
    after: &'a [T],
    p: &Value,
    key: impl Fn(&T) -> String,
) -> (&'a [T], Option<String>) {
    let limit = p["limit"]
        .as_u64()
        .map_or(after.len(), |l| (l as usize).max(1));
    let page = &after[..limit.min(after.len())];
    let next = (page.len() < after.len())
        .then(|| page.last().map(&key))
        .flatten();
    (page, next)
}

/// Where a section is, or codex's refusal of an unknown id.
fn section_at(all: &[Section], section_id: &str) -> Result<usize, String> {
    all.iter()
        .position(|s| s.id == section_id)
        .ok_or_else(|| invalid(&format!("thread section not found: {section_id}")))
}

fn appearance(v: &Value) -> Option<Appearance> {
    serde_json::from_value(v.clone()).ok()
}

impl H<'_> {
    fn sections_file(&self) -> std::path::PathBuf {
        self.fake.dir.join("sections.json")
    }

    /// Every section, Pinned first, then by id.
    pub(super) fn sections(&self) -> Vec<Section> {
        let mut all: Vec<Section> = std::fs::read(self.sections_file())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        all.push(pinned());
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    fn save_sections(&self, all: &[Section]) {
        let mine: Vec<&Section> = all.iter().filter(|s| s.id != PINNED_SECTION).collect();
        if let Ok(text) = serde_json::to_vec(&mine) {
            let _ = std::fs::write(self.sections_file(), text);
        }
    }

    /// A thread's section as `Thread.section` shows it.
    pub(super) fn section_view(&self, section_id: &Value) -> Value {
        let Some(id) = section_id.as_str() else {
            return Value::Null;
        };
        self.sections()
            .into_iter()
            .find(|s| s.id == id)
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null)
    }

    pub(super) fn section_create(&self, id: &Value, p: &Value) -> Result<(), String> {
        let name = p["name"].as_str().unwrap_or_default().trim();
        if name.is_empty() {
            return Err(invalid("section name must not be empty"));
        }
        let _guard = lock(file_lock());
        let mut all = self.sections();
        let section = Section {
            id: uuid::Uuid::now_v7().to_string(),
            name: name.into(),
            appearance: appearance(&p["appearance"]),
        };
        all.push(section.clone());
        self.save_sections(&all);
        self.result(id, json!({"section": section}));
        Ok(())
    }

    /// Sections after the cursor (an id, compared as text), `limit` at least one; the next
    /// cursor is the last id given when more follow.
    pub(super) fn section_list(&self, id: &Value, p: &Value) -> Result<(), String> {
        let all = self.sections();
        let after: Vec<Section> = match p["cursor"].as_str() {
            Some(c) => all.into_iter().filter(|s| s.id.as_str() > c).collect(),
            None => all,
        };
        let (page, next) = keyset_page(&after, p, |s| s.id.clone());
        self.result(id, json!({"data": page, "nextCursor": next}));
        Ok(())
    }

    /// The name first, then the section, then Pinned's protection; an absent appearance is
    /// kept, a null one cleared.
    pub(super) fn section_update(&self, id: &Value, p: &Value) -> Result<(), String> {
        let name = p["name"].as_str().unwrap_or_default().trim();
        if name.is_empty() {
            return Err(invalid("section name must not be empty"));
        }
        let section_id = p["sectionId"].as_str().unwrap_or_default();
        let _guard = lock(file_lock());
        let mut all = self.sections();
        let at = section_at(&all, section_id)?;
        if section_id == PINNED_SECTION {
            return Err(invalid("the built-in pinned section cannot be renamed"));
        }
        all[at].name = name.into();
        if let Some(a) = p.get("appearance") {
            all[at].appearance = appearance(a);
        }
        self.save_sections(&all);
        self.result(id, json!({"section": all[at]}));
        Ok(())
    }

    /// Its threads leave it silently (no `thread/section/changed`).
    pub(super) fn section_delete(&self, id: &Value, p: &Value) -> Result<(), String> {
        let section_id = p["sectionId"].as_str().unwrap_or_default();
        let _guard = lock(file_lock());
        let mut all = self.sections();
        let at = section_at(&all, section_id)?;
        if section_id == PINNED_SECTION {
            return Err(invalid("the built-in pinned section cannot be deleted"));
        }
        all.remove(at);
        self.save_sections(&all);
        self.fake.store.update(|d| {
            if let Some(threads) = d["threads"].as_object_mut() {
                for t in threads.values_mut() {
                    if t["section"] == section_id {
                        t["section"] = Value::Null;
                        t["sectionEnteredAt"] = Value::Null;
                    }
                }
            }
        });
        self.result(id, json!({}));
        Ok(())
    }

    /// The thread is stored first (even when the section then does not exist); answered,
    /// then `thread/section/changed` (even when nothing changed).
    pub(super) fn section_move(&self, id: &Value, p: &Value) -> Result<(), String> {
        // An anchor needs a section, before anything is looked up or parsed (turn scenario 284
        // on every version: a thread that does not exist, an anchor that is no id; fidelity
        // s57570001_0076).
        if !p["beforeThreadId"].is_null() && p["sectionId"].is_null() {
            return Err("beforeThreadId requires a non-null sectionId".into());
        }
        let (thread_id, info) = self.fake.stored(p, "thread", "thread not found: ")?;
        // The anchor's id is parsed before the section is looked up (fidelity s6060001_0133)
        // and before an ephemeral thread is refused (s47470001_0540, turn scenario 261).
        if let Some(before) = p["beforeThreadId"].as_str() {
            crate::fake::threads::check_uuid(before, "before thread")?;
        }
        // Before the section is looked up (fidelity s8080001_0146).
        if info["ephemeral"] == true {
            return Err(format!(
                "ephemeral thread does not support section moves: {thread_id}"
            ));
        }
        self.fake
            .store
            .update(|d| d["threads"][&thread_id]["materialized"] = json!(true));
        let section = p["sectionId"].clone();
        if let Some(s) = section.as_str() {
            if !self.sections().iter().any(|x| x.id == s) {
                return Err(format!("section {s} does not exist"));
            }
        }
        // Where a moved thread goes among its section's others is not modeled.
        if !p["beforeThreadId"].is_null() {
            return self.not_modeled("thread/section/move");
        }
        let now = now_secs();
        self.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            if t["section"] != section {
                t["sectionEnteredAt"] = if section.is_null() {
                    Value::Null
                } else {
                    json!(now)
                };
            }
            t["section"] = section.clone();
        });
        self.result(id, json!({}));
        // A version without this notification (0.163.0) says nothing.
        let changed = json!({"method": "thread/section/changed",
                             "params": {"threadId": thread_id, "sectionId": section}});
        if (self.fake.protocol.server_notification)(&changed).is_ok() {
            self.notify("thread/section/changed", changed["params"].clone());
        }
        Ok(())
    }
}
