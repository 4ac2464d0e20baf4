"""Expiry of ephemeral ("glance") Bash results, and where the store asks which commands they are.

Which commands are glances is decided by ``flower.shell`` alone: ``delegate_guard(allow_glance=True)``
lets exactly those run on the coordinator's main thread, and the trim layer expires exactly their
results, both asking ``is_ephemeral`` with the folder the command runs in.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..shell import is_ephemeral

__all__ = ["EphemeralPolicy", "is_ephemeral"]


@dataclass
class EphemeralPolicy:
    """Expiry policy for results of ephemeral Bash commands (applied on resume)."""

    enabled: bool = True
    keep_recent: int = 6
    max_chars: int = 2000
    text: str = "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]"

    def placeholder(self, cmd: str, age: int) -> str:
        """Text that replaces an expired result."""
        return self.text.format(cmd=cmd, age=age)
