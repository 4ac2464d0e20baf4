"""The terminal's paper cuts on real pseudo-terminals: two flowers writing to one terminal never
mix their lines (the terminal lock); lines fit 80 columns whichever width the terminal gives
ambiguous characters (FLOWER_AMBIGUOUS_WIDTH); the idle prompt stays on screen under the
status line while the run goes on; the inbox's reply tells the agent the words are in the brief.
`python -m flower` with the real Claude Code CLI and flower.sim as the model."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import Terminal, cli_env
from test_terminal_cli import SplitTerminal, started  # noqa: F401 (started: a fixture)
from tty_writer import line
from vt import screen_rows

from flower.core.display import AMBIGUOUS_ENV
from flower.sim.scenario import content_text
from flower.sim.scenarios import BRIEF, GOAL, HANDOVER, STARTER_ACTORS, WRITE_HELLO, delegate, judged

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
IDLE_PROMPT = "(直接说 = 加需求,下个检查点送达;? 开头 = 顺便问一句,不打扰它干活) > "


# -- two flowers, one terminal ---------------------------------------------------------------------


def test_two_processes_writing_to_one_terminal_never_mix_their_lines(tmp_path: Path) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)}  # the lock files are this test's own
    count = 1500
    writers = [
        subprocess.Popen(
            [sys.executable, str(HERE / "tty_writer.py"), name, str(count)],
            stdin=subprocess.PIPE,
            stdout=slave,
            stderr=slave,
            env=env,
        )
        for name in ("A", "B")
    ]
    os.close(slave)
    for w in writers:
        assert w.stdin is not None
        w.stdin.write(b"go\n")
        w.stdin.flush()
    raw = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        assert ready, "the writers stopped writing"
        try:
            data = os.read(master, 65536)
        except OSError:  # both closed the terminal
            data = b""
        if not data:
            break
        raw += data
    os.close(master)
    assert [w.wait(30) for w in writers] == [0, 0]

    rows = [r for r in screen_rows(raw.decode("utf-8")) if r]
    expected = {name: [line(name, i) for i in range(count)] for name in ("A", "B")}
    mixed = [r for r in rows if r not in expected["A"] and r not in expected["B"]]
    assert mixed == [], mixed[:5]  # no row holds parts of two lines, nor a status left behind
    for name in ("A", "B"):
        assert [r for r in rows if r.startswith(f"{name} line")] == expected[name]  # all, in order
    assert list((tmp_path / "flower").iterdir())  # the lock file, keyed by the terminal's device


# -- ambiguous width -------------------------------------------------------------------------------

AMBIGUOUS_TEXT = (
    "结论 · 进度 → 下一步 — ○ 待办 ★ 重要 ±5% §3 … " * 6 + "\n\u03b1\u03b2\u03b3 ЖЗИ " * 3
)  # Greek and Cyrillic: ambiguous in East Asian fonts + "\n" + "·" * 150


def reference_columns(text: str, ambiguous: int) -> int:
    return sum(
        2
        if unicodedata.east_asian_width(ch) in "WF"
        else ambiguous
        if unicodedata.east_asian_width(ch) == "A"
        else 1
        for ch in text
    )


@pytest.mark.parametrize("setting", ["1", "2"])
def test_lines_on_an_80_column_terminal_fit_with_either_ambiguous_width(
    sim_factory,
    claude_root,
    tmp_path,
    started,  # noqa: F811 (the imported fixture: every terminal started is killed at the end)
    setting,
):
    sim = sim_factory({"scripts": {"main": [{"text": AMBIGUOUS_TEXT}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    env = cli_env(sim, claude_root, **{AMBIGUOUS_ENV: setting})
    term = SplitTerminal("once", "看看", cwd=ws, env=env, cols=80)
    started.append(term)

    assert term.finish() == 0, (term.out + term.err).decode("utf-8", "replace")
    lines = [r for r in screen_rows(term.out.decode("utf-8")) if r]
    assert lines and all(reference_columns(r, int(setting)) <= 80 for r in lines)
    drawn = [r for r in lines if "$" not in r and ("·" in r or "Ж" in r)]  # the model's text, not flower's
    widths = [reference_columns(r, int(setting)) for r in drawn]
    assert max(widths) <= 80, max(drawn, key=lambda r: reference_columns(r, int(setting)))
    assert max(widths) >= 78  # the long lines used the room
    assert "".join(drawn).count("·") == AMBIGUOUS_TEXT.count("·")  # wrapped, nothing lost
    # the live line on the other terminal fits as well
    assert all(reference_columns(r, int(setting)) <= 79 for r in screen_rows(term.err.decode("utf-8")))


# -- the idle prompt and the inbox's reply ------------------------------------------------------------

GATE = "gate"
WAITING = f"while [ ! -e {GATE} ]; do sleep 0.1; done; echo 等到了"


def inbox_scenario() -> dict[str, Any]:
    """A starter run whose worker waits for a file the test makes (while the person types), and
    whose coordinator then reads its inbox."""
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF}],
            "goal_setter": [{"text": GOAL}],
            "coordinator": [
                delegate("写 hello.py:运行时打印 hello。写完跑一次确认输出。"),
                {"tool": {"name": "mcp__human__inbox", "input": {}}},
                {"text": "这一轮做完了:hello.py 已写好并验证输出 hello;收件箱里的话也照办了。"},
            ],
            "coder": [
                {"tool": {"name": "Bash", "input": {"command": WAITING, "description": "wait"}}},
                {"tool": {"name": "Bash", "input": {"command": WRITE_HELLO}}},  # what the judge's look reads
                {"text": "结论:hello.py 写好了。\n依据:文件已创建。\n产物:hello.py\n未验证:无"},
            ],
            "judge": judged("achieved"),  # it reads hello.py and README.md before it rules
        },
        "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


def wait_for_bottom(term: Terminal, seen: str, timeout: float = 60) -> list[str]:
    """The screen's rows once `seen` was written and the idle prompt is the bottom row again,
    with the status line above it (a block is written in several writes: wait for its end)."""
    deadline = time.monotonic() + timeout
    rows: list[str] = []
    while time.monotonic() < deadline:
        rows = [r for r in screen_rows(term.text) if r]
        if (
            seen in term.text
            and len(rows) >= 2
            and rows[-1] == IDLE_PROMPT.rstrip()
            and rows[-2].startswith("- ")
        ):
            return rows
        if not term._read(0.1):
            break
    raise AssertionError(f"the idle prompt is not at the bottom after {seen!r}:\n{rows[-5:]}")


def test_the_idle_prompt_stays_under_the_status_line_and_the_inbox_reply_says_the_brief_has_the_words(
    sim_factory,
    claude_root,
    tmp_path,
    started,  # noqa: F811 (the imported fixture)
):
    sim = sim_factory(inbox_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    term = Terminal("--rounds", "1", "写一个 hello.py", cwd=ws, env=cli_env(sim, claude_root))
    started.append(term)

    # nothing typed yet: the prompt is there all the same, under the status line
    rows = wait_for_bottom(term, "* Bash while [ ! -e gate ]")
    assert rows[-3].endswith("* Bash while [ ! -e gate ]; do sleep 0.1; done; echo 等到了")

    term.type("顺便报告总字节数\r")
    rows = wait_for_bottom(term, "+ 收到 (它下次查收件箱时会看到;已追加进确认书)")  # drawn again below it
    assert "+ 收到 (它下次查收件箱时会看到;已追加进确认书)" in rows[:-2]  # the receipt above them, whole

    (ws / GATE).touch()
    term.wait_for("总花费 $")
    assert term.finish() == 0, term.text
    brief = ws / ".flower" / "notes" / "需求.md"
    assert "顺便报告总字节数" in brief.read_text(encoding="utf-8")
    # what the agent was told, in the request after its inbox call
    after_inbox = next(
        r
        for r in sim.requests_for("coordinator")
        if any("顺便报告总字节数" in content_text(t["content"]) for t in r.tool_results())
    )
    reply = next(
        content_text(t["content"])
        for t in after_inbox.tool_results()
        if "顺便报告总字节数" in content_text(t["content"])
    )
    assert f"已记进需求确认书 {brief}" in reply, reply
    # once the run is over, the prompt is gone: the closing line is the last thing on screen
    rows = [r for r in screen_rows(term.text) if r]
    closing = max(i for i, r in enumerate(rows) if r.startswith("总花费 $"))
    assert not any(r.startswith((IDLE_PROMPT[:8], "- ")) for r in rows[closing:]), rows[-5:]
