"""A flower process for the process-level tests: runs one or more steps, prints JSON results.

usage: python step_child.py WORKSPACE RUN_DIR STEP PROMPT [--resume-lineage] [--steps N]
The model endpoint comes from the environment (the parent's flower.sim).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict

from flower import AgentSpec, Lineage, Resilience, Runtime
from flower.core.runtime import rescue_on_signals

SPEC = AgentSpec(name="child", instructions="You are the child test agent.", allowed_tools=["Read", "Bash"])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workspace")
    parser.add_argument("run_dir")
    parser.add_argument("step")
    parser.add_argument("prompt")
    parser.add_argument("--resume-lineage", action="store_true")
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    rt = Runtime(
        workspace=args.workspace,
        run_dir=args.run_dir,
        resilience=Resilience(base_delay=0.05, probe_interval=0.2),
    )
    rescue_on_signals(rt)
    lineage = Lineage.open(rt.run_dir, rt.workspace)
    resume = lineage.steps.get(args.step) if args.resume_lineage else None
    if resume and not rt.recover_session(resume):  # the store may lag behind the CLI's own file
        resume = None
    rt.on_session = lambda sid: lineage.remember(args.step, sid)
    try:
        for i in range(args.steps):
            name = args.step if args.steps == 1 else f"{args.step}-{i}"
            result = await rt.run(SPEC, args.prompt, step_name=name, resume=resume)
            print(json.dumps(asdict(result), ensure_ascii=False), flush=True)
    finally:
        rt.close()


asyncio.run(main())
