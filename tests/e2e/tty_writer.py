"""A process that writes to its terminal the way flower does (the Screen: event lines above a
live status line), for the terminal-lock test. usage: python tty_writer.py NAME LINES

It starts writing when a line arrives on stdin, so that two of them write at the same time."""

from __future__ import annotations

import sys

from flower.cli.terminal import Screen


def main(name: str, count: int) -> None:
    sys.stdin.readline()
    screen = Screen()
    for i in range(count):
        screen.status(f"- {name} 状态 {i}")
        screen.say(line(name, i))
    screen.status("")


def line(name: str, i: int) -> str:
    return f"{name} line {i:05d} " + name * 60


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
