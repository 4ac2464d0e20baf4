"""The seeds' rule: what the coordinator may run as a glance is exactly what the store expires.

A synthetic transcript holds one Bash call per command of a table (everyday glances and the
adversarial corpus); the trim layer loads it for the sandbox's workspace, and the delegate guard
judges the same commands with the same folder as the hook's ``cwd``. The guard runs a glance
confined (it rewrites the command: an "allow" with ``updatedInput``); where no confinement exists
it lets the rules alone admit a subset, and what it refuses never ran, so it is never expired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from claude_agent_sdk.types import SessionKey
from glance_corpus import CORPUS
from glance_everyday import EVERYDAY
from glance_sandbox import Sandbox

from flower.core.guard import delegate_guard
from flower.shell import is_ephemeral, plan
from flower.stores.ephemeral import EphemeralPolicy
from flower.stores.trim import TrimmingSessionStore, TrimPolicy

KEY: SessionKey = {"project_key": "-glance", "session_id": "s1"}
TABLE = EVERYDAY + [c for commands in CORPUS.values() for c in commands[::25]]


def transcript(commands: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Entries with one Bash call and its result per command, and tool_use_id -> command."""
    entries: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u0", "message": {"role": "user", "content": "look around"}}
    ]
    ids: dict[str, str] = {}
    for n, command in enumerate(commands, start=1):
        tool_id = f"toolu_{n:05d}"
        ids[tool_id] = command
        use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": f"output {n}\n"}
        entries.append(
            {"type": "assistant", "uuid": f"a{n}", "message": {"role": "assistant", "content": [use]}}
        )
        entries.append({"type": "user", "uuid": f"r{n}", "message": {"role": "user", "content": [result]}})
    return entries, ids


async def expired_by_trim(workspace: Path, db: Path, commands: list[str]) -> set[str]:
    entries, ids = transcript(commands)
    policy = TrimPolicy(enabled=False)
    now = [1_000_000.0]
    store = TrimmingSessionStore(db, workspace, policy, EphemeralPolicy(keep_recent=0), clock=lambda: now[0])
    try:
        await store.append(KEY, cast(Any, entries))
        # expiry is decided at a cold resume (the prompt cache has lapsed): the resume it is for
        now[0] += policy.cache_ttl + 1
        loaded = cast(list[dict[str, Any]] | None, await store.load(KEY))
    finally:
        store.close()
    assert loaded is not None
    expired = set()
    for entry in loaded:
        for block in entry["message"]["content"] if isinstance(entry["message"]["content"], list) else []:
            if block.get("type") == "tool_result" and "已过期" in str(block["content"]):
                expired.add(ids[block["tool_use_id"]])
    return expired


async def allowed_by_guard(cwd: Path, commands: list[str], *, confined: bool = True) -> set[str]:
    hook = delegate_guard(allow_glance=True, confine_in=cwd if confined else None).hooks[0]
    allowed = set()
    for command in commands:
        data = {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": str(cwd),
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": "toolu_1",
        }
        decision = await hook(cast(Any, data), "toolu_1", cast(Any, None))
        specific = cast(dict[str, Any], decision.get("hookSpecificOutput", {}))
        if specific.get("permissionDecision") != "deny":
            if confined:  # the command that runs is the confinement of the model's
                assert specific["updatedInput"]["command"] == plan(command, workspace=cwd).command
            allowed.add(command)
    return allowed


async def test_the_trim_layer_expires_exactly_what_the_guard_admits(
    glance_box: Sandbox, tmp_path: Path
) -> None:
    commands = list(dict.fromkeys(TABLE))
    expired = await expired_by_trim(glance_box.workspace, tmp_path / "sessions.db", commands)
    allowed = await allowed_by_guard(glance_box.workspace, commands)
    admitted = {c for c in commands if is_ephemeral(c, workspace=glance_box.workspace)}

    assert expired == admitted
    assert allowed == admitted
    assert 300 <= len(admitted) < len(commands)  # both kinds are in the table
    # without a confinement the rules alone admit fewer, all of which expire
    alone = await allowed_by_guard(glance_box.workspace, commands, confined=False)
    assert alone == {c for c in commands if is_ephemeral(c, workspace=glance_box.workspace, confined=False)}
    assert alone < admitted


async def test_both_callers_judge_in_the_folder_the_command_runs_in(
    glance_box: Sandbox, tmp_path: Path
) -> None:
    # Harmless by its text, but in this workspace the path is a symlink to ~/.ssh/id_rsa.
    command = "cat traps/key-link"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    assert await allowed_by_guard(glance_box.workspace, [command]) == set()
    assert await expired_by_trim(glance_box.workspace, tmp_path / "a.db", [command]) == set()
    assert await allowed_by_guard(elsewhere, [command]) == {command}
    assert await expired_by_trim(elsewhere, tmp_path / "b.db", [command]) == {command}
