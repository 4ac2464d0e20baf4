"""Wall time of one scripted step through Runtime.run against a bare claude_agent_sdk.query.

Same scenario (a Bash call, then a reply), same CLI, same flower.sim, measured alternately in
one process so that machine noise hits both sides alike. Prints figures; asserts nothing.

usage: python benchmarks/bench_runtime.py [ROUNDS] [--smoke]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, query

from _cli import size_or_smoke
from flower import AgentSpec, Runtime
from flower.sim.env import isolated_env, scrub_host_model_vars
from flower.sim.server import SimServer

TURNS = [
    {"tool": {"name": "Bash", "input": {"command": "echo hi", "description": "say hi"}}},
    {"text": "done"},
]


async def bare(ws: Path) -> float:
    options = ClaudeAgentOptions(
        cwd=str(ws), setting_sources=[], allowed_tools=["Bash", "Read"], stderr=lambda line: None
    )
    start = time.perf_counter()
    async for _ in query(prompt="say hi", options=options):
        pass
    return time.perf_counter() - start


async def flower_step(rt: Runtime, spec: AgentSpec) -> float:
    start = time.perf_counter()
    result = await rt.run(spec, "say hi")
    elapsed = time.perf_counter() - start
    assert result.ok, result.error
    return elapsed


async def main(rounds: int) -> None:
    scrub_host_model_vars()
    with tempfile.TemporaryDirectory(prefix="flower-bench-") as tmp:
        await measure(rounds, Path(tmp))


async def measure(rounds: int, root: Path) -> None:
    ws = root / "ws"
    ws.mkdir()
    with SimServer(
        {"default": TURNS[1], "rules": [{"when": {"last_user_contains": "say hi"}, "reply": TURNS[0]}]}
    ) as sim:
        os.environ.update(isolated_env(sim.base_url, root))
        # like for like: the bare query has no sandbox (its cost: benchmarks/bench_sandbox.py)
        rt = Runtime(workspace=ws, run_dir=root / "runs", sandbox="off")
        spec = AgentSpec(name="bench", instructions="", allowed_tools=["Bash", "Read"])
        warm = await bare(ws)  # warm the page cache for the 356 MiB CLI binary
        bare_times: list[float] = []
        flower_times: list[float] = []
        if not rounds:  # --smoke: the warm-up pair is all there is
            bare_times, flower_times = [warm], [await flower_step(rt, spec)]
        else:
            await flower_step(rt, spec)
        for i in range(rounds):
            # alternate the order so neither side always runs on a warmer machine
            pair = [("bare", bare(ws)), ("flower", flower_step(rt, spec))]
            for name, coro in pair if i % 2 == 0 else reversed(pair):
                (bare_times if name == "bare" else flower_times).append(await coro)
        rt.close()
    b, f = statistics.median(bare_times), statistics.median(flower_times)
    print(f"rounds: {rounds} (alternating order)")
    print(
        f"bare claude_agent_sdk.query : median {b:.3f} s  "
        f"(min {min(bare_times):.3f}, max {max(bare_times):.3f})"
    )
    print(
        f"flower Runtime.run          : median {f:.3f} s  "
        f"(min {min(flower_times):.3f}, max {max(flower_times):.3f})"
    )
    print(f"ratio flower / bare         : {f / b:.3f}  (target <= 1.05)")


if __name__ == "__main__":
    asyncio.run(main(size_or_smoke(__doc__.splitlines()[0], "rounds", int, 15, 0, "timed pairs")))
