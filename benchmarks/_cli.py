"""What the benchmarks' command lines share: `--smoke`, the tiny mode CI runs
(tests/benchmarks/test_smoke.py). A module named with a leading underscore is a helper, not a
benchmark."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

SMOKE_HELP = "seconds: proves the benchmark runs (CI), its figures mean nothing"

Size = TypeVar("Size", int, float)


def add_smoke(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)


def size_or_smoke(
    description: str, name: str, kind: Callable[[str], Size], default: Size, smoke: Size, help: str
) -> Size:
    """The one optional positional size of a benchmark (rounds, repeats, seconds), or `smoke` with --smoke."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(name, nargs="?", type=kind, default=default, help=help)
    add_smoke(parser)
    args = parser.parse_args()
    return smoke if args.smoke else getattr(args, name)
