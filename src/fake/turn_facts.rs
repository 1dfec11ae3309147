//! How a codex version plays turns where versions differ (`schema/<V>/facts/turns.json`).

use serde_json::Value;

/// How a codex version plays turns where versions differ, from `schema/<V>/facts/turns.json`
/// (each fact shown by that version's recordings; an absent fact is the newest version's way).
#[derive(Debug, Default, serde::Deserialize, serde::Serialize)]
#[serde(default, rename_all = "snake_case", deny_unknown_fields)]
pub struct TurnFacts {
    /// `turn/diff/updated` again after every model response once the turn has a diff (instead
    /// of once when the turn ends).
    pub turn_diff_after_each_response: bool,
    /// A service tier a turn set is not kept when another process resumes the thread.
    pub service_tier_not_resumed: bool,
    /// A thread's personality is not kept when another process resumes the thread (the
    /// configured one, none here, is its setting again).
    pub personality_not_resumed: bool,
    /// A cold resume writes the thread's settings to the rollout (one more entry before the
    /// next turn starts).
    pub resume_writes_settings: bool,
    /// codex's built-in Plan-mode instructions: the `developer_instructions` of a
    /// `collaborationMode` in Plan mode that a `turn/start` left null (taken from the
    /// recording of `26c_user_input_plan_mode`).
    pub plan_mode_instructions: Option<String>,
    /// codex's built-in Default-mode instructions: what a `collaborationMode` of any other mode
    /// gets when a `turn/start` leaves them null (from a 0.171.0 recording).
    pub default_mode_instructions: Option<String>,
    /// A plan item's id is `<turn id>-plan` (else a fresh uuid).
    pub plan_item_id_from_turn: bool,
    /// A stored fork of a paginated thread starts with an empty preview (else, and an ephemeral
    /// fork always, the source thread's: `145_fork_defer_goal_ephemeral`).
    pub fork_preview_empty: bool,
    /// A fork takes the configured sandbox mode, not its source thread's mode or turn policy
    /// (a permission profile is kept either way).
    pub fork_sandbox_mode_not_kept: bool,
    /// `memory/status` reports the v2 memory store not ready (`v2Ready: false`).
    pub memory_v2_not_ready: bool,
    /// `account/bedrock/setup` under a `-c model_provider` flag is refused with the layer and
    /// its value named (else by the config write's "Overridden by session flags").
    pub bedrock_refusal_names_layer: bool,
    /// `mcpServer/resource/read`'s connector target takes any scope (no `unscoped` in its
    /// refusal, and an environment is not refused for it).
    pub mcp_target_any_scope: bool,
    /// `thread/inject_items` takes response items only (no `{"item": …}` wrapper): a refusal
    /// names the tagged enum.
    pub inject_items_tagged_only: bool,
    /// A goal's first turn carries its objective as a user message only (no `goal_objective`
    /// tool output before it): one rollout entry fewer.
    pub goal_objective_message_only: bool,
    /// Where codex's sandbox helper panics when it cannot exec a `command/exec` program
    /// (`linux-sandbox/src/linux_run_main.rs:L:C`, read off a recording): the command's stderr
    /// names it.
    pub sandbox_helper_panic_at: Option<String>,
    /// `thread/search` cuts its snippet's window from the text with its whitespace already
    /// joined (not from the text as written).
    pub search_window_on_joined_text: bool,
    /// `memory/reset` creates codex's memory directories that are absent (before emptying
    /// them); newer versions leave an absent one absent (turn scenario 248).
    pub memory_reset_creates_roots: bool,
    /// A `config.toml` codex cannot parse refuses the gateway's methods as an internal error,
    /// `failed to load gateway configuration` (turn scenario 250).
    pub gateway_config_words: bool,
    /// `fuzzyFileSearch` scores an entry's path only (no rank for a name that matches or
    /// equals the query).
    pub file_search_path_score_only: bool,
    /// `fuzzyFileSearch` lists an entry under two overlapping roots once for each.
    pub file_search_overlapping_roots_twice: bool,
    /// `review/start` with `delivery: "detached"` first sends a `deprecationNotice` (before any
    /// check of its params).
    pub review_detached_deprecated: bool,
    /// A service tier `thread/start` names, or the configuration sets, is the thread's setting
    /// only where its model serves it (else it is kept: a requested one shown, a configured one
    /// shown from the first turn that carries settings; 0.163.0 drops both, fidelity
    /// s14140001_0243).
    pub requested_service_tier_served_only: bool,
    /// `thread/turns/list` and `thread/items/list` refuse a thread stored without a rollout
    /// before they check the cursor (`120_history_of_a_thread_stored_without_rollout`).
    pub history_lineage_before_cursor: bool,
    /// `thread/list` shows the thread a fork came from (`123_fork_of_a_thread_in_a_project`).
    pub thread_list_shows_fork_origin: bool,
    /// `thread/list` parses its excluded thread ids first and its included ones after the
    /// lineage filters and the section sort (`136_thread_list_section_checks`).
    pub thread_list_ids_after_section: bool,
    /// `thread/list` checks its section sort before the attachment filter
    /// (`136_thread_list_section_checks`).
    pub thread_list_section_before_attachment: bool,
    /// `thread/list` lists attached threads without a search
    /// (`136b_thread_list_attached_needs_search`).
    pub thread_list_attached_unchecked: bool,
    /// A reasoning summary a turn set is not kept when another process resumes the thread
    /// (the next turn that sets it again announces it: `146_summary_after_a_cold_resume`).
    pub summary_not_resumed: bool,
    /// An HTTP 400 whose body's code is `context_length_exceeded` is a plain 400 (its body the
    /// message, `other`; the window not marked full: turn scenario `179c`).
    pub http_context_length_unrecognized: bool,
    /// `thread/readState/changed` reaches only the thread's subscribers (else every
    /// connection, as its status does: turn scenario `183`).
    pub read_state_to_subscribers: bool,
    /// An interrupted turn stays the thread's active one to `turn/interrupt` (a refusal names
    /// it) until the next turn starts; `turn/steer` finds no active turn (turn scenario 257).
    pub interrupted_turn_stays_named: bool,
    /// A failed send to an MCP server names codex's stdio launcher as the transport, not the
    /// wrappers newer versions put around it (turn scenario 258).
    pub mcp_transport_unwrapped: bool,
    /// A steer read while an assistant message streams abandons the response once that
    /// message completes when the response goes on with a tool call: the call and the usage
    /// are dropped and the model is asked again (fidelity s52520001_0253, both real runs, and
    /// three probes, an `update_goal` and an `exec_command` after the message; the message
    /// followed only by the response's end left it whole in 4 of 5 probes). Later versions
    /// read on.
    pub steer_ends_response_at_message: bool,
    /// `config/mcpServer/reload` answers before the running servers are announced `ready`
    /// again (0.168.0: the answer 73 ms after the request, the announcement 12 ms later, 3 of
    /// 3 quiet runs of turn scenario `266`; later versions announce first).
    pub mcp_reload_answers_first: bool,
    /// `thread/resume` of a thread loaded here whose last turn was interrupted shows that
    /// turn as codex's live history builder holds it: its messages and reasoning numbered
    /// `item-N` from the last turn that completed or failed (an interrupt does not reset the
    /// builder); a tool call keeps its id (turn scenario `293`; later versions show the
    /// stored ids).
    pub resume_renumbers_interrupted_turn: bool,
    /// The same for a thread with a legacy history (`293b`; 0.168.0 too, which shows a
    /// paginated thread's stored ids).
    pub resume_renumbers_interrupted_legacy_turn: bool,
}

/// A facts file to play turns by instead of the version's own: how `cargo xtask add-version`
/// tries candidate facts of a new version against its recordings before writing them.
pub const TURN_FACTS_ENV: &str = "CODEX_WIRE_TURN_FACTS";

impl TurnFacts {
    pub fn of(p: &crate::Protocol) -> TurnFacts {
        if let Some(text) =
            std::env::var_os(TURN_FACTS_ENV).and_then(|path| std::fs::read_to_string(path).ok())
        {
            if let Ok(facts) = serde_json::from_str(&text) {
                return facts;
            }
        }
        // Checked by the protocol's tests: a facts file that does not parse is a build bug.
        serde_json::from_str(p.turn_facts).unwrap_or_default()
    }

    /// The facts that are switches (the others are texts read off a recording).
    pub fn switches() -> Vec<String> {
        match serde_json::to_value(TurnFacts::default()) {
            Ok(Value::Object(m)) => m
                .into_iter()
                .filter(|(_, v)| v.is_boolean())
                .map(|(k, _)| k)
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_version_s_turn_facts_parse() {
        for p in crate::versions() {
            serde_json::from_str::<super::TurnFacts>(p.turn_facts)
                .unwrap_or_else(|e| panic!("schema/{}/facts/turns.json: {e}", p.version));
        }
    }
}
