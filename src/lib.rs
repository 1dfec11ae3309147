//! codex-wire: the codex app-server JSON-RPC protocol, exactly as the real server speaks it.
//!
//! [`Session::feed`] takes one client line and returns the real server's [`Verdict`]: the exact
//! error reply it would send, or that it accepts the line, says nothing, or closes; plus the
//! JSON paths of the keys it silently drops.

pub mod compat;
pub mod diff;
pub mod engine;
pub mod fake;
pub mod fuzz;
pub mod harness;
pub mod install;
pub mod model;
pub mod proxy;
pub mod record;
pub mod replay;
pub mod scripted;
pub mod show;
pub mod validate;

/// The generated protocol of every supported codex version (crate `codex-wire-protocol`).
pub use codex_wire_protocol::{
    by_version, custom, fast, newest, track, version_dirs, version_key, versions, Envelope,
    Protocol,
};
pub use engine::{ErrorReply, Id, Kind, Outcome, Session, Verdict};

/// `--codex-version V` (clap value parser): a version this build speaks, or an error that lists
/// them.
pub fn parse_codex_version(v: &str) -> Result<&'static Protocol, String> {
    by_version(v).ok_or_else(|| {
        let known: Vec<&str> = versions().iter().map(|p| p.version).collect();
        format!(
            "codex {v} is not a version this build speaks (it speaks {})",
            known.join(", ")
        )
    })
}
