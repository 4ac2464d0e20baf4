"""The books of how a wake stopped short (core/stops.py): the latest wake's stop for the banner,
every wake's for the history; a wake that begins clears the latest, a damaged file knows none."""

from __future__ import annotations

from pathlib import Path

from flower.core.stops import STOPS_FILE, begin_wake, end_wake, last_stop, stops_by_run
from flower.workflow.starter import banner_line

BUDGET_LINE = (
    "stopped: budget —— 这次运行已花 $0.5000,到了上限 $0.5000;要接着做,用新的预算再跑:flower --budget <美元>"
)
STALL_LINE = "连续 2 轮没有进展(同样的判定项没通过,工作区没变),按你的选择停下"


def test_a_stop_is_the_latest_until_the_next_wake_begins(tmp_path: Path) -> None:
    assert last_stop(tmp_path) is None and stops_by_run(tmp_path) == {}
    end_wake(tmp_path, "r1", "budget", BUDGET_LINE)
    stop = last_stop(tmp_path)
    assert stop is not None and (stop.kind, stop.run, stop.line) == ("budget", "r1", BUDGET_LINE)
    assert stop.summary() == BUDGET_LINE  # the budget's own line says what to do

    begin_wake(tmp_path)
    assert last_stop(tmp_path) is None  # a wake killed half-way stopped on neither
    end_wake(tmp_path, "r2", "no_progress", STALL_LINE)
    end_wake(tmp_path, "r3", None)
    assert last_stop(tmp_path) is None
    assert {r: s.kind for r, s in stops_by_run(tmp_path).items()} == {"r1": "budget", "r2": "no_progress"}


def test_the_no_progress_stop_says_what_continuing_does(tmp_path: Path) -> None:
    stop = end_wake(tmp_path, "r1", "no_progress", STALL_LINE)
    assert stop is not None
    assert stop.summary() == (
        f"stopped: no progress —— {STALL_LINE}。"
        "再跑 flower 就接着做(还是没有进展会再问你),也可以先改目标(目标.md)再跑,或者就此停下"
    )
    assert stop.banner_line() == f"   上次停在 {stop.summary()}"


def test_a_damaged_file_knows_no_stop_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / STOPS_FILE).write_text("{not json", encoding="utf-8")
    assert last_stop(tmp_path) is None and stops_by_run(tmp_path) == {}
    (tmp_path / STOPS_FILE).write_text('{"last": {"kind": "mystery"}, "stops": [1, {"kind": "budget"}]}')
    assert last_stop(tmp_path) is None and stops_by_run(tmp_path) == {}
    end_wake(tmp_path, "r1", "budget", BUDGET_LINE)  # written over
    assert last_stop(tmp_path) is not None
    end_wake(tmp_path / "gone" / "deeper", "r1", "budget", BUDGET_LINE)  # parents made, or said nothing


def test_a_stops_entry_that_is_not_a_list_is_no_stop_and_never_raises(tmp_path: Path) -> None:
    # a number there once made the next wake's end raise (it was iterated)
    (tmp_path / STOPS_FILE).write_text('{"last": null, "stops": 7}', encoding="utf-8")
    assert stops_by_run(tmp_path) == {}
    stop = end_wake(tmp_path, "r2", "budget", BUDGET_LINE)
    assert stop is not None and list(stops_by_run(tmp_path)) == ["r2"]


def test_the_banner_keeps_the_seeds_line_and_adds_the_stop_under_it(tmp_path: Path) -> None:
    state = {
        "waking": True,
        "brief": tmp_path / "需求.md",
        "goal": tmp_path / "目标.md",
        "checks": 7,
        "woke": 2,
        "steps": {},
        "stopped": None,
    }
    seeds = banner_line(state, workspace=tmp_path)  # type: ignore[arg-type]
    assert "\n" not in seeds and seeds.endswith("需求已确认 · 目标 7 条 · 第 3 次唤醒")
    state["stopped"] = end_wake(tmp_path, "r1", "no_progress", STALL_LINE)
    first, second = banner_line(state, workspace=tmp_path).split("\n")  # type: ignore[arg-type]
    assert first == seeds and second.startswith("   上次停在 stopped: no progress —— 连续 2 轮")
