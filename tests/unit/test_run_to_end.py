"""A coroutine run from synchronous code leaves nothing behind for a closed loop: whatever it
left (a process still running, its transport in a reference cycle, an error holding the frames
that hold it) is settled before the loop closes, so the program's last lines are its own, not
"Exception ignored ... Event loop is closed". Each case runs in a fresh interpreter, as the
`flower` command does, and the collector runs after the loop closed, as it does in a real run
that goes on writing its books."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

LEAVES = {
    # the CLI's transport in a cycle, its process already over
    "a cycle, the process over": "go(); await p.wait()",
    # a process still running when the coroutine returns
    "a cycle, the process running": "pass",
    # an error escaping with the process's transport in its frames
    "an error, the process running": "raise RuntimeError('the step broke')",
    # an error escaping after the process ended, as the SDK raises on a line over its bound
    "an error, the process over": "go(); await p.wait(); raise RuntimeError('the step broke')",
    # a task still running beside, holding the process
    "a task beside, holding it": "asyncio.get_running_loop().create_task(hold(p))",
}

# The child runs until the program says go; a child still running when the loop closes ends
# only after it, whatever the machine's load. The collector runs once the child has been reaped.
PROGRAM = """
import asyncio, gc, os, sys, threading, time

GO = sys.argv[1]
PID = PROC = None

def go():
    open(GO, "w").close()

async def hold(p):
    await asyncio.sleep(3600)

class Cycle:
    pass

async def main():
    p = await asyncio.create_subprocess_exec(
        "sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.01; done', "sh", GO,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    global PID, PROC
    PID, PROC = p.pid, p
    print(p.pid, flush=True)
    c = Cycle(); c.me = c; c.p = p
    {leave}
    return "the value"

try:
    print(RUN(main()), flush=True)
except RuntimeError as exc:
    print("raised:", exc, flush=True)
print("exit", PROC.returncode, flush=True)
go()  # the books are written, the process the loop started ends

def ended(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True

while not ended(PID):
    time.sleep(0.01)
for thread in threading.enumerate():  # asyncio's child watcher thread, where there is one
    if thread.name.startswith("asyncio-waitpid"):
        thread.join()
gc.collect()
"""


def run(runner: str, leave: str, go: str) -> subprocess.CompletedProcess[str]:
    head = (
        "from flower.base.loop import run_to_end as RUN\n"
        if runner == "run_to_end"
        else "import asyncio\nRUN = asyncio.run\n"
    )
    source = head + textwrap.dedent(PROGRAM).replace("{leave}", leave)
    return subprocess.run([sys.executable, "-c", source, go], capture_output=True, text=True, timeout=300)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("case", ["a cycle, the process running", "an error, the process running"])
def test_the_harness_sees_the_leftover_with_asyncio_run(case, tmp_path):
    # the harm this module is about, with the plain asyncio.run: the checks below can fail
    done = run("asyncio.run", LEAVES[case], str(tmp_path / "go"))
    assert "Event loop is closed" in done.stderr, done.stderr


@pytest.mark.parametrize("case", sorted(LEAVES))
def test_nothing_is_left_for_a_closed_loop(case, tmp_path):
    done = run("run_to_end", LEAVES[case], str(tmp_path / "go"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    pid, *said = done.stdout.strip().splitlines()
    ended = "raised: the step broke" if "error" in case else "the value"
    # a process that ran on when the coroutine ended was killed, not waited for
    status = "exit 0" if "over" in case else "exit -9"
    assert said == [ended, status], done.stdout
    assert not alive(int(pid)), f"the process {pid} outlived the loop"


def test_an_escaping_error_keeps_where_it_failed(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(
        textwrap.dedent(
            """
        import traceback
        from flower.base.loop import run_to_end

        async def step():
            secret = "held by the frame"
            raise ValueError("the step broke")

        try:
            run_to_end(step())
        except ValueError:
            print(traceback.format_exc())
        """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'raise ValueError("the step broke")' in done.stdout and "in step" in done.stdout, done.stdout


def test_a_task_that_failed_unattended_is_reported():
    source = textwrap.dedent(
        """
        import asyncio
        from flower.base.loop import run_to_end

        async def broken():
            try:
                await asyncio.sleep(3600)
            finally:
                raise OSError("the beside task broke on its way out")

        async def main():
            asyncio.get_running_loop().create_task(broken())
            await asyncio.sleep(0)
            return 7

        print(run_to_end(main()))
        """
    )
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "7", done.stderr
    assert "the beside task broke on its way out" in done.stderr, done.stderr
