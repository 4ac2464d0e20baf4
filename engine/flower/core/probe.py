"""One small Messages API request that tells whether a credential works at its endpoint.

`flower setup` asks it; the answer is a class (working, bad key, wrong address, ...), never the
key. The request is the smallest real one (a 16-token answer from the cheapest model), because a
gateway need not serve `count_tokens`, and a 404 there would blame a right address.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..base.i18n import _
from ..base.secrets import redact, remember
from .resilience import DEFAULT_BASE_URL

# the model asked when none is configured: the cheapest alias the public API serves
DEFAULT_PROBE_MODEL = "claude-haiku-4-5"
API_VERSION = "2023-06-01"

WORKING = "working"
BAD_KEY = "bad_key"  # 401
FORBIDDEN = "forbidden"  # 403
WRONG_URL = "wrong_url"  # 404 that is not about the model
WRONG_MODEL = "wrong_model"  # 404 / 400 naming the model
LIMITED = "limited"  # 429
SERVER = "server"  # 5xx, 529 overloaded
UNREACHABLE = "unreachable"  # DNS, refused, timeout, TLS
OTHER = "other"  # any other answer


@dataclass(frozen=True)
class ProbeResult:
    kind: str
    url: str  # where the request went (no credential in it)
    status: int | None = None
    detail: str = ""  # the endpoint's own error message or the connection error, short
    model: str = ""
    retry_after: str | None = None


def probe_model(environ: Mapping[str, str]) -> str:
    for key in ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_MODEL"):
        if environ.get(key):
            return environ[key]
    return DEFAULT_PROBE_MODEL


def messages_url(base_url: str) -> str:
    base = (base_url or "").strip().rstrip("/") or DEFAULT_BASE_URL
    if "://" not in base:
        base = "https://" + base
    return base + "/v1/messages"


def _headers(environ: Mapping[str, str]) -> dict[str, str]:
    headers = {"anthropic-version": API_VERSION, "content-type": "application/json"}
    for line in (environ.get("ANTHROPIC_CUSTOM_HEADERS") or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers[name.strip()] = value.strip()
    if environ.get("ANTHROPIC_API_KEY"):
        headers["x-api-key"] = environ["ANTHROPIC_API_KEY"]
    elif environ.get("ANTHROPIC_AUTH_TOKEN"):
        headers["authorization"] = "Bearer " + environ["ANTHROPIC_AUTH_TOKEN"]
    return headers


def classify(status: int, body: str, model: str) -> str:
    """The class of an HTTP answer to the probe."""
    if status < 300:
        return WORKING
    if status == 401:
        return BAD_KEY
    if status == 403:
        return FORBIDDEN
    if status == 429:
        return LIMITED
    if status >= 500:
        return SERVER
    message = _error_message(body).casefold()
    about_model = bool(model) and (model.casefold() in message or message.startswith("model"))
    if status == 404:
        return WRONG_MODEL if about_model else WRONG_URL
    if status == 400 and about_model and ("not found" in message or "not_found" in message):
        return WRONG_MODEL
    return OTHER


def _error_message(body: str) -> str:
    """The API's `error.message`, else the body's first line (an HTML 404 page, a proxy's text)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return str(data["error"].get("message") or "")
    return (body.strip().splitlines() or [""])[0]


async def probe(environ: Mapping[str, str], *, timeout: float = 15.0) -> ProbeResult:  # noqa: ASYNC109 (one bounded request, the caller has no loop of its own)
    """Send the probe with the credential and endpoint of `environ`; never raises."""
    import aiohttp

    url = messages_url(environ.get("ANTHROPIC_BASE_URL", ""))
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        remember(environ.get(key))  # an endpoint that echoes the key back must not get it shown
    model = probe_model(environ)
    body = {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "ping"}]}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.post(url, json=body, headers=_headers(environ)) as resp,
        ):
            text = await resp.text(errors="replace")
            status = resp.status
            retry_after = resp.headers.get("retry-after")
    except TimeoutError:
        return ProbeResult(
            UNREACHABLE, url, detail=_("{seconds:g} 秒内没有回答").format(seconds=timeout), model=model
        )
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        return ProbeResult(UNREACHABLE, url, detail=_short(str(exc) or type(exc).__name__), model=model)
    kind = classify(status, text, model)
    detail = "" if kind == WORKING else _short(_error_message(text))
    return ProbeResult(kind, url, status=status, detail=detail, model=model, retry_after=retry_after)


def _short(text: str, limit: int = 160) -> str:
    text = redact(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"
