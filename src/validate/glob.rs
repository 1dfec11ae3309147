//! `--allow-ignored` patterns over ignored-field paths (`$.params.input[0].extra`).
//! `*` matches within one path segment (no `.`), `**` matches anything; a pattern without the
//! leading `$` is taken as rooted (`params.x` = `$.params.x`). So `params.input[*].extra`
//! allows the key in every input item.

#[derive(Clone, Debug)]
pub struct Glob(Vec<u8>);

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        let p = if pattern.starts_with('$') {
            pattern.to_string()
        } else {
            format!("$.{}", pattern.trim_start_matches('.'))
        };
        Glob(p.into_bytes())
    }

    pub fn matches(&self, path: &str) -> bool {
        matches(&self.0, path.as_bytes())
    }
}

fn matches(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| matches(rest, &s[i..])),
        [b'*', rest @ ..] => {
            // Within one segment: stop at the first `.`.
            let seg = s.iter().position(|&c| c == b'.').unwrap_or(s.len());
            (0..=seg).any(|i| matches(rest, &s[i..]))
        }
        [c, rest @ ..] => s.first() == Some(c) && matches(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    #[test]
    fn globs() {
        let g = Glob::new("params.input[*].extra");
        assert!(g.matches("$.params.input[0].extra"));
        assert!(g.matches("$.params.input[12].extra"));
        assert!(!g.matches("$.params.input[0].other"));
        assert!(!g.matches("$.params.input[0].x.extra"));
        assert!(Glob::new("$.jsonrpc").matches("$.jsonrpc"));
        assert!(Glob::new("**.priority").matches("$.params.input[3].priority"));
        assert!(Glob::new("$.params.*").matches("$.params.temperature"));
        assert!(!Glob::new("$.params.*").matches("$.params.a.b"));
    }

    /// The cases the client helpers run through the binary (`clients/install_cases.json`).
    #[test]
    fn the_client_helpers_cases() {
        let cases: serde_json::Value =
            serde_json::from_str(include_str!("../../clients/install_cases.json")).unwrap();
        for c in cases["allow"].as_array().unwrap() {
            let (p, path) = (c["pattern"].as_str().unwrap(), c["path"].as_str().unwrap());
            assert_eq!(
                Glob::new(p).matches(path),
                c["allowed"].as_bool().unwrap(),
                "{p} against {path}"
            );
        }
    }
}
