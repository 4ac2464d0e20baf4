"""The `flower` command.

Only `demo` exists so far; the workflow commands (go / run / once / setup) arrive with the
starter flow. The SDK is imported lazily so that `flower --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flower", description="Long, unattended Claude agent work that survives anything.")
    parser.add_argument("--version", action="version", version=f"flower {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run an offline end-to-end demo against flower.sim (no API key needed)")
    demo.add_argument("--keep", action="store_true", help="keep the demo's temp folder and print its path")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .sim.demo import main as demo_main

        return demo_main(keep=args.keep)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
