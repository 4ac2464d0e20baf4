"""Store URLs: which backend a URL means, and how it is shown without its credentials.

A shared store is named by a URL (``postgresql://user:password@host/db``). The password must
never reach a log line, an error, a manifest or anything else flower writes: everything that
shows the URL shows ``redact_url(url)``, and every message that might quote it (a driver error
echoing its connection string) goes through ``redact_text(text, url)``.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "SCHEMES",
    "StoreURLError",
    "check_store_url",
    "is_store_url",
    "redact_text",
    "redact_url",
    "secrets_in",
]

MASK = "***"
SCHEMES = ("postgresql", "postgres")
# query parameters libpq accepts that hold a secret
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


class StoreURLError(ValueError):
    """A store given by something that is not a store URL flower can open."""


def is_store_url(text: str) -> bool:
    """Whether ``text`` names a database store (as opposed to a path or nothing)."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def check_store_url(text: str) -> str:
    """The URL itself when flower can open it; StoreURLError (credentials masked) otherwise."""
    scheme, sep, _ = text.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise StoreURLError(
            f"not a store URL: {redact_url(text)!r}; expected postgresql://[user[:password]@]host[:port]/database"
        )
    try:
        parts = urlsplit(text)
        _ = parts.port  # a non-numeric port raises here
    except ValueError as exc:
        raise StoreURLError(
            f"store URL {redact_url(text)!r} is malformed: {redact_text(str(exc), text)}"
        ) from None
    return text


def secrets_in(url: str) -> list[str]:
    """The secrets a URL carries (its password, raw and percent-decoded; secret parameters)."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is not None:
        userinfo, at, _ = parts.netloc.rpartition("@")
        if at and ":" in userinfo:
            raw = userinfo.split(":", 1)[1]
            found += [raw, unquote(raw)]
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name.lower() in _SECRET_PARAMS and value:
                found += [value, quote(value, safe="")]
    else:
        # unparseable: whatever sits between the first ':' after '//' and the last '@'
        rest = url.partition("://")[2]
        userinfo = rest.rpartition("@")[0]
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    return sorted({s for s in found if s}, key=len, reverse=True)


def redact_url(url: str) -> str:
    """The URL with its password (and any secret parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url, url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() in _SECRET_PARAMS for name, _ in pairs):
            query = urlencode([(n, MASK if n.lower() in _SECRET_PARAMS else v) for n, v in pairs], safe="/*")
    return redact_text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), url)


def redact_text(text: str, url: str | None) -> str:
    """``text`` with every secret of ``url`` in it masked (a driver may echo its whole URL)."""
    if not url:
        return text
    for secret in secrets_in(url):
        text = text.replace(secret, MASK)
    return text
