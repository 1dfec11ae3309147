"""Test-side harness for ``codex-wire fake`` (a port of the seed fake's ``FakeCodex``).

One install = a state dir (``scenario.json``, ``threads.json``, ``transcript.jsonl``) plus a
``codex`` wrapper script that execs ``codex-wire fake --state-dir DIR "$@"``, so any client
that launches ``codex app-server`` runs the fake instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any, Optional

GRANDCHILD_RELEASE = "release-grandchildren"


def fake_binary() -> str:
    path = os.environ.get("CODEX_WIRE_BIN")
    if not path:
        raise RuntimeError("set CODEX_WIRE_BIN to the codex-wire binary (cargo test does)")
    return path


class FakeCodex:
    """One fake codex install: wrapper executable + state dir, and readers over the transcript."""

    def __init__(self, root: Path, turns: list[dict], **scenario: Any) -> None:
        self.state_dir = root / "fake_codex"
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "scenario.json").write_text(json.dumps({"turns": turns, **scenario}), encoding="utf-8")
        self.bin = root / "bin" / "codex"
        self.bin.parent.mkdir(parents=True, exist_ok=True)
        self.bin.write_text(f'#!/bin/sh\nexec "{fake_binary()}" fake --state-dir "{self.state_dir}" "$@"\n',
                            encoding="utf-8")
        self.bin.chmod(0o755)

    def set_scenario(self, **changes: Any) -> None:
        path = self.state_dir / "scenario.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data.update(changes)
        path.write_text(json.dumps(data), encoding="utf-8")

    def entries(self) -> list[dict]:
        path = self.state_dir / "transcript.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def requests(self, method: Optional[str] = None) -> list[dict]:
        return [e for e in self.entries() if e.get("dir") == "in" and "method" in e.get("msg", {})
                and "id" in e["msg"] and (method is None or e["msg"]["method"] == method)]

    def sent(self, method: Optional[str] = None) -> list[dict]:
        """Messages the fake wrote, optionally one method."""
        return [e["msg"] for e in self.entries() if e.get("dir") == "out"
                and (method is None or e["msg"].get("method") == method)]

    def replies_to(self, server_method: str) -> list[dict]:
        return [e for e in self.entries() if e.get("reply_to") == server_method]

    def violations(self) -> list[dict]:
        return [e for e in self.entries() if e.get("violation")]

    def ignored_fields(self) -> list[tuple[str, str]]:
        return [(str(e["msg"].get("method") or e.get("reply_to")), path) for e in self.entries()
                for path in e.get("ignored") or []]

    def events(self, name: str) -> list[dict]:
        return [e for e in self.entries() if e.get("event") == name]

    def spawned_pids(self) -> list[int]:
        return [e["pid"] for e in self.events("spawn")]

    def grandchild_pids(self) -> list[int]:
        return [e["child_pid"] for e in self.events("grandchild")]

    def threads(self) -> dict:
        path = self.state_dir / "threads.json"
        return json.loads(path.read_text(encoding="utf-8"))["threads"] if path.exists() else {}

    def assert_wire_clean(self) -> None:
        """Every request/response the client sent is valid AND carries no field codex drops."""
        assert not self.violations(), f"protocol violations: {self.violations()}"
        assert not self.ignored_fields(), f"fields codex ignores: {self.ignored_fields()}"

    def cleanup(self) -> None:
        (self.state_dir / GRANDCHILD_RELEASE).touch()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(pid_alive(p) for p in self.grandchild_pids()):
            time.sleep(0.05)
        for pid in self.spawned_pids() + self.grandchild_pids():
            if pid_alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
