"""The install and the wire check are the binary's (`codex-wire install`, `codex-wire
wire-check`), the same ones the npm helper calls: the cases of `clients/install_cases.json` (an
allow pattern's meaning; installs under awkward directory names) pass here as in
tests/npm/install.test.js."""

import json
import subprocess
from pathlib import Path

import pytest

from codex_wire import FakeCodex, message, turn

CASES = json.loads((Path(__file__).parents[2] / "clients" / "install_cases.json").read_text())


@pytest.mark.parametrize("case", CASES["allow"], ids=lambda c: f'{c["pattern"]} {c["path"]}')
def test_an_allow_pattern_means_what_the_binary_says(case, tmp_path):
    fake = FakeCodex(tmp_path)
    entry = {"dir": "in", "msg": {"id": 1, "method": "thread/start", "params": {}},
             "ignored": [case["path"]]}
    (fake.state_dir / "transcript.jsonl").write_text(json.dumps(entry) + "\n", encoding="utf-8")
    problems = fake.wire_problems(allow=[case["pattern"]])
    assert (problems == []) == case["allowed"], problems


@pytest.mark.parametrize("name", CASES["dirs"])
def test_an_install_works_under_any_directory_name(name, tmp_path):
    fake = FakeCodex(tmp_path / name, [turn(message("Fine."))])
    out = subprocess.run([str(fake.bin), "app-server"], input=json.dumps(
        {"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}) + "\n",
        capture_output=True, text=True, timeout=30)
    reply = json.loads(out.stdout.splitlines()[0])
    assert reply["result"]["codexHome"] == str(fake.codex_home), out.stderr
    assert fake.requests("initialize"), "the fake under that name wrote its transcript"
