"""Money: a ceiling per run and per round, from the CLI's own cost figures.

A run's spending is kept in the run folder (``budget.json``), so a flower killed and started
again under the same budget goes on counting where it was; a different budget is a new ceiling
from zero ("continue it with a new budget"). Every call is given what is left as the SDK's
``max_budget_usd``, so the CLI itself stops asking the model once the money is gone, and a step
that meets the ceiling ends in the distinct state ``stopped: budget``, never as a failed round.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..base.files import atomic_write
from ..base.i18n import _

BUDGET_FILE = "budget.json"

Scope = Literal["run", "round"]


@dataclass(frozen=True)
class Budget:
    """Dollars a run (`run_usd`) and each of its rounds (`round_usd`) may spend; None: no limit."""

    run_usd: float | None = None
    round_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("run_usd", "round_usd"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a positive number of dollars, got {value!r}")

    @property
    def enabled(self) -> bool:
        return self.run_usd is not None or self.round_usd is not None


@dataclass(frozen=True)
class Forecast:
    """What the next round will likely cost, from the rounds so far."""

    spent: float
    rounds: int
    next_round: float | None  # None: no round has finished yet


class Ledger:
    """A run's spending against its budget. Not thread-safe: the Runtime runs one step at a time."""

    def __init__(self, run_dir: Path | None, budget: Budget) -> None:
        self.budget = budget
        self.path = run_dir / BUDGET_FILE if run_dir is not None else None
        self.spent = 0.0
        self.round_spent = 0.0
        # (step, cost) of each finished round of this process: a step's rounds forecast its next
        self.rounds: list[tuple[str, float]] = []
        self.step = ""
        stored = self._stored()
        if stored is not None and budget.run_usd is not None and stored.get("run_usd") == budget.run_usd:
            spent = stored.get("spent_usd")
            if isinstance(spent, (int, float)) and math.isfinite(spent) and spent >= 0:
                self.spent = float(spent)  # the same budget as before a kill: the same count

    def _stored(self) -> dict[str, object] | None:
        if self.path is None:
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # none yet, or damaged: counted from zero, never a reason to stop the run
        return data if isinstance(data, dict) else None

    # -- rounds ------------------------------------------------------------------------------
    def begin_round(self, step: str = "") -> None:
        if self.round_spent > 0:
            self.rounds.append((self.step, self.round_spent))
        self.round_spent, self.step = 0.0, step

    def forecast(self) -> Forecast:
        """From the rounds of the step now running (a brief costs less than a round of work)."""
        done = [cost for step, cost in self.rounds if step == self.step]
        return Forecast(
            spent=round(self.spent, 6),
            rounds=len(done),
            next_round=round(sum(done) / len(done), 6) if done else None,
        )

    # -- money -------------------------------------------------------------------------------
    def add(self, cost: float) -> None:
        if cost <= 0 or not math.isfinite(cost):
            return
        self.spent = round(self.spent + cost, 6)
        self.round_spent = round(self.round_spent + cost, 6)
        self._save()

    def left(self) -> float | None:
        """Dollars the next call may spend: the smaller of the run's and the round's rest."""
        rests = []
        if self.budget.run_usd is not None:
            rests.append(self.budget.run_usd - self.spent)
        if self.budget.round_usd is not None:
            rests.append(self.budget.round_usd - self.round_spent)
        return max(0.0, min(rests)) if rests else None

    def exhausted(self) -> Scope | None:
        """Which ceiling is reached (the run's first), else None."""
        if self.budget.run_usd is not None and self.spent >= self.budget.run_usd - 1e-9:
            return "run"
        if self.budget.round_usd is not None and self.round_spent >= self.budget.round_usd - 1e-9:
            return "round"
        return None

    def stop_line(self, scope: Scope) -> str:
        if scope == "run":
            return _(
                "stopped: budget —— 这次运行已花 {spent},到了上限 {limit};"
                "要接着做,用新的预算再跑:flower --budget <美元>"
            ).format(spent=money(self.spent), limit=money(self.budget.run_usd or 0.0))
        return _(
            "stopped: budget —— 这一轮已花 {spent},到了每轮上限 {limit};"
            "要接着做,用更高的每轮预算再跑:flower --round-budget <美元>"
        ).format(spent=money(self.round_spent), limit=money(self.budget.round_usd or 0.0))

    def _save(self) -> None:
        if self.path is None or self.budget.run_usd is None:
            return
        data = {"run_usd": self.budget.run_usd, "spent_usd": self.spent}
        with contextlib.suppress(OSError):  # the books of money never stop the work itself
            atomic_write(self.path, json.dumps(data) + "\n")


def money(usd: float) -> str:
    """Dollars as people read them: cents above a dollar, four places below (a round of a cheap
    model costs fractions of a cent)."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.4f}"


def forecast_line(ledger: Ledger) -> str:
    """One line before a round: what was spent, what the round will likely cost, what is left."""
    f = ledger.forecast()
    limit = ledger.budget.run_usd
    if limit is not None:
        parts = [_("已花 {spent}/{limit}").format(spent=money(f.spent), limit=money(limit))]
    else:
        parts = [_("已花 {spent}").format(spent=money(f.spent))]
    if f.next_round is not None:
        parts.append(_("下轮约 {cost}(前 {n} 轮均值)").format(cost=money(f.next_round), n=f.rounds))
        if limit is not None:
            more = int((max(0.0, limit - f.spent) + 1e-9) // f.next_round)  # 0.6 // 0.2 is 2.0
            parts.append(_("还够约 {n} 轮").format(n=more))
    if ledger.budget.round_usd is not None:
        parts.append(_("每轮限 {limit}").format(limit=money(ledger.budget.round_usd)))
    return " · ".join(parts)  # the terminal's "$" marks the line as money
