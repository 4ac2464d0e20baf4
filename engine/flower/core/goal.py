"""The goal guard's documents: the goal with its checklist, and one round's verdict."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .brief import (
    damage_of,
    describe_problem,
    fold_width,
    is_placeholder,
    read_document,
    scan_sections,
    split_sections,
    strip_fences,
    write_document,
)
from .evidence import CheckState, Evidence, Trail, link, unbacked

ACHIEVED = "achieved"
NOT_YET = "not_yet"
UNREACHABLE = "unreachable"

EMPTY = "(空)"
GOAL_HEADER = "# 目标\n"  # how flower starts every 目标.md it writes
AMENDED = "\n\n(已修改)"
# "[此环境无法验证:原因]" marks a check that cannot pass here, known the moment the goal is set
_UNVERIFIABLE = re.compile(r"[\[\u3010]\s*此环境无法验证\s*:")

GOAL_SECTIONS: tuple[tuple[str, str], ...] = (("statement", "目标"), ("checks", "判定清单"))

GOAL_ALIASES: dict[str, str] = {
    "目标": "statement",
    "目标陈述": "statement",
    "目标描述": "statement",
    "goal": "statement",
    "判定清单": "checks",
    "判定项": "checks",
    "验收清单": "checks",
    "检查清单": "checks",
    "清单": "checks",
    "checklist": "checks",
    "checks": "checks",
}

VERDICT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("state", "结论"),
    ("reason", "理由"),
    ("failed", "未通过"),
)
# the optional fourth section: one line per check, how it was verified (core/evidence.py)
EVIDENCE_SECTION = ("evidence", "证据")

VERDICT_ALIASES: dict[str, str] = {
    "结论": "state",
    "判定": "state",
    "判定结论": "state",
    "判定结果": "state",
    "verdict": "state",
    "conclusion": "state",
    "理由": "reason",
    "原因": "reason",
    "依据": "reason",
    "reason": "reason",
    "未通过": "failed",
    "未通过项": "failed",
    "未通过的": "failed",
    "未通过的条目": "failed",
    "没通过": "failed",
    "没通过的": "failed",
    "不通过": "failed",
    "failed": "failed",
    "证据": "evidence",
    "证据清单": "evidence",
    "逐条证据": "evidence",
    "验证方式": "evidence",
    "怎么验证的": "evidence",
    "evidence": "evidence",
    "proof": "evidence",
}

# Conclusion words. Matched longest first at each position so "未达成" is never read as
# "达成". Every "cannot verify here" phrasing is unreachable: treating it as achieved would
# let "looks like it should work" close the task, as not_yet would loop on the impossible.
STATE_WORDS: dict[str, str] = {
    "无法达成": UNREACHABLE,
    "不可能达成": UNREACHABLE,
    "不可达成": UNREACHABLE,
    "达不成": UNREACHABLE,
    "达成不了": UNREACHABLE,
    "做不到": UNREACHABLE,
    "无法验证": UNREACHABLE,
    "没法验证": UNREACHABLE,
    "验证不了": UNREACHABLE,
    "无法判定": UNREACHABLE,
    "unverifiable": UNREACHABLE,
    "unreachable": UNREACHABLE,
    "未达成": NOT_YET,
    "没达成": NOT_YET,
    "没有达成": NOT_YET,
    "尚未达成": NOT_YET,
    "还没达成": NOT_YET,
    "未达到": NOT_YET,
    "未完成": NOT_YET,
    "没完成": NOT_YET,
    "未通过": NOT_YET,
    "没通过": NOT_YET,
    "不通过": NOT_YET,
    "not_yet": NOT_YET,
    "not yet": NOT_YET,
    "not achieved": NOT_YET,
    "已达成": ACHIEVED,
    "达成": ACHIEVED,
    "已完成": ACHIEVED,
    "通过": ACHIEVED,
    "achieved": ACHIEVED,
}


def _word_pattern(word: str) -> str:
    body = re.escape(word)
    # ASCII words need boundaries ("passed" inside "bypassed"); CJK words have none to need
    return rf"(?<![A-Za-z_]){body}(?![A-Za-z_])" if word.isascii() else body


_STATE_RE = re.compile(
    "|".join(_word_pattern(w) for w in sorted(STATE_WORDS, key=len, reverse=True)),
    re.IGNORECASE,
)
_STATE_LOOKUP = {w.lower(): s for w, s in STATE_WORDS.items()}

_ITEM_MARK = re.compile(
    r"^\s*(?:[-*+\u2022]\s+|\d{1,3}[.\u3001)\uff09]\s*|[(\uff08]\d{1,3}[)\uff09]\s*)?"
    r"(?:\[[ xX\u2713]?\]\s*)?"
)
_NONE_ITEMS = frozenset({"无", "没有", "none", "n/a", "-", "(无)"})


def check_item(line: str) -> str:
    """One checklist line without its list marker (``-``, ``*``, ``1.``, ``[ ]``); "" if empty."""
    item = _ITEM_MARK.sub("", line, count=1).strip()
    return "" if is_placeholder(item) else item


@dataclass
class Goal:
    """The goal statement plus the checklist the judge verifies, one check per line."""

    statement: str = ""
    checks: list[str] = field(default_factory=list)
    path: Path | None = None
    # set by load(): why the file looks damaged (cut off, not UTF-8); a damaged goal is never complete
    damage: str = field(default="", compare=False)

    @property
    def unverifiable(self) -> list[str]:
        """Checks marked ``[此环境无法验证:…]``: certain to fail here, known at goal time."""
        return [c for c in self.checks if _UNVERIFIABLE.search(fold_width(c))]

    def missing(self) -> list[str]:
        out = []
        if not self.statement.strip():
            out.append("目标")
        if not any(c.strip() for c in self.checks):
            out.append("判定清单")
        return out

    def complete(self) -> bool:
        return not self.missing() and not self.damage

    def problem(self) -> str:
        """What is wrong with it, for a person; "" when it is complete."""
        return describe_problem(self.damage, self.missing())

    @classmethod
    def parse(cls, text: str) -> Goal:
        statement = split_sections(text or "", GOAL_ALIASES).get("statement", "")
        return cls(statement=statement, checks=[c for _, c in _checks(text or "")])

    def to_markdown(self) -> str:
        checks = [c.strip() for c in self.checks if c.strip()]
        listing = "\n".join(f"- {c}" for c in checks) if checks else EMPTY
        return f"{GOAL_HEADER}{self.statement.strip() or EMPTY}\n\n# 判定清单\n{listing}\n"

    def prompt_block(self) -> str:
        checks = [c.strip() for c in self.checks if c.strip()]
        listing = "\n".join(f"{i}. {c}" for i, c in enumerate(checks, 1)) if checks else EMPTY
        return f"## 目标\n{self.statement.strip() or EMPTY}\n\n## 判定清单\n{listing}"

    def write(self, path: str | Path) -> Path:
        self.path = write_document(path, self.to_markdown())
        return self.path

    @classmethod
    def load(cls, path: str | Path) -> Goal | None:
        doc = read_document(path)
        if doc is None:
            return None
        goal = cls.parse(doc[1])
        goal.path = doc[0]
        goal.damage = damage_of(doc[0], header=GOAL_HEADER)
        return goal

    def amend(self, extra: str) -> Goal:
        """Append, never overwrite: the original goal stays visible above the change."""
        self.statement = self.statement + AMENDED + extra
        return self


def _checks(text: str) -> list[tuple[int, str]]:
    # first checklist section that has any item, like every other section
    for sec in scan_sections(text, GOAL_ALIASES):
        if sec.key != "checks":
            continue
        items = [(n, check_item(line)) for n, line in sec.body]
        items = [(n, c) for n, c in items if c]
        if items:
            return items
    return []


def check_lines(markdown: str) -> list[tuple[int, str]]:
    """(0-based line number, check) for every check in a 目标.md text, in order."""
    return _checks(markdown or "")


# -- which check a verdict's line names ---------------------------------------------------------

# "第 3 条", "判定项 3", a bare "3": a judge naming a check by its number
_NUMBERED = re.compile(r"(?:第\s*(\d{1,3})\s*[条项个])|(?:判定项\s*(\d{1,3}))|(?:^\s*#?(\d{1,3})\s*$)")
_SIMILAR = 0.6  # the least difflib ratio at which a loose quote still names a check


def _normal(text: str) -> str:
    # NFKC folds full-width letters and punctuation: judges quote checks in either width
    item = unicodedata.normalize("NFKC", check_item(text) or text)
    return " ".join(item.split()).lower().rstrip("。.;")


def locate_check(item: str, checks: Sequence[tuple[int, str]]) -> int | None:
    """The line (the first of the pair) of the check that `item`, a check as a verdict quotes it,
    names: the same text, else the longest check containing it or contained in it, else its
    number ("第 3 条"), else the closest one when close enough; None when it names none."""
    if not checks:
        return None
    want = _normal(item)
    normal = [(line, _normal(c)) for line, c in checks]
    for line, c in normal:
        if c == want:
            return line
    contained = [(line, len(c)) for line, c in normal if c and want and (c in want or want in c)]
    if contained:
        return max(contained, key=lambda lc: lc[1])[0]
    m = _NUMBERED.search(want)
    if m:
        n = int(next(g for g in m.groups() if g))
        if 1 <= n <= len(checks):
            return checks[n - 1][0]
    scored = [(difflib.SequenceMatcher(None, want, c).ratio(), line) for line, c in normal]
    best = max(scored)
    return best[1] if best[0] >= _SIMILAR else None


def check_states(
    state: str, failed: Sequence[str], unproven: Sequence[str], evidence: Sequence[Evidence]
) -> list[CheckState]:
    """How a verdict judged each check it has evidence for (one state per `evidence`, in order):
    ``unverifiable`` when marked [此环境无法验证:…] (never met); ``no_evidence`` when claimed
    achieved without evidence, or nothing the judge did backs it; ``failed`` when the verdict is
    not achieved and a failed line names it; else ``passed``. The terminal, the hover, the
    Flower view and Neovim all show this one rule."""
    checks = list(enumerate(e.check for e in evidence))
    unproven_at = {locate_check(u, checks) for u in unproven}
    failed_at = {locate_check(f, checks) for f in failed} if state != ACHIEVED else set()
    out: list[CheckState] = []
    for at, e in enumerate(evidence):
        if e.kind == "unverifiable":
            out.append("unverifiable")
        elif at in unproven_at:
            out.append("no_evidence")
        elif at in failed_at:
            out.append("failed")
        elif not e.backed or e.kind == "none":
            out.append("no_evidence")
        else:
            out.append("passed")
    return out


@dataclass
class Verdict:
    """One round's judgement: the seeds' three sections, conclusion / reason / failed checks,
    plus the optional fourth, how each check was verified (``## 证据``, one line per check).

    ``basis``: the fourth section's lines as the judge wrote them; ``evidence``: one `Evidence`
    per check once `prove` linked those lines to the judge's recorded calls; ``unproven``: the
    checks an achieved verdict claimed without evidence (then it is not achieved); ``claimed``:
    the judge's own conclusion when `prove` overruled it, else ""."""

    state: str = ""
    reason: str = ""
    failed: list[str] = field(default_factory=list)
    basis: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    unproven: list[str] = field(default_factory=list)
    claimed: str = ""

    @property
    def achieved(self) -> bool:
        return self.state == ACHIEVED

    @property
    def unreachable(self) -> bool:
        return self.state == UNREACHABLE

    @property
    def ok(self) -> bool:
        """Whether a conclusion was recognised at all. Not ok must be handled as not achieved."""
        return self.state in (ACHIEVED, NOT_YET, UNREACHABLE)

    @classmethod
    def parse(cls, text: str) -> Verdict:
        verdict = cls._parse(text or "")
        found = split_sections(text or "", VERDICT_ALIASES)
        verdict.basis = [
            line.strip()
            for line in found.get("evidence", "").splitlines()
            if line.strip() and not is_placeholder(line)
        ]
        return verdict

    @classmethod
    def _parse(cls, text: str) -> Verdict:
        sections = scan_sections(text, VERDICT_ALIASES)
        found = split_sections(text, VERDICT_ALIASES)
        reason = found.get("reason", "")
        failed = [
            c
            for c in (check_item(line) for line in found.get("failed", "").splitlines())
            if c and fold_width(c).lower() not in _NONE_ITEMS
        ]
        if not sections:
            # judges asked for "just 0/1" often reply with nothing else
            bare = text.strip()
            if re.fullmatch(r"1|true", bare, re.IGNORECASE):
                return cls(ACHIEVED, reason, failed)
            if re.fullmatch(r"0|false", bare, re.IGNORECASE):
                return cls(NOT_YET, reason, failed)
            conclusion = strip_fences(text)
        elif found.get("state"):
            conclusion = found["state"]
        else:
            # headings but no conclusion: only the preamble may conclude; a reason that
            # merely mentions "通过" or "第 1 条" must not turn into achieved
            conclusion = "\n".join(strip_fences(text).splitlines()[: sections[0].line])
        hit = _STATE_RE.search(conclusion)
        if hit:
            return cls(_STATE_LOOKUP[hit.group(0).lower()], reason, failed)
        if re.search(r"\b1\b", conclusion):
            return cls(ACHIEVED, reason, failed)
        if re.search(r"\b0\b", conclusion):
            return cls(NOT_YET, reason, failed)
        return cls("", reason, failed)

    def prove(self, goal: Goal, trail: Trail, *, strict: bool = True) -> Verdict:
        """Link the evidence lines to what the judge did (`trail`) and apply the rule: an
        achieved verdict whose checks are not all backed by a recorded call is not achieved
        (``strict``, the default), and a check marked ``[此环境无法验证:…]`` is never met, even
        when not strict. Changes this verdict in place and returns it."""
        checks = [c.strip() for c in goal.checks if c.strip()]
        self.evidence = link(checks, self.basis, trail, unverifiable=goal.unverifiable)
        if not self.achieved:
            return self
        never = [e.check for e in self.evidence if e.kind == "unverifiable"]
        missing = unbacked(self.evidence) if strict else never
        if missing:
            self.claimed, self.state = self.state, NOT_YET
            self.unproven = missing
            self.failed = [*missing, *(c for c in self.failed if c not in missing)]
        return self

    def check_states(self) -> list[CheckState]:
        """How this verdict judged each check of its evidence (`check_states`)."""
        return check_states(self.state, self.failed, self.unproven, self.evidence)

    def feedback(self) -> str:
        """What goes back to the worker: where it falls short, never how to fix it."""
        lines = ["判定者复核了这一轮的产出,目标还没达成。下面只说差在哪,怎么补由你决定。"]
        if not self.ok:
            lines.append("判定者没给出明确结论,按未达成处理。")
        if self.unproven:
            lines += ["", "这些判定项没有证据(判定者没跑命令、没读文件就说通过了),不算通过:"]
            lines += [f"- {c}" for c in self.unproven]
        failed = [c for c in self.failed if c not in self.unproven]
        if failed:
            lines += ["", "没通过的判定项:"] + [f"- {c}" for c in failed]
        if self.reason.strip():
            lines += ["", "判定理由:", self.reason.strip()]
        lines += ["", "接着上一轮的进度补齐这些差距,不要重头来过;做完照常汇报。"]
        return "\n".join(lines)
