"""Every place flower writes something of its own passes it through the one redaction.

One test per boundary, each reading back what really landed on disk (or reached a callback).
The whole run, through the real CLI, is tests/e2e/test_no_credential_stored.py.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk.types import HookInput, SessionKey

from flower.base import secrets
from flower.base.files import atomic_write
from flower.base.secrets import MASK
from flower.core.events import Event, ToolResult, emitter
from flower.core.guard import spill_guard
from flower.core.human import HumanChannel
from flower.core.workbench import Workbench
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import TrimmingSessionStore

SECRET = "boundary-marker-6c3d"
KEY: SessionKey = {"project_key": "-ws", "session_id": "s1"}


@pytest.fixture(autouse=True)
def _known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def on_disk(*roots: Path) -> bytes:
    return b"".join(p.read_bytes() for root in roots for p in root.rglob("*") if p.is_file())


async def test_the_session_store_keeps_no_credential_a_tool_printed(tmp_path):
    store = SqliteSessionStore(tmp_path / "sessions.db")
    entry = {
        "type": "user",
        "uuid": "u1",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": f"KEY={SECRET}"}]},
    }
    try:
        await store.append(KEY, [entry])  # type: ignore[list-item]  # an entry as the SDK hands it over
        loaded = await store.load(KEY)
    finally:
        store.close()
    assert SECRET.encode() not in on_disk(tmp_path)  # the database, its journal and its WAL
    rows = sqlite3.connect(tmp_path / "sessions.db").execute("SELECT payload FROM entries").fetchall()
    assert json.loads(rows[0][0])["message"]["content"][0]["content"] == f"KEY={MASK}"
    assert loaded is not None and entry["message"]["content"][0]["content"] == f"KEY={SECRET}"  # type: ignore[index]


def test_the_resume_time_spill_file_keeps_none(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = TrimmingSessionStore(tmp_path / "sessions.db", ws)
    try:
        path = store._spill(f"a long output with {SECRET} in it\n" * 200)
    finally:
        store.close()
    assert path is not None and SECRET not in path.read_text() and MASK in path.read_text()


async def test_the_spill_guards_file_and_its_pointer_keep_none(tmp_path):
    wb = Workbench(tmp_path / "ws")
    wb.ensure()
    stdout = f"printenv said {SECRET}\n" + "x\n" * 3000
    data = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "printenv; seq 1 3000"},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
        "cwd": str(wb.workspace),
    }
    out = await spill_guard(wb).hooks[0](cast("HookInput", data), "t1", {"signal": None})
    shown = json.dumps(out, ensure_ascii=False)
    assert SECRET not in shown and MASK in shown  # what the model is shown instead
    assert SECRET.encode() not in on_disk(wb.root / "spill") and list((wb.root / "spill").iterdir())


def test_every_whole_file_flower_writes_keeps_none(tmp_path):
    path = atomic_write(tmp_path / "交接-干活.md", f"## 做到哪了\nran with ANTHROPIC_API_KEY={SECRET}\n")
    assert SECRET not in path.read_text(encoding="utf-8")


def test_an_event_reaches_a_front_end_without_it():
    got: list[Event] = []
    emitter(got.append)(ToolResult(text=f"env: {SECRET}", tool_use_id="t1"))
    assert got[0].text == f"env: {MASK}" and SECRET not in repr(got[0].payload)


async def test_the_question_log_the_brief_and_the_channels_events_keep_none(tmp_path):
    log, brief = tmp_path / "问答记录.md", tmp_path / "需求.md"
    brief.write_text("## 目标\nx\n")
    events: list[Any] = []
    channel = HumanChannel(log_path=log, amend_path=brief, timeout_s=5, on_event=events.append)
    asking = asyncio.ensure_future(channel.ask(f"use the key {SECRET}?"))
    waiting = await channel.next_ask(timeout=5)
    assert waiting is not None
    channel.answer(waiting.id, f"yes, {SECRET}")
    await asking
    channel.amend(f"also: the token is {SECRET}")
    assert SECRET not in log.read_text(encoding="utf-8") + brief.read_text(encoding="utf-8")
    assert events and all(SECRET not in repr(e) for e in events)


def test_the_redaction_knows_the_credentials_as_they_are_now(monkeypatch):
    monkeypatch.setattr(secrets, "_remembered", set())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "rotated-key-0000")
    assert secrets.redact(f"{SECRET} rotated-key-0000") == f"{SECRET} {MASK}"
