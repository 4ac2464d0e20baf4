"""Every benchmark still runs: each script in benchmarks/ with `--smoke`, its tiny mode (seconds on
an idle machine, minutes on a busy one), which fails when the benchmark cannot run and never on a
timing. A benchmark is covered by being there: a new `benchmarks/*.py` or `*.mjs` is a new case."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# a module named with a leading underscore is a helper of the benchmarks (benchmarks/_cli.py)
BENCHMARKS = sorted(
    p for p in (ROOT / "benchmarks").iterdir() if p.suffix in (".py", ".mjs") and not p.name.startswith("_")
)
RUN_S = 900  # one benchmark's smoke run, on a busy 2-core machine

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(RUN_S + 120)]


@pytest.fixture(scope="session")
def node_env() -> dict[str, str]:
    """The environment with the extension's toolchain (Node 24, playwright-core, chromium) and its
    node_modules, as `make lint` and scripts/test-vscode.sh install them (once, cached)."""
    done = subprocess.run(
        [
            "bash",
            "-c",
            'eval "$(bash scripts/vscode-toolchain.sh --env)" && bash scripts/vscode-deps.sh && env -0',
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=1800,
    )
    assert done.returncode == 0, f"the extension's toolchain did not install:\n{done.stderr.decode()[-3000:]}"
    pairs = (item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    return dict(pairs)


def command(script: Path) -> list[str]:
    return [sys.executable if script.suffix == ".py" else "node", str(script), "--smoke"]


def test_every_benchmark_is_a_case() -> None:
    names = {p.name for p in BENCHMARKS}
    assert {"bench_lsp.py", "bench_chart.mjs", "bench_runtime.py"} <= names and len(names) >= 9


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_the_benchmark_runs(script: Path, request: pytest.FixtureRequest) -> None:
    env = request.getfixturevalue("node_env") if script.suffix == ".mjs" else dict(os.environ)
    done = subprocess.run(command(script), cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_S)
    assert done.returncode == 0, (
        f"{script.name} --smoke exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    assert done.stdout.strip(), f"{script.name} --smoke printed no figures"
