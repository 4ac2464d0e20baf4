"""Workers in the CLI's Bash sandbox, against the real CLI: what they can and cannot do.

Every claim is read from its effect: the file that is or is not on disk, the requests the test's
own HTTP server did or did not receive, what the command printed. `off` is the control: the
same commands, unconfined, all succeed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from flower import Runtime, coordinator, worker
from flower.core.sandbox import SandboxPolicy
from flower.sim.env import isolated_env
from flower.sim.scenarios import delegate

pytestmark = pytest.mark.e2e

MARKER = "id-rsa-marker-5b1f"
PROBE = """\
import sys, urllib.request
url = sys.argv[1]
try:
    with urllib.request.urlopen(url, timeout=5) as reply:
        print("REACHED", url, reply.status)
except Exception as exc:
    print("FAILED", url, type(exc).__name__, exc)
"""


class Hits(ThreadingHTTPServer):
    paths: list[str]


@pytest.fixture
def server() -> Iterator[Hits]:
    """An HTTP server on every address of this machine that counts who reached it."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.server.paths.append(self.path)  # type: ignore[attr-defined]  # Hits, set below
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"pong")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = Hits(("0.0.0.0", 0), Handler)
    httpd.paths = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def lan_ip() -> str:
    """An address of this machine that is not loopback: "another host" as a command sees it."""
    found = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    ipv4 = [a for a in found if "." in a and not a.startswith("127.")]
    assert ipv4, "this test needs a non-loopback IPv4 address on this machine"
    return ipv4[0]


@pytest.fixture
def home(claude_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own with a private key in it (the sandbox's list is home-relative): the one
    the sim's isolated environment gives the CLI, set here too for flower's own process."""
    home = claude_root / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(MARKER)
    monkeypatch.setenv("HOME", str(home))
    return home


def bash(command: str) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "probe"}}}


def commands(ws: Path, outside: Path, probe: Path, port: int, lan: str) -> list[str]:
    py = sys.executable
    return [
        "echo in > inside.txt && echo wrote-inside",
        f"echo out > {outside}/shell.txt",
        f"{py} -c \"open('{outside}/python.txt', 'w').write('x')\"",
        # a hook planted where git would look once someone runs `git init` here
        f"{py} -c \"import os; os.makedirs('.git/hooks'); open('.git/hooks/pre-commit', 'w').write('x')\"",
        f"{py} {probe} http://127.0.0.1:{port}/loopback",
        f"{py} {probe} http://{lan}:{port}/other-host",
        'echo "tmp=$TMPDIR" && touch "$TMPDIR/scratch" && echo tmp-writable',
        "cat ~/.ssh/id_rsa",
    ]


async def run_worker(
    ws: Path, tmp_path: Path, use_sim: Any, script: list[str], sandbox: Any
) -> tuple[list[str], Any]:
    sim = use_sim(
        {
            "actors": {"coder": {"system": "你负责实现"}},
            "scripts": {
                "main": [
                    delegate("run the probes"),
                    "done",
                ],
                "coder": [*[bash(c) for c in script], "结论:跑完了"],
            },
        }
    )
    rt = Runtime(workspace=ws, run_dir=tmp_path / "runs", sandbox=sandbox)
    try:
        boss = coordinator("协调者", "", {"coder": worker("写代码", "你负责实现。")})
        result = await rt.run(boss, "probe the walls")
        private_tmp = rt.sandbox_tmp
    finally:
        rt.close()
    assert result.ok, result.error
    shown = [str(r["content"]) for r in sim.last("coder").tool_results()]
    assert len(shown) == len(script)
    return shown, private_tmp


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    return ws, outside, probe


async def test_a_sandboxed_worker_writes_only_in_the_workspace_and_reaches_no_one(
    use_sim, tmp_path, places, server, lan_ip, home
):
    ws, outside, probe = places
    script = commands(ws, outside, probe, server.server_address[1], lan_ip)
    shown, private_tmp = await run_worker(ws, tmp_path, use_sim, script, "require")

    assert (ws / "inside.txt").read_text() == "in\n" and "wrote-inside" in shown[0]
    assert not (outside / "shell.txt").exists() and "Read-only file system" in shown[1]
    assert not (outside / "python.txt").exists() and "Read-only file system" in shown[2]
    assert not (ws / ".git").exists()  # no hook for a later `git init` to find
    assert "FAILED http://127.0.0.1" in shown[4] and "FAILED http://" + lan_ip in shown[5]
    assert server.paths == []  # nobody knocked, whichever address they tried
    assert "sandbox_violations" in shown[5] and "not on the allow list" in shown[5]
    # a temporary folder of this run's own, not the per-user one every session shares
    assert private_tmp is not None and f"tmp={private_tmp}/claude-" in shown[6] and "tmp-writable" in shown[6]
    assert not private_tmp.exists()  # removed with the Runtime
    assert MARKER not in shown[7]


async def test_a_sandboxed_worker_works_under_a_temp_folder_too_long_for_sockets(
    use_sim, tmp_path, places, home, monkeypatch
):
    # a $TMPDIR whose path leaves no room for the sandbox's proxy sockets (a deep CI workspace):
    # the CLI's bridges would fail to bind and every sandboxed command with them
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads $TMPDIR again
    ws, _outside, _probe = places
    script = ["echo in > inside.txt && echo wrote-inside", 'echo "tmp=$TMPDIR"']
    shown, private_tmp = await run_worker(ws, tmp_path, use_sim, script, "require")
    assert (ws / "inside.txt").read_text() == "in\n" and "wrote-inside" in shown[0]
    assert private_tmp is not None and not private_tmp.is_relative_to(deep)
    assert f"tmp={private_tmp}/claude-" in shown[1]


async def test_control_with_the_sandbox_off_the_same_commands_all_succeed(
    use_sim, tmp_path, places, server, lan_ip, home
):
    ws, outside, probe = places
    script = commands(ws, outside, probe, server.server_address[1], lan_ip)
    shown, private_tmp = await run_worker(ws, tmp_path, use_sim, script, "off")

    assert (
        (ws / "inside.txt").is_file()
        and (outside / "shell.txt").is_file()
        and (outside / "python.txt").is_file()
    )
    assert (ws / ".git" / "hooks" / "pre-commit").is_file()
    assert "REACHED http://127.0.0.1" in shown[4] and "REACHED http://" + lan_ip in shown[5]
    assert sorted(server.paths) == ["/loopback", "/other-host"]
    assert private_tmp is None and MARKER in shown[7]


async def test_a_host_on_the_policys_list_is_reached_through_the_proxy_and_nothing_else(
    use_sim, tmp_path, places, server, lan_ip, home
):
    ws, outside, probe = places
    port = server.server_address[1]
    policy = SandboxPolicy(mode="require", hosts=[f"{lan_ip}:{port}"])
    script = commands(ws, outside, probe, port, lan_ip)
    shown, _ = await run_worker(ws, tmp_path, use_sim, script, policy)

    assert "REACHED http://" + lan_ip in shown[5] and server.paths == ["/other-host"]
    assert "FAILED http://127.0.0.1" in shown[4]  # loopback stays closed: it is not on the list
    assert not (outside / "shell.txt").exists()


def flower_once(ws: Path, cwd: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    """`flower once` with Bash: one scripted command, the way a person runs it."""
    argv = [sys.executable, "-m", "flower", "once", "-t", "Bash", *flags, "-w", str(ws), "go"]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def test_the_sandbox_flag_reaches_the_session_through_the_cli(sim_factory, claude_root, places, tmp_path):
    ws, outside, _ = places
    env = {**os.environ, **isolated_env("http://127.0.0.1:9", claude_root)}
    for mode, written in (("require", False), ("off", True)):
        target = outside / f"{mode}.txt"
        sim = sim_factory({"scripts": {"main": [bash(f"echo x > {target}"), "done"]}})
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        done = flower_once(ws, tmp_path, env, "--sandbox", mode)
        assert done.returncode == 0, done.stdout + done.stderr
        assert target.exists() is written, (mode, str(sim.last().tool_results()[-1]["content"]))


def test_auto_without_the_tools_says_so_in_one_line_and_runs_unconfined(
    sim_factory, claude_root, places, tmp_path
):
    ws, outside, _ = places
    # a PATH with what the CLI's Bash needs but no bubblewrap or socat
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "env", "cat", "ls", "echo", "git", "rg", "uname", "mkdir", "rm"):
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        if found:
            (bin_dir / tool).symlink_to(found)
    target = outside / "auto.txt"
    sim = sim_factory({"scripts": {"main": [bash(f"echo x > {target}"), "done"]}})
    env = {**os.environ, **isolated_env(sim.base_url, claude_root), "PATH": str(bin_dir)}
    done = flower_once(ws, tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "没有沙箱" in line]
    assert said == ["flower: 没有沙箱:缺少 bubblewrap (bwrap) 和 socat;命令不受限地运行"]
    assert target.exists()  # and it did run unconfined, as it said
