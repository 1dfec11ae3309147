"""The seed fake's harness scenarios with the official SDK as the client: tools + approval, resume
in a new process, resume fallback when the rollout is gone, native compaction, crash mid-turn,
interrupt, close.

Each scenario runs against ``codex-wire fake`` as the ``codex`` executable and, in real mode
(``--codex-real`` or ``$CODEX_WIRE_REAL_CODEX``, see the codex-wire pytest plugin), against the real ``codex app-server`` behind
``codex-wire scripted`` playing the same ``scenario.json``. Steps and assertions are the ones both
servers satisfy (the real server is the authority: commands really run, so they are harmless);
checks read the transcript, which both modes write. What only the fake can do (its
``crash`` and ``grandchild`` steps, ``threads.json``) is checked in fake mode and skipped, with
the reason, in real mode.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from openai_codex import Codex, CodexConfig, InvalidRequestError
from openai_codex.client import CodexClient
from openai_codex.errors import TransportClosedError
from openai_codex.generated.v2_all import TurnStatus

from codex_wire.plugin import fake_only, real_codex

REAL = real_codex() is not None
# The real server starts a node launcher, a native binary and its sqlite stores: generous waits.
WAIT = 60 if REAL else 10


def codex(fake, tmp_path, **kw) -> Codex:
    return Codex(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path), **kw))


def wait_for(cond, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def items(fake, kind: str) -> list[dict]:
    return [m["params"]["item"] for m in fake.sent("item/completed") if m["params"]["item"]["type"] == kind]


def result_of(fake, method: str) -> list[dict]:
    """The server's results to the client's ``method`` requests, in order."""
    ids = {m["id"] for m in fake.requests(method)}
    return [m["result"] for m in fake.sent() if m.get("id") in ids and "result" in m]


def test_tools_and_approval(make_fake, tmp_path):
    # Commands really run on the real server (and in the fake): only harmless ones, even declined.
    fake = make_fake([{"steps": [
        {"kind": "command", "command": "echo 3 passed", "output": "3 passed\n", "reason": "run the tests"},
        {"kind": "command", "command": "echo cleaning up", "output": "", "reason": "cleanup"},
        {"kind": "permissions", "reason": "network access"},
        {"kind": "message", "text": "Tests pass."},
    ]}])
    decisions = iter(["accept", "decline"])

    def approve(method, params):
        if method == "item/commandExecution/requestApproval":
            return {"decision": next(decisions)}
        if method == "item/permissions/requestApproval":
            return {"permissions": {}, "scope": "turn"}
        return {}

    client = CodexClient(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path)), approval_handler=approve)
    client.start()
    client.initialize()
    try:
        thread_id = client.thread_start().thread.id
        turn = client.turn_start(thread_id, "run the tests")
        wait_for(lambda: any(m["params"]["turn"]["id"] == turn.turn.id for m in fake.sent("turn/completed")),
                 "turn/completed")
    finally:
        client.close()
    commands = items(fake, "commandExecution")
    assert [i["status"] for i in commands] == ["completed", "declined"], commands
    assert commands[0]["aggregatedOutput"] == "3 passed\n"  # the real command's output
    assert commands[0]["exitCode"] == 0
    asked = [m["params"]["reason"] for m in fake.sent("item/commandExecution/requestApproval")]
    assert asked == ["run the tests", "cleanup"]
    (permissions,) = fake.sent("item/permissions/requestApproval")
    assert permissions["params"]["reason"] == "network access"
    assert len(fake.replies_to("item/permissions/requestApproval")) == 1
    assert [i["text"] for i in items(fake, "agentMessage")] == ["Tests pass."]
    (done,) = fake.sent("turn/completed")
    assert done["params"]["turn"]["status"] == "completed"
    fake.assert_wire_clean()


def test_resume_in_a_new_process(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "message", "text": "first answer"}]},
                      {"steps": [{"kind": "message", "text": "second answer"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        assert thread.run("one").final_response == "first answer"
    with codex(fake, tmp_path) as c:
        resumed = c.thread_resume(thread.id)
        assert resumed.run("two").final_response == "second answer"
        read = resumed.read(include_turns=True)
    assert len(set(fake.spawned_pids())) == 2
    # The second process found the first one's turn in the rollout, then added its own.
    (resume,) = result_of(fake, "thread/resume")
    assert resume["thread"]["id"] == thread.id
    assert [t["status"] for t in resume["thread"]["turns"]] == ["completed"]
    assert [t.status for t in read.thread.turns] == [TurnStatus.completed, TurnStatus.completed]
    assert fake.request_entries("thread/resume")[0]["pid"] == fake.spawned_pids()[1]
    if not REAL:
        assert len(fake.threads()[thread.id]["turns"]) == 2
    fake.assert_wire_clean()


def test_resume_fallback_when_the_rollout_is_gone(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "message", "text": "one"}]},
                      {"steps": [{"kind": "message", "text": "fresh start"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        thread.run("one")
    fake.forget_threads()  # the fake's forget_threads knob; the real rollout files deleted
    with codex(fake, tmp_path) as c:
        with pytest.raises(InvalidRequestError, match=f"no rollout found for thread id {thread.id}"):
            c.thread_resume(thread.id)
        # The client's fallback: a new thread.
        assert c.thread_start().run("again").final_response == "fresh start"
    fake.assert_wire_clean()


def test_native_compaction(make_fake, tmp_path):
    # The real server asks the model for the summary: a compaction takes the next scripted turn.
    fake = make_fake([{"steps": [{"kind": "message", "text": "long answer"}]},
                      {"steps": [{"kind": "message", "text": "summary of the conversation"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        thread.run("one")
        thread.compact()
        wait_for(lambda: len(fake.sent("turn/completed")) >= 2, "the compaction turn")
    assert "contextCompaction" in [m["params"]["item"]["type"] for m in fake.sent("item/completed")]
    assert [m["params"]["turn"]["status"] for m in fake.sent("turn/completed")] == ["completed", "completed"]
    fake.assert_wire_clean()


STALLED = [{"kind": "message", "text": "working", "chunks": 1}, {"kind": "sleep", "seconds": 20}]


def test_crash_mid_turn(make_fake, tmp_path):
    # The server process dies (SIGKILL) while the model is still streaming.
    fake = make_fake([{"steps": STALLED}, {"steps": [{"kind": "message", "text": "back"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        handle = thread.turn("go")
        outcome: list = []

        def run():
            try:
                outcome.append(handle.run())
            except Exception as e:  # noqa: BLE001 - the outcome is checked below
                outcome.append(e)

        reader = threading.Thread(target=run, daemon=True)
        reader.start()
        wait_for(lambda: fake.sent("item/agentMessage/delta"), "the first delta")
        (server,) = fake.server_pids()
        os.kill(server, signal.SIGKILL)
        reader.join(timeout=WAIT)
        assert not reader.is_alive(), "the SDK noticed the dead server"
    assert isinstance(outcome[0], (TransportClosedError, RuntimeError)), outcome
    assert not fake.sent("turn/completed")
    # The store survived: a new process resumes the thread and plays the next script.
    with codex(fake, tmp_path) as c:
        assert c.thread_resume(thread.id).run("again").final_response == "back"
    fake.assert_wire_clean()


def test_crash_step(make_fake, tmp_path):
    fake_only("the `crash` step (the server exits with a chosen code and stderr)")
    fake = make_fake([{"steps": [
        {"kind": "message", "text": "I was about to", "chunks": 1},
        {"kind": "crash", "code": 7, "stderr": "codex: segfault (fake)"},
    ]}, {"steps": [{"kind": "message", "text": "back"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        with pytest.raises((TransportClosedError, RuntimeError)):
            thread.run("go")
    assert fake.events("crash")[0]["code"] == 7
    with codex(fake, tmp_path) as c:
        assert c.thread_resume(thread.id).run("again").final_response == "back"
    fake.assert_wire_clean()


def test_interrupt(make_fake, tmp_path):
    fake = make_fake([{"steps": STALLED}])
    with codex(fake, tmp_path) as c:
        handle = c.thread_start().turn("work slowly")
        result: list = []
        reader = threading.Thread(target=lambda: result.append(handle.run()), daemon=True)
        reader.start()
        wait_for(lambda: fake.sent("item/agentMessage/delta"), "the first delta")
        handle.interrupt()
        reader.join(timeout=WAIT)
        assert not reader.is_alive()
    assert result[0].status == TurnStatus.interrupted
    (done,) = fake.sent("turn/completed")
    assert done["params"]["turn"]["status"] == "interrupted"
    fake.assert_wire_clean()


def test_close_is_recorded(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "message", "text": "done"}]}])
    with codex(fake, tmp_path) as c:
        assert c.thread_start().run("hi").final_response == "done"
    # Codex.close() closes stdin then terminates the process.
    assert fake.events("stdin_eof") or any(e.get("how") == "SIGTERM" for e in fake.events("exit"))
    wait_for(lambda: fake.events("exit"), "the exit event")
    fake.assert_wire_clean()


def test_grandchild_recorded(make_fake, tmp_path):
    fake_only("the `grandchild` step (a detached process the server leaves behind)")
    fake = make_fake([{"steps": [{"kind": "grandchild"}, {"kind": "message", "text": "spawned"}]}])
    with codex(fake, tmp_path) as c:
        c.thread_start().run("spawn")
    assert fake.events("stdin_eof") or any(e.get("how") == "SIGTERM" for e in fake.events("exit"))
    (child,) = fake.grandchild_pids()
    assert os.getsid(child) == child  # its own session, like codex's stdio MCP servers
    fake.assert_wire_clean()
