"""TrimmingSessionStore: resume-time expiry of glance results and archiving of big results."""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.types import SessionKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_entries import get, put

from flower.sim.cache import SimClock
from flower.stores.ephemeral import EphemeralPolicy
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import TrimmingSessionStore, TrimPolicy, trim_report

KEY: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
MakeStore = Callable[..., TrimmingSessionStore]
COLD = 301.0  # seconds without activity after which the API's 5-minute cache is gone
DATA = Path(__file__).resolve().parent.parent / "data" / "transcripts"


class Transcript:
    """Builds entries shaped like the CLI's JSONL: one content block per message entry."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.last: str | None = None
        self.n = 0

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        entry = {"parentUuid": self.last, "uuid": f"u{self.n:05d}", "sessionId": "s1", **entry}
        self.entries.append(entry)
        self.last = entry["uuid"]
        return entry

    def prompt(self, text: str, **extra: Any) -> dict[str, Any]:
        return self._add({"type": "user", "message": {"role": "user", "content": text}, **extra})

    def say(self, text: str) -> dict[str, Any]:
        return self._add(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [{"type": "text", "text": text}],
                },
            }
        )

    def call(
        self, name: str, inp: dict[str, Any], content: Any, *, is_error: bool = False, **extra: Any
    ) -> str:
        tool_id = f"toolu_{self.n + 1:05d}"
        self._add(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": inp}],
                },
            }
        )
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
        if is_error:
            block["is_error"] = True
        self._add(
            {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "toolUseResult": "opaque",
                **extra,
            }
        )
        return tool_id

    def bash(self, cmd: str, out: Any, **kw: Any) -> str:
        return self.call("Bash", {"command": cmd, "description": "run"}, out, **kw)

    def read(self, path: str, out: Any) -> str:
        return self.call("Read", {"file_path": path}, out)


def results(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """tool_use_id -> tool_result content, for user message entries."""
    found = {}
    for entry in entries:
        if entry.get("type") != "user" or not isinstance(entry["message"]["content"], list):
            continue
        for block in entry["message"]["content"]:
            if block.get("type") == "tool_result":
                found[block["tool_use_id"]] = block["content"]
    return found


def tool_use_ids(entries: list[dict[str, Any]]) -> set[str]:
    return {
        b["id"]
        for e in entries
        if e.get("type") == "assistant"
        for b in e["message"]["content"]
        if b.get("type") == "tool_use"
    }


def db_rows(path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT seq, key_id, uuid, payload FROM entries ORDER BY seq").fetchall()
    finally:
        con.close()


def spill_files(workspace: Path) -> dict[str, str]:
    spill = workspace / ".flower" / "spill"
    if not spill.exists():
        return {}
    return {p.name: p.read_text(encoding="utf-8") for p in spill.iterdir()}


def pointer_path(content: str) -> Path:
    """The spill file a pointer line names (the only absolute path in it)."""
    for token in content.replace(",", " ").replace("(", " ").split():
        if token.startswith("/") and token.endswith(".txt"):
            return Path(token)
    raise AssertionError(f"no spill path in pointer {content!r}")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def clock() -> SimClock:
    """The stores' idea of now: tests let the prompt cache expire by advancing it."""
    return SimClock()


@pytest.fixture
async def make_store(tmp_path: Path, ws: Path, clock: SimClock) -> AsyncIterator[MakeStore]:
    stores: list[TrimmingSessionStore] = []

    def make(**kw: Any) -> TrimmingSessionStore:
        kw.setdefault("clock", clock)
        store = TrimmingSessionStore(tmp_path / "sessions.db", ws, **kw)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


def big(tag: str, n: int = 5000) -> str:
    line = f"{tag}: some output line with words in it\n"
    return (line * (n // len(line) + 1))[:n]


def one_big_read() -> Transcript:
    """A transcript whose one decision to make is spilling one big result."""
    t = Transcript()
    t.prompt("go")
    t.read("/a", big("a"))
    t.read("/pad", "pad\n")
    return t


# --------------------------------------------------------------------------- trim


async def test_old_big_results_are_spilled_and_recent_ones_stay(
    make_store: MakeStore, ws: Path, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    ids = [t.read(f"/src/f{i}.py", big(f"file{i}")) for i in range(30)]
    store = make_store(ephemeral=EphemeralPolicy(enabled=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    got = results(loaded)
    for i, tool_id in enumerate(ids):
        original = big(f"file{i}")
        if i < 10:
            assert got[tool_id] != original
            assert "\n" not in got[tool_id]
            path = pointer_path(got[tool_id])
            assert path.parent == (ws / ".flower" / "spill").resolve()
            assert path.read_text(encoding="utf-8") == original
        else:
            assert got[tool_id] == original
    saved = sum(len(big(f"file{i}")) - len(got[ids[i]]) for i in range(10))
    assert store.last_report == {"cleared": 10, "kept": 20, "chars_saved": saved}
    assert trim_report(store) == f"裁掉 10 个工具结果(保留最近 20 个),省下 ~{saved // 4} tokens"


async def test_pointer_names_file_and_size(ws: Path) -> None:
    line = TrimPolicy().placeholder("/w/.flower/spill/abc.txt", 12345)
    assert "/w/.flower/spill/abc.txt" in line
    assert "12345" in line
    assert "\n" not in line


async def test_spill_file_is_named_by_sha256_prefix(make_store: MakeStore, ws: Path, clock: SimClock) -> None:
    import hashlib

    t = Transcript()
    t.prompt("go")
    text = big("hashme", 3000) + "中文内容"
    tool_id = t.read("/a", text)
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    path = pointer_path(results(loaded)[tool_id])
    assert path.name == hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".txt"
    assert path.read_text(encoding="utf-8") == text


async def test_threshold_is_inclusive_and_short_results_stay(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    at = t.read("/a", "x" * 2000)
    below = t.read("/b", "y" * 1999)
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    got = results(await get(store, KEY))

    assert got[at] != "x" * 2000
    assert got[below] == "y" * 1999
    assert store.last_report["cleared"] == 1


async def test_sqlite_keeps_every_original_byte(
    make_store: MakeStore, tmp_path: Path, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    for i in range(8):
        t.read(f"/f{i}", big(f"r{i}"))
        t.bash("git status -s", f" M file{i}.py\n")
    original = copy.deepcopy(t.entries)
    store = make_store(policy=TrimPolicy(keep_recent=1), ephemeral=EphemeralPolicy(keep_recent=1))
    await put(store, KEY, t.entries)
    clock.advance(COLD)
    before = db_rows(tmp_path / "sessions.db")

    loaded = await get(store, KEY)
    await get(store, KEY)

    assert loaded != original  # something was really trimmed
    assert db_rows(tmp_path / "sessions.db") == before
    plain = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await get(plain, KEY) == original
    finally:
        plain.close()
    assert t.entries == original  # the caller's list is not mutated either


async def test_images_and_documents_are_left_alone(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 50000}}
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "B" * 9000},
    }
    only_image = t.read("/pic.png", [image])
    mixed = t.call("mcp__x__fetch", {}, [{"type": "text", "text": big("caption")}, image, document])
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    got = results(await get(store, KEY))

    assert got[only_image] == [image]
    assert got[mixed][1:] == [image, document]
    assert got[mixed][0]["type"] == "text"
    assert pointer_path(got[mixed][0]["text"]).read_text(encoding="utf-8") == big("caption")
    assert store.last_report["cleared"] == 1


async def test_several_text_parts_all_land_in_the_spill_file(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    parts = [big("one", 1200), big("two", 1300)]
    tool_id = t.call("mcp__x__q", {}, [{"type": "text", "text": p} for p in parts])
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    content = results(await get(store, KEY))[tool_id]

    assert len(content) == 1 and content[0]["type"] == "text"
    archived = pointer_path(content[0]["text"]).read_text(encoding="utf-8")
    assert all(p in archived for p in parts)


async def test_compact_summary_is_never_touched(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    summary = t.prompt(big("summary", 9000), isCompactSummary=True)
    t.read("/a", big("a"))
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert loaded[0] == summary
    assert store.last_report["cleared"] == 1


async def test_every_tool_result_block_survives(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    for i in range(25):
        t.read(f"/f{i}", big(f"f{i}", 2500 + i))
        t.bash("ls -la", "total 0\n")
    store = make_store(policy=TrimPolicy(keep_recent=3), ephemeral=EphemeralPolicy(keep_recent=2))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert set(results(loaded)) == tool_use_ids(loaded) == tool_use_ids(t.entries)
    assert [e["uuid"] for e in loaded] == [e["uuid"] for e in t.entries]
    assert [e.get("parentUuid") for e in loaded] == [e.get("parentUuid") for e in t.entries]


async def test_disabled_trim_changes_nothing(make_store: MakeStore, ws: Path, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    for i in range(5):
        t.read(f"/f{i}", big(f"f{i}"))
    store = make_store(
        policy=TrimPolicy(enabled=False, keep_recent=0), ephemeral=EphemeralPolicy(enabled=False)
    )
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    assert await get(store, KEY) == t.entries
    assert store.last_report == {}
    assert trim_report(store) == "未裁剪"
    assert spill_files(ws) == {}


async def test_loading_twice_reuses_the_same_spill_file(
    make_store: MakeStore, ws: Path, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    t.read("/a", big("same"))
    t.read("/b", big("same"))
    t.read("/c", big("other"))
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    first = await get(store, KEY)
    second = await get(store, KEY)

    assert first == second
    assert sorted(spill_files(ws).values()) == sorted([big("same"), big("other")])


async def test_result_stays_verbatim_when_spill_cannot_be_written(
    make_store: MakeStore, ws: Path, clock: SimClock
) -> None:
    (ws / ".flower").mkdir()
    (ws / ".flower" / "spill").write_text("a file where the directory should be")
    t = Transcript()
    t.prompt("go")
    tool_id = t.read("/a", big("keep"))
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    got = results(await get(store, KEY))

    assert got[tool_id] == big("keep")
    assert store.last_report["cleared"] == 0


def test_spill_dir_must_stay_inside_workspace(tmp_path: Path, ws: Path) -> None:
    for bad in ("../outside", str(tmp_path / "elsewhere")):
        with pytest.raises(ValueError):
            TrimmingSessionStore(tmp_path / "x.db", ws, policy=TrimPolicy(spill_dirname=bad))


async def test_unknown_key_loads_none(make_store: MakeStore, clock: SimClock) -> None:
    store = make_store()
    assert await store.load({"project_key": "p", "session_id": "nope"}) is None
    assert trim_report(store) == "未裁剪"


# --------------------------------------------------------------------------- expire


async def test_old_glance_results_expire_in_place(make_store: MakeStore, ws: Path, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    statuses = [t.bash("git status -s", f" M file{i}.py\n") for i in range(10)]
    store = make_store(policy=TrimPolicy(enabled=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    got = results(loaded)
    policy = EphemeralPolicy()
    for i, tool_id in enumerate(statuses):
        age = 10 - i
        if age > policy.keep_recent:
            assert got[tool_id] == policy.placeholder("`git status -s`", age)
        else:
            assert got[tool_id] == f" M file{i}.py\n"
    assert store.last_report == {"expired": 4}
    assert trim_report(store) == "4 个时效性结果标记为过期"
    assert set(got) == tool_use_ids(loaded)
    assert spill_files(ws) == {}  # expired text is dropped, not archived


async def test_only_ephemeral_bash_commands_expire(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    read = t.read("/a.txt", "contents of a\n")
    pytest_run = t.bash("pytest -q", "3 passed\n")
    grep_tool = t.call("Grep", {"pattern": "x"}, "a.py:1:x\n")
    ls = t.bash("ls -la", "total 0\n")
    for _ in range(6):
        t.read("/pad", "pad\n")
    store = make_store(policy=TrimPolicy(enabled=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    got = results(await get(store, KEY))

    assert got[read] == "contents of a\n"
    assert got[pytest_run] == "3 passed\n"
    assert got[grep_tool] == "a.py:1:x\n"
    assert "已过期" in got[ls] and "ls -la" in got[ls]
    assert store.last_report["expired"] == 1


async def test_expiry_skips_long_meta_and_denied_results(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    long_cat = t.bash("cat big.log", big("log", 2500))
    meta = t.bash("git status", "clean\n", isMeta=True)
    denied = t.bash(
        "ls /secret", "PreToolUse:Bash hook error: no", is_error=True, toolDenialKind="permission-rule"
    )
    as_list = t.bash("pwd", [{"type": "text", "text": "/work\n"}])
    for _ in range(6):
        t.read("/pad", "pad\n")
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    got = results(await get(store, KEY))

    # Too long to expire, so the trim step archives it instead.
    assert pointer_path(got[long_cat]).read_text(encoding="utf-8") == big("log", 2500)
    assert got[meta] == "clean\n"
    assert got[denied] == "PreToolUse:Bash hook error: no"
    assert got[as_list] == [{"type": "text", "text": EphemeralPolicy().placeholder("`pwd`", 7)}]
    assert store.last_report["expired"] == 1
    assert store.last_report["cleared"] == 1


async def test_expiry_disabled_keeps_glances(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    ids = [t.bash("git status", "clean\n") for _ in range(10)]
    store = make_store(ephemeral=EphemeralPolicy(enabled=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    got = results(await get(store, KEY))

    assert all(got[i] == "clean\n" for i in ids)
    assert "expired" not in store.last_report


async def test_report_prefers_trimming_over_expiry(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    t.bash("git status", "clean\n")
    t.read("/a", big("a"))
    store = make_store(policy=TrimPolicy(keep_recent=0), ephemeral=EphemeralPolicy(keep_recent=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    await get(store, KEY)

    assert store.last_report["expired"] == 1
    assert store.last_report["cleared"] == 1
    assert trim_report(store).startswith("裁掉 1 个工具结果(保留最近 0 个),省下 ~")


# --------------------------------------------------------------------------- real transcripts


async def test_real_cli_transcript_trims_and_keeps_structure(
    make_store: MakeStore, tmp_path: Path, clock: SimClock
) -> None:
    entries = [
        json.loads(line) for line in (DATA / "main_denial_subagent_apierror.jsonl").open(encoding="utf-8")
    ]
    store = make_store(
        policy=TrimPolicy(keep_recent=0, min_chars=1000), ephemeral=EphemeralPolicy(keep_recent=0)
    )
    await put(store, KEY, entries)
    clock.advance(COLD)
    before = db_rows(tmp_path / "sessions.db")

    loaded = await get(store, KEY)

    assert len(loaded) == len(entries)
    seq = next(
        b["id"]
        for e in entries
        if e.get("type") == "assistant"
        for b in e["message"]["content"]
        if b.get("type") == "tool_use" and b["input"].get("command") == "seq 1 3000"
    )
    original = results(entries)[seq]
    assert pointer_path(results(loaded)[seq]).read_text(encoding="utf-8") == original
    assert set(results(loaded)) == tool_use_ids(loaded)
    # Bookkeeping lines that copy results are passed through as they are.
    assert [e for e in loaded if e["type"] == "api-request-blob"] == [
        e for e in entries if e["type"] == "api-request-blob"
    ]
    assert store.last_report["expired"] >= 1  # the old `git status`
    assert db_rows(tmp_path / "sessions.db") == before


# --------------------------------------------------------------------------- properties

results_strategy = st.lists(
    st.tuples(
        st.sampled_from(["read", "git status", "pytest", "image"]),
        st.integers(min_value=0, max_value=4000),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=results_strategy, keep=st.integers(0, 8), keep_eph=st.integers(0, 8))
async def test_any_transcript_keeps_pairs_and_recoverable_text(
    tmp_path: Path, plan: list[tuple[str, int]], keep: int, keep_eph: int
) -> None:
    import uuid as uuidlib

    base = tmp_path / uuidlib.uuid4().hex
    ws = base / "ws"
    ws.mkdir(parents=True)
    t = Transcript()
    t.prompt("go")
    originals: dict[str, Any] = {}
    for kind, size in plan:
        text: Any = big(kind, size)
        if kind == "read":
            tool_id = t.read("/f", text)
        elif kind == "image":
            text = [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "Q" * size}}
            ]
            tool_id = t.read("/p.png", text)
        else:
            tool_id = t.bash(kind, text)
        originals[tool_id] = text
    store = TrimmingSessionStore(
        base / "s.db",
        ws,
        policy=TrimPolicy(keep_recent=keep, cache_ttl=0),  # every load may decide
        ephemeral=EphemeralPolicy(keep_recent=keep_eph),
    )
    try:
        await put(store, KEY, t.entries)
        before = db_rows(base / "s.db")
        loaded = await get(store, KEY)
        assert db_rows(base / "s.db") == before
    finally:
        store.close()

    got = results(loaded)
    assert set(got) == set(originals) == tool_use_ids(loaded)
    order = list(originals)
    for rank, tool_id in enumerate(order):
        age = len(order) - rank
        now, then = got[tool_id], originals[tool_id]
        if isinstance(then, list):
            assert now == then
        elif now == then:
            continue
        elif "已过期" in now:
            assert age > keep_eph and len(then) <= 2000
        else:
            assert age > keep and len(then) >= 2000
            assert pointer_path(now).read_text(encoding="utf-8") == then


# --------------------------------------------------------------------------- decisions at boundaries


def ledger(path: Path) -> list[tuple[str, str, str]]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT kind, ref, detail FROM flower_decisions ORDER BY kind, ref").fetchall()
        return [(str(k), str(r), str(d)) for k, r, d in rows]
    finally:
        con.close()


def glances_and_reads(t: Transcript, n: int, *, start: int = 0) -> tuple[list[str], list[str]]:
    statuses, reads = [], []
    for i in range(start, start + n):
        statuses.append(t.bash("git status -s", f" M file{i}.py\n"))
        reads.append(t.read(f"/src/f{i}.py", big(f"file{i}")))
    return statuses, reads


async def test_a_warm_resume_changes_nothing_and_says_what_waits(make_store: MakeStore, ws: Path) -> None:
    t = Transcript()
    t.prompt("go")
    glances_and_reads(t, 15)
    store = make_store(policy=TrimPolicy(rebase_share=0))
    await put(store, KEY, t.entries)

    loaded = await get(store, KEY)  # right after the session wrote: its cache is warm

    assert loaded == t.entries
    # 12 glances older than the last 6 results, 5 reads older than the last 20
    assert store.last_report["deferred"] == 12 + 5
    assert trim_report(store) == "未裁剪"
    assert spill_files(ws) == {}


@pytest.mark.parametrize(
    ("idle", "ttl", "decides"),
    [
        (0.0, 300.0, False),
        (299.0, 300.0, False),
        (300.0, 300.0, True),
        (3599.0, 3600.0, False),
        (3600.0, 3600.0, True),
        (0.0, 0.0, True),  # cache_ttl=0: every load is a boundary
    ],
)
async def test_new_decisions_wait_until_the_cache_has_expired(
    make_store: MakeStore, clock: SimClock, idle: float, ttl: float, decides: bool
) -> None:
    t = Transcript()
    t.prompt("go")
    t.read("/a", big("a"))
    t.bash("git status", "clean\n")
    t.read("/pad", "pad\n")
    # only the expiry of the cache can make a decision here
    policy = TrimPolicy(keep_recent=1, cache_ttl=ttl, warm_budget=0, rebase_share=0)
    store = make_store(policy=policy, ephemeral=EphemeralPolicy(keep_recent=1))
    await put(store, KEY, t.entries)
    clock.advance(idle)

    loaded = await get(store, KEY)

    assert (loaded != t.entries) is decides
    assert store.last_report.get("cleared", 0) == store.last_report.get("expired", 0) == int(decides)
    assert store.last_report.get("deferred", 0) == 2 * (not decides)


@pytest.mark.parametrize(
    ("stamp_age", "decides"),
    [(10.0, False), (3600.0, True), (None, True)],
)
async def test_a_transcript_written_elsewhere_is_judged_by_its_timestamps(
    tmp_path: Path, ws: Path, clock: SimClock, stamp_age: float | None, decides: bool
) -> None:
    from datetime import datetime

    t = one_big_read()
    if stamp_age is not None:
        when = datetime.fromtimestamp(clock() - stamp_age, tz=UTC).isoformat().replace("+00:00", "Z")
        for entry in t.entries:
            entry["timestamp"] = when
    plain = SqliteSessionStore(tmp_path / "sessions.db")  # another writer: no activity on record
    await put(plain, KEY, t.entries)
    plain.close()
    policy = TrimPolicy(keep_recent=1, warm_budget=0, rebase_share=0)
    store = TrimmingSessionStore(tmp_path / "sessions.db", ws, policy=policy, clock=clock)
    try:
        loaded = await get(store, KEY)
    finally:
        store.close()

    assert (loaded != t.entries) is decides


async def test_a_decision_holds_and_the_old_prompt_stays_a_prefix(
    make_store: MakeStore, clock: SimClock, tmp_path: Path
) -> None:
    t = Transcript()
    t.prompt("go")
    glances_and_reads(t, 12)
    policy = TrimPolicy(keep_recent=6, rebase_share=0)
    store = make_store(policy=policy, ephemeral=EphemeralPolicy(keep_recent=4))
    await put(store, KEY, t.entries)
    clock.advance(COLD)
    first = await get(store, KEY)
    decided = ledger(tmp_path / "sessions.db")
    assert {kind for kind, _, _ in decided} == {"expire", "spill"}

    # the resumed session goes on: more results, written moments ago
    more = Transcript()
    more.last, more.n = t.last, t.n
    glances_and_reads(more, 5, start=12)
    await put(store, KEY, more.entries)
    second = await get(store, KEY)

    # byte-identical up to where the first copy ended: the API reads all of it from cache
    dump = [json.dumps(e, ensure_ascii=False, sort_keys=True) for e in second[: len(first)]]
    assert dump == [json.dumps(e, ensure_ascii=False, sort_keys=True) for e in first]
    assert second[len(first) :] == more.entries  # and the new part is as the CLI wrote it
    assert ledger(tmp_path / "sessions.db") == decided
    assert store.last_report["deferred"] > 0

    clock.advance(COLD)  # the next resume finds the cache gone: what waited is decided now
    third = await get(store, KEY)
    assert len(ledger(tmp_path / "sessions.db")) > len(decided)
    assert "deferred" not in store.last_report
    assert third != second


async def test_an_expiry_note_keeps_the_age_it_was_written_with(
    make_store: MakeStore, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    first = t.bash("git status", "clean\n")
    for _ in range(6):
        t.read("/pad", "pad\n")
    store = make_store(policy=TrimPolicy(enabled=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)
    note = results(await get(store, KEY))[first]
    assert note == EphemeralPolicy().placeholder("`git status`", 7)

    more = Transcript()
    more.last, more.n = t.last, t.n
    for _ in range(5):
        more.read("/pad", "pad\n")
    await put(store, KEY, more.entries)
    clock.advance(COLD)

    assert results(await get(store, KEY))[first] == note  # not "12 rounds ago": the prompt stays


async def test_decisions_outlive_the_store_and_leave_with_the_session(
    make_store: MakeStore, clock: SimClock, tmp_path: Path, ws: Path
) -> None:
    t = Transcript()
    t.prompt("go")
    glances_and_reads(t, 10)
    store = make_store(policy=TrimPolicy(keep_recent=2), ephemeral=EphemeralPolicy(keep_recent=2))
    await put(store, KEY, t.entries)
    clock.advance(COLD)
    decided = await get(store, KEY)
    store.close()

    again = TrimmingSessionStore(
        tmp_path / "sessions.db",
        ws,
        policy=TrimPolicy(keep_recent=2),
        ephemeral=EphemeralPolicy(keep_recent=2),
        clock=clock,
    )
    try:
        assert await get(again, KEY) == decided  # another process, same prompt
        await again.delete(KEY)
        assert ledger(tmp_path / "sessions.db") == []
        assert await again.load(KEY) is None
    finally:
        again.close()


async def test_a_decision_on_record_wins_over_a_fresh_one(
    make_store: MakeStore, clock: SimClock, tmp_path: Path
) -> None:
    from flower.stores import decisions

    t = Transcript()
    t.prompt("go")
    status = t.bash("git status", "clean\n")
    for _ in range(6):
        t.read("/pad", "pad\n")
    store = make_store(policy=TrimPolicy(enabled=False))
    await put(store, KEY, t.entries)
    with sqlite3.connect(tmp_path / "sessions.db") as con:  # another process decided first
        decisions.record(con, KEY, "expire", {status: "[decided elsewhere]"}, clock())
    clock.advance(COLD)

    assert results(await get(store, KEY))[status] == "[decided elsewhere]"


@pytest.mark.parametrize(
    ("recent", "budget", "decided"),
    [
        ("small", 1.0, True),  # the rewrite is small and the bank is big: it pays
        ("big", 1.0, False),  # rewriting the big recent results would cost more than plain
        ("small", 0.0, False),  # warm_budget=0: never while warm
    ],
)
async def test_a_warm_resume_decides_only_what_the_saved_tokens_pay_for(
    make_store: MakeStore, clock: SimClock, recent: str, budget: float, decided: bool
) -> None:
    t = Transcript()
    t.prompt("go")
    old = [t.read(f"/old{i}", big(f"old{i}", 8000)) for i in range(10)]
    for i in range(2):
        t.read(f"/new{i}", big(f"new{i}", 6000) if recent == "big" else "short\n")
    policy = TrimPolicy(keep_recent=3, warm_budget=budget, rebase_share=0)
    store = make_store(policy=policy, ephemeral=EphemeralPolicy(enabled=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)
    first = await get(store, KEY)
    assert store.last_report["cleared"] == 9  # the bank: old0..old8 spilled at a cold resume

    more = Transcript()
    more.last, more.n = t.last, t.n
    more.read("/last", "short\n")  # old9 leaves the protected window
    await put(store, KEY, more.entries)
    second = await get(store, KEY)  # warm

    spilled = results(second)[old[9]] != big("old9", 8000)
    assert spilled is decided
    assert store.last_report.get("deferred", 0) == int(not decided)
    assert second[: old_index(first, old[9])] == first[: old_index(first, old[9])]


def old_index(entries: list[dict[str, Any]], tool_id: str) -> int:
    return next(
        i
        for i, e in enumerate(entries)
        if e.get("type") == "user"
        and isinstance(e["message"]["content"], list)
        and any(b.get("tool_use_id") == tool_id for b in e["message"]["content"])
    )


@pytest.mark.parametrize(
    ("waiting", "share", "boundary"),
    [
        (3, 0.25, ""),  # 3 of 15 big results waiting: under a quarter of the prompt, nothing moves
        (5, 0.25, "rebase"),  # 5 of 17: more than a quarter, one re-cache for all of them
        (5, 0.5, ""),  # a higher bar
        (5, 0.0, ""),  # rebase_share=0: never while warm
    ],
)
async def test_a_warm_resume_rebases_when_what_waits_is_a_large_share(
    make_store: MakeStore, clock: SimClock, waiting: int, share: float, boundary: str
) -> None:
    t = Transcript()
    t.prompt("go")
    texts = [big(f"f{i}", 4000) for i in range(12 + waiting)]
    ids = [t.read(f"/f{i}", text) for i, text in enumerate(texts)]
    policy = TrimPolicy(keep_recent=12, warm_budget=0, rebase_share=share, rebase_after=0)
    store = make_store(policy=policy, ephemeral=EphemeralPolicy(enabled=False))
    await put(store, KEY, t.entries)

    loaded = await get(store, KEY)  # warm: the session wrote a moment ago

    assert store.last_boundary == boundary
    got = results(loaded)
    spilled = [tool_id for tool_id, text in zip(ids, texts, strict=True) if got[tool_id] != text]
    assert spilled == (ids[:waiting] if boundary else [])


async def test_a_rebase_waits_until_the_cache_has_stayed_warm_for_a_while(make_store: MakeStore) -> None:
    t = Transcript()
    t.prompt("go")
    texts = [big(f"f{i}", 4000) for i in range(17)]
    ids = [t.read(f"/f{i}", text) for i, text in enumerate(texts)]
    policy = TrimPolicy(keep_recent=12, warm_budget=0, rebase_after=2)
    store = make_store(policy=policy, ephemeral=EphemeralPolicy(enabled=False))
    await put(store, KEY, t.entries)

    boundaries = []
    for _ in range(4):  # resumes that all come back within the cache's life
        loaded = await get(store, KEY)
        boundaries.append(store.last_boundary)

    assert boundaries == ["", "", "rebase", ""]  # after two warm loads in a row, then stable
    assert [results(loaded)[i] == text for i, text in zip(ids, texts, strict=True)] == [False] * 5 + [
        True
    ] * 12


@pytest.mark.parametrize(
    ("wall_jump", "elapsed", "decides"),
    [
        (2 * 3600, 10, False),  # the clock jumped forward: the cache is still warm
        (-2 * 3600, 10, False),
        (-2 * 3600, COLD, True),  # jumped back, yet the cache has expired
        (2 * 3600, COLD, True),
        (0, COLD, True),
        (0, 10, False),
    ],
    ids=["forward-warm", "back-warm", "back-cold", "forward-cold", "steady-cold", "steady-warm"],
)
async def test_a_wall_clock_that_jumps_never_makes_a_decision_early_or_withholds_one(
    tmp_path: Path, ws: Path, wall_jump: float, elapsed: float, decides: bool
) -> None:
    t = one_big_read()
    wall, steady = [1_800_000_000.0], [0.0]
    policy = TrimPolicy(keep_recent=1, warm_budget=0, rebase_share=0)
    store = TrimmingSessionStore(
        tmp_path / "sessions.db", ws, policy=policy, clock=lambda: wall[0], monotonic=lambda: steady[0]
    )
    try:
        await put(store, KEY, t.entries)
        wall[0] += wall_jump + elapsed
        steady[0] += elapsed
        loaded = await get(store, KEY)
    finally:
        store.close()
    assert (loaded != t.entries) is decides, store.last_boundary


async def test_another_process_behind_the_stamp_decides_nothing_on_a_guess(tmp_path: Path, ws: Path) -> None:
    t = one_big_read()
    policy = TrimPolicy(keep_recent=1, warm_budget=0, rebase_share=0)
    writer = TrimmingSessionStore(tmp_path / "sessions.db", ws, policy=policy, clock=lambda: 1_800_000_000.0)
    await put(writer, KEY, t.entries)
    writer.close()
    behind = TrimmingSessionStore(tmp_path / "sessions.db", ws, policy=policy, clock=lambda: 1_700_000_000.0)
    try:
        assert await get(behind, KEY) == t.entries
    finally:
        behind.close()
