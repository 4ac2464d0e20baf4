"""flower's custom LSP protocol: the one definition of every method name and payload.

Everything the server and its clients exchange beyond standard LSP is declared here and nowhere
else. The TypeScript side is generated from this module:

    python -m flower_lsp.protocol --typescript > vscode-extension/src/protocol.ts

Payloads are dataclasses; a field with a default is optional on the wire. JSON keys are the field
names as written (snake_case), because the payloads mirror the engine's own names (``cost_usd``,
``timeout_s``). Commands take zero or one argument: an object of the command's ``*Args`` type.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

# the judge's conclusions are the engine's: one definition for the engine, the wire and TypeScript
from flower.core.events import VerdictState

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


def _doc(text: str, **kw: Any) -> Any:
    return field(metadata={"doc": text}, **kw)


# -- initialize ---------------------------------------------------------------------------------


@dataclass
class InitOptions:
    """initializationOptions the server understands; every field is optional and a bad value is
    reported and replaced by its default, never a failed initialize."""

    run_dir: str = _doc(
        "the run directory, relative to each workspace folder (the CLI's `-r`)", default="runs"
    )
    timeout_s: float | None = _doc(
        "seconds a question waits for an answer; 0 = never wait, null = forever", default=1800.0
    )
    window: int | None = _doc(
        "the model's context window for handoffs; null = inferred from the model", default=None
    )

    # -- a shared store (issue 18) --------------------------------------------------------------
    store: str | None = _doc(
        "a shared session store's URL (postgresql://...), the editor's `flower.store`; null = the "
        "server's $FLOWER_STORE, else each run directory's sessions.db. Never logged: messages show "
        "it with the password masked",
        default=None,
    )


# -- command arguments --------------------------------------------------------------------------


@dataclass
class ContinueArgs:
    """Wake the folder's last run and go on (the "Flower: Continue" behaviour)."""

    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class StartArgs:
    """Start a run with a request. On a folder that can be continued, the words are added to the
    woken run (appended to 需求.md, the goal re-derived), unless `new` archives it first."""

    ask: str = _doc("the request in one sentence; may be empty only when the folder can be continued")
    new: bool = _doc("archive lineage + 需求.md + 目标.md and start over (`flower --new`)", default=False)
    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class SayArgs:
    """Say something to the running work: interrupts the step in flight, which resumes with these
    words; between steps the words go to the inbox (and are appended to 需求.md)."""

    text: str = _doc("what the person says")
    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class StopArgs:
    """Stop the folder's run. Lineage and manifest stay consistent; `flower.continue` resumes it."""

    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class OpenDocumentArgs:
    """Ask the server to open one of the run's documents with window/showDocument."""

    which: DocumentName = _doc("brief = 需求.md, goal = 目标.md, handoff = the latest handoff document")
    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class AnswerArgs:
    """Answer a pending question (also what the verdict code actions run)."""

    id: str = _doc("the question's id, as in AskParams.id")
    text: str = _doc("the answer; an option's text or free text")
    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class CommandResult:
    """What every flower command returns. Refusals (a run already in progress, nothing to
    continue, an unwritable workspace) are `ok: false` with a message, never a protocol error."""

    ok: bool = _doc("whether the command did what was asked")
    message: str = _doc("one line for the person")
    offer: Offer | None = _doc(
        '"start" when there was nothing to continue and a new run is offered', default=None
    )
    uri: str | None = _doc("the document concerned (flower.openDocument)", default=None)


# -- flower/state -------------------------------------------------------------------------------


@dataclass
class StateParams:
    """Parameters of the flower/state request."""

    folder: str | None = _doc("URI of the workspace folder; default: the first folder", default=None)


@dataclass
class VerdictInfo:
    """One judge round's verdict."""

    state: VerdictState = _doc(
        '"achieved", "not_yet", "unreachable", or "" when no conclusion was recognised'
    )
    reason: str = _doc("the judge's reason")
    failed: list[str] = _doc("checklist items that did not pass")
    round: int = _doc("the judge round (1-based)")
    goal_path: str = _doc("absolute path of 目标.md")


@dataclass
class AskParams:
    """A question from the agent to the person (server -> client request flower/ask)."""

    folder: str = _doc("URI of the workspace folder the question comes from")
    id: str = _doc("the question's id; answer it with this id")
    question: str = _doc("the question (markdown)")
    options: list[str] = _doc("suggested answers; may be empty")
    free_text: bool = _doc("whether an answer may be typed instead of picked")
    timeout_s: float | None = _doc("seconds until the engine stops waiting; null = waits forever")


@dataclass
class AskResult:
    """The client's answer to flower/ask. Neither field = no answer (the engine's timeout applies)."""

    answer: str | None = _doc("the chosen option or the typed text", default=None)
    dismissed: bool = _doc("the person skipped the question: the agent decides by itself", default=False)


@dataclass
class StateResult:
    """What wake_state() says about the folder, plus what is running now."""

    folder: str = _doc("URI of the workspace folder")
    workspace: str = _doc("absolute path of the workspace")
    run_dir: str = _doc("absolute path of the run directory (sessions.db, manifest.json, lineage.json)")
    waking: bool = _doc("需求.md exists with its four sections: a run can be continued")
    brief: str = _doc("absolute path of 需求.md")
    goal: str = _doc("absolute path of 目标.md")
    checks: int = _doc("number of items in the goal's checklist (0 without a goal)")
    woke: int = _doc("how many times the folder's work has been woken")
    steps: dict[str, str] = _doc("step name -> session id, from the lineage")
    running: bool = _doc("whether a run is in progress")
    step: str = _doc("the current (or last) step name")
    index: int = _doc("the current step's 1-based index; 0 before the first step")
    total: int = _doc("how many steps the workflow has; 0 when unknown")
    round: int = _doc("the goal-guarded work round in progress (1-based)")
    generation: int = _doc("handoff generation of the current step (1 = no handoff yet)")
    used: int = _doc("tokens in the main thread's context after the last model turn")
    window: int = _doc("the context window assumed for handoffs")
    cost_usd: float = _doc("dollars spent by this run so far")
    near: bool = _doc("the context is past the handoff warning threshold")
    handing_off: bool = _doc("a handoff document is being written right now")
    verdict: VerdictInfo | None = _doc("the last judge verdict seen by this server for the folder")
    pending: list[AskParams] = _doc("questions waiting for an answer")


# -- notifications ------------------------------------------------------------------------------


@dataclass
class BannerParams:
    """The resume banner, e.g.
    `<- 在 ~/proj 接上上次  需求已确认 · 目标 7 条 · 干活上下文 71.4K · 第 3 次唤醒`."""

    folder: str = _doc("URI of the workspace folder")
    text: str = _doc("the banner line, ready to show")


@dataclass
class ContextParams:
    """The context meter, sent after every model turn of the main thread and at handoffs."""

    folder: str = _doc("URI of the workspace folder")
    used: int = _doc("tokens the model saw in the last turn (input + cache reads + cache writes)")
    window: int = _doc("the context window assumed for handoffs")
    warn_at: int = _doc("past this, a handoff is near")
    at: int = _doc("at this, the session writes a handoff document and a new one takes over")
    step: str = _doc("the step the turn belongs to")
    round: int = _doc("the goal-guarded work round in progress (1-based)")
    generation: int = _doc("handoff generation of the step (1 = no handoff yet)")
    cost_usd: float = _doc("dollars spent by this run so far")
    near: bool = _doc("used >= warn_at")
    handing_off: bool = _doc("a handoff document is being written right now")


@dataclass
class EventParams:
    """One line for the output log: run lifecycle, steps, retries, handoffs, verdicts, questions."""

    folder: str = _doc("URI of the workspace folder")
    kind: EventKind = _doc(
        "what happened; `run` carries payload.phase = started | finished | stopped | failed"
    )
    text: str = _doc("a readable line")
    payload: dict[str, Any] = _doc("structured details (JSON-safe copy of the engine event's payload)")


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
        "Answer a pending question by id (the verdict code actions use it).",
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
ALIASES: dict[str, Any] = {
    "DocumentName": DocumentName,
    "EventKind": EventKind,
    "VerdictState": VerdictState,
    "Offer": Offer,
}
COMMANDS: tuple[str, ...] = tuple(m.name for m in METHODS if m.kind == "command")


# -- (de)serialisation ---------------------------------------------------------------------------


class ProtocolError(ValueError):
    """A payload that does not match its declared type; the message says where and why."""


def to_json(obj: Any) -> Any:
    """A payload dataclass (or anything made of them) as plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def from_json(cls: type[Payload], value: object, where: str = "") -> Payload:
    """Build payload `cls` from a JSON value, checking every field; raises ProtocolError."""
    where = where or cls.__name__
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ProtocolError(f"{where}: expected an object, got {_json_type(value)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ProtocolError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})")
    kwargs: dict[str, Any] = {}
    for name, f in known.items():
        if name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ProtocolError(f"{where}: missing required field '{name}'")
            continue
        kwargs[name] = _check(hints[name], value[name], f"{where}.{name}")
    return cls(**kwargs)


def _check(tp: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _check(arg, value, where)
            except ProtocolError as exc:
                errors.append(str(exc))
        raise ProtocolError(
            errors[0] if len(errors) == 1 else f"{where}: got {_json_type(value)}, expected {ts_type(tp)}"
        )
    if origin is Literal:
        if value not in args:
            raise ProtocolError(f"{where}: must be one of {', '.join(repr(a) for a in args)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected an array, got {_json_type(value)}")
        return [_check(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {_json_type(value)}")
        return {k: _check(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_json(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise ProtocolError(f"{where}: expected a boolean, got {_json_type(value)}")
        return value
    if tp in (int, float):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (tp is int and not float(value).is_integer())
        ):
            raise ProtocolError(
                f"{where}: expected a{'n integer' if tp is int else ' number'}, got {_json_type(value)}"
            )
        return tp(value)
    if tp is str:
        if not isinstance(value, str):
            raise ProtocolError(f"{where}: expected a string, got {_json_type(value)}")
        return value
    raise ProtocolError(f"{where}: unsupported type {tp!r}")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def command_args(cls: type[Payload], command: str, args: tuple[object, ...]) -> Payload:
    """A command's arguments (none, or one object) as `cls`; raises ProtocolError."""
    if len(args) > 1:
        raise ProtocolError(f"{command}: expected at most one argument (an object), got {len(args)}")
    return from_json(cls, args[0] if args else None, command)


# -- TypeScript --------------------------------------------------------------------------------


def ts_type(tp: Any) -> str:
    """The TypeScript spelling of a payload field's type."""
    for alias, target in ALIASES.items():
        if tp == target:
            return alias
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return "unknown"
    if origin in (Union, types.UnionType):
        parts = [ts_type(a) for a in args if a is not type(None)]
        if type(None) in args:
            parts.append("null")
        return " | ".join(parts)
    if origin is Literal:
        return " | ".join(_ts_string(a) for a in args)
    if origin is list:
        inner = ts_type(args[0])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {ts_type(args[1])}>"
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp.__name__
    return {str: "string", bool: "boolean", int: "number", float: "number"}[tp]


def _ts_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _jsdoc(text: str, indent: str = "") -> list[str]:
    lines = " ".join(text.split()).replace("*/", "* /")
    return [f"{indent}/** {lines} */"]


def typescript() -> str:
    """The whole protocol as a TypeScript module (types + method-name constants)."""
    out = [
        "// Generated by `python -m flower_lsp.protocol --typescript` from server/flower_lsp/protocol.py.",
        "// Do not edit by hand: change protocol.py and regenerate.",
        "",
    ]
    for alias, target in ALIASES.items():
        out += [f"export type {alias} = {' | '.join(_ts_string(a) for a in typing.get_args(target))};", ""]
    for cls in PAYLOADS:
        hints = typing.get_type_hints(cls)
        out += _jsdoc(cls.__doc__ or cls.__name__)
        out.append(f"export interface {cls.__name__} {{")
        for f in dataclasses.fields(cls):
            optional = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            out += _jsdoc(f.metadata.get("doc", f.name), "  ")
            out.append(f"  {f.name}{'?' if optional else ''}: {ts_type(hints[f.name])};")
        out += ["}", ""]
    for m in METHODS:
        params = m.params.__name__ if m.params else "none"
        result = m.result.__name__ if m.result else "none"
        shape = f"params: {params}; result: {result}"
        out += _jsdoc(f"{m.kind}, {m.direction}. {m.doc} ({shape})")
        out.append(f"export const {m.const} = {_ts_string(m.name)};")
    out += [
        "",
        "/** Every command the server registers (executeCommandProvider);"
        " the client must not register them again. */",
        "export const COMMANDS = ["
        + ", ".join(m.const for m in METHODS if m.kind == "command")
        + "] as const;",
        "",
        "/** Params and result types by method name. */",
        "export interface MethodTypes {",
    ]
    for m in METHODS:
        params = m.params.__name__ if m.params else "undefined"
        result = m.result.__name__ if m.result else "void"
        out.append(f"  {_ts_string(m.name)}: {{ params: {params}; result: {result} }};")
    out += ["}", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m flower_lsp.protocol", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--typescript", action="store_true", help="print the protocol as a TypeScript module")
    args = parser.parse_args(argv)
    if not args.typescript:
        parser.print_help()
        return 2
    sys.stdout.write(typescript())
    return 0


if __name__ == "__main__":
    sys.exit(main())
