"""The `flower` command's entry point: the one module that knows every layer.

The terminal's commands are `flower.cli`'s; the demo (a rig of `flower.sim`) and the fleet's
commands sit above the terminal in the layers (tests/unit/test_layers.py), so they are handed to
it from here, each imported only when it runs (`flower --help` stays fast).
"""

from __future__ import annotations

import argparse
import sys

from .cli import main as cli_main


def _demo(args: argparse.Namespace) -> int:
    from .sim.demo import main as demo_main

    return demo_main(keep=args.keep)


def _fleet(args: argparse.Namespace) -> int:
    from .fleet import commands

    run = {
        "submit": commands.submit_command,
        "worker": commands.worker_command,
        "fleet": commands.fleet_command,
    }
    return run[args.command](args)


UPPER = {"demo": _demo, "submit": _fleet, "worker": _fleet, "fleet": _fleet}


def main(argv: list[str] | None = None) -> int:
    return cli_main(argv, upper=UPPER)


if __name__ == "__main__":
    sys.exit(main())
