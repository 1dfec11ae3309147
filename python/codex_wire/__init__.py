"""codex-wire for Python test suites: the ``codex-wire`` binary (a fake ``codex app-server`` whose
every reply is the real server's) and a pytest plugin around it.

    def test_turn(codex_fake):
        codex_fake.script(turn(message("hello"), usage(10, 5)))
        with Codex(CodexConfig(codex_bin=str(codex_fake.bin))) as codex:
            assert codex.thread_start().run("hi").final_response == "hello"

The ``codex_fake`` fixture fails the test when the client sent what the real codex refuses or
silently drops (``@pytest.mark.codex_wire_allow("$.params.extra")`` accepts named paths).
"""

from .fake import FakeCodex, WireError, binary, codex_versions
from .steps import (
    command,
    error_note,
    fail,
    file_change,
    goal,
    http_error,
    message,
    message_partial,
    permissions,
    reasoning,
    sleep,
    tool_call,
    turn,
    usage,
    user_input,
)

__all__ = [
    "FakeCodex",
    "WireError",
    "binary",
    "codex_versions",
    "command",
    "error_note",
    "fail",
    "file_change",
    "goal",
    "http_error",
    "message",
    "message_partial",
    "permissions",
    "reasoning",
    "sleep",
    "tool_call",
    "turn",
    "usage",
    "user_input",
]
