"""Split a command line into words, operators and redirections the way bash does.

Only the part of bash's grammar a glance needs is modelled; every other construct is refused
rather than guessed at. What the lexer refuses, and why:

- any expansion that could produce text we cannot see: ``$NAME``, ``${...}``, ``$(...)``,
  ``$((...))``, ``$[...]``, backquotes, ``$'...'`` and ``$"..."`` quoting, process
  substitution ``<(...)`` / ``>(...)``;
- parentheses of any kind (subshells, function definitions, extglob patterns, zsh glob
  qualifiers), ``;;`` and ``;&`` (case items), comments (``#`` starting a word);
- brace expansion (``{a,b}``, ``{1..3}``), tilde expansion (an unquoted ``~`` at the start of
  a word or after ``=`` or ``:``) and zsh's ``=cmd`` expansion (an unquoted ``=`` starting a word);
- here-documents and here-strings, ``{var}>`` redirections, and anything bash would reject as a
  syntax error (an unterminated quote, a redirection without a target, a trailing backslash).

Quote removal is done here, so a word's ``value`` is exactly what the program receives in its
argv. Which characters were unquoted is remembered, so the glob module can expand patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .refusal import Refused

_FD_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal."""

    value: str
    # Positions in ``value`` of characters that were not quoted: only these can act as glob
    # characters.
    unquoted: frozenset[int] = frozenset()

    @property
    def has_glob(self) -> bool:
        return any(self.value[i] in "*?[" for i in self.unquoted)


@dataclass(frozen=True)
class Operator:
    """A control operator: ``&&``, ``||``, ``;``, ``|``, ``|&``, ``&`` or a newline."""

    kind: str


@dataclass(frozen=True)
class Redirection:
    """``[fd]op target``, for example ``2>&1`` or ``>/dev/null``."""

    fd: str | None
    op: str
    target: Word


Token = Word | Operator | Redirection


@dataclass
class _Builder:
    chars: list[str] = field(default_factory=list)
    quoted: list[bool] = field(default_factory=list)

    def add(self, text: str, *, quoted: bool) -> None:
        for ch in text:
            self.chars.append(ch)
            self.quoted.append(quoted)

    def plain_digits(self) -> bool:
        pairs = zip(self.chars, self.quoted, strict=True)
        return bool(self.chars) and all(c.isdigit() and not q for c, q in pairs)

    def text(self) -> str:
        return "".join(self.chars)

    def build(self) -> Word:
        value = self.text()
        live = [not q for q in self.quoted]
        for i, ch in enumerate(value):
            if not live[i]:
                continue
            if ch == "~" and (i == 0 or (value[i - 1] in "=:" and live[i - 1])):
                raise Refused("tilde expansion")
            if ch == "=" and i == 0 and len(value) > 1:
                raise Refused("a word starting with '=' (zsh expands it to a program's path)")
            if ch == "{" and _brace_expansion(value, live, i):
                raise Refused("brace expansion")
        return Word(value, frozenset(i for i in range(len(value)) if live[i]))


def _brace_expansion(value: str, live: list[bool], start: int) -> bool:
    """Whether an unquoted ``{`` at ``start`` may open a brace expansion (a superset of bash's test)."""
    for j in range(start + 1, len(value)):
        if not live[j]:
            continue
        if value[j] == ",":
            return True
        if value[j] == "." and j + 1 < len(value) and value[j + 1] == "." and live[j + 1]:
            return True
        if value[j] == "}":
            return False
    return False


class _Lexer:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.tokens: list[Token] = []
        self.word: _Builder | None = None
        self.pending: tuple[str | None, str] | None = None  # a redirection waiting for its target

    # -- helpers

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def builder(self) -> _Builder:
        if self.word is None:
            self.word = _Builder()
        return self.word

    def finish_word(self) -> None:
        if self.word is None:
            return
        word = self.word.build()
        self.word = None
        if self.pending is not None:
            fd, op = self.pending
            self.pending = None
            self.tokens.append(Redirection(fd, op, word))
        else:
            self.tokens.append(word)

    def operator(self, kind: str) -> None:
        self.finish_word()
        if self.pending is not None:
            raise Refused("a redirection without a target")
        self.tokens.append(Operator(kind))

    # -- the pieces of a word

    def dollar(self, *, in_double_quotes: bool) -> None:
        # A '$' is literal only where no shell reads it as an expansion: at the end, before a
        # blank or a '/', or before the closing quote. Everything else, bash's names, specials,
        # `${`, `$(`, `$[`, `$'`, `$"` and zsh's rarer forms, is refused.
        nxt = self.peek(1)
        literal = nxt in ("", " ", "\t", "\n", "/") or (nxt == '"' and in_double_quotes)
        if not literal:
            raise Refused("a '$' expansion")
        self.builder().add("$", quoted=in_double_quotes)
        self.i += 1

    def backslash(self) -> None:
        nxt = self.peek(1)
        if nxt == "":
            raise Refused("a trailing backslash")
        self.i += 2
        if nxt != "\n":  # backslash-newline is a line continuation
            self.builder().add(nxt, quoted=True)

    def single_quotes(self) -> None:
        end = self.s.find("'", self.i + 1)
        if end < 0:
            raise Refused("an unterminated quote")
        self.builder().add(self.s[self.i + 1 : end], quoted=True)
        self.i = end + 1

    def double_quotes(self) -> None:
        b = self.builder()
        self.i += 1
        while True:
            ch = self.peek()
            if ch == "":
                raise Refused("an unterminated quote")
            if ch == '"':
                self.i += 1
                return
            if ch == "`":
                raise Refused("command substitution")
            if ch == "$":
                self.dollar(in_double_quotes=True)
            elif ch == "\\" and self.peek(1) in ("$", "`", '"', "\\", "\n"):
                if self.peek(1) != "\n":
                    b.add(self.peek(1), quoted=True)
                self.i += 2
            else:
                b.add(ch, quoted=True)
                self.i += 1

    def redirection(self) -> None:
        fd: str | None = None
        if self.word is not None and self.word.plain_digits():
            fd = self.word.text()
            self.word = None
        elif self.word is not None and _FD_VARIABLE.fullmatch(self.word.text()):
            raise Refused("a {variable} redirection")
        else:
            self.finish_word()
        if self.pending is not None:
            raise Refused("a redirection without a target")
        for op in ("<<<", "<<-", "<<", "<&", "<>", ">>", ">&", ">|", "<", ">"):
            if self.s.startswith(op, self.i):
                break
        if op.startswith("<<"):
            raise Refused("a here-document or here-string")
        if self.peek(len(op)) == "(":
            raise Refused("process substitution")
        self.i += len(op)
        self.pending = (fd, op)

    def run(self) -> list[Token]:
        while self.i < len(self.s):
            ch = self.peek()
            nxt = self.peek(1)
            if ch in " \t":
                self.finish_word()
                self.i += 1
            elif ch == "\n":
                self.operator("\n")
                self.i += 1
            elif ch == "#" and self.word is None:
                raise Refused("a comment")
            elif ch == "\\":
                self.backslash()
            elif ch == "'":
                self.single_quotes()
            elif ch == '"':
                self.double_quotes()
            elif ch == "`":
                raise Refused("command substitution")
            elif ch == "$":
                self.dollar(in_double_quotes=False)
            elif ch in "()":
                raise Refused("parentheses (subshell, function, extglob or substitution)")
            elif ch == ";":
                if nxt in (";", "&"):
                    raise Refused("a case terminator")
                self.operator(";")
                self.i += 1
            elif ch == "&":
                if nxt == "&":
                    self.operator("&&")
                    self.i += 2
                elif nxt == ">":
                    self.finish_word()
                    if self.pending is not None:
                        raise Refused("a redirection without a target")
                    op = "&>>" if self.s.startswith("&>>", self.i) else "&>"
                    if self.peek(len(op)) == "(":
                        raise Refused("process substitution")
                    self.i += len(op)
                    self.pending = (None, op)
                else:
                    self.operator("&")
                    self.i += 1
            elif ch == "|":
                if nxt in ("|", "&"):
                    self.operator("|" + nxt)
                    self.i += 2
                else:
                    self.operator("|")
                    self.i += 1
            elif ch in "<>":
                self.redirection()
            else:
                self.builder().add(ch, quoted=False)
                self.i += 1
        self.finish_word()
        if self.pending is not None:
            raise Refused("a redirection without a target")
        return self.tokens


def tokenize(text: str) -> list[Token]:
    """Words, operators and redirections of ``text``; raises Refused on anything not modelled."""
    return _Lexer(text).run()
