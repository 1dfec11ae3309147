//! How the fake shows a shell command, against every vector recorded from the real codex
//! 0.171.0 app-server (`tests/corpus/0.171.0/commands.json`: commands run as escalated steps
//! whose approval was declined, each checked five ways), one case per command:
//! - `command` / `itemCommand`: the request's and the item's `command` (shell_display);
//! - `commandActions`: the approval request's (approval_command_actions_with_home, with the
//!   run's `home`);
//! - `itemCommandActions`: item/started's (command_actions);
//! - `proposedExecpolicyAmendment` (execpolicy_amendment; the key was never absent).

use codex_wire::fake::shell::{
    approval_command_actions_with_home, command_actions, execpolicy_amendment, shell_display,
};
use serde_json::Value;

#[test]
fn real_binary_vectors() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("corpus/0.171.0/commands.json")).unwrap();
    let (mut checked, mut failures) = (0usize, Vec::new());
    let mut check = |src: &str, what: &str, cmd: &str, got: Value, want: &Value| {
        checked += 1;
        // Compare as text so the key order counts too.
        let (g, w) = (got.to_string(), want.to_string());
        if g != w {
            failures.push(format!("[{src}] {what} {cmd:?}\n   want {w}\n   got  {g}"));
        }
    };
    for case in &cases {
        let cmd = case["cmd"].as_str().unwrap();
        let src = case["source"].as_str().unwrap();
        let cwd = case["cwd"].as_str().unwrap_or("/CWD");
        for key in ["command", "itemCommand"] {
            if let Some(want) = case.get(key) {
                check(src, key, cmd, Value::String(shell_display(cmd)), want);
            }
        }
        if let Some(want) = case.get("commandActions") {
            let home = case["home"].as_str();
            let got = Value::Array(approval_command_actions_with_home(cmd, cwd, home));
            check(src, "commandActions", cmd, got, want);
        }
        if let Some(want) = case.get("itemCommandActions") {
            check(
                src,
                "itemCommandActions",
                cmd,
                Value::Array(command_actions(cmd, cwd)),
                want,
            );
        }
        if let Some(want) = case.get("proposedExecpolicyAmendment") {
            let got = serde_json::to_value(execpolicy_amendment(cmd)).unwrap();
            check(src, "amendment", cmd, got, want);
        }
    }
    eprintln!(
        "{} cases, {checked} checks, {} failures",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
