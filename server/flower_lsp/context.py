"""The context meter (flower/context): after every model turn of a step's main thread, and at
each handoff phase, what the model saw against the window; `near` past the warning threshold,
`handing_off` while the handoff document is being written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import protocol as p

if TYPE_CHECKING:
    from flower.core.events import Event

    from .runs import Run
    from .server import FlowerServer


def meter(run: Run) -> p.ContextParams:
    live = run.live
    return p.ContextParams(
        folder=run.folder.uri,
        used=live.used,
        window=live.window,
        warn_at=live.warn_at,
        at=live.at,
        step=live.turn_step or live.step,
        round=live.round,
        generation=live.generation,
        cost_usd=live.cost_usd,
        near=live.near,
        handing_off=live.handing_off,
    )


def register(server: FlowerServer) -> None:
    def on_event(run: Run, event: Event) -> None:
        turn = event.kind == "system" and event.payload.get("subtype") == "context"
        if turn or event.kind == "handoff":
            run.server.send(p.CONTEXT, meter(run))

    server.event_listeners.append(on_event)
