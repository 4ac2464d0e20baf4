"""The offline demo: one real Claude Code session against flower.sim, no API key needed.

A scripted model asks the real CLI to write a small Python program with the Write tool, run
it with Bash, and report. Everything but the model is real: tools, hooks, transcripts.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import TextIO

from .env import isolated_env, scrub_host_model_vars
from .server import SimServer

HELLO = 'print("hello from flower")\n'


def demo_scenario(ws: Path) -> dict:
    """Write hello.py, run it, report: three model turns."""
    write = {"name": "Write", "input": {"file_path": str(ws / "hello.py"), "content": HELLO}}
    run = {"name": "Bash", "input": {"command": "python3 hello.py", "description": "run hello.py"}}
    return {
        "scripts": {
            "main": [
                {"text": "I will write hello.py and run it.", "tool": write},
                {"tool": run},
                {"text": "Done: hello.py prints `hello from flower`."},
            ]
        }
    }


async def run_demo(out: TextIO, *, keep: bool = False) -> int:
    """Run the demo, narrating to `out`; returns a process exit code."""
    from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, UserMessage, query

    from ..plugin import plugin_dir

    scrub_host_model_vars()
    root = Path(tempfile.mkdtemp(prefix="flower-demo-"))
    ws = root / "workspace"
    ws.mkdir()
    ok = False
    try:
        with SimServer(demo_scenario(ws)) as sim:
            out.write(f"flower demo: a real Claude Code session, model scripted by flower.sim at {sim.base_url}\n")
            out.write(f"workspace: {ws}\n\n")
            plugin = plugin_dir()
            options = ClaudeAgentOptions(
                cwd=str(ws),
                env=isolated_env(sim.base_url, root),
                setting_sources=[],
                allowed_tools=["Write", "Bash", "Read"],
                permission_mode="acceptEdits",
                plugins=[{"type": "local", "path": str(plugin)}] if plugin else [],
                stderr=lambda line: None,
            )
            result = None
            async for message in query(prompt="Write hello.py that greets, run it, and tell me what it printed.", options=options):
                if isinstance(message, AssistantMessage):
                    for block in message.content:
                        if getattr(block, "text", None):
                            out.write(f"  model: {block.text}\n")
                        elif getattr(block, "name", None):
                            shown = block.input.get("command") or block.input.get("file_path") or ""
                            out.write(f"  tool:  {block.name} {shown}\n")
                elif isinstance(message, UserMessage) and isinstance(message.content, list):
                    for block in message.content:
                        content = getattr(block, "content", None)
                        if isinstance(content, str) and content.strip():
                            out.write(f"  result: {content.strip().splitlines()[0][:100]}\n")
                elif isinstance(message, ResultMessage):
                    result = message
            hello = ws / "hello.py"
            ok = bool(result and not result.is_error and hello.is_file() and hello.read_text() == HELLO)
            out.write("\n")
            if result is not None:
                out.write(f"session {result.session_id}: {result.num_turns} turns, {len(sim.requests)} model requests\n")
            out.write(("ok: " if ok else "FAILED: ") + f"hello.py {'written and run' if ok else 'missing or wrong'}\n")
    finally:
        if keep:
            out.write(f"kept: {root}\n")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def main(out: TextIO | None = None, *, keep: bool = False) -> int:
    import sys

    return asyncio.run(run_demo(out or sys.stdout, keep=keep))
