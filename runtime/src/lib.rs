//! What the generated protocol code (`codex-wire-protocol`) stands on: the unknown-field
//! tracker ([`track`]), the one-scan fast path ([`fast`]) with its name tables ([`names`]), the
//! server's hand-written deserializers ([`custom`]), how a key is written in a reported path
//! ([`segment`]) and what a version directory is ([`version`]). The protocol crate re-exports
//! every module, so `codex_wire_protocol::fast` is this crate's `fast`.

pub mod custom;
pub mod fast;
pub mod names;
pub mod rng;
pub mod segment;
pub mod track;
pub mod version;
