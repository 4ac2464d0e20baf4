"""Byte soups: random tool output through the real CLI (`flower once`, the bundled CLI,
flower.sim): invalid UTF-8, NUL bytes, encoded lone surrogates, enormous lines, outputs up to
100 MB, and worker-sized reports. Counts crashes and tracebacks, and spill files that differ from
what the CLI delivered (a spill is named by the hash of its text: a torn or altered one shows)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from flower.sim.env import isolated_env
from flower.sim.server import SimServer

from .tally import Context, Tally, shows_traceback

CLASS = "bytes"
ABOUT = "random byte soups and sizes up to 100 MB through the real CLI (crashes, tracebacks, altered spills)"
SOUPS = (b"\xff\xfe", b"\x00", b"\xed\xa0\x80", b"\xe4\xb8", b"\xc3\x28", b"\x1b[31m", b"\r", "花".encode())
MB = 1000 * 1000


def _command(rng: object, root: Path, case: int) -> tuple[str, str]:
    import random

    assert isinstance(rng, random.Random)
    kind = rng.choice(["soup", "line", "huge"])
    if kind == "soup":
        data = b"".join(
            rng.choice(SOUPS) + bytes(rng.randrange(32, 127) for _ in range(rng.randint(0, 40)))
            for _ in range(rng.randint(50, 4000))
        )
        blob = root / f"soup{case}.bin"
        blob.write_bytes(data)
        return kind, f"cat '{blob}'"
    if kind == "line":  # one enormous line, no newline at all
        return kind, f"head -c {rng.randint(1, 20) * MB} /dev/zero | tr '\\\\0' x"
    return kind, f"head -c {rng.randint(1, 100) * MB} /dev/urandom"


def _spills_intact(ws: Path) -> list[str]:
    bad = []
    spill = ws / ".flower" / "spill"
    for path in sorted(spill.glob("*.txt")) if spill.is_dir() else []:
        if hashlib.sha256(path.read_bytes()).hexdigest()[:16] != path.stem:
            bad.append(path.name)
    return bad


def run(ctx: Context) -> Tally:
    tally = Tally()
    largest = 0
    for case in range(ctx.cases):
        root = ctx.workdir / f"case{case}"
        ws = root / "ws"
        ws.mkdir(parents=True)
        kind, command = _command(ctx.rng, root, case)
        label = f"case {case} {kind}: {command[:60]}"
        scenario = {
            "scripts": {
                "main": [
                    {"tool": {"name": "Bash", "input": {"command": command, "description": "output"}}},
                    {"text": "done"},
                ]
            }
        }
        tally.tried += 1
        sim = SimServer(scenario).start()
        try:
            env = {**os.environ, **isolated_env(sim.base_url, root / "claude"), "FLOWER_LANG": "en"}
            argv = [sys.executable, "-m", "flower", "once", "run it"]
            done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, timeout=900)
            out = (done.stdout + done.stderr).decode("utf-8", "replace")
            tally.tracebacks_shown += shows_traceback(out)
            if done.returncode != 0:
                tally.fail(label, f"exit {done.returncode}: {out[-300:]!r}")
                continue
            bad = _spills_intact(ws)
            tally.lost_or_corrupted += len(bad)
            db = ws / "runs" / "sessions.db"
            with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
                if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    tally.lost_or_corrupted += 1
            shown = sim.requests[-1].tool_results() if sim.requests else []
            largest = max(largest, *(len(str(r.get("content"))) for r in shown), 0)
            tally.continued += 1
        except subprocess.TimeoutExpired:
            tally.unanswered += 1
            tally.fail(label, "the run did not end within 900 s")
        finally:
            sim.stop()
    tally.notes.append(f"largest tool result the model was shown: {largest} characters")
    return tally
