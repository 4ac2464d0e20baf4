"""Agent definitions: AgentSpec and its compilation into the SDK's ClaudeAgentOptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..plugin import plugin_dir
from .sizes import message_limit
from .window import WARN_BEFORE, configured_window, handover_at

if TYPE_CHECKING:  # the SDK is slow to import; only build_options needs it at run time
    from claude_agent_sdk import ClaudeAgentOptions
    from claude_agent_sdk.types import SessionStore

    from .sandbox import SandboxPolicy


@dataclass
class CompactPolicy:
    """Switches for the CLI's own auto-compact; the algorithm itself lives in the harness."""

    mode: str = "auto"
    window: int | None = None

    def env(self) -> dict[str, str]:
        # Validated here, not in __init__: build_options calls this, so a bad mode surfaces in run().
        out: dict[str, str] = {}
        if self.mode == "no_summary":
            out["DISABLE_AUTO_COMPACT"] = "1"
        elif self.mode == "off":
            out["DISABLE_COMPACT"] = "1"
        elif self.mode != "auto":
            raise ValueError(f"CompactPolicy.mode must be 'auto', 'no_summary' or 'off', not {self.mode!r}")
        if self.window is not None:
            out["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(self.window)
        return out


@dataclass
class HandoffPolicy:
    """When a session nears its window, write a handoff document and continue in a new one.

    ``window``: ``FLOWER_WINDOW``, else the model name's (``core/window.py``); ``headroom``: None
    keeps a share of the window (25%, at least 20K), a number keeps exactly that many tokens."""

    enabled: bool = True
    window: int = field(default_factory=configured_window)
    headroom: int | None = None
    max_generations: int = 8

    @property
    def at(self) -> int:
        return handover_at(self.window, self.headroom)

    @property
    def warn_at(self) -> int:
        return max(1_000, self.at - WARN_BEFORE)


@dataclass
class AgentSpec:
    """Everything that defines one dedicated agent; roles are factories of these."""

    name: str
    instructions: str
    allowed_tools: list[str] = field(default_factory=lambda: ["Read", "Glob", "Grep"])
    disallowed_tools: list[str] = field(default_factory=list)
    model: str | None = None
    effort: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    permission_mode: str = "default"
    agents: dict[str, Any] | None = None
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, Any] | None = None
    compact: CompactPolicy | None = None
    env: dict[str, str] = field(default_factory=dict)
    glance: bool = False
    workbench: bool = True
    delegate_only: bool = False
    # how this agent's Bash commands are confined: a SandboxPolicy or its mode ("require",
    # "auto", "off"); None = the Runtime's choice
    sandbox: SandboxPolicy | str | bool | None = None
    # which confinement of flower.shell.confine its own (main-thread) commands run in: "glance"
    # (read-only, a coordinator's glances) or "judge" (a throw-away overlay of the workspace);
    # None = none of flower's, or a coordinator's glances when `glance` and `delegate_only` say so
    confine: Literal["glance", "judge"] | None = None


def build_options(
    spec: AgentSpec,
    *,
    cwd: str | Path | None = None,
    session_store: SessionStore | None = None,
    resume: str | None = None,
    fork: bool = False,
    resume_at: str | None = None,
    use_plugin: bool = True,
    portable: bool = True,
    add_dirs: list[str] | None = None,
    flush: str = "eager",
    prelude: str = "",
) -> ClaudeAgentOptions:
    """Compile an AgentSpec into the SDK's options (the plugin mounted, settings isolated)."""
    from claude_agent_sdk import ClaudeAgentOptions

    append = spec.instructions + (f"\n\n{prelude}" if prelude else "")
    kw: dict[str, Any] = {
        "system_prompt": {"type": "preset", "preset": "claude_code", "append": append},
        "allowed_tools": list(spec.allowed_tools),
        "disallowed_tools": list(spec.disallowed_tools),
        "permission_mode": spec.permission_mode,
        # portable: the host's ~/.claude and the project's .claude/ never change behaviour
        "setting_sources": [] if portable else ["project"],
        # the SDK's 1 MiB default refuses a long report or an Edit's echo of a big file (sizes.py)
        "max_buffer_size": message_limit(),
    }
    plugin = plugin_dir() if use_plugin else None
    if plugin is not None:
        kw["plugins"] = [{"type": "local", "path": str(plugin)}]
    if cwd is not None:
        kw["cwd"] = str(cwd)
    if add_dirs:
        kw["add_dirs"] = list(add_dirs)
    if session_store is not None:
        kw["session_store"] = session_store
        kw["session_store_flush"] = flush
    for name in ("model", "effort", "max_turns", "max_budget_usd", "agents", "mcp_servers", "hooks"):
        value = getattr(spec, name)
        if value:
            kw[name] = value
    env = dict(spec.env)
    if spec.compact is not None:
        env.update(spec.compact.env())
    kw["env"] = env
    # fork and resume_at only mean something relative to a resumed session
    if resume:
        kw["resume"] = resume
        kw["fork_session"] = fork
        if resume_at:
            kw["resume_session_at"] = resume_at
    return ClaudeAgentOptions(**kw)
