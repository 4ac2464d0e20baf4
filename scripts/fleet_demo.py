"""The fleet on one machine, with figures: a throwaway PostgreSQL, flower.sim as the model, worker
processes standing for machines (each its own HOME, Claude Code config and work folder), scripted
runs from local bare repositories through the real `flower` command.

For each worker count it submits the runs, starts the workers and times until every run is over
(throughput); with more than one worker it kills one with SIGKILL in the middle of a round and
measures the time from its death to its run continuing on another worker. Then it checks, from
the executions the store recorded, that every run finished and pushed its branch, none was lost
and none was executed by two workers at once.

    python scripts/fleet_demo.py                       # 12 runs with 1, 2 and 3 workers
    python scripts/fleet_demo.py --runs 4 --workers 1,2
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flower.fleet.notes import LOST
from flower.sim.fleet import FleetRig, fleet_scenario, overlaps
from flower.sim.postgres import LocalPostgres
from flower.sim.server import SimServer

REQUEST = "写一个 hello.py"


def one_fleet(
    pg: LocalPostgres, sim: SimServer, root: Path, *, workers: int, runs: int, takeover: float
) -> dict[str, Any]:
    url = pg.create_database(f"fleet_{workers}_{int(time.time() * 1000) % 10**8}")
    rig = FleetRig(root / f"workers-{workers}", url, sim.base_url, takeover_s=takeover)
    try:
        origins = [rig.origin(f"proj{i}") for i in range(runs)]
        ids = [rig.submit(origin, REQUEST, "--timeout", "0") for origin in origins]
        started = time.monotonic()
        procs = [rig.start_worker(f"w{i}") for i in range(workers)]
        killed: dict[str, Any] = {}
        if workers > 1:

            def coder_at_work() -> str | None:
                for run_id in ids:
                    if any("| * Bash" in line for line in rig.events(run_id)):
                        return run_id
                return None

            rig.wait(lambda: coder_at_work() is not None, "a coder at work")
            victim_run = coder_at_work()
            assert victim_run is not None
            holder = rig.summary(victim_run).worker
            victim = next(p for p in procs if p.name == holder)
            killed = {"run": victim_run, "worker": holder, "at": victim.kill()}
        rig.wait(lambda: rig.over(ids), "every run over", timeout=7200)
        elapsed = time.monotonic() - started
        intervals = rig.book.intervals()
        states = {r: rig.summary(r) for r in ids}
        finished = [r for r, s in states.items() if s.state == "finished" and s.outcome and s.outcome.pushed]
        pushed = [r for r, origin in zip(ids, origins, strict=True) if f"flower/{r}" in rig.branches(origin)]
        result: dict[str, Any] = {
            "workers": workers,
            "runs": runs,
            "elapsed_s": elapsed,
            "finished": len(finished),
            "pushed": len(pushed),
            "lost": runs - len(finished),
            "overlaps": len(overlaps(intervals)),
            "executions": sum(len(v) for v in intervals.values()),
        }
        if killed:
            after = [e for e in intervals[killed["run"]] if e.started_at > killed["at"]]
            continued = min(e.started_at for e in after) if after else None
            result["takeover_s"] = (continued - killed["at"]) if continued else None
            result["killed"] = killed["worker"]
            # back in the queue (the reaper's note): the part of the takeover that is the fleet's;
            # the rest is waiting for a worker with a free slot
            requeued = [e.at for e in rig.detail(killed["run"]).events if e.note and e.note.msgid == LOST]
            result["requeued_s"] = (min(requeued) - killed["at"]) if requeued else None
        return result
    finally:
        rig.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--workers", default="1,2,3", help="worker counts, comma-separated")
    parser.add_argument("--takeover", type=float, default=12.0, help="the workers' --takeover (seconds)")
    parser.add_argument("--bash-seconds", type=float, default=4.0, help="how long each coder's command takes")
    parser.add_argument("--keep", action="store_true", help="keep the folders and print where they are")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    root = Path(tempfile.mkdtemp(prefix="flower-fleet-demo-"))
    pg = LocalPostgres().start()
    sim = SimServer(fleet_scenario(bash_seconds=args.bash_seconds)).start()
    results = []
    try:
        for n in counts:
            print(
                f"-- {args.runs} runs, {n} worker(s){' (one killed mid-round)' if n > 1 else ''}", flush=True
            )
            result = one_fleet(pg, sim, root, workers=n, runs=args.runs, takeover=args.takeover)
            results.append(result)
            line = (
                f"   {result['elapsed_s']:.0f} s, {60 * result['runs'] / result['elapsed_s']:.2f} runs/min; "
                f"finished {result['finished']}/{result['runs']}, branches pushed {result['pushed']}, "
                f"lost {result['lost']}, overlapping executions {result['overlaps']}, "
                f"executions {result['executions']}"
            )
            if result.get("takeover_s") is not None:
                took, queued = result["takeover_s"], result["requeued_s"] or 0.0
                line += (
                    f"; worker {result['killed']} killed: its run back in the queue {queued:.1f} s later, "
                    f"continued elsewhere {took:.1f} s later"
                )
            print(line, flush=True)
    finally:
        sim.stop()
        pg.stop()
        if args.keep:
            print(f"folders kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    base = next((r for r in results if r["workers"] == 1), None)
    if base is not None:
        for r in results:
            print(
                f"throughput with {r['workers']} worker(s): "
                f"{base['elapsed_s'] / r['elapsed_s']:.2f}x one worker's"
            )
    bad = [r for r in results if r["lost"] or r["overlaps"] or r["pushed"] != r["runs"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
