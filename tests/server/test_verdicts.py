"""Verdicts as diagnostics on 目标.md over LSP (scripted engine): the lines of the failed checks,
severity by state, cleared on achieved, unverifiable checks when the goal is set, and the code
actions of an unreachable verdict answering the engine's question."""

from __future__ import annotations

from pathlib import Path

from fake_engine import read_log
from lsprotocol import types

from flower.workflow.goal import ACCEPT, AMEND, WRONG

GOAL = (
    "# 目标\n交付能运行的 hello.py。\n\n# 判定清单\n"
    "- 运行 `python3 hello.py` 输出 hello\n"  # line 4
    "- 工作区根目录有 README.md\n"  # line 5
    "- 在 Windows 上也能跑 [此环境无法验证:这里只有 Linux]\n"  # line 6
)


def goal_path(workspace: Path) -> Path:
    return workspace / ".flower" / "notes" / "目标.md"


def lines(
    diags: list[types.Diagnostic],
) -> list[tuple[int, types.DiagnosticSeverity | None, int | str | None]]:
    return [(d.range.start.line, d.severity, d.code) for d in diags]


async def test_each_round_marks_the_failed_checks_and_achieved_clears_them(fake_lsp, script, workspace):
    script(
        [
            {"goal": GOAL},
            {
                "verdict": {
                    "state": "not_yet",
                    "reason": "没有 README.md",
                    "failed": ["工作区根目录有 README.md"],
                    "round": 1,
                }
            },
            {"mark": "round 1 judged"},
            {"sleep": 0.3},
            {
                "verdict": {
                    "state": "not_yet",
                    "reason": "两条都没过",
                    "failed": ["第 1 条", "工作区根目录有 README.md"],
                    "round": 2,
                }
            },
            {"sleep": 0.3},
            {"verdict": {"state": "achieved", "reason": "都过了", "failed": [], "round": 3}},
        ]
    )
    path = goal_path(workspace)
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        info = (6, types.DiagnosticSeverity.Information, "unverifiable")
        warn = types.DiagnosticSeverity.Warning
        assert [lines(d) for d in s.history(path)] == [
            [info],  # the goal was set: its unverifiable check is known at once
            [(5, warn, "not_yet"), info],
            [(4, warn, "not_yet"), (5, warn, "not_yet"), info],
            [info],  # achieved: the verdict's marks are gone
        ]
        first = s.history(path)[1][0]
        assert (
            first.source == "flower"
            and "Judge round 1" in first.message
            and "没有 README.md" in first.message
        )
        assert first.range.end.character == len("- 工作区根目录有 README.md")
        state = await s.state()
        assert state["verdict"]["state"] == "achieved" and state["verdict"]["round"] == 3


async def test_an_unreachable_verdict_offers_the_three_choices_and_one_answers_the_engine(
    fake_lsp, script, workspace
):
    script(
        [
            {"goal": GOAL},
            {
                "verdict": {
                    "state": "unreachable",
                    "reason": "这里验证不了",
                    "failed": ["在 Windows 上也能跑 [此环境无法验证:这里只有 Linux]"],
                    "round": 1,
                }
            },
            {
                "ask": {
                    "question": "判定者认为这个目标在当前环境下验证不了:这里验证不了\n要怎么办?",
                    "options": [ACCEPT, AMEND, WRONG],
                }
            },
            {"mark": "after the question"},
        ]
    )
    path = goal_path(workspace)
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.asks, what="the unreachable question")
        [error] = [d for d in s.diagnostics(path) if d.code == "unreachable"]
        assert error.severity == types.DiagnosticSeverity.Error and error.range.start.line == 6

        request = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            range=types.Range(
                start=types.Position(line=6, character=2), end=types.Position(line=6, character=2)
            ),
            context=types.CodeActionContext(diagnostics=[error]),
        )
        actions = await s.client.text_document_code_action_async(request)
        assert [a.title for a in actions] == [f"Flower: {ACCEPT}", f"Flower: {AMEND}", f"Flower: {WRONG}"]
        assert all(
            a.kind == types.CodeActionKind.QuickFix and list(a.diagnostics) == [error] for a in actions
        ), actions[0]
        # elsewhere in the file there is nothing to offer
        elsewhere = types.CodeActionParams(
            text_document=request.text_document,
            range=types.Range(
                start=types.Position(line=1, character=0), end=types.Position(line=1, character=0)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
        assert list(await s.client.text_document_code_action_async(elsewhere)) == []

        chosen = actions[2].command
        result = await s.command(chosen.command, *chosen.arguments)
        assert result["ok"] is True
        await s.until(lambda: s.run_phase() == "finished")
        assert [(e["state"], e["answer"]) for e in read_log(s.run_dir) if "ask" in e] == [("answered", WRONG)]
        # answered: the question is gone, and so are the actions
        assert list(await s.client.text_document_code_action_async(request)) == []
