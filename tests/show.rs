//! `codex-wire show` in a real browser: pages made from recorded transcripts by the binary,
//! loaded in headless Chromium (`--dump-dom`), and the DOM held to what the transcript and the
//! library say: the turns, the findings (error replies counted here, plus what
//! `codex_wire::validate` finds), the request/reply links, the first difference of two runs
//! (the one `codex_wire::diff::compare` reports) and its absence for a run against itself.
//!
//! Chromium is Debian's `chromium` package: when it is not on PATH the test installs it
//! (`apt-get install -y chromium`, after an `apt-get update` if the first try fails). If that
//! fails the test fails, saying why: it never passes without a browser.
//! Screenshots are kept in `target/show/` (artifacts).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_codex-wire");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The newest version's recorded turn transcripts.
fn turn(name: &str) -> PathBuf {
    root()
        .join("tests/corpus")
        .join(codex_wire::newest().version)
        .join("turns")
        .join(name)
}

/// `target/show/`: the pages, the screenshots, the browser's profiles.
fn out_dir() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf();
    let dir = target.join("show");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `apt-get ARGS` (through `sudo -n` when not root): whether it worked, and its output.
fn apt(args: &[&str]) -> (bool, String) {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = if root {
        Command::new("apt-get")
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", "apt-get"]);
        c
    };
    let out = c
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (false, format!("cannot run apt-get: {e}")),
    }
}

/// The browser: on PATH, or installed now. Panics (the test fails) when it cannot be had.
fn chromium() -> &'static Path {
    static CHROMIUM: OnceLock<PathBuf> = OnceLock::new();
    CHROMIUM.get_or_init(|| {
        if let Some(p) = on_path("chromium") {
            return p;
        }
        eprintln!("chromium is not on PATH: apt-get install -y chromium");
        let started = Instant::now();
        let (mut ok, mut log) = apt(&["install", "-y", "chromium"]);
        if !ok {
            // Stale package lists: update them and try once more.
            let (_, update) = apt(&["update"]);
            let (ok2, log2) = apt(&["install", "-y", "chromium"]);
            ok = ok2;
            log = format!("{log}\n--- apt-get update\n{update}\n--- retry\n{log2}");
        }
        assert!(
            ok,
            "the browser test needs chromium and `apt-get install -y chromium` failed:\n{log}"
        );
        eprintln!("chromium installed in {:.0?}", started.elapsed());
        on_path("chromium")
            .unwrap_or_else(|| panic!("chromium was installed but is not on PATH:\n{log}"))
    })
}

/// Runs headless Chromium with `args` (its own profile, a time limit); returns its stdout.
fn browser(args: &[String]) -> String {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let k = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = out_dir();
    let profile = dir.join(format!("profile-{}-{k}", std::process::id()));
    let stdout_path = dir.join(format!("stdout-{}-{k}.html", std::process::id()));
    let stderr_path = dir.join(format!("stderr-{}-{k}.txt", std::process::id()));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).unwrap())
        .stderr(File::create(&stderr_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium {args:?} did not finish in 90 s:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(status.success(), "chromium {args:?}: {status}\n{err}");
    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_file(&stdout_path);
    let _ = std::fs::remove_file(&stderr_path);
    out
}

fn url(page: &Path) -> String {
    format!("file://{}", page.canonicalize().unwrap().display())
}

/// The page's DOM after the browser ran it.
fn dom(page: &Path) -> String {
    let d = browser(&["--dump-dom".into(), url(page)]);
    assert!(d.contains("<html"), "no DOM for {}: {d}", page.display());
    d
}

/// `codex-wire show ARGS -o target/show/NAME.html`, which must exit 0.
fn show(name: &str, args: &[&Path]) -> PathBuf {
    let page = out_dir().join(format!("{name}.html"));
    let out = Command::new(BIN)
        .arg("show")
        .args(args)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "show {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    page
}

/// An attribute of the root element.
fn root_attr(dom: &str, name: &str) -> String {
    let start = dom.find("<html").expect("an html element");
    let tag = &dom[start..start + dom[start..].find('>').unwrap()];
    let key = format!(" {name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} on the root: {tag}"));
    let rest = &tag[at + key.len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

fn root_count(dom: &str, name: &str) -> usize {
    root_attr(dom, name)
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Start tags in the DOM (text is escaped, so every `<` starts one).
fn tags(dom: &str) -> impl Iterator<Item = &str> {
    dom.split('<')
        .skip(1)
        .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic()))
        .map(|t| &t[..t.find('>').unwrap_or(t.len())])
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// Elements whose class list holds `class`.
fn with_class(dom: &str, class: &str) -> usize {
    tags(dom)
        .filter(|t| attr(t, "class").is_some_and(|c| c.split_whitespace().any(|x| x == class)))
        .count()
}

fn with_id<'a>(dom: &'a str, id: &str) -> Vec<&'a str> {
    tags(dom).filter(|t| attr(t, "id") == Some(id)).collect()
}

/// The transcript's entries, by line number (1-based).
fn entries(path: &Path) -> Vec<(usize, serde_json::Value)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, serde_json::from_str(l).unwrap()))
        .collect()
}

/// What the page must count, computed here: turns started, messages, and findings (error
/// replies, plus the findings `codex-wire validate` reports through the library).
fn expected(path: &Path) -> (usize, usize, usize) {
    let e = entries(path);
    let turns = e
        .iter()
        .filter(|(_, v)| v["dir"] == "out" && v["msg"]["method"] == "turn/started")
        .count();
    let messages = e.iter().filter(|(_, v)| v.get("msg").is_some()).count();
    let errors = e
        .iter()
        .filter(|(_, v)| v["msg"]["error"].is_object() && v["msg"].get("method").is_none())
        .count();
    let bytes = std::fs::read(path).unwrap();
    let cfg = codex_wire::validate::Config {
        jobs: 1,
        ..Default::default()
    };
    let stats =
        codex_wire::validate::run(&bytes[..], None, "t", &cfg, &mut std::io::sink()).unwrap();
    (turns, messages, errors + stats.findings() as usize)
}

fn check_counts(dom: &str, path: &Path) {
    let (turns, messages, findings) = expected(path);
    assert_eq!(root_count(dom, "data-turns"), turns, "{}", path.display());
    assert_eq!(with_class(dom, "turn"), turns, "{}", path.display());
    assert_eq!(root_count(dom, "data-messages"), messages);
    assert_eq!(
        root_count(dom, "data-findings"),
        findings,
        "{}",
        path.display()
    );
    assert_eq!(with_class(dom, "finding"), findings, "{}", path.display());
}

#[test]
fn a_turn_with_an_approved_command() {
    let t0 = Instant::now();
    let src = turn("03_command_approved.real.jsonl");
    let page = show("03_command_approved", &[&src]);
    let d = dom(&page);
    check_counts(&d, &src);
    assert_eq!(root_count(&d, "data-turns"), 1);
    let e = entries(&src);
    // The server's approval request and the client's answer, linked both ways.
    let (req, _) = e
        .iter()
        .find(|(_, v)| v["msg"]["method"] == "item/commandExecution/requestApproval")
        .expect("an approval request");
    let (reply, _) = e
        .iter()
        .find(|(_, v)| v["dir"] == "in" && v["msg"]["result"]["decision"].is_string())
        .expect("the client's decision");
    assert!(
        tags(&d).any(|t| attr(t, "href") == Some(&format!("#L{reply}"))
            && attr(t, "class").is_some_and(|c| c.contains("to-reply"))),
        "no link from the request (line {req}) to its reply (line {reply})"
    );
    assert!(
        tags(&d).any(|t| attr(t, "href") == Some(&format!("#L{req}"))
            && attr(t, "class").is_some_and(|c| c.contains("to-request"))),
        "no link from the reply (line {reply}) to its request (line {req})"
    );
    // The client's requests too: `turn/start` and its result.
    let (start, _) = e
        .iter()
        .find(|(_, v)| v["msg"]["method"] == "turn/start")
        .unwrap();
    let start_id = &e.iter().find(|(n, _)| n == start).unwrap().1["msg"]["id"];
    let (result, _) = e
        .iter()
        .find(|(_, v)| {
            v["dir"] == "out" && &v["msg"]["id"] == start_id && v["msg"].get("result").is_some()
        })
        .unwrap();
    assert!(tags(&d).any(|t| attr(t, "href") == Some(&format!("#L{result}"))));
    // Deltas are folded into their item: one row per other line, the deltas in the block.
    let deltas = e
        .iter()
        .filter(|(_, v)| v["msg"]["method"] == "item/agentMessage/delta")
        .count();
    assert!(deltas > 0);
    assert_eq!(with_class(&d, "row"), e.len() - deltas);
    assert!(d.contains("Ran it."));
    // Process boundaries.
    assert_eq!(with_class(&d, "ev-spawn"), 1);
    assert_eq!(with_class(&d, "ev-exit"), 1);
    // A screenshot, kept as an artifact.
    let png = out_dir().join("03_command_approved.png");
    let _ = std::fs::remove_file(&png);
    browser(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1280,2000".into(),
        url(&page),
    ]);
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "{}: {size} bytes", png.display());
    eprintln!("approval page checked in {:.1?}", t0.elapsed());
}

#[test]
fn findings_at_their_lines() {
    let t0 = Instant::now();
    // Error replies and one the engine finds.
    let src = turn("40_fs_roundtrip.real.jsonl");
    let page = show("40_fs_roundtrip", &[&src]);
    let d = dom(&page);
    check_counts(&d, &src);
    assert!(root_count(&d, "data-findings") > 1);
    // Each error reply's finding is inside its line's row.
    for (n, v) in entries(&src) {
        if v["msg"]["error"].is_object() {
            let at = d.find(&format!("id=\"L{n}\"")).unwrap();
            let next_row = d[at..].find("class=\"row").unwrap_or(d.len() - at);
            assert!(
                d[at..at + next_row].contains("finding error-reply"),
                "line {n}"
            );
        }
    }
    eprintln!("findings page checked in {:.1?}", t0.elapsed());
}

#[test]
fn two_runs_the_first_difference_marked() {
    let t0 = Instant::now();
    let src = turn("22_compact.real.jsonl");
    let text = std::fs::read_to_string(&src).unwrap();
    // A copy with one value changed: the third usage report of four (the compaction sends
    // three identical ones, after the masking), so the page must mark the one `compare`
    // stopped at, not the first that looks like it.
    let at = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("\"thread/tokenUsage/updated\""))
        .map(|(i, _)| i)
        .nth(2)
        .expect("a third usage report");
    let changed: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == at {
                let c = l.replacen("\"outputTokens\":0", "\"outputTokens\":5", 1);
                assert_ne!(c, l);
                c
            } else {
                l.to_string()
            }
        })
        .collect();
    let other = out_dir().join("22_compact.changed.jsonl");
    std::fs::write(&other, changed.join("\n") + "\n").unwrap();
    let page = show(
        "22_compact.against_changed",
        &[&src, Path::new("--against"), &other],
    );
    let d = dom(&page);
    check_counts(&d, &src);
    // What the library says.
    let a = codex_wire::diff::masked(&text).unwrap();
    let b = codex_wire::diff::masked(&std::fs::read_to_string(&other).unwrap()).unwrap();
    let m = codex_wire::diff::compare(&a, &b).expect_err("the copy differs");
    let marks = with_id(&d, "first-difference");
    assert_eq!(marks.len(), 1, "one first-difference marker");
    let mark = marks[0];
    assert_eq!(attr(mark, "data-side"), Some("a"));
    assert_eq!(attr(mark, "data-index"), Some(m.index.to_string().as_str()));
    let line: usize = attr(mark, "data-line").unwrap().parse().unwrap();
    assert_eq!(line, at + 1, "the changed line is marked");
    // The marked line's message is the one compare reports (masked entries are the message
    // lines in order).
    let message_lines: Vec<usize> = entries(&src)
        .iter()
        .filter(|(_, v)| v["dir"].is_string() && v.get("msg").is_some())
        .map(|(n, _)| *n)
        .collect();
    let k = message_lines.iter().position(|n| *n == line).unwrap();
    assert_eq!(Some(&a[k]), m.a.as_ref());
    // The marker is visible, inside the marked line's row, and the verdict is in the header.
    let row = d.find(&format!("id=\"L{line}\"")).unwrap();
    let mark_at = d.find("id=\"first-difference\"").unwrap();
    assert!(mark_at > row && !d[row..mark_at].contains("class=\"row"));
    assert!(d.contains("⚑ first difference"));
    assert_eq!(root_attr(&d, "data-verdict"), "differ");
    assert!(d.contains(&format!("message {} differs", m.index)));
    eprintln!("two-run page checked in {:.1?}", t0.elapsed());
}

#[test]
fn a_run_against_itself_is_the_same_conversation() {
    let t0 = Instant::now();
    let src = turn("22_compact.real.jsonl");
    let page = show(
        "22_compact.against_itself",
        &[&src, Path::new("--against"), &src],
    );
    let d = dom(&page);
    check_counts(&d, &src);
    assert!(with_id(&d, "first-difference").is_empty());
    assert_eq!(root_attr(&d, "data-verdict"), "same");
    assert!(d.contains("same conversation"));
    eprintln!("same-run page checked in {:.1?}", t0.elapsed());
}

#[test]
fn bad_input_is_an_error_or_a_raw_line() {
    let dir = out_dir();
    // An unreadable file: exit 2, saying which.
    let out = Command::new(BIN)
        .args(["show", "no/such/file.jsonl", "-o"])
        .arg(dir.join("never.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/file.jsonl"));
    // Arbitrary bytes among real lines: a page, the bad lines shown raw.
    let mut bytes = std::fs::read(turn("03_command_approved.real.jsonl")).unwrap();
    bytes.extend_from_slice(b"\xff\xfe not json <b>\n{\"dir\":\"in\"}\n");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, &bytes).unwrap();
    let page = show("bad", &[&bad]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("class=\"row raw").count(), 2);
    assert!(html.contains("not json &lt;b&gt;"));
    // --against an unreadable file: exit 2; against garbage: a page, the verdict in it.
    let out = Command::new(BIN)
        .arg("show")
        .arg(turn("03_command_approved.real.jsonl"))
        .args(["--against", "no/such/other.jsonl", "-o"])
        .arg(dir.join("never.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let page = show(
        "against_bad",
        &[
            &turn("03_command_approved.real.jsonl"),
            Path::new("--against"),
            &bad,
        ],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("data-verdict=\"incomparable\""));
}

/// `examples/show/*.html` are what `codex-wire show` makes of the transcript each names (in its
/// title), today.
#[test]
fn the_example_pages_are_current() {
    let dir = root().join("examples/show");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "html") {
            continue;
        }
        let html = std::fs::read_to_string(&path).unwrap();
        let title = html
            .split("<title>codex-wire show: ")
            .nth(1)
            .and_then(|t| t.split("</title>").next())
            .expect("a title naming the transcript");
        let rel = path.strip_prefix(root()).unwrap();
        let out = Command::new(BIN)
            .current_dir(root())
            .args(["show", title, "-o", "-"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{title}");
        assert!(
            out.stdout == html.as_bytes(),
            "{} is stale: cargo run -- show {title} -o {}",
            rel.display(),
            rel.display()
        );
        n += 1;
    }
    assert!(n > 0);
}
