"""How fast is the language server where a person waits on it?

1. start: from spawning `python -m flower_lsp` to the `initialize` answer at the client
   (a fresh process each time, as an editor starts it).
2. meter: from the end of a model turn in flower.sim (the last byte of its streamed reply) to
   the `flower/context` notification at the client. The whole starter flow runs through the
   server with the real engine and the real Claude Code CLI; each main-thread turn is paired
   with the first meter notification after it.

    .venv/bin/python benchmarks/bench_lsp.py [--starts 7] [--runs 2] [--smoke]

The client declares the flower extensions it handles (flower/context, flower/event, flower/ask),
as an editor does: the server sends those only to a client that declares them.

Figures only: nothing here asserts on time. Targets: start <= 1.0 s, meter < 50 ms median. A run
that ends without a single meter reading fails: then there is nothing to measure.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.client import LanguageClient

from _cli import add_smoke
from flower.sim import scenarios
from flower.sim.env import isolated_env, scrub_host_model_vars
from flower.sim.scenario import RequestView
from flower.sim.server import Answer, SimServer
from flower_lsp import protocol as p

RUN_S = 300.0  # a whole starter run, on a busy machine
SERVER = [sys.executable, "-m", "flower_lsp"]
# what this client handles of flower's extensions (capabilities.experimental.flower)
HANDLED = p.FlowerCapabilities(ask=True, context=True, event=True)


class TimedSim(SimServer):
    """flower.sim that notes when each reply has been fully sent, and to whom."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.turn_ends: list[tuple[float, str]] = []

    async def _stream(self, request: Any, message: Answer, turn: Any) -> Any:
        resp = await super()._stream(request, message, turn)
        ended = time.perf_counter()
        actor = self.scenario.actor_of(
            RequestView(json.loads(await request.read()))
        )  # aiohttp keeps the body
        self.turn_ends.append((ended, actor))
        return resp


async def _client(env: dict[str, str] | None = None) -> LanguageClient:
    client = LanguageClient("bench", "1", converter_factory=get_converter)
    await client.start_io(*SERVER, env=env)
    return client


def _init_params(workspace: Path, options: dict[str, Any] | None = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            experimental={p.EXPERIMENTAL_KEY: dataclasses.asdict(HANDLED)},
        ),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
        initialization_options=options,
        process_id=os.getpid(),
    )


async def _stop(client: LanguageClient) -> None:
    try:
        async with asyncio.timeout(30):
            await client.shutdown_async(None)
        client.exit(None)
        if client._server is not None:
            async with asyncio.timeout(30):
                await client._server.wait()
    finally:
        await client.stop()


async def bench_start(runs: int, root: Path) -> list[float]:
    out = []
    for i in range(runs):
        ws = root / f"start-{i}"
        ws.mkdir()
        t0 = time.perf_counter()
        client = await _client()
        async with asyncio.timeout(60):
            await client.initialize_async(_init_params(ws))
        out.append(time.perf_counter() - t0)
        client.initialized(types.InitializedParams())
        await _stop(client)
    return out


async def one_starter_run(sim: TimedSim, root: Path, i: int) -> list[float]:
    ws = root / f"meter-{i}"
    ws.mkdir()
    env = dict(os.environ)
    env.update(isolated_env(sim.base_url, root / f"claude-{i}"))
    client = await _client(env)
    seen: list[float] = []
    done = asyncio.Event()

    @client.feature("flower/context")
    def on_context(params: Any) -> None:
        seen.append(time.perf_counter())

    @client.feature("flower/event")
    def on_event(params: Any) -> None:
        if params.get("kind") == "run" and params.get("payload", {}).get("phase") != "started":
            done.set()

    @client.feature("flower/ask")
    def on_ask(params: Any) -> Any:
        return {"answer": params["options"][0] if params["options"] else "ok"}

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def on_progress_create(params: Any) -> None:
        return None

    @client.feature(types.PROGRESS)
    def on_progress(params: Any) -> None:
        return None

    for method in (
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
        types.WINDOW_LOG_MESSAGE,
        types.WINDOW_SHOW_MESSAGE,
    ):
        client.feature(method)(lambda params: None)

    try:
        async with asyncio.timeout(60):
            await client.initialize_async(_init_params(ws, {"timeout_s": 60}))
        client.initialized(types.InitializedParams())
        start = len(sim.turn_ends)
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="flower.start", arguments=[{"ask": "写一个 hello.py"}])
        )
        try:
            async with asyncio.timeout(RUN_S):
                await done.wait()
        except TimeoutError:
            sys.exit(
                f"bench_lsp: the starter run did not end within {RUN_S:.0f} s (no flower/event of its end)"
            )
        turns = [t for t, actor in sim.turn_ends[start:] if actor != "coder"]  # subagents have no meter
    finally:
        await _stop(client)
    latencies = []
    for t in turns:
        k = bisect.bisect_left(seen, t)
        if k < len(seen):
            latencies.append(seen[k] - t)
    return latencies


async def bench_meter(runs: int, root: Path) -> list[float]:
    out: list[float] = []
    for i in range(runs):
        sim = TimedSim(scenarios.starter_scenario())
        with sim:
            out += await one_starter_run(sim, root, i)
    return out


def _describe(values: list[float], unit: str, scale: float, digits: int) -> str:
    if not values:
        return "no samples"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]

    def f(v: float) -> str:
        return f"{v * scale:.{digits}f}"

    return (
        f"median {f(statistics.median(values))} {unit} "
        f"(n={len(values)}, min {f(ordered[0])}, p90 {f(p90)}, max {f(ordered[-1])})"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7, help="server starts to time")
    parser.add_argument("--runs", type=int, default=2, help="whole starter runs for the meter figure")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.starts, args.runs = 1, 1
    scrub_host_model_vars()
    with tempfile.TemporaryDirectory(prefix="flower-bench-lsp-") as tmp:
        root = Path(tmp)
        starts = await bench_start(args.starts, root)
        print(
            f"language server start -> initialize answered: {_describe(starts, 's', 1, 2)}   target <= 1.0 s"
        )
        meter = await bench_meter(args.runs, root)
        if not meter:
            sys.exit(
                "bench_lsp: the starter run sent no flower/context after any model turn: nothing to measure"
            )
        print(
            "model turn in flower.sim -> flower/context at the client: "
            f"{_describe(meter, 'ms', 1000, 1)}   target < 50 ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
