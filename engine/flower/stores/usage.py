"""What sessions.db says about the model turns of main transcripts, read-only.

Every assistant entry the CLI writes carries the usage of the request that produced it; one
model turn is written as several entries (one per content block) under one message id. This
module reads, for a set of sessions, each turn once (its time, the context it saw), each prompt
a session was sent (its time and the start of its text) and the calls of the tools asked for
(their time and input), in transcript order. It opens the file read-only: it never writes to
the database or its WAL, so it is safe beside a running writer.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..base.loose import items, mapping
from ..base.usage import context_tokens
from .transcript import SYNTHETIC_MODEL, timestamp_of

PROMPT_CHARS = 200
_CHUNK = 400  # session ids per query: well below SQLite's bound-parameter limit

# One row per user or assistant entry, with only what a turn needs taken out of the JSON in
# SQLite (no Python objects for whole tool results); the content only of entries that name one
# of the tools asked for (the store writes compact JSON, so such a call reads `"name":"<tool>"`).
_QUERY = """
SELECT m.session_id,
       json_extract(e.payload, '$.type'),
       json_extract(e.payload, '$.timestamp'),
       json_extract(e.payload, '$.message.id'),
       json_extract(e.payload, '$.message.model'),
       json_extract(e.payload, '$.message.usage'),
       CASE WHEN json_type(e.payload, '$.message.content') = 'text'
            THEN substr(json_extract(e.payload, '$.message.content'), 1, ?) END,
       CASE WHEN {named} THEN json_extract(e.payload, '$.message.content') END
FROM meta AS m JOIN entries AS e ON e.key_id = m.id
WHERE m.subpath = '' AND m.session_id IN ({marks})
  AND json_extract(e.payload, '$.type') IN ('user', 'assistant')
ORDER BY e.key_id, e.seq
"""


@dataclass(frozen=True)
class StoredMessage:
    """A model turn (`assistant`: `used` tokens of context), a prompt (`prompt`: `text`), or a
    call of one of the tools asked for (`call`: `tool` and its `input`)."""

    kind: Literal["assistant", "prompt", "call"]
    at: float  # epoch seconds, from the entry's timestamp
    used: int = 0
    text: str = ""
    tool: str = ""
    input: dict[str, object] = field(default_factory=dict)


class UnreadableStore(RuntimeError):
    """sessions.db exists but SQLite cannot read it; the message says why."""


def read_messages(
    db: Path, sessions: Iterable[str], *, calls: tuple[str, ...] = ()
) -> dict[str, list[StoredMessage]]:
    """Each session's turns, prompts and calls of the tools named in `calls`, in transcript
    order (a call follows the turn that made it); a session the store lacks is absent.

    Turns without usage (synthetic error messages, an interrupted stream) are left out: they say
    nothing about what the model saw. Raises UnreadableStore when the file cannot be read.
    """
    wanted = sorted({s for s in sessions if s})
    out: dict[str, list[StoredMessage]] = {}
    if not wanted or not db.is_file():
        return out
    named = " OR ".join(["instr(e.payload, ?) > 0"] * len(calls)) or "0"
    needles = [json.dumps({"name": tool}, separators=(",", ":"))[1:-1] for tool in calls]
    try:
        conn = sqlite3.connect(_read_only_uri(db), uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise UnreadableStore(f"{db}: {exc}") from exc
    try:
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            query = _QUERY.format(named=named, marks=",".join("?" * len(chunk)))
            seen: set[tuple[str, str]] = set()
            for row in conn.execute(query, (PROMPT_CHARS, *needles, *chunk)):
                _take(out, seen, calls, *row)
    except sqlite3.Error as exc:
        raise UnreadableStore(f"{db}: {exc}") from exc
    finally:
        conn.close()
    return out


def _take(
    out: dict[str, list[StoredMessage]],
    seen: set[tuple[str, str]],
    calls: tuple[str, ...],
    sid: str,
    kind: str,
    stamp: object,
    message_id: object,
    model: object,
    usage: object,
    text: object,
    content: object,
) -> None:
    at = timestamp_of(stamp)
    if at is None:
        return
    found = out.setdefault(sid, [])
    if kind == "user":
        if isinstance(text, str) and text:
            found.append(StoredMessage("prompt", at, text=text))
        return
    if model == SYNTHETIC_MODEL:
        return
    used = context_tokens(_json(usage))
    key = (sid, message_id) if isinstance(message_id, str) else None
    if used and (key is None or key not in seen):
        if key is not None:
            seen.add(key)  # the same turn's next content blocks say nothing new
        found.append(StoredMessage("assistant", at, used=used))
    for block in _blocks(content):
        if block.get("type") == "tool_use" and block.get("name") in calls:
            found.append(
                StoredMessage("call", at, tool=str(block["name"]), input=mapping(block.get("input")))
            )


def _read_only_uri(db: Path) -> str:
    """Without a writer (no -wal, no -shm beside it) the file is read as immutable, so that not
    even SQLite's shared-memory index is created; beside a writer, as one more reader of its WAL
    (which takes a read mark in the writer's -shm, as every SQLite reader does)."""
    uri = f"{db.resolve().as_uri()}?mode=ro"
    companions = (db.with_name(db.name + suffix) for suffix in ("-wal", "-shm"))
    return uri if any(p.exists() for p in companions) else uri + "&immutable=1"


def _blocks(content: object) -> list[dict[str, object]]:
    return [mapping(b) for b in items(_json(content)) if isinstance(b, dict)]


def _json(text: object) -> object:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


__all__ = ["StoredMessage", "UnreadableStore", "read_messages"]
