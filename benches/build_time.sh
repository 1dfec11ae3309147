#!/usr/bin/env bash
# Build cost side by side: a clean `cargo build --release --bin codex-wire` of REV (default:
# 3db71a4, the last single-version build) and of HEAD, each in a worktree with its own target
# dir, then an incremental release rebuild after touching src/engine.rs; binary sizes, stripped
# too. Usage: benches/build_time.sh [REV]. Takes ~10 minutes on 2 cores; run it on an idle machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
before="${1:-3db71a4}"
work="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$work/before" 2>/dev/null || true;
      git -C "$root" worktree remove --force "$work/after" 2>/dev/null || true; rm -rf "$work"' EXIT
git -C "$root" worktree add -q "$work/before" "$before"
git -C "$root" worktree add -q "$work/after" HEAD
for side in before after; do
  cd "$work/$side"
  s=$(date +%s.%N); CARGO_TARGET_DIR=target-m cargo build --release --bin codex-wire >/dev/null 2>&1; e=$(date +%s.%N)
  bin=target-m/release/codex-wire
  strip -o "$work/$side.stripped" "$bin"
  echo "$side: clean release build $(echo "$e - $s" | bc) s; binary $(stat -c %s "$bin") bytes, stripped $(stat -c %s "$work/$side.stripped")"
  touch src/engine.rs
  s=$(date +%s.%N); CARGO_TARGET_DIR=target-m cargo build --release --bin codex-wire >/dev/null 2>&1; e=$(date +%s.%N)
  echo "$side: incremental release rebuild after touching src/engine.rs $(echo "$e - $s" | bc) s"
done
