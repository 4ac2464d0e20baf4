"""flower/state: what wake_state() says about a folder, plus what is running there now."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import protocol as p

if TYPE_CHECKING:
    from .server import FlowerServer, Folder


async def state_of(server: FlowerServer, folder: Folder) -> p.StateResult:
    from .questions import params_of

    wake: dict[str, Any] = await asyncio.to_thread(server.engine.wake_state, folder.path, folder.run_dir)
    run = server.runs.active.get(folder.uri)
    memory = server.runs.memory_of(folder)
    live = memory.live
    pending = []
    if run is not None:
        try:
            pending = [params_of(run, a) for a in run.channel.pending()]
        except Exception:
            pending = []
    steps = wake.get("steps") if isinstance(wake.get("steps"), dict) else {}
    return p.StateResult(
        folder=folder.uri,
        workspace=str(folder.path),
        run_dir=str(folder.run_dir),
        waking=bool(wake.get("waking")),
        brief=str(Path(wake.get("brief", ""))),
        goal=str(Path(wake.get("goal", ""))),
        checks=int(wake.get("checks") or 0),
        woke=int(wake.get("woke") or 0),
        steps={str(k): str(v) for k, v in steps.items()},
        running=run is not None,
        step=live.step,
        index=live.index,
        total=live.total,
        round=live.round,
        generation=live.generation,
        used=live.used,
        window=live.window,
        cost_usd=live.cost_usd,
        near=live.near,
        handing_off=live.handing_off,
        verdict=memory.verdict,
        pending=pending,
    )


def register(server: FlowerServer) -> None:
    from .server import invalid_params

    @server.feature(p.STATE)
    async def flower_state(ls, params: Any) -> dict[str, Any]:
        try:
            args = p.from_json(p.StateParams, params, p.STATE)
            folder = ls.folder(args.folder)
        except p.ProtocolError as exc:
            raise invalid_params(exc) from exc
        return p.to_json(await state_of(ls, folder))
