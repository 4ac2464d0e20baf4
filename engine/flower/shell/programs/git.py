"""git: read-only subcommands, in an inert repository, never pointed elsewhere.

- Global options: only ``--no-pager``/``-P``, ``--no-optional-locks``, ``--no-replace-objects`` and
  the pathspec switches. ``-C``, ``-c``, ``--git-dir``, ``--work-tree``, ``--exec-path``,
  ``--config-env``, ``-p``/``--paginate`` and all others are refused: they point git at another
  repository or bring in configuration and programs.
- Subcommands: only those that read (status, diff, log, show, blame, grep, ls-files, rev-parse,
  ...), and listing forms of branch, tag, stash, worktree, reflog and config.
- Options that write a file, run a program or read outside the repository are refused in every
  subcommand, abbreviations included (``--output``, ``--ext-diff``, ``--textconv``,
  ``--open-files-in-pager``/``-O``, ``--no-index``, ``--untracked``, ``--show-signature``,
  ``--contents``, ...), as are pretty formats that verify signatures (``%G?``, ``%(signature)``).
- Remote URLs and config values can hold tokens: ``git remote get-url``, ``git config --list``
  and ``git var -l`` are refused; ``git config --get`` only for a short list of keys; ``git remote
  -v`` only when confined (the output's tokens are masked before the model sees it).
- ``check-ignore`` and ``check-attr`` read only names: a credential's name is no refusal there.
- Every non-option word is judged as a path inside the repository: no absolute path, no ``..``,
  no credential name (``git show HEAD:.env`` is refused).
- The repository itself must be inert (``gitrepo``): no configured programs, hooks or includes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..credentials import credential_path
from ..refusal import Refused
from .base import Program

_GLOBAL_FLAGS = frozenset(
    {
        "--no-pager",
        "-P",
        "--no-optional-locks",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
    }
)
_READ_SUBCOMMANDS = frozenset(
    {
        "status",
        "diff",
        "log",
        "show",
        "whatchanged",
        "shortlog",
        "describe",
        "rev-parse",
        "ls-files",
        "ls-tree",
        "blame",
        "annotate",
        "show-ref",
        "rev-list",
        "cat-file",
        "grep",
        "merge-base",
        "name-rev",
        "for-each-ref",
        "count-objects",
        "diff-tree",
        "diff-index",
        "diff-files",
        "show-branch",
        "range-diff",
        "cherry",
        "check-ignore",
        "check-attr",
    }
)
_REFUSED_LONG = (
    "output",
    "output-directory",
    "ext-diff",
    "textconv",
    "open-files-in-pager",
    "no-index",
    "untracked",
    "show-signature",
    "paginate",
    "exec",
    "upload-pack",
    "receive-pack",
    "contents",
    "ignore-revs-file",
    "file",
    "blob",
    "edit",
    "add",
    "replace-all",
    "unset",
    "unset-all",
    "rename-section",
    "remove-section",
    "delete",
    "move",
    "copy",
    "set-upstream",
    "set-upstream-to",
    "unset-upstream",
    "edit-description",
    "track",
    "no-track",
    "force",
    "create-reflog",
    "mirror",
    "orphan",
    "verify",
    "hard",
    "prune",
)
# Short options that run a program or read a file named on the command line: -O is grep's pager
# and the diff machinery's order file; the rest per subcommand.
_REFUSED_SHORT_EVERYWHERE = "O"
_REFUSED_SHORT = {"grep": "f", "blame": "S", "annotate": "S", "tag": "v"}
_SIGNATURE_FORMAT = re.compile(r"%G|%\(signature", re.IGNORECASE)
_CONFIG_KEYS = re.compile(r"(user\.(name|email)|init\.defaultbranch|core\.[a-z]+|(pull|push)\.[a-z]+)", re.I)
_IDENT_VARIABLES = frozenset({"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"})


def _refused_long(word: str) -> bool:
    """Whether ``word`` is a refused long option or an abbreviation of one."""
    name = word[2:].split("=", 1)[0]
    return bool(name) and any(r.startswith(name) for r in _REFUSED_LONG)


_NAMES_ONLY = frozenset({"check-ignore", "check-attr"})


def _judge_words(sub: str, rest: Sequence[str]) -> None:
    letters = _REFUSED_SHORT_EVERYWHERE + _REFUSED_SHORT.get(sub, "")
    options_done = False
    for word in rest:
        if not options_done and word == "--":
            options_done = True
            continue
        if _SIGNATURE_FORMAT.search(word):
            raise Refused("git: a format that verifies signatures")
        if not options_done and word.startswith("--"):
            if _refused_long(word):
                raise Refused(f"git {sub} {word.split('=', 1)[0]}")
            continue
        if not options_done and word.startswith("-") and word != "-":
            if any(ch in letters for ch in word[1:]):
                raise Refused(f"git {sub} {word}")
            continue
        _judge_path(word, names_only=sub in _NAMES_ONLY)


def _judge_path(word: str, *, names_only: bool = False) -> None:
    if word.startswith("/"):
        raise Refused(f"git: an absolute path ({word})")
    parts = [p for p in re.split(r"[/:]", word) if p]
    if ".." in parts:
        raise Refused(f"git: a path leaving the repository ({word})")
    if not names_only and credential_path(parts):
        raise Refused(f"git: a credential file ({word})")


_LIST_VALUE_OPTIONS = ("--contains", "--no-contains", "--merged", "--no-merged", "--points-at")


def _listing(rest: Sequence[str], flags: frozenset[str], letters: str, *, numbered: bool) -> None:
    """``git branch``/``git tag`` in listing mode: a bare name there would create a ref."""
    listing = False
    operands = 0
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if word in ("-l", "--list"):
            listing = True
        elif word in flags or word.startswith(("--sort=", "--format=", "--color=", "--column=", "--abbrev=")):
            pass
        elif word in ("--sort", "--format"):
            i += 1
        elif word.startswith(tuple(o + "=" for o in _LIST_VALUE_OPTIONS)):
            pass
        elif word in _LIST_VALUE_OPTIONS:
            if i < len(rest) and not rest[i].startswith("-"):
                i += 1  # the optional commit
        elif numbered and re.fullmatch(r"-n\d*", word):
            pass
        elif re.fullmatch(r"-[" + letters + "]+", word):
            listing = listing or "l" in word
        else:
            if word.startswith("-"):
                raise Refused(f"git: {word} outside listing")
            operands += 1
    if operands and not listing:
        raise Refused("git: a name that would create a branch or tag")


_BRANCH_FLAGS = frozenset(
    {
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-v",
        "-vv",
        "--verbose",
        "--show-current",
        "-i",
        "--ignore-case",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "--no-abbrev",
        "--omit-empty",
    }
)
_TAG_FLAGS = frozenset(
    {"-i", "--ignore-case", "--color", "--no-color", "--column", "--no-column", "--omit-empty"}
)
_CONFIG_FLAGS = frozenset(
    {
        "--get",
        "--local",
        "--global",
        "--system",
        "--worktree",
        "--show-origin",
        "--show-scope",
        "--bool",
        "--int",
        "--path",
        "--null",
        "-z",
    }
)


def _config(rest: Sequence[str]) -> None:
    # `git config --get KEY`, `git config get KEY` and the legacy `git config KEY` read one value;
    # a second operand would set it, and every other action writes or lists.
    words = list(rest)
    if words and words[0] == "get":
        words = ["--get", *words[1:]]
    keys = []
    for word in words:
        if word in _CONFIG_FLAGS or word.startswith("--type="):
            continue
        if word.startswith("-"):
            raise Refused(f"git config {word}")
        keys.append(word)
    if words and words[0] in ("list", "set", "unset", "edit", "rename-section", "remove-section"):
        raise Refused(f"git config {words[0]}")
    if len(keys) != 1 or not _CONFIG_KEYS.fullmatch(keys[0]):
        raise Refused("git config --get of a key that may hold a secret")


def _subcommand(sub: str, rest: Sequence[str], ctx: Context) -> None:
    if sub in _READ_SUBCOMMANDS:
        _judge_words(sub, rest)
    elif sub == "branch":
        _judge_words(sub, rest)
        _listing(rest, _BRANCH_FLAGS, "arvil", numbered=False)
    elif sub == "tag":
        _judge_words(sub, rest)
        _listing(rest, _TAG_FLAGS, "il", numbered=True)
    elif sub == "remote":
        if rest and list(rest) not in (["-v"], ["--verbose"]):
            raise Refused("git remote beyond listing names (URLs can hold tokens)")
        if rest:
            ctx.needs_confinement("git remote -v (URLs can hold tokens)")
    elif sub == "config":
        _config(rest)
    elif sub == "stash":
        if not rest or rest[0] not in ("list", "show"):
            raise Refused("git stash other than list or show")
        _judge_words(sub, rest[1:])
    elif sub == "worktree":
        if (
            not rest
            or rest[0] != "list"
            or any(w not in ("--porcelain", "-v", "--verbose", "-z") for w in rest[1:])
        ):
            raise Refused("git worktree other than list")
    elif sub == "reflog":
        if rest and not rest[0].startswith("-") and rest[0] != "show":
            raise Refused(f"git reflog {rest[0]}")
        _judge_words(sub, rest[1:] if rest and rest[0] == "show" else rest)
    elif sub == "var":
        if len(rest) != 1 or rest[0] not in _IDENT_VARIABLES:
            raise Refused("git var other than an identity")
    else:
        raise Refused(f"git {sub}")


def _git(argv: Sequence[str], ctx: Context) -> None:
    i = 0
    while i < len(argv) and argv[i] in _GLOBAL_FLAGS:
        i += 1
    if i < len(argv) and argv[i] == "--version" and i == len(argv) - 1:
        return
    if i >= len(argv):
        raise Refused("git without a subcommand")
    sub, rest = argv[i], argv[i + 1 :]
    if sub.startswith("-"):
        raise Refused(f"git global option {sub}")
    if sub == "version":
        if any(w != "--build-options" for w in rest):
            raise Refused("git version with options")
        return
    _subcommand(sub, rest, ctx)
    ctx.own_configuration("git", ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"), (".gitconfig", ".config/git"))
    ctx.git_repository()


PROGRAMS = [Program("git", _git, "read-only subcommands in an inert repository, never pointed elsewhere")]
