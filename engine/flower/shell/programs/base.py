"""The shape of a program's rule, and the helpers most rules are built from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..context import Context
from ..options import Parsed, Table, parse
from ..paths import Reads
from ..refusal import Refused

Check = Callable[[Sequence[str], Context], None]


@dataclass(frozen=True)
class Program:
    """One admitted program: its rule (raises Refused) and the rule in one sentence."""

    name: str
    check: Check
    rule: str
    builtin: bool = False  # a shell builtin: PATH does not decide what runs


def names(text: str) -> frozenset[str]:
    """A set of words written as one whitespace-separated block (long lists stay readable)."""
    return frozenset(text.split())


def read_option_paths(parsed: Parsed, ctx: Context) -> None:
    """Judge every path-valued option argument."""
    for option, value in parsed.given:
        if option.reads is not None and value is not None:
            ctx.read(value, option.reads)


def read_operands(words: Sequence[str], parsed: Parsed, ctx: Context, reads: Reads) -> None:
    """Judge path operands, and the late option words that could be operands too."""
    for value in [*words, *parsed.late]:
        ctx.read(value, reads)


def count(parsed: Parsed, low: int, high: int | None, what: str = "operands") -> None:
    n = len(parsed.operands)
    if n < low or (high is not None and n > high):
        raise Refused(f"{n} {what}")


def files(
    table: Table,
    reads: Reads = Reads.CONTENT,
    *,
    low: int = 0,
    high: int | None = None,
    extra: Callable[[Parsed, Context], None] | None = None,
) -> Check:
    """A rule for a program whose options are ``table`` and whose operands are all paths."""

    def check(argv: Sequence[str], ctx: Context) -> None:
        parsed = parse(table, argv)
        count(parsed, low, high)
        read_option_paths(parsed, ctx)
        read_operands(parsed.operands, parsed, ctx, reads)
        if extra is not None:
            extra(parsed, ctx)

    return check


def text(table: Table, *, low: int = 0, high: int | None = None) -> Check:
    """A rule for a program whose operands are plain text (names, numbers, strings)."""

    def check(argv: Sequence[str], ctx: Context) -> None:
        parsed = parse(table, argv)
        count(parsed, low, high)
        read_option_paths(parsed, ctx)

    return check
