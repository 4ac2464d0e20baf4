"""The handover to the next tool (交接给下一个工具): what Claude Code, Codex or any agent that
reads CLAUDE.md / AGENTS.md must know when it picks up a workspace after a flower run.

Five sections; only "what" and "workbench" are required, the others may honestly be empty
(demanding dead ends makes models invent them). The run's final agent writes it in a short
turn of its own (HANDOVER_PROMPT); when it does not, `mechanical` assembles one from what flower
knows (the brief, the goal and the last verdict, the latest handoff's dead ends, the workbench)
and marks it degraded. Same shape as Brief and Handoff: parse / missing / complete / to_markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .brief import Brief, fold_width, split_sections
from .goal import Goal, Verdict
from .handoff import Handoff

# (field, heading) in document order; the part in parentheses is a hint the parser skips
SECTIONS: tuple[tuple[str, str], ...] = (
    ("what", "这是什么项目"),
    ("acceptance", "验收(做到了的、没做到的)"),
    ("generated", "生成的文件(由什么生成,别手改)"),
    ("deadends", "走过的死路"),
    ("workbench", "工作台(在哪、怎么读)"),
)
REQUIRED: tuple[str, ...] = ("what", "workbench")

TITLE = "## flower 交接:给下一个接手的工具"
NOTE = "> flower 在 `flower go` 跑完时写这一块,下次跑完整块换掉(只换标记之间);块外面是你的,flower 不碰。"
DEGRADED = "[降级:模型没写出交接]"
EMPTY = "(空)"

ALIASES: dict[str, str] = {
    "这是什么项目": "what",
    "这是什么": "what",
    "项目是什么": "what",
    "项目": "what",
    "what": "what",
    "验收": "acceptance",
    "验收情况": "acceptance",
    "验收标准": "acceptance",
    "acceptance": "acceptance",
    "生成的文件": "generated",
    "生成文件": "generated",
    "generated files": "generated",
    "generated": "generated",
    "走过的死路": "deadends",
    "走不通的路": "deadends",
    "死路": "deadends",
    "dead ends": "deadends",
    "deadends": "deadends",
    "工作台": "workbench",
    "workbench": "workbench",
}

# The turn that writes it: the session that did the work knows it best.
HANDOVER_PROMPT = """这一步的活到这里告一段落。最后写一份交接,给下一个来接手这个工作区的工具看\
(Claude Code、Codex,或任何读 CLAUDE.md / AGENTS.md 的 agent):它不知道这次运行,\
也看不到这段对话,只看得到这份交接和磁盘上的文件。这一轮不要再推进任务,不要调用工具。

恰好五段,用下面这五个标题,每段写实;不知道的就写「无」,不要编:

## 这是什么项目
(必填)一两句:做什么、给谁用、现在是什么状态。

## 验收(做到了的、没做到的)
对照验收标准和判定清单,做到了的和没做到的各一条一行。

## 生成的文件(由什么生成,别手改)
哪些文件是生成出来的、由什么命令或脚本生成 —— 这样接手的人不会去手改一个生成的文件。

## 走过的死路
试过但不行的做法:试了什么、为什么不行,一条一行。

## 工作台(在哪、怎么读)
(必填)工作台在 {workbench}:先读哪个文件(INDEX.md、notes/ 里的 需求.md / 目标.md / 交接书、\
artifacts/、scripts/),里面各有什么。

直接在回话正文里写这五段。"""

_MARKER_LINE = re.compile(r"^.*<!--\s*flower:handover:(?:begin|end)\s*-->.*$", re.MULTILINE)


@dataclass
class Handover:
    """What the next tool must know about this workspace."""

    what: str = ""
    acceptance: str = ""
    generated: str = ""
    deadends: str = ""
    workbench: str = ""
    degraded: bool = False
    why: str = ""  # why it is degraded, in a few words

    def missing(self) -> list[str]:
        """Headings of the empty required sections."""
        return [name for attr, name in SECTIONS if attr in REQUIRED and not getattr(self, attr).strip()]

    def complete(self) -> bool:
        return not self.missing()

    @classmethod
    def parse(cls, text: str) -> Handover:
        """The five sections of a reply (or of a block read back); what is not found stays empty."""
        found = {attr: _own_text(body) for attr, body in split_sections(text or "", ALIASES).items()}
        return cls(
            what=found.get("what", ""),
            acceptance=found.get("acceptance", ""),
            generated=found.get("generated", ""),
            deadends=found.get("deadends", ""),
            workbench=found.get("workbench", ""),
            degraded=DEGRADED in fold_width(text or ""),
        )

    def to_markdown(self) -> str:
        """The block's text (without its markers); the same document always gives the same text."""
        lines = [TITLE, "", NOTE]
        if self.degraded:
            why = f"({self.why})" if self.why else ""
            lines.append(
                f"> {DEGRADED}{why}这是 flower 按手头的信息机械拼的:需求确认书、目标与最后一次判定、工作台。"
            )
        for attr, name in SECTIONS:
            lines += ["", f"### {name}", getattr(self, attr).strip() or EMPTY]
        return "\n".join(lines) + "\n"


def _own_text(text: str) -> str:
    """A section's text without any line that would pass for one of the block's markers: a model
    quoting them must not break the file for the next run."""
    return _MARKER_LINE.sub("", text).strip()


def mechanical(
    *,
    brief: Brief,
    goal: Goal | None,
    verdict: Verdict | None,
    rounds: int | None,
    handoff: Handoff | None,
    workbench_root: Path,
    workspace: Path,
    why: str,
) -> Handover:
    """A handover from what flower knows, marked degraded; never invents what it does not know."""
    return Handover(
        what=brief.goal,
        acceptance=_acceptance(brief, goal, verdict, rounds),
        generated=_generated(workbench_root, workspace),
        deadends=handoff.deadends if handoff is not None else "",
        workbench=workbench_guide(workbench_root, workspace),
        degraded=True,
        why=why,
    )


def _acceptance(brief: Brief, goal: Goal | None, verdict: Verdict | None, rounds: int | None) -> str:
    checks = list(goal.checks) if goal is not None else []
    if verdict is None or not verdict.state:
        if checks:
            return "还没有判定。判定清单:\n" + "\n".join(f"- {c}" for c in checks)
        return f"还没有判定。验收标准:\n{brief.accept}" if brief.accept else ""
    which = f"(第 {rounds} 轮)" if rounds else ""
    if verdict.achieved:
        return f"最后一次判定{which}:达成。判定清单逐条:\n" + "\n".join(f"- [x] {c}" for c in checks)
    state = "这个环境里验证不了" if verdict.unreachable else "未达成"
    lines = [f"最后一次判定{which}:{state} —— {verdict.reason}".rstrip(" —")]
    failed = list(verdict.failed)
    if failed:
        lines += ["没通过:", *(f"- [ ] {c}" for c in failed)]
    others = [c for c in checks if c not in failed]
    if others:
        lines += ["其余各条(判定者没列为没通过):", *(f"- {c}" for c in others)]
    return "\n".join(lines)


def _shown(path: Path, workspace: Path) -> str:
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)


def _generated(root: Path, workspace: Path) -> str:
    return (
        f"- {_shown(root, workspace)}/:flower 的工作台,由 flower 生成和维护(INDEX.md 每次重写,别手改)\n"
        "- CLAUDE.md 和 AGENTS.md 里 flower 标记之间的这一块:flower 每次跑完重写,要改就改块外面"
    )


def workbench_guide(root: Path, workspace: Path) -> str:
    """Where the workbench is and what to read in it; only what is really there is listed."""
    entries = [
        ("INDEX.md", "工作台的目录,先读它"),
        ("notes/需求.md", "需求确认书:目标、验收标准、边界、未知与假设"),
        ("notes/目标.md", "目标与判定清单"),
        ("notes/问答记录.md", "问过人什么、人怎么答的"),
        ("artifacts", "长产出(报告、数据、日志)"),
        ("scripts", "要跑第二次的脚本,第一行 # desc: 写着用途"),
    ]
    lines = [f"在 {_shown(root, workspace)}/(绝对路径 {root})。"]
    lines += [f"- {name}:{what}" for name, what in entries if (root / name).exists()]
    handoffs = sorted(p.name for p in (root / "notes").glob("交接-*.md")) if (root / "notes").is_dir() else []
    if handoffs:
        lines.append(f"- notes/{'、'.join(handoffs)}:换代时写的交接书(做到哪、定了什么、走不通的路)")
    return "\n".join(lines)
