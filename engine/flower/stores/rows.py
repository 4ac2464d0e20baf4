"""What every backend does the same way with store keys and entries: the subpath of a key, the
idempotency uuid of an entry, its serialised form, and the context size an entry reports."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from claude_agent_sdk.types import SessionKey, SessionListSubkeysKey, SessionStoreEntry

from ..base.loose import mapping
from ..base.secrets import redact_value
from ..base.usage import context_tokens

__all__ = ["dump", "entry_tokens", "store_key", "subpath", "uuid_of"]

# A lone surrogate (a tool printed broken UTF-16) cannot be encoded as UTF-8 text.
_SURROGATE = re.compile("[\ud800-\udfff]")


def subpath(key: SessionKey | SessionListSubkeysKey) -> str:
    """The key's subpath, '' for the main transcript.

    The SDK treats an empty subpath as invalid; folding it into "main" keeps one row per
    transcript instead of two that look alike.
    """
    sub = key.get("subpath")
    return sub if isinstance(sub, str) else ""


def store_key(key: SessionKey) -> str:
    """``project_key/session_id[/subpath]``: the human-readable store key."""
    parts = [key["project_key"], key["session_id"]]
    sub = subpath(key)
    if sub:
        parts.append(sub)
    return "/".join(parts)


def uuid_of(entry: SessionStoreEntry) -> str | None:
    uid = entry.get("uuid")
    return uid if isinstance(uid, str) and uid else None


def dump(entry: object) -> str:
    """Compact JSON of an entry as a store keeps it: without credentials (what a tool printed may
    hold one), UTF-8 safe: non-ASCII stays readable unless a lone surrogate forces escapes."""
    entry = redact_value(entry)
    text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    if _SURROGATE.search(text):
        return json.dumps(entry, ensure_ascii=True, separators=(",", ":"))
    return text


def entry_tokens(entry: Mapping[str, object]) -> int:
    """The context an assistant entry's usage says the model saw; 0 for any other entry."""
    if entry.get("type") != "assistant":
        return 0
    return context_tokens(mapping(entry.get("message")).get("usage"))
