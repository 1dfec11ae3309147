//! What a recording must never contain: the credentials codex and its client use. Secrets are
//! found where they live (the environment, `CODEX_HOME/auth.json`, `config.toml`, the request
//! headers, JSON members named as credentials) and replaced before anything is written; the user
//! adds patterns with `--redact REGEX`.

use serde_json::Value;
use std::borrow::Cow;
use std::path::Path;

/// What a secret becomes.
pub const MASK: &str = "[REDACTED]";

/// Request and response headers never written (credentials, cookies, the account they name).
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "chatgpt-account-id",
    "openai-organization",
    "openai-project",
];

/// JSON members that hold a credential (compared without case, `_` or `-`): the protocol's
/// login params and results (`apiKey`, `accessToken`, …). Exact names only: a message's own
/// data has members such as `sortKey` or `userAuthorization` that are no secret.
const SECRET_MEMBERS: &[&str] = &[
    "apikey",
    "accesstoken",
    "idtoken",
    "refreshtoken",
    "sessiontoken",
    "authtoken",
    "bearertoken",
    "token",
    "authorization",
    "password",
    "secret",
    "clientsecret",
    "chatgptaccountid",
];

fn secret_member(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', '_'], "");
    SECRET_MEMBERS.contains(&n.as_str())
}

/// A name of an environment variable or a `config.toml` key that holds a credential.
fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', '_'], "");
    [
        "key",
        "token",
        "secret",
        "password",
        "authorization",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|w| n.ends_with(w))
        || ["keys", "secrets", "passwords", "credentials", "cookies"]
            .iter()
            .any(|w| n.ends_with(w))
        || n.contains("apikey")
        || n.contains("bearer")
}

/// Replaces secrets in everything a recording writes.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Known secret values, longest first (a key that contains another is replaced whole).
    literals: Vec<String>,
    patterns: Vec<regex_lite::Regex>,
}

impl Redactor {
    /// Secrets of this machine: credential-named environment variables, every string of
    /// `codex_home/auth.json`, credential-named values and header values of `config.toml`, and
    /// the values of the environment variables `config.toml` names for headers or keys; plus
    /// the user's patterns.
    pub fn new(patterns: &[String], codex_home: &Path) -> Result<Redactor, String> {
        let mut literals = Vec::new();
        for (k, v) in std::env::vars_os() {
            let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
            if secret_name(&k) {
                literals.push(v.into_owned());
            }
        }
        if let Ok(text) = std::fs::read_to_string(codex_home.join("auth.json")) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                strings(&v, &mut literals);
            }
        }
        if let Ok(text) = std::fs::read_to_string(codex_home.join("config.toml")) {
            if let Ok(t) = text.parse::<toml::Table>() {
                toml_secrets(&toml::Value::Table(t), false, &mut literals);
            }
        }
        // Short values (`1`, `true`, a user name) are not secrets and would mangle the text.
        literals.retain(|s| s.len() >= 8);
        literals.sort_by_key(|s| std::cmp::Reverse(s.len()));
        literals.dedup();
        let patterns = patterns
            .iter()
            .map(|p| regex_lite::Regex::new(p).map_err(|e| format!("--redact {p:?}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Redactor { literals, patterns })
    }

    /// Secrets a command line gives as `-c` overrides: credential-named keys and header values.
    pub fn learn_overrides(&mut self, args: &[String]) {
        for (k, v) in super::overrides::cli_overrides(args) {
            let last = k.rsplit('.').next().unwrap_or(&k);
            if secret_name(last) || k.contains("headers") {
                match &v {
                    toml::Value::String(s) => self.learn(s),
                    toml::Value::Table(_) => {
                        let mut found = Vec::new();
                        toml_secrets(
                            &toml::Value::Table(toml::Table::from_iter([(
                                "headers".to_string(),
                                v.clone(),
                            )])),
                            false,
                            &mut found,
                        );
                        found.iter().for_each(|s| self.learn(s));
                    }
                    _ => {}
                }
            }
        }
    }

    /// A secret value found elsewhere (a header the request carried).
    pub fn learn(&mut self, secret: &str) {
        if secret.len() >= 8 && !self.literals.iter().any(|l| l == secret) {
            self.literals.push(secret.to_string());
            self.literals.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `s` with every known secret and pattern match replaced.
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(s);
        for l in &self.literals {
            if out.contains(l.as_str()) {
                out = Cow::Owned(out.replace(l.as_str(), MASK));
            }
        }
        for p in &self.patterns {
            if p.is_match(&out) {
                out = Cow::Owned(p.replace_all(&out, MASK).into_owned());
            }
        }
        out
    }

    /// Redacts a JSON value in place: credential-named members whole, every string by
    /// [`Redactor::text`]. Whether anything changed.
    pub fn json(&self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => match self.text(s) {
                Cow::Owned(o) => {
                    *s = o;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(a) => a.iter_mut().fold(false, |c, x| self.json(x) | c),
            Value::Object(o) => {
                let mut changed = false;
                for (k, x) in o.iter_mut() {
                    if secret_member(k) && x.as_str().is_some_and(|s| !s.is_empty() && s != MASK) {
                        *x = Value::String(MASK.into());
                        changed = true;
                    } else {
                        changed |= self.json(x);
                    }
                }
                changed
            }
            _ => false,
        }
    }

    /// A line of traffic as it may be written: JSON redacted member by member (re-serialized
    /// only when something was replaced), other text by [`Redactor::text`].
    pub fn line<'a>(&self, line: &'a [u8]) -> Cow<'a, [u8]> {
        let Ok(text) = std::str::from_utf8(line) else {
            return Cow::Borrowed(line);
        };
        if let Ok(mut v) = serde_json::from_str::<Value>(text) {
            if self.json(&mut v) {
                return Cow::Owned(v.to_string().into_bytes());
            }
            return Cow::Borrowed(line);
        }
        match self.text(text) {
            Cow::Borrowed(_) => Cow::Borrowed(line),
            Cow::Owned(o) => Cow::Owned(o.into_bytes()),
        }
    }

    /// Whether a header may be written (its value still goes through [`Redactor::text`]).
    pub fn keeps_header(name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        !SECRET_HEADERS.contains(&n.as_str()) && !secret_name(&n)
    }
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Secret values of `config.toml`: credential-named keys, every value of a headers table
/// (`http_headers`, MCP `headers`), and the environment values named by `env_key`,
/// `env_http_headers` and `*_env_var` keys.
fn toml_secrets(v: &toml::Value, in_headers: bool, out: &mut Vec<String>) {
    let Some(t) = v.as_table() else { return };
    for (k, x) in t {
        let env_names = k == "env_key" || k.ends_with("_env_var") || k == "env_http_headers";
        match x {
            toml::Value::String(s) if env_names => {
                if let Ok(val) = std::env::var(s) {
                    out.push(val);
                }
            }
            toml::Value::String(s) if in_headers || secret_name(k) => out.push(s.clone()),
            toml::Value::Table(_) if k == "env_http_headers" => {
                for name in x.as_table().into_iter().flat_map(|t| t.values()) {
                    if let Some(val) = name.as_str().and_then(|n| std::env::var(n).ok()) {
                        out.push(val);
                    }
                }
            }
            toml::Value::Table(_) => toml_secrets(x, k.ends_with("headers"), out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_hold_credentials() {
        for n in [
            "OPENAI_API_KEY",
            "apiKey",
            "accessToken",
            "experimental_bearer_token",
            "GITHUB_TOKEN",
            "password",
            "AWS_SECRET_ACCESS_KEY",
            "Authorization",
        ] {
            assert!(secret_name(n), "{n}");
        }
        for n in [
            "threadId",
            "cwd",
            "model",
            "keyboard",
            "tokenUsage",
            "input_tokens",
        ] {
            assert!(!secret_name(n), "{n}");
        }
    }

    #[test]
    fn members_literals_and_patterns() {
        let mut r = Redactor::new(&["ghp_[A-Za-z0-9]+".into()], Path::new("/nonexistent"))
            .expect("valid pattern");
        r.learn("sk-planted-123456");
        let mut v = serde_json::json!({"method": "account/login/start",
            "params": {"type": "apiKey", "apiKey": "anything",
                       "note": "use sk-planted-123456 and ghp_abc123"}});
        assert!(r.json(&mut v));
        assert_eq!(v["params"]["apiKey"], MASK);
        assert_eq!(
            v["params"]["note"],
            format!("use {MASK} and {MASK}"),
            "a literal and a pattern inside text"
        );
        assert_eq!(v["params"]["type"], "apiKey");
        let line = br#"{"id":1,"result":{}}"#;
        assert!(
            matches!(r.line(line), Cow::Borrowed(_)),
            "untouched lines keep their bytes"
        );
        assert!(!Redactor::keeps_header("Authorization"));
        assert!(!Redactor::keeps_header("ChatGPT-Account-ID"));
        assert!(Redactor::keeps_header("x-request-id"));
        let mut data = serde_json::json!({"sortKey": "created_at", "userAuthorization": "high",
                                          "key": "answer", "accessToken": "abc"});
        r.json(&mut data);
        assert_eq!(
            data,
            serde_json::json!({"sortKey": "created_at", "userAuthorization": "high",
                               "key": "answer", "accessToken": MASK})
        );
    }

    #[test]
    fn patterns_are_read_as_documented() {
        let r = Redactor::new(&[r"(?i)tok-\d{4}\w*".into()], Path::new("/nonexistent"))
            .expect("valid pattern");
        assert_eq!(r.text("a TOK-1234x_y b"), format!("a {MASK} b"));
        let e = Redactor::new(&[r"\p{L}+".into()], Path::new("/nonexistent"))
            .expect_err("Unicode classes are refused");
        assert!(e.starts_with(r#"--redact "\\p{L}+": "#), "{e}");
    }
}
