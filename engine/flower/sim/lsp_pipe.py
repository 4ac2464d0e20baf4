"""A language client on raw pipes, for faults no LSP client library would produce: floods of
requests, frames of tens of megabytes, bytes that are no frame at all, a client that vanishes
or a server killed mid-question.

`LspPipe` starts `python -m flower_lsp`, writes whatever it is given, and records every message
the server sends (a reader thread): responses by id, notifications, and the server's own
requests (answered by `answer`, or by the default handlers for the ones a run needs).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from ..base.loose import items, mapping

T = TypeVar("T")

SERVER = [sys.executable, "-m", "flower_lsp"]


def frame(body: bytes) -> bytes:
    return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


def encode(message: Mapping[str, object]) -> bytes:
    return frame(json.dumps(message, ensure_ascii=False).encode("utf-8"))


class LspPipe:
    """One server process and what it said."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._write = threading.Lock()
        # what the server sent, each a JSON object of any shape (the server is what is tested)
        self.responses: dict[str, dict[str, object]] = {}  # by json.dumps(id)
        self.notifications: list[dict[str, object]] = []
        self.asked: list[dict[str, object]] = []  # the server's own requests
        self.stderr = bytearray()
        self.gone = False
        # how the server's own requests are answered: method -> params -> result
        self.answers: dict[str, Callable[[object], object]] = {
            "window/workDoneProgress/create": lambda params: None,
            "window/showMessageRequest": lambda params: None,
            "client/registerCapability": lambda params: None,
            "workspace/configuration": lambda params: [None] * len(items(mapping(params).get("items"))),
        }
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    # -- writing --------------------------------------------------------------------------------
    def send_bytes(self, data: bytes) -> bool:
        """Write `data`; False once the server no longer reads."""
        assert self.proc.stdin is not None
        with self._write:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                return False
        return True

    def notify(self, method: str, params: object = None) -> bool:
        return self.send_bytes(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    def request(self, method: str, params: object = None, *, msg_id: object = None) -> str:
        """Send a request; its key in `responses`."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        self.send_bytes(encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return json.dumps(msg_id)

    def command(self, name: str, args: Mapping[str, object] | None = None) -> str:
        return self.request("workspace/executeCommand", {"command": name, "arguments": [args or {}]})

    def initialize(
        self, workspace: Path, *, options: Mapping[str, object] | None = None, timeout: float = 30
    ) -> None:
        capabilities = {
            "window": {"workDoneProgress": True, "showMessage": {}},
            "experimental": {"flower": dict.fromkeys(("ask", "banner", "context", "event", "results"), True)},
        }
        key = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": capabilities,
                "rootUri": workspace.as_uri(),
                "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
                "initializationOptions": options,
                "locale": "en",
            },
        )
        self.wait([key], timeout)
        self.notify("initialized", {})

    # -- what came back -------------------------------------------------------------------------
    def wait(self, keys: Iterable[str], timeout: float) -> list[str]:
        """The keys still unanswered after `timeout` seconds (or once the server is gone)."""
        want = set(keys)
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                missing = want - self.responses.keys()
                left = deadline - time.monotonic()
                if not missing or left <= 0 or self.gone:
                    return sorted(missing)
                self._lock.wait(min(left, 0.5))

    def result(self, key: str, timeout: float) -> dict[str, object]:
        """The response to `key`; AssertionError naming the stderr tail when none came."""
        if self.wait([key], timeout):
            tail = bytes(self.stderr[-2000:]).decode(errors="replace")
            raise AssertionError(f"no answer to {key} within {timeout:.0f} s; stderr:\n{tail}")
        return self.responses[key]

    def until(self, predicate: Callable[[], T], timeout: float) -> T:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                value = predicate()
                if value or time.monotonic() > deadline or self.gone:
                    return value
                self._lock.wait(0.2)

    def events(self, kind: str) -> list[dict[str, object]]:
        """The params of every flower/event notification of `kind`."""
        with self._lock:
            said = [n.get("params") for n in self.notifications if n.get("method") == "flower/event"]
        shown = [mapping(p) for p in said]
        return [p for p in shown if p.get("kind") == kind]

    def answer(self, msg_id: object, result: object) -> None:
        self.send_bytes(encode({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    # -- ending ---------------------------------------------------------------------------------
    def vanish(self) -> None:
        """The client goes away without a word: its end of the pipe closes."""
        with self._write:
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def close(self, timeout: float = 60) -> int | None:
        """shutdown, exit, and the exit status (None when it had to be killed)."""
        if self.proc.poll() is None:
            key = self.request("shutdown")
            self.wait([key], timeout)
            self.notify("exit")
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        return self.proc.returncode

    # -- the reader -----------------------------------------------------------------------------
    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd, buf = self.proc.stdout.fileno(), bytearray()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                with self._lock:
                    self.gone = True
                    self._lock.notify_all()
                return
            buf += chunk
            while (end := buf.find(b"\r\n\r\n")) >= 0:
                length = _length(bytes(buf[:end]))
                if len(buf) < end + 4 + length:
                    break
                body = bytes(buf[end + 4 : end + 4 + length])
                del buf[: end + 4 + length]
                self._take(json.loads(body))

    def _take(self, raw: object) -> None:
        if not isinstance(raw, dict):
            return  # a frame of a bare value or a batch is no message: the reader keeps going
        message = mapping(raw)
        if "method" in message and "id" in message:  # the server asks
            with self._lock:
                self.asked.append(message)
                self._lock.notify_all()
            method = message["method"]
            reply = self.answers.get(method) if isinstance(method, str) else None
            if reply is not None:
                self.answer(message["id"], reply(message.get("params")))
            return
        with self._lock:
            if "method" in message:
                self.notifications.append(message)
            else:
                self.responses[json.dumps(message.get("id"))] = message
            self._lock.notify_all()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line


def _length(headers: bytes) -> int:
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    raise ValueError(f"a frame without Content-Length: {headers[:200]!r}")


__all__ = ["SERVER", "LspPipe", "encode", "frame"]
