"""The judge's evidence: the verdict's fourth section parsed, linked to the recorded trail, and the
rule that an achieved verdict needs every check backed (core/evidence.py, core/goal.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from flower.base.secrets import MASK
from flower.core.evidence import (
    EXCERPT_CHARS,
    Evidence,
    EvidenceKind,
    Trail,
    TrailCall,
    TrailRecorder,
    check_line,
    evidence_policy,
    link,
)
from flower.core.goal import ACHIEVED, NOT_YET, Goal, Verdict, check_states

CHECKS = [
    "运行 `python3 hello.py` 输出 hello",
    "工作区根目录有 README.md,写了怎么运行",
    "hello.py 只用标准库",
]
GOAL = Goal(statement="交付 hello.py", checks=list(CHECKS))
RAN = TrailCall(tool="Bash", command="python3 hello.py", exit_code=0, excerpt="hello", ran=True)
READ = TrailCall(tool="Read", path="README.md", line=1, end_line=3, excerpt="Run: python3 hello.py", ran=True)
READ_PY = TrailCall(tool="Read", path="hello.py", line=1, end_line=1, excerpt='print("hello")', ran=True)
TRAIL = Trail((RAN, READ, READ_PY))
THREE = "## 结论\n达成\n\n## 理由\nhello.py 输出 hello。\n\n## 未通过\n无"
NOT_YET_WITH_EVIDENCE = (
    f"## 结论\n未达成\n\n## 理由\nREADME.md 没写怎么运行。\n\n## 未通过\n- {CHECKS[1]}\n\n## 证据\n"
    "1. 跑了 `python3 hello.py`(退出码 0)\n2. 读了 README.md\n3. 读了 hello.py\n"
)


def test_the_seeds_three_sections_parse_as_before_with_no_evidence() -> None:
    verdict = Verdict.parse(THREE)
    assert (verdict.state, verdict.reason, verdict.failed) == (ACHIEVED, "hello.py 输出 hello。", [])
    assert verdict.basis == [] and verdict.evidence == [] and verdict.unproven == []
    failing = Verdict.parse("## 结论\n未达成\n## 理由\n缺 README。\n## 未通过\n- 工作区根目录有 README.md\n")
    assert failing.state == NOT_YET and failing.failed == ["工作区根目录有 README.md"]


def test_the_fourth_section_is_read_line_by_line_under_its_aliases() -> None:
    lines = [f"- {CHECKS[0]} — 跑了 `python3 hello.py`,退出码 0", f"- {CHECKS[1]} — 读了 README.md 第 1-3 行"]
    for heading in ("## 证据", "## Evidence", "### 证据清单", "**证据**"):
        verdict = Verdict.parse(THREE + f"\n\n{heading}\n" + "\n".join(lines))
        assert verdict.basis == lines, heading
        assert verdict.state == ACHIEVED and verdict.failed == []  # the three sections unchanged


def test_a_verdict_whose_every_check_is_backed_stays_achieved() -> None:
    text = THREE + (
        "\n\n## 证据\n"
        f"1. 跑了 `python3 hello.py`(退出码 0)\n"
        f"2. {CHECKS[1]}:读了 README.md\n"
        f"3. 读了 hello.py,没有 import\n"
    )
    verdict = Verdict.parse(text).prove(GOAL, TRAIL)
    assert verdict.state == ACHIEVED and verdict.unproven == [] and verdict.claimed == ""
    first, second, third = verdict.evidence
    assert (first.kind, first.command, first.exit_code, first.backed) == (
        "command",
        "python3 hello.py",
        0,
        True,
    )
    assert (second.kind, second.path, second.line, second.end_line) == ("read", "README.md", 1, 3)
    assert third.check == CHECKS[2] and third.path == "hello.py" and third.backed


def test_an_achieved_verdict_that_looked_at_nothing_is_not_achieved() -> None:
    verdict = Verdict.parse(THREE).prove(GOAL, Trail())
    assert verdict.state == NOT_YET and verdict.claimed == ACHIEVED
    assert verdict.unproven == CHECKS and verdict.failed == CHECKS
    assert [e.kind for e in verdict.evidence] == ["none"] * 3
    feedback = verdict.feedback()
    assert "没有证据" in feedback and all(f"- {c}" in feedback for c in CHECKS)


def test_a_command_it_never_ran_or_a_file_it_never_read_is_unbacked() -> None:
    text = THREE + (
        "\n\n## 证据\n"
        f"- {CHECKS[0]} — 跑了 `python3 hello.py --check`\n"  # it ran `python3 hello.py` only
        f"- {CHECKS[1]} — 读了 docs/USAGE.md\n"
        f"- {CHECKS[2]} — 读了 hello.py\n"
    )
    verdict = Verdict.parse(text).prove(GOAL, TRAIL)
    assert verdict.state == NOT_YET and verdict.unproven == CHECKS[:2]
    ran, read, backed = verdict.evidence
    assert (ran.kind, ran.command, ran.backed) == ("command", "python3 hello.py --check", False)
    assert (read.kind, read.path, read.backed) == ("read", "docs/USAGE.md", False)
    assert backed.backed


def test_a_refused_call_backs_nothing() -> None:
    refused = Trail((TrailCall(tool="Bash", command="python3 hello.py", ran=False),))
    verdict = Verdict.parse(THREE + f"\n\n## 证据\n- {CHECKS[0]} — 跑了 `python3 hello.py`").prove(
        Goal(statement="x", checks=[CHECKS[0]]), refused
    )
    assert verdict.state == NOT_YET and not verdict.evidence[0].backed


def test_an_unverifiable_check_is_never_met_even_when_relaxed() -> None:
    marked = "在 macOS 终端直接运行 [此环境无法验证:这里是 Linux]"
    goal = Goal(statement="x", checks=[CHECKS[0], marked])
    text = THREE + f"\n\n## 证据\n- {CHECKS[0]} — 跑了 `python3 hello.py`\n- {marked} — 读了 hello.py"
    strict = Verdict.parse(text).prove(goal, TRAIL)
    assert strict.state == NOT_YET and strict.unproven == [marked]
    assert strict.evidence[1].kind == "unverifiable" and not strict.evidence[1].backed
    relaxed = Verdict.parse(text).prove(goal, TRAIL, strict=False)
    assert relaxed.state == NOT_YET and relaxed.unproven == [marked]


def test_relaxed_takes_the_judges_word_for_unbacked_checks() -> None:
    verdict = Verdict.parse(THREE).prove(GOAL, Trail(), strict=False)
    assert verdict.state == ACHIEVED and verdict.unproven == []
    assert [e.backed for e in verdict.evidence] == [False] * 3  # still said as it is


@pytest.mark.parametrize(
    "line",
    [
        "* 第1条:`python3 hello.py` 退出码 0",  # numbered the Chinese way, a star for a bullet
        f"  {CHECKS[0]}: ran python3 hello.py",  # no backticks, an English colon
        f"[x] {CHECKS[0]} -- 跑了 `python3  hello.py`",  # a checkbox, a double hyphen, extra spaces
        "1) 跑了 `python3 hello.py`",
    ],
)
def test_odd_formatting_still_links(line: str) -> None:
    [evidence] = link([CHECKS[0]], [line], TRAIL)
    assert evidence.backed and evidence.kind == "command" and evidence.command == "python3 hello.py"


def test_lines_without_numbers_or_names_go_by_order() -> None:
    evidence = link(CHECKS, ["跑了 `python3 hello.py`", "看了 README.md", "看了 hello.py"], TRAIL)
    assert [e.backed for e in evidence] == [True, True, True]
    assert [e.kind for e in evidence] == ["command", "read", "read"]


def test_a_search_backs_a_check_that_cites_its_pattern() -> None:
    grep = TrailCall(tool="Grep", pattern="^import ", path=".", hits=0, ran=True)
    [evidence] = link([CHECKS[2]], ["搜了 `^import `,0 处"], Trail((grep,)))
    assert (evidence.kind, evidence.pattern, evidence.hits, evidence.backed) == (
        "search",
        "^import ",
        0,
        True,
    )


def test_values_round_trip_through_json_and_partial_ones_default() -> None:
    evidence = link(CHECKS, ["跑了 `python3 hello.py`"], TRAIL)
    assert [Evidence.from_json(e.to_json()) for e in evidence] == evidence
    assert Trail.from_json(TRAIL.to_json()) == TRAIL
    assert Evidence.from_json({"check": "c", "kind": "bogus", "line": "3"}) == Evidence(check="c")
    assert Evidence(check="only this").kind == "none" and not Evidence().backed


def test_every_field_round_trips_and_an_ill_typed_one_gets_its_default() -> None:
    # from_json names each field: a field it forgot would come back as its default here
    full = Evidence("c", "read", "cmd", 2, "ex", "a.py", 3, 9, "pat", 4, True, "basis")
    call = TrailCall("Read", "sum", "cmd", 1, "ex", "a.py", 3, 9, "pat", 4, True)
    assert Evidence.from_json(full.to_json()) == full and TrailCall.from_json(call.to_json()) == call
    wrong: dict[str, object] = {"exit_code": True, "line": 3.0, "backed": 1, "ran": "yes", "check": 7}
    assert Evidence.from_json(wrong) == Evidence() and TrailCall.from_json(wrong) == TrailCall()
    assert Evidence.from_json([full.to_json()]) == Evidence() and Trail.from_json({"calls": []}) == Trail()


@dataclass
class _Event:  # what the Runtime's events carry, by field (the recorder reads no more)
    kind: str
    tool: str = ""
    id: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str = ""
    text: str = ""
    is_error: bool = False
    subagent: bool = False
    raw: Any = None


def test_the_recorder_pairs_calls_with_results_and_scrubs_and_bounds_excerpts(tmp_path) -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 4
    recorder = TrailRecorder(tmp_path)
    recorder.observe(_Event("tool_call", tool="Bash", id="t1", input={"command": "env"}))
    recorder.observe(
        _Event("tool_result", tool_use_id="t1", text=f"ANTHROPIC_API_KEY={secret}\n" + "x" * 900)
    )
    recorder.observe(_Event("tool_call", tool="Bash", id="t2", input={"command": "false"}))
    recorder.observe(_Event("tool_result", tool_use_id="t2", text="Exit code 1\n", is_error=True))
    recorder.observe(_Event("tool_call", tool="Read", id="t3", input={"file_path": str(tmp_path / "a.py")}))
    recorder.observe(_Event("tool_result", tool_use_id="t3", text="     1\u2192x = 1\n     2\u2192y = 2"))
    recorder.observe(_Event("tool_call", tool="Bash", id="t4", input={"command": "ls"}, subagent=True))
    recorder.observe(_Event("tool_call", tool="Bash", id="t5", input={"command": "rm -rf /"}))
    recorder.observe(_Event("tool_result", tool_use_id="t5", text="refused by the wall", is_error=True))
    env, false, read, refused = recorder.trail().calls
    assert secret not in env.excerpt and MASK in env.excerpt and len(env.excerpt) <= EXCERPT_CHARS
    assert (env.exit_code, env.ran) == (0, True)
    assert (false.exit_code, false.ran) == (1, True)  # ran, and failed: still evidence
    assert (read.path, read.line, read.end_line) == ("a.py", 1, 2)  # relative to the workspace
    assert (refused.exit_code, refused.ran) == (None, False)


def test_the_terminal_line_says_the_basis_and_fits() -> None:
    backed, missing = link(CHECKS[:2], ["跑了 `python3 hello.py`"], TRAIL)
    assert check_line(backed).startswith("     ✓ ") and "`python3 hello.py`" in check_line(backed)
    assert check_line(missing).startswith("     ✗ ")
    long = Evidence(
        check="很长的判定项" * 60, kind="command", command="python3 hello.py", exit_code=0, backed=True
    )
    assert len(check_line(long, width=80)) <= 80 and "python3 hello.py" in check_line(long, width=80)


def test_the_policy_is_strict_unless_relaxed(monkeypatch) -> None:
    monkeypatch.delenv("FLOWER_EVIDENCE", raising=False)
    assert evidence_policy() == "strict" and evidence_policy("relaxed") == "relaxed"
    monkeypatch.setenv("FLOWER_EVIDENCE", "relaxed")
    assert evidence_policy() == "relaxed" and evidence_policy("strict") == "strict"
    monkeypatch.setenv("FLOWER_EVIDENCE", "maybe")
    assert evidence_policy() == "strict"


# -- how a verdict judged each check: the one rule every front end shows ---------------------------


def test_each_checks_state_follows_the_verdict_and_its_evidence() -> None:
    verdict = Verdict.parse(NOT_YET_WITH_EVIDENCE).prove(GOAL, TRAIL)
    assert verdict.check_states() == ["passed", "failed", "passed"]
    # the same verdict achieved: a failed line no longer fails anything
    assert check_states(ACHIEVED, verdict.failed, [], verdict.evidence) == ["passed"] * 3


def test_a_check_claimed_without_evidence_or_never_backed_has_no_evidence() -> None:
    bare = Verdict.parse(THREE).prove(GOAL, Trail(()))
    assert bare.state == NOT_YET and bare.check_states() == ["no_evidence"] * 3
    # judged not achieved for another reason: a check nothing backs still has no evidence
    half = link(CHECKS, ["跑了 `python3 hello.py`"], TRAIL)
    assert check_states(NOT_YET, [CHECKS[2]], [], half) == ["passed", "no_evidence", "failed"]


def test_an_unverifiable_check_is_that_whatever_else_is_said_of_it() -> None:
    marked = Evidence(check=CHECKS[0], kind="unverifiable", backed=True)
    for state, failed, unproven in ((ACHIEVED, [], []), (NOT_YET, [CHECKS[0]], [CHECKS[0]])):
        assert check_states(state, failed, unproven, [marked]) == ["unverifiable"]


@pytest.mark.parametrize(
    "named",
    ["第 2 条", "判定项 2", "2", "工作区根目录有 README.md", "工作区根目录有ＲＥＡＤＭＥ.md,写了怎么运行"],
)
def test_a_failed_line_names_its_check_as_the_diagnostics_locate_it(named: str) -> None:
    evidence = link(CHECKS, ["跑了 `python3 hello.py`", "读了 README.md", "读了 hello.py"], TRAIL)
    assert check_states(NOT_YET, [named], [], evidence) == ["passed", "failed", "passed"]


def test_check_states_hold_their_invariants_over_generated_verdicts() -> None:
    rng = random.Random(20261203)
    kinds: list[EvidenceKind] = ["command", "read", "search", "unverifiable", "none"]
    for _ in range(3000):
        n = rng.randint(1, 5)
        checks = [f"判定项{chr(0x4E00 + rng.randrange(2000))}{i}-{rng.randrange(10**6)}" for i in range(n)]
        evidence = [Evidence(check=c, kind=rng.choice(kinds), backed=rng.random() < 0.6) for c in checks]
        state = rng.choice([ACHIEVED, NOT_YET, "unreachable", ""])
        failed = [c for c in checks if rng.random() < 0.4]
        unproven = [c for c in checks if rng.random() < 0.2]
        states = check_states(state, failed, unproven, evidence)
        assert len(states) == n
        for e, got in zip(evidence, states, strict=True):
            if e.kind == "unverifiable":
                assert got == "unverifiable"  # never met
            elif e.check in unproven:
                assert got == "no_evidence"
            elif got == "passed":  # passed only with proof, and only where no failed line names it
                assert e.backed and e.kind != "none"
                assert state == ACHIEVED or e.check not in failed
            elif got == "failed":
                assert state != ACHIEVED and e.check in failed
            else:
                assert got == "no_evidence" and (not e.backed or e.kind == "none")


def test_the_terminal_marks_a_check_by_its_state() -> None:
    backed = Evidence(check=CHECKS[0], kind="command", command="python3 hello.py", exit_code=1, backed=True)
    assert check_line(backed, state="passed").startswith("     ✓ ")
    assert check_line(backed, state="failed").startswith("     ✗ ")
    marked = Evidence(check=CHECKS[1], kind="unverifiable")
    assert check_line(marked, state="unverifiable").startswith("     ? ")
