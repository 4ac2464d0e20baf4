"""The no-progress limit and the notify command from the editor's settings (`flower.stallRounds`
as InitOptions.stall_rounds, `flower.notify` as InitOptions.notify): the real engine and the real
Claude Code CLI through the language server, flower.sim as the model. A coordinator that changes
nothing and a judge failing the same check: with stall_rounds 1 the run asks after its first
round, and the notify command (run as the CLI runs it: no shell, no credential) records each
notice. Settings changed while the server runs apply to the next run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from flower.sim.scenarios import BRIEF, GOAL, HANDOVER, STARTER_ACTORS, VERDICTS

pytestmark = pytest.mark.e2e

RUN_S = 240.0
ENDED = ("finished", "failed", "stopped", "budget")
IDLE = "看了一遍,没有要改的。"

RECORDER = """\
import json, os, sys
notice = json.load(sys.stdin)
notice["has_key"] = "ANTHROPIC_API_KEY" in os.environ
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(json.dumps(notice, ensure_ascii=False) + "\\n")
"""


def idle_runs(runs: int, rounds: int) -> dict[str, Any]:
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF} for _ in range(runs)],
            "goal_setter": [{"text": GOAL} for _ in range(runs)],
            "coordinator": [{"text": IDLE} for _ in range(rounds)],
            "judge": [{"text": VERDICTS["not_yet"]} for _ in range(rounds)],
        },
        "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


def recorded(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ends(s: Any) -> list[dict[str, Any]]:
    return [e for e in s.events_of("run") if e["payload"]["phase"] in ENDED]


async def test_stall_rounds_and_notify_from_the_settings_reach_the_run(
    sim_factory, sim_lsp, workspace: Path, tmp_path: Path
):
    script, log = tmp_path / "record.py", tmp_path / "notices.jsonl"
    script.write_text(RECORDER, encoding="utf-8")
    notify = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(log))}"
    sim = sim_factory(idle_runs(runs=2, rounds=4))
    # the server's own environment says 5: the folder's setting wins
    options = {"timeout_s": 120, "stall_rounds": 1, "notify": notify}
    async with sim_lsp(sim, options=options, env={"FLOWER_STALL_ROUNDS": "5"}) as s:
        asked: list[dict[str, Any]] = []

        async def person(params: dict[str, Any]) -> Any:
            asked.append(params)
            return {"answer": params["options"][2]}  # stop

        s.answer_ask = person
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(lambda: len(ends(s)) >= 1, RUN_S, what="the first run to end")

        assert s.run_phase() == "stopped", ends(s)[-1]
        assert len(asked) == 1 and asked[0]["question"].startswith("1 ")
        assert len(sim.requests_for("judge")) == 1  # asked after round 1, stopped before round 2

        # the command got the question and the stop, as JSON on its stdin, without the key
        await s.until(lambda: len(recorded(log)) >= 2, 30.0, what="the notify command's two notices")
        notices = recorded(log)
        assert [n["kind"] for n in notices] == ["asked", "stopped"], notices
        assert notices[0]["folder"] == str(workspace) and asked[0]["question"].startswith(
            notices[0]["text"][:20]
        )
        assert not any(n["has_key"] for n in notices)

        # changed while the server runs: never asked (0), no command; applies to the next run
        s.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"flower": {"timeout_s": 120, "stall_rounds": 0, "notify": ""}}
            )
        )
        assert (await s.command("flower.start", {"ask": "写一个 hello.py", "new": True}))["ok"] is True
        await s.until(lambda: len(ends(s)) >= 2, RUN_S, what="the second run to end")

        assert len(asked) == 1  # three idle rounds, no question
        assert len(sim.requests_for("judge")) == 1 + 3
        assert len(recorded(log)) == 2  # the cleared command ran no more


async def test_a_stop_on_no_progress_reaches_the_banner_and_the_history_with_its_kind(
    sim_factory, sim_lsp, workspace: Path
):
    sim = sim_factory(idle_runs(runs=1, rounds=3))
    async with sim_lsp(sim, options={"timeout_s": 120, "stall_rounds": 1}) as s:

        async def person(params: dict[str, Any]) -> Any:
            return {"answer": params["options"][2]}  # stop

        s.answer_ask = person
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(lambda: len(ends(s)) >= 1, RUN_S, what="the run to end")
        assert s.run_phase() == "stopped"

        history = await s.request("flower/history", {})
        [wake] = history["wakes"]
        assert wake["stopped"] == "no_progress"
        assert wake["stop_line"].startswith("stopped: no progress —— ")

        # continued: the banner names the stop, in its text and as its kind
        assert (await s.command("flower.continue", {}))["ok"] is True
        await s.until(lambda: bool(s.banners), 60.0, what="the banner")
        [banner] = s.banners
        assert banner["stopped"] == "no_progress"
        first, second = banner["text"].split("\n")
        assert first.startswith("<- ") and " 2" in first  # the seeds' line: the second wake
        assert "stopped: no progress" in second
        await s.until(lambda: len(ends(s)) >= 2, RUN_S, what="the continued run to end")
        history = await s.request("flower/history", {})
        # the continued wake met the same no progress (the person said stop again): both are told
        assert [w["stopped"] for w in history["wakes"]] == ["no_progress", "no_progress"]
