//! The cloud setups (`account/bedrock/setup`, `account/gcp/setup`) and feedback (`feedback/upload`,
//! `feedback/save`): codex's
//! checks in its order, up to the point where it would reach a cloud. Past that point the fake
//! answers as the real server does with no cloud credentials and no network: the Google Cloud
//! auth command fails and the feedback upload cannot resolve Sentry's host. Each answer probed
//! on 0.163.0, 0.168.0, 0.169.0 and 0.171.0 with and without `-c model_provider=…`, and kept by
//! `tests/corpus/turns/85_cloud_setup` on every version.

use super::view::H;
use crate::fake::rpc::INTERNAL_PREFIX;
use crate::fake::threads::check_uuid;
use crate::fake::user_config as uc;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::path::Path;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum BedrockSetup {
    Profile { profile: String, region: String },
    Environment { region: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GcpSetup {
    project_id: String,
    location: Option<String>,
    credential_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FeedbackUpload {
    thread_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FeedbackSave {
    thread_id: Option<String>,
    save_path: String,
}

/// codex's `BEDROCK_MANTLE_SUPPORTED_REGIONS` (`codex-rs/model-provider`).
const BEDROCK_REGIONS: &[&str] = &[
    "us-east-2",
    "us-east-1",
    "us-west-2",
    "ap-southeast-3",
    "ap-south-1",
    "ap-northeast-1",
    "eu-central-1",
    "eu-west-1",
    "eu-west-2",
    "eu-south-1",
    "eu-north-1",
    "sa-east-1",
];

/// What the real server answers an upload with no network (0.163.0–0.171.0): the Sentry
/// endpoint's name does not resolve. The fake never uploads.
const UPLOAD_OFFLINE: &str = "failed to upload feedback: failed to upload feedback to Sentry: \
    error sending request for url (https://o33249.ingest.us.sentry.io/api/4510195390611458/\
    envelope/): client error (Connect): dns error: failed to lookup address information: Name \
    does not resolve";

/// How long the real server's failed upload takes: its name lookup failed 25-55 ms after the
/// request in nine recordings of 0.169.0-0.171.0 (three took 400 ms; the fastest is kept, so a
/// client's quick next requests are answered first, as in all nine: fidelity s31310001_0749).
const UPLOAD_LOOKUP: std::time::Duration = std::time::Duration::from_millis(25);

const GCP_NO_TOKEN: &str = "The Google Cloud auth command could not obtain an access token.";
const GCP_FILE_KIND: &str =
    "Expected a Google Cloud credential file containing a JSON object with a nonempty string type.";

/// A Vertex project id or location as codex accepts it (trimmed).
fn gcp_name_ok(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// A credential file as codex reads it before using it: `Err` is the refusal's message.
fn gcp_credential_file(path: &str) -> Result<(), String> {
    if !Path::new(path).is_absolute() {
        return Err("provider credential_file must be an absolute path".into());
    }
    let unreadable = |e: String| format!("Cannot read the Google Cloud credential file: {e}");
    let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable("expected a regular file".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    match v["type"].as_str() {
        Some(t) if !t.is_empty() => Ok(()),
        _ => Err(GCP_FILE_KIND.into()),
    }
}

/// Whether an AWS profile could be looked up at all: with no shared config or credentials
/// file the AWS SDK's profile provider is not enabled (the real server's refusal here).
fn aws_profiles_exist() -> bool {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let set = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).is_some();
    set("AWS_CONFIG_FILE")
        || set("AWS_SHARED_CREDENTIALS_FILE")
        || home
            .is_some_and(|h| h.join(".aws/config").exists() || h.join(".aws/credentials").exists())
}

fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

impl H<'_> {
    /// A setup writes `model_provider` to the user layer first: a `-c` flag that sets it
    /// otherwise refuses the write (0.168.0 on: the config write's refusal; 0.163.0 names the
    /// layer and its value).
    fn provider_held(&self, id: &Value, provider: &str, old_words: bool) -> bool {
        let flags = uc::flags(&self.fake.overrides);
        let held = flags.get("model_provider").filter(|v| *v != provider);
        let Some(held) = held else { return false };
        if old_words {
            self.refuse(
                id,
                None,
                format!(
                    "Amazon Bedrock login cannot select `{provider}` because session-flags sets \
                     `model_provider` to {held}"
                ),
            );
            return true;
        }
        let mut user = Map::new();
        user.insert("model_provider".into(), json!(provider));
        if uc::overridden(&user, &flags, &[vec!["model_provider".into()]]).is_none() {
            return false;
        }
        // The config write's own refusal, in its one wire form.
        self.config_written(
            id,
            Err(uc::refusal(
                uc::READONLY,
                "Cannot configure `model_provider`: Overridden by session flags",
            )),
        );
        true
    }

    fn refuse(&self, id: &Value, data: Option<Value>, message: String) {
        // In the real server's key order: the data before the message.
        let error = match data {
            Some(d) => json!({"code": -32600, "data": d, "message": message}),
            None => json!({"code": -32600, "message": message}),
        };
        self.send(json!({"error": error, "id": id}));
    }

    /// `account/bedrock/discover`: the AWS profiles on disk (`aws.rs`), then the credentials
    /// codex finds in the environment — access keys (both set), a Bedrock API key — each with
    /// `AWS_REGION` (codex `bedrock_discover`; turn scenario 247 on every version).
    pub(super) fn bedrock_discover(&self, id: &Value) -> Result<(), String> {
        let profiles = crate::fake::aws::discover().map_err(|_| {
            format!(
                "{INTERNAL_PREFIX}failed to discover AWS profiles: failed to load AWS profiles: \
                 could not parse profile file"
            )
        })?;
        let region = std::env::var("AWS_REGION")
            .ok()
            .filter(|v| !v.trim().is_empty());
        let keys = env_set("AWS_ACCESS_KEY_ID") && env_set("AWS_SECRET_ACCESS_KEY");
        let environment: Vec<Value> = [
            ("accessKeys", keys),
            ("bedrockApiKey", env_set("AWS_BEARER_TOKEN_BEDROCK")),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(kind, _)| json!({"type": kind, "region": region}))
        .collect();
        let profiles: Vec<Value> = profiles
            .into_iter()
            .map(|p| json!({"name": p.name, "region": p.region}))
            .collect();
        self.result(
            id,
            json!({"profiles": profiles, "environmentCredentials": environment}),
        );
        Ok(())
    }

    pub(super) fn bedrock_setup(&self, id: &Value, p: &Value) -> Result<(), String> {
        let Ok(setup) = serde_json::from_value::<BedrockSetup>(p.clone()) else {
            return self.not_modeled("account/bedrock/setup");
        };
        let old_words = self.fake.turn_facts.bedrock_refusal_names_layer;
        if self.provider_held(id, "amazon-bedrock", old_words) {
            return Ok(());
        }
        let region = match &setup {
            BedrockSetup::Profile { region, .. } | BedrockSetup::Environment { region } => {
                region.trim()
            }
        };
        if !BEDROCK_REGIONS.contains(&region) {
            return Err(format!("Amazon Bedrock does not support region `{region}`"));
        }
        match &setup {
            BedrockSetup::Profile { profile, .. } => {
                let profile = profile.trim();
                if profile.is_empty() {
                    return Err("AWS profile name must not be empty.".into());
                }
                if !aws_profiles_exist() {
                    return Err(format!(
                        "failed to load credentials for AWS profile `{profile}`: failed to \
                         load AWS credentials: the credential provider was not enabled"
                    ));
                }
            }
            BedrockSetup::Environment { .. } => {
                let keys = env_set("AWS_ACCESS_KEY_ID") && env_set("AWS_SECRET_ACCESS_KEY");
                if !env_set("AWS_BEARER_TOKEN_BEDROCK") && !keys {
                    return Err(
                        "No AWS credentials found. Please Configure AWS credentials or \
                                complete AWS sign-in, then try again."
                            .into(),
                    );
                }
            }
        }
        // Credentials that exist would configure the provider: not modeled.
        self.not_modeled("account/bedrock/setup")
    }

    pub(super) fn gcp_setup(&self, id: &Value, p: &Value) -> Result<(), String> {
        let Ok(setup) = serde_json::from_value::<GcpSetup>(p.clone()) else {
            return self.not_modeled("account/gcp/setup");
        };
        if self.provider_held(id, "gcp", false) {
            return Ok(());
        }
        let file_refused = |m: String| {
            self.refuse(id, Some(json!({"reason": "credentialFileInvalid"})), m);
            Ok(())
        };
        // The credential file first, then the names (probed: a missing file outranks an
        // empty project id).
        let file = setup.credential_file.as_deref();
        if let Some(Err(m)) = file.map(gcp_credential_file) {
            return file_refused(m);
        }
        if !gcp_name_ok(setup.project_id.trim()) {
            return Err(
                "model_providers.gcp.project_id must be non-empty and contain only ASCII \
                        letters, digits, and hyphens"
                    .into(),
            );
        }
        if let Some(loc) = &setup.location {
            if !gcp_name_ok(loc.trim()) {
                return Err(
                    "model_providers.gcp.location must be non-empty and contain only \
                            ASCII letters, digits, and hyphens"
                        .into(),
                );
            }
        }
        if file.is_some() {
            // A well-formed credential file would be used: not modeled.
            return self.not_modeled("account/gcp/setup");
        }
        // Application default credentials: the fake runs no `gcloud`.
        self.refuse(
            id,
            Some(json!({"reason": "authCommandFailed"})),
            GCP_NO_TOKEN.into(),
        );
        Ok(())
    }

    /// `feedback/upload`: its thread id checked at once, then the upload fails once the name
    /// lookup has (see [`UPLOAD_LOOKUP`]), the connection's other requests answered meanwhile.
    pub(super) fn feedback_upload(&self, id: &Value, p: &Value) -> Result<(), String> {
        let Ok(upload) = serde_json::from_value::<FeedbackUpload>(p.clone()) else {
            return self.not_modeled("feedback/upload");
        };
        if let Some(t) = &upload.thread_id {
            check_uuid(t, "thread")?;
        }
        let (conn, id) = (std::sync::Arc::clone(self.c), id.clone());
        std::thread::spawn(move || {
            std::thread::sleep(UPLOAD_LOOKUP);
            conn.error(&id, format!("{INTERNAL_PREFIX}{UPLOAD_OFFLINE}"));
        });
        Ok(())
    }

    /// `feedback/save`: the thread id parsed, then the bundle's place and the thread it names
    /// (`no-active-thread-<uuid>` without one) answered as the real server answers them
    /// (fidelity s7070001_0842, probed on 0.171.0). The bundle's contents are codex's logs:
    /// the fake writes none, and a path it could not write is not modeled.
    pub(super) fn feedback_save(&self, id: &Value, p: &Value) -> Result<(), String> {
        let Ok(save) = serde_json::from_value::<FeedbackSave>(p.clone()) else {
            return self.not_modeled("feedback/save");
        };
        if let Some(t) = &save.thread_id {
            check_uuid(t, "thread")?;
        }
        // codex writes the bundle to a temporary file beside the path first (Rust's
        // `tempfile`): a directory it cannot create one in fails the save with that file's
        // name (fidelity s31310001_0143).
        let path = std::path::Path::new(&save.save_path);
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let name: String = uuid::Uuid::new_v4().simple().to_string()[..6].into();
        let temp = dir.join(format!(".tmp{name}"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(_) => {
                let _ = std::fs::remove_file(&temp);
            }
            Err(e) => {
                return Err(format!(
                    "{INTERNAL_PREFIX}failed to save feedback: {e} at path {temp:?}"
                ))
            }
        }
        let thread = save
            .thread_id
            .unwrap_or_else(|| format!("no-active-thread-{}", uuid::Uuid::now_v7()));
        self.result(
            id,
            json!({"savedPath": save.save_path, "threadId": thread, "promptHash": null}),
        );
        Ok(())
    }
}
