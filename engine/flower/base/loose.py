"""Values of unknown shape, read as `object` and checked where they are read.

Parsed JSON, a transcript line, the SDK's loose dicts and a client's settings all arrive
untyped. flower's modules take them as `object` (never `Any`, see pyproject's mypy section) and
ask these readers for the type they need: each says exactly what it accepts, and gives a
neutral value (None, "", {} or []) for anything else, so a malformed value is refused at the
seam instead of failing somewhere later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

# What json.loads can return, for values flower builds and writes out.
JSON: TypeAlias = "str | int | float | bool | list[JSON] | dict[str, JSON] | None"


def mapping(value: object) -> dict[str, object]:
    """A JSON object (a dict with text keys), else an empty one."""
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {str(k): v for k, v in value.items()}
    return {}


def items(value: object) -> list[object]:
    """A JSON array (a list or a tuple), else an empty one."""
    return list(value) if isinstance(value, (list, tuple)) else []


def text(value: object, default: str = "") -> str:
    """A string, else `default`."""
    return value if isinstance(value, str) else default


def nonempty(value: object) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def integer(value: object) -> int | None:
    """An integer (a whole float counts; a bool does not), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def number(value: object) -> float | None:
    """A number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def flag(value: object) -> bool:
    """True only for True itself: "false", 1 or a list are not a yes."""
    return value is True
