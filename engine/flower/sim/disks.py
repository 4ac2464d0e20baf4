"""Small real disks for fault tests: a tmpfs of a given size, filled to the brim on demand,
remounted read-only, made to refuse even root (an immutable folder).

Needs root (``mount``); `available()` says whether this machine lets us. Every disk is unmounted
when its block ends, failing or not (lazily: a process that still holds a file open cannot keep
it mounted), and one left behind by a test process that was killed outright is unmounted by
the next one: each mount point names the pid that made it (`sweep`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "flower-disk-"
FILLER = ".filler"


def available() -> str | None:
    """None when tmpfs disks can be made here; else why not, in one line."""
    if os.geteuid() != 0:
        return "needs root (mount -t tmpfs)"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount/umount are not installed"
    try:
        with tmpfs(1 << 20):
            return None
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"mount -t tmpfs failed: {exc}"


def _mounts() -> list[str]:
    try:
        rows = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    return [row.split()[1].replace("\\040", " ") for row in rows if len(row.split()) > 1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep() -> list[str]:
    """Unmount every disk of this module whose maker is dead; the mount points it freed."""
    freed = []
    for point in _mounts():
        name = Path(point).name
        if not name.startswith(PREFIX):
            continue
        try:
            pid = int(name[len(PREFIX) :].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _alive(pid):
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)
            with contextlib.suppress(OSError):
                os.rmdir(point)
            freed.append(point)
    return freed


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@contextlib.contextmanager
def tmpfs(size: int, *, parent: str | Path | None = None) -> Iterator[Path]:
    """A fresh tmpfs of `size` bytes mounted for the block; unmounted after it, whatever happens."""
    sweep()
    point = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
    try:
        _run("mount", "-t", "tmpfs", "-o", f"size={max(size, 4096)},mode=0755", "tmpfs", str(point))
    except BaseException:
        os.rmdir(point)
        raise
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)
        with contextlib.suppress(OSError):
            os.rmdir(point)


def fill(disk: Path, *, leave: int = 0) -> int:
    """Take every free byte of `disk` but `leave` (a filler file); how many bytes it took."""
    st = os.statvfs(disk)
    room = max(st.f_bavail * st.f_frsize - leave, 0)
    taken = 0
    try:
        # unbuffered: every byte is written by the call that counts it, and closing has nothing
        # left to flush onto a disk that is full by then
        fh = open(disk / FILLER, "ab", buffering=0)  # noqa: SIM115 - closed below, after the loop
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return 0  # the run filled it first: not even the filler's name fits, it is full
        raise
    with fh:
        block = b"\0" * (1 << 20)
        while taken < room:
            try:
                wrote = fh.write(block[: min(len(block), room - taken)])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
            if not wrote:
                break
            taken += wrote
    return taken


def free(disk: Path) -> None:
    """Give back what `fill` took."""
    (disk / FILLER).unlink(missing_ok=True)


def remount(disk: Path, *, read_only: bool) -> bool:
    """Make a mounted disk read-only (writes fail with EROFS) or writable again; whether it could.

    The kernel refuses a read-only remount while a file on the disk is open for writing (a
    database, a lock): a caller that must have it tries again at its next point."""
    done = subprocess.run(
        ["mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(disk)], capture_output=True
    )
    return done.returncode == 0


def immutable(folder: Path, on: bool = True) -> bool:
    """Make `folder` refuse new entries even to root (chattr +i: EPERM); whether it could."""
    done = subprocess.run(["chattr", "+i" if on else "-i", str(folder)], capture_output=True)
    return done.returncode == 0


__all__ = ["available", "fill", "free", "immutable", "remount", "sweep", "tmpfs"]
