//! `thread/*`: start, resume, fork, read, list, paging, read states, archive, names, delete.

use super::session::git_info;
use super::view::H;
use crate::fake::settings;
use crate::fake::state::{civil, lock, now_ms, now_secs};
use crate::fake::threads::{page, read_state, revision_state, rollout_cursor};
use serde_json::{json, Map, Value};
use std::path::Path;

impl H<'_> {
    /// A new thread's stored info from `thread/start` (or `fork`) params, and the `warning`s
    /// its start sends.
    pub(super) fn new_thread_info(&self, params: &Value) -> Result<(Value, Vec<String>), String> {
        let resolved = settings::for_start(
            &self.fake.config(),
            &self.fake.catalog,
            &self.fake.turn_facts,
            &self.fake.cwd,
            params,
        );
        // The project is checked after the params' own consistency (`permissions` with
        // `sandbox` first) but before the configuration they name is loaded (fidelity
        // s7070001_0462: an unknown project before a profile with no `[permissions]` table).
        // A `config.toml` codex cannot parse fails the load (turn scenario 250).
        let resolved = match (resolved, self.config_toml_error()) {
            (Ok(_), Some(reason)) => Err(format!("failed to load configuration: {reason}")),
            (r, _) => r,
        };
        let loading = matches!(&resolved, Err(e) if e.starts_with("failed to load configuration"));
        if resolved.is_ok() || loading {
            if let Some(p) = params["projectId"].as_str() {
                if !self.project_exists(p) {
                    return Err(format!("project not found: {p}"));
                }
            }
        }
        let resolved = resolved?;
        let ephemeral = params["ephemeral"].as_bool().unwrap_or(false);
        if ephemeral && !params["daybreakEnabled"].is_null() {
            return Err("daybreakEnabled is not supported for ephemeral threads".into());
        }
        let now = now_secs();
        let mut info = json!({
            "createdAt": now, "updatedAt": now, "updatedAtMs": now_ms(), "turns": [],
            "developerInstructions": params["developerInstructions"],
            "ephemeral": ephemeral,
            // Echoed into the thread as given.
            "threadSource": params["threadSource"], "historyMode": params["historyMode"],
            "projectId": params["projectId"],
            "daybreakEnabled": params["daybreakEnabled"], "personality": params["personality"],
        });
        resolved.store(&mut info);
        // A thread made with the default environment after `environment/add` also works in
        // each added one after the local one, at its cwd (turn scenario 153, all versions;
        // fidelity s28280001_0266). Several added ones come in an order the real server
        // varies from run to run (seen both ways); by id here, one of its orders.
        let added = self.fake.store.load()["environmentsAdded"].clone();
        if let (None, Some(added)) = (&resolved.environments, added.as_object()) {
            if !added.is_empty() {
                let at = |env: &str| {
                    json!({"environmentId": env, "cwd": resolved.cwd,
                           "runtimeWorkspaceRoots": resolved.roots})
                };
                let mut ids: Vec<&str> = added.keys().map(String::as_str).collect();
                ids.sort_unstable();
                let envs: Vec<Value> = std::iter::once("local").chain(ids).map(at).collect();
                info["environments"] = Value::Array(envs);
            }
        }
        // The flags its own `config` sets: what `experimentalFeature/list` shows for it.
        if let Some(layer) = params["config"].as_object() {
            let features = crate::fake::config::Config::layer_features(layer);
            if !features.is_empty() {
                info["configFeatures"] = Value::Object(features);
            }
        }
        // The tools a `tool_call` step may call (any other name never reaches the client).
        if params["dynamicTools"].is_array() {
            info["dynamicTools"] = params["dynamicTools"].clone();
        }
        Ok((info, resolved.warnings))
    }

    pub(super) fn thread_start(&self, id: &Value, params: &Value) -> Result<(), String> {
        let thread_id = uuid::Uuid::now_v7().to_string();
        let (info, warnings) = self.new_thread_info(params)?;
        self.fake
            .store
            .update(|d| d["threads"][&thread_id] = info.clone());
        lock(&self.fake.loaded).insert(thread_id.clone());
        self.result(id, self.thread_response(&thread_id, &info, false));
        self.notify(
            "thread/started",
            json!({"thread": self.thread_payload(&thread_id, &info, false)}),
        );
        self.session_started(&thread_id, false);
        self.warn(&thread_id, warnings);
        self.start_mcp_servers(&thread_id, info["cwd"].as_str().unwrap_or("/"));
        Ok(())
    }

    /// `thread/resume`, as probed on the real server: `history` (experimental) starts a fresh
    /// thread from the given items whatever `threadId` says; `path` names the rollout to resume
    /// (relative to `CODEX_HOME`); otherwise the thread is looked up by id.
    pub(super) fn thread_resume(&self, id: &Value, params: &Value) -> Result<(), String> {
        // Before the id is parsed (fidelity s7070001_0716).
        if !params["permissions"].is_null() && !params["sandbox"].is_null() {
            return Err("`permissions` cannot be combined with `sandbox`".into());
        }
        let given = params["threadId"].as_str().unwrap_or_default();
        let running = lock(&self.fake.loaded).contains(given);
        if let Some(history) = params["history"].as_array() {
            if history.is_empty() {
                return Err("history must not be empty".into());
            }
            if running {
                return Err(format!(
                    "cannot resume thread {given} with history while it is already running"
                ));
            }
            return self.resume_from_history(id, history);
        }
        let path = params["path"].as_str().filter(|p| !p.is_empty());
        if path.is_none() {
            self.refuse_archived(params)?;
        }
        let (thread_id, info) = match path {
            Some(p) => self.fake.stored_at_path(given, running, p)?,
            None => self
                .fake
                .stored(params, "session", "no rollout found for thread id ")?,
        };
        // Nothing is stored before the thread's first persisted change: loaded here or not,
        // there is nothing to resume yet; an ephemeral thread never has a rollout (fidelity
        // s29290001_0226).
        if !crate::fake::threads::has_rollout(&info) && path.is_none() {
            return Err(format!("no rollout found for thread id {thread_id}"));
        }
        // A resume subscribes the connection again (turn scenario 183).
        lock(&self.unsubscribed).remove(&thread_id);
        let with_turns = params["excludeTurns"].as_bool() != Some(true);
        // Stored without a rollout: its paged history cannot be resolved, and a full
        // hydration writes the rollout (0.171.0: 120g, 120h).
        if crate::fake::threads::rolloutless(&info) {
            if !with_turns {
                return Err(crate::fake::threads::missing_rollout(&thread_id));
            }
            self.fake
                .store
                .update(|d| crate::fake::threads::write_rollout(&mut d["threads"][&thread_id]));
        }
        // Only a paginated thread's full history is deprecated (`89_legacy_history_items`).
        if with_turns && info["historyMode"] != "legacy" {
            self.hydration_notice();
        }
        let newly = lock(&self.fake.loaded).insert(thread_id.clone());
        if newly {
            crate::fake::turn::new_session(&thread_id);
        }
        let recorded_model = info["model"].as_str().map(str::to_string);
        let mut info = info;
        let mut warnings = Vec::new();
        // A thread taken up by this process gets its settings back, with the params' over them
        // (and keeps those); one already loaded here ignores the params (checked on 0.171.0).
        if newly && info["sandbox"].is_object() {
            // One transaction: the settings go back onto the thread as it is now (another
            // process may have changed it since it was looked up).
            let resumed = self.fake.store.update(|d| {
                let mut info = d["threads"][&thread_id].clone();
                let settings_before = self.settings_with_tier(&info);
                // Loaded afresh: no error of an earlier process's turn shows.
                if let Some(t) = info.as_object_mut() {
                    t.remove("systemError");
                    // The thread's own tier is not taken up again: the resume's or the
                    // configuration's is (0.163.0: f14 a turn's tier dropped, a configured
                    // `fast` shown as `priority`).
                    if self.fake.turn_facts.service_tier_not_resumed {
                        t.remove("serviceTier");
                    }
                    // Nor its reasoning summary (fidelity s27270001_0049).
                    if self.fake.turn_facts.summary_not_resumed {
                        t.remove("summary");
                    }
                    // 0.163.0 neither keeps the personality: the thread shows it until its
                    // next turn's settings drop it (79b: that turn announces it gone; `none`
                    // too: 285, fidelity s57570001_0067).
                    let personal = t.get("personality").is_some_and(|p| !p.is_null());
                    if self.fake.turn_facts.personality_not_resumed && personal {
                        t.insert("personalityDropped".into(), json!(true));
                    }
                    // Versions that do not write a resumed thread's settings still do when the
                    // resume changes some, by a parameter or by its `config` (fidelity
                    // s18180001_0157: a `serviceTier` on 0.171.0; s41410001_0100 and
                    // `237_resume_config_changes_settings`: a reasoning effort in `config`); one
                    // that sets what the thread has writes nothing (s24240001_0140,
                    // `133_rollout_of_a_resumed_thread_with_skills`): decided below, once the
                    // resumed settings are known.
                    t.insert("resumeSettingsWritten".into(), json!(true));
                }
                // The thread's tier, shown or only configured, is taken up as its configuration,
                // not as a requested tier: one its model does not advertise is warned about again
                // and shown by the next turn that carries settings
                // (`125_configured_tier_warned_again_on_resume`,
                // `130_resumed_configured_tier_shown_by_next_turn`; 0.163.0 drops it).
                let mut rp = resumed_params(&info, params, &self.fake.cwd);
                let tier = settings::configured_tier(&info)
                    .or_else(|| info["serviceTier"].as_str())
                    .map(str::to_string);
                if params.get("serviceTier").is_none() {
                    if let Some(o) = rp.as_object_mut() {
                        o.remove("serviceTier");
                    }
                    if let Some(t) = tier.filter(|_| rp["config"]["service_tier"].is_null()) {
                        rp["config"]["service_tier"] = json!(t);
                    }
                }
                let mut r = settings::for_start(
                    &self.fake.config(),
                    &self.fake.catalog,
                    &self.fake.turn_facts,
                    &self.fake.cwd,
                    &rp,
                )?;
                // Its settings warn as a start's do (a configured tier the model does not
                // offer; seen on 0.163.0, 0.169.0 and 0.171.0).
                let warnings = std::mem::take(&mut r.warnings);
                if let Some(setting) = kept_sandbox(&info, params) {
                    r.sandbox = info["sandbox"].clone();
                    r.profile = info["permissionProfile"].clone();
                    r.setting = setting;
                }
                // A thread whose effort a turn's collaboration mode set to none keeps none:
                // codex takes the rollout's model and effort back together, the configured
                // effort only where the resume changes the model (fidelity s45450001_0269;
                // turn scenario 253).
                let no_effort = info.get("effort").is_some_and(Value::is_null)
                    && info["collaborationMode"].is_object()
                    && !resume_changes_model(params);
                r.store(&mut info);
                if no_effort {
                    info["effort"] = Value::Null;
                }
                // A collaboration mode the thread keeps takes the resumed session's model and
                // effort, as a turn's switch does (fidelity s42420001_0108: a resume's
                // `model`; turn scenario 242).
                if info["collaborationMode"].is_object() {
                    info["collaborationMode"]["settings"]["model"] = info["model"].clone();
                    info["collaborationMode"]["settings"]["reasoning_effort"] =
                        info["effort"].clone();
                }
                // The next turn writes what differs from the settings the thread's last turn
                // wrote (codex takes its context back from the rollout): those from before
                // the resume (turn scenarios 204, 204b, 204c; fidelity s35350001_0026).
                if crate::fake::threads::has_rollout(&info) {
                    super::turns::remember_written(&mut info, &settings_before);
                }
                // A personality the resume asks for is the thread's from now on (turn
                // scenario 175; fidelity s30300001_0179 on 0.169.0).
                if let Some(p) = params.get("personality").filter(|p| !p.is_null()) {
                    info["personality"] = p.clone();
                    if let Some(t) = info.as_object_mut() {
                        t.remove("personalityDropped");
                    }
                }
                if !self.fake.turn_facts.resume_writes_settings
                    && self.settings_with_tier(&info) == settings_before
                {
                    if let Some(t) = info.as_object_mut() {
                        t.remove("resumeSettingsWritten");
                    }
                }
                d["threads"][&thread_id] = info.clone();
                Ok::<_, String>((info, warnings))
            });
            match resumed {
                Ok((now, w)) => {
                    info = now;
                    warnings = w;
                }
                Err(e) => {
                    lock(&self.fake.loaded).remove(&thread_id);
                    return Err(e);
                }
            }
        } else if newly && self.fake.turn_facts.service_tier_not_resumed {
            info = self.fake.store.update(|d| {
                let t = &mut d["threads"][&thread_id];
                if let Some(o) = t.as_object_mut() {
                    o.remove("serviceTier");
                }
                t.clone()
            });
        }
        if newly {
            // The session's start says what it says about the configuration before the thread's
            // listener reports it idle (0.171.0, f27 and f29).
            self.session_started(&thread_id, false);
            self.warn(&thread_id, std::mem::take(&mut warnings));
            // Its MCP servers start with it, announced before the answer (turn scenario 259b).
            self.start_mcp_servers(&thread_id, info["cwd"].as_str().unwrap_or("/"));
            self.notify(
                "thread/status/changed",
                json!({"threadId": thread_id, "status": {"type": "idle"}}),
            );
        }
        // A thread taken up with another model than it was recorded with says so: a requested
        // one, or the configuration's when the request overrides the model otherwise (turn
        // scenarios 171 and 171b).
        let now = params["model"].as_str().or(info["model"].as_str());
        if let (true, Some(now)) = (newly, now) {
            let was = recorded_model.as_deref().unwrap_or_default();
            if !was.is_empty() && was != now {
                self.notify(
                    "warning",
                    json!({"threadId": thread_id, "message": format!(
                        "This session was recorded with model `{was}` but is resuming with \
                         `{now}`. Consider switching back to `{was}` as it may affect Codex \
                         performance.")}),
                );
            }
        }
        let mut result = self.resume_response(&thread_id, &info, with_turns);
        let facts = &self.fake.turn_facts;
        let renumbers = if info["historyMode"] == "legacy" {
            facts.resume_renumbers_interrupted_legacy_turn
        } else {
            facts.resume_renumbers_interrupted_turn
        };
        if !newly && renumbers {
            renumber_interrupted_turn(&mut result["thread"]["turns"], &info);
        }
        if params["initialTurnsPage"].is_object() {
            result["initialTurnsPage"] =
                self.turns_page(&thread_id, &info, &params["initialTurnsPage"]);
        }
        self.result(id, result);
        // Rejoining a loaded thread without its turns replays no usage; a cold resume restores
        // it either way (kept f14, f21, … on every version; turn scenario 104), but for a legacy
        // history, whose usage a new process does not take up again (a fork of one reports it;
        // `128_legacy_thread_resumed_restores_no_usage`, fidelity s23230001_0217).
        let legacy = info["historyMode"] == "legacy";
        if (with_turns || newly) && !(newly && legacy) {
            self.report_usage(&thread_id, &info, !newly);
        }
        // The thread's goal as it stands, whatever its status; none is announced cleared
        // (fidelity s7070001_0475: a goal completed before the restart).
        if info["goal"].is_object() {
            self.notify(
                "thread/goal/updated",
                json!({"threadId": thread_id, "turnId": null, "goal": info["goal"]}),
            );
        } else {
            self.notify("thread/goal/cleared", json!({"threadId": thread_id}));
        }
        self.warn(&thread_id, warnings);
        Ok(())
    }

    /// `thread/resume`'s result: `thread/start`'s plus the collaboration mode and paging cursors.
    pub(super) fn resume_response(&self, thread_id: &str, info: &Value, with_turns: bool) -> Value {
        let mut r = self.thread_response(thread_id, info, with_turns);
        // A resumed thread reports the git state of its cwd (a started one does not yet).
        r["thread"]["gitInfo"] = git_info(info["cwd"].as_str().unwrap_or("/"));
        let mut out = Map::new();
        for (k, v) in r.as_object_mut().map(std::mem::take).unwrap_or_default() {
            let after_effort = k == "reasoningEffort";
            out.insert(k, v);
            if after_effort {
                out.insert("collaborationMode".into(), self.collaboration_mode(info));
            }
        }
        out.insert("initialTurnsPage".into(), Value::Null);
        // Paging back from the last turn and the last item of the rollout (anchors included).
        let rollout = &info["rollout"];
        // A legacy history has no rollout positions to page by (`89_legacy_history_items`).
        let legacy = info["historyMode"] == "legacy";
        let cursor = |ordinal: &Value, kind| {
            let ordinal = ordinal.as_u64().filter(|n| *n > 0 && !legacy);
            rollout_cursor(thread_id, ordinal, true, kind)
        };
        out.insert(
            "turnsBackwardsCursor".into(),
            cursor(&rollout["turn"], "turns"),
        );
        out.insert(
            "itemsBackwardsCursor".into(),
            cursor(&rollout["item"], "itemsByCreatedAtOrdinal"),
        );
        Value::Object(out)
    }

    /// A new thread whose rollout starts with `history`; its preview is the first user text.
    pub(super) fn resume_from_history(&self, id: &Value, history: &[Value]) -> Result<(), String> {
        let thread_id = uuid::Uuid::now_v7().to_string();
        let preview = history
            .iter()
            .filter(|i| i["type"] == "message" && i["role"] == "user")
            .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
            .find_map(|c| c["text"].as_str().map(str::to_string))
            .unwrap_or_default();
        let (mut info, _) = self.new_thread_info(&json!({}))?;
        info["history"] = json!(history);
        // The given items are written to the rollout at once: the thread is stored from the
        // start (a new process resumes it by id).
        info["materialized"] = json!(true);
        self.fake
            .store
            .update(|d| d["threads"][&thread_id] = info.clone());
        self.fake.write_rollout(&thread_id);
        lock(&self.fake.loaded).insert(thread_id.clone());
        self.notify(
            "thread/status/changed",
            json!({"threadId": thread_id, "status": {"type": "idle"}}),
        );
        // The items are no user-message event: the stored thread has no preview (a read shows
        // "", the list leaves it out), only this answer shows the first user text.
        let mut answer = self.resume_response(&thread_id, &info, false);
        answer["thread"]["preview"] = json!(preview);
        self.result(id, answer);
        self.notify("thread/goal/cleared", json!({"threadId": thread_id}));
        Ok(())
    }

    pub(super) fn thread_fork(&self, id: &Value, params: &Value) -> Result<(), String> {
        // Before the id is parsed (fidelity s7070001_0172).
        if params["attachToSource"] == true
            && (params["ephemeral"] == true || params["deferGoalContinuation"] == true)
        {
            return Err(
                "attachToSource cannot be combined with ephemeral or deferGoalContinuation".into(),
            );
        }
        // Before the hydration notice, as a resume checks it before the id (fidelity
        // s32320001_0095: refused, nothing said).
        if !params["permissions"].is_null() && !params["sandbox"].is_null() {
            return Err("`permissions` cannot be combined with `sandbox`".into());
        }
        self.refuse_archived(params)?;
        // A bad id is a bad "session id" here, as in `thread/resume`.
        let (source, info) =
            self.fake
                .stored(params, "session", "no rollout found for thread id ")?;
        // Nothing is stored before the thread's first persisted change, nor ever for an
        // ephemeral thread: nothing to fork (fidelity s29290001_0416).
        if !crate::fake::threads::has_rollout(&info) {
            return Err(format!("no rollout found for thread id {source}"));
        }
        // An attached fork pages its source's history: a legacy one has none to page (fidelity
        // s63630001_0176; `292_attached_fork_of_legacy`).
        if params["attachToSource"] == true && info["historyMode"] == "legacy" {
            return Err("attachToSource requires a paginated parent".into());
        }
        // A deferred goal continuation needs a stored fork (fidelity s27270001_0255; turn
        // scenario 145 on every version).
        if params["deferGoalContinuation"] == true && params["ephemeral"] == true {
            return Err("`deferGoalContinuation` cannot be combined with `ephemeral`".into());
        }
        // An ephemeral fork of a paginated thread cannot copy its turns (fidelity
        // s8080001_0101).
        if params["ephemeral"] == true
            && params["excludeTurns"] != true
            && info["historyMode"].as_str() != Some("legacy")
        {
            return Err("ephemeral paginated thread/fork requires `excludeTurns: true`".into());
        }
        // A fork with its source's turns says full hydration is deprecated before it loads its
        // configuration (fidelity s21210001_0287: said, then the fork refused for its
        // permissions profile).
        let with_turns = params["excludeTurns"].as_bool() != Some(true);
        if with_turns && info["historyMode"] != "legacy" {
            self.hydration_notice();
        }
        self.after_logins();
        let thread_id = uuid::Uuid::now_v7().to_string();
        // A fork keeps its source's cwd, approval settings and sandbox setting (a
        // `workspace-write` mode or policy excepted: the configured default then; on 0.163.0
        // every mode and policy, `fork_sandbox_mode_not_kept`) unless its params say
        // otherwise; model, effort, tier and roots come from the params and the configuration.
        let mut p = params.as_object().cloned().unwrap_or_default();
        // A fork keeps its source's history mode, whatever its params ask (probed on 0.171.0).
        p.insert("historyMode".into(), info["historyMode"].clone());
        let absent = |p: &Map<String, Value>, k: &str| p.get(k).is_none_or(Value::is_null);
        for key in ["cwd", "approvalPolicy", "approvalsReviewer"] {
            if absent(&p, key) && !info[key].is_null() {
                p.insert(key.into(), info[key].clone());
            }
        }
        if absent(&p, "sandbox") && absent(&p, "permissions") {
            match info["sandboxSetting"]
                .as_str()
                .and_then(|s| s.split_once(':'))
            {
                Some(("profile", id)) => {
                    p.insert("permissions".into(), json!(id));
                }
                _ if self.fake.turn_facts.fork_sandbox_mode_not_kept => {}
                _ => {
                    if let Some(m) = setting_mode(&info) {
                        p.insert("sandbox".into(), json!(m));
                    }
                }
            }
        }
        let (mut new, warnings) = self.new_thread_info(&Value::Object(p))?;
        // A sandbox set over no workspace roots is kept as it is, as a resume keeps it
        // (fidelity session s5150001_0036: `/tmp` only after a turn with `environments: []`;
        // not on 0.163.0, whose fork takes the configured mode).
        if let Some(setting) =
            kept_sandbox(&info, params).filter(|_| !self.fake.turn_facts.fork_sandbox_mode_not_kept)
        {
            new["sandbox"] = info["sandbox"].clone();
            new["permissionProfile"] = info["permissionProfile"].clone();
            new["sandboxSetting"] = setting;
        }
        // An attached fork shows none of its source's turns (`207_attached_fork`).
        let attached = params["attachToSource"] == true;
        new["turns"] = if attached {
            json!([])
        } else {
            info["turns"].clone()
        };
        // (0.163.0 empties a stored paginated fork's preview only: `89_legacy_history_items`;
        // an ephemeral fork keeps it, `145_fork_defer_goal_ephemeral`)
        new["preview"] = if self.fake.turn_facts.fork_preview_empty
            && info["historyMode"] != "legacy"
            && params["ephemeral"] != true
        {
            json!("")
        } else {
            info["preview"].clone()
        };
        new["forkedFromId"] = json!(source);
        // Its source's `daybreakEnabled` too (fork params have none; all three versions), its
        // name (60_thread_materialized) and the plugins its turns disabled (fidelity
        // s14140001_0172 on 0.171.0), and its project (`123_fork_of_a_thread_in_a_project`).
        // A fork is stored as it is made.
        for key in [
            "projectId",
            "usage",
            "lastUsage",
            "usageTurnId",
            "usageWindow",
            "daybreakEnabled",
            "name",
            "disabledPluginIds",
        ] {
            new[key] = info[key].clone();
        }
        new["materialized"] = json!(true);
        // An attached fork belongs to its source: it says so, is hidden from ordinary lists,
        // keeps its source from being deleted, and is not announced as started, nor its usage
        // reported (turn scenario `207_attached_fork` on 0.171.0 and 0.169.0).
        if attached {
            new["attachedToThreadId"] = json!(source);
        }
        // A cold fork warns before its result.
        self.warn(&thread_id, warnings);
        self.fake
            .store
            .update(|d| d["threads"][&thread_id] = new.clone());
        lock(&self.fake.loaded).insert(thread_id.clone());
        // The fork's session start speaks before its result (0.171.0, f31).
        self.session_started(&thread_id, true);
        self.start_mcp_servers(&thread_id, new["cwd"].as_str().unwrap_or("/"));
        // codex answers a fork once the new thread's session runs: what the server sends
        // meanwhile (a running turn's events, a sandbox setup's failure) comes first.
        self.c.flush_held();
        std::thread::sleep(FORK_ANSWER);
        self.result(id, self.thread_response(&thread_id, &new, with_turns));
        if with_turns && !attached {
            self.report_usage(&thread_id, &new, false);
        }
        if !attached {
            self.notify(
                "thread/started",
                json!({"thread": self.thread_payload(&thread_id, &new, false)}),
            );
        }
        Ok(())
    }

    pub(super) fn thread_read(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.fake.stored(params, "thread", "thread not loaded: ")?;
        // A thread never stored (no persisted change yet): another process knows nothing of it.
        if !crate::fake::threads::materialized(&info)
            && info["historyMode"].as_str() != Some("legacy")
            && !lock(&self.fake.loaded).contains(&thread_id)
        {
            return Err(format!("thread not loaded: {thread_id}"));
        }
        let with_turns = params["includeTurns"].as_bool() == Some(true);
        if with_turns && info["ephemeral"] == true {
            return Err("ephemeral threads do not support includeTurns".into());
        }
        // Before its first turn a thread has no history to read: a paginated one's store
        // cannot list turns yet, a legacy one is not written yet (both seen on 0.171.0).
        let paginated = info["historyMode"].as_str() != Some("legacy");
        let materialized = crate::fake::threads::materialized(&info);
        if with_turns
            && info["turns"].as_array().is_none_or(Vec::is_empty)
            && (!paginated || !materialized)
        {
            if paginated {
                self.send(json!({"error": {"code": -32601,
                    "message": "list_turns is not supported yet"}, "id": id}));
                return Ok(());
            }
            return Err(format!(
                "thread {thread_id} is not materialized yet; includeTurns is unavailable before \
                 first user message"
            ));
        }
        // A full hydration writes the rollout of a thread stored without one (0.171.0: 120d).
        if with_turns && crate::fake::threads::rolloutless(&info) {
            self.fake
                .store
                .update(|d| crate::fake::threads::write_rollout(&mut d["threads"][&thread_id]));
        }
        if with_turns {
            self.after_logins();
        }
        if with_turns && paginated {
            self.notify(
                "deprecationNotice",
                json!({"summary": "Full-history hydration is deprecated for paginated threads; \
                                   omit `includeTurns` or set it to `false`, then page with \
                                   `thread/turns/list` and `thread/items/list`.", "details": null}),
            );
        }
        let mut thread = self.thread_payload(&thread_id, &info, with_turns);
        // A read takes the preview from the thread store, which never holds an ephemeral
        // thread (`151_ephemeral_thread_read_preview` on every version; fidelity
        // s28280001_0067).
        if info["ephemeral"] == true {
            thread["preview"] = json!("");
        }
        // A stored legacy history is read from its rollout, which keeps no thread source
        // (`220_a_legacy_thread_read_shows_no_source`; a paginated one keeps it: `220b`;
        // fidelity s37370001_0577).
        // Read so, it has the read state of a thread without a source.
        let read_as = crate::fake::threads::as_read(&info);
        if read_as["threadSource"] != info["threadSource"] {
            thread["threadSource"] = Value::Null;
        }
        self.result(
            id,
            json!({"thread": thread, "readState": read_state(&thread_id, &read_as)}),
        );
        Ok(())
    }

    /// `thread/readState/update`: marks the thread read (no unread position) or unread (from
    /// its start), guarded by the revision the client saw.
    pub(super) fn read_state_update(&self, id: &Value, params: &Value) -> Result<(), String> {
        // A malformed id is invalid params here (fidelity s15150001_0102 on 0.171.0).
        crate::fake::threads::check_uuid(params["threadId"].as_str().unwrap_or_default(), "thread")
            .map_err(|e| format!("{}{e}", crate::fake::rpc::INVALID_PARAMS_PREFIX))?;
        let (thread_id, info) = self.fake.stored(params, "thread", "thread not loaded: ")?;
        // A thread has a read state once it is stored (its first persisted change); an
        // ephemeral one never is.
        // Nor has a thread of another source than the user's, as a read shows it (app-server
        // `read_state::eligible`; fidelity s61610001_0599: a `cli` thread).
        if !crate::fake::threads::has_rollout(&info)
            || !crate::fake::threads::has_read_state(&crate::fake::threads::as_read(&info))
        {
            return Err("thread read state unavailable".into());
        }
        let first = match params["operation"]["type"].as_str() {
            Some("unread") => json!({"type": "threadStart"}),
            _ => Value::Null,
        };
        let revision = uuid::Uuid::new_v4().to_string();
        // One transaction: the revision checked is the one replaced.
        let conflict = self.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            let current = read_state(&thread_id, t);
            if current["revision"] != params["expectedRevision"] {
                return Some(current);
            }
            t["firstUnread"] = first.clone();
            t["readRevision"] = json!(revision);
            None
        });
        if let Some(current) = conflict {
            self.send(json!({"error": {"code": -32600,
                "data": {"reason": "readStateConflict", "readState": current},
                "message": "read state changed"}, "id": id}));
            return Ok(());
        }
        let state = json!({"firstUnread": first, "revision": revision});
        self.notify(
            "thread/readState/changed",
            json!({"threadId": thread_id, "readState": state}),
        );
        self.result(id, json!({"readState": state}));
        Ok(())
    }

    /// `thread/loaded/list`: the threads this process holds, oldest first.
    /// `thread/loaded/list`: the loaded threads by id, after the cursor (a thread id).
    pub(super) fn loaded_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let mut data: Vec<String> = lock(&self.fake.loaded).iter().cloned().collect();
        // Nothing loaded: an empty page, whatever the cursor (codex returns before reading
        // it: `thread_loaded_list_response_inner`; fidelity s40400001_0494).
        if data.is_empty() {
            self.result(id, json!({"data": [], "nextCursor": null}));
            return Ok(());
        }
        data.sort();
        let total = data.len();
        // A cursor is a thread id (as codex writes it), the page starting after it.
        let start = match params["cursor"].as_str() {
            None => 0,
            Some(c) => match uuid::Uuid::parse_str(c) {
                Ok(u) => data.iter().filter(|t| **t <= u.to_string()).count(),
                Err(_) => return Err(format!("invalid cursor: {c}")),
            },
        };
        // `limit` threads a page (all by default, one at least); the cursor of a page that
        // leaves threads after it is its last id.
        let limit = params["limit"]
            .as_u64()
            .map_or(total, |l| l as usize)
            .max(1);
        let end = start.saturating_add(limit).min(total);
        let page = data[start.min(end)..end].to_vec();
        let next = page.last().filter(|_| end < total).cloned();
        self.result(id, json!({"data": page, "nextCursor": next}));
        Ok(())
    }

    /// `thread/unsubscribe`: the thread stays loaded; this connection is off its list.
    pub(super) fn unsubscribe(&self, id: &Value, params: &Value) -> Result<(), String> {
        let thread_id = params["threadId"].as_str().unwrap_or_default().to_string();
        // The id is parsed first (fidelity s14140001_0015; probed on 0.163.0, 0.169.0 and
        // 0.171.0).
        crate::fake::threads::check_uuid(&thread_id, "thread")?;
        let status = if !lock(&self.fake.loaded).contains(&thread_id) {
            "notLoaded"
        } else if lock(&self.unsubscribed).insert(thread_id) {
            "unsubscribed"
        } else {
            "notSubscribed"
        };
        self.result(id, json!({"status": status}));
        Ok(())
    }

    /// `thread/delete`: unloaded first (as archiving does), then gone with its rollout.
    pub(super) fn thread_delete(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) =
            self.fake
                .stored(params, "thread", "no rollout found for thread id ")?;
        // A thread with attached threads stays while they do (`207_attached_fork`).
        let data = self.fake.store.load();
        let attached = data["threads"]
            .as_object()
            .into_iter()
            .flatten()
            .find(|(_, t)| t["attachedToThreadId"] == json!(thread_id));
        if let Some((other, _)) = attached {
            return Err(format!(
                "cannot delete thread while attached thread {other} exists; delete the attached \
                 thread first"
            ));
        }
        self.settings_applied(&thread_id);
        if lock(&self.fake.loaded).remove(&thread_id) {
            self.notify(
                "thread/status/changed",
                json!({"threadId": thread_id, "status": {"type": "notLoaded"}}),
            );
        }
        let _ = std::fs::remove_file(self.fake.rollout_path(&thread_id, &info));
        self.fake.store.update(|d| {
            if let Some(ts) = d["threads"].as_object_mut() {
                ts.remove(&thread_id);
            }
        });
        self.result(id, json!({}));
        self.notify("thread/deleted", json!({"threadId": thread_id}));
        Ok(())
    }

    /// `thread/items/list`: pages of the stored items by rollout position (oldest first by
    /// default; `turnId` keeps one turn's), with the real server's cursors.
    pub(super) fn items_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        // The cursor before the thread (fidelity s6060001_0022: a bad thread id and an item
        // anchor without a turn: the anchor is refused).
        if params["cursor"]["type"] == "item" && !params["turnId"].is_string() {
            return Err(format!(
                "{}turnId is required when cursor is an item anchor",
                crate::fake::rpc::INVALID_PARAMS_PREFIX
            ));
        }
        let (thread_id, info) = self.fake.stored(params, "thread", "thread not loaded: ")?;
        // Nothing to page in an ephemeral thread, nor before the first user message writes the
        // rollout (0.171.0: 42_method_rules), nor in a legacy history (fidelity s13130001_0151).
        // A stored thread with no turn yet pages nothing (0.171.0: 120b, 120h).
        if info["ephemeral"] == true
            || info["historyMode"] == "legacy"
            || !crate::fake::threads::materialized(&info)
        {
            self.send(json!({"error": {"code": -32601,
                "message": "thread/items/list is not supported yet"}, "id": id}));
            return Ok(());
        }
        // A string cursor is checked as `thread/turns/list`'s (fidelity s22220001_0229).
        let bad_cursor = params["cursor"].as_str().filter(|c| {
            !crate::fake::threads::valid_history_cursor(c, &thread_id, "itemsByCreatedAtOrdinal")
        });
        self.history_checks(&thread_id, &info, bad_cursor)?;
        let mut entries: Vec<(u64, Value)> = Vec::new();
        for t in info["turns"].as_array().into_iter().flatten() {
            if params["turnId"].is_string() && t["id"] != params["turnId"] {
                continue;
            }
            let ords = t["itemOrdinals"].as_array().cloned().unwrap_or_default();
            for (item, ord) in t["items"].as_array().into_iter().flatten().zip(ords) {
                entries.push((
                    ord.as_u64().unwrap_or(0),
                    json!({"turnId": t["id"], "item": item, "startedAtMs": item["startedAtMs"],
                           "completedAtMs": item["completedAtMs"]}),
                ));
            }
        }
        let (data, next, back) = page(entries, params, params["sortDirection"] == "desc");
        let cursor = |o: Option<u64>, include| {
            rollout_cursor(&thread_id, o, include, "itemsByCreatedAtOrdinal")
        };
        self.result(
            id,
            json!({"data": data, "nextCursor": cursor(next, false),
                   "backwardsCursor": cursor(back, true)}),
        );
        Ok(())
    }

    /// `thread/searchOccurrences`: every case-insensitive occurrence of the term in the
    /// thread's user messages and each turn's final answer, in rollout order, each with its item's text as the
    /// snippet, paged by codex's cursor (probed on 0.171.0: 77). Long texts (a snippet window)
    /// and a long unpaged result (its default limit) are not modeled.
    pub(super) fn search_occurrences(&self, id: &Value, params: &Value) -> Result<(), String> {
        let method = "thread/searchOccurrences";
        let term = params["searchTerm"].as_str().unwrap_or_default();
        if term.is_empty() {
            return Err(format!("{method} requires a non-empty searchTerm"));
        }
        let given = params["threadId"].as_str().unwrap_or_default();
        crate::fake::threads::check_uuid(given, "thread")?;
        let Ok((thread_id, info)) = self.fake.stored(params, "thread", "thread not loaded: ")
        else {
            return self.unsupported(id, method);
        };
        // Nothing to search before the thread is stored (42_method_rules), in an ephemeral
        // thread (never stored: fidelity s13130001_0195, before the cursor is read) or in a
        // legacy history.
        if info["ephemeral"] == true
            || info["historyMode"] == "legacy"
            || !crate::fake::threads::materialized(&info)
        {
            return self.unsupported(id, method);
        }
        let from = match params["cursor"].as_str() {
            None => (0, 0),
            Some(raw) => {
                let c: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
                match (
                    c["nextRolloutOrdinal"].as_u64(),
                    c["nextOccurrenceIndex"].as_u64(),
                ) {
                    (Some(o), Some(i)) if c["threadId"] == thread_id && c["searchTerm"] == term => {
                        (o, i)
                    }
                    _ => return Err(format!("invalid cursor: {raw}")),
                }
            }
        };
        let needle = term.to_lowercase();
        // (item ordinal, index in the item, occurrence)
        let mut found: Vec<(u64, u64, Value)> = Vec::new();
        for t in info["turns"].as_array().into_iter().flatten() {
            let turn_cursor = crate::fake::threads::rollout_cursor(
                &thread_id,
                t["rolloutOrdinal"].as_u64(),
                true,
                "turns",
            );
            let ords = t["itemOrdinals"].as_array().cloned().unwrap_or_default();
            let items = t["items"].as_array().map(Vec::as_slice).unwrap_or_default();
            // A turn's agent side is searched in its final answer only: its last message in
            // the `final_answer` phase, else its last one outside `commentary` (turn
            // scenarios 154 and 154c, all versions).
            let last_of = |keep: &dyn Fn(&Value) -> bool| {
                items
                    .iter()
                    .rposition(|i| i["type"] == "agentMessage" && keep(&i["phase"]))
            };
            let answer =
                last_of(&|p| p == "final_answer").or_else(|| last_of(&|p| p != "commentary"));
            for (n, (item, ord)) in items.iter().zip(ords).enumerate() {
                let texts: Vec<&str> = match item["type"].as_str() {
                    Some("userMessage") => item["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["text"].as_str())
                        .collect(),
                    Some("agentMessage") if answer == Some(n) => {
                        item["text"].as_str().into_iter().collect()
                    }
                    _ => Vec::new(),
                };
                let mut index = 0;
                for text in texts {
                    let hay = text.to_lowercase();
                    if hay.len() != text.len() {
                        return self.not_modeled(method);
                    }
                    for (at, _) in hay.match_indices(&needle) {
                        if text.chars().count() > 160 {
                            return self.not_modeled(method);
                        }
                        found.push((
                            ord.as_u64().unwrap_or(0),
                            index,
                            json!({"turnId": t["id"], "itemId": item["id"], "snippet": text,
                                   "snippetMatchRange": {"start": at, "end": at + needle.len()},
                                   "turnCursor": turn_cursor}),
                        ));
                        index += 1;
                    }
                }
            }
        }
        found.retain(|(o, i, _)| (*o, *i) >= from);
        let limit = match params["limit"].as_u64() {
            Some(l) => (l as usize).max(1),
            None if found.len() > 10 => return self.not_modeled(method),
            None => usize::MAX,
        };
        let next = found.get(limit).map(|(o, i, _)| {
            json!(
                json!({"threadId": thread_id, "searchTerm": term, "nextRolloutOrdinal": o,
                         "nextOccurrenceIndex": i})
                .to_string()
            )
        });
        let data: Vec<Value> = found.into_iter().take(limit).map(|f| f.2).collect();
        self.result(
            id,
            json!({"data": data, "nextCursor": next.unwrap_or(Value::Null)}),
        );
        Ok(())
    }

    /// `thread/timeline/list`: a thread's turn boundaries and items in rollout order, paged
    /// back from the end (`limit` entries, 25 by default, at least one) before the cursor's
    /// position, each page oldest first (probed on 0.163.0, 0.169.0 and 0.171.0: 75).
    pub(super) fn timeline_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let method = "thread/timeline/list";
        let given = params["threadId"].as_str().unwrap_or_default();
        crate::fake::threads::check_uuid(given, "thread")?;
        // An archived thread is refused first, one archived before anything was stored too
        // (`127_archived_and_deleted_thread_lookups`, fidelity s23230001_0079).
        if self.fake.store.load()["threads"][given]["archived"] == true {
            return Err(format!("thread {given} is archived"));
        }
        let Ok((thread_id, info)) = self.fake.stored(params, "thread", "thread not loaded: ")
        else {
            return self.unsupported(id, method);
        };
        // Nor is a legacy history (fidelity s28280001_0520, after its turns).
        if info["ephemeral"] == true
            || info["historyMode"] == "legacy"
            || info["turns"].as_array().is_none_or(Vec::is_empty)
        {
            return self.unsupported(id, method);
        }
        let before = match params["cursor"].as_str() {
            None => u64::MAX,
            Some(c) => serde_json::from_str::<Value>(c)
                .ok()
                .and_then(|v| v["position"].as_u64())
                .ok_or("invalid thread timeline cursor")?,
        };
        // Each entry with the cursor that names it (kind 0 a turn's start, 1 an item, 3 its end).
        let mut entries: Vec<(u64, Value, u8, Value)> = Vec::new();
        for t in info["turns"].as_array().into_iter().flatten() {
            let (Some(start), Some(end)) = (t["rolloutOrdinal"].as_u64(), t["endOrdinal"].as_u64())
            else {
                continue;
            };
            entries.push((
                start,
                json!({"type": "turnStarted", "position": start, "turnId": t["id"],
                       "startedAt": t["startedAt"]}),
                0,
                t["id"].clone(),
            ));
            let ords = t["itemOrdinals"].as_array().cloned().unwrap_or_default();
            for (item, ord) in t["items"].as_array().into_iter().flatten().zip(ords) {
                let at = ord.as_u64().unwrap_or(0);
                entries.push((
                    at,
                    json!({"type": "item", "position": at, "turnId": t["id"], "item": item}),
                    1,
                    item["id"].clone(),
                ));
            }
            entries.push((
                end,
                json!({"type": "turnCompleted", "position": end, "turnId": t["id"],
                       "status": t["status"], "error": t["error"], "startedAt": t["startedAt"],
                       "completedAt": t["completedAt"], "durationMs": t["durationMs"]}),
                3,
                t["id"].clone(),
            ));
        }
        entries.retain(|e| e.0 < before);
        entries.sort_by_key(|e| e.0);
        let limit = params["limit"].as_u64().map_or(25, |l| (l as usize).max(1));
        let from = entries.len().saturating_sub(limit);
        let next = (from > 0).then(|| {
            let (position, _, kind, key) = &entries[from];
            json!(
                json!({"threadId": thread_id, "position": position, "kind": kind, "id": key})
                    .to_string()
            )
        });
        let data: Vec<Value> = entries.drain(from..).map(|e| e.1).collect();
        self.result(
            id,
            json!({"data": data, "nextCursor": next.unwrap_or(Value::Null),
                   "activeRealtimeSessionAtPageStart": null}),
        );
        Ok(())
    }

    /// `thread/turns/list`: pages of the stored turns by rollout position (newest first by
    /// default), the real server's cursors, summary items by default.
    pub(super) fn turns_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.fake.stored(params, "thread", "thread not loaded: ")?;
        if info["ephemeral"] == true {
            return Err("ephemeral threads do not support thread/turns/list".into());
        }
        // Its rollout is written with the first user message: before that there is nothing to
        // page (0.171.0, a turn/start refused, then thread/turns/list: fidelity seed 20261207).
        if !crate::fake::threads::materialized(&info) {
            return Err(format!(
                "thread {thread_id} is not materialized yet; thread/turns/list is unavailable \
                 before first user message"
            ));
        }
        // A cursor has the shape this list gives out: for this thread, a turn position with its
        // anchor flag (a legacy history's: a turn id with its flag) (fidelity s9090001_0007;
        // probed on 0.171.0: a cursor of another thread, scope or with a field missing is
        // refused).
        let bad_cursor = params["cursor"].as_str().filter(|c| {
            if info["historyMode"] == "legacy" {
                let v: Value = serde_json::from_str(c).unwrap_or(Value::Null);
                !(v["includeAnchor"].is_boolean() && v["turnId"].is_string())
            } else {
                !crate::fake::threads::valid_history_cursor(c, &thread_id, "turns")
            }
        });
        self.history_checks(&thread_id, &info, bad_cursor)?;
        self.result(id, self.turns_page(&thread_id, &info, params));
        Ok(())
    }

    /// The checks both history lists make before paging: the cursor, and a thread stored
    /// without a rollout (0.171.0 checks the cursor first, 0.163.0 and 0.169.0 the history:
    /// `120_history_of_a_thread_stored_without_rollout`).
    fn history_checks(
        &self,
        thread_id: &str,
        info: &Value,
        bad_cursor: Option<&str>,
    ) -> Result<(), String> {
        let rolloutless = crate::fake::threads::rolloutless(info);
        if rolloutless && self.fake.turn_facts.history_lineage_before_cursor {
            return Err(crate::fake::threads::missing_rollout(thread_id));
        }
        if let Some(c) = bad_cursor {
            return Err(format!("invalid cursor: {c}"));
        }
        if rolloutless {
            return Err(crate::fake::threads::missing_rollout(thread_id));
        }
        Ok(())
    }

    /// A page of a thread's turns (`thread/turns/list`, `thread/resume`'s `initialTurnsPage`).
    pub(super) fn turns_page(&self, thread_id: &str, info: &Value, params: &Value) -> Value {
        let view = params["itemsView"].as_str().unwrap_or("summary");
        let info = super::view::legacy_numbered(info);
        let turns: Vec<(u64, &Value)> = info["turns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| (t["rolloutOrdinal"].as_u64().unwrap_or(0), t))
            .collect();
        // A legacy history's cursors name a turn by its id, `{"turnId", "includeAnchor"}`
        // (0.171.0, `89_legacy_history_items`): read as the turn's position here.
        let legacy = info["historyMode"] == "legacy";
        let ordinal_of = |id: &str| turns.iter().find(|(_, t)| t["id"] == id).map(|(o, _)| *o);
        let id_of = |o: u64| {
            turns
                .iter()
                .find(|(x, _)| *x == o)
                .map(|(_, t)| t["id"].clone())
        };
        let mut params = params.clone();
        if legacy {
            let given: Value = params["cursor"]
                .as_str()
                .and_then(|c| serde_json::from_str(c).ok())
                .unwrap_or(Value::Null);
            if let Some(o) = given["turnId"].as_str().and_then(ordinal_of) {
                params["cursor"] = json!(json!({"rolloutOrdinal": o,
                    "includeAnchor": given["includeAnchor"]})
                .to_string());
            }
        }
        let (page, next, back) = page(turns.clone(), &params, params["sortDirection"] != "asc");
        let cursor = |o: Option<u64>, include: bool| match (legacy, o.and_then(id_of)) {
            (true, Some(id)) => {
                json!(json!({"turnId": id, "includeAnchor": include}).to_string())
            }
            (true, None) => Value::Null,
            (false, _) => rollout_cursor(thread_id, o, include, "turns"),
        };
        let data: Vec<Value> = page
            .iter()
            .map(|t| self.turn_payload(thread_id, t, view))
            .collect();
        json!({"data": data, "nextCursor": cursor(next, false),
               "backwardsCursor": cursor(back, true)})
    }

    pub(super) fn thread_list(&self, id: &Value, params: &Value) -> Result<(), String> {
        let threads = self.listed_threads(params, false)?;
        let (threads, next, back) = page_threads(threads, params);
        let mut read_states = Map::new();
        for (_, t, r) in &threads {
            if !r.is_null() {
                read_states.insert(t["id"].as_str().unwrap_or_default().to_string(), r.clone());
            }
        }
        let data: Vec<Value> = threads.into_iter().map(|(_, t, _)| t).collect();
        self.result(
            id,
            json!({"data": data, "readStates": read_states, "nextCursor": next,
                   "backwardsCursor": back}),
        );
        Ok(())
    }

    /// `thread/search`: the threads `thread/list` would list for the same params whose
    /// history holds the term, any case, each with a snippet of the first text that holds it
    /// (see [`crate::fake::search`]), paged as the list pages them. `None`: a listed thread
    /// whose snippet the fake cannot write exactly (the answer is then not modeled).
    pub(super) fn thread_search_results(&self, params: &Value) -> Result<Option<Value>, String> {
        let term = params["searchTerm"].as_str().unwrap_or_default().trim();
        let data = self.fake.store.load();
        let mut found = Vec::new();
        for entry in self.listed_threads(params, true)? {
            let tid = entry.1["id"].as_str().unwrap_or_default().to_string();
            let info = &data["threads"][&tid];
            match crate::fake::search::snippet(
                info,
                term,
                &self.fake.turn_facts,
                crate::fake::shell::SHELL,
            ) {
                Some(Some(s)) => found.push((entry, s)),
                Some(None) => {}
                None => return Ok(None),
            }
        }
        let snippets: Map<String, Value> = found
            .iter()
            .map(|(e, s)| (e.1["id"].as_str().unwrap_or_default().to_string(), json!(s)))
            .collect();
        let (threads, next, back) =
            page_threads(found.into_iter().map(|(e, _)| e).collect(), params);
        let data: Vec<Value> = threads
            .into_iter()
            .map(|(_, t, _)| {
                let snippet = snippets[t["id"].as_str().unwrap_or_default()].clone();
                json!({"thread": t, "snippet": snippet})
            })
            .collect();
        Ok(Some(
            json!({"data": data, "nextCursor": next, "backwardsCursor": back}),
        ))
    }

    /// The threads `thread/list` lists for `params`, newest first, with their read states, once
    /// its checks pass. `by_content`: a search's listing, whose term is matched against the
    /// history (by the caller), not the title and preview.
    fn listed_threads(
        &self,
        params: &Value,
        by_content: bool,
    ) -> Result<Vec<(i64, Value, Value)>, String> {
        let archived = params["archived"].as_bool() == Some(true);
        // A project named must exist, checked after the thread ids parsed first and the
        // originators, before the lineage filters (117_thread_list_project,
        // `138_thread_list_originators_refused` on every version).
        let project = params["projectId"].as_str();
        let check_project = || match project {
            Some("") => Err(format!(
                "{}projectId must not be empty",
                crate::fake::rpc::INVALID_PARAMS_PREFIX
            )),
            Some(p) if !self.project_exists(p) => Err(format!(
                "{}project not found: {p}",
                crate::fake::rpc::INVALID_PARAMS_PREFIX
            )),
            _ => Ok(()),
        };
        let facts = &self.fake.turn_facts;
        // The included ids are parsed first, then the excluded ones, as invalid params (fidelity
        // s9090001_0555, s11110001_0236; probed on 0.171.0); before 0.171.0 the excluded ones
        // first, the included ones after the lineage filters and the section sort
        // (`94_bedrock_provider_write_excluded_ids`, `136_thread_list_section_checks`).
        let check_ids = |keys: &[(&str, &str)]| {
            for (key, what) in keys {
                for listed in params[*key].as_array().into_iter().flatten() {
                    if let Err(e) =
                        crate::fake::threads::check_uuid(listed.as_str().unwrap_or_default(), what)
                    {
                        return Err(format!("{}{e}", crate::fake::rpc::INVALID_PARAMS_PREFIX));
                    }
                }
            }
            Ok(())
        };
        const INCLUDED: (&str, &str) = ("includedThreadIds", "included thread");
        const EXCLUDED: (&str, &str) = ("excludedThreadIds", "excluded thread");
        let ids_late = facts.thread_list_ids_after_section;
        if ids_late {
            check_ids(&[EXCLUDED])?;
        } else {
            check_ids(&[INCLUDED, EXCLUDED])?;
        }
        // No originator filter here (fidelity s26260001_0055, s26260001_0188).
        if params["originators"]
            .as_array()
            .is_some_and(|o| !o.is_empty())
        {
            return Err(format!(
                "{}originator filtering is not supported by the local app-server",
                crate::fake::rpc::INVALID_PARAMS_PREFIX
            ));
        }
        check_project()?;
        // Attached threads are listed only for a search (0.169.0 on;
        // `136b_thread_list_attached_needs_search`, fidelity s25250001_0090).
        let searched = params["searchTerm"]
            .as_str()
            .is_some_and(|t| !t.trim().is_empty());
        if params["includeAttachedThreads"] == true
            && !searched
            && !facts.thread_list_attached_unchecked
        {
            return Err("includeAttachedThreads requires a non-empty searchTerm".into());
        }
        // Sorting by section position needs a section (fidelity s25250001_0295): checked after
        // the lineage filters, before the cursor (0.163.0: before the attachment filter).
        let check_section = || {
            if params["sortKey"] == "section_position" && params["sectionId"].is_null() {
                return Err("section-position sorting requires a section filter".to_string());
            }
            Ok(())
        };
        let section_early = facts.thread_list_section_before_attachment;
        // An attachment filter excludes the lineage ones, then its id is parsed (fidelity
        // s7070001_0819).
        let check_attached = || {
            if let Some(attached) = params["attachedToThreadId"].as_str() {
                if !params["parentThreadId"].is_null() || !params["ancestorThreadId"].is_null() {
                    return Err(
                        "attachedToThreadId cannot be combined with parentThreadId or \
                                ancestorThreadId"
                            .to_string(),
                    );
                }
                crate::fake::threads::check_uuid(attached, "attached thread parent")?;
            }
            Ok(())
        };
        if !section_early {
            check_attached()?;
        }
        // The two lineage filters exclude each other, before either is parsed (fidelity
        // s33330001_0169 on 0.163.0; turn scenario 198 on every version).
        if !params["parentThreadId"].is_null() && !params["ancestorThreadId"].is_null() {
            return Err("parentThreadId and ancestorThreadId are mutually exclusive".into());
        }
        // Sub-agent threads are not modeled: no thread here has a parent.
        let parent = params["parentThreadId"].as_str();
        if let Some(p) = parent {
            crate::fake::threads::check_uuid(p, "parent thread")?;
        }
        if let Some(a) = params["ancestorThreadId"].as_str() {
            crate::fake::threads::check_uuid(a, "ancestor thread")?;
        }
        check_section()?;
        if section_early {
            check_attached()?;
        }
        if ids_late {
            check_ids(&[INCLUDED])?;
        }
        // The cursors are RFC 3339 times (those this list gives out); anything else is refused.
        if let Some(c) = params["cursor"].as_str() {
            if !rfc3339(c) {
                return Err(format!("invalid cursor: {c}"));
            }
        }
        let data = self.fake.store.load();
        let mut threads: Vec<(i64, Value, Value)> = data["threads"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, info)| info["archived"].as_bool().unwrap_or(false) == archived)
            .filter(|(_, info)| !info["ephemeral"].as_bool().unwrap_or(false))
            .filter(|_| parent.is_none())
            .filter(|(_, info)| project.is_none_or(|p| info["projectId"] == p))
            // Source kinds named: a thread of one of them; every thread here is an interactive
            // `vscode` one (none or an empty list: the interactive kinds; fidelity
            // s38380001_0258 on 0.169.0, turn scenario 223).
            .filter(|_| {
                params["sourceKinds"]
                    .as_array()
                    .filter(|k| !k.is_empty())
                    .is_none_or(|k| k.iter().any(|x| x == "vscode"))
            })
            // The ids asked for only (an empty list: none), less those excluded (the schema's
            // filters; fidelity s34340001_0950: `includedThreadIds: []` lists nothing).
            .filter(|(tid, _)| {
                params["includedThreadIds"]
                    .as_array()
                    .is_none_or(|ids| ids.iter().any(|i| i == tid.as_str()))
            })
            .filter(|(tid, _)| {
                !params["excludedThreadIds"]
                    .as_array()
                    .is_some_and(|ids| ids.iter().any(|i| i == tid.as_str()))
            })
            // Providers named: a thread of one of them (none or an empty list: any; turn
            // scenario 160 on every version).
            .filter(|(_, info)| {
                params["modelProviders"]
                    .as_array()
                    .filter(|p| !p.is_empty())
                    .is_none_or(|p| p.iter().any(|m| m == self.provider_of(info).as_str()))
            })
            // A section named lists its threads; a search, the threads whose title or preview
            // has the term, any case (`136_thread_list_section_checks`,
            // `136b_thread_list_attached_needs_search`).
            .filter(|(_, info)| {
                params["sectionId"]
                    .as_str()
                    .is_none_or(|s| info["section"] == s)
            })
            .filter(|(_, info)| {
                let term = params["searchTerm"].as_str().unwrap_or_default().trim();
                let has = |k: &str| {
                    info[k]
                        .as_str()
                        .is_some_and(|t| t.to_lowercase().contains(&term.to_lowercase()))
                };
                by_content || term.is_empty() || has("name") || has("preview")
            })
            // Attached threads: those of the thread named, empty ones too; otherwise hidden
            // unless a search asks for them (`207_attached_fork`).
            .filter(|(_, info)| match params["attachedToThreadId"].as_str() {
                Some(a) => info["attachedToThreadId"] == a,
                None => {
                    info["attachedToThreadId"].is_null() || params["includeAttachedThreads"] == true
                }
            })
            // A thread nobody has said anything in yet is not listed (seen on 0.171.0), but
            // among the archived ones (turn scenario 249 on every version).
            .filter(|(_, info)| {
                archived
                    || params["attachedToThreadId"].is_string()
                    || info["preview"].as_str().is_some_and(|p| !p.is_empty())
            })
            .map(|(tid, info)| {
                // Newest first by the millisecond (two threads updated in one second: the
                // later one first, as a fork listed before its source shows on 0.171.0).
                let updated = info["updatedAtMs"]
                    .as_i64()
                    .unwrap_or_else(|| info["updatedAt"].as_i64().unwrap_or(0) * 1000);
                let mut t = self.thread_payload(tid, info, false);
                // Listed threads do not say whether they take direct input.
                t["canAcceptDirectInput"] = Value::Null;
                // Nor where they came from: the list is read from codex's thread index, which
                // keeps no `threadSource` (`thread/read` and a resume still show it), so every
                // listed thread has a read state, a client's own kind too (0.163.0, 0.169.0 and
                // 0.171.0).
                t["threadSource"] = Value::Null;
                // Its cwd is the one the thread started in (turn scenarios 169 and 169b: after a
                // turn in a new cwd, and after a restart and resume there).
                if let Some(c) = info.get(crate::fake::settings::INDEX_CWD) {
                    t["cwd"] = c.clone();
                }
                // Nor, after 0.163.0, the thread a fork came from
                // (`123_fork_of_a_thread_in_a_project`).
                if !self.fake.turn_facts.thread_list_shows_fork_origin {
                    t["forkedFromId"] = Value::Null;
                }
                (updated, t, revision_state(tid, info))
            })
            // A cwd filter: the threads listed with one of its paths, each resolved against the
            // server's own cwd (`normalize_thread_list_cwd_filters`: a relative path such as
            // `sub/` names a directory under it; fidelity s40400001_0083).
            .filter(|(_, t, _)| {
                cwd_filter(&params["cwd"], &self.fake.cwd)
                    .is_none_or(|cwds| cwds.iter().any(|c| t["cwd"] == c.as_str()))
            })
            .collect();
        threads.sort_by_key(|(u, _, _)| std::cmp::Reverse(*u));
        Ok(threads)
    }

    /// The thread's settings with the tier it keeps unshown: what a resume compares to decide
    /// whether it wrote settings (a requested tier the model does not advertise is a change:
    /// kept fidelity session s18180001_0157).
    fn settings_with_tier(&self, info: &Value) -> Value {
        let mut s = self.thread_settings(info);
        if let Some(t) = settings::configured_tier(info) {
            s["serviceTier"] = json!(t);
        }
        s
    }

    /// An archived thread is neither resumed nor forked by id (fidelity s29290001_0736:
    /// archived before its first turn; turn scenario 167 on every version).
    fn refuse_archived(&self, params: &Value) -> Result<(), String> {
        let given = params["threadId"].as_str().unwrap_or_default();
        if self.fake.store.load()["threads"][given]["archived"] == true {
            return Err(format!(
                "session {given} is archived. Run `codex unarchive {given}` to unarchive it \
                 first."
            ));
        }
        Ok(())
    }

    pub(super) fn thread_archive(
        &self,
        id: &Value,
        params: &Value,
        archive: bool,
    ) -> Result<(), String> {
        let missing = if archive {
            "no rollout found for thread id "
        } else {
            "no archived rollout found for thread id "
        };
        // Both parse a "session id" (fidelity s7070001_0507; probed on 0.171.0).
        let (thread_id, info) = self.fake.stored(params, "session", missing)?;
        // A loaded thread has its rollout open (codex: the live thread is its writer); an
        // ephemeral one writes none (fidelity s41410001_0144: not found; turn scenario 234).
        if !archive && info["ephemeral"] != true && lock(&self.fake.loaded).contains(&thread_id) {
            return Err(format!("thread {thread_id} already has an active writer"));
        }
        if info["ephemeral"] == true || (!archive && info["archived"] != true) {
            return Err(format!("{missing}{thread_id}"));
        }
        let info = self.fake.store.update(|d| {
            let t = &mut d["threads"][&thread_id];
            // A loaded thread not stored yet is written first, then archived (turn scenario
            // 249 on every version; fidelity s44440001_0983).
            if archive {
                crate::fake::threads::write_rollout(t);
            }
            t["archived"] = json!(archive);
            t.clone()
        });
        // The rollout moves between `sessions/` and `archived_sessions/`, as on the real server.
        let (from, to) = (
            self.fake.rollout_path_as(&thread_id, !archive),
            self.fake.rollout_path_as(&thread_id, archive),
        );
        if let Some(dir) = to.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::rename(from, to);
        if archive {
            // Archiving unloads the thread.
            if lock(&self.fake.loaded).remove(&thread_id) {
                self.notify(
                    "thread/status/changed",
                    json!({"threadId": thread_id, "status": {"type": "notLoaded"}}),
                );
            }
            self.result(id, json!({}));
            self.notify("thread/archived", json!({"threadId": thread_id}));
        } else {
            self.result(
                id,
                json!({"thread": self.thread_payload(&thread_id, &info, false)}),
            );
            self.notify("thread/unarchived", json!({"threadId": thread_id}));
        }
        Ok(())
    }

    pub(super) fn thread_name_set(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) =
            self.fake
                .stored(params, "thread", "no rollout found for thread id ")?;
        if info["ephemeral"] == true {
            return Err(format!(
                "ephemeral thread does not support metadata updates: {thread_id}"
            ));
        }
        // An archived thread's rollout is not among the sessions codex names (fidelity
        // s34340001_0770; turn scenario 212 on every version).
        if info["archived"] == true {
            return Err(format!("no rollout found for thread id {thread_id}"));
        }
        let name = params["name"].clone();
        self.fake.store.update(|d| {
            d["threads"][&thread_id]["name"] = name.clone();
            crate::fake::threads::write_rollout(&mut d["threads"][&thread_id]);
        });
        self.result(id, json!({}));
        self.notify(
            "thread/name/updated",
            json!({"threadId": thread_id, "threadName": name}),
        );
        Ok(())
    }
}

/// The sandbox mode a thread's setting comes back as in a fork or a cold resume: its mode, or
/// the mode of a policy a turn gave; none for workspace-write (the configured sandbox then).
/// Seen on 0.171.0 (both) and 0.163.0 (resume).
fn setting_mode(info: &Value) -> Option<String> {
    match info["sandboxSetting"].as_str()? {
        "policy" => match info["sandbox"]["type"].as_str()? {
            "readOnly" => Some("read-only".into()),
            "dangerFullAccess" => Some("danger-full-access".into()),
            _ => None,
        },
        s => match s.split_once(':')? {
            ("mode", m) if m != "workspace-write" => Some(m.to_string()),
            _ => None,
        },
    }
}

/// The sandbox setting a thread taken up again without a sandbox of its own keeps, with its
/// sandbox as it was (codex takes the thread's stored permission profile back; seen on 0.163.0,
/// 0.169.0 and 0.171.0): a sandbox set over no workspace roots (`environments: []`: it writes
/// `/tmp` only, not the cwd the result shows, whatever cwd the resume or a later turn gives),
/// kept as `rootless:<mode>`. Other settings come back through [`resumed_params`].
/// No roots are `environments: []`, or `runtimeWorkspaceRoots: []` at start (turn scenario
/// `203_fork_of_a_rootless_start`, fidelity s34340001_0143).
fn kept_sandbox(info: &Value, params: &Value) -> Option<Value> {
    let given = |v: &Value, k: &str| v.get(k).is_some_and(|x| !x.is_null());
    if given(params, "sandbox")
        || given(params, "permissions")
        || given(&params["config"], "sandbox_mode")
        || given(&params["config"], "default_permissions")
    {
        return None;
    }
    let setting = info["sandboxSetting"].as_str()?;
    match setting.split_once(':')? {
        ("mode", m) if crate::fake::settings::works_nowhere(info) => {
            Some(json!(format!("rootless:{m}")))
        }
        ("rootless", _) => Some(json!(setting)),
        _ => None,
    }
}

/// A page of listed threads (newest first) and its cursors: `limit` threads a page, one at
/// least (`limit: 0` lists one: turn scenario 177, fidelity s30300001_0203); the next page's
/// cursor the last one's second and id, the way back the first one's time (turn scenario 177).
fn page_threads(
    mut threads: Vec<(i64, Value, Value)>,
    params: &Value,
) -> (Vec<(i64, Value, Value)>, Value, Value) {
    let limit = params["limit"]
        .as_u64()
        .map_or(usize::MAX, |l| (l as usize).max(1));
    let more = threads.len() > limit;
    threads.truncate(limit);
    let iso = |u: i64| {
        let (y, mo, d, h, mi, s) = civil(u.div_euclid(1000));
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")
    };
    let next = match threads.last().filter(|_| more) {
        Some((u, t, _)) => json!(format!(
            "{}Z|{}",
            iso(*u),
            t["id"].as_str().unwrap_or_default()
        )),
        None => Value::Null,
    };
    let back = match threads.first() {
        Some((u, _, _)) => json!(format!("{}.000Z", iso(*u))),
        None => Value::Null,
    };
    (threads, next, back)
}

/// `thread/list`'s cwd filter, one path or several, as absolute paths (none: no filter).
fn cwd_filter(given: &Value, server_cwd: &Path) -> Option<Vec<String>> {
    let paths = match given {
        Value::String(one) => vec![one.clone()],
        Value::Array(_) => crate::fake::state::strings(given),
        _ => return None,
    };
    Some(
        paths
            .iter()
            .map(|c| settings::resolve_path(c, server_cwd))
            .collect(),
    )
}

/// How long codex takes to answer a fork that succeeds: the least of 69 recorded (13.0 ms on
/// 0.163.0, 14.5 on 0.171.0, 17.2 on 0.169.0; medians 28–41 ms, turn corpus), so a
/// notification the real server sends that soon after the request always comes before the
/// answer (fidelity s40400001_0047: a Windows sandbox setup's failure, 5–9 ms after the fork
/// was sent, before its answer in both real runs).
const FORK_ANSWER: std::time::Duration = std::time::Duration::from_millis(13);

/// A cold `thread/resume`'s settings as `thread/start` params: the thread's own (its sandbox
/// setting as a fork keeps it, its effort unless the model changes), the request's over them.
fn resumed_params(info: &Value, params: &Value, server_cwd: &Path) -> Value {
    let mut p = Map::new();
    for (from, to) in [
        ("cwd", "cwd"),
        ("approvalPolicy", "approvalPolicy"),
        ("approvalsReviewer", "approvalsReviewer"),
        ("model", "model"),
        ("provider", "modelProvider"),
        ("serviceTier", "serviceTier"),
        ("roots", "runtimeWorkspaceRoots"),
    ] {
        if !info[from].is_null() {
            p.insert(to.into(), info[from].clone());
        }
    }
    match info["sandboxSetting"]
        .as_str()
        .and_then(|s| s.split_once(':'))
    {
        Some(("profile", id)) => {
            p.insert("permissions".into(), json!(id));
        }
        _ => {
            if let Some(m) = setting_mode(info) {
                p.insert("sandbox".into(), json!(m));
            }
        }
    }
    // `serviceTier: null` asks for the standard tier; other nulls are absent.
    let given: Map<String, Value> = params
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| !v.is_null() || *k == "serviceTier")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if given.contains_key("sandbox") || given.contains_key("permissions") {
        p.remove("sandbox");
        p.remove("permissions");
    }
    // A new cwd takes the old one's place among the thread's roots.
    if let (Some(new), Some(old), Some(Value::Array(roots))) = (
        given.get("cwd").and_then(Value::as_str),
        info["cwd"].as_str(),
        p.get_mut("runtimeWorkspaceRoots"),
    ) {
        let new = settings::resolve_path(new, server_cwd);
        for r in roots.iter_mut() {
            if r == old {
                *r = json!(new);
            }
        }
    }
    let config_sets = |k: &str| given.get("config").and_then(|c| c.get(k)).is_some();
    let model_changed = resume_changes_model(params);
    // The thread's own settings are only defaults: the request's `config` map sets over them
    // as over config.toml (a cold resume with `config: {approval_policy: "never"}` runs
    // under never; seen on 0.171.0).
    for (key, thread_keys) in [
        ("approval_policy", &["approvalPolicy"][..]),
        ("approvals_reviewer", &["approvalsReviewer"]),
        ("sandbox_mode", &["sandbox", "permissions"]),
        ("default_permissions", &["sandbox", "permissions"]),
        ("model", &["model"]),
        ("model_provider", &["modelProvider"]),
        ("service_tier", &["serviceTier"]),
    ] {
        if config_sets(key) {
            for k in thread_keys {
                p.remove(*k);
            }
        }
    }
    // Any of those and the thread's own model is not taken up at all: the configuration's is
    // (codex's `merge_persisted_resume_metadata`; fidelity s30300001_0806, turn scenario 171:
    // a resume naming only the provider runs the configured model).
    if model_changed {
        p.remove("model");
        p.remove("modelProvider");
    }
    p.extend(given);
    let mut v = Value::Object(p);
    if !model_changed && !info["effort"].is_null() {
        v["config"]["model_reasoning_effort"] = info["effort"].clone();
    }
    v
}

/// Whether a resume names a model, a provider or an effort (its params or its `config`): then
/// the thread's own model is not taken up (codex's `merge_persisted_resume_metadata`).
fn resume_changes_model(params: &Value) -> bool {
    let set = |v: &Value| !v.is_null();
    set(&params["model"])
        || set(&params["modelProvider"])
        || params["config"].get("model").is_some()
        || params["config"].get("model_reasoning_effort").is_some()
}

/// Whether `s` has the shape of an RFC 3339 time (`2026-12-03T21:53:20.000Z`, an offset for
/// `Z`, any fraction).
pub(super) fn rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let fixed = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !fixed {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &f[n..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}

/// 0.163.0 rejoins a loaded thread with its last turn, when interrupted, as its live history
/// builder holds it: the builder numbers messages and reasoning `item-N` over every turn since
/// the last one that completed or failed (an interrupt does not reset it), a tool call keeps
/// its call id, a legacy history's too (turn scenario `293`: item-2 after an interrupted turn
/// of one item; `293b`, a legacy history, shows its command).
fn renumber_interrupted_turn(turns: &mut Value, info: &Value) {
    let Some(turns) = turns.as_array_mut() else {
        return;
    };
    if turns.last().is_none_or(|t| t["status"] != "interrupted") {
        return;
    }
    // A legacy history's: the stored items, with no times as that history has none (0.168.0).
    let stored = info["turns"].as_array().and_then(|t| t.last());
    if let (true, Some(stored)) = (info["historyMode"] == "legacy", stored) {
        if let Some(last) = turns.last_mut() {
            last["items"] = stored["items"].clone();
            for item in last["items"].as_array_mut().into_iter().flatten() {
                item["startedAtMs"] = Value::Null;
                item["completedAtMs"] = Value::Null;
            }
        }
    }
    let numbered = |i: &Value| {
        matches!(
            i["type"].as_str(),
            Some("userMessage" | "agentMessage" | "reasoning")
        )
    };
    let since = turns
        .iter()
        .rposition(|t| t["status"] == "completed" || t["status"] == "failed")
        .map_or(0, |i| i + 1);
    let last = turns.len() - 1;
    let mut n = turns[since..last]
        .iter()
        .flat_map(|t| t["items"].as_array().into_iter().flatten())
        .filter(|i| numbered(i))
        .count();
    for item in turns[last]["items"].as_array_mut().into_iter().flatten() {
        if numbered(item) {
            n += 1;
            item["id"] = json!(format!("item-{n}"));
        }
    }
}
