"""The `flower` command end to end: `python -m flower ...` in a subprocess, the real Claude Code
CLI underneath, the model scripted by flower.sim in this test process."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from flower.core.brief import Brief
from flower.core.goal import Goal
from flower.core.human import TIMEOUT
from flower.core.lineage import Lineage
from flower.sim.env import DUMMY_KEY, isolated_env
from flower.sim.scenario import TurnData, content_text
from flower.sim.scenarios import BRIEF, VERDICTS, judged, starter_scenario

pytestmark = pytest.mark.e2e

CLOSING = re.compile(r"^总花费 \$(\d+\.\d{4}) · 清单 (.+)$")
LONG_TOOL = {
    "tool": {
        "name": "Bash",
        "input": {"command": "python3 -c 'import time; time.sleep(60)'", "description": "long"},
    }
}


def cli_env(sim: Any, claude_root: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(isolated_env(sim.base_url, claude_root))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def flower(
    *argv: str, cwd: Path, env: dict[str, str], stdin: str = "", timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower", *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def closing(out: str) -> tuple[float, Path]:
    last = [line for line in out.splitlines() if line.strip()][-1]
    match = CLOSING.match(last)
    assert match, f"no closing line at the end:\n{out}"
    return float(match.group(1)), Path(match.group(2))


def session_of(stdout: str) -> str:
    """The session id `flower once` prints for resuming."""
    found = re.search(r"- 会话 ([0-9a-f-]{36})", stdout)
    assert found is not None, stdout
    return found.group(1)


def notes(ws: Path) -> Path:
    return ws / ".flower" / "notes"


class Child:
    """`python -m flower` with a pipe on stdin that stays open, read line by line."""

    def __init__(self, *argv: str, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flower", *argv],
            cwd=cwd,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output:
                return
            if self.proc.poll() is not None:
                time.sleep(0.2)
                if text in self.output:
                    return
                break
            time.sleep(0.05)
        raise AssertionError(f"never saw {text!r}:\n{self.output}")

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 90) -> int:
        code = self.proc.wait(timeout)
        time.sleep(0.2)  # let the pump drain
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture
def child_processes():
    started: list[Child] = []
    yield started
    for child in started:
        child.kill()


# -- go ---------------------------------------------------------------------------------------------


def touch(name: str) -> TurnData:
    command = f"touch {name} && ls {name}"
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "touch"}}}


def test_a_piped_request_runs_unattended_and_a_second_run_wakes_with_the_banner(
    sim_factory, claude_root, tmp_path
):
    scenario = starter_scenario()
    # the judge tries a command in the first run (--judge-can-run) and in the second (without)
    scenario["scripts"]["judge"] = [
        touch("judge-ran-1"),
        {"text": VERDICTS["not_yet"]},
        *judged("achieved"),
        touch("judge-ran-2"),
        *judged("achieved"),
    ]
    sim = sim_factory(scenario)
    ws = tmp_path / "proj"
    ws.mkdir()
    env = cli_env(sim, claude_root)

    first = flower(
        "--timeout", "0", "--judge-can-run", cwd=ws, env=env, stdin="写一个 hello.py,运行时打印问候语\n"
    )

    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    for step in ("== 确认需求 ", "== 设定目标 ", "== 干活 "):
        assert step in out
    # --timeout 0: the question is settled at once, and the clarifier is told nobody answered
    assert "  ? hello.py 要打印什么?" in out and "  ! 无人应答" in out
    clarifier = sim.requests_for("clarifier")[1]
    assert content_text(clarifier.tool_results()[-1]["content"]) == TIMEOUT
    assert "标准输入不是终端" not in first.stderr  # nothing to warn about when nobody is waited for
    assert "判定第 1 轮:未达成" in out and "判定第 2 轮:达成" in out
    brief, goal = Brief.load(notes(ws) / "需求.md"), Goal.load(notes(ws) / "目标.md")
    assert brief is not None and brief.complete() and goal is not None and goal.complete()
    assert (ws / "hello.py").is_file() and (ws / "README.md").is_file()
    # --judge-can-run: the judge's command really ran, on a view of the workspace thrown away after
    results = [content_text(r["content"]) for q in sim.requests_for("judge") for r in q.tool_results()]
    assert any("judge-ran-1" in t for t in results) and not (ws / "judge-ran-1").exists()
    cost, manifest = closing(out)
    assert cost > 0 and manifest == ws / "runs" / "manifest.json"
    assert cost == pytest.approx(
        sum(r["cost_usd"] for r in json.loads(manifest.read_text(encoding="utf-8"))), abs=1e-4
    )
    work_session = Lineage.open(ws / "runs", ws).steps["干活"]

    second = flower(cwd=ws, env=env, stdin="")  # say nothing: carry on

    assert second.returncode == 0, second.stdout + second.stderr
    out = second.stdout
    banner = next(line for line in out.splitlines() if line.startswith("<- "))
    assert banner.startswith(
        f"<- 在 {ws} 接上上次  需求已确认 · 目标 3 条 · 干活上下文 "
    ) and banner.endswith(" · 第 2 次唤醒")
    assert re.search(r"干活上下文 \d+\.\dK", banner)
    assert "== 确认需求" not in out and "== 设定目标" not in out  # frozen steps are skipped
    assert re.search(r"== 干活 =+  3/3  <- 接上次 · 第 2 次唤醒", out)
    assert "标准输入不是终端" in second.stderr  # a pipe and the default timeout
    assert not (ws / "judge-ran-2").exists()  # no --judge-can-run this time: the command was refused
    lineage = Lineage.open(ws / "runs", ws)
    assert lineage.woke == 2 and lineage.steps["干活"] == work_session
    assert closing(out)[0] > 0


def clarify_only_scenario() -> dict[str, Any]:
    second = BRIEF.replace("hello.py", "bye.py")
    return {
        "actors": {
            "clarifier": {"system": "你的角色:确认者"},
            "judge": {"system": "你的角色:判定者"},
            "coordinator": {"system": "你的角色:协调者"},
        },
        "scripts": {"clarifier": [{"text": BRIEF}, {"text": second}, {"text": second}]},
    }


def test_new_archives_the_last_piece_of_work_and_clarify_only_stops_after_the_brief(
    sim_factory, claude_root, tmp_path
):
    sim = sim_factory(clarify_only_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    env = cli_env(sim, claude_root)

    first = flower("--clarify-only", "--timeout", "0", "写 hello.py", cwd=ws, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "hello.py" in (notes(ws) / "需求.md").read_text(encoding="utf-8")
    assert sim.actors_seen() == ["clarifier"]  # no goal, no work, no judge
    assert "== 设定目标" not in first.stdout

    again = flower("--clarify-only", cwd=ws, env=env, stdin="")
    assert again.returncode == 0 and "需求已经确认过" in again.stderr and "--new" in again.stderr
    assert sim.actors_seen() == ["clarifier"]

    second = flower("--new", "--clarify-only", "--timeout", "0", "写 bye.py", cwd=ws, env=env)

    assert second.returncode == 0, second.stdout + second.stderr
    assert "<- 在" not in second.stdout  # a new piece of work is not a wake
    [archived] = (notes(ws) / "archive").iterdir()
    assert re.fullmatch(r"\d{8}-\d{6}", archived.name)
    assert sorted(p.name for p in archived.iterdir()) == ["lineage.json", "需求.md"]
    assert "hello.py" in (archived / "需求.md").read_text(encoding="utf-8")
    assert "bye.py" in (notes(ws) / "需求.md").read_text(encoding="utf-8")
    assert Lineage.open(ws / "runs", ws).woke == 1


def test_double_ctrl_c_quits_with_130_and_the_lineage_is_already_on_disk(
    sim_factory, claude_root, tmp_path, child_processes
):
    sim = sim_factory(starter_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    child = Child("--timeout", "600", "写一个 hello.py", cwd=ws, env=cli_env(sim, claude_root))
    child_processes.append(child)
    child.wait_for("  ? hello.py 要打印什么?")
    child.wait_for("你的回答 (回车=跳过,让它自己判断) >")  # the question is really waiting

    child.proc.send_signal(signal.SIGINT)
    child.wait_for("想说点什么?(回车 = 不说,直接继续)")
    assert "(有 1 个提问还等着,打断不影响它们)" in child.output
    child.proc.send_signal(signal.SIGINT)

    assert child.finish() == 130
    assert "退出。血缘已经落盘" in child.output and "Traceback" not in child.output
    assert CLOSING.match([line for line in child.output.splitlines() if line.startswith("总花费")][-1])
    lineage = Lineage.open(ws / "runs", ws)
    assert set(lineage.steps) == {"确认需求"} and lineage.woke == 1


def test_a_brief_that_never_comes_stops_at_the_clarify_step_with_exit_1(sim_factory, claude_root, tmp_path):
    sim = sim_factory(
        {
            "actors": {"clarifier": {"system": "你的角色:确认者"}},
            "scripts": {"clarifier": [{"text": "我想想再说。"}]},
        }
    )
    done = flower("--timeout", "0", "帮我做一个 X", cwd=tmp_path, env=cli_env(sim, claude_root))
    assert done.returncode == 1
    assert "在步骤 '确认需求' 中止" in done.stderr
    assert closing(done.stdout)[0] > 0  # the books are closed even when it stops
    assert not (notes(tmp_path) / "需求.md").exists()


def test_rounds_caps_the_judged_rounds_and_running_out_is_exit_1(sim_factory, claude_root, tmp_path):
    sim = sim_factory(starter_scenario(verdicts=("not_yet", "not_yet", "not_yet")))
    done = flower(
        "--rounds", "1", "--timeout", "0", "写一个 hello.py", cwd=tmp_path, env=cli_env(sim, claude_root)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(sim.openings("judge")) == 1  # one round, one verdict: the default would be three
    assert (
        "在步骤 '干活' 中止" in done.stderr and "最后一轮判定:hello.py 能运行,但没有 README.md" in done.stderr
    )


# -- once -----------------------------------------------------------------------------------------


def test_once_reports_real_time_and_cost_and_its_flags_take_effect(sim_factory, claude_root, tmp_path):
    make = {"tool": {"name": "Bash", "input": {"command": "echo hi > made.txt", "description": "make"}}}
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    make,
                    {"text": "这是一个演示仓库。"},
                    make,
                    {"text": "做好了"},
                    {"text": "接着聊"},
                    {"text": "分叉聊"},
                ]
            }
        }
    )
    ws = tmp_path / "repo"
    ws.mkdir()
    env = cli_env(sim, claude_root)

    done = flower("-v", "once", "-i", "领域指令-XYZ", "读一眼这个仓库", cwd=ws, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    summary = re.search(r"= ad-hoc:(\d+) 轮 · \$(\d+\.\d{4}) · 用时 (\d+\.\d)s", done.stdout)
    assert (
        summary and int(summary.group(1)) >= 1 and float(summary.group(2)) > 0 and float(summary.group(3)) > 0
    )
    assert re.search(r"累计 \$0\.0[1-9]", done.stdout)  # the running total is not stuck at zero
    cost, manifest = closing(done.stdout)
    [row] = json.loads(manifest.read_text(encoding="utf-8"))
    assert (
        row["step"] == "ad-hoc" and row["cost_usd"] == pytest.approx(cost, abs=1e-4) and row["duration_s"] > 0
    )
    assert not (ws / "runs" / "lineage.json").exists()  # no workflow, no lineage
    # -i lands in the system prompt; the default tool list (Read, Glob, Grep) walls Bash off
    assert "领域指令-XYZ" in sim.requests_for("main")[0].system_text
    assert not (ws / "made.txt").exists()
    # -v shows the credential in use, masked; the key itself never appears
    assert f"ANTHROPIC_API_KEY = {DUMMY_KEY[:4]}***(共 {len(DUMMY_KEY)} 位)" in done.stdout
    assert DUMMY_KEY not in done.stdout + done.stderr

    tooled = flower("once", "-t", "Bash", "做一个文件", cwd=ws, env=env)
    assert tooled.returncode == 0, tooled.stdout + tooled.stderr
    assert (ws / "made.txt").read_text() == "hi\n"
    session = session_of(tooled.stdout)

    resumed = flower("once", "--resume", session, "再说一句", cwd=ws, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "做一个文件" in sim.requests_for("main")[-1].all_text  # the earlier conversation came along
    assert session_of(resumed.stdout) == session

    forked = flower("once", "--resume", session, "--fork", "分个叉", cwd=ws, env=env)
    assert forked.returncode == 0, forked.stdout + forked.stderr
    assert "做一个文件" in sim.requests_for("main")[-1].all_text
    assert session_of(forked.stdout) != session


def marked_processes(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (this test's own, nobody else's)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            continue
    return found


def test_once_budget_stops_the_agent(sim_factory, claude_root, tmp_path):
    # -b is the CLI's cap, checked when a model turn ends: past it no further request is made.
    # A tool call issued in that same turn may already have been started while the turn
    # streamed (the CLI decides, not flower); what flower promises is that it dies with the run.
    marker = f"budget-{uuid.uuid4().hex}"
    slow = f"sleep 30 && echo {marker} > made.txt"
    make = {"tool": {"name": "Bash", "input": {"command": slow, "description": "make"}}}
    sim = sim_factory({"scripts": {"main": [make, {"text": "done"}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    done = flower("once", "-t", "Bash", "-b", "0.000001", "做一个文件", cwd=ws, env=cli_env(sim, claude_root))
    assert done.returncode == 1
    assert "error_max_budget_usd" in done.stdout + done.stderr
    assert len(sim.requests_for("main")) == 1  # the turn that crossed the cap was the last
    assert marked_processes(marker) == []  # the issued call did not outlive the run
    assert not (ws / "made.txt").exists()


def test_ctrl_c_once_asks_for_words_and_the_same_session_resumes_with_them(
    sim_factory, claude_root, tmp_path, child_processes
):
    sim = sim_factory(
        {
            "scripts": {"main": [LONG_TOOL, {"text": "没人打断"}]},
            "rules": [
                {
                    "actor": "main",
                    "when": {"last_user_contains": "换个方向"},
                    "reply": {"text": "好的,换个方向"},
                    "times": 1,
                }
            ],
        }
    )
    ws = tmp_path / "repo"
    ws.mkdir()
    child = Child("once", "-t", "Bash", "跑个长任务", cwd=ws, env=cli_env(sim, claude_root))
    child_processes.append(child)
    child.wait_for("* Bash python3")
    time.sleep(1.0)  # the tool is really running

    child.proc.send_signal(signal.SIGINT)
    child.wait_for("想说点什么?(回车 = 不说,直接继续)")
    assert child.proc.poll() is None  # one press does not quit
    child.type("换个方向")

    assert child.finish() == 0, child.output
    assert "好的,换个方向" in child.output and "没人打断" not in child.output
    first, last = sim.requests_for("main")[0], sim.requests_for("main")[-1]
    assert "换个方向" in last.last_user_text and "跑个长任务" in last.all_text  # same session, words attached
    [row] = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert row["ok"] is True and row["attempts"] == 1  # an interruption is not a failed attempt
    assert first is not last


def test_ctrl_c_then_enter_carries_on_without_interrupting(
    sim_factory, claude_root, tmp_path, child_processes
):
    quick = {
        "tool": {
            "name": "Bash",
            "input": {"command": "python3 -c 'import time; time.sleep(4)'", "description": "short"},
        }
    }
    sim = sim_factory({"scripts": {"main": [quick, {"text": "睡完了"}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    child = Child("once", "-t", "Bash", "睡一下", cwd=ws, env=cli_env(sim, claude_root))
    child_processes.append(child)
    child.wait_for("* Bash python3")
    child.proc.send_signal(signal.SIGINT)
    child.wait_for("想说点什么")
    child.type("")
    assert child.finish() == 0, child.output
    assert ". 不说话,接着跑" in child.output and "睡完了" in child.output
    assert len(sim.requests_for("main")) == 2  # the tool ran to its end, nothing was resent


def test_ctrl_c_twice_quits_once_and_kills_the_tool(sim_factory, claude_root, tmp_path, child_processes):
    sim = sim_factory({"scripts": {"main": [LONG_TOOL, {"text": "never"}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    child = Child("once", "-t", "Bash", "跑个长任务", cwd=ws, env=cli_env(sim, claude_root))
    child_processes.append(child)
    child.wait_for("* Bash python3")
    child.proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    child.proc.send_signal(signal.SIGINT)
    assert child.finish(30) == 130
    assert "! 退出" in child.output and "Traceback" not in child.output


def test_sigterm_keeps_the_books_then_dies_by_the_signal(sim_factory, claude_root, tmp_path, child_processes):
    sim = sim_factory({"scripts": {"main": [LONG_TOOL, {"text": "never"}]}})
    ws = tmp_path / "repo"
    ws.mkdir()
    child = Child("once", "-t", "Bash", "跑个长任务", cwd=ws, env=cli_env(sim, claude_root))
    child_processes.append(child)
    child.wait_for("* Bash python3")
    child.proc.send_signal(signal.SIGTERM)
    assert child.finish(30) == -signal.SIGTERM
    [row] = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert row["error"] == "killed-by-signal" and row["session_id"]


# -- usage -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run"], "the following arguments are required: target"),
        (["--rounds", "0", "做 X"], "--rounds 至少是 1"),
        (["-W", "做 X"], "-W/--workbench 对 go 不起作用"),
        (["once", "hi", "-p", "yolo"], "invalid choice: 'yolo'"),
    ],
)
def test_a_usage_error_exits_2_with_a_clear_message(tmp_path, argv, says):
    done = subprocess.run(
        [sys.executable, "-m", "flower", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert says in done.stderr and "usage: flower" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_run_reports_a_target_it_cannot_load_with_exit_1(sim_factory, claude_root, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "ok"}]}})
    done = flower("run", "flows", cwd=tmp_path, env=cli_env(sim, claude_root))
    assert done.returncode == 1 and "需要 模块:属性 形式,例如 flows:main" in done.stderr


def test_run_drives_a_workflow_from_a_file(sim_factory, claude_root, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "第一步好了"}, {"text": "第二步好了"}]}})
    (tmp_path / "flows.py").write_text(
        "from flower import AgentSpec, Step, Workflow\n"
        "S = AgentSpec(name='t', instructions='')\n"
        "def main():\n"
        "    return Workflow([Step('一', S, '做第一步'), Step('二', S, '做第二步')])\n",
        encoding="utf-8",
    )
    done = flower("run", "flows.py:main", "-W", cwd=tmp_path, env=cli_env(sim, claude_root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "== 一 " in done.stdout and "== 二 " in done.stdout and "第二步好了" in done.stdout
    assert (tmp_path / "runs" / "workbench" / "INDEX.md").is_file()  # -W on run
    assert closing(done.stdout)[0] > 0


# -- setup ------------------------------------------------------------------------------------------


def test_setup_writes_a_private_env_masks_the_key_and_probes_the_gateway(sim_factory, claude_root, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "ok"}]}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    key = "sk-ant-e2e-secret-0123456789abcdef"

    done = subprocess.run(
        [sys.executable, "-m", "flower", "setup"],
        cwd=tmp_path,
        env=env,
        input=f"{key}\n{sim.base_url}/\n",
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    dotenv = tmp_path / ".env"
    assert stat.S_IMODE(dotenv.stat().st_mode) == 0o600
    text = dotenv.read_text(encoding="utf-8")
    assert f"ANTHROPIC_API_KEY={key}" in text and f"ANTHROPIC_BASE_URL={sim.base_url}\n" in text
    assert key not in done.stdout + done.stderr
    assert f"ANTHROPIC_API_KEY = sk-a***(共 {len(key)} 位)" in done.stdout
    assert f"+ 凭证能用:{sim.base_url}/v1/messages 用模型 claude-haiku-4-5 答了" in done.stdout
    assert len(sim.requests) == 1  # the probe: one small Messages request

    # a gateway that does not answer: the check says so and fails
    dotenv.write_text(text.replace(sim.base_url, "http://127.0.0.1:9"), encoding="utf-8")
    check = subprocess.run(
        [sys.executable, "-m", "flower", "setup", "--check"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 1 and "x 连不上 http://127.0.0.1:9/v1/messages:" in check.stderr


# -- a real terminal (a pseudo-terminal, no tmux) -----------------------------------------------------


class Terminal:
    """`python -m flower` on a pseudo-terminal: what a person at a keyboard sees and types."""

    def __init__(self, *argv: str, cwd: Path, env: dict[str, str]) -> None:
        import fcntl
        import struct
        import termios

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", "flower", *argv], env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        self.raw = b""
        self.code: int | None = None

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            return False
        self.raw += data
        return bool(data)

    def wait_for(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.text:
                return
            if not self._read(0.1):
                break
        if text not in self.text:
            raise AssertionError(f"never saw {text!r}:\n{self.text}")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode("utf-8"))

    def finish(self, timeout: float = 90) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.1):
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def kill(self) -> None:
        if self.code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass


@pytest.fixture
def terminals():
    started: list[Terminal] = []
    yield started
    for t in started:
        t.kill()


def test_at_a_terminal_it_asks_what_to_do_and_questions_are_answered_by_number(
    sim_factory, claude_root, tmp_path, terminals
):
    sim = sim_factory(starter_scenario(verdicts=("achieved",)))
    ws = tmp_path / "proj"
    ws.mkdir()
    term = Terminal(cwd=ws, env=cli_env(sim, claude_root))
    terminals.append(term)

    term.wait_for("要做什么? 一句话就够,回车开始(Ctrl-C 退出)")
    term.type("写一个 “hello” 程序!\r")  # full-width quotes and "!" need no shell quoting here
    term.wait_for("你的回答 (回车=跳过,让它自己判断) > ")
    term.type("2\r")
    term.wait_for("总花费 $")

    assert term.finish() == 0, term.text
    assert "写一个 “hello” 程序!" in sim.requests_for("clarifier")[0].first_user_text
    assert content_text(sim.requests_for("clarifier")[1].tool_results()[-1]["content"]) == "hello, flower"
    assert "  + hello, flower" in term.text
    assert re.search(
        r"\r\x1b\[K- 干活 · 上下文 \d+\.\dK/1M · 累计 \$\d+\.\d\d · ", term.text
    )  # the live status line
    assert "标准输入不是终端" not in term.text


def clarified_once(sim_factory, claude_root, tmp_path: Path) -> tuple[Any, Path, dict[str, str]]:
    """A folder whose brief for hello.py is settled: the next flower there asks 接着上次?"""
    sim = sim_factory(clarify_only_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    env = cli_env(sim, claude_root)
    assert flower("--clarify-only", "--timeout", "0", "写 hello.py", cwd=ws, env=env).returncode == 0
    return sim, ws, env


def test_at_a_terminal_slash_new_starts_over_and_ctrl_c_at_the_prompt_cancels(
    sim_factory, claude_root, tmp_path, terminals
):
    _, ws, env = clarified_once(sim_factory, claude_root, tmp_path)

    cancel = Terminal("--clarify-only", cwd=ws, env=env)
    terminals.append(cancel)
    cancel.wait_for("接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)")
    cancel.type("/new\r")
    cancel.wait_for("要做什么? 一句话就够")
    cancel.type("\x03")
    assert cancel.finish() == 1 and "已取消" in cancel.text
    assert not (notes(ws) / "archive").exists()  # cancelled before anything moved

    term = Terminal("--clarify-only", "--timeout", "0", cwd=ws, env=env)
    terminals.append(term)
    term.wait_for("接着上次?")
    term.type("/new\r")
    term.wait_for("要做什么?")
    term.type("写 bye.py\r")

    assert term.finish() == 0, term.text
    [archived] = (notes(ws) / "archive").iterdir()
    assert "hello.py" in (archived / "需求.md").read_text(encoding="utf-8")
    assert "bye.py" in (notes(ws) / "需求.md").read_text(encoding="utf-8")
    assert "<- 在" not in term.text


# when the Ctrl-C lands, in seconds after the launch prompt's header showed: at once (while
# the prompt is being set up), and spread over the moments after
CTRL_C_DELAYS = [0.0, 0.0, 0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]


@pytest.mark.parametrize("delay", CTRL_C_DELAYS, ids=[f"{i}:{d:g}s" for i, d in enumerate(CTRL_C_DELAYS)])
def test_at_a_terminal_ctrl_c_at_the_launch_prompt_cancels_whenever_it_lands(
    sim_factory, claude_root, tmp_path, terminals, delay
):
    # a Ctrl-C that lands while the prompt is being set up must not be lost: the process ends
    # with 已取消 whatever the moment (a lost SIGINT left input() waiting for a key forever)
    sim = sim_factory(clarify_only_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    term = Terminal("--clarify-only", cwd=ws, env=cli_env(sim, claude_root))
    terminals.append(term)
    term.wait_for("要做什么? 一句话就够")
    time.sleep(delay)  # where the key lands is the parameter; nothing waits on it
    term.type("\x03")
    assert term.finish() == 1, term.text
    assert "已取消" in term.text
    assert not (notes(ws) / "需求.md").exists()  # nothing was started
    assert sim.requests_for("clarifier") == []


def test_at_a_terminal_lines_typed_ahead_at_the_launch_prompt_are_each_read_once(
    sim_factory, claude_root, tmp_path, terminals
):
    sim, ws, env = clarified_once(sim_factory, claude_root, tmp_path)
    term = Terminal("--clarify-only", "--timeout", "0", cwd=ws, env=env)
    terminals.append(term)
    term.wait_for("接着上次?")
    term.type("/new\r写 bye.py\r")  # both lines in one write, before the second prompt is up
    assert term.finish() == 0, term.text
    assert "bye.py" in (notes(ws) / "需求.md").read_text(encoding="utf-8")
    assert "写 bye.py" in sim.requests_for("clarifier")[-1].last_user_text


def test_at_a_terminal_ctrl_c_is_a_key_the_claude_child_never_sees(
    sim_factory, claude_root, tmp_path, terminals
):
    sim = sim_factory(
        {
            "scripts": {"main": [LONG_TOOL, {"text": "没人打断"}]},
            "rules": [
                {
                    "actor": "main",
                    "when": {"last_user_contains": "别睡了"},
                    "reply": {"text": "好,不睡了"},
                    "times": 1,
                }
            ],
        }
    )
    ws = tmp_path / "repo"
    ws.mkdir()
    term = Terminal("once", "-t", "Bash", "跑个长任务", cwd=ws, env=cli_env(sim, claude_root))
    terminals.append(term)
    term.wait_for("* Bash python3")
    time.sleep(1.0)
    term.type("\x03")
    term.wait_for("想说点什么?(回车 = 不说,直接继续)")
    time.sleep(1.0)
    # the CLI child shares the terminal's process group: had it got SIGINT it would have
    # stopped the tool by itself and the model would have been asked again already
    assert len(sim.requests_for("main")) == 1
    term.type("别睡了\r")
    term.wait_for("总花费 $")
    assert term.finish() == 0, term.text
    assert "好,不睡了" in term.text and "没人打断" not in term.text
    assert "别睡了" in sim.requests_for("main")[-1].last_user_text
