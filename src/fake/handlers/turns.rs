//! `turn/*`, `thread/goal/*`, `thread/compact/start`: the requests that start, steer and stop
//! the turn engine's turns, and the settings a turn carries.

use super::view::H;
use crate::fake::settings;
use crate::fake::state::{lock, now_secs};
use crate::fake::turn::{self, ServerTurn, TurnCtl};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl H<'_> {
    /// `turn/start`'s settings stay with the thread; when they change what its settings show,
    /// the real server says so (before the turn's result, mostly: the two race). A refused
    /// `turn/start` applies nothing.
    pub(super) fn apply_turn_settings(
        &self,
        thread_id: &str,
        params: &Value,
    ) -> Result<Value, String> {
        let applied = self.apply_settings(thread_id, params, true)?;
        // A turn that changes what the thread asks approval for or runs under (approval policy,
        // reviewer, sandbox) has codex refresh the thread's MCP servers first: each running one
        // is announced `ready` again, before the settings (turn scenario 272 on every version;
        // fidelity s50500001_0534, _0860, _0892, both real runs: a model's effort, a personality
        // or a multi-agent mode changes nothing).
        // A new cwd starts them again instead (see `mcp_restart_thread`): the cwd the thread's
        // tools work in, its first environment's when it names environments (fidelity
        // s56560001_0106 on 0.171.0, both real runs: a turn's own `cwd` beside unchanged
        // environments starts nothing).
        let moved = |k: &str| applied.settings[k] != applied.before[k];
        let place = |s: &Value| match s["environments"].as_array().and_then(|e| e.first()) {
            Some(env) => env["cwd"].clone(),
            None => s["cwd"].clone(),
        };
        if place(&applied.settings) != place(&applied.before) {
            let cwd = place(&applied.settings);
            self.mcp_restart_thread(thread_id, cwd.as_str().unwrap_or_default());
        } else if ["approvalPolicy", "approvalsReviewer", "sandboxPolicy"]
            .iter()
            .any(|k| moved(k))
        {
            self.mcp_refresh_thread(thread_id);
        }
        if applied.changed {
            self.announce_settings(thread_id, &applied.settings);
        }
        Ok(applied.thread)
    }

    /// `thread/settings/update`: the same settings as a turn's, applied to a loaded thread. The
    /// real server answers first; the thread applies the update on its own task and announces
    /// what it then holds when that differs from what it last announced (app-server
    /// `ThreadSettingsApplied` → `note_thread_settings`). On a thread with a rollout that took
    /// 0.2–6.8 ms after the result, median 1.9 (23 updates after a turn on 0.171.0: turn
    /// scenario `101`, fidelity s13130001_0149): a client's next quick requests are often
    /// answered first, and updates sent faster than that are announced once, as the state then
    /// stands (8 of 12 and 4 of 10 announced in two runs of back-to-back updates). Before its
    /// first turn the thread announces within 0.25 ms, each update on its own.
    pub(super) fn thread_settings_update(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.fake.loaded_thread(params)?;
        let applied = self.apply_settings(&thread_id, params, false)?;
        self.result(id, json!({}));
        // A thread with no rollout (not yet written, or ephemeral) announces at once.
        if !crate::fake::threads::has_rollout(&info) {
            if applied.changed {
                self.announce_settings(&thread_id, &applied.settings);
            }
            return Ok(());
        }
        // One announcement is on its way: it will show this update too.
        if lock(&self.fake.settings_unannounced)
            .insert(thread_id.clone(), applied.before)
            .is_some()
        {
            return Ok(());
        }
        let conn = Arc::clone(self.c);
        std::thread::spawn(move || {
            std::thread::sleep(SETTINGS_APPLIED);
            H { c: &conn }.settings_applied(&thread_id);
        });
        Ok(())
    }

    /// The thread applies the updates it was sent and announces what it then holds, if that
    /// differs from what it last announced; nothing when none is pending. A thread shutting down
    /// (deleted) applies them first (fidelity s32320001_0463: the update announced before the
    /// deletion's status, never after).
    pub(super) fn settings_applied(&self, thread_id: &str) {
        let Some(before) = lock(&self.fake.settings_unannounced).remove(thread_id) else {
            return;
        };
        let info = self.fake.store.load()["threads"][thread_id].clone();
        let now = self.thread_settings(&info);
        if self.settings_shown(thread_id, &now) != self.settings_shown(thread_id, &before) {
            self.announce_settings(thread_id, &now);
        }
    }

    fn announce_settings(&self, thread_id: &str, settings: &Value) {
        self.notify(
            "thread/settings/updated",
            json!({"threadId": thread_id, "threadSettings": settings}),
        );
    }

    /// Settings as this version's notification shows them: a field it lacks changes nothing
    /// (0.163.0 says nothing when only a turn's `environments` moves).
    fn settings_shown(&self, thread_id: &str, settings: &Value) -> Value {
        let mut m = json!({"method": "thread/settings/updated",
                           "params": {"threadId": thread_id, "threadSettings": settings}});
        if let Some(p) = &self.fake.projector {
            p.project(&mut m, None);
        }
        m
    }

    /// Applies a turn's (or `thread/settings/update`'s) settings to the thread.
    fn apply_settings(
        &self,
        thread_id: &str,
        params: &Value,
        turn: bool,
    ) -> Result<Applied, String> {
        let facts = &self.fake.turn_facts;
        let texts = settings::ModeTexts {
            plan: facts.plan_mode_instructions.as_deref(),
            default: facts.default_mode_instructions.as_deref(),
        };
        // One transaction: the settings are applied to the thread as it is now (another
        // connection or process may have changed it since the request began).
        let (next, settings, before, retaken) = self.fake.store.update(|d| {
            let info = d["threads"][thread_id].clone();
            let next =
                settings::for_turn(&self.fake.config(), &self.fake.cwd, &info, params, &texts)?;
            let before = self.thread_settings(&info);
            let mut next = next;
            // A turn that carries settings has codex write them (see `carries` below).
            let carries = settings::SETTING_PARAMS
                .iter()
                .any(|k| !params[*k].is_null())
                || params.get("serviceTier").is_some();
            // The personality a resumed session dropped (0.163.0) is shown gone by the first
            // turn that carries settings (`79b`); one that carries none leaves the thread as it
            // shows (fidelity s42420001_0143: no announcement).
            if turn && carries && next["personalityDropped"] == true {
                if let Some(t) = next.as_object_mut() {
                    t.remove("personalityDropped");
                    if params["personality"].is_null() {
                        t.remove("personality");
                    }
                }
            }
            let settings = self.thread_settings(&next);
            // The settings the thread's last turn wrote to its context: a `thread/settings/
            // update` since changed the thread but not them, and the next turn writes what
            // differs from them (turn scenario 184: an update of the approval policy, then a
            // turn, wrote the permissions' instructions and the world state).
            let written = info
                .get(WRITTEN_SETTINGS)
                .cloned()
                .unwrap_or_else(|| before.clone());
            if let Some(t) = next.as_object_mut() {
                t.remove(WRITTEN_SETTINGS);
            }
            let updates = next
                .as_object_mut()
                .and_then(|t| t.remove(SETTINGS_UPDATES))
                .and_then(|n| n.as_u64())
                .unwrap_or(0);
            if !turn && crate::fake::threads::has_rollout(&info) {
                // codex persists every update, changed or not (one rollout entry each: `184`).
                next[WRITTEN_SETTINGS] = written.clone();
                next[SETTINGS_UPDATES] = json!(updates + 1);
            }
            let before_turn = &written;
            if turn {
                // A turn that carries settings has codex write them to the rollout before it
                // starts (every time, changed or not), and a change of permissions adds their
                // instructions and world state after its start (fidelity s6060001_0056 and
                // _0135 on 0.171.0). A thread's first turn writes its settings anyway.
                // A `serviceTier` sent as null (the standard tier) is a setting too (fidelity
                // s29290001_0015: a second turn's null tier wrote the settings on 0.171.0).
                // A cold resume's own settings entry on versions that write one.
                let resumed = next
                    .as_object_mut()
                    .and_then(|t| t.remove("resumeSettingsWritten"))
                    .is_some();
                // The approvals reviewer is part of the permissions' instructions (fidelity
                // s31310001_0084: a second turn's `guardian_subagent`, two entries more).
                let permissions = [
                    "approvalPolicy",
                    "sandboxPolicy",
                    "activePermissionProfile",
                    "approvalsReviewer",
                ]
                .iter()
                .any(|k| settings[*k] != before_turn[*k])
                    // A workspace-write sandbox's instructions name the cwd it writes (turn
                    // scenarios 204c and 204d; read-only names none: 204e).
                    || (settings["sandboxPolicy"]["type"] == "workspaceWrite"
                        && settings["cwd"] != before_turn["cwd"]);
                // A model switch writes its message and the skills' instructions again; new
                // collaboration-mode instructions write theirs unless the model switched too
                // (turn scenario 111 on 0.171.0). Any of these adds the world state.
                let switched = settings["model"] != before_turn["model"];
                let mode_text = |s: &Value| {
                    s["collaborationMode"]["settings"]["developer_instructions"].clone()
                };
                let instructions = !switched && mode_text(&settings) != mode_text(before_turn);
                // A new cwd or new roots since the last turn's context write the environment
                // context again (fidelity s28280001_0673 on 0.171.0: a goal's turn, then a turn
                // in `./sub`; s28280001_0964: a resume that set the roots, then a turn).
                // So does a new file-system sandbox: the context names the permission profile's
                // file system (`<filesystem>`), not its network (turn scenario 288 on every
                // version: a network-only change writes the permissions' instructions alone;
                // fidelity s61610001_0899).
                let file_system = |s: &Value| {
                    let mut p = s["sandboxPolicy"].clone();
                    if let Some(t) = p.as_object_mut() {
                        t.remove("networkAccess");
                    }
                    p
                };
                let moved = info
                    .get(settings::CONTEXT_PLACE)
                    .is_some_and(|p| *p != settings::context_place(&next))
                    || file_system(&settings) != file_system(before_turn);
                let messages = u64::from(permissions)
                    + 2 * u64::from(switched)
                    + u64::from(instructions)
                    + u64::from(moved);
                let after = if messages > 0 { messages + 1 } else { 0 };
                next["rolloutPending"] = json!({"before": u64::from(carries) + u64::from(resumed)
                                                    + updates,
                                                "after": after});
            }
            // A personality the resumed session dropped (0.163.0) and a turn sets again is a
            // change to the session, whatever the thread showed (fidelity s36360001_0138 on
            // 0.163.0: the same personality as before the restart, announced).
            let retaken =
                turn && info["personalityDropped"] == true && !params["personality"].is_null();
            d["threads"][thread_id] = next.clone();
            Ok::<_, String>((next, settings, before, retaken))
        })?;
        let changed = retaken
            || self.settings_shown(thread_id, &settings) != self.settings_shown(thread_id, &before);
        Ok(Applied {
            thread: next,
            settings,
            before,
            changed,
        })
    }

    pub(super) fn goal_set(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.fake.loaded_with_goals(params)?;
        // codex's checks (`thread_goal_set_inner`): the objective, the budget, then a goal to
        // update when no objective makes one.
        let objective = params["objective"].as_str();
        if objective.is_some_and(|o| o.trim().is_empty()) {
            return Err("goal objective must not be empty".into());
        }
        let budget = &params["tokenBudget"];
        if (objective.is_some() || !budget.is_null()) && budget.as_i64().is_some_and(|b| b <= 0) {
            return Err("goal budgets must be positive when provided".into());
        }
        if objective.is_none() && !info["goal"].is_object() {
            return Err(format!(
                "cannot update goal for thread {thread_id}: no goal exists"
            ));
        }
        // The first goal set of a session that ran no turn waits for it to settle (see
        // `GOAL_SET_SETTLED`); what the server sends meanwhile comes first.
        let fresh = turn::fresh_sessions().remove(&thread_id);
        if let Some(left) = fresh.and_then(|at| turn::GOAL_SET_SETTLED.checked_sub(at.elapsed())) {
            self.flush_held();
            std::thread::sleep(left);
        }
        let now = now_secs();
        // One transaction: the goal as it is now (a running turn charges it tokens). An
        // existing goal is updated in place (its `createdAt` kept).
        let goal = self.fake.store.update(|d| {
            d["threads"][&thread_id]["materialized"] = json!(true);
            let mut goal = d["threads"][&thread_id]["goal"].clone();
            if !goal.is_object() {
                goal = turn::new_goal(&thread_id, "");
            }
            if let Some(o) = params["objective"].as_str() {
                goal["objective"] = json!(o);
            }
            if params["status"].is_string() {
                goal["status"] = params["status"].clone();
            }
            // An explicit null clears the budget; an absent one keeps it.
            if let Some(b) = params.get("tokenBudget") {
                goal["tokenBudget"] = b.clone();
            }
            goal["updatedAt"] = json!(now);
            let t = &mut d["threads"][&thread_id];
            if t["preview"].as_str().is_none_or(str::is_empty) {
                if let Some(o) = objective {
                    t["preview"] = json!(o);
                }
            }
            t["goal"] = goal.clone();
            goal
        });
        self.result(id, json!({"goal": goal}));
        self.notify(
            "thread/goal/updated",
            json!({"threadId": thread_id, "turnId": null, "goal": goal}),
        );
        let running = turn::running().get(&thread_id).cloned();
        match (goal["status"].as_str(), running) {
            // A running goal sees the new status at its next rollover.
            (Some(_), Some(ctl)) => ctl.set_goal_status(goal["status"].as_str().unwrap_or("")),
            // An active goal on an idle thread starts running on its own, as in codex; one
            // set on a thread not loaded here waits in the state database (turn scenario 140b).
            (Some("active"), None) if lock(&self.fake.loaded).contains(&thread_id) => {
                turn::start(self.c, &thread_id, ServerTurn::Goal)?;
            }
            _ => {}
        }
        Ok(())
    }

    pub(super) fn goal_get(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (_, info) = self.fake.loaded_with_goals(params)?;
        let goal = info.get("goal").cloned().unwrap_or(Value::Null);
        self.result(id, json!({"goal": goal}));
        Ok(())
    }

    pub(super) fn goal_clear(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, info) = self.fake.loaded_with_goals(params)?;
        let had = info["goal"].is_object();
        self.fake.store.update(|d| {
            if let Some(t) = d["threads"][&thread_id].as_object_mut() {
                t.remove("goal");
            }
        });
        self.result(id, json!({"cleared": had}));
        if had {
            self.notify("thread/goal/cleared", json!({"threadId": thread_id}));
        }
        Ok(())
    }

    pub(super) fn turn_start(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, _) = self.fake.loaded_thread(params)?;
        check_input(&params["input"])?;
        let nonempty = params["input"].as_array().is_some_and(|a| !a.is_empty());
        if !params["toolOutput"].is_null() && nonempty {
            return Err("`toolOutput` cannot be combined with nonempty `input`".into());
        }
        let info = self.apply_turn_settings(&thread_id, params)?;
        // Every turn on a model without metadata says so, before the turn's result.
        let model = self.model_of(&info);
        if let Some(message) = self.fake.catalog.unknown_model_warning(&model) {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
        turn::start_for_request(self.c, id, &thread_id, params)
    }

    /// `thread/shellCommand`: the user's command as a turn of its own (codex's order of
    /// checks: the command, then the thread; 54_user_shell_command).
    pub(super) fn shell_command(&self, id: &Value, params: &Value) -> Result<(), String> {
        let command = params["command"].as_str().unwrap_or_default();
        if command.trim().is_empty() {
            return Err("command must not be empty".into());
        }
        let (thread_id, _) = self.fake.loaded_thread(params)?;
        if turn::running().get(&thread_id).is_some() {
            // Run inside the turn already going: not modeled.
            return self.not_modeled("thread/shellCommand");
        }
        turn::start_shell(
            self.c,
            id,
            &thread_id,
            command,
            params["timeoutMs"].as_u64(),
        );
        Ok(())
    }

    pub(super) fn active_turn(&self, params: &Value, what: &str) -> Result<Arc<TurnCtl>, String> {
        let (thread_id, _) = self.fake.loaded_thread(params)?;
        // A shell command's turn not begun yet is not active (turn scenario 142).
        turn::running()
            .get(&thread_id)
            .filter(|c| !c.queued.load(Ordering::SeqCst))
            .cloned()
            .ok_or_else(|| format!("no active turn to {what}"))
    }

    pub(super) fn turn_interrupt(&self, id: &Value, params: &Value) -> Result<(), String> {
        let want = params["turnId"].as_str().unwrap_or_default();
        let ctl = self.active_turn(params, "interrupt").map_err(|e| {
            let thread_id = params["threadId"].as_str().unwrap_or_default();
            match turn::stale_turns().get(thread_id) {
                Some(stale) if stale != want && e.starts_with("no active turn") => {
                    format!("expected active turn id {want} but found {stale}")
                }
                _ => e,
            }
        })?;
        let current = ctl.turn_id();
        if want != current {
            return Err(format!(
                "expected active turn id {want} but found {current}"
            ));
        }
        ctl.await_flow();
        ctl.interrupt();
        ctl.wait_acked();
        self.result(id, json!({}));
        ctl.responded.store(true, Ordering::SeqCst);
        Ok(())
    }

    pub(super) fn turn_steer(&self, id: &Value, params: &Value) -> Result<(), String> {
        // In the real server's order of checks (`turn_steer_inner`, seen on 0.171.0).
        self.fake.loaded_thread(params)?;
        let want = params["expectedTurnId"].as_str().unwrap_or_default();
        if want.is_empty() {
            return Err("expectedTurnId must not be empty".into());
        }
        check_input(&params["input"])?;
        let ctl = self.active_turn(params, "steer")?;
        let current = ctl.turn_id();
        if want != current {
            return Err(format!(
                "expected active turn id `{want}` but found `{current}`"
            ));
        }
        if params["input"].as_array().is_none_or(Vec::is_empty) {
            return Err("input must not be empty".into());
        }
        ctl.await_flow();
        ctl.steer(params.clone(), || {
            self.result(id, json!({"turnId": current}))
        });
        Ok(())
    }

    pub(super) fn compact_start(&self, id: &Value, params: &Value) -> Result<(), String> {
        let (thread_id, _) = self.fake.loaded_thread(params)?;
        self.result(id, json!({}));
        // The real server asks the model for the summary: that takes the next scripted turn.
        turn::start(self.c, &thread_id, ServerTurn::Compaction).map(|_| ())
    }
}

/// What codex refuses in a turn's input before anything else (0.171.0): an image it would have
/// to fetch.
pub(super) fn check_input(input: &Value) -> Result<(), String> {
    let remote = input.as_array().into_iter().flatten().any(|i| {
        i["type"] == "image" && i["url"].as_str().is_some_and(|u| !u.starts_with("data:"))
    });
    if remote {
        return Err("remote image URLs are not supported; use an inline data URL instead".into());
    }
    Ok(())
}

/// Keeps `written` as the settings the thread's last turn wrote, unless some are kept already.
pub(super) fn remember_written(info: &mut Value, written: &Value) {
    if let Some(t) = info.as_object_mut() {
        t.entry(WRITTEN_SETTINGS).or_insert_with(|| written.clone());
    }
}

/// The thread's settings as its last turn wrote them, kept while `thread/settings/update`s
/// have changed the thread since (see `apply_settings`).
const WRITTEN_SETTINGS: &str = "writtenSettings";
/// How many `thread/settings/update`s the thread took since its last turn: each a rollout
/// entry before the next turn's start.
const SETTINGS_UPDATES: &str = "settingsUpdates";

/// How long a thread with a rollout takes to apply a `thread/settings/update` and announce it
/// (see `thread_settings_update`): past the real server's median (1.9 ms) and inside its range,
/// because the real server's delay is work (it persists the settings first) that stretches with
/// the machine's load while a sleep does not: on a loaded machine, two live real runs of turn
/// scenario `101` still answered a client's next request (sent 0.2-0.4 ms after the reply) first,
/// where the fake at 1.9 ms announced before it.
const SETTINGS_APPLIED: std::time::Duration = std::time::Duration::from_micros(3000);

/// What applying settings to a thread did.
struct Applied {
    /// The thread as it now is.
    thread: Value,
    /// Its settings as a notification shows them, after and before.
    settings: Value,
    before: Value,
    /// Whether what this version shows of them changed.
    changed: bool,
}
