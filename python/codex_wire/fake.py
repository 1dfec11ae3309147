"""One fake codex install for a test: a state dir and a ``codex`` executable.

An install is a state dir (``scenario.json``, ``threads.json``, ``transcript.jsonl``) plus a
``codex`` wrapper script that execs ``codex-wire fake --state-dir DIR "$@"``, so any client that
launches ``codex app-server`` (an SDK given ``codex_bin``, a tool that finds ``codex`` on
``PATH``) runs the fake instead.

Real mode (``real=PATH``): the wrapper execs ``codex-wire scripted --state-dir DIR -- PATH "$@"``
instead: the real server, driven by the scripted model playing the same ``scenario.json``, behind
the proxy that writes the same ``transcript.jsonl``. Both modes get the same ``CODEX_HOME``
(``DIR/codex-home``, with the config.toml the turn corpus uses) and a cleaned environment (no
``CODEX*``/``OPENAI*`` of the machine). ``threads.json`` and the fake's own events exist only in
fake mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sysconfig
import time
from pathlib import Path
from typing import Any, Iterable, Optional

from .steps import check_turns




def binary() -> str:
    """The ``codex-wire`` executable: ``$CODEX_WIRE_BIN``, else the one this package installed
    (the wheel puts it next to the interpreter's scripts), else ``codex-wire`` on ``PATH``."""
    path = os.environ.get("CODEX_WIRE_BIN")
    if path:
        return path
    installed = Path(sysconfig.get_path("scripts")) / "codex-wire"
    if installed.is_file():
        return str(installed)
    found = shutil.which("codex-wire")
    if found:
        return found
    raise RuntimeError("no codex-wire executable: install the codex-wire wheel, or set CODEX_WIRE_BIN")


def codex_versions() -> list[str]:
    """The codex versions the binary speaks, oldest first (the last is the default)."""
    out = subprocess.run([binary(), "versions"], capture_output=True, text=True, check=True)
    return out.stdout.split()


class WireError(AssertionError):
    """The client sent something the real server refuses or silently drops."""


class FakeCodex:
    """One fake codex install: wrapper executable + state dir, and readers over the transcript.

    ``turns``: one script per ``turn/start`` (dicts, or built with :mod:`codex_wire.steps`),
    checked before anything runs. ``real``: run the real binary at that path with the scripted
    model instead. ``version``: the codex version the fake answers as (default: the newest).
    """

    def __init__(
        self,
        root: Path,
        turns: Iterable[Any] = (),
        *,
        real: Optional[str] = None,
        version: Optional[str] = None,
        **scenario: Any,
    ) -> None:
        turns = check_turns(turns)
        # The install (state dir, CODEX_HOME and its config.toml, the `codex` wrapper) is the
        # binary's: one implementation for every helper.
        args = [binary(), "install", str(root)]
        if real:
            args += ["--real", str(real)]
        if version:
            args += ["--codex-version", version]
        made = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
        self.state_dir = Path(made["state_dir"])
        self.bin = Path(made["bin"])
        self.codex_home = Path(made["codex_home"])
        self.grandchild_release = made["grandchild_release"]
        (self.state_dir / "scenario.json").write_text(json.dumps({"turns": turns, **scenario}), encoding="utf-8")
        self.real = real

    @property
    def path_dir(self) -> str:
        """The directory of the ``codex`` executable, to put first on ``PATH``."""
        return str(self.bin.parent)

    @property
    def version(self) -> str:
        """The codex version the server answers as (what its ``--version`` says)."""
        cmd = [self.real] if self.real else [str(self.bin)]
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, check=True)
        return out.stdout.split()[-1]

    def script(self, *turns: Any) -> "FakeCodex":
        """Sets the turns (checked now): one script per ``turn/start``."""
        self.set_scenario(turns=check_turns(turns))
        return self

    def load_recording(self, path: str | Path) -> "FakeCodex":
        """Plays the model's answers of a recording (``codex-wire record --out DIR``):
        ``DIR/scenario.json``, as written by the recorder (raw events included: the fake plays them
        as the real server does). Your client then drives the session."""
        scenario = json.loads((Path(path) / "scenario.json").read_text(encoding="utf-8"))
        (self.state_dir / "scenario.json").write_text(json.dumps(scenario), encoding="utf-8")
        return self

    def set_scenario(self, **changes: Any) -> None:
        path = self.state_dir / "scenario.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data.update(changes)
        path.write_text(json.dumps(data), encoding="utf-8")

    # Two kinds of readers: `requests` and `sent` return JSON-RPC messages (what went over the
    # wire); the others return transcript entries (`{"pid", "t", "dir", "msg", "violation",
    # "ignored", "reply_to"}` or events), for what the fake judged and who sent it.

    def entries(self) -> list[dict]:
        """Every transcript entry, in order."""
        path = self.state_dir / "transcript.jsonl"
        if not path.exists():
            return []
        # A fake may be writing now: text after the last newline is an entry still being written.
        whole = path.read_text(encoding="utf-8").split("\n")[:-1]
        return [json.loads(line) for line in whole if line.strip()]

    def request_entries(self, method: Optional[str] = None) -> list[dict]:
        """Transcript entries of the client's requests, optionally one method."""
        return [e for e in self.entries() if e.get("dir") == "in" and "method" in e.get("msg", {})
                and "id" in e["msg"] and (method is None or e["msg"]["method"] == method)]

    def requests(self, method: Optional[str] = None) -> list[dict]:
        """The client's requests (messages), optionally one method."""
        return [e["msg"] for e in self.request_entries(method)]

    def sent(self, method: Optional[str] = None) -> list[dict]:
        """Messages the fake wrote, optionally one method."""
        return [e["msg"] for e in self.entries() if e.get("dir") == "out"
                and (method is None or e["msg"].get("method") == method)]

    def replies_to(self, server_method: str) -> list[dict]:
        """Transcript entries of the client's answers to one kind of server request."""
        return [e for e in self.entries() if e.get("reply_to") == server_method]

    def violations(self) -> list[dict]:
        """Transcript entries the real server would refuse or never expect."""
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
        """The fake's rollout store (fake mode only: the real server keeps its own)."""
        assert not self.real, "threads.json is the fake's; the real server keeps rollouts in CODEX_HOME"
        path = self.state_dir / "threads.json"
        return json.loads(path.read_text(encoding="utf-8"))["threads"] if path.exists() else {}

    def server_pids(self) -> list[int]:
        """The processes that serve the protocol: the fake itself, or the real native codex
        (the npm launcher under ``scripted`` spawns it as its child)."""
        if not self.real:
            return self.spawned_pids()
        def exe(pid: int) -> str:
            # A process of an earlier spawn may be gone already: it serves nothing.
            try:
                return os.readlink(f"/proc/{pid}/exe")
            except OSError:
                return ""

        return [p for launcher in self.spawned_pids() for p in [launcher, *descendants(launcher)]
                if exe(p).endswith("/codex")]

    def forget_threads(self) -> None:
        """Make every thread unknown to the next server process: the fake's ``forget_threads``
        knob, or on the real server the rollouts deleted from ``CODEX_HOME``."""
        if not self.real:
            self.set_scenario(forget_threads=True)
            return
        for rollout in (self.codex_home / "sessions").rglob("rollout-*.jsonl"):
            rollout.unlink()

    def wire_problems(self, allow: Iterable[str] = ()) -> list[str]:
        """What the client sent that the real server refuses (violations) or silently drops
        (ignored fields), one line each with the JSON path; ``allow``: glob patterns of ignored
        paths the test accepts, as ``codex-wire validate --allow-ignored`` reads them (``*``
        within one path segment, ``**`` anything, a pattern without ``$`` rooted:
        ``params.input[*].extra``, ``$.jsonrpc``). Judged by the binary (``codex-wire
        wire-check``): a pattern means one thing in every helper."""
        args = [binary(), "wire-check", str(self.state_dir / "transcript.jsonl")]
        for pattern in allow:
            args += ["--allow-ignored", pattern]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode not in (0, 1):
            raise RuntimeError(f"codex-wire wire-check failed: {out.stderr.strip()}")
        return [line for line in out.stdout.splitlines() if line]

    def assert_wire_clean(self, allow: Iterable[str] = ()) -> None:
        """Every request/response the client sent is valid AND carries no field codex drops."""
        problems = self.wire_problems(allow)
        if problems:
            raise WireError("the client sent what the real codex refuses or drops:\n  " + "\n  ".join(problems))

    def cleanup(self) -> None:
        (self.state_dir / self.grandchild_release).touch()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(pid_alive(p) for p in self.grandchild_pids()):
            time.sleep(0.05)
        pids = self.spawned_pids() + self.grandchild_pids()
        for pid in pids + [d for p in pids for d in descendants(p)]:
            if pid_alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
