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
(raw blocks), ``usage`` (token counts reported to the client), ``stop_reason``, ``delay``
(seconds before answering), ``retry_after`` and ``resets_in`` (an HTTP fault's limit: its
``retry-after`` header, a reset moment the message names), ``elapse`` (seconds the sim's clock
jumps before answering: a slow tool or a long think, without waiting for real), ``hold`` (a
gate's name: the answer waits until the test calls ``SimServer.release(name)``; in-process
servers only) and ``fault`` (an injected failure, see ``FAULTS``).

Usage is computed by the sim's prompt cache (``flower.sim.cache``): ``input_tokens``,
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` as the API would report them
for the request's ``cache_control`` marks. A turn whose ``usage`` names any of those three
reports exactly what it says instead (the unnamed ones as 0, ``input_tokens`` as the whole
prompt) - the cache still sees the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


class ScenarioError(ValueError):
    """A scenario that cannot be played; the message names the offending part."""


@dataclass
class Turn:
    """One scripted reply."""

    text: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    content: list[dict[str, Any]] | None = None
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
    def from_data(cls, data: Any, where: str) -> Turn:
        if isinstance(data, str):
            return cls(text=data)
        if not isinstance(data, dict):
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
        unknown = set(data) - known
        if unknown:
            raise ScenarioError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(known)})")
        tools = list(data.get("tools") or [])
        if data.get("tool") is not None:
            tools.insert(0, data["tool"])
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise ScenarioError(f"{where}: tool #{i} needs a string 'name'")
            if not isinstance(tool.get("input", {}), dict):
                raise ScenarioError(f"{where}: tool #{i} 'input' must be a mapping")
        fault = data.get("fault")
        if isinstance(fault, str) and fault.isdigit():
            fault = int(fault)
        if fault is not None and fault not in FAULTS and fault not in NAMED_FAULTS:
            raise ScenarioError(
                f"{where}: unknown fault {fault!r}; use one of {sorted(FAULTS)} or {sorted(NAMED_FAULTS)}"
            )
        turn = cls(
            text=data.get("text"),
            tools=tools,
            content=data.get("content"),
            usage=dict(data.get("usage") or {}),
            stop_reason=data.get("stop_reason"),
            delay=float(data.get("delay", 0.0)),
            elapse=float(data.get("elapse", 0.0)),
            hold=None if data.get("hold") is None else str(data["hold"]),
            fault=fault,
            message=data.get("message"),
            seconds=float(data.get("seconds", 0.0)),
            after_events=int(data.get("after_events", 0)),
            times=int(data.get("times", 1)),
            retry_after=None if data.get("retry_after") is None else float(data["retry_after"]),
            resets_in=None if data.get("resets_in") is None else float(data["resets_in"]),
        )
        if turn.times < 1:
            raise ScenarioError(f"{where}: 'times' must be >= 1")
        if turn.elapse < 0:
            raise ScenarioError(f"{where}: 'elapse' must be >= 0 (the clock only moves forward)")
        if fault is None and turn.text is None and not turn.tools and turn.content is None:
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
    def from_data(cls, data: Any, where: str) -> Matcher:
        if isinstance(data, str):
            return cls(system=data)
        if not isinstance(data, dict):
            raise ScenarioError(f"{where}: a matcher must be a mapping or a string")
        names = set(cls.__dataclass_fields__)
        unknown = set(data) - names
        if unknown:
            raise ScenarioError(f"{where}: unknown matcher keys {sorted(unknown)} (known: {sorted(names)})")
        return cls(**{k: str(v) for k, v in data.items()})

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
    def from_data(cls, data: Any) -> Scenario:
        if isinstance(data, Scenario):
            return data
        if not isinstance(data, dict):
            raise ScenarioError("a scenario must be a mapping")
        known = {"actors", "scripts", "rules", "default", "context_offset", "cache_min_tokens"}
        unknown = set(data) - known
        if unknown:
            raise ScenarioError(f"unknown scenario keys {sorted(unknown)} (known: {sorted(known)})")
        actors = {
            str(name): Matcher.from_data(m, f"actors.{name}")
            for name, m in (data.get("actors") or {}).items()
        }
        scripts: dict[str, list[Turn]] = {}
        for actor, turns in (data.get("scripts") or {}).items():
            if not isinstance(turns, list):
                raise ScenarioError(f"scripts.{actor}: must be a list of turns")
            scripts[str(actor)] = [Turn.from_data(t, f"scripts.{actor}[{i}]") for i, t in enumerate(turns)]
        for actor in scripts:
            if actor != "main" and actor not in actors:
                raise ScenarioError(f"scripts.{actor}: no actor of that name (declare it under 'actors')")
        rules = []
        for i, rule in enumerate(data.get("rules") or []):
            where = f"rules[{i}]"
            if not isinstance(rule, dict) or "reply" not in rule:
                raise ScenarioError(f"{where}: a rule needs 'reply'")
            actor = rule.get("actor")
            if actor is not None and actor != "main" and actor not in actors:
                raise ScenarioError(f"{where}: no actor named {actor!r}")
            times = rule.get("times")
            rules.append(
                Rule(
                    actor=actor,
                    when=Matcher.from_data(rule.get("when") or {}, f"{where}.when"),
                    reply=Turn.from_data(rule["reply"], f"{where}.reply"),
                    times=None if times is None else int(times),
                )
            )
        default = Turn.from_data(data["default"], "default") if "default" in data else Turn(text="ok")
        return cls(
            actors=actors,
            scripts=scripts,
            rules=rules,
            default=default,
            context_offset=int(data.get("context_offset", 0)),
            cache_min_tokens=int(data.get("cache_min_tokens", 1024)),
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


def _block_text(block: Any) -> str:
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


def content_text(content: Any) -> str:
    """The readable text of a message's content (string or block list)."""
    if isinstance(content, list):
        return "\n".join(_block_text(b) for b in content)
    return _block_text(content)


class RequestView:
    """Read-only helpers over one Messages API request body."""

    def __init__(self, body: dict[str, Any]):
        self.body = body
        system = body.get("system", "")
        self.system_text = content_text(system) if isinstance(system, list) else str(system or "")
        self.model = str(body.get("model", ""))
        self.tool_names = [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]
        self.messages: list[dict[str, Any]] = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in self.messages if m.get("role") == "user"]
        self.first_user_text = content_text(users[0].get("content")) if users else ""
        self.last_user_text = content_text(users[-1].get("content")) if users else ""
        self.all_text = "\n".join(content_text(m.get("content")) for m in self.messages)
