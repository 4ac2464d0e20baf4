"""The resume-time layers are composed, not inherited: pruning holds a trimming layer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flower.stores.prune import PrunePolicy, PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import TrimmingSessionStore, TrimPolicy


def _entries() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent = None

    def add(kind: str, content: list[dict[str, Any]], **extra: Any) -> None:
        nonlocal parent
        uid = f"u{len(out)}"
        role = "assistant" if kind == "assistant" else "user"
        out.append(
            {
                "type": kind,
                "uuid": uid,
                "parentUuid": parent,
                "message": {"role": role, "content": content},
                **extra,
            }
        )
        parent = uid

    add("user", [{"type": "text", "text": "start"}])
    for n in range(3):  # three denied calls: only the last is kept (keep_denials=1)
        add("assistant", [{"type": "tool_use", "id": f"deny{n}", "name": "Write", "input": {}}])
        add(
            "user",
            [{"type": "tool_result", "tool_use_id": f"deny{n}", "content": "denied", "is_error": True}],
            toolDenialKind="permission-rule",
        )
    add("assistant", [{"type": "tool_use", "id": "big", "name": "Read", "input": {}}])
    add("user", [{"type": "tool_result", "tool_use_id": "big", "content": "x" * 5000}])
    add("assistant", [{"type": "tool_use", "id": "late", "name": "Read", "input": {}}])
    add("user", [{"type": "tool_result", "tool_use_id": "late", "content": "ok"}])
    return out


def test_layers_composed_as_the_runtime_does_prune_noise_and_trim_the_transcript(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    under = SqliteSessionStore(tmp_path / "sessions.db")
    now = [1_800_000_000.0]
    store = PruningSessionStore(
        under,
        workspace=ws,
        policy=TrimPolicy(keep_recent=1),
        prune=PrunePolicy(keep_denials=1),
        clock=lambda: now[0],
    )
    key = {"project_key": "p", "session_id": "s"}
    try:
        asyncio.run(store.append(key, _entries()))  # type: ignore[arg-type]
        now[0] += 3600  # the cache is cold: the resume may decide
        loaded = asyncio.run(store.load(key))  # type: ignore[arg-type]
        assert loaded is not None
        text = repr(loaded)
        assert "deny0" not in text and "deny1" not in text and "deny2" in text  # noise pruned
        assert "x" * 5000 not in text and ".flower/spill" in text  # the big result spilled
        assert store.denials_dropped == 2 and store.pruned > 0
        assert len(asyncio.run(under.load(key)) or []) == len(_entries())  # type: ignore[arg-type]
    finally:
        store.close()


def test_pruning_is_not_a_trimming_subclass_but_offers_what_callers_use(tmp_path: Path) -> None:
    assert not issubclass(PruningSessionStore, TrimmingSessionStore)
    store = PruningSessionStore(tmp_path / "s.db", tmp_path, clock=lambda: 5.0)
    try:
        assert isinstance(store.trimming, TrimmingSessionStore)
        assert type(store.inner) is SqliteSessionStore and store.trimming.inner is store.inner
        assert store.workspace == tmp_path.resolve() and isinstance(store.policy, TrimPolicy)
        assert store.clock() == 5.0
        store.clock = lambda: 7.0
        assert store.trimming.clock() == 7.0 and store.last_boundary == "" and store.last_report == {}
        assert store.ledger is store.trimming.ledger
    finally:
        store.close()
