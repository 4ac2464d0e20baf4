"""Fixtures for the end-to-end tests that only some of them use."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME for the CLI this test starts.

    The Bash tool runs a login shell; the host's profile (and whatever it prints or waits
    for, such as a shim lock other processes hold) must not leak into results a test
    compares byte for byte.
    """
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home
