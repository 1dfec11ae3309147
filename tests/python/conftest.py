"""The seed's scenarios and the SDK tests, written on the codex-wire pytest plugin (loaded from
the checkout's `python/` here; an installed wheel registers it as a `pytest11` plugin)."""

import pytest

pytest_plugins = ["codex_wire.plugin"]


@pytest.fixture
def make_fake(codex_fake_factory):
    """The seed's name for the plugin's factory: ``make_fake(turns, **scenario)``."""
    return codex_fake_factory
