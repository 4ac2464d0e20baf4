"""Resume-time pruning: keep errors out of the context the model resumes with.

Trimming decides by size and value; pruning decides by "is this an error": old denied calls,
synthetic API-error messages left by a network outage, and results cut off by an interrupt.
Like trimming, it only changes the copy ``load()`` returns; SQLite keeps every row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .ephemeral import EphemeralPolicy
from .trim import Entry, TrimmingSessionStore, TrimPolicy, _blocks, _is_block, _replace_block

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

# The harness marks a call refused by a permission rule or a PreToolUse hook with this.
_DENIAL_KIND = "permission-rule"
_INTERRUPT_KIND = "interrupted"
_SYNTHETIC_MODEL = "<synthetic>"

# Kinds the harness gives a call that a stop cut short (as opposed to a rule refusing it).
_CUT_SHORT_KINDS = frozenset({"user-rejected", "interrupted", "cancelled"})
# The user line the harness appends after results of calls cut short by an interrupt.
_INTERRUPT_MARK = "[Request interrupted by user for tool use]"
# Fields that point at another entry by uuid and must not point at a dropped one.
_LINKS = ("parentUuid", "logicalParentUuid", "leafUuid")

# Text fallbacks, for results written without the structural markers.
_HOOK_DENIAL = re.compile(r"^\s*(?:<tool_use_error>)?\s*PreToolUse:\S+ hook error: ")
_INTERRUPTED = re.compile(r"^\s*(?:<tool_use_error>)?\s*\[(?:Request|Tool call|Agent call) interrupted")


@dataclass
class PrunePolicy:
    """What ``PruningSessionStore`` keeps out of the resumed context."""

    drop_api_errors: bool = True
    neutralize_interrupts: bool = True
    interrupt_text: str = "[上一轮在此处被中断,该工具结果未产生]"
    keep_denials: int = 1


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if _is_block(p, "text") and isinstance(p.get("text"), str))
    return ""


def _tool_results(entry: Entry) -> list[tuple[int, dict[str, Any]]]:
    if entry.get("type") != "user" or entry.get("isCompactSummary"):
        return []
    blocks = _blocks(entry) or []
    return [(j, b) for j, b in enumerate(blocks) if _is_block(b, "tool_result")]


def _interrupted(entry: Entry, block: dict[str, Any]) -> bool:
    if entry.get("toolDenialKind") == _INTERRUPT_KIND or entry.get("interruptedByShutdown") is True:
        return True
    # The harness always flags the results it writes for a stop as errors.
    return block.get("is_error") is True and bool(_INTERRUPTED.match(_result_text(block)))


def _is_interrupt_mark(entry: Entry) -> bool:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.startswith(_INTERRUPT_MARK)
    if isinstance(content, list) and content and all(_is_block(b, "text") for b in content):
        return str(content[0].get("text", "")).startswith(_INTERRUPT_MARK)
    return False


def _cut_short_by_mark(entries: list[Entry], marks: list[int]) -> set[int]:
    """Indices of result entries that the interrupt marks at ``marks`` say were cut short.

    When a stop lands mid-tool, the CLI writes the result as a rejection (``user-rejected``)
    and follows it with the interrupt mark. Walking the chain back from the mark to the
    assistant turn finds the results of that batch; those the harness cut short are the ones
    carrying a stop kind. Results that completed before the stop are left alone.
    """
    if not marks:
        return set()
    index = {
        e["uuid"]: i for i, e in enumerate(entries) if isinstance(e, dict) and isinstance(e.get("uuid"), str)
    }
    hits: set[int] = set()
    for mark in marks:
        seen: set[int] = set()
        i = index.get(entries[mark].get("parentUuid"))
        while i is not None and i not in seen:
            seen.add(i)
            parent = entries[i]
            if parent.get("type") == "assistant":
                break
            if parent.get("type") == "user":
                if not _tool_results(parent):
                    break  # reached a prompt: the mark is not about tool calls
                if parent.get("toolDenialKind") in _CUT_SHORT_KINDS:
                    hits.add(i)
            i = index.get(parent.get("parentUuid"))
    return hits


def _pairs_with(block: Any, ids: set[str]) -> bool:
    if _is_block(block, "tool_use"):
        return block.get("id") in ids
    if _is_block(block, "tool_result"):
        return block.get("tool_use_id") in ids
    return False


def _is_api_error(entry: Entry) -> bool:
    if entry.get("isApiErrorMessage") is True:
        return True
    message = entry.get("message")
    return (
        entry.get("type") == "assistant"
        and isinstance(message, dict)
        and message.get("model") == _SYNTHETIC_MODEL
    )


class PruningSessionStore(TrimmingSessionStore):
    """``TrimmingSessionStore`` that also prunes denials, API errors and interrupt leftovers.

    The 4th positional parameter is ``prune``, not ``ephemeral`` as in the parent: pass
    policies by keyword.
    """

    def __init__(
        self,
        path: str | Path,
        workspace: str | Path,
        policy: TrimPolicy | None = None,
        prune: PrunePolicy | None = None,
        ephemeral: EphemeralPolicy | None = None,
    ) -> None:
        super().__init__(path, workspace, policy=policy, ephemeral=ephemeral)
        self.prune_policy = prune if prune is not None else PrunePolicy()
        self.pruned = 0
        self.denials_dropped = 0

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries = await super().load(key)
        self.pruned = 0
        self.denials_dropped = 0
        if entries is None:
            return None
        return self.prune(entries)

    def prune(self, entries: list[Entry]) -> list[Entry]:
        """Drop old denials and API errors, neutralise interrupted results, then relink.

        ``pruned`` counts the entries taken out, ``denials_dropped`` the denied calls.
        One scan collects what is needed, so a long transcript costs one walk plus
        work proportional to what actually changes.
        """
        policy = self.prune_policy
        out = list(entries)
        drop: set[int] = set()
        denied: list[str] = []  # tool_use_ids of denied calls, in transcript order
        where: dict[str, list[int]] = {}  # tool_use_id -> entries holding its use/result
        suspects: list[int] = []  # entries whose results may have been cut by a stop
        marks: list[int] = []  # interrupt marks

        for i, entry in enumerate(out):
            if not isinstance(entry, dict):
                continue
            kind = entry.get("type")
            if kind == "assistant":
                if policy.drop_api_errors and _is_api_error(entry):
                    drop.add(i)
                    continue
                for block in _blocks(entry) or ():
                    if _is_block(block, "tool_use") and isinstance(block.get("id"), str):
                        where.setdefault(block["id"], []).append(i)
                continue
            if kind != "user" or entry.get("isCompactSummary"):
                continue
            blocks = _blocks(entry)
            if blocks is None or not any(_is_block(b, "tool_result") for b in blocks):
                if _is_interrupt_mark(entry):
                    marks.append(i)
                continue
            # The CLI writes one result per entry; the entry-level marker is only
            # unambiguous then. Hook refusals written without it are caught by their text.
            marked = entry.get("toolDenialKind") == _DENIAL_KIND and (
                sum(_is_block(b, "tool_result") for b in blocks) == 1
            )
            for block in blocks:
                if not _is_block(block, "tool_result") or not isinstance(block.get("tool_use_id"), str):
                    continue
                tool_id = block["tool_use_id"]
                where.setdefault(tool_id, []).append(i)
                if marked or (block.get("is_error") is True and _HOOK_DENIAL.match(_result_text(block))):
                    denied.append(tool_id)
                elif _interrupted(entry, block) or entry.get("toolDenialKind") in _CUT_SHORT_KINDS:
                    suspects.append(i)

        doomed = set(denied[: max(len(denied) - max(policy.keep_denials, 0), 0)])
        # The tool_use and its tool_result leave together, or the API reports a missing
        # tool result; sibling calls, text and thinking blocks stay.
        for i in sorted({i for tool_id in doomed for i in where.get(tool_id, ())}):
            entry = out[i]
            kept = [b for b in entry["message"]["content"] if not _pairs_with(b, doomed)]
            if kept:
                out[i] = {**entry, "message": {**entry["message"], "content": kept}}
            else:
                drop.add(i)
        self.denials_dropped = len(doomed)

        if policy.neutralize_interrupts:
            cut = _cut_short_by_mark(out, marks)
            for i in sorted(set(suspects) | cut):
                if i in drop:
                    continue
                entry = out[i]
                for j, block in _tool_results(entry):
                    if i in cut or _interrupted(entry, block):
                        _replace_block(out, i, j, {**block, "content": policy.interrupt_text})
                        entry = out[i]

        self.pruned = len(drop)
        # The full list goes in: relink needs the dropped entries to walk past them.
        return self.relink(out, drop)

    @staticmethod
    def relink(entries: list[Entry], drop: set[int]) -> list[Entry]:
        """Return ``entries`` without the indices in ``drop``, parentUuid chain repaired.

        ``entries`` must be the FULL list, dropped entries included: a survivor whose
        parent was dropped is re-pointed to its nearest surviving ancestor, which can only
        be found by walking through the dropped ones. Filtering first would cut the chain
        and orphan all earlier history.
        """
        if not drop:
            return list(entries)
        # Only dropped entries are ever walked through, so only their parents are needed.
        parent_of: dict[str, Any] = {
            entries[i]["uuid"]: entries[i].get("parentUuid")
            for i in drop
            if isinstance(entries[i], dict) and isinstance(entries[i].get("uuid"), str)
        }
        gone = set(parent_of)
        resolved: dict[str, Any] = {}

        def survivor(uuid: Any) -> Any:
            path: list[str] = []
            while isinstance(uuid, str) and uuid in gone and uuid not in resolved:
                if uuid in path:  # a cycle among dropped entries: no surviving ancestor
                    uuid = None
                    break
                path.append(uuid)
                uuid = parent_of.get(uuid)
            if isinstance(uuid, str) and uuid in resolved:
                uuid = resolved[uuid]
            for seen in path:
                resolved[seen] = uuid
            return uuid

        result: list[Entry] = []
        for i, entry in enumerate(entries):
            if i in drop:
                continue
            if isinstance(entry, dict):
                for field in _LINKS:
                    if entry.get(field) in gone:
                        entry = {**entry, field: survivor(entry[field])}
            result.append(entry)
        return result
