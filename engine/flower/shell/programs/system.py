"""System information, processes and program lookup.

``env``, ``printenv``, ``set``, ``export``, ``declare``, ``locale`` and the like are not here: they
print the environment. ``ps`` may not show it either (BSD ``e``, the ``environ`` format). ``top``
is not here: even ``top -b -n 1`` creates ``~/.config/procps``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..options import options, parse
from ..refusal import Refused
from .base import Program, count, names, read_option_paths, text

# -s/--set and a positional MMDDhhmm set the clock; only +FORMAT may be positional.
DATE = options(
    "-d, --date=STRING",
    "-f, --file=FILE",
    "-I[FMT], --iso-8601[=FMT]",
    "-R, --rfc-email",
    "--rfc-3339=FMT",
    "-r, --reference=PATH",
    "-u, --utc, --universal",
    "--debug",
)
# A positional name, -F and -b set the hostname.
HOSTNAME = options(
    "-a, --alias",
    "-A, --all-fqdns",
    "-d, --domain",
    "-f, --fqdn, --long",
    "-i, --ip-address",
    "-I, --all-ip-addresses",
    "-s, --short",
    "-y, --yp, --nis",
)
UNAME = options(
    "-a, --all",
    "-s, --kernel-name",
    "-n, --nodename",
    "-r, --kernel-release",
    "-v, --kernel-version",
    "-m, --machine",
    "-p, --processor",
    "-i, --hardware-platform",
    "-o, --operating-system",
)
ID = options(
    "-a",
    "-Z, --context",
    "-g, --group",
    "-G, --groups",
    "-n, --name",
    "-r, --real",
    "-u, --user",
    "-z, --zero",
)
NPROC = options("--all", "--ignore=N")
UPTIME = options("-p, --pretty", "-s, --since")
# -s/-c repeat forever.
FREE = options(
    "-b, --bytes",
    "--kilo",
    "--mega",
    "--giga",
    "--tera",
    "--peta",
    "-k, --kibi",
    "-m, --mebi",
    "-g, --gibi",
    "--tebi",
    "--pebi",
    "-h, --human",
    "--si",
    "-l, --lohi",
    "-L, --line",
    "-t, --total",
    "-v, --committed",
    "-w, --wide",
)
# -F/--pidfile reads a file, --signal belongs to pkill.
PGREP = options(
    "-l, --list-name",
    "-a, --list-full",
    "-v, --inverse",
    "-c, --count",
    "-d, --delimiter=DELIM",
    "-f, --full",
    "-g, --pgroup=PGIDS",
    "-G, --group=GIDS",
    "-i, --ignore-case",
    "-n, --newest",
    "-o, --oldest",
    "-O, --older=SECONDS",
    "-P, --parent=PPIDS",
    "-s, --session=SIDS",
    "-t, --terminal=TTYS",
    "-u, --euid=UIDS",
    "-U, --uid=UIDS",
    "-x, --exact",
    "-w, --lightweight",
    "-r, --runstates=STATES",
)
PIDOF = options("-s", "-c", "-n", "-x", "-z", "-q", "-w", "-d=SEP", "-o=OMIT")
WHICH = options("-a", "-s")
WHEREIS = options("-b", "-m", "-s", "-u", "-l")
TYPE = options("-a", "-f", "-t", "-p", "-P")

# Format keywords of procps ps (`ps L`), without `environ`.
_PS_KEYS = names(
    """%cpu %mem args atime blocked bsdstart bsdtime c caught cgname cgroup cgroupns class cls cmd comm
    command cp cputime cputimes drs egid egroup eip esp etime etimes euid euser exe f fgid fgroup
    flag flags fname fsgid fsgroup fsuid fsuser fuid fuser gid group ignored intpri ipcns label
    lastcpu lim longtname lsession lstart luid lwp lxc maj_flt majflt min_flt minflt mntns netns ni
    nice nlwp numa oom oomadj opri ouid pagein pcpu pending pgid pgrp pid pidns pmem policy ppid pri
    priority psr pss rbytes rchars rgid rgroup rops rss rssize rsz rtprio ruid ruser s sched seat
    sess session sgi_p sgid sgroup sid sig sig_block sig_catch sig_ignore sig_pend sigcatch
    sigignore sigmask size slice spid stackp start start_stack start_time stat state stime suid
    supgid supgrp suser svgid svgroup svuid svuser sz tgid thcount tid time timens times tname tpgid
    trs tsig tsiz tt tty tty4 tty8 ucmd ucomm uid uname unit user userns uss utsns uunit vsize vsz
    wbytes wcbytes wchan wchars wname wops zone"""
)
_PS_UNIX_FLAGS = frozenset("AadefFHjlLMNTwyZc")
_PS_UNIX_VALUED = frozenset("pqCgGstuUoO")
# BSD letters; `e` (show the environment) is the one left out, with those that take a value.
_PS_BSD_FLAGS = frozenset("auxfjlshvmrcwHSTnZ")
_PS_LONG_FLAGS = frozenset({"--forest", "--no-headers", "--headers", "--cumulative", "--deselect"})
_PS_LONG_VALUED = frozenset({"--sort", "--format", "--pid", "--ppid", "--user", "--group", "--sid", "--tty"})


def _ps_format(spec: str) -> None:
    for item in re.split(r"[,\s]+", spec.strip()):
        key = item.split("=", 1)[0].split(":", 1)[0].lstrip("+-").lower()
        if key and key not in _PS_KEYS:
            raise Refused(f"ps format {key}")


def _ps(argv: Sequence[str], ctx: Context) -> None:
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in _PS_LONG_FLAGS and not eq:
                continue
            if name not in _PS_LONG_VALUED:
                raise Refused(f"ps option {name}")
            if not eq:
                if i >= len(argv):
                    raise Refused(f"ps {name} without its value")
                value = argv[i]
                i += 1
            if name in ("--sort", "--format"):
                _ps_format(value)
        elif word.startswith("-"):
            letters = word[1:]
            if letters and all(ch in _PS_UNIX_FLAGS for ch in letters):
                continue
            # A valued letter may only end a cluster (`-eo FORMAT`) and takes the next word:
            # attached values are refused, since procps may reread `-auxe` in BSD syntax.
            flags, last = letters[:-1], letters[-1:]
            if (
                last
                and last in _PS_UNIX_VALUED
                and all(ch in _PS_UNIX_FLAGS for ch in flags)
                and i < len(argv)
            ):
                if last in "oO":
                    _ps_format(argv[i])
                i += 1
                continue
            raise Refused(f"ps option {word}")
        elif word.isdigit():
            continue  # a process id
        elif not all(ch in _PS_BSD_FLAGS for ch in word):
            raise Refused(f"ps BSD options {word}")


def _date(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(DATE, argv)
    read_option_paths(parsed, ctx)
    if len(parsed.operands) > 1 or any(not v.startswith("+") for v in parsed.operands):
        raise Refused("date with an operand that would set the clock")


def _type(argv: Sequence[str], ctx: Context) -> None:
    # Without -t/-p/-P, `type` prints whole function bodies.
    parsed = parse(TYPE, argv)
    count(parsed, 1, None)
    if not (parsed.has("-t") or parsed.has("-p") or parsed.has("-P")):
        raise Refused("type without -t, -p or -P")


def _command(argv: Sequence[str], ctx: Context) -> None:
    # Without -v, `command NAME` runs NAME; -V prints function bodies.
    if not argv or argv[0] not in ("-v", "-pv", "-vp") or len(argv) < 2:
        raise Refused("command other than command -v")
    if any(w.startswith("-") for w in argv[1:]):
        raise Refused("command -v with more options")


_LSOF_CLUSTER = re.compile(r"-[nPltabwRV]*(i[46]?([A-Za-z]+)?(@[\w.:\[\]-]*)?(:[\w,-]+)?)?")
_LSOF_ADDRESS = re.compile(r"[46]?([A-Za-z]+)?(@[\w.:\[\]-]*)?:[\w,-]+|(TCP|UDP|tcp|udp)(:[\w,-]+)?")
_LSOF_VALUED = {
    "-p": r"[\d,^]+",
    "-c": r"[\w.-]+",
    "-u": r"[\w,^-]+",
    "-s": r"(TCP|UDP):[\w,^]+",
    "-g": r"[\d,^]+",
}


def _lsof(argv: Sequence[str], ctx: Context) -> None:
    # Selection and formatting only; file operands and +D/+d (walk folders) are refused.
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        valued = next((k for k in _LSOF_VALUED if word.startswith(k)), None)
        if valued is not None:
            value = word[len(valued) :]
            if not value:
                if i >= len(argv):
                    raise Refused(f"lsof {word} without its value")
                value = argv[i]
                i += 1
            if not re.fullmatch(_LSOF_VALUED[valued], value):
                raise Refused(f"lsof {valued} {value}")
            continue
        if word != "-" and _LSOF_CLUSTER.fullmatch(word):
            if word.endswith("i") and i < len(argv) and _LSOF_ADDRESS.fullmatch(argv[i]):
                i += 1
            continue
        raise Refused(f"lsof {word}")


PROGRAMS = [
    Program("date", _date, "prints the time; never sets it"),
    Program("hostname", text(HOSTNAME, high=0), "prints the host name; never sets it"),
    Program("uname", text(UNAME, high=0), "prints the system"),
    Program("whoami", text(options(), high=0), "prints the user"),
    Program("id", text(ID), "prints user and groups"),
    Program("groups", text(options()), "prints groups"),
    Program("nproc", text(NPROC, high=0), "counts processors"),
    Program("arch", text(options(), high=0), "prints the machine"),
    Program("uptime", text(UPTIME, high=0), "prints the uptime"),
    Program("free", text(FREE, high=0), "prints memory; never repeats"),
    Program("ps", _ps, "lists processes; never their environment"),
    Program("pgrep", text(PGREP, high=1), "finds processes; never signals"),
    Program("pidof", text(PIDOF, low=1), "finds process ids"),
    Program("lsof", _lsof, "open files and sockets, selected by process, user or address"),
    Program("which", text(WHICH, low=1), "finds programs on PATH"),
    Program("whereis", text(WHEREIS, low=1), "finds programs and manuals"),
    Program("type", _type, "-t, -p or -P only", builtin=True),
    Program("command", _command, "command -v only", builtin=True),
]
