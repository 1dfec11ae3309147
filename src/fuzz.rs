//! A dependency-free mutation fuzzer for [`Session::feed`](crate::Session::feed): the engine
//! must never panic, whatever the bytes. Used by `tests/never_panics.rs` (a bounded run) and
//! `examples/fuzz.rs` (a long run that reports its duration).

use crate::Session;

pub use codex_wire_protocol::rng::Rng;

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"null",
    b"true",
    b"-1",
    b"1.50",
    b"1e400",
    b"123456789012345678901234567890",
    b"\"method\"",
    b"\"params\"",
    b"\"id\"",
    b"\"type\"",
    b"\\u0000",
    b"\xff",
    b"\xc3",
    b"\r",
    b"\"initialize\"",
    b"\"turn/start\"",
    b"{}",
    b"[]",
];

/// One mutation of `input`, built from seeds: byte flips, token inserts, deletions, splices.
pub fn mutate(rng: &mut Rng, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        match rng.below(6) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                let i = rng.below(len + 1);
                out.splice(i..i, t.iter().copied());
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(16)).min(len);
                out.drain(i..j);
            }
            3 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                let i = rng.below(len + 1);
                let a = rng.below(other.len() + 1);
                let b = (a + rng.below(64)).min(other.len());
                out.splice(i..i, other[a..b].iter().copied());
            }
            4 => {
                // Deep nesting around the line.
                let depth = 100 + rng.below(60);
                let mut v = b"[".repeat(depth);
                v.extend_from_slice(&out);
                v.extend(b"]".repeat(depth));
                out = v;
            }
            _ => {
                let i = rng.below(len + 1);
                out.insert(i, rng.next_u64() as u8);
            }
        }
    }
    out
}

/// Feeds `iterations` mutated lines (a fresh session now and then, so lifecycle states vary)
/// to a session and to an exact-only one: the fast path must agree with the exact path on
/// every line. Returns the number of lines fed; a panic or a disagreement propagates.
pub fn run(seed: u64, iterations: u64, seeds: &[Vec<u8>]) -> u64 {
    let mut rng = Rng::new(seed);
    let mut session = Session::new();
    let mut exact = Session::exact();
    for n in 0..iterations {
        if n % 64 == 0 {
            session = Session::new();
            exact = Session::exact();
            let init = match rng.below(3) {
                0 => &br#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"f","version":"1"},"capabilities":{"experimentalApi":true}}}"#[..],
                1 => br#"{"id":0,"method":"initialize","params":{"clientInfo":{"name":"f","version":"1"}}}"#,
                _ => b"",
            };
            if !init.is_empty() {
                session.feed(init);
                exact.feed(init);
            }
        }
        let base = &seeds[rng.below(seeds.len())];
        let line = mutate(&mut rng, base, seeds);
        let v = session.feed(&line);
        let e = exact.feed(&line);
        assert_eq!(
            v,
            e,
            "the fast path disagrees with the exact path on {:?}",
            String::from_utf8_lossy(&line)
        );
        // Whatever the verdict, rendering it must not panic either.
        if let Some(e) = v.error() {
            let _ = e.line();
        }
    }
    iterations
}
