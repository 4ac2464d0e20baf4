"""Serve a scenario in its own process: ``python -m flower.sim serve --scenario starter``.

Prints the base URL on the first line of stdout, then serves until stdin closes or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from .long_run import NAMED as LONG_RUNS
from .scenario import Scenario, ScenarioError
from .scenarios import NAMED
from .server import SimServer

SCENARIOS = {**NAMED, **LONG_RUNS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flower.sim", description="flower.sim: a scripted Messages API on 127.0.0.1"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a scenario until stdin closes or SIGTERM")
    source = serve.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", choices=sorted(SCENARIOS), help="a built-in scenario")
    source.add_argument("--file", help="a scenario file (.json, .yaml)")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    serve.add_argument("--log", help="write every recorded request as JSON lines here on exit")
    args = parser.parse_args(argv)
    try:
        scenario = SCENARIOS[args.scenario]() if args.scenario else Scenario.load(args.file)
        sim = SimServer(scenario, port=args.port).start()
    except (ScenarioError, RuntimeError) as exc:
        print(f"flower.sim: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(sim.base_url, flush=True)

    def until_stdin_closes() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if args.log:
            with open(args.log, "w", encoding="utf-8") as fh:
                for rec in sim.requests:
                    fh.write(
                        json.dumps(
                            {"actor": rec.actor, "reply": rec.reply, "body": rec.body}, ensure_ascii=False
                        )
                        + "\n"
                    )
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
