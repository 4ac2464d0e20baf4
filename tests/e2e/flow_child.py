"""A `flower`-like process for the kill tests: the starter flow, questions answered with the
first option. usage: python flow_child.py WORKSPACE RUN_DIR REQUEST"""

from __future__ import annotations

import asyncio
import json
import sys

from flower import Runtime, starter_flow


async def main(workspace: str, run_dir: str, request: str) -> int:
    flow = starter_flow(request, workspace=workspace, run_dir=run_dir, timeout_s=60)
    channel = flow.channel
    assert flow.workbench is not None and channel is not None  # the starter flow has both
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=flow.workbench)

    async def person() -> None:
        while True:
            ask = await channel.next_ask()
            if ask is not None:
                channel.answer(ask.id, ask.options[0] if ask.options else "ok")

    task = asyncio.create_task(person())
    try:
        ctx = await flow.run(rt)
    finally:
        task.cancel()
        rt.close()
    print(
        json.dumps(
            {"failed_at": ctx.get("_failed_at"), "sessions": ctx.get("_sessions"), "woke": ctx.get("_woke")},
            ensure_ascii=False,
        )
    )
    return 0 if not ctx.get("_failed_at") else 1


sys.exit(asyncio.run(main(*sys.argv[1:4])))
