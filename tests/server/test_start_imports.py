"""The language server answers `initialize` without loading the SDK: claude_agent_sdk and the MCP
stack under it take about half a second to import, and the engine loads them in the background
after the start (Engine.warm), never on the way to the first answer. A module that needs the
SDK's types for annotations imports them under TYPE_CHECKING."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("claude_agent_sdk", "mcp")


def test_building_the_language_server_does_not_import_the_sdk() -> None:
    probe = (
        "import sys; from flower_lsp.server import build_server; build_server(); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr
