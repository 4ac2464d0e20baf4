"""Text filters: they read their operands (or stdin) and print to stdout."""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Context
from ..options import options, parse
from ..paths import Reads
from ..refusal import Refused
from .base import Program, count, files, read_operands, read_option_paths, text

# -o/--output (writes a file), -T/--temporary-directory, --compress-program (runs a program) and
# --files0-from (names from an unseen file) are left out.
SORT = options(
    "-b, --ignore-leading-blanks",
    "-d, --dictionary-order",
    "-f, --ignore-case",
    "-g, --general-numeric-sort",
    "-i, --ignore-nonprinting",
    "-M, --month-sort",
    "-h, --human-numeric-sort",
    "-n, --numeric-sort",
    "-R, --random-sort",
    "--random-source=FILE",
    "-r, --reverse",
    "--sort=WORD",
    "-V, --version-sort",
    "-c, --check[=WHEN]",
    "-C",
    "--debug",
    "-k, --key=KEYDEF",
    "-m, --merge",
    "-s, --stable",
    "-S, --buffer-size=SIZE",
    "-t, --field-separator=SEP",
    "--parallel=N",
    "-u, --unique",
    "-z, --zero-terminated",
)
UNIQ = options(
    "-c, --count",
    "-d, --repeated",
    "-D",
    "--all-repeated[=METHOD]",
    "-f, --skip-fields=N",
    "--group[=METHOD]",
    "-i, --ignore-case",
    "-s, --skip-chars=N",
    "-u, --unique",
    "-z, --zero-terminated",
    "-w, --check-chars=N",
)
CUT = options(
    "-b, --bytes=LIST",
    "-c, --characters=LIST",
    "-d, --delimiter=DELIM",
    "-f, --fields=LIST",
    "-n",
    "--complement",
    "-s, --only-delimited",
    "--output-delimiter=STRING",
    "-z, --zero-terminated",
)
TR = options("-c, -C, --complement", "-d, --delete", "-s, --squeeze-repeats", "-t, --truncate-set1")
PASTE = options("-d, --delimiters=LIST", "-s, --serial", "-z, --zero-terminated")
JOIN = options(
    "-a=FILENUM",
    "-e=EMPTY",
    "-i, --ignore-case",
    "-j=FIELD",
    "-o=FORMAT",
    "-t=CHAR",
    "-v=FILENUM",
    "-1=FIELD",
    "-2=FIELD",
    "--check-order",
    "--nocheck-order",
    "--header",
    "-z, --zero-terminated",
)
COMM = options(
    "-1",
    "-2",
    "-3",
    "--check-order",
    "--nocheck-order",
    "--output-delimiter=STR",
    "--total",
    "-z, --zero-terminated",
)
COLUMN = options(
    "-t, --table",
    "-s, --separator=SEP",
    "-o, --output-separator=SEP",
    "-c, --output-width=WIDTH",
    "-x, --fillrows",
    "-n, --table-name=NAME",
    "-N, --table-columns=NAMES",
    "-R, --table-right=COLUMNS",
    "-T, --table-truncate=COLUMNS",
    "-W, --table-wrap=COLUMNS",
    "-H, --table-hide=COLUMNS",
    "-O, --table-order=COLUMNS",
    "-E, --table-noextreme=COLUMNS",
    "-d, --table-noheadings",
    "-e, --table-header-repeat",
    "-l, --table-columns-limit=NUM",
    "-J, --json",
    "-L, --keep-empty-lines",
)
FOLD = options("-b, --bytes", "-s, --spaces", "-w, --width=WIDTH")
FMT = options(
    "-c, --crown-margin",
    "-p, --prefix=STRING",
    "-s, --split-only",
    "-t, --tagged-paragraph",
    "-u, --uniform-spacing",
    "-w, --width=WIDTH",
    "-g, --goal=WIDTH",
)
EXPAND = options("-i, --initial", "-t, --tabs=LIST")
UNEXPAND = options("-a, --all", "--first-only", "-t, --tabs=LIST")
# -r/--recursive is left out (a whole tree), as are -l/--paginate (runs pr), -X/--exclude-from
# (an unseen file) and --no-dereference.
DIFF = options(
    "--normal",
    "-q, --brief",
    "-s, --report-identical-files",
    "-c",
    "-C=NUM",
    "--context[=NUM]",
    "-u",
    "-U=NUM",
    "--unified[=NUM]",
    "-e, --ed",
    "-n, --rcs",
    "-y, --side-by-side",
    "-W, --width=NUM",
    "--left-column",
    "--suppress-common-lines",
    "-p, --show-c-function",
    "-F, --show-function-line=RE",
    "--label=LABEL",
    "-t, --expand-tabs",
    "-T, --initial-tab",
    "--tabsize=NUM",
    "--suppress-blank-empty",
    "-N, --new-file",
    "--unidirectional-new-file",
    "--from-file=FILE",
    "--to-file=FILE",
    "-i, --ignore-case",
    "-E, --ignore-tab-expansion",
    "-Z, --ignore-trailing-space",
    "-b, --ignore-space-change",
    "-w, --ignore-all-space",
    "-B, --ignore-blank-lines",
    "-I, --ignore-matching-lines=RE",
    "-a, --text",
    "--strip-trailing-cr",
    "-D, --ifdef=NAME",
    "--line-format=LFMT",
    "-d, --minimal",
    "--horizon-lines=NUM",
    "--speed-large-files",
    "--color[=WHEN]",
    "--palette=PALETTE",
)
CMP = options(
    "-b, --print-bytes",
    "-i, --ignore-initial=SKIP",
    "-l, --verbose",
    "-n, --bytes=LIMIT",
    "-s, --quiet, --silent",
)
SEQ = options("-f, --format=FORMAT", "-s, --separator=STRING", "-w, --equal-width")


def _uniq(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(UNIQ, argv)
    count(parsed, 0, 1)  # a second operand is the file uniq writes
    if parsed.late:  # with POSIXLY_CORRECT, `uniq IN -c` writes a file named -c
        raise Refused("uniq with options after its input")
    read_operands(parsed.operands, parsed, ctx, Reads.CONTENT)


def _diff(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(DIFF, argv)
    read_option_paths(parsed, ctx)
    if not (parsed.has("--from-file") or parsed.has("--to-file")):
        count(parsed, 2, 2)
    read_operands(parsed.operands, parsed, ctx, Reads.CONTENT)
    # A folder operand makes diff compare every file in it.
    for value in [*parsed.operands, *parsed.values("--from-file"), *parsed.values("--to-file")]:
        if value != "-" and ctx.is_directory(value):
            raise Refused(f"diff of a folder ({value})")


def _cmp(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(CMP, argv)
    count(parsed, 1, 4)
    read_operands(parsed.operands[:2], parsed, ctx, Reads.CONTENT)


def _echo(argv: Sequence[str], ctx: Context) -> None:
    """Prints its words; the lexer already refused every expansion, so they are literal."""


def _printf(argv: Sequence[str], ctx: Context) -> None:
    # `printf -v NAME` assigns a shell variable; anything else only formats literal words.
    if not argv:
        raise Refused("printf without a format")
    if argv[0].startswith("-") and argv[0] != "--":
        raise Refused(f"printf option {argv[0]}")


PROGRAMS = [
    Program("sort", files(SORT), "sorts; never -o, -T or --compress-program"),
    Program("uniq", _uniq, "one input, never an output file"),
    Program("cut", files(CUT), "cuts columns"),
    Program("tr", text(TR, low=1, high=2), "translates stdin; its operands are sets"),
    Program("paste", files(PASTE), "merges lines"),
    Program("join", files(JOIN, low=2, high=2), "joins two files"),
    Program("comm", files(COMM, low=2, high=2), "compares two files"),
    Program("column", files(COLUMN), "formats columns"),
    Program("fold", files(FOLD), "wraps lines"),
    Program("fmt", files(FMT), "fills paragraphs"),
    Program("expand", files(EXPAND), "tabs to spaces"),
    Program("unexpand", files(UNEXPAND), "spaces to tabs"),
    Program("diff", _diff, "compares two files, never folders, never through a pager"),
    Program("cmp", _cmp, "compares two files"),
    Program("seq", text(SEQ, low=1, high=3), "prints numbers"),
    Program("echo", _echo, "prints its literal words", builtin=True),
    Program("printf", _printf, "formats literal words; no -v", builtin=True),
]
