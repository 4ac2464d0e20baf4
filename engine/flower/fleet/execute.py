"""One run on one worker: check it out, run the starter flow as `flower go` would, deliver it.

The flow is assembled by the command line's own builders (``parse_args`` of a ``flower go``
command line, ``build_flow``, ``build_runtime``, ``work_then_hand_over``): a fleet run is a
``flower go`` in a private checkout, with the shared store, nobody at the terminal, its questions
answered from the database (``answers.py``) and its story written there (``story.py``).

The run's branch ``flower/<run-id>`` is committed and pushed after every step and every judged
round, and at the end; a worker that takes the run over starts from the last push. When the
branch cannot be pushed the result is a patch file under the worker's work folder
(``<work>/patches/<run-id>.patch``), named in the run's outcome.

How an execution ends:

- the flow ran to its end (goal met or not): ``finished`` or ``failed`` with why, branch delivered;
- the repository or the ref cannot be had: ``failed`` with git's reason, nothing started;
- ``stop("handback")`` (the worker got SIGTERM): the files as they are are pushed, the run goes back
  to the queue at once (``HandedBack``) and another worker continues the same sessions;
- ``stop("fenced")`` (the worker lost the database for too long): the flow stops where it is and
  the run goes back to the queue (or, while the database is still away, is taken over once its
  heartbeat is seen to be stale);
- the job engine aborts the job (``flower fleet cancel``): the files are pushed, ``cancelled``;
- the work is still held elsewhere (the flow claim): back to the queue after a while.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, ParamSpec, TextIO, TypeVar, cast

from ..core.display import first_line
from ..core.events import Event, VerdictGiven
from ..core.rundir import FlowBusy
from . import checkout as git
from .answers import Answers
from .model import FleetError, Note, Outcome, RunRequest, RunState
from .notes import (
    BUSY,
    CANCELLED_PUSHED,
    CANNOT_START,
    CHECKED_OUT,
    CHECKOUT_FAILED,
    CONTINUED,
    FINISHED,
    FINISHED_PATCH,
    FLOW_FAILED,
    HANDED_BACK,
    NO_REF,
    PUSH_REFUSED,
    PUSHED,
    TAKEN,
    UNREACHABLE,
    WHY_CANCEL,
    WHY_END,
    WHY_HANDBACK,
    WHY_ROUND,
    WHY_STEP,
)
from .queue import HandedBack, HeldElsewhere
from .records import FleetBook
from .story import Story

if TYPE_CHECKING:
    from procrastinate.job_context import JobContext

    from ..core.runtime import Runtime, StepResult
    from ..workflow.base import Step, Workflow

__all__ = ["RunExecution", "StopReason", "WorkerSide", "go_argv"]

# notes that end a run for good (bad input); anything else a FleetError says is the database
_FINAL = frozenset({UNREACHABLE, NO_REF, CHECKOUT_FAILED, CANNOT_START})

StopReason = Literal["handback", "fenced"]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class WorkerSide:
    """What an execution needs from the worker that runs it."""

    book: FleetBook
    store: str  # the shared session store's URL (the fleet's own database)
    name: str
    work: Path  # the worker's own folder: checkouts, run folders, patches
    busy_delay_s: float  # how long a run held elsewhere waits before it is tried again


def go_argv(request: RunRequest, *, store: str, workspace: Path, run_dir: Path) -> list[str]:
    """The `flower go` command line of a fleet run: the run options as `flower go` takes them."""
    argv = ["--store", store, "-w", str(workspace), "-r", str(run_dir), "go", "--rounds", str(request.rounds)]
    argv += ["--sandbox", request.sandbox, "--timeout", repr(float(request.timeout_s))]
    if request.judge_can_run:
        argv.append("--judge-can-run")
    if request.budget_usd is not None:
        argv += ["--budget", repr(float(request.budget_usd))]
    if request.round_budget_usd is not None:
        argv += ["--round-budget", repr(float(request.round_budget_usd))]
    if request.stall_rounds is not None:
        argv += ["--stall-rounds", str(request.stall_rounds)]
    return [*argv, "--", request.request]


class _LineStream(io.TextIOBase):
    """A text stream whose lines become events of the run (what the handover says on a screen)."""

    def __init__(self, story: Story) -> None:
        self._story = story

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self._story.line(line)
        return len(text)

    def writable(self) -> bool:
        return True


class RunExecution:
    """One worker's execution of one run (one procrastinate job attempt)."""

    def __init__(self, side: WorkerSide, run_id: str, context: JobContext) -> None:
        self.side = side
        self.run_id = run_id
        self.context = context
        self.execution = 0
        self.stopping: StopReason | None = None
        self._task: asyncio.Task[object] | None = None
        self._git = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"flower-git-{run_id}")
        self._checkout: git.Checkout | None = None
        self._runtime: Runtime | None = None  # the flow's Runtime while it runs
        self._refused = False

    @property
    def book(self) -> FleetBook:
        return self.side.book

    def stop(self, reason: StopReason) -> None:
        """Stop the flow where it is (from the worker's loop); what happens next is ``reason``'s."""
        if self.stopping is None:
            self.stopping = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def __call__(self) -> None:
        self._task = asyncio.current_task()
        try:
            await self._execute()
        finally:
            self._git.shutdown(wait=False)

    async def _db(self, fn: Callable[P, T], *args: P.args, **kw: P.kwargs) -> T:
        return await asyncio.to_thread(fn, *args, **kw)

    async def _execute(self) -> None:
        try:
            self.execution = await self._db(
                self.book.begin_execution, self.run_id, self.side.name, os.getpid()
            )
            asked = await self._db(self.book.request_of, self.run_id)
        except FleetError:
            raise HeldElsewhere(self.side.busy_delay_s) from None  # the database again later
        if asked is None or asked[1] == "cancelled":
            if self.execution:
                await self._db(self.book.end_execution, self.execution, "cancelled")
            return
        request, _state, base = asked
        story = Story(self.book, self.run_id, self.side.name)
        attempt = int(getattr(self.context.job, "attempts", 0) or 0) + 1
        await self._db(self.book.set_state, self.run_id, "running", None, worker=self.side.name)
        story.note(Note(TAKEN, {"worker": self.side.name, "attempt": attempt}))
        # the work in a task of its own: a stop from outside (a handback, fencing, the engine's
        # abort) ends the CLI's turn first, then the work, so that the run is let go at once
        work = asyncio.create_task(self._work(request, base, story), name=f"flower-fleet-{self.run_id}")
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            await self._halt(work)
            await self._stopped(story)
            raise
        except FlowBusy as busy:
            story.note(Note(BUSY, {"holder": first_line(str(busy), 160), "delay": self.side.busy_delay_s}))
            await self._end("busy", "queued", story)
            raise HeldElsewhere(self.side.busy_delay_s) from None
        except FleetError as exc:
            if exc.note.msgid in _FINAL:
                story.note(exc.note)
                await self._end("failed", "failed", story, exc.note)
                return
            raise HeldElsewhere(self.side.busy_delay_s) from None  # the database: try again later
        finally:
            await story.close()

    async def _halt(self, work: asyncio.Task[None]) -> None:
        if self._runtime is not None:
            await self._runtime.halt()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await work

    async def _end(
        self,
        reason: str,
        state: RunState,
        story: Story,
        note: Note | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        await story.flush()
        try:
            await self._db(self.book.end_execution, self.execution, reason)
            await self._db(self.book.set_state, self.run_id, state, note, outcome=outcome)
        except FleetError:
            pass  # the database went away: the execution ends as lost, and the run is taken over

    async def _work(self, request: RunRequest, base: str, story: Story) -> None:
        where = self.side.work / "runs" / self.run_id
        checkout = await self._db(
            git.prepare, request.repository, request.ref, self.run_id, where / "checkout", base=base
        )
        self._checkout = checkout
        if not base:
            await self._db(self.book.set_base, self.run_id, checkout.base)
        fields: dict[str, object] = {"branch": checkout.branch, "commit": checkout.head[:10]}
        if checkout.continued:
            story.note(Note(CONTINUED, fields))
        else:
            story.note(Note(CHECKED_OUT, {**fields, "repository": request.repository, "ref": request.ref}))
        flow, runtime = await self._assemble(request, checkout.path, where / "runs", story)
        self._runtime = runtime
        channel = flow.channel
        assert channel is not None  # the starter flow is always made with its HumanChannel
        answers = Answers(self.book, self.run_id, self.execution, channel, story)
        try:
            ctx = await self._run_flow(flow, runtime, story, answers)
        finally:
            self._runtime = None
            await answers.close()
            await asyncio.to_thread(runtime.close)
        from ..workflow.outcome import Outcome as FlowOutcome

        ended = FlowOutcome.of(ctx)
        outcome = await self._deliver(story, Note(WHY_END), goal_met=ended.ok and not ctx.get("_fatal"))
        if ended.ok and not ctx.get("_fatal"):
            note = Note(FINISHED, {"branch": checkout.branch})
            if not outcome.pushed:
                note = Note(FINISHED_PATCH, {"host": outcome.host, "patch": outcome.patch})
            story.note(note)
            await self._end("finished", "finished", story, note, outcome)
            return
        why = ended.budget or ctx.get("_fatal") or ended.aborted or ended.failed_at or "?"
        note = Note(FLOW_FAILED, {"why": first_line(str(why), 200)})
        story.note(note)
        await self._end("failed", "failed", story, note, outcome)

    async def _assemble(
        self, request: RunRequest, workspace: Path, run_dir: Path, story: Story
    ) -> tuple[Workflow, Runtime]:
        """The starter flow and its Runtime, built by the command line's own builders."""
        from ..cli.arguments import parse_args
        from ..cli.builders import build_flow, build_runtime

        argv = go_argv(request, store=self.side.store, workspace=workspace, run_dir=run_dir)

        def build() -> tuple[Workflow, Runtime]:
            try:
                args = parse_args(argv)
            except SystemExit:
                raise FleetError(Note(CANNOT_START, {"reason": "flower go " + " ".join(argv[6:])})) from None
            try:
                flow = build_flow(args, args.ask, new=False)
                runtime = build_runtime(args, workbench=flow.workbench)
            except (ValueError, RuntimeError, OSError) as exc:
                raise FleetError(Note(CANNOT_START, {"reason": first_line(str(exc), 300)})) from None
            return flow, runtime

        flow, runtime = await asyncio.to_thread(build)
        for warning in getattr(runtime, "warnings", []):
            story.line(f"! {warning}")
        return flow, runtime

    async def _run_flow(
        self, flow: Workflow, runtime: Runtime, story: Story, answers: Answers
    ) -> dict[str, object]:
        from ..cli.commands import say_failed_steps, work_then_hand_over
        from ..cli.render import Render
        from ..cli.terminal import Screen

        render = Render()
        stream = cast("TextIO", _LineStream(story))
        screen = Screen(stream, stream, live=False, colour=False)
        failed = say_failed_steps(screen, runtime)

        def on_event(event: Event) -> None:
            for line in render.lines(event):
                if line.strip():
                    story.line(line)
            answers.on_event(event)
            if isinstance(event, VerdictGiven):
                self._boundary(Note(WHY_ROUND, {"round": event.round}), story)

        def on_step(step: Step, result: StepResult) -> None:
            failed(step, result)
            self._boundary(Note(WHY_STEP, {"step": result.step}), story)

        answers.start()
        ctx: dict[str, object] = await work_then_hand_over(
            flow, runtime, screen=screen, on_event=on_event, on_step=on_step, handover=True
        )
        return ctx

    # -- delivering the branch ---------------------------------------------------------------

    def _boundary(self, why: Note, story: Story) -> None:
        """A step or a judged round ended: commit the files now (nothing is writing them at this
        moment), push them in the background."""
        checkout = self._checkout
        if checkout is None:
            return
        try:
            made = git.commit(checkout.path, f"flower {self.run_id}: {why.text()}")
        except FleetError as exc:
            story.note(exc.note)
            return
        if made is not None:
            self._git.submit(self._push, checkout, why, story, made)

    def _push(self, checkout: git.Checkout, why: Note, story: Story, made: str) -> str | None:
        refused = git.push(checkout.path, checkout.branch)
        if refused is None:
            story.note(Note(PUSHED, {"branch": checkout.branch, "commit": made[:10], "why": why.text()}))
        elif not self._refused:
            self._refused = True  # said once; the end of the run writes the patch
            story.line(f"! git push: {refused}")
        return refused

    async def _deliver(self, story: Story, why: Note, *, goal_met: bool = False) -> Outcome:
        """Commit and push what the workspace holds now; the outcome (a patch when refused)."""
        checkout = self._checkout
        if checkout is None:
            return Outcome(branch="")
        loop = asyncio.get_running_loop()

        def last() -> Outcome:
            made = git.commit(checkout.path, f"flower {self.run_id}: {why.text()}")
            refused = self._push(checkout, why, story, made or git.head(checkout.path))
            commit = git.head(checkout.path)
            if refused is None:
                return Outcome(
                    checkout.branch, commit, pushed=True, host=socket.gethostname(), goal_met=goal_met
                )
            patch = git.write_patch(
                checkout.path, checkout.base, self.side.work / "patches" / f"{self.run_id}.patch"
            )
            host = socket.gethostname()
            story.note(
                Note(
                    PUSH_REFUSED,
                    {"branch": checkout.branch, "reason": refused, "host": host, "patch": str(patch)},
                )
            )
            return Outcome(
                checkout.branch, commit, pushed=False, patch=str(patch), host=host, goal_met=goal_met
            )

        try:
            return await loop.run_in_executor(self._git, last)
        except FleetError as exc:
            story.note(exc.note)
            return Outcome(branch=checkout.branch)

    async def _stopped(self, story: Story) -> None:
        """The flow was stopped from outside: say why, keep the files, let the run go."""
        reason = self.stopping
        if reason == "fenced":
            await self._end("fenced", "queued", story)
            # back to the queue: were the job to end here as aborted (the database being back by
            # the time the engine records it), no worker would ever take the run again
            raise HandedBack(self.run_id)
        if reason == "handback":
            await self._deliver(story, Note(WHY_HANDBACK))
            note = Note(HANDED_BACK, {"worker": self.side.name, "branch": self._branch()})
            story.note(note)
            await self._end("handed-back", "queued", story, note)
            raise HandedBack(self.run_id)
        # the job engine aborted the job: `flower fleet cancel`
        await self._deliver(story, Note(WHY_CANCEL))
        note = Note(CANCELLED_PUSHED, {"branch": self._branch()})
        story.note(note)
        await story.flush()
        try:
            await self._db(self.book.end_execution, self.execution, "cancelled")
            await self._db(self.book.set_state, self.run_id, "cancelled", note, unless=())
        except FleetError:
            pass

    def _branch(self) -> str:
        return self._checkout.branch if self._checkout is not None else ""
