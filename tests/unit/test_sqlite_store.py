from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk import list_sessions_from_store, project_key_for_directory
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.stores.postgres import PostgresSessionStore
from flower.stores.sqlite import SqliteSessionStore

# The contract tests below take `store` and run against both backends: what holds for the
# SQLite file holds for the PostgreSQL schema (a fresh database on the session's real server).
Store = SqliteSessionStore | PostgresSessionStore

MAIN: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
SUB1: SessionKey = {**MAIN, "subpath": "subagents/agent-a1"}
SUB2: SessionKey = {**MAIN, "subpath": "subagents/agent-b2"}


def blob(entry: dict[str, Any]) -> SessionStoreEntry:
    """An entry as the store sees it: the SDK types a minimal supertype, real lines carry more keys."""
    return cast("SessionStoreEntry", entry)


def e(uuid: str | None = None, **fields: Any) -> SessionStoreEntry:
    entry: dict[str, Any] = {"type": fields.pop("type", "user"), **fields}
    if uuid is not None:
        entry["uuid"] = uuid
    return blob(entry)


async def entries(store: Store, key: SessionKey) -> list[dict[str, Any]]:
    """What load() gives back, as the plain JSON objects it keeps; a missing key fails the test."""
    loaded = await store.load(key)
    assert loaded is not None
    return [dict(x) for x in loaded]


def assistant(uuid: str, *, inp: int, read: int, create: int, out: int = 50) -> SessionStoreEntry:
    """An assistant entry shaped like the CLI transcript writes it."""
    return blob(
        {
            "type": "assistant",
            "uuid": uuid,
            "parentUuid": None,
            "sessionId": "s1",
            "timestamp": "2025-05-01T10:00:00.000Z",
            "isSidechain": False,
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "done"}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": inp,
                    "cache_creation_input_tokens": create,
                    "cache_read_input_tokens": read,
                    "output_tokens": out,
                    "service_tier": "standard",
                },
            },
        }
    )


def tool_result(uuid: str, text: str) -> SessionStoreEntry:
    return blob(
        {
            "type": "user",
            "uuid": uuid,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}],
            },
        }
    )


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        s: Store = SqliteSessionStore(tmp_path / "sessions.db")
    else:
        s = PostgresSessionStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


async def mtime_of(store: Store, key: SessionKey) -> int:
    listed = {x["session_id"]: x["mtime"] for x in await store.list_sessions(key["project_key"])}
    return listed[key["session_id"]]


# --- SDK contract -------------------------------------------------------------


@pytest.mark.parametrize("method", ["list_sessions", "list_session_summaries", "delete", "list_subkeys"])
def test_every_optional_protocol_method_is_implemented(method: str) -> None:
    assert getattr(SqliteSessionStore, method) is not getattr(SessionStore, method)


async def test_sdk_conformance_suite_runs_every_contract(tmp_path: Path) -> None:
    made: list[SqliteSessionStore] = []

    def make_store() -> SqliteSessionStore:
        s = SqliteSessionStore(tmp_path / f"db{len(made)}" / "sessions.db")
        made.append(s)
        return s

    try:
        await run_session_store_conformance(make_store, skip_optional=frozenset())
    finally:
        for s in made:
            s.close()
    # One probe plus one fresh store per contract: 14 contracts, none skipped.
    assert len(made) == 15


async def test_sdk_lists_sessions_through_summary_fast_path(store: Store, tmp_path: Path) -> None:
    key: SessionKey = {"project_key": project_key_for_directory(tmp_path), "session_id": "abc"}
    await store.append(
        key,
        [
            blob(
                {
                    "type": "user",
                    "uuid": "u1",
                    "timestamp": "2025-05-01T10:00:00.000Z",
                    "cwd": str(tmp_path),
                    "message": {"role": "user", "content": "build the parser"},
                }
            )
        ],
    )
    await store.append(key, [e(type="custom-title", customTitle="Parser work")])
    infos = await list_sessions_from_store(store, directory=str(tmp_path))
    assert [(i.session_id, i.summary, i.first_prompt) for i in infos] == [
        ("abc", "Parser work", "build the parser")
    ]
    assert infos[0].last_modified == await mtime_of(store, key)


# --- append / load ------------------------------------------------------------


async def test_load_unknown_key_is_none(store: Store) -> None:
    assert await store.load(MAIN) is None
    await store.append(MAIN, [])
    assert await store.load(MAIN) is None
    assert store.has_session(MAIN["project_key"], MAIN["session_id"]) is False


async def test_entries_round_trip_deep_equal(store: Store) -> None:
    entry = blob(
        {
            "type": "user",
            "uuid": "u-1",
            "message": {"content": [{"type": "text", "text": '中文 ✓ \u0000 "quoted"'}]},
            "n": 1.5,
            "flag": None,
            "list": [1, [2, {"x": True}]],
        }
    )
    await store.append(MAIN, [entry])
    assert await store.load(MAIN) == [entry]


async def test_order_follows_append_calls_not_uuid(store: Store) -> None:
    await store.append(MAIN, [e("z"), e("a")])
    await store.append(MAIN, [e(None, n=1), e("m")])
    await store.append(MAIN, [e("b")])
    loaded = await entries(store, MAIN)
    assert [x.get("uuid", "-") for x in loaded] == ["z", "a", "-", "m", "b"]


async def test_concurrent_appends_keep_call_order(store: Store) -> None:
    await asyncio.gather(*(store.append(MAIN, [e(f"u{i:03d}", i=i)]) for i in range(60)))
    loaded = await entries(store, MAIN)
    assert [x["i"] for x in loaded] == list(range(60))


async def test_replayed_batch_is_ignored_entirely(store: Store) -> None:
    batch = [
        e("u1", timestamp="2025-05-01T10:00:00.000Z", message={"content": "first prompt"}),
        e("u2", type="assistant"),
    ]
    await store.append(MAIN, batch)
    mtime = await mtime_of(store, MAIN)
    summaries = await store.list_session_summaries(MAIN["project_key"])

    await store.append(MAIN, batch)

    assert await store.load(MAIN) == batch
    assert await mtime_of(store, MAIN) == mtime
    assert await store.list_session_summaries(MAIN["project_key"]) == summaries


async def test_dedup_against_stored_then_within_batch(store: Store) -> None:
    await store.append(MAIN, [e("a", v=1), e("b", v=1)])
    await store.append(MAIN, [e("b", v=2), e("c", v=1), e("c", v=2), e("a", v=3), e("d", v=1)])
    loaded = await entries(store, MAIN)
    assert [(x["uuid"], x["v"]) for x in loaded] == [
        ("a", 1),
        ("b", 1),
        ("c", 1),
        ("d", 1),
    ]


async def test_stored_entries_are_never_rewritten(store: Store) -> None:
    await store.append(MAIN, [e("a", text="original")])
    await store.append(MAIN, [e("a", text="edited")])
    assert await store.load(MAIN) == [e("a", text="original")]


async def test_entries_without_uuid_always_append(store: Store) -> None:
    title = e(type="custom-title", customTitle="t")
    await store.append(MAIN, [title, title])
    first = await mtime_of(store, MAIN)
    await store.append(MAIN, [title])
    assert await store.load(MAIN) == [title, title, title]
    assert await mtime_of(store, MAIN) > first


async def test_uuid_dedup_is_per_transcript(store: Store) -> None:
    other: SessionKey = {"project_key": MAIN["project_key"], "session_id": "s2"}
    await store.append(MAIN, [e("shared")])
    await store.append(SUB1, [e("shared")])
    await store.append(other, [e("shared")])
    for key in (MAIN, SUB1, other):
        assert await store.load(key) == [e("shared")]


async def test_caller_mutation_after_append_does_not_leak(store: Store) -> None:
    entry: dict[str, Any] = {"type": "user", "uuid": "a", "text": "before"}
    await store.append(MAIN, [blob(entry)])
    entry["text"] = "after"
    assert await store.load(MAIN) == [e("a", text="before")]


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.lists(st.one_of(st.none(), st.sampled_from("abcdefg")), max_size=6), max_size=8))
def test_dedup_matches_reference_model(batches: list[list[str | None]]) -> None:
    async def run(db: Path) -> None:
        store = SqliteSessionStore(db)
        try:
            expected: list[SessionStoreEntry] = []
            seen: set[str] = set()
            last_mtime = 0
            for b, batch in enumerate(batches):
                entries = [e(u, tag=f"{b}.{i}") for i, u in enumerate(batch)]
                new = []
                for entry in entries:
                    uid = entry.get("uuid")
                    if uid is None or uid not in seen:
                        new.append(entry)
                        if uid is not None:
                            seen.add(uid)
                expected.extend(new)
                await store.append(MAIN, entries)
                if expected:
                    mtime = await mtime_of(store, MAIN)
                    # mtime moves exactly when something new was stored.
                    assert (mtime > last_mtime) == bool(new)
                    last_mtime = mtime
            assert await store.load(MAIN) == (expected or None)
        finally:
            store.close()

    with tempfile.TemporaryDirectory() as d:
        asyncio.run(run(Path(d) / "sessions.db"))


# --- summaries ----------------------------------------------------------------


async def test_summary_stamped_with_list_sessions_clock(store: Store) -> None:
    await store.append(MAIN, [e("u1", timestamp="2020-01-01T00:00:00.000Z", customTitle="A")])
    await store.append(MAIN, [e("u2", customTitle="B")])
    (summary,) = await store.list_session_summaries(MAIN["project_key"])
    assert summary["session_id"] == "s1"
    assert summary["mtime"] == await mtime_of(store, MAIN)
    assert summary["data"]["custom_title"] == "B"


async def test_subagent_appends_leave_main_summary_alone(store: Store) -> None:
    await store.append(MAIN, [e("u1", customTitle="main title")])
    before = await store.list_session_summaries(MAIN["project_key"])
    await store.append(SUB1, [e("s1", customTitle="subagent title")])
    assert await store.list_session_summaries(MAIN["project_key"]) == before


async def test_subagent_only_session_has_no_summary(store: Store) -> None:
    await store.append(SUB1, [e("s1")])
    assert await store.list_session_summaries(MAIN["project_key"]) == []
    assert await store.list_sessions(MAIN["project_key"]) == []


# --- subkeys and delete -------------------------------------------------------


async def test_list_subkeys_and_main_only_listing(store: Store) -> None:
    await store.append(MAIN, [e("m")])
    await store.append(SUB2, [e("x")])
    await store.append(SUB1, [e("y")])
    await store.append({**MAIN, "session_id": "s2", "subpath": "subagents/agent-zz"}, [e("z")])
    assert await store.list_subkeys(MAIN) == ["subagents/agent-a1", "subagents/agent-b2"]
    assert [x["session_id"] for x in await store.list_sessions(MAIN["project_key"])] == ["s1"]
    assert await store.load(SUB1) == [e("y")]


async def test_delete_main_cascades_to_subagents(store: Store) -> None:
    sibling: SessionKey = {"project_key": MAIN["project_key"], "session_id": "s2"}
    await store.append(MAIN, [e("m")])
    await store.append(SUB1, [e("a")])
    await store.append(SUB2, [e("b")])
    await store.append(sibling, [e("m")])

    await store.delete(MAIN)

    assert await store.load(MAIN) is None
    assert await store.load(SUB1) is None
    assert await store.load(SUB2) is None
    assert await store.list_subkeys(MAIN) == []
    assert store.has_session(MAIN["project_key"], "s1") is False
    assert await store.load(sibling) == [e("m")]
    assert [s["session_id"] for s in await store.list_session_summaries(MAIN["project_key"])] == ["s2"]
    # The same uuid can be written again once the transcript is gone.
    await store.append(MAIN, [e("m", again=True)])
    assert await store.load(MAIN) == [e("m", again=True)]


async def test_delete_subpath_removes_only_that_transcript(store: Store) -> None:
    await store.append(MAIN, [e("m")])
    await store.append(SUB1, [e("a")])
    await store.append(SUB2, [e("b")])
    await store.delete(SUB1)
    assert await store.load(SUB1) is None
    assert await store.load(SUB2) == [e("b")]
    assert await store.load(MAIN) == [e("m")]
    assert len(await store.list_session_summaries(MAIN["project_key"])) == 1


# --- sync helpers ---------------------------------------------------------------


async def test_projects_lists_distinct_existing_keys(store: Store) -> None:
    assert store.projects() == []
    await store.append({"project_key": "-b", "session_id": "1"}, [e("x")])
    await store.append({"project_key": "-a", "session_id": "1"}, [e("x")])
    await store.append({"project_key": "-a", "session_id": "2"}, [e("x")])
    assert store.projects() == ["-a", "-b"]
    await store.delete({"project_key": "-b", "session_id": "1"})
    assert store.projects() == ["-a"]


async def test_has_session(store: Store) -> None:
    await store.append(MAIN, [e("m")])
    await store.append({**MAIN, "session_id": "only-sub", "subpath": "subagents/agent-1"}, [e("a")])
    assert store.has_session(MAIN["project_key"], "s1") is True
    assert store.has_session(MAIN["project_key"], "missing") is False
    assert store.has_session("-other-project", "s1") is False
    # A session with nothing but subagent transcripts cannot be resumed.
    assert store.has_session(MAIN["project_key"], "only-sub") is False


async def test_last_context_counts_all_three_input_terms(store: Store) -> None:
    await store.append(MAIN, [e("u0", message={"role": "user", "content": "go"})])
    await store.append(MAIN, [assistant("a1", inp=10, read=1000, create=200)])
    await store.append(MAIN, [tool_result("t1", "ok")])
    await store.append(MAIN, [assistant("a2", inp=3, read=41_000, create=1_500)])
    await store.append(MAIN, [tool_result("t2", "x" * 100), e(None, type="custom-title")])
    assert store.last_context(MAIN["project_key"], "s1") == 3 + 41_000 + 1_500


async def test_last_context_scan_window(store: Store) -> None:
    await store.append(MAIN, [assistant("a1", inp=5, read=500, create=0)])
    await store.append(MAIN, [tool_result(f"t{i}", "r") for i in range(10)])
    assert store.last_context(MAIN["project_key"], "s1", scan=10) == 0
    assert store.last_context(MAIN["project_key"], "s1", scan=11) == 505
    assert store.last_context(MAIN["project_key"], "s1") == 505


async def test_last_context_skips_zero_usage_synthetic_errors(store: Store) -> None:
    await store.append(MAIN, [assistant("a1", inp=7, read=9000, create=100)])
    await store.append(MAIN, [assistant("err", inp=0, read=0, create=0, out=0)])
    assert store.last_context(MAIN["project_key"], "s1") == 9107


async def test_last_context_missing_is_zero(store: Store) -> None:
    assert store.last_context("-nope", "nope") == 0
    await store.append(MAIN, [e("u1")])
    await store.append(SUB1, [assistant("a1", inp=1, read=2, create=3)])
    # Subagent usage is not the main session's context.
    assert store.last_context(MAIN["project_key"], "s1") == 0


# --- clock --------------------------------------------------------------------


async def test_mtimes_strictly_increase_under_rapid_appends(store: Store) -> None:
    keys: list[SessionKey] = [{"project_key": "-p", "session_id": f"s{i}"} for i in range(3)]
    stamps = []
    for i in range(300):
        key = keys[i % 3]
        await store.append(key, [e(f"u{i}")])
        stamps.append(await mtime_of(store, key))
    assert all(b > a for a, b in itertools.pairwise(stamps))
    assert stamps[0] > 1e12  # epoch milliseconds
    summaries = {s["session_id"]: s["mtime"] for s in await store.list_session_summaries("-p")}
    listed = {s["session_id"]: s["mtime"] for s in await store.list_sessions("-p")}
    assert summaries == listed


async def test_two_handles_on_one_file_share_the_clock(tmp_path: Path) -> None:
    a = SqliteSessionStore(tmp_path / "sessions.db")
    b = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        stamps = []
        for i in range(100):
            s = a if i % 2 else b
            await s.append(MAIN, [e(f"u{i}")])
            stamps.append(await mtime_of(s, MAIN))
        assert all(y > x for x, y in itertools.pairwise(stamps))
        assert len(await entries(a, MAIN)) == 100
    finally:
        a.close()
        b.close()


async def test_clock_follows_stored_stamps_not_memory(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    store = SqliteSessionStore(db)
    try:
        await store.append(MAIN, [e("u1")])
        # Another writer (say, a machine whose clock runs ahead) stamped later.
        future = int(time.time() * 1000) + 10_000_000
        other: SessionKey = {"project_key": MAIN["project_key"], "session_id": "s2"}
        ahead = SqliteSessionStore(db)
        ahead._last_mtime = future
        await ahead.append(other, [e("v1")])
        ahead.close()
        assert await mtime_of(store, other) == future + 1

        await store.append(MAIN, [e("u2")])
        assert await mtime_of(store, MAIN) == future + 2
    finally:
        store.close()


# --- file handling -------------------------------------------------------------


async def test_creates_parent_directory_and_persists(tmp_path: Path) -> None:
    db = tmp_path / "runs" / "nested" / "sessions.db"
    store = SqliteSessionStore(str(db))
    await store.append(MAIN, [e("u1"), e("u2")])
    await store.append(SUB1, [e("s1")])
    store.close()
    assert db.is_file()

    again = SqliteSessionStore(db)
    try:
        assert await again.load(MAIN) == [e("u1"), e("u2")]
        assert await again.list_subkeys(MAIN) == ["subagents/agent-a1"]
        assert again.has_session(MAIN["project_key"], "s1")
        # Dedup survives reopening: the index is on disk, not in memory.
        await again.append(MAIN, [e("u2"), e("u3")])
        assert [x["uuid"] for x in await entries(again, MAIN)] == ["u1", "u2", "u3"]
    finally:
        again.close()


def test_wal_mode_is_on(tmp_path: Path) -> None:
    SqliteSessionStore(tmp_path / "sessions.db").close()
    conn = sqlite3.connect(tmp_path / "sessions.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_corrupt_file_raises_naming_it_and_keeps_bytes(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    garbage = b"definitely not an sqlite database\n" * 200
    db.write_bytes(garbage)
    with pytest.raises(sqlite3.DatabaseError) as info:
        SqliteSessionStore(db)
    assert str(db) in str(info.value)
    assert db.read_bytes() == garbage


async def test_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    await store.append(MAIN, [e("u1")])
    store.close()
    store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await store.load(MAIN)
    with pytest.raises(RuntimeError, match="closed"):
        store.projects()


async def test_waiting_for_a_busy_file_does_not_block_event_loop(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    await store.append(MAIN, [e("u0")])
    blocker = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.6, lambda: blocker.execute("COMMIT"))
    release.start()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    try:
        started = time.monotonic()
        await store.append(MAIN, [e("u1")])
        waited = time.monotonic() - started
    finally:
        tick_task.cancel()
        release.join()
        blocker.close()
        store.close()
    assert waited >= 0.4  # the append really had to wait for the other writer
    assert ticks >= 10  # and the loop kept running meanwhile


def test_a_store_too_deep_for_sqlite_is_refused_with_the_limit_and_the_way_out(tmp_path):
    """SQLite cannot open a database whose path is over 504 bytes: the run is refused before
    anything is spent, with the length, the limit and `--run-dir`, not with advice about rights."""
    from flower.base.i18n import set_language
    from flower.core.recovery import StoreError
    from flower.core.runtime import Runtime
    from flower.stores.sqlite import LONGEST_PATH, path_too_long

    deep = tmp_path
    while len(os.fsencode(deep / "runs" / "sessions.db")) <= LONGEST_PATH:
        deep = deep / ("目录" * 20)
    deep.mkdir(parents=True)
    assert path_too_long(deep / "runs" / "sessions.db") is not None
    assert path_too_long(tmp_path / "runs" / "sessions.db") is None
    set_language("en")
    try:
        with pytest.raises(StoreError) as refused:
            Runtime(workspace=deep, run_dir=deep / "runs")
    finally:
        set_language("zh")
    text = str(refused.value)
    assert "--run-dir" in text and str(LONGEST_PATH) in text and "permission" not in text, text
