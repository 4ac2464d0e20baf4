"""Side questions without a model: which lines are questions, what the oracle is shown of a run,
and that asking never raises."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from flower import cli
from flower.core.aside import (
    EVENT_CHARS,
    WINDOW_EVENTS,
    EventWindow,
    aside_prompt,
    aside_question,
    ask_aside,
)
from flower.core.events import (
    ContextUpdate,
    Prompt,
    Result,
    StepStarted,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from flower.core.roles import oracle
from flower.core.workbench import Workbench


@pytest.mark.parametrize(
    "line, question",
    [
        pytest.param("? 现在到哪一步了", "现在到哪一步了", id="an ASCII question mark"),
        pytest.param("\uff1f还有多久", "还有多久", id="the full-width mark a Chinese IME types"),
        pytest.param("  ?  spaces around  ", "spaces around", id="blanks around"),
        pytest.param("?", "", id="a mark and nothing else"),
        pytest.param("顺便加个 X?", None, id="a question mark at the end is words for the agent"),
        pytest.param("", None, id="an empty line"),
    ],
)
def test_which_lines_are_side_questions(line: str, question: str | None):
    assert aside_question(line) == question


def test_the_window_keeps_what_happened_not_what_was_thought_or_told():
    window = EventWindow()
    for event in (
        StepStarted(text="干活", index=3, total=3, resumed=False, woke=1),
        Thinking(text="let me think"),
        Prompt(text="写 hello.py", subagent=True),
        ContextUpdate(
            text="context 80K / 1M", used=80_000, window=1_000_000, at=1, warn_at=1, step="干活", generation=1
        ),
        ToolCall(text="ls -la", tool="Bash", id="t1", input={"command": "ls -la"}, subagent=True),
        ToolResult(text="a\nb\n\tc", tool_use_id="t1"),
        Text(text="做完了"),
        Result(text="success", num_turns=2, cost_usd=0.1),
    ):
        window.add(event)
    assert window.lines() == [
        "[step] 干活",
        "[subagent tool_call] [Bash] ls -la",
        "[tool_result] a b c",
        "[text] 做完了",
        "[result] success",
    ]


def test_the_window_holds_the_last_60_events_each_cut_to_200_characters():
    window = EventWindow()
    for i in range(WINDOW_EVENTS + 15):
        window.add(Text(text=f"{i} " + "x" * 500))
    lines = window.lines()
    assert (
        len(lines) == WINDOW_EVENTS
        and lines[0].startswith("[text] 15 ")
        and lines[-1].startswith("[text] 74 ")
    )
    assert {len(line) for line in lines} == {EVENT_CHARS}


def test_the_oracle_is_shown_the_question_the_events_and_where_the_workbench_is(tmp_path: Path):
    bench = tmp_path / "ws" / ".flower"
    prompt = aside_prompt(
        "现在到哪了", ["[step] 干活", "[text] 做完了"], workspace=tmp_path / "ws", workbench=bench
    )
    assert prompt.startswith("人顺路问了一句:现在到哪了\n")
    assert "- [step] 干活\n- [text] 做完了" in prompt
    assert f"工作台:{bench}" in prompt and f"{bench / 'INDEX.md'}" in prompt
    assert "这次运行没有工作台" in aside_prompt("q", [], workspace=tmp_path, workbench=None)


def test_the_oracle_is_read_only_and_braked():
    spec = oracle()
    assert (
        spec.allowed_tools == ["Read", "Glob", "Grep"] and spec.max_turns == 12 and spec.max_budget_usd == 0.5
    )


async def test_asking_without_a_credential_is_an_answer_that_failed_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env to find here
    answer = await ask_aside("q", [], workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    assert not answer.ok and answer.error.startswith("RuntimeError: no credential")


async def test_a_question_makes_no_workbench_where_there_was_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    ws = tmp_path / "ws"
    await ask_aside("q", [], workspace=ws, run_dir=tmp_path / "runs", workbench=Workbench(ws))
    assert not (ws / ".flower").exists()


def test_a_side_question_typed_when_no_run_is_going_says_so_in_red(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-test-key-0123456789")
    from flower.core.runtime import Runtime

    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    out, err = io.StringIO(), io.StringIO()
    screen = cli.Screen(out, err, live=False, colour=True)
    driver = cli.Driver(rt, screen=screen, source=cli.LineSource(io.BytesIO(b"")))
    try:
        driver.handle_line("? 到哪了")
        driver.handle_line("?")
    finally:
        rt.close()
    assert err.getvalue() == "\x1b[31m# 旁路问答失败:没有正在跑的运行\x1b[0m\n"
    assert out.getvalue() == "  . 问号后面要写问题,例如:? 现在到哪一步了\n"
