"""The terminal as a person meets it: `python -m flower` on real pseudo-terminals and pipes, the
real Claude Code CLI underneath, flower.sim as the model. The line editor typed into, hostile
output on narrow and wide terminals, and the messages of the paper cuts a first-time user met."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import LONG_TOOL, Child, Terminal, cli_env, flower

from flower.core.display import columns
from flower.sim.scenario import content_text
from flower.sim.scenarios import starter_scenario

pytestmark = pytest.mark.e2e

ANSWER_PROMPT = "你的回答 (回车=跳过,让它自己判断) > "
LEFT, HOME, END, DELETE, UP, BACKSPACE, CTRL_A = (
    "\x1b[D",
    "\x1b[H",
    "\x1b[F",
    "\x1b[3~",
    "\x1b[A",
    "\x7f",
    "\x01",
)


@pytest.fixture
def started():
    procs: list[Any] = []
    yield procs
    for p in procs:
        p.kill()


# -- the line editor, typed into through a real pseudo-terminal -----------------------------------


def test_at_a_terminal_the_answer_is_edited_key_by_key_chinese_included(
    sim_factory, claude_root, tmp_path, started
):
    sim = sim_factory(starter_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    term = Terminal("--clarify-only", "写一个 hello.py", cwd=ws, env=cli_env(sim, claude_root))
    started.append(term)
    term.wait_for(ANSWER_PROMPT)

    term.type("hello")
    term.wait_for(ANSWER_PROMPT + "hello")
    term.type(LEFT + LEFT + "你好")  # into the middle of the line
    term.wait_for(ANSWER_PROMPT + "hel你好lo\x1b[2D")  # drawn, the cursor two columns back
    term.type(BACKSPACE)  # one character, not one of its three bytes
    term.wait_for(ANSWER_PROMPT + "hel你lo\x1b[2D")
    term.type(HOME + "[" + END + "]")
    term.wait_for(ANSWER_PROMPT + "[hel你lo]")
    term.type(LEFT + DELETE + CTRL_A + DELETE + UP)  # up does nothing
    term.wait_for(ANSWER_PROMPT + "hel你lo\x1b[7D")
    term.type("\r")

    assert term.finish() == 0, term.text
    answered = content_text(sim.requests_for("clarifier")[1].tool_results()[-1]["content"])
    assert answered == "hel你lo"
    assert "  + hel你lo" in term.text


# -- hostile output on terminals narrower and wider than the limits -------------------------------

# what a tool prints, from a script: the command line itself stays innocent
HOSTILE_TOOL = (
    "import sys\n"
    "sys.stdout.write('\\x1b]0;pwned-title\\x07\\x1b[2J\\x1b[H\\x1bPq#0;2;0;0;0#1~~@@\\x1b\\\\'\n"
    "                 'tool\\tsaid\\rTOOL\\x1b]52;c;Y29weQ==\\x07 ok\\n')\n"
)
HOSTILE_TEXT = (
    "\x1b]0;pwned-title\x07\x1b[2J\x1b[10;10H看这里\t表格\n"
    + "很长的一行,没有空格" * 40
    + "\x1bPq#0;2;0;0;0#1~~@@\x1b\\\n"
    + "50%\r100% done \x1b[31mred\x1b[0m"
)


class SplitTerminal:
    """flower with stdout on one pseudo-terminal of a given size and stderr on another: what is
    read from the first is exactly the event lines (the live bottom line lives on the second)."""

    def __init__(self, *argv: str, cwd: Path, env: dict[str, str], cols: int) -> None:
        self.out_master, out_slave = os.openpty()
        self.err_master, err_slave = os.openpty()
        for fd in (out_slave, err_slave):
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flower", *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_slave,
            stderr=err_slave,
            start_new_session=True,
        )
        os.close(out_slave)
        os.close(err_slave)
        self.out, self.err = b"", b""

    def finish(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        fds = {self.out_master: "out", self.err_master: "err"}
        while fds and time.monotonic() < deadline:
            ready, _, _ = select.select(list(fds), [], [], 0.1)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    del fds[fd]
                elif fds[fd] == "out":
                    self.out += data
                else:
                    self.err += data
        return self.proc.wait(10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.mark.parametrize("cols, width", [(30, 40), (200, 110)])
def test_hostile_tool_and_model_output_is_defused_and_fitted(
    sim_factory, claude_root, tmp_path, started, cols, width
):
    bash = {"tool": {"name": "Bash", "input": {"command": "python3 hostile.py", "description": "x"}}}
    sim = sim_factory({"scripts": {"main": [bash, {"text": HOSTILE_TEXT}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "hostile.py").write_text(HOSTILE_TOOL, encoding="utf-8")
    term = SplitTerminal("-v", "once", "-t", "Bash", "看看", cwd=ws, env=cli_env(sim, claude_root), cols=cols)
    started.append(term)

    assert term.finish() == 0, (term.out + term.err).decode("utf-8", "replace")
    out = term.out.decode("utf-8")
    # flower's own end notice (bell and title, docs/cli.md#notices) is the one sequence stdout gets
    out, notices = re.subn(r"\x1b\]0;flower · [^\x07\x1b]*\x07\x07", "", out)
    assert notices == 1
    assert "\x1b" not in out and "\x07" not in out and "\t" not in out  # nothing of the tool or the model
    lines = out.split("\r\n")[:-1]  # the pseudo-terminal turns "\n" into "\r\n"
    assert all("\r" not in line for line in lines)
    assert all(columns(line) <= width for line in lines), max(lines, key=columns)
    assert max(columns(line) for line in lines) >= width - 2  # the long line used the room
    shown = "".join(lines)
    assert "pwned-title" not in shown and "#0;2;0;0;0" not in shown and "Y29weQ" not in shown
    # a bare CR starts a new line: nothing printed before it is written over (the tool's excerpt is
    # its first line; the model's text shows every line)
    assert "  - tool" + " " * 8 + "said" in lines  # the tab went to the stop at column 16
    assert lines.index("  50%") + 1 == lines.index("  100% done red")
    assert "  看这里" + " " * 8 + "表格" in lines  # the tab went to the stop at column 16
    assert re.sub(r"\s", "", shown).count("很长的一行,没有空格") == 40  # wrapped, nothing lost
    # the live line on the other terminal: only flower's own sequences
    err = term.err.decode("utf-8", "replace")
    assert not re.sub(r"\r\x1b\[K|\x1b\[\d+D", "", err).count("\x1b")


# -- once without a network -----------------------------------------------------------------------


@pytest.fixture
def dead_port():
    """A port that refuses every connection: bound by this test, never listening."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def test_once_without_a_network_says_within_seconds_that_the_endpoint_does_not_answer(
    sim_factory, claude_root, tmp_path, started, dead_port
):
    sim = sim_factory({"scripts": {"main": ["never asked"]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    url = f"http://127.0.0.1:{dead_port}"
    # the CLI's own retries (ten of them, with backoff) would keep it silent for minutes
    env = cli_env(sim, claude_root, ANTHROPIC_BASE_URL=url, CLAUDE_CODE_MAX_RETRIES="10")
    waiting = Child("once", "hi", cwd=ws, env=env)
    started.append(waiting)
    waiting.wait_for(f"模型端点 127.0.0.1:{dead_port} 不应答(连不上)—— 在等它", timeout=30)
    assert "x API Error" not in waiting.output  # said before the CLI gave up on its own
    waiting.kill()

    # when the CLI does give up, the round's end says why, not "(success)"
    failing = Child("once", "hi", cwd=ws, env={**env, "CLAUDE_CODE_MAX_RETRIES": "0"})
    started.append(failing)
    failing.wait_for("第 1 次尝试失败", timeout=60)
    assert "这一轮没跑完(success)" not in failing.output
    assert "这一轮没跑完:API Error" in failing.output
    assert sim.requests == []


def test_quitting_once_names_the_session_to_resume(sim_factory, claude_root, tmp_path, started):
    sim = sim_factory({"scripts": {"main": [LONG_TOOL, {"text": "never"}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    child = Child("once", "-t", "Bash", "跑个长任务", cwd=ws, env=cli_env(sim, claude_root))
    started.append(child)
    child.wait_for("* Bash python3")
    child.proc.send_signal(signal.SIGINT)
    time.sleep(0.3)  # two presses, not one: well within DOUBLE_PRESS_S
    child.proc.send_signal(signal.SIGINT)

    assert child.finish(30) == 130
    [row] = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert row["session_id"] and f'flower once --resume {row["session_id"]} "…"' in child.output
    assert "<会话>" not in child.output


# -- folders and files that are not what flower needs ---------------------------------------------


@pytest.mark.parametrize(
    "argv, where",
    [
        (["-w", "{blocker}/ws", "once", "hi"], "{blocker}/ws"),
        (["-r", "{blocker}/runs", "once", "hi"], "{blocker}/runs"),
        (["-r", "{blocker}/runs", "--timeout", "0", "做 X"], "{blocker}/runs"),
        (["-w", "{blocker}/ws", "setup"], "{blocker}/ws"),
    ],
)
def test_a_folder_that_cannot_be_written_is_a_clear_message_not_a_traceback(
    sim_factory, claude_root, tmp_path, argv, where
):
    # a file where a folder must go: mkdir fails for every user, root included
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder", encoding="utf-8")
    sim = sim_factory({"scripts": {"main": ["never asked"]}})
    done = flower(*(a.format(blocker=blocker) for a in argv), cwd=tmp_path, env=cli_env(sim, claude_root))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"x 没法写进 {where.format(blocker=blocker)}:Not a directory" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert sim.requests == []


def test_setup_that_cannot_save_the_typed_key_says_where_to_put_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    key = "sk-ant-e2e-secret-0123456789abcdef"
    child = subprocess.Popen(
        [sys.executable, "-m", "flower", "setup"],
        cwd=tmp_path,
        env={**env, "PYTHONUNBUFFERED": "1"},
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(key + "\n")
    child.stdin.flush()
    seen = ""
    while "2. 网关地址" not in seen:  # the key is typed; the address is asked next
        line = child.stdout.readline()
        assert line, seen
        seen += line
    (tmp_path / ".env").mkdir()  # now the .env cannot be written any more
    out, _ = child.communicate("\n", timeout=60)
    out = seen + out

    assert child.returncode == 1
    assert f"x 没能把凭证存进 {tmp_path / '.env'}:Is a directory" in out
    assert "ANTHROPIC_API_KEY=<你的 key>" in out and "export ANTHROPIC_API_KEY=<你的 key>" in out
    assert key not in out and "Traceback" not in out


def test_a_broken_env_file_is_reported_with_its_path(sim_factory, claude_root, tmp_path):
    sim = sim_factory({"scripts": {"main": ["读到了"]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    dotenv = ws / ".env"
    dotenv.write_text('FLOWER_NOTE=1\nthis line is not KEY=value at all\nB="never closed\n', encoding="utf-8")
    done = flower("once", "hi", cwd=ws, env=cli_env(sim, claude_root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"! {dotenv} 第 2、3 行看不懂,跳过了(每行要写成 KEY=value)" in done.stderr
    assert "python-dotenv could not parse" not in done.stderr  # said once, with the path

    dotenv.write_bytes(b"ANTHROPIC_MODEL=x\n\xff\xfe broken\n")
    unreadable = flower("once", "hi", cwd=ws, env=cli_env(sim, claude_root))
    assert unreadable.returncode == 1
    assert f"x 读不了 {dotenv}:不是 UTF-8 文本(第 19 个字节)" in unreadable.stderr
    assert "Traceback" not in unreadable.stdout + unreadable.stderr


def test_run_with_a_target_that_does_not_exist_leaves_no_runs_folder(sim_factory, claude_root, tmp_path):
    sim = sim_factory({"scripts": {"main": ["never asked"]}})
    done = flower("run", "nosuch:thing", cwd=tmp_path, env=cli_env(sim, claude_root))
    assert done.returncode == 1 and "导入 'nosuch' 失败" in done.stderr
    assert not (tmp_path / "runs").exists() and sim.requests == []
