"""The terminal: the screen (event lines above a live bottom line) and reading the person
(stdin at the file-descriptor level, key-by-key editing, raw mode, the launch prompt)."""

from __future__ import annotations

import contextlib
import os
import select
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol, TextIO

from ..base.i18n import N_, _
from ..core.display import columns
from .lineedit import Edited, EndOfInput, Interrupted, LineEditor, Submitted
from .text import fit, fit_tail, line_width, sanitize, wrap

# flower's own colours: the only escape codes that reach a screen
TONES = {"red": "\x1b[31m", "dim": "\x1b[2m"}
RESET = "\x1b[0m"

PROMPT_FRESH = N_("要做什么? 一句话就够,回车开始(Ctrl-C 退出)")
PROMPT_WAKE = N_("接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)")
NEW_COMMAND = "/new"
CANCELLED = N_("已取消")


class Stream(Protocol):
    """What flower asks of a stream it writes to or reads from: whether it is a terminal, its
    file descriptor (either may raise: a closed file, a buffer with no descriptor), closing it."""

    def fileno(self) -> int: ...

    def isatty(self) -> bool: ...

    def close(self) -> None: ...


# -- the screen ----------------------------------------------------------------------------


class TerminalLock:
    """Two flowers writing to one terminal take turns, a whole block at a time: an exclusive
    `flock` on a lock file named after the terminal's device (major and minor number), under
    $XDG_RUNTIME_DIR/flower, else a folder of this user's in the temporary directory.

    Not on the terminal itself: processes started from one shell share its open file, and a
    lock on a shared open file is held by all of them at once. A file each process opens for
    itself is not: one per device and process, shared by every Screen of the process (two
    Screens of one process never wait on each other's flock). Streams that are no terminal
    take no lock. Re-entrant within a thread.
    """

    def __init__(self, streams: Sequence[Stream]) -> None:
        self._streams = streams
        self._devices: list[_DeviceLock] | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if self._devices is None:
            self._devices = [_device_lock(dev) for dev in sorted(_terminal_devices(self._streams))]
        with contextlib.ExitStack() as stack:
            for device in self._devices:  # always in one order: two locks never deadlock
                stack.enter_context(device.held())
            yield


class _DeviceLock:
    def __init__(self, dev: int) -> None:
        self._guard = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        with contextlib.suppress(OSError):
            folder = lock_folder()
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            name = f"tty-{os.major(dev)}-{os.minor(dev)}.lock"
            self._fd = os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._guard:
            if self._depth == 0 and self._fd is not None:
                _flock(self._fd, True)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    _flock(self._fd, False)


_DEVICES: dict[int, _DeviceLock] = {}
_DEVICES_LOCK = threading.Lock()


def _device_lock(dev: int) -> _DeviceLock:
    with _DEVICES_LOCK:
        if dev not in _DEVICES:
            _DEVICES[dev] = _DeviceLock(dev)
        return _DEVICES[dev]


def _terminal_devices(streams: Sequence[Stream]) -> set[int]:
    devices: set[int] = set()
    for stream in streams:
        try:
            fd = stream.fileno()
            st = os.fstat(fd)
            if stat.S_ISCHR(st.st_mode) and os.isatty(fd):
                devices.add(st.st_rdev)
        except (AttributeError, ValueError, OSError):
            continue
    return devices


def _flock(fd: int, take: bool) -> None:
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX if take else fcntl.LOCK_UN)
    except (ImportError, OSError):  # no flock here (or the file went away): write unlocked
        pass


def lock_folder() -> Path:
    """Where the terminal locks are: $XDG_RUNTIME_DIR/flower, else flower-<uid> in the
    temporary directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "flower"
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"flower-{uid}"


class Screen:
    """All output goes through here. With a live terminal the bottom belongs to flower: the
    status line, and under it the open input prompt (with what was typed so far, and the cursor
    where it is); every event line is written above them, so the prompt never scrolls away.

    Every block written to a terminal is written under the `TerminalLock` of its device, and a
    live screen starts each block by clearing the bottom line, whoever drew it: two flowers in
    one terminal never mix their lines.

    Every line is sanitized (no escape sequence of a tool or the model survives) and, on a
    terminal, fitted to `line_width` of its columns; `tone` colours a line with flower's own
    codes, the only ones a screen ever gets. Output that goes to no terminal is not cut: a log
    or a pipe has no width (unless COLUMNS says one).
    """

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        live: bool | None = None,
        columns: int | None = None,
        colour: bool | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.live = is_terminal(self.err) if live is None else live
        self._columns = columns  # the terminal's width when the caller knows it (tests)
        self._colour = colour  # None: colour the streams that are terminals
        self._lock = threading.RLock()
        self._status = ""
        self._prompt: str | None = None
        self._typed = ""
        self._cursor: int | None = None
        self._shown = 0  # rows of the live area on screen now: 0, 1 or 2 (status above prompt)
        self._tty = TerminalLock([self.out, self.err])

    def say(self, text: str = "", *, err: bool = False, tone: str | None = None) -> None:
        stream = self.err if err else self.out
        width = self._fit_width(stream)
        painted = is_terminal(stream) if self._colour is None else self._colour
        colour = TONES.get(tone or "") if painted else None
        with self._lock, self._tty.held():
            self._clear()
            for line in sanitize(text).split("\n"):
                for part in wrap(line, width) if width is not None else [line]:
                    stream.write(f"{colour}{part}{RESET}\n" if colour else part + "\n")
            stream.flush()
            self._draw()

    def ring(self, title: str) -> bool:
        """Ring the bell and set the title (OSC 0) - only when stdout is a terminal: a pipe or a
        log never gets a control character from flower. True when it rang."""
        if not is_terminal(self.out):
            return False
        shown = " ".join(sanitize(title).split())  # nothing of it can end the sequence early
        with self._lock, self._tty.held():
            self.out.write(f"\x1b]0;{shown}\x07\x07")
            self.out.flush()
        return True

    def status(self, text: str) -> None:
        with self._lock, self._tty.held():
            self._status = text
            if self.live:
                self._clear()
                self._draw()

    def open_prompt(self, label: str) -> None:
        with self._lock, self._tty.held():
            if self._prompt == label:
                return
            self._prompt = label
            if self.live:
                self._clear()
                self._draw()
            else:
                self.say(label.rstrip())  # fitted to the terminal, as every line is

    def typed(self, text: str, cursor: int | None = None) -> None:
        """What is typed so far; `cursor` (an index into `text`) when it is not at the end."""
        with self._lock, self._tty.held():
            self._typed = text
            self._cursor = cursor
            if self.live:
                self._clear()
                self._draw()

    def close_prompt(self, *, keep: str | None = None) -> None:
        """Remove the prompt; `keep` leaves the submitted line on screen above."""
        with self._lock, self._tty.held():
            label = self._prompt
            self._prompt, self._typed, self._cursor = None, "", None
            if self.live:
                self._clear()
                if keep is not None and label is not None:
                    self.err.write(sanitize(label + keep) + "\n")
                self._draw()

    @property
    def prompt(self) -> str | None:
        return self._prompt

    def _terminal_columns(self, stream: Stream) -> int | None:
        if self._columns is not None:
            return self._columns
        if is_terminal(stream):
            try:
                return os.get_terminal_size(stream.fileno()).columns
            except (OSError, ValueError, AttributeError):
                return None
        try:
            return int(os.environ.get("COLUMNS", ""))
        except ValueError:
            return None

    def _fit_width(self, stream: Stream) -> int | None:
        cols = self._terminal_columns(stream)
        return line_width(cols) if cols else None

    def _width(self) -> int:
        """The live line's width: all but the last column of the terminal (no wrap, ever)."""
        cols = self._terminal_columns(self.err)
        return max(20, cols - 1) if cols else 100

    def _clear(self) -> None:
        """Take the live area off the screen. The bottom line is cleared even when this screen
        drew nothing there: another flower on the same terminal may have left its own."""
        if not self.live:
            return
        self.err.write("\r\x1b[K" + "\x1b[A\r\x1b[K" * max(0, self._shown - 1))
        self.err.flush()
        self._shown = 0

    def _draw(self) -> None:
        if not self.live:
            return
        width = self._width()
        back = 0
        rows = []
        if self._status:
            rows.append(fit(sanitize(self._status), width))
        if self._prompt is not None:
            label = fit(self._prompt, width)
            shown, back = visible_part(self._typed, self._cursor, max(4, width - columns(label)))
            rows.append(label + shown)
        if not rows:
            return
        self.err.write("\n".join(rows) + (f"\x1b[{back}D" if back else ""))
        self.err.flush()
        self._shown = len(rows)


def visible_part(text: str, cursor: int | None, room: int) -> tuple[str, int]:
    """The part of a typed line that fits in `room` columns with the cursor in view, and how
    many columns the cursor sits before the end of it."""
    if cursor is None or cursor >= len(text):
        return fit_tail(sanitize(text), room), 0
    before, after = sanitize(text[:cursor]), sanitize(text[cursor:])
    right = fit(after, max(room // 3, room - columns(before)))
    left = fit_tail(before, room - columns(right))
    return left + right, columns(right)


def is_terminal(stream: Stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# -- reading the person ------------------------------------------------------------------


class LineSource:
    """stdin at the file-descriptor level, with our own buffer: the first line (the request
    in a pipe) and every later line (answers, words) come out of the same buffer, so nothing
    read ahead is ever lost in a Python-level buffer."""

    def __init__(self, stream: Stream | None = None) -> None:
        stream = sys.stdin if stream is None else stream
        self.stream = stream  # keep it alive: its file descriptor is ours only while it lives
        self.tty = is_terminal(stream)
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

    def unread(self, data: bytes) -> None:
        """Put bytes read too early back in front: the next read starts with them."""
        self._buf = data + self._buf

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


class RawTerminal:
    """No echo, no line buffering, no signals from keys: Ctrl-C arrives as a byte."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[int | list[bytes | int]] | None = None  # termios' attributes

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


def read_typed_line(source: LineSource, screen: Screen, label: str, *, header: str = "") -> str | None:
    """One line typed at the terminal after `header` (said first) and `label`; None when the
    person pressed Ctrl-C or ended the input.

    Key by key in non-canonical mode with the run's own line editor, entered before anything is
    shown, so a Ctrl-C pressed once the question is on screen is a byte, never a signal: with
    `input()` a SIGINT could land before its read began (the key lost, the read waiting
    forever) or outside its handler. Bytes typed past the Enter stay in `source` for whoever
    reads next. Without a live screen (stderr is not the terminal) the terminal's own line mode
    echoes, and the read polls, so a SIGINT is seen at once."""
    raw = RawTerminal(source.fd) if source.fd is not None and screen.live else None
    keyed = raw is not None and raw.enter()
    try:
        if header:
            screen.say(header)
        screen.open_prompt(label)
        if keyed:
            return _edited_line(source, screen)
        line = source.read_line()
    except KeyboardInterrupt:  # line mode only: in raw mode Ctrl-C is a byte
        line = None
    finally:
        if keyed and raw is not None:
            raw.restore()
    screen.close_prompt()
    return line


def _edited_line(source: LineSource, screen: Screen) -> str | None:
    """The line editor's line, drawn on `screen` as it is typed; it closes the prompt."""
    editor = LineEditor()
    while True:
        data = source.read_bytes(0.2)
        if data is None:
            screen.close_prompt()
            return None
        for at in range(len(data)):
            for action in editor.feed(data[at : at + 1]):
                if isinstance(action, Submitted):
                    rest = data[at + 1 :]
                    if data[at : at + 1] == b"\r" and rest[:1] == b"\n":
                        rest = rest[1:]  # CR LF: one Enter
                    source.unread(rest)
                    screen.close_prompt(keep=action.text)
                    return action.text
                if isinstance(action, Edited):
                    screen.typed(action.text, action.cursor)
                elif isinstance(action, (Interrupted, EndOfInput)):
                    screen.close_prompt()
                    return None


def ask_for_request(source: LineSource, screen: Screen, *, waking: bool) -> tuple[str, bool] | None:
    """The launch prompt. Returns (request, typed /new), or None when the person cancelled.

    It reads stdin, not the shell: quotes, spaces and exclamation marks can be typed as is."""
    header = _(PROMPT_WAKE) if waking else _(PROMPT_FRESH)
    new = False
    while True:
        if source.tty:
            typed = read_typed_line(source, screen, "> ", header=header)
            if typed is None:
                screen.say("")
                return None
            line = typed
        else:
            # a pipe: no header, just the first line
            piped = source.read_line()
            if piped is None:
                return ("", new)
            line = piped
        text = line.strip()
        if text == NEW_COMMAND and not new:
            new = True
            header = _(PROMPT_FRESH)
            continue
        return (text, new)
