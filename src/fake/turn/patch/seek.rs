//! Where an update's lines are in a file, found as codex finds them (codex-rs/apply-patch
//! `seek_sequence.rs`): exact, then ignoring trailing whitespace, then ignoring whitespace at
//! both ends, then with typographic punctuation read as ASCII.

/// Whether a file's line and a patch's line are the same, at one level of fuzz.
type Same = fn(&str, &str) -> bool;

/// The first index at or after `start` where `pattern` occurs in `lines` (with `eof`, only at
/// the end of the file: codex starts its search there). An empty pattern is found at `start`.
pub(super) fn seek(lines: &[String], pattern: &[String], start: usize, eof: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let from = if eof { last } else { start };
    let passes: [Same; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| normalise(a) == normalise(b),
    ];
    passes.iter().find_map(|same| {
        (from..=last).find(|&i| {
            pattern
                .iter()
                .enumerate()
                .all(|(k, p)| same(&lines[i + k], p))
        })
    })
}

/// A line trimmed, its dashes, quotes and odd spaces read as their ASCII forms.
fn normalise(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2004}' | '\u{2005}' | '\u{2006}'
            | '\u{2007}' | '\u{2008}' | '\u{2009}' | '\u{200A}' | '\u{202F}' | '\u{205F}'
            | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::seek;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_fuzz_level_in_turn() {
        let lines = v(&[
            "foo   ",
            "  bar",
            "say \u{201C}hi\u{201D} \u{2014} now",
            "foo",
        ]);
        assert_eq!(seek(&lines, &v(&["foo"]), 0, false), Some(3));
        assert_eq!(seek(&lines, &v(&["foo"]), 0, true), Some(3));
        assert_eq!(seek(&lines, &v(&["foo", "bar"]), 0, false), Some(0));
        assert_eq!(seek(&lines, &v(&["say \"hi\" - now"]), 0, false), Some(2));
        assert_eq!(seek(&lines, &v(&["nope"]), 0, false), None);
        assert_eq!(seek(&lines, &v(&["a", "b", "c", "d", "e"]), 0, false), None);
        assert_eq!(seek(&lines, &[], 2, false), Some(2));
    }
}
