"""A getopt-style option parser driven by option tables written like ``--help`` output.

A program's table lists every option a glance may use, and nothing else::

    HEAD = options("-n, --lines=NUM", "-c, --bytes=NUM", "-q, --quiet, --silent", numeric=True)

``--name=ARG`` takes a required argument (also as the next word, or attached to a short option),
``--name[=ARG]`` an optional one (only with ``=``, or attached). The placeholder says what the
argument is: ``FILE`` is a file whose content the program reads, ``PATH`` a path it only lists or
stats; anything else is plain text.

Parsing is strict, so that our reading can never differ from the program's: an option missing
from the table is refused, and long options must be written in full (getopt and git accept
unambiguous abbreviations, and an abbreviation of an allowed option could also abbreviate one we
never listed). Options may follow operands, as GNU getopt permutes them; words that do are also
reported in ``late``, because with ``POSIXLY_CORRECT`` set they would be operands instead (rules
judge them as paths too, and a program whose second operand is written refuses them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .paths import Reads
from .refusal import Refused

_SPEC = re.compile(r"^(--?[A-Za-z0-9][\w.-]*)(\[=([A-Z_]+)\]|=([A-Z_]+)|\[([A-Z_]+)\])?$")
_PATH_PLACEHOLDERS = {"FILE": Reads.CONTENT, "PATH": Reads.NAMES}


@dataclass(frozen=True)
class Option:
    key: str  # the first name in the table line, e.g. "-n"
    takes: str  # "", "required" or "optional"
    reads: Reads | None  # what the argument is, when it is a path


@dataclass(frozen=True)
class Table:
    short: dict[str, Option]
    long: dict[str, Option]
    numeric: bool  # `-5` means a count, as head/tail/grep take it
    # False for parsers (tree's) where a valued letter inside a cluster takes the next word and
    # the cluster goes on: such a letter must then stand alone, as `-L 2`.
    attached: bool = True


def options(*lines: str, numeric: bool = False, attached: bool = True) -> Table:
    """Build a table from lines like ``"-n, --lines=NUM"`` (see the module docstring).

    As in ``--help`` output, a required argument written on one name (``--lines=NUM``) belongs
    to every name of the line; an optional one (``--check[=WHEN]``) only to the name that shows
    it, because getopt gives short options no optional argument unless it says so (``-I[FMT]``).
    """
    short: dict[str, Option] = {}
    long: dict[str, Option] = {}
    for line in lines:
        specs = []
        required = ""
        for name in (n.strip() for n in line.split(",")):
            m = _SPEC.match(name)
            if m is None:
                raise ValueError(f"bad option spec {name!r}")
            optional = m.group(3) or m.group(5) or ""
            required = required or m.group(4) or ""
            specs.append((m.group(1), optional))
        key = specs[0][0]
        for name, optional in specs:
            if required:
                option = Option(key, "required", _PATH_PLACEHOLDERS.get(required))
            elif optional:
                option = Option(key, "optional", _PATH_PLACEHOLDERS.get(optional))
            else:
                option = Option(key, "", None)
            if name.startswith("--"):
                long[name[2:]] = option
            else:
                if len(name) != 2:
                    raise ValueError(f"short option {name!r} must be one letter")
                short[name[1]] = option
    return Table(short, long, numeric, attached)


@dataclass
class Parsed:
    given: list[tuple[Option, str | None]] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)

    def has(self, key: str) -> bool:
        return any(o.key == key for o, _ in self.given)

    def values(self, key: str) -> list[str]:
        return [v for o, v in self.given if o.key == key and v is not None]


def parse(table: Table, argv: Sequence[str], *, permute: bool = True) -> Parsed:
    """Split ``argv`` into the options it gives and its operands; raise Refused on anything unknown.

    ``permute=False`` is for programs that stop reading options at the first operand (xxd):
    every later word is an operand, whatever it looks like.
    """
    out = Parsed()
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        first = i - 1
        if word == "--":
            out.operands.extend(argv[i:])
            break
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            option = table.long.get(name)
            if option is None:
                raise Refused(f"option {word.split('=', 1)[0]}")
            if option.takes == "":
                if eq:
                    raise Refused(f"option {word} with a value")
                out.given.append((option, None))
            elif option.takes == "optional" or eq:
                out.given.append((option, value if eq else None))
            else:
                if i >= len(argv):
                    raise Refused(f"option {word} without its value")
                out.given.append((option, argv[i]))
                i += 1
        elif word.startswith("-") and word != "-":
            letters = word[1:]
            if table.numeric and letters.isdigit():
                out.given.append((Option("-NUM", "required", None), letters))
            else:
                i = _short_cluster(table, letters, argv, i, out)
        else:
            out.operands.append(word)
            if not permute:
                out.operands.extend(argv[i:])
                break
            continue
        if out.operands:
            out.late.extend(argv[first:i])
    return out


def _short_cluster(table: Table, letters: str, argv: Sequence[str], i: int, out: Parsed) -> int:
    k = 0
    while k < len(letters):
        option = table.short.get(letters[k])
        if option is None:
            raise Refused(f"option -{letters[k]}")
        rest = letters[k + 1 :]
        if option.takes == "":
            out.given.append((option, None))
            k += 1
            continue
        if not table.attached and (k or rest):
            raise Refused(f"option -{letters[k]} inside a cluster")
        if rest or option.takes == "optional":
            out.given.append((option, rest or None))
        elif i < len(argv):
            out.given.append((option, argv[i]))
            i += 1
        else:
            raise Refused(f"option -{letters[k]} without its value")
        break
    return i
