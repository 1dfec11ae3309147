//! The account: a login by API key kept in `CODEX_HOME/auth.json` (as codex keeps it, so every
//! process of the home sees it), and what each account method answers logged out or logged in
//! that way. Each rule shown by `tests/corpus/turns/41_account_login_logout` on every version.
//! A ChatGPT login needs the network: not modeled (`account/login/start` answers it with its
//! recorded result).

use super::view::H;
use crate::fake::defaults;
use serde_json::{json, Value};
use std::sync::atomic::Ordering::SeqCst;

/// How long after its result an API-key login completes (the median of codex's 2–2.5 ms).
const LOGIN_COMPLETED: std::time::Duration = std::time::Duration::from_micros(2200);
/// How long codex takes to answer `account/logout`: the least of 14 recorded (3.5 ms on
/// 0.163.0, 3.7 on 0.171.0, 4.4 on 0.169.0; medians 6.1–6.8 ms, turn corpus and fidelity), so a
/// turn's event the real server sends that soon after the request comes first (fidelity
/// s47470001_0758: a review's entry, 3.8 and 6.4 ms after the logout was sent, before its
/// answer in both real runs).
const LOGOUT_ANSWER: std::time::Duration = std::time::Duration::from_micros(3500);

/// How the home is logged in.
#[derive(Clone, PartialEq, Eq)]
enum Auth {
    None,
    ApiKey,
    /// A managed ChatGPT login: its user and email from the id token's claims, its workspace
    /// from the tokens' `account_id`.
    ChatGpt {
        user_id: String,
        email: Option<String>,
        account_id: Option<String>,
    },
}

/// The claims of a JWT (its payload, base64url, unverified: codex reads them the same way).
fn jwt_claims(token: &str) -> Option<Value> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// A ChatGPT login as codex's auth manager reads `auth.json`'s tokens (probed on 0.171.0: the
/// user is the id token's `chatgpt_user_id`, else its `user_id`, none is no login; the email
/// its `email`, else its profile's).
fn chatgpt_login(tokens: &Value) -> Option<Auth> {
    let claims = jwt_claims(tokens["id_token"].as_str()?)?;
    let auth = &claims["https://api.openai.com/auth"];
    let user_id = auth["chatgpt_user_id"]
        .as_str()
        .or(auth["user_id"].as_str())?;
    let email = claims["email"]
        .as_str()
        .or(claims["https://api.openai.com/profile"]["email"].as_str());
    Some(Auth::ChatGpt {
        user_id: user_id.to_string(),
        email: email.map(String::from),
        account_id: tokens["account_id"].as_str().map(String::from),
    })
}

/// What a method gated on a ChatGPT account is refused with, per login: the first part of the
/// sentence (codex: `codex account authentication required …` logged out, `chatgpt
/// authentication required …` with an API key) and its end.
const GATED: &[(&str, &str)] = &[
    ("account/rateLimits/read", "to read rate limits"),
    (
        "account/rateLimitResetCredit/consume",
        "for rate limit reset credits",
    ),
    ("account/usage/read", "to read token usage"),
    (
        "account/workspaceMessages/read",
        "to read workspace messages",
    ),
    (
        "account/sendAddCreditsNudgeEmail",
        "to notify workspace owner",
    ),
];

/// Remote control needs a ChatGPT login.
const REMOTE_CONTROL: &[&str] = &[
    "remoteControl/enable",
    "remoteControl/disable",
    "remoteControl/client/list",
    "remoteControl/client/revoke",
];

impl H<'_> {
    fn auth_file(&self) -> std::path::PathBuf {
        self.fake.codex_home.join("auth.json")
    }

    pub(super) fn has_api_key(&self) -> bool {
        matches!(self.auth(), Auth::ApiKey)
    }

    fn auth(&self) -> Auth {
        let text = std::fs::read_to_string(self.auth_file()).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        // An API key wins over tokens unless `auth_mode` names the ChatGPT login.
        let chatgpt = || chatgpt_login(&v["tokens"]).unwrap_or(Auth::None);
        match v["auth_mode"].as_str() {
            Some("chatgpt") => chatgpt(),
            _ if v["OPENAI_API_KEY"].is_string() => Auth::ApiKey,
            Some("apikey") => Auth::None,
            _ => chatgpt(),
        }
    }

    /// A login being completed is finished first: the methods on the logins' queue answer after
    /// its notifications (`ACCOUNT_AUTH`; turn scenario 41 on every version). A
    /// thread fork or a full history read, which take the real server 10–50 ms, answers after
    /// them too (fidelity s35350001_0059 and _0310 on 0.171.0). (A plugin list races it: 1.8 ms
    /// before it in turn scenario 219, 5.5 ms after it in fidelity s35350001_0694.)
    pub(super) fn after_logins(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
        while self.fake.logins_pending.load(SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// `account/read`: a provider that needs no OpenAI login shows no account, whatever the
    /// login (codex's provider `account_state`).
    pub(super) fn account_read(&self, id: &Value, _: &Value) -> Result<(), String> {
        let requires = self.fake.config().requires_openai_auth();
        let account = match (requires, self.auth()) {
            (true, Auth::ApiKey) => json!({"type": "apiKey"}),
            // What a ChatGPT login shows (its plan, from the network) is not modeled.
            (true, Auth::ChatGpt { .. }) => return self.not_modeled("account/read"),
            _ => Value::Null,
        };
        let v = json!({"account": account, "userId": null, "requiresOpenaiAuth": requires,
                       "workspaceRouting": null});
        self.result(id, defaults::shaped(self.fake.protocol, "account/read", v));
        Ok(())
    }

    /// The methods a ChatGPT account gates ([`GATED`], [`REMOTE_CONTROL`],
    /// `accountSession/switch`): refused for the login at hand.
    pub(super) fn account_gated(&self, method: &str) -> Result<(), String> {
        let auth = self.auth();
        if matches!(auth, Auth::ChatGpt { .. }) {
            // With a ChatGPT login these ask chatgpt.com: not modeled.
            return self.not_modeled(method);
        }
        if let Some((_, end)) = GATED.iter().find(|(m, _)| *m == method) {
            return Err(match auth {
                Auth::ApiKey => format!("chatgpt authentication required {end}"),
                _ => format!("codex account authentication required {end}"),
            });
        }
        if REMOTE_CONTROL.contains(&method) {
            return Err(match auth {
                Auth::ApiKey => "remote control requires ChatGPT authentication; API key auth \
                                 is not supported"
                    .into(),
                _ => "remote control requires ChatGPT authentication".into(),
            });
        }
        Err("Workspace switching requires a managed ChatGPT login".into())
    }

    /// `accountSession/list`: the one session of a managed ChatGPT login, none otherwise
    /// (probed on 0.171.0: no file of sessions; `lastUsedAt` is the time of the call).
    /// Refreshing a session's workspaces asks chatgpt.com: not modeled.
    pub(super) fn account_sessions(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.after_logins();
        let auth = self.auth();
        if p["refreshWorkspaceMetadata"] == true && matches!(auth, Auth::ChatGpt { .. }) {
            return self.not_modeled("accountSession/list");
        }
        self.result(id, sessions_of(&auth));
        Ok(())
    }

    /// `accountSession/switch`: the workspace id checked, then the login, then the session;
    /// switching to the workspace already selected answers the list (probed on 0.171.0); to
    /// another asks chatgpt.com: not modeled.
    pub(super) fn account_session_switch(&self, id: &Value, p: &Value) -> Result<(), String> {
        if p["accountId"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .is_empty()
        {
            return Err("accountId must not be empty".into());
        }
        let auth = self.auth();
        let Auth::ChatGpt {
            user_id,
            account_id,
            ..
        } = &auth
        else {
            return Err("Workspace switching requires a managed ChatGPT login".into());
        };
        if p["sessionId"].as_str() != Some(user_id.as_str()) {
            return Err("Only the active managed account session can be switched".into());
        }
        if p["accountId"].as_str() != account_id.as_deref() {
            return self.not_modeled("accountSession/switch");
        }
        self.result(id, sessions_of(&auth));
        Ok(())
    }

    /// `account/login/start`: an API key (any, even empty) is kept and the login completes
    /// after the result; other logins answer with their recorded result.
    pub(super) fn login_start(&self, id: &Value, p: &Value) -> Result<(), String> {
        if p["type"] != "apiKey" {
            self.result(
                id,
                defaults::result_for(self.fake.protocol, "account/login/start"),
            );
            return Ok(());
        }
        let key = p["apiKey"].as_str().unwrap_or_default();
        let file = json!({"OPENAI_API_KEY": key, "tokens": null, "last_refresh": null});
        std::fs::write(self.auth_file(), format!("{file:#}"))
            .map_err(|e| format!("failed to save api key: {e}"))?;
        self.fake.logins_pending.fetch_add(1, SeqCst);
        self.result(id, json!({"type": "apiKey"}));
        // codex completes the login on a task of its own, 2–2.5 ms after the result (turn
        // scenario 41 on every version): a request sent meanwhile is answered first (fidelity
        // s17170001_0071).
        let conn = std::sync::Arc::clone(self.c);
        std::thread::spawn(move || {
            std::thread::sleep(LOGIN_COMPLETED);
            let h = H { c: &conn };
            h.notify(
                "account/login/completed",
                json!({"loginId": null, "success": true, "error": null,
                       "onboardingEntrypoint": null}),
            );
            h.notify(
                "account/updated",
                json!({"authMode": "apikey", "planType": null, "reason": null}),
            );
            h.fake.logins_pending.fetch_sub(1, SeqCst);
        });
        Ok(())
    }

    /// `account/logout`: the login is gone (logged out or not), and the account says so.
    pub(super) fn logout(&self, id: &Value, _: &Value) -> Result<(), String> {
        let _ = std::fs::remove_file(self.auth_file());
        self.flush_held();
        std::thread::sleep(LOGOUT_ANSWER);
        self.result(id, json!({}));
        self.notify(
            "account/updated",
            json!({"authMode": null, "planType": null, "reason": null}),
        );
        Ok(())
    }

    /// `account/login/cancel`: no login is ever pending here.
    pub(super) fn login_cancel(&self, id: &Value, p: &Value) -> Result<(), String> {
        let login = p["loginId"].as_str().unwrap_or_default();
        if uuid::Uuid::parse_str(login).is_err() {
            return Err(format!("invalid login id: {login}"));
        }
        self.result(
            id,
            defaults::shaped(
                self.fake.protocol,
                "account/login/cancel",
                json!({"status": "notFound"}),
            ),
        );
        Ok(())
    }

    /// `remoteControl/status/read`: disabled, as the status the session started with says.
    pub(super) fn remote_control_status(&self, id: &Value, _: &Value) -> Result<(), String> {
        self.result(id, self.remote_control_payload());
        Ok(())
    }
}

/// `accountSession/list`'s answer for a login.
fn sessions_of(auth: &Auth) -> Value {
    let Auth::ChatGpt {
        user_id,
        email,
        account_id,
    } = auth
    else {
        return json!({"activeSessionId": null, "sessions": []});
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let workspaces: Vec<Value> = account_id
        .iter()
        .map(|a| json!({"accountId": a, "name": null, "imageUrl": null, "kind": null}))
        .collect();
    json!({"activeSessionId": user_id, "sessions": [{
        "sessionId": user_id, "email": email, "userId": user_id, "displayName": null,
        "imageUrl": null, "lastUsedAt": now, "isActive": true,
        "selectedWorkspaceAccountId": account_id, "workspaces": workspaces}]})
}
