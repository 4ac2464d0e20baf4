"""The judge's evidence in the editor (issue 25), through the real engine, the real Claude Code CLI
(which runs the judge's tools) and flower.sim as the model: a failed check's diagnostic on
目标.md links to the file and line the judge read, a hover on a checklist line shows how the last
verdict judged it (the command and its exit code, the file and lines read), and a 达成 without
evidence is marked as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clients import vscode_capabilities
from lsprotocol import types

from flower.sim.scenarios import (
    BARE_VERDICTS,
    CHECKS,
    RAN_GOAL,
    RAN_VERDICTS,
    RUN_AND_READ,
    judge_runs_scenario,
    judged,
)

RUN_S = 180.0
DASH = "\u2013"  # the en dash of a line range, as the English messages write it
OPTIONS = {"timeout_s": 60, "judge_can_run": True}


def goal_of(workspace: Path) -> Path:
    return workspace / ".flower" / "notes" / "目标.md"


def line_of(goal: Path, check: str) -> int:
    return goal.read_text(encoding="utf-8").splitlines().index(f"- {check}")


async def run_to_end(s: Any) -> None:
    assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
    await s.until(lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the run to end")
    assert s.run_phase() == "finished", s.events_of("run")[-1]


async def verdicts_of(s: Any) -> list[dict[str, Any]]:
    """Every verdict of the folder's history (flower/history), in order."""
    h = await s.request("flower/history", {})
    return [r["verdict"] for w in h["wakes"] for st in w["steps"] for r in st["rounds"] if r["verdict"]]


async def verdicts_after_restart(sim_lsp: Any, sim: Any) -> list[dict[str, Any]]:
    async with sim_lsp(sim, options=OPTIONS) as s:
        return await verdicts_of(s)


async def hover(s: Any, path: Path, line: int) -> str | None:
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        position=types.Position(line=line, character=3),
    )
    got = await s.client.text_document_hover_async(params)
    if got is None:
        return None
    assert isinstance(got.contents, types.MarkupContent) and got.contents.kind == types.MarkupKind.Markdown
    return got.contents.value


@pytest.mark.e2e
async def test_a_failed_checks_diagnostic_links_to_what_the_judge_read_and_a_hover_shows_its_command(
    sim_factory, sim_lsp, workspace
):
    sim = sim_factory(judge_runs_scenario())
    async with sim_lsp(sim, options=OPTIONS) as s:
        await run_to_end(s)
        goal = goal_of(workspace)
        readme = workspace / "README.md"
        [rejected] = [d for d in s.history(goal) if any(x.code == "not_yet" for x in d)]
        [failed] = [d for d in rejected if d.code == "not_yet"]
        assert failed.range.start.line == line_of(goal, CHECKS[1])
        assert failed.message.startswith(f"Judge round 1, not passed: {CHECKS[1]}")
        # the evidence, one click away: the file and lines the judge read
        [read] = failed.related_information or []
        assert read.location.uri == readme.as_uri()
        # README.md is three lines and a newline: the CLI's Read counts the empty fourth
        assert (read.location.range.start.line, read.location.range.end.line) == (0, 3)
        assert read.message == f"judge read lines 1{DASH}4"
        assert s.history(goal)[-1] == []  # round 2 achieved: the marks are gone

        # the hover on the first check: the command the last verdict ran, its exit code, its output
        text = await hover(s, goal, line_of(goal, CHECKS[0]))
        assert text is not None
        assert text.startswith("**Flower** · judge round 2: **passed**")
        assert "ran `python3 hello.py`, exit code 0" in text and "```text\nhello\n```" in text
        assert "The judge's basis: 跑了 `python3 hello.py`" in text
        # on the second: the file and the lines read, linked
        text = await hover(s, goal, line_of(goal, CHECKS[1]))
        assert text is not None and f"read [README.md]({readme.as_uri()}#L1), lines 1{DASH}4" in text
        # a line that is no check has no hover
        assert await hover(s, goal, 1) is None

        # the history says per check how each verdict judged it: one rule, the server's
        states = [[(e["check"], e["state"]) for e in v["evidence"]] for v in await verdicts_of(s)]
        assert states == [
            [(CHECKS[0], "passed"), (CHECKS[1], "failed"), (CHECKS[2], "passed")],
            [(c, "passed") for c in CHECKS],
        ]

    # a restarted server reads the last verdict from the folder's history
    async with sim_lsp(sim, options=OPTIONS) as again:
        text = await hover(again, goal, line_of(goal, CHECKS[0]))
        assert text is not None and "ran `python3 hello.py`, exit code 0" in text


@pytest.mark.e2e
async def test_an_editor_opened_on_a_run_that_ended_short_of_its_goal_shows_its_marks_and_their_evidence(
    sim_factory, sim_lsp, workspace
):
    # every round is judged not_yet on README.md: whichever round the stop lands after, the last
    # verdict on disk is a not_yet with its evidence
    sim = sim_factory(judge_runs_scenario([RUN_AND_READ, {"text": RAN_VERDICTS["not_yet"]}] * 4))
    async with sim_lsp(sim, options=OPTIONS) as s:
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        goal = goal_of(workspace)
        await s.until(lambda: any(d for d in s.history(goal)), RUN_S, what="the first verdict's marks")
        await s.command("flower.stop", {})
        await s.until(lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the stop")
    [*_, last] = [v for v in await verdicts_after_restart(sim_lsp, sim) if v["state"]]

    async with sim_lsp(sim, options=OPTIONS) as again:
        # nothing runs: the marks come from the folder's history, published once the server is up
        [marks] = await again.until(lambda: [d for d in again.history(goal) if d], 30, what="restored marks")
        [failed] = marks
        assert failed.range.start.line == line_of(goal, CHECKS[1])
        assert failed.message.startswith(f"Judge round {last['round']}, not passed: {CHECKS[1]}")
        [read] = failed.related_information or []
        assert read.location.uri == (workspace / "README.md").as_uri()
        assert read.message == f"judge read lines 1{DASH}4"
        # and the hover on the first check says what backs it: the command and its exit code
        text = await hover(again, goal, line_of(goal, CHECKS[0]))
        assert text is not None and text.startswith(f"**Flower** · judge round {last['round']}: **passed**")
        assert "ran `python3 hello.py`, exit code 0" in text


@pytest.mark.e2e
async def test_an_editor_opened_on_a_finished_run_publishes_no_marks(sim_factory, sim_lsp, workspace):
    sim = sim_factory(judge_runs_scenario())
    async with sim_lsp(sim, options=OPTIONS) as s:
        await run_to_end(s)
    async with sim_lsp(sim, options=OPTIONS) as again:
        goal = goal_of(workspace)
        # the history is read once the server is up: when the hover answers, the restore is done
        text = await hover(again, goal, line_of(goal, CHECKS[1]))
        assert text is not None and "judge round 2: **passed**" in text
        assert not [d for d in again.history(goal) if d]  # the last verdict achieved: nothing to mark


@pytest.mark.e2e
async def test_an_achieved_verdict_without_evidence_is_marked_no_evidence_on_every_check(
    sim_factory, sim_lsp, workspace
):
    # round 1: 达成 with nothing run and nothing read; round 2: the judge reads first
    sim = sim_factory(judge_runs_scenario([{"text": BARE_VERDICTS["achieved"]}, *judged("achieved")]))
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        await run_to_end(s)
        goal = goal_of(workspace)
        [first, *_] = [d for d in s.history(goal) if d]
        [bare, proven] = await verdicts_of(s)
        assert [e["state"] for e in bare["evidence"]] == ["no_evidence"] * len(CHECKS)
        assert [e["state"] for e in proven["evidence"]] == ["passed"] * len(CHECKS)
        assert sorted(d.range.start.line for d in first) == [line_of(goal, c) for c in CHECKS]
        for d in first:
            assert d.severity == types.DiagnosticSeverity.Warning
            assert d.message.startswith("Judge round 1, no evidence: ")
            assert "ran no command and read no file" in d.message
            assert not d.related_information  # nothing to point at
        # the last verdict read hello.py: the hover says so, with the file linked
        text = await hover(s, goal, line_of(goal, CHECKS[0]))
        hello = workspace / "hello.py"
        assert text is not None and text.startswith("**Flower** · judge round 2: **passed**")
        assert f"read [hello.py]({hello.as_uri()}#L1), lines 1{DASH}" in text


async def test_the_server_declares_hover(fake_lsp, workspace):
    async with fake_lsp(initialize=False) as s:
        result = await s.client.initialize_session(
            types.InitializeParams(
                capabilities=vscode_capabilities(),
                root_uri=workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
            )
        )
        assert result.capabilities.hover_provider
        await s.client.shutdown_session()


def test_a_commands_evidence_points_at_the_file_it_names_else_at_the_check(english, tmp_path):
    from flower.core.evidence import Evidence
    from flower_lsp import protocol as p
    from flower_lsp.diagnostics import verdict_diagnostics

    (tmp_path / "hello.py").write_text('print("hello")\n', encoding="utf-8")
    goal = tmp_path / "目标.md"
    goal.write_text(RAN_GOAL, encoding="utf-8")
    verdict = p.VerdictInfo(state="not_yet", reason="", failed=list(CHECKS), round=2, goal_path=str(goal))
    evidence = [
        Evidence(CHECKS[0], "command", "python3 hello.py", 1, "Traceback …", backed=True),
        Evidence(CHECKS[1], "command", "grep -c Run README.md", 1, "", backed=True),  # no such file here
        Evidence(CHECKS[2], "command", "python3 -c 'import ast'"),  # cited, never run
    ]
    ran, grep, cited = verdict_diagnostics(
        verdict, RAN_GOAL, folder="f", evidence=evidence, root=tmp_path, goal=goal
    )
    [at_file] = ran.related_information or []
    assert at_file.location.uri == (tmp_path / "hello.py").as_uri() and at_file.location.range.start.line == 0
    assert at_file.message == "judge ran `python3 hello.py` → exit 1: Traceback …"
    [at_check] = grep.related_information or []
    assert at_check.location.uri == goal.resolve().as_uri() and at_check.location.range == grep.range
    assert at_check.message == "judge ran `grep -c Run README.md` → exit 1"
    [unbacked] = cited.related_information or []
    assert unbacked.location.range == cited.range and "never" in unbacked.message
