"""The distribution: what a user installs, and the README's main command."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("flower_agents-*.whl")
    return built


def test_the_wheel_ships_both_packages_the_plugin_and_the_scripts(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    assert "flower/__init__.py" in names and "flower_lsp/__main__.py" in names
    assert "flower/_plugin/.claude-plugin/plugin.json" in names
    assert "flower/_plugin/skills/workbench/SKILL.md" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "flower = flower.cli:main" in entry_points and "flower-lsp = flower_lsp.__main__:main" in entry_points


def test_an_installed_wheel_finds_its_own_plugin(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)], check=True, capture_output=True)
    found = subprocess.run(
        [sys.executable, "-c", "from flower.plugin import plugin_dir; print(plugin_dir())"],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found) == target / "flower" / "_plugin"


def test_a_checkout_finds_the_repository_plugin():
    from flower.plugin import plugin_dir

    assert plugin_dir() == ROOT / "plugin"


@pytest.mark.e2e
def test_flower_demo_runs_one_real_session_offline():
    done = subprocess.run([sys.executable, "-m", "flower", "demo"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tool:  Write" in done.stdout and "tool:  Bash python3 hello.py" in done.stdout
    assert "result: hello from flower" in done.stdout  # the real Bash tool ran the real file
    assert done.stdout.rstrip().endswith("ok: hello.py written and run")


def test_flower_help_does_not_import_the_sdk():
    probe = "import sys; from flower.cli import build_parser; build_parser(); print('claude_agent_sdk' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_the_language_server_answers_initialize_over_stdio():
    import json

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"})
    wire = "".join(f"Content-Length: {len(m.encode())}\r\n\r\n{m}" for m in (body, exit_))
    done = subprocess.run([sys.executable, "-m", "flower_lsp"], input=wire.encode(), capture_output=True, timeout=60)
    header, _, payload = done.stdout.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in header.decode().split("\r\n"))
    answer = json.loads(payload[: int(headers["Content-Length"])])
    assert answer["id"] == 1 and answer["result"]["serverInfo"] == {"name": "flower-lsp", "version": "0.1.0"}
