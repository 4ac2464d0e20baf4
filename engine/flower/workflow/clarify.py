"""The clarify step: ask until the request is clear, then freeze it as the brief (需求.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from ..core.brief import Brief
from ..core.roles import clarify
from .base import Ctx, RoleOptions, Step
from .notes import keep_before_rewrite

if TYPE_CHECKING:
    from ..core.agent import AgentSpec
    from ..core.human import HumanChannel
    from ..core.runtime import StepResult

BRIEF_KEY = "_brief"
MISSING_KEY = "_brief_missing"
CLARIFY_RESUME = (
    "接着刚才没问完的需求确认 —— 这不是新任务,也不是重新开始:已经问过、答过的不要再问,"
    "从还没弄清的地方接着问;问清了就按四段格式交出需求确认书。"
)

# What HumanChannel.amend appends: "## <label> · <time>" sections after the four.
_AMENDMENT = re.compile(r"^##\s*(唤醒时追加|运行中补充)\b.*$", re.M)


class ClarifyOptions(RoleOptions, total=False):
    """clarify_step's role options: the clarifier may be kept from reading the workspace."""

    can_read: bool


def amendments(text: str) -> str:
    """The sections a person added to the brief after it was frozen, verbatim."""
    match = _AMENDMENT.search(text)
    return text[match.start() :].strip() if match else ""


def brief_block(brief: Brief) -> str:
    """What downstream steps read: the four sections plus anything added later."""
    extra = ""
    if brief.path is not None:
        try:
            extra = amendments(Path(brief.path).read_text(encoding="utf-8"))
        except OSError:
            extra = ""
    return f"{brief.prompt_block()}\n\n{extra}".strip()


def clarify_step(
    channel: HumanChannel,
    *,
    brief_path: str | Path,
    prompt: str | Callable[[Ctx], str],
    name: str = "确认需求",
    spec: AgentSpec | None = None,
    instructions: str = "",
    always_ask: bool = False,
    on_fail: str = "stop",
    retries: int = 0,
    **spec_kw: Unpack[ClarifyOptions],
) -> Step:
    """Ask until the four sections are clear, then write the brief and feed it downstream."""
    spec = spec or clarify(name, channel, instructions=instructions, **spec_kw)
    brief_path = Path(brief_path)

    def inject(ctx: Ctx, brief: Brief) -> None:
        ctx[BRIEF_KEY] = brief
        ctx[name] = brief_block(brief)
        ctx.pop(MISSING_KEY, None)

    def when(ctx: Ctx) -> bool:
        if always_ask:
            return True
        frozen = Brief.load(brief_path)
        if frozen is not None and frozen.complete():
            inject(ctx, frozen)  # skipped, but downstream still needs the brief
            return False
        return True

    def gate(result: StepResult, ctx: Ctx) -> bool:
        brief = Brief.parse(result.text)
        if not brief.complete():
            ctx[MISSING_KEY] = brief.missing()
            return False
        old = Brief.load(brief_path)
        keep_before_rewrite(ctx, brief_path, brief.to_markdown(), old.problem() if old is not None else "")
        brief.write(brief_path)
        inject(ctx, brief)
        return True

    def reduce(result: StepResult, ctx: Ctx) -> str:
        return str(ctx[name])  # the parsed brief, not the model's raw reply

    return Step(
        name,
        spec,
        prompt,
        retries=retries,
        gate=gate,
        on_fail=on_fail,
        when=when,
        resume_prompt=CLARIFY_RESUME,
        reduce=reduce,
    )


__all__ = ["BRIEF_KEY", "CLARIFY_RESUME", "MISSING_KEY", "amendments", "brief_block", "clarify_step"]
