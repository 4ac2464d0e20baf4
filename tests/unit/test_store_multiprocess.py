"""Several OS processes sharing one store, as parallel flower runs do: one sessions.db file, or
one PostgreSQL database (a fresh one on the session's real server)."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.types import SessionKey

from flower.stores.postgres import PostgresSessionStore
from flower.stores.sqlite import SqliteSessionStore

SHARED: SessionKey = {"project_key": "-work-proj", "session_id": "shared"}
BATCHES = 40
BATCH_SIZE = 5
OVERLAP = 10  # uuids every writer appends, to exercise cross-process dedup

WRITER = r"""
import asyncio, json, sys, time
from pathlib import Path
from flower.stores.postgres import PostgresSessionStore
from flower.stores.sqlite import SqliteSessionStore

db, name, go, out = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
batches, size, overlap = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
shared = {"project_key": "-work-proj", "session_id": "shared"}
own = {"project_key": "-work-proj", "session_id": "own-" + name}

async def main():
    store = PostgresSessionStore(db) if db.startswith("postgresql://") else SqliteSessionStore(db)
    # Imports take a while; signal readiness so all writers start together.
    (go.parent / ("ready-" + name)).touch()
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("start signal never came")
        time.sleep(0.005)
    stamps = []
    for b in range(batches):
        batch = [
            {"type": "user", "uuid": f"{name}-{b}-{i}", "writer": name, "batch": b, "i": i}
            for i in range(size)
        ]
        await store.append(shared, batch)
        # Replays from a retrying mirror must not duplicate anything.
        await store.append(shared, batch[: size // 2])
        if b < overlap:
            await store.append(shared, [{"type": "user", "uuid": f"common-{b}", "batch": b}])
        await store.append(own, [{"type": "user", "uuid": f"own-{b}"}])
        listed = {s["session_id"]: s["mtime"] for s in await store.list_sessions("-work-proj")}
        stamps.append(listed[own["session_id"]])
        time.sleep(0.002)  # a mirror flushes every ~100 ms; leave room for peers
    store.close()
    out.write_text(json.dumps(stamps))

asyncio.run(main())
"""


def open_store(where: str) -> SqliteSessionStore | PostgresSessionStore:
    return PostgresSessionStore(where) if where.startswith("postgresql://") else SqliteSessionStore(where)


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the writers meet: a sessions.db not created yet, or a fresh database."""
    if request.param == "sqlite":
        return str(tmp_path / "runs" / "sessions.db")
    return str(request.getfixturevalue("pg_url"))


def start_writers(tmp_path: Path, db: str, names: list[str]) -> tuple[Path, list]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    procs = []
    for name in names:
        out = tmp_path / f"{name}.json"
        args = [str(db), name, str(go), str(out), str(BATCHES), str(BATCH_SIZE), str(OVERLAP)]
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script), *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{n}").exists() for n in names):
        assert time.monotonic() < deadline, "writers never became ready"
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    return go, procs


def finish(procs: list) -> None:
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err


def check_snapshot(entries: list[dict[str, Any]], names: list[str]) -> None:
    """What any reader may see at any instant: whole batches, no duplicates,
    each writer's batches in the order it appended them."""
    uuids = [x["uuid"] for x in entries]
    assert len(uuids) == len(set(uuids))
    per_batch = Counter((x["writer"], x["batch"]) for x in entries if "writer" in x)
    assert all(n == BATCH_SIZE for n in per_batch.values()), per_batch
    for name in names:
        order = [(x["batch"], x["i"]) for x in entries if x.get("writer") == name]
        assert order == sorted(order)
        assert order == [(b, i) for b in range(len(order) // BATCH_SIZE) for i in range(BATCH_SIZE)]


def test_parallel_writers_lose_and_duplicate_nothing(tmp_path: Path, where: str) -> None:
    # No pre-created file or schema: the writers also race to create it.
    names = ["w1", "w2", "w3"]
    go, procs = start_writers(tmp_path, where, names)
    go.touch()
    finish(procs)

    store = open_store(where)
    try:
        loaded = asyncio.run(store.load(SHARED))
        assert loaded is not None
        entries: list[dict[str, Any]] = [dict(x) for x in loaded]
        check_snapshot(entries, names)
        expected = {f"{n}-{b}-{i}" for n in names for b in range(BATCHES) for i in range(BATCH_SIZE)}
        expected |= {f"common-{b}" for b in range(OVERLAP)}
        assert sorted(x["uuid"] for x in entries) == sorted(expected)
        writers_seen = [x["writer"] for x in entries if "writer" in x]
        # The batches really interleaved rather than running one process after another.
        switches = sum(1 for a, b in itertools.pairwise(writers_seen) if a != b)
        assert switches >= len(names)

        # Every stamp any process received is unique and each process saw its
        # own stamps strictly increase: the clock is shared through the store.
        stamps = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in names}
        for own in stamps.values():
            assert all(b > a for a, b in itertools.pairwise(own))
        everything = [s for own in stamps.values() for s in own]
        assert len(everything) == len(set(everything))
        assert sorted(store.projects()) == ["-work-proj"]
        listed = {s["session_id"] for s in asyncio.run(store.list_sessions("-work-proj"))}
        assert listed == {"shared", "own-w1", "own-w2", "own-w3"}
    finally:
        store.close()


def test_reader_sees_consistent_snapshots_while_writers_write(tmp_path: Path, where: str) -> None:
    open_store(where).close()
    names = ["w1", "w2"]
    go, procs = start_writers(tmp_path, where, names)

    async def read_while_writing() -> list[int]:
        reader = open_store(where)
        sizes: list[int] = []
        try:
            go.touch()
            deadline = time.monotonic() + 120
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                entries = [dict(x) for x in await reader.load(SHARED) or []]
                check_snapshot(entries, names)
                sizes.append(len(entries))
                reader.has_session(SHARED["project_key"], SHARED["session_id"])
                reader.last_context(SHARED["project_key"], SHARED["session_id"])
            final = await reader.load(SHARED)
            sizes.append(len(final or []))
        finally:
            reader.close()
        return sizes

    try:
        sizes = asyncio.run(read_while_writing())
    finally:
        finish(procs)

    assert sizes == sorted(sizes)  # nothing ever disappears
    assert sizes[-1] == len(names) * BATCHES * BATCH_SIZE + OVERLAP
    # The reader observed the transcript mid-flight, not just before and after.
    assert len({s for s in sizes if 0 < s < sizes[-1]}) >= 3
