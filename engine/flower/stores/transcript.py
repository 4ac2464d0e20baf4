"""Reading the CLI's transcript entries: content blocks, tool results and the live chain.

Entries are the JSONL lines the CLI writes (and the SDK mirrors into the store). Only
``user`` / ``assistant`` entries carry model messages; the others are bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeGuard

from ..base.loose import items, mapping

if TYPE_CHECKING:
    # types only: importing the SDK costs the language server's start half a second
    from claude_agent_sdk.types import SessionStoreEntry

__all__ = [
    "Entry",
    "block_at",
    "blocks_of",
    "editable",
    "is_api_error_the_cli_drops",
    "is_block",
    "link",
    "live_chain",
    "plain_text",
    "replace_block",
    "result_text",
    "stored",
    "timestamp_of",
    "tool_result_positions",
]

# One transcript line as the layers rework it: a JSON object. The SDK's SessionStoreEntry types
# only `type`, `uuid` and `timestamp`; every other field is opaque JSON, read as `object`.
Entry = dict[str, object]

SYNTHETIC_MODEL = "<synthetic>"
# Entry types the CLI threads on the parentUuid chain.
_CHAINED = ("user", "assistant", "attachment", "system")


def timestamp_of(stamp: object) -> float | None:
    """An entry's `timestamp` (ISO 8601, `Z` for UTC) in epoch seconds; None if it is not one."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def is_stored(value: object) -> TypeGuard[SessionStoreEntry]:
    """A transcript line as the SDK's stores type it: a JSON object with a text `type`, and a text
    `uuid` and `timestamp` where it has them."""
    # spelled out, not a loop over the names: every load checks every entry twice
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and isinstance(value.get("uuid", ""), str)
        and isinstance(value.get("timestamp", ""), str)
    )


def editable(rows: Sequence[object]) -> list[Entry] | None:
    """A store's rows as entries for a layer to rework, or None when one of them is not an entry
    of the SDK's shape (``is_stored``): such a transcript goes back to the CLI exactly as it was
    stored, since nothing the layers decide could be trusted on it. The rows are not copied:
    every layer works copy-on-write (``replace_block``, ``{**entry, ...}``)."""
    out: list[Entry] = []
    for row in rows:
        if not isinstance(row, dict):
            return None
        shaped = is_stored(row)  # a plain bool: the row stays an Entry for the layers
        if not shaped:
            return None
        out.append(row)
    return out


def stored(entries: list[Entry], given: Sequence[SessionStoreEntry]) -> list[SessionStoreEntry]:
    """A reworked copy in the SDK's type again. An entry that is one of the rows `given` is that
    row; any other is one a layer built (with a `type` and a text `uuid`) and is checked."""
    typed = {id(row): row for row in given}
    out: list[SessionStoreEntry] = []
    for entry in entries:
        same = typed.get(id(entry))
        if same is not None:
            out.append(same)
        elif is_stored(entry):
            out.append(entry)
    return out


def link(value: object) -> str | None:
    """An id or a link between entries (``uuid``, ``parentUuid``, ``tool_use_id``): text, else
    None. A malformed one (a list, an object) points nowhere, instead of failing every lookup
    it reaches with an unhashable key."""
    return value if isinstance(value, str) else None


def blocks_of(entry: Entry) -> list[object] | None:
    """The content block list of an entry's message, or None if it has none."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def is_block(block: object, kind: str) -> TypeGuard[dict[str, object]]:
    """A content block (a JSON object) of type `kind`."""
    return isinstance(block, dict) and block.get("type") == kind


def block_at(entries: Sequence[Entry], i: int, j: int) -> dict[str, object]:
    """Block `j` of entry `i`'s content, as ``tool_result_positions`` found it."""
    blocks = blocks_of(entries[i]) or []
    block = blocks[j] if 0 <= j < len(blocks) else None
    return block if isinstance(block, dict) else {}  # the block itself: callers copy on write


def replace_block(entries: list[Entry], i: int, j: int, block: dict[str, object]) -> None:
    """Copy-on-write replacement of one content block, so the caller's dicts stay intact."""
    entry = entries[i]
    message = mapping(entry.get("message"))
    content = items(message.get("content"))
    if not 0 <= j < len(content):
        return  # not a block of this entry: nothing to replace
    content[j] = block
    entries[i] = {**entry, "message": {**message, "content": content}}


def _text_of(part: object) -> str | None:
    """The text of a text part, else None."""
    if not is_block(part, "text"):
        return None
    text = part.get("text")
    return text if isinstance(text, str) else None


def plain_text(content: object) -> str | None:
    """The text of a result made only of text (a str, or a list of text parts), else None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_text_of(part) for part in content]
        if all(t is not None for t in texts):
            return "".join(t for t in texts if t is not None)
    return None


def result_text(block: dict[str, object]) -> str:
    """The text parts of a tool_result's content, joined (non-text parts ignored)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(t for t in map(_text_of, items(content)) if t is not None)


def tool_result_positions(entries: list[Entry]) -> list[tuple[int, int]]:
    """(entry index, block index) of every tool_result, in transcript order.

    Only transcript messages count: bookkeeping lines such as ``api-request-blob`` carry
    copies of results but are not what the model resumes with. Compact summaries are left
    out: they are never touched.
    """
    positions: list[tuple[int, int]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("type") != "user":
            continue
        if entry.get("isCompactSummary"):
            continue
        blocks = blocks_of(entry)
        if blocks is None:
            continue
        for j, block in enumerate(blocks):
            if is_block(block, "tool_result"):
                positions.append((i, j))
    return positions


def is_api_error_the_cli_drops(entry: Entry) -> bool:
    """A synthetic API-error message in the shape CLI 2.1.327 leaves out of its requests.

    Measured on captured requests: both marks are needed. An entry with only one of them
    (``isApiErrorMessage`` on a real model, or ``<synthetic>`` without the flag) is sent.
    """
    message = entry.get("message")
    return (
        entry.get("type") == "assistant"
        and entry.get("isApiErrorMessage") is True
        and isinstance(message, dict)
        and message.get("model") == SYNTHETIC_MODEL
    )


def live_chain(entries: list[Entry]) -> list[int]:
    """Indices of the entries the CLI resumes with, oldest first.

    The CLI walks ``parentUuid`` back from the last chained entry of the main thread. A
    compaction starts a new root (its boundary has no parent), so history before the last
    compaction is stored but never sent again.
    """
    index: dict[str, int] = {}
    leaf: int | None = None
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("type") not in _CHAINED:
            continue
        uid = entry.get("uuid")
        if isinstance(uid, str):
            index[uid] = i
        if not entry.get("isSidechain") and isinstance(uid, str):
            leaf = i
    chain: list[int] = []
    seen: set[int] = set()
    node = leaf
    while node is not None and node not in seen:
        seen.add(node)
        chain.append(node)
        parent = entries[node].get("parentUuid")
        node = index.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain
