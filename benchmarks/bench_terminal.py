"""What the terminal costs per event: rendering, sanitizing and fitting the lines of typical and
hostile events (the CLI does this on the run's loop for every event), and the line editor's
keys. Prints figures; asserts nothing.

usage: python benchmarks/bench_terminal.py [SECONDS_PER_CASE] [--smoke]
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable

from _cli import size_or_smoke
from flower.cli.lineedit import LineEditor
from flower.cli.render import Render
from flower.cli.terminal import Screen
from flower.core.events import Event, Text, ToolCall, ToolResult

CASES: dict[str, Event] = {
    "a tool call (ascii)": ToolCall(text="ls -la src/ tests/", tool="Bash", id="t", input={"command": "ls"}),
    "a tool call (chinese, 200 chars)": ToolCall(text="查看" * 100, tool="Read", id="t", input={}),
    "model text, 40 lines of 120 chars": Text(text="\n".join(["word " * 24] * 40)),
    "model text, 2000 chinese chars, one line": Text(text="很长的一行没有空格" * 222),
    "hostile tool result (sequences, CR, tabs)": ToolResult(
        text=("\x1b]0;title\x07\x1b[2J\x1bPq#0;2;0;0;0\x1b\\a\tb\rc\x1b[31mred\x1b[0m " * 12)[:500],
        tool_use_id="t",
        is_error=True,
    ),
}


def per_second(action: Callable[[], object], seconds: float) -> float:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        action()
        done += 1
    return done / (time.perf_counter() - start)


def main(seconds: float) -> None:
    out = io.StringIO()
    screen = Screen(out, io.StringIO(), live=False, columns=110)
    render = Render(verbose=True)
    print(f"{'event':45} {'events/s':>10} {'µs/event':>10} {'lines':>6}")
    for name, event in CASES.items():

        def show(event: Event = event) -> None:
            for line in render.lines(event):
                screen.say(line)
            out.seek(0)
            out.truncate()

        rate = per_second(show, seconds)
        lines = sum(len(screen_lines(line)) for line in render.lines(event))
        print(f"{name:45} {rate:10.0f} {1e6 / rate:10.1f} {lines:6d}")

    keys = ("你好世界hello".encode() + b"\x1b[D" * 5 + "中文".encode() + b"\x7f" * 3 + b"\x1b[H\x1b[F\r") * 10

    def type_keys() -> None:
        LineEditor().feed(keys)

    rate = per_second(type_keys, seconds)
    print(f"{'line editor: ' + str(len(keys)) + ' bytes of keys':45} {rate * len(keys):10.0f} bytes/s")


def screen_lines(line: str) -> list[str]:
    out = io.StringIO()
    Screen(out, io.StringIO(), live=False, columns=110).say(line)
    return out.getvalue().splitlines()


if __name__ == "__main__":
    main(size_or_smoke(__doc__.splitlines()[0], "seconds", float, 1.0, 0.02, "seconds per case"))
