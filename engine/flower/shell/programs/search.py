"""grep and ripgrep: content reads, possibly over whole trees.

A recursive search is admitted only where the tree it would read provably holds no credential
(``paths.check_tree``): ``grep -rn foo src/`` passes in an ordinary source folder, ``grep -r
API_KEY .`` does not (the workspace root holds ``.git`` and usually ``.env``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Context
from ..options import options, parse
from ..paths import Reads
from ..refusal import Refused
from .base import Program, read_operands, read_option_paths

GREP = options(
    "-E, --extended-regexp",
    "-F, --fixed-strings",
    "-G, --basic-regexp",
    "-P, --perl-regexp",
    "-e, --regexp=PATTERNS",
    "-f, --file=FILE",
    "-i, -y, --ignore-case",
    "--no-ignore-case",
    "-w, --word-regexp",
    "-x, --line-regexp",
    "-s, --no-messages",
    "-v, --invert-match",
    "-m, --max-count=NUM",
    "-b, --byte-offset",
    "-n, --line-number",
    "--line-buffered",
    "-H, --with-filename",
    "-h, --no-filename",
    "--label=LABEL",
    "-o, --only-matching",
    "-q, --quiet, --silent",
    "--binary-files=TYPE",
    "-a, --text",
    "-I",
    "-d, --directories=ACTION",
    "-D, --devices=ACTION",
    "-r, --recursive",
    "-R, --dereference-recursive",
    "--include=GLOB",
    "--exclude=GLOB",
    "--exclude-from=FILE",
    "--exclude-dir=GLOB",
    "-L, --files-without-match",
    "-l, --files-with-matches",
    "-c, --count",
    "-T, --initial-tab",
    "-Z, --null",
    "-z, --null-data",
    "--color[=WHEN], --colour[=WHEN]",
    "-U, --binary",
    "-A, --after-context=NUM",
    "-B, --before-context=NUM",
    "-C, --context=NUM",
    numeric=True,
)

# --pre/--pre-glob and --hostname-bin run programs, -z/--search-zip runs decompressors, -L/--follow
# follows symlinks out of the tree: all left out.
RG = options(
    "-e, --regexp=PATTERN",
    "-f, --file=FILE",
    "-i, --ignore-case",
    "-S, --smart-case",
    "-s, --case-sensitive",
    "-w, --word-regexp",
    "-x, --line-regexp",
    "-v, --invert-match",
    "-F, --fixed-strings",
    "-n, --line-number",
    "-N, --no-line-number",
    "-l, --files-with-matches",
    "--files-without-match",
    "-c, --count",
    "--count-matches",
    "-o, --only-matching",
    "-H, --with-filename",
    "-I, --no-filename",
    "--heading",
    "--no-heading",
    "--column",
    "--vimgrep",
    "--json",
    "-q, --quiet",
    "--files",
    "--hidden",
    "-u, --unrestricted",
    "--no-ignore",
    "--no-ignore-vcs",
    "--no-ignore-dot",
    "--no-ignore-parent",
    "--no-ignore-global",
    "--no-config",
    "-U, --multiline",
    "--multiline-dotall",
    "-P, --pcre2",
    "--trim",
    "-p, --pretty",
    "--no-messages",
    "--stats",
    "--sort=SORTBY",
    "--sortr=SORTBY",
    "-b, --byte-offset",
    "-0, --null",
    "--crlf",
    "-a, --text",
    "--binary",
    "--passthru",
    "--null-data",
    "--one-file-system",
    "--color=WHEN",
    "--colors=SPEC",
    "-M, --max-columns=NUM",
    "--max-columns-preview",
    "-m, --max-count=NUM",
    "-d, --max-depth=NUM",
    "--max-filesize=NUM",
    "-A, --after-context=NUM",
    "-B, --before-context=NUM",
    "-C, --context=NUM",
    "-g, --glob=GLOB",
    "--iglob=GLOB",
    "-t, --type=TYPE",
    "-T, --type-not=TYPE",
    "--type-list",
    "-E, --encoding=ENCODING",
    "-r, --replace=REPLACEMENT",
    "-j, --threads=NUM",
    "--context-separator=SEP",
    "--path-separator=SEP",
)


def _grep(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(GREP, argv)
    read_option_paths(parsed, ctx)
    operands = list(parsed.operands)
    if not (parsed.has("-e") or parsed.has("-f")):
        if not operands:
            raise Refused("grep without a pattern")
        operands.pop(0)
    actions = parsed.values("-d")
    recursive = parsed.has("-r") or parsed.has("-R") or "recurse" in actions
    if any(a not in ("read", "skip", "recurse") for a in actions):
        raise Refused("grep --directories with an unknown action")
    if not recursive:
        read_operands(operands, parsed, ctx, Reads.CONTENT)
        return
    read_operands([], parsed, ctx, Reads.CONTENT)
    for root in operands or ["."]:
        if root != "-":
            ctx.read_tree(root, follow_symlinks=parsed.has("-R"))


def _rg(argv: Sequence[str], ctx: Context) -> None:
    ctx.own_configuration("rg", ("RIPGREP_CONFIG_PATH",), ())  # a config file can add --pre
    parsed = parse(RG, argv)
    read_option_paths(parsed, ctx)
    operands = list(parsed.operands)
    listing = parsed.has("--files") or parsed.has("--type-list")
    if not (listing or parsed.has("-e") or parsed.has("-f")):
        if not operands:
            raise Refused("rg without a pattern")
        operands.pop(0)
    if parsed.has("--type-list"):
        return
    if listing:  # names only
        read_operands(operands, parsed, ctx, Reads.NAMES)
        return
    # Hidden files count even without --hidden: an ignore file can whitelist one (`!.env`).
    read_operands([], parsed, ctx, Reads.CONTENT)
    for root in operands or ["."]:
        ctx.read_tree(root, follow_symlinks=False)


PROGRAMS = [
    Program("grep", _grep, "searches files; recursively only over trees with no credential"),
    Program("egrep", _grep, "grep -E"),
    Program("fgrep", _grep, "grep -F"),
    Program("rg", _rg, "searches trees with no credential; no --pre, -z or -L"),
]
