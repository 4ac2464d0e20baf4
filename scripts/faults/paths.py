"""Odd paths: random folder names (spaces, quotes, `$`, backticks, Chinese, accented letters,
long names and mixtures), each through a real two-run flow: the `flower` command, the bundled CLI,
flower.sim. Counts the runs whose second `flower` continued the first one's session without the
worker redoing its work, and folders the CLI and the SDK would key apart refused with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flower.core.lineage import Lineage
from flower.sim import oddpaths, scenarios
from flower.sim.env import isolated_env
from flower.sim.server import SimServer

from .tally import Context, Tally, shows_traceback

CLASS = "paths"
ABOUT = "random odd folder names, each through a real two-run flow (continued = same session, no redone work)"
REQUEST = "写一个 hello.py"


def _flower(ws: Path, env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "flower", *args, "--timeout", "0"]
    return subprocess.run(argv, cwd=ws, env=env, input=stdin, capture_output=True, text=True, timeout=900)


def run(ctx: Context) -> Tally:
    tally = Tally()
    for case in range(ctx.cases):
        root = ctx.workdir / f"case{case}"
        refused_kind = case % 10 == 9  # one case in ten: a name the CLI and the SDK key apart
        if refused_kind:
            make = oddpaths.astral if case % 20 == 9 else oddpaths.decomposed
            ws = root / "odd" / make(ctx.rng)
            ws.mkdir(parents=True)
        else:
            ws = oddpaths.folder(ctx.rng, root / "odd")
        label = f"case {case} {str(ws)[len(str(ctx.workdir)) :]!r}"
        tally.tried += 1
        sim = SimServer(scenarios.resumable_starter_scenario(bash_seconds=0)).start()
        try:
            env = {**os.environ, **isolated_env(sim.base_url, root / "claude"), "FLOWER_LANG": "en"}
            first = _flower(ws, env, REQUEST)
            out = first.stdout + first.stderr
            tally.tracebacks_shown += shows_traceback(out)
            if refused_kind:
                lines = [line for line in out.splitlines() if line.strip()]
                if (
                    first.returncode == 1
                    and len(lines) == 1
                    and "rename the folder" in lines[0]
                    and not sim.requests
                ):
                    tally.continued += 1  # nothing was run that could not be continued
                else:
                    tally.fail(label, f"not refused with one line: {out[-300:]!r}")
                continue
            if first.returncode != 0:
                tally.fail(label, f"first run exit {first.returncode}: {out[-300:]!r}")
                continue
            work = Lineage.open(ws / "runs", ws).steps.get("干活")
            coder = len(sim.requests_for("coder"))
            seen = len(sim.requests)
            again = _flower(ws, env, stdin="\n")
            out = again.stdout + again.stderr
            tally.tracebacks_shown += shows_traceback(out)
            asked = [
                r.headers.get("x-claude-code-session-id")
                for r in sim.requests[seen:]
                if r.actor == "coordinator"
            ]
            if (
                again.returncode == 0
                and work
                and asked
                and set(asked) == {work}
                and len(sim.requests_for("coder")) == coder
            ):
                tally.continued += 1
            else:
                tally.fail(
                    label,
                    f"second run exit {again.returncode}, sessions {set(asked)} vs {work}: {out[-600:]!r}",
                )
        except subprocess.TimeoutExpired:
            tally.unanswered += 1
            tally.fail(label, "a run did not end within 900 s")
        finally:
            sim.stop()
    tally.notes.append(f"{tally.continued} of {tally.tried} folders continued (or refused with one line)")
    return tally
