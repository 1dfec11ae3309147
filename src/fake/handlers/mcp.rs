//! MCP servers as a client sees them: a thread's servers started with it (each announced
//! `starting`, then `ready` or `failed`), and `mcpServerStatus/list`, which asks each server
//! afresh (turn scenario 258 on every version; `fake/mcp.rs` speaks to the servers).

use super::view::H;
use crate::fake::mcp::{self, Server, State};
use codex_wire_protocol::track::JsonPath;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// The transport codex names in a failed send (its launcher wrapped on newer versions).
const TRANSPORT: &str = "codex_rmcp_client::tool_list_changes::ToolListChanges<\
codex_rmcp_client::ordered_byte_transport::OrderedByteTransport<\
codex_rmcp_client::stdio_server_launcher::StdioServerTransport>>";
const TRANSPORT_UNWRAPPED: &str = "codex_rmcp_client::stdio_server_launcher::StdioServerTransport";

impl H<'_> {
    /// The stdio servers the configuration names, or the first one the fake does not start.
    pub(super) fn mcp_servers(&self) -> Result<Vec<Server>, String> {
        let flags = crate::fake::user_config::flags(&self.fake.overrides);
        mcp::configured(&crate::fake::user_config::merged(
            &self.user_table(),
            &flags,
        ))
    }

    fn mcp_transport(&self) -> &'static str {
        if self.fake.turn_facts.mcp_transport_unwrapped {
            TRANSPORT_UNWRAPPED
        } else {
            TRANSPORT
        }
    }

    /// A thread's session starts its servers: each `starting` in one write after the
    /// session's own notifications, then each `ready` or `failed` as its handshake ends (in
    /// the thread's cwd). A `url` server is not started (not modeled).
    pub(super) fn start_mcp_servers(&self, thread_id: &str, cwd: &str) {
        let Ok(mut servers) = self.mcp_servers() else {
            return;
        };
        servers.retain(|s| s.enabled);
        if servers.is_empty() {
            return;
        }
        {
            let mut threads = mcp::threads();
            let states = threads.entry(thread_id.to_string()).or_default();
            for s in &servers {
                states.insert(s.name.clone(), State::Starting);
            }
        }
        self.spawn_mcp_startups(thread_id, cwd, servers);
    }

    /// A turn that moves the thread to another cwd has codex start its servers again there:
    /// each `starting` before the thread's new settings, then `ready` or `failed` as at the
    /// session's start (turn scenario 277 on every version: a running server); one still
    /// starting is announced `cancelled` first (fidelity s51510001_0214 on 0.163.0 and
    /// s49490001_0276, both real runs; probed on every version, where its `starting` came after
    /// the settings in 1 of 4 runs on 0.171.0). With a new approval policy or sandbox too, the
    /// real server races the refresh's `ready` against the restart (four runs, three orders):
    /// not modeled apart.
    pub(super) fn mcp_restart_thread(&self, thread_id: &str, cwd: &str) {
        let Ok(mut servers) = self.mcp_servers() else {
            return;
        };
        servers.retain(|s| s.enabled);
        let cancelled: Vec<String> = {
            let mut threads = mcp::threads();
            let Some(states) = threads.get_mut(thread_id) else {
                return;
            };
            let cancelled = servers
                .iter()
                .filter(|s| matches!(states.get(&s.name), Some(State::Starting | State::Launched)))
                .map(|s| s.name.clone())
                .collect();
            // A running server's process ends with its old state.
            states.clear();
            for s in &servers {
                states.insert(s.name.clone(), State::Starting);
            }
            cancelled
        };
        for name in cancelled {
            let params = self.startup_status(thread_id, &name, "cancelled", None);
            self.notify("mcpServer/startupStatus/updated", params);
        }
        self.spawn_mcp_startups(thread_id, cwd, servers);
    }

    /// Each server announced `starting` (in one write), then its handshake on a task of its
    /// own, announced `ready` or `failed` as it ends unless a later start superseded it.
    fn spawn_mcp_startups(&self, thread_id: &str, cwd: &str, servers: Vec<Server>) {
        let notes = servers
            .iter()
            .map(|s| {
                (
                    "mcpServer/startupStatus/updated",
                    self.startup_status(thread_id, &s.name, "starting", None),
                )
            })
            .collect();
        self.notify_together(notes);
        for server in servers {
            let conn = Arc::clone(self.c);
            let (thread_id, cwd) = (thread_id.to_string(), PathBuf::from(cwd));
            let token = mcp::next_start(&thread_id, &server.name);
            std::thread::spawn(move || {
                let h = H { c: &conn };
                let version = h.fake.protocol.version;
                let launched = || {
                    if !mcp::is_latest_start(&thread_id, &server.name, token) {
                        return;
                    }
                    if let Some(states) = mcp::threads().get_mut(&thread_id) {
                        states.insert(server.name.clone(), State::Launched);
                    }
                };
                let transport = h.mcp_transport();
                let (client, started) = mcp::Client::start_then(
                    &server,
                    Some(&cwd),
                    true,
                    version,
                    transport,
                    launched,
                );
                let (state, status, error) = match (client, started) {
                    (Some(c), Ok(())) => (State::Ready(Box::new(c)), "ready", None),
                    (_, Err(f)) => {
                        let error = f.startup_error(&server);
                        (State::Failed, "failed", Some(error))
                    }
                    (None, Ok(())) => return,
                };
                if !mcp::is_latest_start(&thread_id, &server.name, token) {
                    return;
                }
                // Announced before the state changes: a turn waiting for it speaks after.
                let params = h.startup_status(&thread_id, &server.name, status, error);
                h.notify("mcpServer/startupStatus/updated", params);
                if let Some(states) = mcp::threads().get_mut(&thread_id) {
                    states.insert(server.name.clone(), state);
                }
            });
        }
    }

    /// `mcpServer/startupStatus/updated`'s params, with the keys this version's type has.
    fn startup_status(
        &self,
        thread_id: &str,
        name: &str,
        status: &str,
        error: Option<String>,
    ) -> Value {
        let method = "mcpServer/startupStatus/updated";
        let mut params = json!({"threadId": thread_id, "name": name, "environmentId": null,
                                "status": status, "error": error, "failureReason": null});
        let msg = json!({"method": method, "params": params});
        let mut ignored = Vec::new();
        (self.fake.protocol.track_server_notification)(&msg, &mut JsonPath::root(), &mut ignored);
        if let Some(o) = params.as_object_mut() {
            for path in ignored {
                if let Some(key) = path.strip_prefix("$.params.") {
                    o.shift_remove(key);
                }
            }
        }
        params
    }

    /// `config/mcpServer/reload`: each loaded thread whose servers the configuration still
    /// names as they started announces each running one `ready` again before the answer
    /// (turn scenario 266 on every version); a configuration that changed them, or a server that
    /// failed, is not modeled.
    pub(super) fn mcp_reload(&self, id: &Value) -> Result<(), String> {
        match self.running_mcp_servers() {
            Some(running) => {
                if self.fake.turn_facts.mcp_reload_answers_first {
                    self.result(id, json!({}));
                    self.announce_ready(running);
                } else {
                    self.announce_ready(running);
                    self.result(id, json!({}));
                }
                Ok(())
            }
            None => self.not_modeled("config/mcpServer/reload"),
        }
    }

    /// After an `experimentalFeature/enablement/set` answered: codex refreshes the loaded
    /// threads' MCP servers, each running one announced `ready` again (turn scenario 268 on
    /// every version; fidelity s48480001_0166). Config writes do not.
    pub(super) fn mcp_refresh_after_enablement(&self) {
        if let Some(running) = self.running_mcp_servers() {
            self.announce_ready(running);
        }
    }

    /// A refresh of one thread's servers (a turn's new approval or sandbox settings): each
    /// running one announced `ready` again, by name. One still starting or failed is left
    /// as it is (codex cancels and restarts a starting one: not modeled).
    pub(super) fn mcp_refresh_thread(&self, thread_id: &str) {
        let running = self
            .enabled_mcp_names()
            .and_then(|names| running_thread_servers(thread_id, &names));
        if let Some(running) = running {
            self.announce_ready(running);
        }
    }

    fn announce_ready(&self, running: Vec<(String, String)>) {
        for (thread_id, name) in running {
            let params = self.startup_status(&thread_id, &name, "ready", None);
            self.notify("mcpServer/startupStatus/updated", params);
        }
    }

    /// Each loaded thread's servers (thread, name; by thread, then name) when every one runs
    /// as the configuration still names them; `None` when the configuration changed them or
    /// one is not running (what codex then does is not modeled).
    fn running_mcp_servers(&self) -> Option<Vec<(String, String)>> {
        let names = self.enabled_mcp_names()?;
        let mut loaded: Vec<String> = crate::fake::state::lock(&self.fake.loaded)
            .iter()
            .cloned()
            .collect();
        loaded.sort();
        let mut running = Vec::new();
        for t in loaded {
            running.extend(running_thread_servers(&t, &names)?);
        }
        Some(running)
    }

    /// The enabled servers the configuration names, sorted.
    fn enabled_mcp_names(&self) -> Option<Vec<String>> {
        let mut names: Vec<String> = self
            .mcp_servers()
            .ok()?
            .into_iter()
            .filter(|s| s.enabled)
            .map(|s| s.name)
            .collect();
        names.sort_unstable();
        Some(names)
    }

    /// `mcpServerStatus/list` with servers configured: each server (or the one named) spawned
    /// and asked afresh — in the thread's cwd when one is named, else in the process's — and
    /// listed by name; a thread's list adds where its own connection stands. Answered once every
    /// server has answered or failed (other requests are served meanwhile).
    pub(super) fn mcp_status_list(
        &self,
        id: &Value,
        p: &Value,
        servers: Vec<Server>,
        cwd: Option<PathBuf>,
    ) -> Result<(), String> {
        if !p["serverName"].is_null() {
            // One server by name (a thread's connection reused): not modeled.
            return self.not_modeled("mcpServerStatus/list");
        }
        // The page is cut first (by name): only its servers are asked.
        let mut servers = servers;
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        let page = super::rules::offset_page(&vec![Value::Null; servers.len()], p, "MCP servers")?;
        let start = p["cursor"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let count = page["data"].as_array().map_or(0, Vec::len);
        let next = page["nextCursor"].clone();
        let servers: Vec<Server> = servers.into_iter().skip(start).take(count).collect();
        let thread_id = p["threadId"].as_str().map(String::from);
        let full = p["detail"].as_str() != Some("toolsAndAuthOnly");
        let (conn, id) = (Arc::clone(self.c), id.clone());
        std::thread::spawn(move || {
            let h = H { c: &conn };
            let version = h.fake.protocol.version;
            let transport = h.mcp_transport();
            // Tools only, of a thread: its own running connection answers (6 ms in turn
            // scenario 266, where a server asked afresh takes its start-up).
            let running = |server: &Server| -> Option<Value> {
                let threads = mcp::threads();
                match threads.get(thread_id.as_deref()?)?.get(&server.name)? {
                    State::Ready(c) if !full => {
                        Some(mcp::client_entry(server, c, json!([]), json!([])))
                    }
                    _ => None,
                }
            };
            let mut entries: Vec<Value> = std::thread::scope(|s| {
                let asks: Vec<_> = servers
                    .iter()
                    .map(|server| {
                        let cwd = cwd.as_deref();
                        let known = running(server);
                        s.spawn(move || {
                            known.unwrap_or_else(|| {
                                mcp::status_entry(server, cwd, full, version, transport)
                            })
                        })
                    })
                    .collect();
                asks.into_iter().filter_map(|a| a.join().ok()).collect()
            });
            // A thread's list says where the thread's own connection stands: none for a server
            // the thread's session did not start (the configuration changed since).
            if let Some(t) = &thread_id {
                let threads = mcp::threads();
                for (e, server) in entries.iter_mut().zip(&servers) {
                    let state = threads.get(t).and_then(|s| s.get(&server.name));
                    e["runtimeStatus"] = match state {
                        _ if !server.enabled => json!("disabled"),
                        Some(state) => json!(state.runtime_status()),
                        None => Value::Null,
                    };
                }
            }
            let page = json!({"data": entries, "nextCursor": next});
            let page = crate::fake::defaults::shaped(h.fake.protocol, "mcpServerStatus/list", page);
            h.result(&id, page);
        });
        Ok(())
    }
}

/// One thread's servers (thread, name; by name) when it runs exactly `names` (sorted), each
/// ready.
fn running_thread_servers(thread_id: &str, names: &[String]) -> Option<Vec<(String, String)>> {
    let threads = mcp::threads();
    let none = std::collections::HashMap::new();
    let states = threads.get(thread_id).unwrap_or(&none);
    let mut started: Vec<&String> = states.keys().collect();
    started.sort_unstable();
    if !started.iter().copied().eq(names.iter())
        || states.values().any(|s| !matches!(s, State::Ready(_)))
    {
        return None;
    }
    Some(
        names
            .iter()
            .map(|n| (thread_id.to_string(), n.clone()))
            .collect(),
    )
}
