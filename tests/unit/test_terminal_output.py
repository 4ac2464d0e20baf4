"""What reaches the screen: hostile output from tools and the model is defused (every escape
sequence removed whole, bodies included), tabs expanded, carriage returns resolved, widths
counted per character as a terminal draws them, and every line fitted to the terminal."""

from __future__ import annotations

import io
import re

import pytest

from flower import cli
from flower.cli.terminal import RESET, TONES, visible_part
from flower.core.display import columns
from flower.core.events import Result, SyntheticError, Text, ToolCall, ToolResult

# Everything a terminal would act on, as tools and models really print it.
HOSTILE = [
    pytest.param("a\x1b[31mred\x1b[0mb", "aredb", id="SGR colours from a tool"),
    pytest.param("a\x1b[2J\x1b[Hb", "ab", id="clear screen, cursor home"),
    pytest.param("a\x1b[10;20Hb\x1b[5Ac\x1b[?25l", "abc", id="cursor moves and hiding the cursor"),
    pytest.param("a\x1b]0;pwned title\x07b", "ab", id="OSC window title ended by BEL"),
    pytest.param("a\x1b]2;title\x1b\\b", "ab", id="OSC ended by ST"),
    pytest.param(
        "\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\", "link", id="OSC 8 hyperlink keeps its text"
    ),
    pytest.param("a\x1b]52;c;Y29weSBtZQ==\x07b", "ab", id="OSC 52 clipboard write"),
    pytest.param("a\x1bPq#0;2;0;0;0#1~~@@vv\x1b\\b", "ab", id="DCS sixel body removed with it"),
    pytest.param("a\x1bP1$r0m\x1b\\b", "ab", id="DCS status report"),
    pytest.param("a\x1b_Gf=24,s=10;AAAA\x1b\\b", "ab", id="APC (kitty graphics)"),
    pytest.param("a\x1b^privacy\x1b\\b\x1bXsos\x1b\\c", "abc", id="PM and SOS"),
    pytest.param("a\x9b31mb\x9d0;t\x9cc\x90body\x9cd", "abcd", id="8-bit CSI, OSC, DCS"),
    pytest.param("ok\x1b]0;never ended", "ok", id="an unterminated OSC takes the rest"),
    pytest.param("ok\x1bPq never ended", "ok", id="an unterminated DCS takes the rest"),
    pytest.param("ok\x1b[", "ok", id="a CSI cut off at the end"),
    pytest.param("a\x1bcb\x1b7c\x1b(Bd\x1b", "abcd", id="reset, save cursor, charset, a lone ESC"),
    pytest.param("a\x07b\x00c\x7fd\x08e", "abcde", id="bell, NUL, DEL, backspace"),
    pytest.param("abc\u202edef\u2066g\u2069", "abcdefg", id="bidi overrides and isolates"),
    pytest.param("100%\rdone", "100%\ndone", id="a bare CR starts a new line: nothing is written over"),
    pytest.param(
        "downloading 10%\rdownloading 100%", "downloading 10%\ndownloading 100%", id="a progress line"
    ),
    pytest.param("abcdef\rXY", "abcdef\nXY", id="a shorter text after CR hides nothing of the longer"),
    pytest.param("secret plan\r           ", "secret plan", id="spaces after CR cannot blank a line"),
    pytest.param("你好\rab", "你好\nab", id="wide characters before a CR stay whole"),
    pytest.param("a\r\r  \rb\r", "a\nb", id="blank parts between returns are dropped"),
    pytest.param("tool\tsaid\rTOOL ok", "tool    said\nTOOL ok", id="tabs are expanded on both lines"),
    pytest.param("abc\b\bXY", "abcXY", id="backspaces are dropped, never erase"),
    pytest.param("keep\x1b[2K\x1b[1Gover", "keepover", id="erase-line and cursor-to-column are removed"),
    pytest.param("line one\r\nline two", "line one\nline two", id="CRLF is one line break"),
    pytest.param("a\u2028b\x0bc\x0cd\x85e", "a\nb\nc\nd\ne", id="other line breaks"),
    pytest.param("a\tb", "a       b", id="a tab goes to the next stop"),
    pytest.param("你\tb", "你      b", id="a tab after a wide character counts its two columns"),
    pytest.param("12345678\tx", "12345678        x", id="a tab at a stop moves a whole stop"),
]


@pytest.mark.parametrize("raw, shown", HOSTILE)
def test_hostile_output_is_defused(raw: str, shown: str):
    assert cli.sanitize(raw) == shown


WIDTHS = [
    pytest.param("abc", 3, id="ascii"),
    pytest.param("你好", 4, id="chinese: two columns each"),
    pytest.param("\uff48\uff45\uff4c\uff4c\uff4f", 10, id="full-width latin"),
    pytest.param("カタカナ", 8, id="katakana"),
    pytest.param("한국어", 6, id="hangul"),
    pytest.param("★±§", 3, id="ambiguous width counts one, as outside CJK locales"),
    pytest.param("e\u0301", 1, id="a combining accent takes no column"),
    pytest.param("👍", 2, id="an emoji"),
    pytest.param("👍🏽", 2, id="an emoji with a skin tone is one character"),
    pytest.param("👨\u200d👩\u200d👧", 2, id="a ZWJ family is one character"),
    pytest.param("🇨🇳", 2, id="a flag"),
    pytest.param("a\u200bb", 2, id="a zero-width space"),
    pytest.param("", 0, id="nothing"),
]


@pytest.mark.parametrize("text, width", WIDTHS)
def test_display_widths(text: str, width: int):
    assert columns(text) == width


@pytest.mark.parametrize(
    "cols, width", [(20, 40), (39, 40), (40, 40), (80, 80), (110, 110), (111, 110), (300, 110)]
)
def test_lines_are_fitted_to_the_terminal_within_40_and_110(cols: int, width: int):
    assert cli.line_width(cols) == width


def test_fit_never_splits_a_wide_character():
    assert cli.fit("你好世界", 5) == "你好"
    assert cli.fit("ab👍🏽cd", 3) == "ab"
    assert cli.fit_tail("你好世界", 5) == "世界"


LONG = "  * Bash " + "你好世界,hello world " * 20


@pytest.mark.parametrize("width", [40, 57, 80, 110])
def test_a_long_line_wraps_within_the_width_and_loses_nothing(width: int):
    lines = cli.wrap(LONG, width)
    assert len(lines) > 1 and all(columns(line) <= width for line in lines)
    assert lines[0].startswith("  * Bash ")
    assert all(line.startswith("    ") for line in lines[1:])  # continued under the text
    assert re.sub(r"\s+", "", "".join(lines)) == re.sub(r"\s+", "", LONG)


def test_a_short_line_is_left_alone():
    assert cli.wrap("  + 完成", 40) == ["  + 完成"]


def screen(cols: int | None, *, colour: bool = False) -> tuple[cli.Screen, io.StringIO]:
    out = io.StringIO()
    return cli.Screen(out, io.StringIO(), live=False, columns=cols, colour=colour), out


@pytest.mark.parametrize("cols, width", [(20, 40), (30, 40), (80, 80), (200, 110), (500, 110)])
def test_every_line_on_a_terminal_narrower_or_wider_than_the_limits_fits(cols: int, width: int):
    sc, out = screen(cols)
    render = cli.Render(verbose=True)
    hostile = "\x1b]0;title\x07" + "列\t".join(["x" * 30] * 12) + "\x1bPq#0;2;0;0;0\x1b\\\r\n" + "y" * 400
    for ev in (
        Text(text=hostile),
        ToolCall(text="ls " + "z" * 300, tool="Bash", id="t1", input={"command": "ls"}),
        ToolResult(text=hostile, tool_use_id="t1", is_error=True),
        SyntheticError(text="API Error: " + "w" * 500),
    ):
        for line in render.lines(ev):
            sc.say(line)
    written = out.getvalue().split("\n")[:-1]
    assert len(written) > 8
    assert all(columns(line) <= width for line in written), max(columns(line) for line in written)
    assert "\x1b" not in out.getvalue() and "\t" not in out.getvalue() and "\r" not in out.getvalue()
    assert max(columns(line) for line in written) >= width - 2  # and the room is used


def test_without_a_terminal_nothing_is_cut(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    sc, out = screen(None)
    sc.say("x" * 500)
    assert out.getvalue() == "x" * 500 + "\n"


def test_columns_from_the_environment_count_for_a_pipe(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("COLUMNS", "50")
    sc, out = screen(None)
    sc.say("x" * 120)
    assert [len(line) for line in out.getvalue().split("\n")[:-1]] == [50, 50, 20]


def test_only_flowers_own_colour_reaches_the_screen():
    sc, out = screen(80, colour=True)
    sc.say("# 旁路问答失败:\x1b[32mgreen from the model\x1b[0m", tone="red")
    assert out.getvalue() == f"{TONES['red']}# 旁路问答失败:green from the model{RESET}\n"
    plain, out = screen(80, colour=False)
    plain.say("x", tone="red")
    assert out.getvalue() == "x\n"  # not a terminal: no colour at all


def test_the_prompt_shows_the_cursor_where_it_is():
    err = io.StringIO()
    sc = cli.Screen(io.StringIO(), err, live=True, columns=60)
    sc.open_prompt("> ")
    sc.typed("hel你lo", 4)
    assert err.getvalue().endswith("> hel你lo\x1b[2D")  # two columns back: before "lo"
    sc.typed("hel你lo", None)
    assert err.getvalue().endswith("> hel你lo")


def test_a_long_typed_line_keeps_the_cursor_in_view():
    text = "0123456789" * 10
    shown, back = visible_part(text, 5, 20)
    assert "5" in shown and columns(shown) <= 20 and shown.endswith(shown[-back:])
    shown, back = visible_part(text, None, 20)
    assert shown == text[-20:] and back == 0


def test_a_round_that_died_on_an_api_error_says_so_not_success():
    render = cli.Render()
    render.lines(SyntheticError(text="API Error: Connection refused (ECONNREFUSED)"))
    line = render.lines(Result(text="success", is_error=True))
    assert line == ["  x 这一轮没跑完:API Error: Connection refused (ECONNREFUSED)"]
    assert "(success)" not in line[0]
    assert render.lines(Result(text="error_max_turns", is_error=True)) == [
        "  x 这一轮没跑完(error_max_turns)"
    ]
