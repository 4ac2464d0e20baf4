"""Run a coroutine to its end from synchronous code, leaving nothing behind for a closed loop.

`asyncio.run` closes its loop and returns; whatever the coroutine left in reference cycles (the
Claude Code CLI's subprocess transport inside an error's frames, a cancelled task's locals) is
found by the garbage collector later, and a transport collected after its loop closed prints
"Exception ignored ... Event loop is closed" with a traceback. Which object ends up in a cycle
depends on where a run broke, so rather than collecting after each known failure, `run_to_end`
settles everything while the loop still runs: the other tasks are cancelled and awaited, every
process started on the loop has ended (a straggler is killed) and its transport is closed, an
escaping error's frames let go of their locals, the collector runs and the close callbacks it
scheduled are taken. The loop knows its processes because it starts them: `subprocess_exec` is
the one door `asyncio.create_subprocess_exec` (and anyio, the SDK's runner) goes through.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import traceback
import weakref
from collections.abc import Callable, Coroutine
from typing import TypeVar

__all__ = ["run_to_end"]

T = TypeVar("T")
P = TypeVar("P", bound=asyncio.BaseProtocol)
_TICKS = 3  # a collected transport's close schedules callbacks that schedule one more
_REAP_SECONDS = 30.0  # the longest wait for a killed process to be reaped (one stuck in the kernel)
_POLL_SECONDS = 0.01


class _ProcessLoop(asyncio.SelectorEventLoop):
    """The default loop, which also remembers the processes it started."""

    def __init__(self) -> None:
        super().__init__()
        self.processes: weakref.WeakSet[asyncio.SubprocessTransport] = weakref.WeakSet()

    async def subprocess_exec(
        self, protocol_factory: Callable[[], P], *args: object, **kwargs: object
    ) -> tuple[asyncio.SubprocessTransport, P]:
        transport, protocol = await super().subprocess_exec(protocol_factory, *args, **kwargs)  # type: ignore[arg-type]  # passed on as given
        self.processes.add(transport)
        return transport, protocol

    async def subprocess_shell(
        self, protocol_factory: Callable[[], P], cmd: str | bytes, **kwargs: object
    ) -> tuple[asyncio.SubprocessTransport, P]:
        transport, protocol = await super().subprocess_shell(protocol_factory, cmd, **kwargs)  # type: ignore[arg-type]  # passed on as given
        self.processes.add(transport)
        return transport, protocol


def run_to_end(main: Coroutine[object, object, T]) -> T:
    """`asyncio.run(main)`, with the leftovers of `main` settled before the loop closes."""
    with asyncio.Runner(loop_factory=_ProcessLoop) as runner:
        try:
            return runner.run(main)
        except BaseException as exc:
            _let_go(exc)
            raise
        finally:
            runner.run(_settle())


def _let_go(exc: BaseException) -> None:
    """Drop the locals of the frames an escaping error holds; where it failed is kept."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        err = todo.pop()
        if err is None or id(err) in seen:
            continue
        seen.add(id(err))
        traceback.clear_frames(err.__traceback__)  # skips the frames still running
        todo += [err.__cause__, err.__context__]


async def _settle() -> None:
    me = asyncio.current_task()
    await _cancel([task for task in asyncio.all_tasks() if task is not me])
    loop = asyncio.get_running_loop()
    if isinstance(loop, _ProcessLoop):
        await _end(list(loop.processes))
    gc.collect()
    for _ in range(_TICKS):
        await asyncio.sleep(0)


async def _cancel(rest: list[asyncio.Task[object]]) -> None:
    """Cancel and await the tasks `main` left running; their results die with this frame."""
    for task in rest:
        task.cancel()
    results = await asyncio.gather(*rest, return_exceptions=True)
    loop = asyncio.get_running_loop()
    for task, result in zip(rest, results, strict=True):
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            # as asyncio.run does: a task that failed while no one awaited it is reported
            loop.call_exception_handler(
                {"message": "a task failed while the run ended", "exception": result, "task": task}
            )


async def _end(processes: list[asyncio.SubprocessTransport]) -> None:
    """Kill what still runs, wait until the loop has heard each exit, then close the transports.

    The signal goes by pid, not by `transport.kill()`: Popen polls (reaps) before it signals, and a
    child reaped behind the loop's watcher is reported as "unknown" with exit status 255. Only a
    process the loop has not yet heard end is signalled, so the pid is still its own: unreaped, or
    a zombie, which takes the signal harmlessly."""
    for _ in range(_TICKS):  # exits the watcher already saw reach the transports first
        await asyncio.sleep(0)
    for transport in processes:
        if transport.get_returncode() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(transport.get_pid(), signal.SIGKILL)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _REAP_SECONDS
    # polled: the exit reaches the transport through asyncio's child watcher, which has no public awaitable
    while any(t.get_returncode() is None for t in processes) and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(_POLL_SECONDS)
    for transport in processes:
        transport.close()
