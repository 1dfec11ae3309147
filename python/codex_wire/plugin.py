"""The pytest plugin (entry point ``pytest11``): fixtures ``codex_fake`` and ``codex_fake_factory``.

- A per-test install (:class:`codex_wire.FakeCodex`): state dir, a ``codex`` executable for
  ``PATH`` or an SDK's ``codex_bin``, transcript readers.
- After the test, the transcript is checked: a violation (a line the real server refuses) or an
  ignored field (a key it silently drops) fails the test, naming the JSON path.
  ``@pytest.mark.codex_wire_allow("$.params.x", "params.input[*].extra")`` accepts those ignored
  paths (globs as ``codex-wire validate --allow-ignored`` reads them: ``*`` within one segment);
  ``@pytest.mark.codex_wire_unchecked`` skips the check.
- ``--codex-real PATH`` (or ``$CODEX_WIRE_REAL_CODEX``): the same tests against the real binary
  driven by the scripted model; a missing binary skips them with the reason.
  ``--codex-version X.Y.Z`` (or ``$CODEX_WIRE_FAKE_VERSION``): the fake answers as that version.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from .fake import FakeCodex

REAL_ENV = "CODEX_WIRE_REAL_CODEX"
VERSION_ENV = "CODEX_WIRE_FAKE_VERSION"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codex-wire")
    group.addoption("--codex-real", metavar="PATH", default=None,
                    help=f"run codex_fake tests against this real codex binary (or ${REAL_ENV})")
    group.addoption("--codex-version", metavar="X.Y.Z", default=None,
                    help=f"the codex version the fake answers as (or ${VERSION_ENV}; default: the newest)")


_REAL_OPTION: list[str] = []


def real_codex() -> str | None:
    """The real binary the session runs against (``--codex-real`` or ``$CODEX_WIRE_REAL_CODEX``),
    else None: the fake."""
    return (_REAL_OPTION[0] if _REAL_OPTION else None) or os.environ.get(REAL_ENV) or None


def fake_only(feature: str) -> None:
    """Skips the calling test against a real binary: ``feature`` exists only in the fake."""
    if real_codex():
        pytest.skip(f"fake-only feature: {feature} (no model response makes the real server do it)")


def pytest_configure(config: pytest.Config) -> None:
    _REAL_OPTION.clear()
    if config.getoption("--codex-real"):
        _REAL_OPTION.append(config.getoption("--codex-real"))
    config.addinivalue_line("markers", "codex_wire_allow(*paths): ignored field paths (globs) the test accepts")
    config.addinivalue_line("markers", "codex_wire_unchecked: do not fail on violations or ignored fields")


def _real(config: pytest.Config) -> str | None:
    return config.getoption("--codex-real") or os.environ.get(REAL_ENV) or None


def _version(config: pytest.Config) -> str | None:
    return config.getoption("--codex-version") or os.environ.get(VERSION_ENV) or None


@pytest.fixture
def codex_fake_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., FakeCodex]]:
    """Makes installs (several per test when a test needs them); each is checked and cleaned up."""
    real = _real(request.config)
    if real and not Path(real).is_file():
        pytest.skip(f"no real codex binary at {real} (--codex-real / ${REAL_ENV})")
    made: list[FakeCodex] = []
    # Read by `pytest_runtest_call` right after the test body.
    request.node.stash[_FAKES] = made

    def make(turns: Any = (), **scenario: Any) -> FakeCodex:
        fake = FakeCodex(tmp_path / f"codex-fake-{len(made)}", turns, real=real,
                         version=_version(request.config), **scenario)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.cleanup()


_FAKES = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """After a test body that passed: its installs' transcripts must be clean, or the test fails
    (naming each path), unless a marker allows it."""
    result = yield
    made = item.stash.get(_FAKES, [])
    if made and not item.get_closest_marker("codex_wire_unchecked"):
        allow = [p for m in item.iter_markers("codex_wire_allow") for p in m.args]
        problems = [p for fake in made for p in fake.wire_problems(allow)]
        if problems:
            pytest.fail("the client sent what the real codex refuses or drops:\n  " + "\n  ".join(problems),
                        pytrace=False)
    return result


@pytest.fixture
def codex_fake(codex_fake_factory: Callable[..., FakeCodex]) -> FakeCodex:
    """One install with an empty scenario (``codex_fake.script(turn(...), ...)`` sets its turns)."""
    return codex_fake_factory()
