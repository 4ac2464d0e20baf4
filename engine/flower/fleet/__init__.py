"""The fleet: many runs on many machines, queued in the database flower already shares.

``flower submit`` queues a run (a repository, a ref, a request), ``flower worker`` on any machine
takes runs and delivers each as a branch ``flower/<run-id>``, ``flower fleet`` lists, shows,
answers and cancels them. The queue is procrastinate, a PostgreSQL job engine (docs/fleet.md).

For a front end, ``Fleet`` is the whole API, in and out in the types of ``model``:

    fleet = Fleet("postgresql://flower@db/agents")
    run_id = fleet.submit(RunRequest(repository="git@host:org/repo", ref="main", request="..."))
    for run in fleet.runs(ACTIVE): print(run.id, run.state_text(), run.question)
    fleet.answer(run_id, "hello")      # the waiting question, from anywhere
    fleet.cancel(run_id)
"""

from __future__ import annotations

from .client import Fleet, repository_of
from .model import (
    ACTIVE,
    STATES,
    Execution,
    FleetError,
    Note,
    Outcome,
    RunDetail,
    RunEvent,
    RunQuestion,
    RunRequest,
    RunState,
    RunSummary,
    branch_of,
)
from .records import FLEET_SCHEMA

__all__ = [
    "ACTIVE",
    "FLEET_SCHEMA",
    "STATES",
    "Execution",
    "Fleet",
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
    "repository_of",
]
