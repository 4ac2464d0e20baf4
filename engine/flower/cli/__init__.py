"""The `flower` command: go (the default), run, once, setup and demo.

A reference front end of the interaction layer: it only ever sees `Event`s. Everything slow
(the SDK, the runtime, the workflow) is imported inside the commands, so that building the
parser, and with it `flower --help`, stays fast.

Terminal handling:
- stdout carries the event lines; stderr carries the live bottom line (status, or the input
  prompt while a question is open) when it is a terminal, and every warning/error.
- stdin is read all the time by one thread, not only while a question is open: what was typed
  during hours of work must never be swallowed as the answer to the next question.
- On a terminal that thread reads key by key with ISIG off, so Ctrl-C reaches flower as a key
  and never the Claude Code child (it shares our process group and would interrupt itself).

The modules: `arguments` (the parser), `builders` (what each command builds from its
arguments), `target` (`flower run <target>`), `text` (sanitizing and fitting text), `terminal`
(screen and stdin), `lineedit` (the key-by-key line editor), `render` (event -> lines), `driver`
(one run and the person at it), `credentials`,
`commands` (go, run, once) and `setup` (`flower setup`). This module holds the entry point and
re-exports what callers and tests import from `flower.cli`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping

from .. import __version__
from ..base.i18n import _, language_from_environment, set_language
from ..core.display import columns
from .arguments import COMMANDS, PERMISSION_MODES, build_parser, parse_args, rewrite_argv
from .builders import (
    build_flow,
    build_runtime,
    once_call,
    once_spec,
    settings_of,
    workspace_of,
)
from .commands import (
    ABORTED_AT,
    CLOSING,
    EMPTY_REQUEST,
    ISOLATE_NEEDS_GIT,
    NOT_A_TERMINAL,
    QUIT_ONCE,
    WORK_STEP,
    go_command,
    in_git_repo,
    once_command,
    run_command,
)
from .credentials import (
    CREDENTIAL_KEYS,
    SECRET_KEYS,
    credential_problem,
    describe_credentials,
    load_env,
    mask,
)
from .driver import (
    ANSWER_PROMPT,
    DOUBLE_PRESS_S,
    IDLE_PROMPT,
    INTERRUPT_ASK,
    INTERRUPT_NOTE,
    QUIT_GRACE_S,
    QUIT_NOTE,
    WORDS_PROMPT,
    Driver,
)
from .lineedit import Edited, EndOfInput, Interrupted, LineEditor, Submitted
from .problems import quiet_sdk_log
from .render import RECEIVED, RECEIVED_AMENDED, RECEIVED_NOWHERE, Render
from .setup import ENV_HEADER, credential_updates, read_env_file, setup_command, write_env_file
from .target import TargetError, load_target
from .terminal import (
    CANCELLED,
    NEW_COMMAND,
    PROMPT_FRESH,
    PROMPT_WAKE,
    LineSource,
    Screen,
    ask_for_request,
)
from .text import clean, fit, fit_tail, format_duration, line_width, sanitize, wrap

__all__ = [
    "ABORTED_AT",
    "ANSWER_PROMPT",
    "CANCELLED",
    "CLOSING",
    "COMMANDS",
    "CREDENTIAL_KEYS",
    "DOUBLE_PRESS_S",
    "EMPTY_REQUEST",
    "ENV_HEADER",
    "IDLE_PROMPT",
    "INTERRUPT_ASK",
    "INTERRUPT_NOTE",
    "ISOLATE_NEEDS_GIT",
    "NEW_COMMAND",
    "NOT_A_TERMINAL",
    "PERMISSION_MODES",
    "PROMPT_FRESH",
    "PROMPT_WAKE",
    "QUIT_GRACE_S",
    "QUIT_NOTE",
    "QUIT_ONCE",
    "RECEIVED",
    "RECEIVED_AMENDED",
    "RECEIVED_NOWHERE",
    "SECRET_KEYS",
    "WORDS_PROMPT",
    "WORK_STEP",
    "Driver",
    "Edited",
    "EndOfInput",
    "Interrupted",
    "LineEditor",
    "LineSource",
    "Render",
    "Screen",
    "Submitted",
    "TargetError",
    "__version__",
    "ask_for_request",
    "build_flow",
    "build_parser",
    "build_runtime",
    "clean",
    "columns",
    "credential_problem",
    "credential_updates",
    "describe_credentials",
    "fit",
    "fit_tail",
    "format_duration",
    "go_command",
    "in_git_repo",
    "line_width",
    "load_env",
    "load_target",
    "main",
    "mask",
    "once_call",
    "once_command",
    "once_spec",
    "parse_args",
    "read_env_file",
    "rewrite_argv",
    "run_command",
    "sanitize",
    "settings_of",
    "setup_command",
    "workspace_of",
    "wrap",
    "write_env_file",
]


# The commands of the layers above the terminal's (the demo's rig, the fleet) come from the entry
# point, `flower.__main__`, which knows every layer: this package never imports them.
UpperCommand = Callable[[argparse.Namespace], int]
UPPER_COMMANDS = ("demo", "submit", "worker", "fleet")


def main(argv: list[str] | None = None, upper: Mapping[str, UpperCommand] | None = None) -> int:
    set_language(language_from_environment())  # before the parser: its help texts are translated too
    quiet_sdk_log()
    args = parse_args(argv)
    try:
        if args.command in UPPER_COMMANDS:
            command = (upper or {}).get(args.command)
            if command is None:
                print(
                    _("flower:{command} 由 flower 命令运行(python -m flower)").format(command=args.command),
                    file=sys.stderr,
                )
                return 2
            return command(args)
        if args.command == "setup":
            return setup_command(args)
        if args.command == "once":
            return once_command(args)
        if args.command == "run":
            return run_command(args)
        if args.command == "history":
            from .history import history_command

            return history_command(args)
        if args.command in ("rewind", "fork"):
            from . import rewind

            return rewind.rewind_command(args) if args.command == "rewind" else rewind.fork_command(args)
        return go_command(args)
    except KeyboardInterrupt:  # before the run started (or after it ended): nothing to keep
        print(_(CANCELLED), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
