"""The trimming and pruning layers are still full SDK SessionStores."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionStore

from flower.stores.prune import PruningSessionStore
from flower.stores.trim import TrimmingSessionStore

OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
LAYERS = [TrimmingSessionStore, PruningSessionStore]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: c.__name__)
async def test_layer_passes_sdk_conformance(tmp_path: Path, layer: type[TrimmingSessionStore]) -> None:
    counter = itertools.count()
    stores: list[TrimmingSessionStore] = []

    def make() -> TrimmingSessionStore:
        n = next(counter)
        store = layer(tmp_path / f"db{n}" / "sessions.db", tmp_path / f"ws{n}")
        stores.append(store)
        return store

    try:
        await run_session_store_conformance(make)
    finally:
        for store in stores:
            store.close()
    assert len(stores) > 10  # every contract got a fresh store


@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: c.__name__)
def test_no_optional_method_is_skipped(tmp_path: Path, layer: type[TrimmingSessionStore]) -> None:
    store = layer(tmp_path / "sessions.db", tmp_path)
    try:
        assert SessionStore in type(store).__mro__
        for name in OPTIONAL:
            # The conformance suite skips a method whose implementation is the Protocol default.
            assert getattr(type(store), name) is not getattr(SessionStore, name), name
    finally:
        store.close()


@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: c.__name__)
async def test_a_layer_wraps_any_store_and_keeps_its_decisions_in_memory_without_a_ledger(
    tmp_path: Path, layer: type[TrimmingSessionStore]
) -> None:
    from claude_agent_sdk import InMemorySessionStore

    from flower.stores.ledger import MemoryLedger

    counter = itertools.count()

    def make() -> TrimmingSessionStore:
        return layer(InMemorySessionStore(), tmp_path / f"ws{next(counter)}")

    await run_session_store_conformance(make)
    store = make()
    assert isinstance(store.ledger, MemoryLedger)  # the SDK's store keeps no ledger of its own
    key: SessionKey = {"project_key": "p", "session_id": "s"}
    store.ledger.record(key, "spill", ["toolu_1"], 1.0)
    store.ledger.record(key, "spill", {"toolu_1": "later"}, 2.0)  # the first decision stays
    assert store.ledger.decided(key) == {"spill": {"toolu_1": ""}}
    await store.delete(key)
    assert store.ledger.decided(key) == {}
