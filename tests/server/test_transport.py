"""The language server under any byte stream, over raw pipes (no LSP client library in between).

Hundreds of generated malformed frames and messages, each followed by a valid request: the
server must answer that request every time (it resynchronised), answer every request whose
frame was intact with a result or a proper JSON-RPC error, never put a traceback into a
response, say on stderr what it dropped, and still shut down cleanly at the end.
"""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_process import SERVER, fake_env

SEED = 20261201
TIMEOUT = 20.0
METHODS = [
    "flower/state",
    "textDocument/codeAction",
    "workspace/executeCommand",
    "shutdown",
    "flower/teleport",
]


def frame(body: bytes, *, length: Any = None, name: bytes = b"Content-Length", extra: bytes = b"") -> bytes:
    declared = str(len(body) if length is None else length).encode()
    return extra + name + b": " + declared + b"\r\n\r\n" + body


def message(obj: Any) -> bytes:
    return frame(json.dumps(obj).encode("utf-8"))


class RawServer:
    """`python -m flower_lsp` on pipes: bytes in, parsed responses out (a reader thread)."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.raw: list[bytes] = []  # every response body, exactly as it came
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        buf = b""
        while True:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                self.messages.put(None)
                return
            buf += chunk
            while (end := buf.find(b"\r\n\r\n")) >= 0:
                headers = dict(line.split(b": ", 1) for line in buf[:end].split(b"\r\n") if b": " in line)
                length = int(headers[b"Content-Length"])
                if len(buf) < end + 4 + length:
                    break
                body, buf = buf[end + 4 : end + 4 + length], buf[end + 4 + length :]
                self.raw.append(body)
                self.messages.put(json.loads(body))

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def send(self, data: bytes, rng: random.Random | None = None) -> None:
        assert self.proc.stdin is not None
        if rng is None or len(data) < 4:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            return
        at = 0
        while at < len(data):  # in pieces, as a pipe may deliver it
            step = rng.randint(1, max(1, len(data) // 3))
            self.proc.stdin.write(data[at : at + step])
            self.proc.stdin.flush()
            at += step

    def until(self, msg_id: Any, *more: Any) -> list[dict[str, Any]]:
        """Every message up to and including the responses to `msg_id` and `more` (in any order)."""
        got: list[dict[str, Any]] = []
        waiting = {json.dumps(i) for i in (msg_id, *more)}
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                item = self.messages.get(timeout=0.5)
            except queue.Empty:
                continue
            if item is None:
                raise AssertionError(
                    f"the server went away; stderr:\n{self.stderr.decode(errors='replace')[-2000:]}"
                )
            got.append(item)
            if "result" in item or "error" in item:
                waiting.discard(json.dumps(item.get("id")))
            if not waiting:
                return got
        raise AssertionError(f"no answer to {sorted(waiting)} within {TIMEOUT} s (deaf); got {got}")


def cases(rng: random.Random) -> Iterator[tuple[str, bytes, Any, set[int] | None]]:
    """(label, bytes to send, the id that must be answered or None, allowed error codes or None)."""
    state = {"jsonrpc": "2.0", "method": "flower/state", "params": {}}
    for i in range(20):
        body = json.dumps({**state, "id": f"cut-{i}"}).encode()
        yield "missing Content-Length", b"Content-Type: application/json\r\n\r\n" + body, None, None
        yield (
            "non-numeric length",
            frame(body, length=rng.choice(["abc", "1e3", "12x", "", "0x10"])),
            None,
            None,
        )
        yield "negative length", frame(body, length=-rng.randint(1, 500)), None, None
        yield "zero length", frame(body, length=0), None, None
        yield "too small", frame(body, length=rng.randint(1, len(body) - 1)), None, None
        yield "too large", frame(body, length=len(body) + rng.randint(1, 5000)), None, None
        yield "huge", frame(body, length=rng.randint(10**9, 10**15)), None, None
        yield "lowercase name", frame(body, name=b"content-length"), f"cut-{i}", None
        yield (
            "other header first",
            frame(body, extra=b"Content-Type: application/vscode-jsonrpc\r\n"),
            f"cut-{i}",
            None,
        )
        noise = bytes(rng.randrange(256) for _ in range(rng.randint(1, 600)))
        yield "random bytes", noise, None, None
        crlf = b"\r\n".join(
            bytes(rng.randrange(32, 127) for _ in range(rng.randint(0, 40))) for _ in range(5)
        )
        yield "random header lines", crlf + b"\r\n\r\n", None, None
        yield "body not UTF-8", frame(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}'), None, None
        yield "body not JSON", frame(b"{" + noise.replace(b"}", b"")), None, None
    invalid_request = {-32600}
    for i in range(12):
        yield "array body", message([1, 2, 3]), None, None
        yield "string body", message("hello"), None, None
        yield (
            "no jsonrpc",
            message({"id": f"nv-{i}", "method": "flower/state", "params": {}}),
            f"nv-{i}",
            invalid_request,
        )
        yield (
            "wrong version",
            message({"jsonrpc": "1.0", "id": f"wv-{i}", "method": "flower/state"}),
            f"wv-{i}",
            invalid_request,
        )
        bad_id = rng.choice([True, 1.5, {"x": 1}, [1]])
        yield "bad id", message({"jsonrpc": "2.0", "id": bad_id, "method": "flower/state"}), None, None
        yield (
            "method not a string",
            message({"jsonrpc": "2.0", "id": f"mn-{i}", "method": 42}),
            f"mn-{i}",
            invalid_request,
        )
        method = rng.choice(METHODS[:3])
        bad_params = rng.choice(["x", 7, True])
        yield (
            "params not structured",
            message({"jsonrpc": "2.0", "id": f"pt-{i}", "method": method, "params": bad_params}),
            f"pt-{i}",
            {-32602},
        )
        yield (
            "codeAction params x",
            message({"jsonrpc": "2.0", "id": f"ca-{i}", "method": "textDocument/codeAction", "params": "x"}),
            f"ca-{i}",
            {-32602},
        )
        yield (
            "executeCommand null",
            message(
                {"jsonrpc": "2.0", "id": f"en-{i}", "method": "workspace/executeCommand", "params": None}
            ),
            f"en-{i}",
            {-32602},
        )
        yield (
            "executeCommand without command",
            message(
                {
                    "jsonrpc": "2.0",
                    "id": f"ec-{i}",
                    "method": "workspace/executeCommand",
                    "params": {"arguments": []},
                }
            ),
            f"ec-{i}",
            {-32602},
        )
        yield (
            "unknown command",
            message(
                {
                    "jsonrpc": "2.0",
                    "id": f"uc-{i}",
                    "method": "workspace/executeCommand",
                    "params": {"command": "flower.nope"},
                }
            ),
            f"uc-{i}",
            {-32602, -32601},
        )
        yield (
            "no params member",
            message({"jsonrpc": "2.0", "id": f"np-{i}", "method": "flower/state"}),
            f"np-{i}",
            None,
        )
        folder = rng.choice(["a\x00b", "\ud800", "x\udfff", "\x00"])
        yield (
            "folder with NUL or a lone surrogate",
            message(
                {"jsonrpc": "2.0", "id": f"nul-{i}", "method": "flower/state", "params": {"folder": folder}}
            ),
            f"nul-{i}",
            {-32602},
        )
        yield (
            "start with a NUL ask",
            message(
                {
                    "jsonrpc": "2.0",
                    "id": f"sn-{i}",
                    "method": "workspace/executeCommand",
                    "params": {"command": "flower.start", "arguments": [{"ask": "x\x00y"}]},
                }
            ),
            f"sn-{i}",
            {-32602},
        )
        yield (
            "unknown method",
            message(
                {"jsonrpc": "2.0", "id": f"um-{i}", "method": f"flower/{rng.randrange(10**6)}", "params": {}}
            ),
            f"um-{i}",
            {-32601},
        )
        deep = (
            b'{"jsonrpc": "2.0", "id": "deep", "method": "flower/state", "params": {"folder": '
            + b"[" * 50_000
            + b"]" * 50_000
            + b"}}"
        )
        yield "nesting too deep", frame(deep), None, None
        yield "response to nothing", message({"jsonrpc": "2.0", "id": f"rs-{i}", "result": None}), None, None
        yield (
            "notification with bad params",
            message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": "x"}),
            None,
            None,
        )


@pytest.fixture
def server(tmp_path: Path, workspace: Path) -> Iterator[RawServer]:
    (tmp_path / "fake-script.json").write_text("[]", encoding="utf-8")
    raw = RawServer(fake_env(tmp_path / "fake-script.json"), workspace)
    raw.send(
        message(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "capabilities": {},
                    "workspaceFolders": [{"uri": workspace.as_uri(), "name": "ws"}],
                },
            }
        )
    )
    raw.until("init")
    raw.send(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    yield raw
    if raw.proc.poll() is None:
        raw.proc.kill()
        raw.proc.wait()


def test_the_server_survives_hundreds_of_malformed_frames_and_messages(server: RawServer) -> None:
    rng = random.Random(SEED)
    generated = list(cases(rng))
    answered = 0
    for n, (label, data, must_answer, codes) in enumerate(generated):
        server.send(data, rng)
        probe = f"probe-{n}"
        server.send(message({"jsonrpc": "2.0", "id": probe, "method": "flower/state", "params": {}}))
        got = server.until(probe, *([must_answer] if must_answer is not None else []))
        [answer] = [m for m in got if m.get("id") == probe]
        assert "result" in answer and answer["result"]["folder"], (label, answer)
        if must_answer is not None:
            [reply] = [m for m in got if m.get("id") == must_answer]
            answered += 1
            if codes is not None:
                assert "error" in reply and reply["error"]["code"] in codes, (label, reply)
        for reply in got:
            if "error" in reply:
                assert set(reply["error"]) <= {"code", "message"}, (label, reply)  # no data, no traceback
    assert len(generated) >= 300 and answered >= 150
    for body in server.raw:
        assert b"Traceback" not in body and b'File "' not in body

    server.send(message({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}))
    server.until("bye")
    server.send(message({"jsonrpc": "2.0", "method": "exit"}))
    assert server.proc.wait(30) == 0
    stderr = server.stderr.decode("utf-8", errors="replace")
    assert "dropped" in stderr and "reading on from the next Content-Length header" in stderr
    print(f"\n{len(generated)} malformed cases, {answered} requests answered by id, every probe answered")


def test_a_stream_that_simply_ends_stops_the_server_cleanly_and_says_so(server: RawServer) -> None:
    server.send(frame(b'{"jsonrpc": "2.0", "id": 5, "method": "flower/st', length=500))  # cut off mid-frame
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(30) == 0
    deadline = time.monotonic() + TIMEOUT
    while b"the client closed the connection" not in server.stderr and time.monotonic() < deadline:
        time.sleep(0.02)
    assert b"the client closed the connection; stopping" in server.stderr
