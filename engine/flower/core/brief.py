"""The brief (需求确认书): exactly four sections, frozen to disk after clarification.

Also home of the section splitter that Handoff, Goal and Verdict reuse: model replies are
free-form markdown, so every structured document is recovered the same tolerant way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..base.files import atomic_write
from ..base.i18n import _

# (field, Chinese section name), in the fixed document order
SECTIONS: tuple[tuple[str, str], ...] = (
    ("goal", "目标"),
    ("accept", "验收标准"),
    ("bounds", "边界"),
    ("unknowns", "未知与假设"),
)

PLACEHOLDER = "(未填)"
BRIEF_HEADER = "# 需求确认书"

# heading text -> field; the canonical names plus the spellings models actually use
ALIASES: dict[str, str] = {
    "目标": "goal",
    "目的": "goal",
    "任务目标": "goal",
    "需求目标": "goal",
    "goal": "goal",
    "验收标准": "accept",
    "验收条件": "accept",
    "验收准则": "accept",
    "验收": "accept",
    "完成标准": "accept",
    "成功标准": "accept",
    "acceptance criteria": "accept",
    "acceptance": "accept",
    "边界": "bounds",
    "边界与约束": "bounds",
    "不做什么": "bounds",
    "不做的事": "bounds",
    "范围": "bounds",
    "bounds": "bounds",
    "boundaries": "bounds",
    "未知与假设": "unknowns",
    "未知项与假设": "unknowns",
    "未知和假设": "unknowns",
    "未知及假设": "unknowns",
    "假设与未知": "unknowns",
    "未知": "unknowns",
    "假设": "unknowns",
    "unknowns and assumptions": "unknowns",
    "unknowns": "unknowns",
    "assumptions": "unknowns",
}

# Text a section may hold and still count as empty: the placeholders our own writers emit,
# in both ASCII and full-width punctuation because hand edits mix the two.
_WIDTH = str.maketrans({"\uff08": "(", "\uff09": ")", "\uff1a": ":"})  # full-width -> ASCII
_EMPTY_MARKS = frozenset({"(未填)", "(空)"})


def fold_width(text: str) -> str:
    """Full-width parentheses and colon folded to ASCII, for comparing marks and placeholders."""
    return text.translate(_WIDTH)


def is_placeholder(text: str) -> bool:
    """True if ``text`` is blank or only one of the documents' empty-section placeholders."""
    return not text.strip() or fold_width(text.strip()) in _EMPTY_MARKS


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def strip_fences(text: str) -> str:
    """Blank out fenced code blocks; drop everything from an unclosed fence on.

    Fenced lines become empty lines rather than disappearing, so line numbers of the
    remaining text still match the original (diagnostics point at real lines).
    A clarifier once pasted a whole program into its reply; if the reply is cut off inside
    such a block, nothing after the opening fence can be trusted as a section.
    """
    out: list[str] = []
    fence: tuple[str, int] | None = None  # (char, length) of the open fence
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = (m.group(1)[0], len(m.group(1)))
            out.append("" if m else line)
            continue
        closes = (
            m is not None
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= fence[1]
            and not line[m.end() :].strip()
        )
        # inside a fence every line is blanked, so an unclosed fence swallows the rest
        out.append("")
        if closes:
            fence = None
    return "\n".join(out)


@dataclass
class Section:
    """One recognised heading and the raw lines under it (0-based line numbers)."""

    key: str
    line: int
    body: list[tuple[int, str]] = field(default_factory=list)
    level: int = 0  # ATX heading level, 0 for bold / colon / numbered headings

    @property
    def text(self) -> str:
        lines = [t for _, t in self.body]
        # separators between sections are noise, not content
        while lines and (not lines[-1].strip() or _RULE.match(lines[-1])):
            lines.pop()
        while lines and (not lines[0].strip() or _RULE.match(lines[0])):
            lines.pop(0)
        body = "\n".join(lines).strip()
        return "" if is_placeholder(body) else body


_RULE = re.compile(r"^[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*$")
_ATX = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+\S")
_HEADING_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def _heading_re(names: tuple[str, ...]) -> re.Pattern[str]:
    pattern = _HEADING_CACHE.get(names)
    if pattern is None:
        # longest first, or "未知" would claim the start of "未知与假设"
        alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        pattern = re.compile(
            r"^[ \t]*"
            r"(?P<hashes>#{1,6})?[ \t]*"
            r"(?P<num>(?:\d{1,2}|[一二三四五六七八九十]{1,3})[.\u3001)\uff09][ \t]*"
            r"|[(\uff08](?:\d{1,2}|[一二三四五六七八九十]{1,3})[)\uff09][ \t]*"
            r"|[-*+•][ \t]+)?"
            r"(?P<bold>\*\*|__)?[ \t]*"
            r"(?P<open>[「【\[])?[ \t]*"
            rf"(?P<name>{alt})"
            r"[ \t]*(?P<close>[」】\]])?"
            r"(?:[ \t]*[(\uff08][^()\uff08\uff09\n]{0,40}[)\uff09])?"
            r"[ \t]*(?P<c1>[:\uff1a])?"
            r"[ \t]*(?P<bold2>\*\*|__)?"
            r"[ \t]*(?P<c2>[:\uff1a])?"
            r"[ \t]*(?P<rest>.*)$",
            re.IGNORECASE,
        )
        _HEADING_CACHE[names] = pattern
    return pattern


def _match_heading(
    line: str, pattern: re.Pattern[str], aliases: Mapping[str, str]
) -> tuple[str, str, int] | None:
    """(key, same-line body, ATX level) if ``line`` is a heading of a known section."""
    m = pattern.match(line)
    if m is None:
        return None
    rest = m.group("rest").strip()
    bold = bool(m.group("bold")) and bool(m.group("bold2"))
    bracketed = bool(m.group("open")) and bool(m.group("close"))
    colon = bool(m.group("c1") or m.group("c2"))
    separated = m.end("name") < m.start("rest")  # anything (space, closer) between name and body
    # without a colon, a body on the same line needs a visible heading marker, otherwise
    # ordinary prose that merely starts with a section word would be taken as a heading
    marked = separated and bool(m.group("hashes") or bold or bracketed)
    if not (colon or not rest or marked):
        return None
    if m.group("bold") and rest.endswith(m.group("bold")):  # "**目标:正文**"
        rest = rest[: -len(m.group("bold"))].rstrip()
    key = aliases[_alias_key(m.group("name"), aliases)]
    level = len(m.group("hashes") or "")
    return key, rest, level


def _alias_key(name: str, aliases: Mapping[str, str]) -> str:
    if name in aliases:
        return name
    low = name.lower()
    for k in aliases:
        if k.lower() == low:
            return k
    raise KeyError(name)  # unreachable: the pattern only matches alias names


def scan_sections(text: str, aliases: Mapping[str, str]) -> list[Section]:
    """Every recognised section in order, duplicates included, fences already stripped.

    An unrecognised markdown heading ends the current section when it is at the same or a
    higher level (``## 附注`` after ``## 未知与假设``); deeper sub-headings stay in the body.
    """
    pattern = _heading_re(tuple(aliases))
    sections: list[Section] = []
    current: Section | None = None
    for i, line in enumerate(strip_fences(text).splitlines()):
        hit = _match_heading(line, pattern, aliases)
        if hit is not None:
            key, rest, level = hit
            current = Section(key, i, [(i, rest)] if rest else [], level)
            sections.append(current)
            continue
        atx = _ATX.match(line)
        if atx and current is not None and (current.level == 0 or len(atx.group(1)) <= current.level):
            current = None
            continue
        if current is not None:
            current.body.append((i, line))
    return sections


def split_sections(text: str, aliases: Mapping[str, str]) -> dict[str, str]:
    """Map each section key found in ``text`` to its body.

    When a section appears several times the first non-empty one wins (models often echo
    an empty template before filling it in). Placeholders count as empty.
    """
    found: dict[str, str] = {}
    for sec in scan_sections(text, aliases):
        if not found.get(sec.key):
            found[sec.key] = sec.text
    return found


def read_document(path: str | Path) -> tuple[Path, str] | None:
    """(resolved path, text) of a document file, or None if it is absent or unreadable."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError:
        return None
    # undecodable bytes must not crash a resume; they just parse as missing sections
    return p.resolve(), data.decode("utf-8-sig", errors="replace")


def damage_of(path: str | Path, *, header: str) -> str:
    """Why a note looks damaged, for a person ("" if it does not).

    Bytes that are not UTF-8 are damage in any note. A note that starts the way flower writes it
    (`header`) always ended with a newline when flower wrote it, and editors keep that newline:
    without one, the file was cut off part-way, and what is left must not be taken for the whole.
    """
    try:
        data = Path(path).read_bytes()
    except OSError:
        return ""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _("第 {start} 字节起不是 UTF-8 文本").format(start=exc.start)
    if data and text.startswith(header) and not data.endswith(b"\n"):
        last = text.rstrip().splitlines()[-1].strip() if text.strip() else ""
        return _("最后一行没有换行,像是写到一半被截断了(停在「{last}」)").format(last=last[-24:])
    return ""


def describe_problem(damage: str, missing: list[str]) -> str:
    """What is wrong with a note, for a person: its damage, else its empty sections; "" if none."""
    if damage:
        return damage
    if not missing:
        return ""
    sections = _("、").join(_("「{section}」").format(section=m) for m in missing)  # the fixed headings
    return _("缺{sections}").format(sections=sections)


def write_document(path: str | Path, text: str) -> Path:
    """Write ``text`` atomically (a frozen document must never be left half written)."""
    return atomic_write(path, text)


@dataclass
class Brief:
    """The four-section requirements brief produced by the clarifier."""

    goal: str = ""
    accept: str = ""
    bounds: str = ""
    unknowns: str = ""
    path: Path | None = field(default=None, compare=False)
    # set by load(): why the file looks damaged (cut off, not UTF-8); a damaged brief is never complete
    damage: str = field(default="", compare=False)

    def missing(self) -> list[str]:
        """Chinese names of the empty sections, in document order (ready to display)."""
        return [name for attr, name in SECTIONS if not getattr(self, attr).strip()]

    def complete(self) -> bool:
        return not self.missing() and not self.damage

    def problem(self) -> str:
        """What is wrong with it, for a person; "" when it is complete."""
        return describe_problem(self.damage, self.missing())

    @classmethod
    def parse(cls, text: str) -> Brief:
        """Recover the four sections from a model reply; whatever cannot be found stays empty."""
        found = split_sections(text or "", ALIASES)
        return cls(
            goal=found.get("goal", ""),
            accept=found.get("accept", ""),
            bounds=found.get("bounds", ""),
            unknowns=found.get("unknowns", ""),
        )

    def to_markdown(self) -> str:
        """The full document for humans: a short header, then all four sections."""
        lines = [
            BRIEF_HEADER,
            "",
            "> 确认者问清之后冻结的四段。后面每一步都从这份文书开局;改需求就直接改这个文件。",
            f"> 四段齐全才放行;照抄「{PLACEHOLDER}」的段仍算缺失。",
        ]
        missing = self.missing()
        if missing:
            lines.append(f"> 缺:{'、'.join(missing)}")
        for attr, name in SECTIONS:
            body = getattr(self, attr).strip() or PLACEHOLDER
            lines += ["", f"## {name}", body]
        return "\n".join(lines) + "\n"

    def prompt_block(self) -> str:
        """Compact form for downstream prompts: non-empty sections only, no metadata."""
        parts = [
            f"## {name}\n{getattr(self, attr).strip()}"
            for attr, name in SECTIONS
            if getattr(self, attr).strip()
        ]
        return "\n\n".join(parts)

    def write(self, path: str | Path) -> Path:
        """Freeze to ``path`` (parents created); remembers and returns the resolved path."""
        self.path = write_document(path, self.to_markdown())
        return self.path

    @classmethod
    def load(cls, path: str | Path) -> Brief | None:
        """Read a frozen brief; None if the file is absent or unreadable."""
        doc = read_document(path)
        if doc is None:
            return None
        brief = cls.parse(doc[1])
        brief.path = doc[0]
        brief.damage = damage_of(doc[0], header=BRIEF_HEADER)
        return brief
