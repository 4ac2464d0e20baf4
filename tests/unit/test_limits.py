"""Limits in what the CLI and the API say: which kind, and when each one resets."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from flower.core.limits import (
    LIMIT_FILE,
    Pending,
    classify_limit,
    forget,
    keep,
    parse_limit,
    pending,
    reset_moment,
    wait_max,
)
from flower.core.resilience import classify

# a fixed "now" on a fixed day: 2026-12-02 10:00:00 UTC
NOW = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC).timestamp()
PREFIXES = ["", "API Error: Request rejected (429) · ", "Claude Code returned an error result: API Error: "]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (
            "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute "
            "rate limit",
            "rate",
        ),
        ("429 Too Many Requests", "rate"),
        ("rate_limit_error", "rate"),
        ("API Error: 529 Overloaded. This is a server-side issue", "overloaded"),
        ("overloaded_error: Overloaded", "overloaded"),
        ("Claude AI usage limit reached|1796187499", "usage"),
        ("You've hit your session limit · resets 3pm (Europe/London)", "usage"),
        ("You've hit your weekly limit · resets Dec 8, 9am", "usage"),
        ("5-hour limit reached ∙ resets 3pm", "usage"),
        ("spend limit reached · resets Aug 8", "usage"),
        ("Prompt is too long", None),
        ("Context limit reached", None),
        ("Connection error", None),
        ("invalid x-api-key", None),
        ("", None),
        (None, None),
    ],
)
def test_which_limit_a_text_is(text, kind):
    assert classify_limit(text) == kind


def _clock_variants(hour: int, minute: int, second: int | None) -> list[str]:
    h12 = hour % 12 or 12
    ampm = "pm" if hour >= 12 else "am"
    out = [f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second is not None else "")]
    if second is None:
        out += [
            f"{h12}:{minute:02d}{ampm}",
            f"{h12}:{minute:02d} {ampm.upper()}",
            f"{h12}:{minute:02d} {ampm[0]}.m.",
        ]
        if minute == 0:
            out += [f"{h12}{ampm}", f"{h12} {ampm.upper()}"]
    return out


LEADS = [
    "usage limit reached, resets at {t}",
    "Claude usage limit reached. Your limit resets at {t}.",
    "You've hit your session limit · resets {t}",
    "You've hit your limit · resets {t}",
    "5-hour limit reached ∙ resets {t}",
]
# (hour, minute, second) in UTC on NOW's day, all later than 10:00
CLOCKS = [(15, 0, None), (15, 30, None), (12, 0, None), (23, 59, None), (10, 0, 30)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            prefix + lead.format(t=t + " (UTC)"),
            datetime(2026, 12, 2, h, m, s or 0, tzinfo=UTC),
            id=f"{i}",
        )
        for i, (prefix, lead, (h, m, s)) in enumerate(itertools.product(PREFIXES, LEADS, CLOCKS))
        for t in _clock_variants(h, m, s)
    ],
)
def test_a_reset_clock_time_in_many_shapes(text, expected):
    assert reset_moment(text, now=NOW) == expected.timestamp()
    limit = parse_limit(text, now=NOW)
    assert limit is not None and limit.kind == "usage" and limit.until == expected.timestamp()


def test_a_clock_time_already_past_today_is_tomorrows():
    until = reset_moment("usage limit reached, resets at 9am (UTC)", now=NOW)
    assert until == datetime(2026, 12, 3, 9, 0, tzinfo=UTC).timestamp()
    # a few minutes past is a slow answer or a skewed clock, not tomorrow
    assert reset_moment("usage limit reached, resets at 09:59:50 (UTC)", now=NOW) == NOW - 10
    assert reset_moment("usage limit reached, resets at 09:50 (UTC)", now=NOW) == NOW - 600
    assert reset_moment("usage limit reached, resets at 09:40 (UTC)", now=NOW) == NOW + 23 * 3600 + 40 * 60


def test_a_named_time_zone_is_that_zone():
    until = reset_moment("You've hit your session limit · resets 3pm (Europe/London)", now=NOW)
    assert until == datetime(2026, 12, 2, 15, 0, tzinfo=ZoneInfo("Europe/London")).timestamp()
    until = reset_moment("You've hit your session limit · resets 3pm (America/New_York)", now=NOW)
    assert until == datetime(2026, 12, 2, 15, 0, tzinfo=ZoneInfo("America/New_York")).timestamp()


def test_no_zone_is_this_machines():
    local = datetime.fromtimestamp(NOW).astimezone()
    target = (local + timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)
    text = f"usage limit reached, resets at {target:%H:%M}"
    assert reset_moment(text, now=NOW) == target.timestamp()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("rate limited: retry after 30 seconds", 30),
        ("retry-after: 12", 12),
        ("Retry-After=7s", 7),
        ("Please try again in 20s", 20),
        ("try again in 1m30s", 90),
        ("usage limit reached, resets in 2h 30m", 9000),
        ("usage limit reached; resets in 5 minutes", 300),
        ("limit reached, available again in 1 hour and 15 minutes", 4500),
        ("resets in 90 seconds", 90),
        ("resets in 1d", 86400),
    ],
)
def test_a_reset_after_a_span(text, seconds):
    assert reset_moment(text, now=NOW) == NOW + seconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Claude AI usage limit reached|1796187499", 1796187499.0),
        ("API Error: Request rejected (429) · Claude AI usage limit reached|1796187499.5", 1796187499.0),
        (
            "usage limit reached, resets at 2026-12-02T15:04:05Z",
            datetime(2026, 12, 2, 15, 4, 5, tzinfo=UTC),
        ),
        (
            "usage limit reached, resets at 2026-12-02 15:04:05+01:00",
            datetime(2026, 12, 2, 14, 4, 5, tzinfo=UTC),
        ),
        ("spend limit reached · resets Dec 8 (UTC)", datetime(2026, 12, 8, 0, 0, tzinfo=UTC)),
        (
            "You've hit your weekly limit · resets Dec 8, 9am (UTC)",
            datetime(2026, 12, 8, 9, 0, tzinfo=UTC),
        ),
        (
            "You've hit your weekly limit · resets Dec 8 at 9:30pm (UTC)",
            datetime(2026, 12, 8, 21, 30, tzinfo=UTC),
        ),
        ("spend limit reached · resets Jan 3 (UTC)", datetime(2027, 1, 3, 0, 0, tzinfo=UTC)),
    ],
)
def test_a_reset_moment_named_outright(text, expected):
    want = expected if isinstance(expected, float) else expected.timestamp()
    assert reset_moment(text, now=NOW) == want


@pytest.mark.parametrize(
    "text",
    [
        "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute limit",
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.",
        "usage limit reached",
        "resets 3",  # a bare number is not a time
        "usage limit reached, resets at 25:00",
    ],
)
def test_a_limit_that_names_no_moment(text):
    assert reset_moment(text, now=NOW) is None


def test_limits_are_not_fatal_and_a_refused_key_is_no_limit_to_wait_for():
    for text in ("Claude AI usage limit reached|1796187499", "You've hit your session limit · resets 3pm"):
        assert classify(text) != "fatal"
    assert classify("401 invalid x-api-key (rate limit headers absent)") == "fatal"


def test_the_longest_wait_is_a_setting(monkeypatch):
    monkeypatch.delenv("FLOWER_LIMIT_WAIT_MAX", raising=False)
    assert wait_max() == 6 * 3600
    monkeypatch.setenv("FLOWER_LIMIT_WAIT_MAX", "90")
    assert wait_max() == 90
    monkeypatch.setenv("FLOWER_LIMIT_WAIT_MAX", "soon")
    assert wait_max() == 6 * 3600


def test_a_wait_is_kept_in_the_run_folder_until_its_moment(tmp_path):
    assert pending(tmp_path) is None
    later = time.time() + 3600
    keep(tmp_path, Pending(until=later, kind="usage", step="干活", error="usage limit reached"))
    found = pending(tmp_path)
    assert found is not None and (found.until, found.kind, found.step) == (later, "usage", "干活")
    keep(tmp_path, Pending(until=time.time() - 1, kind="usage", step="干活"))
    assert pending(tmp_path) is None  # a moment already past is no wait
    (tmp_path / LIMIT_FILE).write_text("{torn")
    assert pending(tmp_path) is None
    forget(tmp_path)
    forget(tmp_path)  # twice is fine
    assert not (tmp_path / LIMIT_FILE).exists()
