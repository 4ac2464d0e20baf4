"""Resume-time pruning: keep errors out of the context the model resumes with.

Trimming decides by size and value; pruning decides by "is this an error": old denied calls,
synthetic API-error messages left by a network outage, results cut off by an interrupt and
calls whose result never arrived. Like trimming, it only changes the copy ``load()``
returns; the store keeps every row. It is a layer over any ``SessionStore`` as trimming is
(it extends the trimming layer, whose boundaries it shares), built from a path or a store.

It agrees with what the bundled CLI (2.1.327) does itself, measured on the requests it sends
after a resume:

- The CLI leaves API-error entries that carry both marks (``isApiErrorMessage`` and model
  ``<synthetic>``) out of the request. Dropping them here saves nothing and moves the leaf,
  which makes the CLI insert a placeholder turn; so only error entries the CLI would send
  are dropped.
- The CLI's own placeholder (``No response requested.``, model ``<synthetic>``,
  ``isApiErrorMessage`` false) is an ordinary turn and stays. Dropping it made the CLI
  write a new one at every resume.
- A call whose result never arrived is answered by the CLI at the leaf with a note of its
  own (and left out entirely mid-chain); answering it here with ``orphan_text`` first keeps
  the call visible and the prompt the same at every later resume.
- Dropping an old denial changes the prompt where that denial was, so it is decided only
  when the prompt is written again anyway (the cache expired, or a rebase; see ``trim``)
  and recorded, like a trim.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.loose import mapping
from .ephemeral import EphemeralPolicy
from .layer import StoreLayer, open_inner
from .transcript import (
    SYNTHETIC_MODEL,
    Entry,
    blocks_of,
    is_api_error_the_cli_drops,
    is_block,
    link,
    replace_block,
    result_text,
)
from .trim import TrimmingSessionStore, TrimPolicy

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry

__all__ = ["PrunePolicy", "PruningSessionStore"]

# The harness marks a call refused by a permission rule or a PreToolUse hook with this.
_DENIAL_KIND = "permission-rule"
_INTERRUPT_KIND = "interrupted"
DROP = "drop-denial"

# Kinds the harness gives a call that a stop cut short (as opposed to a rule refusing it).
_CUT_SHORT_KINDS = frozenset({"user-rejected", "interrupted", "cancelled"})
# The user line the harness appends after results of calls cut short by an interrupt.
_INTERRUPT_MARK = "[Request interrupted by user for tool use]"
# Fields that point at another entry by uuid and must not point at a dropped one.
_LINKS = ("parentUuid", "logicalParentUuid", "leafUuid")
# Fields a healed result takes from the call it answers, as the CLI's own results carry them.
_COPIED = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "timestamp", "agentId")
# Healed results get a uuid derived from the call, so every load inserts the same entry.
_HEAL_NAMESPACE = uuid.UUID("6f1c3f1e-5a0b-4c57-9a43-2f0e4f6b7a10")

# Text fallbacks, for results written without the structural markers.
_HOOK_DENIAL = re.compile(r"^\s*(?:<tool_use_error>)?\s*PreToolUse:\S+ hook error: ")
_INTERRUPTED = re.compile(r"^\s*(?:<tool_use_error>)?\s*\[(?:Request|Tool call|Agent call) interrupted")
# The sentence the CLI answers a rejected call with, in every version.
_REJECTED = re.compile(r"^\s*(?:<tool_use_error>)?\s*The user doesn't want to proceed with this tool use")
# Before ``toolDenialKind`` (CLI <= 2.1.39) a PreToolUse refusal was an error result holding
# just the hook's own text. A hands-on tool's other errors are the CLI's own outcomes.
_HANDS_ON = frozenset({"Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"})
_CLI_OUTCOME = re.compile(
    r"^\s*(?:<tool_use_error>|Exit code \d|Command timed out|Error: |InputValidationError|"
    r"File has not been read yet|File has been modified since read|String to replace not found|"
    r"Found \d+ matches of the string|No changes to make|Permission to use )"
)


@dataclass
class PrunePolicy:
    """What ``PruningSessionStore`` keeps out of the resumed context."""

    drop_api_errors: bool = True
    neutralize_interrupts: bool = True
    interrupt_text: str = "[上一轮在此处被中断,该工具结果未产生]"
    keep_denials: int = 1
    heal_orphans: bool = True
    orphan_text: str = "[这一步被打断了,没有结果。需要的话重做。]"


def _use_id(block: object) -> str | None:
    """The id of a tool_use block, None for any other block."""
    tool_id = block.get("id") if is_block(block, "tool_use") else None
    return tool_id if isinstance(tool_id, str) else None


def _tool_results(entry: Entry) -> list[tuple[int, dict[str, object]]]:
    if entry.get("type") != "user" or entry.get("isCompactSummary"):
        return []
    blocks = blocks_of(entry) or []
    return [(j, b) for j, b in enumerate(blocks) if is_block(b, "tool_result")]


def _interrupted(entry: Entry, block: dict[str, object]) -> bool:
    if entry.get("toolDenialKind") == _INTERRUPT_KIND or entry.get("interruptedByShutdown") is True:
        return True
    # The harness always flags the results it writes for a stop as errors.
    return block.get("is_error") is True and bool(_INTERRUPTED.match(result_text(block)))


def _rejected(entry: Entry, block: dict[str, object]) -> bool:
    """A call the person turned down: marked (current CLIs) or by the CLI's sentence (older)."""
    if entry.get("toolDenialKind") in _CUT_SHORT_KINDS:
        return True
    return block.get("is_error") is True and bool(_REJECTED.match(result_text(block)))


def _old_hook_refusal(entry: Entry, block: dict[str, object], tool: str | None) -> bool:
    """A PreToolUse refusal as CLIs before ``toolDenialKind`` wrote it: the hook's text."""
    if "toolDenialKind" in entry or block.get("is_error") is not True or tool not in _HANDS_ON:
        return False
    if isinstance(entry.get("toolUseResult"), dict):
        return False  # the tool ran and reported its own structured outcome
    text = result_text(block)
    return bool(text.strip()) and not (
        _CLI_OUTCOME.match(text) or _INTERRUPTED.match(text) or _REJECTED.match(text)
    )


def _is_interrupt_mark(entry: Entry) -> bool:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.startswith(_INTERRUPT_MARK)
    if isinstance(content, list) and content and all(is_block(b, "text") for b in content):
        return str(content[0].get("text", "")).startswith(_INTERRUPT_MARK)
    return False


def _cut_short_by_mark(entries: list[Entry], marks: list[int]) -> set[int]:
    """Indices of result entries that the interrupt marks at ``marks`` say were cut short.

    When a stop lands mid-tool, the CLI writes the result as a rejection and follows it with
    the interrupt mark. Walking the chain back from the mark to the assistant turn finds the
    results of that batch; those cut short carry a stop kind (current CLIs) or the CLI's
    rejection sentence (older ones). Results that completed before the stop stay.
    """
    if not marks:
        return set()
    index: dict[str, int] = {}
    for n, e in enumerate(entries):
        uid = link(e.get("uuid"))
        if uid is not None:
            index[uid] = n
    hits: set[int] = set()
    for mark in marks:
        seen: set[int] = set()
        i = _index_of(index, entries[mark].get("parentUuid"))
        while i is not None and i not in seen:
            seen.add(i)
            parent = entries[i]
            if parent.get("type") == "assistant":
                break
            if parent.get("type") == "user":
                results = _tool_results(parent)
                if not results:
                    break  # reached a prompt: the mark is not about tool calls
                if any(_rejected(parent, block) for _, block in results):
                    hits.add(i)
            i = _index_of(index, parent.get("parentUuid"))
    return hits


def _index_of(index: dict[str, int], uid: object) -> int | None:
    found = link(uid)
    return None if found is None else index.get(found)


def _pairs_with(block: object, ids: set[str]) -> bool:
    if is_block(block, "tool_use"):
        return link(block.get("id")) in ids
    if is_block(block, "tool_result"):
        return link(block.get("tool_use_id")) in ids
    return False


def _is_api_error(entry: Entry) -> bool:
    if entry.get("type") != "assistant":
        return False
    if entry.get("isApiErrorMessage") is True:
        return True
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("model") != SYNTHETIC_MODEL:
        return False
    # A <synthetic> turn without the flag: an error only if it says so (placeholders stay).
    if "isApiErrorMessage" in entry:
        return False
    content = message.get("content")
    text = (
        content
        if isinstance(content, str)
        else "".join(str(b.get("text", "")) for b in content or [] if is_block(b, "text"))
    )
    return text.lstrip().startswith("API Error")


def _api_error_sent(entry: Entry) -> bool:
    """An API-error entry the CLI would put into its request (and so the model would see)."""
    return _is_api_error(entry) and not is_api_error_the_cli_drops(entry)


class PruningSessionStore(StoreLayer):
    """A layer that prunes denials, API errors and interrupt leftovers, composed with trimming.

    It wraps the store underneath (``inner``) and holds a ``TrimmingSessionStore`` over the
    same store (``trimming``): a load is trimmed first, then pruned, and both share the one
    ledger. The 4th positional parameter is ``prune``, not ``ephemeral`` as in
    ``TrimmingSessionStore``: pass policies by keyword. ``path`` is where a
    ``SqliteSessionStore`` is opened, or a ``SessionStore`` to wrap.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | SessionStore,
        workspace: str | Path,
        policy: TrimPolicy | None = None,
        prune: PrunePolicy | None = None,
        ephemeral: EphemeralPolicy | None = None,
        *,
        clock: Callable[[], float] | None = None,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        inner, opened = open_inner(path)
        try:
            trimming = TrimmingSessionStore(
                inner, workspace, policy=policy, ephemeral=ephemeral, clock=clock, monotonic=monotonic
            )
        except ValueError:
            close = getattr(inner, "close", None)
            if opened and callable(close):
                close()
            raise
        super().__init__(inner)
        self.trimming = trimming
        self.ledger = trimming.ledger  # one ledger, even over a store that keeps none
        trimming.then.append(self._rework)
        self.prune_policy = prune if prune is not None else PrunePolicy()
        self.pruned = 0
        self.denials_dropped = 0

    # -- what callers read of the trimming underneath -------------------------------------

    @property
    def workspace(self) -> Path:
        return self.trimming.workspace

    @property
    def policy(self) -> TrimPolicy:
        return self.trimming.policy

    @policy.setter
    def policy(self, policy: TrimPolicy) -> None:
        self.trimming.policy = policy

    @property
    def ephemeral(self) -> EphemeralPolicy:
        return self.trimming.ephemeral

    @ephemeral.setter
    def ephemeral(self, ephemeral: EphemeralPolicy) -> None:
        self.trimming.ephemeral = ephemeral

    @property
    def last_report(self) -> dict[str, int]:
        return self.trimming.last_report

    @last_report.setter
    def last_report(self, report: dict[str, int]) -> None:
        self.trimming.last_report = report

    @property
    def last_boundary(self) -> str:
        return self.trimming.last_boundary

    @property
    def clock(self) -> Callable[[], float]:
        return self.trimming.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.trimming.clock = clock

    def expire(self, entries: list[Entry]) -> list[Entry]:
        return self.trimming.expire(entries)

    def __getattr__(self, name: str) -> object:
        """Anything else of ``TrimmingSessionStore`` (its planning helpers) is the trimming's."""
        if name == "trimming" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.trimming, name)

    # -- SessionStore protocol: through the trimming, which then calls _rework -------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self.trimming.append(key, entries)

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self.trimming.add(key, entries)

    async def delete(self, key: SessionKey) -> None:
        await self.trimming.delete(key)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        self.pruned = 0
        self.denials_dropped = 0
        return await self.trimming.load(key)

    def close(self) -> None:
        if self._closed:
            return
        self.trimming.close()  # closes the store underneath
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def _rework(self, key: SessionKey, trimmed: list[Entry], cold: bool) -> list[Entry]:
        """Prune the trimmed copy: new denials are dropped only when the prompt is written anyway."""
        self.pruned = 0
        self.denials_dropped = 0
        denials = self._denials(trimmed)
        decided = set(self.ledger.decided(key).get(DROP, {}))
        if cold or self.last_boundary == "rebase":  # the prompt is written again anyway
            fresh = [d for d in self._doomed(denials) if d not in decided]
            if fresh:
                self.ledger.record(key, DROP, fresh, self.clock())
                decided |= set(fresh)
        return self._prune(trimmed, {d for d in denials if d in decided})

    def prune(self, entries: list[Entry]) -> list[Entry]:
        """Drop old denials and API errors the CLI would send, neutralise interrupted
        results, heal orphan calls, then relink.

        ``pruned`` counts the entries taken out, ``denials_dropped`` the denied calls. This
        decides for every denial now; ``load()`` drops new ones only when the prompt is
        written again anyway (a cold resume, or a rebase).
        """
        return self._prune(entries, set(self._doomed(self._denials(entries))))

    def _doomed(self, denials: list[str]) -> list[str]:
        return denials[: max(len(denials) - max(self.prune_policy.keep_denials, 0), 0)]

    @staticmethod
    def _denials(entries: list[Entry]) -> list[str]:
        """tool_use_ids of denied calls, in transcript order."""
        tools: dict[str, str] = {}
        denied: list[str] = []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            if entry.get("type") == "assistant":
                for block in blocks_of(entry) or ():
                    if is_block(block, "tool_use") and (use_id := link(block.get("id"))) is not None:
                        tools[use_id] = str(block.get("name", ""))
                continue
            results = _tool_results(entry)
            # The CLI writes one result per entry; the entry-level marker is only
            # unambiguous then. Hook refusals written without it are caught by their text.
            marked = entry.get("toolDenialKind") == _DENIAL_KIND and len(results) == 1
            for _, block in results:
                tool_id = block.get("tool_use_id")
                if not isinstance(tool_id, str):
                    continue
                if (
                    marked
                    or (block.get("is_error") is True and _HOOK_DENIAL.match(result_text(block)))
                    or _old_hook_refusal(entry, block, tools.get(tool_id))
                ):
                    denied.append(tool_id)
        return denied

    def _prune(self, entries: list[Entry], doomed: set[str]) -> list[Entry]:
        """One scan collects what is needed, so a long transcript costs one walk plus work
        proportional to what actually changes."""
        policy = self.prune_policy
        out = list(entries)
        drop: set[int] = set()
        where: dict[str, list[int]] = {}  # tool_use_id -> entries holding its use/result
        suspects: list[int] = []  # entries whose results may have been cut by a stop
        marks: list[int] = []  # interrupt marks

        for i, entry in enumerate(out):
            if not isinstance(entry, dict):
                continue
            kind = entry.get("type")
            if kind == "assistant":
                if policy.drop_api_errors and _api_error_sent(entry):
                    drop.add(i)
                    continue
                for block in blocks_of(entry) or ():
                    use_id = _use_id(block)
                    if use_id is not None:
                        where.setdefault(use_id, []).append(i)
                continue
            if kind != "user" or entry.get("isCompactSummary"):
                continue
            results = _tool_results(entry)
            if not results:
                if _is_interrupt_mark(entry):
                    marks.append(i)
                continue
            for _, block in results:
                tool_id = block.get("tool_use_id")
                if not isinstance(tool_id, str):
                    continue
                where.setdefault(tool_id, []).append(i)
                if tool_id not in doomed and (_interrupted(entry, block) or _rejected(entry, block)):
                    suspects.append(i)

        # The tool_use and its tool_result leave together, or the API reports a missing
        # tool result; sibling calls, text and thinking blocks stay.
        for i in sorted({i for tool_id in doomed for i in where.get(tool_id, ())}):
            entry = out[i]
            kept = [b for b in blocks_of(entry) or () if not _pairs_with(b, doomed)]
            if kept:
                out[i] = {**entry, "message": {**mapping(entry.get("message")), "content": kept}}
            else:
                drop.add(i)
        self.denials_dropped = len(doomed & set(where))

        if policy.neutralize_interrupts:
            cut = _cut_short_by_mark(out, marks)
            for i in sorted(set(suspects) | cut):
                if i in drop:
                    continue
                entry = out[i]
                for j, block in _tool_results(entry):
                    if _interrupted(entry, block) or (i in cut and _rejected(entry, block)):
                        replace_block(out, i, j, {**block, "content": policy.interrupt_text})
                        entry = out[i]

        self.pruned = len(drop)
        # The full list goes in: relink needs the dropped entries to walk past them.
        relinked = self.relink(out, drop)
        return self.heal(relinked) if policy.heal_orphans else relinked

    def heal(self, entries: list[Entry]) -> list[Entry]:
        """Answer every tool_use that has no tool_result with ``orphan_text``.

        The answer is a user entry inserted right after the assistant entry holding the
        orphan; entries that pointed at that assistant entry now point at the answer, so
        the chain stays one line. Its uuid derives from the call, so every load inserts
        the same entry and whatever the CLI chains to it later still finds it.
        """
        answered = {
            link(block.get("tool_use_id"))
            for entry in entries
            if isinstance(entry, dict) and entry.get("type") == "user"
            for block in blocks_of(entry) or ()
            if is_block(block, "tool_result")
        }
        heals: dict[int, Entry] = {}
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or entry.get("type") != "assistant":
                continue
            if not isinstance(entry.get("uuid"), str):
                continue
            used = (_use_id(b) for b in blocks_of(entry) or ())
            orphans = [tool_id for tool_id in used if tool_id is not None and tool_id not in answered]
            if orphans:
                heals[i] = self._answer(entry, orphans)
        if not heals:
            return entries
        moved = {link(entries[i].get("uuid")): healed["uuid"] for i, healed in heals.items()}
        out: list[Entry] = []
        for i, entry in enumerate(entries):
            parent = link(entry.get("parentUuid"))
            if parent is not None and parent in moved:
                entry = {**entry, "parentUuid": moved[parent]}
            out.append(entry)
            if i in heals:
                out.append(heals[i])
        return out

    def _answer(self, assistant: Entry, orphans: list[str]) -> Entry:
        text = self.prune_policy.orphan_text
        meta: dict[str, object] = {k: assistant[k] for k in _COPIED if k in assistant}
        return {
            "parentUuid": assistant["uuid"],
            **meta,
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": True}
                    for tool_id in orphans
                ],
            },
            "uuid": str(uuid.uuid5(_HEAL_NAMESPACE, f"{assistant['uuid']}:{','.join(orphans)}")),
            "toolUseResult": f"Error: {text}",
            "sourceToolAssistantUUID": assistant["uuid"],
        }

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
        parent_of: dict[str, object] = {}
        for i in drop:
            uid = entries[i].get("uuid")
            if isinstance(uid, str):
                parent_of[uid] = entries[i].get("parentUuid")
        gone = set(parent_of)
        resolved: dict[str, object] = {}

        def survivor(uid: object) -> object:
            path: list[str] = []
            while isinstance(uid, str) and uid in gone and uid not in resolved:
                if uid in path:  # a cycle among dropped entries: no surviving ancestor
                    uid = None
                    break
                path.append(uid)
                uid = parent_of.get(uid)
            if isinstance(uid, str) and uid in resolved:
                uid = resolved[uid]
            for seen in path:
                resolved[seen] = uid
            return uid

        result: list[Entry] = []
        for i, entry in enumerate(entries):
            if i in drop:
                continue
            if isinstance(entry, dict):
                for field in _LINKS:
                    target = entry.get(field)  # read inline, not through link(): every entry, every load
                    if isinstance(target, str) and target in gone:
                        entry = {**entry, field: survivor(target)}
            result.append(entry)
        return result
