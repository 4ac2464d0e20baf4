"""The `flower` command: go (the default), run, once, setup and demo.

A reference front end of the interaction layer: it only ever sees `Event`s. Everything slow
(the SDK, the runtime, the workflow) is imported inside the commands, so that building the
parser, and with it `flower --help`, stays fast.

Terminal handling, in one place:
- stdout carries the event lines; stderr carries the live bottom line (status, or the input
  prompt while a question is open) when it is a terminal, and every warning/error.
- stdin is read all the time by one thread, not only while a question is open: what was typed
  during hours of work must never be swallowed as the answer to the next question.
- On a terminal that thread reads key by key with ISIG off, so Ctrl-C reaches flower as a key
  and never the Claude Code child (it shares our process group and would interrupt itself).
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import os
import re
import select
import signal
import sys
import threading
import time
import unicodedata
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from . import __version__

COMMANDS = ("go", "run", "once", "setup", "demo")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
WORK_STEP = "干活"  # the starter flow's work step: its session's context goes on the banner

PROMPT_FRESH = "要做什么? 一句话就够,回车开始(Ctrl-C 退出)"
PROMPT_WAKE = "接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)"
NEW_COMMAND = "/new"
EMPTY_REQUEST = '诉求是空的。直接 `flower` 然后按提示输入,或者 flower "帮我做一个 X"。'
CANCELLED = "已取消"
NOT_A_TERMINAL = "! 标准输入不是终端,没人能回答提问。想让它自己判断就加 --timeout 0"
ISOLATE_NEEDS_GIT = "--isolate 要求 {path} 是 git 仓库(每个 subagent 要分一份 worktree)。先 git init,或者去掉 --isolate。"
ABORTED_AT = "在步骤 '{step}' 中止"
CLOSING = "总花费 ${cost:.4f} · 清单 {manifest}"

ANSWER_PROMPT = "你的回答 (回车=跳过,让它自己判断) > "
IDLE_PROMPT = "(直接说 = 加需求,下个检查点送达) > "
WORDS_PROMPT = "> "
INTERRUPT_ASK = "想说点什么?(回车 = 不说,直接继续)"
INTERRUPT_NOTE = "  (说了话才打断这一轮,正在跑的 subagent 会丢掉半成品;再按一次 Ctrl-C = 退出)"
QUIT_NOTE = "! 退出。血缘已经落盘:同一目录再跑 flower 会接着上次。"
QUIT_ONCE = "! 退出。这一次没跑完;会话还在库里,可以 flower once --resume <会话> 接着。"
RECEIVED = "+ 收到 (它下次查收件箱时会看到;{where})"
RECEIVED_AMENDED = "已追加进确认书"
RECEIVED_NOWHERE = "没有确认书可落盘 —— 它可能活不过下一个步骤"

# A second Ctrl-C within this many seconds quits even if the first one's prompt was answered.
DOUBLE_PRESS_S = 2.0
# After asking the run to stop, give it this long to close its sessions before leaving anyway.
QUIT_GRACE_S = 10.0

_AUTH_ERROR = re.compile(r"\b401\b|invalid api key|invalid x-api-key|authentication|unauthorized|无效.{0,6}(key|token|密钥)", re.I)


# -- parsing -----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    subcommands: dict[str, argparse.ArgumentParser]


def _positive_int(name: str) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} 要一个整数,不是 {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} 至少是 1,不是 {value}")
        return value

    return convert


def _positive_float(name: str) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} 要一个数,不是 {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{name} 要大于 0,不是 {text}")
        return value

    return convert


def _add_global_flags(parser: argparse.ArgumentParser, *, copy: bool) -> None:
    """The five global flags. Copies on subcommands default to SUPPRESS so that they may be
    written before or after the subcommand without one overriding the other."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if copy else value

    parser.add_argument("-w", "--workspace", default=default("."), metavar="PATH", help="agent 的工作目录(默认当前目录)")
    parser.add_argument(
        "-r", "--run-dir", default=default("runs"), metavar="DIR",
        help="会话库、运行清单、血缘放哪(默认 runs,相对当前目录,不是相对 -w)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", default=default(False), help="多显示:subagent 的话、所有工具结果、生效的凭证(打码)")
    parser.add_argument(
        "-W", "--workbench", action="store_true", default=default(False),
        help="run / once:开工作台(流程没自带时放在 <run-dir>/workbench);go 总带着自己的工作台,不收这个开关",
    )
    parser.add_argument(
        "-T", "--trim", action="store_true", default=default(False),
        help="resume 时把旧的大工具结果换成文件指针(run / once 默认关;go 默认开,用 --no-trim 关)",
    )


def build_parser() -> _Parser:
    parser = _Parser(
        prog="flower",
        description="Long, unattended Claude agent work that survives anything. "
        '不写子命令就是 go:flower "帮我做一个 X"。',
    )
    parser.add_argument("--version", action="version", version=f"flower {__version__}")
    _add_global_flags(parser, copy=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subs: dict[str, argparse.ArgumentParser] = {}

    go = sub.add_parser(
        "go", help="一键跑:问清需求 → 设定目标 → 派人干活,每轮有独立判定(不写子命令时的默认)",
        epilog="全局开关(-w/-r/-v/-T)见 `flower --help`;-W 不适用于 go。",
    )
    go.add_argument("ask", nargs="?", help="一句诉求;不给就在终端问你(管道时从标准输入读第一行)")
    go.add_argument("--asks", type=int, default=-1, metavar="N", help="提问额度:负数 = 不限(默认),0 = 不许问")
    go.add_argument("--rounds", type=_positive_int("--rounds"), default=3, metavar="N", help="干活的总轮数上限,每轮后独立判定(默认 3)")
    go.add_argument("--no-goal", action="store_true", help="不设目标、不判定:干完就算完")
    go.add_argument("--judge-can-run", action="store_true", help="判定者可以跑命令(判得更硬,代价是它也能改工作区)")
    go.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS", help="等人回答多久;0 或负数 = 全自动,提问立刻落空(默认 1800)")
    go.add_argument("--isolate", action="store_true", help="每个 subagent 一份 git worktree;工作区必须是 git 仓库")
    go.add_argument("--window", type=_positive_int("--window"), default=None, metavar="N", help="模型上下文窗口(tokens);默认按模型名推断")
    go.add_argument("--no-handoff", action="store_true", help="关掉换代,退回 SDK 自带的 compact")
    go.add_argument("--new", action="store_true", help="不接上次:把 lineage.json + 需求.md + 目标.md 移进 notes/archive/<时间戳>/ 再重来")
    go.add_argument("--clarify-only", action="store_true", help="只做需求确认,不往下干")
    go.add_argument("--no-trim", action="store_true", help="关掉裁剪(go 默认开)")
    _add_global_flags(go, copy=True)
    subs["go"] = go

    run = sub.add_parser("run", help="运行一个自己写的 workflow:模块:属性 或 文件.py:属性")
    run.add_argument("target", help="例如 flows:main 或 flows.py:main;属性可以是 Workflow,或返回 Workflow 的函数")
    _add_global_flags(run, copy=True)
    subs["run"] = run

    once = sub.add_parser("once", help="跑一次单 agent:没有流程、没有判定、没有血缘")
    once.add_argument("prompt", help="给这个 agent 的一句话")
    once.add_argument("-i", "--instructions", default="", help="领域指令,追加在 Claude Code 原生系统提示之后")
    once.add_argument("-t", "--tools", default="Read,Glob,Grep", help="逗号分隔的工具白名单(默认 Read,Glob,Grep)")
    once.add_argument("-p", "--permission-mode", choices=PERMISSION_MODES, default="default", help="权限模式(默认 default)")
    once.add_argument("-b", "--budget", type=_positive_float("--budget"), default=None, metavar="USD", help="花费上限(美元),超了就停")
    once.add_argument("--resume", default=None, metavar="SESSION_ID", help="接着一个已有的会话")
    once.add_argument("--fork", action="store_true", help="分叉而不是接着(要和 --resume 一起用)")
    _add_global_flags(once, copy=True)
    subs["once"] = once

    setup = sub.add_parser("setup", help="配置凭证(API key / 网关),写进 <workspace>/.env,并探一下网关连不连得上")
    setup.add_argument("--check", action="store_true", help="只检查现有配置,不问、不写")
    _add_global_flags(setup, copy=True)
    subs["setup"] = setup

    demo = sub.add_parser("demo", help="离线跑一遍完整流程(flower.sim 扮演模型,不需要 API key)")
    demo.add_argument("--keep", action="store_true", help="保留 demo 的临时目录并打印路径")
    subs["demo"] = demo

    parser.subcommands = subs
    return parser


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
        return argv + ["go"]
    if argv[i] in COMMANDS:
        return argv
    return argv[:i] + ["go"] + argv[i:]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """argv -> arguments, with every cross-flag rule checked; a usage error exits 2."""
    parser = build_parser()
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(rewrite_argv(raw, parser))
    sub = parser.subcommands.get(args.command, parser)
    if args.command == "go":
        if args.workbench:
            sub.error("-W/--workbench 对 go 不起作用:go 总带着自己的工作台(<workspace>/.flower,--isolate 时在仓库外)。去掉 -W。")
        if args.trim and args.no_trim:
            sub.error("-T/--trim 和 --no-trim 只能给一个")
    if args.command == "once" and args.fork and not args.resume:
        sub.error("--fork 要和 --resume SESSION_ID 一起用:没有会话可分叉")
    return args


# -- what each command builds (kept separate so that tests can check each flag's effect) --


def workspace_of(args: argparse.Namespace) -> Path:
    ws = Path(args.workspace).expanduser().resolve()
    ws.mkdir(parents=True, exist_ok=True)
    return ws


def flow_options(args: argparse.Namespace, *, new: bool) -> dict[str, Any]:
    """The keyword arguments `go` passes to starter_flow."""
    return {
        "workspace": workspace_of(args),
        "run_dir": args.run_dir,
        "new": new,
        "isolate": args.isolate,
        "clarify_only": args.clarify_only,
        "goal": not args.no_goal,
        "rounds": args.rounds,
        "judge_can_run": args.judge_can_run,
        "max_asks": None if args.asks < 0 else args.asks,
        "timeout_s": max(0.0, args.timeout),
    }


def build_flow(args: argparse.Namespace, ask: str, *, new: bool) -> Any:
    from .workflow.starter import starter_flow

    return starter_flow(ask, **flow_options(args, new=new))


def runtime_options(args: argparse.Namespace, *, workbench: Any = None) -> dict[str, Any]:
    """The keyword arguments every command passes to Runtime."""
    from .core.agent import HandoffPolicy

    options: dict[str, Any] = {"workspace": workspace_of(args), "run_dir": args.run_dir}
    if args.command == "go":
        options["trim"] = not args.no_trim  # on by default on this path; -T only restates it
        options["workbench"] = workbench if workbench is not None else True
        handoff = HandoffPolicy(enabled=not args.no_handoff)
        if args.window is not None:
            handoff.window = args.window
        options["handoff"] = handoff
    else:
        options["trim"] = bool(args.trim)
        # the workflow's own workbench wins; -W opens one where the workflow brings none
        options["workbench"] = workbench if workbench is not None else bool(args.workbench)
    return options


def build_runtime(args: argparse.Namespace, *, workbench: Any = None) -> Any:
    from .core.runtime import Runtime

    return Runtime(**runtime_options(args, workbench=workbench))


def once_spec(args: argparse.Namespace) -> Any:
    from .core.agent import AgentSpec

    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    return AgentSpec(
        name="ad-hoc",
        instructions=args.instructions,
        allowed_tools=tools,
        permission_mode=args.permission_mode,
        max_budget_usd=args.budget,
    )


def once_call(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for Runtime.run on the `once` path."""
    return {"step_name": "ad-hoc", "resume": args.resume, "fork": bool(args.fork and args.resume)}


class TargetError(Exception):
    """`flower run <target>` cannot be loaded; the message says why."""


def load_target(target: str, *, cwd: Path | None = None) -> Any:
    """`module:attr` or `path/to/file.py:attr` -> a Workflow (a callable is called once)."""
    import importlib
    import importlib.util
    import inspect

    if ":" not in target:
        raise TargetError("需要 模块:属性 形式,例如 flows:main")
    module_name, attr = target.rsplit(":", 1)
    cwd = cwd or Path.cwd()
    looks_like_file = module_name.endswith(".py") or "/" in module_name or os.sep in module_name
    if looks_like_file:
        path = (cwd / module_name).resolve()
        if not path.is_file():
            raise TargetError(f"找不到 {module_name}(当前目录 {cwd})。给的是文件路径就要能对上;要按模块名导入就别带 .py")
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise TargetError(f"导入 '{module_name}' 失败:不是能导入的 Python 文件")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise TargetError(f"导入 '{module_name}' 失败:{exc}") from exc
    else:
        if str(cwd) not in sys.path:
            sys.path.insert(0, str(cwd))
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise TargetError(f"导入 '{module_name}' 失败:{exc}") from exc
    if not hasattr(module, attr):
        raise TargetError(f"'{module_name}' 里没有 '{attr}'")
    found = getattr(module, attr)
    if callable(found) and not (hasattr(found, "steps") and hasattr(found, "run")):
        found = found()
        if inspect.isawaitable(found):
            found = asyncio.run(_await(found))
    if not (hasattr(found, "steps") and callable(getattr(found, "run", None))):
        raise TargetError(f"'{target}' 不是 Workflow,也不是返回 Workflow 的函数(拿到的是 {type(found).__name__})")
    return found


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


# -- small text helpers ----------------------------------------------------------------

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def sanitize(text: str) -> str:
    """Model and tool text may carry escape sequences (clear screen, move cursor): drop them."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text.replace("\r\n", "\n")))


def columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else (0 if unicodedata.combining(c) else 1) for c in text)


def fit(text: str, width: int) -> str:
    """The head of `text` that fits in `width` terminal columns (wide characters count 2)."""
    out, used = [], 0
    for c in text:
        w = columns(c)
        if used + w > width:
            break
        out.append(c)
        used += w
    return "".join(out)


def fit_tail(text: str, width: int) -> str:
    """The tail that fits: while typing, the end of the line is what matters."""
    return fit(text[::-1], width)[::-1]


def format_duration(seconds: float) -> str:
    """Short runs in seconds with a decimal (a 3-second run is not "0:00"), longer as m:ss."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def mask(secret: str) -> str:
    """Never show a credential: the first 4 characters at most, and its length."""
    secret = secret or ""
    head = secret[:4] if len(secret) >= 12 else ""
    return f"{head}***(共 {len(secret)} 位)"


def _tokens(n: int) -> str:
    from .core.events import format_tokens

    return format_tokens(n)


def _first_line(text: str, limit: int = 160) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def _label(step: str) -> str:
    """A manifest step name as people read it: 干活#round2 -> 干活 第 2 轮, 干活·判定#1 -> 干活·判定 第 1 轮."""
    m = re.fullmatch(r"(.+?)#round(\d+)", step)
    if m:
        return f"{m.group(1)} 第 {m.group(2)} 轮"
    m = re.fullmatch(r"(.+?)#retry(\d+)", step)
    if m:
        return f"{m.group(1)} 重试 {m.group(2)}"
    m = re.fullmatch(r"(.+?·判定)#(\d+)", step)
    if m:
        return f"{m.group(1)} 第 {m.group(2)} 轮"
    return step


# -- the screen ----------------------------------------------------------------------------


class Screen:
    """All output goes through here. With a live terminal the last line belongs to flower:
    the open input prompt (with what was typed so far) or else the status line; every event
    line is written above it, so the prompt never scrolls away."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, live: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.live = _isatty(self.err) if live is None else live
        self._lock = threading.RLock()
        self._status = ""
        self._prompt: str | None = None
        self._typed = ""
        self._shown = False

    def say(self, text: str = "", *, err: bool = False) -> None:
        stream = self.err if err else self.out
        with self._lock:
            self._clear()
            for line in sanitize(text).split("\n"):
                stream.write(line + "\n")
            stream.flush()
            self._draw()

    def status(self, text: str) -> None:
        with self._lock:
            self._status = text
            if self.live:
                self._clear()
                self._draw()

    def open_prompt(self, label: str) -> None:
        with self._lock:
            if self._prompt == label:
                return
            self._prompt = label
            if self.live:
                self._clear()
                self._draw()
            else:
                self.out.write(label.rstrip() + "\n")
                self.out.flush()

    def typed(self, text: str) -> None:
        with self._lock:
            self._typed = text
            if self.live:
                self._clear()
                self._draw()

    def close_prompt(self, *, keep: str | None = None) -> None:
        """Remove the prompt; `keep` leaves the submitted line on screen above."""
        with self._lock:
            label = self._prompt
            self._prompt, self._typed = None, ""
            if self.live:
                self._clear()
                if keep is not None and label is not None:
                    self.err.write(sanitize(label + keep) + "\n")
                self._draw()

    @property
    def prompt(self) -> str | None:
        return self._prompt

    def _width(self) -> int:
        try:
            return max(20, os.get_terminal_size(self.err.fileno()).columns - 1)
        except (OSError, ValueError, AttributeError):
            return 100

    def _clear(self) -> None:
        if self.live and self._shown:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self._shown = False

    def _draw(self) -> None:
        if not self.live:
            return
        width = self._width()
        if self._prompt is not None:
            room = max(4, width - columns(self._prompt))
            line = fit(self._prompt, width) + fit_tail(sanitize(self._typed), room)
        elif self._status:
            line = fit(self._status, width)
        else:
            return
        self.err.write(line)
        self.err.flush()
        self._shown = True


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# -- reading the person ------------------------------------------------------------------


class LineSource:
    """stdin at the file-descriptor level, with our own buffer: the first line (the request
    in a pipe) and every later line (answers, words) come out of the same buffer, so nothing
    read ahead is ever lost in a Python-level buffer."""

    def __init__(self, stream: Any = None) -> None:
        stream = sys.stdin if stream is None else stream
        self.stream = stream  # keep it alive: its file descriptor is ours only while it lives
        self.tty = _isatty(stream)
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, ValueError, OSError):
            self.fd = None
        self._buf = b""
        self.closed = self.fd is None

    def read_line(self, timeout: float | None = None, stop: threading.Event | None = None) -> str | None:
        """One line without its newline; None at end of input; "" may also mean a blank line.

        With `timeout`, returns None when nothing complete arrived in time and the stream is
        still open (check `closed` to tell the two apart)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                return line.rstrip(b"\r").decode("utf-8", "replace")
            if self.closed:
                if self._buf:
                    line, self._buf = self._buf, b""
                    return line.decode("utf-8", "replace")
                return None
            wait = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
            if stop is not None and stop.is_set():
                return None
            if not self._readable(wait):
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            self._fill()

    def read_bytes(self, wait: float) -> bytes | None:
        """What is there now (after at most `wait` s); b"" if nothing yet, None at end of input."""
        if self._buf:
            data, self._buf = self._buf, b""
            return data
        if self.closed:
            return None
        if not self._readable(wait):
            return b""
        self._fill()
        if self._buf:
            data, self._buf = self._buf, b""
            return data
        return None if self.closed else b""

    def _readable(self, wait: float) -> bool:
        assert self.fd is not None
        try:
            ready, _, _ = select.select([self.fd], [], [], wait)
        except (OSError, ValueError):
            return True  # not selectable (rare): fall back to a blocking read
        return bool(ready)

    def _fill(self) -> None:
        assert self.fd is not None
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._buf += data
        else:
            self.closed = True


class LineEditor:
    """Key-by-key line editing for a terminal in non-canonical mode; touches no terminal.

    feed() returns ("line", text), ("ctrl_c", ""), ("eof", "") or None."""

    def __init__(self) -> None:
        self.buffer = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._escape = ""

    def feed(self, data: bytes) -> list[tuple[str, str]]:
        actions: list[tuple[str, str]] = []
        for ch in self._decoder.decode(data):
            action = self._key(ch)
            if action is not None:
                actions.append(action)
        return actions

    def _key(self, ch: str) -> tuple[str, str] | None:
        if self._escape:
            self._escape += ch
            # ESC [ ... final byte, ESC O x, or a lone two-character sequence
            if len(self._escape) == 2 and ch not in "[O":
                self._escape = ""
            elif len(self._escape) > 2 and ("@" <= ch <= "~"):
                self._escape = ""
            return None
        if ch == "\x1b":
            self._escape = ch
            return None
        if ch in "\r\n":
            line, self.buffer = self.buffer, ""
            return ("line", line)
        if ch == "\x03":
            self.buffer = ""
            return ("ctrl_c", "")
        if ch == "\x04":
            return ("eof", "") if not self.buffer else None
        if ch in "\x7f\x08":
            self.buffer = self.buffer[:-1]
            return ("edit", self.buffer)
        if ch == "\x15":
            self.buffer = ""
            return ("edit", self.buffer)
        if ch == "\t":
            ch = " "
        if unicodedata.category(ch) in ("Cc", "Cf"):
            return None
        self.buffer += ch
        return ("edit", self.buffer)


class _RawTerminal:
    """No echo, no line buffering, no signals from keys: Ctrl-C arrives as a byte."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: Any = None

    def enter(self) -> bool:
        try:
            import termios

            self._saved = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
            mode[6][termios.VMIN] = 1
            mode[6][termios.VTIME] = 0
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)
            return True
        except Exception:  # no termios, not a terminal: stay in line mode
            self._saved = None
            return False

    def restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is None:
            return
        try:
            import termios

            termios.tcsetattr(self.fd, termios.TCSANOW, saved)
        except Exception:
            pass


def ask_for_request(source: LineSource, screen: Screen, *, waking: bool) -> tuple[str, bool] | None:
    """The launch prompt. Returns (request, typed /new), or None when the person cancelled.

    It reads stdin, not the shell: quotes, spaces and exclamation marks can be typed as is."""
    header = PROMPT_WAKE if waking else PROMPT_FRESH
    new = False
    while True:
        if source.tty:
            try:
                screen.say(header)
                line: str | None = input("> ")
            except (KeyboardInterrupt, EOFError):  # also a Ctrl-C between the header and the prompt
                screen.say("")
                return None
        else:
            # a pipe: no header, just the first line
            line = source.read_line()
            if line is None:
                return ("", new)
        text = line.strip()
        if text == NEW_COMMAND and not new:
            new = True
            header = PROMPT_FRESH
            continue
        return (text, new)


# -- rendering events ----------------------------------------------------------------------


class Render:
    """Event -> lines of text. Pure: no terminal, no threads; the Driver prints the lines."""

    def __init__(self, *, verbose: bool = False, started: float | None = None) -> None:
        self.verbose = verbose
        self.started = time.monotonic() if started is None else started
        self._seen_asks: set[str] = set()

    def elapsed(self) -> str:
        return format_duration(time.monotonic() - self.started)

    def lines(self, ev: Any) -> list[str]:
        kind, p = ev.kind, ev.payload or {}
        sub = bool(p.get("subagent"))
        bar = "  | " if sub else "  "
        if kind == "step":
            from .workflow.starter import step_line

            return ["", step_line(ev.text, p.get("index", 0), p.get("total", 0), resumed=bool(p.get("resumed")), woke=int(p.get("woke") or 0))]
        if kind == "text":
            if sub and not self.verbose:
                return []
            return [bar + line for line in ev.text.strip().splitlines() if line.strip()]
        if kind == "thinking":
            if sub and not self.verbose:
                return []
            return [f"{bar}~ {_first_line(ev.text, 200)}"] if ev.text.strip() else []
        if kind == "prompt":
            return [f"{bar}< {_first_line(ev.text, 200)}"] if self.verbose and ev.text.strip() else []
        if kind == "tool_call":
            return self._tool_call(ev, bar)
        if kind == "tool_result":
            if p.get("is_error"):
                return [f"{bar}x {_first_line(ev.text, 200) or '工具出错'}"]
            return [f"{bar}- {_first_line(ev.text, 200)}"] if self.verbose and ev.text.strip() else []
        if kind == "result":
            if p.get("is_error"):
                return [f"  x 这一轮没跑完({ev.text})"]
            cost = p.get("cost_usd") or 0.0
            return [f"  + 完成 {p.get('num_turns') or 0} 轮 · ${cost:.4f} · 用时 {self.elapsed()}"]
        if kind == "error":
            return [f"  x {_first_line(ev.text, 200)}"]
        if kind == "reset":
            return [f"  # {ev.text}"]
        if kind == "retry":
            return [f"  ~ {ev.text}"]
        if kind == "handoff":
            return self._handoff(ev)
        if kind == "task":
            return self._task(ev)
        if kind == "ask":
            return self._mail(ev) if p.get("kind") == "mail" else self._ask(ev)
        return []

    def _tool_call(self, ev: Any, bar: str) -> list[str]:
        tool, data = ev.tool, ev.payload.get("input") or {}
        if tool.startswith("mcp__human__ask"):
            return []  # the ask event itself shows the question
        if tool.startswith("mcp__human__inbox"):
            return [f"{bar}* 查收件箱"]
        if tool in ("Agent", "Task"):
            who = data.get("subagent_type") or "agent"
            what = data.get("description") or _first_line(str(data.get("prompt", "")), 80)
            return [f"{bar}> 派人 {who}:{what}"]
        return [f"{bar}* {tool} {ev.text}".rstrip()]

    def _handoff(self, ev: Any) -> list[str]:
        p = ev.payload
        phase = p.get("phase")
        if phase == "done":
            lines = []
            if p.get("degraded"):
                lines.append("  x 交接没写成,用了降级版本 —— 接手的人会自己去现场看")
            if p.get("path"):
                lines.append(f"<- 交接写在 {p['path']}")
            lines.append("<- 新会话接手,上下文从头开始")
            return lines
        return [f"  # {ev.text}"]

    def _task(self, ev: Any) -> list[str]:
        p = ev.payload
        if p.get("kind") == "verdict":
            state, n = p.get("state") or "", p.get("round")
            failed = [f"     - {c}" for c in p.get("failed") or []]
            reason = _first_line(p.get("reason") or "", 200)
            if state == "achieved":
                return [f"  + 判定第 {n} 轮:达成" + (f" —— {reason}" if reason else "")]
            if state == "unreachable":
                return [f"  ! 判定第 {n} 轮:这个环境里验证不了 —— {reason}", *failed]
            head = "未达成" if state == "not_yet" else "没给出明确结论,按未达成处理"
            return [f"  ~ 判定第 {n} 轮:{head},打回去接着干" + (f" —— {reason}" if reason else ""), *failed]
        if "unverifiable" in p:
            items = [f"     - {c}" for c in p.get("unverifiable") or []]
            return [f"  ! {ev.text or '有判定项在这个环境里验证不了'}", *items]
        return [f"  # {ev.text}"] if self.verbose and ev.text else []

    def _ask(self, ev: Any) -> list[str]:
        p = ev.payload
        state, ask_id = p.get("state"), p.get("id")
        lines: list[str] = []
        if state == "asked" or ask_id not in self._seen_asks:
            # a question settled at once (fully automatic, no quota) still shows what was asked
            self._seen_asks.add(ask_id)
            lines.append(f"  ? {ev.text}")
            lines += [f"     {i}) {o}" for i, o in enumerate(p.get("options") or [], 1)]
            if state == "asked" and isinstance(p.get("remaining"), int) and p["remaining"] >= 0:
                lines.append(f"     (还能问 {p['remaining']} 次)")
        if state == "answered":
            lines.append(f"  + {p.get('answer', '')}")
        elif state == "timeout":
            lines.append("  ! 无人应答 —— 它会自己判断,把假设记进「未知与假设」")
        elif state == "over_budget":
            lines.append("  ! 提问额度用完")
        elif state == "declined":
            lines.append("  . 已跳过")
        elif state == "invalid":
            lines.append("  x 问题是空的")
        return lines

    def _mail(self, ev: Any) -> list[str]:
        p = ev.payload
        if p.get("state") == "queued":
            return [RECEIVED.format(where=RECEIVED_AMENDED if p.get("amended") else RECEIVED_NOWHERE)]
        if p.get("state") == "delivered":
            return [f"  + 它看到了你补充的话:{_first_line(ev.text, 120)}"]
        return []


# -- driving one run -------------------------------------------------------------------------


class Driver:
    """Runs one piece of work on the event loop and connects the person to it: event lines,
    the status line, answers to questions, words on Ctrl-C, quitting, signal rescue."""

    def __init__(
        self,
        runtime: Any,
        *,
        screen: Screen,
        source: LineSource,
        channel: Any = None,
        verbose: bool = False,
    ) -> None:
        self.rt = runtime
        self.screen = screen
        self.source = source
        self.channel = channel
        self.render = Render(verbose=verbose)
        self.quit_requested = False
        self._lock = threading.RLock()
        self._awaiting_words = False
        self._last_ctrl_c = 0.0
        self._interrupting = False
        self._typed = ""  # what is typed but not yet entered (key-by-key mode only)
        self._stop = threading.Event()
        self._raw: _RawTerminal | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._work: asyncio.Future[Any] | None = None
        self._step = ""
        self._context = ""
        self._results_seen = 0
        self._attempt_base = 0.0
        self._attempt_cost = 0.0

    # -- events ------------------------------------------------------------------------
    def on_event(self, ev: Any) -> None:
        try:
            self._on_event(ev)
        except Exception as exc:  # a broken renderer must never stop hours of work
            self.screen.say(f"  x (显示出错:{type(exc).__name__}: {exc})", err=True)

    def _on_event(self, ev: Any) -> None:
        self._track_cost(ev)
        p = ev.payload or {}
        if ev.kind == "step":
            self._step = ev.text
        if ev.kind == "system" and p.get("subtype") == "context":
            self._step = _label(str(p.get("step") or self._step))
            self._context = f"上下文 {_tokens(int(p.get('used') or 0))}/{_tokens(int(p.get('window') or 0))}"
        if ev.kind == "result" and self._interrupting:
            self._interrupting = False
            lines = ["  ! 这一轮被你打断了,带着你的话接着跑"]
        elif ev.kind == "tool_result" and self._interrupting and p.get("is_error"):
            lines = ["  . (打断了:这个工具调用没跑完)"]
        else:
            lines = self.render.lines(ev)
        for line in lines:
            self.screen.say(line)
        if ev.kind == "result" and not self.screen.live:
            self.screen.say(f"  {self.status_text()}")
        if ev.kind == "ask" and p.get("kind") != "mail":
            if p.get("state") == "asked" and self.source.closed and self.channel is not None:
                # nobody can answer any more: skip at once instead of waiting out the timeout
                self.channel.decline(p.get("id"), "标准输入已关闭")
            self._refresh_prompt()
        self.screen.status(self.status_text())

    def _track_cost(self, ev: Any) -> None:
        done = len(getattr(self.rt, "results", []))
        if done != self._results_seen:
            self._results_seen, self._attempt_base, self._attempt_cost = done, 0.0, 0.0
        if ev.kind == "system" and ev.text == "init":
            # a new CLI process: its reported total starts from zero again
            self._attempt_base += self._attempt_cost
            self._attempt_cost = 0.0
        elif ev.kind == "result":
            cost = ev.payload.get("cost_usd")
            if isinstance(cost, (int, float)):
                self._attempt_cost = max(self._attempt_cost, float(cost))

    def cost_so_far(self) -> float:
        if len(getattr(self.rt, "results", [])) != self._results_seen:
            return round(self.rt.total_cost(), 4)  # the in-flight step has landed in the books
        return round(self.rt.total_cost() + self._attempt_base + self._attempt_cost, 4)

    def status_text(self) -> str:
        parts = [p for p in (self._step, self._context) if p]
        parts.append(f"累计 ${self.cost_so_far():.2f}")
        parts.append(self.render.elapsed())
        return "- " + " · ".join(parts)

    # -- the person ----------------------------------------------------------------------
    def _pending(self) -> list[Any]:
        if self.channel is None:
            return []
        try:
            return list(self.channel.pending())
        except Exception:
            return []

    def _refresh_prompt(self, typed: str | None = None) -> None:
        """Show the prompt that fits now; half-typed text is kept and redrawn with it."""
        with self._lock:
            if typed is not None:
                self._typed = typed
            if self._awaiting_words:
                label = WORDS_PROMPT
            elif self._pending():
                label = ANSWER_PROMPT
            elif self._typed:
                label = IDLE_PROMPT
            else:
                label = None
            shown = self._typed
        if label is None:
            if self.screen.prompt is not None:
                self.screen.close_prompt()
            return
        self.screen.open_prompt(label)
        self.screen.typed(shown)

    def handle_line(self, text: str) -> None:
        """One line from the person (any thread): words after Ctrl-C, an answer, or the inbox."""
        label = self.screen.prompt
        self.screen.close_prompt(keep=text if label is not None else None)
        text = text.strip()
        with self._lock:
            self._typed = ""
        with self._lock:
            words = self._awaiting_words
            self._awaiting_words = False
        if words:
            if text:
                self._interrupting = True
                self.rt.interrupt(text)
                self.screen.say(f"! 打断这一轮,带上你的话:{text}")
            else:
                self.screen.say(". 不说话,接着跑")
            self._refresh_prompt()
            return
        pending = self._pending()
        if pending:
            ask = pending[0]
            if not text:
                self.channel.decline(ask.id, "")
            else:
                options = list(getattr(ask, "options", []) or [])
                if text.isdigit() and 1 <= int(text) <= len(options):
                    text = options[int(text) - 1]
                self.channel.answer(ask.id, text)
        elif text:
            if self.channel is not None:
                self.channel.send(text)  # the receipt comes back as a "mail" event
            else:
                self.screen.say("  . 这个流程没有收件箱,这句话没送出去;想打断它就按 Ctrl-C")
        self._refresh_prompt()

    def handle_eof(self) -> None:
        """stdin closed: nobody can answer; whatever is waiting is skipped, not waited out."""
        for ask in self._pending():
            self.channel.decline(ask.id, "标准输入已关闭")
        with self._lock:
            self._awaiting_words = False
        self._refresh_prompt()

    def ctrl_c(self) -> None:
        """Once: ask for words (they interrupt the round). Twice, or again while asked: quit."""
        now = time.monotonic()
        with self._lock:
            again = self._awaiting_words or (now - self._last_ctrl_c) < DOUBLE_PRESS_S
            self._last_ctrl_c = now
            if not again:
                self._awaiting_words = True
        if again:
            self.quit()
            return
        self.screen.say("")
        self.screen.say(f"! {INTERRUPT_ASK}")
        self.screen.say(INTERRUPT_NOTE)
        waiting = len(self._pending())
        if waiting:
            self.screen.say(f"  (有 {waiting} 个提问还等着,打断不影响它们)")
        if self.source.closed:
            self.screen.say("  (标准输入已关闭,没法说话:接着跑)")
        self._refresh_prompt()

    def quit(self) -> None:
        loop, work = self._loop, self._work
        if self.quit_requested:
            return
        self.quit_requested = True
        if loop is None or work is None:
            return

        def cancel() -> None:
            if not work.done():
                work.cancel()

        try:
            loop.call_soon_threadsafe(cancel)
        except RuntimeError:
            pass
        # the SDK normally closes its CLI child within a second; never hang the person
        threading.Thread(target=self._watchdog, name="flower-quit", daemon=True).start()

    def _watchdog(self) -> None:
        time.sleep(QUIT_GRACE_S)
        self.restore_terminal()
        try:
            self.screen.say(QUIT_NOTE, err=True)
        finally:
            os._exit(130)

    # -- the reader thread ------------------------------------------------------------------
    def _reader(self) -> None:
        editor = LineEditor() if self._raw is not None else None
        while not self._stop.is_set():
            if editor is None:
                line = self.source.read_line(timeout=0.2, stop=self._stop)
                if line is None:
                    if self.source.closed:
                        self.handle_eof()
                        return
                    continue
                self.handle_line(line)
                continue
            data = self.source.read_bytes(0.2)
            if data is None:
                self.handle_eof()
                return
            for action, text in editor.feed(data):
                if action == "line":
                    self.handle_line(text)
                elif action == "ctrl_c":
                    self.ctrl_c()
                elif action == "eof":
                    self.source.closed = True
                    self.handle_eof()
                    return
                elif action == "edit":
                    self._refresh_prompt(typed=text)

    def restore_terminal(self) -> None:
        raw = self._raw
        if raw is not None:
            raw.restore()

    # -- running -----------------------------------------------------------------------------
    async def run(self, work: Callable[[], Awaitable[Any]]) -> tuple[Any, int | None]:
        """Run `work()`; (its value, None), or (None, 130) when the person quit."""
        from .core.runtime import rescue_on_signals

        self._loop = loop = asyncio.get_running_loop()
        self._work = asyncio.ensure_future(work())
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
        rescue_on_signals(self.rt)
        for sig in previous:
            rescue = signal.getsignal(sig)

            def handler(signum: int, frame: Any, rescue: Any = rescue) -> None:
                self.restore_terminal()  # the signal's default action ends us: leave a sane terminal
                rescue(signum, frame)

            signal.signal(sig, handler)
        try:
            loop.add_signal_handler(signal.SIGINT, self.ctrl_c)
        except (NotImplementedError, RuntimeError):
            pass
        if self.source.tty and self.source.fd is not None and _isatty(self.screen.err):
            raw = _RawTerminal(self.source.fd)
            # before the thread starts: keys typed in between would be swallowed by line mode
            if raw.enter():
                self._raw = raw
        reader = None
        if not self.source.closed:
            reader = threading.Thread(target=self._reader, name="flower-stdin", daemon=True)
            reader.start()
        try:
            return await self._work, None
        except asyncio.CancelledError:
            if self.quit_requested:
                return None, 130
            raise
        finally:
            self._stop.set()
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError):
                pass
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.restore_terminal()
            self.screen.close_prompt()
            self.screen.status("")
            if reader is not None:
                reader.join(1.0)


def _drive(runtime: Any, work: Callable[[Driver], Awaitable[Any]], *, screen: Screen, source: LineSource, channel: Any, verbose: bool) -> tuple[Any, int | None, Driver]:
    """Run `work`; (value, None) when it ended, (None, exit code) when it did not."""
    driver = Driver(runtime, screen=screen, source=source, channel=channel, verbose=verbose)
    try:
        value, code = asyncio.run(driver.run(lambda: work(driver)))
    except Exception as exc:  # a broken workflow: say what broke, keep the books, exit 1
        if verbose:
            import traceback

            screen.say(traceback.format_exc().rstrip(), err=True)
        screen.say(f"x {type(exc).__name__}: {exc}", err=True)
        return None, 1, driver
    return value, code, driver


# -- credentials -----------------------------------------------------------------------------


CREDENTIAL_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
SECRET_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


def load_env(workspace: Path) -> None:
    """The same .env the Runtime reads: the workspace's, else the nearest one found."""
    from dotenv import load_dotenv

    env = workspace / ".env"
    load_dotenv(env) if env.is_file() else load_dotenv()


def credential_problem(workspace: Path) -> str | None:
    """Why no run can start here (no credential at all), or None. Checked before asking
    anything, so nobody types a request only to be told the key is missing."""
    from .core.runtime import check_credentials

    load_env(workspace)
    try:
        check_credentials()
    except RuntimeError as exc:
        return f"缺少凭证:{exc}\n跑一次 `flower setup` 把 key 存进 {workspace / '.env'}。"
    return None


def describe_credentials() -> list[str]:
    lines = []
    for key in (*SECRET_KEYS, "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"):
        value = os.environ.get(key)
        if value:
            lines.append(f"{key} = {mask(value) if key in SECRET_KEYS else value}")
    return lines


def _looks_like_auth(text: str | None) -> bool:
    return bool(text and _AUTH_ERROR.search(text))


# -- commands ---------------------------------------------------------------------------------


def _closing(screen: Screen, runtime: Any, driver: Driver | None) -> None:
    cost = driver.cost_so_far() if driver is not None else runtime.total_cost()
    screen.say("")
    screen.say(CLOSING.format(cost=cost, manifest=runtime.manifest_path))


def go_command(args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = workspace_of(args)
    problem = credential_problem(ws)
    if problem:
        screen.say(problem, err=True)
        return 1
    if args.verbose:
        for line in describe_credentials():
            screen.say(line)
    from .workflow.starter import banner_line, wake_state

    state = wake_state(ws, run_dir=args.run_dir, isolate=args.isolate)
    new = bool(args.new)
    ask = args.ask
    if ask is None:
        got = ask_for_request(source, screen, waking=state["waking"] and not new)
        if got is None:
            screen.say(CANCELLED, err=True)
            return 1
        ask, typed_new = got
        new = new or typed_new
    ask = ask.strip()
    waking = state["waking"] and not new
    if not ask and not waking:
        screen.say(EMPTY_REQUEST, err=True)
        return 1
    if not source.tty and args.timeout > 0:
        screen.say(NOT_A_TERMINAL, err=True)
    if args.isolate and not in_git_repo(ws):
        screen.say(ISOLATE_NEEDS_GIT.format(path=ws), err=True)
        return 1
    if args.clarify_only and waking:
        screen.say(f". 需求已经确认过({state['brief']}),--clarify-only 没有要做的;要重新确认就加 --new", err=True)
    try:
        flow = build_flow(args, ask, new=new)
    except ValueError as exc:
        screen.say(str(exc), err=True)
        return 1
    try:
        runtime = build_runtime(args, workbench=flow.workbench)
    except RuntimeError as exc:
        screen.say(str(exc), err=True)
        return 1
    try:
        if waking:
            sid = state["steps"].get(WORK_STEP)
            context = runtime.context_of(sid) if sid else 0
            screen.say(banner_line(state, workspace=ws, context=context or None))

        async def work(driver: Driver) -> Any:
            return await flow.run(runtime, on_event=driver.on_event, on_step=_on_step(screen))

        ctx, code, driver = _drive(runtime, work, screen=screen, source=source, channel=flow.channel, verbose=args.verbose)
        _closing(screen, runtime, driver)
        if code == 130:
            screen.say(QUIT_NOTE, err=True)
        if code is not None:
            return code
        return _outcome(screen, ctx, runtime)
    finally:
        runtime.close()


def in_git_repo(path: Path) -> bool:
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def _on_step(screen: Screen) -> Callable[[Any, Any], None]:
    def on_step(step: Any, result: Any) -> None:
        if not result.ok and result.error:
            screen.say(f"  x {result.step} 没成:{_first_line(result.error, 200)}")

    return on_step


def _outcome(screen: Screen, ctx: dict[str, Any], runtime: Any) -> int:
    failed = ctx.get("_failed_at")
    aborted = ctx.get("_aborted")
    if not failed and not aborted:
        return 0
    message = ABORTED_AT.format(step=failed or "?")
    if aborted:
        message += f":{aborted}"
    verdict = ctx.get("_verdict")
    if verdict is not None and not getattr(verdict, "achieved", False) and getattr(verdict, "reason", ""):
        message += f"\n  最后一轮判定:{_first_line(verdict.reason, 200)}"
    screen.say(message, err=True)
    last = runtime.results[-1] if runtime.results else None
    if last is not None and _looks_like_auth(last.error):
        screen.say(f"! 看起来是凭证不对:{_first_line(last.error, 120)}\n  跑 `flower setup` 重配,再跑一次刚才的命令 —— 同一目录会接着上次。", err=True)
    return 1


def run_command(args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = workspace_of(args)
    problem = credential_problem(ws)
    if problem:
        screen.say(problem, err=True)
        return 1
    try:
        flow = load_target(args.target)
    except TargetError as exc:
        screen.say(str(exc), err=True)
        return 1
    if args.verbose:
        for line in describe_credentials():
            screen.say(line)
    try:
        runtime = build_runtime(args, workbench=getattr(flow, "workbench", None))
    except RuntimeError as exc:
        screen.say(str(exc), err=True)
        return 1
    try:

        async def work(driver: Driver) -> Any:
            return await flow.run(runtime, on_event=driver.on_event, on_step=_on_step(screen))

        ctx, code, driver = _drive(runtime, work, screen=screen, source=source, channel=getattr(flow, "channel", None), verbose=args.verbose)
        _closing(screen, runtime, driver)
        if code == 130:
            screen.say(QUIT_NOTE, err=True)
        if code is not None:
            return code
        return _outcome(screen, ctx, runtime)
    finally:
        runtime.close()


def once_command(args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = workspace_of(args)
    problem = credential_problem(ws)
    if problem:
        screen.say(problem, err=True)
        return 1
    if args.verbose:
        for line in describe_credentials():
            screen.say(line)
    spec = once_spec(args)
    try:
        runtime = build_runtime(args)
    except RuntimeError as exc:
        screen.say(str(exc), err=True)
        return 1
    try:

        async def work(driver: Driver) -> Any:
            return await runtime.run(spec, args.prompt, on_event=driver.on_event, **once_call(args))

        result, code, driver = _drive(runtime, work, screen=screen, source=source, channel=None, verbose=args.verbose)
        if code is not None:
            _closing(screen, runtime, driver)
            if code == 130:
                screen.say(QUIT_ONCE, err=True)
            return code
        elapsed = format_duration(result.duration_s)
        if result.ok:
            screen.say(f"  = ad-hoc:{result.num_turns} 轮 · ${result.cost_usd:.4f} · 用时 {elapsed}")
        else:
            screen.say(f"  x ad-hoc 没成:{_first_line(result.error or '', 200)}(用时 {elapsed})", err=True)
        if result.session_id:
            screen.say(f'  - 会话 {result.session_id}(要接着聊:flower once --resume {result.session_id} "…")')
        _closing(screen, runtime, driver)
        return 0 if result.ok else 1
    finally:
        runtime.close()


# -- setup ------------------------------------------------------------------------------------


ENV_HEADER = "# flower 的凭证(由 `flower setup` 写)。别提交进版本库。"


def read_env_file(path: Path) -> dict[str, str]:
    from dotenv import dotenv_values

    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def write_env_file(path: Path, updates: dict[str, str | None]) -> None:
    """Set (or, with None, remove) keys in a .env, keeping every other line as it was; 0600."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else [ENV_HEADER]
    done: set[str] = set()
    out: list[str] = []
    for line in lines:
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None
        if key in updates:
            if key in done:
                continue
            done.add(key)
            value = updates[key]
            if value is not None:
                out.append(f"{key}={value}")
            continue
        out.append(line)
    for key, value in updates.items():
        if key not in done and value is not None:
            out.append(f"{key}={value}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def credential_updates(token: str, base_url: str, current: dict[str, str]) -> dict[str, str | None]:
    """What `setup` writes for what the person typed. Blank keeps what is there; "-" as the
    address removes it (back to the public API). An `sk-ant-` key is an API key, anything
    else a gateway token; the other of the two is removed so they can never disagree."""
    updates: dict[str, str | None] = {}
    token = token.strip()
    if token:
        if token.startswith("sk-ant-"):
            updates["ANTHROPIC_API_KEY"], updates["ANTHROPIC_AUTH_TOKEN"] = token, None
        else:
            updates["ANTHROPIC_AUTH_TOKEN"], updates["ANTHROPIC_API_KEY"] = token, None
    base_url = base_url.strip()
    if base_url == "-":
        updates["ANTHROPIC_BASE_URL"] = None
    elif base_url:
        updates["ANTHROPIC_BASE_URL"] = base_url.rstrip("/")
    return updates


def setup_command(args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = workspace_of(args)
    path = ws / ".env"
    current = read_env_file(path)
    if not args.check:
        screen.say("== 配置 flower " + "=" * 40)
        screen.say(f"凭证会存到 {path}(只你可读)。flower 在这个目录里跑时读它。")
        token, base_url = _ask_credentials(source, screen, current)
        if token is None:
            screen.say(CANCELLED, err=True)
            return 1
        updates = credential_updates(token, base_url, current)
        if updates:
            write_env_file(path, updates)
            current = read_env_file(path)
            screen.say(f"+ 存好了:{path}")
        else:
            screen.say(". 什么都没改")
    return _check_setup(screen, path, current)


def _ask_credentials(source: LineSource, screen: Screen, current: dict[str, str]) -> tuple[str | None, str]:
    have = next((current[k] for k in CREDENTIAL_KEYS if current.get(k)), "")
    keep = f"直接回车 = 保留现有的 {mask(have)}" if have else "Anthropic 官方的 sk-ant-… 或网关签发的 token"
    url = current.get("ANTHROPIC_BASE_URL", "")
    keep_url = f"直接回车 = 保留 {url};- = 清掉,用 Anthropic 官方" if url else "直接回车 = Anthropic 官方"
    screen.say(f"\n1. 你的 API key 或网关 token ({keep};输入不回显)")
    if source.tty:
        import getpass

        try:
            token = getpass.getpass("   > ")
            screen.say(f"\n2. 网关地址 ({keep_url})")
            base_url = input("   > ")
        except (KeyboardInterrupt, EOFError):
            return None, ""
    else:
        token = source.read_line() or ""
        screen.say(f"\n2. 网关地址 ({keep_url})")
        base_url = source.read_line() or ""
    if not token.strip() and not have:
        screen.say("没给 token,取消。", err=True)
        return None, ""
    return token, base_url


def _check_setup(screen: Screen, path: Path, current: dict[str, str]) -> int:
    from .core.resilience import endpoint, reachable

    screen.say("")
    token_key = next((k for k in CREDENTIAL_KEYS if os.environ.get(k) or current.get(k)), None)
    ok = True
    if token_key is None:
        screen.say(f"x 没有凭证:{path} 里没有 ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN,环境变量里也没有", err=True)
        ok = False
    else:
        value = os.environ.get(token_key) or current.get(token_key, "")
        where = "环境变量" if os.environ.get(token_key) else str(path)
        screen.say(f"{token_key} = {mask(value)}(来自 {where})")
    # the process environment wins over any .env, exactly as the Runtime will see it
    base = os.environ.get("ANTHROPIC_BASE_URL") or current.get("ANTHROPIC_BASE_URL") or ""
    if base:
        os.environ["ANTHROPIC_BASE_URL"] = base
    screen.say(f"ANTHROPIC_BASE_URL = {base or '(未设,Anthropic 官方)'}")
    host, port = endpoint()
    if asyncio.run(reachable(host, port)):
        screen.say(f"+ 连得上 {host}:{port}(只做了 DNS + TCP 握手:没发请求,没花钱,也不验 key)")
    else:
        screen.say(f"x 连不上 {host}:{port}:检查网关地址和网络", err=True)
        ok = False
    return 0 if ok else 1


# -- entry point ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "demo":
            from .sim.demo import main as demo_main

            return demo_main(keep=args.keep)
        if args.command == "setup":
            return setup_command(args)
        if args.command == "once":
            return once_command(args)
        if args.command == "run":
            return run_command(args)
        return go_command(args)
    except KeyboardInterrupt:  # before the run started (or after it ended): nothing to keep
        print(CANCELLED, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
