"""The editor's `flower.store` through LSP: initializationOptions carry a shared store's URL to
the real engine, whose run then keeps its transcripts and lineage in that database; nothing the
server says shows the store's password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from test_starter import REQUEST, STEPS, answer_the_clarifier, finished

from flower.core.identity import identify
from flower.sim import scenarios
from flower.sim.postgres import LocalPostgres
from flower.stores.postgres import PostgresRunBook

pytestmark = pytest.mark.e2e


def everything_said(s: Any) -> str:
    return json.dumps(
        [
            s.banners,
            s.events,
            s.asks,
            [m.message for m in s.client.messages],
            [m.message for m in s.client.log_messages],
        ],
        ensure_ascii=False,
    )


async def run_to_the_end(s: Any) -> tuple[dict[str, Any], str]:
    """Start the request, answer the clarifier, wait for the end: the folder's state, and
    everything the server said meanwhile."""
    answer_the_clarifier(s)
    assert (await s.command("flower.start", {"ask": REQUEST}))["ok"] is True
    await finished(s)
    return await s.state(), everything_said(s)


def kept_in_the_database(workspace: Path, pg_url: str, state: dict[str, Any]) -> dict[str, Any]:
    """The run's lineage as the database has it, after checking the run folder kept no store."""
    assert set(state["steps"]) == STEPS
    assert not (workspace / "runs" / "sessions.db").exists()  # the transcripts went to the database
    shared = PostgresRunBook.direct(pg_url).lineage(identify(workspace).key)
    assert shared is not None and shared["steps"] == state["steps"]
    return shared


async def test_the_store_setting_keeps_the_editors_run_in_the_database(
    sim_factory, sim_lsp, workspace: Path, pg_url: str, postgres: LocalPostgres
):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, options={"timeout_s": 60, "store": pg_url}) as s:
        state, said = await run_to_the_end(s)
    assert kept_in_the_database(workspace, pg_url, state)["woke"] == 1
    assert postgres.password not in said


async def test_a_folders_store_set_while_the_server_runs_applies_to_its_next_run(
    sim_factory, sim_lsp, workspace: Path, pg_url: str, postgres: LocalPostgres
):
    # a plain pytest-lsp client, no VS Code: the per-folder store arrives by
    # workspace/didChangeConfiguration after initialize, and the next run keeps its books there
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        s.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"flower": {"timeout_s": 60, "folders": {workspace.as_uri(): {"store": pg_url}}}}
            )
        )
        await s.until(lambda: [m for m in s.client.log_messages if "settings of" in m.message])
        state, said = await run_to_the_end(s)
    kept_in_the_database(workspace, pg_url, state)  # not the local store the server started with
    assert postgres.password not in said


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        # the test client speaks English (its InitializeParams.locale)
        ("stopped", "the database server is not running"),
        ("wrong password", "the database refused this user or password"),
        ("missing database", "the database nosuchdb does not exist: create it first"),
    ],
)
async def test_each_way_the_store_fails_is_said_as_itself_and_the_server_keeps_answering(
    fault: str, said: str, sim_factory, sim_lsp, workspace: Path, private_postgres: LocalPostgres
):
    sim = sim_factory(scenarios.starter_scenario())
    url = {
        "stopped": private_postgres.url(),
        "wrong password": private_postgres.url().replace(private_postgres.password, "wrong-pw-4711"),
        "missing database": private_postgres.url("nosuchdb"),
    }[fault]
    if fault == "stopped":
        private_postgres.pause()
    try:
        async with sim_lsp(sim, options={"timeout_s": 60, "store": url}) as s:
            answer_the_clarifier(s)
            result = await s.command("flower.start", {"ask": REQUEST})
            state = await s.state()  # still answering
            said_all = everything_said(s)
    finally:
        if fault == "stopped":
            private_postgres.resume()
    assert result["ok"] is False and said in result["message"], result
    assert "\n" not in result["message"] and "Traceback" not in said_all
    assert state is not None
    assert private_postgres.password not in said_all and "wrong-pw-4711" not in said_all
    assert sim.requests == []
