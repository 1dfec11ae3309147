//! A session's start: `initialize`, and what codex says about its configuration whenever a
//! thread's session starts (startup warnings, features under development, deprecated names).

use super::view::H;
use crate::fake::state::{lock, path_str};
use serde_json::{json, Value};

impl H<'_> {
    pub(super) fn initialize(&self, id: &Value, params: &Value) -> Result<(), String> {
        let name = params["clientInfo"]["name"].as_str().unwrap_or("codex");
        let version = params["clientInfo"]["version"].as_str().unwrap_or("");
        *lock(&self.client_name) = name.to_string();
        *lock(&self.opt_out) =
            crate::fake::state::strings(&params["capabilities"]["optOutNotificationMethods"])
                .into_iter()
                .collect();
        let ua = format!(
            "{name}/{} ({}; {}) {} ({name}; {version})",
            self.fake.protocol.version,
            os_description(),
            std::env::consts::ARCH,
            terminal_name(),
        );
        self.result(
            id,
            json!({"userAgent": ua, "codexHome": path_str(&self.fake.codex_home),
                   "platformFamily": "unix", "platformOs": std::env::consts::OS}),
        );
        // What the real server announces right after initializing, without waiting for
        // `initialized`: the sandbox prerequisite it lacks, and remote control (off).
        // The configuration's startup warnings come first.
        let config_toml = self.fake.codex_home.join("config.toml");
        if let Some(summary) = self.fake.config().ignored_keys_warning(&config_toml) {
            self.notify(
                "configWarning",
                json!({"summary": summary, "details": null}),
            );
        }
        // Not under a full-access sandbox (checked on 0.171.0: none in any such run).
        if !on_path("bwrap") && !self.fake.config().full_access() {
            self.notify(
                "configWarning",
                json!({"summary": "Codex could not find bubblewrap on PATH. Install bubblewrap \
                    with your OS package manager. See the sandbox prerequisites: \
                    https://developers.openai.com/codex/concepts/sandboxing#prerequisites. Codex \
                    will use the bundled bubblewrap in the meantime.", "details": null}),
            );
        }
        self.notify(
            "remoteControl/status/changed",
            self.remote_control_payload(),
        );
        Ok(())
    }

    /// Remote control's status: disabled (it needs a ChatGPT login), on this host, for this
    /// installation.
    pub(super) fn remote_control_payload(&self) -> Value {
        json!({"status": "disabled", "serverName": host_name(),
               "installationId": self.fake.installation_id(), "environmentId": null})
    }

    /// What every session start (`thread/start`, a cold `thread/resume`, `thread/fork`) says
    /// about the configuration: its startup warnings again, the under-development features it
    /// turns on, the deprecated names it uses (checked on 0.171.0). A fork warns on its thread
    /// only: the configuration a write changed is announced again by the next session start that
    /// is not a fork (0.171.0: `122_fork_after_a_config_write_warns_on_the_thread_only`).
    pub(super) fn session_started(&self, thread_id: &str, fork: bool) {
        crate::fake::turn::fresh_sessions()
            .insert(thread_id.to_string(), std::time::Instant::now());
        let config = self.fake.codex_home.join("config.toml");
        let cfg = &self.fake.config();
        let reloaded = !fork
            && self
                .fake
                .config_changed
                .swap(false, std::sync::atomic::Ordering::SeqCst);
        // The session keeps the warnings of the configuration it loaded: an inline review's
        // child session repeats them, not one about keys a later write added (fidelity
        // s29290001_0356, s29290001_0576).
        let mut warnings: Vec<String> = Vec::new();
        let ignored = cfg.ignored_keys_warning(&config);
        warnings.extend(ignored.clone());
        if let Some(message) = ignored {
            // Seen on 0.171.0 (51_settings): a session that loads a configuration a write
            // changed repeats the start-up warning first.
            if reloaded {
                self.notify(
                    "configWarning",
                    json!({"summary": message, "details": null}),
                );
            }
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
        let unstable = cfg.unstable_features(&self.fake.unstable);
        if !unstable.is_empty() && !cfg.bool("suppress_unstable_features_warning") {
            let message = format!(
                "Under-development features enabled: {}. Under-development features are \
                 incomplete and may behave unpredictably. To suppress this warning, set \
                 `suppress_unstable_features_warning = true` in {}.",
                unstable.join(", "),
                path_str(&config)
            );
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
            warnings.push(message);
        }
        self.fake.store.update(|d| {
            if d["threads"][thread_id].is_object() {
                d["threads"][thread_id][crate::fake::threads::SESSION_WARNINGS] = json!(warnings);
            }
        });
        self.deprecation_notices();
    }

    /// A loaded session taken up again (`thread/revert`'s reload): the warnings its start sent,
    /// from the configuration it loaded then, not one written since (fidelity s29290001_0089
    /// on 0.169.0; turn scenario 168), then the deprecated names it uses.
    pub(super) fn session_repeated(&self, thread_id: &str) {
        let info = self.fake.store.load()["threads"][thread_id].clone();
        let Some(warnings) = info[crate::fake::threads::SESSION_WARNINGS].as_array() else {
            return self.session_started(thread_id, false);
        };
        for message in warnings {
            self.notify(
                "warning",
                json!({"threadId": thread_id, "message": message}),
            );
        }
        self.deprecation_notices();
    }

    /// The deprecated names the configuration uses, one notice each.
    fn deprecation_notices(&self) {
        for (summary, details) in self.fake.config().deprecations() {
            self.notify(
                "deprecationNotice",
                json!({"summary": summary, "details": details}),
            );
        }
    }

    /// What the real server says when a whole history is sent with a thread.
    pub(super) fn hydration_notice(&self) {
        self.notify(
            "deprecationNotice",
            json!({"summary": "Full-history hydration is deprecated for paginated threads; \
                               use `excludeTurns: true`, then page with `thread/turns/list` \
                               and `thread/items/list`.", "details": null}),
        );
    }
}

/// `Debian 12.0.0`: the OS as codex's user agent names it (`/etc/os-release`).
fn os_description() -> String {
    let release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let field = |k: &str| {
        release
            .lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(|v| v.trim_matches('"').to_string())
    };
    let name = field("NAME")
        .and_then(|n| n.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "Linux".into());
    let version = field("VERSION_ID").unwrap_or_default();
    let mut parts: Vec<&str> = version.split('.').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return name;
    }
    while parts.len() < 3 {
        parts.push("0");
    }
    format!("{name} {}", parts.join("."))
}

/// The terminal codex's user agent names: `TERM_PROGRAM`, else `TERM`, else `unknown`.
fn terminal_name() -> String {
    ["TERM_PROGRAM", "TERM"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// `{"sha", "branch", "originUrl"}` of the repository holding `cwd`, or null outside one.
pub(super) fn git_info(cwd: &str) -> Value {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(cwd)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let Some(sha) = git(&["rev-parse", "HEAD"]) else {
        return Value::Null;
    };
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD");
    let origin = git(&["config", "--get", "remote.origin.url"]);
    json!({"sha": sha, "branch": branch, "originUrl": origin})
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}
