"""Catch sessions.db up with the transcripts Claude Code writes on its own.

The CLI appends every entry to its own JSONL file, and the SDK mirrors it into the session store
a moment later. A process killed in between leaves the store a few entries behind, or without
the session at all, although the session id is already in the lineage. So a session counts as
recoverable from the moment its id is on disk: before it is resumed, whatever the store lacks
is copied from the CLI's files (its config dir, or the temp dir a resumed session was written
into, which a killed process never got to remove).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..stores.transcript import is_stored

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

_SESSION_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{7,63}$")
# what the CLI keeps for itself in its file and never mirrors into a store
_LOCAL_ONLY = ("api-request",)


class EntryStore(Protocol):
    """What catch_up needs of a store: flower's own stores have both (stores/layer.py)."""

    def uuids(self, key: SessionKey) -> set[str] | None: ...

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None: ...


def config_dir() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else Path.home() / ".claude"


def transcript_files(session_id: str, project_key: str) -> list[Path]:
    """The CLI's own main transcripts of this session, oldest first (the newest holds the most)."""
    if not _SESSION_ID.match(session_id):
        return []
    roots = [config_dir(), *Path(tempfile.gettempdir()).glob("claude-resume-*")]
    found = []
    for root in roots:
        path = root / "projects" / project_key / f"{session_id}.jsonl"
        try:
            info = path.stat()
            # in a shared temp dir only this user's own files count: nobody can plant a history
            if (
                path.is_file()
                and info.st_size > 0
                and info.st_uid == os.getuid()
                and root.stat().st_uid == os.getuid()
            ):
                found.append(path)
        except OSError:
            continue
    return sorted(found, key=_mtime)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def catch_up(store: EntryStore, project_key: str, session_id: str) -> int:
    """Copy into `store` every entry of the session's own transcripts it does not hold yet.

    Entries are matched by uuid, so running it again adds nothing. Returns how many were added.
    """
    added = 0
    for main in transcript_files(session_id, project_key):
        key: SessionKey = {"project_key": project_key, "session_id": session_id}
        added += _import(store, key, main)
        subagents = main.with_suffix("") / "subagents"
        for sub in sorted(subagents.rglob("*.jsonl")) if subagents.is_dir() else []:
            subpath = "/".join([*sub.relative_to(main.with_suffix("")).parts[:-1], sub.stem])
            added += _import(store, {**key, "subpath": subpath}, sub)
    return added


def _import(store: EntryStore, key: SessionKey, path: Path) -> int:
    stored = store.uuids(key)
    fresh: list[SessionStoreEntry] = []
    for entry in _entries(path):
        if entry["type"].startswith(_LOCAL_ONLY):
            continue
        uid = entry.get("uuid")
        if stored is None:
            fresh.append(entry)  # the store never saw this transcript: take all of it
        elif isinstance(uid, str) and uid and uid not in stored:
            fresh.append(entry)
            stored.add(uid)
    if fresh:
        store.add(key, fresh)
    return len(fresh)


def _entries(path: Path) -> list[SessionStoreEntry]:
    try:
        lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line torn by the kill
        if is_stored(value):  # any other line is not an entry to copy
            out.append(value)
    return out


__all__ = ["catch_up", "config_dir", "transcript_files"]
