"""What the Bash sandbox costs: per Bash command and per scripted step, sandbox on and off.

Both sides run in one process against one flower.sim, alternating, so machine noise hits both
alike. A step is a session that runs `true` through Bash and answers; the cost of one command is
(the step with ten commands - the step with none) / 10. Prints figures; asserts nothing.

usage: python benchmarks/bench_sandbox.py [ROUNDS] [--smoke]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _cli import size_or_smoke
from flower import AgentSpec, Runtime
from flower.core.sandbox import SandboxPolicy, why_unavailable
from flower.sim.env import isolated_env, scrub_host_model_vars
from flower.sim.server import SimServer

SHAPES = {"none": 0, "one": 1, "ten": 10}  # Bash commands per step


def bash() -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": "true", "description": "nothing"}}}


def scenario(steps: int) -> dict[str, Any]:
    """Each shape is an actor of its own, recognised by its instructions; `steps` runs of each."""
    return {
        "actors": {name: {"system": f"bench shape {name}"} for name in SHAPES},
        "scripts": {name: ([bash()] * n + ["done"]) * steps for name, n in SHAPES.items()},
    }


async def step(rt: Runtime, shape: str) -> float:
    spec = AgentSpec(name=shape, instructions=f"bench shape {shape}", allowed_tools=["Bash"])
    start = time.perf_counter()
    result = await rt.run(spec, "go")
    elapsed = time.perf_counter() - start
    assert result.ok, result.error
    return elapsed


async def main(rounds: int) -> None:
    missing = why_unavailable()
    if missing:
        sys.exit(f"no sandbox on this machine ({missing}): run `make system-deps`")
    scrub_host_model_vars()
    with tempfile.TemporaryDirectory(prefix="flower-bench-") as tmp:
        await measure(rounds, Path(tmp))


async def measure(rounds: int, root: Path) -> None:
    ws = root / "ws"
    ws.mkdir()
    times: dict[tuple[str, str], list[float]] = {}
    # warm-up + rounds, for each of the two modes
    with SimServer(scenario(2 * (rounds + 1))) as sim:
        os.environ.update(isolated_env(sim.base_url, root))
        runtimes = {
            "off": Runtime(workspace=ws, run_dir=root / "runs-off", sandbox="off"),
            # no network is asked for: the figures are the sandbox's own, not a registry lookup's
            "sandbox": Runtime(
                workspace=ws, run_dir=root / "runs-on", sandbox=SandboxPolicy("require", hosts=[])
            ),
        }
        try:
            for i in range(rounds + 1):
                order = list(runtimes.items()) if i % 2 == 0 else list(reversed(runtimes.items()))
                for mode, rt in order:
                    for shape in SHAPES:
                        elapsed = await step(rt, shape)
                        if i or not rounds:  # the first round only warms (but for --smoke, all there is)
                            times.setdefault((mode, shape), []).append(elapsed)
        finally:
            for rt in runtimes.values():
                rt.close()
    med = {key: statistics.median(values) for key, values in times.items()}
    print(f"rounds: {rounds} (alternating order), steps of 0, 1 and 10 Bash commands (`true`)")
    print(f"{'':10} {'step, 1 command':>16} {'per command':>12}")
    per: dict[str, float] = {}
    for mode in ("off", "sandbox"):
        per[mode] = (med[(mode, "ten")] - med[(mode, "none")]) / 10
        print(f"{mode:10} {med[(mode, 'one')]:>14.3f} s {per[mode] * 1000:>9.0f} ms")
    print(
        f"{'cost':10} {med[('sandbox', 'one')] - med[('off', 'one')]:>+14.3f} s "
        f"{(per['sandbox'] - per['off']) * 1000:>+9.0f} ms"
    )


if __name__ == "__main__":
    asyncio.run(
        main(size_or_smoke(__doc__.splitlines()[0], "rounds", int, 5, 0, "timed rounds after a warm-up"))
    )
