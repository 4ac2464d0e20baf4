"""What the client can take: the flower extensions it declared (capabilities.experimental.flower)
and the standard features the fallbacks need. Read once, at initialize; every part asks here
instead of reading the client's capabilities itself."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lsprotocol import types

from . import protocol as p


@dataclass(frozen=True)
class Negotiated:
    flower: p.FlowerCapabilities = field(default_factory=p.FlowerCapabilities)
    show_message_request: bool = False  # window/showMessageRequest (window.showMessage)
    show_document: bool = False  # window/showDocument (window.showDocument.support)
    work_done_progress: bool = False  # server-initiated progress (window.workDoneProgress)
    ignored: tuple[str, ...] = ()  # what the client declared under `flower` that this server does not know

    @property
    def can_ask(self) -> bool:
        """Some way exists to put a question in front of the person."""
        return self.flower.ask or self.show_message_request

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities | None) -> Negotiated:
        if capabilities is None:
            return cls()
        window = capabilities.window
        flower, ignored = declared(capabilities.experimental)
        return cls(
            flower=flower,
            show_message_request=window is not None and window.show_message is not None,
            show_document=bool(window and window.show_document and window.show_document.support),
            work_done_progress=bool(window and window.work_done_progress),
            ignored=ignored,
        )


def declared(experimental: object) -> tuple[p.FlowerCapabilities, tuple[str, ...]]:
    """The flower extensions under `experimental`, and the names it declares that are unknown here
    (a newer client's: ignored rather than refused). Anything but `true` leaves an extension off."""
    section = experimental.get(p.EXPERIMENTAL_KEY) if isinstance(experimental, dict) else None
    if not isinstance(section, dict):
        return p.FlowerCapabilities(), ()
    known = {f.name for f in dataclasses.fields(p.FlowerCapabilities)}
    flags = {name: section[name] is True for name in known if name in section}
    return p.FlowerCapabilities(**flags), tuple(sorted(set(section) - known))
