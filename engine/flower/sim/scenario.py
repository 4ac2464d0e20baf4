"""Scenarios for flower.sim: what the scripted model says, to whom, and when it breaks.

A scenario is plain data (a dict, JSON or YAML), never code paths in the server:

    actors:                       # who is asking; first match wins, otherwise "main"
      judge: {system: "判定者"}    # substring of the request's system prompt
      coder: {system: "你负责实现"}
    scripts:                      # ordered replies, consumed one per request, per actor
      main:
        - tool: {name: Agent, input: {subagent_type: coder, prompt: "write it"}}
        - text: "done"
      coder:
        - tool: {name: Bash, input: {command: "echo hi > out.txt"}}
        - fault: 529              # the next request from coder fails once
        - text: "wrote out.txt"
    rules:                        # rule-based replies, checked before the scripts
      - actor: main
        when: {last_user_contains: "hook error"}
        reply: {text: "I see the denial"}
        times: 1
    default: {text: "ok"}         # when an actor's script is exhausted
    cache_min_tokens: 1024        # shortest prefix the prompt cache keeps

A reply ("turn") may carry: ``text``, ``tool`` (one tool_use), ``tools`` (several), ``content``
(raw blocks), ``usage`` (token counts reported to the client, by the API's names: see
``USAGE_FIELDS``), ``stop_reason``, ``delay`` (seconds before answering), ``retry_after`` and
``resets_in`` (an HTTP fault's limit: its ``retry-after`` header, a reset moment the message
names), ``elapse`` (seconds the sim's clock jumps before answering: a slow tool or a long
think, without waiting for real), ``hold`` (a gate's name: the answer waits until the test
calls ``SimServer.release(name)``; in-process servers only) and ``fault`` (an injected
failure, see ``FAULTS``).

Usage is computed by the sim's prompt cache (``flower.sim.cache``): ``input_tokens``,
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` as the API would report them
for the request's ``cache_control`` marks. A turn whose ``usage`` names any of those three
reports exactly what it says instead (the unnamed ones as 0, ``input_tokens`` as the whole
prompt) - the cache still sees the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, TypeVar

from ..base.loose import items, mapping

# Injected failures. Integers are HTTP statuses answered with Anthropic's error body;
# the names below are transport-level or content-level failures.
FAULTS = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}
NAMED_FAULTS = {
    "too_long",  # HTTP 400 "prompt is too long: N tokens > M maximum"
    "drop",  # start streaming, then cut the connection after `after_events` SSE events
    "stall",  # hold the request `seconds` before answering (or mid-stream with after_events)
    "stream_error",  # HTTP 200, then an SSE `error` event (overloaded) mid-stream
    "away",  # cut this connection and refuse every connection for `seconds`
}
_N = TypeVar("_N", int, float)
# The token counts of the API's usage object: what a turn's ``usage`` may state.
UsageField = Literal[
    "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
]
USAGE_FIELDS: tuple[UsageField, ...] = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


# A scenario as data, the way flower's ready-made scenarios (flower.sim.scenarios) write it.
# `Scenario.from_data` reads any value and checks it; it also takes a plain string for a turn
# (its text) or for a matcher (a substring of the system prompt).
class ToolCall(TypedDict):
    name: str
    input: NotRequired[dict[str, object]]
    id: NotRequired[str]


class TurnData(TypedDict, total=False):
    text: str
    tool: ToolCall
    tools: list[ToolCall]
    content: list[dict[str, object]]
    usage: dict[str, int]
    stop_reason: str
    delay: float
    elapse: float
    hold: str
    fault: int | str
    message: str
    seconds: float
    after_events: int
    times: int
    retry_after: float
    resets_in: float


class MatcherData(TypedDict, total=False):
    system: str
    not_system: str
    model: str
    tools_include: str
    tools_exclude: str
    first_user_contains: str
    last_user_contains: str
    messages_contain: str


class RuleData(TypedDict):
    reply: TurnData
    actor: NotRequired[str]
    when: NotRequired[MatcherData]
    times: NotRequired[int]


class ScenarioData(TypedDict, total=False):
    actors: dict[str, MatcherData]
    scripts: dict[str, list[TurnData]]
    rules: list[RuleData]
    default: TurnData
    context_offset: int
    cache_min_tokens: int


class ScenarioError(ValueError):
    """A scenario that cannot be played; the message names the offending part."""


def _number(value: object, kind: type[_N], what: str) -> _N:
    if isinstance(value, (int, float, str)):  # what int() and float() read
        try:
            return kind(value)
        except ValueError:
            pass
    raise ScenarioError(f"{what} must be {'a whole number' if kind is int else 'a number'}, got {value!r}")


def _optional(data: Mapping[str, object], key: str, where: str) -> float | None:
    value = data.get(key)
    return None if value is None else _number(value, float, f"{where}: '{key}'")


def _string(data: Mapping[str, object], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ScenarioError(f"{where}: '{key}' must be a string, got {type(value).__name__}")


def _fault(value: object, where: str) -> int | str | None:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if value is None or (isinstance(value, int) and value in FAULTS):
        return value
    if isinstance(value, str) and value in NAMED_FAULTS:
        return value
    raise ScenarioError(
        f"{where}: unknown fault {value!r}; use one of {sorted(FAULTS)} or {sorted(NAMED_FAULTS)}"
    )


def _section(data: Mapping[str, object], key: str) -> dict[str, object]:
    """A part of the scenario that maps names to entries (absent or empty: none)."""
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{key}: must be a mapping of names, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


@dataclass
class Turn:
    """One scripted reply."""

    text: str | None = None
    tools: list[dict[str, object]] = field(default_factory=list)  # each with a string "name"
    content: list[dict[str, object]] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None
    delay: float = 0.0
    elapse: float = 0.0  # sim-clock seconds that pass before the answer (no real wait)
    hold: str | None = None  # wait for SimServer.release(hold) before answering
    fault: int | str | None = None
    message: str | None = None  # error message override for a fault
    seconds: float = 0.0  # for stall / away
    after_events: int = 0  # for drop / stall / stream_error: how many SSE events go out first
    times: int = 1  # a fault (or any turn) repeated this many times before the script moves on
    # for an HTTP fault: the ``retry-after`` header in seconds (None: the status's usual one)
    retry_after: float | None = None
    # for an HTTP fault: a limit that resets this many seconds after the answer; the message may
    # name the moment as {reset} (epoch seconds), {reset_iso} (UTC) or {reset_clock} (local
    # HH:MM:SS), and the answer carries it in ``anthropic-ratelimit-unified-reset``
    resets_in: float | None = None

    @classmethod
    def from_data(cls, data: object, where: str) -> Turn:
        if isinstance(data, str):
            return cls(text=data)
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{where}: a turn must be a mapping or a string, got {type(data).__name__}")
        known = {
            "text",
            "tool",
            "tools",
            "content",
            "usage",
            "stop_reason",
            "delay",
            "elapse",
            "hold",
            "fault",
            "message",
            "seconds",
            "after_events",
            "times",
            "retry_after",
            "resets_in",
        }
        if unknown := sorted(str(k) for k in data if k not in known):
            raise ScenarioError(f"{where}: unknown keys {unknown} (known: {sorted(known)})")
        fields = mapping(data)
        listed = fields.get("tools")
        if listed and not isinstance(listed, (list, tuple)):
            raise ScenarioError(f"{where}: 'tools' must be a list")
        given = items(listed)
        if fields.get("tool") is not None:
            given.insert(0, fields["tool"])
        tools: list[dict[str, object]] = []
        for i, tool in enumerate(given):
            call = mapping(tool)
            if not isinstance(call.get("name"), str):
                raise ScenarioError(f"{where}: tool #{i} needs a string 'name'")
            if not isinstance(call.get("input", {}), dict):
                raise ScenarioError(f"{where}: tool #{i} 'input' must be a mapping")
            tools.append(call)
        content = fields.get("content")
        blocks = None
        if content is not None:
            # raw blocks go out as they are: each must be a JSON object to be a block at all
            if not isinstance(content, (list, tuple)) or not all(isinstance(b, Mapping) for b in content):
                raise ScenarioError(f"{where}: 'content' must be a list of blocks (mappings)")
            blocks = [mapping(b) for b in content]
        usage = fields.get("usage") or {}
        if not isinstance(usage, Mapping):
            raise ScenarioError(f"{where}: 'usage' must be a mapping of token counts")
        odd = sorted(str(k) for k in usage if k not in USAGE_FIELDS)
        if odd:
            raise ScenarioError(f"{where}: unknown usage keys {odd} (known: {sorted(USAGE_FIELDS)})")
        hold = fields.get("hold")
        turn = cls(
            text=_string(fields, "text", where),
            tools=tools,
            content=blocks,
            usage={str(k): _number(v, int, f"{where}: usage.{k}") for k, v in usage.items()},
            stop_reason=_string(fields, "stop_reason", where),
            delay=_number(fields.get("delay", 0.0), float, f"{where}: 'delay'"),
            elapse=_number(fields.get("elapse", 0.0), float, f"{where}: 'elapse'"),
            hold=None if hold is None else str(hold),
            fault=_fault(fields.get("fault"), where),
            message=_string(fields, "message", where),
            seconds=_number(fields.get("seconds", 0.0), float, f"{where}: 'seconds'"),
            after_events=_number(fields.get("after_events", 0), int, f"{where}: 'after_events'"),
            times=_number(fields.get("times", 1), int, f"{where}: 'times'"),
            retry_after=_optional(fields, "retry_after", where),
            resets_in=_optional(fields, "resets_in", where),
        )
        if turn.times < 1:
            raise ScenarioError(f"{where}: 'times' must be >= 1")
        if turn.elapse < 0:
            raise ScenarioError(f"{where}: 'elapse' must be >= 0 (the clock only moves forward)")
        if turn.fault is None and turn.text is None and not turn.tools and turn.content is None:
            raise ScenarioError(f"{where}: a turn needs text, tool(s), content or a fault")
        return turn


@dataclass
class Matcher:
    """Conditions on a request; every given condition must hold."""

    system: str | None = None  # substring of the system prompt
    not_system: str | None = None
    model: str | None = None  # substring of the requested model
    tools_include: str | None = None  # a tool of that name is offered
    tools_exclude: str | None = None
    first_user_contains: str | None = None
    last_user_contains: str | None = None  # latest user message, tool results included
    messages_contain: str | None = None  # anywhere in the conversation

    @classmethod
    def from_data(cls, data: object, where: str) -> Matcher:
        if isinstance(data, str):
            return cls(system=data)
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{where}: a matcher must be a mapping or a string")
        names = set(cls.__dataclass_fields__)
        if unknown := sorted(str(k) for k in data if k not in names):
            raise ScenarioError(f"{where}: unknown matcher keys {unknown} (known: {sorted(names)})")
        return cls(**{k: str(v) for k, v in mapping(data).items()})

    def matches(self, request: RequestView) -> bool:
        checks: list[tuple[str | None, Callable[[str], bool]]] = [
            (self.system, lambda s: s in request.system_text),
            (self.not_system, lambda s: s not in request.system_text),
            (self.model, lambda s: s in request.model),
            (self.tools_include, lambda s: s in request.tool_names),
            (self.tools_exclude, lambda s: s not in request.tool_names),
            (self.first_user_contains, lambda s: s in request.first_user_text),
            (self.last_user_contains, lambda s: s in request.last_user_text),
            (self.messages_contain, lambda s: s in request.all_text),
        ]
        return all(test(value) for value, test in checks if value is not None)


@dataclass
class Rule:
    actor: str | None
    when: Matcher
    reply: Turn
    times: int | None  # None = unlimited


@dataclass
class Scenario:
    actors: dict[str, Matcher] = field(default_factory=dict)
    scripts: dict[str, list[Turn]] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    default: Turn = field(default_factory=lambda: Turn(text="ok"))
    context_offset: int = 0  # added to every computed input_tokens (simulate a big context)
    cache_min_tokens: int = 1024  # prefixes shorter than this are never cached (as in the API)

    @classmethod
    def from_data(cls, data: object) -> Scenario:
        if isinstance(data, Scenario):
            return data
        if not isinstance(data, Mapping):
            raise ScenarioError("a scenario must be a mapping")
        known = {"actors", "scripts", "rules", "default", "context_offset", "cache_min_tokens"}
        if unknown := sorted(str(k) for k in data if k not in known):
            raise ScenarioError(f"unknown scenario keys {unknown} (known: {sorted(known)})")
        fields = mapping(data)
        actors = {
            str(name): Matcher.from_data(m, f"actors.{name}")
            for name, m in _section(fields, "actors").items()
        }
        scripts: dict[str, list[Turn]] = {}
        for actor, turns in _section(fields, "scripts").items():
            if not isinstance(turns, list):
                raise ScenarioError(f"scripts.{actor}: must be a list of turns")
            scripts[str(actor)] = [Turn.from_data(t, f"scripts.{actor}[{i}]") for i, t in enumerate(turns)]
        for actor in scripts:
            if actor != "main" and actor not in actors:
                raise ScenarioError(f"scripts.{actor}: no actor of that name (declare it under 'actors')")
        listed = fields.get("rules")
        if listed and not isinstance(listed, (list, tuple)):
            raise ScenarioError("rules: must be a list of rules")
        rules = []
        for i, given in enumerate(items(listed)):
            where = f"rules[{i}]"
            rule = mapping(given)
            if "reply" not in rule:
                raise ScenarioError(f"{where}: a rule needs 'reply'")
            who = rule.get("actor")
            if who is not None and not isinstance(who, str):
                raise ScenarioError(f"{where}: 'actor' must be a string")
            if who is not None and who != "main" and who not in actors:
                raise ScenarioError(f"{where}: no actor named {who!r}")
            times = rule.get("times")
            rules.append(
                Rule(
                    actor=who,
                    when=Matcher.from_data(rule.get("when") or {}, f"{where}.when"),
                    reply=Turn.from_data(rule["reply"], f"{where}.reply"),
                    times=None if times is None else _number(times, int, f"{where}: 'times'"),
                )
            )
        default = Turn.from_data(fields["default"], "default") if "default" in fields else Turn(text="ok")
        return cls(
            actors=actors,
            scripts=scripts,
            rules=rules,
            default=default,
            context_offset=_number(fields.get("context_offset", 0), int, "'context_offset'"),
            cache_min_tokens=_number(fields.get("cache_min_tokens", 1024), int, "'cache_min_tokens'"),
        )

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        """Read a scenario from a .json, .yaml or .yml file."""
        p = Path(path)
        try:
            raw = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"cannot read scenario {p}: {exc}") from exc
        try:
            if p.suffix.lower() in {".yaml", ".yml"}:
                import yaml  # type: ignore[import-untyped,unused-ignore]

                data = yaml.safe_load(raw)
            else:
                data = json.loads(raw)
        except Exception as exc:  # yaml and json raise different types; both mean "malformed"
            raise ScenarioError(f"malformed scenario {p}: {exc}") from exc
        return cls.from_data(data)

    def actor_of(self, request: RequestView) -> str:
        for name, matcher in self.actors.items():
            if matcher.matches(request):
                return name
        return "main"


def _block_text(block: object) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "\n".join(_block_text(b) for b in content)
        return str(content or "")
    if kind == "tool_use":
        return json.dumps(block.get("input", {}), ensure_ascii=False)
    return ""


def content_text(content: object) -> str:
    """The readable text of a message's content (string or block list)."""
    if isinstance(content, list):
        return "\n".join(_block_text(b) for b in content)
    return _block_text(content)


class RequestView:
    """Read-only helpers over one Messages API request body (parsed JSON, any shape)."""

    def __init__(self, body: Mapping[str, object]):
        self.body = body
        system = body.get("system", "")
        self.system_text = content_text(system) if isinstance(system, list) else str(system or "")
        self.model = str(body.get("model", ""))
        self.tool_names = [str(t.get("name", "")) for t in items(body.get("tools")) if isinstance(t, dict)]
        given = items(body.get("messages"))
        self.messages: list[dict[str, object]] = [mapping(m) for m in given if isinstance(m, dict)]
        users = [m for m in self.messages if m.get("role") == "user"]
        self.first_user_text = content_text(users[0].get("content")) if users else ""
        self.last_user_text = content_text(users[-1].get("content")) if users else ""
        self.all_text = "\n".join(content_text(m.get("content")) for m in self.messages)
