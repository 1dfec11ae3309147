"""The seed fake's harness scenarios, driving ``codex-wire fake`` as the ``codex`` executable with
the official SDK as the client: tools + approval, resume in a new process, resume fallback with
``forget_threads``, native compaction, crash mid-turn, interrupt."""

from __future__ import annotations

import os
import threading
import time

import pytest

from openai_codex import Codex, CodexConfig, InvalidRequestError
from openai_codex.errors import TransportClosedError
from openai_codex.generated.v2_all import TurnStatus


def codex(fake, tmp_path, **kw) -> Codex:
    return Codex(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path), **kw))


def test_tools_and_approval(make_fake, tmp_path):
    fake = make_fake([{"steps": [
        {"kind": "command", "command": "pytest -q", "output": "3 passed\n"},
        {"kind": "command", "command": "rm -rf /", "output": "", "reason": "cleanup"},
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

    from openai_codex.client import CodexClient
    client = CodexClient(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path)), approval_handler=approve)
    client.start()
    client.initialize()
    try:
        thread_id = client.thread_start().thread.id
        turn = client.turn_start(thread_id, "run the tests")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                m["params"]["turn"]["id"] == turn.turn.id for m in fake.sent("turn/completed")):
            time.sleep(0.05)
    finally:
        client.close()
    items = [m["params"]["item"] for m in fake.sent("item/completed")
             if m["params"]["item"]["type"] == "commandExecution"]
    assert [i["status"] for i in items] == ["completed", "declined"]
    assert len(fake.replies_to("item/permissions/requestApproval")) == 1
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
    assert len(set(fake.spawned_pids())) == 2
    assert len(fake.threads()[thread.id]["turns"]) == 2
    resume = fake.requests("thread/resume")
    assert resume and resume[0]["pid"] == fake.spawned_pids()[1]
    fake.assert_wire_clean()


def test_resume_fallback_with_forget_threads(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "message", "text": "one"}]},
                      {"steps": [{"kind": "message", "text": "fresh start"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        thread.run("one")
    fake.set_scenario(forget_threads=True)
    with codex(fake, tmp_path) as c:
        with pytest.raises(InvalidRequestError, match=f"no rollout found for thread id {thread.id}"):
            c.thread_resume(thread.id)
        # The client's fallback: a new thread.
        assert c.thread_start().run("again").final_response == "fresh start"
    fake.assert_wire_clean()


def test_native_compaction(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "message", "text": "long answer"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        thread.run("one")
        thread.compact()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(fake.sent("turn/completed")) < 2:
            time.sleep(0.05)
    kinds = [m["params"]["item"]["type"] for m in fake.sent("item/completed")]
    assert "contextCompaction" in kinds
    fake.assert_wire_clean()


def test_crash_mid_turn(make_fake, tmp_path):
    fake = make_fake([{"steps": [
        {"kind": "message_partial", "text": "I was about to"},
        {"kind": "crash", "code": 7, "stderr": "codex: segfault (fake)"},
    ]}, {"steps": [{"kind": "message", "text": "back"}]}])
    with codex(fake, tmp_path) as c:
        thread = c.thread_start()
        with pytest.raises((TransportClosedError, RuntimeError)):
            thread.run("go")
    assert fake.events("crash")[0]["code"] == 7
    # The store survived: a new process resumes the thread and plays the next script.
    with codex(fake, tmp_path) as c:
        assert c.thread_resume(thread.id).run("again").final_response == "back"
    fake.assert_wire_clean()


def test_interrupt(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "progress", "seconds": 20, "interval": 0.05}]}])
    with codex(fake, tmp_path) as c:
        handle = c.thread_start().turn("work slowly")
        result: list = []
        reader = threading.Thread(target=lambda: result.append(handle.run()))
        reader.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not fake.sent("item/agentMessage/delta"):
            time.sleep(0.02)
        handle.interrupt()
        reader.join(timeout=10)
    assert result[0].status == TurnStatus.interrupted
    fake.assert_wire_clean()


def test_sigterm_and_grandchild_recorded(make_fake, tmp_path):
    fake = make_fake([{"steps": [{"kind": "grandchild"}, {"kind": "message", "text": "spawned"}]}])
    with codex(fake, tmp_path) as c:
        c.thread_start().run("spawn")
    # Codex.close() closes stdin then terminates the process.
    assert fake.events("stdin_eof") or any(e.get("how") == "SIGTERM" for e in fake.events("exit"))
    (child,) = fake.grandchild_pids()
    assert os.getsid(child) == child  # its own session, like codex's stdio MCP servers
    fake.assert_wire_clean()
