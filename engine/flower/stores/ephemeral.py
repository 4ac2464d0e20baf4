"""Ephemeral ("glance") Bash commands: read-only commands whose output goes stale.

One predicate serves two callers that must agree: ``delegate_guard(allow_glance=True)``
lets exactly these commands run on the coordinator's main thread, and the trim layer
marks exactly their results as expired on resume.

``is_ephemeral`` is a security boundary: anything it admits runs unsupervised. Every
case the spec leaves open is therefore decided conservatively -- a false refusal costs
one subagent, a false admit can change state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable


@dataclass
class EphemeralPolicy:
    """Expiry policy for results of ephemeral Bash commands (applied on resume)."""

    enabled: bool = True
    keep_recent: int = 6
    max_chars: int = 2000
    text: str = "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]"

    def placeholder(self, cmd: str, age: int) -> str:
        """Text that replaces an expired result."""
        return self.text.format(cmd=cmd, age=age)


# --------------------------------------------------------------------------- lexer


class _Refuse(Exception):
    """Raised anywhere the command cannot be proven read-only."""


@dataclass
class _Word:
    raw: str  # source text, quotes included
    value: str  # what the program receives (expansions kept as their source text)
    opaque: bool  # value unknown until runtime: $VAR, unquoted glob, brace expansion


@dataclass
class _Op:
    kind: str  # "&&", "||", ";", "|", "|&", "\n", "&"


@dataclass
class _Redir:
    fd: str | None
    op: str
    target: _Word | None = None


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FD_PREFIX = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_SPECIAL_PARAMS = set("0123456789?#$!@*-")


class _WordBuilder:
    def __init__(self, start: int) -> None:
        self.start = start
        self.chars: list[str] = []
        self.unquoted: list[bool] = []
        self.expanded = False

    def add(self, text: str, *, quoted: bool) -> None:
        for ch in text:
            self.chars.append(ch)
            self.unquoted.append(not quoted)

    def unquoted_digits(self) -> bool:
        return bool(self.chars) and all(u and c.isdigit() for c, u in zip(self.chars, self.unquoted))

    def build(self, raw: str) -> _Word:
        value = "".join(self.chars)
        return _Word(raw=raw, value=value, opaque=self.expanded or self._expands())

    def _expands(self) -> bool:
        """Unquoted glob or brace expansion can turn into any word, e.g. a file named `-i`."""
        live = [c for c, u in zip(self.chars, self.unquoted) if u]
        if any(c in "*?[" for c in live):
            return True
        for i, (c, u) in enumerate(zip(self.chars, self.unquoted)):
            if c == "{" and u:
                for j in range(i + 1, len(self.chars)):
                    if self.chars[j] == "}" and self.unquoted[j]:
                        inner = "".join(self.chars[i + 1 : j])
                        if "," in inner or ".." in inner:
                            return True
                        break
        return False


def _lex(cmd: str) -> list[_Word | _Op | _Redir]:
    """Split a command line the way bash would, refusing every construct we do not model."""
    tokens: list[_Word | _Op | _Redir] = []
    cur: _WordBuilder | None = None
    pending: _Redir | None = None  # redirection still waiting for its target word
    i, n = 0, len(cmd)

    def word() -> _WordBuilder:
        nonlocal cur
        if cur is None:
            cur = _WordBuilder(i)
        return cur

    def finish(end: int) -> None:
        nonlocal cur, pending
        if cur is None:
            return
        w = cur.build(cmd[cur.start : end])
        cur = None
        if pending is not None:
            pending.target = w
            pending = None
        else:
            tokens.append(w)

    def operator(tok: _Op | _Redir) -> None:
        if pending is not None:  # `> &&`: bash syntax error; nothing to reason about
            raise _Refuse
        tokens.append(tok)

    def dollar(j: int, *, in_dquote: bool) -> int:
        b = word()
        nx = cmd[j + 1] if j + 1 < n else ""
        if nx in ("(", "["):  # $( $(( $[ : substitution / arithmetic with side effects
            raise _Refuse
        if nx == "{":
            end = cmd.find("}", j + 2)
            if end < 0 or not _NAME.fullmatch(cmd[j + 2 : end]):
                raise _Refuse  # ${x:=v}, ${!x}, ${x@P} ... can assign or evaluate
            b.add(cmd[j : end + 1], quoted=True)
            b.expanded = True
            return end + 1
        if nx in ("'", '"') and not in_dquote:
            raise _Refuse  # $'...' / $"..." quoting: not modelled
        m = _NAME.match(cmd, j + 1)
        if m:
            b.add(cmd[j : m.end()], quoted=True)
            b.expanded = True
            return m.end()
        if nx and nx in _SPECIAL_PARAMS:
            b.add(cmd[j : j + 2], quoted=True)
            b.expanded = True
            return j + 2
        b.add("$", quoted=in_dquote)
        return j + 1

    while i < n:
        c = cmd[i]
        nx = cmd[i + 1] if i + 1 < n else ""
        if c in " \t":
            finish(i)
            i += 1
        elif c == "\n":
            finish(i)
            operator(_Op("\n"))
            i += 1
        elif c == "#" and cur is None:
            raise _Refuse  # comment: hides text from us, and never needed for a glance
        elif c == "\\":
            if nx == "\n":  # line continuation
                i += 2
                continue
            word().add(nx or "\\", quoted=True)
            i += 2 if nx else 1
        elif c == "'":
            end = cmd.find("'", i + 1)
            if end < 0:
                raise _Refuse
            word().add(cmd[i + 1 : end], quoted=True)
            i = end + 1
        elif c == '"':
            b = word()
            i += 1
            while True:
                if i >= n:
                    raise _Refuse  # unterminated quote
                d = cmd[i]
                if d == '"':
                    i += 1
                    break
                if d == "\\":
                    e = cmd[i + 1] if i + 1 < n else ""
                    if e == "\n":
                        i += 2
                    elif e and e in '$`"\\':
                        b.add(e, quoted=True)
                        i += 2
                    else:
                        b.add("\\", quoted=True)
                        i += 1
                elif d == "`":
                    raise _Refuse
                elif d == "$":
                    i = dollar(i, in_dquote=True)
                else:
                    b.add(d, quoted=True)
                    i += 1
        elif c == "$":
            i = dollar(i, in_dquote=False)
        elif c in "`()":
            raise _Refuse  # substitution, subshell, extglob, function definition
        elif c == ";":
            if nx in (";", "&"):
                raise _Refuse  # case-statement terminators
            finish(i)
            operator(_Op(";"))
            i += 1
        elif c == "&":
            finish(i)
            if nx == "&":
                operator(_Op("&&"))
                i += 2
            elif nx == ">":
                op = "&>>" if cmd.startswith("&>>", i) else "&>"
                operator(_Redir(None, op))
                pending = tokens[-1]  # type: ignore[assignment]
                i += len(op)
            else:
                operator(_Op("&"))
                i += 1
        elif c == "|":
            finish(i)
            if nx in ("|", "&"):
                operator(_Op("|" + nx))
                i += 2
            else:
                operator(_Op("|"))
                i += 1
        elif c in "<>":
            fd = None
            if cur is not None and cur.unquoted_digits():
                fd = "".join(cur.chars)
                cur = None
            elif cur is not None and _FD_PREFIX.fullmatch("".join(cur.chars)):
                raise _Refuse  # {var}>file allocates an fd and assigns a variable
            else:
                finish(i)
            if nx == "(":
                raise _Refuse  # process substitution
            for op in ("<<<", "<<-", "<<", "<&", "<>", "<", ">>", ">&", ">|", ">"):
                if cmd.startswith(op, i):
                    break
            operator(_Redir(fd, op))
            pending = tokens[-1]  # type: ignore[assignment]
            i += len(op)
        else:
            word().add(c, quoted=False)
            i += 1
    finish(n)
    if pending is not None:
        raise _Refuse
    return tokens


# ------------------------------------------------------------------- step helpers

_SUBSTITUTION = ("$(", "`", "<(", ">(")

# Verbs that run, evaluate or fan out other commands, or write their input to files.
_DENIED_VERBS = frozenset(
    {
        "xargs",
        "exec",
        "eval",
        "source",
        ".",
        "tee",
        "sudo",
        "doas",
        "nohup",
        "nice",
        "timeout",
        "time",
        "watch",
        "parallel",
        "builtin",
        "sh",
        "bash",
        "zsh",
        "dash",
        "ksh",
        "fish",
    }
)


def _safe_redirection(r: _Redir) -> bool:
    """Only redirections that cannot touch a file: into /dev/null or between stdout/stderr."""
    t = r.target
    if t is None or t.opaque or t.raw != t.value:  # quoted/escaped targets: refuse
        return False
    if r.op in (">", ">>", "&>", "&>>"):
        return t.value == "/dev/null" and (r.fd is None or (r.op[0] == ">" and r.fd in ("1", "2")))
    if r.op == ">&":
        return t.value in ("1", "2") and r.fd in (None, "1", "2")
    return False


def _split(tokens: list[_Word | _Op | _Redir]) -> tuple[list[list[_Word]], bool]:
    """Segments between `&&` `||` `;` `|` (and newlines); also whether a lone `&` occurs."""
    segments: list[list[_Word]] = [[]]
    background = False
    for tok in tokens:
        if isinstance(tok, _Op):
            if tok.kind == "&":
                background = True
            segments.append([])
        elif isinstance(tok, _Word):
            segments[-1].append(tok)
    # An empty segment is a no-op or a syntax error; either way nothing runs there.
    return [s for s in segments if s], background


# -------------------------------------------------------- per-verb argument checks


def _long_name(arg: str) -> str:
    return arg[2:].split("=", 1)[0]


def _hits_long(arg: str, dangerous: tuple[str, ...]) -> bool:
    """True if `arg` is a long option that is, or abbreviates, a dangerous one.

    getopt_long and git's parse-options accept unique prefixes (`--in` for `--in-place`),
    so a prefix of a dangerous name counts as that name.
    """
    if not arg.startswith("--") or arg == "--":
        return False
    name = _long_name(arg)
    return bool(name) and any(d.startswith(name) for d in dangerous)


def _short_cluster(arg: str) -> str:
    """Letters of a short-option cluster (`-la` -> "la"), or "" if `arg` is not one."""
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
        return arg[1:]
    return ""


def _no_opaque(args: list[_Word]) -> bool:
    return not any(a.opaque for a in args)


def _values(args: list[_Word]) -> list[str]:
    return [a.value for a in args]


def _any_args(args: list[_Word]) -> bool:
    return True


# Read-only verbs with no option that writes, deletes or runs anything. Their arguments may
# even be opaque ($HOME, *.py): whatever a glob expands to, it is only ever read.
_PLAIN_VERBS = frozenset(
    {
        # directory / system info
        "ls",
        "pwd",
        "df",
        "du",
        "whoami",
        "id",
        "uname",
        "free",
        "uptime",
        "groups",
        "nproc",
        "arch",
        "printenv",
        "lscpu",
        "lsblk",
        "w",
        "who",
        "locale",
        "tty",
        # processes
        "ps",
        "top",
        "lsof",
        "pgrep",
        "pidof",
        "pstree",
        # file viewing
        "cat",
        "head",
        "tail",
        "wc",
        "stat",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "cksum",
        "od",
        "hexdump",
        "strings",
        # path lookup
        "which",
        "whereis",
        "type",
        # text processing
        "grep",
        "egrep",
        "fgrep",
        "diff",
        "cmp",
        "comm",
        "cut",
        "tr",
        "nl",
        "paste",
        "join",
        "column",
        "fold",
        "rev",
        "tac",
        "expand",
        "unexpand",
        "jq",
        "base64",
        "seq",
        # output
        "echo",
    }
)


def _check_env(args: list[_Word]) -> bool:
    # `env FOO=1 cmd` / `env -i cmd` run a command; only the bare listing is a glance.
    return not args


def _check_command(args: list[_Word]) -> bool:
    # Without -v/-V, `command x` runs x.
    return bool(args) and args[0].value in ("-v", "-V") and _no_opaque(args)


def _check_printf(args: list[_Word]) -> bool:
    # `printf -v VAR` assigns a shell variable, which could steer later commands.
    if not args or args[0].opaque:
        return False
    first = args[0].value
    return not first.startswith("-") or first == "--"


def _check_hostname(args: list[_Word]) -> bool:
    # A positional argument or -F/-b sets the hostname.
    allowed = {
        "-a",
        "-A",
        "-d",
        "-f",
        "-i",
        "-I",
        "-s",
        "-y",
        "--alias",
        "--all-fqdns",
        "--domain",
        "--fqdn",
        "--long",
        "--ip-address",
        "--all-ip-addresses",
        "--short",
        "--yp",
        "--nis",
        "--help",
        "--version",
    }
    return _no_opaque(args) and all(v in allowed for v in _values(args))


def _check_date(args: list[_Word]) -> bool:
    # `date -s X` and a positional MMDDhhmm both set the clock; only `+FORMAT` may be positional.
    if not _no_opaque(args):
        return False
    values = _values(args)
    i = 0
    while i < len(values):
        v = values[i]
        i += 1
        if v.startswith("+"):
            continue
        if v.startswith("--"):
            name, has_value = _long_name(v), "=" in v
            if name in ("date", "file", "reference", "rfc-3339"):
                i += 0 if has_value else 1
            elif name not in ("utc", "universal", "rfc-email", "debug", "iso-8601", "help", "version"):
                return False
            elif has_value and name != "iso-8601":
                return False
            continue
        letters = _short_cluster(v)
        if not letters:
            return False
        for k, ch in enumerate(letters):
            if ch in "uR":
                continue
            if ch == "I":  # -I[FMT]: optional argument, attached only
                break
            if ch in "dfr":
                i += 0 if k + 1 < len(letters) else 1
                break
            return False
    return True


def _check_find(args: list[_Word]) -> bool:
    dangerous = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
    return _no_opaque(args) and not any(v in dangerous for v in _values(args))


def _check_tree(args: list[_Word]) -> bool:
    # -o FILE writes the listing; -R (with -H) writes 00Tree.html into every directory.
    for v in _values(args):
        if any(ch in "oR" for ch in _short_cluster(v)) or _hits_long(v, ("output",)):
            return False
    return _no_opaque(args)


def _check_file(args: list[_Word]) -> bool:
    # -C compiles a magic file and writes the result.
    for v in _values(args):
        if "C" in _short_cluster(v) or _hits_long(v, ("compile",)):
            return False
    return _no_opaque(args)


def _check_rg(args: list[_Word]) -> bool:
    # --pre and --hostname-bin run arbitrary programs.
    return _no_opaque(args) and not any(_hits_long(v, ("pre", "hostname-bin")) for v in _values(args))


def _check_sort(args: list[_Word]) -> bool:
    # -o/--output write a file; --compress-program runs one.
    for v in _values(args):
        if "o" in _short_cluster(v) or _hits_long(v, ("output", "compress-program")):
            return False
    return _no_opaque(args)


def _check_uniq(args: list[_Word]) -> bool:
    # `uniq IN OUT` writes OUT. Count every non-option word, and everything after the first
    # operand (POSIXLY_CORRECT stops option parsing there): over-counting only over-refuses.
    operands = 0
    after_operand = False
    for v in _values(args):
        if after_operand or v == "-" or not v.startswith("-"):
            operands += 1
            after_operand = True
        elif v == "--":
            after_operand = True
    return _no_opaque(args) and operands <= 1


# -- sed


def _sed_script_ok(script: str, *, brackets: bool) -> bool:
    """Parse a sed script; False on any write/exec command (w W e, s///w, s///e) or on doubt.

    `brackets` selects whether a delimiter inside [...] is literal; callers run both
    readings so a parse that disagrees with the real sed can only refuse more.
    """
    s, n = script, len(script)
    i = 0

    def skip_blank(j: int) -> int:
        while j < n and s[j] in " \t":
            j += 1
        return j

    def delimited(j: int, delim: str) -> int:
        """Index just past the closing delimiter of a regex/replacement starting at j."""
        in_bracket = False
        while j < n:
            ch = s[j]
            if ch == "\\":
                j += 2
                continue
            if brackets:
                if ch == "[" and not in_bracket:
                    in_bracket = True
                    if j + 1 < n and s[j + 1] == "]":
                        j += 1
                elif ch == "]" and in_bracket:
                    in_bracket = False
            if ch == delim and not in_bracket:
                return j + 1
            if ch == "\n":
                raise _Refuse
            j += 1
        raise _Refuse

    def address(j: int, *, second: bool) -> int:
        if j < n and s[j].isdigit():
            while j < n and s[j].isdigit():
                j += 1
            if j < n and s[j] == "~":
                j += 1
                while j < n and s[j].isdigit():
                    j += 1
            return j
        if j < n and s[j] == "$":
            return j + 1
        if second and j < n and s[j] in "+~":
            j += 1
            start = j
            while j < n and s[j].isdigit():
                j += 1
            if j == start:
                raise _Refuse
            return j
        if j < n and s[j] in "/\\":
            if s[j] == "\\":
                if j + 1 >= n or s[j + 1] in "\n\\":
                    raise _Refuse
                delim, j = s[j + 1], j + 2
            else:
                delim, j = "/", j + 1
            j = delimited(j, delim)
            while j < n and s[j] in "IM":
                j += 1
            return j
        if second:
            raise _Refuse
        return j

    def end_of_command(j: int) -> int:
        j = skip_blank(j)
        if j < n and s[j] not in ";\n}#":
            raise _Refuse
        return j

    try:
        while True:
            while i < n and s[i] in " \t;\n":
                i += 1
            if i >= n:
                return True
            i = address(i, second=False)
            i = skip_blank(i)
            if i < n and s[i] == ",":
                i = address(skip_blank(i + 1), second=True)
            i = skip_blank(i)
            while i < n and s[i] == "!":
                i = skip_blank(i + 1)
            if i >= n:
                return False
            c = s[i]
            i += 1
            if c in "{}":
                continue
            if c == "#":
                while i < n and s[i] != "\n":
                    i += 1
            elif c in "=dDgGhHnNpPxzF":
                i = end_of_command(i)
            elif c in "lqQ":
                i = skip_blank(i)
                while i < n and s[i].isdigit():
                    i += 1
                i = end_of_command(i)
            elif c in "aicrR":
                # GNU: text / file name runs to the end of the line, `\`-newline continues it.
                while i < n and s[i] != "\n":
                    i += 2 if s[i] == "\\" else 1
            elif c in "btTv:":
                while i < n and s[i] not in ";\n":
                    i += 1
            elif c == "s":
                if i >= n or s[i] in "\n\\":
                    return False
                delim = s[i]
                i = delimited(delimited(i + 1, delim), delim)
                while i < n and (s[i] in "gpiImM" or s[i].isdigit()):
                    i += 1
                i = end_of_command(i)  # anything else, w and e included, is refused
            elif c == "y":
                if i >= n or s[i] in "\n\\":
                    return False
                delim = s[i]
                i = delimited(delimited(i + 1, delim), delim)
                i = end_of_command(i)
            else:
                return False  # w W e and anything unknown
    except _Refuse:
        return False


def _check_sed(args: list[_Word]) -> bool:
    # Allowed options are listed exactly: -i/--in-place (and abbreviations), -f SCRIPTFILE
    # (content unseen) and everything else are refused.
    if not _no_opaque(args):
        return False
    flags = {
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--unbuffered",
        "--null-data",
        "--posix",
        "--debug",
        "--sandbox",
        "--help",
        "--version",
    }
    values = _values(args)
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(values):
        v = values[i]
        i += 1
        if v == "--":
            operands.extend(values[i:])
            break
        if v in flags:
            continue
        if v.startswith("--expression="):
            scripts.append(v.split("=", 1)[1])
            continue
        if v == "--expression":
            if i >= len(values):
                return False
            scripts.append(values[i])
            i += 1
            continue
        if v.startswith("--line-length="):
            continue
        if v.startswith("--"):
            return False
        letters = _short_cluster(v)
        if not letters:
            operands.append(v)
            continue
        for k, ch in enumerate(letters):
            if ch in "nErsuz":
                continue
            if ch in "el":
                rest = letters[k + 1 :]
                if not rest:
                    if i >= len(values):
                        return False
                    rest = values[i]
                    i += 1
                if ch == "e":
                    scripts.append(rest)
                break
            return False
    if not scripts:
        if not operands:
            return False
        scripts.append(operands[0])
    return all(_sed_script_ok(sc, brackets=b) for sc in scripts for b in (False, True))


# -- awk


def _awk_program_ok(prog: str) -> bool:
    # system() runs a command; `|` pipes to/from one (`||` is logical or); `@` covers gawk's
    # @load/@include and indirect calls like @f("rm"); /inet opens sockets. Any `>` after a
    # `print` may be an output redirection, since the redirection always follows its print.
    if "system" in prog or "@" in prog or "/inet" in prog:
        return False
    if "|" in prog.replace("||", ""):
        return False
    at = prog.find("print")
    return at < 0 or ">" not in prog[at:]


def _check_awk(args: list[_Word]) -> bool:
    # -f PROGFILE (unseen), -i/-l (load code), -o/-p/-d (write files), -E ... are refused.
    if not _no_opaque(args):
        return False
    values = _values(args)
    programs: list[str] = []
    i = 0
    while i < len(values):
        v = values[i]
        i += 1
        if v == "--":
            break
        if v.startswith(("--field-separator=", "--assign=")):
            continue
        if v.startswith("--source="):
            programs.append(v.split("=", 1)[1])
            continue
        if v.startswith("--"):
            return False
        if not v.startswith("-") or v == "-":
            i -= 1
            break
        ch, rest = v[1], v[2:]
        if ch not in "Fve":
            return False
        if not rest:
            if i >= len(values):
                return False
            rest = values[i]
            i += 1
        if ch == "e":
            programs.append(rest)
    if not programs:
        if i >= len(values):
            return False
        programs.append(values[i])
    return all(_awk_program_ok(p) for p in programs)


# -- git

# Long options that force, destroy, write files or run programs, in any read-only subcommand.
_GIT_DANGEROUS_LONG = (
    "force",
    "hard",
    "prune",
    "output",
    "ext-diff",
    "open-files-in-pager",
    "exec",
    "upload-pack",
    "receive-pack",
    "delete",
    "move",
    "copy",
    "set-upstream",
    "set-upstream-to",
    "unset-upstream",
    "edit-description",
    "edit",
    "track",
    "create-reflog",
    "mirror",
    "orphan",
    "paginate",
    "exec-path",
    "config-env",
)
# `--force-with-lease`, `--prune-tags`, ...: these families are refused by their stem too.
_GIT_DANGEROUS_STEMS = ("force", "hard", "prune")

_GIT_READ_SUBCOMMANDS = frozenset(
    {
        "status",
        "diff",
        "log",
        "show",
        "rev-parse",
        "ls-files",
        "ls-tree",
        "blame",
        "annotate",
        "describe",
        "shortlog",
        "show-ref",
        "rev-list",
        "cat-file",
        "grep",
        "merge-base",
        "name-rev",
        "for-each-ref",
        "count-objects",
        "whatchanged",
        "diff-tree",
        "diff-index",
        "diff-files",
        "show-branch",
        "range-diff",
        "cherry",
        "check-ignore",
        "check-attr",
        "var",
        "version",
    }
)

# Options of `git branch` / `git tag` that take a value (as `--opt=v` or `--opt v`).
_GIT_LIST_VALUE_OPTIONS = (
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "--sort",
    "--format",
)


def _git_list_mode(values: list[str], flags: set[str], letters: str, numbered: bool) -> bool:
    """`git branch` / `git tag` in listing mode only: a bare name would create a ref."""
    listing = False
    operands = 0
    i = 0
    while i < len(values):
        v = values[i]
        i += 1
        if v in ("-l", "--list"):
            listing = True
        elif v in flags:
            pass
        elif v.startswith(tuple(o + "=" for o in _GIT_LIST_VALUE_OPTIONS)) or v.startswith(
            ("--color=", "--column=", "--abbrev=")
        ):
            pass
        elif v in _GIT_LIST_VALUE_OPTIONS:
            if v in ("--sort", "--format", "--points-at"):
                if i >= len(values):
                    return False
                i += 1
            elif i < len(values) and not values[i].startswith("-"):
                i += 1  # optional commit argument
        elif numbered and re.fullmatch(r"-n\d*", v):
            pass
        elif _short_cluster(v) and all(ch in letters for ch in _short_cluster(v)):
            listing = listing or "l" in _short_cluster(v)
        elif v.startswith("-"):
            return False
        else:
            operands += 1
    return operands == 0 or listing


def _git_branch(values: list[str]) -> bool:
    flags = {
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
    return _git_list_mode(values, flags, "arvil", numbered=False)


def _git_tag(values: list[str]) -> bool:
    flags = {"-i", "--ignore-case", "--color", "--no-color", "--column", "--no-column", "--omit-empty"}
    return _git_list_mode(values, flags, "il", numbered=True)


def _git_remote(values: list[str]) -> bool:
    rest = [v for v in values if v not in ("-v", "--verbose")]
    if not rest:
        return True
    if rest[0] == "get-url":
        return all(v in ("--push", "--all") or not v.startswith("-") for v in rest[1:])
    if rest[0] == "show":
        return all(v == "-n" or not v.startswith("-") for v in rest[1:])
    return False


def _git_config(values: list[str]) -> bool:
    read_actions = {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
    }
    flags = {
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "-z",
        "--null",
        "--includes",
        "--no-includes",
        "--bool",
        "--int",
        "--bool-or-int",
        "--path",
        "--expiry-date",
        "--all",
        "--regexp",
        "--fixed-value",
        "--show-names",
    }
    with_value = ("--file", "-f", "--blob", "--type", "--default", "--value", "--url")
    if not values:
        return False
    # git dispatches on the first word: `git config get|list ...`, other subcommands
    # (set, unset, edit ...) write; everything else is the legacy flag form.
    subcommand = values[0] in ("get", "list")
    rest = values[1:] if subcommand else values
    has_read = subcommand
    operands: list[str] = []
    i = 0
    while i < len(rest):
        v = rest[i]
        i += 1
        if v in read_actions:
            has_read = True
        elif v in flags:
            pass
        elif v in with_value:
            i += 1
        elif v.startswith(tuple(o + "=" for o in with_value if o.startswith("--"))):
            pass
        elif v.startswith("-"):
            return False
        else:
            operands.append(v)
    if has_read:
        return len(operands) <= 2
    # Legacy `git config section.key` reads; a second operand would set it. Keys always
    # contain a dot, subcommand names never do.
    return len(operands) == 1 and "." in operands[0]


def _git_reflog(values: list[str]) -> bool:
    return not any(v in ("expire", "delete", "drop", "write") for v in values)


def _check_git(args: list[_Word]) -> bool:
    # `-c`/`--config-env` can define aliases, hooks and pagers; `-p` forces a pager; other
    # global options are not needed for a glance and are refused. Programs that the
    # repository's own config runs (fsmonitor, textconv) are outside what a command line
    # can show, as for any `git status`.
    if not _no_opaque(args):
        return False
    values = _values(args)
    i = 0
    while i < len(values):
        v = values[i]
        if v == "-C":
            i += 2
        elif v in (
            "--no-pager",
            "-P",
            "--no-optional-locks",
            "--literal-pathspecs",
            "--no-replace-objects",
            "--glob-pathspecs",
            "--noglob-pathspecs",
            "--icase-pathspecs",
        ):
            i += 1
        elif v == "--version":
            return i == len(values) - 1
        else:
            break
    if i >= len(values):
        return False
    sub, rest = values[i], values[i + 1 :]
    for v in rest:
        if _hits_long(v, _GIT_DANGEROUS_LONG):
            return False
        if v.startswith("--") and _long_name(v).startswith(_GIT_DANGEROUS_STEMS):
            return False
    if sub in _GIT_READ_SUBCOMMANDS:
        if sub == "grep":  # -O / --open-files-in-pager runs a program
            return not any("O" in _short_cluster(v) for v in rest)
        return True
    if sub == "branch":
        return _git_branch(rest)
    if sub == "tag":
        return _git_tag(rest)
    if sub == "remote":
        return _git_remote(rest)
    if sub == "config":
        return _git_config(rest)
    if sub == "stash":
        return bool(rest) and rest[0] in ("list", "show")
    if sub == "worktree":
        return bool(rest) and rest[0] == "list"
    if sub == "reflog":
        return _git_reflog(rest)
    return False


# -- containers


def _check_docker(args: list[_Word]) -> bool:
    # No global options (-H, --context, --config): the first word must be the subcommand.
    if not args or not _no_opaque(args):
        return False
    values = _values(args)
    top = {"ps", "images", "logs", "inspect", "version", "info", "top", "port", "diff", "history", "stats"}
    grouped = {
        "image": {"ls", "list", "inspect", "history"},
        "container": {"ls", "list", "ps", "inspect", "logs", "top", "port", "diff", "stats"},
        "network": {"ls", "list", "inspect"},
        "volume": {"ls", "list", "inspect"},
        "system": {"df", "info"},
        "context": {"ls", "list", "inspect", "show"},
    }
    sub = values[0]
    if sub in top:
        return True
    if sub in grouped:
        return len(values) > 1 and values[1] in grouped[sub]
    if sub == "compose":
        return _compose(values[1:])
    return False


def _skip_leading_options(values: list[str], with_value: tuple[str, ...]) -> int:
    """Index of the subcommand after leading global options that each take a value."""
    i = 0
    while i < len(values):
        v = values[i]
        if v in with_value:
            i += 2
        elif v.startswith(tuple(o + "=" for o in with_value if o.startswith("--"))):
            i += 1
        else:
            break
    return i


def _compose(values: list[str]) -> bool:
    i = _skip_leading_options(
        values, ("-f", "--file", "-p", "--project-name", "--project-directory", "--env-file", "--profile")
    )
    # `config` is left out: its -o/--output writes a file.
    return i < len(values) and values[i] in {"ps", "logs", "ls", "top", "images", "version"}


def _check_docker_compose(args: list[_Word]) -> bool:
    return _no_opaque(args) and _compose(_values(args))


def _check_kubectl(args: list[_Word]) -> bool:
    if not args or not _no_opaque(args):
        return False
    values = _values(args)
    i = _skip_leading_options(
        values, ("-n", "--namespace", "--context", "--cluster", "--kubeconfig", "--user")
    )
    if i >= len(values):
        return False
    sub, rest = values[i], values[i + 1 :]
    if sub in {
        "get",
        "describe",
        "logs",
        "top",
        "version",
        "api-resources",
        "api-versions",
        "explain",
        "events",
    }:
        return True
    if sub == "cluster-info":  # `cluster-info dump --output-directory` writes files
        return "dump" not in rest
    grouped = {
        "config": {"view", "current-context", "get-contexts", "get-clusters", "get-users"},
        "auth": {"can-i", "whoami"},
        "rollout": {"status", "history"},
    }
    return sub in grouped and bool(rest) and rest[0] in grouped[sub]


_VERB_CHECKS: dict[str, Callable[[list[_Word]], bool]] = {
    **{verb: _any_args for verb in _PLAIN_VERBS},
    "env": _check_env,
    "command": _check_command,
    "printf": _check_printf,
    "hostname": _check_hostname,
    "date": _check_date,
    "find": _check_find,
    "tree": _check_tree,
    "file": _check_file,
    "rg": _check_rg,
    "sort": _check_sort,
    "uniq": _check_uniq,
    "sed": _check_sed,
    "awk": _check_awk,
    "gawk": _check_awk,
    "mawk": _check_awk,
    "nawk": _check_awk,
    "git": _check_git,
    "docker": _check_docker,
    "docker-compose": _check_docker_compose,
    "kubectl": _check_kubectl,
}


def _segment_ok(words: list[_Word]) -> bool:
    verb = words[0]
    # The verb must be a plain literal name: `FOO=1 ls`, `$CMD`, `/tmp/ls` and `l*` are refused.
    if verb.opaque or verb.value in _DENIED_VERBS:
        return False
    check = _VERB_CHECKS.get(verb.value)
    return check is not None and check(words[1:])


# --------------------------------------------------------------------------- public


def is_ephemeral(cmd: str) -> bool:
    """Whether a Bash command line is a read-only glance (see module docstring)."""
    # 1. empty or whitespace only
    if not isinstance(cmd, str) or not cmd.strip():
        return False
    # Control characters other than tab/newline are never needed and can disguise a command.
    if any((ord(ch) < 32 and ch not in "\t\n") or ord(ch) == 127 for ch in cmd):
        return False

    # 2. command substitution (checked textually: even inside quotes) or a state-changing form
    if any(marker in cmd for marker in _SUBSTITUTION):
        return False
    try:
        tokens = _lex(cmd)
    except _Refuse:
        return False
    segments, background = _split(tokens)
    if not segments or any(seg[0].value in _DENIED_VERBS for seg in segments):
        return False

    # 3. once safe redirections are set aside, no `>` or `<` may remain anywhere -- quoted
    #    ones included, e.g. awk's `print > "f"` inside its program text
    redirections = [t for t in tokens if isinstance(t, _Redir)]
    if not all(_safe_redirection(r) for r in redirections):
        return False
    if any(ch in w.raw for w in (t for t in tokens if isinstance(t, _Word)) for ch in "<>"):
        return False

    # 4. a lone `&` backgrounds a command
    if background:
        return False

    # 5. every segment must be whitelisted, arguments included
    return all(_segment_ok(seg) for seg in segments)
