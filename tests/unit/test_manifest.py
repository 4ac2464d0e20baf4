"""Manifest rows: one parser, one formatter, and the books a previous flower wrote read and
written back byte for byte, in manifest.json and in a shared store."""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from flower.core.labels import StepLabel
from flower.core.manifest import BRANCH_KEYS, STEP_KEYS, Branch, ManifestError, ManifestRow, rows_of
from flower.core.recovery import read_rows, sessions_by_step, wakes_in
from flower.core.runtime import Runtime, StepResult
from flower.core.shared import SharedRun
from flower.stores.postgres import PostgresRunBook

# written by flower before rows were typed: `flower demo` (two wakes, judged rounds), then
# `flower rewind 1` and `flower fork 1` (the fork's copy of the books; its origin's path renamed)
PREVIOUS = Path(__file__).parent.parent / "data" / "manifests" / "demo-rewind-fork.json"


def previous_text() -> str:
    return PREVIOUS.read_text(encoding="utf-8")


def previous() -> list[dict[str, Any]]:
    data = json.loads(previous_text())
    assert isinstance(data, list)
    return data


def dumped(rows: list[dict[str, Any]]) -> str:
    """As the run_dir's writer writes a manifest (rundir.update_json)."""
    return json.dumps(rows, ensure_ascii=False, indent=2)


# -- what a previous flower wrote --------------------------------------------------------------------


def test_a_manifest_written_before_typed_rows_reads_and_writes_back_byte_for_byte() -> None:
    rows = rows_of(json.loads(previous_text()))
    assert [str(r.step) for r in rows] == [
        "确认需求",
        "设定目标",
        "干活",
        "干活·判定#1",
        "干活#round2",
        "干活·判定#2",
        "干活",
        "干活·判定#1",
        "rewind",
        "fork",
    ]
    assert dumped([r.as_json() for r in rows]) == previous_text()
    assert rows == rows_of(previous()) and len(set(rows)) == len(rows)  # values: equal, hashable


def test_the_formatter_writes_each_row_as_the_previous_flower_did() -> None:
    """A row formatted anew (nothing kept of what was read) has the same keys, order and values."""
    for data in previous():
        fresh = replace(ManifestRow.of_json(data))  # replace keeps no source: formatted from fields
        assert list(fresh.as_json().items()) == list(data.items()), data["step"]
        assert list(fresh.as_json()) == list(BRANCH_KEYS if "rewind" in data else STEP_KEYS)


def test_a_steps_row_has_the_ledger_of_a_step_then_its_duration_and_run() -> None:
    """The keys the previous flower wrote: a StepResult's fields, in order, then these two."""
    assert (*(f.name for f in fields(StepResult)), "duration_s", "run") == STEP_KEYS


def test_a_rewind_and_a_fork_row_are_made_from_their_records_as_before() -> None:
    for data in previous():
        if "rewind" in data:
            made = ManifestRow.of_branch(data["rewind"])
            assert list(made.as_json().items()) == list(data.items())
            assert made.rewind is not None and made.rewind.kind == data["rewind"]["kind"]


def test_the_typed_rows_say_what_the_previous_rows_said() -> None:
    rows = rows_of(previous())
    work = rows[4]
    assert work.step == StepLabel.round("干活", 2) and work.ok and work.run == rows[0].run
    assert work.cost_usd == previous()[4]["cost_usd"] and work.attempts == 1 and work.errors == ()
    judge = rows[5]
    assert judge.step == StepLabel.verdict("干活", 2) and judge.lineage_key is None
    assert judge.text.startswith("## 结论\n达成")
    rewind, fork = rows[8], rows[9]
    assert rewind.rewind is not None
    assert rewind.rewind == Branch(
        id=rewind.run.removeprefix("rewind-"),
        kind="rewind",
        round=1,
        from_round=3,
        at=rewind.started_at,
        remark="回到第一轮",
    )
    assert fork.rewind is not None and fork.rewind.data["from"] == "/home/dev/hello"
    assert sessions_by_step(rows) == sessions_by_step(previous())
    assert sessions_by_step(rows)["干活"] == rows[6].session_id
    assert wakes_in(rows) == 4  # two wakes, the rewind's row and the fork's


# -- tolerant reading ----------------------------------------------------------------------------------


def test_a_row_of_an_older_flower_reads_with_defaults_for_what_it_lacks() -> None:
    row = ManifestRow.of_json({"step": "干活", "run": "r1", "session_id": "s1", "ok": True})
    assert row == ManifestRow(StepLabel("干活"), "r1", session_id="s1", ok=True)
    assert (row.cost_usd, row.attempts, row.errors, row.retired, row.ended_at) == (0.0, 1, (), (), 0.0)
    assert row.well_formed and row.as_json() == {"step": "干活", "run": "r1", "session_id": "s1", "ok": True}


def test_keys_this_flower_does_not_know_are_kept_when_the_row_is_written_anew() -> None:
    data = {**previous()[2], "model": "claude-opus-4-5", "tags": ["a", {"b": 1}]}
    row = ManifestRow.of_json(data)
    assert row.extra == {"model": "claude-opus-4-5", "tags": ["a", {"b": 1}]}
    assert row.as_json() == data
    changed = replace(row, ok=False).as_json()
    assert changed == {**data, "ok": False} and list(changed)[-2:] == ["model", "tags"]


def test_values_of_the_wrong_type_read_as_defaults_and_are_written_back_as_they_were() -> None:
    data = {
        "step": "干活",
        "run": "r1",
        "session_id": "",
        "ok": "yes",
        "cost_usd": "0.5",
        "num_turns": "3",
        "attempts": True,
        "errors": ["a", 2],
        "retired": ["", "s0", None],
        "started_at": None,
        "ended_at": False,
        "rewind": "not a record",
    }
    row = ManifestRow.of_json(data)
    assert (row.session_id, row.ok, row.cost_usd, row.num_turns, row.attempts) == (None, False, 0.0, 3, 1)
    assert (row.errors, row.retired, row.started_at, row.ended_at) == (("a",), ("s0",), 0.0, 0.0)
    assert row.rewind is None and row.sessions == {"s0"}
    assert row.as_json() == data


def test_a_row_without_a_step_or_a_run_is_kept_but_never_taken_for_one() -> None:
    nameless = ManifestRow.of_json({"run": "r1", "session_id": "s1"})
    runless = ManifestRow.of_json({"step": 7, "session_id": "s2"})
    for row in (nameless, runless):
        assert not row.well_formed and row.lineage_key is None
    assert nameless.has_run and not runless.has_run
    assert sessions_by_step([nameless, runless]) == {} and wakes_in([nameless, runless]) == 1


@pytest.mark.parametrize(
    "data", [[1, 2], "干活", 3, None, True], ids=["list", "text", "number", "null", "bool"]
)
def test_what_is_not_an_object_is_not_a_row(data: Any) -> None:
    with pytest.raises(ManifestError, match="a manifest row is a JSON object"):
        ManifestRow.of_json(data)
    assert rows_of([data, {"step": "a", "run": "r"}]) == [ManifestRow(StepLabel("a"), "r")]


# -- the writers: the Runtime, in manifest.json and in the shared store ---------------------------------


@pytest.fixture
def key_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("FLOWER_STORE", raising=False)


def in_flight(rt: Runtime) -> StepResult:
    """A step the Runtime is in when it is told to stop: `rescue` books it."""
    step = StepResult(step=str(StepLabel.round("干活", 3)), session_id="s-new", cost_usd=0.25, num_turns=2)
    step.begin()
    step.retired.append("s-old")
    rt._inflight = step
    return step


def test_the_runtime_appends_its_row_and_leaves_the_previous_rows_byte_for_byte(
    tmp_path: Path, key_set: None
) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(previous_text(), encoding="utf-8")
    rt = Runtime(workspace=tmp_path / "ws", run_dir=run_dir)
    try:
        step = in_flight(rt)
        rt.rescue()
    finally:
        rt.close()
    written = (run_dir / "manifest.json").read_text(encoding="utf-8")
    data = json.loads(written)
    assert dumped(data[:-1]) == previous_text()
    assert list(data[-1]) == list(STEP_KEYS)
    assert data[-1] | {"started_at": 0, "ended_at": 0, "duration_s": 0} == {
        "step": "干活#round3",
        "session_id": "s-new",
        "ok": False,
        "cost_usd": 0.25,
        "num_turns": 2,
        "text": "",
        "error": "killed-by-signal",
        "started_at": 0,
        "ended_at": 0,
        "attempts": 1,
        "errors": [],
        "resumed": False,
        "retired": ["s-old"],
        "context": 0,
        "duration_s": 0,
        "run": rt.run_id,
    }
    assert data[-1]["started_at"] == step.started_at and data[-1]["duration_s"] == step.duration_s
    rows, damage = read_rows(run_dir)
    assert damage is None and rows[-1].sessions == {"s-new", "s-old"} and rows[-1].lineage_key == "干活"


def repo(path: Path) -> Path:
    ident = ["-c", "user.name=t", "-c", "user.email=t@flower.invalid", "-c", "init.defaultBranch=main"]
    path.mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", "https://h/manifest"]):
        subprocess.run(["git", *ident, *args], cwd=path, check=True, capture_output=True)
    return path


def test_the_shared_store_keeps_the_rows_as_the_file_does_and_reads_old_rows(
    tmp_path: Path, pg_url: str, key_set: None
) -> None:
    ws = repo(tmp_path / "ws")
    rt = Runtime(workspace=ws, run_dir=tmp_path / "runs", store=pg_url)
    try:
        assert rt.shared is not None
        in_flight(rt)
        rt.rescue()
    finally:
        rt.close()
    book = PostgresRunBook.direct(pg_url)
    shared = SharedRun.of(ws, book, "db")  # another process reading the same books
    [mine] = book.manifest(shared.identity.key)
    on_disk = json.loads((tmp_path / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert on_disk == [mine] and list(mine) == list(STEP_KEYS)
    # the rows a previous flower kept in the store read back as they were written
    old = previous()
    by_run: dict[str, list[dict[str, Any]]] = {}
    for data in old:
        by_run.setdefault(data["run"], []).append(data)
    for run, rows in by_run.items():
        book.put_manifest(shared.identity.key, run, rows)
    typed = shared.rows()
    assert [r.as_json() for r in typed if r.run != mine["run"]] == old
    assert [r for r in typed if r.run == mine["run"]] == [ManifestRow.of_json(mine)]
