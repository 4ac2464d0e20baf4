"""Putting CLI-shaped entries into a store and getting them back, typed as plain dicts.

The SDK types transcript entries as opaque TypedDicts; the store tests build and inspect
them as the JSON objects they are.
"""

from __future__ import annotations

from typing import Any, cast

from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry


async def put(store: SessionStore, key: SessionKey, entries: list[dict[str, Any]]) -> None:
    await store.append(key, cast("list[SessionStoreEntry]", entries))


async def get(store: SessionStore, key: SessionKey) -> list[dict[str, Any]]:
    """Load a transcript that exists."""
    loaded = await store.load(key)
    assert loaded is not None
    return cast("list[dict[str, Any]]", loaded)
