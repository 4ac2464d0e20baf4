"""Notices through the real CLI: `python -m flower` with the real Claude Code CLI and flower.sim as
the model. A `--notify` script records what it was given; a pseudo-terminal shows the bell and
the title, a pipe never gets them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import Terminal, cli_env, flower, notes
from test_rewind_cli import ASK, three_rounds

from flower.sim.env import DUMMY_KEY
from flower.sim.scenarios import QUESTION, starter_scenario
from flower.workflow.starter import CLARIFY

pytestmark = pytest.mark.e2e

ANSWER_PROMPT = "你的回答 (回车=跳过,让它自己判断) > "
TITLE = "\x1b]0;flower · {label}\x07\x07"

# appends what it reads on stdin, and its environment's credential, to the file it is given
RECORDER = (
    "import json, os, sys\n"
    "notice = json.loads(sys.stdin.read())\n"
    "notice['_key_seen'] = os.environ.get('ANTHROPIC_API_KEY')\n"
    "with open(sys.argv[1], 'a', encoding='utf-8') as out:\n"
    "    out.write(json.dumps(notice, ensure_ascii=False) + '\\n')\n"
)


def recorder(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "record notice.py"  # a space: the setting is split as a shell would
    script.write_text(RECORDER, encoding="utf-8")
    log = tmp_path / "notices.jsonl"
    return f"{sys.executable} '{script}' '{log}'", log


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_notify_gets_the_question_and_the_end_as_json_and_a_pipe_gets_no_bell(
    sim_factory, claude_root, tmp_path
):
    sim = sim_factory(starter_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    command, log = recorder(tmp_path)
    env = cli_env(sim, claude_root)

    done = flower("--clarify-only", "--notify", command, "写一个 hello.py", cwd=ws, env=env, stdin="")

    assert done.returncode == 0, done.stdout + done.stderr
    asked, finished = records(log)
    assert asked["kind"] == "asked" and asked["text"] == QUESTION and asked["step"] == CLARIFY
    assert finished["kind"] == "finished" and finished["step"] == CLARIFY
    for notice in (asked, finished):
        assert notice["folder"] == str(ws.resolve())
        assert isinstance(notice["time"], float) and notice["time"] > 0
        assert notice["_key_seen"] is None  # the command never gets the model's key
        assert DUMMY_KEY not in json.dumps(notice)
    assert asked["time"] <= finished["time"]
    # stdout and stderr are pipes here: no bell, no title sequence in what a log keeps
    assert "\x07" not in done.stdout + done.stderr and "\x1b]" not in done.stdout + done.stderr


def test_the_env_setting_is_used_and_a_failing_command_is_one_warning_that_never_stops_the_run(
    sim_factory, claude_root, tmp_path
):
    sim = sim_factory(starter_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    failing = tmp_path / "fail.py"
    failing.write_text("import sys\nsys.stdin.read()\nprint('webhook down', file=sys.stderr)\nsys.exit(3)\n")
    env = cli_env(sim, claude_root, FLOWER_NOTIFY=f"{sys.executable} {failing}")

    done = flower("--clarify-only", "写一个 hello.py", cwd=ws, env=env, stdin="")

    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in done.stderr.splitlines() if "通知命令没成功" in line]
    assert len(warnings) == 2, done.stderr  # the question's and the end's, one line each
    assert all("退出码 3: webhook down" in line for line in warnings)
    assert "hello.py" in (notes(ws) / "需求.md").read_text(encoding="utf-8")


def test_a_terminal_rings_and_gets_the_title_when_asked_and_when_finished(sim_factory, claude_root, tmp_path):
    sim = sim_factory(starter_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    term = Terminal("--clarify-only", "写一个 hello.py", cwd=ws, env=cli_env(sim, claude_root))
    try:
        term.wait_for(ANSWER_PROMPT)
        assert TITLE.format(label="在问你") in term.text
        assert TITLE.format(label="跑完了") not in term.text
        term.type("hello\r")
        assert term.finish() == 0, term.text
    finally:
        term.kill()
    assert TITLE.format(label="跑完了") in term.text
    assert term.text.index(TITLE.format(label="在问你")) < term.text.index(TITLE.format(label="跑完了"))


def test_notify_gets_the_limit_wait_then_the_end(sim_factory, claude_root, tmp_path):
    usage = "usage limit reached, resets at {reset_clock}"
    look = {"tool": {"name": "Bash", "input": {"command": "ls", "description": "look"}}}
    sim = sim_factory({"scripts": {"main": [look, {"fault": 429, "resets_in": 3, "message": usage}, "done"]}})
    ws = tmp_path / "proj"
    ws.mkdir()
    command, log = recorder(tmp_path)
    env = cli_env(sim, claude_root, CLAUDE_CODE_MAX_RETRIES="0")

    done = flower("once", "-t", "Bash", "--notify", command, "看看", cwd=ws, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    waited, finished = records(log)
    assert waited["kind"] == "limit_wait"
    assert f"  ~ {waited['text']}" in done.stdout.splitlines()  # the very line the terminal showed
    assert finished["kind"] == "finished"
    assert waited["time"] <= finished["time"]


def test_notify_gets_a_budget_stop_as_its_own_kind(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(three_rounds(0))
    command, log = recorder(tmp_path)
    env = cli_env(sim, claude_root)

    done = flower("--timeout", "0", ASK, "--round-budget", "0.000001", "--notify", command, cwd=ws, env=env)

    assert done.returncode == 1 and "stopped: budget" in done.stderr, done.stdout + done.stderr
    *_, last = records(log)
    assert last["kind"] == "budget"
    assert last["text"] and last["text"] in done.stderr  # the very line the run ended on
