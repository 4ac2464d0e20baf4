"""`flower go` ends with a handover to the next tool: through the real Claude Code CLI and
flower.sim, the run's final session writes it and both CLAUDE.md and AGENTS.md hold the block."""

from __future__ import annotations

import json

import pytest
from test_cli_e2e import cli_env, flower

from flower.core.handover import Handover
from flower.core.managed_block import BEGIN, END, read_block
from flower.sim.scenarios import starter_scenario

pytestmark = pytest.mark.e2e

MINE = "# 我的项目约定\n\n- 别动 vendor/\n- 提交前跑 make test\n"


def test_a_starter_run_hands_over_in_claude_md_and_agents_md_and_a_rerun_changes_nothing(
    sim_factory, claude_root, tmp_path
):
    sim = sim_factory(starter_scenario(verdicts=("achieved", "achieved", "achieved")))
    ws = tmp_path / "proj"
    ws.mkdir()
    (ws / "CLAUDE.md").write_text(MINE, encoding="utf-8")
    env = cli_env(sim, claude_root)

    first = flower("--timeout", "0", "写一个 hello.py,运行时打印问候语", cwd=ws, env=env)

    assert first.returncode == 0, first.stdout + first.stderr
    assert "<- 交接写进 CLAUDE.md(追加在末尾)、AGENTS.md(新建)" in first.stdout
    claude = (ws / "CLAUDE.md").read_text(encoding="utf-8")
    agents = (ws / "AGENTS.md").read_text(encoding="utf-8")
    assert claude.startswith(MINE + "\n" + BEGIN + "\n")  # every byte of the person's file kept
    assert agents.startswith(BEGIN + "\n") and agents.endswith(END + "\n")
    block = read_block(ws / "CLAUDE.md")
    assert block is not None and block == read_block(ws / "AGENTS.md")
    doc = Handover.parse(block)
    assert doc.complete() and not doc.degraded  # written by the run's own final session
    assert doc.what.startswith("一个 hello.py") and "notes/需求.md" in doc.workbench
    [asked] = sim.requests_for("handover")
    assert asked.headers.get("x-claude-code-session-id") == sim.requests_for("coordinator")[-1].headers.get(
        "x-claude-code-session-id"
    )  # the work step's session, resumed
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert [r["step"] for r in rows][-1] == "干活·交接给下一个工具"

    before = {name: (ws / name).read_bytes() for name in ("CLAUDE.md", "AGENTS.md")}
    again = flower(cwd=ws, env=env, stdin="")  # wake, carry on, hand over again

    assert again.returncode == 0, again.stdout + again.stderr
    assert "<- 交接写进 CLAUDE.md(和上次一样,没动)、AGENTS.md(和上次一样,没动)" in again.stdout
    assert {name: (ws / name).read_bytes() for name in before} == before

    off = flower("--no-handover", cwd=ws, env=env, stdin="")
    assert off.returncode == 0, off.stdout + off.stderr
    assert "交接给下一个工具" not in off.stdout and len(sim.requests_for("handover")) == 2
    assert {name: (ws / name).read_bytes() for name in before} == before


def test_a_run_that_cannot_ask_its_final_session_hands_over_mechanically(sim_factory, claude_root, tmp_path):
    # --clarify-only: a brief, no work session to ask; what flower knows still goes over, marked
    sim = sim_factory(starter_scenario())
    ws = tmp_path / "proj"
    ws.mkdir()
    done = flower(
        "--clarify-only", "--timeout", "0", "写一个 hello.py", cwd=ws, env=cli_env(sim, claude_root)
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "交接没写成(这次没有干活的会话可问)" in done.stderr
    block = read_block(ws / "AGENTS.md")
    assert block is not None and block == read_block(ws / "CLAUDE.md")
    doc = Handover.parse(block)
    assert doc.degraded and doc.complete() and doc.what == "写一个 hello.py,运行时打印问候语。"
    assert sim.requests_for("handover") == []
