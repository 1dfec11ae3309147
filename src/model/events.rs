//! A model's Responses API stream, read as codex reads it (codex-api `sse/responses.rs`,
//! `process_responses_event`): the event's `type` from its JSON (the SSE `event:` name is not
//! read), the few fields codex takes, everything else ignored — `sequence_number`,
//! `response.in_progress`, `content_part.*`, `output_text.done`, the `*.done` of reasoning and
//! tool arguments, argument deltas, `web_search_call.*` progress events. An event that does not
//! read (a field codex needs missing) is skipped, as codex skips it. The fake's turn engine
//! consumes streams through this reading; `record` compares a recorded stream with its steps'
//! through it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event, as codex maps it to its `ResponseEvent`.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "response.created")]
    Created {},
    #[serde(rename = "response.output_item.added")]
    Added { item: Item },
    #[serde(rename = "response.output_item.done")]
    Done { item: Item },
    /// Text of the item streaming now (codex does not read `item_id`: a delta belongs to the
    /// active item).
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPart { summary_index: i64 },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryDelta { delta: String, summary_index: i64 },
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningDelta { delta: String, content_index: i64 },
    /// The end of the response: codex reads nothing after it.
    #[serde(rename = "response.completed")]
    Completed { response: Completed },
    /// Kept until the stream ends, then the turn's error (a later `response.completed` wins).
    #[serde(rename = "response.failed")]
    Failed { response: Failed },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Incomplete },
    #[serde(other)]
    Ignored,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct Completed {
    #[serde(default)]
    pub usage: Option<Usage>,
    /// `false`: the model is not done, codex asks again (`needs_follow_up`).
    #[serde(default)]
    pub end_turn: Option<bool>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct Usage {
    pub input_tokens: i64,
    #[serde(default)]
    pub input_tokens_details: Option<InputDetails>,
    pub output_tokens: i64,
    #[serde(default)]
    pub output_tokens_details: Option<OutputDetails>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct InputDetails {
    pub cached_tokens: i64,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct OutputDetails {
    pub reasoning_tokens: i64,
}

impl Usage {
    pub fn cached(&self) -> i64 {
        self.input_tokens_details.map_or(0, |d| d.cached_tokens)
    }
    pub fn reasoning(&self) -> i64 {
        self.output_tokens_details.map_or(0, |d| d.reasoning_tokens)
    }
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct Failed {
    #[serde(default)]
    pub error: Option<ErrorBody>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct ErrorBody {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct Incomplete {
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct IncompleteDetails {
    #[serde(default)]
    pub reason: Option<String>,
}

/// An output item (codex's `ResponseItem`, the kinds the app-server shows or runs).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    Message {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        content: Vec<Content>,
        #[serde(default)]
        phase: Option<String>,
    },
    Reasoning {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        summary: Vec<Text>,
        #[serde(default)]
        content: Option<Vec<Text>>,
    },
    FunctionCall {
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
        #[serde(default)]
        namespace: Option<String>,
    },
    CustomToolCall {
        call_id: String,
        name: String,
        #[serde(default)]
        input: String,
    },
    WebSearchCall {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        action: Option<WebSearchAction>,
    },
    #[serde(other)]
    Other,
}

/// What a web search did (codex's `WebSearchAction`; an action it does not know is `Other`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WebSearchAction {
    Search {
        #[serde(default)]
        query: Option<String>,
        #[serde(default)]
        queries: Option<Vec<String>>,
    },
    OpenPage {
        #[serde(default)]
        url: Option<String>,
    },
    FindInPage {
        #[serde(default)]
        url: Option<String>,
        #[serde(default)]
        pattern: Option<String>,
    },
    #[serde(other)]
    Other,
}

impl WebSearchAction {
    /// The item's `query`: what the search was about (codex `web_search_action_detail`).
    pub fn detail(&self) -> String {
        match self {
            WebSearchAction::Search { query, queries } => {
                query.clone().filter(|q| !q.is_empty()).unwrap_or_else(|| {
                    let qs = queries.as_deref().unwrap_or_default();
                    let first = qs.first().cloned().unwrap_or_default();
                    if qs.len() > 1 && !first.is_empty() {
                        format!("{first} ...")
                    } else {
                        first
                    }
                })
            }
            WebSearchAction::OpenPage { url } => url.clone().unwrap_or_default(),
            WebSearchAction::FindInPage { url, pattern } => match (pattern, url) {
                (Some(p), Some(u)) => format!("'{p}' in {u}"),
                (Some(p), None) => format!("'{p}'"),
                (None, Some(u)) => u.clone(),
                (None, None) => String::new(),
            },
            WebSearchAction::Other => String::new(),
        }
    }

    /// The action as the app-server shows it.
    pub fn shown(&self) -> Value {
        match self {
            WebSearchAction::Search { query, queries } => {
                serde_json::json!({"type": "search", "query": query, "queries": queries})
            }
            WebSearchAction::OpenPage { url } => {
                serde_json::json!({"type": "openPage", "url": url})
            }
            WebSearchAction::FindInPage { url, pattern } => {
                serde_json::json!({"type": "findInPage", "url": url, "pattern": pattern})
            }
            WebSearchAction::Other => serde_json::json!({"type": "other"}),
        }
    }
}

/// A content part of a message (`output_text` parts make its text).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct Content {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct Text {
    #[serde(default)]
    pub text: String,
}

impl Event {
    /// Reads one event; one that does not read is ignored (codex logs and skips it).
    pub fn read(v: &Value) -> Event {
        Event::deserialize(v).unwrap_or(Event::Ignored)
    }
}

impl Item {
    /// A call the model waits on (codex `ToolRouter::build_tool_call`).
    pub fn is_tool_call(&self) -> bool {
        matches!(
            self,
            Item::FunctionCall { .. } | Item::CustomToolCall { .. }
        )
    }

    /// A message's text: its `output_text` parts joined (what `item/completed` carries,
    /// whatever the deltas said).
    pub fn message_text(content: &[Content]) -> String {
        content
            .iter()
            .filter(|c| c.kind == "output_text")
            .filter_map(|c| c.text.as_deref())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_read_as_codex_reads_them() {
        // Fields codex does not read are ignored; an event it does not know is ignored.
        assert_eq!(
            Event::read(
                &json!({"type": "response.output_text.delta", "sequence_number": 4,
                                "item_id": "m", "output_index": 0, "content_index": 0,
                                "delta": "Hi"})
            ),
            Event::TextDelta { delta: "Hi".into() }
        );
        for ignored in [
            json!({"type": "response.in_progress", "response": {}}),
            json!({"type": "response.content_part.added", "part": {}}),
            json!({"type": "response.output_text.done", "text": "Hi"}),
            // A field codex needs is missing: skipped.
            json!({"type": "response.reasoning_summary_text.delta", "delta": "x"}),
            json!("not an object"),
        ] {
            assert_eq!(Event::read(&ignored), Event::Ignored, "{ignored}");
        }
        let Event::Done { item } = Event::read(&json!({"type": "response.output_item.done",
            "item": {"type": "message", "id": "m", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "a", "annotations": []},
                                 {"type": "refusal", "refusal": "no"},
                                 {"type": "output_text", "text": "b"}]}}))
        else {
            panic!()
        };
        let Item::Message { content, .. } = item else {
            panic!()
        };
        assert_eq!(Item::message_text(&content), "ab");
        let Event::Completed { response } = Event::read(&json!({"type": "response.completed",
            "response": {"id": "r", "usage": {"input_tokens": 3, "output_tokens": 2,
                         "total_tokens": 5, "input_tokens_details": {"cached_tokens": 1}}}}))
        else {
            panic!()
        };
        let u = response.usage.unwrap();
        assert_eq!((u.input_tokens, u.cached(), u.reasoning()), (3, 1, 0));
        assert_eq!(
            Event::read(&json!({"type": "response.output_item.added",
                                "item": {"type": "image_generation_call", "id": "ig"}})),
            Event::Added { item: Item::Other }
        );
        let a: WebSearchAction =
            serde_json::from_value(json!({"type": "search", "queries": ["a", "b"]})).unwrap();
        assert_eq!(a.detail(), "a ...");
        let a: WebSearchAction =
            serde_json::from_value(json!({"type": "find_in_page", "url": "u", "pattern": "p"}))
                .unwrap();
        assert_eq!(a.detail(), "'p' in u");
    }
}
