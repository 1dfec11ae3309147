//! A thread's settings as the real server resolves them from `thread/start` (and `fork`,
//! `resume`) params over the configuration: cwd, workspace roots and environments, sandbox and
//! permission profile, approval policy and reviewer, model, provider, effort, service tier.
//! Each rule was read off codex 0.171.0 (the `thread/start` result for each param form against
//! each config, `tests/corpus/fidelity/`); the names of codex's own functions are given where the
//! rule lives (app-server `thread_processor.rs`).

use super::catalog::Catalog;
use super::config::Config;
use serde_json::{json, Map, Value};
use std::path::{Component, Path, PathBuf};

/// A path as codex resolves a client's `cwd`: empty is the server's cwd, `~` the home
/// directory, a relative path is joined to the server's cwd; then `.` and `..` are resolved and
/// doubled or trailing slashes dropped, without touching the file system.
pub fn resolve_path(p: &str, base: &Path) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let joined: PathBuf = if p.is_empty() {
        base.to_path_buf()
    } else if p == "~" {
        PathBuf::from(&home)
    } else if let Some(rest) = p.strip_prefix("~/") {
        Path::new(&home).join(rest)
    } else {
        base.join(p)
    };
    normalize(&joined)
}

/// `.` and `..` resolved lexically; no trailing slash (but `/`).
pub fn normalize(p: &Path) -> String {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(x) => out.push(x),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out.to_string_lossy().into_owned()
}

/// Only `..` resolved (an environment's `cwd` keeps a trailing slash).
fn resolve_parents(p: &str) -> String {
    if !p.split('/').any(|s| s == "..") {
        return p.to_string();
    }
    let trailing = p.ends_with('/');
    let mut n = normalize(Path::new(p));
    if trailing && n != "/" {
        n.push('/');
    }
    n
}

/// A thread's sandbox as configured: a named permission profile, a sandbox mode, or codex's
/// default (read-only, shown as the `:read-only` profile).
#[derive(Clone, Debug, PartialEq)]
enum Sandbox {
    Default,
    Mode(String),
    Profile(String),
}

/// A built-in permission profile's sandbox mode.
pub(crate) fn profile_mode(id: &str) -> Result<&'static str, String> {
    match id {
        ":read-only" => Ok("read-only"),
        ":workspace" => Ok("workspace-write"),
        ":danger-full-access" => Ok("danger-full-access"),
        p if p.starts_with(':') => Err(format!(
            "failed to load configuration: default_permissions refers to unknown built-in \
             profile `{p}`"
        )),
        _ => Err(
            "failed to load configuration: default_permissions requires a `[permissions]` table"
                .into(),
        ),
    }
}

const SANDBOX_MODES: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];

/// What the resolved settings show, kept with the thread (`info` keys of the store).
pub struct Resolved {
    pub cwd: String,
    pub roots: Vec<String>,
    /// `None`: the default local environment; `Some([])`: none.
    pub environments: Option<Vec<Value>>,
    pub sandbox: Value,
    pub profile: Value,
    pub approval_policy: Value,
    pub approvals_reviewer: String,
    pub model: String,
    pub provider: String,
    pub effort: Value,
    pub service_tier: Value,
    /// The configured tier when the model does not advertise it (so `service_tier` is null):
    /// still the thread's setting, shown once a turn or an update carries settings.
    pub configured_tier: Value,
    /// `warning` notifications the thread's start sends (after `thread/started`).
    pub warnings: Vec<String>,
    /// Where the sandbox came from (`mode:<mode>`, `profile:<id>`, or none): what a fork keeps.
    pub setting: Value,
}

impl Resolved {
    /// Writes the settings into a thread's stored info.
    pub fn store(&self, info: &mut Value) {
        info["cwd"] = json!(self.cwd);
        info["roots"] = json!(self.roots);
        info["environments"] = self.environments.clone().map_or(Value::Null, Value::Array);
        info["sandbox"] = self.sandbox.clone();
        info["permissionProfile"] = self.profile.clone();
        info["approvalPolicy"] = self.approval_policy.clone();
        info["approvalsReviewer"] = json!(self.approvals_reviewer);
        info["model"] = json!(self.model);
        info["provider"] = json!(self.provider);
        info["effort"] = self.effort.clone();
        info["serviceTier"] = self.service_tier.clone();
        match (&self.configured_tier, info.as_object_mut()) {
            (Value::Null, Some(m)) => {
                m.remove(CONFIGURED_TIER);
            }
            (t, _) => info[CONFIGURED_TIER] = t.clone(),
        }
        info["sandboxSetting"] = self.setting.clone();
        // A session that starts routing approvals to codex's reviewer prewarms the reviewer's
        // sub-agent session: live from the thread's start, resume or fork, approvals or not
        // (codex `routes_approval_to_guardian` at startup: on-request or granular, and
        // auto_review; turn scenario 239, fidelity s42420001_0259). A turn or an update that
        // switches to it later starts the reviewer only at its first review (236).
        let routes = matches!(&self.approval_policy, Value::String(p) if p == "on-request")
            || self.approval_policy.get("granular").is_some();
        let reviewer = matches!(
            self.approvals_reviewer.as_str(),
            "auto_review" | "guardian_subagent"
        );
        info[REVIEWER_LIVE] = json!(routes && reviewer);
    }
}

/// A thread whose reviewer's sub-agent session is live beside it: prewarmed by a session that
/// starts routing approvals to codex's reviewer, or started at a thread's first review.
pub const REVIEWER_LIVE: &str = "reviewerLive";

/// A granular approval policy as codex echoes it: all five flags, in its order.
fn approval_policy(v: &Value) -> Value {
    match v.get("granular") {
        Some(g) => {
            let f = |k: &str| json!(g[k].as_bool().unwrap_or(false));
            json!({"granular": {"sandbox_approval": f("sandbox_approval"), "rules": f("rules"),
                   "skill_approval": f("skill_approval"),
                   "request_permissions": f("request_permissions"),
                   "mcp_elicitations": f("mcp_elicitations")}})
        }
        None => v.clone(),
    }
}

/// `guardian_subagent` is the old name of `auto_review`.
fn reviewer(v: &str) -> String {
    if v == "guardian_subagent" {
        "auto_review".into()
    } else {
        v.to_string()
    }
}

/// The `sandbox` object of thread results and settings for a sandbox mode; `roots` are the
/// thread's workspace roots, `cwd` its cwd (`compatibility_sandbox_policy_for_permission_profile`:
/// the cwd is writable as a root; without it among the roots, `/tmp` and `$TMPDIR` are
/// written instead).
fn sandbox_object(mode: &str, roots: &[String], cwd: &str, cfg: &Config) -> Value {
    match mode {
        "danger-full-access" => json!({"type": "dangerFullAccess"}),
        "workspace-write" => {
            let network = cfg.bool("sandbox_workspace_write.network_access");
            if roots.iter().any(|r| r == cwd) {
                let writable: Vec<&String> = roots.iter().filter(|r| *r != cwd).collect();
                json!({"type": "workspaceWrite", "writableRoots": writable,
                       "networkAccess": network,
                       "excludeTmpdirEnvVar": cfg.bool("sandbox_workspace_write.exclude_tmpdir_env_var"),
                       "excludeSlashTmp": cfg.bool("sandbox_workspace_write.exclude_slash_tmp")})
            } else {
                let mut writable: Vec<String> = roots.to_vec();
                let tmpdir = std::env::var("TMPDIR").ok().filter(|t| !t.is_empty());
                for extra in std::iter::once("/tmp".to_string()).chain(tmpdir.clone()) {
                    if !writable.contains(&extra) {
                        writable.push(extra);
                    }
                }
                let tmpdir_writable = tmpdir.is_some_and(|t| Path::new(&t).is_dir());
                json!({"type": "workspaceWrite", "writableRoots": writable,
                       "networkAccess": network, "excludeTmpdirEnvVar": !tmpdir_writable,
                       "excludeSlashTmp": false})
            }
        }
        _ => json!({"type": "readOnly", "networkAccess": false}),
    }
}

/// A given workspace-write policy over the roots a thread works in: its own writable roots,
/// then the other roots (the cwd is writable as one); without the cwd among them, the roots,
/// `/tmp`, `$TMPDIR`, then its own.
fn project_policy(policy: &Value, roots: &[String], cwd: &str) -> Value {
    let mut p = sandbox_policy(policy);
    let own = crate::fake::state::strings(&p["writableRoots"]);
    let writable = if roots.iter().any(|r| r == cwd) {
        dedup(
            own.into_iter()
                .chain(roots.iter().filter(|r| *r != cwd).cloned()),
        )
    } else {
        let tmpdir = std::env::var("TMPDIR").ok().filter(|t| !t.is_empty());
        let tmpdir_writable = tmpdir.as_ref().is_some_and(|t| Path::new(t).is_dir());
        if !tmpdir_writable {
            p["excludeTmpdirEnvVar"] = json!(true);
        }
        dedup(
            roots
                .iter()
                .cloned()
                .chain(std::iter::once("/tmp".to_string()))
                .chain(tmpdir)
                .chain(own),
        )
    };
    p["writableRoots"] = json!(writable);
    p
}

/// The environments param of `thread/start`: `None` (absent or `null`) for the default local
/// one; each entry's `cwd` as sent (`..` resolved), its roots (else `[cwd]`).
fn environments(v: &Value) -> Result<Option<Vec<Value>>, String> {
    let Some(list) = v.as_array() else {
        return Ok(None);
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for e in list {
        let id = e["environmentId"].as_str().unwrap_or_default();
        if seen.contains(&id) {
            return Err(format!("duplicate turn environment id `{id}`"));
        }
        seen.push(id);
        if id != "local" {
            return Err(format!("unknown turn environment id `{id}`"));
        }
        let cwd = e["cwd"].as_str().unwrap_or_default();
        if !cwd.starts_with('/') {
            return Err(format!(
                "invalid cwd for environment `{id}`: path `{cwd}` does not use absolute POSIX \
                 or Windows path syntax"
            ));
        }
        let roots: Vec<String> = match e["runtimeWorkspaceRoots"].as_array() {
            Some(r) => {
                let mut roots = Vec::new();
                for x in r.iter().filter_map(Value::as_str) {
                    if !x.starts_with('/') {
                        return Err(format!(
                            "invalid runtime workspace root for environment `{id}`: path `{x}` \
                             does not use absolute POSIX or Windows path syntax"
                        ));
                    }
                    roots.push(normalize(Path::new(x)));
                }
                roots
            }
            None => vec![normalize(Path::new(cwd))],
        };
        out.push(json!({"environmentId": id, "cwd": resolve_parents(cwd),
                        "runtimeWorkspaceRoots": roots}));
    }
    Ok(Some(out))
}

/// The roots a thread works in: its first environment's when it names environments (none for
/// an empty list), else its own.
pub fn shown_roots(environments: &Option<Vec<Value>>, roots: &[String]) -> Vec<String> {
    match environments {
        Some(list) => list
            .first()
            .and_then(|e| e["runtimeWorkspaceRoots"].as_array())
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        None => roots.to_vec(),
    }
}

/// Whether a thread works in no workspace root, so that its sandbox writes `/tmp` only and
/// not the cwd it shows: a sandbox kept over no root by a resume or fork (`rootless:<mode>`,
/// whatever cwd it gives), `environments: []`, or roots given and none shown
/// (`runtimeWorkspaceRoots: []`). Decides both what a fork or resume keeps and which roots a
/// patch needs (turn scenarios `203_fork_of_a_rootless_start`, `217`; fidelity s33330001_0794,
/// s34340001_0143).
pub fn works_nowhere(thread: &Value) -> bool {
    let envs = thread["environments"].as_array().cloned();
    let roots = crate::fake::state::strings(&thread["roots"]);
    thread["sandboxSetting"]
        .as_str()
        .is_some_and(|s| s.starts_with("rootless:"))
        || thread["environments"] == json!([])
        || (thread["roots"].is_array() && shown_roots(&envs, &roots).is_empty())
}

/// A list of paths without repeats, order kept.
fn dedup(paths: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// `thread/start`'s settings (`thread_start_inner`, `build_thread_config_overrides`): params
/// first, then the thread's `config` param, then config.toml and `-c`.
pub fn for_start(
    base: &Config,
    catalog: &Catalog,
    facts: &super::turn_facts::TurnFacts,
    server_cwd: &Path,
    params: &Value,
) -> Result<Resolved, String> {
    let given = |k: &str| params.get(k).filter(|v| !v.is_null());
    if given("permissions").is_some() && given("sandbox").is_some() {
        return Err("`permissions` cannot be combined with `sandbox`".into());
    }
    let layer: Map<String, Value> = params["config"].as_object().cloned().unwrap_or_default();
    let cfg = base.layered(&layer);
    let cwd = resolve_path(params["cwd"].as_str().unwrap_or_default(), server_cwd);
    let environments = environments(&params["environments"])?;
    // The thread's own workspace roots; what it works in is its environments' when it has any.
    let roots = match params["runtimeWorkspaceRoots"].as_array() {
        Some(r) => dedup(
            r.iter()
                .filter_map(Value::as_str)
                .map(|s| normalize(Path::new(s))),
        ),
        None => vec![cwd.clone()],
    };
    let shown = shown_roots(&environments, &roots);
    // The thread's `config` layer before config.toml; within one layer a permission profile
    // before a sandbox mode.
    let layer_str = |k: &str| layer.get(k).and_then(Value::as_str).map(str::to_string);
    let sandbox = if let Some(p) = given("permissions").and_then(Value::as_str) {
        Sandbox::Profile(p.to_string())
    } else if let Some(m) = given("sandbox").and_then(Value::as_str) {
        Sandbox::Mode(m.to_string())
    } else if let Some(p) = layer_str("default_permissions") {
        Sandbox::Profile(p)
    } else if let Some(m) = layer_str("sandbox_mode") {
        Sandbox::Mode(m)
    } else if let Some(p) = &base.default_permissions {
        Sandbox::Profile(p.clone())
    } else if let Some(m) = &base.sandbox_mode {
        Sandbox::Mode(m.clone())
    } else {
        Sandbox::Default
    };
    let (mode, profile) = match &sandbox {
        Sandbox::Default => ("read-only", json!({"id": ":read-only", "extends": null})),
        Sandbox::Mode(m) => match SANDBOX_MODES.iter().find(|x| *x == m) {
            Some(m) => (*m, Value::Null),
            None => {
                return Err(format!(
                    "failed to load configuration: unknown variant `{m}`, expected one of \
                     `read-only`, `workspace-write`, `danger-full-access`\nin `sandbox_mode`\n"
                ))
            }
        },
        Sandbox::Profile(p) => (profile_mode(p)?, json!({"id": p, "extends": null})),
    };
    let model = given("model")
        .and_then(Value::as_str)
        .map_or_else(|| cfg.model.clone(), str::to_string);
    let provider = given("modelProvider")
        .and_then(Value::as_str)
        .map_or_else(|| cfg.provider.clone(), str::to_string);
    let (service_tier, tier_warning) =
        catalog.service_tier(params.get("serviceTier"), &cfg, &model);
    // The thread keeps the tier its requests carry: a configured or requested one its model
    // does not advertise is dropped (warned about) but stays its setting, so the first turn
    // or update that carries settings shows it (fidelity s11110001_0120, s13130001_0107 and
    // s28280001_0177: a requested `fast` then a turn's `fast` announces `priority`; turn
    // scenarios 95 and 99), except on a version that drops it for good
    // (`requested_service_tier_served_only`).
    let served = catalog.served_tier(&service_tier, &model);
    let configured = if served == service_tier || facts.requested_service_tier_served_only {
        Value::Null
    } else {
        service_tier
    };
    let (service_tier, configured_tier) = (served, configured);
    let setting = match &sandbox {
        Sandbox::Default => Value::Null,
        Sandbox::Mode(m) => json!(format!("mode:{m}")),
        Sandbox::Profile(p) => json!(format!("profile:{p}")),
    };
    Ok(Resolved {
        setting,
        sandbox: sandbox_object(mode, &shown, &cwd, &cfg),
        profile,
        approval_policy: given("approvalPolicy")
            .map_or_else(|| json!(cfg.approval_policy), approval_policy),
        approvals_reviewer: given("approvalsReviewer")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| cfg.approvals_reviewer.clone())
            .map_or_else(|| "user".into(), |r| reviewer(&r)),
        effort: cfg
            .reasoning_effort
            .clone()
            .map_or(Value::Null, Value::from),
        warnings: tier_warning.into_iter().collect(),
        cwd,
        roots,
        environments,
        model,
        provider,
        service_tier,
        configured_tier,
    })
}

/// A `sandboxPolicy` param as the thread shows it: codex's defaults filled in.
fn sandbox_policy(p: &Value) -> Value {
    let b = |k: &str| json!(p[k].as_bool().unwrap_or(false));
    match p["type"].as_str() {
        Some("dangerFullAccess") => json!({"type": "dangerFullAccess"}),
        Some("readOnly") => json!({"type": "readOnly", "networkAccess": b("networkAccess")}),
        Some("externalSandbox") => json!({"type": "externalSandbox",
            "networkAccess": p.get("networkAccess").cloned().unwrap_or_else(|| json!("restricted"))}),
        _ => json!({"type": "workspaceWrite",
            "writableRoots": p.get("writableRoots").cloned().unwrap_or_else(|| json!([])),
            "networkAccess": b("networkAccess"), "excludeTmpdirEnvVar": b("excludeTmpdirEnvVar"),
            "excludeSlashTmp": b("excludeSlashTmp")}),
    }
}

/// The built-in instructions codex fills in for a collaboration mode left without any.
pub struct ModeTexts<'a> {
    pub plan: Option<&'a str>,
    pub default: Option<&'a str>,
}

/// A `collaborationMode` param as the thread keeps it (`normalize_collaboration_mode`): modes
/// other than Plan are Default; null instructions get the mode's built-in ones.
fn collaboration_mode(mode: &Value, texts: &ModeTexts) -> Value {
    let plan = mode["mode"] == "plan";
    let settings = &mode["settings"];
    let mut instructions = settings["developer_instructions"].clone();
    if instructions.is_null() {
        let builtin = if plan { texts.plan } else { texts.default };
        instructions = builtin.map_or(Value::Null, Value::from);
    }
    json!({"mode": if plan { "plan" } else { "default" },
           "settings": {"model": settings["model"], "reasoning_effort": settings["reasoning_effort"],
                        "developer_instructions": instructions}})
}

/// Where a thread keeps the place its last turn's context named ([`context_place`]).
pub const CONTEXT_PLACE: &str = "contextPlace";

/// Where a thread works as its turn context tells the model (cwd, environments, roots, and
/// where a workspace-write sandbox lets it write): a turn that finds it moved writes the
/// environment context again (turn scenario 210: a read-only thread's turn with the
/// `:workspace` profile; read-only to full access moves nothing).
pub fn context_place(info: &Value) -> Value {
    let writes = if info["sandbox"]["type"] == "workspaceWrite" {
        info["sandbox"]["writableRoots"].clone()
    } else {
        Value::Null
    };
    json!([info["cwd"], info["environments"], info["roots"], writes])
}

/// Where a thread keeps a configured tier it does not yet show ([`Resolved::configured_tier`]).
const CONFIGURED_TIER: &str = "configuredServiceTier";
/// A thread's info key: the cwd it started in, once a setting moved it (see `thread/list`).
pub const INDEX_CWD: &str = "indexCwd";

/// The configured tier a thread keeps without showing it, if any.
pub fn configured_tier(info: &Value) -> Option<&str> {
    info[CONFIGURED_TIER].as_str()
}

/// The params by which a turn (or `thread/settings/update`) carries settings (the plugins a
/// turn disables too: codex writes the thread's settings for them; fidelity s24240001_0058).
pub const SETTING_PARAMS: &[&str] = &[
    "disabledPluginIds",
    "cwd",
    "approvalPolicy",
    "approvalsReviewer",
    "sandboxPolicy",
    "permissions",
    "model",
    "serviceTier",
    "effort",
    "summary",
    "personality",
    "collaborationMode",
    "environments",
    "runtimeWorkspaceRoots",
];

/// A permission profile and a sandbox policy exclude each other: refused before either is read
/// (`turn/start`, and `thread/settings/update` before it resolves the profile: turn scenario 232).
pub fn profile_without_policy(params: &Value) -> Result<(), String> {
    let given = |k: &str| params.get(k).is_some_and(|v| !v.is_null());
    if given("permissions") && given("sandboxPolicy") {
        return Err("`permissions` cannot be combined with `sandboxPolicy`".into());
    }
    Ok(())
}

/// `turn/start`'s settings over a thread's (`build_thread_settings_overrides`): each param
/// given replaces the thread's setting, and stays for later turns. Returns the thread's info
/// with them applied, or the real server's error. Checked on 0.171.0, param by param.
pub fn for_turn(
    base: &Config,
    server_cwd: &Path,
    info: &Value,
    params: &Value,
    texts: &ModeTexts,
) -> Result<Value, String> {
    let given = |k: &str| params.get(k).filter(|v| !v.is_null());
    profile_without_policy(params)?;
    let mut next = info.clone();
    // A configured tier the model does not advertise is left out of the thread's start (shown
    // null) but stays its setting: the first turn or update that carries settings shows it; a
    // plain turn announces nothing (fidelity s14140001_0243, from the thread's `config` or
    // config.toml; probed on 0.171.0).
    if let Some(t) = next.as_object_mut().and_then(|m| m.remove(CONFIGURED_TIER)) {
        if SETTING_PARAMS.iter().any(|k| given(k).is_some()) {
            next["serviceTier"] = t;
        } else {
            next[CONFIGURED_TIER] = t;
        }
    }
    let old_cwd = info["cwd"].as_str().unwrap_or("/").to_string();
    // Where the thread works: environments, cwd, workspace roots.
    let envs = environments(&params["environments"])?;
    let mut cwd = given("cwd")
        .and_then(Value::as_str)
        .map(|c| resolve_path(c, server_cwd));
    match &envs {
        Some(list) => {
            if cwd.is_none() {
                cwd = list
                    .first()
                    .and_then(|e| e["cwd"].as_str())
                    .map(|c| normalize(Path::new(c)));
            }
            next["environments"] = Value::Array(list.clone());
        }
        None if cwd.is_some() || given("runtimeWorkspaceRoots").is_some() => {
            next["environments"] = Value::Null;
        }
        None => {}
    }
    let cwd = cwd.unwrap_or_else(|| old_cwd.clone());
    let mut roots: Vec<String> = match info["roots"].as_array() {
        Some(r) => r
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        None => vec![old_cwd.clone()],
    };
    if let Some(r) = given("runtimeWorkspaceRoots").and_then(Value::as_array) {
        roots = dedup(
            r.iter()
                .filter_map(Value::as_str)
                .map(|s| normalize(Path::new(s))),
        );
    } else if cwd != old_cwd {
        // A new cwd takes the old one's place among the roots.
        roots = dedup(
            roots
                .into_iter()
                .map(|r| if r == old_cwd { cwd.clone() } else { r }),
        );
    }
    // codex's thread index keeps the cwd a thread started in, whatever its turns and resumes
    // moved it to since (`thread/list`; turn scenarios 169 and 169b).
    if cwd != old_cwd && next.get(INDEX_CWD).is_none() {
        next[INDEX_CWD] = json!(old_cwd);
    }
    next["cwd"] = json!(cwd);
    next["roots"] = json!(roots);
    // The sandbox: a policy as given, a profile, or the thread's own setting re-projected on the
    // new roots.
    if let Some(p) = given("sandboxPolicy") {
        next["sandbox"] = sandbox_policy(p);
        next["permissionProfile"] = Value::Null;
        next["sandboxSetting"] = json!("policy");
        next["sandboxPolicy"] = p.clone();
    } else if let Some(p) = given("permissions").and_then(Value::as_str) {
        profile_mode(p)?;
        next["permissionProfile"] = json!({"id": p, "extends": null});
        next["sandboxSetting"] = json!(format!("profile:{p}"));
    }
    // A thread resumed with a sandbox over no roots (`rootless:<mode>`) keeps it whatever
    // cwd or roots a turn gives; a policy or profile replaces it (seen on 0.171.0).
    let mode = match next["sandboxSetting"]
        .as_str()
        .and_then(|s| s.split_once(':'))
    {
        Some(("profile", p)) => profile_mode(p).ok(),
        Some(("mode", m)) => SANDBOX_MODES.iter().copied().find(|x| *x == m),
        _ => None,
    };
    let envs = next["environments"].as_array().cloned();
    let shown = shown_roots(&envs, &roots);
    if let Some(mode) = mode {
        next["sandbox"] = sandbox_object(mode, &shown, &cwd, base);
    } else if next["sandboxSetting"] == "policy" && next["sandbox"]["type"] == "workspaceWrite" {
        // A workspace-write policy as given still writes where the thread works.
        next["sandbox"] = project_policy(&next["sandboxPolicy"], &shown, &cwd);
    }
    // Approvals.
    if let Some(p) = given("approvalPolicy") {
        next["approvalPolicy"] = approval_policy(p);
    }
    if let Some(r) = given("approvalsReviewer").and_then(Value::as_str) {
        next["approvalsReviewer"] = json!(reviewer(r));
    }
    for key in ["summary", "personality"] {
        if let Some(v) = given(key) {
            next[key] = v.clone();
        }
    }
    if let Some(ids) = given("disabledPluginIds") {
        next["disabledPluginIds"] = ids.clone();
    }
    // A tier sent, even `null` (the standard one), is the thread's from now on; none is checked.
    if let Some(tier) = params.get("serviceTier") {
        next["serviceTier"] = match tier.as_str() {
            Some("fast") => json!("priority"),
            Some(t) => json!(t),
            None => json!("default"),
        };
    }
    // Model and effort: a collaboration mode carries its own, over the params'.
    if let Some(mode) = given("collaborationMode") {
        let mode = collaboration_mode(mode, texts);
        next["model"] = mode["settings"]["model"].clone();
        next["effort"] = mode["settings"]["reasoning_effort"].clone();
        next["collaborationMode"] = mode;
    } else {
        if let Some(m) = given("model") {
            next["model"] = m.clone();
        }
        if let Some(e) = given("effort") {
            next["effort"] = e.clone();
        }
        if next["collaborationMode"].is_object() {
            next["collaborationMode"]["settings"]["model"] = next["model"].clone();
            next["collaborationMode"]["settings"]["reasoning_effort"] = next["effort"].clone();
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_as_codex_resolves_a_cwd() {
        let base = Path::new("/w");
        assert_eq!(resolve_path("", base), "/w");
        assert_eq!(resolve_path(".", base), "/w");
        assert_eq!(resolve_path("./sub", base), "/w/sub");
        assert_eq!(resolve_path("sub/", base), "/w/sub");
        assert_eq!(resolve_path("sub/..", base), "/w");
        assert_eq!(resolve_path("/a/./b/../b/", base), "/a/b");
        assert_eq!(resolve_path("//a//b", base), "/a/b");
        assert_eq!(resolve_path("/", base), "/");
        assert_eq!(resolve_parents("/o/../w/"), "/w/");
        assert_eq!(resolve_parents("/o/w/"), "/o/w/");
    }

    #[test]
    fn a_granular_policy_is_echoed_with_every_flag_in_codex_order() {
        let p = approval_policy(
            &json!({"granular": {"mcp_elicitations": true, "rules": false,
                                                      "sandbox_approval": true}}),
        );
        assert_eq!(
            p.to_string(),
            r#"{"granular":{"sandbox_approval":true,"rules":false,"skill_approval":false,"request_permissions":false,"mcp_elicitations":true}}"#
        );
    }
}
