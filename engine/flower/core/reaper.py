"""Keep every process a run starts inside that run: when the run ends, so does its tree.

Claude Code starts each Bash command in a session of its own, so neither the end of the CLI nor
a SIGKILL of flower's whole process group reaches a worker's command: it would live on as an
orphan. On Linux flower therefore starts the CLI through this supervisor (`flower-reaper`,
given the real CLI in the environment). It

- becomes a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant whose parent dies is
  re-parented to it, not to init, so the whole tree stays findable under its pid;
- leaves flower's process group (setsid): the signal that kills flower's group spares it;
- watches flower through a pidfd.

When the CLI exits, or flower dies (then the CLI gets SIGTERM, and SIGKILL after a grace
period), it kills whatever is left of the tree, reaps it and exits the way the CLI did.
It imports nothing of flower's, to start in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import shutil
import signal
import sys
import sysconfig
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

REAL_CLI = "FLOWER_REAPER_CLI"
WATCHED = "FLOWER_REAPER_PARENT"
SCRIPT = "flower-reaper"
PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 3.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


# -- the flower side ---------------------------------------------------------------------------------


def supervisor() -> str | None:
    """The `flower-reaper` next to this interpreter, where a subreaper is possible; else None."""
    if not sys.platform.startswith("linux") or not Path("/proc/self/stat").exists():
        return None
    beside = Path(sysconfig.get_path("scripts")) / SCRIPT
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(SCRIPT)


def real_cli(options: ClaudeAgentOptions) -> str | None:
    """The CLI the SDK would start: the one the options name, else the bundled one."""
    if getattr(options, "cli_path", None):
        return str(options.cli_path)
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(bundled) if bundled.is_file() else shutil.which("claude")


def contain(options: ClaudeAgentOptions) -> bool:
    """Point `options` at the supervisor, with the real CLI in its environment; False if not here."""
    script, real = supervisor(), real_cli(options)
    if script is None or real is None:
        return False
    options.env = {**(options.env or {}), REAL_CLI: real, WATCHED: str(os.getpid())}
    options.cli_path = script
    return True


# -- the supervisor ------------------------------------------------------------------------------


def descendants(root: int) -> list[int]:
    """Every live process below `root`, from /proc (children before grandchildren)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, queue = [], [root]
    while queue:
        for pid in children.get(queue.pop(0), []):
            found.append(pid)
            queue.append(pid)
    return found


def _reap(child: int) -> int | None:
    """Collect every dead child (orphans included); the CLI's wait status once it is among them."""
    status = None
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == child:
            status = code


def kill_tree() -> None:
    """SIGKILL everything below this process until nothing is left; reap it all."""
    for _ in range(200):
        left = descendants(os.getpid())
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap(-1)
        time.sleep(0.005)
    _reap(-1)


def _watch(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exit_like(status: int) -> int:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128 + os.WTERMSIG(status)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    real = os.environ.pop(REAL_CLI, "")
    watched = int(os.environ.pop(WATCHED, "0") or 0) or os.getppid()
    if not real:
        print(f"{SCRIPT}: {REAL_CLI} is not set; this is started by flower, not by hand", file=sys.stderr)
        return 127
    # without it, orphans are re-parented past us: the tree is cleaned as far as it is still seen
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with contextlib.suppress(OSError):
        os.setsid()
    pidfd = _watch(watched)
    gone = os.getppid() != watched  # flower may have died before we could watch it
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    pending: list[int] = []
    for sig in (*FORWARDED, signal.SIGCHLD):
        signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        child = os.posix_spawn(real, [real, *args], dict(os.environ))
    except OSError as exc:
        print(f"{SCRIPT}: cannot start {real}: {exc}", file=sys.stderr)
        return 127
    # the CLI owns stdin and stdout now: holding them open here would delay its EOF
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    kill_at: float | None = None
    if gone:
        os.kill(child, signal.SIGTERM)
        kill_at = time.monotonic() + GRACE_S
    status = _reap(child)
    while status is None:
        timeout = None if kill_at is None else max(0.0, kill_at - time.monotonic())
        watch = [pidfd] if pidfd is not None and not gone else []
        if pidfd is None and not gone:
            timeout = 0.5 if timeout is None else min(timeout, 0.5)  # no pidfd: poll the parent
        try:
            ready, _, _ = select.select([wake_r, *watch], [], [], timeout)
        except InterruptedError:
            ready = []
        try:
            while os.read(wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while pending:
            signum = pending.pop(0)
            if signum in FORWARDED:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signum)
        if not gone and (
            (pidfd is not None and pidfd in ready) or (pidfd is None and os.getppid() != watched)
        ):
            gone = True  # flower died without closing the run: end it here
            os.kill(child, signal.SIGTERM)
            kill_at = time.monotonic() + GRACE_S
        if kill_at is not None and time.monotonic() >= kill_at:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            kill_at = None
        status = _reap(child)
    kill_tree()
    return _exit_like(status)


if __name__ == "__main__":
    sys.exit(main())
