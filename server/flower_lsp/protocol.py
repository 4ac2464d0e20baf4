"""flower's custom LSP protocol: the schema, the one definition of every method name and payload.

Everything the server and its clients exchange beyond standard LSP is declared here and nowhere
else: the method names, the payload types, what each method falls back to for a client that does
not declare it, and the capabilities a client declares. Beside it, and built from it:

- ``wire.py`` checks payloads coming in and turns payloads going out into JSON;
- ``gen_typescript.py`` writes the extension's ``vscode-extension/src/protocol.ts``;
- ``gen_lua.py`` writes the Neovim plugin's method names (``editors/neovim/lua/flower/protocol.lua``);
- ``reference.py`` writes the reference for other clients, ``docs/protocol.md``.

``make generate`` regenerates every generated file; ``make lint`` fails while one is stale.

Payloads are dataclasses; a field with a default is optional on the wire. JSON keys are the field
names as written (snake_case), because the payloads mirror the engine's own names (``cost_usd``,
``timeout_s``). Commands take zero or one argument: an object of the command's ``*Args`` type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

# the judge's conclusions are the engine's: one definition for the engine, the wire and TypeScript
from flower.core.events import AskState, VerdictState

# what backs a judge's check and how the verdict judged it: the engine's (flower.core.evidence)
from flower.core.evidence import CheckState, EvidenceKind

# how Bash commands are confined: the engine's modes, the CLI's --sandbox
from flower.core.sandbox import SandboxMode

# how a wake stopped short of its end: stopped: budget, stopped: no progress
from flower.core.stops import StopKind

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Payload = TypeVar("Payload", bound="DataclassInstance")

# -- method names -----------------------------------------------------------------------------

# commands (workspace/executeCommand), client -> server
CONTINUE = "flower.continue"
START = "flower.start"
SAY = "flower.say"
STOP = "flower.stop"
OPEN_DOCUMENT = "flower.openDocument"
ANSWER = "flower.answer"
ASIDE = "flower.aside"
REWIND = "flower.rewind"
FORK = "flower.fork"
# request, client -> server
STATE = "flower/state"
# notifications, server -> client
BANNER = "flower/banner"
CONTEXT = "flower/context"
EVENT = "flower/event"
# request, server -> client
ASK = "flower/ask"

DocumentName = Literal["brief", "goal", "handoff"]
EventKind = Literal[
    "run", "step", "retry", "handoff", "task", "verdict", "result", "ask", "mail", "text", "tool", "error"
]
Offer = Literal["start"]


def _doc(text: str) -> dict[str, str]:
    """A field's wire documentation, as its metadata (the generators and the reference read it)."""
    return {"doc": text}


# -- initialize ---------------------------------------------------------------------------------


@dataclass
class InitOptions:
    """initializationOptions the server understands; every field is optional and a bad value is
    reported and replaced by its default, never a failed initialize."""

    run_dir: str = field(
        metadata=_doc("the run directory, relative to each workspace folder (the CLI's `-r`)"), default="runs"
    )
    timeout_s: float | None = field(
        metadata=_doc("seconds a question waits for an answer; 0 = never wait, null = forever"),
        default=1800.0,
    )
    window: int | None = field(
        metadata=_doc("the model's context window for handoffs; null = inferred from the model"), default=None
    )
    sandbox: SandboxMode = field(
        metadata=_doc(
            "how Bash commands are confined (the CLI's `--sandbox`): require = no run without the "
            "sandbox, auto = the sandbox where it works, else one line says why not, off = unconfined"
        ),
        default="auto",
    )
    budget_usd: float | None = field(
        metadata=_doc(
            "dollars a run may spend (the CLI's `--budget`); null or 0 = no ceiling. Reached, the run "
            "ends in phase `budget` (stopped: budget) and a new budget continues it"
        ),
        default=None,
    )
    round_budget_usd: float | None = field(
        metadata=_doc(
            "dollars each round (the work and its verdict) may spend (the CLI's `--round-budget`); "
            "null or 0 = no ceiling"
        ),
        default=None,
    )
    stall_rounds: int | None = field(
        metadata=_doc(
            "judged rounds in a row failing the same checks with the workspace unchanged before the run "
            "stops and asks: go on, change the goal or stop (the CLI's `--stall-rounds`); 0 = never; "
            "null = the server's $FLOWER_STALL_ROUNDS, else 3"
        ),
        default=None,
    )
    notify: str | None = field(
        metadata=_doc(
            "a command run for each notice (asked, finished, stopped, budget, limit_wait) with the notice "
            "as JSON on stdin (the CLI's `--notify`): split into words as a shell would, run without a "
            "shell, without credentials in its environment, bounded in time; null or empty = the "
            "server's $FLOWER_NOTIFY, else none"
        ),
        default=None,
    )
    judge_can_run: bool = field(
        metadata=_doc(
            "the judge may run commands to check the work (the CLI's `--judge-can-run`): harder "
            "verdicts, at the price that it can also change the workspace"
        ),
        default=False,
    )
    folders: dict[str, InitOptions] = field(
        metadata=_doc(
            "per workspace folder (keyed by its URI): that folder's own options, replacing these for it"
        ),
        default_factory=dict,
    )

    # -- a shared store (issue 18) --------------------------------------------------------------
    store: str | None = field(
        metadata=_doc(
            "a shared session store's URL (postgresql://...), the editor's `flower.store`; null = the "
            "server's $FLOWER_STORE, else each run directory's sessions.db. Never logged: messages show "
            "it with the password masked"
        ),
        default=None,
    )


# -- command arguments --------------------------------------------------------------------------


@dataclass
class ContinueArgs:
    """Wake the folder's last run and go on (the "Flower: Continue" behaviour)."""

    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class StartArgs:
    """Start a run with a request. On a folder that can be continued, the words are added to the
    woken run (appended to 需求.md, the goal re-derived), unless `new` archives it first."""

    ask: str = field(
        metadata=_doc("the request in one sentence; may be empty only when the folder can be continued")
    )
    new: bool = field(
        metadata=_doc("archive lineage + 需求.md + 目标.md and start over (`flower --new`)"), default=False
    )
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class SayArgs:
    """Say something to the running work: interrupts the step in flight, which resumes with these
    words; between steps the words go to the inbox (and are appended to 需求.md). Answered only
    once they got there (`ok: true`): the model answered the resumed turn, or they are in the
    inbox; otherwise `ok: false` says why (too long for one message or the inbox, refused by the CLI, no run,
    the run ended). Not there within 25 s: the reply says "not yet", a later showMessage how it went."""

    text: str = field(metadata=_doc("what the person says"))
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class StopArgs:
    """Stop the folder's run. Lineage and manifest stay consistent; `flower.continue` resumes it."""

    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class OpenDocumentArgs:
    """Ask the server to open one of the run's documents with window/showDocument."""

    which: DocumentName = field(
        metadata=_doc("brief = 需求.md, goal = 目标.md, handoff = the latest handoff document")
    )
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class AnswerArgs:
    """Answer a pending question (also what the verdict code actions run)."""

    text: str = field(metadata=_doc("the answer; an option's text or free text; empty = skip the question"))
    id: str | None = field(
        metadata=_doc("the question's id, as in AskParams.id; default: the folder's oldest waiting question"),
        default=None,
    )
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class AsideArgs:
    """A side question about the folder's run (or its last one): a read-only oracle answers from
    the run's recent events and its workbench, in a Runtime of its own under `<run_dir>/aside/`.
    The run is neither interrupted nor delayed, and nothing of it enters the run's context."""

    question: str = field(metadata=_doc("the question"))
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class RewindArgs:
    """Put the folder's workspace and the step's conversation back to the end of a judged round
    (`flower rewind N`). With `preview` nothing changes: the result lists what would, for the
    client's confirmation."""

    round: int = field(metadata=_doc("the judged round to go back to (1, 2, ...)"))
    preview: bool = field(metadata=_doc("only say what the rewind would change"), default=False)
    remark: str = field(
        metadata=_doc("words the step hears first when it continues from that round"), default=""
    )
    restore_my_edits: bool = field(
        metadata=_doc(
            "put back the files the person changed by hand since the newest checkpoint too (their "
            "bytes are kept first); default: those are kept as they are and listed"
        ),
        default=False,
    )
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class RewindResult:
    """What a rewind did, or (preview) would do. Refusals (a run in progress, no such round, no
    checkpoints) are `ok: false` with the reason in `message`, never a protocol error."""

    ok: bool = field(metadata=_doc("whether the rewind was done (preview: whether it can be)"))
    message: str = field(metadata=_doc("one line for the person"))
    round: int = field(metadata=_doc("the round asked for"), default=0)
    changed: list[str] = field(
        metadata=_doc("workspace paths put back to the round's bytes"), default_factory=list
    )
    removed: list[str] = field(
        metadata=_doc("workspace paths removed (made after the round)"), default_factory=list
    )
    kept: list[str] = field(metadata=_doc("the person's own edits, left as they are"), default_factory=list)
    restored_edits: list[str] = field(
        metadata=_doc("the person's own edits put back too"), default_factory=list
    )
    session_cut: bool = field(
        metadata=_doc("the step's conversation resumes at the end of the round"), default=False
    )
    rounds: list[int] = field(
        metadata=_doc("the judged rounds that can be gone back to"), default_factory=list
    )


@dataclass
class ForkArgs:
    """A new run from the end of a judged round (`flower fork N`): a new workspace (a git worktree
    when the folder is a repository) holding the round's files, and a run folder whose step
    resumes the round's conversation; the folder's own run is left untouched. With `preview`
    nothing is made: the result says where it would go and what it would hold."""

    round: int = field(metadata=_doc("the judged round to fork from (1, 2, ...)"))
    preview: bool = field(metadata=_doc("only say what the fork would make"), default=False)
    remark: str = field(metadata=_doc("words the new run's step hears first when it continues"), default="")
    into: str | None = field(
        metadata=_doc(
            "absolute path of the new workspace (an empty or missing folder); default: beside the"
            " workspace, <name>-fork-r<N>-<time> (pass a preview's `workspace` to fork there)"
        ),
        default=None,
    )
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class ForkResult:
    """What a fork made, or (preview) would make. Refusals (no such round, no checkpoints, a
    shared session store, a folder that is taken) are `ok: false` with the reason in `message`,
    never a protocol error; a run in progress is none (the fork leaves it alone)."""

    ok: bool = field(metadata=_doc("whether the fork was made (preview: whether it can be)"))
    message: str = field(metadata=_doc("one line for the person"))
    round: int = field(metadata=_doc("the round asked for"), default=0)
    workspace: str = field(metadata=_doc("absolute path of the new workspace"), default="")
    run_dir: str = field(metadata=_doc("absolute path of the new run folder"), default="")
    worktree: bool = field(
        metadata=_doc("the new workspace is (would be) a git worktree of the repository"), default=False
    )
    files: list[str] = field(
        metadata=_doc("the workspace paths the new workspace holds with the round's bytes"),
        default_factory=list,
    )
    session_cut: bool = field(
        metadata=_doc("the new run's step resumes the conversation at the end of the round"), default=False
    )
    rounds: list[int] = field(
        metadata=_doc("the judged rounds that can be forked from"), default_factory=list
    )


@dataclass
class AsideResult:
    """The answer to flower.aside, for the client to show where the person asked. A failure is
    `ok: false` with the reason in `message`, never a protocol error."""

    ok: bool = field(metadata=_doc("whether the oracle answered"))
    message: str = field(
        metadata=_doc("one line for the person: the answer's first line, or why there is none")
    )
    answer: str = field(metadata=_doc("the whole answer (markdown); empty when there is none"), default="")
    cost_usd: float = field(
        metadata=_doc("dollars the side question cost, booked in <run_dir>/aside/manifest.json"), default=0.0
    )


@dataclass
class CommandResult:
    """What every flower command returns. Refusals (a run already in progress, nothing to
    continue, an unwritable workspace) are `ok: false` with a message, never a protocol error."""

    ok: bool = field(metadata=_doc("whether the command did what was asked"))
    message: str = field(metadata=_doc("one line for the person"))
    offer: Offer | None = field(
        metadata=_doc('"start" when there was nothing to continue and a new run is offered'), default=None
    )
    uri: str | None = field(metadata=_doc("the document concerned (flower.openDocument)"), default=None)


# -- flower/state -------------------------------------------------------------------------------


@dataclass
class StateParams:
    """Parameters of the flower/state request."""

    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class VerdictInfo:
    """One judge round's verdict."""

    state: VerdictState = field(
        metadata=_doc('"achieved", "not_yet", "unreachable", or "" when no conclusion was recognised')
    )
    reason: str = field(metadata=_doc("the judge's reason"))
    failed: list[str] = field(metadata=_doc("checklist items that did not pass"))
    round: int = field(metadata=_doc("the judge round (1-based)"))
    goal_path: str = field(metadata=_doc("absolute path of 目标.md"))


@dataclass
class AskParams:
    """A question from the agent to the person (server -> client request flower/ask)."""

    folder: str = field(metadata=_doc("URI of the workspace folder the question comes from"))
    id: str = field(metadata=_doc("the question's id; answer it with this id"))
    question: str = field(metadata=_doc("the question (markdown)"))
    options: list[str] = field(metadata=_doc("suggested answers; may be empty"))
    free_text: bool = field(metadata=_doc("whether an answer may be typed instead of picked"))
    timeout_s: float | None = field(
        metadata=_doc("seconds until the engine stops waiting; null = waits forever")
    )


@dataclass
class AskResult:
    """The client's answer to flower/ask. Neither field = no answer (the engine's timeout applies)."""

    answer: str | None = field(metadata=_doc("the chosen option or the typed text"), default=None)
    dismissed: bool = field(
        metadata=_doc("the person skipped the question: the agent decides by itself"), default=False
    )


@dataclass
class StateResult:
    """What wake_state() says about the folder, plus what is running now."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    workspace: str = field(metadata=_doc("absolute path of the workspace"))
    run_dir: str = field(
        metadata=_doc("absolute path of the run directory (sessions.db, manifest.json, lineage.json)")
    )
    waking: bool = field(metadata=_doc("需求.md exists with its four sections: a run can be continued"))
    brief: str = field(metadata=_doc("absolute path of 需求.md"))
    goal: str = field(metadata=_doc("absolute path of 目标.md"))
    checks: int = field(metadata=_doc("number of items in the goal's checklist (0 without a goal)"))
    woke: int = field(metadata=_doc("how many times the folder's work has been woken"))
    steps: dict[str, str] = field(metadata=_doc("step name -> session id, from the lineage"))
    running: bool = field(metadata=_doc("whether a run is in progress"))
    step: str = field(metadata=_doc("the current (or last) step name"))
    index: int = field(metadata=_doc("the current step's 1-based index; 0 before the first step"))
    total: int = field(metadata=_doc("how many steps the workflow has; 0 when unknown"))
    round: int = field(metadata=_doc("the goal-guarded work round in progress (1-based)"))
    generation: int = field(metadata=_doc("handoff generation of the current step (1 = no handoff yet)"))
    used: int = field(metadata=_doc("tokens in the main thread's context after the last model turn"))
    window: int = field(metadata=_doc("the context window assumed for handoffs"))
    cost_usd: float = field(metadata=_doc("dollars spent by this run so far"))
    near: bool = field(metadata=_doc("the context is past the handoff warning threshold"))
    handing_off: bool = field(metadata=_doc("a handoff document is being written right now"))
    verdict: VerdictInfo | None = field(
        metadata=_doc("the last judge verdict seen by this server for the folder")
    )
    pending: list[AskParams] = field(metadata=_doc("questions waiting for an answer"))


# -- notifications ------------------------------------------------------------------------------


@dataclass
class BannerParams:
    """The resume banner, e.g.
    `<- 在 ~/proj 接上上次  需求已确认 · 目标 7 条 · 干活上下文 71.4K · 第 3 次唤醒`."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    text: str = field(
        metadata=_doc(
            "the banner line, ready to show; when the last wake stopped short, a second line says "
            "which stop it was and what continuing will do"
        )
    )
    stopped: StopKind | None = field(
        metadata=_doc(
            "how the last wake stopped: budget (stopped: budget) or no_progress (stopped: no progress); "
            "null: it did not stop short"
        ),
        default=None,
    )


@dataclass
class ContextParams:
    """The context meter, sent after every model turn of the main thread and at handoffs."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    used: int = field(
        metadata=_doc("tokens the model saw in the last turn (input + cache reads + cache writes)")
    )
    window: int = field(metadata=_doc("the context window assumed for handoffs"))
    warn_at: int = field(metadata=_doc("past this, a handoff is near"))
    at: int = field(metadata=_doc("at this, the session writes a handoff document and a new one takes over"))
    step: str = field(metadata=_doc("the step the turn belongs to"))
    round: int = field(metadata=_doc("the goal-guarded work round in progress (1-based)"))
    generation: int = field(metadata=_doc("handoff generation of the step (1 = no handoff yet)"))
    cost_usd: float = field(metadata=_doc("dollars spent by this run so far"))
    near: bool = field(metadata=_doc("used >= warn_at"))
    handing_off: bool = field(metadata=_doc("a handoff document is being written right now"))


@dataclass
class EventParams:
    """One line for the output log: run lifecycle, steps, retries, handoffs, verdicts, questions."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    kind: EventKind = field(
        metadata=_doc(
            "what happened; `run` carries payload.phase = started | finished | stopped | failed | budget"
        )
    )
    text: str = field(metadata=_doc("a readable line"))
    payload: dict[str, object] = field(
        metadata=_doc("structured details (JSON-safe copy of the engine event's payload)")
    )


# -- the registry ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One custom method: its name, how it travels and what it carries."""

    const: str
    name: str
    kind: Literal["command", "request", "notification"]
    direction: Literal["client->server", "server->client"]
    params: type[DataclassInstance] | None
    result: type[DataclassInstance] | None
    doc: str


METHODS: tuple[Method, ...] = (
    Method(
        "CONTINUE",
        CONTINUE,
        "command",
        "client->server",
        ContinueArgs,
        CommandResult,
        'Wake and go on; with nothing to continue, says so and offers to start (offer: "start").',
    ),
    Method(
        "START",
        START,
        "command",
        "client->server",
        StartArgs,
        CommandResult,
        "Start a run with a request; refused while the folder's run is in progress.",
    ),
    Method(
        "SAY",
        SAY,
        "command",
        "client->server",
        SayArgs,
        CommandResult,
        "Say something to the running work (interrupt and resume with the words).",
    ),
    Method(
        "STOP",
        STOP,
        "command",
        "client->server",
        StopArgs,
        CommandResult,
        "Stop the folder's run; state stays on disk and flower.continue resumes it.",
    ),
    Method(
        "OPEN_DOCUMENT",
        OPEN_DOCUMENT,
        "command",
        "client->server",
        OpenDocumentArgs,
        CommandResult,
        "Open 需求.md, 目标.md or the latest handoff document (window/showDocument).",
    ),
    Method(
        "ANSWER",
        ANSWER,
        "command",
        "client->server",
        AnswerArgs,
        CommandResult,
        "Answer a waiting question, by id or the oldest, with an option or one's own words (the verdict"
        " code actions use it).",
    ),
    Method(
        "ASIDE",
        ASIDE,
        "command",
        "client->server",
        AsideArgs,
        AsideResult,
        "A side question about the run; the answer is the result (the run is not disturbed).",
    ),
    Method(
        "REWIND",
        REWIND,
        "command",
        "client->server",
        RewindArgs,
        RewindResult,
        "Back to the end of a judged round, files and conversation together (preview first, for a"
        " confirmation); refused while a run holds the folder.",
    ),
    Method(
        "FORK",
        FORK,
        "command",
        "client->server",
        ForkArgs,
        ForkResult,
        "A new run from the end of a judged round, in a new workspace and run folder (preview first,"
        " for a confirmation); the folder's own run is untouched, and may go on while it is made.",
    ),
    Method(
        "STATE",
        STATE,
        "request",
        "client->server",
        StateParams,
        StateResult,
        "wake_state() plus what is running now.",
    ),
    Method(
        "BANNER",
        BANNER,
        "notification",
        "server->client",
        BannerParams,
        None,
        "The resume banner: on initialized and whenever a run wakes.",
    ),
    Method(
        "CONTEXT",
        CONTEXT,
        "notification",
        "server->client",
        ContextParams,
        None,
        "The context meter after every model turn; near the threshold and during a handoff it says so.",
    ),
    Method(
        "EVENT", EVENT, "notification", "server->client", EventParams, None, "One event for the output log."
    ),
    Method(
        "ASK",
        ASK,
        "request",
        "server->client",
        AskParams,
        AskResult,
        "A question for the person. Answer, dismiss, or leave it: the engine's timeout then applies.",
    ),
)

PAYLOADS: tuple[type[DataclassInstance], ...] = (
    InitOptions,
    ContinueArgs,
    StartArgs,
    SayArgs,
    StopArgs,
    OpenDocumentArgs,
    AnswerArgs,
    AsideArgs,
    AsideResult,
    RewindArgs,
    RewindResult,
    ForkArgs,
    ForkResult,
    CommandResult,
    StateParams,
    VerdictInfo,
    AskParams,
    AskResult,
    StateResult,
    BannerParams,
    ContextParams,
    EventParams,
)
ALIASES: dict[str, object] = {
    "DocumentName": DocumentName,
    "EventKind": EventKind,
    "VerdictState": VerdictState,
    "Offer": Offer,
}
COMMANDS: tuple[str, ...] = tuple(m.name for m in METHODS if m.kind == "command")


# -- the history: flower/history and its live changes ------------------------------------------------
#
# The whole story of a folder's work (flower.workflow.history): wakes, steps, judged rounds with
# their verdicts, questions, handoffs, the books, and the context after every main-thread turn.
# flower/history is a standard request any client can send. flower/historyUpdate is an extension:
# it goes only to a client that declares `history: true` under initialize's
# `capabilities.experimental.flower`. A client without it asks again when it wants to (when the
# run's work-done progress moves, or on a timer); `revision` says whether anything has changed.

HISTORY = "flower/history"
HISTORY_UPDATE = "flower/historyUpdate"

# as flower.workflow.history spells them (tests/server/test_history.py holds the two together)
RoundStatus = Literal["running", "done", "failed", "unfinished"]
MarkKind = Literal["wake", "verdict", "handoff"]


@dataclass
class HistoryParams:
    """Parameters of the flower/history request."""

    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class HistoryTurn:
    """One model turn of a main thread (a step's or a judge's, never a subagent's)."""

    at: float = field(metadata=_doc("when, in epoch seconds"))
    used: int = field(metadata=_doc("tokens the model saw (input + cache reads + cache writes)"))
    session_id: str = field(metadata=_doc("the session"))
    step: str = field(metadata=_doc("the step name of its manifest row: 干活, 干活#round2, 干活·判定#1"))
    lane: str = field(
        metadata=_doc("the step it belongs to (干活), or its judge's (干活·判定): one chart line each")
    )
    generation: int = field(
        metadata=_doc("the lane's sessions up to this one (1 until the lane's first handoff)")
    )
    wake: int = field(metadata=_doc("the wake it happened in (1-based)"))


@dataclass
class HistoryMark:
    """A point worth marking on the chart."""

    kind: MarkKind = field(metadata=_doc("a later wake began, a round was judged, or a session handed over"))
    turn: int = field(metadata=_doc("index into `turns` of the turn it sits at"))
    label: str = field(
        metadata=_doc('the step it happened in (a verdict: the round it ruled on), or "wake N"')
    )
    state: str = field(metadata=_doc("a verdict's state; empty otherwise"))


@dataclass
class HistoryQuestion:
    """A question to the person and how it settled."""

    id: str = field(metadata=_doc("q1, q2 ... (counted per wake)"))
    question: str = field(metadata=_doc("the question (markdown)"))
    options: list[str] = field(metadata=_doc("the suggested answers"))
    state: AskState = field(
        metadata=_doc("asked (still waiting), answered, timeout, declined, over_budget, invalid")
    )
    answer: str = field(metadata=_doc("the answer; for a skipped question, the reason given, if any"))
    asked_at: float = field(metadata=_doc("epoch seconds"))
    waited_s: float | None = field(metadata=_doc("how long it waited for its answer; null while it waits"))


@dataclass
class HistoryHandoff:
    """A session that handed over to a fresh one near its window."""

    step: str = field(metadata=_doc("the step name of the row it happened in"))
    retired: str = field(metadata=_doc("the session that handed over"))
    successor: str | None = field(
        metadata=_doc("the session that took over; null while the document is written")
    )
    generation: int = field(metadata=_doc("the successor's generation in its lane"))
    at: float = field(metadata=_doc("epoch seconds"))
    used: int = field(metadata=_doc("the retired session's context at its last turn"))
    path: str | None = field(metadata=_doc("the handoff document (交接-<step>.md), while it is on disk"))
    uri: str | None = field(metadata=_doc("the document's URI"))
    degraded: bool = field(metadata=_doc("flower wrote the document because the session could not"))


@dataclass
class FailedCheck:
    """A checklist item a verdict failed, and where it is in 目标.md."""

    text: str = field(metadata=_doc("the item as the judge named it"))
    line: int | None = field(metadata=_doc("its 0-based line in 目标.md; null when it names no check there"))


@dataclass
class HistoryEvidence:
    """How one checklist item was verified, linked to a call the judge really made (the engine's
    ``flower.core.evidence.Evidence``)."""

    check: str = field(metadata=_doc("the checklist item"))
    kind: EvidenceKind = field(
        metadata=_doc(
            '"command" (a command ran), "read" (a file was read), "search" (a Grep/Glob), '
            '"unverifiable" (marked [此环境无法验证:…]: never met) or "none" (nothing cited)'
        )
    )
    command: str = field(metadata=_doc('the command, for "command"'))
    exit_code: int | None = field(metadata=_doc("its exit code; null when it never ran"))
    excerpt: str = field(metadata=_doc("a short head of the call's output, credentials masked"))
    path: str = field(
        metadata=_doc("the file read (the folder searched), relative to the workspace when inside it")
    )
    line: int | None = field(metadata=_doc("the first line read, 1-based"))
    end_line: int | None = field(metadata=_doc("the last line read, 1-based"))
    pattern: str = field(metadata=_doc('the search pattern, for "search"'))
    hits: int | None = field(metadata=_doc("how many hits the search reported"))
    backed: bool = field(metadata=_doc("linked to a tool call the judge made in its turn"))
    basis: str = field(metadata=_doc("the judge's own words for it (its line in the verdict's 证据 section)"))
    check_line: int | None = field(
        metadata=_doc("the check's 0-based line in 目标.md; null when it is not there")
    )
    state: CheckState = field(
        metadata=_doc(
            'how the verdict judged it: "passed", "failed", "no_evidence" (claimed without evidence, '
            'or nothing backs it) or "unverifiable" (never met); one rule for every front end'
        )
    )


@dataclass
class HistoryTrailCall:
    """One tool call of the judge's turn with what came back (``flower.core.evidence.TrailCall``)."""

    tool: str = field(metadata=_doc("the tool's name: Bash, Read, Grep, Glob ..."))
    summary: str = field(metadata=_doc("what the call was about"))
    command: str = field(metadata=_doc("a Bash call's command"))
    exit_code: int | None = field(metadata=_doc("a Bash call's exit code; null when it never ran"))
    excerpt: str = field(metadata=_doc("a short head of the output, credentials masked"))
    path: str = field(metadata=_doc("the file read or the folder searched"))
    line: int | None = field(metadata=_doc("the first line read, 1-based"))
    end_line: int | None = field(metadata=_doc("the last line read, 1-based"))
    pattern: str = field(metadata=_doc("a search's pattern"))
    hits: int | None = field(metadata=_doc("how many hits a search reported"))
    ran: bool = field(metadata=_doc("the tool really ran (false: refused, or no result came)"))


@dataclass
class HistoryVerdict:
    """The judge's ruling on a round."""

    state: VerdictState = field(
        metadata=_doc('"achieved", "not_yet", "unreachable", or "" when none was recognised')
    )
    reason: str = field(metadata=_doc("the judge's reason (what the worker is told)"))
    failed: list[FailedCheck] = field(metadata=_doc("the checklist items that did not pass"))
    round: int = field(metadata=_doc("the judge's count (restarts with every wake)"))
    step: str = field(metadata=_doc("the judge's step name: 干活·判定#2"))
    session_id: str | None = field(metadata=_doc("the judge's own session"))
    at: float = field(metadata=_doc("when it ruled, in epoch seconds"))
    cost_usd: float = field(metadata=_doc("the judge's own cost"))
    num_turns: int = field(metadata=_doc("the judge's turns"))
    duration_s: float = field(metadata=_doc("how long the judge took"))
    evidence: list[HistoryEvidence] = field(
        metadata=_doc("one entry per checklist item: how it was verified")
    )
    trail: list[HistoryTrailCall] = field(metadata=_doc("every tool call of the judge's turn, in order"))
    unproven: list[str] = field(
        metadata=_doc("checks the judge called achieved without evidence (so: not achieved)")
    )
    claimed: VerdictState = field(
        metadata=_doc('the judge\'s own conclusion when flower overruled it, else ""')
    )


@dataclass
class HistoryRound:
    """One manifest row of a step: its run, a judged round of work, or a retry."""

    number: int = field(metadata=_doc("1-based within its step and wake"))
    step: str = field(metadata=_doc("the row's step name: 干活, 干活#round2"))
    status: RoundStatus = field(
        metadata=_doc("running now, done, failed, or unfinished (its process died in it)")
    )
    session_id: str | None = field(metadata=_doc("the session it ended in; null before its session started"))
    retired: list[str] = field(metadata=_doc("sessions it handed over from, in order"))
    started_at: float = field(metadata=_doc("epoch seconds"))
    ended_at: float = field(metadata=_doc("epoch seconds; 0 while it runs or when its process died"))
    duration_s: float = field(metadata=_doc("seconds (so far, while it runs)"))
    cost_usd: float = field(metadata=_doc("dollars (so far, while it runs); the judge's are in its verdict"))
    num_turns: int = field(metadata=_doc("the CLI's turn count"))
    attempts: int = field(metadata=_doc("attempts it took (retries are attempts - 1)"))
    errors: list[str] = field(metadata=_doc("what went wrong in the attempts that were retried"))
    error: str | None = field(metadata=_doc("why it failed, if it did"))
    resumed: bool = field(metadata=_doc("it continued an earlier session"))
    verdict: HistoryVerdict | None = field(metadata=_doc("the judge's ruling on it, when it was judged"))
    judge_error: str | None = field(metadata=_doc("the judge ran but could give no verdict (a fatal error)"))
    handoffs: list[HistoryHandoff] = field(metadata=_doc("handoffs during it"))
    questions: list[HistoryQuestion] = field(
        metadata=_doc("questions asked during it (or raised by its verdict)")
    )


@dataclass
class HistoryStep:
    """A workflow step in one wake: 确认需求, 设定目标, 干活."""

    name: str = field(metadata=_doc("the step's name"))
    rounds: list[HistoryRound] = field(
        metadata=_doc("its rows in order: the first run, then each judged round")
    )
    sessions: list[str] = field(metadata=_doc("every session it ran in, handed-over ones included"))
    cost_usd: float = field(metadata=_doc("dollars, its judges' included"))
    num_turns: int = field(metadata=_doc("turns, its judges' included"))
    duration_s: float = field(metadata=_doc("seconds, its judges' included"))
    live: bool = field(metadata=_doc("it is in flight now"))


@dataclass
class HistoryWake:
    """One wake: a process that took the work up (a run, then each Continue)."""

    number: int = field(metadata=_doc("1-based"))
    run: str = field(metadata=_doc("the run id its manifest rows carry"))
    started_at: float = field(metadata=_doc("epoch seconds"))
    ended_at: float = field(
        metadata=_doc("epoch seconds; 0 while it runs or when its process died in a step")
    )
    cost_usd: float = field(metadata=_doc("dollars"))
    num_turns: int = field(metadata=_doc("turns"))
    duration_s: float = field(metadata=_doc("seconds of steps"))
    live: bool = field(metadata=_doc("it is running now"))
    steps: list[HistoryStep] = field(metadata=_doc("its steps in order"))
    stopped: str = field(
        metadata=_doc('how it stopped short of its end: budget, no_progress; "" when it did not'), default=""
    )
    stop_line: str = field(
        metadata=_doc(
            "that stop for a person: which stop it was (stopped: budget, stopped: no progress), why, "
            'and what continuing will do; "" when it did not stop short'
        ),
        default="",
    )


@dataclass
class HistoryBranch:
    """A rewind or a fork (`flower rewind N`, `flower fork N`): the work went back to the end of a
    judged round, and the wakes after `after_wake` go on from there, beside the later rounds."""

    kind: str = field(metadata=_doc("rewind or fork"))
    round: int = field(metadata=_doc("the judged round the work went back to"))
    from_round: int = field(metadata=_doc("the round the work had reached before"))
    at: float = field(metadata=_doc("epoch seconds"))
    remark: str = field(metadata=_doc("what the person said to the work session with it; empty when nothing"))
    after_wake: int = field(metadata=_doc("how many wakes came before it"))


@dataclass
class HistoryCheck:
    """One item of the goal's checklist."""

    line: int = field(metadata=_doc("0-based line in 目标.md"))
    text: str = field(metadata=_doc("the item"))


@dataclass
class HistoryResult:
    """The whole story of a folder's current piece of work (work archived with `new` is left out)."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    revision: int = field(
        metadata=_doc("counts the changes this server has seen in the folder; updates carry the next")
    )
    workspace: str = field(metadata=_doc("absolute path of the workspace"))
    run_dir: str = field(metadata=_doc("absolute path of the run directory"))
    brief: str = field(metadata=_doc("absolute path of 需求.md"))
    goal: str = field(metadata=_doc("absolute path of 目标.md"))
    brief_uri: str = field(metadata=_doc("URI of 需求.md"))
    goal_uri: str = field(metadata=_doc("URI of 目标.md"))
    brief_exists: bool = field(metadata=_doc("需求.md is there"))
    goal_exists: bool = field(metadata=_doc("目标.md is there"))
    checks: list[HistoryCheck] = field(metadata=_doc("the goal's checklist, with lines"))
    woke: int = field(metadata=_doc("the lineage's count of wake-ups"))
    sessions: dict[str, str] = field(metadata=_doc("step name -> the session it continues, from the lineage"))
    wakes: list[HistoryWake] = field(metadata=_doc("the wakes in order"))
    turns: list[HistoryTurn] = field(metadata=_doc("every main-thread turn of every wake, in order"))
    marks: list[HistoryMark] = field(metadata=_doc("wakes, verdicts and handoffs on the turns"))
    window: int = field(
        metadata=_doc("the context window (a live reading's, else what runs here are configured with)")
    )
    at: int = field(metadata=_doc("the handoff threshold"))
    warn_at: int = field(metadata=_doc("past this, a handoff is near"))
    cost_usd: float = field(metadata=_doc("dollars, every wake"))
    num_turns: int = field(metadata=_doc("turns, every wake"))
    duration_s: float = field(metadata=_doc("seconds of steps, every wake"))
    live: bool = field(metadata=_doc("a run is in progress in this server"))
    live_step: str = field(metadata=_doc("the step name in flight; empty between steps"))
    elsewhere: str = field(
        metadata=_doc(
            "who else is working on the folder now (a `flower` in a terminal: its command and pid), or empty"
        )
    )
    earlier: int = field(metadata=_doc("wakes of earlier work archived with `new`, left out"))
    problems: list[str] = field(metadata=_doc("what could not be read (a damaged file), one line each"))
    branches: list[HistoryBranch] = field(
        metadata=_doc("rewinds and forks, in order: where the work went back to a judged round"),
        default_factory=list,
    )


@dataclass
class HistoryUpdateParams:
    """A change of the history: one more turn (append it), or the whole history (replace yours).
    A revision that does not follow yours means an update was missed: ask flower/history."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    revision: int = field(metadata=_doc("the revision after this change"))
    turn: HistoryTurn | None = field(metadata=_doc("a turn to append to `turns`"), default=None)
    history: HistoryResult | None = field(
        metadata=_doc("the whole history, replacing the one held"), default=None
    )


METHODS = (
    *METHODS,
    Method(
        "HISTORY",
        HISTORY,
        "request",
        "client->server",
        HistoryParams,
        HistoryResult,
        "The whole story of a folder's work, from disk and from the run in progress.",
    ),
    Method(
        "HISTORY_UPDATE",
        HISTORY_UPDATE,
        "notification",
        "server->client",
        HistoryUpdateParams,
        None,
        "A change of the history, to a client that declares experimental.flower.history: after every"
        " main-thread turn (the turn) and whenever a step, round, verdict, question or handoff moves"
        " (the whole history).",
    ),
)
PAYLOADS = (
    *PAYLOADS,
    HistoryParams,
    HistoryTurn,
    HistoryMark,
    HistoryQuestion,
    HistoryHandoff,
    FailedCheck,
    HistoryEvidence,
    HistoryTrailCall,
    HistoryVerdict,
    HistoryRound,
    HistoryStep,
    HistoryWake,
    HistoryCheck,
    HistoryBranch,
    HistoryResult,
    HistoryUpdateParams,
)
ALIASES = {
    **ALIASES,
    "AskState": AskState,
    "RoundStatus": RoundStatus,
    "MarkKind": MarkKind,
    "EvidenceKind": EvidenceKind,
    "CheckState": CheckState,
}


# -- the fleet: runs queued in the shared store's database (issue 28) -------------------------------
#
# The fleet (`flower submit`, `flower worker`, `flower fleet`; docs/fleet.md) keeps its runs in the
# same PostgreSQL database as a folder's shared session store (the `store` option, else the
# server's $FLOWER_STORE). flower/fleet/runs and flower/fleet/show are standard requests any client
# can send; a folder without such a store answers `configured: false`, never an error. What the
# engine cannot do (no such run, nothing waits, the database unreachable) is `message`, a line for
# the person. flower/fleetUpdate goes only to a client that declares `fleet`.

FLEET_RUNS = "flower/fleet/runs"
FLEET_SHOW = "flower/fleet/show"
FLEET_ANSWER = "flower.fleetAnswer"
FLEET_CANCEL = "flower.fleetCancel"
FLEET_UPDATE = "flower/fleetUpdate"

# as flower.fleet.model spells them (tests/server/test_fleet_lsp.py holds the two together)
FleetRunState = Literal["queued", "running", "waiting", "finished", "failed", "cancelled"]


@dataclass
class FleetParams:
    """Parameters of the flower/fleet/runs request."""

    folder: str | None = field(
        metadata=_doc("URI of the workspace folder whose store holds the fleet; default: the first folder"),
        default=None,
    )


@dataclass
class FleetOutcome:
    """How a finished run's result was delivered: its branch pushed, or a patch file."""

    branch: str = field(metadata=_doc("the branch flower/<run id>"))
    commit: str = field(metadata=_doc("the commit pushed, or '' when none was"))
    pushed: bool = field(metadata=_doc("the branch reached the repository"))
    patch: str = field(metadata=_doc("the patch file's path on `host` when the branch could not be pushed"))
    host: str = field(metadata=_doc("the machine that holds the patch"))
    goal_met: bool = field(metadata=_doc("the judge found the goal achieved"))


@dataclass
class FleetRun:
    """One fleet run as a list shows it (flower.fleet.RunSummary)."""

    id: str = field(metadata=_doc("the run's id (flower fleet show <id>)"))
    state: FleetRunState = field(
        metadata=_doc("queued, running, waiting (for an answer), finished, failed or cancelled")
    )
    state_text: str = field(metadata=_doc("the state in the person's words"))
    repository: str = field(
        metadata=_doc("the repository it works on (no credential: the fleet refuses those)")
    )
    ref: str = field(metadata=_doc("the branch, tag or commit it started from"))
    request: str = field(metadata=_doc("what it was asked to do"))
    branch: str = field(metadata=_doc("the branch its result is delivered on"))
    worker: str = field(metadata=_doc("the worker that holds it now (or held it last); '' when none has yet"))
    created_at: float = field(metadata=_doc("when it was submitted (epoch seconds, the database's clock)"))
    updated_at: float = field(metadata=_doc("when its state last changed (epoch seconds)"))
    note: str = field(
        metadata=_doc("the latest thing a person should know about it, in their words; '' when none")
    )
    question: str = field(metadata=_doc("the question it waits on, '' when none"))
    outcome: FleetOutcome | None = field(metadata=_doc("how its result was delivered, once it was"))


@dataclass
class FleetRunsResult:
    """The fleet of a folder's store. Not configured (no PostgreSQL store, or the fleet's part of
    flower not installed) and unreachable are said in `message`, never a protocol error."""

    configured: bool = field(metadata=_doc("the folder has a PostgreSQL store, so a fleet to show"))
    where: str = field(
        metadata=_doc("the database as a person can name it, its password masked; '' when none")
    )
    message: str = field(
        metadata=_doc("why there is nothing to show (not configured, unreachable); '' when all is well")
    )
    runs: list[FleetRun] = field(metadata=_doc("every run, oldest first"))


@dataclass
class FleetShowParams:
    """Parameters of the flower/fleet/show request."""

    run: str = field(metadata=_doc("the run's id"))
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder; default: the first folder"), default=None
    )


@dataclass
class FleetEvent:
    """One line of a run's story: a line of its flow, or something the fleet did."""

    at: float = field(metadata=_doc("when (epoch seconds, the database's clock)"))
    worker: str = field(metadata=_doc("the worker it happened on, '' for the fleet itself"))
    text: str = field(metadata=_doc("the line, in the person's words"))


@dataclass
class FleetExecution:
    """One worker's time on a run."""

    worker: str = field(metadata=_doc("the worker's name"))
    host: str = field(metadata=_doc("the machine it ran on"))
    pid: int = field(metadata=_doc("its process id there"))
    started_at: float = field(metadata=_doc("when it took the run (epoch seconds)"))
    ended_at: float = field(metadata=_doc("when it let go; 0 while it still holds it"))
    reason: str = field(
        metadata=_doc("why it let go: finished, failed, cancelled, handed-back, busy, fenced, lost")
    )


@dataclass
class FleetQuestion:
    """A question the run asked a person."""

    id: int = field(metadata=_doc("the question's number in the fleet"))
    question: str = field(metadata=_doc("the question"))
    options: list[str] = field(metadata=_doc("suggested answers; may be empty"))
    asked_at: float = field(metadata=_doc("when it was asked (epoch seconds)"))
    state: str = field(
        metadata=_doc(
            "waiting, answered, delivered, settled (went on without it) or gone (its worker went away)"
        )
    )
    answer: str = field(metadata=_doc("the answer given, '' when none"))


@dataclass
class FleetShowResult:
    """One run in full. An unknown run, no store or an unreachable database: `run` null and why in
    `message`."""

    configured: bool = field(metadata=_doc("the folder has a PostgreSQL store"))
    where: str = field(metadata=_doc("the database, its password masked; '' when none"))
    message: str = field(metadata=_doc("why there is no run to show; '' when there is"))
    run: FleetRun | None = field(metadata=_doc("the run"))
    events: list[FleetEvent] = field(metadata=_doc("its story, in order"))
    executions: list[FleetExecution] = field(metadata=_doc("who ran it when, in order"))
    questions: list[FleetQuestion] = field(metadata=_doc("what it asked, in order"))


@dataclass
class FleetAnswerArgs:
    """Answer the question a fleet run waits on (`flower fleet answer`): whichever worker holds the
    run reads it from the database and the run goes on."""

    run: str = field(metadata=_doc("the run's id"))
    text: str = field(metadata=_doc("the answer"))
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder whose store holds the fleet"), default=None
    )


@dataclass
class FleetCancelArgs:
    """Cancel a queued fleet run, or stop a running one (`flower fleet cancel`)."""

    run: str = field(metadata=_doc("the run's id"))
    folder: str | None = field(
        metadata=_doc("URI of the workspace folder whose store holds the fleet"), default=None
    )


@dataclass
class FleetUpdateParams:
    """The fleet of a folder changed (a run's state, worker, note or question): its runs now, to a
    client that declares `fleet` and has asked flower/fleet/runs for that folder."""

    folder: str = field(metadata=_doc("URI of the workspace folder"))
    fleet: FleetRunsResult = field(metadata=_doc("the runs as flower/fleet/runs answers now"))


METHODS = (
    *METHODS,
    Method(
        "FLEET_RUNS",
        FLEET_RUNS,
        "request",
        "client->server",
        FleetParams,
        FleetRunsResult,
        "The fleet's runs in the folder's shared store; `configured: false` without a PostgreSQL store.",
    ),
    Method(
        "FLEET_SHOW",
        FLEET_SHOW,
        "request",
        "client->server",
        FleetShowParams,
        FleetShowResult,
        "One fleet run in full: its story, its executions, its questions.",
    ),
    Method(
        "FLEET_ANSWER",
        FLEET_ANSWER,
        "command",
        "client->server",
        FleetAnswerArgs,
        CommandResult,
        "Answer the question a fleet run waits on; ok: false with the fleet's reason when none does.",
    ),
    Method(
        "FLEET_CANCEL",
        FLEET_CANCEL,
        "command",
        "client->server",
        FleetCancelArgs,
        CommandResult,
        "Cancel a queued fleet run or stop a running one; ok: false once it is over.",
    ),
    Method(
        "FLEET_UPDATE",
        FLEET_UPDATE,
        "notification",
        "server->client",
        FleetUpdateParams,
        None,
        "The runs of a folder's fleet changed, to a client that declares experimental.flower.fleet and"
        " asked flower/fleet/runs for that folder (the server looks every few seconds).",
    ),
)
PAYLOADS = (
    *PAYLOADS,
    FleetParams,
    FleetOutcome,
    FleetRun,
    FleetRunsResult,
    FleetShowParams,
    FleetEvent,
    FleetExecution,
    FleetQuestion,
    FleetShowResult,
    FleetAnswerArgs,
    FleetCancelArgs,
    FleetUpdateParams,
)
ALIASES = {**ALIASES, "FleetRunState": FleetRunState}
# the fleet's commands are declared after the first METHODS: the list is taken again, whole
COMMANDS = tuple(m.name for m in METHODS if m.kind == "command")


# -- other editors: what a client declares, and what it gets when it does not -----------------------
#
# A client declares the flower extensions it handles under initialize's
# `capabilities.experimental.flower` (a FlowerCapabilities object). Each extension it leaves out
# reaches it through standard LSP instead: FALLBACKS says how, method by method.

EXPERIMENTAL_KEY = "flower"
# workspace/didChangeConfiguration: `settings.flower` carries a whole InitOptions object
SETTINGS_SECTION = "flower"


@dataclass
class FlowerCapabilities:
    """The flower extensions a client handles (initialize's `capabilities.experimental.flower`).
    Every field defaults to false: a client that declares nothing gets the standard fallbacks."""

    ask: bool = field(
        metadata=_doc(
            "handles the flower/ask request; it may reply {} at once and answer later with flower.answer"
        ),
        default=False,
    )
    banner: bool = field(metadata=_doc("shows flower/banner"), default=False)
    context: bool = field(metadata=_doc("shows flower/context (the context meter)"), default=False)
    event: bool = field(metadata=_doc("shows flower/event (the run's log)"), default=False)
    results: bool = field(
        metadata=_doc("shows the message of every command result itself, refusals included"), default=False
    )
    offer: bool = field(
        metadata=_doc(
            'offers a new run itself when a command answers offer: "start"'
            " (no window/showMessageRequest then)"
        ),
        default=False,
    )
    history: bool = field(
        metadata=_doc("handles flower/historyUpdate (the history's live changes)"), default=False
    )
    fleet: bool = field(
        metadata=_doc("handles flower/fleetUpdate (the fleet's changes, for a view of its runs)"),
        default=False,
    )


REFUSED = "A refusal (ok: false) is also shown with window/showMessage, unless the client declares `results`."

FALLBACKS: dict[str, str] = {
    CONTINUE: REFUSED
    + ' With nothing to continue the result says offer: "start" and the server offers a new run with'
    " window/showMessageRequest, unless the client declares `offer`.",
    START: "A refusal is shown with window/showMessage for every client.",
    SAY: REFUSED,
    STOP: REFUSED,
    OPEN_DOCUMENT: "window/showDocument is sent only to a client that declares window.showDocument.support;"
    " otherwise the result is ok: false with the document's path in the message and its uri, and the log"
    " (window/logMessage) says so. " + REFUSED,
    ANSWER: "The free-text answer path for every client: it needs no request held open. Without an id it"
    " answers the folder's oldest waiting question. " + REFUSED,
    ASIDE: "The answer is the result (AsideResult); a client that does not declare `results` is also"
    " shown its first line with window/showMessage and the whole answer with window/logMessage.",
    REWIND: "The result is the answer (RewindResult); a refusal is also shown with window/showMessage"
    " to a client that does not declare `results`.",
    FORK: "The result is the answer (ForkResult); a refusal is also shown with window/showMessage"
    " to a client that does not declare `results`.",
    STATE: "A standard request any client can send; params may be left out, null, {} or [].",
    HISTORY: "A standard request any client can send; params may be left out, null, {} or [].",
    FLEET_RUNS: "A standard request any client can send; params may be left out, null, {} or [].",
    FLEET_SHOW: "A standard request any client can send.",
    FLEET_ANSWER: REFUSED,
    FLEET_CANCEL: REFUSED,
    FLEET_UPDATE: "Sent only to a client that declares `fleet`; any other asks flower/fleet/runs again"
    " when it wants to.",
    HISTORY_UPDATE: "Sent only to a client that declares `history`; any other asks flower/history again"
    " when it wants to (when the run's work-done progress moves, or on a timer) and compares `revision`.",
    BANNER: "window/showMessage (Info) with the same text.",
    CONTEXT: "A window/logMessage line per reading (the terminal's `上下文 80.2K/1M`), and the reading in"
    " the message of the run's work-done progress when the client supports it.",
    EVENT: "window/logMessage with the lines the terminal prints for the event (flower.cli.render);"
    " errors as Error, retries and handoffs as Warning, the rest as Info.",
    ASK: "window/showMessageRequest with the options as actions plus a skip action, to a client that"
    " declares window.showMessage; the message says how to answer in one's own words (flower.answer). A"
    " client that declares neither gets every question of its runs settled at once as unanswered (the"
    " engine's timeout_s = 0), and the log says so when the run starts.",
}

PAYLOADS = (*PAYLOADS, FlowerCapabilities)
CONSTANTS: dict[str, str] = {"EXPERIMENTAL_KEY": EXPERIMENTAL_KEY, "SETTINGS_SECTION": SETTINGS_SECTION}
