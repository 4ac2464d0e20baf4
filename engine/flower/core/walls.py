"""A role's main thread may use exactly the tools of its role: an allowlist, held in three layers.

The allowlist is the role's `allowed_tools` (tool names; "Bash(git status:*)" counts as Bash).
The Runtime installs all three layers for every spec it runs, with or without a workbench, so
the walls come from the role and not from where it runs:

1. The CLI's base tool set, `ClaudeAgentOptions.tools` (session-wide). A built-in tool that
   neither the role nor any of its subagents lists is never offered: the deferred tools
   ToolSearch would reveal (CronCreate, EnterWorktree, ...), ToolSearch itself, Workflow, Skill,
   ScheduleWakeup. Only when every subagent names its tools: a definition without `tools`
   inherits all of them, and then the session keeps the full set.
2. `allowlist_guard`, a PreToolUse hook matching every tool and failing closed (main thread).
   Any tool outside the allowlist is denied before it runs, whatever its name: revealed later,
   added by a future CLI, or an MCP tool the role did not list. This is the layer that holds
   when layer 1 cannot. Subagents pass: their tools come from their AgentDefinition. The
   hands-on four keep the words of their own guards (delegate_guard, whitelist_guard).
3. `can_use_tool`, the permission callback (session-wide). Whatever still asks for a
   permission is refused: nobody is at the keyboard of an unattended run. The CLI refuses too
   when no callback is set; the callback says why, names the role on the main thread, and
   answers the sandbox's requests for hosts off its list.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .agent import AgentSpec
from .guard import HANDS_ON, allowed_names, allowlist_guard, allows, refusal

if TYPE_CHECKING:  # the SDK is slow to import
    from claude_agent_sdk import HookMatcher
    from claude_agent_sdk.types import PermissionResult, ToolPermissionContext

CanUseTool = Callable[[str, dict[str, object], "ToolPermissionContext"], Awaitable["PermissionResult"]]

UNATTENDED = "没人在场批准这次调用:flower 无人值守地运行,要人批准的调用一律拒绝。换一个不需要批准的做法。"


@dataclass
class RoleWalls:
    """The three layers for one spec, ready for the Runtime to put into the CLI's options."""

    tools: list[str] | None  # layer 1; None = the CLI's full set
    hooks: dict[str, list[HookMatcher]]  # layer 2, keyed by SDK event
    can_use_tool: CanUseTool  # layer 3


def base_tools(spec: AgentSpec) -> list[str] | None:
    """The built-in tools this session needs: the role's and every subagent's (layer 1)."""
    names = [n for n in sorted(allowed_names(spec.allowed_tools)) if not n.startswith("mcp__")]
    for defn in (spec.agents or {}).values():
        tools = getattr(defn, "tools", None)
        if tools is None:
            return None  # a subagent that inherits every tool: nothing can be left out
        names += [t for t in tools if not t.startswith("mcp__")]
        if getattr(defn, "skills", None):
            names.append("Skill")  # a subagent's skills load through the Skill tool
    return list(dict.fromkeys(names))


def refuse_permission(allowed: list[str] | None, *, role: str, delegate: bool = False) -> CanUseTool:
    """The permission callback (layer 3): every request is refused, with the reason that fits."""
    names = allowed_names(allowed)

    async def can_use_tool(
        tool: str, data: dict[str, object], context: ToolPermissionContext
    ) -> PermissionResult:
        from claude_agent_sdk.types import PermissionResultDeny

        if context.agent_id is None and not allows(names, tool):
            # the same words as layer 2: a tool the role does not have
            return PermissionResultDeny(message=refusal(tool, role=role, delegate=delegate))
        return PermissionResultDeny(message=UNATTENDED)

    return can_use_tool


def _quiet_shadowing() -> None:
    # the SDK warns when allowed_tools pre-approve tools the callback then never sees: layer 3
    # is meant to answer only what still asks, so the warning would only be noise on stderr
    # (filterwarnings replaces an identical filter: calling it per session adds nothing)
    import claude_agent_sdk.types as sdk_types

    shadowed = getattr(sdk_types, "CanUseToolShadowedWarning", None)
    if isinstance(shadowed, type) and issubclass(shadowed, Warning):
        warnings.filterwarnings("ignore", category=shadowed)


def role_walls(spec: AgentSpec) -> RoleWalls:
    """The three layers of `spec`'s role; the hands-on four are left to their own guards."""
    _quiet_shadowing()
    hook = allowlist_guard(spec.allowed_tools, role=spec.name, leave=HANDS_ON, delegate=spec.delegate_only)
    return RoleWalls(
        tools=base_tools(spec),
        hooks={"PreToolUse": [hook]},
        can_use_tool=refuse_permission(spec.allowed_tools, role=spec.name, delegate=spec.delegate_only),
    )
