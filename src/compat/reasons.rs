//! Why a line's verdict changes between releases: the releases' walks of the line (and the
//! `experimentalApi` gates it meets), and each fact they disagree on as a reason, with the
//! release that added or removed it.

use super::schema::{push_key, schemas, FactKey, Facts, State, Walk, What, ROOTS};
use super::verdict::Seen;
use crate::Protocol;
use serde_json::Value;
use std::collections::BTreeSet;

/// Why a line's verdict changes: one fact the releases disagree on.
#[derive(Clone, Debug)]
pub(super) struct Reason {
    pub(super) path: String,
    pub(super) what: What,
    pub(super) name: String,
    pub(super) owner: String,
    /// Per release (in order), its state; `None`: the walk did not reach it there.
    pub(super) states: Vec<Option<String>>,
    /// Releases where it appeared (was known, declared, gated) / disappeared.
    pub(super) added: Vec<&'static str>,
    pub(super) removed: Vec<&'static str>,
    pub(super) text: String,
}

/// The releases' walks of `line`, and what they disagree on.
pub(super) fn reasons(line: &Value, seen: &Seen, releases: &[&'static Protocol]) -> Vec<Reason> {
    let schemas = schemas();
    let head = &seen.head;
    let method = head
        .method
        .clone()
        .or_else(|| line["method"].as_str().map(str::to_string));
    let client = head.dir.as_deref() != Some("out");
    let mut absent: BTreeSet<String> = seen
        .verdicts
        .iter()
        .flatten()
        .flat_map(|j| j.missing.iter().cloned())
        .collect();
    let mut facts = Facts::new();
    // Twice at most: a key one release requires is described on every release.
    for _ in 0..2 {
        facts.clear();
        let mut more = BTreeSet::new();
        for (i, s) in schemas.iter().enumerate().take(releases.len()) {
            let mut w = Walk {
                s,
                release: i,
                releases: releases.len(),
                facts: &mut facts,
                absent: &absent,
                sent: seen.verdicts[i]
                    .iter()
                    .flat_map(|j| j.missing.iter().map(String::as_str))
                    .collect(),
                required_absent: BTreeSet::new(),
            };
            match head.kind.as_str() {
                "request" | "notification" => {
                    let root = match (client, head.kind.as_str()) {
                        (true, "request") => "ClientRequest",
                        (true, _) => "ClientNotification",
                        (false, "request") => "ServerRequest",
                        (false, _) => "ServerNotification",
                    };
                    if let Some(d) = s.defs.get(root) {
                        w.walk(line, d, "$", root, 0);
                    }
                }
                "response" => {
                    let ty = match (client, head.reply_to.as_deref()) {
                        (true, Some(m)) => s.server_responses.get(m),
                        (false, Some(m)) => s.results.get(m),
                        _ => None,
                    };
                    if let (Some(ty), Some(r)) = (ty, line.get("result")) {
                        if let Some(d) = s.defs.get(ty) {
                            w.walk(r, d, "$.result", ty, 0);
                        }
                    }
                }
                _ => {}
            }
            more.extend(w.required_absent);
        }
        let before = absent.len();
        absent.extend(more);
        if absent.len() == before {
            break;
        }
    }
    // The experimentalApi gates the line meets, when a release refused it for one.
    let gated = seen.verdicts.iter().flatten().any(|j| {
        j.error
            .as_ref()
            .is_some_and(|(_, m)| m.ends_with("requires experimentalApi capability"))
    });
    if gated && client && head.kind == "request" {
        if let Some(m) = method.as_deref() {
            gates(line, m, releases, &mut facts);
        }
    }
    let mut out: Vec<Reason> = facts
        .into_iter()
        .filter_map(|(k, states)| reason(k, states, releases))
        .collect();
    // A value no release knows: its error's list changes only when nothing else explains it.
    let primary = |r: &Reason| !matches!(r.what, What::Type | What::Variants | What::Keys);
    if out.iter().any(primary) {
        out.retain(|r| r.what != What::Type);
    }
    if out.iter().any(|r| r.what != What::Type) {
        out.retain(|r| r.what != What::Type);
    }
    out.sort_by_key(|r| (!primary(r), r.path.clone(), r.what));
    out
}

/// The `experimentalApi` gates of `method` that `line` meets, per release: the method itself,
/// and each gated params field it sets (as the engine reads a gate).
fn gates(line: &Value, method: &str, releases: &[&'static Protocol], facts: &mut Facts) {
    let n = releases.len();
    let mut gate = |path: &str, name: &str, i: usize, on: bool| {
        let e = facts
            .entry(FactKey {
                path: path.to_string(),
                what: What::Gate,
                name: name.to_string(),
            })
            .or_insert_with(|| vec![None; n]);
        e[i] = Some(State {
            owner: String::new(),
            state: if on { "gated" } else { "open" }.into(),
        });
    };
    let params = line["params"].as_object();
    let mut fields = BTreeSet::new();
    for p in releases {
        for &(f, variant, _, null_set, false_set) in (p.experimental_checks)(method) {
            // "Set" as the engine reads a gate (`engine::experimental_reason`).
            let hit = match params.and_then(|o| o.get(f)) {
                None => false,
                Some(Value::String(s)) if !variant.is_empty() => s == variant,
                Some(Value::Object(o)) if !variant.is_empty() => o.contains_key(variant),
                Some(_) if !variant.is_empty() => false,
                Some(Value::Null) => null_set,
                Some(Value::Bool(false)) => false_set,
                Some(_) => true,
            };
            if hit {
                fields.insert((f.to_string(), variant.to_string()));
            }
        }
    }
    for (i, p) in releases.iter().enumerate() {
        if (p.client_method)(method).is_none() {
            continue;
        }
        gate("$.method", method, i, (p.is_experimental_method)(method));
        for (f, variant) in &fields {
            let on = (p.experimental_checks)(method)
                .iter()
                .any(|&(g, v, ..)| g == f.as_str() && v == variant.as_str());
            let name = if variant.is_empty() {
                format!("{method}.{f}")
            } else {
                format!("{method}.{f} `{variant}`")
            };
            gate(&push_key("$.params", f), &name, i, on);
        }
    }
}

/// `a, b and c`.
fn list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The fact as a reason, when the releases that reached it disagree.
fn reason(
    k: FactKey,
    states: Vec<Option<State>>,
    releases: &[&'static Protocol],
) -> Option<Reason> {
    let reached: Vec<(usize, &State)> = states
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
        .collect();
    let (_, first) = reached.first()?;
    if reached.iter().all(|(_, s)| s.state == first.state) {
        return None;
    }
    let owner = reached
        .last()
        .map(|(_, s)| s.owner.clone())
        .unwrap_or_default();
    let v = |i: usize| releases[i].version;
    let on = |s: &str| {
        matches!(
            s,
            "known" | "gated" | "optional" | "always sent" | "required"
        )
    };
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for w in reached.windows(2) {
        let (a, b) = (on(&w[0].1.state), on(&w[1].1.state));
        if !a && b {
            added.push(v(w[1].0));
        } else if a && !b {
            removed.push(v(w[1].0));
        }
    }
    let by_state = |want: &dyn Fn(&str) -> bool| -> Vec<&'static str> {
        reached
            .iter()
            .filter(|(_, s)| want(&s.state))
            .map(|(i, _)| v(*i))
            .collect()
    };
    let history = || {
        let mut h = Vec::new();
        if !added.is_empty() {
            h.push(format!("added in {}", list(&added)));
        }
        if !removed.is_empty() {
            h.push(format!("removed in {}", list(&removed)));
        }
        h.join(", ")
    };
    let of = if owner.is_empty() {
        String::new()
    } else {
        format!(" of `{owner}`")
    };
    let name = &k.name;
    let text = match k.what {
        What::Method | What::Field | What::Variant => {
            let subject = match k.what {
                What::Method => format!("method `{name}`"),
                What::Field => format!("field `{name}`{of}"),
                _ => format!("variant `{name}`{of}"),
            };
            let unknown = by_state(&|s| s == "unknown");
            format!("{subject} is unknown to {} ({})", list(&unknown), history())
        }
        What::Absent => {
            let mut parts = Vec::new();
            for state in ["undeclared", "optional", "always sent", "required"] {
                let at = by_state(&|s| s == state);
                if !at.is_empty() {
                    let what = match state {
                        "undeclared" => "unknown to",
                        "optional" => "optional in",
                        "always sent" => "always sent by",
                        _ => "required by",
                    };
                    parts.push(format!("{what} {}", list(&at)));
                }
            }
            let h = history();
            let h = if h.is_empty() { h } else { format!(" ({h})") };
            format!(
                "field `{name}`{of}, absent from the line, is {}{h}",
                parts.join("; ")
            )
        }
        What::Gate => {
            let gated = by_state(&|s| s == "gated");
            let open = by_state(&|s| s == "open");
            format!(
                "`{name}` needs the experimentalApi capability in {} (not in {})",
                list(&gated),
                list(&open)
            )
        }
        What::Type => {
            let mut seen_states: Vec<&str> = Vec::new();
            for (_, s) in &reached {
                if !seen_states.contains(&s.state.as_str()) {
                    seen_states.push(&s.state);
                }
            }
            let parts: Vec<String> = seen_states
                .iter()
                .map(|t| format!("`{t}` in {}", list(&by_state(&|s| s == *t))))
                .collect();
            format!("field `{name}`{of} is {}", parts.join(", "))
        }
        What::Variants | What::Fields | What::Keys => {
            let subject = if k.what == What::Fields {
                format!(
                    "`{owner}` is given as an array (read by position); its fields ({}) change",
                    reached
                        .iter()
                        .map(|(i, s)| format!("{} in {}", s.state.split('\n').count(), v(*i)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else if k.what == What::Keys {
                format!(
                    "`{name}` is known to no release; the fields of `{owner}` its error lists \
                     change"
                )
            } else if ROOTS.contains(&owner.as_str()) {
                format!(
                    "`{name}` is known to no release; the methods the unknown-method reply lists \
                     change"
                )
            } else {
                format!("`{name}` is known to no release; the variants of `{owner}` its error lists change")
            };
            // Each release's list against the one before it.
            let mut steps = Vec::new();
            for w in reached.windows(2) {
                let a: BTreeSet<&str> = w[0].1.state.split('\n').collect();
                let b: BTreeSet<&str> = w[1].1.state.split('\n').collect();
                let gained: Vec<&str> = b.difference(&a).copied().collect();
                let lost: Vec<&str> = a.difference(&b).copied().collect();
                let names = |x: &[&str]| {
                    let shown: Vec<String> = x.iter().take(4).map(|n| format!("`{n}`")).collect();
                    let more = x.len().saturating_sub(4);
                    if more > 0 {
                        format!("{} and {more} more", shown.join(", "))
                    } else {
                        list(&shown.iter().map(String::as_str).collect::<Vec<_>>())
                    }
                };
                if !gained.is_empty() {
                    steps.push(format!("{} added in {}", names(&gained), v(w[1].0)));
                }
                if !lost.is_empty() {
                    steps.push(format!("{} removed in {}", names(&lost), v(w[1].0)));
                }
            }
            format!("{subject}: {}", steps.join("; "))
        }
    };
    Some(Reason {
        path: k.path,
        what: k.what,
        name: k.name,
        owner,
        states: states.into_iter().map(|s| s.map(|s| s.state)).collect(),
        added,
        removed,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::verdict::{Head, Judged};
    use serde_json::json;

    /// A method only later releases know is named, with the release that added it.
    #[test]
    fn a_later_method_is_explained() {
        let vs = crate::versions();
        let (old, new) = (vs[0], vs[vs.len() - 1]);
        let Some(m) = new
            .client_methods
            .iter()
            .find(|m| (old.client_method)(m).is_none())
        else {
            return;
        };
        let line = json!({"id": 1, "method": m, "params": {}});
        let mut verdicts = vec![None; vs.len()];
        verdicts[0] = Some(Judged {
            error: Some((-32600, "unknown variant".into())),
            ..Judged::default()
        });
        let seen = Seen {
            head: Head {
                dir: Some("in".into()),
                kind: "request".into(),
                method: Some(m.to_string()),
                ..Head::default()
            },
            verdicts,
        };
        let r = reasons(&line, &seen, vs);
        let first = vs.iter().find(|p| (p.client_method)(m).is_some()).unwrap();
        assert!(
            r.iter().any(|r| r.what == What::Method
                && r.text.contains(&format!("method `{m}`"))
                && r.added == [first.version]),
            "{r:#?}"
        );
    }
}
