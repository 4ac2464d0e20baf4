"""The handoff document (交接书) a session writes before a fresh session takes over.

Also the two module-level pieces the runtime needs around it: ``is_overflow`` turns an
API "context full" error into an immediate handoff, and ``degraded`` builds a handoff
mechanically when the session could not write one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .brief import fold_width, read_document, split_sections, write_document

# (field, Chinese section name), in document order
SECTIONS: tuple[tuple[str, str], ...] = (
    ("doing", "现在在做什么"),
    ("decided", "已经定下的"),
    ("deadends", "走不通的路"),
    ("next", "下一步"),
    ("scene", "现场"),
)

# Only these two are required: demanding dead ends at the start of a task makes models invent them.
REQUIRED: tuple[str, ...] = ("doing", "next")

EMPTY = "(空)"
DEGRADED = "[降级:交接没写成]"
SCENE_CHARS = 1200

ALIASES: dict[str, str] = {
    "现在在做什么": "doing",
    "现在在做": "doing",
    "在做什么": "doing",
    "正在做什么": "doing",
    "正在做": "doing",
    "当前在做什么": "doing",
    "doing": "doing",
    "已经定下的": "decided",
    "已经定下的事": "decided",
    "已定下的": "decided",
    "已定的事": "decided",
    "已定": "decided",
    "已决定": "decided",
    "定了什么": "decided",
    "decided": "decided",
    "走不通的路": "deadends",
    "走不通的": "deadends",
    "走不通": "deadends",
    "死路": "deadends",
    "试过不行的": "deadends",
    "dead ends": "deadends",
    "deadends": "deadends",
    "下一步": "next",
    "下一步做什么": "next",
    "接下来": "next",
    "next step": "next",
    "next": "next",
    "现场": "scene",
    "关键文件": "scene",
    "scene": "scene",
}

# The prompt the *current* session gets: only it holds the context, so it must write this itself.
HANDOFF_PROMPT = """上下文已经用到 {used} / {window},快满了。这一轮先不要推进任务 —— 写一份交接书,\
之后会换一个新会话读它接着做。只有你有这段上下文,所以只能你来写;\
新会话除了这份交接和磁盘上的文件,什么都看不到。

恰好五段,用下面这五个标题,每段写实,不要客套:

## 现在在做什么
(必填)手上这件事做到哪了,站在哪一步。

## 已经定下的
已经拍板的决定,每条带上为什么 —— 不写为什么,接手的人会把定过的事重新讨论一遍。

## 走不通的路
试过但不行的做法:试了什么、为什么不行,一条一行。这是最贵的一段 ——
接手的人最花钱重新发现的就是它。实测一个编译问题绕了一小时,结论没写下来,
接手的人就会原样再绕一遍。真没有就写「无」,不要编。

## 下一步
(必填)接手后第一件具体要做的事。

## 现场
关键文件与产出的路径。只写路径(指针),不贴内容。

不要调用工具,不要贴代码、日志或命令输出;直接在回话正文里写这五段。"""

_OVERFLOW = re.compile(
    r"prompt is too long"
    r"|prompt too long"
    r"|context[ _-]length[ _-]exceeded"
    r"|maximum context length"
    r"|too many total text bytes"
    r"|input length and [`'\"]?max_tokens[`'\"]? exceed"
    r"|exceeds? (?:the )?(?:model'?s? )?context window"
    r"|context window (?:is )?(?:full|exceeded)",
    re.IGNORECASE,
)


def is_overflow(*texts: object) -> bool:
    """True if any of ``texts`` is the API saying the prompt no longer fits the window."""
    return any(t is not None and _OVERFLOW.search(str(t)) for t in texts)


_TITLE = re.compile(r"^# 交接书(?: · (?P<step>.+))?[ \t]*$", re.MULTILINE)


@dataclass
class Handoff:
    """Five sections written at a handoff; ``doing`` and ``next`` are required."""

    doing: str = ""
    decided: str = ""
    deadends: str = ""
    next: str = ""
    scene: str = ""
    step: str = ""
    path: Path | None = field(default=None, compare=False)

    def missing(self) -> list[str]:
        """Chinese names of the empty required sections."""
        return [name for attr, name in SECTIONS if attr in REQUIRED and not getattr(self, attr).strip()]

    def complete(self) -> bool:
        return not self.missing()

    @property
    def degraded(self) -> bool:
        """True for a handoff the framework assembled because the session could not write one."""
        return DEGRADED in fold_width(self.doing)

    @classmethod
    def parse(cls, text: str, *, step: str = "") -> Handoff:
        found = split_sections(text or "", ALIASES)
        return cls(
            doing=found.get("doing", ""),
            decided=found.get("decided", ""),
            deadends=found.get("deadends", ""),
            next=found.get("next", ""),
            scene=found.get("scene", ""),
            step=step,
        )

    def to_markdown(self) -> str:
        title = f"# 交接书 · {self.step}" if self.step else "# 交接书"
        lines = [
            title,
            "",
            "> 上一代会话在上下文快满时自己写的交接;接手的新会话读的就是这个文件,可以直接改。",
        ]
        for attr, name in SECTIONS:
            lines += ["", f"## {name}", getattr(self, attr).strip() or EMPTY]
        return "\n".join(lines) + "\n"

    def prompt_block(self) -> str:
        """What the successor session starts from; it must know it is taking over."""
        head = [
            "你在接手一件做到一半的活。上一代会话的上下文快满了,它把做到哪、定了什么、"
            "哪些路走不通写成了下面这份交接,然后退场;你是接班的新会话。",
            "背景都在这份交接和它指到的文件里 —— 不要回头找人要背景,从「下一步」接着做,不要重头来过。",
        ]
        if self.step:
            head.append(f"步骤:{self.step}")
        if self.degraded:
            head.append(
                "注意:这份交接是机械拼的降级件,内容不完整。动手前先自己去现场"
                "(工作台、产出文件、工作区状态)看清楚做到了哪一步。"
            )
        parts = ["\n".join(head)]
        parts += [
            f"## {name}\n{getattr(self, attr).strip()}"
            for attr, name in SECTIONS
            if getattr(self, attr).strip()
        ]
        return "\n\n".join(parts)

    def write(self, path: str | Path) -> Path:
        self.path = write_document(path, self.to_markdown())
        return self.path

    @classmethod
    def load(cls, path: str | Path) -> Handoff | None:
        doc = read_document(path)
        if doc is None:
            return None
        title = _TITLE.search(doc[1])
        handoff = cls.parse(doc[1], step=(title.group("step") or "").strip() if title else "")
        handoff.path = doc[0]
        return handoff


def degraded(step: str, prompt: str, *, why: str = "") -> Handoff:
    """A handoff assembled without the model: marked degraded, scene = start of the task.

    An incomplete handoff is far better than running into the window.
    """
    reason = f"(原因:{why.strip()})" if why and why.strip() else ""
    return Handoff(
        doing=(
            f"{DEGRADED} 上一代会话没能写出交接{reason},这是框架机械拼的残缺件。"
            f"步骤「{step}」具体做到哪一步并不清楚。"
        ),
        next=(
            "先去现场看清楚:工作台(INDEX.md、notes/、artifacts/)和工作区的实际状态,"
            "弄明白已经做完了什么,再按原始任务接着做;不要从头重来。"
            "「现场」一段是原始任务的开头。"
        ),
        scene=(prompt or "")[:SCENE_CHARS],
        step=step,
    )
