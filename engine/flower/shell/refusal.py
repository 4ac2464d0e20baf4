"""The one exception every check raises when a command cannot be proven a glance."""

from __future__ import annotations


class Refused(Exception):
    """A command is not a glance; ``reason`` says which rule it broke, in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
