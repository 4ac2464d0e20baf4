"""The distribution: what a user installs, and the README's main command."""

from __future__ import annotations

import json
import shutil
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
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
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
    entry_points = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    )
    assert "flower = flower.__main__:main" in entry_points
    assert "flower-lsp = flower_lsp.__main__:main" in entry_points


def test_an_installed_wheel_finds_its_own_plugin(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
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
def test_flower_demo_runs_the_starter_flow_offline_and_continues_it(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "flower", "demo", "--keep"], capture_output=True, text=True, timeout=300
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    kept = Path(out.strip().splitlines()[-1].removeprefix("保留在:"))  # the seeds' language
    try:
        ws = kept / "project"
        assert (ws / "hello.py").read_text() == 'print("hello")\n' and (
            ws / "README.md"
        ).is_file()  # real files, real tools
        assert "== 确认需求" in out and "== 设定目标" in out and "-> (自动回答) hello" in out
        assert "判定者,第 1 轮:未达成" in out and "判定者,第 2 轮:达成" in out
        # the second run visibly continues: the banner, then only the work step, resumed
        second = out[out.index("$ flower        #") :]
        assert "接上上次  需求已确认 · 目标 3 条 · 干活上下文" in second and "第 2 次唤醒" in second
        assert "== 确认需求" not in second and "<- 接上次 · 第 2 次唤醒" in second
        assert "ok:第二次运行接着同一个干活会话做了下去" in out
        steps = json.loads((ws / "runs" / "lineage.json").read_text())["steps"]
        assert set(steps) == {"确认需求", "设定目标", "干活"}  # judges never enter the lineage
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_flower_help_does_not_import_the_sdk():
    probe = (
        "import sys; from flower.cli import build_parser; build_parser(); "
        "print('claude_agent_sdk' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


def test_the_language_server_answers_initialize_over_stdio():
    import json

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    )
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"})
    wire = "".join(f"Content-Length: {len(m.encode())}\r\n\r\n{m}" for m in (body, exit_))
    done = subprocess.run(
        [sys.executable, "-m", "flower_lsp"], input=wire.encode(), capture_output=True, timeout=60
    )
    answer = next(m for m in _lsp_messages(done.stdout) if m.get("id") == 1)
    assert answer["id"] == 1 and answer["result"]["serverInfo"] == {"name": "flower-lsp", "version": "0.1.0"}


def _lsp_messages(stream: bytes) -> list[dict]:
    """Split a stdio LSP byte stream into its JSON messages."""
    import json

    out = []
    while stream:
        header, _, rest = stream.partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in header.decode().split("\r\n"))
        size = int(headers["Content-Length"])
        out.append(json.loads(rest[:size]))
        stream = rest[size:]
    return out
