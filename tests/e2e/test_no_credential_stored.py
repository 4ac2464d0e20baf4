"""No credential is stored: a starter run whose worker and judge print the environment and a planted
.env, with marker credentials everywhere; not one marker in the run folder, the workbench or the
events (the language server's notifications: tests/server/test_no_credential_sent.py).

The sandbox keeps the credential variables from the commands (auto); with it off (the control for
the redaction) they print them, and redaction alone keeps them out of what flower writes.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from flower import Runtime
from flower.core.events import Event
from flower.sim.scenarios import prying_scenario
from flower.workflow.base import results_of
from flower.workflow.starter import starter_flow

pytestmark = pytest.mark.e2e

PREFIX = "flower-marker-"
KEY = PREFIX + "apikey-7d1e"  # not shaped like a key: only its value gives it away
TOKEN = PREFIX + "gwtoken-93ab"
HEADER = PREFIX + "header-51c0"
PLANTED = {
    "ANTHROPIC_API_KEY": PREFIX + "dotenvkey-aa11",  # the environment's key wins; this one is masked too
    "GITHUB_TOKEN": PREFIX + "ghtoken-bb22",  # not flower's: masked by its name
    "DB_PASSWORD": PREFIX + "dbpass-cc33",
}
MARKERS = (KEY, TOKEN, HEADER, *PLANTED.values())


def bash_output(sim: Any) -> list[Any]:
    """What every Bash command printed, as the model was shown it."""
    bash_ids = {u["id"] for r in sim.requests for u in r.tool_uses() if u["name"] == "Bash"}
    return [t["content"] for r in sim.requests for t in r.tool_results() if t["tool_use_id"] in bash_ids]


def event_text(event: Event) -> str:
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    return repr(fields) + json.dumps(event.payload, ensure_ascii=False, default=repr)


def files_with_markers(*roots: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                hits = [m for m in MARKERS if m.encode() in data]
                if hits:
                    found[str(path)] = hits
    return found


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_markers_printed_by_worker_and_judge_are_stored_nowhere(
    use_sim, workspace, monkeypatch, sandbox
):
    sim = use_sim(prying_scenario(echoed=(f"ANTHROPIC_API_KEY={KEY}", TOKEN, PLANTED["GITHUB_TOKEN"])))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", f"x-gateway-key: {HEADER}")
    (workspace / ".env").write_text("".join(f"{k}={v}\n" for k, v in PLANTED.items()))
    flow = starter_flow(
        "look around", workspace=workspace, run_dir=workspace / "runs", judge_can_run=True, timeout_s=0
    )
    assert flow.workbench is not None  # the starter flow has one
    runtime = Runtime(
        workspace=workspace, run_dir=workspace / "runs", workbench=flow.workbench, trim=True, sandbox=sandbox
    )
    events: list[Event] = []
    try:
        ctx = await flow.run(runtime, on_event=events.append)
        stderr = list(runtime.stderr_tail)
    finally:
        runtime.close()
    assert results_of(ctx)["干活"].ok

    # the tools really printed the markers: what the model was shown (in memory, never on disk)
    shown = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in sim.requests)
    assert all(m in shown for m in PLANTED.values())  # `cat .env`, sandbox or not
    if sandbox == "off":
        assert KEY in shown and TOKEN in shown  # `env` printed the credentials
    else:  # the sandbox kept the credential variables from every command
        printed = json.dumps(bash_output(sim), ensure_ascii=False)
        assert KEY not in printed and TOKEN not in printed and HEADER not in printed
        asked = str(sim.requests_for("coder")[3].tool_results()[2]["content"])  # printenv KEY TOKEN
        assert "Exit code 1" in asked

    # ... and not one of them in anything flower wrote
    assert flow.workbench is not None  # the starter flow's
    spilled = list((flow.workbench.root / "spill").glob("*.txt"))
    assert spilled, "the long output was not spilled: this test would not look at a spill file"
    assert (workspace / "runs" / "sessions.db").is_file() and (workspace / "runs" / "manifest.json").is_file()
    assert files_with_markers(workspace / "runs", flow.workbench.root) == {}
    assert len(events) > 50
    leaked = [event_text(e) for e in events if any(m in event_text(e) for m in MARKERS)]
    assert leaked == []
    assert not any(m in line for line in stderr for m in MARKERS)
