//! The engine: one client line in, the real server's verdict out. Pure: no I/O, no clocks.
//!
//! Order of checks, as the real server applies them: framing (UTF-8, JSON, the untagged
//! `JSONRPCMessage` variants in order) → deserialize into `ClientRequest` → `Already
//! initialized` / `Not initialized` → experimental gating.

use crate::fast::{Invalid, Scan, Unknown};
use crate::track::JsonPath;
use crate::{Envelope, Protocol};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The path segments of `params` and `result` as the tracker writes them
/// (`codex_wire_protocol::segment`), rendered once: the fast path pushes one of them on every line.
const PARAMS_SEG: &str = ".params";
const RESULT_SEG: &str = ".result";

/// How many unanswered client requests a session remembers for matching the server's results.
const MAX_AWAITING: usize = 65_536;

/// JSON-RPC error code the real server uses for every protocol error.
pub const INVALID_REQUEST: i64 = -32600;
/// How the server words a request serde rejects: this, then serde's message.
const INVALID_REQUEST_PREFIX: &str = "Invalid request: ";

/// How the line was classified, like the real transport does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    Error,
    Unparsed,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::Error => "error",
            Kind::Unparsed => "unparsed",
        }
    }
}

/// What the real server does with the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed every protocol check: the handler runs (and answers with a result or its own error).
    Accepted,
    /// The server answers with this protocol error (boxed: a verdict is moved on every line,
    /// and most lines carry none).
    Reply(Box<ErrorReply>),
    /// The server says nothing.
    NoReply,
    /// The server closes the connection.
    Close,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorReply {
    pub code: i64,
    pub message: String,
    /// The request id, as the server echoes it (a JSON string or integer).
    pub id: Value,
}

impl ErrorReply {
    /// The exact line the real server writes (without the trailing newline).
    pub fn line(&self) -> String {
        format!(
            "{{\"error\":{{\"code\":{},\"message\":{}}},\"id\":{}}}",
            self.code,
            serde_json::to_string(&self.message).unwrap_or_default(),
            self.id
        )
    }

    /// The reply as a JSON object, `{"code":…,"message":…}` only.
    pub fn error_object(&self) -> Value {
        serde_json::json!({"code": self.code, "message": self.message})
    }
}

/// A message's id as a verdict carries it: an integer the line wrote canonically (no
/// allocation: with `arbitrary_precision` a JSON number is a string, and this is every line),
/// or the JSON value as read.
#[derive(Clone, Debug, PartialEq)]
pub enum Id {
    Int(i64),
    Json(Value),
}

/// The id as an `i64` when the line wrote it as one canonically (so `-0`, `1.0` or `1e2` are
/// not): how the transport's envelope reads an integer id.
fn canonical_int(id: &Value) -> Option<i64> {
    let Value::Number(n) = id else { return None };
    let i = n.as_str().parse::<i64>().ok()?;
    (itoa::Buffer::new().format(i) == n.as_str()).then_some(i)
}

impl Id {
    pub fn from_value(v: Value) -> Id {
        match canonical_int(&v) {
            Some(i) => Id::Int(i),
            None => Id::Json(v),
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Id::Int(n) => Value::Number((*n).into()),
            Id::Json(v) => v.clone(),
        }
    }
}

/// The id's JSON text, as `Value` writes it.
impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Int(n) => write!(f, "{n}"),
            Id::Json(v) => write!(f, "{v}"),
        }
    }
}

/// The engine's verdict on one line.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub kind: Kind,
    pub id: Option<Id>,
    /// The method, borrowed from the protocol's table when it is one of its own (no
    /// allocation per line).
    pub method: Option<Cow<'static, str>>,
    pub outcome: Outcome,
    /// Paths of keys the real server drops (`$.params.input[0].extra`).
    pub ignored: Vec<String>,
    /// For a client response: the server request method it answers, when known.
    pub reply_to: Option<String>,
    /// A client response that does not deserialize into its type: the server logs it and
    /// treats it as a failure, and the client never hears of it.
    pub violation: Option<String>,
    /// Server direction only: paths of keys the real server always writes (TS `x: T | null`)
    /// that the message lacks. Serde accepts their absence, so a fake that drifted from the
    /// real server shows only here. Always empty for client lines (a client may omit them).
    pub missing: Vec<String>,
}

impl Verdict {
    fn new(kind: Kind, outcome: Outcome) -> Self {
        Verdict {
            kind,
            id: None,
            method: None,
            outcome,
            ignored: Vec::new(),
            reply_to: None,
            violation: None,
            missing: Vec::new(),
        }
    }

    pub fn error(&self) -> Option<&ErrorReply> {
        match &self.outcome {
            Outcome::Reply(e) => Some(e),
            _ => None,
        }
    }

    /// Anything a client author should hear about: an error reply, a violation, ignored keys.
    pub fn is_clean(&self) -> bool {
        self.error().is_none() && self.violation.is_none() && self.ignored.is_empty()
    }
}

/// Request id → method. Ids are short and the maps are only ours: a multiply-rotate hash
/// instead of SipHash, which showed in profiles.
type IdMap<V> = HashMap<IdKey, V, BuildHasherDefault<IdHasher>>;

/// A request id as a map key: integer ids (the common case) without an allocation.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum IdKey {
    Int(i64),
    /// Any other id, as its JSON text.
    Text(Box<str>),
}

impl IdKey {
    fn of(id: &Value) -> IdKey {
        match canonical_int(id) {
            Some(n) => IdKey::Int(n),
            None => IdKey::Text(id.to_string().into()),
        }
    }
}

/// A request id as the fast path reads it: a canonical i64, or a string without escapes.
#[derive(Clone, Copy)]
enum FastId<'a> {
    Int(i64),
    Str(&'a str),
}

impl FastId<'_> {
    /// The key [`IdKey::of`] gives the same id (a string keeps its quotes: its JSON text).
    fn key(self) -> IdKey {
        match self {
            FastId::Int(n) => IdKey::Int(n),
            FastId::Str(t) => IdKey::Text(format!("\"{t}\"").into()),
        }
    }
}

#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    // An integer id and the variant's tag in one step each (the defaults go through `write`).
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The state the real server keeps per connection.
#[derive(Debug)]
pub struct Session {
    initialized: bool,
    experimental: bool,
    /// Server→client requests awaiting the client's response: id (as JSON text) → method.
    pending: IdMap<String>,
    /// Accepted client requests awaiting the server's result: id (as JSON text) → method.
    awaiting: IdMap<Cow<'static, str>>,
    /// Only the exact path (the fast path's differential tests compare against it).
    exact_only: bool,
    /// Whether the server's side is seen too (else accepted requests are not remembered).
    await_results: bool,
    /// Lines the fast path answered.
    fast_hits: u64,
    /// The codex version this session speaks.
    protocol: &'static Protocol,
    /// The fast path's walk, reused line after line (no allocation per line).
    path: JsonPath,
}

impl Default for Session {
    fn default() -> Self {
        Self::with_protocol(crate::newest())
    }
}

impl Session {
    /// A session of the newest supported codex version.
    pub fn new() -> Self {
        Self::default()
    }

    /// A session of one codex version's protocol.
    pub fn with_protocol(protocol: &'static Protocol) -> Self {
        Session {
            initialized: false,
            experimental: false,
            pending: IdMap::default(),
            awaiting: IdMap::default(),
            exact_only: false,
            await_results: true,
            fast_hits: 0,
            protocol,
            path: JsonPath::root(),
        }
    }

    /// The protocol this session speaks.
    pub fn protocol(&self) -> &'static Protocol {
        self.protocol
    }

    /// A session that speaks codex `version` (`None`: not one this build knows).
    pub fn for_version(version: &str) -> Option<Self> {
        crate::by_version(version).map(Self::with_protocol)
    }

    /// A session that sees only the client's lines (a raw capture): the results that would
    /// be checked against accepted requests never come, so none is remembered.
    pub fn client_only(mut self) -> Self {
        self.await_results = false;
        self
    }

    /// A session that never takes the fast path: every line goes through the `Value` parse,
    /// serde and the tracker, as the real server does.
    pub fn exact() -> Self {
        Session {
            exact_only: true,
            ..Self::default()
        }
    }

    /// [`Session::exact`] of one version.
    pub fn exact_with(protocol: &'static Protocol) -> Self {
        Session {
            exact_only: true,
            ..Self::with_protocol(protocol)
        }
    }

    /// How many lines the fast path answered (the rest took the exact path).
    pub fn fast_hits(&self) -> u64 {
        self.fast_hits
    }

    pub fn initialized(&self) -> bool {
        self.initialized
    }

    pub fn experimental_api(&self) -> bool {
        self.experimental
    }

    /// Records that the server sent request `id` of `method`: the client's response to it is
    /// then checked against that method's response type.
    /// The method of an accepted client request still awaiting the server's result.
    pub fn awaiting_method(&self, id: &Value) -> Option<&str> {
        self.awaiting.get(&IdKey::of(id)).map(|m| m.as_ref())
    }

    pub fn expect_response(&mut self, id: &Value, method: &str) {
        self.pending.insert(IdKey::of(id), method.to_string());
    }

    /// One line from the client, without its newline.
    pub fn feed(&mut self, line: &[u8]) -> Verdict {
        // The scan validates UTF-8 as it goes: a line it answers is valid text. (It needs no
        // `\r` stripping: a trailing `\r` is JSON whitespace, as the exact path sees it too.)
        if !self.exact_only {
            // Written in place: a verdict is a few hundred bytes, and this is every line.
            let mut v = Verdict::new(Kind::Unparsed, Outcome::NoReply);
            if self.fast_feed(line, &mut v).is_some() {
                self.fast_hits += 1;
                return v;
            }
        }
        let Ok(text) = simdutf8::basic::from_utf8(line) else {
            return Verdict::new(Kind::Unparsed, Outcome::Close);
        };
        // The line reader drops the `\r` of a `\r\n` ending.
        let text = text.strip_suffix('\r').unwrap_or(text);
        let Ok(Entries(entries)) = serde_json::from_str::<Entries>(text) else {
            return Verdict::new(Kind::Unparsed, Outcome::NoReply);
        };
        let mut obj = Map::new();
        let mut duplicate_envelope_key = false;
        for (k, v) in entries {
            let envelope_key = matches!(
                k.as_str(),
                "id" | "method" | "params" | "trace" | "result" | "error"
            );
            // Later duplicates win, as in serde_json's own maps (the server's params too).
            if obj.insert(k, v).is_some() && envelope_key {
                duplicate_envelope_key = true;
            }
        }
        // The transport reads the envelope straight from the text, where a duplicated field
        // fails its struct and an id like `-0` is no i64: the exact (slower) path then.
        let odd_id = obj
            .get("id")
            .is_some_and(|id| id.is_number() && canonical_int(id).is_none());
        let exact = (duplicate_envelope_key || odd_id).then(|| (self.protocol.envelope_text)(text));
        let mut ignored = Vec::new();
        let root = &mut JsonPath::root();
        // The common case needs no trial: a string method, a string or canonical i64 id and no
        // `trace` make a `JSONRPCRequest` whatever else is there.
        let plain_request = exact.is_none()
            && matches!(obj.get("method"), Some(Value::String(_)))
            && matches!(obj.get("id"), Some(Value::String(_) | Value::Number(_)))
            && !obj.contains_key("trace");
        let kind = if plain_request {
            // `params` is a plain `Value` in the envelope: tracking it here reports only
            // unknown envelope keys (`$.jsonrpc`).
            let whole = Value::Object(std::mem::take(&mut obj));
            (self.protocol.track_envelope)(Envelope::Request, &whole, root, &mut ignored);
            if let Value::Object(o) = whole {
                obj = o;
            }
            Kind::Request
        } else {
            // The transport's untagged `JSONRPCMessage`, tried on the envelope only: the
            // payload (params, result, error data) is a plain `Value` there, so what it holds
            // never changes the classification (the transport parses it from the text, where
            // even integers beyond 64 bits are fine).
            let mut envelope = Map::new();
            for (k, v) in &obj {
                let shallow = match (k.as_str(), v) {
                    ("params" | "result", _) => Value::Null,
                    ("error", Value::Object(e)) => Value::Object(
                        e.iter()
                            .map(|(k, v)| {
                                (k.clone(), if k == "data" { Value::Null } else { v.clone() })
                            })
                            .collect(),
                    ),
                    _ => v.clone(),
                };
                envelope.insert(k.clone(), shallow);
            }
            let envelope = Value::Object(envelope);
            let parsed = match exact {
                Some(exact) => exact,
                None => (self.protocol.envelope)(&envelope),
            };
            let Some(shape) = parsed else {
                return Verdict::new(Kind::Unparsed, Outcome::NoReply);
            };
            // Envelope keys the transport does not know (`$.jsonrpc`, …), per the variant it took.
            (self.protocol.track_envelope)(shape, &envelope, root, &mut ignored);
            match shape {
                Envelope::Request => Kind::Request,
                Envelope::Notification => Kind::Notification,
                Envelope::Response => Kind::Response,
                Envelope::Error => Kind::Error,
            }
        };
        let id = obj.get("id").cloned().map(Id::from_value);
        let method = obj
            .get("method")
            .and_then(Value::as_str)
            .map(|m| static_method(self.protocol, m));
        let mut v = match kind {
            Kind::Request => self.request(&mut obj, &mut ignored),
            Kind::Notification => self.notification(&mut obj, &mut ignored),
            Kind::Response | Kind::Error => self.response(&obj, kind, &mut ignored),
            Kind::Unparsed => return Verdict::new(Kind::Unparsed, Outcome::NoReply),
        };
        if v.kind == Kind::Notification {
            v.id = None;
        } else {
            v.id = id;
        }
        if matches!(v.kind, Kind::Request | Kind::Notification) {
            v.method = method;
        }
        if v.error().is_none() {
            v.ignored = ignored;
        }
        v
    }

    /// Remembers an accepted request, so that the server's result can be checked against it.
    fn await_result(&mut self, id: IdKey, method: Cow<'static, str>) {
        if !self.await_results {
            return;
        }
        // Bounded: a client-only capture never sees the results that would drain it.
        if self.awaiting.len() >= MAX_AWAITING {
            self.awaiting.clear();
        }
        self.awaiting.insert(id, method);
    }

    /// A request's params checked at the cursor: `Some(Ok(method))` when the server takes
    /// them (the method's static name), `Some(Err((method, message)))` when it replies with
    /// serde's error (the scan then stands past the params, the whole value checked as JSON),
    /// `None` when the scan is not sure.
    fn fast_params(
        &mut self,
        m: &str,
        s: &mut Scan,
        out: &mut Vec<String>,
    ) -> Option<Result<&'static str, (&'static str, String)>> {
        let at = s.mark();
        let p = &mut self.path;
        p.reset();
        p.seg(PARAMS_SEG);
        let (name, checked) = (self.protocol.fast_params)(m, s, p, out);
        let name = name?;
        if checked.is_ok() {
            return Some(Ok(name));
        }
        let mut invalid = s.take_invalid()?;
        s.reset(at);
        if s.peek().ok()? == b'n' {
            // Null params are absent ones to the server (it drops them): a type that does not
            // take null (so no `Option`, whose absence is `None`) is then a missing field.
            s.null().ok()?;
            invalid = Invalid::Missing("params");
        } else {
            // The whole value must be JSON the server buffers, with no key given twice (a
            // later one would replace what the error was about).
            s.skip_unique().ok()?;
        }
        // Sized for the usual message: grown from the prefix, it was reallocated thrice.
        let mut message = String::with_capacity(128);
        message.push_str(INVALID_REQUEST_PREFIX);
        s.write_message(invalid, &mut message).ok()?;
        Some(Err((name, message)))
    }

    /// The common lines (a request of an initialized session, a response) checked in one scan
    /// of the text; `None` when the fast path is not sure, and the exact path decides. It
    /// changes the session only when it answers.
    fn fast_feed(&mut self, text: &[u8], v: &mut Verdict) -> Option<()> {
        let mut s = Scan::new(text);
        s.obj_begin().ok()?;
        let mut first = true;
        let (mut id, mut method, mut params, mut result) = (None, None, None, None);
        let mut envelope = Unknown::new();
        let mut walked = None;
        let mut out = Vec::new();
        while let Some(k) = s.next_key(&mut first).ok()? {
            match k {
                "id" if id.is_none() => {
                    // A string without escapes or a canonical i64 (JSON has no leading zeros
                    // or `+`: only `-0` reads back differently), as the transport takes it.
                    id = Some(if s.peek().ok()? == b'"' {
                        match s.raw_text().ok()? {
                            (t, false) => FastId::Str(t),
                            _ => return None,
                        }
                    } else {
                        let t = s.number().ok()?;
                        if t == "-0" {
                            return None;
                        }
                        FastId::Int(t.parse::<i64>().ok()?)
                    });
                }
                "method" if method.is_none() => match s.raw_text().ok()? {
                    (m, false) => method = Some(m),
                    _ => return None,
                },
                "params" if params.is_none() => {
                    s.peek().ok()?;
                    params = Some(s.mark());
                    // Usually the method came first: check the params now, in the same scan.
                    match method {
                        Some(m) => {
                            walked = Some(self.fast_params(m, &mut s, &mut out)?);
                        }
                        None => s.skip().ok()?,
                    }
                }
                "result" if result.is_none() => {
                    s.peek().ok()?;
                    result = Some(s.mark());
                    s.skip().ok()?;
                }
                "id" | "method" | "params" | "result" | "error" | "trace" => return None,
                _ => {
                    envelope.add(k).ok()?;
                    s.skip().ok()?;
                }
            }
        }
        s.end().ok()?;
        let id = id?;
        let id_value = match id {
            FastId::Str(t) => Id::Json(Value::String(t.to_string())),
            FastId::Int(n) => Id::Int(n),
        };
        let mut ignored = Vec::new();
        if !envelope.is_empty() {
            envelope.report(&JsonPath::root(), &mut ignored);
        }
        if let Some(m) = method {
            if result.is_some() || m == "initialize" {
                return None;
            }
            if walked.is_none() {
                // Absent params are null params to the server (it rebuilds `{id, method}`
                // without them): the type decides the same way on a literal `null`.
                let mut s = match params {
                    Some(at) => {
                        let mut s = Scan::new(text);
                        s.reset(at);
                        s
                    }
                    None => Scan::new(b"null"),
                };
                walked = Some(self.fast_params(m, &mut s, &mut out)?);
            }
            // serde's error comes before any session rule (initialized, gating).
            let m = match walked? {
                Ok(name) => name,
                Err((m, message)) => {
                    *v = Verdict::new(
                        Kind::Request,
                        Outcome::Reply(Box::new(ErrorReply {
                            code: INVALID_REQUEST,
                            message,
                            id: id_value.to_value(),
                        })),
                    );
                    v.id = Some(id_value);
                    v.method = Some(Cow::Borrowed(m));
                    return Some(());
                }
            };
            if !self.initialized {
                return None;
            }
            // The gate looks at top-level params keys; a line that names none of them (and
            // has no escaped keys: the scan bails on those) cannot be gated.
            if !self.experimental
                && ((self.protocol.is_experimental_method)(m)
                    || (self.protocol.experimental_checks)(m)
                        .iter()
                        .any(|c| memchr::memmem::find(text, c.0.as_bytes()).is_some()))
            {
                return None;
            }
            ignored.append(&mut out);
            self.await_result(id.key(), Cow::Borrowed(m));
            v.kind = Kind::Request;
            v.outcome = Outcome::Accepted;
            v.id = Some(id_value);
            v.method = Some(Cow::Borrowed(m));
            v.ignored = ignored;
            return Some(());
        }
        let result = result?;
        if params.is_some() {
            return None;
        }
        let mut reply_to = None;
        // A client-only capture never tells of server requests: no key to build.
        let key = (!self.pending.is_empty()).then(|| id.key());
        if let Some(m) = key.as_ref().and_then(|k| self.pending.get(k)) {
            let mut s = Scan::new(text);
            s.reset(result);
            let p = &mut self.path;
            p.reset();
            p.seg(RESULT_SEG);
            (self.protocol.fast_response)(m, &mut s, p, &mut ignored).ok()?;
            reply_to = key.and_then(|k| self.pending.remove(&k));
        }
        v.kind = Kind::Response;
        v.reply_to = reply_to;
        v.id = Some(id_value);
        v.ignored = ignored;
        Some(())
    }

    fn request(&mut self, obj: &mut Map<String, Value>, ignored: &mut Vec<String>) -> Verdict {
        let id = obj.get("id").cloned().unwrap_or(Value::Null);
        let reply = |message: String| {
            Verdict::new(
                Kind::Request,
                Outcome::Reply(Box::new(ErrorReply {
                    code: INVALID_REQUEST,
                    message,
                    id: id.clone(),
                })),
            )
        };
        // The server rebuilds {id, method, params} (params only when present and not null).
        let mut typed = Map::new();
        typed.insert("id".into(), id.clone());
        typed.insert("method".into(), obj.remove("method").unwrap_or(Value::Null));
        match obj.remove("params") {
            None | Some(Value::Null) => {}
            Some(p) => {
                typed.insert("params".into(), p);
            }
        }
        let typed = Value::Object(typed);
        let is_initialize = match (self.protocol.client_request)(&typed) {
            Ok(r) => r,
            Err(e) => return reply(format!("{INVALID_REQUEST_PREFIX}{e}")),
        };
        let method = typed["method"].as_str().unwrap_or_default();
        if is_initialize {
            if self.initialized {
                return reply("Already initialized".into());
            }
            let name = typed["params"]["clientInfo"]["name"]
                .as_str()
                .unwrap_or_default();
            if !is_header_value(name) {
                return reply(format!(
                    "Invalid clientInfo.name: '{name}'. Must be a valid HTTP header value."
                ));
            }
            self.initialized = true;
            self.experimental =
                typed["params"]["capabilities"]["experimentalApi"].as_bool() == Some(true);
        } else if !self.initialized {
            return reply("Not initialized".into());
        } else if !self.experimental {
            if let Some(reason) = experimental_reason(self.protocol, method, &typed["params"]) {
                return reply(format!("{reason} requires experimentalApi capability"));
            }
        }
        (self.protocol.track_client_request)(&typed, &mut JsonPath::root(), ignored);
        self.await_result(IdKey::of(&id), static_method(self.protocol, method));
        Verdict::new(Kind::Request, Outcome::Accepted)
    }

    fn notification(&mut self, obj: &mut Map<String, Value>, ignored: &mut Vec<String>) -> Verdict {
        // The server only logs a client notification (any method): its params are never
        // read, so whatever they carry is dropped.
        if let Some(params) = obj.remove("params") {
            let mut p = JsonPath::root();
            p.key("params");
            crate::track::dropped(&params, &mut p, ignored);
        }
        Verdict::new(Kind::Notification, Outcome::NoReply)
    }

    fn response(
        &mut self,
        obj: &Map<String, Value>,
        kind: Kind,
        ignored: &mut Vec<String>,
    ) -> Verdict {
        let mut v = Verdict::new(kind, Outcome::NoReply);
        let Some(id) = obj.get("id") else { return v };
        let Some(method) = self.pending.remove(&IdKey::of(id)) else {
            return v;
        };
        if kind == Kind::Response {
            match (self.protocol.check_response)(&method, obj.get("result").unwrap_or(&Value::Null))
            {
                Some(Ok(paths)) => ignored.extend(paths),
                Some(Err(e)) => v.violation = Some(e),
                None => {}
            }
        }
        v.reply_to = Some(method);
        v
    }
}

impl Session {
    /// One line the *server* wrote (server→client), checked against the schema: a message the
    /// schema does not allow is a `violation` (schema drift, or a fake that lies), keys the
    /// schema does not declare are `ignored`. A server request is remembered so that the
    /// client's response to it is checked by [`Session::feed`]; a result is checked against
    /// the response type of the client request it answers.
    pub fn feed_server(&mut self, line: &[u8]) -> Verdict {
        let text = match std::str::from_utf8(line) {
            Ok(t) => t.strip_suffix('\r').unwrap_or(t),
            Err(e) => {
                let mut v = Verdict::new(Kind::Unparsed, Outcome::NoReply);
                v.violation = Some(format!("not UTF-8: {e}"));
                return v;
            }
        };
        let msg: Value = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let mut v = Verdict::new(Kind::Unparsed, Outcome::NoReply);
                v.violation = Some(format!("not JSON: {e}"));
                return v;
            }
        };
        self.feed_server_value(&msg)
    }

    /// [`Session::feed_server`] for an already parsed message.
    pub fn feed_server_value(&mut self, msg: &Value) -> Verdict {
        let mut v = Verdict::new(Kind::Unparsed, Outcome::NoReply);
        let Some(obj) = msg.as_object() else {
            v.violation = Some("not a JSON object".into());
            return v;
        };
        let id = obj.get("id").cloned();
        let method = obj
            .get("method")
            .and_then(Value::as_str)
            .map(|m| static_method(self.protocol, m));
        let mut root = JsonPath::server();
        let check = |r: Result<Vec<String>, String>, v: &mut Verdict| match r {
            Ok(paths) => v.ignored = paths,
            Err(e) => v.violation = Some(e),
        };
        match (&id, &method) {
            (Some(id), Some(m)) => {
                v.kind = Kind::Request;
                let mut typed = obj.clone();
                typed.remove("jsonrpc");
                let typed = Value::Object(typed);
                match (self.protocol.server_request)(&typed) {
                    Ok(()) => {
                        (self.protocol.track_server_request)(&typed, &mut root, &mut v.ignored);
                        self.expect_response(id, m);
                    }
                    Err(e) => v.violation = Some(e.to_string()),
                }
            }
            (None, Some(_)) => {
                v.kind = Kind::Notification;
                let mut typed = obj.clone();
                typed.remove("jsonrpc");
                let typed = Value::Object(typed);
                match (self.protocol.server_notification)(&typed) {
                    Ok(()) => {
                        (self.protocol.track_server_notification)(&typed, &mut root, &mut v.ignored)
                    }
                    Err(e) => v.violation = Some(e.to_string()),
                }
            }
            (Some(id), None) if obj.contains_key("result") => {
                v.kind = Kind::Response;
                if let Some(m) = self.awaiting.remove(&IdKey::of(id)) {
                    if let Some(r) = (self.protocol.check_result_at)(&m, &obj["result"], &mut root)
                    {
                        check(r, &mut v);
                    }
                    v.reply_to = Some(m.into_owned());
                }
            }
            (Some(id), None) if obj.contains_key("error") => {
                v.kind = Kind::Error;
                if let Err(e) = (self.protocol.jsonrpc_error)(msg) {
                    v.violation = Some(e.to_string());
                }
                v.reply_to = self.awaiting.remove(&IdKey::of(id)).map(Cow::into_owned);
            }
            _ => {
                v.violation =
                    Some("neither a request, a notification, a result nor an error".into())
            }
        }
        v.id = id.map(Id::from_value);
        v.method = method;
        v.missing = root.take_missing();
        v
    }
}

/// A top-level JSON object as its entries in input order, duplicates kept (a `Value` would
/// silently keep the last).
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = a.next_entry::<String, Value>()? {
                    out.push(e);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The reason a request needs the `experimentalApi` capability, as the server words it.
fn experimental_reason(protocol: &Protocol, method: &str, params: &Value) -> Option<String> {
    if (protocol.is_experimental_method)(method) {
        return Some(method.to_string());
    }
    let params = params.as_object()?;
    (protocol.experimental_checks)(method)
        .iter()
        .find(
            |(field, variant, _, null_set, false_set)| match params.get(*field) {
                None => false,
                // A gated variant: the value names it (unit string or externally tagged key).
                Some(Value::String(s)) if !variant.is_empty() => s == variant,
                Some(Value::Object(o)) if !variant.is_empty() => o.contains_key(*variant),
                Some(_) if !variant.is_empty() => false,
                // "Set" as the server's check sees it: a plain `bool` only when true, a double
                // option even when null.
                Some(Value::Null) => *null_set,
                Some(Value::Bool(false)) => *false_set,
                Some(_) => true,
            },
        )
        .map(|(field, _, reason, ..)| {
            if reason.is_empty() {
                format!("{method}.{field}")
            } else {
                reason.to_string()
            }
        })
}

/// A client method name without an allocation when it is a known one.
fn static_method(protocol: &Protocol, m: &str) -> Cow<'static, str> {
    (protocol.client_method)(m).map_or_else(|| Cow::Owned(m.to_string()), Cow::Borrowed)
}

/// `http::HeaderValue::from_str` rules: visible ASCII, space and tab, or obs-text bytes.
fn is_header_value(s: &str) -> bool {
    s.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod segment_tests {
    /// The fast path's cached segments are the tracker's own rendering.
    #[test]
    fn cached_segments_are_the_trackers() {
        assert_eq!(
            codex_wire_protocol::segment::segment("params"),
            super::PARAMS_SEG
        );
        assert_eq!(
            codex_wire_protocol::segment::segment("result"),
            super::RESULT_SEG
        );
    }
}
