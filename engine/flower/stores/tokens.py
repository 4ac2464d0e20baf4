"""How a prompt is counted and priced: one deterministic approximation used everywhere.

The real tokenizer is not available offline, so flower.sim, the stores and the benchmarks
all count with the same rule: **one token per 4 bytes of UTF-8, rounded up, per content
block**. English prose comes out near the real figure (about 4 characters a token); CJK text
(3 bytes a character) at 0.75 tokens a character, close enough to compare two prompts that
hold the same kind of text. Only ratios between such counts are ever reported.

Prices follow the API's prompt cache: a cache read costs 0.1x the input price, a cache write
1.25x (5-minute entries; 1-hour entries cost 2x), everything after the last cache
breakpoint 1x.
"""

from __future__ import annotations

import json

__all__ = [
    "CACHE_READ",
    "CACHE_WRITE",
    "CACHE_WRITE_1H",
    "block_text",
    "block_tokens",
    "entry_tokens",
    "input_cost",
    "text_tokens",
]

CACHE_READ = 0.1
CACHE_WRITE = 1.25
CACHE_WRITE_1H = 2.0

_BYTES_PER_TOKEN = 4


def text_tokens(text: str) -> int:
    """Tokens of a piece of text: ceil(UTF-8 bytes / 4)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    return -(-size // _BYTES_PER_TOKEN)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def block_text(block: object) -> str:
    """The text a content block contributes to the prompt.

    Text, thinking and tool results count by their text; a tool call by its name and compact
    JSON input; anything else (images, documents, tool definitions) by its compact JSON
    without the ``cache_control`` mark, which is not part of the prompt.
    """
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return _compact(block)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return str(block["thinking"])
    if kind == "tool_use":
        return f"{block.get('name', '')}{_compact(block.get('input', {}))}"
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "".join(block_text(part) for part in content)
        return content if isinstance(content, str) else ""
    return _compact({k: v for k, v in block.items() if k != "cache_control"})


def block_tokens(block: object) -> int:
    return text_tokens(block_text(block))


def entry_tokens(entry: object) -> int:
    """Tokens one transcript entry puts in a request (0 for bookkeeping lines)."""
    if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
        return 0
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return text_tokens(content)
    return sum(block_tokens(b) for b in content) if isinstance(content, list) else 0


def input_cost(*, read: int, write: int, uncached: int, write_1h: int = 0) -> float:
    """A request's input cost in input-token equivalents (multiply by the input price)."""
    return CACHE_READ * read + CACHE_WRITE * (write - write_1h) + CACHE_WRITE_1H * write_1h + uncached
