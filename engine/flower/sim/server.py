"""The scripted model: an Anthropic Messages API server on 127.0.0.1 that plays a Scenario.

It runs its own event loop in a background thread so that it can serve a CLI subprocess
while the caller's loop (or a plain synchronous caller) waits on that subprocess.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
import time
import uuid
from collections.abc import Coroutine, Mapping
from typing import NotRequired, TypedDict

from aiohttp import web

from ..base.loose import items, mapping, text
from .cache import CacheCreation, CacheError, PromptCache, SimClock, prompt_tokens
from .scenario import FAULTS, USAGE_FIELDS, RequestView, Rule, Scenario, Turn

# Headers never recorded: a request log must not hold a credential, even a dummy one.
_SECRET_HEADERS = {"x-api-key", "authorization", "proxy-authorization", "cookie"}
_INPUT_FIELDS = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}


class Usage(TypedDict):
    """The usage object of an answer, as the API reports it."""

    output_tokens: int
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation: NotRequired[CacheCreation]  # absent when the turn states the input side


class Answer(TypedDict):
    """A Messages API response body."""

    id: str
    type: str
    role: str
    model: str
    content: list[dict[str, object]]
    stop_reason: str
    stop_sequence: None
    usage: Usage


class Recorded(RequestView):
    """One request the sim received, for assertions: who asked, what they were shown.

    ``reply`` says what the sim answered: "text", "tool_use:Bash", "fault:529", ...
    ``usage`` is the usage object of the answer (None when a fault answered instead) and
    ``at`` the sim clock's time when the request was served, ``wall`` the wall clock's.
    """

    def __init__(
        self, body: Mapping[str, object], *, path: str, headers: dict[str, str], actor: str, at: float
    ):
        RequestView.__init__(self, body)
        self.path = path
        self.headers = headers
        self.actor = actor
        self.reply = ""
        self.at = at
        self.usage: Usage | None = None
        self.wall = time.time()  # when it arrived on the wall clock (a limit's reset is a moment)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def tool_results(self) -> list[dict[str, object]]:
        """Every tool_result block the model was shown, oldest first."""
        return self._blocks("tool_result")

    def tool_uses(self) -> list[dict[str, object]]:
        return self._blocks("tool_use")

    def _blocks(self, kind: str) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for m in self.messages:
            blocks = (mapping(b) for b in items(m.get("content")) if isinstance(b, dict))
            out.extend(b for b in blocks if b.get("type") == kind)
        return out


class SimServer:
    """Serve a scenario on 127.0.0.1; use as a context manager or call start()/stop().

    Usage figures come from a prompt cache that behaves like the API's (see ``cache``);
    ``clock`` is the time that cache lives in: pass a shared :class:`SimClock` and advance it
    to let entries expire without waiting.
    """

    def __init__(
        self, scenario: Scenario | Mapping[str, object], *, port: int = 0, clock: SimClock | None = None
    ):
        self.scenario = Scenario.from_data(scenario)
        self.host = "127.0.0.1"  # never anything else: nothing of ours listens beyond loopback
        self.port = port
        self.clock = clock if clock is not None else SimClock()
        self.cache = PromptCache(self.clock, min_tokens=self.scenario.cache_min_tokens)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._cursor: dict[str, int] = {}
        self._repeats: dict[tuple[str, int], int] = {}
        self._rule_uses: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._away_until = 0.0
        self._tasks: set[asyncio.Task[object]] = set()
        self._gates: dict[str, asyncio.Event] = {}

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> SimServer:
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start())
            except BaseException as exc:  # surfaced to the starting thread below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="flower-sim", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            self._thread = None
            raise RuntimeError(f"flower.sim could not start: {failure[0]}") from failure[0]
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(15)
        self._thread = None
        self._loop = None

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, handler_cancellation=True, shutdown_timeout=0.5
        )
        await self._runner.setup()
        await self._bind()

    async def _bind(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await self._site.start()
        if self.port == 0:
            server = self._site._server  # the bound port is only known after start
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _cleanup(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    def go_away(self, seconds: float) -> None:
        """Refuse connections (listening socket closed) for `seconds`, then come back."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("flower.sim is not running")
        asyncio.run_coroutine_threadsafe(self._away(seconds), loop).result(10)

    async def _away(self, seconds: float) -> None:
        self._away_until = time.monotonic() + seconds
        if self._site is not None:
            await self._site.stop()
            self._site = None

        async def come_back() -> None:
            await asyncio.sleep(seconds)
            await self._bind()

        self._spawn(come_back())

    def release(self, gate: str) -> None:
        """Let every answer held at `gate` (a turn's ``hold``) go, now and from now on."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("flower.sim is not running")
        asyncio.run_coroutine_threadsafe(self._open(gate), loop).result(10)

    async def _open(self, gate: str) -> None:
        self._gate(gate).set()

    def _gate(self, name: str) -> asyncio.Event:
        return self._gates.setdefault(name, asyncio.Event())

    def _spawn(self, coro: Coroutine[object, object, object]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- recording ---------------------------------------------------------------------
    def requests_for(self, actor: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.actor == actor]

    def openings(self, actor: str) -> list[Recorded]:
        """The requests of `actor` that begin a conversation (no model turn in them yet): one per
        session, so a judge's rounds, however many tool calls each makes before its verdict."""
        return [
            r for r in self.requests_for(actor) if not any(m.get("role") == "assistant" for m in r.messages)
        ]

    def last(self, actor: str = "main") -> Recorded:
        found = self.requests_for(actor)
        if not found:
            raise AssertionError(f"flower.sim received no request from {actor!r}")
        return found[-1]

    def actors_seen(self) -> list[str]:
        with self._lock:
            return [r.actor for r in self.requests]

    # -- choosing a reply --------------------------------------------------------------
    def _pick(self, actor: str, view: RequestView) -> Turn:
        with self._lock:
            for i, rule in enumerate(self.scenario.rules):
                if rule.actor not in (None, actor) or not rule.when.matches(view):
                    continue
                used = self._rule_uses.get(i, 0)
                if rule.times is not None and used >= rule.times:
                    continue
                self._rule_uses[i] = used + 1
                return rule.reply
            script = self.scenario.scripts.get(actor, [])
            index = self._cursor.get(actor, 0)
            if index >= len(script):
                return self.scenario.default
            turn = script[index]
            served = self._repeats.get((actor, index), 0) + 1
            self._repeats[(actor, index)] = served
            if served >= turn.times:
                self._cursor[actor] = index + 1
            return turn

    def remaining(self, actor: str = "main") -> int:
        """How many scripted turns of `actor` were not played yet."""
        with self._lock:
            return len(self.scenario.scripts.get(actor, [])) - self._cursor.get(actor, 0)

    # -- HTTP ----------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if request.path == "/v1/messages/count_tokens" and request.method == "POST":
                return await self._count_tokens(request)
            if request.path == "/v1/messages":
                if request.method != "POST":
                    return _error(
                        405, "invalid_request_error", f"{request.method} is not allowed on /v1/messages"
                    )
                return await self._messages(request)
            return _error(
                404, "not_found_error", f"flower.sim serves POST /v1/messages only, not {request.path}"
            )
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _read_body(self, request: web.Request) -> dict[str, object] | web.Response:
        try:
            body = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(400, "invalid_request_error", f"malformed JSON body: {exc}")
        if not isinstance(body, dict):
            return _error(400, "invalid_request_error", "the request body must be a JSON object")
        return mapping(body)

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        body = await self._read_body(request)
        if isinstance(body, web.Response):
            return body
        return web.json_response({"input_tokens": self._estimate_input(body)})

    def _estimate_input(self, body: Mapping[str, object]) -> int:
        return prompt_tokens(body) + self.scenario.context_offset

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await self._read_body(request)
        if isinstance(body, web.Response):
            return body
        if not isinstance(body.get("messages"), list):
            return _error(400, "invalid_request_error", "messages: field required")
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in _SECRET_HEADERS}
        view = RequestView(body)
        actor = self.scenario.actor_of(view)
        turn = self._pick(actor, view)
        if turn.elapse:
            self.clock.advance(turn.elapse)
        rec = Recorded(body, path=request.path_qs, headers=headers, actor=actor, at=self.clock())
        with self._lock:
            self.requests.append(rec)
        rec.reply = _describe(turn)
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if turn.hold is not None:
            await self._gate(turn.hold).wait()
        if isinstance(turn.fault, int):
            kind, message = FAULTS[turn.fault]
            return _error(turn.fault, kind, *_limit(turn, turn.message or message))
        if turn.fault == "too_long":
            used = self._estimate_input(body)
            return _error(
                400,
                "invalid_request_error",
                turn.message or f"prompt is too long: {max(used, 200_001)} tokens > 200000 maximum",
            )
        if turn.fault == "away":
            self._spawn(self._away(turn.seconds or 5.0))
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError  # aiohttp drops the connection without a response
        streaming = bool(body.get("stream"))
        if turn.fault == "stall" and (not turn.after_events or not streaming):
            await asyncio.sleep(turn.seconds or 3600.0)
        if turn.fault in {"drop", "stream_error"} and not streaming:
            # a plain JSON request has no stream to break: the connection just dies
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError
        try:
            answer = self._compose(body, turn)
        except CacheError as exc:
            rec.reply = "error:cache_control"
            return _error(400, "invalid_request_error", str(exc))
        rec.usage = answer["usage"]
        if not streaming:
            return web.json_response(answer)
        try:
            return await self._stream(request, answer, turn)
        except ConnectionResetError:
            # the client hung up mid-answer (a person interrupted): nothing left to answer
            raise asyncio.CancelledError from None

    def _compose(self, body: Mapping[str, object], turn: Turn) -> Answer:
        blocks: list[dict[str, object]] = []
        if turn.content is not None:
            blocks = [dict(b) for b in turn.content]
        else:
            if turn.text is not None:
                blocks.append({"type": "text", "text": turn.text})
            for tool in turn.tools:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": tool.get("id") or f"toolu_sim{next(self._ids):06d}{uuid.uuid4().hex[:8]}",
                        "name": tool["name"],
                        "input": tool.get("input", {}),
                    }
                )
        if not blocks:  # a fault turn with nothing to say mid-stream still needs a body
            blocks = [{"type": "text", "text": turn.text or ""}]
        has_tool = any(b.get("type") == "tool_use" for b in blocks)
        out_text = json.dumps(blocks, ensure_ascii=False)
        cached = self.cache.serve(body)
        output = max(1, math.ceil(len(out_text) / 4))
        usage: Usage
        if _INPUT_FIELDS & set(turn.usage):
            # a scenario that states the input side gets exactly that (unstated parts are 0)
            usage = {
                "output_tokens": output,
                "input_tokens": self._estimate_input(body),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
        else:
            side = cached.as_usage()
            usage = {
                "output_tokens": output,
                "input_tokens": side["input_tokens"] + self.scenario.context_offset,
                "cache_creation_input_tokens": side["cache_creation_input_tokens"],
                "cache_read_input_tokens": side["cache_read_input_tokens"],
                "cache_creation": side["cache_creation"],
            }
        for name in USAGE_FIELDS:  # Turn.from_data lets no other name through
            if name in turn.usage:
                usage[name] = turn.usage[name]
        return {
            "id": f"msg_sim{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or "claude-sim"),
            "content": blocks,
            "stop_reason": turn.stop_reason or ("tool_use" if has_tool else "end_turn"),
            "stop_sequence": None,
            "usage": usage,
        }

    async def _stream(self, request: web.Request, message: Answer, turn: Turn) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "request-id": message["id"],
            },
        )
        await resp.prepare(request)
        sent = 0

        async def send(event: str, data: dict[str, object]) -> None:
            nonlocal sent
            if (
                turn.fault in {"drop", "stall", "stream_error"}
                and turn.after_events
                and sent == turn.after_events
            ):
                await self._break_stream(request, resp, turn)
            payload = json.dumps(data, ensure_ascii=False)
            await resp.write(f"event: {event}\ndata: {payload}\n\n".encode())
            sent += 1

        usage = message["usage"]
        head = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
        await send("message_start", {"type": "message_start", "message": head})
        for index, block in enumerate(message["content"]):
            # a scenario's raw blocks come as they were written: read, never trusted to be whole
            if block.get("type") == "text":
                await send(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                for piece in _chunks(text(block.get("text")), 3):
                    await send(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
            elif block.get("type") == "tool_use":
                start = {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": {}}
                await send(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
                raw = json.dumps(block.get("input", {}), ensure_ascii=False)
                for piece in _chunks(raw, 2):
                    await send(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
            else:
                await send(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                )
            await send("content_block_stop", {"type": "content_block_stop", "index": index})
        await send(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
        await send("message_stop", {"type": "message_stop"})
        await resp.write_eof()
        return resp

    async def _break_stream(self, request: web.Request, resp: web.StreamResponse, turn: Turn) -> None:
        if turn.fault == "stall":
            await asyncio.sleep(turn.seconds or 3600.0)
            return
        if turn.fault == "stream_error":
            kind, message = FAULTS[529]
            err = {"type": "error", "error": {"type": kind, "message": turn.message or message}}
            await resp.write(f"event: error\ndata: {json.dumps(err)}\n\n".encode())
            await resp.write_eof()
            raise asyncio.CancelledError
        # "drop": cut the TCP connection in the middle of the event stream
        if request.transport is not None:
            request.transport.close()
        raise asyncio.CancelledError


def _chunks(text: str, parts: int) -> list[str]:
    if not text:
        return [""]
    size = max(1, math.ceil(len(text) / parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _describe(turn: Turn) -> str:
    if turn.fault is not None:
        return f"fault:{turn.fault}"
    names = [f"tool_use:{t['name']}" for t in turn.tools]
    if turn.text is not None:
        names.insert(0, "text")
    return "+".join(names) or "content"


def _limit(turn: Turn, message: str) -> tuple[str, dict[str, str]]:
    """A fault's message with its reset moment filled in, and the headers that say the limit."""
    headers: dict[str, str] = {}
    if turn.retry_after is not None:
        headers["retry-after"] = f"{turn.retry_after:g}"
    if turn.resets_in is not None:
        reset = time.time() + turn.resets_in  # wall clock: a reset is a moment, not a duration
        at = math.ceil(reset)
        message = message.format(
            reset=at,
            reset_iso=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
            reset_clock=time.strftime("%H:%M:%S", time.localtime(at)),
        )
        headers["anthropic-ratelimit-unified-reset"] = str(at)
        headers["anthropic-ratelimit-unified-status"] = "rejected"
    return message, headers


def _error(status: int, kind: str, message: str, extra: dict[str, str] | None = None) -> web.Response:
    body = {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": f"req_sim{uuid.uuid4().hex[:16]}",
    }
    headers: dict[str, str] = {"request-id": str(body["request_id"])}
    if status == 429:
        headers["retry-after"] = "1"
    if status == 529:
        headers["x-should-retry"] = "true"
    headers.update(extra or {})
    return web.json_response(body, status=status, headers=headers)


__all__ = ["Recorded", "Rule", "Scenario", "SimClock", "SimServer", "Turn"]
