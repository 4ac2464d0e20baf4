"""The context window a run assumes, where it hands over, and what an overflow taught.

The window comes from ``FLOWER_WINDOW`` (tokens), else the model's name (``default_window``).
The headroom is a share of the window with a floor, so a large window does not hand over with
most of its room unused. A window that overflowed earlier than that is remembered per model and
gateway in flower's user state (``windows.json``), and the next run starts from it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import time
from pathlib import Path

from ..base.files import atomic_write
from ..base.loose import mapping

log = logging.getLogger("flower")

HEADROOM_SHARE = 0.25  # of the window: a 1M window hands over at 750K
HEADROOM_FLOOR = 20_000  # the handoff turn itself needs room, however small the window
AT_FLOOR = 10_000  # below this there is not even room to write the handoff
WARN_BEFORE = 20_000
DEFAULT_BASE_URL = "https://api.anthropic.com"

_AMOUNT = re.compile(r"^\s*(\d+(?:[._]\d+)*)\s*([km]?)\s*$", re.IGNORECASE)
# how the API and the CLI name the window in an overflow: "> 200000 maximum" (the API), "(limit
# 200000)" (the CLI's own line), "maximum context length is 128000" (other gateways)
_MAXIMUM = re.compile(
    r"(\d[\d,_]*)\s*(?:tokens?\s*)?maximum"
    r"|maximum (?:context length )?(?:is |of )?~?(\d[\d,_]*)"
    r"|\(limit:? ~?(\d[\d,_]*)(?: tokens)?\)",
    re.I,
)


def parse_tokens(text: str) -> int | None:
    """``200000``, ``200_000``, ``200k``, ``1m``, ``1.5m`` as tokens; None when it is not one."""
    found = _AMOUNT.match(text or "")
    if found is None:
        return None
    number, unit = found.group(1).replace("_", ""), found.group(2).lower()
    if number.count(".") > 1 or ("." in number and not unit):
        return None
    value = float(number) * {"": 1, "k": 1_000, "m": 1_000_000}[unit]
    return int(value) if value >= 1 else None


def headroom_for(window: int) -> int:
    return max(HEADROOM_FLOOR, math.ceil(window * HEADROOM_SHARE))


def handover_at(window: int, headroom: int | None = None) -> int:
    """The context at which a session hands over: the window minus its headroom, floored."""
    return max(AT_FLOOR, window - (headroom_for(window) if headroom is None else headroom))


_ONE_M = re.compile(r"(?:^|[^a-z0-9])1m(?:[^a-z0-9]|$)")


def default_window() -> int:
    """The context window implied by the configured model name.

    Errs on the large side on purpose: an overestimate ends in "prompt is too long", which the
    runtime turns into an immediate (degraded) handoff; an underestimate would waste sessions.
    """
    name = (os.environ.get("ANTHROPIC_MODEL") or os.environ.get("ANTHROPIC_DEFAULT_OPUS_MODEL") or "").lower()
    if _ONE_M.search(name):
        return 1_000_000
    if "haiku" in name:
        return 200_000
    return 1_000_000


def configured_window() -> int:
    """``FLOWER_WINDOW`` when it is a number of tokens, else the model name's window."""
    raw = os.environ.get("FLOWER_WINDOW", "").strip()
    if raw:
        value = parse_tokens(raw)
        if value is not None:
            return value
        log.warning(
            "FLOWER_WINDOW=%s is not a number of tokens (e.g. 200000 or 200k): using the model's window",
            raw,
        )
    return default_window()


def overflow_maximum(text: str | None) -> int | None:
    """The window an overflow error names ("... 210000 tokens > 200000 maximum"), if it does."""
    found = _MAXIMUM.search(text or "")
    if found is None:
        return None
    digits = next(g for g in found.groups() if g).replace(",", "").replace("_", "")
    return int(digits) if digits.isdigit() and int(digits) > 0 else None


def state_dir() -> Path:
    """flower's own state for this user (not a run's, not a workspace's)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "flower"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "flower"
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "flower"


def gateway(env: dict[str, str] | None = None) -> str:
    url = ((env or {}).get("ANTHROPIC_BASE_URL") or os.environ.get("ANTHROPIC_BASE_URL") or "").strip()
    return (url or DEFAULT_BASE_URL).rstrip("/")


def model_name(spec_model: str | None, env: dict[str, str] | None = None) -> str:
    return (
        spec_model or (env or {}).get("ANTHROPIC_MODEL") or os.environ.get("ANTHROPIC_MODEL") or "(default)"
    )


class Calibration:
    """Windows learned from overflows, one per model and gateway, in ``<state>/windows.json``."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else state_dir() / "windows.json"

    @staticmethod
    def key(model: str, base_url: str) -> str:
        return f"{model} @ {base_url}"

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # none yet, or unreadable: nothing learned is no reason to stop a run
        return mapping(data)

    def learned(self, model: str, base_url: str) -> int | None:
        row = self._read().get(self.key(model, base_url))
        value = row.get("window") if isinstance(row, dict) else None
        return value if isinstance(value, int) and value > 0 else None

    def remember(self, model: str, base_url: str, window: int, *, evidence: str) -> bool:
        """Keep `window` unless a smaller one is known already; False when it could not be written."""
        data = self._read()
        known = self.learned(model, base_url)
        if known is not None and known <= window:
            return True
        data[self.key(model, base_url)] = {
            "model": model,
            "base_url": base_url,
            "window": int(window),
            "evidence": evidence[:300],
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        try:
            atomic_write(self.path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        except OSError as exc:
            log.warning("could not keep the learned window in %s: %s", self.path, exc)
            return False
        return True
