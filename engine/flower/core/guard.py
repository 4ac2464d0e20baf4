"""The hook layer: flower's execution boundary, enforced by SDK hooks instead of prompts.

A prompt is a suggestion the model may ignore; a hook is not. Everything that decides which
tools the main thread may touch, how long a tool result may stay in context and which roles
get their own worktree lives here. `allowlist_guard` is the role's allowlist on the main thread
(every tool not on it is denied); `walls.py` says how it and the SDK's other two layers (the
base tool set, the permission callback) hold a role together.

Measured with the bundled CLI 2.1.327 (tests/e2e/test_guards_cli.py):
- ``tool_response`` in PostToolUse is a dict per tool: Bash ``{stdout, stderr, interrupted,
  isImage, noOutputExpected}``, Read ``{type: "text", file: {filePath, content, ...}}``,
  Grep ``{mode, filenames: [...], content, numLines, ...}``.
- ``updatedToolOutput`` is honoured when it keeps that structure (Read's nested
  ``file.content`` included); anything else is ignored silently and the original is shown.
- Read of an image answers ``{type: "image", file: {base64: ...}}``: a long string that is
  not text, so it must never be spilled.
- Bash output over ~30k chars is already persisted by the CLI itself (``persistedOutputPath``)
  and the model only sees a 2 KB preview; spilling the truncated stdout would lose data.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..base import loose
from ..base.files import spill
from ..base.i18n import N_, _
from ..base.secrets import redact, redact_value
from ..shell.confinement import ConfinementUnavailable, Role, plan
from ..stores.ephemeral import is_ephemeral
from .workbench import Workbench

if TYPE_CHECKING:  # the SDK is slow to import; the factories import it when called
    from claude_agent_sdk import AgentDefinition, HookMatcher
    from claude_agent_sdk.types import SyncHookJSONOutput

HANDS_ON = "Bash|Write|Edit|NotebookEdit"
WRITE_ONLY = "Write|Edit|NotebookEdit"
BULKY = "Bash|Read|Grep|Glob|WebFetch|WebSearch"

SPILL_HEAD = 400
_AGENT_TOOLS = ("Agent", "Task")  # "Task" is the tool's older name
_MARK = "_flower_isolate"

# Told of a write the disk refused: the error and the file it was for.
OnFault = Callable[[OSError, Path], object]

# What the SDK hands a hook (one of its HookInput TypedDicts, read as a mapping: the fields a
# guard needs differ per event), the tool use id, and a context flower's guards never read.
Hook = Callable[[Mapping[str, object], "str | None", object], Awaitable["SyncHookJSONOutput"]]
# Told of a subagent sent to its own worktree: its type and the task's description.
OnInject = Callable[[str, str], object]

_Key = TypeVar("_Key")
_Item = TypeVar("_Item")


def _is_main_thread(data: Mapping[str, object]) -> bool:
    # Subagent tool-lifecycle hooks carry agent_id; the main thread's never do.
    return not data.get("agent_id")


def _matcher(matcher: str | None, hook: Hook, *, fail_closed: bool = False) -> HookMatcher:
    from claude_agent_sdk import HookMatcher

    if fail_closed:
        # A deny guard that crashes must not turn into "no decision", i.e. a free pass.
        return HookMatcher(matcher=matcher, hooks=[hook], on_failure="block")
    return HookMatcher(matcher=matcher, hooks=[hook])


def _deny(reason: str) -> SyncHookJSONOutput:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def _tool_input(data: Mapping[str, object]) -> dict[str, object]:
    return loose.mapping(data.get("tool_input"))


def _resolve(path: object, data: Mapping[str, object], base: Path) -> Path | None:
    if not isinstance(path, str) or not path:
        return None
    p = Path(path).expanduser()
    if not p.is_absolute():
        cwd = data.get("cwd")
        p = (Path(cwd) if isinstance(cwd, str) and cwd else base) / p
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return None


# -- whitelist_guard -----------------------------------------------------------------------


def _in_allowed(tool: str, allowed: list[str]) -> bool:
    # "Bash(git status:*)" pre-approves part of Bash: the role deliberately has that tool.
    return any(a == tool or a.startswith(f"{tool}(") for a in allowed)


def whitelist_guard(allowed: list[str] | None, *, role: str = "这个角色") -> HookMatcher | None:
    """Make `allowed_tools` really exclusive for the four hands-on tools, on the main thread."""
    allowed = list(allowed or [])
    banned = [t for t in HANDS_ON.split("|") if not _in_allowed(t, allowed)]
    if not banned:
        return None

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        tool = loose.text(data.get("tool_name"))
        if not _is_main_thread(data) or tool not in banned:
            return {}
        return _deny(_not_for(role, tool))

    return _matcher("|".join(banned), hook, fail_closed=True)


def _not_for(role: str, tool: str) -> str:
    return (
        f"{role} 没有 {tool}。这是有意的,不是配置遗漏。"
        "结论写在回复正文里,框架会从那里取 —— 不要换个写法绕过。"
    )


# -- delegate_guard ------------------------------------------------------------------------

_DELEGATE = (
    "协调者不亲自动手,{tool} 留给 subagent 去做。"
    "用 Agent 工具派一个 subagent:任务书里写明目标和验收标准;"
    "长产出让它写进工作台的 artifacts/(默认 `.flower/artifacts/`),回复里只给路径和结论。"
)
_GLANCE = "只有只读、结果会过期的查看类命令(git status、ls、cat 这类)可以自己跑;这条命令不是。"


def delegate_guard(
    *, tools: str = HANDS_ON, allow_glance: bool = False, confine_in: str | Path | None = None
) -> HookMatcher:
    """Deny hands-on work on the main thread and say what to do instead; subagents pass.

    ``confine_in`` (after the reference's parameters): the workspace whose confinement a glance
    runs in; the command that runs is ``flower.shell.confine`` of the model's (``updatedInput``).
    None: no confinement here, and a glance is judged by the rules alone (``confined=False``).
    """

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        if not _is_main_thread(data):
            return {}
        tool = data.get("tool_name", "")
        if allow_glance and tool == "Bash":
            command = _tool_input(data).get("command")
            # The same predicate marks these results as expired on resume: the two sets must match.
            cwd = data.get("cwd")
            workspace = cwd if isinstance(cwd, str) and cwd else None
            confined = confine_in is not None
            if isinstance(command, str) and is_ephemeral(command, workspace=workspace, confined=confined):
                if confine_in is None:
                    return {}
                return await _confined(data, confine_in, "glance", also=_DELEGATE.format(tool=tool))
            return _deny(_GLANCE + _DELEGATE.format(tool=tool))
        return _deny(_DELEGATE.format(tool=tool))

    return _matcher(tools, hook, fail_closed=True)


# -- confinement ---------------------------------------------------------------------------

_UNCONFINABLE = N_("这条命令在这里隔离不了({why}),所以没有运行。")


async def _confined(
    data: Mapping[str, object], workspace: str | Path, role: Role, *, also: str = ""
) -> SyncHookJSONOutput:
    """Run the model's command confined: the same tool call, its command replaced by the argv of
    ``flower.shell.confine`` (the transcript keeps the model's own command)."""
    args = _tool_input(data)
    command = args.get("command")
    if not isinstance(command, str):
        return _deny(_(_UNCONFINABLE).format(why="no command") + also)
    try:
        # walking the workspace for its hidden files must not hold up the CLI's other hooks
        confined = await asyncio.to_thread(plan, command, workspace=workspace, role=role)
    except ConfinementUnavailable as exc:
        return _deny(_(_UNCONFINABLE).format(why=exc) + also)
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {**args, "command": confined.command},
        }
    }


def confine_guard(workspace: str | Path, *, role: Role = "judge") -> HookMatcher:
    """Run every main-thread Bash command confined (the judge with ``can_run``: an overlay of
    ``workspace`` that is thrown away); subagents pass."""

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        if not _is_main_thread(data) or data.get("tool_name") != "Bash":
            return {}
        return await _confined(data, workspace, role)

    return _matcher("Bash", hook, fail_closed=True)


def redact_guard(*, leave_longer_than: int | None = None) -> HookMatcher:
    """Mask credentials in what a main-thread Bash command printed, before the model sees it.

    Hooks run side by side on the original output and the last rewrite wins, so a result the
    spill guard rewrites (a field longer than its threshold, ``leave_longer_than``) is left to it:
    it redacts whatever it returns.
    """

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        response = data.get("tool_response")
        if not _is_main_thread(data) or not isinstance(response, dict):
            return {}
        long = leave_longer_than is not None and not _not_text(response)
        if long and any(isinstance(v, str) and len(v) > (leave_longer_than or 0) for v in response.values()):
            return {}
        masked = redact_value(response)
        if masked is response:
            return {}  # no identity rewrite: it would compete with a real one
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": masked}}

    return _matcher("Bash", hook)


# -- allowlist_guard -----------------------------------------------------------------------


def allowed_names(allowed: list[str] | None) -> set[str]:
    """Tool names an `allowed_tools` list gives a role: "Bash(git status:*)" gives part of Bash."""
    names = {entry.split("(", 1)[0].strip() for entry in allowed or [] if entry.strip()}
    if names & set(_AGENT_TOOLS):
        names.update(_AGENT_TOOLS)  # one tool under its two names
    return names


def allows(names: set[str], tool: object) -> bool:
    """Whether `names` (from allowed_names) give `tool`: by its name, or for an MCP tool by its
    server ("mcp__github" and "mcp__github__*" give every tool of that server, as in the CLI)."""
    if not isinstance(tool, str) or not tool:
        return False
    if tool in names:
        return True
    if tool.startswith("mcp__"):
        server = tool.split("__", 2)[1] if tool.count("__") >= 2 else ""
        return bool(server) and (f"mcp__{server}" in names or f"mcp__{server}__*" in names)
    return False


def allowlist_guard(
    allowed: list[str] | None,
    *,
    role: str = "这个角色",
    leave: str = "",
    delegate: bool = False,
) -> HookMatcher:
    """Deny, on the main thread, every tool that is not in `allowed`; subagents pass.

    Matches every tool (matcher None): what holds is the list of what the role may use, not a
    list of what it may not, so a tool revealed later through ToolSearch or added by a future
    CLI is denied like any other. `leave` names tools another installed guard answers for with
    its own words (the Runtime leaves the hands-on four to delegate_guard / whitelist_guard);
    `delegate` words the denial as delegate_guard does, for a coordinator.
    """
    names = allowed_names(allowed)
    left = {t for t in leave.split("|") if t}

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        tool = data.get("tool_name")
        if not _is_main_thread(data) or allows(names, tool) or tool in left:
            return {}
        return _deny(
            refusal(tool if isinstance(tool, str) and tool else "这个工具", role=role, delegate=delegate)
        )

    return _matcher(None, hook, fail_closed=True)


def refusal(tool: str, *, role: str, delegate: bool = False) -> str:
    """What a role is told when it reaches for a tool it does not have."""
    return _DELEGATE.format(tool=tool) if delegate else _not_for(role, tool)


# -- spill_guard ---------------------------------------------------------------------------


def _pointer(path: Path, text: str) -> str:
    return (
        f"[输出过长({len(text)} 字符),全文已落盘:{path} —— 需要全文就用 Read 读这个文件。"
        f"以下是开头 {SPILL_HEAD} 字符]\n{text[:SPILL_HEAD]}"
    )


def _spill(spill_dir: Path, text: str, on_fault: OnFault | None = None) -> Path | None:
    """The spill file holding exactly `text`, or None when it cannot be kept (the output is then
    shown as it was: a pointer must never lead to a partial file). A file already there under
    the same name is trusted only when its bytes are these (a kill or a full disk may have cut it)."""
    data = text.encode("utf-8", errors="surrogatepass")
    path = spill_dir / f"{hashlib.sha256(data).hexdigest()[:16]}.txt"
    try:
        return spill(path, data)
    except OSError as exc:
        if on_fault is not None:
            with contextlib.suppress(Exception):
                on_fault(exc, path)
        return None


def _not_text(node: dict[str, object]) -> bool:
    # Images/PDFs come as base64 strings inside a dict; the CLI spilled huge Bash output already.
    kind = node.get("type")
    if isinstance(kind, str) and kind != "text":
        return True
    return bool(node.get("isImage")) or "persistedOutputPath" in node


def _trim(node: dict[str, object], threshold: int, spill_dir: Path, on_fault: OnFault | None = None) -> bool:
    """Replace too-long string fields in place; lists are never entered (image blocks)."""
    if _not_text(node):
        return False
    changed = False
    for key, value in node.items():
        if isinstance(value, str) and len(value) > threshold and key != "base64":
            value = redact(value)  # the spill file is flower's: no credential goes into it
            path = _spill(spill_dir, value, on_fault)
            if path is not None:  # never drop content we could not save
                node[key] = _pointer(path, value)
                changed = True
        elif isinstance(value, dict):
            changed = _trim(value, threshold, spill_dir, on_fault) or changed
    return changed


def _reads_spill(data: Mapping[str, object], spill_dir: Path, workbench: Workbench) -> bool:
    """The model is reading a spill file back: spilling it again would loop forever."""
    args = _tool_input(data)
    for key in ("file_path", "path", "notebook_path"):
        p = _resolve(args.get(key), data, workbench.workspace)
        if p is not None and p.is_relative_to(spill_dir):
            return True
    command = args.get("command")
    if isinstance(command, str):
        # the path itself or a file under it, but not a sibling such as `spilled.txt`
        names = {str(spill_dir), workbench.show(spill_dir)}
        return any(re.search(re.escape(n) + r"(?![\w.-])", command) for n in names)
    return False


def spill_guard(
    workbench: Workbench,
    *,
    threshold: int = 4000,
    tools: str = BULKY,
    main_only: bool = False,
    on_fault: OnFault | None = None,
) -> HookMatcher:
    """Spill over-long tool results to `<workbench.root>/spill/` before the model sees them.

    `on_fault(error, path)` (keyword-only, after the reference's parameters) hears of a spill the
    disk refused; the result then reaches the model as it was.
    """

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        if main_only and not _is_main_thread(data):
            return {}
        response = data.get("tool_response")
        if not isinstance(response, dict):  # only dict fields can be replaced structure-preservingly
            return {}
        spill_dir = workbench.root / "spill"
        if _reads_spill(data, spill_dir, workbench):
            return {}
        trimmed = copy.deepcopy(response)
        if not _trim(trimmed, threshold, spill_dir, on_fault):
            return {}
        # the whole result is redacted: a sibling redaction of it would lose to this rewrite
        trimmed = redact_value(trimmed)
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": trimmed}}

    return _matcher(tools, hook)


# -- index_guard ---------------------------------------------------------------------------


def index_guard(workbench: Workbench, *, on_fault: OnFault | None = None) -> HookMatcher:
    """Refresh INDEX.md whenever something is written into the workbench; `on_fault(error, path)`
    hears of an index the disk refused (the old one stays)."""

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        p = _resolve(_tool_input(data).get("file_path"), data, workbench.workspace)
        if p is not None and p.is_relative_to(workbench.root):
            try:
                workbench.write_index()
            except OSError as exc:
                if on_fault is not None:
                    with contextlib.suppress(Exception):
                        on_fault(exc, workbench.index_path)
        return {}

    return _matcher("Write|Edit", hook)


# -- isolation -----------------------------------------------------------------------------


def isolated(agent: AgentDefinition, flag: bool = True) -> AgentDefinition:
    """Mark (or unmark) a subagent definition as needing its own worktree; returns `agent`."""
    # Not a dataclass field: asdict() never sees it, so the mark cannot leak to the CLI.
    object.__setattr__(agent, _MARK, flag)
    return agent


def wants_isolation(agent: AgentDefinition | None) -> bool:
    return agent is not None and getattr(agent, _MARK, False) is True


def isolate_guard(agents: dict[str, AgentDefinition], *, on_inject: OnInject | None = None) -> HookMatcher:
    """Send subagents of isolated roles to their own git worktree."""

    async def hook(
        data: Mapping[str, object], tool_use_id: str | None, context: object
    ) -> SyncHookJSONOutput:
        if data.get("tool_name") not in _AGENT_TOOLS:
            return {}
        args = _tool_input(data)
        # cwd and isolation are mutually exclusive: a cwd the model chose is respected.
        if "cwd" in args or "isolation" in args:
            return {}
        kind = args.get("subagent_type")
        if not isinstance(kind, str) or not wants_isolation(agents.get(kind)):
            return {}
        if on_inject is not None:
            # a failing notifier must not cost the role its isolation
            with contextlib.suppress(Exception):
                on_inject(kind, loose.text(args.get("description")))
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": {**args, "isolation": "worktree"},
            }
        }

    return _matcher("Agent", hook)


# -- assembly ------------------------------------------------------------------------------


def workbench_hooks(
    workbench: Workbench,
    *,
    delegate_only: bool = True,
    spill_threshold: int | None = 4000,
    agents: dict[str, AgentDefinition] | None = None,
    allow_glance: bool = False,
    on_fault: OnFault | None = None,
    confine_in: str | Path | None = None,
) -> dict[str, list[HookMatcher]]:
    """All hooks a workbench needs, keyed by SDK event; events without hooks are left out.

    Keyword-only, after the reference's parameters: `on_fault` is told of every write into the
    workbench the disk refused (a spill, INDEX.md); `confine_in` is where glances run confined
    (see delegate_guard)."""
    pre: list[HookMatcher] = []
    if delegate_only:
        pre.append(delegate_guard(allow_glance=allow_glance, confine_in=confine_in))
    if agents and any(wants_isolation(a) for a in agents.values()):
        pre.append(isolate_guard(agents))
    post: list[HookMatcher] = [index_guard(workbench, on_fault=on_fault)]
    if spill_threshold:
        post.append(spill_guard(workbench, threshold=spill_threshold, on_fault=on_fault))
    return {event: hooks for event, hooks in (("PreToolUse", pre), ("PostToolUse", post)) if hooks}


def merge_hooks(*groups: Mapping[_Key, Sequence[_Item | None] | None] | None) -> dict[_Key, list[_Item]]:
    """Concatenate hook configs per event, in order; no dedup, None groups skipped."""
    out: dict[_Key, list[_Item]] = {}
    for group in groups:
        if not group:
            continue
        for event, hooks in group.items():
            out.setdefault(event, []).extend(h for h in hooks or [] if h is not None)
    return {event: hooks for event, hooks in out.items() if hooks}
