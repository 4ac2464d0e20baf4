"""The line editor as the CLI reference documents it, key by key: bytes in, the line, the cursor
and the actions out. One row per key (and per way a key is spelt)."""

from __future__ import annotations

import pytest

from flower.cli.lineedit import Action, Edited, EndOfInput, Interrupted, LineEditor, Submitted

LEFT, RIGHT, UP, DOWN = b"\x1b[D", b"\x1b[C", b"\x1b[A", b"\x1b[B"
HOME, END, DELETE = b"\x1b[H", b"\x1b[F", b"\x1b[3~"
BACKSPACE, CTRL_H = b"\x7f", b"\x08"
CTRL_A, CTRL_E, CTRL_U, CTRL_D, CTRL_C = b"\x01", b"\x05", b"\x15", b"\x04", b"\x03"


def typed(editor: LineEditor, *keys: bytes) -> list[Action]:
    actions: list[Action] = []
    for key in keys:
        actions += editor.feed(key)
    return actions


# (what was typed before, the key, the line after, the cursor after, the actions of that key)
KEYS = [
    pytest.param(b"", b"a", "a", 1, [Edited("a", 1)], id="a printable character is inserted"),
    pytest.param(
        b"ab", LEFT + b"X", "aXb", 2, [Edited("ab", 1), Edited("aXb", 2)], id="inserted at the cursor"
    ),
    pytest.param(b"", "你好".encode(), "你好", 2, [Edited("你", 1), Edited("你好", 2)], id="chinese text"),
    pytest.param(b"abc", BACKSPACE, "ab", 2, [Edited("ab", 2)], id="backspace deletes one character"),
    pytest.param(
        "你好".encode(),
        BACKSPACE,
        "你",
        1,
        [Edited("你", 1)],
        id="backspace deletes a whole chinese character",
    ),
    pytest.param(b"abc", CTRL_H, "ab", 2, [Edited("ab", 2)], id="ctrl-h is backspace"),
    pytest.param(
        b"abc", LEFT + BACKSPACE, "ac", 1, [Edited("abc", 2), Edited("ac", 1)], id="backspace at the cursor"
    ),
    pytest.param(b"", BACKSPACE, "", 0, [], id="backspace on an empty line does nothing"),
    pytest.param(
        b"abc", HOME + BACKSPACE, "abc", 0, [Edited("abc", 0)], id="backspace at the start does nothing"
    ),
    pytest.param(b"abc", LEFT, "abc", 2, [Edited("abc", 2)], id="left moves the cursor"),
    pytest.param(b"abc", b"\x1bOD", "abc", 2, [Edited("abc", 2)], id="left in application mode"),
    pytest.param(b"abc", b"\x1b[1;5D", "abc", 2, [Edited("abc", 2)], id="ctrl-left moves too"),
    pytest.param(
        b"abc", HOME + RIGHT, "abc", 1, [Edited("abc", 0), Edited("abc", 1)], id="right moves the cursor"
    ),
    pytest.param(
        b"abc",
        b"\x1b[D\x1bOC",
        "abc",
        3,
        [Edited("abc", 2), Edited("abc", 3)],
        id="right in application mode",
    ),
    pytest.param(b"abc", RIGHT, "abc", 3, [], id="right at the end does nothing"),
    pytest.param(b"", LEFT, "", 0, [], id="left at the start does nothing"),
    pytest.param(
        "a你b".encode(),
        LEFT + LEFT,
        "a你b",
        1,
        [Edited("a你b", 2), Edited("a你b", 1)],
        id="moves by characters",
    ),
    pytest.param(
        "e\u0301x".encode(),
        LEFT + LEFT,
        "e\u0301x",
        0,
        [Edited("e\u0301x", 2), Edited("e\u0301x", 0)],
        id="a combining mark moves with its letter",
    ),
    pytest.param(b"abc", HOME, "abc", 0, [Edited("abc", 0)], id="home"),
    pytest.param(b"abc", b"\x1bOH", "abc", 0, [Edited("abc", 0)], id="home in application mode"),
    pytest.param(b"abc", b"\x1b[1~", "abc", 0, [Edited("abc", 0)], id="home as ESC [1~"),
    pytest.param(b"abc", b"\x1b[7~", "abc", 0, [Edited("abc", 0)], id="home as ESC [7~"),
    pytest.param(b"abc", HOME + END, "abc", 3, [Edited("abc", 0), Edited("abc", 3)], id="end"),
    pytest.param(
        b"abc", HOME + b"\x1bOF", "abc", 3, [Edited("abc", 0), Edited("abc", 3)], id="end in application mode"
    ),
    pytest.param(
        b"abc", HOME + b"\x1b[4~", "abc", 3, [Edited("abc", 0), Edited("abc", 3)], id="end as ESC [4~"
    ),
    pytest.param(
        b"abc", HOME + b"\x1b[8~", "abc", 3, [Edited("abc", 0), Edited("abc", 3)], id="end as ESC [8~"
    ),
    pytest.param(b"abc", CTRL_A, "abc", 0, [Edited("abc", 0)], id="ctrl-a goes to the start"),
    pytest.param(
        b"abc", CTRL_A + CTRL_E, "abc", 3, [Edited("abc", 0), Edited("abc", 3)], id="ctrl-e goes to the end"
    ),
    pytest.param(
        b"abc", HOME + DELETE, "bc", 0, [Edited("abc", 0), Edited("bc", 0)], id="delete deletes forward"
    ),
    pytest.param(
        "你好".encode(),
        HOME + DELETE,
        "好",
        0,
        [Edited("你好", 0), Edited("好", 0)],
        id="delete takes a whole chinese character",
    ),
    pytest.param(b"abc", DELETE, "abc", 3, [], id="delete at the end does nothing"),
    pytest.param(b"abc", CTRL_U, "", 0, [Edited("", 0)], id="ctrl-u clears the line"),
    pytest.param(
        b"abc",
        LEFT + CTRL_U,
        "",
        0,
        [Edited("abc", 2), Edited("", 0)],
        id="ctrl-u clears the whole line, not only to the cursor",
    ),
    pytest.param(b"", CTRL_U, "", 0, [], id="ctrl-u on an empty line does nothing"),
    pytest.param(b"", CTRL_D, "", 0, [EndOfInput()], id="ctrl-d on an empty line is the end of input"),
    pytest.param(b"abc", CTRL_D, "abc", 3, [], id="ctrl-d with text is ignored"),
    pytest.param(b"abc", UP, "abc", 3, [], id="up does nothing"),
    pytest.param(b"abc", DOWN, "abc", 3, [], id="down does nothing"),
    pytest.param(b"abc", b"\x1bOA\x1bOB", "abc", 3, [], id="up and down in application mode do nothing"),
    pytest.param(b"abc", b"\r", "", 0, [Submitted("abc")], id="enter submits the line and starts over"),
    pytest.param(b"abc", b"\n", "", 0, [Submitted("abc")], id="a newline is enter too"),
    pytest.param(b"abc", b"\r\n", "", 0, [Submitted("abc")], id="cr lf is one enter, not two"),
    pytest.param(
        b"abc",
        LEFT + b"\r",
        "",
        0,
        [Edited("abc", 2), Submitted("abc")],
        id="enter submits all of the line wherever the cursor is",
    ),
    pytest.param(b"abc", CTRL_C, "", 0, [Interrupted()], id="ctrl-c is reported and drops the line"),
    pytest.param(b"abc", b"\t", "abc", 3, [], id="tab is a control character: ignored"),
    pytest.param(
        b"abc", b"\x02\x06\x0b\x0c\x0e\x17\x1a", "abc", 3, [], id="other control characters are ignored"
    ),
    pytest.param(b"abc", "\u202e".encode(), "abc", 3, [], id="a bidi override is ignored"),
    pytest.param(
        b"abc", b"\x1b[5~\x1b[6~\x1b[2~", "abc", 3, [], id="page up, page down, insert are swallowed whole"
    ),
    pytest.param(
        b"abc", b"\x1b[200~x\x1b[201~", "abcx", 4, [Edited("abcx", 4)], id="bracketed paste: only the text"
    ),
    pytest.param(b"abc", b"\x1bx", "abc", 3, [], id="alt-x is swallowed"),
    pytest.param(b"abc", b"\x1b[", "abc", 3, [], id="half a sequence waits for the rest"),
    pytest.param(
        b"abc",
        b"\x1b[\xe4\xbd\xa0",
        "abc你",
        4,
        [Edited("abc你", 4)],
        id="not a sequence after all: the key counts",
    ),
    pytest.param(
        b"", "👍🏽".encode(), "👍🏽", 2, [Edited("👍", 1), Edited("👍🏽", 2)], id="an emoji and its modifier"
    ),
    pytest.param(
        "👍🏽".encode(), BACKSPACE, "", 0, [Edited("", 0)], id="backspace takes the emoji with its modifier"
    ),
]


@pytest.mark.parametrize("before, key, line, cursor, actions", KEYS)
def test_every_key(before: bytes, key: bytes, line: str, cursor: int, actions: list[Action]):
    editor = LineEditor()
    editor.feed(before)
    assert editor.feed(key) == actions
    assert (editor.buffer, editor.cursor) == (line, cursor)


def test_a_character_split_across_reads_enters_once_whole():
    editor = LineEditor()
    data = "好".encode()
    assert editor.feed(data[:1]) == [] and editor.feed(data[1:2]) == []
    assert editor.feed(data[2:]) == [Edited("好", 1)]


def test_an_escape_sequence_split_across_reads_is_still_one_key():
    editor = LineEditor()
    editor.feed(b"abc\x1b")
    assert editor.feed(b"[") == []
    assert editor.feed(b"D") == [Edited("abc", 2)]


def test_a_cr_then_a_later_lf_in_another_read_is_still_one_enter():
    editor = LineEditor()
    assert editor.feed(b"hi\r") == [Edited("h", 1), Edited("hi", 2), Submitted("hi")]
    assert editor.feed(b"\n") == []
    assert editor.feed(b"\n") == [Submitted("")]  # a second Enter is one


def test_editing_chinese_text_in_the_middle_of_a_line():
    editor = LineEditor()
    typed(editor, b"hello", LEFT, LEFT, "你好".encode(), BACKSPACE, HOME, b"[", END, b"]")
    assert (editor.buffer, editor.cursor) == ("[hel你lo]", 8)
    typed(editor, LEFT, DELETE, CTRL_A, DELETE, UP)
    assert editor.buffer == "hel你lo"
    assert typed(editor, b"\r") == [Submitted("hel你lo")]
