"""The job engine: procrastinate, on the database the fleet already uses (docs/fleet.md says why).

One job per run, named ``flower.fleet.run`` with the run's id as its only argument. The job
carries the run's id as its ``lock`` (procrastinate never runs two jobs of one lock at once) and
as its ``queueing_lock`` (one waiting job per run). A run goes back to the queue by the engine's
own retry: at once when its worker hands it back (``HandedBack``), after a while when the work is
still held elsewhere (``HeldElsewhere``); any other way a job ends is final, and the run's state
says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..stores.urls import redact_text

if TYPE_CHECKING:
    from procrastinate import App
    from procrastinate.jobs import Job
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

__all__ = ["TASK", "HandedBack", "HeldElsewhere", "make_app", "retry_strategy"]

TASK = "flower.fleet.run"


class HandedBack(Exception):
    """The worker let go of the run (it is stopping): queue it again at once."""


class HeldElsewhere(Exception):
    """The run's work is still held by another process: try again after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        super().__init__(f"held elsewhere; again in {delay:.0f} s")
        self.delay = delay


def retry_strategy() -> BaseRetryStrategy:
    """The engine's retry rule for runs: only a handback or a busy claim goes back to the queue."""
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

    class RunRetry(BaseRetryStrategy):
        def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
            if isinstance(exception, HandedBack):
                return RetryDecision(retry_in={"seconds": 0})
            if isinstance(exception, HeldElsewhere):
                return RetryDecision(retry_in={"seconds": int(max(1.0, exception.delay))})
            return None

    return RunRetry()


def make_app(url: str, schema: str, *, pool_size: int = 4) -> App:
    """A procrastinate App whose connections find its tables in ``schema``."""
    from procrastinate import App, PsycopgConnector

    connector = PsycopgConnector(
        conninfo=url,
        kwargs={"options": f"-c search_path={schema}"},
        min_size=1,
        max_size=max(2, pool_size),
        name="flower-fleet",
    )
    return App(connector=connector)


def engine_error(exc: BaseException, url: str) -> str:
    """A job engine's or driver's error as one line, without the URL's password: the driver's
    own reason, not the engine's wrapper around it ("Database error.")."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return redact_text(str(exc).strip() or type(exc).__name__, url).splitlines()[0]
