"""The judge shows its evidence (issue 25), through the real `flower` command: the real Claude Code
CLI runs the judge's tools, flower.sim plays the model. An achieved verdict counts only when every
check is backed by a call the judge really made in its turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_cli_e2e import cli_env, flower

from flower.core.evidence import Evidence
from flower.sim.scenario import ScenarioData, TurnData
from flower.sim.scenarios import (
    BARE_VERDICTS,
    CHECKS,
    RAN_GOAL,
    RUN_AND_READ,
    judge_runs_scenario,
    judged,
    looked,
)
from flower.workflow.history import read_history

WRITE_BOTH = "printf 'print(\"hello\")\\n' > hello.py && printf 'Run: python3 hello.py\\n' > README.md"
GOAL = RAN_GOAL
MACOS = "在 macOS 的终端里双击就能运行 [此环境无法验证:这里是 Linux 容器]"
RAN = "## 证据\n" + (
    f"- {CHECKS[0]} — 跑了 `python3 hello.py`,退出码 0,输出 hello\n"
    f"- {CHECKS[1]} — 读了 README.md 第 1 行:Run: python3 hello.py\n"
    f"- {CHECKS[2]} — 读了 hello.py,没有 import\n"
)
LOOK_AND_RUN = RUN_AND_READ  # the real tools, before the verdict: the command, the two files


def scenario(judge: list[TurnData], *, goal: str = GOAL, rounds: int = 2) -> ScenarioData:
    """One worker round writes both files (README.md one line); every later round changes nothing."""
    return judge_runs_scenario(judge, goal=goal, rounds=rounds, write=WRITE_BOTH)


def run(sim: Any, claude_root: Path, ws: Path, *flags: str, **env: str) -> Any:
    env = {"FLOWER_EVIDENCE": "", **env}  # strict unless a test says otherwise
    return flower("--timeout", "0", *flags, "写一个 hello.py", cwd=ws, env=cli_env(sim, claude_root, **env))


def kept(ws: Path, round_no: int) -> dict[str, Any]:
    """The trail kept beside the round's manifest row: its one entry (one judge session)."""
    [entry] = json.loads(
        (ws / "runs" / "evidence" / f"干活·判定#{round_no}.json").read_text(encoding="utf-8")
    )
    return entry


def test_a_judge_that_verifies_properly_is_achieved_with_every_check_backed(
    sim_factory, claude_root, tmp_path
):
    sim = sim_factory(scenario([LOOK_AND_RUN, {"text": BARE_VERDICTS["achieved"] + "\n\n" + RAN}]))
    done = run(sim, claude_root, tmp_path, "--judge-can-run")

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "判定第 1 轮:达成" in out
    # one line per check with its basis, under the verdict
    assert f"     ✓ {CHECKS[0]} — 跑了 `python3 hello.py`(退出码 0)" in out
    assert f"     ✓ {CHECKS[1]} — 读了 README.md 第 1-" in out
    assert f"     ✓ {CHECKS[2]} — 读了 hello.py 第 1-" in out
    entry = kept(tmp_path, 1)
    assert entry["state"] == "achieved" and entry["unproven"] == [] and "run" not in entry
    ran, readme, source = (Evidence.from_json(e) for e in entry["evidence"])
    assert (source.path, source.backed) == ("hello.py", True)
    assert (ran.kind, ran.command, ran.exit_code, ran.backed) == ("command", "python3 hello.py", 0, True)
    assert ran.excerpt == "hello"  # what the command printed, as the CLI ran it
    assert (readme.kind, readme.path, readme.line, readme.backed) == ("read", "README.md", 1, True)
    assert [c["tool"] for c in entry["trail"]] == ["Bash", "Read", "Read"]
    # the history carries it, typed
    [verdict] = [
        r.verdict for w in read_history(tmp_path).wakes for s in w.steps for r in s.rounds if r.verdict
    ]
    assert verdict.state == "achieved" and verdict.evidence[0] == ran and len(verdict.trail) == 3


def test_achieved_having_run_and_read_nothing_is_not_accepted_and_the_next_round_hears_why(
    sim_factory, claude_root, tmp_path
):
    # round 1: 达成 straight away, no tool called; round 2: the same judge looks first
    sim = sim_factory(scenario([{"text": BARE_VERDICTS["achieved"]}, *judged("achieved")]))
    done = run(sim, claude_root, tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "判定第 1 轮:说达成,可没有证据,打回去接着干 —— 没有证据:" in out
    assert all(f"     ✗ {c} — 没有证据" in out for c in CHECKS)
    assert "判定第 2 轮:达成" in out
    # the next round's prompt, as the model got it, names the checks that lack evidence
    [told] = [r for r in sim.requests_for("coordinator") if "没有证据" in r.last_user_text]
    assert "这些判定项没有证据" in told.last_user_text
    assert all(f"- {c}" in told.last_user_text for c in CHECKS)
    first = kept(tmp_path, 1)
    assert (first["state"], first["claimed"], first["unproven"], first["trail"]) == (
        "not_yet",
        "achieved",
        CHECKS,
        [],
    )
    rounds = [r.verdict for w in read_history(tmp_path).wakes for s in w.steps for r in s.rounds if r.verdict]
    assert [v.state for v in rounds] == ["not_yet", "achieved"] and rounds[0].unproven == CHECKS


def test_a_judge_citing_a_command_it_never_ran_is_unbacked(sim_factory, claude_root, tmp_path):
    # it reads both files but claims to have run the program (it cannot even: no --judge-can-run)
    sim = sim_factory(
        scenario([*looked(BARE_VERDICTS["achieved"] + "\n\n" + RAN, "README.md", "hello.py")], rounds=1)
    )
    done = run(sim, claude_root, tmp_path, "--rounds", "1")

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"     ✗ {CHECKS[0]} — 说跑了 `python3 hello.py`,可它没跑过" in done.stdout
    assert f"     ✓ {CHECKS[1]} — 读了 README.md" in done.stdout
    entry = kept(tmp_path, 1)
    assert entry["unproven"] == [CHECKS[0]]
    cited = Evidence.from_json(entry["evidence"][0])
    assert (cited.kind, cited.command, cited.backed, cited.exit_code) == (
        "command",
        "python3 hello.py",
        False,
        None,
    )


def test_an_unverifiable_check_is_never_met_even_with_the_relaxed_policy(sim_factory, claude_root, tmp_path):
    goal = GOAL + f"- {MACOS}\n"
    text = (
        BARE_VERDICTS["achieved"]
        + "\n\n"
        + RAN.replace("`python3 hello.py`,退出码 0,", "")
        + f"- {MACOS} — 读了 hello.py"
    )
    sim = sim_factory(scenario([*looked(text, "README.md", "hello.py")], goal=goal, rounds=1))
    done = run(sim, claude_root, tmp_path, "--rounds", "1", "--evidence", "relaxed")

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"     ? {MACOS} — 这个环境里验证不了,不算通过" in done.stdout
    assert kept(tmp_path, 1)["unproven"] == [MACOS]


def test_the_relaxed_policy_takes_the_judges_word(sim_factory, claude_root, tmp_path):
    sim = sim_factory(scenario([{"text": BARE_VERDICTS["achieved"]}], rounds=1))
    strict = tmp_path / "strict"
    strict.mkdir()
    assert run(sim, claude_root, strict, "--rounds", "1").returncode == 1  # the default: not accepted
    sim = sim_factory(scenario([{"text": BARE_VERDICTS["achieved"]}], rounds=1))
    relaxed = tmp_path / "relaxed"
    relaxed.mkdir()
    done = run(sim, claude_root, relaxed, "--rounds", "1", FLOWER_EVIDENCE="relaxed")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "判定第 1 轮:达成" in done.stdout and f"     ✗ {CHECKS[0]} — 没有证据" in done.stdout
