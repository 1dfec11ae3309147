//! Static name tables (the fast path's method dispatch and struct keys): a name hashed to a slot of an
//! open-addressed table, confirmed by one comparison. Shared with the build script, which lays
//! the slots out. A 192-arm `match` on the method compared it against every name of its length
//! in turn, through kilobytes of code that traffic over every method evicts from the
//! instruction cache line after line.

/// The table's hash: the length and the first and last eight bytes, mixed (method names
/// differ there; equal ones only probe further).
#[inline]
pub fn hash(name: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let n = name.len();
    let at = |i: usize, w: usize| -> u64 {
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&name[i..i + w]);
        u64::from_le_bytes(b)
    };
    // Two reads that overlap on short names (fixed widths: no copy loop).
    let (a, z) = match n {
        8.. => (at(0, 8), at(n - 8, 8)),
        4..=7 => (at(0, 4), at(n - 4, 4)),
        1..=3 => (at(0, 1) | at(n / 2, 1) << 8, at(n - 1, 1)),
        0 => (0, 0),
    };
    let h = (n as u64).wrapping_mul(K) ^ a;
    let h = h.wrapping_mul(K).rotate_left(29) ^ z;
    let h = h.wrapping_mul(K);
    h ^ (h >> 32)
}

/// The index of `name` in `names`, found through `slots` (a power of two in length, each slot
/// 0 for empty or an index plus one), as [`layout`] placed them.
#[allow(dead_code)] // The crate's half.
#[inline]
pub fn find<'a, T>(
    slots: &[u16],
    entries: &'a [T],
    name_of: impl Fn(&T) -> &str,
    name: &str,
) -> Option<(usize, &'a T)> {
    let mask = slots.len().checked_sub(1)?;
    let mut at = hash(name.as_bytes()) as usize & mask;
    loop {
        let i = (*slots.get(at)? as usize).checked_sub(1)?;
        let e = entries.get(i)?;
        if name_of(e) == name {
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
        let mut at = hash(n.as_bytes()) as usize & (len - 1);
        while slots[at] != 0 {
            at = (at + 1) & (len - 1);
        }
        slots[at] = i as u16 + 1;
    }
    slots
}

#[cfg(test)]
mod tests {
    /// Every name is found at its own index; other names (a prefix, one byte off) are not.
    #[test]
    fn every_name_is_found_and_no_other() {
        let names: Vec<String> = (0..300)
            .map(|i| format!("group{}/method{}", i % 7, i))
            .chain(["a", "", "thread/start", "thread/starT"].map(String::from))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let slots = super::layout(&refs);
        for (i, n) in refs.iter().enumerate() {
            let found = super::find(&slots, &refs, |e: &&str| *e, n);
            assert_eq!(found, Some((i, &refs[i])));
        }
        for other in ["thread/star", "thread/startx", "group1/method", "b"] {
            assert_eq!(
                super::find(&slots, &refs, |e: &&str| *e, other),
                None,
                "{other}"
            );
        }
    }
}
