"""sed: scripts are parsed the way GNU sed's compiler reads them, then judged command by command.

Admitted commands: ``{ } = d D F g G h H n N p P x z l q Q : b t T a i c s y`` and ``#``
comments. Refused: ``e`` (runs a command), ``r R`` (read another file), ``w W`` (write one),
``v`` (its argument is read like a label, so what follows it starts a new command), the ``e``
and ``w`` flags of ``s``, and anything unknown.

The details GNU sed really has, and where the old reading went wrong:

- a label (``:a``, ``b a``) ends at a blank, ``;``, ``}``, ``#`` or a newline, and what follows it
  is a new command: ``:a e touch x`` runs ``e``. Labels here must be ``[A-Za-z0-9_.-]+`` and be
  followed by nothing but blanks up to ``;``, a newline or the end, so every sed version reads
  them alike;
- blanks may separate the flags of ``s`` (``s/a/b/ w out`` writes ``out``);
- ``[...]`` in a regex is a bracket expression in which the delimiter is literal, in GNU sed 4.x
  but not in every sed: scripts are parsed under both readings and must pass both;
- ``a``, ``i`` and ``c`` text runs to the end of the line, and a backslash continues it: text
  with any backslash beyond the leading one is refused;
- several ``-e`` scripts are joined with newlines, and one ending in a backslash continues into
  the next: refused;
- ``\\c`` escapes in regexes swallow the next character in newer versions only: refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..options import options, parse
from ..paths import Reads
from ..refusal import Refused
from .base import Program, read_operands

# -i/--in-place (writes the files), -f/--file (an unseen script) and --follow-symlinks are left out.
SED = options(
    "-n, --quiet, --silent",
    "--debug",
    "-e, --expression=SCRIPT",
    "-l, --line-length=N",
    "--posix",
    "-E, -r, --regexp-extended",
    "-s, --separate",
    "--sandbox",
    "-u, --unbuffered",
    "-z, --null-data",
    "-b, --binary",
)
_LABEL = re.compile(r"[A-Za-z0-9_.-]+")
_BLANKS = " \t"
_SPACES = " \t\n\v\f\r"
_SIMPLE = frozenset("=dDFgGhHnNpPzx")


class _Script:
    def __init__(self, text: str, *, brackets: bool) -> None:
        self.s = text
        self.n = len(text)
        self.brackets = brackets

    def char(self, i: int) -> str:
        return self.s[i] if i < self.n else ""

    def blank(self, i: int) -> int:
        while i < self.n and self.s[i] in _BLANKS:
            i += 1
        return i

    def digits(self, i: int) -> int:
        while i < self.n and self.s[i].isdigit():
            i += 1
        return i

    def ended(self, i: int) -> int | None:
        """Where the next command starts if ``i`` ends this one (GNU's read_end_of_cmd), else None."""
        ch = self.char(i)
        if ch in ("", "}", "#"):
            return i
        if ch in "\n;":
            return i + 1
        return None

    def end_of_command(self, i: int) -> int:
        i = self.blank(i)
        end = self.ended(i)
        if end is None:
            raise Refused(f"sed: extra characters after a command ({self.char(i)!r})")
        return end

    def bracket(self, i: int) -> int:
        """Index past the ``]`` closing a bracket expression whose ``[`` is just before ``i``."""
        ch = self.char(i)
        i += 1
        if ch == "^":
            ch = self.char(i)
            i += 1
        if ch == "]":
            ch = self.char(i)
            i += 1
        state = 0
        delim = ""
        while True:
            if ch in ("", "\n"):
                raise Refused("sed: an unterminated bracket expression")
            keep_state = False
            if ch in ".:=":
                if state == 1:
                    delim, state, keep_state = ch, 2, True
                elif state == 2 and ch == delim:
                    state, keep_state = 3, True
            elif ch == "[":
                if state == 0:
                    state = 1
                keep_state = True
            elif ch == "]":
                if state in (0, 1):
                    return i
                if state == 3:
                    state = 0
            if not keep_state:
                state &= ~1
            ch = self.char(i)
            i += 1

    def delimited(self, i: int, delim: str, *, regex: bool) -> int:
        """Index past the closing ``delim`` of a regex or replacement starting at ``i``."""
        while i < self.n:
            ch = self.s[i]
            i += 1
            if ch == "\n":
                break
            if ch == delim:
                return i
            if ch == "\\":
                if i >= self.n:
                    break
                if regex and self.s[i] == "c":
                    raise Refused("sed: a \\c escape")
                i += 1
            elif ch == "[" and regex and self.brackets:
                i = self.bracket(i)
        raise Refused("sed: an unterminated regex or replacement")

    def delimiter(self, i: int) -> tuple[str, int]:
        ch = self.char(i)
        if ch in ("", "\n", "\\") or not ch.isascii():
            raise Refused("sed: an unusual delimiter")
        return ch, i + 1

    def address(self, i: int, *, second: bool) -> tuple[int, bool]:
        ch = self.char(i)
        if ch in ("/", "\\"):
            delim = "/"
            i += 1
            if ch == "\\":
                delim, i = self.delimiter(i)
            i = self.delimited(i, delim, regex=True)
            while self.char(self.blank(i)) in ("I", "M"):
                i = self.blank(i) + 1
            return i, True
        if ch.isdigit():
            i = self.digits(i)
            j = self.blank(i)
            if self.char(j) == "~":
                i = self.digits(self.blank(j + 1))
            return i, True
        if ch in ("+", "~"):
            if not second:
                raise Refused("sed: +N or ~N as a first address")
            return self.digits(self.blank(i + 1)), True
        if ch == "$":
            return i + 1, True
        return i, False

    def label(self, i: int, *, required: bool) -> int:
        start = i = self.blank(i)
        while i < self.n and self.s[i] not in "\n;}#" + _BLANKS:
            i += 1
        name = self.s[start:i]
        if (name or required) and not _LABEL.fullmatch(name):
            raise Refused(f"sed: an unusual label ({name!r})")
        after = self.blank(i)
        ch = self.char(after)
        # `b end }` closes a block in every version; `b end}`, `b }` and `b end#` do not read alike.
        if ch in ("", "\n", ";") or (ch == "}" and name and after > i):
            end = self.ended(after)
            assert end is not None
            return end
        raise Refused("sed: a label followed by more text")

    def text(self, i: int) -> int:
        i = self.blank(i)
        if i >= self.n:
            raise Refused("sed: a, i or c without text")
        if self.s[i] == "\\":
            i += 1
            if self.char(i) == "\n":
                i += 1
        end = self.s.find("\n", i)
        end = self.n if end < 0 else end
        if "\\" in self.s[i:end]:
            raise Refused("sed: a backslash in a, i or c text")
        return end + 1

    def substitute(self, i: int) -> int:
        delim, i = self.delimiter(i)
        i = self.delimited(i, delim, regex=True)
        i = self.delimited(i, delim, regex=False)
        while True:
            i = self.blank(i)
            end = self.ended(i)
            if end is not None:
                return end
            ch = self.char(i)
            if ch in "gpiImM":
                i += 1
            elif ch.isdigit():
                i = self.digits(i)
            else:
                raise Refused(f"sed: the s flag {ch!r}")

    def transliterate(self, i: int) -> int:
        delim, i = self.delimiter(i)
        i = self.delimited(i, delim, regex=False)
        i = self.delimited(i, delim, regex=False)
        return self.end_of_command(i)

    def check(self) -> None:
        i = 0
        depth = 0
        while True:
            while i < self.n and (self.s[i] in _SPACES or self.s[i] == ";"):
                i += 1
            if i >= self.n:
                break
            i, addressed = self.address(i, second=False)
            if addressed:
                i = self.blank(i)
                if self.char(i) == ",":
                    i, second = self.address(self.blank(i + 1), second=True)
                    if not second:
                        raise Refused("sed: ',' without a second address")
                    i = self.blank(i)
            if self.char(i) == "!":
                i = self.blank(i + 1)
                if self.char(i) == "!":
                    raise Refused("sed: multiple '!'")
            command = self.char(i)
            i += 1
            if command == "#":
                end = self.s.find("\n", i)
                i = self.n if end < 0 else end + 1
            elif command == "{":
                depth += 1
            elif command == "}":
                if depth == 0 or addressed:
                    raise Refused("sed: an unexpected '}'")
                depth -= 1
                i = self.end_of_command(i)
            elif command in _SIMPLE:
                i = self.end_of_command(i)
            elif command in ("l", "q", "Q"):
                i = self.end_of_command(self.digits(self.blank(i)))
            elif command == ":":
                if addressed:
                    raise Refused("sed: an address on a label")
                i = self.label(i, required=True)
            elif command in ("b", "t", "T"):
                i = self.label(i, required=False)
            elif command in ("a", "i", "c"):
                i = self.text(i)
            elif command == "s":
                i = self.substitute(i)
            elif command == "y":
                i = self.transliterate(i)
            else:
                raise Refused(f"sed: the {command!r} command" if command else "sed: a missing command")
        if depth:
            raise Refused("sed: an unclosed '{'")


def check_script(script: str) -> None:
    """Raise Refused unless a sed script only reads and prints, under both bracket readings."""
    for brackets in (True, False):
        _Script(script, brackets=brackets).check()


def _odd_trailing_backslash(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _sed(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(SED, argv)
    scripts = parsed.values("-e")
    operands = list(parsed.operands)
    if not scripts:
        if not operands:
            raise Refused("sed without a script")
        scripts = [operands.pop(0)]
    if any(_odd_trailing_backslash(s) for s in scripts[:-1]):
        raise Refused("sed: a script that continues into the next -e")
    check_script("\n".join(scripts))
    read_operands(operands, parsed, ctx, Reads.CONTENT)


PROGRAMS = [Program("sed", _sed, "scripts that only read and print; no -i, -f, e, r, R, w, W or v")]
