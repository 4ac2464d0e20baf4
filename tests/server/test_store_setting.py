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
