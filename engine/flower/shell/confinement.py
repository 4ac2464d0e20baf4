"""``confine``: the argv that runs a command so that it can change nothing and leak nothing.

``confine(cmd, workspace=..., role="glance")`` is the confinement itself: the hook that admits a
coordinator's glance runs exactly this argv (shell-quoted) instead of the command, and the judge
with ``can_run`` runs every command through ``role="judge"``. The argv is
``[python, -I, -S, -c, <supervisor.py>, <spec>]``: a standard-library script run in isolated mode
by an interpreter outside the workspace, with everything it will do spelled out in the JSON spec.
What holds, whatever the command is:

- **nothing changes**: a glance sees the whole file system read-only (bubblewrap's read-only
  binds; or Landlock granting no write but ``/dev/null`` and seccomp refusing chmod, chown,
  utime, xattr, truncation, SysV IPC); the judge's writes land on an overlay of the workspace
  whose upper layer is a size-bounded tmpfs in a mount namespace of its own, gone when the
  command ends (``/tmp`` and the home folder are tmpfs too);
- **reads stay inside**: the workspace, the system folders programs need (``SYSTEM_DIRS``, the
  ``ETC`` entries, the interpreters a workspace's virtual environments point at), a private
  ``/proc`` and ``/dev``; the home folder, ``/root``, ``/var``, the CLI's configuration folder and
  every other place do not exist (bubblewrap) or cannot be opened (Landlock). Inside the
  workspace the entries of ``view.hidden`` (credential files by name and by content, device nodes,
  sockets) are emptied or cannot be opened; a ``.git`` symlink, a ``commondir``, alternates or a
  submodule pointing outside reach nothing;
- **nothing leaks**: the environment is ``environment()``, a short allowlist (a fixed system PATH,
  a fresh empty HOME, the C.UTF-8 locale, git told to read no system or global configuration and
  to run no fsmonitor, hook, pager, editor, ssh or credential helper); no network (a network
  namespace of its own, or Landlock and seccomp refusing sockets); what the command prints is
  redacted by the hook before the model sees it;
- **nothing runs for ever**: wall time and CPU time are bounded (``GLANCE``, ``JUDGE``), and so is
  the output (head and tail passed on, the middle counted, a flood stopped); when the command ends
  or is stopped, every process it started is killed.

The mechanism is chosen where the command runs, by the supervisor: bubblewrap where namespaces can
be made, Landlock where they cannot (inside the Claude Code CLI's own Bash sandbox, which forbids
them), the overlay for the judge. ``support()`` says what this machine offers; ``plan()`` returns
the whole ``Confinement`` (the argv, the hidden entries, the mechanisms) for callers that need
more than the argv.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..base.i18n import _
from ..base.secrets import CREDENTIAL_PATHS
from . import supervisor
from .view import hidden as hidden_entries

Role = Literal["glance", "judge"]
ROLES: tuple[Role, ...] = ("glance", "judge")

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs read in /etc to run: libraries, users and groups (names in `ls -l`), the time
# zone, the `awk` alternative, file types, the host name and loopback addresses, locales, the
# public CA certificates, Python's own configuration. Not /etc/shadow, /etc/ssl/private, sudoers,
# ssh, apt, pip.conf or gitconfig.
ETC = (
    "passwd",
    "group",
    "nsswitch.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "alternatives",
    "os-release",
    "debian_version",
    "lsb-release",
    "hostname",
    "hosts",
    "host.conf",
    "gai.conf",
    "mime.types",
    "magic",
    "magic.mime",
    "terminfo",
    "locale.alias",
    "locale.conf",
    "protocols",
    "services",
    "shells",
    "mtab",
    "ssl/certs",
    "ca-certificates",
    "ca-certificates.conf",
)
ETC_PREFIXES = ("python3",)  # /etc/python3, /etc/python3.11: the interpreter's sitecustomize
# Home-relative places hidden when the workspace holds the home folder: the CLI's sandbox's own
# list, whole folders rather than one file in them, and the shells' histories.
HOME_SECRETS = (
    *CREDENTIAL_PATHS,
    *(".docker", ".terraform.d", ".bash_history", ".zsh_history", ".python_history"),
)
# git's configuration at command-line level: programs a repository could name never run.
GIT_SETTINGS = (
    ("safe.directory", "*"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
)
SPEC_LIMIT = 100_000  # bytes of spec; one argv string may not pass 128 KiB


@dataclass(frozen=True)
class Limits:
    wall: int  # seconds
    cpu: int  # seconds of CPU per process
    head: int  # stdout bytes passed on at once
    tail: int  # and the last ones, at the end
    err_head: int
    err_tail: int
    stop: int  # bytes of output after which the command is stopped
    tmp: int  # bytes of /tmp (and of the judge's overlay upper layer)


# A glance's output fits the CLI's own cap (30,000 characters) whole, so the CLI never spills it
# to a file of its own that no redaction would see.
GLANCE = Limits(
    wall=20, cpu=20, head=19_000, tail=8_000, err_head=1_500, err_tail=500, stop=16 << 20, tmp=64 << 20
)
# A judged check runs a test suite: ten minutes (the longest the CLI lets a command run), the
# tail of the output first in mind (where test runners summarise).
JUDGE = Limits(
    wall=600, cpu=600, head=8_000, tail=19_000, err_head=1_000, err_tail=1_000, stop=256 << 20, tmp=2 << 30
)
LIMITS: dict[Role, Limits] = {"glance": GLANCE, "judge": JUDGE}
MECHANISMS: dict[Role, tuple[str, ...]] = {"glance": ("bwrap", "landlock"), "judge": ("overlay",)}


class ConfinementUnavailable(RuntimeError):
    """This command cannot be confined here (no mechanism, or a workspace that holds the system)."""


@dataclass(frozen=True)
class Confinement:
    """Everything ``confine`` decided for one command."""

    argv: list[str]
    role: Role
    workspace: Path
    hidden: tuple[Path, ...]
    mechanisms: tuple[str, ...]
    limits: Limits

    @property
    def command(self) -> str:
        """The argv as one shell command line (what the hook hands the CLI)."""
        return shlex.join(self.argv)


def confine(cmd: str, *, workspace: str | Path, role: Role = "glance") -> list[str]:
    """The argv that runs ``cmd`` confined, exactly as the hook runs it (see the module)."""
    return plan(cmd, workspace=workspace, role=role).argv


def plan(
    cmd: str,
    *,
    workspace: str | Path,
    role: Role = "glance",
    mechanisms: Iterable[str] | None = None,
    shell: str = "/bin/bash",
    limits: Limits | None = None,
) -> Confinement:
    """``confine`` with its whole decision; ``mechanisms`` narrows the supervisor's choice (a
    test of the Landlock path outside any sandbox), ``shell`` names another bash and ``limits``
    other bounds (a corpus of hanging commands stops each sooner)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    ws = _workspace(workspace)
    chosen = tuple(mechanisms) if mechanisms is not None else MECHANISMS[role]
    limits = limits or LIMITS[role]
    shell = os.path.realpath(shutil.which(shell, path=SYSTEM_PATH) or shell)
    toolchains = _toolchains(ws)
    hidden = hidden_entries(ws, also=_home_secrets())
    extra = [p for p in (shell,) if not _under_any(p, SYSTEM_DIRS)]
    spec = {
        "role": role,
        "command": cmd,
        "shell": shell,
        "workspace": str(ws),
        "mechanisms": list(chosen),
        "bwrap": _bwrap(),
        "binds": [],
        "read": _read_paths(toolchains, extra),
        "hidden": [],
        "env": environment(role, ws),
        "limits": limits.__dict__,
        "scratch": _scratch(ws),
        "texts": _texts(),
    }
    kept = list(hidden)
    while True:
        spec["hidden"] = [str(p) for p in kept]
        spec["binds"] = _binds(role, ws, kept, toolchains, extra, limits)
        text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
        if len(text.encode()) <= SPEC_LIMIT or not kept:
            break
        kept = _coarser(kept, ws)
    argv = [_interpreter(ws), "-I", "-S", "-c", _SOURCE, text]
    return Confinement(argv, role, ws, tuple(kept), chosen, limits)


def environment(role: Role, workspace: Path) -> dict[str, str]:
    """The whole environment of a confined command: nothing is inherited but a valid TZ."""
    env = {
        "PATH": SYSTEM_PATH,
        "HOME": "/tmp/home",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CEILING_DIRECTORIES": str(workspace.parent),
        "GIT_CONFIG_COUNT": str(len(GIT_SETTINGS)),
    }
    for k, (key, value) in enumerate(GIT_SETTINGS):
        env[f"GIT_CONFIG_KEY_{k}"] = key
        env[f"GIT_CONFIG_VALUE_{k}"] = value
    if role == "glance":
        env["GIT_OPTIONAL_LOCKS"] = "0"  # a status refreshes no index
    tz = os.environ.get("TZ", "")
    if re.fullmatch(r"[A-Za-z0-9_+\-:/.]{1,64}", tz):
        env["TZ"] = tz
    return env


# -- what the machine offers ---------------------------------------------------------------


@dataclass(frozen=True)
class Support:
    """What confinement this machine offers, each with why not (None: it works)."""

    bwrap: str | None  # bubblewrap with namespaces (a glance outside the CLI's sandbox)
    landlock: str | None  # Landlock with seccomp (a glance anywhere, inside the CLI's sandbox too)
    overlay: str | None  # the judge's throw-away view (user and mount namespaces, overlay, bubblewrap)

    def glance(self, *, nested: bool) -> str | None:
        """Why a glance cannot be confined (``nested``: inside the CLI's sandbox), or None."""
        if nested:
            return self.landlock
        return None if self.bwrap is None or self.landlock is None else self.bwrap

    def judge(self) -> str | None:
        return self.overlay


def support() -> Support:
    """Probed once per process (per language, for the reasons): each mechanism runs ``true``."""
    from ..base.i18n import language

    return _support(language())


@functools.lru_cache(maxsize=4)
def _support(speaking: str) -> Support:
    if sys.platform != "linux":
        return Support(*([_("只有 Linux 上有")] * 3))
    with tempfile.TemporaryDirectory(prefix="flower-probe-") as folder:
        ws = Path(folder)

        def probe(role: Role, mechanism: str) -> str | None:
            try:
                argv = plan("true", workspace=ws, role=role, mechanisms=(mechanism,)).argv
                done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.SubprocessError, ConfinementUnavailable) as exc:
                return str(exc)
            if done.returncode == 0:
                return None
            lines = done.stderr.strip().splitlines()
            return lines[-1] if lines else _("退出码 {code}").format(code=done.returncode)

        bwrap = _("缺少 bubblewrap (bwrap)") if _bwrap() is None else probe("glance", "bwrap")
        if supervisor.landlock_abi() < 1:
            landlock: str | None = _("内核没有 Landlock")
        elif supervisor.seccomp_arch() is None:
            landlock = _("seccomp 过滤器不认识这个架构({arch})").format(arch=os.uname().machine)
        else:
            landlock = probe("glance", "landlock")
        overlay = bwrap or probe("judge", "overlay")
    return Support(bwrap=bwrap, landlock=landlock, overlay=overlay)


# -- the pieces ----------------------------------------------------------------------------

_SOURCE = Path(supervisor.__file__).read_text(encoding="utf-8")  # read once, before any worker runs


def _workspace(value: str | Path) -> Path:
    ws = Path(os.path.realpath(value))
    if not ws.is_dir():
        raise ConfinementUnavailable(_("工作区不是文件夹:{path}").format(path=ws))
    system = [*SYSTEM_DIRS, "/etc", "/proc", "/dev"]
    if ws == Path("/") or any(Path(d).is_relative_to(ws) for d in system if os.path.lexists(d)):
        raise ConfinementUnavailable(_("工作区包含系统文件夹:{path}").format(path=ws))
    return ws


def _bwrap() -> str | None:
    # only a system folder: a bwrap found on a PATH entry inside the workspace could be anything
    found = shutil.which("bwrap", path=SYSTEM_PATH)
    return os.path.realpath(found) if found else None


def _interpreter(ws: Path) -> str:
    """A Python outside the workspace: the one running flower (its real file), else the system's."""
    base = getattr(sys, "_base_executable", "") or ""
    for candidate in (sys.executable, base, "/usr/bin/python3"):
        real = os.path.realpath(candidate) if candidate else ""
        if real and os.access(real, os.X_OK) and not Path(real).is_relative_to(ws):
            return real
    raise ConfinementUnavailable(_("找不到工作区之外的 Python"))


def _scratch(ws: Path) -> str:
    # where the judge's tmpfs gets its mount point: outside the workspace
    for folder in (tempfile.gettempdir(), "/tmp"):
        real = os.path.realpath(folder)
        if os.path.isdir(real) and not Path(real).is_relative_to(ws):
            return real
    raise ConfinementUnavailable(_("找不到工作区之外的临时文件夹"))


def _under_any(path: str, folders: Iterable[str]) -> bool:
    return any(Path(path).is_relative_to(os.path.realpath(f)) for f in folders if os.path.exists(f))


def _etc() -> list[str]:
    names = list(ETC)
    with contextlib.suppress(OSError):
        names += sorted(n for n in os.listdir("/etc") if n.startswith(ETC_PREFIXES))
    return [f"/etc/{n}" for n in names if os.path.lexists(f"/etc/{n}")]


def _toolchains(ws: Path) -> list[str]:
    """Installations a virtual environment of the workspace runs on (its pyvenv.cfg's ``home``),
    when they live outside the system folders: a venv's python is a link to them."""
    found: list[str] = []
    for cfg in [*ws.glob("pyvenv.cfg"), *ws.glob("*/pyvenv.cfg"), *ws.glob("*/*/pyvenv.cfg")]:
        try:
            lines = cfg.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            key, _sep, value = line.partition("=")
            if key.strip() != "home" or not value.strip():
                continue
            prefix = Path(os.path.realpath(value.strip())).parent
            home = Path(os.path.realpath(Path.home()))
            if (
                prefix.is_dir()
                and prefix not in (Path("/"), home)
                and not prefix.is_relative_to(ws)
                and not _under_any(str(prefix), SYSTEM_DIRS)
                and not any(part.startswith(".") and part in HOME_SECRETS for part in prefix.parts)
            ):
                found.append(str(prefix))
    return sorted(set(found))


def _home_secrets() -> list[str]:
    home = Path.home()
    places = [str(home / p) for p in HOME_SECRETS]
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    if config:
        places.append(str(Path(config).expanduser()))
    return places


def _read_paths(toolchains: list[str], extra: list[str]) -> list[str]:
    return [d for d in SYSTEM_DIRS if os.path.exists(d)] + _etc() + toolchains + extra


def _binds(
    role: Role, ws: Path, hidden: list[Path], toolchains: list[str], extra: list[str], limits: Limits
) -> list[str]:
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
    args += ["--cap-drop", "ALL", "--hostname", "flower"]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for path in _etc():
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(limits.tmp),
        "--tmpfs",
        "/tmp",
        "--dir",
        "/tmp/home",
    ]
    for place in [*toolchains, *extra]:
        args += ["--ro-bind", place, place]
    args += ["--bind" if role == "judge" else "--ro-bind", str(ws), str(ws)]
    for entry in hidden:
        if entry.is_dir() and not entry.is_symlink():
            args += ["--tmpfs", str(entry), "--remount-ro", str(entry)]
        else:
            args += ["--ro-bind", "/dev/null", str(entry)]
    if role == "glance":
        args += ["--remount-ro", "/tmp"]
    return args


def _coarser(hidden: list[Path], ws: Path) -> list[Path]:
    """Fewer entries hiding more: the folder holding the most hidden entries is hidden whole."""
    parents: dict[Path, int] = {}
    for path in hidden:
        if path.parent != ws:
            parents[path.parent] = parents.get(path.parent, 0) + 1
    if not parents:  # every one sits at the top: nothing coarser hides them all
        raise ConfinementUnavailable(_("工作区里要隐藏的文件太多({n} 个)").format(n=len(hidden)))
    folder = max(parents, key=lambda p: (parents[p], -len(p.parts)))
    return sorted([p for p in hidden if not p.is_relative_to(folder)] + [folder])


def _texts() -> dict[str, str]:
    return {
        "left_out": _("[flower:中间省略了 {n} 字节]"),
        "timeout": _("flower:这条命令超过 {s} 秒,已停止"),
        "flood": _("flower:输出超过 {n} 字节,已停止"),
        "cannot": _("flower:这里隔离不了这条命令({why}),没有运行"),
    }
