"""How the protocol writes a type: TypeScript's notation, in the generated TypeScript, the reference
for other clients and the wire's error messages alike."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Literal, Union

from . import protocol as p


def ts_type(tp: object) -> str:
    """The TypeScript spelling of a payload field's type."""
    for alias, target in p.ALIASES.items():
        if tp == target:
            return alias
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is object or tp is typing.Any:  # whatever JSON comes
        return "unknown"
    if origin in (Union, types.UnionType):
        parts = [ts_type(a) for a in args if a is not type(None)]
        if type(None) in args:
            parts.append("null")
        return " | ".join(parts)
    if origin is Literal:
        return " | ".join(ts_string(a) for a in args)
    if origin is list:
        inner = ts_type(args[0])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {ts_type(args[1])}>"
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp.__name__
    names: dict[object, str] = {str: "string", bool: "boolean", int: "number", float: "number"}
    return names[tp]


def ts_string(value: str) -> str:
    """A string literal, double-quoted as TypeScript (and JSON) write it."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
