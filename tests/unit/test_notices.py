"""Which engine events are notices, what a notice carries, and how the CLI delivers one: the
terminal's bell and title only on a terminal, the user's command with the notice on stdin."""

from __future__ import annotations

import io
import json
import os
import pty
import sys
from pathlib import Path

import pytest

from flower.cli.terminal import Screen
from flower.core.events import (
    LimitWait,
    MailNote,
    Question,
    Retry,
    StepFinished,
    StepStarted,
    Text,
)
from flower.core.notices import Notice, NoticeKind, Notices
from flower.core.notify import Notifier, child_env, notify_argv


def asked(state: str = "asked", text: str = "要打印什么?") -> Question:
    return Question(text=text, id="q1", options=["a"], state=state, answer="", remaining=-1, asked_at=12.5)  # type: ignore[arg-type]


def limit(phase: str) -> LimitWait:
    return LimitWait(text="等到 15:00", phase=phase, limit="usage", until=99.0, seconds=90.0, step="干活")  # type: ignore[arg-type]


def test_a_question_asked_is_a_notice_with_the_step_it_was_asked_in():
    notices = Notices("/w")
    assert notices.of(StepStarted(text="确认需求", index=1, total=3, resumed=False, woke=0)) is None
    notice = notices.of(asked())
    assert notice == Notice(NoticeKind.ASKED, folder="/w", step="确认需求", text="要打印什么?", time=12.5)


@pytest.mark.parametrize("state", ["answered", "timeout", "declined", "over_budget", "invalid"])
def test_a_settled_question_is_no_notice(state):
    assert Notices("/w").of(asked(state)) is None


def test_a_limit_wait_is_a_notice_when_it_begins_not_when_it_resumes():
    notices = Notices("/w")
    notice = notices.of(limit("wait"), now=5.0)
    assert notice is not None and notice.kind is NoticeKind.LIMIT_WAIT
    assert (notice.step, notice.text, notice.time) == ("干活", "等到 15:00", 5.0)
    assert notices.of(limit("resumed")) is None


def test_everyday_events_are_no_notices():
    notices = Notices("/w")
    everyday = [
        Text(text="hello"),
        Retry(text="again", attempt=1, failure="transient"),
        StepFinished(text="干活", ok=False, cost_usd=0.1),
        MailNote(text="also", state="queued", id="m1", amended=""),
    ]
    assert [notices.of(ev) for ev in everyday] == [None] * len(everyday)


def test_the_end_is_finished_or_stopped_and_its_text_is_one_line():
    notices = Notices("/w")
    notices.of(StepStarted(text="干活", index=2, total=3, resumed=False, woke=0))
    done = notices.ended(True, "达成", now=7.0)
    stopped = notices.ended(False, "在步骤 干活 失败\n细节", now=8.0)
    assert (done.kind, done.step, done.text) == (NoticeKind.FINISHED, "干活", "达成")
    assert (stopped.kind, stopped.text) == (NoticeKind.STOPPED, "在步骤 干活 失败")


def test_a_budget_reached_is_its_own_kind():
    notice = Notices("/w").ended(False, "预算 $1.00 用完了", budget=True, now=1.0)
    assert (notice.kind, notice.text) == (NoticeKind.BUDGET, "预算 $1.00 用完了")
    assert json.loads(notice.dumps())["kind"] == "budget"


def test_the_json_is_exactly_the_five_fields():
    notice = Notices("/w").ended(True, "ok", now=3.0)
    assert json.loads(notice.dumps()) == {
        "kind": "finished",
        "folder": "/w",
        "step": "",
        "text": "ok",
        "time": 3.0,
    }


# -- delivery -----------------------------------------------------------------------------------


def test_the_title_and_bell_go_to_a_terminal_only():
    piped = io.StringIO()
    assert Screen(out=piped, err=io.StringIO()).ring("flower · 跑完了") is False
    assert piped.getvalue() == ""

    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", encoding="utf-8", closefd=False) as tty:
            assert Screen(out=tty, err=io.StringIO()).ring("flower\x1b]0;evil\x07 · 跑完了") is True
        seen = os.read(master, 4096).decode("utf-8")
    finally:
        os.close(master)
        os.close(slave)
    # the title's own escape codes cannot end the sequence or start another
    assert seen.startswith("\x1b]0;flower") and seen.endswith(" · 跑完了\x07\x07")
    assert seen.count("\x1b") == 1 and seen.count("\x07") == 2


def test_the_setting_is_split_like_a_shell_and_a_broken_one_is_one_warning():
    warned: list[str] = []
    assert notify_argv("notify-send 'flower says'", warn=warned.append) == ["notify-send", "flower says"]
    assert notify_argv("  ", warn=warned.append) is None
    assert notify_argv("say 'unclosed", warn=warned.append) is None
    assert len(warned) == 1 and "\n" not in warned[0]


def test_the_command_never_gets_a_credential_in_its_environment():
    env = child_env({"ANTHROPIC_API_KEY": "sk-x", "MY_SERVICE_TOKEN": "t", "HOME": "/h", "LANG": "C"})
    assert env == {"HOME": "/h", "LANG": "C"}


def run_notifier(tmp_path: Path, script: str, timeout: float = 10.0) -> tuple[list[str], Path]:
    (tmp_path / "cmd.py").write_text(script, encoding="utf-8")
    out = tmp_path / "got.json"
    warned: list[str] = []
    notifier = Notifier(
        [sys.executable, str(tmp_path / "cmd.py"), str(out)], warn=warned.append, timeout=timeout
    )
    notifier.send(Notices(str(tmp_path)).ended(True, "ok", now=1.0))
    notifier.close()
    return warned, out


def test_the_command_gets_the_notice_on_stdin(tmp_path):
    warned, out = run_notifier(tmp_path, "import sys\nopen(sys.argv[1], 'w').write(sys.stdin.read())\n")
    assert warned == []
    assert json.loads(out.read_text())["kind"] == "finished"


def test_a_failing_command_is_one_warning_line(tmp_path):
    warned, _ = run_notifier(tmp_path, "import sys\nprint('no route', file=sys.stderr)\nsys.exit(2)\n")
    assert len(warned) == 1 and "退出码 2: no route" in warned[0]


def test_a_command_that_hangs_is_stopped_at_its_bound(tmp_path):
    warned, _ = run_notifier(tmp_path, "import time\ntime.sleep(600)\n", timeout=0.5)
    assert len(warned) == 1 and "停掉了" in warned[0]


def test_a_command_that_does_not_exist_is_one_warning_line():
    warned: list[str] = []
    notifier = Notifier(["/nonexistent/flower-notify-cmd"], warn=warned.append)
    notifier.send(Notices("/w").ended(False, "x", now=1.0))
    notifier.close()
    assert len(warned) == 1 and "/nonexistent/flower-notify-cmd" in warned[0]
