"""Keep credentials out of everything flower writes (manifest, logs, notes)."""

from __future__ import annotations

import os
import re
from typing import overload

CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
MASK = "[redacted]"
# Anthropic keys and bearer tokens as they tend to appear in error texts
_PATTERNS = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}|(?i:bearer)\s+[A-Za-z0-9._\-]{16,}")


@overload
def redact(text: str) -> str: ...
@overload
def redact(text: None) -> None: ...
def redact(text: str | None) -> str | None:
    """`text` with every configured credential and key-shaped token masked."""
    if not text:
        return text
    for name in CREDENTIAL_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 8:  # a short dummy would mask ordinary words
            text = text.replace(value, MASK)
    return _PATTERNS.sub(MASK, text)
