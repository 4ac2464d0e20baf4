"""What a fleet run is, as values: what is submitted, how a run stands, what happened to it.

These are the fleet's public types: the command line prints them, and any other front end (the
editor's view of the fleet) gets exactly these from ``flower.fleet.Fleet``, never rows or dicts.
Every text a person reads is a ``Note``: a message id (the Chinese text, marked for the
catalogue) and its fields, put into words in the reader's language when it is shown, so a run
submitted in Chinese reads in English to a colleague who speaks English.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..base.i18n import N_, _
from ..base.loose import flag, integer, mapping, nonempty, number, text

__all__ = [
    "ACTIVE",
    "STATES",
    "Execution",
    "FleetError",
    "Note",
    "Outcome",
    "RunDetail",
    "RunEvent",
    "RunQuestion",
    "RunRequest",
    "RunState",
    "RunSummary",
    "branch_of",
]

RunState = Literal["queued", "running", "waiting", "finished", "failed", "cancelled"]
STATES: tuple[RunState, ...] = ("queued", "running", "waiting", "finished", "failed", "cancelled")
ACTIVE: tuple[RunState, ...] = ("queued", "running", "waiting")

STATE_WORDS: dict[str, str] = {
    "queued": N_("排队中"),
    "running": N_("在跑"),
    "waiting": N_("等人回答"),
    "finished": N_("跑完了"),
    "failed": N_("失败"),
    "cancelled": N_("已取消"),
}

BRANCH_PREFIX = "flower/"


def branch_of(run_id: str) -> str:
    """The branch a run's result is delivered on."""
    return f"{BRANCH_PREFIX}{run_id}"


@dataclass(frozen=True)
class Note:
    """A text for a person: ``msgid`` is the Chinese text, ``fields`` fill its placeholders."""

    msgid: str
    fields: dict[str, object] = field(default_factory=dict)

    def text(self) -> str:
        """The note in the language flower speaks now."""
        try:
            return _(self.msgid).format(**self.fields)
        except (KeyError, IndexError, ValueError):  # a note written by another version of flower
            return self.msgid

    def as_json(self) -> dict[str, object]:
        return {"msgid": self.msgid, "fields": self.fields}

    @classmethod
    def of_json(cls, data: object) -> Note | None:
        found = mapping(data)
        msgid = nonempty(found.get("msgid"))
        return cls(msgid, mapping(found.get("fields"))) if msgid is not None else None


class FleetError(Exception):
    """What a fleet command cannot do, as one line for a person (``note``)."""

    def __init__(self, note: Note) -> None:
        super().__init__(note.text())
        self.note = note


@dataclass(frozen=True)
class RunRequest:
    """What ``flower submit`` enqueues: a repository and a ref to start from, the request, and the
    run options ``flower go`` takes for the same work."""

    repository: str  # a URL, or a local path made absolute by whoever submits it
    ref: str
    request: str
    rounds: int = 3
    sandbox: str = "auto"
    judge_can_run: bool = False
    timeout_s: float = 1800.0  # how long a question waits for a person
    budget_usd: float | None = None  # the run's ceiling in dollars (flower go --budget)
    round_budget_usd: float | None = None  # each round's (flower go --round-budget)
    # rounds without progress before the person is asked (flower go --stall-rounds); None: the
    # worker's $FLOWER_STALL_ROUNDS, else 3; 0: never asked
    stall_rounds: int | None = None

    def options(self) -> dict[str, object]:
        return {
            "rounds": self.rounds,
            "sandbox": self.sandbox,
            "judge_can_run": self.judge_can_run,
            "timeout_s": self.timeout_s,
            "budget_usd": self.budget_usd,
            "round_budget_usd": self.round_budget_usd,
            "stall_rounds": self.stall_rounds,
        }

    @classmethod
    def of(cls, repository: str, ref: str, request: str, options: Mapping[str, object]) -> RunRequest:
        """The request ``options()`` wrote down; an option missing or of the wrong type (a
        row written by hand or by another version) is its default, never a crash."""
        default = cls(repository, ref, request)
        rounds, timeout = integer(options.get("rounds")), number(options.get("timeout_s"))
        stall = integer(options.get("stall_rounds"))
        return cls(
            repository=repository,
            ref=ref,
            request=request,
            rounds=default.rounds if rounds is None else rounds,
            sandbox=text(options.get("sandbox"), default.sandbox),
            judge_can_run=flag(options.get("judge_can_run")),
            timeout_s=default.timeout_s if timeout is None else timeout,
            budget_usd=number(options.get("budget_usd")),
            round_budget_usd=number(options.get("round_budget_usd")),
            stall_rounds=stall if stall is not None and stall >= 0 else None,
        )


@dataclass(frozen=True)
class Outcome:
    """How a run's result was delivered: the branch pushed, or a patch file where it was written."""

    branch: str
    commit: str = ""
    pushed: bool = False
    patch: str = ""  # the patch file's path on ``host`` when the branch could not be pushed
    host: str = ""
    goal_met: bool = False


@dataclass(frozen=True)
class RunSummary:
    """One run as a list shows it."""

    id: str
    state: RunState
    repository: str
    ref: str
    request: str
    branch: str
    worker: str  # who holds it now (or held it last); "" when nobody has yet
    created_at: float
    updated_at: float
    note: Note | None  # the latest thing a person should know about it
    question: str  # the question waiting for an answer, "" when none
    outcome: Outcome | None

    def state_text(self) -> str:
        return _(STATE_WORDS[self.state])


@dataclass(frozen=True)
class RunEvent:
    """One line of a run's story: a line of its flow (``line``, in the words of the worker that
    ran it) or something the fleet did (``note``)."""

    at: float
    worker: str
    line: str = ""
    note: Note | None = None

    def text(self) -> str:
        return self.note.text() if self.note is not None else self.line


@dataclass(frozen=True)
class Execution:
    """One worker's time on a run: from when it took it to when it let go (``ended_at`` 0 while it
    still holds it). ``reason``: finished, failed, cancelled, handed-back, busy, fenced, lost."""

    worker: str
    host: str
    pid: int
    started_at: float
    ended_at: float
    reason: str


@dataclass(frozen=True)
class RunQuestion:
    """A question the run asked a person. ``state``: waiting, answered (not yet read by the run),
    delivered, settled (the run went on without it: timed out, declined), gone (its worker went
    away before it was answered)."""

    id: int
    question: str
    options: list[str]
    asked_at: float
    state: str
    answer: str


@dataclass(frozen=True)
class RunDetail:
    """One run in full: what it is, its story, who ran it when, what it asked."""

    summary: RunSummary
    request: RunRequest
    events: list[RunEvent]
    executions: list[Execution]
    questions: list[RunQuestion]
