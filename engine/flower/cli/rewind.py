"""`flower rewind N` and `flower fork N`: back to a judged round, in place or in a new run."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.i18n import N_, _
from .builders import store_of, workspace_of
from .problems import unwritable
from .terminal import Screen

if TYPE_CHECKING:  # types only: `flower --help` must not pay for these imports
    from ..core.checkpoints import Checkpoints

NO_CHECKPOINTS = N_(
    "x {run_dir} 里还没有检查点:判定过至少一轮的运行才能退回(检查点在每轮开始前和每次判定后记下)"
)
BUSY = N_("x 这里有一个 flower 正在跑:{holder}。退回会和它抢着改文件:等它停下(或按 Ctrl-C 停掉它)再退回。")
REWOUND = N_("<- 退回到第 {round} 轮判定之后:改回 {changed} 个文件,删掉 {removed} 个之后才有的文件")
KEPT = N_("  ! 你自己改过的 {n} 个文件保留原样:{names}(要一起退回就加 --restore-my-edits)")
RESTORED_EDITS = N_("  ! 你自己改过的 {n} 个文件也退回了:{names};改过的内容存在 {where}")
UNTOUCHED = N_("  . 检查点没存的 {n} 个文件没动:{names}")
SESSION_CUT = N_("  = {step} 的会话回到第 {round} 轮结束;之后的对话留在原会话里。接着干:flower{where}")
NO_SESSION = N_("  . 这一轮没有记下会话的位置:下次 flower 接着原会话(对话不退回)")
ROUNDS_HEAD = N_("这次运行判定过的轮(flower rewind N 退回到第 N 轮判定之后):")
ROUND_LINE = N_("  第 {round} 轮  {when}  {files} 个文件{current}")
CURRENT = N_("  <- 现在在这里")
FORKED = N_("<- 从第 {round} 轮分出一份新的运行:工作区 {workspace}{how},run 目录 {run_dir};原来的运行没动")
HOW_WORKTREE = N_("(git worktree)")
FORK_NEXT = N_("  = 接着干:cd {workspace} && flower{where}")
SHARED_FORK = N_(
    "x flower fork 现在只支持本地会话库(<run-dir>/sessions.db);--store / FLOWER_STORE 的运行请用 rewind"
)


def _names(paths: list[str], limit: int = 5) -> str:
    shown = _("、").join(paths[:limit])
    return shown + (_(" 等 {n} 个").format(n=len(paths)) if len(paths) > limit else "")


def _hold_flows(store: Checkpoints, screen: Screen) -> ExitStack | None:
    """Every flow of the run, claimed without waiting; None (said why) while one is running."""
    from ..core.rewind import hold_flows
    from ..core.rundir import FlowBusy

    try:
        return hold_flows(store, who="flower rewind")
    except FlowBusy as busy:
        screen.say(_(BUSY).format(holder=busy.holder.describe()), err=True)
        return None


def _where_flag(run_dir: Path, workspace: Path) -> str:
    """The flags `flower` needs to find this run again from the workspace ("" for the defaults)."""
    return "" if run_dir == workspace / "runs" else f" -r {run_dir}"


def rewind_command(args: argparse.Namespace, *, screen: Screen | None = None) -> int:
    from ..core.checkpoints import CheckpointError, Checkpoints
    from ..core.rewind import recover, rewind

    screen = screen or Screen()
    ws = workspace_of(args)
    run_dir = Path(args.run_dir).expanduser().resolve()
    store = Checkpoints(run_dir, ws)
    try:
        every = store.all()
    except CheckpointError as exc:
        screen.say(_("x {error}").format(error=exc), err=True)
        return 1
    if not every:
        screen.say(_(NO_CHECKPOINTS).format(run_dir=run_dir), err=True)
        return 1
    held = _hold_flows(store, screen)
    if held is None:
        return 1
    try:
        from ..core.shared import shared_run

        store.shared = shared_run(store_of(args), ws)  # its lineage is the one that counts
    except (ValueError, RuntimeError) as exc:
        held.close()
        screen.say(_("x 打不开会话库:{exc}").format(exc=exc), err=True)
        return 1
    with held:
        try:
            replayed = recover(store)
            if replayed is not None:
                screen.say(_("  x {line}").format(line=replayed), err=True)
            if args.round is None:
                return _list_rounds(store, screen)
            report = rewind(store, args.round, remark=args.remark or "", restore_edits=args.restore_my_edits)
        except CheckpointError as exc:
            screen.say(_("x {error}").format(error=exc), err=True)
            return 1
        except OSError as exc:
            screen.say(unwritable(exc, ws), err=True)
            return 1
    plan = report.plan
    removed, changed = plan.removed, plan.put_back
    screen.say(_(REWOUND).format(round=plan.round, changed=len(changed), removed=len(removed)))
    for rel in changed:
        screen.say(f"  ~ {rel}")
    for rel in removed:
        screen.say(f"  - {rel}")
    if plan.kept:
        screen.say(_(KEPT).format(n=len(plan.kept), names=_names(plan.kept)))
    if plan.restored_edits:
        screen.say(
            _(RESTORED_EDITS).format(
                n=len(plan.restored_edits), names=_names(plan.restored_edits), where=store.root / "blobs"
            )
        )
    if plan.untouched:
        screen.say(_(UNTOUCHED).format(n=len(plan.untouched), names=_names(plan.untouched)))
    if report.session_cut:
        screen.say(
            _(SESSION_CUT).format(step=plan.target.step, round=plan.round, where=_where_flag(run_dir, ws))
        )
    else:
        screen.say(_(NO_SESSION))
    return 0


def _list_rounds(store: Checkpoints, screen: Screen) -> int:
    import time

    head = store.head()
    current = head.round if head is not None else 0
    screen.say(_(ROUNDS_HEAD))
    for round_no in store.rounds():
        cp = store.at_round(round_no)
        if cp is None:  # its checkpoint went missing since the list was read: nothing to go back to
            continue
        when = time.strftime("%m-%d %H:%M:%S", time.localtime(cp.created))
        mark = _(CURRENT) if round_no == current else ""
        screen.say(_(ROUND_LINE).format(round=round_no, when=when, files=len(cp.files), current=mark))
    return 0


def fork_command(args: argparse.Namespace, *, screen: Screen | None = None) -> int:
    from ..core.checkpoints import CheckpointError, Checkpoints
    from ..core.fork import fork
    from ..core.shared import store_setting

    screen = screen or Screen()
    if store_setting(store_of(args)) is not None:
        screen.say(_(SHARED_FORK), err=True)
        return 1
    ws = workspace_of(args)
    run_dir = Path(args.run_dir).expanduser().resolve()
    store = Checkpoints(run_dir, ws)
    if not (store.root.is_dir() and store.head_seq() is not None):
        screen.say(_(NO_CHECKPOINTS).format(run_dir=run_dir), err=True)
        return 1
    try:
        done = fork(
            store,
            args.round,
            into=Path(args.into) if args.into else None,
            run_into=Path(args.fork_run_dir) if args.fork_run_dir else None,
            remark=args.remark or "",
        )
    except CheckpointError as exc:
        screen.say(_("x {error}").format(error=exc), err=True)
        return 1
    except OSError as exc:
        screen.say(unwritable(exc, ws), err=True)
        return 1
    screen.say(
        _(FORKED).format(
            round=done.round,
            workspace=done.workspace,
            how=_(HOW_WORKTREE) if done.worktree else "",
            run_dir=done.run_dir,
        )
    )
    screen.say(_(FORK_NEXT).format(workspace=done.workspace, where=_where_flag(done.run_dir, done.workspace)))
    return 0
