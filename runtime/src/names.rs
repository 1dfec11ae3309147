//! Static name tables (the fast path's method dispatch and struct keys): a name hashed to a
//! slot of an open-addressed table, confirmed by one comparison. Shared with the build script, which lays
//! the slots out. A 192-arm `match` on the method compared it against every name of its length
//! in turn, through kilobytes of code that traffic over every method evicts from the
//! instruction cache line after line.

/// A name as a table holds it, with its [`words`] (computed by the build script): a name of at
/// most 16 bytes is confirmed by comparing its length and two integers, without reading it.
#[allow(dead_code)] // Built by the generated code, not by the build script.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub name: &'static str,
    pub words: [u64; 2],
}

/// Two words of a name that together hold every byte of a name of at most 16 bytes: the first
/// and last eight (four, one) bytes, overlapping on short names (fixed widths: no copy loop).
#[inline]
pub fn words(name: &[u8]) -> [u64; 2] {
    let n = name.len();
    // Whole-word loads, not `copy_from_slice` into a buffer: that is an out-of-line call and a
    // `memcpy` per word (since Rust 1.9x), which was most of the fast path's key lookups.
    let w8 = |i: usize| u64::from_le_bytes(name[i..i + 8].try_into().unwrap());
    let w4 = |i: usize| u64::from(u32::from_le_bytes(name[i..i + 4].try_into().unwrap()));
    match n {
        8.. => [w8(0), w8(n - 8)],
        4..=7 => [w4(0), w4(n - 4)],
        1..=3 => [
            u64::from(name[0]) | u64::from(name[n / 2]) << 8,
            u64::from(name[n - 1]),
        ],
        0 => [0, 0],
    }
}

/// The table's hash of a name of length `n` with words `w`.
#[inline]
fn mix(n: usize, w: [u64; 2]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let h = (n as u64).wrapping_mul(K) ^ w[0];
    let h = h.wrapping_mul(K).rotate_left(29) ^ w[1];
    let h = h.wrapping_mul(K);
    h ^ (h >> 32)
}

/// The entry of `entries` named `name`, with its index, found through `slots` (a power of two
/// in length, each slot 0 for empty or an index plus one) as [`layout`] placed them.
#[allow(dead_code)] // The crate's half.
#[inline]
pub fn find<'a, T>(
    slots: &[u16],
    entries: &'a [T],
    key_of: impl Fn(&T) -> &Key,
    name: &str,
) -> Option<(usize, &'a T)> {
    let n = name.len();
    let w = words(name.as_bytes());
    let mask = slots.len().checked_sub(1)?;
    let mut at = mix(n, w) as usize & mask;
    loop {
        let i = (*slots.get(at)? as usize).checked_sub(1)?;
        let e = entries.get(i)?;
        let k = key_of(e);
        if k.name.len() == n && k.words == w && (n <= 16 || k.name == name) {
            return Some((i, e));
        }
        at = (at + 1) & mask;
    }
}

/// The slots for `names` (at most a quarter full, so a lookup rarely probes twice).
#[allow(dead_code)] // The build script's half.
pub fn layout(names: &[&str]) -> Vec<u16> {
    let len = (names.len() * 4).next_power_of_two().max(8);
    assert!(len <= u16::MAX as usize, "name table too large");
    let mut slots = vec![0u16; len];
    for (i, n) in names.iter().enumerate() {
        let mut at = mix(n.len(), words(n.as_bytes())) as usize & (len - 1);
        while slots[at] != 0 {
            at = (at + 1) & (len - 1);
        }
        slots[at] = i as u16 + 1;
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::{find, layout, words, Key};

    fn keys(names: &[String]) -> Vec<Key> {
        names
            .iter()
            .map(|n| Key {
                name: Box::leak(n.clone().into_boxed_str()),
                words: words(n.as_bytes()),
            })
            .collect()
    }

    /// Every name is found at its own index; other names (a prefix, one byte off) are not.
    #[test]
    fn every_name_is_found_and_no_other() {
        let names: Vec<String> = (0..300)
            .map(|i| format!("group{}/method{}", i % 7, i))
            .chain(["a", "", "thread/start", "thread/starT"].map(String::from))
            .collect();
        let keys = keys(&names);
        let slots = layout(&names.iter().map(String::as_str).collect::<Vec<_>>());
        for (i, n) in names.iter().enumerate() {
            let found = find(&slots, &keys, |k| k, n).map(|(j, k)| (j, k.name));
            assert_eq!(found, Some((i, n.as_str())));
        }
        for other in ["thread/star", "thread/startx", "group1/method", "b"] {
            assert!(find(&slots, &keys, |k| k, other).is_none(), "{other}");
        }
    }

    /// The two words hold every byte of a name of up to 16 bytes: a name one byte off at any
    /// position is never taken for it (past 16 bytes the whole name is compared).
    #[test]
    fn a_byte_off_anywhere_is_another_name() {
        for len in 0..=24 {
            let name: String = (0..len).map(|i| (b'a' + i as u8) as char).collect();
            let keys = keys(std::slice::from_ref(&name));
            let slots = layout(&[name.as_str()]);
            assert!(find(&slots, &keys, |k| k, &name).is_some(), "{name}");
            for at in 0..len {
                let mut other = name.clone().into_bytes();
                other[at] = b'_';
                let other = String::from_utf8(other).unwrap();
                assert!(find(&slots, &keys, |k| k, &other).is_none(), "{other}");
            }
        }
    }
}
