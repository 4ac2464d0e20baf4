"""The five role factories: fixed fields, tool sets, the web-tool merge and the rule texts."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from claude_agent_sdk import AgentDefinition

from flower.core.agent import AgentSpec, CompactPolicy, build_options
from flower.core.brief import SECTIONS, Brief
from flower.core.goal import ACHIEVED, NOT_YET, UNREACHABLE, Goal, Verdict
from flower.core.guard import wants_isolation
from flower.core.human import HumanChannel
from flower.core.roles import (
    CLARIFIER_RULES,
    COORDINATOR_RULES,
    COORDINATOR_TOOLS,
    JUDGE_RULES,
    ORACLE_RULES,
    WEB_TOOLS,
    WORKER_RULES,
    WORKER_TOOLS,
    clarify,
    coordinator,
    judge,
    oracle,
    worker,
)

ASK = "mcp__human__ask"
INBOX = "mcp__human__inbox"
HANDS_ON = {"Write", "Edit", "Bash", "NotebookEdit"}


@pytest.fixture
def ch() -> HumanChannel:
    return HumanChannel(timeout_s=0)


# -- internal tool groups --------------------------------------------------------------------


def test_tool_group_constants() -> None:
    assert COORDINATOR_TOOLS == ["Agent", "TodoWrite", "Read"]
    assert WEB_TOOLS == ["WebFetch", "WebSearch"]
    assert WORKER_TOOLS == ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"]


# -- coordinator -----------------------------------------------------------------------------


def test_coordinator_fixed_fields() -> None:
    coder = worker("写代码", "你负责实现。", tools=["Read", "Edit"])
    workers = {"coder": coder}
    spec = coordinator("协调者", "只改 src/。", workers)
    assert isinstance(spec, AgentSpec)
    assert spec.name == "协调者"
    assert spec.instructions == f"{COORDINATOR_RULES}\n只改 src/。"
    assert spec.delegate_only is True
    assert spec.workbench is True
    assert spec.agents == workers and spec.agents["coder"] is coder
    assert spec.permission_mode == "acceptEdits"
    # coordinate-only must never be done with the session-wide disallowed list
    assert spec.disallowed_tools == []
    assert spec.allowed_tools == ["Agent", "TodoWrite", "Read", "Bash"]
    assert spec.glance is True
    assert spec.mcp_servers == {}
    assert spec.hooks is None and spec.compact is None and spec.env == {}
    assert (spec.model, spec.effort, spec.max_turns, spec.max_budget_usd) == (None, None, None, None)


def test_coordinator_empty_instructions_is_just_the_rules() -> None:
    assert coordinator("c", "", {}).instructions == COORDINATOR_RULES


def test_coordinator_passes_the_rest_through() -> None:
    compact = CompactPolicy(mode="off")
    hooks: dict[str, list[Any]] = {"PreToolUse": []}
    env = {"X": "1"}
    spec = coordinator(
        "c",
        "",
        {},
        model="opus",
        effort="high",
        max_turns=40,
        max_budget_usd=5.0,
        permission_mode="default",
        compact=compact,
        hooks=hooks,
        env=env,
    )
    assert (spec.model, spec.effort, spec.max_turns, spec.max_budget_usd) == ("opus", "high", 40, 5.0)
    assert spec.permission_mode == "default"
    assert spec.compact is compact
    assert spec.hooks is hooks
    assert spec.env == {"X": "1"}
    spec.env["Y"] = "2"
    assert env == {"X": "1"}  # the caller's dict is not aliased


@pytest.mark.parametrize(
    ("can_read", "glance", "tools"),
    [
        (True, True, ["Agent", "TodoWrite", "Read", "Bash"]),
        (True, False, ["Agent", "TodoWrite", "Read"]),
        (False, True, ["Agent", "TodoWrite", "Bash"]),
        (False, False, ["Agent", "TodoWrite"]),
    ],
)
def test_coordinator_read_and_glance_switches(can_read: bool, glance: bool, tools: list[str]) -> None:
    spec = coordinator("c", "", {}, can_read=can_read, glance=glance)
    assert spec.allowed_tools == tools
    assert spec.glance is glance


def test_coordinator_does_not_mutate_the_tool_constant() -> None:
    coordinator("c", "", {}, glance=True).allowed_tools.append("Write")
    assert COORDINATOR_TOOLS == ["Agent", "TodoWrite", "Read"]


def test_coordinator_channel_brings_ask_and_inbox_together(ch: HumanChannel) -> None:
    spec = coordinator("c", "", {}, channel=ch)
    assert ch.tool_name == ASK and ch.inbox_name == INBOX
    assert ASK in spec.allowed_tools and INBOX in spec.allowed_tools
    assert set(spec.mcp_servers) == {"human"} == set(ch.mcp_servers())


# -- the web-tool merge ----------------------------------------------------------------------


def test_worker_with_webfetch_gives_the_coordinator_webfetch_only() -> None:
    spec = coordinator("c", "", {"r": worker("查资料", "p", tools=["Read", "WebFetch"])})
    assert "WebFetch" in spec.allowed_tools
    assert "WebSearch" not in spec.allowed_tools


def test_hands_on_tools_of_workers_are_never_merged() -> None:
    hands = worker("干活", "p", tools=["Bash", "Write", "Edit", "NotebookEdit", "Glob"])
    spec = coordinator("c", "", {"h": hands}, glance=False)
    assert spec.allowed_tools == ["Agent", "TodoWrite", "Read"]
    with_glance = coordinator("c", "", {"h": hands})
    assert not {"Write", "Edit", "NotebookEdit", "Glob"} & set(with_glance.allowed_tools)


def test_default_worker_tools_count_as_both_web_tools() -> None:
    spec = coordinator("c", "", {"coder": worker("写代码", "p")}, glance=False)
    assert spec.allowed_tools == ["Agent", "TodoWrite", "Read", "WebFetch", "WebSearch"]
    assert not HANDS_ON & set(spec.allowed_tools)


def test_raw_definition_without_tools_counts_as_both_web_tools() -> None:
    # tools=None on an SDK definition means "the default set", which includes the web tools
    spec = coordinator("c", "", {"raw": AgentDefinition(description="d", prompt="p")}, glance=False)
    assert spec.allowed_tools[-2:] == ["WebFetch", "WebSearch"]


def test_web_tools_merged_once_across_workers(ch: HumanChannel) -> None:
    workers = {
        "a": worker("a", "p", tools=["WebSearch"]),
        "b": worker("b", "p", tools=["WebSearch", "WebFetch"]),
        "c": worker("c", "p"),
    }
    spec = coordinator("c", "", workers, channel=ch)
    assert spec.allowed_tools.count("WebFetch") == 1
    assert spec.allowed_tools.count("WebSearch") == 1
    assert ASK in spec.allowed_tools and INBOX in spec.allowed_tools


def test_merged_web_tools_survive_into_the_sdk_options() -> None:
    spec = coordinator("c", "", {"r": worker("查资料", "p", tools=["WebFetch"])})
    opts = build_options(spec, use_plugin=False)
    assert "WebFetch" in opts.allowed_tools
    assert opts.disallowed_tools == []
    assert opts.agents is not None and set(opts.agents) == {"r"}
    assert opts.permission_mode == "acceptEdits"


# -- worker ----------------------------------------------------------------------------------


def test_worker_defaults() -> None:
    d = worker("写代码与测试", "你负责实现。")
    assert isinstance(d, AgentDefinition)
    assert d.description == "写代码与测试"
    assert d.prompt == f"你负责实现。\n\n{WORKER_RULES}"
    assert d.tools == WORKER_TOOLS
    assert d.model == "inherit"
    assert (d.effort, d.maxTurns, d.permissionMode, d.skills) == (None, None, None, None)
    assert wants_isolation(d) is False


def test_worker_default_tools_are_a_copy() -> None:
    tools = worker("d", "p").tools
    assert tools is not None
    tools.append("Agent")
    assert "Agent" not in WORKER_TOOLS


def test_worker_without_discipline_keeps_the_prompt_verbatim() -> None:
    assert worker("d", "只做这一件事。", discipline=False).prompt == "只做这一件事。"


def test_worker_fields_land_in_camel_case() -> None:
    d = worker(
        "d",
        "p",
        tools=["Read"],
        model="sonnet",
        effort="low",
        max_turns=7,
        permission_mode="acceptEdits",
        skills=["pdf"],
    )
    assert d.tools == ["Read"]
    assert (d.model, d.effort, d.maxTurns, d.permissionMode, d.skills) == (
        "sonnet",
        "low",
        7,
        "acceptEdits",
        ["pdf"],
    )
    wire = dataclasses.asdict(d)
    assert wire["maxTurns"] == 7 and wire["permissionMode"] == "acceptEdits"
    assert "max_turns" not in wire and "permission_mode" not in wire


def test_worker_isolate_mark_survives_but_not_replace() -> None:
    d = worker("改同一个仓库", "p", isolate=True)
    assert wants_isolation(d) is True
    # the mark is a Python attribute, never serialized to the CLI
    assert "_flower_isolate" not in dataclasses.asdict(d)
    # documented trap: replace() builds a new definition without the mark
    assert wants_isolation(dataclasses.replace(d, model="opus")) is False


def test_isolated_worker_still_feeds_the_coordinator() -> None:
    d = worker("d", "p", isolate=True)
    spec = coordinator("c", "", {"iso": d})
    assert spec.agents is not None and wants_isolation(spec.agents["iso"])


# -- clarify ---------------------------------------------------------------------------------


def test_clarify_fields(ch: HumanChannel) -> None:
    spec = clarify("确认者", ch, instructions="这是一个 CLI 工具。")
    assert spec.name == "确认者"
    assert spec.instructions == f"{CLARIFIER_RULES}\n这是一个 CLI 工具。"
    assert spec.allowed_tools == [ASK, "Read", "Glob", "Grep", "WebFetch", "WebSearch"]
    assert spec.mcp_servers.keys() == ch.mcp_servers().keys()
    assert spec.workbench is False
    assert spec.permission_mode == "default"
    assert spec.delegate_only is False and spec.glance is False
    assert spec.agents is None
    assert spec.max_turns is None  # unlimited questions need unlimited turns
    assert not (HANDS_ON | {"Agent", INBOX}) & set(spec.allowed_tools)


def test_clarify_without_reading_only_asks(ch: HumanChannel) -> None:
    spec = clarify("c", ch, can_read=False, model="haiku", effort="low", max_turns=30, max_budget_usd=1.0)
    assert spec.allowed_tools == [ASK]
    assert (spec.model, spec.effort, spec.max_turns, spec.max_budget_usd) == ("haiku", "low", 30, 1.0)
    assert clarify("c", ch).instructions == CLARIFIER_RULES


# -- judge -----------------------------------------------------------------------------------


def test_judge_fields(ch: HumanChannel) -> None:
    spec = judge("干活·判定", ch)
    assert spec.name == "干活·判定"
    assert spec.instructions == JUDGE_RULES
    assert spec.allowed_tools == [ASK, "Read", "Glob", "Grep"]
    assert spec.mcp_servers.keys() == ch.mcp_servers().keys()
    assert spec.workbench is False
    assert spec.permission_mode == "default"
    assert spec.delegate_only is False
    assert not (HANDS_ON | {"Agent", INBOX}) & set(spec.allowed_tools)


def test_judge_can_run_adds_bash_but_no_write(ch: HumanChannel) -> None:
    spec = judge("j", ch, instructions="看产物。", can_run=True, max_budget_usd=2.0)
    assert spec.allowed_tools == [ASK, "Read", "Glob", "Grep", "Bash"]
    assert spec.instructions == f"{JUDGE_RULES}\n看产物。"
    assert spec.max_budget_usd == 2.0
    assert not {"Write", "Edit", "Agent"} & set(spec.allowed_tools)


# -- oracle ----------------------------------------------------------------------------------


def test_oracle_fields() -> None:
    spec = oracle()
    assert spec.name == "旁路问答"
    assert spec.instructions == ORACLE_RULES
    assert spec.allowed_tools == ["Read", "Glob", "Grep"]
    assert spec.mcp_servers == {}
    assert spec.workbench is True
    assert spec.max_turns == 12 and spec.max_budget_usd == 0.5
    assert spec.delegate_only is False


def test_oracle_overrides() -> None:
    spec = oracle("问一句", instructions="只看最近十条。", max_turns=None, max_budget_usd=None)
    assert spec.name == "问一句"
    assert spec.instructions == f"{ORACLE_RULES}\n只看最近十条。"
    assert spec.max_turns is None and spec.max_budget_usd is None


# -- the rule texts agree with the parsers ---------------------------------------------------


def _template_headings(rules: str, after: str) -> list[str]:
    """The ``## name`` lines of the output template that follows ``after`` in a rule text."""
    tail = rules[rules.index(after) :]
    out = []
    for line in tail.splitlines()[1:]:
        if line.startswith("### "):
            break
        if line.startswith("## "):
            out.append(line[3:].strip())
    return out


def test_clarifier_template_is_exactly_the_brief_sections() -> None:
    names = _template_headings(CLARIFIER_RULES, "最终回复恰好四段")
    assert names == [name for _, name in SECTIONS]
    # a reply following the template, including "无" for an empty unknowns section
    bodies = ["做一个 md 转 html 的脚本", "运行 conv.py a.md 产出 a.html", "不做 GUI", "无"]
    reply = "\n".join(f"## {n}\n{body}" for n, body in zip(names, bodies, strict=True))
    brief = Brief.parse(reply)
    assert brief.complete(), brief.missing()
    assert brief.goal == "做一个 md 转 html 的脚本"
    assert brief.unknowns == "无"


def test_judge_goal_template_parses_into_a_complete_goal() -> None:
    names = _template_headings(JUDGE_RULES, "输出恰好两段")
    assert names == ["目标", "判定清单"]
    marker = re.search(r"\[此环境无法验证:[^\]]*\]", JUDGE_RULES)
    assert marker is not None
    reply = (
        f"## {names[0]}\n让 conv.py 能把 md 转成 html。\n"
        f"## {names[1]}\n- 跑 `python conv.py a.md` 产出 a.html\n- 在 macOS 终端直接运行 {marker.group(0)}\n"
    )
    goal = Goal.parse(reply)
    assert goal.complete(), goal.missing()
    assert len(goal.checks) == 2
    assert goal.unverifiable == [goal.checks[1]]


def test_judge_verdict_template_and_every_conclusion_word_parse() -> None:
    names = _template_headings(JUDGE_RULES, "输出四段")
    # the seeds' three sections, then the optional fourth: how each check was verified
    assert names == ["结论", "理由", "未通过", "证据"]
    options = JUDGE_RULES[JUDGE_RULES.index("## 结论") :].splitlines()[1].split(",")[0]
    words = [w.strip() for w in options.split("/")]
    assert words == ["达成", "未达成", "无法达成"]
    states = []
    for w in words:
        v = Verdict.parse(f"## 结论\n{w}\n## 理由\n看了 a.html。\n## 未通过\n无\n")
        assert v.ok and v.reason == "看了 a.html。"
        assert v.failed == []  # "无" means nothing failed, as the rules ask
        states.append(v.state)
    assert states == [ACHIEVED, NOT_YET, UNREACHABLE]
    failing = Verdict.parse("## 结论\n未达成\n## 理由\n缺 <ul>。\n## 未通过\n- 列表被转成 <ul><li>\n")
    assert failing.failed == ["列表被转成 <ul><li>"]


def test_worker_rules_cover_the_report_discipline() -> None:
    for section in ("结论", "依据", "产物", "未验证"):
        assert f"{section}:" in WORKER_RULES
    assert "30 行" in WORKER_RULES
    assert ".flower/scripts/" in WORKER_RULES
    assert "diff" in WORKER_RULES and "日志" in WORKER_RULES
    # deliberately absent: the real artifacts path comes from the Workbench
    assert "artifacts" not in WORKER_RULES


# The key points each role's rule text must make: (rules, phrase).
KEY_POINTS = [
    *[
        ("COORDINATOR_RULES", needle)
        for needle in (
            "Claude Code",
            "不是干活的 worker",
            "Bash",
            "过期",
            "任务书",
            "artifacts/",
            "路径",
            "inbox",
            "ask",
            "岔路口",
        )
    ],
    *[
        ("JUDGE_RULES", needle)
        for needle in ("产出物,不是源码", "不相信", "边界不是判定项", "uname", "失败方式", "无法达成")
    ],
    *[
        ("ORACLE_RULES", needle)
        for needle in ("旁路", "只读", "不会进入", "事件", "工作台", "先看再答", "答不了", "简短")
    ],
    *[
        ("CLARIFIER_RULES", needle)
        for needle in ("只提问", "没有上限", "人可能不在", "未知与假设", "不写代码")
    ],
]
RULES = {
    "COORDINATOR_RULES": COORDINATOR_RULES,
    "JUDGE_RULES": JUDGE_RULES,
    "ORACLE_RULES": ORACLE_RULES,
    "CLARIFIER_RULES": CLARIFIER_RULES,
}


@pytest.mark.parametrize("rules, phrase", KEY_POINTS)
def test_each_role_text_makes_its_key_points(rules: str, phrase: str) -> None:
    assert phrase in RULES[rules]
