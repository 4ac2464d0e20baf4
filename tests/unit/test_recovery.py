"""What is rebuilt from a damaged run_dir: manifest rows, the step -> session map, the store."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

import pytest

from flower.core.brief import Brief
from flower.core.goal import Goal
from flower.core.lineage import Lineage
from flower.core.recovery import (
    EMPTY_STORE,
    StoreError,
    damaged_store,
    read_manifest,
    refill_store,
    salvage_rows,
    sessions_by_step,
    store_damage,
    wakes_in,
)
from flower.core.transcripts import catch_up
from flower.sim.scenarios import GOAL
from flower.stores.sqlite import SqliteSessionStore

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

WS_KEY = "-tmp-ws"

T = TypeVar("T")


def must(value: T | None) -> T:
    """The document the test just wrote: a None here is the failure itself."""
    assert value is not None
    return value


def row(step: str, sid: str, run: str, started: float) -> dict[str, object]:
    return {"step": step, "session_id": sid, "run": run, "started_at": started, "ok": True, "text": "{x}"}


ROWS = [
    row("确认需求", "s-clarify", "r1", 1.0),
    row("设定目标", "s-goal", "r1", 2.0),
    row("干活", "s-work-1", "r1", 3.0),
    row("干活·判定#1", "s-judge-1", "r1", 4.0),
    row("干活#round2", "s-work-1", "r1", 5.0),
    row("干活", "s-work-2", "r2", 6.0),  # a handoff moved the work to a new session
    row("干活·判定#2", "s-judge-2", "r2", 7.0),
]


def test_the_rows_that_still_parse_survive_truncation_and_garbage() -> None:
    text = json.dumps(ROWS, ensure_ascii=False, indent=2)
    cut = text[: text.index('"s-judge-2"')]  # the last row is cut in half
    assert salvage_rows(cut) == ROWS[:-1]
    garbage = text.replace('"step": "设定目标"', '"step": \x00garbage')
    assert [r["step"] for r in salvage_rows(garbage)] == [r["step"] for r in ROWS if r["step"] != "设定目标"]
    assert salvage_rows("nothing here { not json") == []


def test_the_step_map_is_the_last_session_of_each_step_judges_left_out() -> None:
    assert sessions_by_step(ROWS) == {"确认需求": "s-clarify", "设定目标": "s-goal", "干活": "s-work-2"}
    assert wakes_in(ROWS) == 2


def test_a_damaged_lineage_is_rebuilt_from_the_manifest_read_only_then_repaired(tmp_path: Path) -> None:
    run_dir, ws = tmp_path / "runs", tmp_path / "ws"
    ws.mkdir()
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(json.dumps(ROWS), encoding="utf-8")
    (run_dir / "lineage.json").write_text('{"workspace": "', encoding="utf-8")
    before = sorted(p.name for p in run_dir.iterdir())

    opened = Lineage.open(run_dir, ws)
    assert opened.damage and "不是完整的 JSON" in opened.damage
    assert opened.steps == {"确认需求": "s-clarify", "设定目标": "s-goal", "干活": "s-work-2"}
    assert opened.woke == 2
    assert sorted(p.name for p in run_dir.iterdir()) == before  # opening wrote nothing

    repair = opened.repair_now()
    assert repair is not None and repair.backup.read_text() == '{"workspace": "'
    assert "找回 3 个步骤的会话" in repair.line()
    again = Lineage.open(run_dir, ws)
    assert (again.steps, again.woke, again.damage) == (opened.steps, 2, None)


@pytest.mark.parametrize(
    "content, says",
    [
        ("", "空文件"),
        ("[1, 2]", "应该是 JSON 对象"),
        ('{"woke": 1, "steps": {}}', "缺 workspace"),
        ('{"workspace": "WS", "woke": "3", "steps": {}}', "woke 不是非负整数"),
        ('{"workspace": "WS", "woke": 1, "steps": ["a"]}', "steps 不是"),
    ],
)
def test_every_kind_of_damage_is_named(tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "lineage.json").write_text(content.replace("WS", str(tmp_path)), encoding="utf-8")
    assert says in (Lineage.open(tmp_path / "runs", tmp_path).damage or "")


def test_a_lineage_of_another_workspace_is_silently_no_lineage(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "lineage.json").write_text(
        json.dumps({"workspace": "/elsewhere", "woke": 4, "steps": {"a": "s"}}), encoding="utf-8"
    )
    lineage = Lineage.open(tmp_path / "runs", tmp_path)
    assert (lineage.steps, lineage.woke, lineage.damage) == ({}, 0, None)


def test_a_damaged_manifest_reads_as_its_surviving_rows(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(ROWS, indent=2)[:-40], encoding="utf-8")
    rows, damage = read_manifest(tmp_path)
    assert damage and len(rows) == len(ROWS) - 1


def make_store(path: Path, sessions: dict[str, int]) -> None:
    store = SqliteSessionStore(path)
    for sid, n in sessions.items():
        # the SDK types a minimal supertype of an entry; real lines carry more keys
        entries = [
            cast(
                "SessionStoreEntry", {"type": "user", "uuid": f"{sid}-{i}", "message": {"content": "x" * 400}}
            )
            for i in range(n)
        ]
        store.add({"project_key": WS_KEY, "session_id": sid}, entries)
    store.close()


def test_store_damage_is_recognised_without_opening_it(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    assert store_damage(db) is None
    make_store(db, {"a": 400})
    assert store_damage(db) is None
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    assert "被截断" in (store_damage(db) or "")
    db.write_bytes(os.urandom(3000))
    assert store_damage(db) == "不是 SQLite 数据库"
    db.write_bytes(b"")
    assert store_damage(db) == EMPTY_STORE
    db.unlink()
    db.mkdir()
    with pytest.raises(StoreError, match="是个目录"):
        store_damage(db)


def test_an_empty_store_nobody_used_is_a_fresh_start_but_not_when_sessions_existed(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    db.write_bytes(b"")
    assert damaged_store(db) is None and db.exists()
    (tmp_path / "manifest.json").write_text(json.dumps(ROWS), encoding="utf-8")
    repair = damaged_store(db)
    assert repair is not None and repair.reason == EMPTY_STORE and repair.backup.exists() and not db.exists()


def test_a_truncated_store_gives_back_what_still_reads(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    make_store(db, {"s-work-2": 300, "s-clarify": 5})
    full = db.read_bytes()
    db.write_bytes(full[: int(len(full) * 0.8)])
    (tmp_path / "manifest.json").write_text(json.dumps(ROWS), encoding="utf-8")
    repair = damaged_store(db)
    assert repair is not None
    fresh = SqliteSessionStore(db)
    try:
        line = refill_store(repair, fresh, WS_KEY)
        # the pages that survived the cut read again: the first session's, not the last one's
        kept = fresh.uuids({"project_key": WS_KEY, "session_id": "s-work-2"}) or set()
        assert 100 < len(kept) < 300
        assert kept <= {f"s-work-2-{i}" for i in range(300)}
        assert str(repair.backup) in line and "抢救出 1 个会话" in line and "还有 2 个找不回" in line
        assert sorted(p.name for p in tmp_path.iterdir() if ".salvage" in p.name) == []
    finally:
        fresh.close()


class MemoryStore:
    """Enough of SqliteSessionStore for catch_up: uuids by key, and add."""

    def __init__(self) -> None:
        self.keys: dict[str, list[SessionStoreEntry]] = {}

    def _key(self, key: SessionKey) -> str:
        return "/".join([key["project_key"], key["session_id"], key.get("subpath", "")])

    def uuids(self, key: SessionKey) -> set[str] | None:
        entries = self.keys.get(self._key(key))
        return None if entries is None else {str(e["uuid"]) for e in entries if e.get("uuid")}

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self.keys.setdefault(self._key(key), []).extend(entries)


def write_transcript(config: Path, sid: str, entries: list[dict[str, object]], tail: str = "") -> Path:
    path = config / "projects" / WS_KEY / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail, encoding="utf-8")
    return path


SID = "0b7c2d1e-1111-4222-8333-944455556666"


def test_catch_up_copies_only_what_the_store_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    entries: list[dict[str, object]] = [
        {"type": "user", "uuid": "u1"},
        {"type": "api-request", "shape": 1},  # the CLI's own, never mirrored
        {"type": "assistant", "uuid": "a1"},
        {"type": "last-prompt"},
        {"type": "user", "uuid": "u2"},
    ]
    main = write_transcript(tmp_path / "config", SID, entries, tail='{"type": "assist')  # torn by a kill
    sub = main.with_suffix("") / "subagents" / "agent-x.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(json.dumps({"type": "user", "uuid": "s1"}) + "\n", encoding="utf-8")
    store = MemoryStore()
    store.add({"project_key": WS_KEY, "session_id": SID}, [{"type": "user", "uuid": "u1"}])

    assert catch_up(store, WS_KEY, SID) == 3
    assert [e.get("uuid") for e in store.keys[f"{WS_KEY}/{SID}/"]] == ["u1", "a1", "u2"]
    assert store.keys[f"{WS_KEY}/{SID}/subagents/agent-x"] == [{"type": "user", "uuid": "s1"}]
    assert catch_up(store, WS_KEY, SID) == 0  # again: nothing new


def test_a_session_the_store_never_saw_comes_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    write_transcript(tmp_path / "config", SID, [{"type": "queue-operation"}, {"type": "user", "uuid": "u1"}])
    store = MemoryStore()
    assert catch_up(store, WS_KEY, SID) == 2
    assert catch_up(store, "-another-ws", SID) == 0  # only the workspace's own project folder counts
    assert catch_up(store, WS_KEY, "../../etc/passwd") == 0


def test_a_line_that_is_no_entry_is_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the SDK's entry has a text type (and a text uuid where it has one): a line without is not one
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    lines: list[dict[str, object]] = [{"uuid": "x1"}, {"type": 5}, {"type": "user", "uuid": 7}]
    write_transcript(tmp_path / "config", SID, [*lines, {"type": "user", "uuid": "u1"}], tail="[1, 2]\n")
    store = MemoryStore()
    assert catch_up(store, WS_KEY, SID) == 1
    assert store.keys[f"{WS_KEY}/{SID}/"] == [{"type": "user", "uuid": "u1"}]


def test_the_real_store_is_caught_up_and_then_holds_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    write_transcript(tmp_path / "config", SID, [{"type": "user", "uuid": "u1", "message": {"content": "hi"}}])
    store = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert not store.has_session(WS_KEY, SID)
        assert catch_up(store, WS_KEY, SID) == 1
        assert store.has_session(WS_KEY, SID)
        loaded = asyncio.run(store.load({"project_key": WS_KEY, "session_id": SID}))
        assert loaded == [{"type": "user", "uuid": "u1", "message": {"content": "hi"}}]
    finally:
        store.close()


# -- notes ------------------------------------------------------------------------------------------


def test_a_cut_off_goal_is_never_complete_and_says_where_it_stops(tmp_path: Path) -> None:
    path = tmp_path / "目标.md"
    whole = Goal.parse(GOAL).to_markdown()
    path.write_text(whole, encoding="utf-8")
    loaded = must(Goal.load(path))
    assert loaded.complete() and loaded.problem() == ""
    half = whole.encode("utf-8")[: len(whole.encode("utf-8")) // 2 + 7]
    path.write_bytes(half.decode("utf-8", errors="ignore").encode("utf-8"))
    cut = must(Goal.load(path))
    assert cut.checks and not cut.complete()  # what is left parses, and still does not count
    assert "截断" in cut.problem()
    path.write_bytes(whole.encode("utf-8")[:-3])  # cut inside a character
    assert "不是 UTF-8" in must(Goal.load(path)).problem()


def test_a_hand_written_note_without_a_final_newline_is_still_a_note(tmp_path: Path) -> None:
    path = tmp_path / "目标.md"
    path.write_text("## 目标\n写个脚本\n\n## 判定清单\n- 能跑", encoding="utf-8")
    assert must(Goal.load(path)).complete()


def test_a_brief_names_its_missing_sections(tmp_path: Path) -> None:
    path = tmp_path / "需求.md"
    path.write_text("# 需求确认书\n\n## 目标\n写个脚本\n\n## 验收标准\n能跑\n", encoding="utf-8")
    assert must(Brief.load(path)).problem() == "缺「边界」、「未知与假设」"


def test_a_store_sqlite_cannot_open_is_a_clear_error_with_the_fix(tmp_path: Path) -> None:
    from flower.core.recovery import store_error

    error = store_error(tmp_path / "sessions.db", sqlite3.OperationalError("unable to open database file"))
    assert "打不开会话库" in str(error) and "权限" in str(error) and "\n" not in str(error)
