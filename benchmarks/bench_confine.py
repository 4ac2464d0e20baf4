"""What confinement costs: one glance and one judged check, confined and not, side by side.

For each command it prints the median wall time of: the command run by bash (unconfined), the
same through ``flower.shell.confine`` with bubblewrap, with Landlock (the path a glance takes
inside the CLI's own sandbox), and as the judge's throw-away overlay; then what ``plan`` itself
costs (walking the workspace for its hidden files), first walk and cached. Prints figures;
asserts nothing.

usage: python benchmarks/bench_confine.py [REPEAT] [--workspace DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _cli import add_smoke
from flower.shell import plan, view

GLANCES = ["true", "git status --short", "ls -la", "cat README.md", "grep -rn TODO ."]
CHECKS = ["python3 -c 'print(1)'", "git log --oneline | head -5"]


def timed(argv: list[str], cwd: Path, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs) * 1000


def workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    for i in range(200):
        (ws / "src" / f"m{i}.py").write_text(f"# TODO {i}\n" + "x = 1\n" * 50)
    (ws / "README.md").write_text("# bench\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    identity = ["-c", "user.name=b", "-c", "user.email=b@x.invalid"]
    subprocess.run(["git", *identity, "commit", "-qm", "bench"], cwd=ws, check=True)
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "repeat", nargs="?", type=int, default=7, help="runs per cell (the median is printed)"
    )
    parser.add_argument("--workspace", type=Path, help="a workspace of yours instead of the generated one")
    add_smoke(parser)
    args = parser.parse_args()
    repeat = 1 if args.smoke else args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        ws = args.workspace.resolve() if args.workspace else workspace(Path(tmp))
        print(f"workspace {ws}, median of {repeat} runs, milliseconds")
        print(f"{'command':32} {'bash':>8} {'bwrap':>8} {'landlock':>9} {'judge':>8}")
        for cmd in [*GLANCES, *CHECKS]:
            cells = [timed(["bash", "-c", cmd], ws, repeat)]
            for role, mechanism in (("glance", "bwrap"), ("glance", "landlock"), ("judge", "overlay")):
                argv = plan(cmd, workspace=ws, role=role, mechanisms=(mechanism,)).argv  # type: ignore[arg-type]
                cells.append(timed(argv, ws, repeat))
            print(f"{cmd:32} {cells[0]:>8.1f} {cells[1]:>8.1f} {cells[2]:>9.1f} {cells[3]:>8.1f}")
        view._verdicts.clear()
        view._listings.clear()
        started = time.perf_counter()
        plan("true", workspace=ws)
        first = (time.perf_counter() - started) * 1000
        again = []
        for _ in range(repeat):
            started = time.perf_counter()
            plan("true", workspace=ws)
            again.append(time.perf_counter() - started)
        cached = statistics.median(again)
        print(f"plan(): first walk of the workspace {first:.1f} ms, then {cached * 1000:.1f} ms (cached)")


if __name__ == "__main__":
    main()
