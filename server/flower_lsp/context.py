"""The context meter (flower/context): after every model turn of a step's main thread, and at
each handoff phase, what the model saw against the window; `near` past the warning threshold,
`handing_off` while the handoff document is being written.

A client that does not declare `context` gets each reading as a window/logMessage line in the
terminal's words (`上下文 80.2K/1M`), and in the run's progress message (progress.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.base.i18n import _
from flower.core.display import format_tokens
from flower.core.events import ContextUpdate, Event, HandoffDone, HandoffNear, HandoffWriting

from . import protocol as p
from .host import Feature

if TYPE_CHECKING:
    from .run import Live, Run


class ContextMeter(Feature):
    def on_event(self, run: Run, event: Event) -> None:
        client = self.server.client
        if client.can.flower.context:
            if isinstance(event, (ContextUpdate, HandoffNear, HandoffWriting, HandoffDone)):
                client.send(p.CONTEXT, meter(run))
        elif isinstance(event, ContextUpdate):
            step = run.live.turn_step or run.live.step
            client.log(f"{meter_text(run.live)} · {step}" if step else meter_text(run.live))


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


def meter_text(live: Live) -> str:
    """The meter as the terminal's status line says it; empty before the first reading."""
    if not live.window:
        return ""
    text = _("上下文 {used}/{window}").format(
        used=format_tokens(live.used), window=format_tokens(live.window)
    )
    if live.handing_off:
        return _("{meter}(正在换代)").format(meter=text)
    return _("{meter}(快到换代了)").format(meter=text) if live.near else text
