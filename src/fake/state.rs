//! The fake's files in the state dir, in the seed's formats:
//! `scenario.json` (read on use, so a harness may change it between runs), `threads.json`
//! (the rollout store, shared by every fake process on the dir) and `transcript.jsonl`.

use serde_json::{json, Map, Value};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the epoch as a float, the transcript's `t`.
pub fn now_secs_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub fn now_secs() -> i64 {
    now_secs_f64() as i64
}

pub fn now_ms() -> i64 {
    (now_secs_f64() * 1000.0) as i64
}

/// UTC calendar fields of a Unix time in seconds (the proleptic Gregorian algorithm).
pub fn civil(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `transcript.jsonl`: one JSON object per line, `pid` and `t` first.
pub struct Transcript {
    path: PathBuf,
    /// In-process writers take this; other processes are kept out by `flock` on the file.
    lock: Mutex<()>,
}

impl Transcript {
    pub fn new(path: PathBuf) -> Self {
        Transcript {
            path,
            lock: Mutex::new(()),
        }
    }

    /// Appends one entry. Never fails the caller: a transcript that cannot be written must not
    /// take the fake down (the client would see a crash it did not script).
    pub fn record(&self, entry: Value) {
        let mut obj = Map::new();
        obj.insert("pid".into(), json!(std::process::id()));
        obj.insert("t".into(), json!(now_secs_f64()));
        if let Value::Object(m) = entry {
            obj.extend(m);
        }
        let mut line = Value::Object(obj).to_string();
        line.push('\n');
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(mut f) = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        else {
            return;
        };
        // One write of the whole line under an exclusive lock: concurrent fake processes never
        // interleave partial lines.
        let _ = f.lock();
        let _ = f.write_all(line.as_bytes());
        let _ = f.unlock();
    }
}

/// `threads.json`: `{"threads": {id: {...}}, "turn_cursor": n}`.
pub struct Store {
    path: PathBuf,
    lock_path: PathBuf,
}

impl Store {
    pub fn new(dir: &Path) -> Self {
        Store {
            path: dir.join("threads.json"),
            lock_path: dir.join("threads.json.lock"),
        }
    }

    fn read(&self) -> Value {
        let data = fs::read_to_string(&self.path)
            .ok()
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .filter(Value::is_object);
        let mut data = data.unwrap_or_else(|| json!({}));
        if !data["threads"].is_object() {
            data["threads"] = json!({});
        }
        if !data["turn_cursor"].is_u64() {
            data["turn_cursor"] = json!(0);
        }
        data
    }

    /// A snapshot of the store.
    pub fn load(&self) -> Value {
        let _lock = self.lock_file();
        self.read()
    }

    /// Read-modify-write under an exclusive lock shared by all fake processes; the new file
    /// replaces the old one atomically, so a crash at any point leaves a whole store behind.
    pub fn update<R>(&self, f: impl FnOnce(&mut Value) -> R) -> R {
        let _lock = self.lock_file();
        let mut data = self.read();
        let r = f(&mut data);
        let tmp = self.path.with_extension(format!(
            "tmp.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let text = serde_json::to_string_pretty(&data).unwrap_or_default();
        if fs::write(&tmp, text).is_ok() {
            let _ = fs::rename(&tmp, &self.path);
        }
        r
    }

    fn lock_file(&self) -> Option<File> {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock_path)
            .ok()?;
        f.lock().ok()?;
        Some(f) // unlocked when dropped
    }
}

/// `scenario.json`, re-read on every use (missing or broken → defaults).
pub fn scenario(dir: &Path) -> Value {
    fs::read_to_string(dir.join("scenario.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}
