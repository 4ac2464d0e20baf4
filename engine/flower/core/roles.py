"""The five roles: each is one injected rule text, one tool set and (via the Runtime) one set of hooks.

``worker()`` returns the SDK's ``AgentDefinition`` (a subagent); the other four return an
``AgentSpec`` (a session of its own). Roles attach no hooks themselves: the Runtime installs
``delegate_guard`` or ``whitelist_guard`` from ``spec.delegate_only`` and ``allowed_tools``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, cast

from .agent import AgentSpec, CompactPolicy

if TYPE_CHECKING:  # the SDK is slow to import; only worker() needs it at run time
    from claude_agent_sdk import AgentDefinition, HookMatcher
    from claude_agent_sdk.types import EffortLevel, McpServerConfig, PermissionMode


class AskChannel(Protocol):
    """What the clarifier and the judge need of the channel to the person (flower.core.human's
    HumanChannel is one): its ask tool's name and the MCP server that serves it."""

    @property
    def tool_name(self) -> str: ...

    def mcp_servers(self) -> dict[str, McpServerConfig]: ...


class Channel(AskChannel, Protocol):
    """What the coordinator needs of it: the inbox tool's name as well."""

    @property
    def inbox_name(self) -> str: ...


COORDINATOR_TOOLS = ["Agent", "TodoWrite", "Read"]
WEB_TOOLS = ["WebFetch", "WebSearch"]
WORKER_TOOLS = ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"]

COORDINATOR_RULES = """\
## 你的角色:协调者
你是一个会用 Claude Code 的人,不是干活的 worker。你负责拆解任务、派活、读汇报、做决定。
- 不要自己写文件、改代码、跑测试。要动手的活一律用 Agent 工具派给 subagent。
- Bash 只用来看一眼现场(ls、git status、ps 这类只读命令)。看到的结果很快就会过期,要拿它做决定时重新看一次。
- 任务书只写这一次任务特有的东西:要做什么、验收标准、该读哪些文件、要避开什么。对方已经知道的纪律(汇报格式、开工前先看脚本目录)不要重复。
- 唯一需要你在任务书里转告的约定:工作台在哪里(用下面工作台索引里的路径);超过 2000 字符的长产出写进工作台的 artifacts/;回复里只给路径和结论。subagent 看不到工作台索引,只能靠你说。
- 如果你有收件箱工具(inbox):每做完一个阶段性动作就查一次,看人有没有中途补充或改口。
- 如果你有提问工具(ask):它会一直阻塞到人回答或超时,只在真正的岔路口用——方向性的、猜错代价大的决定。能自己判断的不要问。"""  # noqa: E501 (the seeds' rule text, byte-exact: one rule a line)

# Deliberately silent about artifacts/: the real path comes from the Workbench, a hardcoded one
# would be wrong whenever the workbench moves; the coordinator passes it on in the task brief.
WORKER_RULES = """\
## 汇报纪律
做完后只回一段汇报,恰好四段,合计不超过 30 行:
结论:做成了什么、没做成什么,一两句话。
依据:凭什么这么说——跑了什么验证、看到了什么结果,用一句话概括。
产物:新建或改动的文件,只写路径。
未验证:哪些没验证到、哪些是你的假设;没有就写"无"。
- 不要贴文件内容、命令输出、日志或 diff 原文;对方需要时给路径,让对方自己去读。
- 不要复述试错过程,只报最后的结果;走不通的路一句话带过。
- 开工前先看一眼 `.flower/scripts/`,已有能用的脚本就直接用,不要重写。"""

CLARIFIER_RULES = """\
## 你的角色:确认者
你在动手之前把需求问清楚。你不干活,只提问。
- 不写代码、不建文件、不跑命令;回复里不贴代码,也不贴文件内容。
- 用提问工具(ask)问人,一次问一件事,能给选项就给选项。
- 提问次数没有上限:问到清楚为止,什么时候问够了由你判断。
- 人可能不在。提问超时、被跳过或被拒时,自己做判断继续往下走,把这个问题和你采用的假设写进"未知与假设"。不要重复问同一个问题,也不要停下来等。
- 可以读仓库、查资料来少问几个问题,但该由人做的决定不要替人做。
- 问清之后,最终回复恰好四段,用下面四个标题,顺序不变,不加别的段:
## 目标
一句话:做什么,给谁用。
## 验收标准
可判定的条件,一行一条。"能正常工作"不行,"运行 x 能看到 y"才行。
## 边界
明确不做什么。
## 未知与假设
没问到的、超时没回答的、你自己推断的,一行一条;没有就写"无"。"""  # noqa: E501 (the seeds' rule text, byte-exact: one rule a line)

JUDGE_RULES = """\
## 你的角色:判定者
你只设定目标或只判定,不动手干活:不写文件、不改代码、不顺手修。每次只做下面两件事中的一件,看收到的任务是哪一件。
需求里有拿不准又会左右判定的地方,可以用提问工具(ask)问人;人可能不在,超时就自己判断,不要停下来等。

### 一、设定目标
读需求确认书,把它改写成目标和判定清单。
- 先弄清你在什么环境里:能跑命令就先跑 `uname -a` 之类看一眼,不能跑就从现场推断——操作系统、架构、有没有网络、有没有图形界面。
- 每条判定项都必须能当场验证:写清"跑什么、看到什么"。"实现完整""代码优雅"这类判定不了的不要写。
- 清单的长短由这件事有几种失败方式决定,不由你有多严格决定。clone、编译、运行这类任务三到五条就够。
- 边界不是判定项:"不做什么""只装在哪里"约束的是怎么干,靠不越界来守,不要拆成清单里的检查项。
- 在这个环境里验证不了的条目照写,并在该条末尾加上 `[此环境无法验证:原因]`。
- 输出恰好两段:
## 目标
一句话目标。
## 判定清单
- 一行一条判定项

### 二、判定这一轮
对照目标和判定清单,独立判定这一轮的产出有没有达成目标。
- 判的是产出物,不是源码:去现场看真东西——文件在不在、能不能跑、跑出来是什么。"源码里有这个分支所以应该能行"这种推理不算数。
- 默认不相信"做完了"。汇报怎么说不重要,看不到证据的判定项就是没通过。
- "没做到"和"这里验证不了"是两个不同的结论:前者判"未达成",后者判"无法达成"并写明原因。验证不了的绝不能判为达成。
- 只有再跑一轮也没用时才判"无法达成"(缺必需的外部条件、需求自相矛盾、判定项在这个环境里验证不了);只是还没做完就判"未达成"。
- 输出四段:前三段是判定,第四段是证据:
## 结论
达成 / 未达成 / 无法达成,三选一。
## 理由
依据哪些证据,简短。
## 未通过
没通过的判定项,一行一条;全部通过就写"无"。
## 证据
判定清单每条一行:`判定项 — 依据`。依据写你跑的命令原文(用反引号括起来)和退出码,或你读的文件和行号;这里验证不了的写 [此环境无法验证:原因]。flower 会拿这一段去对你这一轮真跑过的命令、真读过的文件,对不上的判定项不算通过。"""  # noqa: E501 (the seeds' rule text, byte-exact: one rule a line)

ORACLE_RULES = """\
## 你的角色:旁路问答
你是一条旁路。那次运行还在跑,你既不打断它,也不参与它;人只是顺路问你一句它现在怎么样了。
- 只读:不写文件、不改代码、不跑任何会改变状态的东西。
- 你答完就被丢弃,你说的话不会进入那次运行的上下文,别试图给它留话或下指令。
- 你手里只有两样东西:最近一段事件窗口,和工作台(脚本、产出、笔记)。
- 先看再答:先读事件窗口和工作台里相关的文件,再回答,不要凭印象说。
- 答不了就直说答不了,并说明缺什么,不要猜。
- 简短:几句话说清现在到了哪一步、卡在哪里、下一步是什么。"""


def _join(rules: str, instructions: str) -> str:
    return f"{rules}\n{instructions}".strip()


def _web_tools_of(workers: Mapping[str, AgentDefinition]) -> list[str]:
    """WEB_TOOLS entries any worker can use; a worker without ``tools`` gets the full default set."""
    found: list[str] = []
    for defn in workers.values():
        tools = getattr(defn, "tools", None)
        if tools is None:
            tools = WORKER_TOOLS
        for t in WEB_TOOLS:
            if t in tools and t not in found:
                found.append(t)
    return found


def coordinator(
    name: str,
    instructions: str,
    workers: dict[str, AgentDefinition],
    *,
    channel: Channel | None = None,
    can_read: bool = True,
    glance: bool = True,
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
    permission_mode: str = "acceptEdits",
    compact: CompactPolicy | None = None,
    hooks: dict[str, list[HookMatcher]] | None = None,
    env: dict[str, str] | None = None,
) -> AgentSpec:
    """The main-thread coordinator: splits, delegates, reads reports, decides; never does the work.

    "Coordinate only" is ``delegate_only=True`` (the Runtime's delegate_guard stops the main
    thread alone), never ``disallowed_tools``: that list is session-wide and would take
    Bash/Write away from every subagent too.
    """
    tools = [t for t in COORDINATOR_TOOLS if can_read or t != "Read"]
    if glance:
        tools.append("Bash")
    servers: dict[str, McpServerConfig] = {}
    if channel is not None:
        # mounting the server brings both tools; listing only one would still leave the other callable
        tools += [channel.tool_name, channel.inbox_name]
        servers = channel.mcp_servers()
    # allowed_tools is session-wide as well: a tool missing here needs approval even inside a
    # subagent, and unattended that means endless "user-rejected" retries. Only the side-effect
    # free web tools are merged; Write/Edit/Bash here would hollow out delegate_guard.
    for t in _web_tools_of(workers):
        if t not in tools:
            tools.append(t)
    return AgentSpec(
        name=name,
        instructions=_join(COORDINATOR_RULES, instructions),
        allowed_tools=tools,
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        permission_mode=permission_mode,
        agents=dict(workers),
        mcp_servers=servers,
        hooks=hooks,
        compact=compact,
        env=dict(env or {}),
        glance=glance,
        delegate_only=True,
        confine="glance" if glance else None,
    )


def worker(
    description: str,
    prompt: str,
    *,
    tools: list[str] | None = None,
    model: str = "inherit",
    effort: str | int | None = None,
    max_turns: int | None = None,
    permission_mode: str | None = None,
    skills: list[str] | None = None,
    discipline: bool = True,
    isolate: bool = False,
) -> AgentDefinition:
    """A subagent that does the actual work; goes straight into ``coordinator(workers={...})``.

    ``isolate`` is a Python attribute on the definition, not one of its fields: a
    ``dataclasses.replace()`` of the result silently drops it.
    """
    from claude_agent_sdk import AgentDefinition

    defn = AgentDefinition(
        description=description,
        prompt=f"{prompt}\n\n{WORKER_RULES}" if discipline else prompt,
        tools=list(WORKER_TOOLS if tools is None else tools),
        model=model,
        # the reference types both as plain strings; the CLI rejects an unknown value itself
        effort=cast("EffortLevel | int | None", effort),
        maxTurns=max_turns,
        permissionMode=cast("PermissionMode | None", permission_mode),
        skills=list(skills) if skills is not None else None,
    )
    if isolate:
        from .guard import isolated

        defn = isolated(defn)
    return defn


def clarify(
    name: str,
    channel: AskChannel,
    *,
    instructions: str = "",
    can_read: bool = True,
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
) -> AgentSpec:
    """The clarifier: asks until the requirement is clear, then outputs exactly four sections.

    No Write/Edit/Bash/Agent and no inbox. ``permission_mode`` stays "default": the
    coordinator's "acceptEdits" passed through here would remove the protection.
    """
    tools = [channel.tool_name]
    if can_read:
        tools += ["Read", "Glob", "Grep", "WebFetch", "WebSearch"]
    return _asking_role(
        name, CLARIFIER_RULES, instructions, tools, channel, model, effort, max_turns, max_budget_usd
    )


def judge(
    name: str,
    channel: AskChannel,
    *,
    instructions: str = "",
    can_run: bool = False,
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
) -> AgentSpec:
    """The judge: sets the goal before the run, or judges one round after it.

    ``can_run`` adds Bash: harder verdicts (acceptance commands really run). Its commands run
    on a throw-away copy-on-write view of the workspace (``flower.shell.confine(role="judge")``):
    tests may write caches and build folders, and the workspace is unchanged afterwards.
    """
    tools = [channel.tool_name, "Read", "Glob", "Grep"]
    if can_run:
        tools.append("Bash")
    spec = _asking_role(
        name, JUDGE_RULES, instructions, tools, channel, model, effort, max_turns, max_budget_usd
    )
    return replace(spec, confine="judge") if can_run else spec


def _asking_role(
    name: str,
    rules: str,
    instructions: str,
    tools: list[str],
    channel: AskChannel,
    model: str | None,
    effort: str | None,
    max_turns: int | None,
    max_budget_usd: float | None,
) -> AgentSpec:
    """A role that may ask the person but never writes: the clarifier and the judge."""
    return AgentSpec(
        name=name,
        instructions=_join(rules, instructions),
        allowed_tools=tools,
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        mcp_servers=channel.mcp_servers(),
        # without write tools the workbench index has nothing to point it at
        workbench=False,
    )


def oracle(
    name: str = "旁路问答",
    *,
    instructions: str = "",
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = 12,
    max_budget_usd: float | None = 0.5,
) -> AgentSpec:
    """A read-only bypass answering "where is the run now?" from recent events and the workbench.

    Braked by default (12 turns, $0.5): a quick side question must not run away. The only
    non-coordinator role with the workbench index, since artifacts and notes are what it reads.
    """
    return AgentSpec(
        name=name,
        instructions=_join(ORACLE_RULES, instructions),
        allowed_tools=["Read", "Glob", "Grep"],
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        workbench=True,
    )
