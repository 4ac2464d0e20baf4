"""Programs that list, stat or print files (coreutils and friends).

Each table holds only options that read; what is left out, and why, is said next to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..options import Parsed, options, parse
from ..paths import Reads
from ..refusal import Refused
from .base import Program, count, files, names, read_operands, read_option_paths, text

# -L (dereference) is left out: with -R it would list folders a symlink leads to, outside.
LS = options(
    "-a, --all",
    "-A, --almost-all",
    "--author",
    "-b, --escape",
    "--block-size=SIZE",
    "-B, --ignore-backups",
    "-c",
    "-C",
    "--color[=WHEN], --colour[=WHEN]",
    "-d, --directory",
    "-D, --dired",
    "-f",
    "-F, --classify[=WHEN]",
    "--file-type",
    "--format=WORD",
    "--full-time",
    "-g",
    "--group-directories-first",
    "-G, --no-group",
    "-h, --human-readable",
    "--si",
    "-H, --dereference-command-line",
    "--dereference-command-line-symlink-to-dir",
    "--hide=PATTERN",
    "--hyperlink[=WHEN]",
    "--indicator-style=WORD",
    "-i, --inode",
    "-I, --ignore=PATTERN",
    "-k, --kibibytes",
    "-l",
    "-m",
    "-n, --numeric-uid-gid",
    "-N, --literal",
    "-o",
    "-p",
    "-q, --hide-control-chars",
    "--show-control-chars",
    "-Q, --quote-name",
    "--quoting-style=WORD",
    "-r, --reverse",
    "-R, --recursive",
    "-s, --size",
    "-S",
    "--sort=WORD",
    "--time=WORD",
    "--time-style=STYLE",
    "-t",
    "-T, --tabsize=COLS",
    "-u",
    "-U",
    "-v",
    "-w, --width=COLS",
    "-x",
    "-X",
    "-Z, --context",
    "--zero",
    "-1",
)
PWD = options("-L", "-P")
CAT = options(
    "-A, --show-all",
    "-b, --number-nonblank",
    "-e",
    "-E, --show-ends",
    "-n, --number",
    "-s, --squeeze-blank",
    "-t",
    "-T, --show-tabs",
    "-u",
    "-v, --show-nonprinting",
)
HEAD = options(
    "-c, --bytes=NUM",
    "-n, --lines=NUM",
    "-q, --quiet, --silent",
    "-v, --verbose",
    "-z, --zero-terminated",
    numeric=True,
)
# -f/-F/--follow/--retry/--pid are left out: a glance ends by itself.
TAIL = HEAD
# --files0-from is left out: it reads the names to open from a file we do not see.
WC = options(
    "-c, --bytes",
    "-m, --chars",
    "-l, --lines",
    "-L, --max-line-length",
    "-w, --words",
    "--total=WHEN",
)
STAT = options(
    "-L, --dereference",
    "-f, --file-system",
    "-c, --format=FORMAT",
    "--printf=FORMAT",
    "-t, --terse",
    "--cached=MODE",
)
# -z/-Z run decompressors, -s reads block devices, -p resets access times, -f reads names from
# a file, -C compiles a magic file, -m loads one: all left out.
FILE = options(
    "-b, --brief",
    "-i, --mime",
    "--mime-type",
    "--mime-encoding",
    "-L, --dereference",
    "-h, --no-dereference",
    "-N, --no-pad",
    "-k, --keep-going",
    "-r, --raw",
    "-E",
    "--extension",
)
# -L/--dereference (follows symlinks while recursing), --files0-from and -X/--exclude-from
# (names from an unseen file) are left out.
DU = options(
    "-0, --null",
    "-a, --all",
    "--apparent-size",
    "-B, --block-size=SIZE",
    "-b, --bytes",
    "-c, --total",
    "-D, --dereference-args",
    "-d, --max-depth=N",
    "-H",
    "-h, --human-readable",
    "--inodes",
    "-k",
    "-l, --count-links",
    "-m",
    "-P, --no-dereference",
    "-S, --separate-dirs",
    "--si",
    "-s, --summarize",
    "-t, --threshold=SIZE",
    "--time[=WORD]",
    "--time-style=STYLE",
    "-x, --one-file-system",
    "--exclude=PATTERN",
)
# --sync is left out: it flushes the file systems.
DF = options(
    "-a, --all",
    "-B, --block-size=SIZE",
    "-h, --human-readable",
    "-H, --si",
    "-i, --inodes",
    "-k",
    "-l, --local",
    "--no-sync",
    "--output[=FIELDS]",
    "-P, --portability",
    "-t, --type=TYPE",
    "-T, --print-type",
    "-x, --exclude-type=TYPE",
    "--total",
)
REALPATH = options(
    "-e, --canonicalize-existing",
    "-m, --canonicalize-missing",
    "-L, --logical",
    "-P, --physical",
    "-q, --quiet",
    "-s, --strip, --no-symlinks",
    "-z, --zero",
    "--relative-to=PATH",
    "--relative-base=PATH",
)
READLINK = options(
    "-f, --canonicalize",
    "-e, --canonicalize-existing",
    "-m, --canonicalize-missing",
    "-n, --no-newline",
    "-q, --quiet",
    "-s, --silent",
    "-v, --verbose",
    "-z, --zero",
)
BASENAME = options("-a, --multiple", "-s, --suffix=SUFFIX", "-z, --zero")
DIRNAME = options("-z, --zero")
TAC = options("-b, --before", "-r, --regex", "-s, --separator=STRING")
REV = options()
NL = options(
    "-b, --body-numbering=STYLE",
    "-d, --section-delimiter=CC",
    "-f, --footer-numbering=STYLE",
    "-h, --header-numbering=STYLE",
    "-i, --line-increment=NUMBER",
    "-l, --join-blank-lines=NUMBER",
    "-n, --number-format=FORMAT",
    "-p, --no-renumber",
    "-s, --number-separator=STRING",
    "-v, --starting-line-number=NUMBER",
    "-w, --number-width=NUMBER",
)
OD = options(
    "-A, --address-radix=RADIX",
    "--endian=ORDER",
    "-j, --skip-bytes=BYTES",
    "-N, --read-bytes=BYTES",
    "-S, --strings[=BYTES]",
    "-t, --format=TYPE",
    "-v, --output-duplicates",
    "-w, --width[=BYTES]",
    "-a",
    "-b",
    "-c",
    "-d",
    "-f",
    "-i",
    "-l",
    "-o",
    "-s",
    "-x",
)
# -f FORMAT_FILE is left out (an unseen file).
HEXDUMP = options(
    "-b",
    "-c",
    "-C, --canonical",
    "-d",
    "-o",
    "-x",
    "-e, --format=FORMAT",
    "-n, --length=LENGTH",
    "-s, --skip=OFFSET",
    "-v, --no-squeezing",
)
XXD = options(
    "-a",
    "-b",
    "-C",
    "-c=COLS",
    "-E",
    "-e",
    "-g=BYTES",
    "-i",
    "-l=LEN",
    "-o=OFFSET",
    "-p",
    "-r",
    "-s=SEEK",
    "-u",
)
STRINGS = options(
    "-a, --all",
    "-d, --data",
    "-f, --print-file-name",
    "-n, --bytes=MIN",
    "-t, --radix=RADIX",
    "-e, --encoding=ENCODING",
    "-w, --include-all-whitespace",
    "-s, --output-separator=SEP",
    numeric=True,
)
BASE64 = options("-d, --decode", "-i, --ignore-garbage", "-w, --wrap=COLS")
# -c/--check (reads the names to hash from a file) and its companions are left out.
HASHSUM = options("-b, --binary", "-t, --text", "-z, --zero", "--tag", "--untagged")
B2SUM = options("-b, --binary", "-t, --text", "-z, --zero", "--tag", "--untagged", "-l, --length=BITS")
CKSUM = options(
    "-a, --algorithm=TYPE",
    "--base64",
    "-l, --length=BITS",
    "--raw",
    "--tag",
    "--untagged",
    "-z, --zero",
)
SUM = options("-r", "-s, --sysv")


def _strings_extra(parsed: Parsed, ctx: Context) -> None:
    # binutils read more arguments from @FILE, a file we do not see.
    if any(v.startswith("@") for v in parsed.operands):
        raise Refused("an @file argument")


def _xxd(argv: Sequence[str], ctx: Context) -> None:
    # xxd stops reading options at the input file; the next word, whatever it is, is the output.
    parsed = parse(XXD, argv, permute=False)
    count(parsed, 0, 1)
    read_option_paths(parsed, ctx)
    read_operands(parsed.operands, parsed, ctx, Reads.CONTENT)


def _stat(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(STAT, argv)
    count(parsed, 1, None)
    read_operands(parsed.operands, parsed, ctx, Reads.NAMES)


# -l follows symlinks, -R (with -H) writes 00Tree.html files, -o writes the listing, --fromfile,
# --info, --hintro, --houtro and --gitfile read unseen files: all left out.
TREE = options(
    "-a",
    "-d",
    "-f",
    "-x",
    "-i",
    "-q",
    "-N",
    "-Q",
    "-p",
    "-u",
    "-g",
    "-s",
    "-h",
    "-D",
    "-F",
    "-v",
    "-t",
    "-c",
    "-U",
    "-r",
    "-C",
    "-n",
    "-A",
    "-S",
    "-J",
    "-X",
    "-L=LEVEL",
    "-P=PATTERN",
    "-I=PATTERN",
    "-H=BASEHREF",
    "-T=TITLE",
    "--inodes",
    "--device",
    "--dirsfirst",
    "--filesfirst",
    "--noreport",
    "--du",
    "--si",
    "--prune",
    "--matchdirs",
    "--ignore-case",
    "--gitignore",
    "--metafirst",
    "--charset=CHARSET",
    "--filelimit=N",
    "--timefmt=FORMAT",
    "--sort=TYPE",
    attached=False,
)

# find's expression: primaries that only test or print names. -exec, -execdir, -ok, -okdir, -delete,
# -fprint, -fprint0, -fprintf, -fls and -files0-from are not among them, nor -L/-follow.
_FIND_NO_ARGUMENT = names(
    """-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable -nouser
    -nogroup -depth -d -xdev -mount -noleaf -ignore_readdir_race -noignore_readdir_race -daystart
    -not -a -and -o -or ! , ( ) -nowarn -warn"""
)
_FIND_TEXT_ARGUMENT = names(
    """-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -lname -ilname -type
    -xtype -size -perm -user -group -uid -gid -links -inum -mtime -mmin -atime -amin -ctime -cmin
    -maxdepth -mindepth -printf -fstype -used -context"""
)
_FIND_PATH_ARGUMENT = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
_FIND_NEWER_XY = re.compile(r"-newer[aBcm]([aBcmt])")


def _find(argv: Sequence[str], ctx: Context) -> None:
    i = 0
    while i < len(argv) and argv[i] in ("-H", "-P"):
        i += 1
    starts = []
    while i < len(argv) and not (argv[i].startswith("-") or argv[i] in ("(", ")", "!", ",")):
        starts.append(argv[i])
        i += 1
    for start in starts:
        ctx.read(start, Reads.NAMES)
    while i < len(argv):
        word = argv[i]
        i += 1
        if word in _FIND_NO_ARGUMENT:
            continue
        newer = _FIND_NEWER_XY.fullmatch(word)
        if word in _FIND_TEXT_ARGUMENT or word in _FIND_PATH_ARGUMENT or newer:
            if i >= len(argv):
                raise Refused(f"find {word} without its argument")
            if word in _FIND_PATH_ARGUMENT or (newer and newer.group(1) != "t"):
                ctx.read(argv[i], Reads.NAMES)
            i += 1
            continue
        raise Refused(f"find {word}")


HASHERS = ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")

PROGRAMS = [
    Program("ls", files(LS, Reads.NAMES), "lists names; -L is not allowed"),
    Program("pwd", files(PWD, high=0), "prints the working folder", builtin=True),
    Program("cat", files(CAT), "prints files"),
    Program("head", files(HEAD), "prints the start of files"),
    Program("tail", files(TAIL), "prints the end of files; never follows"),
    Program("wc", files(WC), "counts; no --files0-from"),
    Program("stat", _stat, "stats paths"),
    Program("file", files(FILE), "names a file's type; no decompressors, devices or magic files"),
    Program("du", files(DU, Reads.NAMES), "sizes; never follows symlinks"),
    Program("tree", files(TREE, Reads.NAMES), "lists a tree; never follows symlinks or writes"),
    Program("find", _find, "tests and prints names; no -exec, -ok, -delete, -fprint* or -L"),
    Program("df", files(DF, Reads.NAMES), "free space; no --sync"),
    Program("realpath", files(REALPATH, Reads.NAMES), "resolves paths"),
    Program("readlink", files(READLINK, Reads.NAMES, low=1), "reads symlinks"),
    Program("basename", text(BASENAME, low=1), "strips folders from names; reads nothing"),
    Program("dirname", text(DIRNAME, low=1), "strips names from folders; reads nothing"),
    Program("tac", files(TAC), "prints files last line first"),
    Program("rev", files(REV), "reverses lines"),
    Program("nl", files(NL), "numbers lines"),
    Program("od", files(OD), "dumps bytes"),
    Program("hexdump", files(HEXDUMP), "dumps bytes; no format file"),
    Program("xxd", _xxd, "dumps bytes; one input, never an output file"),
    Program("strings", files(STRINGS, extra=_strings_extra), "prints printable runs; no @file"),
    Program("base64", files(BASE64, high=1), "encodes one input"),
    Program("base32", files(BASE64, high=1), "encodes one input"),
    *(Program(h, files(HASHSUM), "hashes files; no --check") for h in HASHERS),
    Program("b2sum", files(B2SUM), "hashes files; no --check"),
    Program("cksum", files(CKSUM), "checksums files; no --check"),
    Program("sum", files(SUM), "checksums files"),
]
