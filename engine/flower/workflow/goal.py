"""The goal: a judge sets a checklist before work (goal_step) and rules on every round (with_goal)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from ..base.i18n import N_, _
from ..core.events import Event, GoalUnverifiable, VerdictGiven, emitter, verdict_state
from ..core.evidence import Trail, TrailRecorder, evidence_policy
from ..core.goal import Goal, Verdict
from ..core.labels import StepLabel
from ..core.progress import NoProgress, round_fingerprints, stall_limit
from ..core.resilience import classify
from ..core.roles import judge
from ..core.rundir import Repair, update_json
from ..stores.ledger import ledger_of
from .base import (
    BUDGET_KEY,
    FAULT_KEY,
    NO_PROGRESS,
    STOPPED_KEY,
    Ctx,
    RoleOptions,
    Step,
    StepAbort,
    checkpoints_of,
    event_sink,
    runtime_of,
)
from .notes import keep_before_rewrite

if TYPE_CHECKING:
    from collections.abc import Callable

    from claude_agent_sdk.types import SessionKey

    from ..core.agent import AgentSpec
    from ..core.human import HumanChannel
    from ..core.runtime import Runtime, StepResult

GOAL_KEY = "_goal"
VERDICT_KEY = "_verdict"
ROUND_KEY = "_goal_rounds"
STALL_KEY = "_no_progress"  # the rounds-without-progress count (core/progress.py)

NO_BRIEF = "(没有确认书)"
GOAL_PROMPT = (
    "这是需求确认书。请据此设定目标与判定清单(按你的规则,恰好两段:目标 / 判定清单;"
    "每条判定都要能在当场验证,这里验证不了的条目末尾标 [此环境无法验证:原因])。\n\n{brief}"
)
VERIFY_PROMPT = (
    "判定这一轮。下面是目标与判定清单,以及干活方交回的汇报。看产物本身(文件、运行结果),"
    "不要只看汇报或源码;按你的规则写四段:结论 / 理由 / 未通过 / 证据(判定清单每条一行,"
    "写明跑了什么命令或看了哪个文件的哪几行)。\n\n"
    "{goal}\n\n## 干活方的汇报\n{report}"
)
EVIDENCE_KIND = "evidence"  # the kind of a shared store's decision that holds a trail
EVIDENCE_DIR = "evidence"  # under the run folder: one file per judge label (干活·判定#1.json)
ACCEPT = "接受这个结果,就这样往下走"
AMEND = "修改目标"
WRONG = "你判断错了,继续做"
UNREACHABLE_QUESTION = "目标被判为**无法达成**:{reason}\n怎么办?"
AMEND_QUESTION = "目标要怎么改?一句话说清要加上或改成什么。"
DEFAULT_REASON = "判定者没有给出明确结论,按未达成处理。"
# the choices when rounds make no progress (amending goes the unreachable goal's way)
STALL_CONTINUE = N_("接着做")
STALL_AMEND = N_("修改目标")
STALL_STOP = N_("停下")


class GoalOptions(RoleOptions, total=False):
    """goal_step's role options: the judge that sets the goal may also run commands."""

    can_run: bool


def _emit(ctx: Ctx, event: Event) -> None:
    emitter(event_sink(ctx))(event)


def goal_step(
    channel: HumanChannel,
    *,
    goal_path: str | Path,
    brief_key: str = "确认需求",
    name: str = "设定目标",
    spec: AgentSpec | None = None,
    instructions: str = "",
    always_set: bool = False,
    on_fail: str = "stop",
    retries: int = 0,
    **spec_kw: Unpack[GoalOptions],
) -> Step:
    """A judge reads the brief and writes the goal and its checklist (目标.md)."""
    spec = spec or judge(name, channel, instructions=instructions, **spec_kw)
    goal_path = Path(goal_path)

    def prompt(ctx: Ctx) -> str:
        return GOAL_PROMPT.format(brief=ctx.get(brief_key) or NO_BRIEF)

    def inject(ctx: Ctx, goal: Goal) -> None:
        ctx[GOAL_KEY] = goal
        ctx[name] = goal.to_markdown()

    def when(ctx: Ctx) -> bool:
        if always_set:
            return True
        frozen = Goal.load(goal_path)
        if frozen is not None and frozen.complete():
            inject(ctx, frozen)
            return False
        return True

    def gate(result: StepResult, ctx: Ctx) -> bool:
        goal = Goal.parse(result.text)
        if not goal.complete():
            return False
        old = Goal.load(goal_path)
        keep_before_rewrite(ctx, goal_path, goal.to_markdown(), old.problem() if old is not None else "")
        goal.write(goal_path)
        inject(ctx, goal)
        if goal.unverifiable:
            # decided now, at goal-setting time: by the first verdict a round of work is spent
            _emit(
                ctx,
                GoalUnverifiable(
                    text=_("目标里有 {unverifiable} 条在这个环境里验证不了").format(
                        unverifiable=len(goal.unverifiable)
                    ),
                    unverifiable=list(goal.unverifiable),
                    total=len(goal.checks),
                    path=str(goal_path),
                ),
            )
        return True

    def reduce(result: StepResult, ctx: Ctx) -> str:
        return str(ctx[name])

    return Step(name, spec, prompt, retries=retries, gate=gate, on_fail=on_fail, when=when, reduce=reduce)


def with_goal(
    step: Step,
    channel: HumanChannel,
    *,
    goal_path: str | Path,
    spec: AgentSpec | None = None,
    rounds: int = 3,
    instructions: str = "",
    can_run: bool = False,
    name: str | None = None,
    stall_rounds: int | None = None,
    evidence: str | None = None,
    **spec_kw: Unpack[RoleOptions],
) -> Step:
    """Guard a step with the goal: an independent judge rules at the end of every round.

    ``stall_rounds``: after that many rounds in a row failing the same checks with the
    workspace unchanged, the person is asked whether to go on, change the goal or stop
    (None: ``$FLOWER_STALL_ROUNDS``, else 3; 0: never asked).

    ``evidence``: ``"strict"`` (the default) takes an achieved verdict only when every check
    is backed by a tool call the judge made in its turn (core/evidence.py); ``"relaxed"``
    takes the judge's word. None: ``$FLOWER_EVIDENCE``, else strict. Either way a check marked
    ``[此环境无法验证:…]`` is never met."""
    stall_rounds = stall_limit(stall_rounds)
    strict = evidence_policy(evidence) == "strict"
    label = name or StepLabel.judge_of(step.name)
    judger = spec or judge(label, channel, instructions=instructions, can_run=can_run, **spec_kw)
    goal_path = Path(goal_path)

    async def gate(result: StepResult, ctx: Ctx) -> bool:
        runtime = runtime_of(ctx)
        if runtime is None:
            raise StepAbort(_("拿不到 Runtime,无法判定目标"))  # never pretend it passed
        before = ctx.get(ROUND_KEY)
        round_no = ctx[ROUND_KEY] = (before if isinstance(before, int) else 0) + 1
        goal = ctx.get(GOAL_KEY)
        if not (isinstance(goal, Goal) and goal.complete()):
            goal = Goal.load(goal_path) or Goal()
            if goal.damage:
                # judged on what is left, a cut-off checklist would pass on its first lines alone
                raise StepAbort(
                    _("{goal_path} {damage}:补好它(或删掉它让 flower 重新设定目标)再跑").format(
                        goal_path=goal_path, damage=goal.damage
                    )
                )
        # the judge is its own fresh session every round: never resumed, never in the lineage
        recorder = TrailRecorder(runtime.workspace)
        label = str(StepLabel.verdict(step.name, round_no))  # whatever the judge is called
        verdict_run = await runtime.run(
            judger,
            VERIFY_PROMPT.format(goal=goal.prompt_block(), report=result.text or "(没有汇报)"),
            step_name=label,
            on_event=_recording(recorder, event_sink(ctx)),
        )
        fault = runtime.fault
        if fault is not None:  # the disk refused the judge's books: the workflow stops on its line
            ctx[FAULT_KEY] = ctx["_fatal"] = fault.line()
            return False
        if verdict_run.stopped == "budget":
            ctx[BUDGET_KEY] = ctx["_fatal"] = verdict_run.error  # the money ran out mid-verdict
            return False
        if not verdict_run.ok and classify(verdict_run.error) == "fatal":
            ctx["_fatal"] = verdict_run.error  # no verdict can come; the workflow stops at once
            return False
        trail = recorder.trail()
        verdict = Verdict.parse(verdict_run.text).prove(goal, trail, strict=strict)
        if not verdict.ok and not verdict.reason:
            verdict.reason = DEFAULT_REASON
        if verdict.unproven:
            # the person reads why; the next round hears it with the checks (Verdict.feedback)
            why = _("没有证据:{checks}").format(checks=";".join(verdict.unproven))
            verdict.reason = f"{why}\n{verdict.reason}".strip()
        ctx[VERDICT_KEY] = verdict
        keep_trail(runtime, label, round_no, verdict_run.session_id, verdict, trail)
        _emit(
            ctx,
            VerdictGiven(
                text=_("第 {round_no} 轮判定:{state}").format(
                    round_no=round_no, state=verdict.state or _("无法解析")
                ),
                state=verdict_state(verdict.state),
                reason=verdict.reason,
                failed=list(verdict.failed),
                round=round_no,
                goal_path=str(goal_path),
                session_id=verdict_run.session_id,
                evidence=list(verdict.evidence),
                trail=list(trail.calls),
                unproven=list(verdict.unproven),
                claimed=verdict_state(verdict.claimed),
            ),
        )
        stalled = _stalled(ctx, verdict, stall_rounds)
        if verdict.achieved:
            return True
        if stalled and round_no < rounds:  # on the last round the run ends anyway: nothing to ask
            await _ask_on_no_progress(channel, ctx, goal, goal_path, verdict, stall_rounds)
            return False
        if not verdict.unreachable:
            return False  # not yet, or ambiguous: ambiguity is never a pass
        ask = await channel.ask(
            UNREACHABLE_QUESTION.format(reason=verdict.reason or "(没说原因)"), [ACCEPT, AMEND, WRONG]
        )
        if ask.state != "answered":
            raise StepAbort(
                _("目标判定为验证不了,且没人回应({state}):再跑一轮也只是空转").format(state=ask.state)
            )
        if ask.answer.strip() == ACCEPT:
            return True
        if ask.answer.strip() == AMEND:
            await _amend_goal(channel, ctx, goal, goal_path)
            return False
        verdict.reason = f"人认为判定有误:{ask.answer.strip()}"
        return False

    def on_reject(result: StepResult, ctx: Ctx) -> str:
        verdict = ctx.get(VERDICT_KEY)
        return verdict.feedback() if isinstance(verdict, Verdict) else ""

    # replace(), not a rebuilt Step: a field forgotten in a rebuild fails silently
    return replace(step, retries=max(0, rounds - 1), gate=gate, on_reject=on_reject, checkpoints=True)


def _recording(recorder: TrailRecorder, on_event: Callable[[Event], None] | None) -> Callable[[Event], None]:
    """The judge's event callback: every event is recorded, then passed on as before."""

    def seen(event: Event) -> None:
        recorder.observe(event)
        if on_event is not None:
            on_event(event)

    return seen


def trail_path(run_dir: str | Path, label: str) -> Path:
    """Where the trail of the judge `label` (干活·判定#2) is kept: named by step and round."""
    safe = "".join(c if c not in '/\\:*?"<>|' else "_" for c in label) or "judge"
    return Path(run_dir) / EVIDENCE_DIR / f"{safe}.json"


def trail_entry(
    label: str, round_no: int, session_id: str | None, verdict: Verdict, trail: Trail
) -> dict[str, object]:
    """One judge turn's record as kept on disk and in a shared store's decisions: no clock, no
    run id (two runs of the same work write the same entries but for the judge's session)."""
    return {
        "step": label,
        "round": round_no,
        "session_id": session_id,
        "state": verdict.state,
        "claimed": verdict.claimed,
        "unproven": list(verdict.unproven),
        "evidence": [e.to_json() for e in verdict.evidence],
        "trail": trail.to_json(),
    }


def keep_trail(
    runtime: Runtime, label: str, round_no: int, session_id: str | None, verdict: Verdict, trail: Trail
) -> None:
    """Persist the trail beside the round's manifest row: ``<run_dir>/evidence/<label>.json``
    holds one entry per judge session of that label (a later wake's round 1 is another entry);
    and, when the store is shared, in the store's decisions of the judge's session (kind
    ``evidence``). Losing it never fails the round: the verdict itself stands on its own."""
    entry = trail_entry(label, round_no, session_id, verdict, trail)
    path = trail_path(runtime.run_dir, label)

    def merge(old: object, repair: Repair | None) -> list[object]:
        kept = [e for e in old if isinstance(e, dict)] if isinstance(old, list) else []
        return [*(e for e in kept if e.get("session_id") != session_id or session_id is None), entry]

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        update_json(path, merge, check=lambda data: None if isinstance(data, list) else "not a list")
    except OSError as exc:
        runtime.faulted(exc, path)
    if runtime.shared is not None and session_id:
        key: SessionKey = {"project_key": runtime.project_key, "session_id": session_id}
        with contextlib.suppress(Exception):  # the file above is the books' own copy
            ledger_of(runtime.store).record(
                key, EVIDENCE_KIND, {label: json.dumps(entry, ensure_ascii=False)}, time.time()
            )


async def _amend_goal(channel: HumanChannel, ctx: Ctx, goal: Goal, goal_path: Path) -> bool:
    """Ask how the goal should change and append it to 目标.md; True when it was changed."""
    change = await channel.ask(AMEND_QUESTION)
    if change.state != "answered" or not change.answer.strip():
        return False
    goal.amend(change.answer.strip())
    keep_before_rewrite(ctx, goal_path, goal.to_markdown())
    goal.write(goal_path)
    ctx[GOAL_KEY] = goal
    return True


def _stalled(ctx: Ctx, verdict: Verdict, limit: int) -> bool:
    """Whether this verdict makes `limit` rounds in a row without progress (never for an
    unreachable one, which asks its own question)."""
    tracker = ctx.get(STALL_KEY)
    if not isinstance(tracker, NoProgress):
        tracker = ctx[STALL_KEY] = NoProgress(limit)
    if verdict.unreachable:
        tracker.reset()
        return False
    before, after = round_fingerprints(checkpoints_of(ctx)) if limit > 0 else (None, None)
    return tracker.observe(verdict.achieved, verdict.failed, before, after)


async def _ask_on_no_progress(
    channel: HumanChannel, ctx: Ctx, goal: Goal, goal_path: Path, verdict: Verdict, limit: int
) -> None:
    """Go on, change the goal, or stop; raises StepAbort for stop and for nobody answering."""
    items = "\n".join(f"- {c}" for c in verdict.failed) or _("(判定者没列出未通过的条目)")
    question = _(
        "连续 {n} 轮判定没通过的都是同样这些条目,工作区也一个文件都没变:\n{items}\n"
        "再跑下去多半还是这样。怎么办?"
    ).format(n=limit, items=items)
    go_on, amend, stop = _(STALL_CONTINUE), _(STALL_AMEND), _(STALL_STOP)
    ask = await channel.ask(question, [go_on, amend, stop])
    answer = ask.answer.strip()
    if ask.state != "answered" or answer == stop:
        ctx[STOPPED_KEY] = NO_PROGRESS
        why = (
            _("按你的选择停下") if ask.state == "answered" else _("没人回应({state})").format(state=ask.state)
        )
        raise StepAbort(
            _("连续 {n} 轮没有进展(同样的判定项没通过,工作区没变),{why}").format(n=limit, why=why)
        )
    if answer == amend:
        await _amend_goal(channel, ctx, goal, goal_path)
    elif answer != go_on:
        # words of the person's own: the worker hears them with the verdict
        verdict.reason = f"{verdict.reason}\n\n人说:{answer}".strip()


__all__ = [
    "ACCEPT",
    "AMEND",
    "EVIDENCE_DIR",
    "EVIDENCE_KIND",
    "GOAL_KEY",
    "NO_PROGRESS",
    "ROUND_KEY",
    "STALL_AMEND",
    "STALL_CONTINUE",
    "STALL_STOP",
    "STOPPED_KEY",
    "VERDICT_KEY",
    "WRONG",
    "goal_step",
    "keep_trail",
    "trail_entry",
    "trail_path",
    "with_goal",
]
