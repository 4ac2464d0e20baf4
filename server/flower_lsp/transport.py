"""The server's wire, hardened: any byte stream in, a proper JSON-RPC answer to every request out.

pygls reads frames with a strict pattern and goes deaf after one it cannot match (a missing,
non-numeric, negative or wrong Content-Length, random bytes), and drops requests whose params do
not validate without answering them. Here instead:

- `FrameReader` splits the stream into bodies and, after anything malformed, says so on stderr
  and reads on from the next `Content-Length` header. A header is only believed up to the next
  header: a length larger than what follows it cannot swallow the next request.
- `dispatch` answers a body that is not JSON with -32700, a message that is not a JSON-RPC
  request with -32600, params that do not fit the method (or hold NUL or an unpaired surrogate)
  with -32602, all before pygls sees them; what passes goes to pygls as before.
- `SturdyProtocol` never puts a traceback into a response: it stays in the server's log.

`serve(server, stdin, stdout)` replaces `server.start_io(...)`.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, BinaryIO, Protocol

from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol

from flower.base.loop import run_to_end

if TYPE_CHECKING:
    from pygls.protocol.json_rpc import MsgId

log = logging.getLogger("flower_lsp.transport")

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32602, -32603
MAX_BODY = 256 * 1024 * 1024  # far above any real message (64 MiB ones are served)
MAX_HEADER = 16 * 1024  # a header block longer than this is noise
_LENGTH = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
# a complete header line with a well-formed length: raw CR/LF never occurs inside JSON text,
# so this inside a body means the body was declared longer than it is
_NEXT_FRAME = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_BLANK = re.compile(rb"\r?\n\r?\n")
_HEADER_LINES = re.compile(rb"(?:[!-9;-~]+:[^\r\n]*\r?\n)*")
_UNPAIRED = re.compile("[\ud800-\udfff]")


class Malformed:
    """A body that is not JSON: answered with -32700, then reading goes on."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class FrameReader:
    """Bodies from a byte stream, in order; None at the end of the stream."""

    def __init__(self, chunks: asyncio.Queue[bytes | None], warn: Callable[[str], None]) -> None:
        self._chunks = chunks
        self._warn = warn
        self._buf = bytearray()
        self._eof = False

    async def _more(self) -> bool:
        if self._eof:
            return False
        chunk = await self._chunks.get()
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _drop(self, upto: int, why: str) -> None:
        if upto > 0:
            self._warn(f"dropped {upto} bytes ({why}); reading on from the next Content-Length header")
            del self._buf[:upto]

    async def next(self) -> object:
        """The next parsed JSON body, a Malformed for a body that is not JSON, or None at the end."""
        while True:
            start = _LENGTH.search(self._buf)
            if start is None:
                keep = _split_header(self._buf)  # a header may be split across two reads
                self._drop(len(self._buf) - keep, "no Content-Length header")
                if not await self._more():
                    return None
                continue
            if start.start() > 0:
                before = bytes(self._buf[: start.start()])
                if _HEADER_LINES.fullmatch(before):
                    del self._buf[: start.start()]  # other headers (Content-Type) come first: fine
                else:
                    self._drop(start.start(), "bytes that are no frame")
                continue
            blank = _BLANK.search(self._buf)
            if blank is None:
                if len(self._buf) > MAX_HEADER:
                    self._drop(start.end(), "a header block that never ends")
                elif not await self._more():
                    return None
                continue
            length, why = _content_length(bytes(self._buf[: blank.start()]))
            if length is None:
                self._drop(blank.end(), why)  # what follows is no body we can delimit: scan past it
                continue
            body_at = blank.end()
            body = await self._body(body_at, length)
            if body is None:
                continue  # a later header cut it short: resynchronised there
            if body is _END:
                return None
            try:
                value = json.loads(body)
            except (ValueError, RecursionError) as exc:
                # maybe declared too short: what follows is the rest of it, and garbage now
                self._warn(f"a body of {length} bytes is not JSON ({exc})")
                del self._buf[:body_at]
                return Malformed(str(exc))
            del self._buf[: body_at + length]
            return value

    async def _body(self, at: int, length: int) -> bytes | _End | None:
        scanned = at
        while len(self._buf) < at + length:
            seen = _NEXT_FRAME.search(self._buf, max(at, scanned - 64))
            if seen is not None:
                cut = self._buf.rfind(b"\n", 0, seen.start()) + 1 if seen.start() > at else seen.start()
                self._drop(max(cut, at), f"Content-Length {length} is longer than the body that came")
                return None
            scanned = len(self._buf)
            if not await self._more():
                return _END
        return bytes(self._buf[at : at + length])


class _End(enum.Enum):
    """The stream ended inside a body."""

    END = enum.auto()


_END = _End.END


def _split_header(buf: bytearray) -> int:
    """How many bytes at the end of `buf` could be the start of a Content-Length header."""
    name = b"content-length:"
    for k in range(min(len(name) - 1, len(buf)), 0, -1):
        if bytes(buf[-k:]).lower() == name[:k]:
            return k
    return 0


def _content_length(block: bytes) -> tuple[int | None, str]:
    """(length, "") from a header block, or (None, why it cannot be believed)."""
    value = None
    for raw in re.split(rb"\r?\n", block):
        name, sep, rest = raw.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            value = rest.strip()
    if value is None:
        return None, "a header block without Content-Length"
    if not value.isdigit():
        return None, f"Content-Length {value[:20]!r} is not a non-negative number"
    length = int(value)
    if length == 0:
        return None, "Content-Length 0: an empty body is no message"
    if length > MAX_BODY:
        return None, f"Content-Length {length} is larger than {MAX_BODY} bytes"
    return length, ""


class SturdyProtocol(LanguageServerProtocol):
    """pygls's protocol, except that no response ever carries a traceback."""

    def _send_response(self, msg_id: MsgId, result: object = None, error: object = None) -> None:
        plain: types.ResponseError | None = None
        if error is not None:
            message = str(getattr(error, "message", "") or "error").strip().splitlines()
            plain = types.ResponseError(code=int(getattr(error, "code", INTERNAL_ERROR)), message=message[0])
        super()._send_response(msg_id, result, plain)


def answer_error(protocol: JsonRPCProtocol, msg_id: MsgId | None, code: int, message: str) -> None:
    protocol._send_data(
        types.ResponseErrorMessage(id=msg_id, error=types.ResponseError(code=code, message=message))
    )


def _bad_string(value: object, depth: int = 0) -> str | None:
    """Where a string holding NUL or an unpaired surrogate hides in `value`, or None."""
    if depth > 64:
        return None
    if isinstance(value, str):
        if "\x00" in value:
            return "a NUL character"
        if _UNPAIRED.search(value):
            return "an unpaired surrogate"
        return None
    items: Iterable[tuple[object, object]] = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, item in items:
        found = _bad_string(key, depth + 1) if isinstance(key, str) else None
        found = found or _bad_string(item, depth + 1)
        if found:
            return found
    return None


def dispatch(protocol: JsonRPCProtocol, data: object) -> None:
    """Check one message's envelope and params, answer what cannot be accepted, pass the rest on."""
    if isinstance(data, Malformed):
        answer_error(protocol, None, PARSE_ERROR, f"Parse error: the body is not JSON ({data.reason})")
        return
    if not isinstance(data, dict):
        answer_error(protocol, None, INVALID_REQUEST, "Invalid request: a message is a JSON object")
        return
    msg_id = data.get("id")
    has_id = "id" in data
    if has_id and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int, type(None)))):
        answer_error(protocol, None, INVALID_REQUEST, "Invalid request: 'id' must be a string or a number")
        return
    method = data.get("method")
    if data.get("jsonrpc") != "2.0" or ("method" in data and not isinstance(method, str)):
        if has_id and "method" in data:
            answer_error(
                protocol, msg_id, INVALID_REQUEST, "Invalid request: needs jsonrpc '2.0' and a method name"
            )
        else:
            log.warning("ignored a message that is not JSON-RPC 2.0")
        return
    if method is None:
        if not has_id or ("result" not in data and "error" not in data):
            log.warning("ignored a message with neither a method nor a result")
            return
    elif has_id and msg_id is not None:
        data.setdefault("params", None)  # JSON-RPC lets a request leave params out
        params = data["params"]
        if params is not None and not isinstance(params, (dict, list)):
            answer_error(
                protocol, msg_id, INVALID_PARAMS, f"Invalid params for {method}: an object or an array"
            )
            return
        bad = _bad_string(params)
        if bad:
            answer_error(
                protocol, msg_id, INVALID_PARAMS, f"Invalid params for {method}: a string holds {bad}"
            )
            return
    else:
        data.setdefault("params", None)
    try:
        message = protocol.structure_message(data)
    except JsonRpcException as exc:
        _refuse(protocol, data, method, exc.__cause__ or exc)
        return
    except Exception as exc:
        _refuse(protocol, data, method, exc)
        return
    protocol.handle_message(message)


def _refuse(protocol: JsonRPCProtocol, data: dict[str, object], method: object, exc: BaseException) -> None:
    msg_id = data.get("id")  # dispatch let only a string, a number or null through
    if method is None or not isinstance(msg_id, (str, int)):
        log.warning("ignored %s: its params do not fit (%s)", method or "a response", _why(exc))
        return
    answer_error(protocol, msg_id, INVALID_PARAMS, f"Invalid params for {method}: {_why(exc)}")


def _why(exc: BaseException) -> str:
    if isinstance(exc, ClassValidationError):
        from cattrs import transform_error

        return "; ".join(transform_error(exc))[:500]
    return str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__


def _pump(fd: int, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue[bytes | None]) -> None:
    """Read stdin on a thread of its own (daemon: a read never holds up the exit)."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        try:
            loop.call_soon_threadsafe(chunks.put_nowait, chunk or None)
        except RuntimeError:
            return  # the loop is gone
        if not chunk:
            return


class Served(Protocol):
    """What serving takes of a pygls server (the FlowerServer)."""

    _stop_event: threading.Event | None

    @property
    def protocol(self) -> JsonRPCProtocol: ...

    async def close(self) -> None:
        """Stop the runs."""

    def shutdown(self) -> None:
        """Stop serving."""


async def _serve(server: Served, stdin: BinaryIO, stop: threading.Event) -> None:
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
    threading.Thread(
        target=_pump, args=(stdin.fileno(), loop, chunks), name="flower-lsp-stdin", daemon=True
    ).start()
    reader = FrameReader(chunks, lambda text: log.warning("flower-lsp: %s", text))
    while not stop.is_set():
        data = await reader.next()
        if data is None:
            if not server.protocol._shutdown:
                log.warning("flower-lsp: the client closed the connection; stopping")
                # stop the runs here, not in run_to_end's last sweep, which would destroy what
                # their ends still start
                await server.close()
            return
        try:
            dispatch(server.protocol, data)
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception:
            log.exception("flower-lsp: a message could not be handled")


def serve(server: Served, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve the LSP over stdio until the client exits or goes away."""
    stop = server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        run_to_end(_serve(server, stdin, stop))
    except BrokenPipeError:
        log.warning("flower-lsp: the client stopped reading; stopping")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


__all__ = ["FrameReader", "Malformed", "SturdyProtocol", "dispatch", "serve"]
