"""The `flower` command without a model: how argv is read, what each flag changes in what the
command builds (the real starter flow, the real Runtime), and the terminal pieces."""

from __future__ import annotations

import asyncio
import io
import os
import platform
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flower import cli
from flower.core.events import (
    AskState,
    ContextUpdate,
    Event,
    GoalUnverifiable,
    HandoffDone,
    HandoffWriting,
    LimitWait,
    MailNote,
    Offline,
    Question,
    Result,
    Retry,
    StepStarted,
    SyntheticError,
    SystemNote,
    TaskUpdate,
    Text,
    ToolCall,
    ToolResult,
    VerdictGiven,
    VerdictState,
    WindowNote,
)
from flower.core.human import HumanChannel
from flower.core.lineage import Lineage
from flower.sim.scenarios import BRIEF, GOAL
from flower.workflow.base import Workflow
from flower.workflow.starter import wake_state

KEY = "sk-ant-unit-test-key-0123456789"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from a temp folder with a credential in the environment (nothing here calls a model)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return tmp_path


def args(*argv: str) -> Any:
    return cli.parse_args(list(argv))


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.parse_args(list(argv))
    assert stop.value.code == 2
    return capsys.readouterr().err


# -- reading argv ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "typed, parsed",
    [
        ([], ["go"]),
        (["-v"], ["-v", "go"]),
        (["帮我做一个 X"], ["go", "帮我做一个 X"]),
        (["-w", "/tmp", "做 X"], ["-w", "/tmp", "go", "做 X"]),
        (["--workspace=/tmp", "做 X"], ["--workspace=/tmp", "go", "做 X"]),
        (["-w/tmp", "做 X"], ["-w/tmp", "go", "做 X"]),
        (["做 X", "--timeout", "0"], ["go", "做 X", "--timeout", "0"]),
        (["--timeout", "0", "做 X"], ["go", "--timeout", "0", "做 X"]),
        (["--new"], ["go", "--new"]),
        (["once", "hi"], ["once", "hi"]),
        (["run", "flows:main"], ["run", "flows:main"]),
        (["run"], ["run"]),
        (["go", "run"], ["go", "run"]),
        (["setup"], ["setup"]),
        (["-v", "setup"], ["-v", "setup"]),
        (["demo"], ["demo"]),
    ],
)
def test_the_default_subcommand_is_go_unless_one_is_named(typed: list[str], parsed: list[str]):
    assert cli.rewrite_argv(typed) == parsed


def test_setup_is_reachable_and_is_not_a_request():
    assert args("setup").command == "setup"
    assert args("-v", "setup").command == "setup"
    assert args("go", "setup").ask == "setup"


def test_a_bare_request_and_flags_on_either_side_land_in_go():
    a = args("--rounds", "5", "帮我做一个 X")
    b = args("帮我做一个 X", "--rounds", "5")
    assert (a.command, a.ask, a.rounds) == (b.command, b.ask, b.rounds) == ("go", "帮我做一个 X", 5)
    assert args().ask is None


@pytest.mark.parametrize("where", ["before", "after"])
def test_global_flags_work_before_or_after_the_subcommand(where: str):
    flags = ["-w", "/some/ws", "-r", "/some/runs", "-v", "-T", "-W"]
    argv = [*flags, "once", "hi"] if where == "before" else ["once", "hi", *flags]
    a = args(*argv)
    assert (a.workspace, a.run_dir, a.verbose, a.trim, a.workbench) == (
        "/some/ws",
        "/some/runs",
        True,
        True,
        True,
    )


def test_global_flag_defaults():
    a = args("once", "hi")
    assert (a.workspace, a.run_dir, a.verbose, a.trim, a.workbench) == (".", "runs", False, False, False)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run"], "target"),
        (["once"], "prompt"),
        (["--rounds", "0", "x"], "--rounds 至少是 1"),
        (["--rounds", "two", "x"], "--rounds 要一个整数"),
        (["--window", "0", "x"], "--window 至少是 1"),
        (["--window", "-5", "x"], "--window 至少是 1"),
        (["-W", "x"], "-W/--workbench 对 go 不起作用"),
        (["x", "-W"], "-W/--workbench 对 go 不起作用"),
        (["-T", "--no-trim", "x"], "只能给一个"),
        (["once", "hi", "--fork"], "--fork 要和 --resume"),
        (["once", "hi", "-p", "yolo"], "invalid choice"),
        (["once", "hi", "-b", "0"], "--budget 要大于 0"),
        (["--bogus", "x"], "unrecognized arguments"),
    ],
)
def test_usage_errors_exit_2_and_say_what_is_wrong(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
):
    assert says in usage_error(capsys, *argv)


def test_version(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as stop:
        cli.parse_args(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"flower {cli.__version__}"


def test_building_the_parser_does_not_import_the_sdk():
    probe = (
        "import sys; from flower.cli import build_parser, parse_args; build_parser(); parse_args(['x']); "
        "print('claude_agent_sdk' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


# -- go: what reaches the starter flow --------------------------------------------------------


def flow(*argv: str, ask: str = "帮我做一个 X", new: bool = False) -> Any:
    return cli.build_flow(args(*argv, ask), ask, new=new)


def step_names(wf: Any) -> list[str]:
    return [s.name for s in wf.steps]


@pytest.mark.parametrize("given, expected", [(None, None), ("-1", None), ("-7", None), ("0", 0), ("3", 3)])
def test_asks_sets_the_question_quota(here: Path, given: str | None, expected: int | None):
    wf = flow(*(["--asks", given] if given else []))
    assert wf.channel.max_asks == expected


@pytest.mark.parametrize("given, expected", [(None, 1800.0), ("0", 0.0), ("-3", 0.0), ("12.5", 12.5)])
def test_timeout_sets_how_long_a_question_waits(here: Path, given: str | None, expected: float):
    wf = flow(*(["--timeout", given] if given else []))
    assert wf.channel.timeout_s == expected


@pytest.mark.parametrize("given, retries", [(None, 2), ("1", 0), ("5", 4)])
def test_rounds_caps_the_judged_work_rounds(here: Path, given: str | None, retries: int):
    wf = flow(*(["--rounds", given] if given else []))
    work = wf.steps[-1]
    assert work.name == "干活" and work.retries == retries and work.gate is not None


def test_no_goal_drops_the_goal_step_and_the_judge(here: Path):
    assert step_names(flow()) == ["确认需求", "设定目标", "干活"]
    wf = flow("--no-goal")
    assert step_names(wf) == ["确认需求", "干活"]
    assert wf.steps[-1].gate is None and wf.steps[-1].retries == 0


def test_clarify_only_keeps_only_the_clarify_step(here: Path):
    assert step_names(flow("--clarify-only")) == ["确认需求"]


def test_judge_can_run_is_passed_to_the_starter_flow(here: Path):
    # the judge's tool list is checked end to end in test_cli_e2e (the request the sim saw)
    assert cli.settings_of(args("x")).judge_can_run is False
    assert cli.settings_of(args("--judge-can-run", "x")).judge_can_run is True


def test_workspace_and_run_dir_reach_the_flow(here: Path):
    wf = flow("-w", "proj", "-r", "elsewhere/runs")
    assert wf.workbench.root == here / "proj" / ".flower"
    settings = cli.settings_of(args("-w", "proj", "-r", "elsewhere/runs", "x"))
    assert settings.workspace == here / "proj" and settings.run_dir == here / "elsewhere" / "runs"


def test_isolate_moves_the_workbench_out_of_the_repository(here: Path):
    ws = here / "repo"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    wf = flow("-w", str(ws), "--isolate")
    assert wf.workbench.root == here / ".flower-repo"
    assert flow("-w", str(ws)).workbench.root == ws / ".flower"


def test_isolate_outside_git_is_refused_before_anything_runs(here: Path):
    screen, _out, err = capture_screen()
    code = cli.go_command(args("--isolate", "帮我做一个 X"), screen=screen, source=pipe_source(""))
    assert code == 1
    assert "--isolate 要求" in err.getvalue() and "是 git 仓库" in err.getvalue()
    assert not (here / ".flower").exists()


def frozen_folder(ws: Path, run_dir: Path) -> None:
    notes = ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text(BRIEF, encoding="utf-8")
    (notes / "目标.md").write_text(GOAL, encoding="utf-8")
    lineage = Lineage.open(run_dir, ws)
    lineage.remember("干活", "0d2c9b2e-0000-4000-8000-000000000001")
    lineage.bump()


def test_new_archives_brief_goal_and_lineage_and_starts_over(here: Path):
    frozen_folder(here, here / "runs")
    assert wake_state(here, run_dir="runs")["waking"] is True
    flow(ask="另一件事", new=True)
    [archived] = (here / ".flower" / "notes" / "archive").iterdir()
    assert sorted(p.name for p in archived.iterdir()) == ["lineage.json", "目标.md", "需求.md"]
    state = wake_state(here, run_dir="runs")
    assert (state["waking"], state["woke"], state["steps"]) == (False, 0, {})


def test_without_new_a_frozen_folder_is_continued(here: Path):
    frozen_folder(here, here / "runs")
    flow(ask="")
    assert not (here / ".flower" / "notes" / "archive").exists()


# -- every command: what reaches the Runtime ----------------------------------------------------


def runtime(*argv: str, workbench: Any = None) -> Any:
    return cli.build_runtime(args(*argv), workbench=workbench)


def test_go_trims_by_default_and_no_trim_turns_it_off(here: Path):
    rt = runtime("x")
    assert rt.store.policy.enabled is True
    rt.close()
    rt = runtime("--no-trim", "x")
    assert rt.store.policy.enabled is False
    rt.close()
    rt = runtime("-T", "x")  # explicit, same as the default on this path
    assert rt.store.policy.enabled is True
    rt.close()


@pytest.mark.parametrize("command", [["once", "hi"], ["run", "flows:main"]])
def test_trim_flag_turns_trimming_on_for_run_and_once(here: Path, command: list[str]):
    rt = runtime(*command)
    assert rt.store.policy.enabled is False
    rt.close()
    rt = runtime(*command, "-T")
    assert rt.store.policy.enabled is True
    rt.close()


@pytest.mark.parametrize("command", [["once", "hi"], ["run", "flows:main"]])
def test_workbench_flag_opens_one_under_the_run_dir_for_run_and_once(here: Path, command: list[str]):
    rt = runtime(*command)
    assert rt.workbench is None
    rt.close()
    rt = runtime(*command, "-W", "-r", "r2")
    assert rt.workbench is not None and rt.workbench.root == here / "r2" / "workbench"
    assert (here / "r2" / "workbench" / "INDEX.md").is_file()
    rt.close()


def test_a_workflows_own_workbench_wins_over_the_flag(here: Path):
    from flower.core.workbench import Workbench

    own = Workbench(here / "ws", home=here / "bench")
    rt = runtime("run", "flows:main", "-W", workbench=own)
    assert rt.workbench is own
    rt.close()


def test_go_uses_the_flows_workbench(here: Path):
    wf = flow()
    rt = runtime("x", workbench=wf.workbench)
    assert rt.workbench is wf.workbench and rt.workbench.root == here / ".flower"
    rt.close()


@pytest.mark.parametrize("command", [["x"], ["once", "hi"], ["run", "flows:main"]])
def test_every_run_command_takes_the_sandbox_mode_auto_by_default(here: Path, command: list[str]):
    parsed = args(*command)
    assert parsed.sandbox == "auto" and cli.settings_of(parsed).sandbox == "auto"
    rt = runtime(*command, "--sandbox", "off")
    assert rt.sandbox.policy.mode == "off" and rt.sandbox.active is False
    rt.close()


def test_an_unknown_sandbox_mode_is_a_usage_error(capsys: pytest.CaptureFixture[str]):
    assert "invalid choice: 'maybe'" in usage_error(capsys, "--sandbox", "maybe", "x")


def test_sandbox_require_without_bubblewrap_stops_before_any_run(
    here: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from flower.core import sandbox

    sandbox._why.cache_clear()
    monkeypatch.setenv("PATH", str(here / "no-tools"))
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    code = cli.main(["once", "hi", "--sandbox", "require", "-w", str(here)])
    err = capsys.readouterr().err
    assert code == 1 and "需要沙箱,但缺少 bubblewrap (bwrap) 和 socat;安装 bubblewrap 和 socat" in err
    assert not (here / "runs" / "manifest.json").exists()  # nothing ran, nothing was booked
    sandbox._why.cache_clear()


def test_window_and_no_handoff_reach_the_handoff_policy(here: Path):
    rt = runtime("--window", "300000", "x")
    assert rt.handoff.enabled is True and rt.handoff.window == 300_000 and rt.handoff.at == 225_000
    rt.close()
    rt = runtime("--no-handoff", "x")
    assert rt.handoff.enabled is False
    rt.close()


def test_workspace_and_run_dir_reach_the_runtime(here: Path):
    rt = runtime("once", "hi", "-w", "a/ws", "-r", "b/runs")
    assert rt.workspace == here / "a" / "ws" and rt.run_dir == here / "b" / "runs"
    assert rt.manifest_path == here / "b" / "runs" / "manifest.json"
    rt.close()


# -- once ----------------------------------------------------------------------------------------


def test_once_builds_one_ad_hoc_agent_from_its_flags():
    spec = cli.once_spec(
        args("once", "hi", "-i", "只说中文", "-t", "Bash, Read", "-p", "acceptEdits", "-b", "0.25")
    )
    assert (spec.name, spec.instructions, spec.allowed_tools, spec.permission_mode, spec.max_budget_usd) == (
        "ad-hoc",
        "只说中文",
        ["Bash", "Read"],
        "acceptEdits",
        0.25,
    )
    plain = cli.once_spec(args("once", "hi"))
    assert (plain.instructions, plain.allowed_tools, plain.permission_mode, plain.max_budget_usd) == (
        "",
        ["Read", "Glob", "Grep"],
        "default",
        None,
    )


def test_once_resume_and_fork_reach_the_run_call():
    assert cli.once_call(args("once", "hi")) == {"step_name": "ad-hoc", "resume": None, "fork": False}
    assert cli.once_call(args("once", "hi", "--resume", "abc")) == {
        "step_name": "ad-hoc",
        "resume": "abc",
        "fork": False,
    }
    assert cli.once_call(args("once", "hi", "--resume", "abc", "--fork")) == {
        "step_name": "ad-hoc",
        "resume": "abc",
        "fork": True,
    }


# -- run: loading the target -----------------------------------------------------------------------

FLOWS = """
from flower import AgentSpec, Step, Workflow

SPEC = AgentSpec(name="t", instructions="")
main = Workflow([Step("one", SPEC, "hi")], name="from-file")

def build():
    return Workflow([Step("a", SPEC, "x"), Step("b", SPEC, "y")], name="built")

not_a_flow = 42
"""


@pytest.fixture
def imports(monkeypatch: pytest.MonkeyPatch):
    """load_target puts folders on sys.path and modules in sys.modules: undo both afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        sys.modules.pop(name, None)


def test_run_loads_a_workflow_from_a_file_or_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: None
):
    (tmp_path / "myflows.py").write_text(FLOWS, encoding="utf-8")
    from_file = cli.load_target("myflows.py:main", cwd=tmp_path)
    built = cli.load_target("myflows.py:build", cwd=tmp_path)  # called once
    by_module = cli.load_target("myflows:build", cwd=tmp_path)
    assert isinstance(from_file, Workflow) and from_file.name == "from-file"
    assert isinstance(built, Workflow) and built.name == "built"
    assert isinstance(by_module, Workflow) and [s.name for s in by_module.steps] == ["a", "b"]


@pytest.mark.parametrize(
    "target, says",
    [
        ("myflows", "需要 模块:属性 形式,例如 flows:main"),
        ("missing.py:main", "找不到 missing.py(当前目录"),
        ("no_such_module_here:main", "导入 'no_such_module_here' 失败:"),
        ("broken.py:main", "导入 'broken.py' 失败:"),
        ("myflows.py:nope", "'myflows.py' 里没有 'nope'"),
        ("myflows.py:not_a_flow", "不是 Workflow"),
    ],
)
def test_run_says_why_a_target_cannot_be_loaded(tmp_path: Path, target: str, says: str, imports: None):
    (tmp_path / "myflows.py").write_text(FLOWS, encoding="utf-8")
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    with pytest.raises(cli.TargetError) as err:
        cli.load_target(target, cwd=tmp_path)
    assert says in str(err.value)


# -- the launch prompt and stdin -----------------------------------------------------------------


def pipe_source(text: str) -> cli.LineSource:
    read, write = os.pipe()
    os.write(write, text.encode("utf-8"))
    os.close(write)
    return cli.LineSource(os.fdopen(read, "rb", buffering=0))


def capture_screen() -> tuple[cli.Screen, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return cli.Screen(out, err, live=False), out, err


def test_a_pipe_gives_the_request_then_the_later_lines():
    source = pipe_source("帮我做一个 X\n1\n第三行")
    screen, out, _ = capture_screen()
    assert cli.ask_for_request(source, screen, waking=False) == ("帮我做一个 X", False)
    assert out.getvalue() == ""  # no prompt header in a pipe
    assert source.read_line() == "1"
    assert source.read_line() == "第三行"
    assert source.read_line() is None and source.closed


def test_slash_new_starts_over_and_asks_again():
    screen, _, _ = capture_screen()
    assert cli.ask_for_request(pipe_source("/new\n另一件事\n"), screen, waking=True) == ("另一件事", True)


def test_an_empty_pipe_is_an_empty_request():
    screen, _, _ = capture_screen()
    assert cli.ask_for_request(pipe_source(""), screen, waking=True) == ("", False)


def test_an_empty_request_in_a_fresh_folder_exits_1_with_the_hint(here: Path):
    screen, _, err = capture_screen()
    assert cli.go_command(args(), screen=screen, source=pipe_source("\n")) == 1
    assert cli.EMPTY_REQUEST in err.getvalue()
    assert not (here / "runs").exists()  # nothing was written


def test_no_credential_is_reported_before_anything_is_asked(here: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    (here / ".env").write_text(
        "# no key here\nOTHER=1\n", encoding="utf-8"
    )  # the workspace's .env is the one read
    screen, _out, err = capture_screen()
    source = pipe_source("帮我做一个 X\n")
    assert cli.go_command(args(), screen=screen, source=source) == 1
    assert "缺少凭证" in err.getvalue() and "flower setup" in err.getvalue()
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "flower" / ".env"  # the suite's own, empty
    assert f"或者 `flower setup --user` 存进 {user},每个工作区都读它。" in err.getvalue()
    assert source.read_line() == "帮我做一个 X"  # the request was never read


def test_line_source_reads_partial_lines_only_once_complete():
    read, write = os.pipe()
    source = cli.LineSource(os.fdopen(read, "rb", buffering=0))
    os.write(write, "半句".encode())
    assert source.read_line(timeout=0.2) is None and not source.closed
    os.write(write, "话\n".encode())
    assert source.read_line(timeout=1) == "半句话"
    os.close(write)
    assert source.read_line(timeout=1) is None and source.closed


# -- rendering -------------------------------------------------------------------------------------


def ask_event(
    state: AskState,
    *,
    qid: str = "q1",
    options: list[str] | None = None,
    remaining: int = -1,
    answer: str = "",
) -> Question:
    return Question(
        text="用哪个数据库?",
        id=qid,
        options=options or [],
        state=state,
        answer=answer,
        remaining=remaining,
        asked_at=0.0,
    )


def test_a_question_shows_numbered_options_and_the_quota():
    r = cli.Render()
    assert r.lines(ask_event("asked", options=["SQLite", "Postgres"], remaining=2)) == [
        "  ? 用哪个数据库?",
        "     1) SQLite",
        "     2) Postgres",
        "     (还能问 2 次)",
    ]
    assert r.lines(ask_event("answered", options=["SQLite", "Postgres"], answer="Postgres")) == [
        "  + Postgres"
    ]
    assert "还能问" not in "\n".join(cli.Render().lines(ask_event("asked")))  # unlimited: no count


@pytest.mark.parametrize(
    "state, line",
    [
        ("timeout", "  ! 无人应答 —— 它会自己判断,把假设记进「未知与假设」"),
        ("over_budget", "  ! 提问额度用完"),
        ("declined", "  . 已跳过"),
        ("invalid", "  x 问题是空的"),
    ],
)
def test_every_way_a_question_ends_has_its_line(state: AskState, line: str):
    r = cli.Render()
    r.lines(ask_event("asked"))
    assert r.lines(ask_event(state)) == [line]


def test_a_question_settled_at_once_still_shows_what_was_asked():
    # --timeout 0: no "asked" event ever comes, only the settled one
    assert cli.Render().lines(ask_event("timeout", options=["A"])) == [
        "  ? 用哪个数据库?",
        "     1) A",
        "  ! 无人应答 —— 它会自己判断,把假设记进「未知与假设」",
    ]


def verdict(
    state: VerdictState, reason: str = "没有 README", failed: tuple[str, ...] = ("有 README.md",)
) -> Event:
    return VerdictGiven(state=state, reason=reason, failed=list(failed), round=1, goal_path="/p/目标.md")


# What a person reads for each event: (event, verbose?, lines).
RENDERED = [
    pytest.param(
        StepStarted(text="干活", index=3, total=3, resumed=True, woke=3),
        False,
        ["", "== 干活 ==============================  3/3  <- 接上次 · 第 3 次唤醒"],
        id="a step woken for the third time",
    ),
    pytest.param(
        ToolCall(
            text="x", tool="Agent", id="t1", input={"subagent_type": "coder", "description": "写 hello.py"}
        ),
        False,
        ["  > 派人 coder:写 hello.py"],
        id="a delegation names the worker and the task",
    ),
    pytest.param(
        ToolCall(text="ls", tool="Bash", id="t2", input={"command": "ls"}, subagent=True),
        False,
        ["  | * Bash ls"],
        id="a subagent's tool call is indented under a bar",
    ),
    pytest.param(
        ToolCall(text="", tool="mcp__human__ask", id="t3"), False, [], id="the ask event shows a question"
    ),
    pytest.param(ToolCall(text="", tool="mcp__human__inbox", id="t4"), False, ["  * 查收件箱"], id="inbox"),
    pytest.param(Text(text="我先看看", subagent=True), False, [], id="a subagent's text is quiet"),
    pytest.param(
        Text(text="我先看看", subagent=True), True, ["  | 我先看看"], id="a subagent's text when verbose"
    ),
    pytest.param(
        Text(text="第一行\n\n第二行"), False, ["  第一行", "  第二行"], id="main text, line by line"
    ),
    pytest.param(ToolResult(text="fine", tool_use_id="t2"), False, [], id="a tool result is quiet"),
    pytest.param(
        ToolResult(text="fine", tool_use_id="t2"), True, ["  - fine"], id="a tool result when verbose"
    ),
    pytest.param(
        ToolResult(text="boom\nmore", tool_use_id="t2", is_error=True),
        False,
        ["  x boom"],
        id="a failed tool",
    ),
    pytest.param(
        SyntheticError(text="API Error: 500"), False, ["  x API Error: 500"], id="a synthetic error"
    ),
    pytest.param(
        Retry(text="第 1 次尝试失败(transient):boom;4 秒后重试", attempt=1, failure="transient"),
        False,
        ["  ~ 第 1 次尝试失败(transient):boom;4 秒后重试"],
        id="a retry",
    ),
    pytest.param(Offline(text="网络断了,等它回来"), False, ["  ~ 网络断了,等它回来"], id="offline"),
    pytest.param(
        HandoffWriting(text="正在写交接书", step="干活", used=900_000),
        False,
        ["  # 正在写交接书"],
        id="writing",
    ),
    pytest.param(
        HandoffDone(
            text="已换代(降级)",
            degraded=True,
            path="/ws/.flower/notes/交接-干活.md",
            sections={"doing": "[降级:交接没写成] ...", "scene": "the task"},
            step="干活",
            retired="s1",
            generation=2,
        ),
        False,
        [
            "  x 交接没写成,用了降级版本 —— 接手的人会自己去现场看",
            "<- 交接写在 /ws/.flower/notes/交接-干活.md",
            "<- 新会话接手,上下文从头开始",
        ],
        id="a degraded handoff",
    ),
    pytest.param(
        HandoffDone(
            text="已换代(正常)",
            degraded=False,
            path="/ws/.flower/notes/交接-干活.md",
            sections={
                "doing": "在写解析器\n第二行",
                "deadends": "正则不行",
                "next": "跑测试",
                "scene": "src/p.py",
            },
            step="干活",
            retired="s1",
            generation=2,
        ),
        False,
        [
            "  - 现在在做什么  在写解析器",
            "  - 走不通的路  正则不行",
            "  - 下一步  跑测试",
            "<- 交接写在 /ws/.flower/notes/交接-干活.md",
            "<- 新会话接手,上下文从头开始",
        ],
        id="a handoff shows what its sections say",
    ),
    pytest.param(
        WindowNote(
            text="模型 m 的上下文窗口实测约 200K",
            configured=1_000_000,
            learned=200_000,
            model="m",
            base_url="u",
        ),
        False,
        ["  ! 模型 m 的上下文窗口实测约 200K"],
        id="a window smaller than configured",
    ),
    pytest.param(
        LimitWait(
            text="用量到上限了,等到 15:00 再接着跑", phase="wait", limit="usage", until=1.0, seconds=60.0
        ),
        False,
        ["  ~ 用量到上限了,等到 15:00 再接着跑"],
        id="a limit wait",
    ),
    pytest.param(
        verdict("not_yet"),
        False,
        ["  ~ 判定第 1 轮:未达成,打回去接着干 —— 没有 README", "     - 有 README.md"],
        id="not yet: back to work, with the failed checks",
    ),
    pytest.param(
        verdict("", failed=()),
        False,
        ["  ~ 判定第 1 轮:没给出明确结论,按未达成处理,打回去接着干 —— 没有 README"],
        id="no conclusion counts as not yet",
    ),
    pytest.param(verdict("achieved", reason="", failed=()), False, ["  + 判定第 1 轮:达成"], id="achieved"),
    pytest.param(
        verdict("unreachable"),
        False,
        ["  ! 判定第 1 轮:这个环境里验证不了 —— 没有 README", "     - 有 README.md"],
        id="unreachable",
    ),
    pytest.param(
        GoalUnverifiable(
            text="目标里有 1 条在这个环境里验证不了", unverifiable=["在 iOS 上跑"], total=3, path="/p"
        ),
        False,
        ["  ! 目标里有 1 条在这个环境里验证不了", "     - 在 iOS 上跑"],
        id="unverifiable checks, as soon as the goal is set",
    ),
    pytest.param(
        MailNote(text="顺便加个 X", state="queued", id="m1", amended="/p/需求.md"),
        False,
        ["+ 收到 (它下次查收件箱时会看到;已追加进确认书)"],
        id="mail that reached the brief",
    ),
    pytest.param(
        MailNote(text="顺便加个 X", state="queued", id="m2", amended=""),
        False,
        ["+ 收到 (它下次查收件箱时会看到;没有确认书可落盘 —— 它可能活不过下一个步骤)"],
        id="mail with no brief to land in",
    ),
    pytest.param(
        MailNote(text="顺便加个 X", state="delivered", id="m1", amended=""),
        False,
        ["  + 它看到了你补充的话:顺便加个 X"],
        id="mail the agent has read",
    ),
    pytest.param(TaskUpdate(text="TaskStartedMessage"), False, [], id="subagent bookkeeping is quiet"),
    pytest.param(SystemNote(text="init"), False, [], id="system messages are not shown"),
]


@pytest.mark.parametrize("event, verbose, lines", RENDERED)
def test_each_event_renders_as_a_person_reads_it(event: Event, verbose: bool, lines: list[str]):
    assert cli.Render(verbose=verbose).lines(event) == lines


def test_a_finished_round_shows_its_own_cost_and_the_time_so_far():
    r = cli.Render(started=time.monotonic() - 75)
    line = r.lines(Result(text="success", num_turns=4, cost_usd=0.0932))
    assert line == ["  + 完成 4 轮 · $0.0932 · 用时 1:15"]
    assert r.lines(Result(text="error_max_turns", is_error=True)) == ["  x 这一轮没跑完(error_max_turns)"]


def test_model_text_cannot_move_the_cursor_or_clear_the_screen():
    assert cli.sanitize("a\x1b[2J\x1b[Hb\x07c\x1b]0;title\x07d") == "abcd"


@pytest.mark.parametrize(
    "seconds, shown", [(0.04, "0.0s"), (3.24, "3.2s"), (59.9, "59.9s"), (125, "2:05"), (3725, "1:02:05")]
)
def test_durations(seconds: float, shown: str):
    assert cli.format_duration(seconds) == shown


def test_a_key_is_never_shown():
    assert cli.mask("sk-ant-api03-abcdefghijklmnop") == "sk-a***(共 29 位)"
    assert cli.mask("short") == "***(共 5 位)"


def test_the_status_line_names_the_round_and_the_context(here: Path):
    rt = runtime("once", "hi")
    driver = cli.Driver(rt, screen=capture_screen()[0], source=pipe_source(""))
    driver.on_event(
        ContextUpdate(
            text="context",
            used=80_200,
            window=1_000_000,
            at=950_000,
            warn_at=930_000,
            step="干活#round2",
            generation=1,
        )
    )
    assert driver.status_text().startswith("- 干活 第 2 轮 · 上下文 80.2K/1M · 累计 $0.00 · ")
    driver.on_event(SystemNote(text="init"))
    driver.on_event(Result(text="success", cost_usd=0.5, num_turns=1))
    assert driver.cost_so_far() == 0.5
    rt.close()


# -- the screen -------------------------------------------------------------------------------------


def test_a_live_screen_keeps_its_last_line_below_every_event_line():
    out, err = io.StringIO(), io.StringIO()
    screen = cli.Screen(out, err, live=True)
    screen.status("- 干活 · 累计 $0.10")
    screen.say("  * Read README.md")
    screen.open_prompt(cli.ANSWER_PROMPT)
    screen.typed("Post")
    assert out.getvalue() == "  * Read README.md\n"
    # the status line stays, the prompt under it
    assert err.getvalue().endswith("\r\x1b[K\x1b[A\r\x1b[K- 干活 · 累计 $0.10\n" + cli.ANSWER_PROMPT + "Post")
    screen.close_prompt(keep="Postgres")
    assert err.getvalue().endswith(cli.ANSWER_PROMPT + "Postgres\n- 干活 · 累计 $0.10")


def test_a_plain_screen_writes_plain_lines_only():
    screen, out, err = capture_screen()
    screen.status("- never shown")
    screen.say("line")
    screen.say("warn", err=True)
    assert (out.getvalue(), err.getvalue()) == ("line\n", "warn\n")


# -- what the person types while it runs -----------------------------------------------------------


async def test_typed_lines_answer_by_number_by_text_or_skip(here: Path):
    rt = runtime("once", "hi")
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, timeout_s=30)
    driver = cli.Driver(rt, screen=capture_screen()[0], source=pipe_source(""), channel=channel)

    async def ask_and_type(line: str, options: list[str]) -> Any:
        task = asyncio.create_task(channel.ask("选哪个?", options))
        await asyncio.wait_for(channel.next_ask(), 5)  # the question is waiting now
        await asyncio.to_thread(driver.handle_line, line)  # the reader thread's side
        return await asyncio.wait_for(task, 5)

    assert (await ask_and_type("2", ["A", "B"])).answer == "B"
    assert (await ask_and_type("7", ["A", "B"])).answer == "7"  # out of range: plain text
    assert (await ask_and_type("自己写的答案", ["A"])).answer == "自己写的答案"
    skipped = await ask_and_type("", ["A"])
    assert skipped.state == "declined"
    rt.close()


async def test_a_line_with_no_question_open_goes_to_the_inbox_and_the_brief(here: Path):
    rt = runtime("once", "hi")
    brief = here / "需求.md"
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, amend_path=brief)
    screen, out, _ = capture_screen()
    driver = cli.Driver(rt, screen=screen, source=pipe_source(""), channel=channel)
    channel.on_event = driver.on_event
    await asyncio.to_thread(driver.handle_line, "顺便报告总字节数")
    await asyncio.sleep(0.05)
    assert [m.text for m in channel.pending_mail()] == ["顺便报告总字节数"]
    assert "顺便报告总字节数" in brief.read_text(encoding="utf-8")
    assert "+ 收到 (它下次查收件箱时会看到;已追加进确认书)" in out.getvalue()
    rt.close()


async def test_closed_stdin_skips_questions_instead_of_waiting_them_out(here: Path):
    rt = runtime("once", "hi")
    channel = HumanChannel(timeout_s=600)
    source = pipe_source("")
    assert source.read_line() is None and source.closed
    driver = cli.Driver(rt, screen=capture_screen()[0], source=source, channel=channel)
    channel.on_event = driver.on_event
    waiting = asyncio.create_task(channel.ask("还在吗?"))
    started = time.monotonic()
    ask = await asyncio.wait_for(waiting, 5)
    assert ask.state == "declined" and time.monotonic() - started < 2
    rt.close()


def test_ctrl_c_asks_for_words_and_a_second_press_quits(here: Path):
    rt = runtime("once", "hi")
    screen, out, _ = capture_screen()
    driver = cli.Driver(rt, screen=screen, source=pipe_source("x\n"), channel=None)
    driver.ctrl_c()
    assert cli.INTERRUPT_ASK in out.getvalue() and not driver.quit_requested
    driver.handle_line("")  # Enter: say nothing, carry on
    assert ". 不说话,接着跑" in out.getvalue()
    driver._last_ctrl_c = 0.0  # long after the first press
    driver.ctrl_c()
    assert not driver.quit_requested
    driver.ctrl_c()  # again while asked for words
    assert driver.quit_requested
    rt.close()


# -- setup ------------------------------------------------------------------------------------------


def test_setup_writes_the_key_privately_and_keeps_other_lines(tmp_path: Path):
    env = tmp_path / ".env"
    env.write_text("# mine\nOTHER=1\nANTHROPIC_AUTH_TOKEN=old-gateway-token\n", encoding="utf-8")
    updates = cli.credential_updates(
        "sk-ant-new-key-0000000000", "https://gw.example.com/", cli.read_env_file(env)
    )
    cli.write_env_file(env, updates)
    assert env.read_text(encoding="utf-8").splitlines() == [
        "# mine",
        "OTHER=1",
        "ANTHROPIC_API_KEY=sk-ant-new-key-0000000000",
        "ANTHROPIC_BASE_URL=https://gw.example.com",
    ]
    assert stat.S_IMODE(env.stat().st_mode) == 0o600


def test_setup_input_rules():
    assert cli.credential_updates("gw-token-123", "", {}) == {
        "ANTHROPIC_AUTH_TOKEN": "gw-token-123",
        "ANTHROPIC_API_KEY": None,
    }
    assert cli.credential_updates("", "-", {"ANTHROPIC_BASE_URL": "x"}) == {"ANTHROPIC_BASE_URL": None}
    assert cli.credential_updates("  ", "  ", {}) == {}


def test_a_new_env_file_starts_with_a_warning_comment(tmp_path: Path):
    env = tmp_path / "sub" / ".env"
    cli.write_env_file(env, {"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert env.read_text(encoding="utf-8") == f"{cli.ENV_HEADER}\nANTHROPIC_API_KEY=sk-ant-x\n"
