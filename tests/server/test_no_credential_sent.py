"""No credential leaves the language server: a run whose worker prints the environment and a planted
.env, with marker credentials in the server's environment; every message the server sends the
client (notifications, log and show messages, requests) is recorded and searched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flower.sim.scenarios import prying_scenario

pytestmark = pytest.mark.e2e

RUN_S = 180.0
PREFIX = "lsp-marker-"
KEY, TOKEN, HEADER = PREFIX + "apikey-41", PREFIX + "gwtoken-42", PREFIX + "header-43"
PLANTED = {"GITHUB_TOKEN": PREFIX + "ghtoken-44", "DB_PASSWORD": PREFIX + "dbpass-45"}
MARKERS = (KEY, TOKEN, HEADER, *PLANTED.values())


def stored(workspace: Path) -> bytes:
    """Everything flower wrote in the workspace (the planted .env is the test's own)."""
    return b"".join(p.read_bytes() for p in workspace.rglob("*") if p.is_file() and p.name != ".env")


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_nothing_the_server_sends_carries_a_credential(sim_factory, sim_lsp, workspace, sandbox):
    sim = sim_factory(prying_scenario(echoed=(KEY, TOKEN, PLANTED["GITHUB_TOKEN"]), judge_runs=False))
    (workspace / ".env").write_text("".join(f"{k}={v}\n" for k, v in PLANTED.items()))
    env = {
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_AUTH_TOKEN": TOKEN,
        "ANTHROPIC_CUSTOM_HEADERS": f"x-gateway-key: {HEADER}",
    }
    async with sim_lsp(sim, env=env, options={"timeout_s": 0, "sandbox": sandbox}) as s:
        sent = s.record_all()
        assert (await s.command("flower.start", {"ask": "look around"}))["ok"] is True
        await s.until(
            lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the run to end"
        )
        assert s.run_phase() == "finished", s.events_of("run")[-1]

    # the worker really printed the planted secrets (and, unconfined, the credentials)
    shown = json.dumps([r.body for r in sim.requests], ensure_ascii=False)
    assert all(v in shown for v in PLANTED.values())
    bash_ids = {u["id"] for r in sim.requests for u in r.tool_uses() if u["name"] == "Bash"}
    bash = json.dumps(
        [t["content"] for r in sim.requests for t in r.tool_results() if t["tool_use_id"] in bash_ids]
    )
    assert (TOKEN in bash) is (sandbox == "off")  # unconfined, `env` printed the gateway token
    # what the server sent: the log lines, the events and their texts, the refused .env's notice
    texts = [repr(m) for m in sent]
    assert len(texts) > 30 and any("ignored GITHUB_TOKEN, DB_PASSWORD" in m for m in texts)
    assert any("flower/event" in m and "tool" in m for m in texts)
    leaked = [m[:300] for m in texts if any(marker in m for marker in MARKERS)]
    assert leaked == []
    assert not any(m.encode() in stored(workspace) for m in MARKERS)  # run folder and workbench
