"""Side questions (旁路问答): while a run goes on, a read-only oracle answers a question about it.

The oracle is shown the run's most recent events and where its workbench is, and runs in a
Runtime of its own under ``<run_dir>/aside/``: its sessions and its manifest are its own, so the
run's books (manifest, lineage, cost) never see it, and nothing it says enters the run's context.
It is braked like the role says (Read / Glob / Grep only, 12 turns, $0.50) and tries once: a
side question that fails is reported, never retried for an hour.

Front ends (the terminal, the editor) keep an `EventWindow` of their run and call `ask_aside`.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.i18n import _
from .events import ContextUpdate, Event, Prompt, Thinking

if TYPE_CHECKING:  # the runtime is slow to import; only asking needs it
    from .agent import AgentSpec
    from .workbench import Workbench

ASIDE_DIR = "aside"  # under the run's run_dir
ASIDE_STEP = "旁路问答"  # the step name in the aside's own manifest
WINDOW_EVENTS = 60
EVENT_CHARS = 200
WAIT_S = 120.0  # how long a front end waits for open side questions when the run is over
QUESTION_MARKS = ("?", "\uff1f")  # the ASCII mark and the full-width one a Chinese IME types

_SPACE = re.compile(r"\s+")


def aside_question(line: str) -> str | None:
    """The question of a typed line that starts with ``?`` or its full-width form; None for any
    other line.

    "" means the mark came with nothing after it."""
    text = line.strip()
    for mark in QUESTION_MARKS:
        if text.startswith(mark):
            return text[len(mark) :].strip()
    return None


class EventWindow:
    """The last `size` events of a run as one line each, cut to `chars` characters.

    Thinking and prompts stay out (what the model mused and what it was told are not what
    happened), and so do the context readings that follow every turn (they would crowd out
    everything else; the figure is in each turn's own books)."""

    def __init__(self, size: int = WINDOW_EVENTS, chars: int = EVENT_CHARS) -> None:
        self.chars = chars
        self._lines: collections.deque[str] = collections.deque(maxlen=size)

    def add(self, event: Event) -> None:
        if isinstance(event, (Thinking, Prompt, ContextUpdate)) or event.kind in ("thinking", "prompt"):
            return
        text = _SPACE.sub(" ", str(event)).strip()
        if not text:
            return
        who = "subagent " if event.payload.get("subagent") else ""
        self._lines.append(f"[{who}{event.kind}] {text}"[: self.chars])

    def lines(self) -> list[str]:
        return list(self._lines)

    def clear(self) -> None:
        self._lines.clear()


@dataclass(frozen=True)
class AsideAnswer:
    """What a side question came to: the answer and its cost, or why there is none."""

    question: str
    ok: bool
    text: str = ""
    cost_usd: float = 0.0
    error: str = ""


def aside_prompt(question: str, recent: list[str], *, workspace: Path, workbench: Path | None) -> str:
    """The oracle's prompt: the question, the recent events (oldest first), where to look."""
    events = "\n".join(f"- {line}" for line in recent) or "(还没有事件)"
    if workbench is not None:
        bench = (
            f"工作台:{workbench}\n"
            f"- {workbench / 'INDEX.md'}:工作台的目录\n"
            f"- {workbench / 'notes'}/:需求.md(需求确认书)、目标.md(目标与判定清单)、"
            "问答记录.md、交接-<步骤>.md(换代时的交接书)\n"
            f"- {workbench / 'artifacts'}/:长产出;{workbench / 'scripts'}/:要跑第二次的脚本"
        )
    else:
        bench = "这次运行没有工作台。"
    return (
        f"人顺路问了一句:{question}\n\n"
        f"## 那次运行最近的事件(最多 {WINDOW_EVENTS} 条,旧的在前;每条截到 {EVENT_CHARS} 字,"
        "不含思考和提示词)\n"
        f"{events}\n\n"
        f"## 去哪里看\n工作区:{workspace}\n{bench}"
    )


async def ask_aside(
    question: str,
    recent: list[str],
    *,
    workspace: str | Path,
    run_dir: str | Path,
    workbench: Workbench | None = None,
    spec: AgentSpec | None = None,
) -> AsideAnswer:
    """Ask the oracle once, in a Runtime under ``<run_dir>/aside/``. Never raises, except when
    cancelled: a failure (no credential, an API error, a crash) is an answer with ok=False."""
    import asyncio

    from .roles import oracle
    from .runtime import Runtime

    def open_runtime() -> tuple[Runtime, Workbench | None]:
        # the run's workbench, if there is one: its index goes into the oracle's prompt and a
        # folder outside the workspace becomes readable; nothing is spilled into it, and a
        # question never makes a workbench where there was none
        bench = workbench if workbench is not None and workbench.root.is_dir() else None
        rt = Runtime(
            workspace=workspace,
            run_dir=Path(run_dir) / ASIDE_DIR,
            workbench=bench if bench is not None else False,
            spill_threshold=None,
            resilience=False,  # one try: a side question must not hang on for an hour
            handoff=False,
        )
        return rt, bench

    try:
        runtime, bench = await asyncio.to_thread(open_runtime)
    except Exception as exc:
        return AsideAnswer(question, False, error=f"{type(exc).__name__}: {exc}")
    prompt = aside_prompt(
        question, recent, workspace=runtime.workspace, workbench=bench.root if bench else None
    )
    try:
        result = await runtime.run(spec or oracle(), prompt, step_name=ASIDE_STEP)
    except Exception as exc:
        return AsideAnswer(question, False, error=f"{type(exc).__name__}: {exc}")
    finally:
        runtime.close()
    if not result.ok:
        return AsideAnswer(question, False, cost_usd=result.cost_usd, error=result.error or _("没有答案"))
    return AsideAnswer(question, True, text=result.text or _("(它没说话)"), cost_usd=result.cost_usd)
