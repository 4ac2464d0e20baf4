"""The runtime: run one step of agent work so that it survives drops, interruptions and a
full context window, and keep the books (manifest, lineage callback, context figures)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import logging
import os
import shutil
import signal
import sqlite3
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ..base.files import DiskFault, LowSpace, Space, fault_of, free_space, move, vanished
from ..base.i18n import _
from ..base.loose import items
from ..base.secrets import redact
from ..base.tempdirs import socket_tempdir
from ..base.usage import context_tokens
from ..shell.confinement import ROLES, Role
from ..shell.view import hidden as hidden_entries
from ..stores.ephemeral import EphemeralPolicy
from ..stores.layer import FlowerStore
from ..stores.prune import PrunePolicy, PruningSessionStore
from ..stores.trim import TrimPolicy
from ..stores.workspace import WorkspaceStore
from .agent import AgentSpec, CompactPolicy, HandoffPolicy, build_options
from .budget import Budget, Ledger, forecast_line
from .command_walls import Walls, confined_role, decide_walls
from .delivery import STEP_OVER, STOPPED, Deliveries, Undelivered
from .display import first_line, format_tokens
from .envfile import read_workspace_env
from .events import (
    BudgetNote,
    ContextUpdate,
    DiskSpace,
    Event,
    HandoffDone,
    HandoffNear,
    HandoffWriting,
    LimitWait,
    Offline,
    Recovery,
    Retry,
    SyntheticError,
    Text,
    WindowNote,
    emitter,
    normalize,
)
from .guard import confine_guard, delegate_guard, merge_hooks, redact_guard, whitelist_guard, workbench_hooks
from .handoff import HANDOFF_PROMPT, SECTIONS, Handoff, degraded, is_overflow
from .labels import StepLabel
from .limits import (
    UNNAMED_USAGE_CAP,
    UNNAMED_USAGE_WAIT,
    Limit,
    Pending,
    forget,
    keep,
    parse_limit,
    pending,
    wait_max,
)
from .manifest import ManifestRow, rows_of
from .projectkey import project_key, unkeyable
from .reaper import contain
from .recovery import (
    StoreError,
    damaged_store,
    manifest_problem,
    rebuilt_rows,
    refill_store,
    store_error,
)
from .resilience import Resilience, classify
from .rundir import Repair, update_json
from .sandbox import CliSandbox, SandboxPolicy, SandboxState, decide
from .shared import SharedRun, claim_lost, shared_key, store_setting, watch_claim
from .sizes import over_limit, say_refusal, too_big
from .transcripts import catch_up
from .walls import role_walls
from .window import Calibration, gateway, model_name, overflow_maximum
from .workbench import Workbench

if TYPE_CHECKING:
    from types import FrameType

    from claude_agent_sdk import ClaudeSDKClient, Message, ResultMessage
    from claude_agent_sdk.types import SessionStore

    from ..stores.layer import StoreLayer
    from ..stores.sqlite import SqliteSessionStore

log = logging.getLogger("flower")
# the CLI's sandbox bridges its proxies with "$TMPDIR/claude-socks-<16 hex>.sock" (and an http twin)
CLI_SOCKET_NAME = len("/claude-socks-") + 16 + len(".sock")

SECTION_FIELDS = tuple(attr for attr, _name in SECTIONS)


class _Layers(TypedDict):
    """The resume-time layers every store of a Runtime is wrapped in (PruningSessionStore's)."""

    workspace: Path
    policy: TrimPolicy
    prune: PrunePolicy
    ephemeral: EphemeralPolicy


class _Figures(TypedDict):
    """A turn's context figures, as ContextUpdate and HandoffNear take them."""

    used: int
    window: int
    at: int
    warn_at: int
    step: str
    generation: int
    session_id: str | None
    cost_usd: float


class _QuietOnDiskFaults(logging.Filter):
    """The SDK logs every append the store refused (a line per retry); a refused write of ours is
    said once, in the step's own line, with its folder and what to do."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(a, DiskFault) for a in args)


logging.getLogger("claude_agent_sdk._internal.transcript_mirror_batcher").addFilter(_QuietOnDiskFaults())

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
CLOUD_PROVIDER_VARS = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")


def check_credentials(own: Mapping[str, str] | None = None) -> None:
    """Fail at construction, not an hour into a run, when no credential is configured (in the
    environment, or in ``own``: what a run's workspace adds to it)."""
    if any(os.environ.get(v) or (own or {}).get(v) for v in CREDENTIAL_VARS + CLOUD_PROVIDER_VARS):
        return
    raise RuntimeError(
        "no credential for the model: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN with "
        "ANTHROPIC_BASE_URL for a gateway), in the environment or in a .env file; "
        "`flower demo` runs offline without one"
    )


@dataclass
class StepResult:
    """The whole ledger of one step."""

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int = 0

    def __post_init__(self) -> None:
        # (start, end) on the monotonic clock when this process ran the step; not a field: the
        # manifest keeps the seeds' wall-clock fields, a clock that jumps moves only those
        self._span: tuple[float, float] | None = None
        # the uuid of the main thread's last message: where a rewind cuts the session (not a
        # field either: the manifest's rows stay the seeds' shape)
        self.tail = ""
        # why the step stopped short of its work without failing it: "budget" (a ceiling reached)
        self.stopped = ""

    def begin(self) -> None:
        self.started_at, self._span = time.time(), (time.monotonic(), 0.0)

    def finish(self) -> None:
        self.ended_at = time.time()
        if self._span is not None:
            self._span = (self._span[0], time.monotonic())

    @property
    def duration_s(self) -> float:
        span: tuple[float, float] | None = getattr(self, "_span", None)
        if span is not None and span[1]:
            return round(span[1] - span[0], 2)
        if not self.ended_at:
            return 0.0
        return round(max(0.0, self.ended_at - self.started_at), 2)  # read back from disk


class Runtime:
    """Runs steps. Retries, resumes after interruption and hands over a full context, all
    inside one `run` call."""

    INTERRUPTED = "interrupted-by-human"
    HANDOFF_DUE = "context-full-handoff"
    # A degraded handoff after the API refused a full context is expected once; when the fresh
    # session is refused again and again, the next handoff would fare no better: stop instead.
    MAX_DEGRADED_HANDOFFS = 2
    # limits waited out in one step before it stops: a limit that never lifts is not waited forever
    MAX_LIMIT_WAITS = 50
    INTERRUPT_NOTE = (
        "(以上是人在你工作途中插进来说的话。刚才正在执行的工具调用如果返回了 interrupted / 被拒绝,"
        "那是中断的正常副作用,不是环境故障,也不用重试同一个调用来确认;按人说的调整后继续。)"
    )

    def __init__(
        self,
        *,
        workspace: str | Path,
        run_dir: str | Path = "runs",
        portable: bool = True,
        trim: TrimPolicy | bool = False,
        ephemeral: EphemeralPolicy | bool = True,
        keep_denials: int = 1,
        workbench: Workbench | bool = False,
        spill_threshold: int | None = 4000,
        resilience: Resilience | bool = True,
        handoff: HandoffPolicy | bool = True,
        sandbox: SandboxPolicy | str | bool = "auto",
        store: str | SessionStore | None = None,
        budget: Budget | None = None,
    ) -> None:
        """``store`` (keyword-only, after the seeds' parameters): where the transcripts live.
        None: ``$FLOWER_STORE`` if set, else ``<run_dir>/sessions.db`` (a plain local run). A
        URL (``postgresql://...``) or a ``PostgresSessionStore``: a shared store, keyed by the
        workspace's identity, which keeps the lineage and the manifest too (``core/shared.py``).
        Any other ``SessionStore``: used as it is, under the same resume-time layers.
        ``budget``: dollars per run and per round (``core/budget.py``); None: no ceiling."""
        self.workspace = Path(workspace).expanduser().resolve()
        refused = unkeyable(self.workspace)
        if refused is not None:
            raise RuntimeError(refused)  # nothing spent, nothing written: the work could not go on
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(run_dir).expanduser().resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.portable = portable
        trim_policy = trim if isinstance(trim, TrimPolicy) else TrimPolicy(enabled=bool(trim))
        ephemeral_policy = (
            ephemeral if isinstance(ephemeral, EphemeralPolicy) else EphemeralPolicy(enabled=bool(ephemeral))
        )
        # what was found damaged in the run_dir and what was done about it, one line each (a
        # workflow turns them into Recovery events)
        self.notices: list[str] = []
        # warnings a front end shows once, one line each: why there is no sandbox, what a .env was
        # refused (the CLI has them from the `flower` logger, the server from here)
        self.warnings: list[str] = []
        self._notify: Callable[[Event], None] | None = None
        # the books of this run in a shared store (None: the run_dir's files alone)
        self.shared: SharedRun | None = None
        # the first write the disk refused (full, read-only, gone): the step stops on it and so
        # does the run; None while every write lands
        self._fault: DiskFault | None = None
        self._store_fault_before: object = None  # the store's last fault when this step began
        layers: _Layers = {
            "workspace": self.workspace,
            "policy": trim_policy,
            "prune": PrunePolicy(keep_denials=keep_denials),
            "ephemeral": ephemeral_policy,
        }
        chosen = store_setting(store) if store is None or isinstance(store, str) else store
        if chosen is None:
            # a store or a layer over one: the benchmarks and tests swap in the bare SQLite store
            self.store: SqliteSessionStore | StoreLayer = self._local_store(layers)
            self.store_where = str(self.run_dir / "sessions.db")
        else:
            under, self.shared, self.store_where = self._given_store(chosen)
            if self.shared is not None:
                # a claim lost mid-step (taken over, the store gone too long) stops the step now
                watch_claim(self.shared.identity.key, self._claim_lost)
            self._store_kept = True
            self.store = PruningSessionStore(under, **layers)
        self.resilience = (
            resilience if isinstance(resilience, Resilience) else Resilience(enabled=bool(resilience))
        )
        self.handoff = handoff if isinstance(handoff, HandoffPolicy) else HandoffPolicy(enabled=bool(handoff))
        # windows learned from overflows, per model and gateway, in flower's user state
        self.calibration = Calibration()
        self._window_said: set[str] = set()  # "model @ gateway" already warned about
        if isinstance(workbench, Workbench):
            self.workbench: Workbench | None = workbench
        elif workbench:
            self.workbench = Workbench(self.workspace, home=self.run_dir / "workbench")
        else:
            self.workbench = None
        if self.workbench is not None:
            self.workbench.ensure()
            self.workbench.refresh()
        self.spill_threshold = spill_threshold
        self.budget = Ledger(self.run_dir, budget or Budget())
        self.results: list[StepResult] = []
        self.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.on_session: Callable[[str], None] | None = None
        # the CLI's stderr is always captured: stdout may be a protocol channel (LSP)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        self.on_stderr: Callable[[str], None] | None = None
        self._ctx, self._warned = 0, False
        self._inflight: StepResult | None = None
        self._client: ClaudeSDKClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._said = Deliveries()
        self._interrupt_requested = False
        self._handoff_requested = False
        self._retry_hint: float | None = None  # the CLI's last wait before retrying a limit, seconds
        self._lock = threading.Lock()
        # require on a machine without the sandbox fails here, before anything is spent
        self.sandbox: SandboxState = self._decide(sandbox)
        self._walls: dict[tuple[str, Role, bool], Walls] = {}
        self._warmed = False
        if self.sandbox.policy.mode == "require":
            # and so does one that cannot confine the coordinator's glances or the judge's checks
            for role in ROLES:
                self._walls_for(AgentSpec(name="", instructions=""), role, nested=role == "glance")
        self._tmp: Path | None = None  # the sandbox's private TMPDIR, made on first use
        env_file = read_workspace_env(self.workspace)  # only credentials and model settings
        # this run's own: given to its CLI processes, never to os.environ (other runs share it)
        self.env: dict[str, str] = dict(env_file.values) if env_file is not None else {}
        refused = env_file.notice() if env_file is not None else None
        if refused is not None:
            self.warnings.append(refused)
        check_credentials(self.env)

    def _local_store(self, layers: _Layers) -> PruningSessionStore:
        """The run_dir's sessions.db, as the seeds build it; damage is repaired and said."""
        db = self.run_dir / "sessions.db"
        # a store someone deleted is "start fresh" (silently); a store that lags behind the CLI's
        # own transcripts after a kill is caught up from them
        self._store_kept = db.exists()
        damaged = damaged_store(db)  # moved aside if SQLite cannot read it; StoreError if unusable
        try:
            built = PruningSessionStore(db, **layers)
        except sqlite3.Error as exc:
            fault = fault_of(exc, db)
            if fault is not None:
                raise fault from None  # full, read-only, not permitted: said with its folder
            raise store_error(db, exc) from None
        if damaged is not None:
            self.notice(refill_store(damaged, built, self.project_key))
        return built

    def _given_store(self, chosen: str | SessionStore) -> tuple[SessionStore, SharedRun | None, str]:
        """(the store under the layers, the shared books or None, how the store may be shown)."""
        from ..stores.urls import StoreURLError, check_store_url

        if isinstance(chosen, str):
            from ..stores.postgres import PostgresSessionStore, PostgresStoreError

            try:
                backend: SessionStore = PostgresSessionStore(check_store_url(chosen))
            except (PostgresStoreError, StoreURLError) as exc:
                raise StoreError(_("打不开会话库:{exc}").format(exc=exc)) from None
        else:
            backend = chosen
            if not isinstance(backend, FlowerStore):
                raise TypeError(
                    f"Runtime(store=...) needs a store that also answers flower's questions without an "
                    f"event loop (has_session, last_context, projects, add, uuids); {type(backend).__name__} "
                    "does not: use a SqliteSessionStore, a PostgresSessionStore or a layer over one"
                )
        book = getattr(backend, "run_book", None)
        where = str(getattr(backend, "where", type(backend).__name__))
        if not callable(book):
            return backend, None, where  # a store of the caller's own: used as it is
        shared = SharedRun.of(self.workspace, book(), where)
        under = WorkspaceStore(
            backend,
            workspace=self.workspace,
            shared_key=shared_key(shared.identity),
            local_keys=[self.project_key],
        )
        return under, shared, where

    # -- public helpers ------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.run_dir / "manifest.json"

    @property
    def project_key(self) -> str:
        return project_key(self.workspace)

    def has_session(self, session_id: str) -> bool:
        return bool(session_id) and self.store.has_session(self.project_key, session_id)

    def recover_session(self, session_id: str) -> bool:
        """Whether the session can be resumed, once the store holds every entry Claude Code's own
        transcript has (a process killed before the SDK mirrored them left the store behind)."""
        if not session_id:
            return False
        if self._store_kept:
            # on failure the store keeps what it has: resuming that still beats starting over
            with suppress(OSError, sqlite3.Error):
                catch_up(self.store, self.project_key, session_id)
        return self.has_session(session_id)

    def notice(self, line: str) -> None:
        """Say what was found damaged and what was done: to the run's events, or queued for them."""
        notify = self._notify
        if notify is None:
            self.notices.append(line)
            return
        notify(Recovery(text=line))

    def _claim_lost(self) -> None:
        self.interrupt()

    @property
    def fault(self) -> DiskFault | None:
        """The first write this run's disk refused, its own or its store's, or the claim on its
        flow that could not be kept; None if none did."""
        if self.shared is not None:
            lost = claim_lost(self.shared.identity.key)
            if lost is not None:
                return lost
        store = getattr(self.store, "fault", None)
        if self._fault is None and isinstance(store, DiskFault) and store is not self._store_fault_before:
            return store
        return self._fault

    def faulted(self, exc: BaseException, where: str | Path) -> bool:
        """Remember `exc` if it is a resource fault (the step then stops); whether it was one."""
        fault = fault_of(exc, where)
        if fault is None:
            return False
        if self._fault is None:
            self._fault = fault  # the step's result says it, in its one line
        return True

    def folders(self) -> list[Path]:
        """Where this run writes: the run_dir, the workspace, the workbench and its spill folder,
        the resume-time spill folder."""
        out = [self.run_dir, self.workspace]
        if self.workbench is not None:
            out += [self.workbench.root, self.workbench.root / "spill"]
        spill_dir = getattr(getattr(self.store, "policy", None), "spill_dirname", None)
        if isinstance(spill_dir, str):
            out.append(self.workspace / spill_dir)
        return out

    def check_space(self, emit: Callable[[Event], None] | None = None) -> Space | None:
        """Warn (one line per filesystem) where little room is left; the Space below the floor,
        if one is, for the step not to start."""
        stop: Space | None = None
        for space in free_space(self.folders()):
            if not space.low:
                continue
            if emit is not None:
                emit(
                    DiskSpace(
                        text=space.line(), folder=str(space.folder), free=space.free, stopped=space.exhausted
                    )
                )
            else:
                log.warning(space.line())
            if space.exhausted and stop is None:
                stop = space
        return stop

    def context_of(self, session_id: str) -> int:
        return self.store.last_context(self.project_key, session_id)

    @property
    def busy(self) -> bool:
        """A step is in flight (a front end decides between interrupting and mailing)."""
        return self._inflight is not None

    def total_cost(self) -> float:
        return round(sum(r.cost_usd for r in self.results), 4)

    def close(self) -> None:
        self.store.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def sandbox_tmp(self) -> Path | None:
        """The private TMPDIR of this Runtime's sandboxed commands; None until one ran, and again
        once `close()` removed it."""
        return self._tmp

    def _decide(self, value: SandboxPolicy | str | bool | None) -> SandboxState:
        state = decide(SandboxPolicy.of(value))
        if state.note is not None and state.note not in self.warnings:
            self.warnings.append(state.note)
            log.warning(state.note)
        return state

    def _walls_for(self, spec: AgentSpec, role: Role, *, nested: bool) -> Walls:
        """The walls of the spec's own commands (command_walls.py); the line when they are weaker
        is said once, like the sandbox's."""
        policy = (self.sandbox if spec.sandbox is None else self._decide(spec.sandbox)).policy
        key = (policy.mode, role, nested)
        walls = self._walls.get(key)
        if walls is None:
            walls = self._walls[key] = decide_walls(policy, role, nested=nested)
            if walls.note is not None and walls.note not in self.warnings:
                self.warnings.append(walls.note)
                log.warning(walls.note)
            if walls.active and not self._warmed:
                # the first glance should not wait for the workspace's first walk for secrets
                self._warmed = True
                threading.Thread(target=hidden_entries, args=(self.workspace,), daemon=True).start()
        return walls

    def _sandbox_for(self, spec: AgentSpec) -> CliSandbox | None:
        """The CLI's sandbox settings for this spec's session, or None when it runs unconfined."""
        state = self.sandbox if spec.sandbox is None else self._decide(spec.sandbox)
        if not state.active:
            return None
        writable: list[Path] = []
        if self.workbench is not None and self.workbench.external:
            writable.append(self.workbench.root)
        protected: list[Path] = []
        inside = self.run_dir.is_relative_to(self.workspace) and self.run_dir != self.workspace
        if inside and not (self.workbench is not None and self.workbench.root.is_relative_to(self.run_dir)):
            protected.append(self.run_dir)  # the books and the transcripts are flower's alone
        return state.policy.settings(workspace=self.workspace, writable=writable, protected=protected)

    def _private_tmp(self) -> Path:
        # the CLI hands sandboxed commands "$TMPDIR/claude-<uid>": shared by every session of
        # the user under /tmp, private to this Runtime under its own folder; its sandbox's
        # proxy bridges are sockets in it, so it must be short enough for them
        if self._tmp is None:
            self._tmp = socket_tempdir("flower-", CLI_SOCKET_NAME)
        return self._tmp

    def interrupt(self, message: str = "") -> Future[None]:
        """Stop the current turn at a message boundary; the step resumes with `message`.

        Safe from any thread. An empty message just interrupts. The future resolves once the model
        answered the resumed turn, or fails with `Undelivered` (flower.core.delivery). Words too
        long to travel (`sizes.say_refusal`) fail at once and leave the turn alone.
        """
        refused = say_refusal(message)
        if refused is not None:
            missed: Future[None] = Future()
            missed.set_exception(Undelivered(refused))
            return missed
        with self._lock:
            delivery = self._said.say(message)
            self._interrupt_requested = True
            client, loop = self._client, self._loop
        if client is not None and loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(_quiet(client.interrupt()), loop)
        if self._inflight is None:  # no step to take them: the caller hears so at once
            self._said.drop(STEP_OVER, step_over=True)
        return delivery

    async def halt(self, *, within_s: float = 2.0) -> None:
        """End the CLI's turn, and the tool it runs, before the caller cancels the step (on this
        Runtime's loop). Closing a busy CLI otherwise waits for it to exit by itself (the SDK
        grants it 5 s) before terminating it: a run stopped from outside would linger that long."""
        with self._lock:
            client = self._client
        if client is not None:
            with suppress(TimeoutError):
                async with asyncio.timeout(within_s):
                    await _quiet(client.interrupt())

    def rescue(self) -> None:
        """Keep the books before a forced exit (SIGTERM/SIGHUP): small synchronous writes only."""
        step = self._inflight
        if step is not None:
            step.error = step.error or "killed-by-signal"
            if step.error != "killed-by-signal":
                step.errors.append(step.error)
                step.error = "killed-by-signal"
            step.finish()
        self._write_manifest(extra=[step] if step is not None else [])

    # -- the step loop -------------------------------------------------------------------
    async def run(
        self,
        spec: AgentSpec,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> StepResult:
        name = step_name or spec.name
        result = StepResult(step=name)
        result.begin()
        self._inflight = result
        self._loop = asyncio.get_running_loop()
        self._ctx, self._warned = 0, False
        with self._lock:
            self._said.drop(STEP_OVER, step_over=True)  # said between steps: never this step's
            self._interrupt_requested = False
        emit = emitter(on_event)
        self._notify = emit if on_event is not None else None
        cur_prompt, cur_resume, cur_fork, cur_resume_at = prompt, resume, fork, resume_at
        attempt = 0
        degraded_in_a_row = 0
        limit_waits = 0
        # each step is judged afresh: a cause removed since the last one (space freed, a folder
        # remounted) lets this one run
        self._fault, self._store_fault_before = None, getattr(self.store, "fault", None)
        try:
            if self.handoff.enabled:
                self._calibrated(spec, emit)
            waiting = pending(self.run_dir) if self.resilience.enabled else None
            if waiting is not None:
                # a flower of this folder was waiting for a limit's reset: the same moment holds
                await self._wait_limit(waiting, name, emit)
            floor = self.check_space(emit)
            if floor is not None:
                self._fault = self._fault or LowSpace(floor)
            label = StepLabel.parse(name)
            if self.budget.budget.enabled and label.starts_round:
                self.budget.begin_round(label.step)
                self._forecast(name, emit)
            accounted = 0.0  # of result.cost_usd, what the ledger already holds
            while self.fault is None:
                if self._over_budget(result, name, emit):
                    break
                attempt += 1
                result.attempts = attempt
                seen = len(result.errors)
                await self._attempt(
                    self._within_budget(spec),
                    cur_prompt,
                    result,
                    resume=cur_resume,
                    fork=cur_fork,
                    resume_at=cur_resume_at,
                    emit=emit,
                )
                carried = self._said.riding
                if carried:  # the turn that carried the words ended unanswered
                    self._said.refused(first_line(result.error or "") or "the turn ended unanswered")
                accounted = self._spend(result, accounted)
                if result.ok or self.fault is not None:
                    break  # a disk that refuses writes refuses them on every retry too
                if self._over_budget(result, name, emit):
                    break  # the CLI stopped asking the model: the money is gone, not the work
                if result.error == self.INTERRUPTED:
                    if not result.session_id:
                        break  # nothing to resume: the person stopped it before it began
                    words = self._take_said()
                    cur_prompt = f"{words}\n\n{self.INTERRUPT_NOTE}" if words else self.INTERRUPT_NOTE
                    cur_resume, cur_fork, cur_resume_at = result.session_id, False, None
                    attempt -= 1  # an interruption is not a failed attempt
                    continue
                # "context full" is decided on this turn alone: an overflow earlier in the step
                # must not turn every later, unrelated failure into one more handoff
                overflowed = is_overflow(result.error or "", *result.errors[seen:])
                if result.error == self.HANDOFF_DUE or (
                    self.handoff.enabled and result.session_id and overflowed
                ):
                    if degraded_in_a_row >= self.MAX_DEGRADED_HANDOFFS:
                        result.error = (
                            f"stopped instead of handing over again: the last {degraded_in_a_row} "
                            f"handoffs of this step were all degraded (MAX_DEGRADED_HANDOFFS="
                            f"{self.MAX_DEGRADED_HANDOFFS}), so the fresh sessions cannot go on either "
                            "(the API refuses even their context, or none manages to write a handoff); "
                            f"last error: {first_line(result.error)}"
                        )
                        break
                    if len(result.retired) >= self.handoff.max_generations:
                        result.error = (
                            f"handed over {len(result.retired)} times in one step (max_generations="
                            f"{self.handoff.max_generations}): the window ({self.handoff.window} tokens) "
                            "is too small for this role to even start; raise HandoffPolicy.window or "
                            "disable handoff"
                        )
                        break
                    # a turn too long because of a person's words riding on it says nothing
                    # about the window (a 20 MB Say would teach every later run a window of a
                    # few thousand tokens): the handoff leaves the words behind, nothing is learned
                    if overflowed and not carried:
                        self._learn_window(spec, result, [result.error or "", *result.errors[seen:]], emit)
                    handoff = await self._handoff(spec, name, prompt, result, emit, overflowed=overflowed)
                    accounted = self._spend(result, accounted)
                    degraded_in_a_row = degraded_in_a_row + 1 if handoff.degraded else 0
                    result.retired.append(result.session_id or "")
                    cur_prompt, cur_resume, cur_fork, cur_resume_at = (
                        handoff.prompt_block(),
                        None,
                        False,
                        None,
                    )
                    self._ctx, self._warned = 0, False
                    attempt -= 1
                    continue
                limit = self._limit_of(result, seen) if self.resilience.enabled else None
                if limit is not None:
                    limit_waits += 1
                    stop = self._limit_beyond(limit, limit_waits)
                    if stop is not None:
                        result.error = stop
                        break
                    until = self._limit_until(limit, limit_waits)
                    await self._wait_limit(
                        Pending(until=until, kind=limit.kind, step=name, error=first_line(limit.text)),
                        name,
                        emit,
                    )
                    attempt -= 1  # a limit is no failed attempt
                else:
                    if not self.resilience.enabled or attempt >= self.resilience.max_attempts:
                        break
                    kind = classify(result.error)
                    if not self.resilience.should_retry(kind):
                        break
                    delay = self.resilience.delay_for(attempt)
                    emit(
                        Retry(
                            text=(
                                _("第 {attempt} 次尝试失败({kind}):{error};{delay:.0f} 秒后重试").format(
                                    attempt=attempt, kind=kind, error=first_line(result.error), delay=delay
                                )
                            ),
                            attempt=attempt,
                            failure=kind,
                            error=result.error,
                            delay=delay,
                        )
                    )
                    if not await self.resilience.wait_online(lambda text: emit(Offline(text=text))):
                        waited = self.resilience.max_offline_wait
                        result.error = f"the API stayed unreachable for {waited:.0f} s: {result.error}"
                        break
                    await asyncio.sleep(delay)
                if result.session_id:
                    # continue the same session (after a limit or a failure): what it already did
                    # is not paid for again
                    cur_prompt, cur_resume, cur_fork, cur_resume_at = (
                        self.resilience.resume_prompt,
                        result.session_id,
                        False,
                        None,
                    )
                    result.resumed = True
        except asyncio.CancelledError:
            result.error = "cancelled"  # stopped from outside: the manifest says so
            self._said.drop(STOPPED, step_over=False)
            raise
        except KeyboardInterrupt:
            result.error = self.INTERRUPTED  # the person quit (Ctrl-C twice)
            raise
        finally:
            fault = self.fault
            if fault is not None:
                result.ok, result.error = False, fault.line()
            result.finish()
            self.results.append(result)
            self._inflight = None
            self._said.drop(STEP_OVER, step_over=True)
            self._write_manifest()
            self._notify = None
        return result

    def _take_said(self) -> str:
        with self._lock:
            words = self._said.take()
            self._interrupt_requested = False
        return words

    async def _attempt(
        self,
        spec: AgentSpec,
        prompt: str,
        result: StepResult,
        *,
        resume: str | None,
        fork: bool,
        resume_at: str | None,
        emit: Callable[[Event], None],
        watch_context: bool = True,
    ) -> None:
        """One CLI session from prompt to final result; fills `result` in place."""
        from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ResultMessage, SystemMessage
        from claude_agent_sdk._errors import ClaudeSDKError

        result.ok, result.error = False, None
        if self.handoff.enabled and spec.compact is None:
            # two mechanisms shrinking one context could not be told apart: handoff only
            spec = replace(spec, compact=CompactPolicy(mode="no_summary"))
        guards = []
        sandbox = self._sandbox_for(spec)
        role = confined_role(spec)
        walls = self._walls_for(spec, role, nested=sandbox is not None) if role is not None else None
        confine_in = self.workspace if walls is not None and walls.active else None
        glances_in = confine_in if role == "glance" else None
        if self.workbench is not None:
            guards.append(
                workbench_hooks(
                    self.workbench,
                    delegate_only=spec.delegate_only,
                    spill_threshold=self.spill_threshold,
                    agents=spec.agents,
                    allow_glance=spec.glance,
                    on_fault=self.faulted,
                    confine_in=glances_in,
                )
            )
        elif spec.delegate_only:
            # the role's wall, not the workbench's: a coordinator without one is walled the same
            guards.append({"PreToolUse": [delegate_guard(allow_glance=spec.glance, confine_in=glances_in)]})
        if role == "judge" and confine_in is not None:
            guards.append({"PreToolUse": [confine_guard(confine_in)]})
            sandbox = None  # its own confinement replaces the CLI's (command_walls.py says why)
        if role is not None:
            spilled = self.spill_threshold if self.workbench is not None and self.spill_threshold else None
            guards.append({"PostToolUse": [redact_guard(leave_longer_than=spilled)]})
        if not spec.delegate_only:
            wall = whitelist_guard(spec.allowed_tools, role=spec.name)
            if wall is not None:
                guards.append({"PreToolUse": [wall]})
        allowlist = role_walls(spec)  # the allowlist, in its three layers (walls.py)
        guards.append(allowlist.hooks)
        hooks = merge_hooks(spec.hooks, *guards)
        prelude = self.workbench.prompt_block() if (self.workbench is not None and spec.workbench) else ""
        add_dirs = (
            [str(self.workbench.root)] if self.workbench is not None and self.workbench.external else None
        )
        options = build_options(
            replace(spec, hooks=hooks or None),
            cwd=self.workspace,
            session_store=self.store,
            resume=resume,
            fork=fork,
            resume_at=resume_at,
            portable=self.portable,
            add_dirs=add_dirs,
            prelude=prelude,
        )
        options.env = {**self.env, **options.env}
        options.stderr = self._stderr
        contain(options)  # the tools' process trees end with the CLI, even if flower is killed
        options.tools = allowlist.tools
        options.can_use_tool = allowlist.can_use_tool
        if sandbox is not None:
            options.sandbox = sandbox  # type: ignore[assignment]  # failIfUnavailable: not in the TypedDict
            options.env = {**options.env, "TMPDIR": str(self._private_tmp())}
        self._handoff_requested = False
        self._retry_hint = None
        reported = 0.0  # the CLI's total_cost_usd is cumulative within one process, from zero
        outstanding: set[str] = set()
        session: str | None = None
        finished = False
        fatal: str | None = None  # a refused key the CLI would go on retrying for minutes
        stopping = False  # the disk refused a write: the turn was interrupted
        texts: list[str] = []
        crashed = False
        try:
            async with ClaudeSDKClient(options) as client:
                with self._lock:
                    self._client = client
                await client.query(prompt)
                if self._interrupt_requested:  # asked for while no session was running
                    await client.interrupt()
                async for message in client.receive_messages():
                    sid = getattr(message, "session_id", None) or (
                        message.data.get("session_id")
                        if isinstance(message, SystemMessage) and isinstance(message.data, dict)
                        else None
                    )
                    if sid and sid != session:
                        session = sid
                        self._on_new_session(result, sid)
                    if isinstance(message, SystemMessage):
                        self._note_retry_hint(message.data)
                    if fatal is None and isinstance(message, SystemMessage):
                        fatal = _fatal_retry(message.data)
                        if fatal is not None:
                            await client.interrupt()  # every retry is refused the same way: stop now
                    if self.fault is not None and not stopping:
                        stopping = True  # what the model does now could not be kept: stop here
                        await client.interrupt()
                    _track_tasks(message, outstanding)
                    events = normalize(message)
                    if isinstance(message, AssistantMessage) and not any(
                        isinstance(e, SyntheticError) for e in events
                    ):
                        self._said.delivered()  # the model answered the turn that carried them
                    for event in events:
                        if isinstance(event, SyntheticError):
                            result.errors.append(event.text)
                        elif isinstance(event, Text) and not event.subagent:
                            texts.append(event.text)
                        emit(event)
                    if isinstance(message, AssistantMessage) and not message.parent_tool_use_id:
                        if message.uuid:
                            result.tail = message.uuid
                        used = context_tokens(message.usage)
                        if used:
                            self._ctx = result.context = used
                            self._context_event(result, emit)
                            if (
                                watch_context
                                and self.handoff.enabled
                                and used >= self.handoff.at
                                and not self._handoff_requested
                            ):
                                self._handoff_requested = True
                                await client.interrupt()
                    if isinstance(message, ResultMessage):
                        finished = True
                        reported = self._account(result, message, reported)
                        if message.is_error:
                            result.error = message.result or message.subtype or "error"
                        if (
                            not outstanding
                            or self._interrupt_requested
                            or self._handoff_requested
                            or fatal
                            or stopping
                        ):
                            break
        except ClaudeSDKError as exc:
            crashed = True
            # the SDK raises after an error result too; keep the first, most specific text
            if result.error is None or over_limit(str(exc)) is not None:
                result.error = str(exc)
        except Exception as exc:  # a crash of the CLI or the transport must not lose the books
            crashed = True
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._client = None
        if crashed:
            # the error's frames hold the CLI's subprocess transport in a cycle: collected after
            # the event loop closed, it prints "Event loop is closed" with a traceback at exit
            gc.collect()
        result.text = "\n".join(t for t in texts if t).strip()
        limit = over_limit(result.error)
        if limit is not None:
            result.error = too_big(limit)  # the same line would be refused on every retry
        if fatal is not None:
            result.error = fatal
        elif self._handoff_requested:
            result.error = self.HANDOFF_DUE
        elif self._interrupt_requested:
            result.error = self.INTERRUPTED
        if result.error is None and not finished:
            result.error = (
                result.errors[-1] if result.errors else "the Claude Code CLI ended without a result"
            )
        if result.error and self.stderr_tail and "exit code" in result.error:
            result.error += "\nCLI stderr (last lines):\n" + "\n".join(list(self.stderr_tail)[-10:])
        result.ok = result.error is None and session is not None

    # -- bookkeeping -----------------------------------------------------------------------
    def _on_new_session(self, result: StepResult, sid: str) -> None:
        result.session_id = sid
        # in flight: which session holds the step, from now on (a handoff's turn has its own row)
        step = self._inflight
        self._write_manifest(extra=[result] if step is None or step is result else [step, result])
        callback = self.on_session
        if callback is not None and self.fault is None:  # a vanished run_dir is not made anew
            # lineage is a bonus: a failing callback never stops the step
            with contextlib.suppress(Exception):
                callback(sid)

    @staticmethod
    def _account(result: StepResult, message: ResultMessage, reported: float) -> float:
        """Add one ResultMessage to the step's books; returns the process's running total.

        A background subagent ends in a second result whose total includes the first.
        """
        result.num_turns += int(message.num_turns or 0)
        total = message.total_cost_usd
        if isinstance(total, (int, float)) and total >= reported:
            result.cost_usd = round(result.cost_usd + (total - reported), 6)
            return float(total)
        return reported

    def _context_event(self, result: StepResult, emit: Callable[[Event], None]) -> None:
        used, window = self._ctx, self.handoff.window
        figures: _Figures = {
            "used": used,
            "window": window,
            "at": self.handoff.at,
            "warn_at": self.handoff.warn_at,
            "step": result.step,
            "generation": len(result.retired) + 1,
            "session_id": result.session_id,
            "cost_usd": result.cost_usd,
        }
        emit(ContextUpdate(text=f"context {format_tokens(used)} / {format_tokens(window)}", **figures))
        if self.handoff.enabled and used >= self.handoff.warn_at and not self._warned:
            self._warned = True  # once per generation
            emit(
                HandoffNear(
                    text=_("上下文 {used},接近换代阈值 {at}").format(
                        used=format_tokens(used), at=format_tokens(self.handoff.at)
                    ),
                    **figures,
                )
            )

    def _stderr(self, line: str) -> None:
        line = redact(line) or ""
        self.stderr_tail.append(line)
        callback = self.on_stderr
        if callback is not None:
            with contextlib.suppress(Exception):
                callback(line)

    # -- handoff ---------------------------------------------------------------------------
    async def _handoff(
        self,
        spec: AgentSpec,
        step: str,
        task: str,
        result: StepResult,
        emit: Callable[[Event], None],
        *,
        overflowed: bool,
    ) -> Handoff:
        """Write the handoff document; `overflowed`: the API refused this turn's context, so
        the session cannot write one and it is assembled mechanically (degraded)."""
        used = self._ctx  # what the retiring session saw: the handoff's own turn moves the reading
        emit(HandoffWriting(text=_("上下文快满了,正在写交接书"), step=step, used=used))
        why = ""
        doc: Handoff | None = None
        if overflowed:
            why = "模型拒收:上下文已超长,没法再让这一代写交接"
        elif result.session_id:
            scratch = StepResult(step=str(StepLabel.handoff(step)))
            prompt = HANDOFF_PROMPT.format(used=used, window=self.handoff.window)
            # the handoff must be finished whatever the budget says, and stays out of the UI
            await self._attempt(
                replace(spec, max_budget_usd=None),
                prompt,
                scratch,
                resume=result.session_id,
                fork=False,
                resume_at=None,
                emit=emitter(None),
                watch_context=False,
            )
            result.cost_usd = round(result.cost_usd + scratch.cost_usd, 6)
            result.num_turns += scratch.num_turns
            parsed = Handoff.parse(scratch.text, step=step)
            if scratch.ok and parsed.complete():
                doc = parsed
            else:
                why = scratch.error or f"交接书缺少:{'、'.join(parsed.missing())}"
        if doc is None:
            doc = degraded(step, task, why=why)
            # the books say why the successor starts from a mechanical document
            result.errors.append(f"交接降级({first_line(why) or '原因不明'})")
        path = self._spill_handoff(step, doc)
        emit(
            HandoffDone(
                text=_("已换代(降级)") if doc.degraded else _("已换代(正常)"),
                degraded=doc.degraded,
                path=str(path) if path else None,
                sections={s: getattr(doc, s).strip() for s in SECTION_FIELDS if getattr(doc, s).strip()},
                step=step,
                retired=result.session_id,
                generation=len(result.retired) + 2,
                context=used,
                window=self.handoff.window,
            )
        )
        return doc

    # -- limits ----------------------------------------------------------------------------
    def _note_retry_hint(self, data: object) -> None:
        """The CLI's own retry of a 429 / 529 says how long it waited (the retry-after it got)."""
        if not isinstance(data, dict) or data.get("subtype") != "api_retry":
            return
        delay = data.get("retry_delay_ms")
        if data.get("error_status") in (429, 529) and isinstance(delay, (int, float)) and delay > 0:
            self._retry_hint = float(delay) / 1000.0

    def _limit_of(self, result: StepResult, seen: int) -> Limit | None:
        """The usage limit, rate limit or overload this attempt ended on, if it ended on one."""
        if classify(result.error) == "fatal":
            return None  # a refused key or request is no limit, whatever else it mentions
        for text in (result.error, *reversed(result.errors[seen:])):
            limit = parse_limit(text)
            if limit is not None:
                return limit
        return None

    def _limit_until(self, limit: Limit, waits: int) -> float:
        now = time.time()
        if limit.until is not None:
            return max(limit.until, now)
        if self._retry_hint is not None:
            return now + self._retry_hint
        if limit.kind == "usage":
            return now + min(UNNAMED_USAGE_WAIT * 2.0 ** (waits - 1), UNNAMED_USAGE_CAP)
        return now + self.resilience.delay_for(waits)

    # -- money -------------------------------------------------------------------------------
    def _spend(self, result: StepResult, accounted: float) -> float:
        self.budget.add(result.cost_usd - accounted)
        return result.cost_usd

    def _within_budget(self, spec: AgentSpec) -> AgentSpec:
        """The spec with what is left of the budget as its ceiling: the CLI checks it after each
        reply of the model, so a round cannot run on past the money."""
        left = self.budget.left()
        if left is None:
            return spec
        own = spec.max_budget_usd
        return replace(spec, max_budget_usd=left if own is None else min(own, left))

    def _over_budget(self, result: StepResult, step: str, emit: Callable[[Event], None]) -> bool:
        """A ceiling is reached: the step ends as "stopped: budget", said once."""
        scope = self.budget.exhausted()
        if scope is None:
            return False
        result.ok, result.error, result.stopped = False, self.budget.stop_line(scope), "budget"
        limits = self.budget.budget
        emit(
            BudgetNote(
                text=result.error,
                phase="stopped",
                spent=self.budget.spent,
                run_usd=limits.run_usd,
                round_usd=limits.round_usd,
                scope=scope,
                step=step,
            )
        )
        return True

    def _forecast(self, step: str, emit: Callable[[Event], None]) -> None:
        ledger = self.budget
        guess = ledger.forecast()
        emit(
            BudgetNote(
                text=forecast_line(ledger),
                phase="forecast",
                spent=guess.spent,
                run_usd=ledger.budget.run_usd,
                round_usd=ledger.budget.round_usd,
                next_round=guess.next_round,
                step=step,
            )
        )

    def _limit_beyond(self, limit: Limit, waits: int) -> str | None:
        """Why this limit is not waited out (too far off, or waited out too often), else None."""
        longest = wait_max()
        if waits > self.MAX_LIMIT_WAITS:
            return (
                f"stopped after waiting out {self.MAX_LIMIT_WAITS} limits in one step "
                f"(MAX_LIMIT_WAITS); last: {first_line(limit.text)}"
            )
        if limit.until is not None and limit.until - time.time() > longest:
            return _(
                "额度要到 {when} 才重置,超过了最多等的 {longest:g} 秒(FLOWER_LIMIT_WAIT_MAX):"
                "重置之后再跑 flower,同一目录会接着上次 —— {error}"
            ).format(when=_clock(limit.until), longest=longest, error=first_line(limit.text))
        return None

    async def _wait_limit(self, wait: Pending, step: str, emit: Callable[[Event], None]) -> None:
        """Wait until the reset on the wall clock, the moment kept in the run folder meanwhile."""
        try:
            keep(self.run_dir, wait)
        except OSError as exc:
            log.warning("could not keep the limit's reset in %s: %s", self.run_dir, exc)
        seconds = max(0.0, wait.until - time.time())
        names = {"usage": _("用量额度到上限"), "rate": _("请求太快被限流"), "overloaded": _("模型服务过载")}
        emit(
            LimitWait(
                text=_("{what},等到 {when}(还有 {seconds:.0f} 秒)再接着跑同一个会话").format(
                    what=names.get(wait.kind, wait.kind), when=_clock(wait.until), seconds=seconds
                ),
                phase="wait",
                limit=wait.kind,
                until=wait.until,
                seconds=round(seconds, 1),
                error=wait.error or None,
                step=step,
            )
        )
        # short naps on the wall clock, not one long sleep: a reset is a moment, and a clock that
        # jumps (a laptop's sleep) is seen within seconds
        while (remaining := wait.until - time.time()) > 0:  # noqa: ASYNC110 (nothing to wait on but the clock)
            await asyncio.sleep(min(remaining, 5.0))
        forget(self.run_dir)
        emit(
            LimitWait(
                text=_("额度已重置({when}),接着跑").format(when=_clock(wait.until)),
                phase="resumed",
                limit=wait.kind,
                until=wait.until,
                seconds=0.0,
                error=wait.error or None,
                step=step,
            )
        )

    # -- the window ------------------------------------------------------------------------
    def _window_key(self, spec: AgentSpec) -> tuple[str, str]:
        return model_name(spec.model, self.env), gateway(self.env)

    def _calibrated(self, spec: AgentSpec, emit: Callable[[Event], None]) -> None:
        """Start from a window an earlier run learned, when it is smaller than the configured one."""
        model, base = self._window_key(spec)
        learned = self.calibration.learned(model, base)
        if learned is not None and learned < self.handoff.window:
            self._say_window(model, base, learned, emit)

    def _learn_window(
        self, spec: AgentSpec, result: StepResult, texts: list[str], emit: Callable[[Event], None]
    ) -> None:
        """The API refused the context: the window is what it says, else at most what last fitted."""
        named = next((n for n in map(overflow_maximum, texts) if n is not None), None)
        learned = named if named is not None else self._ctx
        if not learned or learned >= self.handoff.window:
            return  # no figure, or not earlier than expected: nothing to learn
        model, base = self._window_key(spec)
        evidence = first_line(next((t for t in texts if is_overflow(t)), ""))
        self.calibration.remember(model, base, learned, evidence=evidence)
        self._say_window(model, base, learned, emit)

    def _say_window(self, model: str, base: str, learned: int, emit: Callable[[Event], None]) -> None:
        configured = self.handoff.window
        self.handoff.window = learned  # from now on, in this run too
        key = f"{model} @ {base}"
        if key in self._window_said:
            return
        self._window_said.add(key)
        line = _(
            "模型 {model} 的上下文窗口实测约 {learned},比设定的 {configured} 小:按 {learned} 换代"
            "(在 {at} 交接;记在 {path},下次运行也按它;FLOWER_WINDOW 可以改设定)"
        ).format(
            model=model,
            learned=format_tokens(learned),
            configured=format_tokens(configured),
            at=format_tokens(self.handoff.at),
            path=self.calibration.path,
        )
        if line not in self.warnings:
            self.warnings.append(line)
        log.info(line)
        emit(
            WindowNote(
                text=line,
                configured=configured,
                learned=learned,
                model=model,
                base_url=base,
                path=str(self.calibration.path),
            )
        )

    def _spill_handoff(self, step: str, doc: Handoff) -> Path | None:
        if self.workbench is None:
            return None  # still handed over through the prompt, just not kept on disk
        target = self.workbench.notes / f"交接-{_safe_name(step)}.md"
        try:
            if target.exists():
                archive = self.workbench.notes / "archive" / "交接"
                stamp = time.strftime("%Y%m%d-%H%M%S")
                move(target, archive / f"{_safe_name(step)}-{stamp}-{uuid.uuid4().hex[:4]}.md")
            doc.write(target)
            self.workbench.refresh()
        except OSError as exc:
            self.faulted(exc, target)
            return None
        return target

    # -- manifest --------------------------------------------------------------------------
    def _write_manifest(self, extra: list[StepResult] | None = None) -> None:
        """Rewrite this process's rows, keep every other process's rows (append semantics)."""
        mine = [self._row(r) for r in [*self.results, *(extra or [])]]

        def merge(rows: object, repair: Repair | None) -> list[dict[str, object]]:
            # checked by manifest_problem: a list of objects (None when there is no file yet)
            kept = rebuilt_rows(repair) if repair is not None else rows_of(items(rows))
            return [r.as_json() for r in kept if r.run != self.run_id] + [r.as_json() for r in mine]

        shared = self.shared
        if shared is not None:
            # beside the file: another checkout of this work reads the books there
            with contextlib.suppress(Exception):
                shared.put_rows(self.run_id, mine)
        if not self.run_dir.is_dir():
            # vanished (deleted, unmounted): writing would make an empty one in its place, and the
            # real one could not be put back
            self.faulted(vanished(self.manifest_path), self.manifest_path)
            return
        try:
            _, repair = update_json(self.manifest_path, merge, check=manifest_problem)
        except OSError as exc:
            self.faulted(exc, self.manifest_path)  # a full disk stops the step; anything else
            return  # loses a row of the books, which is not worth failing a run for
        if repair is not None:
            self.notice(repair.line())

    def _row(self, result: StepResult) -> ManifestRow:
        """The books' row of a step this Runtime ran (``manifest.json``, the shared store's)."""
        return ManifestRow(
            step=StepLabel.parse(result.step),
            run=self.run_id,
            session_id=result.session_id,
            ok=result.ok,
            cost_usd=result.cost_usd,
            num_turns=result.num_turns,
            # model text and error texts may echo what a gateway said, credentials included
            text=redact(result.text),
            error=redact(result.error),
            started_at=result.started_at,
            ended_at=result.ended_at,
            attempts=result.attempts,
            errors=tuple(redact(e) for e in result.errors),
            resumed=result.resumed,
            retired=tuple(result.retired),
            context=result.context,
            duration_s=result.duration_s,
        )


def rescue_on_signals(runtime: Runtime, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """On SIGTERM/SIGHUP: rescue() the books, then die the way the signal meant to."""

    def handler(signum: int, frame: FrameType | None) -> None:
        try:
            runtime.rescue()
        finally:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    for sig in signals:
        signal.signal(sig, handler)


def _track_tasks(message: Message, outstanding: set[str]) -> None:
    """Background subagents: the step is over only when every task it started has ended."""
    from claude_agent_sdk import TaskNotificationMessage, TaskStartedMessage
    from claude_agent_sdk.types import TERMINAL_TASK_STATUSES

    updated = getattr(__import__("claude_agent_sdk"), "TaskUpdatedMessage", None)
    if isinstance(message, TaskStartedMessage):
        outstanding.add(message.task_id)
    elif isinstance(message, TaskNotificationMessage):
        outstanding.discard(message.task_id)
    elif updated is not None and isinstance(message, updated):
        patch = (
            getattr(message, "patch", None)
            or (message.data.get("patch") if isinstance(message.data, dict) else None)
            or {}
        )
        status = patch.get("status") if isinstance(patch, dict) else getattr(patch, "status", None)
        if status in TERMINAL_TASK_STATUSES:
            task_id = getattr(message, "task_id", None) or message.data.get("task_id")
            outstanding.discard(task_id)


def _fatal_retry(data: object) -> str | None:
    """The error of a retry notice from the CLI when retrying cannot help (a refused key), else None."""
    if not isinstance(data, dict) or data.get("subtype") != "api_retry":
        return None
    text = f"API error {data.get('error_status')}: {data.get('error')}"
    return text if classify(text) == "fatal" else None


async def _quiet(coro: Awaitable[object]) -> None:
    with contextlib.suppress(Exception):  # interrupting a session that just ended is not an error
        await coro


def _clock(moment: float) -> str:
    """A moment as people read it here: the time of day, with the date when it is not today."""
    local = time.localtime(moment)
    same_day = time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d")
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", local)


def _safe_name(step: str) -> str:
    return "".join(c if c not in '/\\:*?"<>|' else "_" for c in step) or "step"
