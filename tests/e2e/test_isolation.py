"""Tests never leave the machine and never write outside their temp folders.

The CLI is run under strace: its connect() calls and every call that writes a path are the
ground truth (the SDK's own Python side is covered by the loopback guard that flower.sim's
fixtures install). Nothing here looks at what other processes on the machine write.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import claude_agent_sdk
import pytest
from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, query

pytestmark = pytest.mark.e2e

BUNDLED_CLI = Path(claude_agent_sdk.__path__[0]) / "_bundled" / "claude"


# every call that creates, opens for writing, renames or removes a path
WRITE_CALLS = ",".join(
    [
        *("open", "openat", "creat", "truncate"),
        *("mkdir", "mkdirat", "rmdir", "unlink", "unlinkat"),
        *("rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat"),
    ]
)
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+)(?:<([^>]*)>)?")
_LINE = re.compile(r"^(\d+)\s+(.*)$")
_RESUMED = re.compile(r"^<\.\.\. \w+ resumed>(.*)$")
_UNFINISHED = " <unfinished ...>"
_PATH_ARG = re.compile(r'(?:\d+<([^>]*)>, )?"([^"]*)"')
_VIA_FD = re.compile(r"^/proc/self/fd/(\d+)(/.*)?$")
_WRITES = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")


def written_paths(trace: str, cwd: Path) -> set[str]:
    """Every path a successful call in an `strace -f -y` log wrote, created or removed."""
    fds: dict[str, str] = {}  # the directory each fd number was opened on, last one wins
    out: set[str] = set()
    started: dict[str, str] = {}  # a call another thread interrupted, until it resumes
    for raw in trace.splitlines():
        match = _LINE.match(raw)
        tid, line = match.groups() if match else ("", raw)
        if line.endswith(_UNFINISHED):
            started[tid] = line[: -len(_UNFINISHED)]
            continue
        resumed = _RESUMED.match(line)
        if resumed:
            line = started.pop(tid, "") + resumed.group(1)
        match = _CALL.match(line)
        if match is None:
            continue
        name, args, result, target = match.groups()
        if result.startswith("-") or name == "connect":
            continue
        if target and ("O_DIRECTORY" in args or "O_PATH" in args):
            fds[result] = target  # "/proc/self/fd/N/name" always names a directory fd
        if name in ("open", "openat") and not _WRITES.search(args):
            continue
        for base, path in _PATH_ARG.findall(args):
            via = _VIA_FD.match(path)
            if via:
                path = fds.get(via.group(1), path) + (via.group(2) or "")
            out.add(os.path.normpath(path if path.startswith("/") else os.path.join(base or str(cwd), path)))
    return out


async def test_the_cli_connects_only_to_loopback_and_writes_only_temp_dirs(
    sim_factory, sim_env, workspace, tmp_path, monkeypatch, request
):
    assert shutil.which("strace"), "strace is missing: the README's test command installs it (apt)"
    # The SDK hands the CLI this process's whole environment: what the machine (a proxy, XDG
    # folders, TMPDIR) or an earlier test in this worker left there must not decide where the
    # CLI goes. The CLI sees PATH, the locale and what isolated_env gives it, nothing else.
    for name in list(os.environ):
        if name not in ("PATH", "LANG", "LC_ALL"):
            monkeypatch.delenv(name)
    log = tmp_path / "connect.log"
    wrapper = tmp_path / "claude-traced"
    # exec, so that stopping the run stops the CLI (a plain child would be orphaned)
    calls = f"connect,{WRITE_CALLS}"
    wrapper.write_text(f'#!/bin/sh\nexec strace -f -qq -y -e trace={calls} -o "{log}" "{BUNDLED_CLI}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    sim = sim_factory(
        {
            "actors": {"coder": {"system": "You are the isolation coder"}},
            "scripts": {
                "main": [
                    {
                        "tool": {
                            "name": "Agent",
                            "input": {
                                "subagent_type": "coder",
                                "description": "d",
                                "prompt": "p",
                                "run_in_background": False,
                            },
                        }
                    },
                    "done",
                ],
                "coder": [{"tool": {"name": "Bash", "input": {"command": "ls"}}}, "listed"],
            },
        }
    )
    env = sim_env(sim)
    env["TMPDIR"] = env["CLAUDE_CODE_TMPDIR"]
    # the CLI's messaging socket goes to $XDG_RUNTIME_DIR/cc-socks, else its temp folder; a
    # path over a Unix socket's ~104 bytes (a test's tmp_path under xdist is longer) falls back
    # to /tmp/cc-socks-<uid>: a short runtime folder of this test's own keeps it in
    runtime_dir = Path(tempfile.mkdtemp(prefix="fl-"))
    request.addfinalizer(lambda: shutil.rmtree(runtime_dir, ignore_errors=True))
    env["XDG_RUNTIME_DIR"] = str(runtime_dir)
    options = ClaudeAgentOptions(
        cwd=str(workspace),
        env=env,
        cli_path=str(wrapper),
        setting_sources=[],
        allowed_tools=["Agent", "Bash"],
        agents={
            "coder": AgentDefinition(
                description="lists", prompt="You are the isolation coder.", tools=["Bash"]
            )
        },
        stderr=lambda line: None,
    )
    async for _ in query(prompt="go", options=options):
        pass

    inet = [line for line in log.read_text().splitlines() if "connect(" in line and "AF_INET" in line]
    addresses = [
        m.group(1)
        for line in inet
        for m in [re.search(r'inet_(?:addr|pton)\((?:AF_INET6, )?"([^"]+)"', line)]
        if m
    ]
    assert len(addresses) == len(inet), f"unparsed connect lines: {inet}"
    assert f"htons({sim.port})" in "\n".join(inet), (
        "the CLI never reached flower.sim: the trace proves nothing"
    )
    assert set(addresses) <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}, (
        f"non-loopback connects: {set(addresses)}"
    )
    written = written_paths(log.read_text(), workspace)
    assert any(p.startswith(str(tmp_path / "claude")) for p in written), "the trace saw no write at all"
    ours = (str(tmp_path), str(runtime_dir))
    outside = sorted(p for p in written if not p.startswith(ours) and p != os.devnull)
    seen = [line for line in log.read_text().splitlines() if any(p in line for p in outside)]
    assert outside == [], f"the CLI wrote outside its temp folders: {outside}\n" + "\n".join(seen[:20])
    assert any((tmp_path / "claude" / "claude-config" / "projects").rglob("*.jsonl")), (
        "transcripts went elsewhere"
    )
