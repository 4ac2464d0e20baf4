"""Clock jumps: the wall clock of a running `flower once` (libfaketime on flower's own process;
the bundled CLI does not start under it) jumps backwards or forwards by a random amount at a random
point of the step (before the model answers, between two turns), then a second wake runs on the
true clock. Counts negative or impossible durations, histories out of the order the wakes ran in,
and waits that never end (a run not over within 300 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from flower.sim.env import isolated_env
from flower.sim.server import SimServer
from flower.workflow.history import read_history

from .tally import Context, Tally, shows_traceback

CLASS = "clock"
ABOUT = (
    "wall-clock jumps at random points of a real step (negative durations, reordered history, endless waits)"
)
LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
FAKED_FLOWER = (
    "import os, sys; os.environ.pop('LD_PRELOAD', None); "
    "from flower.__main__ import main; sys.exit(main(sys.argv[1:]))"
)


def run(ctx: Context) -> Tally:
    tally = Tally()
    if not LIB.is_file():
        tally.fail("campaign", "libfaketime is missing: run `make system-deps`")
        return tally
    for case in range(ctx.cases):
        root = ctx.workdir / f"case{case}"
        ws = root / "ws"
        ws.mkdir(parents=True)
        jump = ctx.rng.choice(["-", "+"]) + str(ctx.rng.choice([1, 5, 30, 3600, 7200, 86_400, 400_000]))
        at = ctx.rng.choice(["first", "second"])  # which model turn the jump happens before
        label = f"case {case}: jump {jump} s before the {at} turn"
        turns = [
            {"text": "tool", "tool": {"name": "Bash", "input": {"command": "echo ok", "description": "x"}}},
            {"text": "done"},
        ]
        turns[0 if at == "first" else 1]["hold"] = "jump"
        stamp = root / "clock"
        stamp.write_text("+0\n")
        tally.tried += 1
        sim = SimServer({"scripts": {"main": [*turns, {"text": "again"}]}}).start()
        try:
            env = {
                **os.environ,
                **isolated_env(sim.base_url, root / "claude"),
                "LD_PRELOAD": str(LIB),
                "FAKETIME_TIMESTAMP_FILE": str(stamp),
                "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                "FAKETIME_DISABLE_SHM": "1",
            }
            argv = [sys.executable, "-c", FAKED_FLOWER, "once", "说一句话"]
            began = time.monotonic()
            proc = subprocess.Popen(
                argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            want = 1 if at == "first" else 2
            deadline = time.monotonic() + 300
            while len(sim.requests) < want and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            stamp.write_text(f"{jump}\n")
            sim.release("jump")
            out, _ = proc.communicate(timeout=300)
            took = time.monotonic() - began
            tally.tracebacks_shown += shows_traceback(out)
            rows = json.loads((ws / "runs" / "manifest.json").read_text())
            duration = rows[-1]["duration_s"]
            if proc.returncode != 0 or not 0 <= duration <= took + 1:
                tally.fail(label, f"exit {proc.returncode}, duration {duration} s of {took:.1f} s")
                continue
            stamp.write_text("+0\n")
            second = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
            tally.tracebacks_shown += shows_traceback(second.stdout + second.stderr)
            rows = json.loads((ws / "runs" / "manifest.json").read_text())
            history = read_history(ws)
            order = list(dict.fromkeys(r["run"] for r in rows))
            if [w.run for w in history.wakes] != order or any(w.duration_s < 0 for w in history.wakes):
                tally.fail(label, f"history {[w.run for w in history.wakes]} vs manifest {order}")
                continue
            tally.continued += 1
        except subprocess.TimeoutExpired:
            tally.unanswered += 1
            tally.fail(label, "a run did not end within 300 s (an endless wait)")
        finally:
            sim.stop()
    return tally
