"""Network resilience: classify failures, back off, and hang on until the API is reachable again.

Probing is DNS + one TCP handshake only: no HTTP, no credentials, nothing billed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..base.i18n import N_, _

DEFAULT_BASE_URL = "https://api.anthropic.com"

RESUME_PROMPT = "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"


def _numbers(*codes: str) -> list[re.Pattern[str]]:
    # Whole tokens only: "400" must not match "4000", "1.400" or "400ms".
    return [re.compile(rf"(?<![\w.]){c}(?!\w)") for c in codes]


def _codes(*names: str) -> list[re.Pattern[str]]:
    return [re.compile(rf"\b{n}\b", re.IGNORECASE) for n in names]


def _phrases(*texts: str) -> list[re.Pattern[str]]:
    return [re.compile(re.escape(t), re.IGNORECASE) for t in texts]


_FATAL: list[re.Pattern[str]] = [
    *_numbers("400", "401", "403", "404"),
    *_phrases(
        "invalid api key",
        "authentication",
        "unauthorized",
        "permission denied",
        "invalid_request",
        "credit balance",
        "quota exceeded",
        "budget",
        "max_turns",
        "CLINotFound",
    ),
    # the same request, or the same line from the CLI, fails the same way every time: a retry
    # (even in a fresh session, which resumes the same transcript) meets it again
    *_numbers("413"),
    *_phrases(
        "request_too_large",
        "request too large",
        "message too big",
        "exceeded maximum buffer size",
        "Failed to decode JSON",
        "JSONDecodeError",
        "MessageParseError",
        "Failed to parse message",
    ),
]

_TRANSIENT: list[re.Pattern[str]] = [
    *_codes(
        "ENOTFOUND",
        "EAI_AGAIN",
        "ECONNRESET",
        "ECONNREFUSED",
        "ETIMEDOUT",
        "EPIPE",
        "EHOSTUNREACH",
        "ENETDOWN",
    ),
    *_numbers("429", "500", "502", "503", "504", "529"),
    *_phrases(
        "socket hang up",
        "fetch failed",
        "network error",
        "Connection error",
        "Can't reach the API server",
        "overloaded",
        "too many requests",
        "timeout",
        "timed out",
        "temporarily unavailable",
        "service unavailable",
        "internal server error",
    ),
    # The SDK spells the same condition "rate_limit"; accept any separator.
    re.compile(r"rate[ _-]limit", re.IGNORECASE),
]


def classify(text: str | None) -> str:
    """Sort an error text into "transient" (wait and retry), "fatal" (stop) or "unknown".

    "fatal" is every failure that would repeat identically: a refused key or request, and a
    message the SDK cannot take (too big for its buffer, not JSON) - never a reason to wait."""
    if not text or not text.strip():
        return "unknown"
    text = text.replace("\u2019", "'")
    # Fatal first: auth failures often mention "connection", which would otherwise wait forever.
    if any(p.search(text) for p in _FATAL):
        return "fatal"
    if any(p.search(text) for p in _TRANSIENT):
        return "transient"
    return "unknown"


_FIXES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"(?<![\w.])401(?!\w)|invalid.{0,8}(api.?key|token)|authentication|unauthorized", re.I),
        N_("凭证被拒:跑 `flower setup` 重配 key(或网关 token),再跑一次刚才的命令 —— 同一目录会接着上次"),
    ),
    (
        re.compile(r"(?<![\w.])403(?!\w)|permission", re.I),
        N_("这个 key 没有权限用它要的模型或资源:换一个有权限的 key(`flower setup`)或换模型(ANTHROPIC_MODEL)"),
    ),
    (
        re.compile(r"message too big|exceeded maximum buffer size", re.I),
        N_(
            "Claude Code 发来的一条消息超过了 flower 的上限(FLOWER_MAX_MESSAGE_MB),"
            "重试也会一样:让 agent 把大结果写进文件、回复里只写路径,或调高 FLOWER_MAX_MESSAGE_MB "
            "再跑 —— 同一目录会接着上次"
        ),
    ),
    (
        re.compile(r"(?<![\w.])413(?!\w)|request.too.large", re.I),
        N_(
            "这次请求太大,模型的服务拒收了,重试也会一样:"
            "把大文件或大输出留在磁盘上、让 agent 按需读取,再跑 —— 同一目录会接着上次"
        ),
    ),
    (
        re.compile(r"credit balance|quota|billing|payment", re.I),
        N_("账户额度或账单有问题:充值或提高额度后再跑 —— 同一目录会接着上次"),
    ),
]


def what_to_fix(text: str | None) -> str:
    """For a fatal error: what a person has to change before running again (one line)."""
    for pattern, fix in _FIXES:
        if text and pattern.search(text):
            return _(fix)
    return _("这个错误再试也是一样:按上面的报错改好配置再跑 —— 同一目录会接着上次")


def endpoint() -> tuple[str, int]:
    """Host and port to probe: the configured gateway if any, else the public API."""
    url = (os.environ.get("ANTHROPIC_BASE_URL") or "").strip() or DEFAULT_BASE_URL
    if "://" not in url:
        url = "https://" + url
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    default_port = 80 if scheme == "http" else 443
    host = parts.hostname or urlsplit(DEFAULT_BASE_URL).hostname or "api.anthropic.com"
    try:
        port = parts.port or default_port
    except ValueError:  # malformed port in the URL
        port = default_port
    return host, port


async def _handshake(host: str, port: int) -> bool:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    for family, type_, proto, _canon, addr in infos:
        sock = socket.socket(family, type_, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, addr)
            return True
        except OSError:
            continue  # e.g. IPv6 unroutable here; try the next address
        finally:
            sock.close()
    return False


async def reachable(host: str, port: int, timeout: float = 5.0) -> bool:  # noqa: ASYNC109 (the reference fixes this signature)
    """DNS lookup plus a TCP handshake. Any exception counts as unreachable."""
    try:
        async with asyncio.timeout(timeout):  # not wait_for: on 3.11 it can swallow a stop
            return await _handshake(host, port)
    except Exception:
        return False


@dataclass
class Resilience:
    """Retry policy for one step: what to retry, how long to back off, how long to wait offline."""

    enabled: bool = True
    max_attempts: int = 6
    base_delay: float = 4.0
    max_delay: float = 120.0
    probe_timeout: float = 5.0
    probe_interval: float = 15.0
    max_offline_wait: float = 3600.0
    retry_unknown: bool = True
    resume_prompt: str = RESUME_PROMPT

    def delay_for(self, attempt: int) -> float:
        base = min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)
        return base * (0.75 + random.random() * 0.5)

    def should_retry(self, kind: str) -> bool:
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)

    async def wait_online(self, notify: Callable[[str], None] | None = None) -> bool:
        """Block until the endpoint answers a TCP handshake; False once max_offline_wait is spent."""
        host, port = endpoint()
        deadline = time.monotonic() + self.max_offline_wait
        started = time.monotonic()
        announced = False
        while True:
            if await reachable(host, port, self.probe_timeout):
                if announced:
                    waited = time.monotonic() - started
                    _tell(
                        notify,
                        _("网络已恢复({host}:{port}),等了 {waited:.0f} 秒,继续").format(
                            host=host, port=port, waited=waited
                        ),
                    )
                return True
            if not announced:
                _tell(
                    notify,
                    _(
                        "连不上 {host}:{port},挂起等待网络恢复"
                        "(每 {probe_interval:g} 秒探测一次,最多等 {max_offline_wait:g} 秒)"
                    ).format(
                        host=host,
                        port=port,
                        probe_interval=self.probe_interval,
                        max_offline_wait=self.max_offline_wait,
                    ),
                )
                announced = True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(self.probe_interval, remaining))


def _tell(notify: Callable[[str], None] | None, text: str) -> None:
    if notify is None:
        return
    with contextlib.suppress(Exception):  # a broken UI callback must not abort the wait
        notify(text)
