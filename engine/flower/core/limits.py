"""Usage limits, rate limits and overloads: recognised in what the CLI and the API say, and when
they end.

A limit is not a failure of the work: the step waits until the reset and resumes the same session.
The reset is a moment on the wall clock (the account's limit resets at 3pm whatever this process
did), so it is kept in the run folder (``limit.json``) and a flower started again during the wait
waits for the same moment.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..base.files import atomic_write

Kind = Literal["usage", "rate", "overloaded"]

LIMIT_FILE = "limit.json"
DEFAULT_WAIT_MAX = 6 * 3600.0  # a usage window is five hours; longer is a monthly cap: stop
# a usage limit that names no moment: the first wait (doubled per wait, up to the cap); a rate
# limit or an overload without one backs off as a network drop does
UNNAMED_USAGE_WAIT = 300.0
UNNAMED_USAGE_CAP = 1800.0
# a clock time this little in the past is one that just went by (a slow answer, a skewed clock),
# not tomorrow's: waiting a day for it would be the worse mistake
JUST_PAST = 900.0

_USAGE = re.compile(
    r"usage limit|hit your (?:\w+[ -]){0,3}limit|reached your (?:\w+[ -]){0,3}limit"
    r"|(?:session|weekly|daily|monthly|5-hour|five[ -]hour|opus|spend) limit"
    r"|(?<!context )(?<!nesting )(?<!export )limit (?:reached|exceeded)|out of (?:usage|extra usage)",
    re.I,
)
_OVERLOADED = re.compile(r"(?<![\w.])529(?!\w)|overloaded", re.I)
_RATE = re.compile(r"(?<![\w.])429(?!\w)|rate[ _-]?limit|too many requests|request rejected", re.I)

_EPOCH = re.compile(r"\|\s*(\d{10})(?:\.\d+)?\b")
_IN = re.compile(
    r"(?:resets?|retry|try again|available(?: again)?|wait)\s+(?:in|after)\s+"
    r"(?P<span>(?:\d+(?:\.\d+)?\s*(?:d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)(?![a-z])(?:\s|,|and)*)+)",
    re.I,
)
_RETRY_AFTER = re.compile(r"retry[- ]after\s*[:=]?\s*(\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)?\b", re.I)
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)", re.I)
_ISO = re.compile(
    r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.\d+)?\s*(Z|[+-]\d{2}:?\d{2}|UTC)?", re.I
)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_AT = re.compile(
    r"resets?\s+(?:at\s+|on\s+)?"
    r"(?:(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?"
    r"(?:,?\s+(?:at\s+)?)?)?"
    r"(?P<clock>(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?(?::(?P<second>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?)?"
    r"\s*(?:\(?(?P<zone>UTC|GMT|Z|[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)\)?)?",
    re.I,
)


@dataclass
class Limit:
    """A limit the model's service answered: of what kind, until when (epoch seconds, or None
    when it named no moment), and the words it said."""

    kind: Kind
    until: float | None
    text: str


def classify_limit(text: str | None) -> Kind | None:
    """Which limit a failure text is, if it is one. A usage limit first: it comes as a 429 too."""
    if not text:
        return None
    if _USAGE.search(text):
        return "usage"
    if _OVERLOADED.search(text):
        return "overloaded"
    if _RATE.search(text):
        return "rate"
    return None


def parse_limit(text: str | None, *, now: float | None = None) -> Limit | None:
    """The limit a failure text says, with its reset moment when it names one."""
    kind = classify_limit(text)
    if kind is None or text is None:
        return None
    return Limit(kind=kind, until=reset_moment(text, now=time.time() if now is None else now), text=text)


def reset_moment(text: str, *, now: float) -> float | None:
    """When the limit a text describes ends (epoch seconds), or None when it does not say."""
    found = _EPOCH.search(text)
    if found is not None:
        return float(found.group(1))
    found = _RETRY_AFTER.search(text)
    if found is not None:
        return now + float(found.group(1))
    found = _IN.search(text)
    if found is not None:
        seconds = sum(
            float(n) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[u.lower()]
            for n, u in _PART.findall(found.group("span"))
        )
        return now + seconds if seconds > 0 else None
    found = _ISO.search(text)
    if found is not None:
        return _iso(found)
    for found in _AT.finditer(text):
        moment = _clock(found, now)
        if moment is not None:
            return moment
    return None


def _iso(found: re.Match[str]) -> float | None:
    date, clock, zone = found.group(1), found.group(2), (found.group(3) or "").upper()
    try:
        moment = datetime.fromisoformat(f"{date}T{clock}")
    except ValueError:
        return None
    if zone in ("Z", "UTC"):
        moment = moment.replace(tzinfo=UTC)
    elif zone:
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        moment = moment.replace(
            tzinfo=timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        )
    else:
        moment = moment.astimezone()  # no zone: this machine's
    return moment.timestamp()


def _zone(name: str | None) -> timezone | ZoneInfo | None:
    if not name:
        return None
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _clock(found: re.Match[str], now: float) -> float | None:
    """A "resets at 3pm", "resets 15:04:05 (Europe/London)", "resets Aug 8 at 3:30pm" moment:
    the next such moment after now (a clock time already past today is tomorrow's)."""
    if found.group("clock") is None and found.group("month") is None:
        return None
    zone = _zone(found.group("zone"))
    here = datetime.fromtimestamp(now, zone) if zone is not None else datetime.fromtimestamp(now).astimezone()
    hour, minute, second = 0, int(found.group("minute") or 0), int(found.group("second") or 0)
    if found.group("hour") is not None:
        hour = int(found.group("hour"))
        ampm = (found.group("ampm") or "").lower().replace(".", "")
        if ampm == "pm" and hour < 12:
            hour += 12
        elif ampm == "am" and hour == 12:
            hour = 0
        if not ampm and found.group("minute") is None:
            return None  # a bare number ("resets 3") is not a time
    if hour > 23 or minute > 59 or second > 59:
        return None
    if found.group("month") is not None:
        month = _MONTHS.index(found.group("month").lower()[:3]) + 1
        try:
            moment = here.replace(
                month=month,
                day=int(found.group("day")),
                hour=hour,
                minute=minute,
                second=second,
                microsecond=0,
            )
        except ValueError:
            return None
        if moment.timestamp() < now - 60:
            moment = moment.replace(year=moment.year + 1)
        return moment.timestamp()
    moment = here.replace(hour=hour, minute=minute, second=second, microsecond=0)
    if moment.timestamp() < now - JUST_PAST:  # long past: the next day's
        moment += timedelta(days=1)
    return moment.timestamp()


def wait_max() -> float:
    """``FLOWER_LIMIT_WAIT_MAX`` (seconds): the longest a limit is waited out; longer stops the run."""
    raw = os.environ.get("FLOWER_LIMIT_WAIT_MAX", "").strip()
    try:
        value = float(raw) if raw else DEFAULT_WAIT_MAX
    except ValueError:
        value = DEFAULT_WAIT_MAX
    return max(0.0, value)


@dataclass
class Pending:
    """A wait in progress, as kept in the run folder: until when, for what, in which step."""

    until: float
    kind: str
    step: str
    error: str = ""


def pending(run_dir: Path) -> Pending | None:
    """The wait a flower of this run folder was in, if it has not ended yet."""
    try:
        data = json.loads((run_dir / LIMIT_FILE).read_text(encoding="utf-8"))
        found = Pending(
            until=float(data["until"]),
            kind=str(data["kind"]),
            step=str(data.get("step", "")),
            error=str(data.get("error", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if found.until > time.time() else None


def keep(run_dir: Path, wait: Pending) -> None:
    atomic_write(run_dir / LIMIT_FILE, json.dumps(asdict(wait), ensure_ascii=False) + "\n")


def forget(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / LIMIT_FILE).unlink()
