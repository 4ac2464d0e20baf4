"""The protocol on the wire: payloads coming in checked field by field against the schema
(protocol.py), payloads going out as plain JSON values."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Literal, Union

from .notation import ts_type
from .protocol import Payload


class ProtocolError(ValueError):
    """A payload that does not match its declared type; the message says where and why."""


def to_json(obj: object) -> object:
    """A payload dataclass (or anything made of them) as plain JSON values; anything else (an
    lsprotocol object) as it is."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def from_json(cls: type[Payload], value: object, where: str = "") -> Payload:
    """Build payload `cls` from a JSON value, checking every field; raises ProtocolError."""
    where = where or cls.__name__
    if value is None or _empty_array(value):
        value = {}
    if not isinstance(value, dict):
        raise ProtocolError(f"{where}: expected an object, got {_json_type(value)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ProtocolError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})")
    kwargs: dict[str, object] = {}
    for name, f in known.items():
        if name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ProtocolError(f"{where}: missing required field '{name}'")
            continue
        kwargs[name] = _check(hints[name], value[name], f"{where}.{name}")
    return cls(**kwargs)


def _check(tp: object, value: object, where: str) -> object:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is object or tp is typing.Any:  # whatever JSON comes
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _check(arg, value, where)
            except ProtocolError as exc:
                errors.append(str(exc))
        raise ProtocolError(
            errors[0] if len(errors) == 1 else f"{where}: got {_json_type(value)}, expected {ts_type(tp)}"
        )
    if origin is Literal:
        if value not in args:
            raise ProtocolError(f"{where}: must be one of {', '.join(repr(a) for a in args)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected an array, got {_json_type(value)}")
        return [_check(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if _empty_array(value):
            return {}
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {_json_type(value)}")
        return {k: _check(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_json(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise ProtocolError(f"{where}: expected a boolean, got {_json_type(value)}")
        return value
    if tp in (int, float):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (tp is int and not float(value).is_integer())
        ):
            raise ProtocolError(
                f"{where}: expected a{'n integer' if tp is int else ' number'}, got {_json_type(value)}"
            )
        return int(value) if tp is int else float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ProtocolError(f"{where}: expected a string, got {_json_type(value)}")
        return value
    raise ProtocolError(f"{where}: unsupported type {tp!r}")


def _empty_array(value: object) -> bool:
    """`[]` where an object is expected: what clients whose empty table is also an empty list
    (Lua, so Neovim) send for `{}`; read as the empty object."""
    return isinstance(value, list) and not value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def command_args(cls: type[Payload], command: str, args: tuple[object, ...]) -> Payload:
    """A command's arguments (none, or one object) as `cls`; raises ProtocolError."""
    if len(args) > 1:
        raise ProtocolError(f"{command}: expected at most one argument (an object), got {len(args)}")
    return from_json(cls, args[0] if args else None, command)
