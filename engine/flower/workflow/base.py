"""Steps chained into a workflow, with sessions carried across processes (lineage)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from ..base.files import DiskFault
from ..base.i18n import _
from ..core.agent import AgentSpec
from ..core.checkpoints import CheckpointError, Checkpoints, Phase
from ..core.events import Event, Recovery, StepStarted, emitter
from ..core.labels import StepLabel
from ..core.lineage import Lineage
from ..core.resilience import classify
from ..core.rundir import claim_flow
from ..core.shared import holding_shared
from ..core.stops import StopKind, begin_wake, end_wake

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.human import HumanChannel
    from ..core.runtime import Runtime, StepResult
    from ..core.workbench import Workbench

# The reference fixes this alias as dict[str, Any]: a user's workflow reads its own keys
# (ctx["plan"].upper()) without narrowing. flower's own keys are read through the checked
# accessors below, never as Any.
Ctx = dict[str, Any]
_V = TypeVar("_V")

FAULT_KEY = "_fault"  # a write the disk refused (full, read-only, gone): its one line
BUDGET_KEY = "_budget"  # a money ceiling was reached: the "stopped: budget" line
FAILED_AT_KEY = "_failed_at"  # the step that stopped the workflow
ABORTED_KEY = "_aborted"  # why a gate aborted it (StepAbort)
STOPPED_KEY = "_stopped"  # why the run stopped on the person's word: NO_PROGRESS
NO_PROGRESS = "no_progress"
CHECKPOINTS_KEY = "_checkpoints"  # the run's checkpoints (a gate reads the round's start from them)
RUNTIME_KEY = "_runtime"  # the Runtime running the workflow (a judging gate runs its judge on it)
ON_EVENT_KEY = "_on_event"  # the run's event callback, or None
SESSIONS_KEY = "_sessions"  # step name -> the session it last ran in
RESULTS_KEY = "_results"  # step name -> its last StepResult


class RoleOptions(TypedDict, total=False):
    """What a step builder passes on to its role (flower.core.roles) besides the instructions."""

    model: str | None
    effort: str | None
    max_turns: int | None
    max_budget_usd: float | None


ON_FAIL = ("stop", "skip", "continue")

# what a step rewound to a round hears first (a prompt to the model, in the seeds' language)
REWOUND = (
    "工作区已经退回到第 {round} 轮结束时的样子:之后几轮的改动都撤掉了,对话也回到了那时。"
    "{remark}从这里重新接着做,别再走之后那几轮的老路。"
)
REWOUND_REMARK = "人说:{remark}\n"


class StepAbort(Exception):
    """Raised by a gate: stop now, another round would not help."""


@dataclass
class Step:
    """A declaration of one step; Runtime.run does the work."""

    name: str
    spec: AgentSpec
    prompt: str | Callable[[Ctx], str]

    resume_from: str | None = None
    fork: bool = False

    retries: int = 0
    # gate and when: read for their truth (a coroutine is awaited first)
    gate: Callable[[StepResult, Ctx], object] | None = None
    on_fail: str = "stop"
    when: Callable[[Ctx], object] | None = None
    # what the rejected session hears next (a coroutine is awaited first); empty or None: the
    # round starts again from the step's own prompt
    on_reject: Callable[[StepResult, Ctx], str | Awaitable[str | None] | None] | None = None
    resume_prompt: str | Callable[[Ctx], str] | None = None
    reduce: Callable[[StepResult, Ctx], str] | None = None
    # a checkpoint of the workspace before every round and after every verdict (with_goal)
    checkpoints: bool = False

    def render(self, ctx: Ctx, *, resuming: bool = False) -> str:
        template = self.resume_prompt if (resuming and self.resume_prompt is not None) else self.prompt
        return template(ctx) if callable(template) else template


async def _maybe_await(value: object) -> object:
    return await value if inspect.isawaitable(value) else value


def _book(ctx: Ctx, key: str, fresh: dict[str, _V]) -> dict[str, _V]:
    """The map the run keeps in `ctx` under `key`; `fresh` put there when missing or not a dict."""
    held = ctx.get(key)
    if isinstance(held, dict):
        return held
    ctx[key] = fresh
    return fresh


def sessions_of(ctx: Ctx) -> dict[str, str]:
    """The step -> session map the run keeps in `ctx`."""
    return _book(ctx, SESSIONS_KEY, {})


def results_of(ctx: Ctx) -> dict[str, StepResult]:
    """The step -> last StepResult map the run keeps in `ctx`."""
    return _book(ctx, RESULTS_KEY, {})


def event_sink(ctx: Mapping[str, object]) -> Callable[[Event], None] | None:
    """The run's event callback, or None (also for anything in its place that is not callable)."""
    sink = ctx.get(ON_EVENT_KEY)
    if not callable(sink):
        return None

    def forward(event: Event) -> None:
        sink(event)

    return forward


def checkpoints_of(ctx: Mapping[str, object]) -> Checkpoints | None:
    """The run's checkpoints, or None (a run that takes none, or outside a run)."""
    store = ctx.get(CHECKPOINTS_KEY)
    return store if isinstance(store, Checkpoints) else None


def runtime_of(ctx: Mapping[str, object]) -> Runtime | None:
    """The Runtime running the workflow, or None outside a run."""
    from ..core.runtime import Runtime  # imported late: the runtime is heavy, and already loaded here

    runtime = ctx.get(RUNTIME_KEY)
    return runtime if isinstance(runtime, Runtime) else None


@dataclass
class Workflow:
    """Steps run in order; `continuous` (the default) continues each step's last session."""

    steps: list[Step]
    name: str = "workflow"
    context: Ctx = field(default_factory=dict)
    channel: HumanChannel | None = None
    workbench: Workbench | None = None
    continuous: bool = True

    async def run(
        self,
        runtime: Runtime,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_step: Callable[[Step, StepResult], None] | None = None,
    ) -> Ctx:
        run_dir = runtime.run_dir
        if not self.continuous:
            return await self._run_steps(runtime, on_event=on_event, on_step=on_step)
        # one process per flow and run_dir (and, with a shared store, per piece of work on every
        # machine): two at once would resume the same sessions twice
        with claim_flow(run_dir, self.name), holding_shared(runtime, self.name):
            begin_wake(run_dir)  # the wake before is no longer the latest
            ctx = await self._run_steps(runtime, on_event=on_event, on_step=on_step)
            _record_stop(run_dir, runtime, ctx)
            return ctx

    async def _run_steps(
        self,
        runtime: Runtime,
        *,
        on_event: Callable[[Event], None] | None,
        on_step: Callable[[Step, StepResult], None] | None,
    ) -> Ctx:
        for step in self.steps:
            if step.on_fail not in ON_FAIL:
                raise ValueError(
                    f"step {step.name!r}: on_fail must be one of {ON_FAIL}, not {step.on_fail!r}"
                )
        ctx = self.context
        ctx[RUNTIME_KEY] = runtime
        ctx[ON_EVENT_KEY] = on_event
        sessions = sessions_of(ctx)
        results = results_of(ctx)
        if self.channel is not None and self.channel.on_event is None:
            self.channel.on_event = on_event
        emit = emitter(on_event)
        for line in _drain(runtime):
            emit(Recovery(text=line))  # found before the run

        lineage: Lineage | None = None
        store: Checkpoints | None = None
        woke = 0
        carried: set[str] = set()  # steps whose session comes from an earlier process
        if self.continuous:
            store = Checkpoints(runtime.run_dir, runtime.workspace)
            store.shared = runtime.shared
            ctx[CHECKPOINTS_KEY] = store
            try:
                replayed = _replay(store)  # a rewind killed half-way: finished before anything reads
            except (OSError, CheckpointError) as exc:
                ctx["_fatal"] = str(exc)
                ctx[FAILED_AT_KEY] = self.steps[0].name if self.steps else self.name
                return ctx
            if replayed is not None:
                emit(Recovery(text=replayed))
            lineage = Lineage.open(runtime.run_dir, runtime.workspace, shared=runtime.shared)
            repair = lineage.repair_now()  # a damaged file: moved aside, rebuilt from the manifest
            if repair is not None:
                emit(Recovery(text=repair.line(), backup=str(repair.backup)))
            for step_name, sid in lineage.steps.items():
                # the lineage file can outlive sessions.db: resume only what still exists (or
                # what Claude Code's own transcript still holds, when the store fell behind)
                if step_name not in sessions and _resumable(runtime, sid):
                    sessions[step_name] = sid
                    carried.add(step_name)
            ctx["_lineage"] = lineage
            woke = lineage.bump()
            ctx["_woke"] = woke
            if lineage.fault is not None:  # the books refuse even the wake-up: stop before spending
                ctx[FAULT_KEY] = ctx["_fatal"] = lineage.fault.line()
                ctx[FAILED_AT_KEY] = self.steps[0].name if self.steps else self.name
                return ctx

        total = len(self.steps)
        current = ""
        try:
            for index, step in enumerate(self.steps, 1):
                current = step.name
                if step.when is not None and not await _maybe_await(step.when(ctx)):
                    continue
                point = lineage.point(step.name) if lineage is not None and step.name in carried else None
                resume_at: str | None = None
                if step.resume_from is not None:
                    if step.resume_from not in sessions:
                        raise ValueError(
                            f"step {step.name!r} continues the session of {step.resume_from!r}, which "
                            "produced none (it did not run, failed before starting, or is misspelt)"
                        )
                    resume, fork = sessions[step.resume_from], step.fork
                elif point is not None:
                    # rewound: the session cut at the end of that round, forked (the rest is kept)
                    resume, fork, resume_at = sessions[step.name], True, str(point.get("at") or "") or None
                elif step.name in carried:
                    resume, fork = sessions[step.name], False
                else:
                    resume, fork = None, False
                resuming = step.name in carried and step.resume_from is None
                emit(StepStarted(text=step.name, index=index, total=total, resumed=resuming, woke=woke))

                first_prompt = step.render(ctx, resuming=resuming)
                if point is not None:
                    remark = str(point.get("remark") or "").strip()
                    first_prompt = REWOUND.format(
                        round=point.get("round", "?"),
                        remark=REWOUND_REMARK.format(remark=remark) if remark else "",
                    )
                prompt_cur, resume_cur, fork_cur, at_cur = first_prompt, resume, fork, resume_at
                passed = False
                result: StepResult | None = None
                for attempt in range(step.retries + 1):
                    if attempt == 0:
                        label = step.name
                    elif step.on_reject is not None:
                        label = str(StepLabel.round(step.name, attempt + 1))
                    else:
                        label = str(StepLabel.retry(step.name, attempt))
                    if lineage is not None:
                        # only this one call: a judge run from the gate must never enter the lineage
                        runtime.on_session = _rememberer(lineage, step.name)
                    round_no = _checkpoint(store, step, emit, phase="before", flow=self.name)
                    try:
                        result = await runtime.run(
                            step.spec,
                            prompt_cur,
                            step_name=label,
                            resume=resume_cur,
                            fork=fork_cur,
                            on_event=on_event,
                            **({"resume_at": at_cur} if at_cur else {}),
                        )
                    finally:
                        runtime.on_session = None
                    if point is not None and lineage is not None and result.session_id:
                        lineage.clear_point(step.name)  # used: the next wake continues the fork
                    results[step.name] = result
                    fault = _fault_of(runtime, lineage)
                    if fault is not None:
                        # the disk refused a write: nothing more is written (a vanished folder would
                        # be made anew, empty), and every further step would be refused the same way
                        ctx[FAULT_KEY] = ctx["_fatal"] = fault.line()
                        break
                    if result.stopped == "budget":
                        # not a failed round: the money ran out; the lineage already holds the
                        # step's session (on_session), so a new budget continues it
                        ctx[BUDGET_KEY] = ctx["_fatal"] = result.error
                        break
                    if not result.ok and classify(result.error) == "fatal":
                        # auth, permission, billing: every further round fails the same way, in a
                        # fresh session that would take the lineage away from the real work
                        held = sessions.get(step.name)
                        if lineage is not None and held and result.session_id != held:
                            lineage.remember(step.name, held)
                        ctx["_fatal"] = result.error
                        break
                    if result.session_id:
                        sessions[step.name] = result.session_id
                        if lineage is not None:
                            lineage.remember(step.name, result.session_id)
                    if result.ok:
                        if step.gate is None:
                            passed = True
                        else:
                            try:
                                passed = bool(await _maybe_await(step.gate(result, ctx)))  # once per attempt
                            except StepAbort as exc:
                                ctx[ABORTED_KEY] = str(exc)
                                passed = False
                                break
                            finally:
                                _checkpoint(
                                    store,
                                    step,
                                    emit,
                                    phase="after",
                                    flow=self.name,
                                    round_no=round_no,
                                    session=result.session_id or "",
                                    at=getattr(result, "tail", "") or "",
                                )
                            if ctx.get("_fatal"):
                                break  # the gate's own run (a judge) hit a fatal error
                    if passed or attempt == step.retries:
                        break
                    said = ""
                    if step.on_reject is not None and result.session_id:
                        heard = await _maybe_await(step.on_reject(result, ctx))
                        said = heard if isinstance(heard, str) else ""
                    if said:
                        # send the rejected session back to work, with what was missing
                        prompt_cur, resume_cur, fork_cur, at_cur = said, result.session_id, False, None
                    else:
                        prompt_cur, resume_cur, fork_cur, at_cur = first_prompt, resume, fork, resume_at
                if on_step is not None and result is not None:
                    on_step(step, result)
                assert result is not None
                if passed:
                    ctx[step.name] = step.reduce(result, ctx) if step.reduce is not None else result.text
                    continue
                if step.on_fail == "stop" or ctx.get("_fatal"):
                    ctx[FAILED_AT_KEY] = step.name
                    break
                if step.on_fail == "continue":
                    ctx[step.name] = result.text
        except DiskFault as fault:
            # a document a step writes (需求.md, 目标.md) refused by the disk: the same stop
            ctx[FAULT_KEY] = ctx["_fatal"] = fault.line()
            ctx[FAILED_AT_KEY] = current
        return ctx


def wake_stop(ctx: Mapping[str, object]) -> tuple[StopKind, str] | None:
    """The stop a wake ended in, with its line (stopped: budget, stopped: no progress), or None."""
    budget = ctx.get(BUDGET_KEY)
    if budget:
        return "budget", str(budget)
    if ctx.get(STOPPED_KEY) == NO_PROGRESS:
        return "no_progress", str(ctx.get(ABORTED_KEY) or "")
    return None


def _record_stop(run_dir: Path, runtime: Runtime, ctx: Ctx) -> None:
    """Which stop the wake ended in, or none, in the run folder's books: the next banner and the
    history say it."""
    stop = wake_stop(ctx)
    kind, line = stop if stop is not None else (None, "")
    end_wake(run_dir, runtime.run_id, kind, line)


def _replay(store: Checkpoints) -> str | None:
    from ..core.rewind import recover

    return recover(store)


def _checkpoint(
    store: Checkpoints | None,
    step: Step,
    emit: Callable[[Event], None],
    *,
    phase: Phase,
    flow: str,
    round_no: int = 0,
    session: str = "",
    at: str = "",
) -> int:
    """Take a round-boundary checkpoint (a judged step only); the round's number (0: none).

    A checkpoint is a way back, never a precondition: one the disk refuses is said, not fatal
    (the lineage and the manifest, which the run needs, stop it on their own)."""
    if store is None or not step.checkpoints:
        return 0
    number = round_no or store.next_round()
    try:
        cp = store.take(round_no=number, phase=phase, step=step.name, flow=flow, session=session, at=at)
    except (OSError, CheckpointError) as exc:
        emit(Recovery(text=_("第 {round} 轮的检查点没存成:{why}").format(round=number, why=exc)))
        return number
    skipped = store.skipped_line(cp)
    if skipped is not None and not store.said:
        store.said = True  # once a run, not every round
        emit(Recovery(text=skipped))
    return number


def _fault_of(runtime: Runtime, lineage: Lineage | None) -> DiskFault | None:
    """The write the disk refused during the last step: the runtime's own or its store's, or the
    lineage's (which never raises: continuity is a bonus, but a disk that refuses it refuses
    the rest too, and going on would leave the next run nothing to continue from)."""
    fault = runtime.fault
    if fault is not None:
        return fault
    return lineage.fault if lineage is not None else None


def _rememberer(lineage: Lineage, step: str) -> Callable[[str], None]:
    return lambda sid: lineage.remember(step, sid)


def _resumable(runtime: Runtime, session_id: str) -> bool:
    return runtime.recover_session(session_id)


def _drain(runtime: Runtime) -> list[str]:
    lines = list(runtime.notices)
    runtime.notices.clear()
    return lines


__all__ = [
    "CHECKPOINTS_KEY",
    "Ctx",
    "RoleOptions",
    "Step",
    "StepAbort",
    "Workflow",
    "results_of",
    "sessions_of",
]
