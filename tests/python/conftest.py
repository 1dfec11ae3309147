import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_codex import FakeCodex  # noqa: E402


@pytest.fixture
def make_fake(tmp_path):
    made = []

    def make(turns, **scenario):
        fake = FakeCodex(tmp_path / f"install{len(made)}", turns, **scenario)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.cleanup()
