"""Byte soups, generated (seeded): what a tool's output holds once the CLI has decoded it (NUL
bytes kept, U+FFFD for invalid UTF-8, lone surrogates from a JSON escape, control characters,
combining marks, emoji, tens of megabytes on one line) goes through the SQLite store, the resume
layers, the spills and the terminal's renderer without a crash, and a spill keeps exactly the
text the CLI delivered."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from store_entries import get, put
from test_guard import bash_response, call, post
from test_trim import COLD, KEY, Transcript

from flower.cli import text as screen
from flower.cli.render import Render
from flower.core.events import Text, ToolCall
from flower.core.guard import spill_guard
from flower.core.workbench import Workbench
from flower.sim.cache import SimClock
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import TrimPolicy

PIECES = ["\x00", "\ufffd", "\ud800", "\udfff", "\x1b[31m", "\r", "\t", "\x7f", "\u0301"]
PIECES += ["🌸", "中文", "é", "a", "\n"]
SEEDS = range(40)


def soup(rng: random.Random, size: int) -> str:
    """Random pieces, as the CLI's JSON can deliver them (a high and a low surrogate side by side
    decode as one character there)."""
    return json.loads(json.dumps("".join(rng.choice(PIECES) for _ in range(size))))


def delivered(text: str) -> bytes:
    """The text as bytes, lone surrogates included, the way flower writes a spill."""
    return text.encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_soup_survives_the_store_the_layers_and_the_spill_byte_for_byte(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    ws = tmp_path / "ws"
    ws.mkdir()
    out = soup(rng, rng.randint(3000, 30000))
    t = Transcript()
    t.prompt(soup(rng, 50))
    t.bash("cat soup", out)
    t.read("/pad", "pad\n")
    plain = SqliteSessionStore(tmp_path / "sessions.db")
    await put(plain, KEY, t.entries)
    plain.close()
    again = SqliteSessionStore(tmp_path / "sessions.db")  # another process reads it back
    try:
        assert await get(again, KEY) == t.entries
    finally:
        again.close()

    clock = SimClock()
    clock.advance(COLD)
    layers = PruningSessionStore(tmp_path / "sessions.db", ws, policy=TrimPolicy(keep_recent=1), clock=clock)
    try:
        loaded = await get(layers, KEY)
    finally:
        layers.close()
    spills = list((ws / ".flower" / "spill").glob("*.txt"))
    assert len(spills) == 1 and loaded != t.entries
    assert hashlib.sha256(spills[0].read_bytes()).digest() == hashlib.sha256(delivered(out)).digest()


@pytest.mark.parametrize("seed", SEEDS)
async def test_the_spill_guard_keeps_exactly_what_the_cli_delivered(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    ws = tmp_path / "ws"
    ws.mkdir()
    wb = Workbench(ws).ensure()
    out = soup(rng, rng.randint(5000, 40000))
    answer = await call(spill_guard(wb), post("Bash", bash_response(out), ws, command="cat soup"))
    pointer = answer["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    (spill,) = (wb.root / "spill").glob("*.txt")
    assert str(spill) in pointer
    assert hashlib.sha256(spill.read_bytes()).digest() == hashlib.sha256(delivered(out)).digest()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_terminal_shows_any_soup_as_printable_utf8(seed: int) -> None:
    rng = random.Random(seed)
    said = soup(rng, rng.randint(1, 5000))
    render = Render(verbose=True)
    lines = render.lines(Text(text=said)) + render.lines(ToolCall(text=said, tool="Bash", id="t1", input={}))
    shown = screen.sanitize(said)
    lines += [*screen.wrap(shown.replace("\n", " "), 80), screen.fit(shown, 60)]
    for line in lines:
        line.encode("utf-8")  # a terminal writes UTF-8: a lone surrogate would raise here
        assert "\x00" not in line and "\x1b" not in line and "\r" not in line


async def test_a_twenty_megabyte_line_is_stored_and_spilled_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    line = ("x\x00\ufffd中" * (5 * 1024 * 1024))[: 20 * 1024 * 1024]
    t = Transcript()
    t.prompt("go")
    t.bash("cat huge", line)
    t.read("/pad", "pad\n")
    clock = SimClock()
    store = PruningSessionStore(tmp_path / "sessions.db", ws, policy=TrimPolicy(keep_recent=1), clock=clock)
    try:
        await put(store, KEY, t.entries)
        clock.advance(COLD)
        loaded: list[dict[str, Any]] = await get(store, KEY)
    finally:
        store.close()
    (spill,) = (ws / ".flower" / "spill").glob("*.txt")
    assert hashlib.sha256(spill.read_bytes()).digest() == hashlib.sha256(delivered(line)).digest()
    assert sum(len(str(e)) for e in loaded) < 100_000  # the resumed prompt holds the pointer only
