//! How codex 0.171.0 plays a model provider's HTTP error (`http_error {status, body, headers}`):
//! which failures it resends (silently, up to the provider's `request_max_retries`), which it
//! retries as a turn (with a `Reconnecting... k/N` notice, up to `stream_max_retries`), and the
//! text and `codexErrorInfo` of the final error. Each row was read off the real binary against a
//! loopback provider answering that status and body (codex-api `map_api_error`, codex-client's
//! retry policy).

use serde_json::{json, Value};
use std::time::Duration;

/// What codex makes of one failed request.
#[derive(Debug, PartialEq)]
pub struct Failure {
    /// The final error's message (also the `additionalDetails` of a retry notice).
    pub message: String,
    /// The final error's `codexErrorInfo`.
    pub info: Value,
    /// Resent by the HTTP client (any 5xx).
    pub resent: bool,
    /// Retried as a turn, with a notice.
    pub retried: bool,
    /// The retry notice's `httpStatusCode`.
    pub notice_status: Value,
    /// Reported before the failure.
    pub before: Before,
    /// The `Retry-After` header's whole seconds.
    pub retry_after: Option<u64>,
}

/// What the real server sends just before a final failure.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Before {
    Nothing,
    /// The context window marked full (`thread/tokenUsage/updated`).
    FullContext,
    /// The account's rate limits.
    RateLimits,
}

/// A header's value, by name in any case.
fn header<'a>(headers: &'a Value, name: &str) -> Option<&'a str> {
    headers
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
}

/// The body as codex quotes it in `unexpected status` texts: the JSON error's message, else the
/// trimmed body (`Unknown error` when empty), cut at 1000 bytes.
fn display_body(body: &str, json: &Value) -> String {
    let text = match json["error"]["message"].as_str().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ if body.trim().is_empty() => return "Unknown error".into(),
        _ => body.trim().to_string(),
    };
    if text.len() <= 1000 {
        return text;
    }
    let mut cut = 1000;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

/// `<code> <reason>` as the http crate names it.
fn status_line(status: u16) -> String {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("<unknown status code>");
    format!("{status} {reason}")
}

/// The usage-limit text for a plan (codex's `UsageLimitReachedError`).
fn usage_limit(json: &Value, headers: &Value, now: i64) -> String {
    let when = json["error"]["resets_at"].as_i64().map(|t| at(t, now));
    let or_later = match &when {
        Some(t) => format!("or try again at {t}."),
        None => "or try again later.".into(),
    };
    let try_later = match &when {
        Some(t) => format!("Try again at {t}."),
        None => "Try again later.".into(),
    };
    if let Some(p) = header(headers, "x-codex-promo-message") {
        return format!("You’ve hit your usage limit. {p}, {or_later}");
    }
    match json["error"]["plan_type"].as_str() {
        Some("plus") => format!(
            "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit \
             https://chatgpt.com/settings/usage to purchase more credits {or_later}"
        ),
        Some("pro" | "prolite") => format!(
            "You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase \
             more credits {or_later}"
        ),
        Some("team" | "business") => format!(
            "You’ve hit your usage limit. To get more access now, send a request to your admin \
             {or_later}"
        ),
        Some("free" | "go") => format!(
            "You’ve hit your usage limit. Upgrade to Plus to continue using Codex \
             (https://chatgpt.com/explore/plus), {or_later}"
        ),
        _ => format!("You’ve hit your usage limit. {try_later}"),
    }
}

/// A reset time as codex prints it (the machine's zone is UTC here): the time alone on the same
/// day, else `Jan 1st, 2100 12:00 AM`.
fn at(t: i64, now: i64) -> String {
    let (y, mo, d, h, mi, _) = super::state::civil(t);
    let (ny, nmo, nd, ..) = super::state::civil(now);
    let (h12, ampm) = match h {
        0 => (12, "AM"),
        1..=11 => (h, "AM"),
        12 => (12, "PM"),
        _ => (h - 12, "PM"),
    };
    let time = format!("{h12}:{mi:02} {ampm}");
    if (y, mo, d) == (ny, nmo, nd) {
        return time;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let suffix = match (d % 10, d % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    let month = MONTHS[(mo as usize).saturating_sub(1).min(11)];
    format!("{month} {d}{suffix}, {y} {time}")
}

/// What codex makes of an HTTP error of `status` with `body` and `headers` from the provider at
/// `base_url`, at `now` (seconds).
/// `context_length`: whether the version reads a 400's `context_length_exceeded` code.
pub fn classify(
    status: u16,
    body: &str,
    headers: &Value,
    base_url: &str,
    now: i64,
    context_length: bool,
) -> Failure {
    let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let code = json["error"]["code"].as_str().unwrap_or_default();
    let kind = json["error"]["type"].as_str().unwrap_or_default();
    let message = json["error"]["message"].as_str();
    let retry_after = header(headers, "retry-after").and_then(|v| v.trim().parse::<u64>().ok());
    let mut unexpected = format!(
        "unexpected status {}: {}, url: {}/responses",
        status_line(status),
        display_body(body, &json),
        base_url.trim_end_matches('/')
    );
    if let Some(ray) = header(headers, "cf-ray") {
        unexpected.push_str(&format!(", cf-ray: {ray}"));
    }
    let request_id = header(headers, "x-request-id").or(header(headers, "x-oai-request-id"));
    if let Some(id) = request_id {
        unexpected.push_str(&format!(", request id: {id}"));
    }
    let fail = |message: String, info: Value| Failure {
        message,
        info,
        resent: false,
        retried: false,
        notice_status: Value::Null,
        before: Before::Nothing,
        retry_after,
    };
    let http = |s: u16| json!({"httpConnectionFailed": {"httpStatusCode": s}});
    match status {
        400 if code == "context_length_exceeded" && context_length => Failure {
            before: Before::FullContext,
            ..fail(
                "Codex ran out of room in the model's context window. Start a new thread or \
                 clear earlier history before retrying."
                    .into(),
                json!("contextWindowExceeded"),
            )
        },
        400 if code == "cyber_policy" => fail(
            message.filter(|m| !m.is_empty()).map_or_else(
                || "This request has been flagged for possible cybersecurity risk.".into(),
                str::to_string,
            ),
            json!("cyberPolicy"),
        ),
        400 | 403 | 404 if code == "model_not_found" => fail(
            message.unwrap_or("model_not_found").to_string(),
            json!("modelNotFound"),
        ),
        400 => fail(body.to_string(), json!("other")),
        429 if kind == "usage_limit_reached" => Failure {
            before: Before::RateLimits,
            ..fail(
                usage_limit(&json, headers, now),
                json!("usageLimitExceeded"),
            )
        },
        429 if kind == "usage_not_included" => fail(
            "To use Codex with your ChatGPT plan, upgrade to Plus: \
             https://chatgpt.com/explore/plus."
                .into(),
            json!("usageLimitExceeded"),
        ),
        429 if kind == "insufficient_quota" || code == "insufficient_quota" => fail(
            "Quota exceeded. Check your plan and billing details.".into(),
            json!("usageLimitExceeded"),
        ),
        429 => {
            let mut m = format!("exceeded retry limit, last status: {}", status_line(429));
            if let Some(id) = request_id {
                m.push_str(&format!(", request id: {id}"));
            }
            Failure {
                // Retried as a turn only when the provider says when.
                retried: retry_after.is_some(),
                notice_status: json!(429),
                ..fail(
                    m,
                    json!({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}),
                )
            }
        }
        403 if body.contains("Cloudflare") && body.contains("blocked") => {
            let mut m = format!(
                "Access blocked by Cloudflare. This usually happens when connecting from a \
                 restricted region (status {}), url: {}/responses",
                status_line(403),
                base_url.trim_end_matches('/')
            );
            if let Some(ray) = header(headers, "cf-ray") {
                m.push_str(&format!(", cf-ray: {ray}"));
            }
            Failure {
                retried: true,
                notice_status: json!(403),
                ..fail(m, http(403))
            }
        }
        500 => Failure {
            resent: true,
            retried: true,
            ..fail(
                "We’re currently experiencing high demand, which may cause temporary errors."
                    .into(),
                json!("internalServerError"),
            )
        },
        503 if code == "server_is_overloaded" => Failure {
            resent: true,
            ..fail(
                "Selected model is at capacity. Please try a different model.".into(),
                json!("serverOverloaded"),
            )
        },
        503 if code == "slow_down" => Failure {
            resent: true,
            retried: true,
            ..fail(
                format!("rate limit exceeded: {}", message.unwrap_or_default()),
                json!("rateLimitExceeded"),
            )
        },
        s if s >= 500 => Failure {
            resent: true,
            retried: true,
            notice_status: json!(s),
            ..fail(unexpected, http(s))
        },
        s => Failure {
            retried: true,
            notice_status: json!(s),
            ..fail(unexpected, http(s))
        },
    }
}

/// codex's backoff before retry `n` (1-based): 200 ms doubled each time (codex adds ±10 %
/// jitter), unless the provider said when.
pub fn backoff(n: u64, retry_after: Option<u64>) -> Duration {
    match retry_after {
        Some(s) => Duration::from_secs(s),
        None => Duration::from_millis(200u64.saturating_mul(1 << n.clamp(1, 20).saturating_sub(1))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:9/v1";

    #[test]
    fn statuses_read_as_codex_reads_them() {
        let f = classify(503, "", &json!({}), URL, 0, true);
        assert_eq!(
            f.message,
            "unexpected status 503 Service Unavailable: Unknown error, url: http://127.0.0.1:9/v1/responses"
        );
        assert!(f.resent && f.retried);
        let f = classify(
            404,
            r#"{"error":{"message":"nope"}}"#,
            &json!({"x-request-id": "req_123", "cf-ray": "ray_9"}),
            URL,
            0,
            true,
        );
        assert_eq!(
            f.message,
            "unexpected status 404 Not Found: nope, url: http://127.0.0.1:9/v1/responses, cf-ray: ray_9, request id: req_123"
        );
        assert!(!f.resent && f.retried);
        let f = classify(429, "slow", &json!({}), URL, 0, true);
        assert_eq!(
            f.message,
            "exceeded retry limit, last status: 429 Too Many Requests"
        );
        assert!(!f.retried);
        assert!(classify(429, "", &json!({"Retry-After": "2"}), URL, 0, true).retried);
        // A version that does not read the code takes a context-length 400 as any 400.
        let body = r#"{"error":{"code":"context_length_exceeded"}}"#;
        assert_eq!(
            classify(400, body, &json!({}), URL, 0, true).info,
            "contextWindowExceeded"
        );
        let plain = classify(400, body, &json!({}), URL, 0, false);
        assert_eq!((plain.message.as_str(), plain.info), (body, json!("other")));
        assert_eq!(
            classify(400, "raw body", &json!({}), URL, 0, true).message,
            "raw body"
        );
        assert_eq!(
            classify(499, "", &json!({}), URL, 0, true).message,
            "unexpected status 499 <unknown status code>: Unknown error, url: http://127.0.0.1:9/v1/responses"
        );
    }

    #[test]
    fn usage_limits_name_the_plan_and_the_reset() {
        let body = r#"{"error":{"type":"usage_limit_reached","plan_type":"plus"}}"#;
        let f = classify(429, body, &json!({}), URL, 0, true);
        assert_eq!(f.info, json!("usageLimitExceeded"));
        assert!(f
            .message
            .ends_with("purchase more credits or try again later."));
        let body = r#"{"error":{"type":"usage_limit_reached","resets_at":4102444800}}"#;
        assert_eq!(
            classify(429, body, &json!({}), URL, 0, true).message,
            "You’ve hit your usage limit. Try again at Jan 1st, 2100 12:00 AM."
        );
    }

    #[test]
    fn backoff_doubles_from_200_ms() {
        assert_eq!(backoff(1, None), Duration::from_millis(200));
        assert_eq!(backoff(3, None), Duration::from_millis(800));
        assert_eq!(backoff(2, Some(3)), Duration::from_secs(3));
    }
}
