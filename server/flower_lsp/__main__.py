"""Start the flower language server on stdio: ``flower-lsp`` or ``python -m flower_lsp``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import BinaryIO


def _claim_stdout() -> BinaryIO:
    """Keep stdout for the protocol alone: a private copy of fd 1 carries LSP, while fd 1 itself
    (and sys.stdout) point at stderr, so a stray print or a child process cannot corrupt it."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


class LogFile(logging.FileHandler):
    """The server's log file. A write the disk refuses (full, read-only, gone) is said once on
    stderr (the editor's output channel), in one line with what to do, and the log goes on there:
    never logging's own traceback, never a server that stops answering for want of a log."""

    def __init__(self, filename: str) -> None:
        super().__init__(filename, delay=True)
        self.refused = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.refused:
            super().emit(record)  # its flush may find the disk refusing: then said, and below
        if self.refused:
            self._fallback(record)

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            self._refuse(exc)

    def close(self) -> None:
        try:
            super().close()
        except OSError as exc:  # the last buffered lines could not be kept either
            self.stream = None
            self._refuse(exc)

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if not (isinstance(exc, OSError) and self._refuse(exc)):
            super().handleError(record)

    def _refuse(self, exc: OSError) -> bool:
        """Say a resource fault once (whether `exc` is one); the log goes to stderr from now on."""
        from flower.base.files import fault_of

        fault = fault_of(exc, self.baseFilename)
        if fault is None:
            raise exc
        if not self.refused:
            self.refused = True
            sys.stderr.write(f"flower-lsp: {fault.line()}\n")
        return True

    def _fallback(self, record: logging.LogRecord) -> None:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(self.formatter)
        stream.emit(record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flower-lsp", description="flower's language server (LSP over stdio)"
    )
    parser.add_argument("--log-file", help="write the server's log here (stdout is the protocol channel)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log at INFO (pygls then logs message bodies)"
    )
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    if args.log_file:
        logging.basicConfig(level=level, handlers=[LogFile(args.log_file)])
    else:
        logging.basicConfig(level=level, stream=sys.stderr)
    from flower.base.secrets import RedactingFilter

    from .errorlog import ClientErrors, OneLine

    for handler in logging.getLogger().handlers:
        handler.addFilter(ClientErrors())  # answered as the client's mistake already
        if not isinstance(handler, LogFile):
            handler.addFilter(OneLine())  # a person reads stderr: never a traceback there
        handler.addFilter(RedactingFilter())  # the log file is flower's too: no credential in it
    channel = _claim_stdout()
    from .server import build_server
    from .transport import serve

    serve(build_server(), sys.stdin.buffer, channel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
