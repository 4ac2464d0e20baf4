"""The offline demo: `flower` itself, twice in one folder, with flower.sim as the model.

Everything but the model and the person is real: the `flower` command's own path (`go_command`:
the screen, the renderer, the driver, the handover to CLAUDE.md / AGENTS.md), the Claude Code
CLI, its tools, hooks, subagents, the SQLite store, the lineage. The scripted model asks one
question, sets a goal, delegates to a worker who writes real files, and its judge rejects the
first round and accepts the second. The scripted person types at flower's prompts, through a
keyboard flower reads like any stdin: "1" for the question, Enter to continue. The second run
in the same folder continues the same work session.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from ..base.i18n import N_, _
from ..cli.arguments import parse_args
from ..cli.commands import go_command
from ..cli.driver import ANSWER_PROMPT
from ..cli.terminal import LineSource, Screen
from .env import isolated_env, scrub_host_model_vars
from .scenarios import starter_scenario
from .server import SimServer

REQUEST = "写一个 hello.py,运行时打印问候语"  # the scripted person's words: the same in every language
LAUNCH_PROMPT = "> "  # ask_for_request's prompt at a terminal
ANSWER = "1"  # the scripted person takes the question's first option
WORK = "干活"
QUIT = 130  # the exit code of a `flower` the person quit

INTRO = N_("flower demo:真实的 Claude Code CLI;模型由 flower.sim 照剧本扮演,地址 {url}")
WORKSPACE = N_("工作区:{workspace}")
AGAIN = N_("再跑一次,同一个目录:从停下的地方接着做")
# what the scripted person typed at a prompt, as a terminal echoes it (Enter alone, named)
TYPED, ENTER = N_("{prompt}{typed}    # demo 替你敲的"), N_("(回车)")
# the summary: what the two runs left, and whether they did what the demo shows
FILES, NOTES = N_("文件:{names}"), N_("笔记:{names}")
CONTINUED = {True: N_("第二次运行接着同一个干活会话做了下去"), False: N_("第二次运行没有接上")}
HANDED_OVER = {
    True: N_("CLAUDE.md 和 AGENTS.md 里是同一份交接"),
    False: N_("CLAUDE.md 和 AGENTS.md 里没有同一份交接"),
}
KEPT = N_("保留在:{path}")


class Keyboard(LineSource):
    """The scripted person's keyboard: a pipe that flower reads as its stdin, standing for a
    terminal (prompts are shown, questions wait for an answer); `type` presses keys on it."""

    def __init__(self) -> None:
        read, self._write = os.pipe()
        super().__init__(os.fdopen(read, "rb", buffering=0))
        self.tty = True

    def type(self, line: str) -> None:
        os.write(self._write, line.encode() + b"\n")

    def close(self) -> None:
        os.close(self._write)
        self.stream.close()


class DemoScreen(Screen):
    """flower's screen, with the scripted person at it: when a prompt opens that the script
    answers, the keys are typed on the keyboard and the line shows what was typed, as a
    terminal echoes it."""

    def __init__(self, keyboard: Keyboard, answers: dict[str, str], out: TextIO | None = None) -> None:
        super().__init__(out)
        self.keyboard = keyboard
        self.answers = answers
        self._scripted: str | None = None
        self._typing = threading.Lock()

    def open_prompt(self, label: str) -> None:
        if label not in self.answers:  # a prompt the script does not answer: a person's
            super().open_prompt(label)
            return
        with self._typing:
            if self._scripted == label:  # open already (the driver redraws it on every event)
                return
            self._scripted = label
        typed = self.answers[label]
        self.say(_(TYPED).format(prompt=label, typed=typed or _(ENTER)))
        self.keyboard.type(typed)

    def close_prompt(self, *, keep: str | None = None) -> None:
        with self._typing:
            scripted, self._scripted = self._scripted, None
        # the typed line is on screen already: not again
        super().close_prompt(keep=None if scripted is not None else keep)

    @property
    def prompt(self) -> str | None:
        return self._scripted or super().prompt


@contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Work in `folder`, as a person who typed `cd` there: `flower` with no flags then works on
    it and keeps its books in its `runs/`."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _flower(argv: list[str], typed: str, screen: Screen, keyboard: Keyboard) -> int:
    """`flower ARGV`, typed at the shell as `typed`: the command's own path, on this screen and
    keyboard."""
    screen.say("")
    screen.say(typed)
    return go_command(parse_args(argv), screen=screen, source=keyboard)


def _work_session(ws: Path) -> tuple[str | None, int]:
    from ..core.lineage import Lineage

    lineage = Lineage.open(ws / "runs", ws)
    return lineage.steps.get(WORK), lineage.woke


def _same_handover(ws: Path) -> bool:
    from ..core.managed_block import read_block

    claude, agents = read_block(ws / "CLAUDE.md"), read_block(ws / "AGENTS.md")
    return claude is not None and claude == agents


def run_demo(out: TextIO, *, keep: bool = False) -> int:
    """Run the demo, printing to `out` as `flower` prints; returns a process exit code."""
    scrub_host_model_vars()
    root = Path(tempfile.mkdtemp(prefix="flower-demo-"))
    ws = root / "project"
    ws.mkdir()
    keyboard = Keyboard()
    screen = DemoScreen(keyboard, {_(ANSWER_PROMPT): ANSWER, LAUNCH_PROMPT: ""}, out)
    ok = False
    saved = dict(os.environ)
    try:
        with SimServer(starter_scenario(context=78_000)) as sim, _inside(ws):
            os.environ.update(isolated_env(sim.base_url, root))
            screen.say(_(INTRO).format(url=sim.base_url))
            screen.say(_(WORKSPACE).format(workspace=ws))
            first = _flower([REQUEST], f'$ flower "{REQUEST}"', screen, keyboard)
            if first == QUIT:  # the person pressed Ctrl-C twice: the demo is over too
                return QUIT
            session, _woke = _work_session(ws)
            second = _flower([], "$ flower        # " + _(AGAIN), screen, keyboard)
            if second == QUIT:
                return QUIT
            later, woke = _work_session(ws)
        same = session is not None and session == later
        handed_over = _same_handover(ws)
        ok = (
            first == 0
            and second == 0
            and (ws / "hello.py").is_file()
            and (ws / "README.md").is_file()
            and same
            and woke == 2
            and handed_over
        )
        screen.say("")
        files = sorted(p.name for p in ws.iterdir() if not p.name.startswith("."))
        screen.say(_(FILES).format(names=", ".join(files)))
        notes = ws / ".flower" / "notes"
        noted = sorted(p.name for p in notes.iterdir() if p.is_file()) if notes.is_dir() else []
        screen.say(_(NOTES).format(names=", ".join(noted)))
        story = [_(CONTINUED[same]), _(HANDED_OVER[handed_over])]
        screen.say((_("ok:") if ok else _("失败:")) + _(";").join(story))
    finally:
        keyboard.close()
        os.environ.clear()
        os.environ.update(saved)
        if keep:
            screen.say(_(KEPT).format(path=root))
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def main(out: TextIO | None = None, *, keep: bool = False) -> int:
    import sys

    return run_demo(out or sys.stdout, keep=keep)
