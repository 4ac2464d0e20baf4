"""flower.shell.confine, promise by promise, with each mechanism: what a confined command can do
(read the workspace, run git), and what it cannot (write, read outside, see the environment or a
secret, reach the network, run for ever, leave a process behind)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from flower.shell import confine
from flower.shell.confinement import GLANCE, JUDGE, ConfinementUnavailable, environment, plan

GLANCES = ["bwrap", "landlock"]
QUICK = replace(GLANCE, wall=3, cpu=3)


def run(
    cmd: str, ws: Path, mechanism: str = "bwrap", *, role: str = "glance", **kw: object
) -> subprocess.CompletedProcess[str]:
    limits = kw.pop("limits", QUICK if role == "glance" else replace(JUDGE, wall=60, tmp=64 << 20))
    argv = plan(cmd, workspace=ws, role=role, mechanisms=(mechanism,), limits=limits, **kw).argv  # type: ignore[arg-type]
    return subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=300)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# demo\n")
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / ".env").write_text("API_KEY=sk-ant-api03-abcdefghijklmnopqrstuv\n")
    (ws / "config.yml").write_text('service: x\ntoken: "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"\n')
    (tmp_path / "outside.txt").write_text("outside-marker-77f1\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md", "src"], ["commit", "-qm", "first"]):
        subprocess.run(
            ["git", "-c", "user.name=a", "-c", "user.email=a@x.invalid", *args], cwd=ws, check=True
        )
    return ws


@pytest.fixture
def marker_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """A marker in this process's environment (and so in the supervisor's)."""
    marker = "env-marker-5c2b"
    monkeypatch.setenv("FLOWER_TEST_PLAIN", marker)
    monkeypatch.setenv("GITHUB_TOKEN", marker + "-token")
    return marker


# -- what a confined command still does ---------------------------------------------------


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_glance_reads_the_workspace_and_runs_git(ws: Path, mechanism: str) -> None:
    done = run("cat README.md && ls src && git log --oneline && git status --short", ws, mechanism)
    assert done.returncode == 0, done.stderr
    assert "# demo" in done.stdout and "app.py" in done.stdout and "first" in done.stdout
    assert "?? config.yml" in done.stdout  # git sees the hidden file's name, not its content


def test_confine_is_the_argv_of_plan_an_isolated_python_outside_the_workspace(ws: Path) -> None:
    argv = confine("ls", workspace=ws)
    assert argv == plan("ls", workspace=ws).argv
    assert argv[1:4] == ["-I", "-S", "-c"] and Path(argv[0]).is_absolute()
    assert not Path(argv[0]).is_relative_to(ws)
    # what the hook hands the CLI is the same argv, shell-quoted
    assert shlex.split(plan("ls", workspace=ws).command) == argv


def test_the_argv_runs_the_same_through_a_shell(ws: Path) -> None:
    command = plan("echo \"home=$HOME\" '$HOME'; cat README.md", workspace=ws).command
    done = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True, timeout=120)
    assert done.stdout == "home=/tmp/home $HOME\n# demo\n"  # bubblewrap works here: its fresh home


# -- nothing changes ------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", GLANCES)
@pytest.mark.parametrize(
    "cmd",
    [
        "touch new.txt",
        "echo x >> README.md",
        "rm -f README.md",
        "mv README.md x",
        "chmod 600 README.md",
        "touch -d '2 hours ago' README.md",
        "truncate -s 0 README.md",
        "mkdir d",
        "ln -s README.md l",
        "mkfifo f",
        "git tag v9",
        "git commit --allow-empty -qm x",
        "echo x > .git/hooks/pre-commit",
        "setfattr -n user.x -v 1 README.md",
        "python3 -c 'import os; os.utime(\"README.md\", (0, 0))'",
        'python3 -c \'open("README.md", "r+").truncate(0)\'',
        "python3 -c 'import os; os.open(\"README.md\", os.O_RDONLY | os.O_TRUNC)'",
    ],
)
def test_a_glance_changes_nothing(ws: Path, mechanism: str, cmd: str) -> None:
    before = snapshot(ws)
    run(cmd, ws, mechanism)
    assert snapshot(ws) == before


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_glance_writes_nowhere_outside_either(ws: Path, tmp_path: Path, mechanism: str) -> None:
    targets = [tmp_path / "outside-w", Path(f"/tmp/flower-confine-test-{os.getpid()}-{mechanism}")]
    run("; ".join(f"touch {t}" for t in targets) + "; echo x > $HOME/x", ws, mechanism)
    assert not any(t.exists() for t in targets)


def test_the_judge_writes_on_a_view_that_is_thrown_away(ws: Path) -> None:
    before = snapshot(ws)
    done = run(
        "rm -rf src && echo new > new.txt && echo more >> README.md && mkdir -p build/x "
        "&& git -c user.name=j -c user.email=j@x commit -qam judged && cat new.txt README.md "
        "&& git log --oneline | head -1 && echo tmp > /tmp/t && cat /tmp/t && ls",
        ws,
        "overlay",
        role="judge",
    )
    assert done.returncode == 0, done.stderr
    assert "new\n# demo\nmore\n" in done.stdout and "judged" in done.stdout and "tmp\n" in done.stdout
    assert "src" not in done.stdout.split("tmp\n", 1)[1]  # removed, inside the view
    assert snapshot(ws) == before  # and nothing of it outside


def test_the_judges_view_is_bounded_in_size(ws: Path) -> None:
    limits = replace(JUDGE, wall=60, tmp=32 << 20)
    done = run(
        "head -c 100000000 /dev/zero > big; echo rc=$?; ls -l big", ws, "overlay", role="judge", limits=limits
    )
    assert "No space left on device" in done.stderr and not (ws / "big").exists()


# -- reads stay inside ----------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", [*GLANCES, "overlay"])
def test_nothing_outside_the_workspace_and_the_system_folders_is_readable(
    ws: Path, tmp_path: Path, mechanism: str
) -> None:
    shadow = Path("/etc/shadow").read_text().splitlines()[0]
    outside = "outside-marker-77f1"
    reads = [
        "cat /etc/shadow",
        f"cat {tmp_path}/outside.txt",
        "cat ../outside.txt",
        "ls -a /root",
        "ls /home /var /opt",
        f"ls {Path.home()}",
        "cat /proc/1/environ",
        "cat /proc/$PPID/environ",
        "cat /proc/*/environ",
        "ln -s /etc/shadow /tmp/s 2>/dev/null; cat /tmp/s",
    ]
    role = "judge" if mechanism == "overlay" else "glance"
    done = run("; ".join(f"{r} 2>&1" for r in reads), ws, mechanism, role=role)
    assert shadow not in done.stdout and outside not in done.stdout
    assert ".pyenv" not in done.stdout and "env-marker" not in done.stdout


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_git_symlink_to_another_repository_reaches_nothing(
    ws: Path, tmp_path: Path, mechanism: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=other, check=True)
    (other / "f").write_text("other-repo-marker-1d9e\n")
    subprocess.run(["git", "add", "f"], cwd=other, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "other-msg-marker-77"],
        cwd=other,
        check=True,
    )
    (ws / "linked").mkdir()
    (ws / "linked" / ".git").symlink_to(other / ".git")
    done = run("cd linked && git log -p; git -C linked show HEAD:f; cat linked/.git/HEAD", ws, mechanism)
    assert "other-repo-marker" not in done.stdout + done.stderr
    assert "other-msg-marker" not in done.stdout + done.stderr


# -- nothing leaks --------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", GLANCES)
def test_the_environment_is_the_allowlist_alone(ws: Path, marker_env: str, mechanism: str) -> None:
    done = run("env", ws, mechanism)
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    expected = environment("glance", ws)
    for name in ("PWD", "SHLVL", "_"):  # what the shell adds itself
        seen.pop(name, None)
    if mechanism == "landlock":  # an empty folder of its own: no tmpfs can be made there
        assert Path(seen.pop("HOME")).name.startswith("flower-home-")
        expected.pop("HOME")
    assert seen == expected
    assert marker_env not in done.stdout


@pytest.mark.parametrize("mechanism", GLANCES)
def test_secret_files_are_hidden_by_name_and_by_content(ws: Path, mechanism: str) -> None:
    done = run("cat .env; cat config.yml; grep -r ghp_ . ; cat README.md", ws, mechanism)
    assert "sk-ant-api03" not in done.stdout and "ghp_0123" not in done.stdout
    assert "# demo" in done.stdout
    assert sorted(p.name for p in plan("true", workspace=ws).hidden) == [".env", "config.yml"]


@pytest.mark.parametrize("mechanism", GLANCES)
def test_no_network_not_even_loopback(ws: Path, mechanism: str) -> None:
    with listening() as (port, hits):
        probe = (
            "import socket,sys\n"
            "try:\n socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5); print('REACHED')\n"
            "except OSError as e: print('FAILED', e)"
        )
        done = run(f"python3 -c {shlex.quote(probe)} {port}", ws, mechanism)
    assert "FAILED" in done.stdout and hits == []


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_planted_program_on_path_never_runs(
    ws: Path, tmp_path: Path, mechanism: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("git", "ls", "cat"):
        (bin_dir / name).write_text("#!/bin/sh\necho planted-program-ran\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    done = run("git status --short; ls; cat README.md", ws, mechanism)
    assert "planted-program-ran" not in done.stdout and "# demo" in done.stdout


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_repositorys_configured_programs_never_run(ws: Path, mechanism: str) -> None:
    payload = "echo configured-program-ran"
    with (ws / ".git" / "config").open("a") as fh:
        fh.write(f'[core]\n\tfsmonitor = "{payload}; false"\n\tpager = "{payload}; cat"\n')
        fh.write(f"[core]\n\thooksPath = {ws}/hooks\n")
    (ws / "hooks").mkdir()
    (ws / "hooks" / "post-index-change").write_text(f"#!/bin/sh\n{payload}\n")
    (ws / "hooks" / "post-index-change").chmod(0o755)
    os.utime(ws / "README.md")
    done = run("git status; git -p log -1", ws, mechanism)
    assert "configured-program-ran" not in done.stdout + done.stderr


# -- nothing runs for ever ------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", [*GLANCES, "overlay"])
def test_a_command_that_never_ends_is_stopped_at_its_bound_with_everything_it_started(
    ws: Path, mechanism: str
) -> None:
    tag = f"linger-{mechanism}-{os.getpid()}"
    role = "judge" if mechanism == "overlay" else "glance"
    limits = replace(QUICK if role == "glance" else JUDGE, wall=3, cpu=3)
    started = time.monotonic()
    done = run(
        f"(setsid sh -c 'sleep 600; :' {tag} &); nohup sh -c 'sleep 600; :' {tag} & sleep 600",
        ws,
        mechanism,
        role=role,
        limits=limits,
    )
    assert done.returncode == 124 and "3 秒" in done.stderr
    assert time.monotonic() - started < 120  # the bound, not the command, ended it
    assert lingering(tag) == []


@pytest.mark.parametrize("mechanism", GLANCES)
def test_what_a_finished_command_left_running_is_killed(ws: Path, mechanism: str) -> None:
    tag = f"orphan-{mechanism}-{os.getpid()}"
    done = run(f"(setsid sh -c 'sleep 600; :' {tag} > /dev/null 2>&1 &); echo done", ws, mechanism)
    assert done.returncode == 0 and done.stdout == "done\n"
    assert lingering(tag) == []


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_flood_is_bounded_and_stopped(ws: Path, mechanism: str) -> None:
    done = run("yes", ws, mechanism)
    assert done.returncode == 124 and "字节" in done.stderr
    assert len(done.stdout) <= QUICK.head + QUICK.tail + 200
    assert "省略了" in done.stdout  # the middle is said, not shown


@pytest.mark.parametrize("mechanism", GLANCES)
def test_a_fifo_a_sparse_file_and_an_open_stdin_end_at_the_bound(ws: Path, mechanism: str) -> None:
    os.mkfifo(ws / "pipe")
    with (ws / "big.img").open("wb") as fh:
        fh.truncate(64 << 30)
    for cmd in ("cat pipe", "cat", "wc -c big.img"):
        started = time.monotonic()
        done = run(cmd, ws, mechanism)
        assert time.monotonic() - started < 120, cmd
        assert done.returncode in (0, 124), (cmd, done.stderr)


# -- where it cannot --------------------------------------------------------------------------


def test_a_workspace_that_holds_the_system_is_refused() -> None:
    for folder in ("/", "/usr", "/etc"):
        with pytest.raises(ConfinementUnavailable):
            plan("ls", workspace=folder)


def test_without_a_working_mechanism_nothing_runs_and_one_line_says_why(ws: Path) -> None:
    done = run("touch ran", ws, "no-such-mechanism")
    assert done.returncode == 126 and not (ws / "ran").exists()
    assert done.stderr.startswith("flower:这里隔离不了这条命令") and len(done.stderr.splitlines()) == 1


# -- helpers ----------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(folder) / name
            st = p.lstat()
            body = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, body)
    return out


def lingering(tag: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                if tag.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                continue
    return found


class listening:
    """A TCP server on a private loopback port that records who connected."""

    def __enter__(self) -> tuple[int, list[str]]:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.hits: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self.sock.getsockname()[1], self.hits

    def _serve(self) -> None:
        while True:
            try:
                conn, addr = self.sock.accept()
            except OSError:
                return
            self.hits.append(str(addr))
            conn.close()

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
