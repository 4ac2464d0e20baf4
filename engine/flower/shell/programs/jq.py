"""jq: a filter language with no writes and no way to run a program.

What a filter can still reach beyond its inputs: the environment (``env``, ``$ENV``), module
files (``import``, ``include``, ``modulemeta``, ``-L``, ``-f``), and jq's own paths
(``get_search_list``, ``get_jq_origin``, ``get_prog_origin``). Those names are refused wherever
they occur in the filter text, strings included (a refusal too many is cheap).
``--slurpfile`` and ``--rawfile`` read files, judged like any content read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..options import options
from ..paths import Reads
from ..refusal import Refused
from .base import Program

_FORBIDDEN = re.compile(r"\$ENV\b|\$__|\benv\b|\bimport\b|\binclude\b|\bmodulemeta\b|\bget_[a-z_]+\b")

# --arg/--argjson/--slurpfile/--rawfile take two words and are handled by the rule itself.
JQ = options(
    "-n, --null-input",
    "-R, --raw-input",
    "-s, --slurp",
    "-c, --compact-output",
    "-r, --raw-output",
    "--raw-output0",
    "-j, --join-output",
    "-a, --ascii-output",
    "-S, --sort-keys",
    "-C, --color-output",
    "-M, --monochrome-output",
    "--tab",
    "--indent=N",
    "--unbuffered",
    "--stream",
    "--stream-errors",
    "--seq",
    "-e, --exit-status",
    "--args",
    "--jsonargs",
)
_TWO_WORDS = {"--arg": None, "--argjson": None, "--slurpfile": Reads.CONTENT, "--rawfile": Reads.CONTENT}


def check_filter(text: str) -> None:
    m = _FORBIDDEN.search(text)
    if m:
        raise Refused(f"jq: {m.group()}")


def _jq(argv: Sequence[str], ctx: Context) -> None:
    # jq reads options anywhere on the line; the first other word is the filter, the rest are
    # input files, or plain values after --args/--jsonargs.
    filter_text: str | None = None
    inputs: list[str] = []
    values = False
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word in _TWO_WORDS:
            if i + 1 >= len(argv):
                raise Refused(f"jq {word} without its two values")
            reads = _TWO_WORDS[word]
            if reads is not None:
                ctx.read(argv[i + 1], reads)
            i += 2
        elif word.startswith("--"):
            name, eq, _ = word[2:].partition("=")
            option = JQ.long.get(name)
            if option is None:
                raise Refused(f"jq option --{name}")
            if option.takes == "required" and not eq:
                i += 1
            values = values or name in ("args", "jsonargs")
        elif word.startswith("-") and word != "-":
            for letter in word[1:]:
                if letter not in JQ.short:
                    raise Refused(f"jq option -{letter}")
        elif filter_text is None:
            filter_text = word
        elif not values:
            inputs.append(word)
    if filter_text is None:
        raise Refused("jq without a filter")
    check_filter(filter_text)
    ctx.own_configuration("jq", (), (".jq",))  # ~/.jq defines functions every filter can call
    for value in inputs:
        ctx.read(value, Reads.CONTENT)


PROGRAMS = [Program("jq", _jq, "filters that never touch env, $ENV, modules or jq's own paths")]
