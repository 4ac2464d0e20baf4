"""Whether a role's main-thread commands run inside ``flower.shell.confine``, and the one line when not.

Two roles run commands on their own main thread: the coordinator its glances (``glance``), the
judge with ``can_run`` its checks (``judge``). Their commands run confined whenever this machine
can (``flower.shell.confine``: read-only or a throw-away overlay, no network, an allowlisted
environment, bounded); the mode of the sandbox policy decides what happens where it cannot:

- ``require``: the Runtime refuses to start;
- ``auto``: one line says the walls are weaker and why: glances fall back to the rules of
  ``is_ephemeral`` alone, the judge's commands run as the CLI runs every command (in its own
  sandbox where that works, which lets them write the workspace);
- ``off``: the same, and the line names ``--sandbox off``.

Where the commands run decides what can confine them. The coordinator's session keeps the CLI's
Bash sandbox, which confines its workers; its glances therefore run inside the CLI's bubblewrap,
where no namespace can be made, and Landlock does the confining. The judge's session has no
workers: when the overlay works here, flower's confinement replaces the CLI's sandbox for it
(the overlay needs namespaces, which the CLI's sandbox forbids), and it is stricter on every
count: no write reaches the workspace, no network, nothing of the environment but the allowlist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.i18n import N_, _
from ..shell.confinement import Role, support

if TYPE_CHECKING:
    from .agent import AgentSpec
    from .sandbox import SandboxPolicy

_WHO = {"glance": N_("协调者的查看命令"), "judge": N_("判定者的命令")}
_WEAKER = {
    "glance": N_("只靠命令规则把关,隔离更弱"),
    "judge": N_("按 CLI 的方式运行,可能改动工作区"),
}


@dataclass(frozen=True)
class Walls:
    """How one role's main-thread commands run: confined or not, and the line to say if not."""

    role: Role
    active: bool
    note: str | None = None


def confined_role(spec: AgentSpec) -> Role | None:
    """Which confinement the spec's own commands get: ``spec.confine``, or a coordinator's
    glances when it allows them."""
    if spec.confine is not None:
        return spec.confine
    return "glance" if spec.glance and spec.delegate_only and _has_bash(spec) else None


def _has_bash(spec: AgentSpec) -> bool:
    return any(t == "Bash" or t.startswith("Bash(") for t in spec.allowed_tools)


def why_not(role: Role, *, nested: bool) -> str | None:
    """Why this machine cannot confine the role's commands (``nested``: inside the CLI's sandbox)."""
    found = support()
    return found.judge() if role == "judge" else found.glance(nested=nested)


def decide_walls(policy: SandboxPolicy, role: Role, *, nested: bool) -> Walls:
    """The walls of ``role`` under ``policy``; raises SandboxUnavailable when ``require`` cannot
    be met (see the module)."""
    from .sandbox import INSTALL_HINT, SandboxUnavailable

    who, weaker = _(_WHO[role]), _(_WEAKER[role])
    if policy.mode == "off":
        return Walls(
            role, False, _("flower:--sandbox off:{who}不做系统隔离,{weaker}").format(who=who, weaker=weaker)
        )
    why = why_not(role, nested=nested)
    if why is None:
        return Walls(role, True)
    if policy.mode == "require":
        raise SandboxUnavailable(
            _("需要隔离,但{who}在这里隔离不了({why});{hint},或者改用 --sandbox auto|off").format(
                who=who, why=why, hint=_(INSTALL_HINT)
            )
        )
    return Walls(
        role, False, _("flower:{who}隔离不了({why}),{weaker}").format(who=who, why=why, weaker=weaker)
    )
