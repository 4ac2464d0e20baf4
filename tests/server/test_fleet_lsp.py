"""The fleet in the editor over LSP (flower/fleet/runs, flower/fleet/show, flower.fleetAnswer,
flower.fleetCancel, flower/fleetUpdate): a real pytest-lsp client, a real PostgreSQL holding the
fleet, runs put in their states through the fleet's own API (`Fleet`, `FleetBook`), as a worker
on another machine would. What a person checks: the runs and their states, a run's story and
questions, an answer reaching the database, a cancelled run, and a plain line (never an error,
never the password) when there is no store or no database."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path
from typing import Any, get_args

import pytest

from flower.fleet import STATES, Fleet, FleetError, Note, Outcome, RunRequest
from flower.fleet.notes import FINISHED, FLOW_FAILED, TAKEN
from flower.fleet.records import FleetBook
from flower.sim.postgres import LocalPostgres
from flower_lsp import protocol as p

QUESTION = "hello.py 要打印什么?"
FLOW_LINE = "▶ clarify"  # a line of the flow, as the worker rendered it


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: taken from the system, then let go."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def submitted(pg_url: str, request: str) -> str:
    return Fleet(pg_url).submit(RunRequest("/srv/repo.git", "main", request))


def waiting(pg_url: str, run: str) -> None:
    """The run taken by worker `a`, which asks a question: the run waits for an answer."""
    book = FleetBook(pg_url)
    execution = book.begin_execution(run, "a", 11)
    book.set_state(run, "running", worker="a")
    book.add_events(run, "a", [("", Note(TAKEN, {"worker": "a", "attempt": 1})), (FLOW_LINE, None)])
    book.ask(run, execution, "q1", QUESTION, ["hello"])


def test_the_protocols_run_states_are_the_fleets():
    assert get_args(p.FleetRunState) == STATES


async def test_a_folder_without_a_store_has_no_fleet_and_says_so(fake_lsp):
    async with fake_lsp(options={}) as s:
        runs = await s.request(p.FLEET_RUNS, {})
        answer = await s.command(p.FLEET_ANSWER, {"run": "abc", "text": "hi"})
    assert runs["configured"] is False and runs["runs"] == [] and runs["where"] == ""
    assert "FLOWER_STORE" in runs["message"] and "PostgreSQL" in runs["message"]
    assert answer["ok"] is False and answer["message"] == runs["message"]


async def test_the_runs_their_states_a_runs_story_and_its_question(
    fake_lsp, pg_url: str, postgres: LocalPostgres, english
):
    asks, queued, failed = (submitted(pg_url, f"写一个 hello{i}.py") for i in range(3))
    waiting(pg_url, asks)
    book = FleetBook(pg_url)
    book.set_state(failed, "failed", Note(FLOW_FAILED, {"why": "no such ref"}), worker="b")
    async with fake_lsp(options={"store": pg_url}) as s:
        runs = await s.request(p.FLEET_RUNS, {"folder": s.folder})
        shown = await s.request(p.FLEET_SHOW, {"run": asks})
    said = json.dumps([runs, shown], ensure_ascii=False)
    assert postgres.password not in said
    assert runs["configured"] is True and runs["message"] == ""
    assert runs["where"] == Fleet(pg_url).where and "***" in runs["where"]
    by_id = {r["id"]: r for r in runs["runs"]}
    assert [r["id"] for r in runs["runs"]] == [asks, queued, failed]  # oldest first
    assert [by_id[r]["state"] for r in (asks, queued, failed)] == ["waiting", "queued", "failed"]
    # in the client's words (the suite's client speaks English)
    assert by_id[asks]["state_text"] == "waiting for an answer" and by_id[asks]["question"] == QUESTION
    assert by_id[asks]["worker"] == "a" and by_id[asks]["branch"] == f"flower/{asks}"
    assert by_id[queued]["question"] == "" and by_id[queued]["request"] == "写一个 hello1.py"
    assert by_id[failed]["note"] == Note(FLOW_FAILED, {"why": "no such ref"}).text()
    assert "no such ref" in by_id[failed]["note"]
    assert shown["run"] == by_id[asks] and shown["message"] == ""
    assert [(q["question"], q["state"], q["options"]) for q in shown["questions"]] == [
        (QUESTION, "waiting", ["hello"])
    ]
    assert [x["worker"] for x in shown["executions"]] == ["a"] and shown["executions"][0]["ended_at"] == 0
    # the fleet's own note in the client's words, then the flow's line as the worker wrote it
    taken = Note(TAKEN, {"worker": "a", "attempt": 1}).text()
    assert [(e["worker"], e["text"]) for e in shown["events"]] == [("a", taken), ("a", FLOW_LINE)]
    assert taken.startswith("a took it")


async def test_a_finished_runs_outcome_and_an_unknown_run(fake_lsp, pg_url: str, english):
    run = submitted(pg_url, "写一个 hello.py")
    outcome = Outcome(branch=f"flower/{run}", commit="0123456789abcdef", pushed=True, goal_met=True)
    FleetBook(pg_url).set_state(run, "finished", Note(FINISHED, {"branch": f"flower/{run}"}), outcome=outcome)
    async with fake_lsp(options={"store": pg_url}) as s:
        runs = await s.request(p.FLEET_RUNS, {})
        unknown = await s.request(p.FLEET_SHOW, {"run": "nosuchrun"})
    assert runs["runs"][0]["state"] == "finished"
    assert runs["runs"][0]["outcome"] == dataclasses.asdict(outcome)
    with pytest.raises(FleetError) as refused:
        Fleet(pg_url).show("nosuchrun")
    assert unknown["run"] is None and unknown["configured"] is True
    assert unknown["message"] == str(refused.value) and "nosuchrun" in unknown["message"]


async def test_answering_a_waiting_run_reaches_the_database(fake_lsp, pg_url: str, english):
    run = submitted(pg_url, "写一个 hello.py")
    waiting(pg_url, run)
    async with fake_lsp(options={"store": pg_url}) as s:
        done = await s.command(p.FLEET_ANSWER, {"run": run, "text": "hello, world"})
        shown = await s.request(p.FLEET_SHOW, {"run": run})
    assert done["ok"] is True and run in done["message"] and QUESTION in done["message"]
    detail = Fleet(pg_url).show(run)
    assert [(q.state, q.answer) for q in detail.questions] == [("answered", "hello, world")]
    assert [(q["state"], q["answer"]) for q in shown["questions"]] == [("answered", "hello, world")]


async def test_answering_a_run_that_waits_for_nothing_is_refused_with_the_fleets_words(
    fake_lsp, pg_url: str, english
):
    run = submitted(pg_url, "写一个 hello.py")
    async with fake_lsp(options={"store": pg_url}) as s:
        refused = await s.command(p.FLEET_ANSWER, {"run": run, "text": "hello"})
    with pytest.raises(FleetError) as engine:
        Fleet(pg_url).answer(run, "hello")
    assert refused == {"ok": False, "message": str(engine.value), "offer": None, "uri": None}
    assert run in refused["message"] and "queued" in refused["message"]


async def test_cancelling_a_queued_run(fake_lsp, pg_url: str, english):
    run, other = submitted(pg_url, "写一个 hello.py"), submitted(pg_url, "写一个 bye.py")
    async with fake_lsp(options={"store": pg_url}) as s:
        done = await s.command(p.FLEET_CANCEL, {"run": run})
        runs = await s.request(p.FLEET_RUNS, {})
        again = await s.command(p.FLEET_CANCEL, {"run": run})
    assert done["ok"] is True and run in done["message"]
    assert {r["id"]: r["state"] for r in runs["runs"]} == {run: "cancelled", other: "queued"}
    assert Fleet(pg_url).show(run).summary.state == "cancelled"
    assert again["ok"] is False and "over" in again["message"]  # the fleet's ALREADY_OVER


async def test_a_client_that_declares_fleet_hears_of_a_run_submitted_elsewhere(fake_lsp, pg_url: str):
    first = submitted(pg_url, "写一个 hello.py")
    async with fake_lsp(options={"store": pg_url}) as s:
        sent = s.record_all()
        runs = await s.request(p.FLEET_RUNS, {})
        assert [r["id"] for r in runs["runs"]] == [first]
        later = submitted(pg_url, "写一个 bye.py")  # another machine's `flower submit`

        def update() -> dict[str, Any] | None:
            for m in sent:
                if getattr(m, "method", "") == p.FLEET_UPDATE:
                    params = _plain(m.params)
                    if [r["id"] for r in params["fleet"]["runs"]] == [first, later]:
                        return params
            return None

        told = await s.until(update, what="a flower/fleetUpdate with the new run")
    assert told["folder"] == s.folder and told["fleet"]["runs"][1]["state"] == "queued"


async def test_a_database_that_does_not_answer_is_a_line_not_an_error(fake_lsp, workspace: Path):
    url = f"postgresql://flower:s3cretpw@127.0.0.1:{_closed_port()}/fleet"
    async with fake_lsp(options={"store": url}) as s:
        runs = await s.request(p.FLEET_RUNS, {})
        shown = await s.request(p.FLEET_SHOW, {"run": "abc"})
        answer = await s.command(p.FLEET_CANCEL, {"run": "abc"})
        state = await s.state()  # the server still answers
    said = json.dumps([runs, shown, answer], ensure_ascii=False)
    assert "s3cretpw" not in said
    assert runs["configured"] is True and runs["runs"] == []
    assert "127.0.0.1" in runs["where"] and "***" in runs["where"]
    assert runs["message"].startswith(f"x cannot reach the queue database {runs['where']}: ")
    assert shown["run"] is None and shown["message"] == runs["message"]
    assert answer["ok"] is False and answer["message"] == runs["message"]
    assert state["folder"] == s.folder


def _plain(params: Any) -> Any:
    """A notification's params as JSON values (the client keeps custom payloads as they came)."""
    if isinstance(params, dict):
        return params
    return json.loads(json.dumps(params, default=lambda o: o._asdict() if hasattr(o, "_asdict") else vars(o)))


async def test_a_folders_own_store_holds_its_fleet(fake_lsp, pg_url: str, workspace: Path):
    # VS Code's shape: every folder's own options, the store in them (a folder's entry replaces
    # the top-level options whole)
    run = submitted(pg_url, "写一个 hello.py")
    async with fake_lsp(options={"folders": {workspace.as_uri(): {"store": pg_url}}}) as s:
        runs = await s.request(p.FLEET_RUNS, {"folder": s.folder})
    assert runs["configured"] is True and [r["id"] for r in runs["runs"]] == [run]
