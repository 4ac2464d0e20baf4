"""The step label of a manifest row, as one typed value with one parser and one formatter.

A row of `manifest.json` (and of a shared store's manifest) names what ran in its `step` field:

    干活                   the step's first attempt            StepLabel("干活")
    干活#round2            its second round under the judge   StepLabel.round("干活", 2)
    干活#retry1            a plain retry                       StepLabel.retry("干活", 1)
    干活·判定#2            the judge's verdict on round 2      StepLabel.verdict("干活", 2)
    干活·交接              the handoff turn of a full context  StepLabel.handoff("干活")
    干活·交接给下一个工具   the handover at the end of a run    StepLabel.handover("干活")

Steps, rounds and retries continue the step's session (the lineage knows them); verdicts,
handoffs and handovers are side turns of the step, in sessions of their own. The Runtime, the
workflow, recovery, the history and the terminal all read and write labels through this module
only, so a label means the same everywhere. The texts are the seeds' and never translated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["HANDOFF", "HANDOVER", "JUDGE", "LabelKind", "StepLabel"]

JUDGE = "·判定"  # the judge of a step: 干活·判定
HANDOFF = "·交接"  # a full context's handoff turn
HANDOVER = "·交接给下一个工具"  # the handover to the next tool, the run's last turn


class LabelKind(StrEnum):
    STEP = "step"
    ROUND = "round"
    RETRY = "retry"
    VERDICT = "verdict"
    HANDOFF = "handoff"
    HANDOVER = "handover"
    # a side turn flower does not know the kind of (another tool's, or a newer flower's):
    # kept as it is, never taken for a step of the lineage
    SIDE = "side"


# the number as flower writes it (ASCII, no leading zero): any other text reads back as written
_NUMBERED = re.compile(r"(?P<step>.+?)#(?P<kind>round|retry)?(?P<number>0|[1-9][0-9]*)")


@dataclass(frozen=True)
class StepLabel:
    step: str  # the step the row belongs to: 干活
    kind: LabelKind = LabelKind.STEP
    number: int = 0  # the round, the retry or the judged round; 0 for the others
    raw: str = ""  # a SIDE label's own text

    # -- making ---------------------------------------------------------------------------------
    @classmethod
    def round(cls, step: str, number: int) -> StepLabel:
        return cls(step, LabelKind.ROUND, number)

    @classmethod
    def retry(cls, step: str, number: int) -> StepLabel:
        return cls(step, LabelKind.RETRY, number)

    @classmethod
    def verdict(cls, step: str, number: int) -> StepLabel:
        return cls(step, LabelKind.VERDICT, number)

    @classmethod
    def handoff(cls, step: str) -> StepLabel:
        return cls(step, LabelKind.HANDOFF)

    @classmethod
    def handover(cls, step: str) -> StepLabel:
        return cls(step, LabelKind.HANDOVER)

    @staticmethod
    def judge_of(step: str) -> str:
        """The name of a step's judge, the lane its verdicts are drawn on: 干活·判定."""
        return f"{step}{JUDGE}"

    @classmethod
    def parse(cls, text: str) -> StepLabel:
        """The label a manifest row's `step` holds. Total: any string is some label, and
        `str(StepLabel.parse(text)) == text` for every text."""
        if text.endswith(HANDOVER) and len(text) > len(HANDOVER):
            return cls.handover(text[: -len(HANDOVER)])
        if text.endswith(HANDOFF) and len(text) > len(HANDOFF):
            return cls.handoff(text[: -len(HANDOFF)])
        numbered = _NUMBERED.fullmatch(text)
        if numbered is not None:
            step, kind, number = numbered["step"], numbered["kind"], int(numbered["number"])
            if kind is None and step.endswith(JUDGE) and len(step) > len(JUDGE):
                return cls.verdict(step[: -len(JUDGE)], number)
            if kind == "round" and "·" not in step:
                return cls.round(step, number)
            if kind == "retry" and "·" not in step:
                return cls.retry(step, number)
        if "·" in text:
            return cls(text.split("·", 1)[0], LabelKind.SIDE, raw=text)
        return cls(text)

    # -- reading --------------------------------------------------------------------------------
    def __str__(self) -> str:
        kind = self.kind
        if kind is LabelKind.ROUND:
            return f"{self.step}#round{self.number}"
        if kind is LabelKind.RETRY:
            return f"{self.step}#retry{self.number}"
        if kind is LabelKind.VERDICT:
            return f"{self.judge_of(self.step)}#{self.number}"
        if kind is LabelKind.HANDOFF:
            return f"{self.step}{HANDOFF}"
        if kind is LabelKind.HANDOVER:
            return f"{self.step}{HANDOVER}"
        if kind is LabelKind.SIDE:
            return self.raw
        return self.step

    @property
    def in_lineage(self) -> bool:
        """The row continues the step's own session (a step, a round, a retry)."""
        return self.kind in (LabelKind.STEP, LabelKind.ROUND, LabelKind.RETRY)

    @property
    def starts_round(self) -> bool:
        """A new round of work begins with this row (its verdict and handoffs belong to it)."""
        return self.in_lineage

    @property
    def lineage_key(self) -> str | None:
        """The step whose session the row continues; None for a side turn."""
        return self.step if self.in_lineage else None

    @property
    def lane(self) -> str:
        """The line a row's turns are drawn on: the step's, or its judge's (干活·判定)."""
        return self.judge_of(self.step) if self.kind is LabelKind.VERDICT else self.step
