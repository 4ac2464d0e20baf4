"""flower/history over LSP: the whole story of a folder from the real engine, the real Claude Code
CLI and flower.sim (two rejected rounds, a question mid-work, a handoff through a 200K window,
later wakes), checked against what manifest.json and lineage.json say; live while it runs, with
flower/historyUpdate for a client that declares it; and the same story from a restarted server."""

from __future__ import annotations

import asyncio
import json
import time
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from clients import VSCODE_EXTENSIONS, vscode_capabilities

from flower.core.lineage import Lineage
from flower.sim import scenarios
from flower.sim.long_run import CHECKS, WORK_QUESTION, long_run_scenario
from flower.workflow import history as engine
from flower_lsp import protocol as p
from flower_lsp import wire
from flower_lsp.history import checked
from flower_lsp.negotiation import declared

pytestmark = pytest.mark.e2e

RUN_S = 180.0
WINDOW = 200_000  # the handoff threshold is 150K
OPTIONS = {"timeout_s": 60, "window": WINDOW}
# rounds 1 and 2 rejected, a question in round 2, round 3 handed over at 158K and accepted;
# every later wake accepted at once
SCENARIO = long_run_scenario(rounds=3, threshold=150_000, start=110_000, growth=12_000, wakes=2)


def declaring(history: bool) -> Any:
    """The VS Code extension's capabilities, with or without `history`."""
    caps = vscode_capabilities()
    caps.experimental = {p.EXPERIMENTAL_KEY: {**VSCODE_EXTENSIONS, "history": history}}
    return caps


@asynccontextmanager
async def session(open_lsp: Any, sim: Any, *, history: bool = True) -> AsyncIterator[Any]:
    """A client (declaring experimental.flower.history or not) that answers every question with
    its first option and records every flower/historyUpdate."""
    async with open_lsp(sim, options=OPTIONS, capabilities=declaring(history)) as s:
        record_updates(s)

        async def first_option(params: dict[str, Any]) -> Any:
            return {"answer": params["options"][0]}

        s.answer_ask = first_option
        yield s


def record_updates(s: Any) -> None:
    s.updates = []

    def on_update(params: dict[str, Any]) -> None:
        s.updates.append(params)

    s.client.feature(p.HISTORY_UPDATE)(on_update)


async def history_until(s: Any, test: Any, timeout: float = 20.0) -> dict[str, Any]:  # noqa: ASYNC109 (a test's own deadline)
    deadline = time.monotonic() + timeout
    while True:
        h = await s.request(p.HISTORY, {})
        if test(h):
            return h
        assert time.monotonic() < deadline, "the history never got there"
        await asyncio.sleep(0.05)


def written(document: str) -> bool:
    return Path(document).is_file()


async def run_to_end(s: Any, command: str, *args: Any) -> None:
    before = len(s.events_of("run"))
    assert (await s.command(command, *args))["ok"] is True
    await s.until(
        lambda: any(e["payload"]["phase"] != "started" for e in s.events_of("run")[before:]),
        RUN_S,
        what="the run to end",
    )
    assert s.run_phase() == "finished", s.events_of("run")[-1]


def readings(contexts: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """The meter's readings of model turns, one per turn (a turn's content blocks repeat it; the
    meter also moves at a handoff: while the document is written, and to 0 when it is done)."""
    out: list[tuple[int, str]] = []
    for c in contexts:
        if c["used"] and not c["handing_off"] and (c["used"], c["step"]) != (out[-1] if out else None):
            out.append((c["used"], c["step"]))
    return out


def last_history(s: Any) -> dict[str, Any] | None:
    """The history of the last update, when it sent the history whole."""
    return s.updates[-1]["history"] if s.updates else None


def ended(h: dict[str, Any] | None) -> bool:
    return h is not None and not h["live"]


def open_questions(h: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [q for r in rounds_of(h) for q in r["questions"] if q["state"] == "asked"] if h else []


def rounds_of(h: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for w in h["wakes"] for s in w["steps"] for r in s["rounds"]]


def without(h: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in h.items() if k not in keys}


def held_by_the_client(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client holds after applying every update in order, as the protocol says."""
    held: dict[str, Any] | None = None
    for u in updates:
        if u["history"] is not None:
            held = dict(u["history"], turns=list(u["history"]["turns"]))
        else:
            assert held is not None, "a turn came before any history"
            held["turns"].append(u["turn"])
        held["revision"] = u["revision"]
    assert held is not None
    return held


def line_of(goal: Path, check: str) -> int:
    return goal.read_text(encoding="utf-8").splitlines().index(f"- {check}")


async def test_a_live_run_as_it_goes_then_as_it_ended(sim_factory, sim_lsp, workspace):
    sim = sim_factory(SCENARIO)
    async with session(sim_lsp, sim) as s:
        asked, release = asyncio.Event(), asyncio.Event()

        async def person(params: dict[str, Any]) -> Any:
            if params["question"] == WORK_QUESTION:
                asked.set()
                await release.wait()  # the question stays open while the history is asked for
            return {"answer": params["options"][0]}

        s.answer_ask = person
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await asyncio.wait_for(asked.wait(), RUN_S)
        await s.until(lambda: open_questions(last_history(s)), what="the update with the open question")

        live = await s.request(p.HISTORY, {})
        checked(live)  # the answer is what the protocol declares
        goal = workspace / ".flower" / "notes" / "目标.md"
        assert (live["live"], live["live_step"], live["folder"]) == (True, "干活#round2", s.folder)
        (wake,) = live["wakes"]
        assert wake["live"] and [st["name"] for st in wake["steps"]] == ["确认需求", "设定目标", "干活"]
        work = wake["steps"][2]
        first, second = work["rounds"]
        assert work["live"] and (first["status"], second["status"]) == ("done", "running")
        assert first["verdict"]["state"] == "not_yet"
        assert first["verdict"]["failed"] == [{"text": CHECKS[1], "line": line_of(goal, CHECKS[1])}]
        [open_question] = second["questions"]
        assert (open_question["question"], open_question["state"], open_question["waited_s"]) == (
            WORK_QUESTION,
            "asked",
            None,
        )
        # the turns so far, as the meter read them
        assert [(t["used"], t["step"]) for t in live["turns"]] == readings(s.contexts)
        assert (live["window"], live["at"]) == (WINDOW, 150_000)

        release.set()
        await s.until(lambda: s.run_phase() not in (None, "started"), RUN_S, what="the run to end")
        await s.until(lambda: ended(last_history(s)), what="the last update")

    for u in s.updates:  # every update is what the protocol declares
        wire.from_json(p.HistoryUpdateParams, u)
    # every revision in order, none missed; the turns the client appended agree with the last word
    revisions = [u["revision"] for u in s.updates]
    assert revisions == list(range(revisions[0], revisions[0] + len(revisions)))
    final = s.updates[-1]["history"]
    turns_before_the_end = held_by_the_client(s.updates[:-1])["turns"]
    assert [without(t, "at") for t in turns_before_the_end] == [without(t, "at") for t in final["turns"]]
    assert any(u["turn"] is not None for u in s.updates) and final["live"] is False

    judged = [r["verdict"] for r in rounds_of(final) if r["verdict"]]
    assert [(v["state"], [f["text"] for f in v["failed"]]) for v in judged] == [
        ("not_yet", [CHECKS[1]]),
        ("not_yet", [CHECKS[2]]),
        ("achieved", []),
    ]
    third = rounds_of(final)[-1]
    (handoff,) = third["handoffs"]
    assert third["step"] == "干活#round3" and handoff["successor"] == third["session_id"]
    assert handoff["retired"] == third["retired"][0] and handoff["generation"] == 2
    assert handoff["used"] >= 150_000 and not handoff["degraded"]
    assert written(handoff["path"]) and handoff["uri"] == Path(handoff["path"]).as_uri()
    assert [(m["kind"], m["label"]) for m in final["marks"] if m["kind"] != "verdict"] == [
        ("handoff", "干活#round3")
    ]
    work_turns = [t for t in final["turns"] if t["lane"] == "干活"]
    assert [t["generation"] for t in work_turns][-1] == 2 and max(t["used"] for t in work_turns) >= 150_000
    answered = {r["step"]: [(q["question"], q["answer"]) for q in r["questions"]] for r in rounds_of(final)}
    assert answered["确认需求"] == [(scenarios.QUESTION, scenarios.OPTIONS[0])]
    assert answered["干活#round2"] == [(WORK_QUESTION, "中文")]


async def test_a_finished_run_read_by_a_restarted_server_is_what_the_manifest_and_lineage_say(
    sim_factory, sim_lsp, workspace
):
    sim = sim_factory(SCENARIO)
    async with session(sim_lsp, sim) as s:
        await run_to_end(s, "flower.start", {"ask": "写一个 hello.py"})
        meter = readings(s.contexts)
        await s.until(lambda: ended(last_history(s)), what="the last update")
        ended_with = s.updates[-1]["history"]

    async with session(sim_lsp, sim) as s:  # days later: nothing but the disk
        h = await s.request(p.HISTORY, {"folder": s.folder})
        assert s.updates == []  # nothing has happened since this server started

    run_dir = workspace / "runs"
    rows = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    lineage = Lineage.open(run_dir, workspace)
    assert (h["woke"], h["sessions"], len(h["wakes"])) == (lineage.woke, lineage.steps, 1)
    assert h["wakes"][0]["run"] == rows[0]["run"] and h["live"] is False
    judges = {r["step"]: r for r in rows if "·判定#" in r["step"]}
    work_rows = [r for r in rows if "·判定#" not in r["step"]]
    assert [r["step"] for r in rounds_of(h)] == [r["step"] for r in work_rows]
    for record, row in zip(rounds_of(h), work_rows, strict=True):
        assert (record["session_id"], record["retired"], record["cost_usd"], record["num_turns"]) == (
            row["session_id"],
            row["retired"],
            row["cost_usd"],
            row["num_turns"],
        )
        assert (record["status"], record["attempts"], record["duration_s"]) == (
            "done",
            row["attempts"],
            row["duration_s"],
        )
        if record["verdict"] is not None:
            judge = judges[record["verdict"]["step"]]
            assert (record["verdict"]["session_id"], record["verdict"]["cost_usd"]) == (
                judge["session_id"],
                judge["cost_usd"],
            )
    assert len(judges) == 3 == sum(1 for r in rounds_of(h) if r["verdict"])
    assert h["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows))
    assert h["num_turns"] == sum(r["num_turns"] for r in rows)
    assert h["duration_s"] == pytest.approx(sum(r["duration_s"] for r in rows), abs=0.05)
    # the context of every turn, from the transcripts, is what the meter read live
    assert [(t["used"], t["step"]) for t in h["turns"]] == meter
    # and the restarted server tells the story the live client ended with
    assert without(h, "revision") == without(ended_with, "revision")


async def test_three_wakes_of_one_folder(sim_factory, sim_lsp, workspace):
    sim = sim_factory(SCENARIO)
    async with session(sim_lsp, sim) as s:
        await run_to_end(s, "flower.start", {"ask": "写一个 hello.py"})
        await run_to_end(s, "flower.continue")
        await run_to_end(s, "flower.continue")
        h = await s.request(p.HISTORY, {})

    rows = json.loads((workspace / "runs" / "manifest.json").read_text(encoding="utf-8"))
    lineage = Lineage.open(workspace / "runs", workspace)
    assert h["woke"] == lineage.woke == 3 == len(h["wakes"])
    assert [w["run"] for w in h["wakes"]] == list(dict.fromkeys(r["run"] for r in rows))
    assert [[st["name"] for st in w["steps"]] for w in h["wakes"]] == [
        ["确认需求", "设定目标", "干活"],
        ["干活"],
        ["干活"],
    ]
    for wake in h["wakes"]:
        mine = [r for r in rows if r["run"] == wake["run"]]
        assert wake["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in mine))
        assert wake["started_at"] == min(r["started_at"] for r in mine)
        assert wake["ended_at"] == max(r["ended_at"] for r in mine)
    later = [w["steps"][0]["rounds"] for w in h["wakes"][1:]]
    assert [[(r["step"], r["resumed"], r["verdict"]["state"]) for r in rs] for rs in later] == [
        [("干活", False, "achieved")],
        [("干活", False, "achieved")],
    ]
    # the woken work continues the session that took over at the handoff
    successor = lineage.steps["干活"]
    assert all(rs[0]["session_id"] == successor for rs in later)
    assert [t["wake"] for t in h["turns"]] == sorted(t["wake"] for t in h["turns"])
    assert {t["wake"] for t in h["turns"]} == {1, 2, 3}
    wake_marks = [m for m in h["marks"] if m["kind"] == "wake"]
    assert [(m["label"], h["turns"][m["turn"]]["wake"]) for m in wake_marks] == [("wake 2", 2), ("wake 3", 3)]
    assert all(h["turns"][m["turn"] - 1]["wake"] == int(m["label"][-1]) - 1 for m in wake_marks)


async def test_without_the_extension_a_client_asks_and_sees_the_revision_move(fake_lsp, script, workspace):
    script(
        [
            {"step": {"name": "干活", "index": 1, "total": 1}},
            {"context": {"used": 40_000, "step": "干活"}},
            {"verdict": {"state": "not_yet", "failed": ["第 1 条"], "round": 1}},
            {"end_step": {"name": "干活"}},
        ]
    )
    async with fake_lsp(capabilities=declaring(False)) as s:
        record_updates(s)
        empty = await s.request(p.HISTORY, {})
        assert (empty["wakes"], empty["turns"], empty["brief_exists"], empty["live"]) == (
            [],
            [],
            False,
            False,
        )
        await s.command("flower.start", {"ask": "go"})
        await s.until(lambda: s.run_phase() == "finished", what="the run to end")

        # a rebuild finished (the revision moved): the point where a declaring client is sent the
        # history whole, and every update up to that revision is ahead of this answer on the wire
        after = await history_until(s, lambda h: h["revision"] > empty["revision"] and not h["live"])
        assert s.updates == [] and after["woke"] == 1


async def test_a_bad_folder_is_the_clients_error(fake_lsp):
    async with fake_lsp() as s:
        with pytest.raises(Exception, match="unknown workspace folder"):
            await s.request(p.HISTORY, {"folder": "file:///nowhere"})
        with pytest.raises(Exception, match="unknown field"):
            await s.request(p.HISTORY, {"since": 3})


def test_the_capability_is_a_true_under_experimental_flower_history():
    assert declared({"flower": {"history": True}})[0].history
    for no in (None, {}, {"flower": True}, {"flower": {"history": "yes"}}, {"flower": {"ask": True}}):
        assert not declared(no)[0].history


def test_the_wire_spells_the_engines_states_as_the_engine_does():
    assert typing.get_args(p.RoundStatus) == typing.get_args(engine.RoundStatus)
    assert typing.get_args(p.MarkKind) == typing.get_args(engine.MarkKind)
