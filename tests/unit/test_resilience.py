from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import Iterator

import pytest

from flower.core.resilience import Resilience, classify, endpoint, reachable

# -- classify --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Error code: 400 - bad request",
        "HTTP 401",
        "403 Forbidden",
        "status=404",
        "Invalid API key · Please run /login",
        "authentication_failed",
        "Unauthorized",
        "EACCES: permission denied, open '/x'",
        "invalid_request_error: messages: text content blocks must be non-empty",
        "Your credit balance is too low to access the Anthropic API",
        "Quota exceeded for this month",
        "error_max_budget_usd",
        "error_max_turns",
        "CLINotFoundError: Claude Code not found",
        # failures that repeat identically: a retry meets the same line or request again
        "Failed to decode JSON: JSON message exceeded maximum buffer size of 1048576 bytes...",
        "message too big: a message from Claude Code was longer than 32 MiB (FLOWER_MAX_MESSAGE_MB)",
        'CLIJSONDecodeError: Failed to decode JSON: {"type": "assis...',
        "MessageParseError: Unknown message type",
        "API Error: 413 request_too_large",
    ],
)
def test_fatal_keywords(text: str) -> None:
    assert classify(text) == "fatal"


@pytest.mark.parametrize(
    "text",
    [
        "getaddrinfo ENOTFOUND api.anthropic.com",
        "getaddrinfo EAI_AGAIN api.anthropic.com",
        "read ECONNRESET",
        "connect ECONNREFUSED 127.0.0.1:443",
        "connect ETIMEDOUT 1.2.3.4:443",
        "write EPIPE",
        "connect EHOSTUNREACH",
        "ENETDOWN",
        "socket hang up",
        "TypeError: fetch failed",
        "Network error while streaming",
        "Connection error.",
        "API Error: Can't reach the API server",
        "API Error: Can\u2019t reach the API server",
        "429 Too Many Requests",
        "500",
        "Bad gateway (502)",
        "HTTP 503",
        "504 Gateway Timeout",
        "API Error: 529",
        "Overloaded",
        "rate limit reached",
        "rate_limit",
        "too many requests",
        "request timeout",
        "the request timed out",
        "resource temporarily unavailable",
        "Service Unavailable",
        "Internal Server Error",
    ],
)
def test_transient_keywords(text: str) -> None:
    assert classify(text) == "transient"


def test_fatal_wins_over_transient() -> None:
    # Auth failures often mention the connection; checking transient first would wait forever.
    assert classify("401 Unauthorized: connection error while authenticating") == "fatal"
    assert classify("Connection error: 403") == "fatal"
    assert classify("timed out, then quota exceeded") == "fatal"


@pytest.mark.parametrize("text", [None, "", "   ", "something odd happened", "KeyError: 'foo'"])
def test_unknown(text: str | None) -> None:
    assert classify(text) == "unknown"


@pytest.mark.parametrize("text", ["took 4000 ms", "id 14012", "version 1.400", "port 5030", "line 5290"])
def test_status_codes_only_match_as_whole_tokens(text: str) -> None:
    assert classify(text) == "unknown"


def test_case_does_not_matter() -> None:
    assert classify("INVALID API KEY") == "fatal"
    assert classify("SOCKET HANG UP") == "transient"


# -- backoff ---------------------------------------------------------------------------------


def test_defaults() -> None:
    r = Resilience()
    assert (r.enabled, r.max_attempts, r.base_delay, r.max_delay) == (True, 6, 4.0, 120.0)
    assert (r.probe_timeout, r.probe_interval, r.max_offline_wait, r.retry_unknown) == (
        5.0,
        15.0,
        3600.0,
        True,
    )
    assert (
        r.resume_prompt
        == "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
    )


@pytest.mark.parametrize("attempt,base", [(1, 4.0), (2, 8.0), (3, 16.0), (5, 64.0), (6, 120.0), (20, 120.0)])
def test_delay_stays_within_jitter_bounds(attempt: int, base: float) -> None:
    r = Resilience()
    delays = [r.delay_for(attempt) for _ in range(400)]
    assert all(base * 0.75 <= d <= base * 1.25 for d in delays)
    # Jitter is real: the spread covers most of the +-25% band.
    assert max(delays) - min(delays) > base * 0.35


def test_delay_matches_formula_for_a_given_random_draw() -> None:
    r = Resilience(base_delay=2.0, max_delay=10.0)
    random.seed(7)
    expected = min(2.0 * 2**2, 10.0) * (0.75 + random.random() * 0.5)
    random.seed(7)
    assert r.delay_for(3) == pytest.approx(expected)


def test_should_retry() -> None:
    assert Resilience().should_retry("transient")
    assert Resilience().should_retry("unknown")
    assert not Resilience(retry_unknown=False).should_retry("unknown")
    assert not Resilience().should_retry("fatal")


# -- endpoint --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,expected",
    [
        (None, ("api.anthropic.com", 443)),
        ("", ("api.anthropic.com", 443)),
        ("https://gateway.example.com", ("gateway.example.com", 443)),
        ("http://gateway.example.com/v1", ("gateway.example.com", 80)),
        ("https://gateway.example.com:8443/anthropic", ("gateway.example.com", 8443)),
        ("http://127.0.0.1:9000", ("127.0.0.1", 9000)),
        ("http://[::1]:9000", ("::1", 9000)),
        ("gateway.example.com:7000", ("gateway.example.com", 7000)),
    ],
)
def test_endpoint_follows_base_url(
    monkeypatch: pytest.MonkeyPatch, url: str | None, expected: tuple[str, int]
) -> None:
    if url is None:
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    assert endpoint() == expected


# -- probing against real sockets -----------------------------------------------------------


@pytest.fixture
def closed_port() -> Iterator[int]:
    # Bound but not listening: connecting is refused, and nobody else can grab the port meanwhile.
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    yield s.getsockname()[1]
    s.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_reachable_true_for_a_listener() -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        assert await reachable("127.0.0.1", port, timeout=2.0) is True
        assert await reachable("localhost", port, timeout=2.0) is True
    finally:
        server.close()
        await server.wait_closed()


async def test_reachable_sends_no_bytes() -> None:
    received: list[bytes] = []
    done = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read())
        writer.close()
        done.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        assert await reachable("127.0.0.1", port)
        await asyncio.wait_for(done.wait(), 2.0)
        assert received == [b""]
    finally:
        server.close()
        await server.wait_closed()


async def test_reachable_false_for_closed_port(closed_port: int) -> None:
    assert await reachable("127.0.0.1", closed_port, timeout=2.0) is False


async def test_reachable_false_for_bad_port() -> None:
    assert await reachable("127.0.0.1", 70000, timeout=1.0) is False


async def test_wait_online_returns_immediately_when_online(monkeypatch: pytest.MonkeyPatch) -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    notes: list[str] = []
    try:
        assert await Resilience(probe_interval=0.05, max_offline_wait=1.0).wait_online(notes.append)
    finally:
        server.close()
        await server.wait_closed()
    assert notes == []


async def test_wait_online_waits_until_listener_appears(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _free_port()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    notes: list[str] = []
    servers: list[asyncio.Server] = []

    async def come_online() -> None:
        await asyncio.sleep(0.4)
        servers.append(await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", port))

    starter = asyncio.create_task(come_online())
    t0 = time.monotonic()
    try:
        ok = await Resilience(probe_interval=0.05, probe_timeout=0.5, max_offline_wait=10.0).wait_online(
            notes.append
        )
    finally:
        await starter
        for s in servers:
            s.close()
            await s.wait_closed()
    assert ok is True
    assert 0.35 <= time.monotonic() - t0 < 5.0
    # Exactly two notices: once when it went dark, once when it came back.
    assert len(notes) == 2
    assert f"127.0.0.1:{port}" in notes[0]


async def test_wait_online_gives_up_after_max_offline_wait(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port}")
    notes: list[str] = []
    t0 = time.monotonic()
    ok = await Resilience(probe_interval=0.05, probe_timeout=0.2, max_offline_wait=0.3).wait_online(
        notes.append
    )
    elapsed = time.monotonic() - t0
    assert ok is False
    assert 0.3 <= elapsed < 3.0
    assert len(notes) == 1  # announced going offline, never announced a recovery


async def test_wait_online_survives_a_raising_notify(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port}")

    def boom(_: str) -> None:
        raise RuntimeError("ui broke")

    assert await Resilience(probe_interval=0.05, max_offline_wait=0.1).wait_online(boom) is False


def test_a_message_over_the_sdks_buffer_is_named_with_the_bound_and_what_to_do() -> None:
    from flower.core.resilience import what_to_fix
    from flower.core.sizes import LIMIT_VAR, over_limit, too_big

    sdk = "Failed to decode JSON: JSON message exceeded maximum buffer size of 33554432 bytes..."
    limit = over_limit(sdk)
    assert limit == 32 * 1024 * 1024
    line = too_big(limit)
    assert "32 MiB" in line and LIMIT_VAR in line and classify(line) == "fatal"
    assert LIMIT_VAR in what_to_fix(line) and "\n" not in what_to_fix(line)


def test_the_message_bound_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from flower import AgentSpec, build_options
    from flower.core.sizes import DEFAULT_MB, LIMIT_VAR, message_limit

    monkeypatch.delenv(LIMIT_VAR, raising=False)
    assert build_options(AgentSpec(name="a", instructions="x")).max_buffer_size == DEFAULT_MB * 1024 * 1024
    for raw, mb in [
        ("64", 64),
        ("0.5", 1),
        ("nonsense", DEFAULT_MB),
        ("-3", DEFAULT_MB),
        ("inf", DEFAULT_MB),
    ]:
        monkeypatch.setenv(LIMIT_VAR, raw)
        assert message_limit() == int(mb * 1024 * 1024), raw
