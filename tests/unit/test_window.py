"""The window a run assumes, where it hands over, and the windows learned from overflows."""

from __future__ import annotations

import json

import pytest

from flower import HandoffPolicy
from flower.core.window import (
    Calibration,
    configured_window,
    handover_at,
    headroom_for,
    overflow_maximum,
    parse_tokens,
    state_dir,
)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("200000", 200_000),
        ("200_000", 200_000),
        (" 200k ", 200_000),
        ("200K", 200_000),
        ("1m", 1_000_000),
        ("1M", 1_000_000),
        ("1.5m", 1_500_000),
        ("", None),
        ("lots", None),
        ("-5", None),
        ("0", None),
        ("1.5", None),
        ("200 tokens", None),
    ],
)
def test_a_window_is_read_in_tokens_with_k_and_m(text, tokens):
    assert parse_tokens(text) == tokens


def test_headroom_is_a_quarter_of_the_window_with_a_floor():
    assert handover_at(1_000_000) == 750_000  # upstream's figure: a 1M window hands over at 750K
    assert handover_at(200_000) == 150_000
    assert headroom_for(40_000) == 20_000  # the floor: the handoff turn needs room
    assert handover_at(40_000) == 20_000
    assert handover_at(20_000) == 10_000  # and the threshold's own floor
    assert handover_at(1_000_000, headroom=50_000) == 950_000  # an explicit headroom is kept


def test_handoff_thresholds_follow_the_window():
    p = HandoffPolicy(window=1_000_000)
    assert (p.at, p.warn_at) == (750_000, 730_000)
    tiny = HandoffPolicy(window=20_000)
    assert (tiny.at, tiny.warn_at) == (10_000, 1_000)


def test_flower_window_sets_the_window(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-haiku-5")
    monkeypatch.setenv("FLOWER_WINDOW", "300k")
    assert configured_window() == 300_000
    assert HandoffPolicy().window == 300_000 and HandoffPolicy().at == 225_000


def test_a_bad_flower_window_falls_back_to_the_model_and_says_so(monkeypatch, caplog):
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-haiku-5")
    monkeypatch.setenv("FLOWER_WINDOW", "huge")
    with caplog.at_level("WARNING", logger="flower"):
        assert configured_window() == 200_000
    assert "FLOWER_WINDOW=huge" in caplog.text and "200k" in caplog.text


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ("API Error: 400 prompt is too long: 1,050,123 tokens > 1,000,000 maximum", 1_000_000),
        ("This model's maximum context length is 128000 tokens", 128_000),
        (
            "Prompt is too long · the request is ~200001 tokens (limit 200000) but this conversation "
            "is only ~2481 tokens",
            200_000,
        ),
        ("input length and `max_tokens` exceed context limit", None),
        ("Prompt is too long", None),
    ],
)
def test_the_window_an_overflow_names(text, window):
    assert overflow_maximum(text) == window


def test_the_state_folder_follows_xdg_state_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert state_dir() == tmp_path / "state" / "flower"


def test_a_learned_window_is_kept_per_model_and_gateway(tmp_path):
    book = Calibration(tmp_path / "state" / "windows.json")
    assert book.learned("m", "http://gw") is None  # nothing yet, no file
    assert book.remember("m", "http://gw", 200_000, evidence="prompt is too long")
    assert book.remember("m", "http://gw", 300_000, evidence="later, larger")  # kept the smaller
    assert book.remember("m", "http://other", 500_000, evidence="x")
    again = Calibration(book.path)
    assert again.learned("m", "http://gw") == 200_000
    assert again.learned("m", "http://other") == 500_000
    assert again.learned("other-model", "http://gw") is None
    rows = json.loads(book.path.read_text())
    assert rows["m @ http://gw"]["evidence"] == "prompt is too long"
    assert not [p for p in book.path.parent.iterdir() if p.name != "windows.json"]  # no temp left


def test_an_unreadable_calibration_is_nothing_learned(tmp_path):
    path = tmp_path / "windows.json"
    path.write_text("{not json")
    assert Calibration(path).learned("m", "u") is None
    assert Calibration(path).remember("m", "u", 100_000, evidence="e")  # and is replaced whole
    assert Calibration(path).learned("m", "u") == 100_000
