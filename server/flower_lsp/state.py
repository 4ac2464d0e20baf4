"""flower/state: what wake_state() says about a folder, plus what is running there now and the
questions waiting in it (the engine's and the server's own)."""

from __future__ import annotations

import asyncio

from . import protocol as p
from . import wire
from .common import Folder, parse_params
from .host import Feature, FlowerServer
from .questions import Questions, params_of
from .runs import Runs


class State(Feature):
    def register(self) -> None:
        @self.server.feature(p.STATE)
        async def flower_state(ls: FlowerServer, params: object) -> object:
            return await self.state(params)

    async def state_of(self, folder: Folder) -> p.StateResult:
        wake = await asyncio.to_thread(self.server.engine.wake_state, self.server.settings_for(folder))
        runs = self.server.get(Runs)
        run = runs.active.get(folder.uri)
        memory = runs.memory_of(folder)
        live = memory.live
        pending: list[p.AskParams] = []
        if run is not None:
            try:
                pending = [params_of(run, a) for a in run.channel.pending()]
            except Exception:
                pending = []
        pending += self.server.get(Questions).own_waiting(folder.uri)
        return p.StateResult(
            folder=folder.uri,
            workspace=str(folder.path),
            run_dir=str(folder.run_dir),
            waking=wake["waking"],
            brief=str(wake["brief"]),
            goal=str(wake["goal"]),
            checks=wake["checks"],
            woke=wake["woke"],
            steps=dict(wake["steps"]),
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

    async def state(self, params: object) -> object:
        """The flower/state request."""
        args = parse_params(p.StateParams, params, p.STATE)
        return wire.to_json(await self.state_of(self.server.folder_arg(args.folder)))
