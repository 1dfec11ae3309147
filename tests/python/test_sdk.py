"""The official Python SDK (openai-codex 0.163.0) against ``codex-wire fake`` as its codex binary."""

from __future__ import annotations

import threading
import time

import pytest

from openai_codex import Codex, CodexConfig
from openai_codex._goal import _GoalNotificationStream
from openai_codex._run import _collect_turn_result
from openai_codex.client import CodexClient
from openai_codex.generated.v2_all import TurnStatus

from codex_wire.plugin import fake_only

APPROVED_TURN = {"steps": [
    {"kind": "reasoning", "summary": ["Listing the files first."]},
    {"kind": "command", "command": "ls", "output": "README.md\nsrc\n", "reason": "look around"},
    {"kind": "message", "text": "The project has a README and a src directory.", "chunks": 4},
    {"kind": "usage", "input": 120, "cached": 20, "output": 30},
]}


def test_thread_and_turn_with_command_approval_and_streamed_answer(make_fake, tmp_path):
    fake = make_fake([APPROVED_TURN])
    with Codex(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path))) as codex:
        assert codex.metadata.serverInfo.version.startswith(fake.version)
        thread = codex.thread_start()
        handle = thread.turn("What is in this project?")
        events = list(handle.stream())
    methods = [e.method for e in events]
    assert methods[0] == "turn/started" and methods[-1] == "turn/completed"
    deltas = [e.payload.delta for e in events if e.method == "item/agentMessage/delta"]
    assert "".join(deltas) == "The project has a README and a src directory."
    assert len(deltas) == 4
    # The SDK starts threads with `approvalsReviewer: "auto_review"`: as on the real server, the
    # approval goes to codex's automatic reviewer (approving here), never to the client.
    assert fake.replies_to("item/commandExecution/requestApproval") == []
    reviews = fake.sent("item/autoApprovalReview/completed")
    assert [r["params"]["review"]["status"] for r in reviews] == ["approved"]
    completed = [e for e in fake.sent("item/completed") if e["params"]["item"]["type"] == "commandExecution"]
    assert completed[0]["params"]["item"]["status"] == "completed"
    fake.assert_wire_clean()


def test_thread_run_returns_final_answer_and_usage(make_fake, tmp_path):
    fake = make_fake([APPROVED_TURN])
    with Codex(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path))) as codex:
        result = codex.thread_start().run("What is in this project?")
    assert result.status == TurnStatus.completed
    assert result.final_response == "The project has a README and a src directory."
    assert result.usage.total.total_tokens == 150
    fake.assert_wire_clean()


GOAL_TURN = {
    "steps": [
        {"kind": "message", "text": "working", "phase": "commentary"},
        {"kind": "usage", "input": 2, "cached": 1, "output": 3},
    ],
    "continuations": [{"steps": [
        {"kind": "message", "text": "done", "phase": "final_answer"},
        {"kind": "usage", "input": 20, "cached": 10, "output": 30},
    ]}],
}


def _client(fake, tmp_path) -> CodexClient:
    client = CodexClient(CodexConfig(codex_bin=str(fake.bin), cwd=str(tmp_path)))
    client.start()
    client.initialize()
    return client


def _goal_stream(client: CodexClient, state) -> _GoalNotificationStream:
    return _GoalNotificationStream(
        state,
        next_notification=lambda: client.next_goal_notification(state),
        unregister=lambda: client.unregister_goal_operation(state),
        cancel_goal=lambda: client.cancel_goal_operation(state),
    )


def test_goal_turn_over_two_server_turns_is_one_logical_result(make_fake, tmp_path):
    fake_only("goal continuation turns scripted by `continuations`")
    fake = make_fake([GOAL_TURN])
    client = _client(fake, tmp_path)
    try:
        thread_id = client.thread_start().thread.id
        state, turn_id = client.start_goal_operation(thread_id, "Improve benchmark coverage")
        result = _collect_turn_result(_goal_stream(client, state), turn_id=turn_id)
    finally:
        client.close()
    assert result.id == turn_id
    assert result.status == TurnStatus.completed
    assert result.final_response == "done"
    assert result.usage.total.total_tokens == 55  # (2+3) + (20+30): summed over both server turns
    physical = {m["params"]["turn"]["id"] for m in fake.sent("turn/completed")}
    assert len(physical) == 2
    statuses = [m["params"]["goal"]["status"] for m in fake.sent("thread/goal/updated")]
    assert statuses[0] == "active" and statuses[-1] == "complete"
    assert [r["method"] for r in fake.requests()][:5] == [
        "initialize", "thread/start", "thread/read", "thread/goal/clear", "thread/goal/set"]
    fake.assert_wire_clean()


def _steer_echo(fake, turn_id: str) -> list:
    """The userMessage items the fake completed in `turn_id`."""
    return [m for m in fake.sent("item/completed") if m["params"]["item"]["type"] == "userMessage"
            and m["params"]["turnId"] == turn_id]


def test_goal_steer_and_interrupt_during_rollover(make_fake, tmp_path):
    fake_only("goal rollover scripted by `continuations` and `rollover_ms`")
    # The continuation's answer is asked for again after the steer: both responses are long, so
    # the interrupt finds the turn running however slowly the client gets to it.
    long = [{"kind": "progress", "seconds": 20, "interval": 0.05}]
    slow = {"steps": [{"kind": "message", "text": "first"}],
            "continuations": [{"steps": [], "responses": [long, long]}],
            "rollover_ms": 300}
    fake = make_fake([slow])
    client = _client(fake, tmp_path)
    try:
        thread_id = client.thread_start().thread.id
        state, first = client.start_goal_operation(thread_id, "keep going")
        stream = _goal_stream(client, state)
        collected: list = []
        # A daemon: should the turn never end, the test fails instead of holding pytest open.
        reader = threading.Thread(
            target=lambda: collected.append(_collect_turn_result(stream, turn_id=first)), daemon=True)
        reader.start()
        # Waits through the rollover for the continuation turn, as the SDK's goal controls do.
        second = state.active_turn(after=first)
        assert second is not None and second != first
        steered = client.turn_steer(thread_id, second, "and keep it short")
        assert steered.turn_id == second
        # The steered input is recorded where the stream pauses (as codex takes it); an interrupt
        # sent before that abandons it unrecorded, so the test waits for its echo, however
        # slowly a loaded machine runs the turn (CI once interrupted first).
        deadline = time.monotonic() + 10
        while not _steer_echo(fake, second) and time.monotonic() < deadline:
            time.sleep(0.01)
        client.pause_goal(thread_id)
        assert state.begin_interrupt()
        client.turn_interrupt(thread_id, second)
        state.confirm_interrupt()
        reader.join(timeout=20)
        assert not reader.is_alive()
    finally:
        client.close()
    result = collected[0]
    assert result.id == first
    assert result.status == TurnStatus.interrupted
    steer_echo = _steer_echo(fake, second)
    assert steer_echo and steer_echo[0]["params"]["item"]["content"][0]["text"] == "and keep it short"
    fake.assert_wire_clean()
