//! The AWS profiles `account/bedrock/discover` lists, as codex finds them: the AWS SDK's shared
//! `config` and `credentials` files (`AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`, else
//! `~/.aws/…`) parsed and normalized by the SDK's rules (`aws-runtime`'s `env_config::parse`
//! and `normalize`), the selected profile (`AWS_PROFILE`, else `default`) first, then by name;
//! each with the `region` set on it (codex `discover_aws_profiles`). Turn scenario 247 on every
//! version.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Whitespace as the SDK's profile parser counts it.
const WHITESPACE: &[char] = &[' ', '\t'];
const COMMENT: &[char] = &['#', ';'];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Config,
    Credentials,
}

/// One profile: its name and the region set on it.
#[derive(Debug, PartialEq)]
pub struct Profile {
    pub name: String,
    pub region: Option<String>,
}

/// A file the SDK cannot parse (codex's words follow the SDK's: no line, no reason).
#[derive(Debug, PartialEq)]
pub struct Unparsable;

/// The sections of one file, as written (`[profile a]` and `[profile  a]` apart), each with its
/// properties (keys lowercased, the last value of a key kept).
type Raw = Vec<(String, Props)>;

/// A section's properties.
type Props = BTreeMap<String, String>;

/// The profiles of both files, in codex's order.
pub fn discover() -> Result<Vec<Profile>, Unparsable> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = |var: &str, default: &str| match env(var) {
        Some(p) => match p.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(p),
        },
        None => home.join(".aws").join(default),
    };
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let config = read(path("AWS_CONFIG_FILE", "config"));
    let credentials = read(path("AWS_SHARED_CREDENTIALS_FILE", "credentials"));
    let selected = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
    profiles(&config, &credentials, &selected)
}

/// [`discover`] over the two files' texts.
fn profiles(config: &str, credentials: &str, selected: &str) -> Result<Vec<Profile>, Unparsable> {
    let mut merged: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    // The config file first; the credentials file's properties win.
    for (text, kind) in [(config, Kind::Config), (credentials, Kind::Credentials)] {
        merge_in(&mut merged, parse(text)?, kind);
    }
    let mut out: Vec<Profile> = merged
        .into_iter()
        .map(|(name, props)| Profile {
            region: props.get("region").cloned(),
            name,
        })
        .collect();
    out.sort_by(|a, b| (a.name != selected, &a.name).cmp(&(b.name != selected, &b.name)));
    Ok(out)
}

fn prepare_line(line: &str, comments_need_whitespace: bool) -> &str {
    let line = line.trim_matches(WHITESPACE);
    let mut prev_whitespace = false;
    let mut cut = line.len();
    for (i, c) in line.char_indices() {
        if COMMENT.contains(&c) && (prev_whitespace || !comments_need_whitespace) {
            cut = i;
            break;
        }
        prev_whitespace = c.is_whitespace();
    }
    line[..cut].trim_matches(WHITESPACE)
}

/// `key = value`: the key lowercased; `None` without an `=` or a key.
fn property(line: &str) -> Option<(String, String)> {
    let (k, v) = prepare_line(line, true).split_once('=')?;
    let k = k.trim_matches(WHITESPACE);
    (!k.is_empty()).then(|| {
        (
            k.to_ascii_lowercase(),
            v.trim_matches(WHITESPACE).to_string(),
        )
    })
}

/// The SDK's literal parse: sections, properties, continuation lines, comments.
fn parse(text: &str) -> Result<Raw, Unparsable> {
    let mut raw: Raw = Vec::new();
    // The section being read, and its last property (and whether it opened sub-properties).
    let mut at: Option<(usize, Option<(String, bool)>)> = None;
    for line in text.lines() {
        if line.trim_matches(WHITESPACE).is_empty() || line.starts_with(COMMENT) {
            continue;
        }
        if line.starts_with('[') {
            let name = prepare_line(line, false)
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .ok_or(Unparsable)?;
            let i = match raw.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    raw.push((name.to_string(), BTreeMap::new()));
                    raw.len() - 1
                }
            };
            at = Some((i, None));
        } else if line.starts_with(WHITESPACE) {
            let Some((i, Some((key, sub)))) = &at else {
                return Err(Unparsable);
            };
            let rest = line.trim_matches(WHITESPACE);
            if *sub && !rest.is_empty() && property(rest).is_none() {
                return Err(Unparsable);
            }
            let v = raw[*i].1.get_mut(key).expect("the property read");
            v.push('\n');
            v.push_str(rest);
        } else {
            let Some((i, _)) = at else {
                return Err(Unparsable);
            };
            let (k, v) = property(line).ok_or(Unparsable)?;
            at = Some((i, Some((k.clone(), v.is_empty()))));
            raw[i].1.insert(k, v);
        }
    }
    Ok(raw)
}

/// `[A-Za-z0-9_\-/.%@:+]+` (the SDK's identifiers; an empty name passes, as there).
fn identifier(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-/.%@:+".contains(c))
}

/// A section's prefix and name: `[profile a]` → (`profile`, `a`), `[a]` → (none, `a`).
fn section(name: &str) -> (Option<&str>, &str) {
    let name = name.trim_matches(WHITESPACE);
    match name.split_once(WHITESPACE) {
        Some((prefix, rest)) => (Some(prefix.trim()), rest.trim()),
        None => (None, name.trim()),
    }
}

/// The SDK's normalization of one file's sections into the profiles: a config file's profiles
/// are `[default]` or `[profile name]` (other prefixes are other kinds of sections), a
/// credentials file's are unprefixed; names must be identifiers; `[profile default]` replaces
/// `[default]` of the same file; keys that are not identifiers are dropped.
fn merge_in(base: &mut BTreeMap<String, BTreeMap<String, String>>, raw: Raw, kind: Kind) {
    let valid: Vec<((Option<&str>, &str), &Props)> = raw
        .iter()
        .map(|(n, props)| (section(n), props))
        .filter(|((prefix, name), _)| match (kind, prefix) {
            (Kind::Config, Some(_)) => identifier(name),
            (Kind::Config, None) => *name == "default",
            (Kind::Credentials, Some(_)) => false,
            (Kind::Credentials, None) => identifier(name),
        })
        .collect();
    let prefixed_default = valid
        .iter()
        .any(|((p, n), _)| *p == Some("profile") && *n == "default");
    for ((prefix, name), props) in valid {
        if prefix.is_none() && name == "default" && prefixed_default {
            continue;
        }
        if prefix.is_some_and(|p| p != "profile") {
            continue;
        }
        let target = base.entry(name.to_string()).or_default();
        for (k, v) in props {
            if identifier(k) {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(c: &str, k: &str) -> Vec<(String, Option<String>)> {
        profiles(c, k, "default")
            .unwrap()
            .into_iter()
            .map(|p| (p.name, p.region))
            .collect()
    }

    #[test]
    fn profiles_merge_and_sort_as_the_sdk_and_codex_do() {
        let config = "[default]\nregion = us-east-1\n[profile dev]\nregion=us-west-2\n\
                      [profile Zeta]\nregion = eu-west-1 # comment\n[sso-session corp]\n\
                      sso_region = x\n[services s]\ns3 =\n  endpoint_url = http://h\n\
                      [not-prefixed]\nregion = a\n[profile  spaced ]\nregion = b\n\
                      [profile bad!name]\nregion = c\n";
        let creds = "[dev]\naws_access_key_id = k\n[cred-only]\nregion = sa-east-1\n\
                     [profile p]\nregion = d\n";
        let got = names(config, creds);
        let want: Vec<(String, Option<String>)> = [
            ("default", Some("us-east-1")),
            ("Zeta", Some("eu-west-1")),
            ("cred-only", Some("sa-east-1")),
            ("dev", Some("us-west-2")),
            ("spaced", Some("b")),
        ]
        .iter()
        .map(|(n, r)| (n.to_string(), r.map(str::to_string)))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_prefixed_default_wins_and_credentials_override() {
        let got = names(
            "[default]\nregion = a\n[profile default]\nregion = b\n",
            "[default]\nregion = c\n",
        );
        assert_eq!(got, vec![("default".into(), Some("c".into()))]);
        let got = names(
            "[default]\nregion = a\n[profile default]\noutput = json\n",
            "",
        );
        assert_eq!(got, vec![("default".into(), None)]);
    }

    #[test]
    fn what_the_sdk_cannot_parse_is_refused() {
        for bad in [
            "[profile broken\nregion = x\n",
            "region = x\n",
            "[a]\n  continued\n",
            "[default]\nno equals\n",
            "[default]\n= value\n",
            "[default]\ns3 =\n  not a sub property\n",
        ] {
            assert_eq!(profiles(bad, "", "default"), Err(Unparsable), "{bad:?}");
        }
        assert!(profiles("# only a comment\n\n", "", "default")
            .unwrap()
            .is_empty());
    }
}
