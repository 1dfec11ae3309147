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
  ``--codex-version all``: every test that uses the fake runs once per supported version
  (``codex-wire versions``), the version in its id (``test_turn[0.163.0]``); the ``codex_version``
  fixture says which. Against a real binary (its own version answers) the tests run once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from .fake import FakeCodex, codex_versions

REAL_ENV = "CODEX_WIRE_REAL_CODEX"
VERSION_ENV = "CODEX_WIRE_FAKE_VERSION"
ALL = "all"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codex-wire")
    group.addoption("--codex-real", metavar="PATH", default=None,
                    help=f"run codex_fake tests against this real codex binary (or ${REAL_ENV})")
    group.addoption("--codex-version", metavar="X.Y.Z|all", default=None,
                    help=f"the codex version the fake answers as (or ${VERSION_ENV}; default: the newest); "
                         f"'{ALL}': each test once per supported version")


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


_VERSIONS = pytest.StashKey[list]()


def _all_versions(config: pytest.Config) -> list[str]:
    """The versions ``--codex-version all`` runs (the binary's, asked once a session); [] when the
    option is not ``all`` or a real binary answers as its own version."""
    if (_version(config) or "").strip().lower() != ALL or _real(config):
        return []
    if _VERSIONS not in config.stash:
        config.stash[_VERSIONS] = codex_versions()
    return config.stash[_VERSIONS]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``--codex-version all``: the ``codex_version`` fixture (under ``codex_fake`` and
    ``codex_fake_factory``) takes every supported version in turn, the version in the test id."""
    if "codex_version" not in metafunc.fixturenames:
        return
    versions = _all_versions(metafunc.config)
    if not versions:
        return
    # A test that parametrizes the version itself keeps its own list.
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if "codex_version" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return
    metafunc.parametrize("codex_version", versions, indirect=True, ids=versions)


@pytest.fixture
def codex_version(request: pytest.FixtureRequest) -> str | None:
    """The codex version the fake answers as in this test: each supported one in turn with
    ``--codex-version all``, else ``--codex-version`` / ``$CODEX_WIRE_FAKE_VERSION``, else None
    (the newest)."""
    param = getattr(request, "param", None)
    if param:
        return param
    version = _version(request.config)
    return None if (version or "").strip().lower() == ALL else version


@pytest.fixture
def codex_fake_factory(request: pytest.FixtureRequest, tmp_path: Path,
                       codex_version: str | None) -> Iterator[Callable[..., FakeCodex]]:
    """Makes installs (several per test when a test needs them); each is checked and cleaned up."""
    real = _real(request.config)
    if real and not Path(real).is_file():
        pytest.skip(f"no real codex binary at {real} (--codex-real / ${REAL_ENV})")
    made: list[FakeCodex] = []
    # Read by `pytest_runtest_call` right after the test body.
    request.node.stash[_FAKES] = made

    def make(turns: Any = (), **scenario: Any) -> FakeCodex:
        fake = FakeCodex(tmp_path / f"codex-fake-{len(made)}", turns, real=real,
                         version=codex_version, **scenario)
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
