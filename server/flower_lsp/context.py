"""The context meter (flower/context): after every model turn of a step's main thread, and at
each handoff phase, what the model saw against the window; `near` past the warning threshold,
`handing_off` while the handoff document is being written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.core.events import ContextUpdate, Event, HandoffDone, HandoffNear, HandoffWriting

from . import protocol as p
from .host import Feature

if TYPE_CHECKING:
    from .run import Run


class ContextMeter(Feature):
    def on_event(self, run: Run, event: Event) -> None:
        if isinstance(event, (ContextUpdate, HandoffNear, HandoffWriting, HandoffDone)):
            self.server.client.send(p.CONTEXT, meter(run))


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
