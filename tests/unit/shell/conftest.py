"""Sandboxes for the glance tests (see glance_sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest
from glance_sandbox import Sandbox, build


@pytest.fixture(scope="session")
def glance_box(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One sandbox for every test that only runs glances: none of them may change it."""
    return build(tmp_path_factory.mktemp("glance-box"))


@pytest.fixture
def spoilable_box(tmp_path: Path) -> Sandbox:
    """A sandbox of its own, for a test that changes it on purpose."""
    root = tmp_path / "box"
    root.mkdir()
    return build(root)
