"""Group tokens into simple commands and judge the redirections between them.

A command line is a list of simple commands joined by ``&&``, ``||``, ``;``, ``|``, ``|&`` or
newlines. Each is judged on its own (the seeds' segment-by-segment rule); a lone ``&`` runs one
in the background and refuses the whole line.

The only redirections a glance keeps are those that cannot touch a file: output thrown away into
``/dev/null`` (``>``, ``>>``, ``>|``, ``&>``, ``&>>`` on stdout or stderr), the stdout/stderr
duplications ``2>&1``, ``1>&2`` and ``>&2``, and input from ``/dev/null``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .lexer import Operator, Redirection, Token, Word
from .refusal import Refused

_JOINERS = frozenset({"&&", "||", "|", "|&"})
_OUTPUT_TO_FILE = frozenset({">", ">>", ">|", "&>", "&>>"})


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[Word, ...]
    redirections: tuple[Redirection, ...]


def split_commands(tokens: list[Token]) -> tuple[list[SimpleCommand], bool]:
    """The simple commands of a command line, and whether a lone ``&`` occurs in it.

    Raises Refused on what bash would reject as a syntax error: an operator with no command
    before it, a joiner (``&&`` ``||`` ``|`` ``|&``) with none after it, a command made only of
    redirections.
    """
    commands: list[SimpleCommand] = []
    words: list[Word] = []
    redirections: list[Redirection] = []
    background = False
    awaiting = False  # after a joiner, a command must follow (newlines may come between)

    def close() -> bool:
        nonlocal words, redirections
        if not words and not redirections:
            return False
        if not words:
            raise Refused("a command made only of redirections")
        commands.append(SimpleCommand(tuple(words), tuple(redirections)))
        words, redirections = [], []
        return True

    for token in tokens:
        if isinstance(token, Word):
            words.append(token)
            continue
        if isinstance(token, Redirection):
            redirections.append(token)
            continue
        assert isinstance(token, Operator)
        had_command = close()
        if had_command:
            awaiting = False
        if token.kind == "\n":
            continue
        if not had_command:
            raise Refused(f"'{token.kind}' without a command before it")
        awaiting = token.kind in _JOINERS
        background = background or token.kind == "&"
    if close():
        awaiting = False
    if awaiting:
        raise Refused("a command line ending in an operator")
    if not commands:
        raise Refused("no command")
    return commands, background


def safe_redirection(r: Redirection) -> bool:
    """Whether a redirection cannot touch any file (see the module docstring)."""
    target = r.target.value
    if r.target.has_glob:
        return False
    if r.op in _OUTPUT_TO_FILE:
        return target == "/dev/null" and r.fd in (None, "1", "2")
    if r.op == ">&":
        if r.fd is None and target == "/dev/null":
            return True
        return r.fd in (None, "1", "2") and target in ("1", "2")
    if r.op == "<":
        return target == "/dev/null" and r.fd in (None, "0")
    return False
