"""Fault campaign: the faults of a real machine, by class, each with generated cases, run against
the real parts. Prints, per class and in total: cases tried, runs continued, files lost or
corrupted, tracebacks shown to a person and requests unanswered (the last three must be 0).

The classes are the modules of scripts/faults/ (one per class; see scripts/faults/tally.py for
what a class is). `scripts/kill_campaign.py` is the older sibling for kills during a run.

usage: python scripts/fault_campaign.py [--only NAME[,NAME...]] [--cases N] [--seed S]
                                        [--json] [--keep DIR] [--list]
Exit status 1 if any class broke a promise.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from faults.tally import Context, Tally

FIGURES = ("tried", "continued", "lost_or_corrupted", "tracebacks_shown", "unanswered")


def classes() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for path in sorted((Path(__file__).resolve().parent / "faults").glob("*.py")):
        if path.stem in ("__init__", "tally") or path.stem.startswith("_"):
            continue
        module = importlib.import_module(f"faults.{path.stem}")
        name = getattr(module, "CLASS", None)
        if isinstance(name, str) and callable(getattr(module, "run", None)):
            found[name] = module
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="comma-separated class names (default: all)")
    parser.add_argument("--cases", type=int, default=20, help="cases per class (default 20)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep", type=Path, default=None, help="keep every case's folder under DIR")
    parser.add_argument("--list", action="store_true", help="list the classes and exit")
    args = parser.parse_args()
    known = classes()
    if args.list:
        for name, module in known.items():
            print(f"{name:12} {getattr(module, 'ABOUT', '')}")
        return 0
    wanted = [n for n in args.only.split(",") if n] or list(known)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        parser.error(f"unknown class {', '.join(unknown)}; known: {', '.join(known)}")
    seed = args.seed if args.seed is not None else int(time.time())
    root = args.keep or Path(tempfile.mkdtemp(prefix="flower-faults-"))
    results: dict[str, Tally] = {}
    seconds: dict[str, float] = {}
    try:
        for name in wanted:
            workdir = root / name
            workdir.mkdir(parents=True, exist_ok=True)
            ctx = Context(
                rng=random.Random(f"{seed}:{name}"), cases=args.cases, workdir=workdir, keep=bool(args.keep)
            )
            began = time.monotonic()
            try:
                results[name] = known[name].run(ctx)
            except Exception as exc:  # a class that crashes is a broken promise of the campaign itself
                tally = Tally()
                tally.fail("campaign", f"the class crashed: {type(exc).__name__}: {exc}")
                results[name] = tally
            seconds[name] = time.monotonic() - began
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    total = Tally()
    for tally in results.values():
        for figure in FIGURES:
            setattr(total, figure, getattr(total, figure) + getattr(tally, figure))
    if args.json:
        payload = {
            "seed": seed,
            "classes": {n: {**asdict(t), "seconds": round(seconds[n], 1)} for n, t in results.items()},
            "total": {f: getattr(total, f) for f in FIGURES},
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(f"fault campaign, seed {seed}")
        header = f"{'class':12} {'tried':>6} {'continued':>9} {'lost':>5} {'tracebacks':>10} "
        header += f"{'unanswered':>10} {'s':>6}"
        print(header)
        for name, t in results.items():
            print(
                f"{name:12} {t.tried:6} {t.continued:9} {t.lost_or_corrupted:5} {t.tracebacks_shown:10} "
                f"{t.unanswered:10} {seconds[name]:6.0f}"
            )
        print(
            f"{'total':12} {total.tried:6} {total.continued:9} {total.lost_or_corrupted:5} "
            f"{total.tracebacks_shown:10} {total.unanswered:10}"
        )
        for name, t in results.items():
            for note in t.notes:
                print(f"  {name}: {note}")
            for line in t.broken:
                print(f"  BROKEN {name}: {line}")
    return 0 if all(t.ok for t in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
