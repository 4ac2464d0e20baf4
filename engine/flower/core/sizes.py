"""How big one message from the Claude Code CLI may be, and what flower says past that.

The SDK reads the CLI's stream-json one line at a time and refuses a line longer than its
buffer (1 MiB unless told otherwise) with ``CLIJSONDecodeError``. What the CLI can put on one
line, measured with the bundled CLI (docs/cli.md, "How big a message can be"):

- a tool's own output is capped by the CLI: Bash keeps a 2 KB preview and persists the rest
  (a 50 MB output is a 190 KB line), Read refuses files over 256 KB, MCP results are cut at
  the CLI's token limit;
- free text is not: a subagent's report, an assistant message and the task notification that
  carries a background agent's report are as long as the model made them (a 20 MB report is a
  20 MB line, twice), and so is the file an Edit or Write echoes back.

So the bound is set far above what a real model writes in one message and below what would
exhaust memory: ``DEFAULT_MB`` MiB, ``FLOWER_MAX_MESSAGE_MB`` to change it. A longer line is
refused by the SDK; flower turns that into one line saying what happened and what to do, and
never retries it (every retry would meet the same line again).
"""

from __future__ import annotations

import json
import os
import re

LIMIT_VAR = "FLOWER_MAX_MESSAGE_MB"
DEFAULT_MB = 32
_MIB = 1024 * 1024

# the SDK's words for a line over its buffer (claude_agent_sdk/_internal/transport/subprocess_cli.py)
_OVER_BUFFER = re.compile(r"exceeded maximum buffer size of (\d+) bytes")


def message_limit() -> int:
    """The longest line (in characters, as the SDK counts) flower accepts from the CLI."""
    raw = (os.environ.get(LIMIT_VAR) or "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MB
    except ValueError:
        mb = DEFAULT_MB
    if not mb > 0 or mb != mb or mb == float("inf"):
        mb = DEFAULT_MB
    return max(_MIB, int(mb * _MIB))


def over_limit(text: str | None) -> int | None:
    """The limit an SDK error names when a message was too big for it, else None."""
    found = _OVER_BUFFER.search(text or "")
    return int(found.group(1)) if found else None


def too_big(limit: int) -> str:
    """The step's error for a refused message (English, like every error text in the manifest)."""
    return (
        f"message too big: a message from Claude Code was longer than {limit // _MIB} MiB "
        f"({LIMIT_VAR}); refused without retrying"
    )


# Words said between steps go to the inbox and are appended to 需求.md, whose brief block every
# later wake puts into its prompts: past this many characters they would crowd out the work
# (a 20 MB amendment makes every later prompt one the CLI refuses as too long).
INBOX_CHARS = 100_000


# Words said into a step come back from the CLI more than once on one line (a 20 MB Say was
# measured on a line past 32 MiB), so they may take up at most this share of the bound.
ECHOES = 2


def say_limit() -> int:
    """The longest words (as `line_length` counts) a person may say into a step: the bound over
    ECHOES, so the CLI's echo of them is never a line the SDK refuses (which would end the step)."""
    return message_limit() // ECHOES


def say_refusal(text: str) -> str | None:
    """Why `text` cannot be said into a step (English, like the manifest's errors), else None."""
    size, limit = line_length(text), say_limit()
    if size <= limit:
        return None
    return (
        f"too long to say: {mib(size)} MiB, words can be at most {mib(limit)} MiB "
        f"(half of {LIMIT_VAR}: the CLI can send them back twice in one message)"
    )


def line_length(text: str) -> int:
    """How long `text` is on the stream-json line that carries it to the CLI (the SDK writes
    JSON with ASCII escapes: one CJK character takes six)."""
    return len(json.dumps(text))


def mib(size: int) -> str:
    """A size in MiB for a person: one decimal below 10."""
    value = size / _MIB
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


__all__ = [
    "DEFAULT_MB",
    "ECHOES",
    "INBOX_CHARS",
    "LIMIT_VAR",
    "line_length",
    "message_limit",
    "mib",
    "over_limit",
    "say_limit",
    "say_refusal",
    "too_big",
]
