"""The language server under the faults of a real editor session, as a class: a flood of
requests, frames of tens of megabytes, two clients on one folder, a client that vanishes
mid-question, a server killed outright. Every valid request is answered (a result or a clear
error) within 30 s, one run per folder, and the next Continue goes on with the same sessions.

Raw pipes (flower.sim.lsp_pipe) where no client library would produce the fault; pytest-lsp's
real client everywhere else.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_engine import read_log
from server_process import fake_env
from test_runs import write_brief
from test_starter import REQUEST, RUN_S, answer_the_clarifier, finished

from flower.base.loose import mapping, text
from flower.core.lineage import Lineage
from flower.sim import scenarios
from flower.sim.lsp_pipe import LspPipe

ANSWERED_WITHIN_S = 30.0
MB = 1000 * 1000


@pytest.fixture
def pipe(tmp_path: Path, workspace: Path) -> Iterator[LspPipe]:
    (tmp_path / "fake-script.json").write_text("[]", encoding="utf-8")
    server = LspPipe(fake_env(tmp_path / "fake-script.json"), workspace)
    server.initialize(workspace)
    yield server
    server.kill()


def flood_request(rng: random.Random, n: int, folder: str) -> tuple[str, object]:
    """One of the requests an editor sends, some of them wrong."""
    kind = rng.randrange(6)
    if kind == 0:
        return "flower/state", {}
    if kind == 1:
        return "workspace/executeCommand", {"command": "flower.say", "arguments": [{"text": f"话 {n}"}]}
    if kind == 2:
        return "workspace/executeCommand", {"command": "flower.answer", "arguments": [{"text": "x"}]}
    if kind == 3:
        return "workspace/executeCommand", {"command": "flower.stop", "arguments": [{"folder": folder}]}
    if kind == 4:
        return "flower/teleport", {}  # not a method of this server: MethodNotFound
    return "workspace/executeCommand", {"command": "flower.say", "arguments": [{"text": 7}]}  # invalid


def assert_clear(pipe: LspPipe, keys: list[str]) -> None:
    """Every answer is a result or an error of code and one-line message, no traceback."""
    for key in keys:
        reply = pipe.responses[key]
        error = reply.get("error")
        assert "result" in reply or (isinstance(error, dict) and set(error) <= {"code", "message"}), reply
        if "error" in reply:
            message = mapping(error).get("message")
            assert isinstance(message, str) and "Traceback" not in message and "\n" not in message, reply


def test_2000_requests_in_2_seconds_are_every_one_answered(pipe: LspPipe, workspace: Path) -> None:
    rng = random.Random(22)
    keys: list[str] = []
    began = time.monotonic()
    for n in range(2000):
        method, params = flood_request(rng, n, workspace.as_uri())
        keys.append(pipe.request(method, params))
        if n % 100 == 99:  # 2,000 over about 2 s, in bursts
            time.sleep(max(0.0, began + (n + 1) / 1000 - time.monotonic()))
    assert pipe.wait(keys, ANSWERED_WITHIN_S) == []
    assert_clear(pipe, keys)
    errors = {mapping(pipe.responses[k]["error"]).get("code") for k in keys if "error" in pipe.responses[k]}
    assert errors == {-32601, -32602}  # the unknown method and the invalid arguments only
    assert pipe.close() == 0
    assert b"Traceback" not in bytes(pipe.stderr)  # the output channel a person reads


def test_frames_of_20_mb_are_read_and_every_request_after_them_answered(
    pipe: LspPipe, workspace: Path
) -> None:
    goal = workspace / ".flower" / "notes" / "目标.md"
    huge = "- [ ] " + "长" * (20 * MB // 3)  # 20 MB of UTF-8 in one document
    pipe.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": goal.as_uri(), "languageId": "markdown", "version": 1, "text": huge}},
    )
    probe = pipe.request("flower/state", {})
    assert mapping(pipe.result(probe, ANSWERED_WITHIN_S)["result"]).get("running") is False
    said = pipe.command("flower.say", {"text": "x" * (20 * MB)})
    reply = mapping(pipe.result(said, ANSWERED_WITHIN_S)["result"])
    assert reply.get("ok") is False and text(reply.get("message")).startswith("Nothing is running in ws")
    state = pipe.request("flower/state", {"folder": workspace.as_uri(), "junk": "y" * (20 * MB)})
    assert pipe.result(state, ANSWERED_WITHIN_S)["error"] == {
        "code": -32602,
        "message": "flower/state: unknown field(s) junk (known: folder)",
    }
    keys = [pipe.request("flower/state", {}) for _ in range(50)]  # and the ones behind it
    assert pipe.wait(keys, ANSWERED_WITHIN_S) == []
    assert b"Traceback" not in bytes(pipe.stderr)
    assert pipe.close() == 0


async def test_two_clients_on_one_folder_run_it_once(fake_lsp, script, workspace):
    write_brief(workspace)  # something to continue: the second client's Continue meets the run
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"wait_interrupt": 60}])
    async with fake_lsp() as a, fake_lsp() as b:
        first, second = await asyncio.gather(
            a.command("flower.start", {"ask": "A"}), b.command("flower.start", {"ask": "B"})
        )
        assert sorted([first["ok"], second["ok"]]) == [False, True], (first, second)
        refused = first if not first["ok"] else second
        assert "already" in refused["message"], refused
        running, idle = (a, b) if first["ok"] else (b, a)
        await running.until(lambda: running.events_of("step"))
        again = await idle.command("flower.continue")
        assert again["ok"] is False and "already" in again["message"], again
        assert (await running.command("flower.stop"))["ok"] is True
    assert [e["started"] for e in read_log(workspace / "runs") if "started" in e] in (["A"], ["B"])


async def test_a_client_that_vanishes_mid_question_leaves_no_run_stuck_and_the_next_goes_on(
    sim_factory, sim_lsp, workspace
):
    scenario = scenarios.starter_scenario(verdicts=("achieved",))
    clarifier = scenario["scripts"]["clarifier"]
    clarifier.append(clarifier[-1])  # the resumed session takes two turns to give its brief
    sim = sim_factory(scenario)
    async with sim_lsp(sim, options={"timeout_s": 600}) as s:
        await s.command("flower.start", {"ask": REQUEST})
        await s.until(lambda: s.asks, RUN_S, what="the clarifier's question")
        clarify = Lineage.open(workspace / "runs", workspace).steps["确认需求"]
        server = s.client._server
        assert server is not None and server.stdin is not None
        server.stdin.close()  # the editor went away while the question waited
        await asyncio.wait_for(server.wait(), ANSWERED_WITHIN_S)  # not stuck on the question

    async with sim_lsp(sim, options={"timeout_s": 600}) as s:
        answer_the_clarifier(s)
        # nothing is frozen yet (no 需求.md): Continue says so and offers a start, which
        # takes the same request up again
        result = await s.command("flower.continue")
        assert result["ok"] is False and result["offer"] == "start", result
        assert (await s.command("flower.start", {"ask": REQUEST}))["ok"] is True
        await finished(s)
        assert Lineage.open(workspace / "runs", workspace).steps["确认需求"] == clarify


async def test_a_server_killed_outright_mid_run_is_continued_by_the_next_one(sim_factory, sim_lsp, workspace):
    scenario = scenarios.starter_scenario(verdicts=("achieved",))
    scenario["scripts"]["coordinator"][1]["delay"] = 120
    sim = sim_factory(scenario)
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        answer_the_clarifier(s)
        await s.command("flower.start", {"ask": REQUEST})
        await s.until(lambda: len(sim.requests_for("coordinator")) == 2, RUN_S, what="the work step")
        work = Lineage.open(workspace / "runs", workspace).steps["干活"]
        server = s.client._server
        assert server is not None
        server.kill()  # SIGKILL: no shutdown, no finally
        await asyncio.wait_for(server.wait(), ANSWERED_WITHIN_S)

    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        result = await s.command("flower.continue")
        assert result["ok"] is True, result
        await finished(s)
        assert (await s.state())["steps"]["干活"] == work
        assert "派给 coder" in sim.last("coordinator").all_text  # the same conversation went on
