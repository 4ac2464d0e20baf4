"""System information, processes and program lookup.

``env`` (bare) and ``printenv`` print the environment: glances only when confined, where the
environment is the confinement's own allowlist. ``set``, ``export``, ``declare`` and ``locale``
are not here. ``ps`` may not show the environment either (BSD ``e``, the ``environ`` format).
``top -b -n N`` creates ``~/.config/procps``: a glance only when confined, where the home folder
is read-only. ``cd DIR`` changes the shell the command runs in: confined, that shell ends with
the command. ``test``/``[`` only stat their operands. An interpreter's ``--version`` runs no code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..context import Context
from ..options import options, parse
from ..paths import Reads
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
# batch mode only (-b), a bounded number of iterations (-n); the interactive keys never run
TOP = options(
    "-b, --batch",
    "-n, --iterations=NUMBER",
    "-c, --cmdline-toggle",
    "-H, --threads-show",
    "-i, --idle-toggle",
    "-o, --sort-override=FIELD",
    "-O, --list-fields",
    "-p, --pid=PIDS",
    "-u, --filter-only-euser=USER",
    "-U, --filter-any-user=USER",
    "-w, --width[=COLUMNS]",
    "-1, --single-cpu-toggle",
    "-E, --scale-summary-mem=SCALE",
    "-e, --scale-task-mem=SCALE",
    "-d, --delay=SECS",
    "-S, --accum-time-toggle",
)
_TEST_OPERATORS = names(
    """! -a -o = == != < > -eq -ne -lt -le -gt -ge -nt -ot -ef -b -c -d -e -f -g -G -h -k -L -N -O
    -p -r -s -S -t -u -w -x -z -n -v -R"""
)
_VERSIONS = frozenset({"--version", "-V"})

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


def _env(argv: Sequence[str], ctx: Context) -> None:
    # with an operand or an option env runs a program or changes what it passes on
    if argv:
        raise Refused("env with operands (it would run a program)")
    ctx.needs_confinement("env")


def _printenv(argv: Sequence[str], ctx: Context) -> None:
    if any(w.startswith("-") and w != "-0" for w in argv):
        raise Refused("printenv with options")
    ctx.needs_confinement("printenv")


def _top(argv: Sequence[str], ctx: Context) -> None:
    parsed = parse(TOP, argv)
    count(parsed, 0, 0)
    if not parsed.has("-b") or not parsed.has("-n"):
        raise Refused("top without -b and -n (it would run until stopped)")
    ctx.needs_confinement("top")


def _cd(argv: Sequence[str], ctx: Context) -> None:
    if len(argv) > 1 or (argv and (argv[0].startswith("-") or argv[0] == "")):
        raise Refused("cd with options or more than one folder")
    if argv:
        ctx.read(argv[0], Reads.NAMES)
    ctx.needs_confinement("cd")


def _test(argv: Sequence[str], ctx: Context) -> None:
    # `[ ... ]` / `test ...`: operators and operands; an operand is only statted or compared
    for word in argv:
        if word not in _TEST_OPERATORS:
            ctx.read(word, Reads.NAMES)


def _bracket(argv: Sequence[str], ctx: Context) -> None:
    if not argv or argv[-1] != "]":
        raise Refused("[ without its closing ]")
    _test(argv[:-1], ctx)


def _version(argv: Sequence[str], ctx: Context) -> None:
    if len(argv) != 1 or argv[0] not in _VERSIONS:
        raise Refused("an interpreter beyond --version (it would run code)")


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
    Program("test", _test, "stats and compares its operands", builtin=True),
    Program("[", _bracket, "stats and compares its operands", builtin=True),
    Program("env", _env, "prints the environment: confined only, where it is the confinement's own"),
    Program("printenv", _printenv, "prints the environment: confined only"),
    Program("top", _top, "batch mode, bounded: confined only (it writes its home configuration)"),
    Program(
        "cd", _cd, "changes the folder of a shell that ends with the command: confined only", builtin=True
    ),
    *(Program(name, _version, "--version only") for name in ("python", "python3", "node")),
]
