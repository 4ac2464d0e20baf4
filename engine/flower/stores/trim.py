"""Resume-time trimming: expire stale glance results and spill big tool results to files.

Everything happens in ``load()``, on the copy that goes back to the model. The stored rows
are never touched, so another resume with another policy still sees the full transcript. The
layer wraps any ``SessionStore`` (``layer.py``): built from a path it opens a
``SqliteSessionStore`` there, as it always did; given a store, it wraps that one.

Trimming is priced by the API's prompt cache: the CLI marks the end of every request, the
API keeps that prefix for five minutes, and a resume inside that time reads the whole old
prompt at 0.1x. Changing one old result forces everything after it to be written again at
1.25x. So decisions are made only at boundaries and then kept (docs/context-economy.md):

- **cold**: the transcript received nothing for ``TrimPolicy.cache_ttl`` seconds, so the
  cache is gone and the resume writes everything anyway. Every pending decision is made.
- **pays at once**: the cache is warm, but spilling makes this very resume cheaper than
  reading the old prompt back, rewrite included (a huge result just outside the protected
  window, and little after it). ``warm_budget`` scales that comparison; 0 turns it off.
- **rebase**: the cache never gets a chance to expire (``rebase_after`` warm loads in a
  row), and what waits would take out at least ``rebase_share`` of the prompt. Everything
  pending is decided at once: one full re-cache, paid back by the smaller prompt within a
  bounded number of requests.
- otherwise nothing new is decided; the prompt stays byte-identical to the last one.

A decision, once made, is recorded in the wrapped store's ledger (``ledger.py``) and applied
identically at every later load: an expiry note keeps the age it was written with.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..base.files import spill
from ..base.i18n import _
from ..base.loose import items
from ..base.secrets import redact
from .ephemeral import EphemeralPolicy, is_ephemeral
from .layer import StoreLayer, open_inner
from .ledger import where
from .tokens import CACHE_READ, CACHE_WRITE, entry_tokens
from .transcript import (
    Entry,
    block_at,
    blocks_of,
    editable,
    is_block,
    link,
    live_chain,
    plain_text,
    replace_block,
    stored,
    timestamp_of,
    tool_result_positions,
)

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry

__all__ = ["TrimPolicy", "TrimmingSessionStore", "trim_report"]

# How much of a command the expiry note quotes; the note must stay one short line.
_CMD_PREVIEW = 80
SPILL = "spill"
EXPIRE = "expire"


@dataclass
class TrimPolicy:
    """How big tool results are archived at resume time, and when the prompt may change."""

    keep_recent: int = 20
    min_chars: int = 2000
    spill_dirname: str = ".flower/spill"
    enabled: bool = True
    # Seconds the API keeps a cached prefix (the CLI asks for 5-minute entries). A resume
    # after that long writes the whole prompt anyway: the moment to make new decisions.
    cache_ttl: float = 300.0
    # Inside the cache's life, a decision is made only if this resume's estimated input cost
    # with it stays within this multiple of the cost without it (0 = never while warm)...
    warm_budget: float = 1.0
    # ...or all pending ones at once, after rebase_after loads in a row found the cache warm,
    # when together they take out at least rebase_share of the prompt: one full re-cache,
    # repaid within 11.5 / rebase_share requests by reads alone (rebase_share=0: never).
    rebase_share: float = 0.25
    rebase_after: int = 8

    def placeholder(self, path: str, n: int) -> str:
        """The one-line pointer that replaces an archived result."""
        return f"[工具结果已裁剪:原文 {n} 字符已存到 {path},需要时用 Read 读取]"


def _short_command(cmd: str) -> str:
    lines = cmd.strip().splitlines() or [""]
    line = lines[0]
    if len(line) > _CMD_PREVIEW or len(lines) > 1:
        line = line[:_CMD_PREVIEW].rstrip() + "…"
    return f"`{line}`"


def _timestamp(entry: Entry) -> float | None:
    return timestamp_of(entry.get("timestamp"))


@dataclass(frozen=True)
class _Pending:
    """A decision that could be made at this load: where it changes the prompt, and how."""

    index: int  # entry index of the result it changes
    kind: str
    ref: str  # tool_use_id
    detail: str  # the expiry note ("" for a spill)


class TrimmingSessionStore(StoreLayer):
    """A store whose ``load()`` expires stale glances and archives big results.

    ``path`` is where a ``SqliteSessionStore`` is opened (as the seeds build it), or a
    ``SessionStore`` to wrap instead: ``TrimmingSessionStore(PostgresSessionStore(url), ws)``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | SessionStore,
        workspace: str | Path,
        policy: TrimPolicy | None = None,
        ephemeral: EphemeralPolicy | None = None,
        *,
        clock: Callable[[], float] | None = None,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        inner, opened = open_inner(path)
        super().__init__(inner)
        self.workspace = Path(workspace).resolve()
        self.policy = policy if policy is not None else TrimPolicy()
        self.ephemeral = ephemeral if ephemeral is not None else EphemeralPolicy()
        self.last_report: dict[str, int] = {}
        # Why the last load made new decisions: "cold", "pays at once", "rebase" or "".
        self.last_boundary = ""
        self._warm_loads = 0
        # Further steps a composing layer adds to every load: (key, copy, cold) -> copy.
        self.then: list[Callable[[SessionKey, list[Entry], bool], list[Entry]]] = []
        # The time the API's cache lives in; injectable so tests can let it expire. The ledger
        # keeps wall-clock stamps (another process reads them); this process also keeps a
        # monotonic reading of its own appends, so a wall clock that jumps between an append
        # and a load here cannot make a warm cache look cold. An injected clock alone is both,
        # however it is injected (argument or assignment to `clock`).
        self._given_monotonic = monotonic
        self._clock: Callable[[], float] = clock if clock is not None else time.time
        self._monotonic: Callable[[], float] = monotonic or clock or time.monotonic
        self._appended: dict[tuple[str, str, str], float] = {}  # where(key) -> monotonic time
        spill = (self.workspace / self.policy.spill_dirname).resolve()
        # Outside the workspace the agent's Read cannot follow the pointer.
        if not spill.is_relative_to(self.workspace):
            if opened:
                self.close()
            raise ValueError(f"spill_dirname {self.policy.spill_dirname!r} must stay inside the workspace")

    @property
    def _spill_dir(self) -> Path:
        return (self.workspace / self.policy.spill_dirname).resolve()

    # -- SessionStore protocol -----------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self.inner.append(key, entries)
        if entries:
            at = self._appended_now(key)
            await self._offload(lambda: self.ledger.touch(key, at))

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        super().add(key, entries)
        if entries:
            self.ledger.touch(key, self._appended_now(key))

    async def delete(self, key: SessionKey) -> None:
        await self.inner.delete(key)
        await self._offload(lambda: self.ledger.forget(key))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries = await self.inner.load(key)
        self.last_report = {}
        if entries is None:
            return None
        rows = editable(entries)
        if rows is None:
            return entries
        return stored(await self._offload(lambda: self._resume_copy(key, rows)), entries)

    # -- the copy a resume gets ----------------------------------------------------------

    def _resume_copy(self, key: SessionKey, entries: list[Entry]) -> list[Entry]:
        """Apply every decision on record, after making the ones this load may make."""
        self.last_boundary = ""
        last, self._warm_loads = self.ledger.last_activity(key)
        if last is None:  # a transcript this store never saw being written: trust its stamps
            stamps = (_timestamp(e) for e in reversed(entries) if isinstance(e, dict))
            last = next((t for t in stamps if t is not None), None)
        cold = last is None or self._idle(key, last) >= self.policy.cache_ttl
        out = self._rework(key, entries, cold)
        for step in self.then:  # layers composed over this one (prune.py) rework the copy too
            out = step(key, out, cold)
        self.ledger.count_warm_load(key, boundary=cold or bool(self.last_boundary))
        return out

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        """A clock set from outside (a test's or the sim's) is the monotonic one too, unless one
        was given: otherwise time it skips would count on one clock and not on the other."""
        self._clock = clock
        self._monotonic = self._given_monotonic or clock

    def _appended_now(self, key: SessionKey) -> float:
        """Note an append on both clocks; the wall-clock stamp goes to the ledger."""
        self._appended[where(key)] = self._monotonic()
        return self.clock()

    def _idle(self, key: SessionKey, last: float) -> float:
        """Seconds the transcript has received nothing, robust to a wall clock that jumps.

        The last activity is at least as late as this process's own last append, so the
        monotonic time since that bounds the idle time from above: a jump forward cannot make
        it longer. A wall clock behind the stamp (it jumped back, or the writer's clock runs
        ahead) tells nothing: with no monotonic reading the cache counts as warm, the prompt
        stays byte-identical and nothing is decided on a guess (the rebase rule still bounds
        how long that lasts).
        """
        wall = self.clock() - last
        mine = self._appended.get(where(key))
        own = None if mine is None else self._monotonic() - mine
        if wall < 0:
            return own if own is not None else 0.0
        return wall if own is None else min(wall, own)

    def _rework(self, key: SessionKey, entries: list[Entry], cold: bool) -> list[Entry]:
        """Expire and spill at one load: decide (cold, or pays at once), record, apply."""
        # Replacing a result's content never moves a block: one scan serves the whole load.
        positions = tool_result_positions(entries)
        known = self.ledger.decided(key)
        notes = dict(known.get(EXPIRE, {})) if self.ephemeral.enabled else {}
        spills = set(known.get(SPILL, {})) if self.policy.enabled else set()
        out = self._apply_expiry(entries, notes, positions)
        pending: list[_Pending] = []
        if self.ephemeral.enabled:
            pending += [p for p in self._expiry_plan(out, positions) if p.ref not in notes]
        if self.policy.enabled:
            ready = self._apply_expiry(out, {p.ref: p.detail for p in pending}, positions)
            pending += [p for p in self._spill_plan(ready, positions) if p.ref not in spills]
        if cold:
            chosen, self.last_boundary = pending, "cold" if pending else ""
        else:
            chosen, self.last_boundary = self._warm_choice(entries, out, spills, pending, positions)
        if chosen:
            now = self.clock()
            self.ledger.record(key, EXPIRE, {p.ref: p.detail for p in chosen if p.kind == EXPIRE}, now)
            self.ledger.record(key, SPILL, [p.ref for p in chosen if p.kind == SPILL], now)
            known = self.ledger.decided(key)  # another process may have decided first
            if self.ephemeral.enabled:
                fresh = {ref: note for ref, note in known.get(EXPIRE, {}).items() if ref not in notes}
                out = self._apply_expiry(out, fresh, positions)
                notes.update(fresh)
            if self.policy.enabled:
                spills = set(known.get(SPILL, {}))
        if self.ephemeral.enabled:
            self.last_report["expired"] = len(
                [1 for i, j in positions if link(block_at(out, i, j).get("tool_use_id")) in notes]
            )
        if self.policy.enabled:
            out = self._apply_spills(out, spills, positions)
        deferred = len(pending) - len(chosen)
        if deferred:
            self.last_report["deferred"] = deferred
        return out

    def _warm_choice(
        self,
        raw: list[Entry],
        current: list[Entry],
        spills: set[str],
        pending: list[_Pending],
        positions: list[tuple[int, int]],
    ) -> tuple[list[_Pending], str]:
        """What a resume inside the cache's life may decide, and why (or nothing).

        Staying put, the resume reads the whole previous prompt from cache (0.1x). Changing
        a result makes it read only what comes before (0.1x) and write everything from
        there on (1.25x). Two cases are worth it:

        - "pays at once": a suffix of the pending decisions makes this very resume no
          dearer than ``warm_budget`` times staying put (spilled text dominates what would
          be written again);
        - "rebase": the last ``rebase_after`` loads all found the cache warm (so waiting
          for an expiry is not paying off), and all pending decisions together take out at
          least ``rebase_share`` of the prompt. The one full re-cache (at most 1.15x the
          prompt) is then repaid by reads alone within 11.5 / rebase_share later requests,
          and sooner at any later expiry.
        """
        if not pending:
            return [], ""
        chain = live_chain(raw)
        before = self._apply_spills(current, spills, positions, write=False)
        applied = self._apply_spills(
            self._apply_expiry(before, {p.ref: p.detail for p in pending if p.kind == EXPIRE}, positions),
            {p.ref for p in pending if p.kind == SPILL},
            positions,
            write=False,
        )
        old = [entry_tokens(before[i]) for i in chain]
        new = [entry_tokens(applied[i]) for i in chain]
        staying = CACHE_READ * sum(old)
        where = {index: n for n, index in enumerate(chain)}
        ordered = sorted((p for p in pending if p.index in where), key=lambda p: p.index)
        best: int | None = None
        if self.policy.warm_budget > 0:
            prefix, tail, cut = sum(old), 0, len(chain)
            for k in range(len(ordered) - 1, -1, -1):
                start = where[ordered[k].index]
                # the chain entries from this decision on are written again, in their new form
                for n in range(start, cut):
                    prefix -= old[n]
                    tail += new[n]
                cut = start
                if CACHE_READ * prefix + CACHE_WRITE * tail <= self.policy.warm_budget * staying:
                    best = k
        share, before_total = self.policy.rebase_share, sum(old)
        if (
            share > 0
            and self._warm_loads >= self.policy.rebase_after
            and before_total > 0
            and before_total - sum(new) >= share * before_total
        ):
            return pending, "rebase"
        if best is None:
            return [], ""
        first = ordered[best].index
        return [p for p in pending if p.index >= first], "pays at once"

    # -- expiry --------------------------------------------------------------------------

    def _expiry_plan(self, entries: list[Entry], positions: list[tuple[int, int]]) -> list[_Pending]:
        """Old results of ephemeral Bash commands, with the note each would get now."""
        policy = self.ephemeral
        age_of = {pos: len(positions) - k for k, pos in enumerate(positions)}
        commands: dict[str, str] = {}  # tool_use_id -> Bash command seen so far
        judged: dict[str, bool] = {}
        plan: list[_Pending] = []
        for i, entry in enumerate(entries):
            blocks = blocks_of(entry) if isinstance(entry, dict) else None
            if blocks is None:
                continue
            if entry.get("type") == "assistant":
                for block in blocks:
                    if is_block(block, "tool_use") and block.get("name") == "Bash":
                        inp = block.get("input")
                        cmd = inp.get("command") if isinstance(inp, dict) else None
                        tool_id = block.get("id")
                        if isinstance(cmd, str) and isinstance(tool_id, str):
                            commands[tool_id] = cmd
                continue
            if entry.get("isMeta") or entry.get("isCompactSummary"):
                continue
            # A denied or interrupted call never produced a result worth expiring.
            if entry.get("toolDenialKind") is not None:
                continue
            for j, block in enumerate(blocks):
                age = age_of.get((i, j))
                if age is None or age <= policy.keep_recent or not is_block(block, "tool_result"):
                    continue
                ref = block.get("tool_use_id")
                cmd = commands.get(ref) if isinstance(ref, str) else None
                if cmd is None or not isinstance(ref, str):
                    continue
                text = plain_text(block.get("content"))
                if text is None or len(text) > policy.max_chars:
                    continue
                verdict = judged.get(cmd)
                if verdict is None:
                    # Glances repeat (`git status` dozens of times); parse each command once.
                    verdict = judged[cmd] = is_ephemeral(cmd, workspace=self.workspace)
                if verdict:
                    plan.append(_Pending(i, EXPIRE, ref, policy.placeholder(_short_command(cmd), age)))
        return plan

    @staticmethod
    def _apply_expiry(
        entries: list[Entry], notes: dict[str, str], positions: list[tuple[int, int]]
    ) -> list[Entry]:
        """A copy with the results named in ``notes`` replaced by their notes."""
        out = list(entries)
        if not notes:
            return out
        for i, j in positions:
            block = block_at(out, i, j)
            ref = block.get("tool_use_id")
            note = notes.get(ref) if isinstance(ref, str) else None
            if note is None:
                continue
            content = block.get("content")
            new_content: object = note if isinstance(content, str) else [{"type": "text", "text": note}]
            replace_block(out, i, j, {**block, "content": new_content})
        return out

    def expire(self, entries: list[Entry]) -> list[Entry]:
        """Replace old results of ephemeral Bash commands with a one-line expiry note.

        Only the content changes; the tool_result block stays. A result's age is its
        1-based position from the end among all tool results, so the last
        ``keep_recent`` (age <= keep_recent) are exempt. Expired text is not spilled:
        rerunning the command is the only way to get a current answer anyway. This
        decides for every result now; ``load()`` decides only at boundaries.
        """
        positions = tool_result_positions(entries)
        notes = {p.ref: p.detail for p in self._expiry_plan(entries, positions)}
        self.last_report["expired"] = len(notes)
        return self._apply_expiry(entries, notes, positions)

    # -- spilling ------------------------------------------------------------------------

    def _spill_plan(self, entries: list[Entry], positions: list[tuple[int, int]]) -> list[_Pending]:
        policy = self.policy
        cutoff = max(len(positions) - max(policy.keep_recent, 0), 0)
        plan: list[_Pending] = []
        for i, j in positions[:cutoff]:
            block = block_at(entries, i, j)
            ref = block.get("tool_use_id")
            if isinstance(ref, str) and self._worth_spilling(block.get("content")):
                plan.append(_Pending(i, SPILL, ref, ""))
        return plan

    def _apply_spills(
        self, entries: list[Entry], refs: set[str], positions: list[tuple[int, int]], *, write: bool = True
    ) -> list[Entry]:
        """Replace the results named in ``refs`` by pointers; report what the model is spared.

        With ``write=False`` nothing touches the disk or the report (an estimate).
        """
        out = list(entries)
        cleared = saved = 0
        for i, j in positions if refs else ():
            block = block_at(out, i, j)
            if link(block.get("tool_use_id")) not in refs:
                continue
            trimmed = self._trim_content(block.get("content"), write=write)
            if trimmed is None:
                continue
            new_content, chars = trimmed
            replace_block(out, i, j, {**block, "content": new_content})
            cleared += 1
            saved += chars
        if write:
            self.last_report["cleared"] = cleared
            self.last_report["kept"] = min(len(positions), max(self.policy.keep_recent, 0))
            self.last_report["chars_saved"] = saved
        return out

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """Spill tool_result text of ``>= min_chars`` to files and leave a pointer.

        The last ``keep_recent`` results stay verbatim. Only text is archived: image and
        document parts of a list content stay where they are. This decides for every
        result now; ``load()`` decides only at boundaries.
        """
        positions = tool_result_positions(entries)
        return self._apply_spills(entries, {p.ref for p in self._spill_plan(entries, positions)}, positions)

    @staticmethod
    def _text_parts(content: object) -> list[str] | None:
        if isinstance(content, str):
            return [content]
        if isinstance(content, list):
            texts = (p.get("text") for p in content if is_block(p, "text"))
            return [t for t in texts if isinstance(t, str)]
        return None

    def _worth_spilling(self, content: object) -> bool:
        parts = self._text_parts(content)
        return bool(parts) and sum(len(p) for p in parts or ()) >= self.policy.min_chars

    def _trim_content(self, content: object, *, write: bool = True) -> tuple[object, int] | None:
        """(new content, chars saved) for a result worth archiving, else None.

        With ``write=False`` the pointer is computed without touching the disk (an estimate).
        """
        parts = self._text_parts(content)
        if not parts:
            return None
        total = sum(len(p) for p in parts)
        if total < self.policy.min_chars:
            return None
        text = parts[0] if len(parts) == 1 else "\n\n".join(parts)
        path = self._spill(text) if write else self._spill_path(text)
        if path is None:
            return None
        pointer = self.policy.placeholder(str(path), len(text))
        if len(pointer) >= total:
            return None
        if isinstance(content, str):
            return pointer, total - len(pointer)
        new_list: list[object] = []
        placed = False
        for part in items(content):
            if is_block(part, "text") and isinstance(part.get("text"), str):
                if not placed:
                    new_list.append({**part, "text": pointer})
                    placed = True
                continue
            new_list.append(part)
        return new_list, total - len(pointer)

    def _spill_path(self, text: str) -> Path:
        data = text.encode("utf-8", "surrogatepass")
        return self._spill_dir / f"{hashlib.sha256(data).hexdigest()[:16]}.txt"

    def _spill(self, text: str) -> Path | None:
        """Write ``text`` to its content-addressed file; None if the disk refuses.

        A result is only trimmed once its full text is safely on disk (files.spill: an
        atomic write, and an existing file reused only when it holds exactly these bytes).
        """
        data = redact(text).encode("utf-8", "surrogatepass")  # a spill file is flower's: no credential
        try:
            return spill(self._spill_path(text), data)
        except OSError:
            return None  # the result stays whole in the prompt: nothing points at a missing file


class _Reporting(Protocol):
    """A store that says what its last ``load()`` trimmed (a trimming layer, or one composing it)."""

    @property
    def last_report(self) -> dict[str, int]: ...


def trim_report(store: _Reporting) -> str:
    """One line for the UI log describing the last ``load()``, in the language flower speaks."""
    report = store.last_report
    cleared = report.get("cleared", 0)
    if cleared:
        tokens = report.get("chars_saved", 0) // 4
        return _("裁掉 {cleared} 个工具结果(保留最近 {kept} 个),省下 ~{tokens} tokens").format(
            cleared=cleared, kept=report.get("kept", 0), tokens=tokens
        )
    expired = report.get("expired", 0)
    if expired:
        return _("{expired} 个时效性结果标记为过期").format(expired=expired)
    return _("未裁剪")
