"""The editor's `flower.store` through LSP: initializationOptions carry a shared store's URL to
the real engine, whose run then keeps its transcripts and lineage in that database; nothing the
server says shows the store's password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
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


async def test_the_store_setting_keeps_the_editors_run_in_the_database(
    sim_factory, sim_lsp, workspace: Path, pg_url: str, postgres: LocalPostgres
):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, options={"timeout_s": 60, "store": pg_url}) as s:
        answer_the_clarifier(s)
        assert (await s.command("flower.start", {"ask": REQUEST}))["ok"] is True
        await finished(s)
        state = await s.state()
        said = everything_said(s)
    assert set(state["steps"]) == STEPS
    assert not (workspace / "runs" / "sessions.db").exists()  # the transcripts went to the database
    shared = PostgresRunBook.direct(pg_url).lineage(identify(workspace).key)
    assert shared is not None and shared["steps"] == state["steps"] and shared["woke"] == 1
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
