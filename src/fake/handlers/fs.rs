//! `fs/*`: the client's file operations, done for real on this machine as codex's `fs_api.rs`
//! does them (`codex-rs/app-server/src/fs_api.rs`): an I/O error is `-32603` with the OS error's
//! text, a refused request `-32600`; `recursive` and `force` default to true. Shown by
//! `tests/corpus/turns/40_fs_roundtrip` on every version.

use super::view::H;
use crate::fake::defaults;
use crate::fake::rpc::INTERNAL_PREFIX;
use base64::Engine;
use serde_json::{json, Value};
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// An I/O error as codex reports it (`map_io_error`: internal error, the error's own text).
fn io(e: std::io::Error) -> String {
    format!("{INTERNAL_PREFIX}{e}")
}

fn path<'a>(params: &'a Value, key: &str) -> &'a Path {
    Path::new(params[key].as_str().unwrap_or_default())
}

fn flag(params: &Value, key: &str) -> bool {
    params[key].as_bool().unwrap_or(true)
}

fn unix_ms(t: std::io::Result<SystemTime>) -> i64 {
    t.ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok())
        .unwrap_or(0)
}

impl H<'_> {
    /// A result as the version's real server writes it (its key order).
    fn fs_result(&self, id: &Value, method: &str, v: Value) -> Result<(), String> {
        self.result(id, defaults::shaped(self.fake.protocol, method, v));
        Ok(())
    }

    pub(super) fn fs_read_file(&self, id: &Value, p: &Value) -> Result<(), String> {
        let at = path(p, "path");
        // Anything but a file is refused by name (0.171.0, 40_fs_roundtrip).
        if !std::fs::metadata(at).map_err(io)?.is_file() {
            return Err(format!("path `{}` is not a file", at.display()));
        }
        let bytes = std::fs::read(at).map_err(io)?;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.fs_result(id, "fs/readFile", json!({"dataBase64": data}))
    }

    pub(super) fn fs_write_file(&self, id: &Value, p: &Value) -> Result<(), String> {
        let data = p["dataBase64"].as_str().unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("fs/writeFile requires valid base64 dataBase64: {e}"))?;
        let to = path(p, "path");
        std::fs::write(to, bytes).map_err(io)?;
        // codex reads its `config.toml` again where it loads its configuration: the file as
        // now written counts from the next load (turn scenario 250).
        if to == self.fake.codex_home.join("config.toml") {
            self.fake.reload_config();
        }
        self.fs_result(id, "fs/writeFile", json!({}))
    }

    pub(super) fn fs_create_directory(&self, id: &Value, p: &Value) -> Result<(), String> {
        let at = path(p, "path");
        if flag(p, "recursive") {
            std::fs::create_dir_all(at).map_err(io)?;
        } else {
            std::fs::create_dir(at).map_err(io)?;
        }
        self.fs_result(id, "fs/createDirectory", json!({}))
    }

    /// A creation time is never reported (0 on every version here, where the file system
    /// keeps one).
    pub(super) fn fs_get_metadata(&self, id: &Value, p: &Value) -> Result<(), String> {
        let at = path(p, "path");
        let m = std::fs::metadata(at).map_err(io)?;
        let link = std::fs::symlink_metadata(at).is_ok_and(|l| l.file_type().is_symlink());
        self.fs_result(
            id,
            "fs/getMetadata",
            json!({"isDirectory": m.is_dir(), "isFile": m.is_file(), "isSymlink": link,
                   "createdAtMs": 0, "modifiedAtMs": unix_ms(m.modified())}),
        )
    }

    pub(super) fn fs_read_directory(&self, id: &Value, p: &Value) -> Result<(), String> {
        let mut entries = Vec::new();
        // The directory's own order, as codex reads it.
        for e in std::fs::read_dir(path(p, "path")).map_err(io)? {
            let e = e.map_err(io)?;
            let t = std::fs::metadata(e.path()).ok();
            entries.push(json!({"fileName": e.file_name().to_string_lossy(),
                                "isDirectory": t.as_ref().is_some_and(|t| t.is_dir()),
                                "isFile": t.as_ref().is_some_and(|t| t.is_file())}));
        }
        self.fs_result(id, "fs/readDirectory", json!({"entries": entries}))
    }

    pub(super) fn fs_remove(&self, id: &Value, p: &Value) -> Result<(), String> {
        let at = path(p, "path");
        match std::fs::symlink_metadata(at) {
            Ok(m) if m.is_dir() && flag(p, "recursive") => {
                std::fs::remove_dir_all(at).map_err(io)?
            }
            Ok(m) if m.is_dir() => std::fs::remove_dir(at).map_err(io)?,
            Ok(_) => std::fs::remove_file(at).map_err(io)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && flag(p, "force") => {}
            Err(e) => return Err(io(e)),
        }
        self.fs_result(id, "fs/remove", json!({}))
    }

    pub(super) fn fs_copy(&self, id: &Value, p: &Value) -> Result<(), String> {
        let (from, to) = (path(p, "sourcePath"), path(p, "destinationPath"));
        let t = std::fs::symlink_metadata(from).map_err(io)?.file_type();
        if t.is_dir() {
            if p["recursive"].as_bool() != Some(true) {
                return Err(
                    "fs/copy requires recursive: true when sourcePath is a directory".into(),
                );
            }
            if same_or_inside(from, to).map_err(io)? {
                return Err(
                    "fs/copy cannot copy a directory to itself or one of its descendants".into(),
                );
            }
            copy_dir(from, to).map_err(io)?;
        } else if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(from).map_err(io)?, to).map_err(io)?;
        } else if t.is_file() {
            std::fs::copy(from, to).map_err(io)?;
        } else {
            return Err("fs/copy only supports regular files, directories, and symlinks".into());
        }
        self.fs_result(id, "fs/copy", json!({}))
    }

    /// The watch's result: the path it watches (no change notifications are modeled).
    pub(super) fn fs_watch(&self, id: &Value, p: &Value) -> Result<(), String> {
        self.fs_result(id, "fs/watch", json!({"path": p["path"]}))
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type()?;
        if t.is_dir() {
            copy_dir(&src, &dst)?;
        } else if t.is_file() {
            std::fs::copy(&src, &dst)?;
        } else if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        }
        // Special files (FIFOs, sockets, devices) are left out, as codex leaves them.
    }
    Ok(())
}

/// Whether `to` is `from` or inside it: `from` resolved, `to` normalized and resolved as far as
/// it exists.
fn same_or_inside(from: &Path, to: &Path) -> std::io::Result<bool> {
    let from = std::fs::canonicalize(from)?;
    let mut normal = PathBuf::new();
    for c in to.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            c => normal.push(c.as_os_str()),
        }
    }
    let mut rest = Vec::new();
    let mut existing = normal.as_path();
    while !existing.exists() {
        let (Some(name), Some(parent)) = (existing.file_name(), existing.parent()) else {
            break;
        };
        rest.push(name.to_os_string());
        existing = parent;
    }
    let mut resolved = std::fs::canonicalize(existing)?;
    resolved.extend(rest.iter().rev());
    Ok(resolved.starts_with(&from))
}
