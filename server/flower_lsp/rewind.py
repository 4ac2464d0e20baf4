"""Rewind from the editor (flower.rewind): the folder's workspace and the step's conversation back
to the end of a judged round, with a preview first so the client can confirm the files that will
change. The same engine calls as `flower rewind N` (flower.core.rewind); the run's flow locks
refuse it while a run holds the folder, here or in another process."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import N_, _

from . import protocol as p
from . import wire
from .common import parse_args
from .host import Feature, FlowerServer

if TYPE_CHECKING:
    from flower.core.run_settings import RunSettings

NO_CHECKPOINTS = N_("{folder} 里还没有检查点:判定过至少一轮的运行才能退回")
BUSY = N_("{folder} 里有一个运行正在跑({holder}):等它停下(或先停掉它)再退回")
PREVIEW = N_(
    "退回到第 {round} 轮判定之后:改回 {changed} 个文件,删掉 {removed} 个,你自己改过的 {kept} 个保留原样"
)
PREVIEW_ALL = N_(
    "退回到第 {round} 轮判定之后:改回 {changed} 个文件,删掉 {removed} 个,你自己改过的 {restored} 个也退回"
)
DONE = N_("退回到第 {round} 轮判定之后了:改回 {changed} 个文件,删掉 {removed} 个{session}")
SESSION_CUT = N_(";{step} 的会话回到第 {round} 轮结束,Continue 从那里接着")
NO_SESSION = N_(";这一轮没有记下会话的位置,对话不退回")
FAILED = N_("退回不了:{error}")


class Rewinds(Feature):
    """The flower.rewind command."""

    def register(self) -> None:
        @self.server.command(p.REWIND)
        async def flower_rewind(ls: FlowerServer, *args: object) -> object:
            return await self._rewind_command(args)

    async def _rewind_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.RewindArgs, p.REWIND, args)
        folder = self.server.folder_arg(a.folder)
        settings = self.server.settings_for(folder)
        # checkpoints are files to compare and copy: off the loop, which keeps answering
        result = await asyncio.to_thread(rewind_folder, settings, a, folder.name)
        if not result.ok and not self.server.client.can.flower.results:
            self.server.client.show(result.message, types.MessageType.Warning)
        return wire.to_json(result)


def rewind_folder(settings: RunSettings, a: p.RewindArgs, name: str) -> p.RewindResult:
    """The rewind (or its preview) of one folder's run, as the command's result; never raises
    for what a person can cause (no such round, a run in progress, a disk that refuses)."""
    from flower.core.checkpoints import CheckpointError, Checkpoints
    from flower.core.rewind import hold_flows, plan, recover, rewind
    from flower.core.rundir import FlowBusy
    from flower.core.shared import shared_run

    store = Checkpoints(settings.run_dir, settings.workspace)
    try:
        if not store.all():
            return p.RewindResult(False, _(NO_CHECKPOINTS).format(folder=name), round=a.round)
        held = hold_flows(store, who="flower.rewind")
    except FlowBusy as busy:
        return p.RewindResult(
            False, _(BUSY).format(folder=name, holder=busy.holder.describe()), round=a.round
        )
    except (CheckpointError, OSError) as exc:
        return p.RewindResult(False, _(FAILED).format(error=exc), round=a.round)
    with held:
        try:
            store.shared = shared_run(settings.store, settings.workspace)  # its lineage counts
            recover(store)  # a rewind a kill left half done is finished first
            rounds = store.rounds()
            if a.preview:
                found = plan(store, a.round, restore_edits=a.restore_my_edits)
                report = None
            else:
                report = rewind(store, a.round, remark=a.remark, restore_edits=a.restore_my_edits)
                found = report.plan
        except (CheckpointError, ValueError, RuntimeError, OSError) as exc:
            return p.RewindResult(False, _(FAILED).format(error=exc), round=a.round, rounds=store.rounds())
    changed, removed = found.put_back, found.removed
    if report is None:
        template = PREVIEW_ALL if a.restore_my_edits else PREVIEW
        message = _(template).format(
            round=found.round,
            changed=len(changed),
            removed=len(removed),
            kept=len(found.kept),
            restored=len(found.restored_edits),
        )
    else:
        session = (
            _(SESSION_CUT).format(step=found.target.step, round=found.round)
            if report.session_cut
            else _(NO_SESSION)
        )
        message = _(DONE).format(
            round=found.round, changed=len(changed), removed=len(removed), session=session
        )
    return p.RewindResult(
        True,
        message,
        round=found.round,
        changed=changed,
        removed=removed,
        kept=list(found.kept),
        restored_edits=list(found.restored_edits),
        session_cut=bool(report and report.session_cut),
        rounds=rounds,
    )
