"""Resume-time trimming: expire stale glance results and spill big tool results to files.

Everything happens in ``load()``, on the copy that goes back to the model. The SQLite rows
are never touched, so another resume with another policy still sees the full transcript.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.secrets import redact
from .ephemeral import EphemeralPolicy, is_ephemeral
from .sqlite import SqliteSessionStore

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

Entry = dict[str, Any]

# How much of a command the expiry note quotes; the note must stay one short line.
_CMD_PREVIEW = 80


@dataclass
class TrimPolicy:
    """How big tool results are archived at resume time."""

    keep_recent: int = 20
    min_chars: int = 2000
    spill_dirname: str = ".flower/spill"
    enabled: bool = True

    def placeholder(self, path: str, n: int) -> str:
        """The one-line pointer that replaces an archived result."""
        return f"[工具结果已裁剪:原文 {n} 字符已存到 {path},需要时用 Read 读取]"


def _blocks(entry: Entry) -> list[Any] | None:
    """The content block list of an entry's message, or None if it has none."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def _is_block(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _tool_result_positions(entries: list[Entry]) -> list[tuple[int, int]]:
    """(entry index, block index) of every tool_result, in transcript order.

    Only transcript messages count: bookkeeping lines such as ``api-request-blob`` carry
    copies of results but are not what the model resumes with. Compact summaries are left
    out: they are never touched.
    """
    positions: list[tuple[int, int]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("type") != "user":
            continue
        if entry.get("isCompactSummary"):
            continue
        blocks = _blocks(entry)
        if blocks is None:
            continue
        for j, block in enumerate(blocks):
            if _is_block(block, "tool_result"):
                positions.append((i, j))
    return positions


def _replace_block(entries: list[Entry], i: int, j: int, block: dict[str, Any]) -> None:
    """Copy-on-write replacement of one content block, so the caller's dicts stay intact."""
    entry = entries[i]
    message = entry["message"]
    content = list(message["content"])
    content[j] = block
    entries[i] = {**entry, "message": {**message, "content": content}}


def _plain_text(content: Any) -> str | None:
    """The text of a result made only of text (a str, or a list of text parts), else None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        _is_block(part, "text") and isinstance(part.get("text"), str) for part in content
    ):
        return "".join(part["text"] for part in content)
    return None


def _short_command(cmd: str) -> str:
    lines = cmd.strip().splitlines() or [""]
    line = lines[0]
    if len(line) > _CMD_PREVIEW or len(lines) > 1:
        line = line[:_CMD_PREVIEW].rstrip() + "…"
    return f"`{line}`"


class TrimmingSessionStore(SqliteSessionStore):
    """``SqliteSessionStore`` whose ``load()`` expires stale glances and archives big results."""

    def __init__(
        self,
        path: str | Path,
        workspace: str | Path,
        policy: TrimPolicy | None = None,
        ephemeral: EphemeralPolicy | None = None,
    ) -> None:
        super().__init__(path)
        self.workspace = Path(workspace).resolve()
        self.policy = policy if policy is not None else TrimPolicy()
        self.ephemeral = ephemeral if ephemeral is not None else EphemeralPolicy()
        self.last_report: dict[str, int] = {}
        spill = (self.workspace / self.policy.spill_dirname).resolve()
        # Outside the workspace the agent's Read cannot follow the pointer.
        if not spill.is_relative_to(self.workspace):
            raise ValueError(f"spill_dirname {self.policy.spill_dirname!r} must stay inside the workspace")

    @property
    def _spill_dir(self) -> Path:
        return (self.workspace / self.policy.spill_dirname).resolve()

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries = await super().load(key)
        self.last_report = {}
        if entries is None:
            return None
        if self.ephemeral.enabled:
            entries = self.expire(entries)
        if self.policy.enabled:
            entries = self.trim(entries)
        return entries

    def expire(self, entries: list[Entry]) -> list[Entry]:
        """Replace old results of ephemeral Bash commands with a one-line expiry note.

        Only the content changes; the tool_result block stays. A result's age is its
        1-based position from the end among all tool results, so the last
        ``keep_recent`` (age <= keep_recent) are exempt. Expired text is not spilled:
        rerunning the command is the only way to get a current answer anyway.
        """
        policy = self.ephemeral
        out = list(entries)
        positions = _tool_result_positions(out)
        age_of = {pos: len(positions) - k for k, pos in enumerate(positions)}
        commands: dict[str, str] = {}  # tool_use_id -> Bash command seen so far
        judged: dict[str, bool] = {}
        expired = 0
        for i, entry in enumerate(entries):
            blocks = _blocks(entry) if isinstance(entry, dict) else None
            if blocks is None:
                continue
            if entry.get("type") == "assistant":
                for block in blocks:
                    if _is_block(block, "tool_use") and block.get("name") == "Bash":
                        inp = block.get("input")
                        cmd = inp.get("command") if isinstance(inp, dict) else None
                        if isinstance(cmd, str) and isinstance(block.get("id"), str):
                            commands[block["id"]] = cmd
                continue
            if entry.get("isMeta") or entry.get("isCompactSummary"):
                continue
            # A denied or interrupted call never produced a result worth expiring.
            if entry.get("toolDenialKind") is not None:
                continue
            for j, block in enumerate(blocks):
                age = age_of.get((i, j))
                if age is None or age <= policy.keep_recent:
                    continue
                cmd = commands.get(block.get("tool_use_id"))
                if cmd is None:
                    continue
                content = block.get("content")
                text = _plain_text(content)
                if text is None or len(text) > policy.max_chars:
                    continue
                verdict = judged.get(cmd)
                if verdict is None:
                    # Glances repeat (`git status` dozens of times); parse each command once.
                    verdict = judged[cmd] = is_ephemeral(cmd, workspace=self.workspace)
                if not verdict:
                    continue
                note = policy.placeholder(_short_command(cmd), age)
                new_content: Any = note if isinstance(content, str) else [{"type": "text", "text": note}]
                _replace_block(out, i, j, {**block, "content": new_content})
                expired += 1
        self.last_report["expired"] = expired
        return out

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """Spill tool_result text of ``>= min_chars`` to files and leave a pointer.

        The last ``keep_recent`` results stay verbatim. Only text is archived: image and
        document parts of a list content stay where they are.
        """
        policy = self.policy
        out = list(entries)
        positions = _tool_result_positions(out)
        cutoff = max(len(positions) - max(policy.keep_recent, 0), 0)
        cleared = saved = 0
        for i, j in positions[:cutoff]:
            block = out[i]["message"]["content"][j]
            trimmed = self._trim_content(block.get("content"))
            if trimmed is None:
                continue
            new_content, chars = trimmed
            _replace_block(out, i, j, {**block, "content": new_content})
            cleared += 1
            saved += chars
        self.last_report["cleared"] = cleared
        self.last_report["kept"] = len(positions) - cutoff
        self.last_report["chars_saved"] = saved
        return out

    def _trim_content(self, content: Any) -> tuple[Any, int] | None:
        """(new content, chars saved) for a result worth archiving, else None."""
        if isinstance(content, str):
            parts = [content]
        elif isinstance(content, list):
            parts = [p["text"] for p in content if _is_block(p, "text") and isinstance(p.get("text"), str)]
        else:
            return None
        total = sum(len(p) for p in parts)
        if not parts or total < self.policy.min_chars:
            return None
        text = parts[0] if len(parts) == 1 else "\n\n".join(parts)
        path = self._spill(text)
        if path is None:
            return None
        pointer = self.policy.placeholder(str(path), len(text))
        if len(pointer) >= total:
            return None
        if isinstance(content, str):
            return pointer, total - len(pointer)
        new_list: list[Any] = []
        placed = False
        for part in content:
            if _is_block(part, "text") and isinstance(part.get("text"), str):
                if not placed:
                    new_list.append({**part, "text": pointer})
                    placed = True
                continue
            new_list.append(part)
        return new_list, total - len(pointer)

    def _spill(self, text: str) -> Path | None:
        """Write ``text`` to its content-addressed file; None if the disk refuses.

        A result is only trimmed once its full text is safely on disk, hence the atomic
        replace and the size check on an existing file.
        """
        data = redact(text).encode("utf-8", "surrogatepass")  # a spill file is flower's: no credential
        spill_dir = self._spill_dir
        path = spill_dir / f"{hashlib.sha256(data).hexdigest()[:16]}.txt"
        try:
            if path.is_file() and path.stat().st_size == len(data):
                return path
            spill_dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=spill_dir, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return None
        return path


def trim_report(store: TrimmingSessionStore) -> str:
    """One line of Chinese for the UI log describing the last ``load()``."""
    report = store.last_report
    cleared = report.get("cleared", 0)
    if cleared:
        tokens = report.get("chars_saved", 0) // 4
        return f"裁掉 {cleared} 个工具结果(保留最近 {report.get('kept', 0)} 个),省下 ~{tokens} tokens"
    expired = report.get("expired", 0)
    if expired:
        return f"{expired} 个时效性结果标记为过期"
    return "未裁剪"
