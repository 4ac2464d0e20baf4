"""Keep credentials out of everything flower writes.

One function decides what a credential looks like, `redact`, and every place where flower writes
something of its own passes its text through it (or through `redact_value`, which walks dicts,
lists and dataclasses): the session store's append, both spill paths, every event handed to a
front end, the manifest and the documents (`files.atomic_write`), the question log, the CLI's
captured stderr, the language server's notifications and its log file (`RedactingFilter`).

It masks two things:
- the values of the credentials flower knows: the variables in `CREDENTIAL_ENV` and every
  variable named like a secret (`is_secret_name`), the header values of
  `ANTHROPIC_CUSTOM_HEADERS` (a gateway's own token), and any value handed to `remember` (the
  secrets of a workspace `.env`, which flower read but did not put into the environment);
- common secret shapes (`SHAPES`): provider keys and tokens, JWTs, private key blocks, bearer
  credentials, passwords in URLs, and `NAME=value` assignments whose name says it holds a secret
  (what `env`, `printenv` of everything and `cat .env` print).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar, overload

MASK = "[redacted]"

# Home-relative credential stores, which sandboxed commands cannot read (core/sandbox.py).
CREDENTIAL_PATHS: tuple[str, ...] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".claude",
    ".claude.json",
)

# Variables whose whole value is a credential: the model's key, a gateway's token, the OAuth
# token, and the cloud providers' secrets the CLI can use instead.
CREDENTIAL_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_REFRESH_TOKEN",
    "ANTHROPIC_FOUNDRY_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
# "Name: value" lines the CLI adds to every request: where a gateway takes its own token.
HEADER_ENV = "ANTHROPIC_CUSTOM_HEADERS"

# Shorter values would mask ordinary words (a dummy "sk" key, "test").
MIN_SECRET = 8

_T = TypeVar("_T")

# A secret-holding name: one of these words as a whole `_`-separated part (GITHUB_TOKEN,
# AWS_SECRET_ACCESS_KEY, DB_PASSWORD), never inside a word (KEYBOARD, PASSENV).
_SECRET_WORDS = (
    r"(?:API_?KEY|KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|PAT)"
)
# git's GIT_CONFIG_KEY_<n> names a configuration key, not a secret (its value is the key's name)
_SECRET_NAME = rf"(?!GIT_CONFIG_KEY_\d+\b)(?:[A-Z0-9]+_)*{_SECRET_WORDS}(?:_[A-Z0-9]+)*"


def _keep_prefix(match: re.Match[str]) -> str:
    # every such pattern has three groups: what stays before, the secret, what stays after
    return f"{match.group(1)}{MASK}{match.group(3)}"


def _whole(match: re.Match[str]) -> str:
    return MASK


@dataclass(frozen=True)
class Shape:
    """A secret's shape. The pattern is only tried when the text holds one of `hints` (and
    `needs`): a cheap substring test that spares most text every regular expression."""

    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    hints: tuple[str, ...]
    needs: str = ""
    fold: bool = False  # hints are lower case and looked for in the lower-cased text


# The shapes of secrets that flower masks wherever they appear.
SHAPES: tuple[Shape, ...] = (
    # a private key, whole or cut off by a truncated output
    Shape(
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
            re.S,
        ),
        _whole,
        ("PRIVATE KEY-----",),
    ),
    # Anthropic keys and OAuth tokens (sk-ant-api.., sk-ant-oat.., sk-ant-ort..)
    Shape(re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), _whole, ("sk-ant-",)),
    # other providers' keys and tokens, by their documented prefixes
    Shape(
        re.compile(
            r"\b(?:sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"
            r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
            r"|glpat-[A-Za-z0-9_\-]{20,}"
            r"|xox[abposr]-[A-Za-z0-9\-]{10,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
            r"|AIza[0-9A-Za-z_\-]{35}"
            r"|[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"
            r"|npm_[A-Za-z0-9]{36}"
            r"|pypi-[A-Za-z0-9_\-]{50,}"
            r"|hf_[A-Za-z0-9]{30,}"
            r"|hv[sbr]\.[A-Za-z0-9_\-]{20,})"
        ),
        _whole,
        (
            "sk-",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "glpat-",
            "xox",
            "AKIA",
            "ASIA",
            "AIza",
            "k_live_",
            "k_test_",
            "npm_",
            "pypi-",
            "hf_",
            "hvs.",
            "hvb.",
            "hvr.",
        ),
    ),
    # JSON web tokens
    Shape(
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), _whole, ("eyJ",)
    ),
    # "Bearer <token>", "Basic <base64>" (the scheme stays readable)
    Shape(
        re.compile(r"(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/\-]{16,}=*)()"),
        _keep_prefix,
        ("bearer", "basic"),
        fold=True,
    ),
    # x-api-key: ..., "authorization": "..."
    Shape(
        re.compile(
            r"(?i)(\b(?:x-api-key|api-key|proxy-authorization|authorization)[\"']?\s*[:=]\s*[\"']?)"
            r"(?!bearer\b|basic\b)([^\s\"',;]{8,})()"
        ),
        _keep_prefix,
        ("api-key", "authorization"),
        fold=True,
    ),
    # scheme://user:password@host
    Shape(
        re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)([^\s@/]{3,})(@)"), _keep_prefix, ("://",), "@"
    ),
    # NAME=value for a secret-holding NAME (env, printenv, a .env file, docker's Env lists)
    Shape(
        re.compile(rf"((?<![A-Za-z0-9_]){_SECRET_NAME}=[\"']?)(?!\$)([^\s\"']{{4,}})()"),
        _keep_prefix,
        ("KEY", "TOKEN", "SECRET", "PASSW", "PASSPHRASE", "CREDENTIAL", "PAT=", "PAT_"),
        "=",
    ),
    # a netrc entry: `machine HOST login USER password VALUE` (also .netrc's `default`)
    Shape(
        re.compile(r"(?i)(\b(?:machine\s+\S+|default)(?:\s+(?:login|account)\s+\S+)*\s+password\s+)(\S+)()"),
        _keep_prefix,
        ("password",),
        fold=True,
    ),
    # a secret-named key given a literal in a config or source file, in any case and with any of
    # `=`, `:`, `=>`, `:=`: `api_key: "..."`, `"client_secret": "..."`, `aws_secret_access_key =
    # ...`; masked when quoted, or when it looks random enough to be a key (`_looks_random`), so
    # code such as `password: str` or `token = request.args["token"]` is left alone
    Shape(
        re.compile(
            # from the secret word on: what precedes it in the name stays as it is anyway
            r"(?i)((?:api[_\-]?key|secret|token|passw(?:or)?d|passphrase|credentials?|private[_\-]?key"
            r"|access[_\-]?key|auth[_\-]?key|key[_\-]?data)"
            r"[A-Za-z0-9_.\-]*[\"']?\s*(?:=>|:=|=|:)\s*)([\"'][^\s\"']{6,}[\"']|[^\s\"',;]{16,})()"
        ),
        lambda m: _keep_prefix(m) if _literal_secret(m.group(2)) else m.group(0),
        ("key", "secret", "token", "passw", "passphrase", "credential"),
        fold=True,
    ),
    # a docker config's `"auth": "<base64 of user:password>"`
    Shape(re.compile(r'("auth"\s*:\s*")([A-Za-z0-9+/]{12,}={0,2})(")'), _keep_prefix, ('"auth"',)),
    # a .pgpass line: host:port:database:user:password
    Shape(
        re.compile(r"(?m)^([^:\s#]+:(?:\d+|\*):[^:\s]+:[^:\s]+:)([^\s]{4,})()$"),
        _keep_prefix,
        (":",),
    ),
)


def _literal_secret(value: str) -> bool:
    """A quoted literal that is no reference, or an unquoted value that looks like a key."""
    if value[0] in "\"'":
        inner = value[1:-1]
        return inner[0] not in "$%{<" and not inner.startswith(("http://", "https://", "/"))
    return _looks_random(value)


def _looks_random(value: str) -> bool:
    """Long, and mixing at least two of lower case, upper case and digits with a digit among
    them (keys, tokens, generated passwords), or a long hexadecimal string; not a path or a call."""
    if value[0] in "$%{</.(" or "(" in value or "://" in value:
        return False
    classes = sum(any(test(c) for c in value) for test in (str.islower, str.isupper, str.isdigit))
    hexadecimal = len(value) >= 32 and all(c in "0123456789abcdefABCDEF" for c in value)
    return hexadecimal or (classes >= 2 and any(c.isdigit() for c in value))


_remembered: set[str] = set()
_remembered_lock = threading.Lock()


def remember(value: str | None) -> None:
    """Mask `value` from now on in this process: a credential flower read outside the environment."""
    if value and len(value) >= MIN_SECRET:
        with _remembered_lock:
            _remembered.add(value)


_NAME = re.compile(_SECRET_NAME)


def is_secret_name(name: str) -> bool:
    """A variable whose name says it holds a secret: GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY."""
    return _NAME.fullmatch(name) is not None


def known_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The credential values flower knows now, longest first (a key containing another is masked whole):
    its own credential variables, every variable of the environment named like a secret, a
    gateway's header values, and what `remember` was given."""
    env = os.environ if environ is None else environ
    with _remembered_lock:
        remembered = tuple(sorted(_remembered))
    key = (tuple(env.items()), remembered)
    cached = _known_cache.get(key)
    if cached is None:
        cached = _known(env, remembered)
        _known_cache.clear()  # only the latest environment is ever asked about again
        _known_cache[key] = cached
    return list(cached)


_known_cache: dict[tuple[tuple[tuple[str, str], ...], tuple[str, ...]], tuple[str, ...]] = {}


def _known(env: Mapping[str, str], remembered: tuple[str, ...]) -> tuple[str, ...]:
    found = {env.get(name, "") for name in CREDENTIAL_ENV}
    found.update(value for name, value in env.items() if is_secret_name(name))
    for line in (env.get(HEADER_ENV) or "").splitlines():
        found.add(line.partition(":")[2].strip())
    found.update(remembered)
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET), key=lambda v: (-len(v), v)))


@overload
def redact(text: str) -> str: ...
@overload
def redact(text: None) -> None: ...
def redact(text: str | None) -> str | None:
    """`text` with every known credential and every secret-shaped token masked."""
    if not text:
        return text
    return _redact(text, known_secrets())


def _redact(text: str, known: list[str]) -> str:
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    lowered: str | None = None
    for shape in SHAPES:
        if shape.needs and shape.needs not in text:
            continue
        if shape.fold:
            lowered = text.lower() if lowered is None else lowered
            if not any(h in lowered for h in shape.hints):
                continue
        elif not any(h in text for h in shape.hints):
            continue
        masked = shape.pattern.sub(shape.replace, text)
        if masked != text:
            text, lowered = masked, None
    return text


def holds_secret(text: str) -> bool:
    """Whether `text` holds a credential: a known credential's value, or a secret's shape whose
    value is no placeholder (`sk-ant-...`, `***`, `<token>`, `AKIA...EXAMPLE` are documentation).
    What hides a file from a confined command (flower.shell.view), so it reads whole files: only
    the lines around a shape's hint (in its usual spellings) are tried against the shapes."""
    if not text:
        return False
    if any(value in text for value in known_secrets()):
        return True
    spans = {_around(text, at) for word in _hint_words() for at in _all(text, word)}
    near = "\n".join(text[a:b] for a, b in sorted(spans))
    for shape in SHAPES:
        # a shape whose hints are too common to search for (pgpass's ':') is tried on it all
        where = near if any(len(h) >= _HINT_MIN for h in shape.hints) else text
        lowered = where.lower() if shape.fold else where
        if (shape.needs and shape.needs not in where) or not any(h in lowered for h in shape.hints):
            continue
        for match in shape.pattern.finditer(where):
            if shape.replace(match) == match.group(0):
                continue  # the shape's own test declined it
            value = match.group(2) if shape.pattern.groups >= 3 else match.group(0)
            if _real_value(value.strip("\"'")):
                return True
    return False


def _around(text: str, at: int) -> tuple[int, int]:
    """The line holding `at` with the two before it (a netrc entry spans lines) and the next."""
    start = at
    for _ in range(3):
        start = text.rfind("\n", 0, max(start - 1, 0)) + 1 if start > 0 else 0
    end = at
    for _ in range(2):
        found = text.find("\n", end + 1)
        end = len(text) if found < 0 else found
    return start, end


_HINT_MIN = 3


def _all(text: str, word: str) -> list[int]:
    found, at = [], text.find(word)
    while at >= 0:
        found.append(at)
        at = text.find(word, at + len(word))
    return found


@functools.lru_cache(maxsize=1)
def _hint_words() -> tuple[str, ...]:
    # a folded hint in its usual spellings (key, Key, KEY): plain substring searches are fast
    words = {
        variant
        for shape in SHAPES
        for hint in shape.hints
        if len(hint) >= _HINT_MIN
        for variant in ((hint, hint.capitalize(), hint.upper()) if shape.fold else (hint,))
    }
    return tuple(sorted(words))


_PLACEHOLDERS = (
    "...",
    "***",
    "xxx",
    "<",
    ">",
    "[",
    "$",
    "example",
    "your",
    "changeme",
    "placeholder",
    "redacted",
    "password",
)


def _real_value(value: str) -> bool:
    folded = value.lower()
    return len(value) >= 8 and len(set(value)) >= 4 and not any(p in folded for p in _PLACEHOLDERS)


def redact_value(value: _T) -> _T:
    """`value` with `redact` applied to every string inside it: dicts (values, not keys), lists,
    tuples and dataclass instances (events, the SDK's messages) are copied where something
    changed; anything unchanged is returned as the very same object."""
    walked = _walk(value, known_secrets())
    if isinstance(walked, type(value)):
        return walked
    # only a subclass of str comes back as another type (a plain str): refused, not leaked
    raise TypeError(
        f"redact_value keeps the type of what it is given, not {type(value).__name__}: use redact"
    )


def _walk(value: object, known: list[str]) -> object:
    if isinstance(value, str):
        return _redact(value, known) if value else value
    if isinstance(value, dict):
        items = {k: _walk(v, known) for k, v in value.items()}
        if not any(items[k] is not v for k, v in value.items()):
            return value
        if type(value) is dict:
            return items
        kept = copy.copy(value)  # a subclass of dict stays one (an OrderedDict, a defaultdict)
        dict.update(kept, items)
        return kept
    if isinstance(value, (list, tuple)):
        parts = [_walk(v, known) for v in value]
        if any(a is not b for a, b in zip(parts, value, strict=True)):
            return type(value)(parts)
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed: dict[str, object] = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name, None)
            new = _walk(old, known)
            if new is not old:
                changed[f.name] = new
        if not changed:
            return value
        clone = copy.copy(value)
        for name, new in changed.items():
            # events refuse assignment once made: the copy is a new value, filled before anyone sees it
            object.__setattr__(clone, name, new)
        return clone
    return value


class RedactingFilter(logging.Filter):
    """A handler filter that masks credentials in a log record's message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_text = redact(record.exc_text)
        record.stack_info = redact(record.stack_info)
        return True
