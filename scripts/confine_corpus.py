"""The confinement's campaign: the whole adversarial corpus, every case run through
``flower.shell.confine`` against a fresh hostile workspace, with each mechanism and shell.

Prints, per category and mechanism: cases run, how many the glance rules would admit, and the
four figures the confinement promises are 0 (files changed anywhere, markers from outside the
workspace printed, environment or credential markers printed, processes left running), plus the
cases that ran past their time bound and the slowest case. The shell's conditions run under bash
5.2 and, when `make system-deps` fetched it, bash 5.1; awk cases under mawk and gawk; locales C and
C.UTF-8. A harmful case is printed whole, and the workspace is built anew after it.

usage: python scripts/confine_corpus.py [--mechanisms bwrap,landlock,overlay] [--per N] [--json]
Exit status 1 if any figure is not 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "shell"))

from confine_corpus import CORPUS_LIMITS, MECHANISM_ROLE, build, corpus, describe, run, sample  # noqa: E402

from flower.shell import is_ephemeral  # noqa: E402

BASH_51 = ROOT / ".cache" / "bash-5.1" / "bin" / "bash"
FIGURES = ("changed", "outside", "leaked", "lingering", "past_bound")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mechanisms", default="bwrap,landlock,overlay")
    parser.add_argument("--per", type=int, default=0, help="cases per category (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shells = {"5.2": "/bin/bash"}
    if BASH_51.is_file():
        shells["5.1"] = str(BASH_51)
    totals: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    harmful: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="flower-corpus-"))
    started = time.monotonic()
    try:
        for mechanism in args.mechanisms.split(","):
            h = build(folder / mechanism)
            cases = corpus(h, bash51="5.1" in shells)
            if args.per:
                cases = sample(cases, args.per)
            bound = CORPUS_LIMITS[MECHANISM_ROLE[mechanism]].wall + 10
            for category, items in cases.items():
                row = totals[(category, mechanism)]
                for case in items:
                    outcome = run(h, case, mechanism, shells=shells)
                    row["cases"] += 1
                    row["admitted"] += is_ephemeral(case.command, workspace=h.ws)
                    row["changed"] += bool(outcome.changed)
                    row["outside"] += bool(outcome.outside)
                    row["leaked"] += bool(outcome.leaked)
                    row["lingering"] += bool(outcome.lingering)
                    row["past_bound"] += outcome.seconds > bound
                    row["slowest"] = max(row["slowest"], outcome.seconds)
                    row[f"bash {case.shell}"] += 1
                    if not outcome.harmless:
                        harmful.append(describe(outcome))
                        h.cleanup()
                        shutil.rmtree(h.root, ignore_errors=True)
                        h = build(folder / f"{mechanism}-{len(harmful)}")
            h.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(totals, harmful, time.monotonic() - started, as_json=args.json)
    return 1 if harmful or any(row[f] for row in totals.values() for f in FIGURES) else 0


def report(
    totals: dict[tuple[str, str], dict[str, float]], harmful: list[str], seconds: float, *, as_json: bool
) -> None:
    if as_json:
        rows = [{"category": c, "mechanism": m, **dict(v)} for (c, m), v in totals.items()]
        print(json.dumps({"rows": rows, "harmful": harmful, "seconds": round(seconds)}, indent=2))
        return
    head = f"{'category':30} {'mechanism':9} {'cases':>6} {'admitted':>8} " + " ".join(
        f"{f:>10}" for f in FIGURES
    )
    print(head + f" {'slowest':>8}")
    sums: dict[str, float] = defaultdict(float)
    for (category, mechanism), row in totals.items():
        cells = " ".join(f"{int(row[f]):>10}" for f in FIGURES)
        counts = f"{int(row['cases']):>6} {int(row['admitted']):>8}"
        print(f"{category:30} {mechanism:9} {counts} {cells} {row['slowest']:>7.1f}s")
        for key, value in row.items():
            if key != "slowest":
                sums[key] += value
    cells = " ".join(f"{int(sums[f]):>10}" for f in FIGURES)
    print(f"{'total':30} {'':9} {int(sums['cases']):>6} {int(sums['admitted']):>8} {cells}")
    shells = ", ".join(f"{k}: {int(v)}" for k, v in sorted(sums.items()) if k.startswith("bash "))
    print(f"cases by shell: {shells}; {seconds / 60:.1f} min")
    for line in harmful:
        print("HARMFUL", line)


if __name__ == "__main__":
    sys.exit(main())
