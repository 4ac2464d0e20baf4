"""Fork from the editor (flower.fork): a new run from the end of a judged round, in a new
workspace and run folder, the folder's own run left untouched; with a preview first so the
client can confirm where it goes and what it holds. The same engine calls as `flower fork N`
(flower.core.fork); the run's flow locks refuse it while a run holds the folder, here or in
another process, so that the round's books are not copied while they are being written."""

from __future__ import annotations

import asyncio
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import N_, _

from . import protocol as p
from . import wire
from .common import parse_args
from .host import Feature, FlowerServer
from .rewind import FAILED, NO_CHECKPOINTS

if TYPE_CHECKING:
    from flower.core.run_settings import RunSettings

SHARED = N_("{folder} 的会话存在共享的会话库里:分叉现在只支持本地会话库(<run-dir>/sessions.db),请用退回")
PREVIEW = N_("从第 {round} 轮分出一份新的运行:新工作区 {workspace}{how}放进 {files} 个文件;原来的运行不动")
DONE = N_("从第 {round} 轮分出一份新的运行了:工作区 {workspace}{how},run 目录 {run_dir};原来的运行没动")
HOW_WORKTREE = N_("(git worktree)")


class Forks(Feature):
    """The flower.fork command."""

    def register(self) -> None:
        @self.server.command(p.FORK)
        async def flower_fork(ls: FlowerServer, *args: object) -> object:
            return await self._fork_command(args)

    async def _fork_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.ForkArgs, p.FORK, args)
        folder = self.server.folder_arg(a.folder)
        settings = self.server.settings_for(folder)
        # a fork copies files and books: off the loop, which keeps answering
        result = await asyncio.to_thread(fork_folder, settings, a, folder.name)
        if not result.ok and not self.server.client.can.flower.results:
            self.server.client.show(result.message, types.MessageType.Warning)
        return wire.to_json(result)


def fork_folder(settings: RunSettings, a: p.ForkArgs, name: str) -> p.ForkResult:
    """The fork (or its preview) of one folder's run, as the command's result; never raises for
    what a person can cause (no such round, a folder that is taken). A run in progress is no
    reason to refuse: the fork leaves the original alone."""
    from flower.core.checkpoints import CheckpointError, Checkpoints
    from flower.core.fork import fork, plan_fork
    from flower.core.rewind import hold_flows, recover
    from flower.core.rundir import FlowBusy
    from flower.core.shared import store_setting

    if store_setting(settings.store) is not None:
        return p.ForkResult(False, _(SHARED).format(folder=name), round=a.round)
    store = Checkpoints(settings.run_dir, settings.workspace)
    into = Path(a.into) if a.into else None
    try:
        if not store.all():
            return p.ForkResult(False, _(NO_CHECKPOINTS).format(folder=name), round=a.round)
        held: AbstractContextManager[object] = hold_flows(store, who="flower.fork")
        idle = True
    except FlowBusy:
        # the fork only reads the checkpoints, which a run only adds to: the original goes on
        # (as with `flower fork` beside a running `flower`), and a half-done rewind waits for it
        held, idle = nullcontext(), False
    except (CheckpointError, OSError) as exc:
        return p.ForkResult(False, _(FAILED).format(error=exc), round=a.round)
    with held:
        try:
            if idle:
                recover(store)  # a rewind a kill left half done is finished first
            rounds = store.rounds()
            found = plan_fork(store, a.round, into=into)
            done = None if a.preview else fork(store, a.round, into=into, remark=a.remark)
        except (CheckpointError, ValueError, RuntimeError, OSError) as exc:
            return p.ForkResult(False, _(FAILED).format(error=exc), round=a.round, rounds=store.rounds())
    if done is None:
        where, run_dir, worktree = found.workspace, found.run_dir, found.worktree
        session_cut, template = bool(found.target.at and found.target.session), PREVIEW
    else:
        where, run_dir, worktree = done.workspace, done.run_dir, done.worktree
        session_cut, template = done.session_cut, DONE
    how = _(HOW_WORKTREE) if worktree else ""
    message = _(template).format(
        round=found.round, workspace=where, how=how, files=len(found.files), run_dir=run_dir
    )
    return p.ForkResult(
        True,
        message,
        round=found.round,
        workspace=str(where),
        run_dir=str(run_dir),
        worktree=worktree,
        files=found.files,
        session_cut=session_cut,
        rounds=rounds,
    )
