"""Editing one line key by key, for a terminal in non-canonical mode. A pure state machine: bytes
in, actions out; it never touches a terminal, so every key can be tested from a table.

Keys (what the CLI reference documents):
- printable characters are inserted at the cursor; UTF-8 is assembled incrementally, so a
  character split across two reads enters the line once it is whole;
- Backspace / Ctrl-H delete the character before the cursor, Delete (ESC [3~) the one under it;
  a character is a grapheme cluster (a Chinese character, an emoji with its modifiers), never
  one byte of it;
- Left / Right move the cursor; Home / End (ESC [H, ESC [F, ESC OH, ESC OF, ESC [1~, ESC [4~,
  ESC [7~, ESC [8~) and Ctrl-A / Ctrl-E jump to the start / end;
- Ctrl-U clears the line; Ctrl-D is the end of input only on an empty line, ignored otherwise;
- Up / Down do nothing (there is no history; moving would look as if something were lost);
- Enter hands the line over and starts a new one (a CR LF pair is one Enter);
- Ctrl-C arrives as a key (ISIG is off) and is reported as such;
- every other control character, and every other escape sequence, is swallowed whole.
"""

from __future__ import annotations

import codecs
import unicodedata
from dataclasses import dataclass

from wcwidth import iter_graphemes


@dataclass(frozen=True)
class Edited:
    """The line or the cursor changed: redraw `text` with the cursor before `text[cursor:]`."""

    text: str
    cursor: int


@dataclass(frozen=True)
class Submitted:
    """Enter: the finished line; the editor starts over empty."""

    text: str


@dataclass(frozen=True)
class Interrupted:
    """Ctrl-C was pressed (the half-typed line is dropped)."""


@dataclass(frozen=True)
class EndOfInput:
    """Ctrl-D on an empty line."""


Action = Edited | Submitted | Interrupted | EndOfInput

# Bidi controls would make the line display in another order than it is sent.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# CSI / SS3 final bytes -> what they do (parameters, e.g. of Ctrl-Left, are ignored)
_FINALS = {"C": "right", "D": "left", "H": "home", "F": "end", "A": "none", "B": "none"}
# ESC [ n ~ -> what it does; 200/201 bracket a paste and are just markers
_TILDES = {"1": "home", "7": "home", "4": "end", "8": "end", "3": "delete"}
_LONGEST = 32  # no key sends a longer CSI; beyond this it was not one


class LineEditor:
    """One line being typed: `buffer` and `cursor` (an index into `buffer`, always between two
    grapheme clusters). `feed(bytes)` applies the keys and returns what changed, in order."""

    def __init__(self) -> None:
        self.buffer = ""
        self.cursor = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._escape = ""  # an escape sequence being read, from its ESC on
        self._after_cr = False

    def feed(self, data: bytes) -> list[Action]:
        actions: list[Action] = []
        for ch in self._decoder.decode(data):
            action = self._key(ch)
            if action is not None:
                actions.append(action)
        return actions

    # -- one character ---------------------------------------------------------------------------
    def _key(self, ch: str) -> Action | None:
        after_cr, self._after_cr = self._after_cr, False
        if self._escape:
            return self._sequence(ch)
        if ch == "\x1b":
            self._escape = ch
            return None
        if ch == "\n" and after_cr:
            return None  # the LF of a CR LF pair: that Enter was handled already
        if ch in "\r\n":
            self._after_cr = ch == "\r"
            line, self.buffer, self.cursor = self.buffer, "", 0
            return Submitted(line)
        if ch == "\x03":
            self.buffer, self.cursor = "", 0
            return Interrupted()
        if ch == "\x04":
            return EndOfInput() if not self.buffer else None
        if ch in "\x7f\x08":
            return self._delete_before()
        if ch == "\x01":
            return self._move_to(0)
        if ch == "\x05":
            return self._move_to(len(self.buffer))
        if ch == "\x15":
            if not self.buffer:
                return None
            self.buffer, self.cursor = "", 0
            return self._edited()
        if unicodedata.category(ch) == "Cc" or ch in _BIDI:
            return None
        self.buffer = self.buffer[: self.cursor] + ch + self.buffer[self.cursor :]
        self.cursor += len(ch)
        return self._edited()

    def _sequence(self, ch: str) -> Action | None:
        """One more character of an escape sequence; acts once the sequence is complete."""
        self._escape += ch
        seq = self._escape
        if len(seq) == 2:
            if ch in "[O":
                return None
            self._escape = ""  # ESC plus one character (Alt-x): swallowed
            return None
        if seq[1] == "O":  # SS3: exactly one character follows
            self._escape = ""
            return self._do(_FINALS.get(ch, "none"))
        if not " " <= ch <= "~" or len(seq) > _LONGEST:
            self._escape = ""  # not a sequence after all: the key counts on its own
            return self._key(ch)
        if not "@" <= ch <= "~":
            return None  # a parameter or intermediate byte of a CSI
        self._escape = ""
        if ch == "~":
            return self._do(_TILDES.get(seq[2:-1].split(";")[0], "none"))
        return self._do(_FINALS.get(ch, "none"))

    # -- what keys do ----------------------------------------------------------------------------
    def _do(self, what: str) -> Action | None:
        if what == "left":
            return self._move_to(self._boundary_before(self.cursor))
        if what == "right":
            return self._move_to(self._boundary_after(self.cursor))
        if what == "home":
            return self._move_to(0)
        if what == "end":
            return self._move_to(len(self.buffer))
        if what == "delete":
            after = self._boundary_after(self.cursor)
            if after == self.cursor:
                return None
            self.buffer = self.buffer[: self.cursor] + self.buffer[after:]
            return self._edited()
        return None

    def _delete_before(self) -> Action | None:
        before = self._boundary_before(self.cursor)
        if before == self.cursor:
            return None
        self.buffer = self.buffer[:before] + self.buffer[self.cursor :]
        self.cursor = before
        return self._edited()

    def _move_to(self, position: int) -> Action | None:
        if position == self.cursor:
            return None
        self.cursor = position
        return self._edited()

    def _edited(self) -> Edited:
        return Edited(self.buffer, self.cursor)

    def _boundaries(self) -> list[int]:
        out, at = [0], 0
        for g in iter_graphemes(self.buffer):
            at += len(g)
            out.append(at)
        return out

    def _boundary_before(self, position: int) -> int:
        return max((b for b in self._boundaries() if b < position), default=position)

    def _boundary_after(self, position: int) -> int:
        return min((b for b in self._boundaries() if b > position), default=position)
