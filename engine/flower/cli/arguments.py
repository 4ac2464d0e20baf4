"""The command line: the parser with every flag, the default subcommand, cross-flag rules.

Nothing slow is imported here, so that building the parser, and with it `flower --help`,
stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .. import __version__
from ..base.i18n import N_, _

COMMANDS = ("go", "run", "once", "setup", "demo", "history", "rewind", "fork", "submit", "worker", "fleet")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
WAIT_HELP = N_("同一个 run 目录里已经有 flower 在跑这个流程时,排队等它跑完再开始(默认:说一句是谁在跑,就退出)")
SANDBOX_MODES = ("require", "auto", "off")  # flower.core.sandbox.MODES, kept import-free here


class _Parser(argparse.ArgumentParser):
    subcommands: dict[str, argparse.ArgumentParser]


def _positive_int(name: str) -> Callable[[str], int]:
    return _int_at_least(name, 1)


def _whole_number(name: str) -> Callable[[str], int]:
    return _int_at_least(name, 0)


def _int_at_least(name: str, low: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                _("{name} 要一个整数,不是 {text!r}").format(name=name, text=text)
            ) from None
        if value < low:
            message = _("{name} 至少是 1,不是 {value}") if low == 1 else _("{name} 不能是负数,不是 {value}")
            raise argparse.ArgumentTypeError(message.format(name=name, value=value))
        return value

    return convert


def _positive_float(name: str) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                _("{name} 要一个数,不是 {text!r}").format(name=name, text=text)
            ) from None
        if not value > 0:
            raise argparse.ArgumentTypeError(_("{name} 要大于 0,不是 {text}").format(name=name, text=text))
        return value

    return convert


def _add_global_flags(parser: argparse.ArgumentParser, *, copy: bool) -> None:
    """The global flags. Copies on subcommands default to SUPPRESS so that they may be
    written before or after the subcommand without one overriding the other."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if copy else value

    parser.add_argument(
        "-w", "--workspace", default=default("."), metavar="PATH", help=_("agent 的工作目录(默认当前目录)")
    )
    parser.add_argument(
        "-r",
        "--run-dir",
        default=default("runs"),
        metavar="DIR",
        help=_("会话库、运行清单、血缘放哪(默认 runs,相对当前目录,不是相对 -w)"),
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default(False),
        help=_("多显示:subagent 的话、所有工具结果、生效的凭证(打码)"),
    )
    parser.add_argument(
        "-W",
        "--workbench",
        action="store_true",
        default=default(False),
        help=_(
            "run / once:开工作台(流程没自带时放在 <run-dir>/workbench);go 总带着自己的工作台,不收这个开关"
        ),
    )
    parser.add_argument(
        "--store",
        default=default(None),
        metavar="URL",
        help=_(
            "会话库放哪:postgresql://用户:密码@主机/库 = 多台机器共用一个库,换台机器也能接着"
            "(默认:环境变量 FLOWER_STORE,没有就是 <run-dir>/sessions.db)"
        ),
    )
    parser.add_argument(
        "-T",
        "--trim",
        action="store_true",
        default=default(False),
        help=_("resume 时把旧的大工具结果换成文件指针(run / once 默认关;go 默认开,用 --no-trim 关)"),
    )


def _add_notify_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--notify",
        default=None,
        metavar="CMD",
        help=_(
            "在问你、跑完、停下、等额度时运行这个命令,事件以一个 JSON 对象从标准输入给它"
            "(按 shell 的规则拆词,不经过 shell;默认:环境变量 FLOWER_NOTIFY)"
        ),
    )


def _add_sandbox_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default="auto",
        help=_(
            "Bash 命令关进沙箱:require = 没有沙箱就不跑;auto = 能关就关,关不了说一句再照跑(默认);"
            "off = 不关(docs/safety.md)"
        ),
    )


def build_parser() -> _Parser:
    parser = _Parser(
        prog="flower",
        description="Long, unattended Claude agent work that survives anything. "
        + _('不写子命令就是 go:flower "帮我做一个 X"。'),
    )
    parser.add_argument("--version", action="version", version=f"flower {__version__}")
    _add_global_flags(parser, copy=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subs: dict[str, argparse.ArgumentParser] = {}

    go = sub.add_parser(
        "go",
        help=_("一键跑:问清需求 → 设定目标 → 派人干活,每轮有独立判定(不写子命令时的默认)"),
        epilog=_("全局开关(-w/-r/-v/-T)见 `flower --help`;-W 不适用于 go。"),
    )
    go.add_argument("ask", nargs="?", help=_("一句诉求;不给就在终端问你(管道时从标准输入读第一行)"))
    go.add_argument(
        "--asks", type=int, default=-1, metavar="N", help=_("提问额度:负数 = 不限(默认),0 = 不许问")
    )
    _add_run_options(go)
    go.add_argument(
        "--evidence",
        choices=("strict", "relaxed"),
        default=None,
        help=_(
            "判定者说达成时要不要证据:strict = 每条判定项都要有它真跑过的命令或真读过的文件撑着,"
            "否则按未达成处理;relaxed = 信它的话(默认:环境变量 FLOWER_EVIDENCE,没有就是 strict)"
        ),
    )
    go.add_argument("--no-goal", action="store_true", help=_("不设目标、不判定:干完就算完"))
    go.add_argument(
        "--isolate", action="store_true", help=_("每个 subagent 一份 git worktree;工作区必须是 git 仓库")
    )
    go.add_argument(
        "--window",
        type=_positive_int("--window"),
        default=None,
        metavar="N",
        help=_("模型上下文窗口(tokens);默认按模型名推断"),
    )
    go.add_argument("--no-handoff", action="store_true", help=_("关掉换代,退回 SDK 自带的 compact"))
    go.add_argument(
        "--new",
        action="store_true",
        help=_("不接上次:把 lineage.json + 需求.md + 目标.md 移进 notes/archive/<时间戳>/ 再重来"),
    )
    go.add_argument("--clarify-only", action="store_true", help=_("只做需求确认,不往下干"))
    go.add_argument("--no-trim", action="store_true", help=_("关掉裁剪(go 默认开)"))
    go.add_argument("--wait", action="store_true", help=_(WAIT_HELP))
    go.add_argument(
        "--no-handover",
        action="store_true",
        help=_("跑完不写给下一个工具的交接(默认写进工作区根目录 CLAUDE.md 和 AGENTS.md 的 flower 块)"),
    )
    _add_notify_flag(go)
    _add_global_flags(go, copy=True)
    subs["go"] = go

    run = sub.add_parser("run", help=_("运行一个自己写的 workflow:模块:属性 或 文件.py:属性"))
    run.add_argument(
        "target", help=_("例如 flows:main 或 flows.py:main;属性可以是 Workflow,或返回 Workflow 的函数")
    )
    run.add_argument("--wait", action="store_true", help=_(WAIT_HELP))
    _add_sandbox_flag(run)
    _add_notify_flag(run)
    _add_global_flags(run, copy=True)
    subs["run"] = run

    once = sub.add_parser("once", help=_("跑一次单 agent:没有流程、没有判定、没有血缘"))
    once.add_argument("prompt", help=_("给这个 agent 的一句话"))
    once.add_argument(
        "-i", "--instructions", default="", help=_("领域指令,追加在 Claude Code 原生系统提示之后")
    )
    once.add_argument(
        "-t", "--tools", default="Read,Glob,Grep", help=_("逗号分隔的工具白名单(默认 Read,Glob,Grep)")
    )
    once.add_argument(
        "-p",
        "--permission-mode",
        choices=PERMISSION_MODES,
        default="default",
        help=_("权限模式(默认 default)"),
    )
    once.add_argument(
        "-b",
        "--budget",
        type=_positive_float("--budget"),
        default=None,
        metavar="USD",
        help=_(
            "花费上限(美元):每轮模型回复后检查,超了就不再发下一次请求;那一轮已经发出的工具调用"
            "可能已经开始执行,它的进程随这次运行一起结束"
        ),
    )
    once.add_argument("--resume", default=None, metavar="SESSION_ID", help=_("接着一个已有的会话"))
    once.add_argument("--fork", action="store_true", help=_("分叉而不是接着(要和 --resume 一起用)"))
    _add_sandbox_flag(once)
    _add_notify_flag(once)
    _add_global_flags(once, copy=True)
    subs["once"] = once

    setup = sub.add_parser(
        "setup", help=_("配置凭证(API key / 网关),写进 <workspace>/.env,并发一个最小的请求验凭证能不能用")
    )
    setup.add_argument("--check", action="store_true", help=_("只检查现有配置,不问、不写"))
    setup.add_argument(
        "--user",
        action="store_true",
        help=_("存进你自己的 ~/.config/flower/.env(每个工作区都读它;工作区的 .env 优先)"),
    )
    _add_global_flags(setup, copy=True)
    subs["setup"] = setup

    demo = sub.add_parser("demo", help=_("离线跑一遍完整流程(flower.sim 扮演模型,不需要 API key)"))
    demo.add_argument("--keep", action="store_true", help=_("保留 demo 的临时目录并打印路径"))
    subs["demo"] = demo

    history = sub.add_parser(
        "history",
        help=_("这个文件夹的工作经过:每次唤醒、每一步、每轮判定、花费,停下的是哪一种、接着跑会怎样"),
    )
    _add_global_flags(history, copy=True)
    subs["history"] = history

    _add_rewind_commands(sub, subs)
    _add_fleet_commands(sub, subs)

    parser.subcommands = subs
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of a run that `go` and `submit` share (same names, same defaults)."""
    parser.add_argument(
        "--rounds",
        type=_positive_int("--rounds"),
        default=3,
        metavar="N",
        help=_("干活的总轮数上限,每轮后独立判定(默认 3)"),
    )
    parser.add_argument(
        "--judge-can-run", action="store_true", help=_("判定者可以跑命令(判得更硬,代价是它也能改工作区)")
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help=_("等人回答多久;0 或负数 = 全自动,提问立刻落空(默认 1800)"),
    )
    parser.add_argument(
        "--budget",
        type=_positive_float("--budget"),
        default=None,
        metavar="USD",
        help=_(
            "这次运行最多花多少美元(按 CLI 自己算的花费);到了就停在 stopped: budget,"
            "换个预算再跑 flower 就从那里接着"
        ),
    )
    parser.add_argument(
        "--round-budget",
        type=_positive_float("--round-budget"),
        default=None,
        metavar="USD",
        help=_("每一轮(干活加它的判定)最多花多少美元"),
    )
    parser.add_argument(
        "--stall-rounds",
        type=_whole_number("--stall-rounds"),
        default=None,
        metavar="N",
        help=_(
            "连续 N 轮没通过同样的判定项、工作区也没变,就停下来问你:接着做、修改目标还是停下"
            "(默认:环境变量 FLOWER_STALL_ROUNDS,没有就是 3;0 = 不问)"
        ),
    )
    _add_sandbox_flag(parser)


def _add_rewind_commands(
    sub: argparse._SubParsersAction[_Parser], subs: dict[str, argparse.ArgumentParser]
) -> None:
    """`rewind` and `fork`: back to a judged round, in place or as a new run (docs/rewind.md)."""
    rewind = sub.add_parser(
        "rewind",
        help=_("把工作区和对话一起退回到第 N 轮判定之后;不给 N 就列出能退回的轮"),
        epilog="docs/rewind.md",
    )
    rewind.add_argument("round", nargs="?", type=_positive_int("N"), metavar="N", help=_("第几轮"))
    rewind.add_argument(
        "--remark", default="", metavar="TEXT", help=_("退回后接着干时先对干活的会话说的一句话")
    )
    rewind.add_argument(
        "--restore-my-edits",
        action="store_true",
        help=_("你自己改过的文件也一起退回(默认保留并列出;改过的内容先存进检查点)"),
    )
    _add_global_flags(rewind, copy=True)
    subs["rewind"] = rewind

    fork = sub.add_parser(
        "fork",
        help=_("从第 N 轮判定之后分出一份新的运行(新的工作区和 run 目录),原来的运行不动"),
        epilog="docs/rewind.md",
    )
    fork.add_argument("round", type=_positive_int("N"), metavar="N", help=_("第几轮"))
    fork.add_argument(
        "--into",
        default=None,
        metavar="PATH",
        help=_("新工作区放哪(默认工作区旁边的 <名字>-fork-rN-<时间>;仓库时是一份 git worktree)"),
    )
    fork.add_argument(
        "--fork-run-dir",
        default=None,
        metavar="DIR",
        help=_("新 run 目录放哪(默认:run 目录在工作区里就在新工作区的同一位置,否则在原 run 目录旁边)"),
    )
    fork.add_argument("--remark", default="", metavar="TEXT", help=_("新运行接着干时先说的一句话"))
    _add_global_flags(fork, copy=True)
    subs["fork"] = fork


def _add_fleet_commands(
    sub: argparse._SubParsersAction[_Parser], subs: dict[str, argparse.ArgumentParser]
) -> None:
    """`submit`, `worker` and `fleet`: many runs on many machines through one database."""
    fleet_epilog = _("队列库:--store URL,或者环境变量 FLOWER_STORE(和共享会话库是同一个库)。docs/fleet.md")
    submit = sub.add_parser(
        "submit", help=_("把一个 run 放进队列:仓库 + 起点 + 诉求;打印 run 的 id"), epilog=fleet_epilog
    )
    submit.add_argument("repository", help=_("git 仓库:URL 或本地路径"))
    submit.add_argument("ask", help=_("一句诉求"))
    submit.add_argument(
        "--ref", default="HEAD", help=_("从哪个分支、标签或提交开始(默认 HEAD:仓库的默认分支)")
    )
    _add_run_options(submit)
    _add_global_flags(submit, copy=True)
    subs["submit"] = submit

    worker = sub.add_parser(
        "worker", help=_("在这台机器上从队列里取 run 来跑,结果推到分支 flower/<run-id>"), epilog=fleet_epilog
    )
    worker.add_argument(
        "--concurrency",
        type=_positive_int("--concurrency"),
        default=1,
        metavar="N",
        help=_("同时跑几个 run(默认 1)"),
    )
    worker.add_argument(
        "--takeover",
        type=_positive_float("--takeover"),
        default=60.0,
        metavar="SECONDS",
        help=_("一个 worker 停了心跳,多久之内它的 run 由别的 worker 接手(默认 60;整个队伍要用同一个值)"),
    )
    worker.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help=_("放检出、run 目录和补丁的地方(默认 ~/.local/share/flower/fleet)"),
    )
    worker.add_argument("--name", default="", help=_("这个 worker 的名字(默认 主机名-pid)"))
    _add_global_flags(worker, copy=True)
    subs["worker"] = worker

    fleet = sub.add_parser(
        "fleet", help=_("看队列里的 run:列出、看一个、回答它的提问、取消"), epilog=fleet_epilog
    )
    fleet.add_argument("--all", action="store_true", help=_("连结束了的 run 一起列出(默认只列没结束的)"))
    _add_global_flags(fleet, copy=True)
    actions = fleet.add_subparsers(dest="fleet_command", metavar="ACTION")
    show = actions.add_parser("show", help=_("一个 run 的经过:状态、谁在什么时候跑、每一行事件、提问"))
    show.add_argument("run", metavar="ID")
    answer = actions.add_parser("answer", help=_("回答 run 正在等的提问(哪台机器上的 worker 握着它都行)"))
    answer.add_argument("run", metavar="ID")
    answer.add_argument("text", metavar="TEXT", help=_("回答"))
    cancel = actions.add_parser("cancel", help=_("取消 run:排队的不再跑,在跑的推完文件后停下"))
    cancel.add_argument("run", metavar="ID")
    for action in (show, answer, cancel):
        _add_global_flags(action, copy=True)
    subs["fleet"] = fleet


def rewrite_argv(argv: list[str], parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Insert the default subcommand `go` where the person wrote none.

    Global flags (derived from the parser, with their values) are skipped; the first other
    token decides: a subcommand stays, anything else becomes the body of `go`.
    """
    parser = parser or build_parser()
    flags: set[str] = set()
    valued: set[str] = set()
    for action in parser._actions:
        if not action.option_strings:
            continue
        (flags if action.nargs == 0 else valued).update(action.option_strings)
    argv = list(argv)
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in flags:
            i += 1
        elif token in valued:
            i += 2
        elif token.startswith("--") and token.split("=", 1)[0] in valued:
            i += 1
        elif not token.startswith("--") and token[:2] in valued and len(token) > 2:
            i += 1  # -w/tmp: a short flag with its value attached
        else:
            break
    if i >= len(argv):
        return [*argv, "go"]
    if argv[i] in COMMANDS:
        return argv
    return [*argv[:i], "go", *argv[i:]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """argv -> arguments, with every cross-flag rule checked; a usage error exits 2."""
    parser = build_parser()
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(rewrite_argv(raw, parser))
    sub = parser.subcommands.get(args.command, parser)
    if args.command == "go":
        if args.workbench:
            sub.error(
                _(
                    "-W/--workbench 对 go 不起作用:"
                    "go 总带着自己的工作台(<workspace>/.flower,--isolate 时在仓库外)。去掉 -W。"
                )
            )
        if args.trim and args.no_trim:
            sub.error(_("-T/--trim 和 --no-trim 只能给一个"))
    if args.command == "once" and args.fork and not args.resume:
        sub.error(_("--fork 要和 --resume SESSION_ID 一起用:没有会话可分叉"))
    store = getattr(args, "store", None)
    if store:
        from ..stores.urls import StoreURLError, check_store_url

        try:
            check_store_url(store)
        except StoreURLError as exc:
            sub.error(_("--store:{error}").format(error=exc))
    return args
