"""The admitted programs, one rule each; a program missing here is never a glance."""

from __future__ import annotations

from . import awk, containers, files, git, jq, search, sed, system, text
from .base import Program

PROGRAMS: dict[str, Program] = {
    p.name: p
    for module in (files, text, search, sed, awk, jq, git, containers, system)
    for p in module.PROGRAMS
}

__all__ = ["PROGRAMS", "Program"]
