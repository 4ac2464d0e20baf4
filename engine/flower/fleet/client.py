"""The fleet from a person's side: submit a run, list and show runs, answer, cancel.

``Fleet(url)`` is the whole API a front end needs (the command line, the editor's view of the
fleet): typed values in (``RunRequest``), typed values out (``RunSummary``, ``RunDetail``), and a
``FleetError`` with one line for a person when something cannot be done. Nothing here runs a
run: workers do (``flower worker``, ``fleet/worker.py``).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from ..base.i18n import N_
from .model import ACTIVE, FleetError, Note, RunDetail, RunRequest, RunState, RunSummary
from .queue import TASK, engine_error, make_app
from .records import FLEET_SCHEMA, FleetBook, new_run_id

__all__ = ["Fleet", "repository_of"]

UNKNOWN_RUN = N_("没有这个 run:{run}(flower fleet 列出所有 run)")
NOTHING_WAITS = N_("run {run} 没有在等回答(现在:{state})")
EMPTY_ANSWER = N_("回答是空的:写上要告诉它的话")
ALREADY_OVER = N_("run {run} 已经结束({state}),没有可取消的")
EMPTY_REQUEST = N_("诉求是空的:写一句要它做什么")
CREDENTIAL_IN_URL = N_("仓库地址里带着凭证:去掉它;每个 worker 用自己的 git 凭证(ssh key、credential helper)")
NOT_QUEUED = N_("run 没能进队列:{error}")
NO_SUCH_PATH = N_("本地仓库 {path} 不存在")


def repository_of(text: str, *, cwd: Path | None = None) -> str:
    """The repository as every worker can name it: a URL as given (never with a credential in
    it), a local path made absolute (workers on this machine, or with the path shared)."""
    text = text.strip()
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme == "file":
            return text
        userinfo = parts.netloc.rpartition("@")[0]
        if ":" in userinfo or (userinfo and parts.scheme in ("http", "https")):
            raise FleetError(Note(CREDENTIAL_IN_URL))
        return text
    if ":" in text and "/" not in text.split(":", 1)[0] and not Path(text).exists():
        return text  # scp-like: user@host:path (an ssh user is no credential)
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    if not path.exists():
        raise FleetError(Note(NO_SUCH_PATH, {"path": str(path)}))
    return str(path.resolve())


class Fleet:
    """The fleet kept in one database (the same one as the shared session store, or any other)."""

    def __init__(self, url: str, *, schema: str = FLEET_SCHEMA) -> None:
        self.book = FleetBook(url, schema=schema)
        self.book.ensure()

    @property
    def where(self) -> str:
        return self.book.where

    def submit(self, request: RunRequest) -> str:
        """Queue a run; its id."""
        if not request.request.strip():
            raise FleetError(Note(EMPTY_REQUEST))
        run_id = new_run_id()
        self.book.add_run(run_id, request)
        app = make_app(self.book.url, self.book.schema, pool_size=2)
        try:
            with app.open():
                job = app.configure_task(TASK, lock=run_id, queueing_lock=run_id).defer(run_id=run_id)
        except Exception as exc:
            self.book.drop_run(run_id)
            raise FleetError(Note(NOT_QUEUED, {"error": engine_error(exc, self.book.url)})) from None
        self.book.set_job(run_id, int(job))
        return run_id

    def runs(self, states: tuple[RunState, ...] | None = None) -> list[RunSummary]:
        """Every run (or those in ``states``), oldest first."""
        return self.book.summaries(states)

    def show(self, run_id: str) -> RunDetail:
        detail = self.book.detail(run_id)
        if detail is None:
            raise FleetError(Note(UNKNOWN_RUN, {"run": run_id}))
        return detail

    def answer(self, run_id: str, text: str) -> str:
        """Answer the question the run waits on; the question answered. Whichever worker holds
        the run reads it from the database and the run goes on."""
        summary = self._summary(run_id)
        if not text.strip():
            raise FleetError(Note(EMPTY_ANSWER))
        question = self.book.answer(run_id, text.strip())
        if question is None:
            raise FleetError(Note(NOTHING_WAITS, {"run": run_id, "state": summary.state_text()}))
        return question

    def cancel(self, run_id: str) -> RunSummary:
        """Cancel a queued run, or stop a running one (its worker pushes what it has, then lets go)."""
        summary = self._summary(run_id)
        if summary.state not in ACTIVE:
            raise FleetError(Note(ALREADY_OVER, {"run": run_id, "state": summary.state_text()}))
        found = self.book.job_of(run_id)
        job = found[0] if found is not None else None
        if job is not None:
            app = make_app(self.book.url, self.book.schema, pool_size=2)
            try:
                with app.open():
                    # a queued job is cancelled outright; a running one is asked to abort, and its
                    # worker stops the flow
                    if not app.job_manager.cancel_job_by_id(job):
                        app.job_manager.cancel_job_by_id(job, abort=True)
            except Exception as exc:
                raise FleetError(Note(NOT_QUEUED, {"error": engine_error(exc, self.book.url)})) from None
        from .notes import CANCELLED

        self.book.set_state(run_id, "cancelled", Note(CANCELLED, {"by": ""}), unless=("finished", "failed"))
        self.book.note(run_id, "", Note(CANCELLED, {"by": ""}))
        return self._summary(run_id)

    def _summary(self, run_id: str) -> RunSummary:
        summary = self.book.summary(run_id)
        if summary is None:
            raise FleetError(Note(UNKNOWN_RUN, {"run": run_id}))
        return summary
