"""TrimmingSessionStore: resume-time expiry of glance results and archiving of big results."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claude_agent_sdk.types import SessionKey
from flower.stores.ephemeral import EphemeralPolicy
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import TrimmingSessionStore, TrimPolicy, trim_report

KEY: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
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
async def make_store(tmp_path: Path, ws: Path):
    stores: list[TrimmingSessionStore] = []

    def make(**kw: Any) -> TrimmingSessionStore:
        store = TrimmingSessionStore(tmp_path / "sessions.db", ws, **kw)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


def big(tag: str, n: int = 5000) -> str:
    line = f"{tag}: some output line with words in it\n"
    return (line * (n // len(line) + 1))[:n]


# --------------------------------------------------------------------------- trim


async def test_old_big_results_are_spilled_and_recent_ones_stay(make_store, ws: Path) -> None:
    t = Transcript()
    t.prompt("go")
    ids = [t.read(f"/src/f{i}.py", big(f"file{i}")) for i in range(30)]
    store = make_store(ephemeral=EphemeralPolicy(enabled=False))
    await store.append(KEY, t.entries)

    loaded = await store.load(KEY)

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


async def test_spill_file_is_named_by_sha256_prefix(make_store, ws: Path) -> None:
    import hashlib

    t = Transcript()
    t.prompt("go")
    text = big("hashme", 3000) + "中文内容"
    tool_id = t.read("/a", text)
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    loaded = await store.load(KEY)

    path = pointer_path(results(loaded)[tool_id])
    assert path.name == hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".txt"
    assert path.read_text(encoding="utf-8") == text


async def test_threshold_is_inclusive_and_short_results_stay(make_store) -> None:
    t = Transcript()
    t.prompt("go")
    at = t.read("/a", "x" * 2000)
    below = t.read("/b", "y" * 1999)
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    got = results(await store.load(KEY))

    assert got[at] != "x" * 2000
    assert got[below] == "y" * 1999
    assert store.last_report["cleared"] == 1


async def test_sqlite_keeps_every_original_byte(make_store, tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("go")
    for i in range(8):
        t.read(f"/f{i}", big(f"r{i}"))
        t.bash("git status -s", f" M file{i}.py\n")
    original = copy.deepcopy(t.entries)
    store = make_store(policy=TrimPolicy(keep_recent=1), ephemeral=EphemeralPolicy(keep_recent=1))
    await store.append(KEY, t.entries)
    before = db_rows(tmp_path / "sessions.db")

    loaded = await store.load(KEY)
    await store.load(KEY)

    assert loaded != original  # something was really trimmed
    assert db_rows(tmp_path / "sessions.db") == before
    plain = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await plain.load(KEY) == original
    finally:
        plain.close()
    assert t.entries == original  # the caller's list is not mutated either


async def test_images_and_documents_are_left_alone(make_store) -> None:
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
    await store.append(KEY, t.entries)

    got = results(await store.load(KEY))

    assert got[only_image] == [image]
    assert got[mixed][1:] == [image, document]
    assert got[mixed][0]["type"] == "text"
    assert pointer_path(got[mixed][0]["text"]).read_text(encoding="utf-8") == big("caption")
    assert store.last_report["cleared"] == 1


async def test_several_text_parts_all_land_in_the_spill_file(make_store) -> None:
    t = Transcript()
    t.prompt("go")
    parts = [big("one", 1200), big("two", 1300)]
    tool_id = t.call("mcp__x__q", {}, [{"type": "text", "text": p} for p in parts])
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    content = results(await store.load(KEY))[tool_id]

    assert len(content) == 1 and content[0]["type"] == "text"
    archived = pointer_path(content[0]["text"]).read_text(encoding="utf-8")
    assert all(p in archived for p in parts)


async def test_compact_summary_is_never_touched(make_store) -> None:
    t = Transcript()
    summary = t.prompt(big("summary", 9000), isCompactSummary=True)
    t.read("/a", big("a"))
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    loaded = await store.load(KEY)

    assert loaded[0] == summary
    assert store.last_report["cleared"] == 1


async def test_every_tool_result_block_survives(make_store) -> None:
    t = Transcript()
    t.prompt("go")
    for i in range(25):
        t.read(f"/f{i}", big(f"f{i}", 2500 + i))
        t.bash("ls -la", "total 0\n")
    store = make_store(policy=TrimPolicy(keep_recent=3), ephemeral=EphemeralPolicy(keep_recent=2))
    await store.append(KEY, t.entries)

    loaded = await store.load(KEY)

    assert set(results(loaded)) == tool_use_ids(loaded) == tool_use_ids(t.entries)
    assert [e["uuid"] for e in loaded] == [e["uuid"] for e in t.entries]
    assert [e.get("parentUuid") for e in loaded] == [e.get("parentUuid") for e in t.entries]


async def test_disabled_trim_changes_nothing(make_store, ws: Path) -> None:
    t = Transcript()
    t.prompt("go")
    for i in range(5):
        t.read(f"/f{i}", big(f"f{i}"))
    store = make_store(
        policy=TrimPolicy(enabled=False, keep_recent=0), ephemeral=EphemeralPolicy(enabled=False)
    )
    await store.append(KEY, t.entries)

    assert await store.load(KEY) == t.entries
    assert store.last_report == {}
    assert trim_report(store) == "未裁剪"
    assert spill_files(ws) == {}


async def test_loading_twice_reuses_the_same_spill_file(make_store, ws: Path) -> None:
    t = Transcript()
    t.prompt("go")
    t.read("/a", big("same"))
    t.read("/b", big("same"))
    t.read("/c", big("other"))
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    first = await store.load(KEY)
    second = await store.load(KEY)

    assert first == second
    assert sorted(spill_files(ws).values()) == sorted([big("same"), big("other")])


async def test_result_stays_verbatim_when_spill_cannot_be_written(make_store, ws: Path) -> None:
    (ws / ".flower").mkdir()
    (ws / ".flower" / "spill").write_text("a file where the directory should be")
    t = Transcript()
    t.prompt("go")
    tool_id = t.read("/a", big("keep"))
    store = make_store(policy=TrimPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    got = results(await store.load(KEY))

    assert got[tool_id] == big("keep")
    assert store.last_report["cleared"] == 0


def test_spill_dir_must_stay_inside_workspace(tmp_path: Path, ws: Path) -> None:
    for bad in ("../outside", str(tmp_path / "elsewhere")):
        with pytest.raises(ValueError):
            TrimmingSessionStore(tmp_path / "x.db", ws, policy=TrimPolicy(spill_dirname=bad))


async def test_unknown_key_loads_none(make_store) -> None:
    store = make_store()
    assert await store.load({"project_key": "p", "session_id": "nope"}) is None
    assert trim_report(store) == "未裁剪"


# --------------------------------------------------------------------------- expire


async def test_old_glance_results_expire_in_place(make_store, ws: Path) -> None:
    t = Transcript()
    t.prompt("go")
    statuses = [t.bash("git status -s", f" M file{i}.py\n") for i in range(10)]
    store = make_store(policy=TrimPolicy(enabled=False))
    await store.append(KEY, t.entries)

    loaded = await store.load(KEY)

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


async def test_only_ephemeral_bash_commands_expire(make_store) -> None:
    t = Transcript()
    t.prompt("go")
    read = t.read("/a.txt", "contents of a\n")
    pytest_run = t.bash("pytest -q", "3 passed\n")
    grep_tool = t.call("Grep", {"pattern": "x"}, "a.py:1:x\n")
    ls = t.bash("ls -la", "total 0\n")
    for _ in range(6):
        t.read("/pad", "pad\n")
    store = make_store(policy=TrimPolicy(enabled=False))
    await store.append(KEY, t.entries)

    got = results(await store.load(KEY))

    assert got[read] == "contents of a\n"
    assert got[pytest_run] == "3 passed\n"
    assert got[grep_tool] == "a.py:1:x\n"
    assert "已过期" in got[ls] and "ls -la" in got[ls]
    assert store.last_report["expired"] == 1


async def test_expiry_skips_long_meta_and_denied_results(make_store) -> None:
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
    await store.append(KEY, t.entries)

    got = results(await store.load(KEY))

    # Too long to expire, so the trim step archives it instead.
    assert pointer_path(got[long_cat]).read_text(encoding="utf-8") == big("log", 2500)
    assert got[meta] == "clean\n"
    assert got[denied] == "PreToolUse:Bash hook error: no"
    assert got[as_list] == [{"type": "text", "text": EphemeralPolicy().placeholder("`pwd`", 7)}]
    assert store.last_report["expired"] == 1
    assert store.last_report["cleared"] == 1


async def test_expiry_disabled_keeps_glances(make_store) -> None:
    t = Transcript()
    t.prompt("go")
    ids = [t.bash("git status", "clean\n") for _ in range(10)]
    store = make_store(ephemeral=EphemeralPolicy(enabled=False))
    await store.append(KEY, t.entries)

    got = results(await store.load(KEY))

    assert all(got[i] == "clean\n" for i in ids)
    assert "expired" not in store.last_report


async def test_report_prefers_trimming_over_expiry(make_store) -> None:
    t = Transcript()
    t.prompt("go")
    t.bash("git status", "clean\n")
    t.read("/a", big("a"))
    store = make_store(policy=TrimPolicy(keep_recent=0), ephemeral=EphemeralPolicy(keep_recent=0))
    await store.append(KEY, t.entries)

    await store.load(KEY)

    assert store.last_report["expired"] == 1
    assert store.last_report["cleared"] == 1
    assert trim_report(store).startswith("裁掉 1 个工具结果(保留最近 0 个),省下 ~")


# --------------------------------------------------------------------------- real transcripts


async def test_real_cli_transcript_trims_and_keeps_structure(make_store, tmp_path: Path) -> None:
    entries = [
        json.loads(line) for line in (DATA / "main_denial_subagent_apierror.jsonl").open(encoding="utf-8")
    ]
    store = make_store(
        policy=TrimPolicy(keep_recent=0, min_chars=1000), ephemeral=EphemeralPolicy(keep_recent=0)
    )
    await store.append(KEY, entries)
    before = db_rows(tmp_path / "sessions.db")

    loaded = await store.load(KEY)

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
    tmp_path: Path, plan, keep: int, keep_eph: int
) -> None:
    import uuid as uuidlib

    base = tmp_path / uuidlib.uuid4().hex
    ws = base / "ws"
    ws.mkdir(parents=True)
    t = Transcript()
    t.prompt("go")
    originals: dict[str, Any] = {}
    for kind, size in plan:
        text = big(kind, size)
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
        policy=TrimPolicy(keep_recent=keep),
        ephemeral=EphemeralPolicy(keep_recent=keep_eph),
    )
    try:
        await store.append(KEY, t.entries)
        before = db_rows(base / "s.db")
        loaded = await store.load(KEY)
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
