"""The codex-wire pytest plugin itself: step helpers check their fields when a scenario is
written, and the after-test wire check honours `codex_wire_allow`."""

from __future__ import annotations

import json
import subprocess

import pytest

from codex_wire import command, goal, message, steps, turn, usage

INIT = {"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}


def send(fake, *lines: dict) -> str:
    out = subprocess.run([str(fake.bin), "app-server"], input="".join(json.dumps(l) + "\n" for l in lines),
                         text=True, capture_output=True, timeout=30)
    return out.stdout


def test_helpers_check_their_fields_when_the_scenario_is_written():
    assert turn(message("hi"), usage(3, 2))["steps"] == [
        {"kind": "message", "text": "hi", "chunks": 3},
        {"kind": "usage", "input": 3, "output": 2, "cached": 0},
    ]
    with pytest.raises(TypeError, match="text must be a string"):
        message(3)
    with pytest.raises(ValueError, match="cached"):
        usage(1, cached=5)
    with pytest.raises(ValueError, match="command must not be blank"):
        command(" ")
    with pytest.raises(ValueError, match="unknown kind 'mesage'"):
        steps.check_turns([{"steps": [{"kind": "mesage", "text": "x"}]}])
    # The model's `update_goal`: only what codex's tool lets the model set.
    assert goal() == {"kind": "goal", "status": "complete"}
    with pytest.raises(ValueError, match="status must be one of complete, blocked"):
        goal("paused")
    # Plain dicts (the seed's scenarios) are checked the same way.
    with pytest.raises(ValueError, match=r"step 1 \(command\): missing 'command'"):
        steps.check_turns([{"steps": [{"kind": "message", "text": "x"}, {"kind": "command"}]}])


def test_a_bad_scenario_fails_before_any_server_runs(codex_fake):
    with pytest.raises(TypeError, match="step 0 \\(message\\)"):
        codex_fake.script({"steps": [{"kind": "message", "text": ["not", "a", "string"]}]})
    assert not (codex_fake.state_dir / "transcript.jsonl").exists()


def test_a_half_written_last_entry_is_not_read(codex_fake):
    entry = {"dir": "in", "msg": {"id": 1, "method": "thread/start", "params": {}}}
    whole = json.dumps(entry) + "\n"
    (codex_fake.state_dir / "transcript.jsonl").write_text(whole + whole[:20], encoding="utf-8")
    assert codex_fake.entries() == [entry]


@pytest.mark.codex_wire_allow("$.params.temperature")
def test_allowed_paths_do_not_fail_the_test(codex_fake):
    out = send(codex_fake, INIT, {"id": 1, "method": "thread/start", "params": {"temperature": 0.2}})
    assert '"id":1,"result"' in out
    assert codex_fake.ignored_fields() == [("thread/start", "$.params.temperature")]
    assert codex_fake.wire_problems(allow=["$.params.temperature"]) == []
    assert codex_fake.wire_problems() == ["ignored by the real server: $.params.temperature (in thread/start)"]



def test_a_recording_plays_as_recorded(codex_fake):
    """`codex-wire record`'s shipped example (an approved command, then a message), played to a
    client that answers the approval."""
    from pathlib import Path
    rec = Path(__file__).resolve().parents[2] / "examples" / "recording"
    codex_fake.load_recording(rec)
    proc = subprocess.Popen([str(codex_fake.bin), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)

    def send_line(msg: dict) -> None:
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def until(pred) -> dict:
        for line in proc.stdout:
            msg = json.loads(line)
            if pred(msg):
                return msg
        raise AssertionError("the server ended early")

    try:
        send_line(INIT)
        until(lambda m: m.get("id") == 0)
        send_line({"method": "initialized"})
        send_line({"id": 1, "method": "thread/start", "params": {}})
        thread = until(lambda m: m.get("id") == 1)["result"]["thread"]["id"]
        send_line({"id": 2, "method": "turn/start",
                   "params": {"threadId": thread, "input": [{"type": "text", "text": "hi"}]}})
        ask = until(lambda m: m.get("method") == "item/commandExecution/requestApproval")
        assert ask["params"]["reason"] == "need to echo"
        send_line({"id": ask["id"], "result": {"decision": "accept"}})
        done = until(lambda m: m.get("method") == "turn/completed")
        assert done["params"]["turn"]["status"] == "completed"
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    texts = [m["params"]["item"].get("text") for m in codex_fake.sent("item/completed")
             if m["params"]["item"]["type"] == "agentMessage"]
    assert texts == ["Ran it."]


TINY_SUITE = '''
def test_answers_as_its_version(codex_fake, codex_version):
    assert codex_fake.version == codex_version
'''


def run_tiny_suite(tmp_path, *args: str) -> str:
    """A one-test suite of a client team, run by pytest on this plugin; its verbose output."""
    import os
    import sys
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text('pytest_plugins = ["codex_wire.plugin"]\n')
    (suite / "test_tiny.py").write_text(TINY_SUITE)
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_WIRE_FAKE_VERSION", "CODEX_WIRE_REAL_CODEX")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                          "--basetemp", str(tmp_path / "base"), *args, "test_tiny.py"],
                         cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    return out.stdout + out.stderr


def test_codex_version_all_runs_each_test_once_per_supported_version(tmp_path):
    from codex_wire import codex_versions
    versions = codex_versions()
    out = run_tiny_suite(tmp_path, "--codex-version", "all")
    assert f"{len(versions)} passed" in out, out
    passed = sorted(line.split("::")[1].split(" ")[0] for line in out.splitlines()
                    if line.startswith("test_tiny.py::") and "PASSED" in line)
    assert passed == sorted(f"test_answers_as_its_version[{v}]" for v in versions), out


def test_one_codex_version_runs_each_test_once(tmp_path):
    from codex_wire import codex_versions
    oldest = codex_versions()[0]
    out = run_tiny_suite(tmp_path, "--codex-version", oldest)
    assert "1 passed" in out, out
    assert "test_tiny.py::test_answers_as_its_version PASSED" in out, out
