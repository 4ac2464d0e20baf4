"""The API's prompt cache as flower.sim plays it, so a run's usage figures mean something.

What the Messages API does, and what is reproduced here:

- The prompt is one sequence of blocks: tool definitions, then system blocks, then every
  content block of every message (a string content is one text block).
- A block marked with ``cache_control`` is a breakpoint (at most 4 per request, else 400).
  After the request, the prefix ending at each breakpoint is in the cache for its ``ttl``
  ("5m" by default, or "1h").
- A request reads the longest cached prefix that ends on a block boundary at most 20
  blocks before one of its breakpoints; reading an entry extends its life. The tokens from
  there to the last breakpoint are written; the tokens after the last breakpoint are
  uncached input.
- A prefix shorter than ``min_tokens`` is never cached (the API's minimum cacheable length).
- ``cache_control`` itself and the string/list form of a content are not part of the
  prompt: two requests that differ only there share their cache.

Tokens come from :mod:`flower.stores.tokens` (4 bytes of UTF-8 a token, per block).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TypedDict

from ..base.loose import items, mapping
from ..stores.tokens import block_tokens

__all__ = ["CacheCreation", "CacheError", "CacheUsage", "InputUsage", "PromptCache", "SimClock"]

MAX_BREAKPOINTS = 4
LOOKBACK = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class SimClock:
    """The time flower.sim lives in: the wall clock plus whatever was skipped.

    ``advance(seconds)`` makes time pass without sleeping, so a test or a benchmark can let a
    cache entry expire instantly. Share one clock between the sim and a store to give both
    the same idea of "now". With ``wall=False`` only ``advance`` moves it: a run's cache
    hits then depend on its script alone, not on how fast the machine was.
    """

    def __init__(self, start: float | None = None, *, wall: bool = True) -> None:
        self._lock = threading.Lock()
        self._wall = wall
        origin = time.time() if wall else 0.0
        self._skipped = (time.time() if start is None else start) - origin

    def __call__(self) -> float:
        with self._lock:
            return (time.time() if self._wall else 0.0) + self._skipped

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._skipped += seconds


class CacheCreation(TypedDict):
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int


class InputUsage(TypedDict):
    """The input half of the API's ``usage`` object."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation: CacheCreation


class CacheError(ValueError):
    """A request the API would refuse for its cache_control marks."""


@dataclass(frozen=True)
class CacheUsage:
    read: int
    write: int
    uncached: int
    write_1h: int = 0

    @property
    def total(self) -> int:
        return self.read + self.write + self.uncached

    def as_usage(self) -> InputUsage:
        """The input half of the API's ``usage`` object."""
        return {
            "input_tokens": self.uncached,
            "cache_creation_input_tokens": self.write,
            "cache_read_input_tokens": self.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.write - self.write_1h,
                "ephemeral_1h_input_tokens": self.write_1h,
            },
        }


@dataclass(frozen=True)
class _Unit:
    digest: str  # hash of the whole prefix ending with this block
    tokens: int
    ttl: float | None  # set when this block is a breakpoint


def _without_mark(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_mark(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_mark(v) for v in value]
    return value


def _ttl(block: object) -> float | None:
    if not isinstance(block, dict) or not isinstance(block.get("cache_control"), dict):
        return None
    mark = mapping(block["cache_control"])
    if mark.get("type") != "ephemeral":
        raise CacheError(f"cache_control.type must be 'ephemeral', got {mark.get('type')!r}")
    ttl = mark.get("ttl", "5m")
    # a ttl that is no string (a list, say) is refused like an unknown one, not a crash
    if not isinstance(ttl, str) or ttl not in TTL_SECONDS:
        raise CacheError(f"cache_control.ttl must be one of {sorted(TTL_SECONDS)}, got {ttl!r}")
    return TTL_SECONDS[ttl]


def _blocks(body: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    """(where, block) for every block of the prompt, in the order the API reads them."""
    for tool in items(body.get("tools")):
        yield "tool", tool
    system = body.get("system")
    if isinstance(system, str) and system:
        yield "system", {"type": "text", "text": system}
    elif isinstance(system, list):
        for block in system:
            yield "system", block
    for message in items(body.get("messages")):
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", ""))
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else items(content)
        for i, block in enumerate(parts):
            # the first block of a message also carries the turn boundary
            yield (f"{role}:{'start' if i == 0 else 'more'}", block)


def prompt_units(body: Mapping[str, object]) -> list[_Unit]:
    units: list[_Unit] = []
    digest = hashlib.sha256()
    for where, block in _blocks(body):
        digest.update(where.encode())
        digest.update(json.dumps(_without_mark(block), sort_keys=True, ensure_ascii=False).encode())
        units.append(_Unit(digest.copy().hexdigest(), block_tokens(block), _ttl(block)))
    return units


def prompt_tokens(body: Mapping[str, object]) -> int:
    """Every input token of a request, cached or not."""
    return sum(block_tokens(block) for _, block in _blocks(body))


class PromptCache:
    """Cache entries by prefix digest, each with its expiry time on ``clock``."""

    def __init__(self, clock: SimClock | None = None, *, min_tokens: int = 1024) -> None:
        self.clock = clock if clock is not None else SimClock()
        self.min_tokens = min_tokens
        self._entries: dict[str, tuple[float, float]] = {}  # digest -> (expires at, ttl)
        self._lock = threading.Lock()

    def serve(self, body: Mapping[str, object]) -> CacheUsage:
        """Account one request as the API would, and update the cache with its breakpoints."""
        units = prompt_units(body)
        marks = [i for i, u in enumerate(units) if u.ttl is not None]
        if len(marks) > MAX_BREAKPOINTS:
            raise CacheError(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(marks)}."
            )
        ends = [0] * len(units)
        running = 0
        for i, unit in enumerate(units):
            running += unit.tokens
            ends[i] = running
        now = self.clock()
        with self._lock:
            hit = -1
            for mark in marks:
                for i in range(mark, max(mark - LOOKBACK, -1), -1):
                    if i <= hit:
                        break
                    found = self._entries.get(units[i].digest)
                    if found is not None and found[0] > now:
                        hit = i
                        break
            read = ends[hit] if hit >= 0 else 0
            written_to = hit
            write_1h = 0
            for mark in marks:
                ttl = units[mark].ttl or TTL_SECONDS["5m"]
                current = self._entries.get(units[mark].digest)
                life = max(ttl, current[1]) if current is not None and current[0] > now else ttl
                if mark <= hit:
                    # already paid for as a read: only its life is extended
                    self._entries[units[mark].digest] = (now + life, life)
                    continue
                if ends[mark] < self.min_tokens:
                    continue
                self._entries[units[mark].digest] = (now + life, life)
                if ttl > TTL_SECONDS["5m"]:
                    write_1h += ends[mark] - (ends[written_to] if written_to >= 0 else 0)
                written_to = mark
            if hit >= 0 and hit not in marks:
                life = self._entries[units[hit].digest][1]
                self._entries[units[hit].digest] = (now + life, life)
            write = (ends[written_to] if written_to >= 0 else 0) - read
            self._forget(now)
        return CacheUsage(read=read, write=write, uncached=running - read - write, write_1h=write_1h)

    def _forget(self, now: float) -> None:
        if len(self._entries) > 4096:
            self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
