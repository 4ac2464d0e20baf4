"""Side questions end to end: `flower go` in a subprocess, the real Claude Code CLI, flower.sim as
the model. Asked with `?` and its full-width form while the judged work step is in flight; one fails; one is
still open when the run ends."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import CLOSING, Child, cli_env

from flower.core.lineage import Lineage
from flower.sim.scenario import ScenarioData
from flower.sim.scenarios import HANDOVER, starter_scenario

pytestmark = pytest.mark.e2e

WHERE = "在干活:coder 在写 hello.py。"
LATE = "快了,只差判定。"


def scenario(release: Path) -> ScenarioData:
    s = starter_scenario(verdicts=("achieved",))
    # the coder's command waits for the test: the work step is in flight for as long as it takes
    wait = f"while [ ! -f {release} ]; do sleep 0.1; done; printf 'print(\"hello\")\\n' > hello.py"
    s["scripts"]["coder"][0] = {"tool": {"name": "Bash", "input": {"command": wait, "description": "wait"}}}
    s["rules"] = [
        {"actor": "handover", "reply": {"text": HANDOVER}},
        {"actor": "oracle", "when": {"first_user_contains": "现在到哪一步了"}, "reply": {"text": WHERE}},
        {"actor": "oracle", "when": {"first_user_contains": "会出错吗"}, "reply": {"fault": 413}},
        {
            "actor": "oracle",
            "when": {"first_user_contains": "还有多久"},
            "reply": {"hold": "late", "text": LATE},
        },
    ]
    return s


def wait_until(what: str, probe: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_side_questions_are_answered_while_the_run_goes_on_and_never_touch_its_books(
    sim_factory, claude_root, tmp_path
):
    release = tmp_path / "release"
    sim = sim_factory(scenario(release))
    ws = tmp_path / "proj"
    ws.mkdir()
    child = Child("--timeout", "0", "写一个 hello.py,运行时打印问候语", cwd=ws, env=cli_env(sim, claude_root))
    try:
        child.wait_for("| * Bash while")  # the coder's command is running: 干活 is in flight
        child.type("? 现在到哪一步了")
        child.wait_for(WHERE)
        child.wait_for("没有打扰正在跑的运行")
        child.type("? 会出错吗")
        child.wait_for("# 旁路问答失败:")
        assert len(sim.requests_for("coder")) == 1 and not release.exists()  # still the same tool call

        child.type("\uff1f 还有多久")  # the full-width mark a Chinese IME types
        wait_until("the third side question", lambda: len(sim.requests_for("oracle")) == 3)
        release.touch()
        child.wait_for("(等 1 条旁路问答收尾…)", timeout=120)  # the run is over, the aside is not
        sim.release("late")
        assert child.finish() == 0, child.output
    finally:
        child.kill()
    out = child.output
    # answered in order of their answers, the held one after the run had ended
    order = [out.index(s) for s in (WHERE, "判定第 1 轮:达成", "(等 1 条旁路问答收尾…)", LATE)]
    assert order == sorted(order), out
    assert CLOSING.match([line for line in out.splitlines() if line.startswith("总花费")][-1])
    assert out.count("# 旁路问答失败:") == 1 and "+ 收到" not in out  # nothing went to the inbox

    # the run's own requests are exactly what it makes without any side question
    counts = {
        a: len(sim.requests_for(a)) for a in ("clarifier", "goal_setter", "coordinator", "coder", "judge")
    }
    # (the judge's one round is two requests: its look at the files, then its verdict)
    assert counts == {"clarifier": 2, "goal_setter": 1, "coordinator": 2, "coder": 2, "judge": 2}
    assert len(sim.openings("judge")) == 1
    assert len(sim.requests_for("oracle")) == 3
    brief = (ws / ".flower" / "notes" / "需求.md").read_text(encoding="utf-8")
    assert "还有多久" not in brief and "现在到哪一步了" not in brief

    # what the oracle was shown: the recent events, cut, no thinking; and where the workbench is
    first = sim.requests_for("oracle")[0].first_user_text
    assert "人顺路问了一句:现在到哪一步了" in first and f"工作台:{ws / '.flower'}" in first
    events = [line[2:] for line in first.split("\n") if line.startswith("- [")]
    assert any(e.startswith("[subagent tool_call] [Bash] while [ ! -f") for e in events)
    assert all(len(e) <= 200 for e in events) and not any(e.startswith("[thinking]") for e in events)
    assert any("[step] 干活" in e for e in events)

    # the books: the aside's own manifest, nothing of it in the run's manifest or lineage
    main_rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    aside_rows = json.loads((ws / "runs" / "aside" / "manifest.json").read_text(encoding="utf-8"))
    assert {r["step"] for r in aside_rows} == {"旁路问答"} and len(aside_rows) == 3
    assert "旁路问答" not in {r["step"] for r in main_rows}
    answered = [r for r in aside_rows if r["ok"]]
    assert len(answered) == 2 and all(r["cost_usd"] > 0 for r in answered)
    shown = [float(c) for c in re.findall(r"\(\$(\d+\.\d{4}),没有打扰正在跑的运行\)", out)]
    assert sorted(shown) == sorted(round(r["cost_usd"], 4) for r in answered)
    lineage = Lineage.open(ws / "runs", ws)
    asides = {r["session_id"] for r in aside_rows}
    assert not asides & set(lineage.steps.values()) and not asides & {r["session_id"] for r in main_rows}
    assert not (ws / "runs" / "aside" / "lineage.json").exists()
