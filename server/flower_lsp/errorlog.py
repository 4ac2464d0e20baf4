"""The server's log as a person reads it on stderr (the editor's output channel): one line per
record, never a traceback.

A request the client got wrong (unknown method, invalid params, an invalid request) is answered
with its error already; pygls also logs it with a traceback at ERROR, so a flood of bad requests
would fill the output channel with stack frames. Those become one line at INFO. Any other record
carrying an exception keeps its message and gains the exception's type and first line; the
frames stay in the log file (`--log-file`), which is where they help.
"""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcException, JsonRpcInternalError

PYGLS_RPC = "pygls.protocol.json_rpc"


class ClientErrors(logging.Filter):
    """pygls's record of a request refused as the client's mistake: one line, at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        refused = isinstance(exc, JsonRpcException) and not isinstance(exc, JsonRpcInternalError)
        if record.name == PYGLS_RPC and refused:
            record.msg, record.args = "refused request %s: %s", (_id_of(record), first_line(str(exc)))
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text = None, None
            return logging.getLogger().isEnabledFor(logging.INFO)  # the level it has now
        return True


class OneLine(logging.Filter):
    """Any record with an exception: its message, then the exception's type and first line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {first_line(str(exc))}"
            record.args = None
            record.exc_info, record.exc_text = None, None
        record.stack_info = None
        return True


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:500]


def _id_of(record: logging.LogRecord) -> str:
    args = record.args if isinstance(record.args, tuple) else ()
    return str(args[0]) if args else "?"


__all__ = ["ClientErrors", "OneLine"]
