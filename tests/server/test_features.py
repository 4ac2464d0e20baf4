"""The features' pure parts: where a verdict's diagnostics land, how events read in the log,
how a run's end is told, and how 目标.md's URI is spelled."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from flower.core.events import (
    ContextUpdate,
    Event,
    GoalUnverifiable,
    LimitWait,
    MailNote,
    Question,
    Result,
    StepFinished,
    StepStarted,
    TaskUpdate,
    Text,
    ToolCall,
    VerdictGiven,
    WindowNote,
)
from flower.core.goal import Verdict, locate_check
from flower.workflow.outcome import Outcome
from flower_lsp import protocol as p
from flower_lsp.diagnostics import unverifiable_diagnostics, verdict_diagnostics
from flower_lsp.documents import same_document, uri_of
from flower_lsp.events import json_safe, to_params
from flower_lsp.run import RunEnded

GOAL = (
    "# 目标\n"  # 0
    "交付能运行的 hello.py,并写明用法。\n"  # 1
    "\n"  # 2
    "# 判定清单\n"  # 3
    "- 运行 `python3 hello.py` 输出 hello\n"  # 4
    "- 工作区根目录有 README.md,写了怎么运行\n"  # 5
    "- hello.py 只用标准库 😀\n"  # 6
    "- 在 macOS 上也能跑 [此环境无法验证:只有 Linux]\n"  # 7
)
CHECKS = [
    (4, "运行 `python3 hello.py` 输出 hello"),
    (5, "工作区根目录有 README.md,写了怎么运行"),
    (6, "hello.py 只用标准库 😀"),
    (7, "在 macOS 上也能跑 [此环境无法验证:只有 Linux]"),
]


@pytest.mark.parametrize(
    "item, line",
    [
        pytest.param("工作区根目录有 README.md,写了怎么运行", 5, id="verbatim"),
        pytest.param("2. 工作区根目录有 README.md,写了怎么运行。", 5, id="numbered, with a full stop"),
        pytest.param("ＲＥＡＤＭＥ.md", 5, id="full width folds"),  # noqa: RUF001 (full-width letters on purpose: they must fold)
        pytest.param("README.md", 5, id="a fragment of the check"),
        pytest.param("第 3 条", 6, id="by number"),
        pytest.param("判定项 1", 4, id="by its checklist number"),
        pytest.param("工作区根目录有README,写了如何运行", 5, id="a paraphrase"),
        pytest.param("数据库迁移脚本可以回滚", None, id="a check that is not there"),
        pytest.param("第 9 条", None, id="a number past the end"),
    ],
)
def test_a_failed_item_finds_the_line_of_its_check(item: str, line: int | None) -> None:
    assert locate_check(item, CHECKS) == line


def test_not_yet_warns_on_each_failed_line_unreachable_is_an_error(english: None) -> None:
    verdict = p.VerdictInfo(
        state="not_yet",
        reason="没有 README.md",
        failed=["工作区根目录有 README.md,写了怎么运行", "hello.py 只用标准库 😀"],
        round=2,
        goal_path="",
    )
    diags = verdict_diagnostics(verdict, GOAL, folder="file:///ws")
    assert [(d.range.start.line, d.severity, d.code) for d in diags] == [
        (5, types.DiagnosticSeverity.Warning, "not_yet"),
        (6, types.DiagnosticSeverity.Warning, "not_yet"),
    ]
    assert "Judge round 2" in diags[0].message and "没有 README.md" in diags[0].message
    # UTF-16 columns: the emoji is two code units
    assert diags[1].range.end.character == len("- hello.py 只用标准库 😀") + 1
    unreachable = p.VerdictInfo(
        state="unreachable", reason="r", failed=["hello.py 只用标准库 😀"], round=1, goal_path=""
    )
    assert [(d.range.start.line, d.severity) for d in verdict_diagnostics(unreachable, GOAL, folder="f")] == [
        (6, types.DiagnosticSeverity.Error)
    ]


def test_other_encodings_count_their_own_units() -> None:
    verdict = p.VerdictInfo(
        state="not_yet", reason="", failed=["hello.py 只用标准库 😀"], round=1, goal_path=""
    )
    line = "- hello.py 只用标准库 😀"
    utf8 = verdict_diagnostics(verdict, GOAL, folder="f", encoding=types.PositionEncodingKind.Utf8)
    utf32 = verdict_diagnostics(verdict, GOAL, folder="f", encoding=types.PositionEncodingKind.Utf32)
    assert utf8[0].range.end.character == len(line.encode("utf-8"))
    assert utf32[0].range.end.character == len(line)


def test_achieved_clears_and_an_unplaceable_failure_sits_on_the_checklist_heading(english: None) -> None:
    achieved = p.VerdictInfo(state="achieved", reason="ok", failed=[], round=3, goal_path="")
    assert verdict_diagnostics(achieved, GOAL, folder="f") == []
    vague = p.VerdictInfo(state="", reason="没给结论", failed=[], round=1, goal_path="")
    [d] = verdict_diagnostics(vague, GOAL, folder="f")
    assert d.range.start.line == 3 and d.severity == types.DiagnosticSeverity.Warning
    stray = p.VerdictInfo(
        state="not_yet", reason="", failed=["数据库迁移脚本可以回滚"], round=1, goal_path=""
    )
    [d] = verdict_diagnostics(stray, GOAL, folder="f")
    assert d.range.start.line == 3 and "not found in the checklist" in d.message


def test_unverifiable_checks_are_information_on_their_lines() -> None:
    diags = unverifiable_diagnostics(None, GOAL)
    assert [(d.range.start.line, d.severity, d.code) for d in diags] == [
        (7, types.DiagnosticSeverity.Information, "unverifiable")
    ]
    assert (
        unverifiable_diagnostics(["在 macOS 上也能跑 [此环境无法验证:只有 Linux]"], GOAL)[0].range.start.line
        == 7
    )


# The output log: (event, kind, line); None = left out of the log.
LOG_LINES = [
    pytest.param(
        StepStarted(text="干活", index=3, total=3, resumed=True, woke=3),
        "step",
        "== 干活 ==  3/3  <- continued · wake 3",
        id="a woken step",
    ),
    pytest.param(
        StepFinished(text="干活", ok=False, cost_usd=0.25, error="boom"),
        "step",
        "干活 done (not ok: boom, $0.2500)",
        id="a failed step's books",
    ),
    pytest.param(
        VerdictGiven(state="not_yet", reason="缺 README", failed=["a"], round=1, goal_path="/g"),
        "verdict",
        "verdict #1: not_yet — 缺 README (1 failed)",
        id="a verdict",
    ),
    pytest.param(
        GoalUnverifiable(unverifiable=["x"], total=3, path="/g"),
        "task",
        "1/3 checks of the goal cannot be verified in this environment",
        id="unverifiable checks",
    ),
    pytest.param(
        MailNote(text="顺便加个测试", state="queued", id="m1", amended=""), "mail", "顺便加个测试", id="mail"
    ),
    pytest.param(
        Question(
            text="打印什么?", id="q1", options=[], state="answered", answer="hello", remaining=-1, asked_at=0
        ),
        "ask",
        "? 打印什么? -> answered: hello",
        id="an answered question",
    ),
    pytest.param(
        ToolCall(text="python3 hello.py", tool="Bash", id="t1", subagent=True),
        "tool",
        "[Bash] python3 hello.py",
        id="every tool call, a subagent's too",
    ),
    pytest.param(
        Result(text="success", cost_usd=0.5, num_turns=3),
        "result",
        "success · $0.5000 · 3 turns",
        id="result",
    ),
    pytest.param(Text(text="subagent chatter", subagent=True), None, None, id="a subagent's text"),
    pytest.param(
        ContextUpdate(text="context", used=1, window=2, at=2, warn_at=1, step="s", generation=1),
        None,
        None,
        id="the meter has its own notification",
    ),
    pytest.param(TaskUpdate(text="TaskProgressMessage"), None, None, id="the SDK's task bookkeeping"),
    pytest.param(
        LimitWait(
            text="usage limit: waiting until 15:00", phase="wait", limit="usage", until=1.0, seconds=9.0
        ),
        "retry",
        "usage limit: waiting until 15:00",
        id="a limit's wait",
    ),
    pytest.param(
        WindowNote(
            text="window measured 180K", configured=1_000_000, learned=180_000, model="m", base_url="u"
        ),
        "handoff",
        "window measured 180K",
        id="a window smaller than configured",
    ),
]


@pytest.mark.parametrize("event, kind, line", LOG_LINES)
def test_events_read_as_log_lines(event: Event, kind: str | None, line: str | None, english: None) -> None:
    params = to_params("f", event)
    if kind is None:
        assert params is None
    else:
        assert params is not None and (params.kind, params.text) == (kind, line)
        assert params.payload == json_safe(event.payload)


def test_payloads_are_made_json_safe() -> None:
    assert json_safe({"path": Path("/a/目标.md"), "n": float("nan"), "xs": (1, object)}) == {
        "path": "/a/目标.md",
        "n": None,
        "xs": [1, str(object)],
    }


@pytest.mark.parametrize(
    "ctx, phase, line",
    [
        ({"_verdict": Verdict(state="achieved"), "_goal_rounds": 2}, "finished", "finished (achieved)"),
        ({}, "finished", "finished"),
        ({"_failed_at": "确认需求"}, "failed", "failed at step 确认需求"),
        ({"_aborted": "没人回应"}, "failed", "stopped: 没人回应"),
    ],
)
def test_the_end_of_a_run_is_told_from_its_ctx(
    ctx: dict[str, object], phase: str, line: str, english: None
) -> None:
    ended = RunEnded.of(Outcome.of(ctx), 0.5)
    assert (ended.phase, ended.text) == (phase, line)
    assert ended.details()["phase"] == phase and ended.details()["cost_usd"] == 0.5


def test_the_goal_uri_is_built_one_way(tmp_path: Path) -> None:
    goal = tmp_path / ".flower" / "notes" / "目标.md"
    assert uri_of(goal) == goal.resolve().as_uri()
    assert uri_of(goal).endswith("/.flower/notes/%E7%9B%AE%E6%A0%87.md")
    # a client that spells the same path another way still means the same document
    assert same_document(uri_of(goal).replace("%E7%9B%AE", "%e7%9b%ae"), goal)
    assert not same_document((tmp_path / "需求.md").as_uri(), goal)
