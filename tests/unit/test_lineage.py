from __future__ import annotations

import errno
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from flower.core import rundir
from flower.core.lineage import Lineage
from flower.core.shared import SharedRun


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def leftovers(d: Path) -> list[str]:
    return [p.name for p in d.iterdir() if p.name != "lineage.json"] if d.is_dir() else []


# -- round trip --------------------------------------------------------------------------------


def test_missing_file_gives_empty_lineage(run_dir: Path, ws: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    assert (lin.steps, lin.woke) == ({}, 0)
    assert lin.path == run_dir / "lineage.json"
    assert lin.workspace == ws.resolve()
    assert not run_dir.exists()  # opening writes nothing


def test_remember_writes_immediately_and_reopens(run_dir: Path, ws: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    lin.remember("干活", "47395075-bec7-466e-80cd-f4d60b360235")
    raw = (run_dir / "lineage.json").read_text(encoding="utf-8")
    assert "干活" in raw  # ensure_ascii=False: readable by a human
    assert json.loads(raw) == {
        "workspace": str(ws.resolve()),
        "woke": 0,
        "steps": {"干活": "47395075-bec7-466e-80cd-f4d60b360235"},
    }
    again = Lineage.open(run_dir, ws)
    assert again.steps == {"干活": "47395075-bec7-466e-80cd-f4d60b360235"}


def test_remember_overwrites_same_step(run_dir: Path, ws: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    lin.remember("a", "s1")
    lin.remember("a", "s2")
    assert Lineage.open(run_dir, ws).steps == {"a": "s2"}


@pytest.mark.parametrize("step,sid", [("", "s1"), ("a", ""), ("", "")])
def test_remember_ignores_empty_values(run_dir: Path, ws: Path, step: str, sid: str) -> None:
    lin = Lineage.open(run_dir, ws)
    lin.remember(step, sid)
    assert lin.steps == {}
    assert not (run_dir / "lineage.json").exists()


def test_bump_counts_wakes_and_persists(run_dir: Path, ws: Path) -> None:
    assert Lineage.open(run_dir, ws).bump() == 1
    assert Lineage.open(run_dir, ws).bump() == 2
    lin = Lineage.open(run_dir, ws)
    assert lin.woke == 2
    assert json.loads((run_dir / "lineage.json").read_text())["woke"] == 2


def test_relative_workspace_matches_absolute(
    run_dir: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Lineage.open(run_dir, ws).remember("a", "s1")
    monkeypatch.chdir(ws.parent)
    assert Lineage.open(run_dir, "proj").steps == {"a": "s1"}


# -- corruption always falls back to empty ----------------------------------------------------


def _valid(ws: Path) -> dict:
    return {"workspace": str(ws.resolve()), "woke": 3, "steps": {"a": "s1"}}


@pytest.mark.parametrize(
    "content",
    [
        "garbage, not json at all",
        '{"workspace": "/x", "woke": 3, "steps": {"a": ',  # truncated
        "",
        "[1, 2, 3]",
        '"just a string"',
        "null",
    ],
)
def test_unparseable_or_non_dict_is_empty(run_dir: Path, ws: Path, content: str) -> None:
    run_dir.mkdir()
    (run_dir / "lineage.json").write_text(content, encoding="utf-8")
    lin = Lineage.open(run_dir, ws)
    assert (lin.steps, lin.woke) == ({}, 0)


def test_invalid_utf8_is_empty(run_dir: Path, ws: Path) -> None:
    run_dir.mkdir()
    (run_dir / "lineage.json").write_bytes(b"\xff\xfe\x00garbage")
    assert Lineage.open(run_dir, ws).steps == {}


@pytest.mark.parametrize(
    "patch",
    [
        {"steps": ["a", "s1"]},
        {"steps": {"a": 5}},
        {"steps": "a=s1"},
        {"woke": "3"},
        {"woke": -1},
        {"woke": True},
        {"workspace": None},
    ],
)
def test_wrong_types_are_empty(run_dir: Path, ws: Path, patch: dict) -> None:
    run_dir.mkdir()
    (run_dir / "lineage.json").write_text(json.dumps({**_valid(ws), **patch}), encoding="utf-8")
    lin = Lineage.open(run_dir, ws)
    assert (lin.steps, lin.woke) == ({}, 0)


def test_other_workspace_is_empty(run_dir: Path, ws: Path, tmp_path: Path) -> None:
    Lineage.open(run_dir, ws).remember("a", "s1")
    other = tmp_path / "copy-of-proj"
    other.mkdir()
    lin = Lineage.open(run_dir, other)
    assert (lin.steps, lin.woke) == ({}, 0)
    assert lin.workspace == other.resolve()


def test_valid_file_is_read(run_dir: Path, ws: Path) -> None:
    run_dir.mkdir()
    (run_dir / "lineage.json").write_text(json.dumps(_valid(ws)), encoding="utf-8")
    lin = Lineage.open(run_dir, ws)
    assert (lin.steps, lin.woke) == ({"a": "s1"}, 3)


def test_unreadable_path_is_empty(run_dir: Path, ws: Path) -> None:
    (run_dir / "lineage.json").mkdir(parents=True)  # a directory where the file should be
    assert Lineage.open(run_dir, ws).steps == {}


# -- writes never raise and never leave partial files -----------------------------------------


def test_unwritable_location_is_silent(tmp_path: Path, ws: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, so nothing can be created beneath it")
    lin = Lineage.open(blocker / "runs", ws)
    lin.remember("a", "s1")  # must not raise
    assert lin.bump() == 1
    assert lin.steps == {"a": "s1"}  # memory is still right
    assert blocker.read_text().startswith("a file")


def test_a_write_refused_after_the_merge_counts_a_wake_once(
    run_dir: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the disk fills up as the file is written: the merge has already counted this wake
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rundir, "atomic_write", full)
    lin = Lineage.open(run_dir, ws)
    assert lin.bump() == 1
    lin.remember("a", "s1")
    assert (lin.woke, lin.steps) == (1, {"a": "s1"})
    assert lin.fault is not None


class MemoryBook:
    """A shared store's lineage books in memory: what it holds is what each change returned."""

    def __init__(self) -> None:
        self.held: dict[str, object] = {}

    def lineage(self, workspace: str) -> dict[str, object] | None:
        found = self.held.get(workspace)
        return json.loads(json.dumps(found)) if isinstance(found, dict) else None

    def update_lineage(
        self, workspace: str, change: Callable[[dict[str, object] | None], dict[str, object]]
    ) -> dict[str, object]:
        self.held[workspace] = json.loads(json.dumps(change(self.lineage(workspace))))
        return self.lineage(workspace) or {}

    def put_manifest(self, workspace: str, run: str, rows: list[dict[str, object]]) -> None:
        pass

    def manifest(self, workspace: str) -> list[dict[str, object]]:
        return []


def test_a_shared_store_keeps_the_rewind_books_of_every_change(run_dir: Path, ws: Path) -> None:
    # a rewind sets the step's point, then records itself: the second change keeps the first's
    shared = SharedRun.of(ws, MemoryBook(), "memory")
    lin = Lineage.open(run_dir, ws, shared=shared)
    lin.remember("干活", "s1")
    lin.set_point("干活", {"session": "s1", "at": "u1", "round": 1})
    lin.record_rewind({"id": "r1", "round": 1})
    lin.record_rewind({"id": "r2", "round": 2})
    for seen in (lin, Lineage.open(run_dir, ws), Lineage.open(run_dir, ws, shared=shared)):
        assert seen.point("干活") == {"session": "s1", "at": "u1", "round": 1}
        assert [r["id"] for r in seen.rewinds] == ["r1", "r2"]


def test_failed_replace_leaves_no_temp_file(run_dir: Path, ws: Path) -> None:
    (run_dir / "lineage.json").mkdir(parents=True)  # os.replace onto a directory fails
    lin = Lineage.open(run_dir, ws)
    lin.remember("a", "s1")
    assert leftovers(run_dir) == []


def test_successful_writes_leave_only_the_file(run_dir: Path, ws: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    for i in range(20):
        lin.remember(f"step{i}", f"sid{i}")
    lin.bump()
    assert sorted(p.name for p in run_dir.iterdir()) == ["lineage.json"]


def test_readers_never_see_a_partial_file(run_dir: Path, ws: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    lin.remember("seed", "s0")
    errors: list[Exception] = []
    reads = 0
    stop = threading.Event()

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                json.loads((run_dir / "lineage.json").read_text(encoding="utf-8"))
                reads += 1
            except Exception as exc:
                errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(200):
            lin.remember(f"step-{i}", "x" * 200)
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert reads > 0
    assert len(Lineage.open(run_dir, ws).steps) == 201


# -- archive -----------------------------------------------------------------------------------


def test_archive_moves_lineage_and_extras(run_dir: Path, ws: Path, tmp_path: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    lin.remember("a", "s1")
    lin.bump()
    brief = tmp_path / "需求.md"
    goal = tmp_path / "目标.md"
    brief.write_text("brief", encoding="utf-8")
    goal.write_text("goal", encoding="utf-8")
    missing = tmp_path / "never-written.md"

    dest = lin.archive(tmp_path / "notes" / "archive", extra=[brief, goal, missing])

    assert dest.parent == tmp_path / "notes" / "archive"
    assert re.fullmatch(r"\d{8}-\d{6}", dest.name)
    assert sorted(p.name for p in dest.iterdir()) == sorted(["lineage.json", "需求.md", "目标.md"])
    assert json.loads((dest / "lineage.json").read_text(encoding="utf-8"))["steps"] == {"a": "s1"}
    assert (dest / "需求.md").read_text(encoding="utf-8") == "brief"
    assert not brief.exists() and not goal.exists() and not (run_dir / "lineage.json").exists()
    assert (lin.steps, lin.woke) == ({}, 0)
    assert (Lineage.open(run_dir, ws).steps, Lineage.open(run_dir, ws).woke) == ({}, 0)


def test_archive_twice_in_one_second_never_overwrites(run_dir: Path, ws: Path, tmp_path: Path) -> None:
    into = tmp_path / "archive"
    lin = Lineage.open(run_dir, ws)
    lin.remember("a", "first")
    d1 = lin.archive(into)
    lin.remember("a", "second")
    d2 = lin.archive(into)
    lin.remember("a", "third")
    d3 = lin.archive(into)
    assert len({d1, d2, d3}) == 3
    sids = sorted(json.loads((d / "lineage.json").read_text())["steps"]["a"] for d in (d1, d2, d3))
    assert sids == ["first", "second", "third"]


def test_archive_without_a_lineage_file(run_dir: Path, ws: Path, tmp_path: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    dest = lin.archive(tmp_path / "archive")
    assert dest.is_dir() and list(dest.iterdir()) == []


def test_archive_then_continue_writing(run_dir: Path, ws: Path, tmp_path: Path) -> None:
    lin = Lineage.open(run_dir, ws)
    lin.remember("a", "old")
    lin.archive(tmp_path / "archive")
    lin.remember("b", "new")
    assert Lineage.open(run_dir, ws).steps == {"b": "new"}
