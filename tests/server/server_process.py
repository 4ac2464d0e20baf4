"""How the server tests start `python -m flower_lsp`: the command and its environment.

A module of its own, not conftest.py: every conftest.py is a top-level module named `conftest`,
so `from conftest import ...` would find whichever one pytest imported first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, "-m", "flower_lsp"]


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def fake_env(script_path: Path) -> dict[str, str]:
    """The server with the scripted stand-in engine (fake_engine.py beside this file), no CLI."""
    return server_env(
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        FLOWER_LSP_ENGINE="fake_engine:FakeEngine",
        FLOWER_FAKE_SCRIPT=str(script_path),
    )
