"""The handover to the next tool: the document (five sections, two required, a degraded
mechanical fallback) and the managed block it lives in, in CLAUDE.md and AGENTS.md."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flower.core.brief import Brief
from flower.core.goal import Goal, Verdict
from flower.core.handoff import Handoff
from flower.core.handover import DEGRADED, HANDOVER_PROMPT, Handover, mechanical, workbench_guide
from flower.core.managed_block import BEGIN, END, place_block, read_block
from flower.core.runtime import Runtime
from flower.core.workbench import Workbench
from flower.sim.scenarios import BRIEF, GOAL, HANDOVER, VERDICTS
from flower.workflow.handover import hand_over

BODY = "## flower 交接\n\n### 这是什么项目\n一个 hello.py\n"
OTHER = "## flower 交接\n\n### 这是什么项目\n一个 bye.py\n"
BLOCK = f"{BEGIN}\n{BODY.rstrip()}\n{END}\n"


def test_a_missing_file_becomes_just_the_block(tmp_path: Path):
    path = tmp_path / "CLAUDE.md"
    assert place_block(path, BODY) == "created"
    assert path.read_text(encoding="utf-8") == BLOCK


MINE = [
    pytest.param(
        b"# My notes\n\nUse tabs.\n", b"\n", id="ends with a newline: a blank line before the block"
    ),
    pytest.param(b"# My notes\nno newline at the end", b"\n\n", id="no final newline: one is added"),
    pytest.param(b"# Windows\r\nline two\r\n", b"\n", id="CRLF lines are kept"),
    pytest.param("# 中文说明\n不要改 vendor/\n".encode(), b"\n", id="chinese text"),
    pytest.param(b"# latin-1 \xe9t\xe9\n", b"\n", id="bytes that are not UTF-8 come back as they were"),
    pytest.param(b"", b"", id="an empty file"),
]


@pytest.mark.parametrize("mine, gap", MINE)
def test_an_existing_file_keeps_every_byte_and_gets_the_block_appended(
    tmp_path: Path, mine: bytes, gap: bytes
):
    path = tmp_path / "AGENTS.md"
    path.write_bytes(mine)
    assert place_block(path, BODY) == "appended"
    assert path.read_bytes() == mine + gap + BLOCK.encode()


def test_a_rerun_with_the_same_block_leaves_the_file_byte_identical(tmp_path: Path):
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"# mine\n")
    place_block(path, BODY)
    before, stamp = path.read_bytes(), path.stat().st_mtime_ns
    assert place_block(path, BODY) == "unchanged"
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stamp  # not even rewritten


def test_a_rerun_replaces_only_what_is_between_the_markers(tmp_path: Path):
    path = tmp_path / "CLAUDE.md"
    head, tail = b"# mine, before\n\n", b"\n## mine, after\nkeep this \xff byte\n"
    path.write_bytes(head + BLOCK.encode() + tail)
    assert place_block(path, OTHER) == "replaced"
    assert path.read_bytes() == head + f"{BEGIN}\n{OTHER.rstrip()}\n{END}\n".encode() + tail
    assert read_block(path) == OTHER.rstrip() + "\n"


BROKEN = [
    pytest.param(f"# mine\n{BEGIN}\nhalf a block\n", id="an orphan begin"),
    pytest.param(f"# mine\nhalf a block\n{END}\n", id="an orphan end"),
    pytest.param(f"# mine\n{END}\nbetween\n{BEGIN}\n", id="the end before the begin"),
    pytest.param(f"{BEGIN}\none\n{END}\n# mine\n{BEGIN}\ntwo\n{END}\n", id="two pairs"),
    pytest.param(f"{BEGIN}\n{BEGIN}\nx\n{END}\n", id="two begins"),
]


@pytest.mark.parametrize("mine", BROKEN)
def test_broken_markers_never_delete_anything_the_block_is_appended(tmp_path: Path, mine: str):
    path = tmp_path / "CLAUDE.md"
    path.write_text(mine, encoding="utf-8")
    assert place_block(path, BODY) == "appended-after-broken-markers"
    assert path.read_text(encoding="utf-8") == mine + "\n" + BLOCK


def test_a_marker_quoted_inside_a_line_is_not_a_marker(tmp_path: Path):
    path = tmp_path / "CLAUDE.md"
    mine = f"flower writes its block between `{BEGIN}` and `{END}`.\n"
    path.write_text(mine, encoding="utf-8")
    assert place_block(path, BODY) == "appended"
    assert place_block(path, OTHER) == "replaced"
    assert path.read_text(encoding="utf-8").startswith(mine)


def test_permissions_are_kept_and_a_symlink_is_followed(tmp_path: Path):
    claude, agents = tmp_path / "CLAUDE.md", tmp_path / "AGENTS.md"
    claude.write_text("# mine\n", encoding="utf-8")
    claude.chmod(0o640)
    agents.symlink_to("CLAUDE.md")
    assert place_block(claude, BODY) == "appended"
    assert place_block(agents, BODY) == "unchanged"  # the same file, already holding the block
    assert agents.is_symlink() and stat.S_IMODE(claude.stat().st_mode) == 0o640


# -- the document --------------------------------------------------------------------------------


def test_a_reply_with_the_five_sections_parses_complete():
    doc = Handover.parse(HANDOVER)
    assert doc.complete() and not doc.degraded
    assert doc.what.startswith("一个 hello.py") and doc.workbench.startswith(".flower/")
    assert doc.generated == "无" and "README.md" in doc.acceptance


def test_only_what_and_workbench_are_required():
    doc = Handover.parse("## 这是什么项目\n一个 CLI\n\n## 工作台\n.flower/")
    assert doc.complete() and doc.deadends == "" and doc.generated == ""
    assert Handover.parse("## 这是什么项目\n一个 CLI").missing() == ["工作台(在哪、怎么读)"]
    assert Handover.parse("## 工作台\n.flower/").missing() == ["这是什么项目"]


def test_the_block_reads_back_as_the_same_document():
    doc = Handover.parse(HANDOVER)
    again = Handover.parse(doc.to_markdown())
    assert again == doc and again.to_markdown() == doc.to_markdown()
    assert "### 走过的死路\n无" in doc.to_markdown()


def test_a_model_cannot_break_the_markers():
    doc = Handover.parse(f"## 这是什么项目\nx\n{END}\n\n## 工作台\n{BEGIN} y\n.flower/")
    assert BEGIN not in doc.to_markdown() and END not in doc.to_markdown()
    assert doc.what == "x" and doc.workbench == ".flower/"


def test_the_prompt_names_the_workbench_and_the_five_headings():
    prompt = HANDOVER_PROMPT.format(workbench="/ws/.flower")
    assert "/ws/.flower" in prompt
    assert all(f"## {h}" in prompt for h in ("这是什么项目", "走过的死路"))
    assert Handover.parse(prompt.replace("(必填)", "")).complete()  # its own headings parse


def workbench(tmp_path: Path) -> Workbench:
    wb = Workbench(tmp_path / "ws")
    wb.ensure()
    return wb


def test_the_mechanical_handover_says_what_flower_knows_and_is_marked_degraded(tmp_path: Path):
    wb = workbench(tmp_path)
    (wb.notes / "需求.md").write_text("x", encoding="utf-8")
    doc = mechanical(
        brief=Brief.parse(BRIEF),
        goal=Goal.parse(GOAL),
        verdict=Verdict.parse(VERDICTS["not_yet"]),
        rounds=2,
        handoff=Handoff(doing="d", next="n", deadends="改 include 顺序无效"),
        workbench_root=wb.root,
        workspace=wb.workspace,
        why="它写的缺了:工作台",
    )
    assert doc.degraded and doc.complete()
    assert doc.what == "写一个 hello.py,运行时打印问候语。"
    assert doc.acceptance.startswith("最后一次判定(第 2 轮):未达成 —— hello.py 能运行,但没有 README.md。")
    assert "- [ ] 工作区根目录有 README.md,写了怎么运行" in doc.acceptance
    assert "- 运行 `python3 hello.py` 输出 hello" in doc.acceptance  # not listed as failed
    assert doc.deadends == "改 include 顺序无效"
    assert ".flower/" in doc.generated
    text = doc.to_markdown()
    assert f"> {DEGRADED}(它写的缺了:工作台)" in text
    assert Handover.parse(text).degraded


def test_the_workbench_guide_lists_only_what_is_there(tmp_path: Path):
    wb = workbench(tmp_path)
    (wb.notes / "需求.md").write_text("x", encoding="utf-8")
    (wb.notes / "交接-干活.md").write_text("x", encoding="utf-8")
    guide = workbench_guide(wb.root, wb.workspace)
    assert guide.startswith(f"在 .flower/(绝对路径 {wb.root})")
    assert "notes/需求.md" in guide and "notes/目标.md" not in guide and "notes/交接-干活.md" in guide


async def test_without_a_session_the_run_hands_over_mechanically_in_both_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-test-key-0123456789")
    wb = workbench(tmp_path)
    Brief.parse(BRIEF).write(wb.notes / "需求.md")
    (wb.workspace / "CLAUDE.md").write_text("# 我的规矩\n别动 vendor/\n", encoding="utf-8")
    rt = Runtime(workspace=wb.workspace, run_dir=tmp_path / "runs", workbench=wb)
    try:
        report = await hand_over(rt, {}, workbench=wb, spec=None, step="干活")
    finally:
        rt.close()
    assert report is not None and report.handover.degraded and not report.failed
    claude = (wb.workspace / "CLAUDE.md").read_text(encoding="utf-8")
    agents = (wb.workspace / "AGENTS.md").read_text(encoding="utf-8")
    assert claude.startswith("# 我的规矩\n别动 vendor/\n\n" + BEGIN)
    assert read_block(wb.workspace / "CLAUDE.md") == read_block(wb.workspace / "AGENTS.md")
    assert agents.startswith(BEGIN) and "没有干活的会话可问" in agents
    assert not rt.results  # no model was asked


async def test_without_a_brief_there_is_nothing_to_hand_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-test-key-0123456789")
    wb = workbench(tmp_path)
    rt = Runtime(workspace=wb.workspace, run_dir=tmp_path / "runs", workbench=wb)
    try:
        assert await hand_over(rt, {}, workbench=wb, spec=None, step="干活") is None
    finally:
        rt.close()
    assert not any(p.name in ("CLAUDE.md", "AGENTS.md") for p in os.scandir(wb.workspace))


async def test_a_flow_without_a_workbench_has_nothing_to_hand_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`go` ends on the handover; a flow with no workbench has no brief to read it from: said as
    an unconfirmed brief, where it used to fail on the missing workbench's notes."""
    import io

    from flower.cli.handover import NO_BRIEF, hand_over_on_screen
    from flower.cli.terminal import Screen
    from flower.workflow.base import Workflow

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-test-key-0123456789")
    wb = workbench(tmp_path)
    Brief.parse(BRIEF).write(wb.notes / "需求.md")
    out, err = io.StringIO(), io.StringIO()
    rt = Runtime(workspace=wb.workspace, run_dir=tmp_path / "runs", workbench=wb)
    try:
        refused = await hand_over_on_screen(
            Workflow([]), rt, {}, screen=Screen(out, err, live=False), on_event=lambda event: None
        )
    finally:
        rt.close()
    assert refused is None and NO_BRIEF.strip() in out.getvalue()
    assert not any(p.name in ("CLAUDE.md", "AGENTS.md") for p in os.scandir(wb.workspace))
