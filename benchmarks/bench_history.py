"""What does the history of an HT001-scale run cost to build, and a live turn to add?

Generates a run folder the way a real run leaves one: the starter flow through the Runtime and
the real Claude Code CLI, flower.sim scripting 70 judged rounds (a worker delegated to in every
round, its command printing `--output` bytes, reports padded to `--report` characters) with the
coordinator's context growing from 28.7K to about 185.9K tokens, as in the upstream HT001 case.
Then it times, median of `--runs`:

- reading the folder (manifest, lineage, Q&A log, handoff documents, every main transcript's
  turns in sessions.db): `read_disk`, the part the server runs off its loop;
- arranging it (`assemble`) and turning it into the wire payload (`flower/history`), the part
  that runs on the server's loop whenever a live run moves;
- one live turn: `extend` plus the `flower/historyUpdate` payload, what every model turn costs.

The chart's own cost per turn (in a browser) is benchmarks/bench_chart.mjs.

    .venv/bin/python benchmarks/bench_history.py [--rounds 70] [--runs 7] [--keep DIR] [--smoke]

With `--keep DIR` the folder is generated there once and reused on the next call. Figures
only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _cli import add_smoke
from flower.core.agent import HandoffPolicy
from flower.sim.env import isolated_env, scrub_host_model_vars
from flower.sim.long_run import long_run_scenario
from flower.sim.server import SimServer
from flower.workflow.history import Turn, assemble, extend, read_disk
from flower_lsp.history import payload, update

START, END = 28_700, 185_900  # HT001: the context at round 1 and round 70


async def generate(folder: Path, rounds: int, report: int, output: int) -> float:
    from flower.core.run_settings import RunSettings
    from flower.workflow.assemble import assemble

    turns_per_round = 2  # the delegation, then the report
    growth = (END - START) // (rounds * turns_per_round)
    scenario = long_run_scenario(
        rounds=rounds,
        threshold=10**9,  # HT001 never handed over
        start=START,
        growth=growth,
        report_chars=report,
        delegate_every_round=True,
        tool_output_bytes=output,
    )
    workspace = folder / "ws"
    workspace.mkdir(parents=True)
    saved = dict(os.environ)
    scrub_host_model_vars()
    began = time.perf_counter()
    try:
        with SimServer(scenario) as sim:
            os.environ.update(isolated_env(sim.base_url, folder / "cli"))
            run_dir = workspace / "runs"
            # the run `flower go` assembles (HT001 never handed over: its threshold is out of reach)
            run = assemble(
                "写一个 hello.py",
                RunSettings(workspace=workspace, run_dir=run_dir, timeout_s=60, rounds=rounds),
            )
            flow, runtime = run.flow, run.runtime
            channel = flow.channel
            assert channel is not None  # the starter flow's

            async def person() -> None:
                while True:
                    ask = await channel.next_ask()
                    if ask is not None:
                        channel.answer(ask.id, ask.options[0] if ask.options else "好")

            helper = asyncio.create_task(person())
            try:
                await flow.run(runtime)
            finally:
                helper.cancel()
                runtime.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return time.perf_counter() - began


def median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(runs):
        began = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=70)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--report", type=int, default=9_000, help="characters per report")
    parser.add_argument("--output", type=int, default=200_000, help="bytes the worker's command prints")
    parser.add_argument("--keep", type=Path, help="generate the folder here once, reuse it afterwards")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.runs, args.report, args.output = 2, 1, 200, 1_000

    folder = args.keep or Path(tempfile.mkdtemp(prefix="flower-bench-history-"))
    workspace = folder / "ws"
    try:
        if not (workspace / "runs" / "manifest.json").is_file():
            took = asyncio.run(generate(folder, args.rounds, args.report, args.output))
            print(f"generated:  {args.rounds} rounds through the real CLI in {took:.0f} s, in {workspace}")
        db = workspace / "runs" / "sessions.db"
        policy = HandoffPolicy(window=1_000_000)

        read, disk = median_ms(lambda: read_disk(workspace), args.runs)
        arrange, history = median_ms(lambda: assemble(disk, policy=policy), args.runs)
        wire, sent = median_ms(lambda: payload(history, workspace.as_uri(), 1), args.runs)
        size = len(str(sent))
        work = [t for t in history.turns if t.lane == "干活"]
        print(
            f"folder:     {len(disk.rows)} manifest rows, {len(history.turns)} main-thread turns "
            f"({work[0].used / 1000:.1f}K -> {work[-1].used / 1000:.1f}K in the work session), "
            f"sessions.db {db.stat().st_size / 1e6:.1f} MB"
        )
        print(f"read_disk   median {read:8.1f} ms   (off the server's loop)")
        print(f"assemble    median {arrange:8.1f} ms")
        print(f"payload     median {wire:8.1f} ms   ({size / 1000:.0f} KB as a Python repr)")

        last = history.turns[-1]
        n = 2000
        began = time.perf_counter()
        for i in range(n):
            turn = extend(history, Turn(last.at + i + 1, last.used + i, last.session_id, last.step))
            update(workspace.as_uri(), 2 + i, turn)
        per_turn = (time.perf_counter() - began) / n * 1e6
        print(f"live turn   {per_turn:8.1f} µs   (extend + the flower/historyUpdate payload)")
        print("a model turn takes seconds; the chart's own cost per turn: benchmarks/bench_chart.mjs")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
