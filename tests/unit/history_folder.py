"""A run folder written by hand, as the engine leaves one: manifest rows, lineage, the sessions'
transcripts in a real sessions.db (entries shaped like the CLI's), the Q&A log and handoff
documents. For the history's unit tests, which need exact times and no CLI."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import project_key_for_directory
from claude_agent_sdk.types import SessionStoreEntry

from flower.core.handoff import HANDOFF_PROMPT, Handoff
from flower.stores.sqlite import SqliteSessionStore

T0 = 1_800_000_000.0  # every time in a test is T0 + seconds


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class RunFolder:
    root: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    entries: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lineage: dict[str, str] = field(default_factory=dict)
    woke: int = 0

    @property
    def workspace(self) -> Path:
        return self.root

    @property
    def run_dir(self) -> Path:
        return self.root / "runs"

    @property
    def notes(self) -> Path:
        return self.root / ".flower" / "notes"

    # -- the manifest ---------------------------------------------------------------------------
    def row(
        self,
        step: str,
        session: str | None,
        *,
        run: str,
        start: float,
        end: float | None,
        ok: bool = True,
        cost: float = 0.1,
        turns: int = 1,
        text: str = "",
        retired: tuple[str, ...] = (),
        attempts: int = 1,
        errors: tuple[str, ...] = (),
        error: str | None = None,
    ) -> dict[str, Any]:
        row = {
            "step": step,
            "session_id": session,
            "ok": ok,
            "cost_usd": cost,
            "num_turns": turns,
            "text": text,
            "error": error,
            "started_at": T0 + start,
            "ended_at": T0 + end if end is not None else 0.0,
            "attempts": attempts,
            "errors": list(errors),
            "resumed": False,
            "retired": list(retired),
            "context": 0,
            "duration_s": round(end - start, 2) if end is not None else 0.0,
            "run": run,
        }
        self.rows.append(row)
        return row

    # -- transcripts ----------------------------------------------------------------------------
    def turn(
        self, session: str, at: float, used: int, *, blocks: int = 1, model: str = "claude-opus-4-5"
    ) -> None:
        """One model turn: `blocks` entries under one message id, all with the same usage."""
        message_id = f"msg_{uuid.uuid4().hex[:12]}"
        for i in range(blocks):
            self._entry(
                session,
                {
                    "type": "assistant",
                    "timestamp": stamp(T0 + at + i * 0.001),
                    "message": {
                        "id": message_id,
                        "model": model,
                        "role": "assistant",
                        "usage": {"input_tokens": used, "cache_read_input_tokens": 0, "output_tokens": 5},
                        "content": [{"type": "text", "text": f"block {i}"}],
                    },
                },
            )

    def prompt(self, session: str, at: float, text: str) -> None:
        self._entry(
            session,
            {"type": "user", "timestamp": stamp(T0 + at), "message": {"role": "user", "content": text}},
        )

    def handoff_prompt(self, session: str, at: float) -> None:
        self.prompt(session, at, HANDOFF_PROMPT.format(used=160_000, window=200_000))

    def ask_call(self, session: str, at: float, question: str, used: int) -> None:
        self._entry(
            session,
            {
                "type": "assistant",
                "timestamp": stamp(T0 + at),
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:12]}",
                    "model": "claude-opus-4-5",
                    "role": "assistant",
                    "usage": {"input_tokens": used, "output_tokens": 5},
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{uuid.uuid4().hex[:8]}",
                            "name": "mcp__human__ask",
                            "input": {"question": question, "options": ["a", "b"]},
                        }
                    ],
                },
            },
        )

    def _entry(self, session: str, entry: dict[str, Any]) -> None:
        entry = {"uuid": str(uuid.uuid4()), "sessionId": session, "isSidechain": False, **entry}
        self.entries.setdefault(session, []).append(entry)

    # -- notes ------------------------------------------------------------------------------------
    def log(self, *entries: tuple[str, str, float, str, str, float]) -> None:
        """(id, state, asked at, question, answer, waited) -> 问答记录.md, as HumanChannel writes it."""
        lines = ["# 问答记录", ""]
        for ask_id, state, at, question, answer, waited in entries:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(T0 + at))
            lines += [f"## {ask_id} · {state} · {when}", "", f"- 问:{question}", "- 选项:a / b"]
            lines += [f"- 答:{answer}", f"- 等了 {waited}s", ""]
        self.notes.mkdir(parents=True, exist_ok=True)
        (self.notes / "问答记录.md").write_text("\n".join(lines), encoding="utf-8")

    def handoff_doc(self, step: str, at: float, *, archived: bool = False, degraded: bool = False) -> Path:
        doing = "[降级:交接没写成] 框架拼的" if degraded else "写 README"
        doc = Handoff(doing=doing, next="补第二节", step=step)
        name = (
            f"archive/交接/{step}-20270115-080000-{uuid.uuid4().hex[:4]}.md"
            if archived
            else f"交接-{step}.md"
        )
        path = doc.write(self.notes / name)
        os.utime(path, (T0 + at, T0 + at))
        return path

    def goal(self, *checks: str) -> Path:
        self.notes.mkdir(parents=True, exist_ok=True)
        path = self.notes / "目标.md"
        path.write_text(
            "# 目标\n做完它\n\n# 判定清单\n" + "".join(f"- {c}\n" for c in checks), encoding="utf-8"
        )
        return path

    # -- on disk ------------------------------------------------------------------------------------
    def write(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "manifest.json").write_text(
            json.dumps(self.rows, ensure_ascii=False), encoding="utf-8"
        )
        lineage = {"workspace": str(self.workspace.resolve()), "woke": self.woke, "steps": self.lineage}
        (self.run_dir / "lineage.json").write_text(json.dumps(lineage, ensure_ascii=False), encoding="utf-8")
        store = SqliteSessionStore(self.run_dir / "sessions.db")
        try:
            key = project_key_for_directory(self.workspace)
            for session, entries in self.entries.items():
                store.add(
                    {"project_key": key, "session_id": session}, cast("list[SessionStoreEntry]", entries)
                )
        finally:
            store.close()
