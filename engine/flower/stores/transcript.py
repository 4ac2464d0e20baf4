"""Reading the CLI's transcript entries: content blocks, tool results and the live chain.

Entries are the JSONL lines the CLI writes (and the SDK mirrors into the store). Only
``user`` / ``assistant`` entries carry model messages; the others are bookkeeping.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = [
    "Entry",
    "blocks_of",
    "is_api_error_the_cli_drops",
    "is_block",
    "live_chain",
    "plain_text",
    "replace_block",
    "result_text",
    "timestamp_of",
    "tool_result_positions",
]

Entry = dict[str, Any]

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


def blocks_of(entry: Entry) -> list[Any] | None:
    """The content block list of an entry's message, or None if it has none."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def is_block(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def replace_block(entries: list[Entry], i: int, j: int, block: dict[str, Any]) -> None:
    """Copy-on-write replacement of one content block, so the caller's dicts stay intact."""
    entry = entries[i]
    message = entry["message"]
    content = list(message["content"])
    content[j] = block
    entries[i] = {**entry, "message": {**message, "content": content}}


def plain_text(content: Any) -> str | None:
    """The text of a result made only of text (a str, or a list of text parts), else None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        is_block(part, "text") and isinstance(part.get("text"), str) for part in content
    ):
        return "".join(part["text"] for part in content)
    return None


def result_text(block: dict[str, Any]) -> str:
    """The text parts of a tool_result's content, joined (non-text parts ignored)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if is_block(p, "text") and isinstance(p.get("text"), str))
    return ""


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
