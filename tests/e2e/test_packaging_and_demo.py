"""The distribution: what a user installs, and the README's main command."""

from __future__ import annotations

import json
import os
import re
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


def kept_folder(out: str, label: str) -> Path:
    """The folder `flower demo --keep` names on its last line, after `label` (a long path may be
    wrapped over several lines: it has no space to break at)."""
    return Path("".join(out[out.rindex(label) + len(label) :].split()))


@pytest.mark.e2e
def test_flower_demo_runs_the_starter_flow_offline_and_continues_it():
    from flower.core.display import columns
    from flower.core.managed_block import BEGIN, read_block

    # what a person sees in an 80-column terminal: COLUMNS is the width when stdout is a pipe
    done = subprocess.run(
        [sys.executable, "-m", "flower", "demo", "--keep"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "80"},
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    kept = kept_folder(out, "保留在:")  # the seeds' language
    try:
        ws = kept / "project"
        assert (ws / "hello.py").read_text() == 'print("hello")\n' and (
            ws / "README.md"
        ).is_file()  # real files, real tools
        lines = out.splitlines()
        assert {line: columns(line) for line in lines if columns(line) > 80} == {}
        assert "== 确认需求 ==========================  1/3" in lines
        assert "== 设定目标 ==========================  2/3" in lines
        # the question as flower's renderer shows it, answered at flower's own prompt
        typed = lines.index("你的回答 (回车=跳过,让它自己判断) > 1    # demo 替你敲的")
        assert lines[typed - 3 : typed + 2] == [
            "  ? hello.py 要打印什么?",
            "     1) hello",
            "     2) hello, flower",
            "你的回答 (回车=跳过,让它自己判断) > 1    # demo 替你敲的",
            "  + hello",
        ]
        # the judge's verdicts with their evidence, one line per check
        rejected = lines.index("  ~ 判定第 1 轮:未达成,打回去接着干 —— hello.py 能运行,但没有 README.md。")
        assert lines[rejected + 1 : rejected + 4] == [
            "     ✓ 运行 `python3 hello.py` 输出 hello — 读了 hello.py 第 1-2 行",
            "     ✗ 工作区根目录有 README.md,写了怎么运行 — 说看了 README.md,可它没读过",
            "     ✓ hello.py 只用标准库 — 读了 hello.py 第 1-2 行",
        ]
        achieved = lines.index("  + 判定第 2 轮:达成 —— hello.py 输出 hello,README.md 写了用法。")
        assert lines[achieved + 1 : achieved + 4] == [
            "     ✓ 运行 `python3 hello.py` 输出 hello — 读了 hello.py 第 1-2 行",
            "     ✓ 工作区根目录有 README.md,写了怎么运行 — 读了 README.md 第 1-4 行",
            "     ✓ hello.py 只用标准库 — 读了 hello.py 第 1-2 行",
        ]
        first = out[: out.index("$ flower        #")]
        assert "<- 交接写进 CLAUDE.md(新建)、AGENTS.md(新建)" in first
        assert "总花费 $" in first
        # the second run visibly continues: the wake prompt, Enter, the banner, the work step resumed
        second = out[out.index("$ flower        # 再跑一次,同一个目录:从停下的地方接着做") :]
        assert "\n> (回车)    # demo 替你敲的\n<- 在 " in second
        flat = re.sub(r"\n +", " ", second)  # the banner names the folder: it may wrap anywhere
        assert "接上上次  需求已确认 · 目标 3 条 · 干活上下文" in flat and "· 第 2 次唤醒" in flat
        assert "== 确认需求" not in second and "== 设定目标" not in second
        assert "== 干活 ==============================  3/3  <- 接上次 · 第 2 次唤醒" in second.splitlines()
        assert "  + 判定第 1 轮:达成 —— hello.py 输出 hello,README.md 写了用法。" in second.splitlines()
        assert "<- 交接写进 CLAUDE.md(和上次一样,没动)、AGENTS.md(和上次一样,没动)" in second
        assert "ok:第二次运行接着同一个干活会话做了下去;CLAUDE.md 和 AGENTS.md 里是同一份交接" in lines
        steps = json.loads((ws / "runs" / "lineage.json").read_text())["steps"]
        assert set(steps) == {"确认需求", "设定目标", "干活"}  # judges never enter the lineage
        # the handover: the same flower block in both files
        block = read_block(ws / "CLAUDE.md")
        assert block is not None and block == read_block(ws / "AGENTS.md")
        assert (ws / "AGENTS.md").read_text(encoding="utf-8").startswith(BEGIN + "\n")
        assert "hello.py" in block
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
