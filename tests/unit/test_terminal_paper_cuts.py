"""The terminal's paper cuts, as pure functions: nothing a tool prints can hide what it printed
before (carriage returns, backspaces, escape sequences), ambiguous-width characters counted as
the terminal draws them (FLOWER_AMBIGUOUS_WIDTH), the inbox's reply saying whether the words
went into the brief. Generated inputs in the thousands where a category applies."""

from __future__ import annotations

import io
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.cli.render import Render
from flower.cli.terminal import Screen
from flower.cli.text import sanitize
from flower.core.display import AMBIGUOUS_ENV, ambiguous_width, columns
from flower.core.events import Text, ToolResult
from flower.core.human import INBOX_NOT_RECORDED, HumanChannel

# -- what a reader sees, and what cannot be hidden -----------------------------------------------

# Text a reader sees: ASCII, CJK, kana, hangul, ambiguous-width symbols, Greek and Cyrillic,
# emoji (with a skin tone, a ZWJ family), combining marks, full-width forms, spaces and tabs.
VISIBLE = st.lists(
    st.sampled_from(
        [
            *"abcXYZ019 -_=+%/:.",
            *"中文字符你好表格",
            *"カタカナひらがな",
            *"한국어",
            *"·—○→★±§…“”",
            *"αβΩЖжЯ",
            "👍",
            "👍🏽",
            "👨\u200d👩\u200d👧",
            "🇨🇳",
            "e\u0301",
            "\u0301",
            "\uff48\uff45",
            "\t",
            "\n",
        ]
    ),
    max_size=12,
).map("".join)

# What a terminal acts on instead of drawing: cursor moves, erases, titles, clipboard, images,
# carriage returns, backspaces, bells, bidi controls; 7-bit and 8-bit forms.
INVISIBLE = st.sampled_from(
    [
        "\r",
        "\r\r",
        "\b",
        "\b\b\b",
        "\x07",
        "\x00",
        "\x7f",
        "\x1b[2K",
        "\x1b[1G",
        "\x1b[10D",
        "\x1b[5A",
        "\x1b[2J\x1b[H",
        "\x1b[?25l",
        "\x1b[31m",
        "\x1b[0m",
        "\x1b[38;5;196m",
        "\x9b2K",
        "\x1b]0;a title nobody sees\x07",
        "\x1b]2;title\x1b\\",
        "\x1b]52;c;Y29weQ==\x07",
        "\x9d0;title\x9c",
        "\x1bPq#0;2;0;0;0#1~~@@\x1b\\",
        "\x90body\x9c",
        "\x1b_Gf=24;AAAA\x1b\\",
        "\x1b^pm\x1b\\",
        "\x1bXsos\x1b\\",
        "\x1b7",
        "\x1b8",
        "\x1bc",
        "\x1b(B",
        "\u202e",
        "\u2066",
        "\u2069",
        "\x0b",
        "\x0c",
    ]
)

# A piece is (what the input holds, what of it a reader should see).
PIECES = st.one_of(VISIBLE.map(lambda t: (t, t)), INVISIBLE.map(lambda t: (t, "")))
INPUTS = st.lists(PIECES, max_size=24)

BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def ink(text: str) -> str:
    """The characters that put ink on the screen, in order (spaces and line breaks are where)."""
    return re.sub(r"\s", "", text)


def only_drawn(text: str) -> bool:
    """No character left that a terminal would act on: no control but the newline, no bidi."""
    return all(
        ch == "\n" or (unicodedata.category(ch) != "Cc" and ch not in BIDI and ch != "\x1b") for ch in text
    )


@settings(max_examples=3000, deadline=None)
@given(INPUTS)
def test_nothing_a_tool_prints_can_hide_or_overwrite_what_it_printed(pieces: list[tuple[str, str]]) -> None:
    raw = "".join(p for p, _ in pieces)
    seen = "".join(s for _, s in pieces)
    shown = sanitize(raw)
    assert only_drawn(shown), ascii(shown)
    assert ink(shown) == ink(seen), (ascii(raw), ascii(shown))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(INPUTS)
def test_the_models_text_on_the_screen_shows_every_character_it_wrote(pieces: list[tuple[str, str]]) -> None:
    """The whole way: the event's lines (Render), then the one gate (Screen) on a plain stream."""
    raw = "".join(p for p, _ in pieces)
    seen = "".join(s for _, s in pieces)
    out = io.StringIO()
    screen = Screen(out, io.StringIO(), live=False, colour=False)
    for line in Render().lines(Text(text=raw)):
        screen.say(line)
    assert only_drawn(out.getvalue())
    assert ink(out.getvalue()) == ink(seen)


@pytest.mark.parametrize(
    "printed, first",
    [
        ("echo safe\rrm -rf /tmp/x", "echo safe"),  # the text before a return is what the excerpt shows
        ("\r\r   \rreal output", "real output"),
        ("ok\b\b\bno", "okno"),
    ],
)
def test_a_tool_results_excerpt_starts_where_the_tool_started(printed: str, first: str) -> None:
    [line] = Render().lines(ToolResult(text=printed, is_error=True, tool_use_id="t1"))
    assert line == f"  x {first}"


# -- ambiguous width ---------------------------------------------------------------------------

AMBIGUOUS = "·—○→αЖ★±§…"


@pytest.mark.parametrize(
    "value, width",
    [(None, 1), ("1", 1), ("2", 2), ("wide", 2), (" 2 ", 2), ("3", 1), ("narrow", 1), ("", 1)],
)
def test_the_setting_says_how_wide_an_ambiguous_character_is(
    monkeypatch: pytest.MonkeyPatch, value: str | None, width: int
) -> None:
    if value is None:
        monkeypatch.delenv(AMBIGUOUS_ENV, raising=False)
    else:
        monkeypatch.setenv(AMBIGUOUS_ENV, value)
    assert ambiguous_width() == width
    assert columns(AMBIGUOUS) == len(AMBIGUOUS) * width
    assert columns("你好ab") == 6 and columns("e\u0301") == 1  # wide, narrow and combining: unchanged


def reference_columns(text: str, ambiguous: int) -> int:
    """Columns by the Unicode tables directly (not wcwidth), for the characters LINES is made of."""
    total = 0
    for ch in text:
        if unicodedata.combining(ch) or ch in "\u200d\ufe0f" or unicodedata.category(ch) == "Sk":
            continue
        eaw = unicodedata.east_asian_width(ch)
        total += 2 if eaw in "WF" else ambiguous if eaw == "A" else 1
    return total


# words of one script each, so that every line has spaces to break at, or none at all
WORDS = st.lists(
    st.lists(st.sampled_from([*"abcdefgh", *AMBIGUOUS, *"中文表格", "e\u0301"]), min_size=1, max_size=30).map(
        "".join
    ),
    min_size=1,
    max_size=30,
)


@pytest.mark.parametrize("setting", ["1", "2"])
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS, mark=st.sampled_from(["", "  ", "  | ", "  * ", "  x "]))
def test_lines_rendered_at_80_columns_fit_with_either_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str, words: list[str], mark: str
) -> None:
    monkeypatch.setenv(AMBIGUOUS_ENV, setting)
    line = mark + " ".join(words)
    out = io.StringIO()
    Screen(out, io.StringIO(), live=False, columns=80, colour=False).say(line)
    lines = out.getvalue().split("\n")[:-1]
    assert all(reference_columns(row, int(setting)) <= 80 for row in lines), lines
    assert ink("".join(lines)) == ink(line)  # wrapped, nothing lost


@pytest.mark.parametrize("setting", ["1", "2"])
def test_the_live_line_fits_the_terminal_with_either_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(AMBIGUOUS_ENV, setting)
    err = io.StringIO()
    screen = Screen(io.StringIO(), err, live=True, columns=80)
    screen.status("- 干活 第 2 轮 · 上下文 80.2K/1M · 累计 $0.10 · " + "→·—" * 30)
    screen.open_prompt("(直接说 = 加需求) > ")
    screen.typed("○" * 200)
    rows = err.getvalue().split("\x1b[K")[-2:]
    drawn = [re.sub(r"\x1b\[A|\r", "", row) for row in rows]
    assert all(reference_columns(row, int(setting)) <= 79 for part in drawn for row in part.split("\n"))
    assert drawn[-1].split("\n")[-1].startswith("(直接说 = 加需求) > ○")


# -- the inbox's reply -------------------------------------------------------------------------


def test_the_inbox_says_the_words_are_in_the_brief_when_they_are(tmp_path: Path) -> None:
    brief = tmp_path / "需求.md"
    channel = HumanChannel(amend_path=brief)
    channel.send("顺便报告总字节数")
    reply = channel._take_mail()
    assert "1. 顺便报告总字节数" in reply
    assert f"已记进需求确认书 {brief}" in reply and INBOX_NOT_RECORDED not in reply
    assert "顺便报告总字节数" in brief.read_text(encoding="utf-8")


@pytest.mark.parametrize("where", ["none", "unwritable"])
def test_the_inbox_says_the_words_were_only_passed_on_when_no_brief_took_them(
    tmp_path: Path, where: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder must be", encoding="utf-8")
    channel = HumanChannel(amend_path=None if where == "none" else blocker / "需求.md")
    channel.send("别动 config.toml")
    reply = channel._take_mail()
    assert "1. 别动 config.toml" in reply and INBOX_NOT_RECORDED in reply
    assert "已记进需求确认书" not in reply


def test_each_message_of_the_inbox_says_where_it_went(tmp_path: Path) -> None:
    brief = tmp_path / "需求.md"
    channel = HumanChannel(amend_path=brief)
    channel.send("第一句")
    brief.unlink()
    brief.mkdir()  # the brief cannot be appended to any more
    channel.send("第二句")
    reply = channel._take_mail().split("\n")
    first, second = reply.index("1. 第一句"), reply.index("2. 第二句")
    assert "已记进需求确认书" in reply[first + 1] and INBOX_NOT_RECORDED in reply[second + 1]
