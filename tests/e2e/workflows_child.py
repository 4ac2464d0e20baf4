"""One process of the shared-run_dir test: a 4-step workflow of its own, run ROUNDS times, each
round a new Runtime continuing the last one's sessions. usage: WORKSPACE RUN_DIR NAME ROUNDS
Prints one JSON line per round: {"woke": N, "sessions": {step: session_id}}."""

from __future__ import annotations

import asyncio
import json
import sys

from flower import AgentSpec, Runtime, Step, Workflow

SPEC = AgentSpec(name="quick", instructions="Reply briefly.", allowed_tools=["Read"])


async def main(workspace: str, run_dir: str, name: str) -> None:
    flow = Workflow([Step(f"{name}-step{i}", SPEC, f"step {i} of {name}") for i in range(4)], name=name)
    rt = Runtime(workspace=workspace, run_dir=run_dir)
    try:
        ctx = await flow.run(rt)
    finally:
        rt.close()
    mine = {step: sid for step, sid in ctx["_sessions"].items() if step.startswith(f"{name}-")}
    print(json.dumps({"woke": ctx["_woke"], "sessions": mine, "failed": ctx.get("_failed_at")}))


workspace, run_dir, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for _ in range(rounds):
    asyncio.run(main(workspace, run_dir, name))
