"""What one fault class of the campaign reports: the same five figures for every class.

A class is a module in this folder with a ``CLASS`` name, a one-line ``ABOUT`` and
``run(ctx: Context) -> Tally``. It generates its own cases from ``ctx.rng`` (never a fixed
list), runs each against the real parts (the `flower` command, the bundled Claude Code CLI,
flower.sim, SQLite, PostgreSQL, the language server) in a folder of its own under
``ctx.workdir``, and counts what a user would check.
"""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Context:
    rng: random.Random
    cases: int  # how many cases the class should generate (a class may round it)
    workdir: Path  # a fresh folder for this class; removed afterwards unless kept
    keep: bool = False


@dataclass
class Tally:
    tried: int = 0
    continued: int = 0  # runs that went on (or resumed the same session) once the fault was gone
    lost_or_corrupted: int = 0  # files lost or damaged by the fault: must be 0
    tracebacks_shown: int = 0  # Python tracebacks a person saw (terminal, editor): must be 0
    unanswered: int = 0  # requests left without an answer or a clear error: must be 0
    # cases where a promise broke, one line each: what was done, what was seen
    broken: list[str] = field(default_factory=list)
    # figures of the class's own (e.g. "largest message: 100 MB"), one line each
    notes: list[str] = field(default_factory=list)

    def fail(self, case: str, why: str) -> None:
        self.broken.append(f"{case}: {why}")

    @property
    def ok(self) -> bool:
        return not (self.broken or self.lost_or_corrupted or self.tracebacks_shown or self.unanswered)


TRACEBACK_MARKS = ("Traceback (most recent call last)", "Error in server:")


def shows_traceback(text: str) -> bool:
    """A person was shown a Python traceback (or pygls's bare error line) in this text."""
    return any(mark in text for mark in TRACEBACK_MARKS)


def run_flower(
    argv: list[str], ws: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """The real `flower` command in `ws`, as a person runs it, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "flower", *argv], cwd=ws, env=env, input=stdin,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
