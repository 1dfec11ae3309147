//! A codex command line's `-c key=value` overrides, as codex reads them.

/// `-c key=value` / `--config key=value` overrides of a command line, as written.
pub fn cli_override_pairs(args: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let kv = match a.as_str() {
            "-c" | "--config" => it.next().map(String::as_str),
            _ => a
                .strip_prefix("--config=")
                .or_else(|| a.strip_prefix("-c").filter(|v| !v.is_empty())),
        };
        if let Some((k, v)) = kv.and_then(|kv| kv.split_once('=')) {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

/// [`cli_override_pairs`] with the values read as TOML (a value that is not TOML is a string,
/// as codex reads it).
pub fn cli_overrides(args: &[String]) -> Vec<(String, toml::Value)> {
    cli_override_pairs(args)
        .into_iter()
        .map(|(k, v)| {
            let value = format!("v = {v}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or(toml::Value::String(v));
            (k, value)
        })
        .collect()
}
