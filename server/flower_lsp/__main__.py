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
        logging.basicConfig(level=level, filename=args.log_file)
    else:
        logging.basicConfig(level=level, stream=sys.stderr)
    from flower.core.secrets import RedactingFilter

    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())  # the log file is flower's too: no credential in it
    channel = _claim_stdout()
    from .server import build_server
    from .transport import serve

    serve(build_server(), sys.stdin.buffer, channel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
