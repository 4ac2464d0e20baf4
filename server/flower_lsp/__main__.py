"""Start the flower language server on stdio: ``flower-lsp`` or ``python -m flower_lsp``."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flower-lsp", description="flower's language server (LSP over stdio)")
    parser.add_argument("--log-file", help="write the server's log here (stdout is the protocol channel)")
    args = parser.parse_args(argv)
    target = {"filename": args.log_file} if args.log_file else {"stream": sys.stderr}
    logging.basicConfig(level=logging.WARNING, **target)  # pygls logs message bodies at INFO
    from .server import build_server

    build_server().start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
