//! `thread/search`'s match in a thread's history, as codex finds it: the first text of the
//! history (in rollout order: the turn's environment context, its user message, the model's
//! messages; not the developer instructions) that holds the term, any case, and a snippet of
//! it: the characters from 49 before the match to 96 after it, whitespace runs as one space,
//! `... ` before a window that does not start the text and ` ...` after one that does not end
//! it. 0.171.0 cuts the window from the text as written, then joins its whitespace; earlier
//! versions join the text's whitespace first (`search_window_on_joined_text`). Probed on
//! 0.171.0, 0.169.0 and 0.163.0: turn scenario 235, the probe of 2026-12-06 (a user message, a
//! model's message, the developer instructions never matched); fidelity s40400001_0250,
//! s41410001_0001.
//!
//! The fake writes the environment context's head only (cwd, shell, date, time zone: what a
//! match in the cwd shows); a match it cannot place exactly is left unmodeled. A thread whose
//! turns all ran without an environment has a context of the date and time zone alone, and
//! there the fake searches the whole history (turn scenario 279).

use crate::fake::turn_facts::TurnFacts;
use serde_json::Value;

/// Characters a snippet shows before the match.
const BEFORE: usize = 49;
/// Characters a snippet shows after the match.
const AFTER: usize = 96;

/// A thread's match: `Some(Some(snippet))` for the term's first place in the thread's
/// history, `Some(None)` for a history that does not hold it, `None` where the fake cannot
/// tell exactly (not modeled).
/// `shell`: the path of the user's shell (codex names its kind).
pub fn snippet(info: &Value, term: &str, facts: &TurnFacts, shell: &str) -> Option<Option<String>> {
    if placeless(info) {
        return placeless_snippet(info, term, facts);
    }
    let mut head = environment_head(info, shell)?;
    if facts.search_window_on_joined_text {
        head = collapse(&head);
    }
    let (body, start, end) = window(&head, term)?;
    // The environment context goes on past the head the fake writes.
    (end <= head.chars().count()).then(|| Some(format_snippet(&body, start > 0, true)))
}

/// A thread info key: set once a turn recorded an environment context that names a place (a
/// cwd, a filesystem), i.e. a turn that ran with an environment.
pub const PLACED_CONTEXT: &str = "placedContext";

/// Whether every turn of the thread ran without an environment (`environments: []`): its
/// environment context is then the date and the time zone only, and the fake writes the
/// whole history search reads.
fn placeless(info: &Value) -> bool {
    info["environments"] == serde_json::json!([]) && info[PLACED_CONTEXT] != true
}

/// The match in a thread whose turns ran without an environment: the environment context is
/// `<current_date>` and `<timezone>` only, then each turn's user messages and the model's
/// messages in order; reasoning is never searched (turn scenario 279 on 0.171.0, 0.169.0 and
/// 0.163.0; fidelity s54540001_0543: `codex-wire`, in no text, finds nothing). An item of
/// another kind that holds the term, a compaction or a review (texts of codex's own): not
/// modeled.
fn placeless_snippet(info: &Value, term: &str, facts: &TurnFacts) -> Option<Option<String>> {
    let started = info["turns"].as_array()?.first()?["startedAt"].as_i64()?;
    let zone = utc_zone()?;
    let (y, m, d, ..) = crate::fake::state::civil(started);
    let mut texts = vec![format!(
        "<environment_context>\n  <current_date>{y:04}-{m:02}-{d:02}</current_date>\n  \
         <timezone>{zone}</timezone>\n</environment_context>"
    )];
    let needle = term.to_lowercase();
    let holds = |v: &Value| v.to_string().to_lowercase().contains(&needle);
    if !info["goal"].is_null() && holds(&info["goal"]) {
        return None;
    }
    for turn in info["turns"].as_array()? {
        for item in turn["items"].as_array()? {
            match item["type"].as_str()? {
                "userMessage" => {
                    let content = item["content"].as_array()?;
                    match content.as_slice() {
                        [one] if one["type"] == "text" => texts.push(one["text"].as_str()?.into()),
                        _ if holds(item) => return None,
                        _ => {}
                    }
                }
                "agentMessage" => texts.push(item["text"].as_str()?.into()),
                "reasoning" => {}
                "contextCompaction" | "enteredReviewMode" | "exitedReviewMode" => return None,
                _ if holds(item) => return None,
                _ => {}
            }
        }
    }
    for text in texts {
        let text = if facts.search_window_on_joined_text {
            collapse(&text)
        } else {
            text
        };
        if let Some((body, start, end)) = window(&text, term) {
            return Some(Some(format_snippet(
                &body,
                start > 0,
                end < text.chars().count(),
            )));
        }
        // A text whose case folding moves its characters cannot be searched exactly.
        if text.to_lowercase().len() != text.len() {
            return None;
        }
    }
    Some(None)
}

/// The snippet's window over `text` around the first match of `term`: its collapsed text and
/// its bounds (characters). `None`: no match, or one case folding cannot place.
fn window(text: &str, term: &str) -> Option<(String, usize, usize)> {
    let (hay, needle) = (text.to_lowercase(), term.to_lowercase());
    if hay.len() != text.len() || needle.is_empty() {
        return None;
    }
    let at = hay.find(&needle)?;
    let chars: Vec<char> = text.chars().collect();
    let at = text[..at].chars().count();
    let end_of_match = at + needle.chars().count();
    let start = at.saturating_sub(BEFORE);
    let end = (end_of_match + AFTER).min(chars.len());
    let body: String = chars[start..end].iter().collect();
    Some((collapse(&body), start, end))
}

/// Whitespace runs as one space, the ends trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn format_snippet(body: &str, cut_before: bool, cut_after: bool) -> String {
    let mut s = String::new();
    if cut_before {
        s.push_str("... ");
    }
    s.push_str(body);
    if cut_after {
        s.push_str(" ...");
    }
    s
}

/// The head of the environment context a thread's first turn recorded: its cwd, the shell,
/// the date and the time zone, up to the filesystem's opening tag. `None`: a thread with no
/// turn, or a shell or time zone the fake cannot name as codex does.
fn environment_head(info: &Value, shell: &str) -> Option<String> {
    let started = info["turns"].as_array()?.first()?["startedAt"].as_i64()?;
    let cwd = info
        .get(crate::fake::settings::INDEX_CWD)
        .unwrap_or(&info["cwd"])
        .as_str()?;
    let zone = utc_zone()?;
    let (y, m, d, ..) = crate::fake::state::civil(started);
    let shell = shell.rsplit('/').next()?;
    Some(format!(
        "<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>{shell}</shell>\n  \
         <current_date>{y:04}-{m:02}-{d:02}</current_date>\n  <timezone>{zone}</timezone>\n  \
         <filesystem>"
    ))
}

/// The machine's time zone when it is UTC: the date is written as the machine's zone reads
/// it, and only UTC is modeled.
fn utc_zone() -> Option<String> {
    time_zone().filter(|z| z == "Etc/UTC" || z == "UTC")
}

/// The machine's IANA time zone, as codex reads it (`iana_time_zone`): the zone
/// `/etc/localtime` links to, else `/etc/timezone`. A `TZ` that is not UTC moves the date codex
/// writes: not modeled.
fn time_zone() -> Option<String> {
    if std::env::var("TZ")
        .is_ok_and(|tz| !matches!(tz.trim_start_matches(':'), "" | "UTC" | "Etc/UTC"))
    {
        return None;
    }
    if let Ok(link) = std::fs::read_link("/etc/localtime") {
        let link = link.to_string_lossy();
        if let Some((_, zone)) = link.split_once("zoneinfo/") {
            return Some(zone.to_string());
        }
    }
    let zone = std::fs::read_to_string("/etc/timezone").ok()?;
    Some(zone.trim().to_string()).filter(|z| !z.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_49_characters_before_and_96_after_the_match() {
        let text = "All parser tests passed after the fix to tokenizer edge cases.";
        let (body, start, end) = window(text, "EDGE CASES").unwrap();
        assert_eq!(start, 2);
        assert_eq!(end, text.len());
        assert_eq!(
            format_snippet(&body, start > 0, end < text.len()),
            "... l parser tests passed after the fix to tokenizer edge cases."
        );
        assert_eq!(window(text, "absent"), None);
        // Whitespace runs are one space; a window past the text's end stops there.
        let (body, ..) = window("a\n  b  c", "b").unwrap();
        assert_eq!(body, "a b c");
    }
}
