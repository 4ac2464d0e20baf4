"""awk: the program text is tokenised (strings, regexes, comments) and judged token by token.

An awk program can run commands (``system()``, ``print | "cmd"``, ``"cmd" | getline``,
``|&`` coprocesses), write files (``print > "f"``, ``printf >> "f"``), read any file
(``getline < "f"``, or assigning ``ARGV``), read the environment (``ENVIRON``, gawk's
``PROCINFO``, ``SYMTAB``) and load code (gawk's ``@load``, ``@include``, ``-f``, ``-i``, ``-l``,
mawk's ``-W``). So, outside strings and regex literals:

- no ``|`` other than ``||``, no ``@``;
- none of the names ``system getline ENVIRON PROCINFO SYMTAB FUNCTAB ARGV ARGC``;
- after the first ``print`` or ``printf``, no ``>`` or ``>>`` outside parentheses (a bare ``>``
  in a print statement is always a redirection; comparisons elsewhere stay allowed);
- a regex literal may not hold ``/`` inside a bracket (awks disagree on where it ends).

Options: only ``-F FS`` and ``-v NAME=VALUE`` (not naming the variables above), then the program
text, then input files (read for their content) and ``NAME=VALUE`` assignments. A word after the
program that starts with ``-`` is refused, as an awk that permutes its arguments would read it as
an option.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..paths import Reads
from ..refusal import Refused
from .base import Program

_FORBIDDEN = frozenset({"system", "getline", "ENVIRON", "PROCINFO", "SYMTAB", "FUNCTAB", "ARGV", "ARGC"})
_KEYWORDS = frozenset(
    {
        "BEGIN",
        "END",
        "function",
        "func",
        "if",
        "else",
        "while",
        "for",
        "do",
        "break",
        "continue",
        "next",
        "nextfile",
        "exit",
        "return",
        "delete",
        "in",
        "print",
        "printf",
    }
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
# After these a '/' divides; anywhere else it opens a regex literal.
_OPERAND_END = frozenset({"ident", "number", "string", "regex", ")", "]", "++", "--"})


def _skip_literal(s: str, i: int, close: str) -> int:
    """Index past a string (``close`` is ``"``) or regex literal (``/``) opening at ``i``."""
    i += 1
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            i += 2
            continue
        if ch == close:
            return i + 1
        if ch == "\n":
            break
        if ch == "[" and close == "/":
            end = i + 1
            if end < len(s) and s[end] == "^":
                end += 1
            if end < len(s) and s[end] == "]":
                end += 1
            bracket_end = s.find("]", end)
            if bracket_end < 0:
                break
            if "/" in s[i:bracket_end] or "\n" in s[i:bracket_end]:
                raise Refused("awk: a '/' inside a regex bracket")
            i = bracket_end + 1
            continue
        i += 1
    raise Refused("awk: an unterminated string" if close == '"' else "awk: an unterminated regex")


def check_program(prog: str) -> None:
    """Raise Refused unless an awk program only reads its input and prints to stdout."""
    s = prog
    i = 0
    previous = ""
    printing = False
    depth = 0
    while i < len(s):
        ch = s[i]
        if ch in " \t\n":
            i += 1
            continue
        if ch == "\\" and i + 1 < len(s) and s[i + 1] == "\n":
            i += 2
            continue
        if ch == "#":
            end = s.find("\n", i)
            i = len(s) if end < 0 else end
            continue
        if ch == '"':
            i = _skip_literal(s, i, '"')
            previous = "string"
            continue
        if ch == "/" and previous not in _OPERAND_END:
            i = _skip_literal(s, i, "/")
            previous = "regex"
            continue
        m = _IDENT.match(s, i)
        if m:
            name = m.group()
            if name in _FORBIDDEN:
                raise Refused(f"awk: {name}")
            if name in ("print", "printf"):
                printing = True
            previous = "keyword" if name in _KEYWORDS else "ident"
            i = m.end()
            continue
        m = _NUMBER.match(s, i)
        if m:
            previous = "number"
            i = m.end()
            continue
        if ch == "@":
            raise Refused("awk: '@' (gawk directives and indirect calls)")
        if ch == "|":
            if s.startswith("||", i):
                previous = "||"
                i += 2
                continue
            raise Refused("awk: a pipe")
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch == ">" and printing and depth == 0 and not s.startswith(">=", i):
            raise Refused("awk: an output redirection")
        for op in ("++", "--"):
            if s.startswith(op, i):
                previous = op
                i += 2
                break
        else:
            previous = ch
            i += 1


def _check_assignment(text: str) -> None:
    m = _ASSIGNMENT.match(text)
    if m is None:
        raise Refused(f"awk: -v {text!r} is not NAME=VALUE")
    if m.group(1) in _FORBIDDEN:
        raise Refused(f"awk: assigning {m.group(1)}")


def _awk(argv: Sequence[str], ctx: Context) -> None:
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        letter, attached = word[1:2], word[2:]
        if letter not in ("F", "v"):
            raise Refused(f"awk option {word}")
        if not attached:
            i += 1
            if i >= len(argv):
                raise Refused(f"awk option {word} without its value")
            attached = argv[i]
        if letter == "v":
            _check_assignment(attached)
        i += 1
    if i >= len(argv):
        raise Refused("awk without a program")
    check_program(argv[i])
    for word in argv[i + 1 :]:
        if word.startswith("-") and word != "-":
            raise Refused(f"awk: {word} after the program")
        m = _ASSIGNMENT.match(word)
        if m is not None:
            _check_assignment(word)
        else:
            ctx.read(word, Reads.CONTENT)


PROGRAMS = [
    Program(name, _awk, "programs with no command, pipe, redirection, getline, ENVIRON or ARGV")
    for name in ("awk", "gawk", "mawk", "nawk")
]
