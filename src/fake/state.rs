//! The fake's files in the state dir, in the seed's formats:
//! `scenario.json` (read on use, so a harness may change it between runs), `threads.json`
//! (the rollout store, shared by every fake process on the dir) and `transcript.jsonl`.

use serde_json::{json, Value};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Locks a mutex even if a panicking thread poisoned it: the fake keeps serving.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The strings of a JSON array, owned (anything else in it skipped; not an array: none).
pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .map(str::to_string)
        .collect()
}

pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

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
///
/// Entries are appended at once, except while a transport holds them back ([`Transcript::hold`])
/// because more input is queued: then a whole batch goes out in one locked write. Whoever writes a
/// line to a peer flushes first ([`Transcript::flush`]), so a reply is never visible before its
/// entry is on disk.
pub struct Transcript {
    path: PathBuf,
    pid: u32,
    /// In-process writers take this; other processes are kept out by `flock` on the file.
    out: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// Transports holding entries back.
    held: usize,
    /// The file last written, with its device and inode: reopened when the path names another
    /// file (a harness removed or replaced it).
    file: Option<(File, u64, u64)>,
}

impl Transcript {
    pub fn new(path: PathBuf) -> Self {
        Transcript {
            path,
            pid: std::process::id(),
            out: Mutex::new(Pending::default()),
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.out.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends one entry. Never fails the caller: a transcript that cannot be written must not
    /// take the fake down (the client would see a crash it did not script).
    ///
    /// `entry` serializes as a JSON object (a map or a struct); its fields follow `pid` and `t`.
    pub fn record<E: serde::Serialize + ?Sized>(&self, entry: &E) {
        let t = now_secs_f64();
        let mut p = self.pending();
        let buf = &mut p.buf;
        buf.extend_from_slice(b"{\"pid\":");
        buf.extend_from_slice(itoa::Buffer::new().format(self.pid).as_bytes());
        buf.extend_from_slice(b",\"t\":");
        let _ = serde_json::to_writer(&mut *buf, &t);
        let at = buf.len();
        let written = serde_json::to_writer(&mut *buf, entry).is_ok();
        if written && buf.len() > at + 2 && buf[at] == b'{' {
            // The entry's own `{` becomes the separator after `t`.
            buf[at] = b',';
        } else {
            // Empty, or not an object: nothing of it is kept.
            buf.truncate(at);
            buf.push(b'}');
        }
        buf.push(b'\n');
        if p.held == 0 {
            self.write_out(&mut p);
        }
    }

    /// Holds entries back until the matching [`Transcript::release`].
    pub fn hold(&self) {
        self.pending().held += 1;
    }

    pub fn release(&self) {
        let mut p = self.pending();
        p.held = p.held.saturating_sub(1);
        if p.held == 0 {
            self.write_out(&mut p);
        }
    }

    /// Writes what is held back now.
    pub fn flush(&self) {
        self.write_out(&mut self.pending());
    }

    fn write_out(&self, p: &mut Pending) {
        use std::os::unix::fs::MetadataExt;
        if p.buf.is_empty() {
            return;
        }
        let same = match (&p.file, fs::metadata(&self.path)) {
            (Some((_, dev, ino)), Ok(m)) => m.dev() == *dev && m.ino() == *ino,
            _ => false,
        };
        if !same {
            p.file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .ok()
                .and_then(|f| {
                    let m = f.metadata().ok()?;
                    Some((f, m.dev(), m.ino()))
                });
        }
        if let Some((f, _, _)) = &mut p.file {
            // One write of whole lines under an exclusive lock: concurrent fake processes never
            // interleave partial lines.
            let _ = f.lock();
            let _ = f.write_all(&p.buf);
            let _ = f.unlock();
        }
        p.buf.clear();
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
