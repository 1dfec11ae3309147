//! Where the real server's rollout of a thread stands, counted entry by entry.

use serde_json::{json, Value};

/// Where the real server's rollout of a thread stands: the ordinal of its last entry, of the
/// last turn's start and of the last completed item — what `thread/resume`'s backwards cursors
/// name. Counted as codex 0.171.0 writes entries (see the recordings): a turn's start (plus
/// codex's initial context on the first turn), per completed message or reasoning its event and
/// response item, per tool call its call, output and event, per response its usage record and
/// token count (a failed or dropped one only the count), the turn's end.
#[derive(Clone, Copy, Default)]
pub(super) struct Rollout {
    pub ordinal: u64,
    pub turn: u64,
    pub item: u64,
    /// The response being played carried a tool call (its usage record is already counted).
    tool: bool,
    /// Entries written once the response being played is accounted for (see [`Self::defer`]).
    deferred: u64,
}

impl Rollout {
    pub(super) fn load(v: &Value) -> Rollout {
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Rollout {
            ordinal: n("ordinal"),
            turn: n("turn"),
            item: n("item"),
            tool: false,
            deferred: 0,
        }
    }
    pub(super) fn to_json(mut self) -> Value {
        self.ordinal += std::mem::take(&mut self.deferred);
        json!({"ordinal": self.ordinal, "turn": self.turn, "item": self.item})
    }
    /// `n` entries codex writes after the response being played (its call's output and token
    /// count): an approved command prefix's developer message and world state come then
    /// (turn scenario 216: the command's item keeps its place before them).
    pub(super) fn defer(&mut self, n: u64) {
        self.deferred += n;
    }
    pub(super) fn add(&mut self, n: u64) -> u64 {
        self.ordinal += n;
        self.ordinal
    }
    /// A turn starts: its start entry, then the turn context (on a thread's first turn after
    /// codex's developer and context messages, world state, and before its settings entry).
    pub(super) fn turn_started(&mut self, first: bool) {
        self.turn = self.add(1);
        self.add(if first { 5 } else { 1 });
    }
    pub(super) fn completed(&mut self, item_type: &str) {
        match item_type {
            "userMessage" => {
                self.item = self.add(2);
            }
            // A plan is part of the answer's response item.
            "plan" => {
                self.item = self.add(1);
            }
            // A web search is an item of the answer, not a call (not checked against a resume).
            "agentMessage" | "reasoning" | "contextCompaction" | "webSearch" => {
                self.item = self.add(1);
                self.add(1);
            }
            _ => {
                // call, the response's usage record, the item, the call's output
                self.item = self.add(3);
                self.add(1);
                self.tool = true;
            }
        }
    }
    /// A tool call whose item the thread does not keep: its call, the response's usage record
    /// and its output, no item.
    pub(super) fn unkept(&mut self) {
        self.add(3);
        self.tool = true;
    }
    pub(super) fn response_ended(&mut self) {
        self.add(if self.tool { 1 } else { 2 });
        self.tool = false;
        let deferred = std::mem::take(&mut self.deferred);
        self.add(deferred);
    }
    /// An interrupt while a response streams: codex writes the abandoned stream's token count
    /// (a response that called a tool was read to its end already; fidelity s15150001_0029).
    pub(super) fn stream_aborted(&mut self) {
        if !self.tool {
            self.add(1);
        }
    }
    pub(super) fn response_dropped(&mut self) {
        self.add(1);
        self.tool = false;
    }
}
