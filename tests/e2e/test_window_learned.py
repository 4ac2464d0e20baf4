"""The window against the real Claude Code CLI and flower.sim: a window that overflows earlier
than configured is learned, kept per model and gateway, and used by the next run from its start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flower import AgentSpec, Resilience, Runtime, Workbench
from flower.core.events import ContextUpdate, Event, HandoffDone, WindowNote
from flower.core.window import state_dir

pytestmark = pytest.mark.e2e

FAST = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2, probe_timeout=1.0, max_offline_wait=30)
SOLO = AgentSpec(name="solo", instructions="You are the solo test agent.", allowed_tools=["Read", "Bash"])
HANDOFF_REPLY = (
    "## 现在在做什么\n写 report.md 的第二节\n\n## 已经定下的\n用 markdown,因为要给人读\n\n"
    "## 走不通的路\n用 pandoc 转换:这台机器上没有\n\n## 下一步\n补完第二节\n\n## 现场\nreport.md"
)


@pytest.fixture
def runtime(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # the state goes under the test's HOME
    monkeypatch.delenv("FLOWER_WINDOW", raising=False)
    made: list[Runtime] = []

    def make(run_dir: str, **kw: Any) -> Runtime:
        rt = Runtime(workspace=workspace, run_dir=tmp_path / run_dir, resilience=FAST, **kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


def ls() -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": "ls", "description": "look"}}}


async def test_an_early_overflow_is_learned_and_the_next_run_hands_over_in_time(use_sim, workspace, runtime):
    # run 1: the configured window is 1M (the model's name says nothing); the gateway refuses the
    # turn after one that saw 180K. The CLI says only "Prompt is too long" after a tool's turn, so
    # what last fitted is the window learned: at most that is known to fit
    seen = {"input_tokens": 2000, "cache_read_input_tokens": 178_000}
    first = use_sim(
        {"scripts": {"main": [dict(ls(), usage=seen), {"fault": "too_long"}, "went on in a fresh session"]}},
        max_retries=0,
    )
    rt = runtime("runs-1", workbench=Workbench(workspace))
    assert rt.handoff.window == 1_000_000 and rt.handoff.at == 750_000
    events: list[Event] = []
    r = await rt.run(SOLO, "write report.md", step_name="干活", on_event=events.append)

    assert r.ok and r.text == "went on in a fresh session" and len(r.retired) == 1
    notes = [e for e in events if isinstance(e, WindowNote)]
    assert len(notes) == 1 and (notes[0].configured, notes[0].learned) == (1_000_000, 180_000)
    assert notes[0].base_url == first.base_url and "180.0K" in notes[0].text and "1M" in notes[0].text
    assert notes[0].text in rt.warnings
    done = next(e for e in events if isinstance(e, HandoffDone))
    assert done.degraded and done.window == 180_000
    # the books say the successor started from a mechanical document, and why
    assert any(e.startswith("交接降级(") and "上下文已超长" in e for e in r.errors)
    manifest = json.loads((rt.run_dir / "manifest.json").read_text())
    assert any(e.startswith("交接降级(") for e in manifest[-1]["errors"])
    kept = json.loads((state_dir() / "windows.json").read_text())
    (row,) = kept.values()
    assert row["window"] == 180_000 and row["base_url"] == first.base_url
    assert "prompt is too long" in row["evidence"].lower()
    first.stop()

    # run 2, same gateway: it starts from 180K and hands over at 135K with a whole document
    second = use_sim(
        {
            "scripts": {
                "main": [
                    {
                        "text": "working on report.md",
                        "usage": {"input_tokens": 2000, "cache_read_input_tokens": 138_000},
                    },
                    "continued from the handoff",
                ]
            },
            "rules": [{"when": {"last_user_contains": "写一份交接书"}, "reply": HANDOFF_REPLY, "times": 1}],
        },
        max_retries=0,
    )
    assert second.base_url != first.base_url  # another port: the key is the gateway's URL
    kept_row = kept.pop(next(iter(kept)))
    kept[f"(default) @ {second.base_url}"] = dict(kept_row, base_url=second.base_url)
    (state_dir() / "windows.json").write_text(json.dumps(kept))
    rt2 = runtime("runs-2", workbench=Workbench(workspace))
    events = []
    r2 = await rt2.run(SOLO, "write report.md", step_name="干活", on_event=events.append)

    assert r2.ok and r2.text == "continued from the handoff" and len(r2.retired) == 1
    notes = [e for e in events if isinstance(e, WindowNote)]
    assert len(notes) == 1 and notes[0].learned == 180_000  # said once, at the start
    readings = [e for e in events if isinstance(e, ContextUpdate)]
    assert readings and all((e.window, e.at) == (180_000, 135_000) for e in readings)
    done = next(e for e in events if isinstance(e, HandoffDone))
    assert not done.degraded and done.context == 140_000 and done.window == 180_000
    assert done.sections["next"] == "补完第二节"
    assert done.sections["deadends"] == "用 pandoc 转换:这台机器上没有"
    assert not any(e.startswith("交接降级") for e in r2.errors)


async def test_a_window_that_fits_is_not_remembered(use_sim, workspace, runtime):
    # an overflow right after a turn that saw more than the configured window teaches nothing
    seen = {"input_tokens": 1000, "cache_read_input_tokens": 299_500}
    use_sim({"scripts": {"main": [dict(ls(), usage=seen), {"fault": "too_long"}, "fresh"]}}, max_retries=0)
    from flower import HandoffPolicy

    rt = runtime("runs", handoff=HandoffPolicy(window=300_000))
    events: list[Event] = []
    r = await rt.run(SOLO, "go", on_event=events.append)

    assert r.ok and len(r.retired) == 1
    assert not [e for e in events if isinstance(e, WindowNote)]
    assert not (state_dir() / "windows.json").exists()
