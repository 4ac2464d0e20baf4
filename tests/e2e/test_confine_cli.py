"""Main-thread commands confined in real sessions: the real Claude Code CLI against flower.sim.

A coordinator's glances that the rules admit but that would write (``git status`` refreshing the
index), leak (``env`` with a marker in flower's environment) or hang (``top`` with a huge count)
run confined: with the CLI's own Bash sandbox on (the glance runs nested in it, under Landlock)
and off (the CLI's sandbox cannot start without socat; flower's bubblewrap confines the glance).
``--sandbox off`` falls back to the rules alone and says so in one line.

A judge with ``can_run`` runs ``rm -rf``, writes, ``git commit``, ``pip install`` and a real
pytest suite with its caches: every command works on its view, and the workspace with its
``.git`` is byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from flower import HumanChannel, Runtime, coordinator, judge, worker
from flower.sim.scenario import content_text

pytestmark = pytest.mark.e2e

MARKER = "flower-env-marker-3e91c4"
HANG = "top -b -n 100000 -d 1"


def bash(command: str) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "look"}}}


def git(ws: Path, *args: str) -> None:
    identity = ["-c", "user.name=a", "-c", "user.email=a@x.invalid"]
    subprocess.run(["git", *identity, *args], cwd=ws, check=True, capture_output=True)


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``root`` (its .git included): type, mode, size, mtime, content hash."""
    state: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            st = path.lstat()
            if path.is_symlink():
                state[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                state[str(path)] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest)
            else:
                state[str(path)] = ("dir", st.st_mode)
    return state


def changes(
    before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]], ws: Path
) -> list[str]:
    """What changed, but the mount points the CLI's own sandbox leaves (docs/safety.md): its
    `.claude/` folder and empty files and folders in `.git`."""

    def the_clis(path: str) -> bool:
        rel = Path(path).relative_to(ws)
        empty = after[path][0] == "dir" or (after[path][0] == "file" and after[path][2] == 0)
        return rel.parts[0] == ".claude" or (rel.parts[0] == ".git" and empty and path not in before)

    changed = [k for k in before.keys() | after.keys() if before.get(k) != after.get(k)]
    return sorted(k for k in changed if not (k in after and k not in before and the_clis(k)))


def lingering(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "):
                    found.append(int(pid))
            except OSError:
                continue
    return found


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "README.md").write_text("# demo\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def answer():\n    return 42\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "first")
    # the same content with a new date: a plain `git status` would rewrite the index
    os.utime(workspace / "README.md", (1_000_000_000, 1_000_000_000))
    return workspace


@pytest.fixture
def without_socat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with what the CLI's Bash needs but no socat: the CLI's sandbox cannot start."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "env", "cat", "ls", "echo", "git", "uname", "mkdir", "rm", "top", "bwrap"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))


async def glances(use_sim: Any, repo: Path, tmp_path: Path, sandbox: str) -> tuple[list[str], Runtime, Any]:
    sim = use_sim({"scripts": {"main": [bash("git status"), bash("env"), bash(HANG), "看完了"]}})
    rt = Runtime(workspace=repo, run_dir=tmp_path / "runs", sandbox=sandbox)
    try:
        boss = coordinator("协调者", "", {"coder": worker("写代码", "你负责实现。")})
        result = await rt.run(boss, "看一眼现场")
    finally:
        rt.close()
    assert result.ok, result.error
    shown = [content_text(r["content"]) for r in sim.last().tool_results()]
    assert len(shown) == 3
    return shown, rt, sim


@pytest.mark.parametrize("cli_sandbox", ["on", "off"])
async def test_a_glance_that_would_write_leak_or_hang_is_confined_in_a_real_session(
    use_sim, repo, tmp_path, claude_root, monkeypatch, request, cli_sandbox
):
    if cli_sandbox == "off":
        request.getfixturevalue("without_socat")
    monkeypatch.setenv("FLOWER_CANARY", MARKER)
    home = claude_root / "home"  # the CLI's home in the sim's isolated environment
    before = snapshot(repo)

    shown, rt, sim = await glances(use_sim, repo, tmp_path, "require" if cli_sandbox == "on" else "auto")

    status, env, hang = shown
    assert "On branch main" in status  # it ran, and read the repository
    assert changes(before, snapshot(repo), repo) == []  # ... and wrote nothing, not even the index
    assert "PATH=/usr/local/sbin:" in env and MARKER not in env  # its own environment only
    assert "超过 20 秒,已停止" in hang and lingering(HANG) == []
    assert not (home / ".config" / "procps").exists()  # top writes there when it may
    if cli_sandbox == "off":
        assert any("没有沙箱" in w for w in rt.warnings)  # the CLI's sandbox said why it is off
    assert not any("隔离不了" in w or "不做系统隔离" in w for w in rt.warnings)
    # the model and the transcript keep the model's own command; the confined one only ran
    sent = [u["input"]["command"] for u in sim.last().tool_uses()]
    assert sent == ["git status", "env", HANG]
    db = sqlite3.connect(tmp_path / "runs" / "sessions.db")
    stored = "\n".join(row[0] for row in db.execute("select payload from entries"))
    db.close()
    assert HANG in stored and "flower-overlay-" not in stored and "-I -S -c" not in stored


async def test_with_the_sandbox_off_glances_fall_back_to_the_rules_and_one_line_says_so(
    use_sim, repo, tmp_path, monkeypatch
):
    monkeypatch.setenv("FLOWER_CANARY", MARKER)
    shown, rt, _ = await glances(use_sim, repo, tmp_path, "off")

    status, env, hang = shown
    assert "On branch main" in status  # the rules admit it, and it runs as the person
    # what only the confinement made harmless is refused: the coordinator is told to delegate
    assert "Agent 工具" in env and MARKER not in env
    assert "Agent 工具" in hang
    notes = [w for w in rt.warnings if "协调者的查看命令" in w]
    assert notes == ["flower:--sandbox off:协调者的查看命令不做系统隔离,只靠命令规则把关,隔离更弱"]


# -- the judge ----------------------------------------------------------------------------------


def tiny_wheel(folder: Path) -> Path:
    """A real wheel of a one-module package, so that `pip install` needs no network."""
    wheel = folder / "tiny-0.1-py3-none-any.whl"
    files = {
        "tiny.py": "X = 'tiny-installed'\n",
        "tiny-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n",
        "tiny-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files["tiny-0.1.dist-info/RECORD"] = "".join(f"{n},,\n" for n in files) + "tiny-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


@pytest.fixture
def project(repo: Path) -> Path:
    """The repository with a virtual environment that has pytest and pip, a test suite and a wheel."""
    venv = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    # pytest, what it needs, and pip: copied from this suite's own environment (no network)
    for name in ("pytest", "pluggy", "iniconfig", "packaging", "pygments", "pip"):
        dist = metadata.distribution(name)
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            if source.is_file() and "__pycache__" not in file.parts:
                target = site / file
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nfrom app import answer\n\n\n"
        "def test_answer():\n    assert answer() == 42\n\n\ndef test_more():\n    assert answer() + 1 == 43\n"
    )
    (repo / "dist").mkdir()
    tiny_wheel(repo / "dist")
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tests")
    return repo


CHECKS = [
    "rm -rf src && ls",
    "echo hacked > README.md && cat README.md",
    "echo more >> README.md && git -c user.name=j -c user.email=j@x.invalid commit -qam judged"
    " && git log --oneline -1",
    ".venv/bin/python -m pip install --no-index --no-cache-dir dist/tiny-0.1-py3-none-any.whl"
    " && .venv/bin/python -c 'import tiny; print(tiny.X)'",
    ".venv/bin/python -m pytest -q tests && ls -a . .pytest_cache && ls tests/__pycache__",
    "git status --short",
]


async def test_a_judge_that_runs_rm_writes_commits_installs_and_tests_leaves_the_workspace_byte_identical(
    use_sim, project, tmp_path
):
    sim = use_sim({"scripts": {"main": [*[bash(c) for c in CHECKS], "## 结论\n达成"]}})
    before = snapshot(project)
    rt = Runtime(workspace=project, run_dir=tmp_path / "runs")  # the default: --sandbox auto
    try:
        result = await rt.run(judge("判定者", HumanChannel(timeout_s=0), can_run=True), "判定这一轮")
    finally:
        rt.close()
    assert result.ok, result.error

    removed, wrote, committed, installed, tested, status = (
        content_text(r["content"]) for r in sim.last().tool_results()
    )
    assert "README.md" in removed and "src" not in removed.split()
    assert wrote.strip() == "hacked"
    assert "judged" in committed
    assert "Successfully installed tiny-0.1" in installed and "tiny-installed" in installed
    assert "2 passed" in tested and ".pytest_cache" in tested and "test_app.cpython" in tested
    assert status.strip() == "(Bash completed with no output)"  # each command sees the workspace afresh
    assert snapshot(project) == before  # every change was on views thrown away
    assert not any("判定者的命令" in w for w in rt.warnings)
