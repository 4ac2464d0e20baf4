"""What does a round-boundary checkpoint cost: time and disk, on a repository of 10,000 files?

Generates a git repository (committed) of `--files` small source files in nested folders, one
`--big` MB file (over the per-file limit: recorded as skipped) and an ignored `node_modules/`
of `--modules` files, then times, with the checkpoint store of flower.core.checkpoints:

- the first checkpoint (every file read, hashed and stored);
- a checkpoint with nothing changed (every file listed and stat'ed, none read);
- a checkpoint after `--touch` files changed (only those read and stored);
- a rewind from the last checkpoint to the first (the changed files put back);

and, side by side on the same tree, `git stash create` (what a shadow-git checkpointer pays),
which writes into the repository's object store and so is timed on a copy.

    .venv/bin/python benchmarks/bench_checkpoints.py [--files 10000] [--big 50] [--touch 100] [--smoke]

Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cli import add_smoke
from flower.core.checkpoints import Checkpoints
from flower.core.rewind import rewind


def git(ws: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    return subprocess.run(
        ["git", "-C", str(ws), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def generate(ws: Path, files: int, big_mb: int, modules: int) -> None:
    ws.mkdir(parents=True)
    (ws / ".gitignore").write_text("node_modules/\nruns/\n", encoding="utf-8")
    for n in range(files):
        folder = ws / "src" / f"pkg{n % 50}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{n}.py").write_text(f"# file {n}\n" + "x = 1\n" * (20 + n % 40), encoding="utf-8")
    (ws / "data.bin").write_bytes(os.urandom(big_mb * 1024 * 1024))
    for n in range(modules):
        folder = ws / "node_modules" / f"dep{n % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"index{n}.js").write_text("module.exports = 1;\n", encoding="utf-8")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "generated")


def disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def row(label: str, seconds: float, extra: str = "") -> None:
    print(f"  {label:<48} {seconds * 1000:9.1f} ms{extra}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=50, help="MB of the one big file")
    parser.add_argument("--modules", type=int, default=2_000, help="files in the ignored node_modules/")
    parser.add_argument("--touch", type=int, default=100, help="files changed between checkpoints")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.files, args.big, args.modules, args.touch = 40, 1, 10, 5
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as tmp:
        ws = Path(tmp) / "repo"
        start = time.perf_counter()
        generate(ws, args.files, args.big, args.modules)
        print(
            f"repository: {args.files} files, a {args.big} MB file, node_modules/ of {args.modules} "
            f"(ignored), made in {time.perf_counter() - start:.1f} s"
        )
        # the big file over the per-file limit: recorded as skipped, as a 50 MB file is by default
        store = Checkpoints(ws / "runs", ws, file_limit=max(1, args.big - 1) * 1024 * 1024)
        root = ws / "runs" / "checkpoints"
        print("flower checkpoints (content-addressed, in the run folder):")
        t0 = time.perf_counter()
        first = store.take(round_no=1, phase="before")
        first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        store.take(round_no=1, phase="after")
        unchanged = time.perf_counter() - t0
        row("first checkpoint (all files stored)", first_s, f"  {disk(root) / 1e6:8.1f} MB")
        row("checkpoint, nothing changed", unchanged)
        touched = sorted(first.files)[: args.touch]
        for rel in touched:
            with (ws / rel).open("a", encoding="utf-8") as fh:
                fh.write("y = 2\n")
        before = disk(root)
        t0 = time.perf_counter()
        changed = store.take(round_no=2, phase="after")
        took = time.perf_counter() - t0
        row(
            f"checkpoint after {len(touched)} files changed",
            took,
            f"  +{(disk(root) - before) / 1e3:7.1f} KB",
        )
        print(f"  skipped: {', '.join(f'{p} ({why})' for p, why in sorted(first.skipped.items())) or 'none'}")
        print(f"  files kept per checkpoint: {len(changed.files)}")
        t0 = time.perf_counter()
        done = rewind(store, 1)
        row(f"rewind to round 1 ({len(done.plan.changes)} files put back)", time.perf_counter() - t0)
        print("git stash create (on a copy: it writes into the repository):")
        copy = Path(tmp) / "copy"
        shutil.copytree(ws, copy, symlinks=True, ignore=shutil.ignore_patterns("runs"))
        objects = copy / ".git" / "objects"
        before = disk(objects)
        for rel in touched:
            with (copy / rel).open("a", encoding="utf-8") as fh:
                fh.write("z = 3\n")
        t0 = time.perf_counter()
        git(copy, "stash", "create")
        took = time.perf_counter() - t0
        row(
            f"stash create after {len(touched)} files changed",
            took,
            f"  +{(disk(objects) - before) / 1e3:7.1f} KB",
        )
        t0 = time.perf_counter()
        git(copy, "add", "-A")
        git(copy, "stash", "create")
        row("stash create of the whole tree (add -A first)", time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
