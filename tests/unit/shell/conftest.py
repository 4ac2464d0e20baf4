"""Sandboxes for the glance tests (see glance_sandbox) and the confinement corpus's hostile
workspace (see confine_corpus)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confine_corpus import Hostile
from confine_corpus import build as build_hostile
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


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    """The corpus's hostile workspace, one per test file (confine_corpus.build)."""
    h = build_hostile(tmp_path_factory.mktemp("hostile"))
    yield h
    h.cleanup()
