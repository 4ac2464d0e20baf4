"""What the CLI sends after a resume, with the stores in between: stable, healed, no growth.

The request is the CLI's own (captured by flower.sim), and so is the cache accounting: the
sim keeps the API's prefix cache on a clock the test shares with the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from flower import AgentSpec, EphemeralPolicy, PrunePolicy, Resilience, Runtime, TrimPolicy
from flower.sim.cache import SimClock
from flower.sim.server import Recorded, SimServer, Usage
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.e2e
UseSim = Callable[..., SimServer]

PLACEHOLDER = "No response requested."
ORPHAN_TEXT = PrunePolicy().orphan_text
SPEC = AgentSpec(name="worker", instructions="economy test", allowed_tools=["Bash", "Read"])


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "run"}}, **extra}


def normalized(rec: Recorded) -> list[str]:
    """The messages as the API's cache sees them: cache marks and string/list form set aside."""

    def unmark(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: unmark(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [unmark(v) for v in value]
        return value

    out = []
    for message in rec.messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out.append(json.dumps({"role": message.get("role"), "content": unmark(blocks)}, ensure_ascii=False))
    return out


def first_request_after(sim: SimServer, prompt: str) -> Recorded:
    return next(r for r in sim.requests_for("main") if r.last_user_text.endswith(prompt))


def texts(rec: Recorded) -> list[str]:
    contents = [m.get("content") for m in rec.messages]
    return [
        b.get("text", "")
        for content in contents
        if isinstance(content, list)
        for b in content
        if isinstance(b, dict) and b.get("type") == "text"
    ] + [content for content in contents if isinstance(content, str)]


def usage(rec: Recorded) -> Usage:
    assert rec.usage is not None, f"a fault answered: {rec.reply}"
    return rec.usage


def runtime(workspace: Path, tmp_path: Path, clock: SimClock, **kw: Any) -> Runtime:
    rt = Runtime(
        workspace=workspace,
        run_dir=tmp_path / "runs",
        handoff=False,
        resilience=kw.pop("resilience", Resilience(base_delay=0.05, probe_interval=0.2)),
        **kw,
    )
    assert isinstance(rt.store, PruningSessionStore)  # the runtime's own layers over SQLite
    rt.store.clock = clock  # the store and the sim agree on when the cache expires
    return rt


def when_exists(path: Path, then: Any) -> threading.Thread:
    def watch() -> None:
        wait_for(path.exists)
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


# With the Bash sandbox on, the CLI itself sends its sandbox note as a system message after every
# user turn (flower adds nothing there); with it off, nothing but the answer and the prompt.
@pytest.mark.parametrize(("sandbox", "notes"), [("off", 0), ("require", 1)])
async def test_the_cli_placeholder_is_sent_once_and_the_request_does_not_grow_by_itself(
    use_sim: UseSim, workspace: Path, tmp_path: Path, sandbox: str, notes: int
) -> None:
    clock = SimClock()
    script = [bash("touch started && sleep 30"), "stopped as asked", "a done", "b done", "c done"]
    sim = use_sim(SimServer({"scripts": {"main": script}}, clock=clock).start(), max_retries=0)
    rt = runtime(workspace, tmp_path, clock, sandbox=sandbox)
    try:
        watcher = when_exists(workspace / "started", lambda: rt.interrupt("stop, that is enough"))
        first = await rt.run(SPEC, "start", step_name="干活")  # interrupted, then resumed by the Runtime
        watcher.join(5)
        for word in ("again a", "again b", "again c"):
            result = await rt.run(SPEC, word, step_name="干活", resume=first.session_id)
            assert result.ok, result.error
    finally:
        rt.close()

    assert first.ok and first.text.endswith("stopped as asked")
    resumes = [first_request_after(sim, w) for w in ("again a", "again b", "again c")]
    for rec in resumes:
        assert texts(rec).count(PLACEHOLDER) == 1
    # each resume adds the previous answer and the new prompt, and only the CLI's sandbox note
    sizes = [len(rec.messages) for rec in resumes]
    assert sizes[1] - sizes[0] == 2 + notes and sizes[2] - sizes[1] == 2 + notes
    added = [m for m in resumes[2].messages[sizes[1] :] if m.get("role") == "system"]
    assert len(added) == notes and all(
        "Bash command sandbox" in json.dumps(m, ensure_ascii=False) for m in added
    )
    for before, after in itertools.pairwise(resumes):
        assert normalized(after)[: len(normalized(before)) - 1] == normalized(before)[:-1]
        # everything up to the previous request's end is read back from the cache
        assert (
            usage(after)["cache_read_input_tokens"]
            >= usage(before)["cache_read_input_tokens"] + usage(before)["cache_creation_input_tokens"]
        )


def cli_children() -> list[int]:
    """Claude Code processes this test process started, with everything under them.

    The CLI runs under flower-reaper, so the child of this process is the reaper: a machine
    going down takes the whole tree at once, and so does this."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    roots = (b"claude", b"flower-reaper")
    found = [
        pid for pid, ppid in parents.items() if ppid == os.getpid() and any(r in commands[pid] for r in roots)
    ]
    i = 0
    while i < len(found):
        found += [pid for pid, ppid in parents.items() if ppid == found[i] and pid not in found]
        i += 1
    return found


def wait_for(condition: Any) -> None:
    while not condition():
        threading.Event().wait(0.05)


def call_stored(db: Path) -> bool:
    return any("touch started" in json.dumps(e) for e in stored_payloads(db) if e.get("type") == "assistant")


def stored_payloads(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        return [json.loads(p) for (p,) in con.execute("SELECT payload FROM entries ORDER BY seq")]
    finally:
        con.close()


async def test_a_call_whose_result_never_arrived_is_answered_with_the_neutral_result(
    use_sim: UseSim, workspace: Path, tmp_path: Path
) -> None:
    clock = SimClock()
    script = [bash("touch started && sleep 30"), "picked up after the crash", "still fine"]
    sim = use_sim(SimServer({"scripts": {"main": script}}, clock=clock).start(), max_retries=0)
    rt = runtime(workspace, tmp_path, clock, resilience=False)
    db = tmp_path / "runs" / "sessions.db"
    try:
        run = asyncio.ensure_future(rt.run(SPEC, "go", step_name="干活"))
        # the tool is running and its call is in the store: the moment the machine dies
        await asyncio.to_thread(wait_for, lambda: (workspace / "started").exists() and call_stored(db))
        for pid in cli_children():
            with contextlib.suppress(ProcessLookupError):  # a child that ended by itself meanwhile
                os.kill(pid, signal.SIGKILL)  # the machine went down while the tool ran
        crashed = await run
        assert not crashed.ok and crashed.session_id
        call = next(
            b["id"]
            for e in stored_payloads(db)
            if e.get("type") == "assistant"
            for b in e["message"]["content"]
            if b.get("type") == "tool_use"
        )
        assert call not in json.dumps([e for e in stored_payloads(db) if e.get("type") == "user"])

        resumed = await rt.run(SPEC, "go on", step_name="干活", resume=crashed.session_id)
        again = await rt.run(SPEC, "and now?", step_name="干活", resume=crashed.session_id)
    finally:
        rt.close()

    assert resumed.ok and resumed.text == "picked up after the crash" and again.ok
    shown = first_request_after(sim, "go on")
    answers = [r for r in shown.tool_results() if r["tool_use_id"] == call]
    assert [a["content"] for a in answers] == [ORPHAN_TEXT]
    assert "Tool call interrupted" not in shown.all_text  # the CLI did not have to patch it up
    assert {u["id"] for u in shown.tool_uses()} == {r["tool_use_id"] for r in shown.tool_results()}
    later = first_request_after(sim, "and now?")
    assert normalized(later)[: len(normalized(shown)) - 1] == normalized(shown)[:-1]
    # the answer lives in the resumed copy only: the stored rows never got it
    assert ORPHAN_TEXT not in json.dumps(stored_payloads(db), ensure_ascii=False)


async def test_trimming_keeps_the_prefix_byte_identical_while_the_cache_lives(
    use_sim: UseSim, workspace: Path, tmp_path: Path
) -> None:
    notes = []  # the rest of the round: results too short to spill, most of the prompt
    for i in range(6):
        note = workspace / f"note{i}.txt"
        note.write_text(f"note {i}: " + "a line of notes that a worker handed back\n" * 44)
        notes.append({"tool": {"name": "Read", "input": {"file_path": str(note)}}})
    clock = SimClock()
    script = [
        bash("seq 1 700"),
        bash("git status"),
        *notes,
        "round one",
        bash("echo two"),
        "round two",
        "round three",
        "round four, after a long pause",
        "round five",
    ]
    sim = use_sim(SimServer({"scripts": {"main": script}}, clock=clock).start(), max_retries=0)
    rt = runtime(
        workspace, tmp_path, clock, trim=TrimPolicy(keep_recent=1), ephemeral=EphemeralPolicy(keep_recent=1)
    )
    assert isinstance(rt.store, PruningSessionStore)
    try:
        first = await rt.run(SPEC, "one", step_name="干活")
        for word in ("two", "three"):
            clock.advance(60)  # a judge ran for a minute: well inside the cache's life
            assert (await rt.run(SPEC, word, step_name="干活", resume=first.session_id)).ok
        clock.advance(600)  # the next resume comes after the cache has expired
        assert (await rt.run(SPEC, "four", step_name="干活", resume=first.session_id)).ok
        clock.advance(60)
        assert (await rt.run(SPEC, "five", step_name="干活", resume=first.session_id)).ok
    finally:
        rt.close()

    two, three, four, five = (first_request_after(sim, w) for w in ("two", "three", "four", "five"))
    # warm resumes: nothing is decided, what was sent before is sent again byte for byte
    assert "699\n700" in two.all_text and "699\n700" in three.all_text
    assert normalized(three)[: len(normalized(two)) - 1] == normalized(two)[:-1]
    assert usage(three)["cache_read_input_tokens"] >= usage(two)["cache_read_input_tokens"]
    # the cold resume is where trimming happens: the whole prompt is written anyway
    assert "699\n700" not in four.all_text and "[工具结果已裁剪" in four.all_text
    assert "git status 的结果已过期" in four.all_text or "`git status` 的结果已过期" in four.all_text
    spill = list((workspace / ".flower" / "spill").glob("*.txt"))
    assert len(spill) == 1 and spill[0].read_text().splitlines()[-1] == "700"
    assert usage(four)["cache_read_input_tokens"] < usage(four)["cache_creation_input_tokens"]
    # and from there on the trimmed prompt is as stable as the plain one was
    assert normalized(five)[: len(normalized(four)) - 1] == normalized(four)[:-1]


async def test_only_api_errors_the_cli_would_send_are_taken_out(
    use_sim: UseSim, workspace: Path, tmp_path: Path
) -> None:
    clock = SimClock()
    script = [bash("echo hi"), {"fault": 500}, "after the outage", "plain", "layered", "flagless", "cleaned"]
    sim = use_sim(SimServer({"scripts": {"main": script}}, clock=clock).start(), max_retries=0)
    rt = runtime(workspace, tmp_path, clock)
    try:
        first = await rt.run(SPEC, "go", step_name="干活")  # the 500 left an API-error entry
        assert first.ok and first.resumed and first.session_id
        key: SessionKey = {"project_key": rt.project_key, "session_id": first.session_id}
        raw = await entries_of(SqliteSessionStore(tmp_path / "runs" / "sessions.db"), key)
        assert [e["message"]["model"] for e in raw if e.get("isApiErrorMessage")] == ["<synthetic>"]

        async def resume_with(store: SqliteSessionStore | PruningSessionStore, prompt: str) -> Recorded:
            rt.store.close()
            rt.store = store
            assert (await rt.run(SPEC, prompt, step_name="干活", resume=first.session_id)).ok
            return first_request_after(sim, prompt)

        # the CLI's own shape (both marks): the CLI leaves it out, plain or pruned
        plain = await resume_with(SqliteSessionStore(tmp_path / "runs" / "sessions.db"), "plain")
        layered = await resume_with(
            PruningSessionStore(tmp_path / "runs" / "sessions.db", workspace), "layered"
        )
        # the same error without its flag, as another writer might have stored it
        flagless = [{k: v for k, v in e.items() if k != "isApiErrorMessage"} for e in raw]
        other = tmp_path / "other.db"
        await put_entries(SqliteSessionStore(other), key, flagless)
        sent = await resume_with(SqliteSessionStore(other), "flagless")
        cleaned = await resume_with(PruningSessionStore(other, workspace), "cleaned")
    finally:
        rt.close()

    assert "API Error" not in plain.all_text and "API Error" not in layered.all_text
    assert "API Error: 500" in sent.all_text  # the CLI would feed it back as the model's own words
    assert "API Error" not in cleaned.all_text  # so that one the store takes out


async def entries_of(store: SqliteSessionStore, key: SessionKey) -> list[dict[str, Any]]:
    try:
        loaded = await store.load(key)
    finally:
        store.close()
    assert loaded is not None
    return cast("list[dict[str, Any]]", loaded)


async def put_entries(store: SqliteSessionStore, key: SessionKey, entries: list[dict[str, Any]]) -> None:
    try:
        await store.append(key, cast("list[SessionStoreEntry]", entries))
    finally:
        store.close()
