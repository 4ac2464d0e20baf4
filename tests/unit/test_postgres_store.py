"""PostgresSessionStore on a real PostgreSQL server: the SDK's conformance suite for the store
and for every layer wrapped around it, schemas keeping stores apart, the database's clock,
payloads kept exactly, and credentials that never show.

The contract it shares with SQLite (dedup, order, summaries, listing, deletion, has_session,
last_context, parallel processes) runs against both backends in test_sqlite_store.py and
test_store_multiprocess.py.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry
from store_entries import get, put

from flower.sim.cache import SimClock
from flower.sim.postgres import LocalPostgres
from flower.stores.ephemeral import EphemeralPolicy
from flower.stores.postgres import PostgresSessionStore, PostgresStoreError
from flower.stores.prune import PruningSessionStore
from flower.stores.trim import TrimmingSessionStore, TrimPolicy

OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
KEY: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
COLD = 301.0


def plain(url: str, schema: str, ws: Path) -> SessionStore:
    return PostgresSessionStore(url, schema=schema)


def trimming(url: str, schema: str, ws: Path) -> SessionStore:
    return TrimmingSessionStore(PostgresSessionStore(url, schema=schema), ws)


def pruning(url: str, schema: str, ws: Path) -> SessionStore:
    return PruningSessionStore(PostgresSessionStore(url, schema=schema), ws)


def pruning_with_trim(url: str, schema: str, ws: Path) -> SessionStore:
    # what Runtime builds on the `flower go` path: every policy on
    return PruningSessionStore(PostgresSessionStore(url, schema=schema), ws, policy=TrimPolicy())


STACKS: dict[str, Callable[[str, str, Path], SessionStore]] = {
    "PostgresSessionStore": plain,
    "TrimmingSessionStore(PostgresSessionStore)": trimming,
    "PruningSessionStore(PostgresSessionStore)": pruning,
    "PruningSessionStore(PostgresSessionStore, trim on)": pruning_with_trim,
}


@pytest.mark.parametrize("stack", list(STACKS))
async def test_sdk_conformance_passes_for_the_store_and_every_layer(
    pg_url: str, tmp_path: Path, stack: str
) -> None:
    made: list[SessionStore] = []
    counter = itertools.count()

    def make() -> SessionStore:
        n = next(counter)
        store = STACKS[stack](pg_url, f"conformance_{n}", tmp_path / f"ws{n}")
        made.append(store)
        return store

    try:
        await run_session_store_conformance(make, skip_optional=frozenset())
    finally:
        for store in made:
            cast(Any, store).close()
    # one probe plus one fresh store per contract: 14 contracts, none skipped
    assert len(made) == 15


@pytest.mark.parametrize("stack", list(STACKS))
def test_no_optional_method_is_left_to_the_protocol_default(pg_url: str, tmp_path: Path, stack: str) -> None:
    store = STACKS[stack](pg_url, "flower", tmp_path)
    try:
        for name in OPTIONAL:
            # the conformance suite skips a method whose implementation is the Protocol default
            assert getattr(type(store), name) is not getattr(SessionStore, name), name
    finally:
        cast(Any, store).close()


async def test_schemas_keep_stores_apart_in_one_database(pg_url: str) -> None:
    a = PostgresSessionStore(pg_url, schema="team_a")
    b = PostgresSessionStore(pg_url, schema="team_b")
    try:
        await a.append(KEY, [cast(SessionStoreEntry, {"type": "user", "uuid": "u1", "who": "a"})])
        assert await b.load(KEY) is None
        assert await b.list_sessions(KEY["project_key"]) == []
        assert b.projects() == []
        await b.append(KEY, [cast(SessionStoreEntry, {"type": "user", "uuid": "u1", "who": "b"})])
        assert [dict(x)["who"] for x in await a.load(KEY) or []] == ["a"]
        assert [dict(x)["who"] for x in await b.load(KEY) or []] == ["b"]
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("schema", ["Flower", "a-b", "x;drop table", "", "9lives", "s" * 64])
def test_a_schema_that_is_not_a_plain_name_is_refused(pg_url: str, schema: str) -> None:
    with pytest.raises(ValueError, match="schema"):
        PostgresSessionStore(pg_url, schema=schema)


def test_a_refused_password_is_said_without_the_password(postgres: LocalPostgres) -> None:
    wrong = "not-the-secret-4711"
    url = postgres.url().replace(postgres.password, wrong)
    with pytest.raises(PostgresStoreError) as caught:
        PostgresSessionStore(url)
    text = str(caught.value)
    assert "password authentication failed" in text
    assert "postgresql://flower:***@/flower" in text
    assert wrong not in text and wrong not in repr(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_server_that_is_not_there_is_said_with_where_it_was_looked_for(tmp_path: Path) -> None:
    url = f"postgresql://flower:s3cret-pw@/flower?host={tmp_path}"
    with pytest.raises(PostgresStoreError, match=r"cannot open the store") as caught:
        PostgresSessionStore(url)
    assert "s3cret-pw" not in str(caught.value)
    assert str(tmp_path) in str(caught.value)


async def test_modification_times_come_from_the_database_not_the_client(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresSessionStore(pg_url)
    try:
        before = int(time.time() * 1000)
        # a machine whose clock is a day behind, then one whose clock stands still
        monkeypatch.setattr(time, "time", lambda: 1.0)
        monkeypatch.setattr(time, "time_ns", lambda: 1)
        stamps = []
        for i in range(50):
            await store.append(KEY, [cast(SessionStoreEntry, {"type": "user", "uuid": f"u{i}"})])
            (listed,) = await store.list_sessions(KEY["project_key"])
            stamps.append(listed["mtime"])
        monkeypatch.undo()
        after = int(time.time() * 1000)
        assert all(b > a for a, b in itertools.pairwise(stamps))
        # the server runs on this machine, so its clock and ours agree to within the test
        assert before - 1000 <= stamps[0] and stamps[-1] <= after + 1000 + len(stamps)
    finally:
        store.close()


async def test_two_stores_on_one_database_share_one_clock(pg_url: str) -> None:
    a, b = PostgresSessionStore(pg_url), PostgresSessionStore(pg_url)
    try:
        stamps = []
        for i in range(60):
            s = a if i % 2 else b
            key: SessionKey = {"project_key": "-p", "session_id": f"s{i % 3}"}
            await s.append(key, [cast(SessionStoreEntry, {"type": "user", "uuid": f"u{i}"})])
            listed = {x["session_id"]: x["mtime"] for x in await s.list_sessions("-p")}
            stamps.append(listed[key["session_id"]])
        assert all(y > x for x, y in itertools.pairwise(stamps))
    finally:
        a.close()
        b.close()


async def test_payloads_come_back_exactly_as_written(pg_url: str) -> None:
    odd: dict[str, Any] = {
        "type": "user",
        "uuid": "u1",
        "zeta": 1,
        "alpha": [1.5, 10**20, True, None],  # key order and number forms are kept
        "nul": "before\x00after",  # PostgreSQL's jsonb would refuse this one
        "surrogate": "broken \udc80 utf-16",
        "text": "需求已确认 · 目标 15 条 😀",
        "big": "x" * 300_000,
    }
    store = PostgresSessionStore(pg_url)
    try:
        await put(store, KEY, [odd])
        (back,) = await get(store, KEY)
        assert back == odd
        assert list(back) == list(odd)
    finally:
        store.close()


async def test_layers_keep_their_decisions_in_the_database(pg_url: str, tmp_path: Path) -> None:
    """A decision one process made at a cold resume is applied as it was by another process,
    on another machine, and leaves with the session."""
    from test_trim import Transcript, big, results

    ws = tmp_path / "ws"
    ws.mkdir()
    clock = SimClock()
    t = Transcript()
    t.prompt("go")
    status = t.bash("git status", "clean\n")
    read = t.read("/src/a.py", big("a"))
    for i in range(3):
        t.read(f"/pad{i}", "pad\n")
    policy, ephemeral = TrimPolicy(keep_recent=2), EphemeralPolicy(keep_recent=2)
    first = PruningSessionStore(
        PostgresSessionStore(pg_url), ws, policy=policy, ephemeral=ephemeral, clock=clock
    )
    try:
        await put(first, KEY, t.entries)
        clock.advance(COLD)
        decided = await get(first, KEY)
    finally:
        first.close()
    assert "已过期" in results(decided)[status]
    assert "已裁剪" in results(decided)[read]

    again = PruningSessionStore(
        PostgresSessionStore(pg_url), ws, policy=policy, ephemeral=ephemeral, clock=clock
    )
    try:
        assert again.ledger.decided(KEY)["expire"].keys() == {status}
        assert await get(again, KEY) == decided  # the same prompt, byte for byte
        await again.delete(KEY)
        assert again.ledger.decided(KEY) == {}
        assert again.ledger.last_activity(KEY) == (None, 0)
        assert await again.load(KEY) is None
    finally:
        again.close()
