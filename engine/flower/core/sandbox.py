"""The Bash sandbox: the Claude Code CLI's own confinement of every command it runs.

On Linux the CLI runs each Bash command in bubblewrap (a private mount, process and network
namespace) and sends its traffic through a filtering proxy bridged by socat; on macOS it uses
the system's Seatbelt profiles. flower only decides the settings (`SandboxPolicy.settings`) and
whether to ask for the sandbox at all (`SandboxPolicy.mode`):

- ``require``: no sandbox, no run. Missing tools fail the Runtime's construction, and the CLI is
  told `failIfUnavailable` so that it never falls back to running commands unconfined.
- ``auto`` (the default): the sandbox where it works; where it does not, one line says that
  commands run unconfined, and why.
- ``off``: commands run as the person, with everything they can reach.

What a sandboxed command may do (docs/safety.md has the lists):
- write: the workspace, the workbench when it lives outside, a private temporary folder;
  never the workspace's `.git` when there is none (a planted `.git/hooks/*` would run at the
  person's next commit), the run folder when it lies inside the workspace, or anything else;
- read: everything except `CREDENTIAL_PATHS` (and the CLI's configuration folder);
- environment: the credentials of `secrets.CREDENTIAL_ENV` are removed;
- network: only the hosts of the policy (by default the package registries this machine is
  configured to use, see `registries.py`), through the CLI's proxy; no loopback port, no other host.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict, cast

from ..base.i18n import N_, _, language, ngettext
from ..base.secrets import CREDENTIAL_ENV, CREDENTIAL_PATHS
from .registries import extra_hosts, registry_hosts

SandboxMode = Literal["require", "auto", "off"]
MODES: tuple[SandboxMode, ...] = ("require", "auto", "off")

INSTALL_HINT = N_("安装 bubblewrap 和 socat(Debian/Ubuntu:apt-get install bubblewrap socat)")


class SandboxFilesystem(TypedDict):
    allowWrite: list[str]
    denyWrite: list[str]
    denyRead: list[str]


class SandboxEnvVar(TypedDict):
    name: str
    mode: Literal["deny"]


class SandboxCredentials(TypedDict):
    envVars: list[SandboxEnvVar]


class SandboxNetwork(TypedDict):
    allowedDomains: list[str]
    strictAllowlist: bool


class CliSandbox(TypedDict):
    """The CLI's `sandbox` settings as flower writes them: more than the SDK's SandboxSettings
    knows (failIfUnavailable, filesystem, credentials, strictAllowlist), all honoured by the CLI."""

    enabled: bool
    autoAllowBashIfSandboxed: bool
    allowUnsandboxedCommands: bool
    failIfUnavailable: bool
    filesystem: SandboxFilesystem
    credentials: SandboxCredentials
    network: SandboxNetwork


class SandboxUnavailable(RuntimeError):
    """`require` was asked for and this machine cannot confine commands."""


@dataclass
class SandboxPolicy:
    """How the Bash commands of a session are confined; see the module's docstring."""

    mode: str = "auto"
    # None: the package registries this machine uses plus FLOWER_SANDBOX_HOSTS; [] = no network
    hosts: list[str] | None = None
    deny_read: list[str] = field(default_factory=lambda: list(CREDENTIAL_PATHS))

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    @classmethod
    def of(cls, value: SandboxPolicy | str | bool | None) -> SandboxPolicy:
        """A policy from what a caller passed: a policy, a mode, True (= auto) or False (= off)."""
        if isinstance(value, SandboxPolicy):
            return value
        if value is None or value is True:
            return cls()
        if value is False:
            return cls(mode="off")
        return cls(mode=str(value))

    def allowed_hosts(self) -> list[str]:
        if self.hosts is not None:
            return list(self.hosts)
        return list(dict.fromkeys([*registry_hosts(), *extra_hosts()]))

    def settings(
        self,
        *,
        workspace: Path,
        writable: list[Path] | None = None,
        protected: list[Path] | None = None,
    ) -> CliSandbox:
        """The CLI's `sandbox` settings for a session working in `workspace`."""
        home = Path.home()
        deny_read = [str(home / p) for p in self.deny_read]
        config = os.environ.get("CLAUDE_CONFIG_DIR")
        if config:
            deny_read.append(str(Path(config).expanduser()))  # its transcripts and credentials
        deny_write = [str(p) for p in protected or []]
        git = workspace / ".git"
        if not git.exists():
            deny_write.append(str(git))
        return {
            "enabled": True,
            # every command confined, none may ask to leave (dangerouslyDisableSandbox is ignored)
            "autoAllowBashIfSandboxed": True,
            "allowUnsandboxedCommands": False,
            # not in the SDK's TypedDict, honoured by the CLI: never fall back to unconfined
            "failIfUnavailable": True,
            "filesystem": {
                "allowWrite": [str(p) for p in writable or []],
                "denyWrite": deny_write,
                "denyRead": deny_read,
            },
            "credentials": {"envVars": [{"name": name, "mode": "deny"} for name in CREDENTIAL_ENV]},
            # strict: a host off the list is refused at once, never asked about
            "network": {"allowedDomains": self.allowed_hosts(), "strictAllowlist": True},
        }


@dataclass(frozen=True)
class SandboxState:
    """Whether sessions get the sandbox, and the one line to say when they do not."""

    policy: SandboxPolicy
    active: bool
    note: str | None = None


def decide(policy: SandboxPolicy) -> SandboxState:
    """Sandbox or not, for this machine; raises SandboxUnavailable when `require` cannot be met."""
    if policy.mode == "off":
        return SandboxState(policy, active=False)
    missing = why_unavailable()
    if missing is None:
        return SandboxState(policy, active=True)
    if policy.mode == "require":
        raise SandboxUnavailable(
            _("需要沙箱,但{missing};{hint},或者改用 --sandbox auto|off").format(
                missing=missing, hint=_(INSTALL_HINT)
            )
        )
    note = _("flower: 没有沙箱:{missing};命令不受限地运行").format(missing=missing)
    return SandboxState(policy, active=False, note=note)


def why_unavailable() -> str | None:
    """Why this machine cannot sandbox commands, or None when it can."""
    return _why(platform.system(), os.environ.get("PATH", ""), language())


@functools.lru_cache(maxsize=8)
def _why(system: str, path: str, speaking: str) -> str | None:
    """`speaking` keys the cache: the reason is said in the language of the moment."""
    if system == "Darwin":
        return None if shutil.which("sandbox-exec", path=path) else _("缺少 sandbox-exec")
    if system != "Linux":
        return _("Claude Code CLI 在 {system} 上没有沙箱").format(system=system or _("这个系统"))
    missing = [name for name in ("bwrap", "socat") if shutil.which(name, path=path) is None]
    if missing:
        labels = {"bwrap": "bubblewrap (bwrap)", "socat": "socat"}
        names = labels[missing[0]]
        if len(missing) == 2:
            names = _("{first} 和 {second}").format(first=names, second=labels[missing[1]])
        return ngettext("缺少 {names}", "缺少 {names}", len(missing)).format(names=names)
    bwrap = cast(str, shutil.which("bwrap", path=path))
    # the namespaces the CLI's wrapper needs; a container without user namespaces refuses them
    probe = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-net",
        "--unshare-pid",
    ]
    try:
        done = subprocess.run([*probe, "true"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return _("bubblewrap 在这里跑不起来({error})").format(error=exc)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [_("没有给出原因")])[0]
        return _("bubblewrap 在这里建不了它要的命名空间({reason})").format(reason=first)
    return None
