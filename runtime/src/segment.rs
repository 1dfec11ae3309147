//! How a key is written in a reported path (`.name`, or `["odd key"]`). Shared with the build
//! script, which writes the segments of declared fields into the generated code once, so a walk
//! only appends them.

/// Appends key `k`'s path segment to `buf`.
pub fn push_key(buf: &mut String, k: &str) {
    let b = k.as_bytes();
    let plain = b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if plain {
        buf.push('.');
        buf.push_str(k);
    } else {
        buf.push('[');
        buf.push_str(&serde_json::to_string(k).unwrap_or_default());
        buf.push(']');
    }
}

/// Key `k`'s path segment.
pub fn segment(k: &str) -> String {
    let mut s = String::new();
    push_key(&mut s, k);
    s
}
