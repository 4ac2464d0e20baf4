"""`flower demo` end to end in English and in Chinese: the real CLI, the real Claude Code CLI,
flower.sim as the model. Every line an English reader gets is English apart from the names the
seeds fix and the scripted model's own words; the documents on disk are the same in both runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flower.sim.demo import REQUEST
from flower.sim.scenarios import starter_scenario

pytestmark = pytest.mark.e2e

CJK_RUN = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")
# the names that stay Chinese in every language (docs/i18n.md): the handover's manifest label
# (core/labels.py) is on the status line of its turn
FIXED_NAMES = (
    "需求.md",
    "目标.md",
    "问答记录.md",
    "交接-",
    "干活·交接给下一个工具",
    "确认需求",
    "设定目标",
    "干活",
    "未知与假设",
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


# everything the scripted model and the scripted person say: the demo's request and the scenario
SCRIPTED = "\n".join([REQUEST, *_strings(starter_scenario(context=78_000))])


def _demo(language: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FLOWER_LANG": language}
    return subprocess.Popen(
        [sys.executable, "-m", "flower", "demo", "--keep"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.fixture(scope="module")
def runs() -> Any:
    """Both demos, side by side: language -> (stdout, the kept folder)."""
    started = {language: _demo(language) for language in ("en", "zh")}
    done = {}
    for language, proc in started.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{language}:\n{out}\n{err}"
        last = out.strip().splitlines()[-1]
        kept = Path(last[last.index("/") :])  # "kept: /tmp/…" in any language
        done[language] = (out, kept)
    yield done
    for _out, kept in done.values():
        shutil.rmtree(kept, ignore_errors=True)


def _foreign(line: str) -> list[str]:
    """The Chinese in `line` that is neither a fixed name nor part of the scripted words."""
    for name in FIXED_NAMES:
        line = line.replace(name, " ")
    return [run for run in CJK_RUN.findall(line) if run not in SCRIPTED]


def test_every_line_of_the_english_demo_is_english_but_fixed_names_and_the_models_words(runs):
    out, kept = runs["en"]
    lines = out.splitlines()
    assert out.startswith("flower demo: the real Claude Code CLI")
    typed = lines.index("your answer (Enter = skip, let it decide) > 1    # typed by the demo")
    assert lines[typed + 1] == "  + hello"
    assert "  ~ verdict, round 1: not yet, sent back to go on —— hello.py 能运行,但没有 README.md。" in lines
    assert "     ✗ 工作区根目录有 README.md,写了怎么运行 — cites README.md, which it never read" in lines
    assert "  + verdict, round 2: achieved —— hello.py 输出 hello,README.md 写了用法。" in lines
    assert "<- handover written into CLAUDE.md (created), AGENTS.md (created)" in lines
    second = out[out.index("$ flower        # again, same folder: continue where it stopped") :]
    assert "\n> (Enter)    # typed by the demo\n" in second
    assert "where it stopped  brief confirmed · goal 3 checks · 干活 context" in second
    assert "== 干活 ==============================  3/3  <- continued · wake 2" in second
    assert (
        "ok: the second run continued the same work session; CLAUDE.md and AGENTS.md hold the same handover"
        in out
    )
    assert out.strip().splitlines()[-1] == f"kept: {kept}"
    offending = {line: _foreign(line) for line in out.splitlines() if _foreign(line)}
    assert offending == {}


def test_the_chinese_demo_speaks_chinese(runs):
    out, kept = runs["zh"]
    lines = out.splitlines()
    assert out.startswith("flower demo:真实的 Claude Code CLI")
    typed = lines.index("你的回答 (回车=跳过,让它自己判断) > 1    # demo 替你敲的")
    assert (
        lines[typed + 1] == "  + hello"
        and "  + 判定第 2 轮:达成 —— hello.py 输出 hello,README.md 写了用法。" in lines
    )
    second = out[out.index("$ flower        # 再跑一次") :]
    assert "\n> (回车)    # demo 替你敲的\n" in second
    assert "接上上次  需求已确认 · 目标 3 条 · 干活上下文" in second and "<- 接上次 · 第 2 次唤醒" in second
    assert "ok:第二次运行接着同一个干活会话做了下去;CLAUDE.md 和 AGENTS.md 里是同一份交接" in out
    assert out.strip().splitlines()[-1] == f"保留在:{kept}"
    # the English is gone: no line is left as it was before translation
    assert "typed by the demo" not in out and "verdict, round" not in out and "handover written" not in out


def _tree(root: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


# what differs between any two runs whatever the language: where and when they ran, the ids
VOLATILE_KEYS = {"run", "session_id", "started_at", "ended_at", "duration_s"}
# what the wall clock reaches through the CLI: its Agent tool result ends with the subagent's
# "duration_ms: 1622", so a slower machine's next request is a token longer and costs a little more
MEASURED_KEYS = {"context", "cost_usd"}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ANSWERED_AT = re.compile(r"^(## q\d+ · \w+ · )\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", re.M)
# how long an answer took is the machine's, not the language's
WAITED = re.compile(r"^(- 等了 )\d+(?:\.\d+)?s$", re.M)


def _steady(value: Any, root: str) -> Any:
    if isinstance(value, dict):
        return {
            k: "<volatile>" if k in VOLATILE_KEYS | MEASURED_KEYS else _steady(v, root)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_steady(v, root) for v in value]
    if isinstance(value, str):
        return "<id>" if UUID.match(value) else value.replace(root, "<root>")
    return value


def _stable(name: str, data: bytes, root: Path) -> Any:
    if name.endswith(".json"):
        return _steady(json.loads(data), str(root))
    text = data.decode("utf-8").replace(str(root), "<root>")
    return WAITED.sub(r"\1<seconds>s", ANSWERED_AT.sub(r"\1<time>", text))


def test_the_documents_on_disk_are_the_same_in_both_languages(runs):
    (_, en), (_, zh) = runs["en"], runs["zh"]
    en_files, zh_files = _tree(en / "project"), _tree(zh / "project")
    assert set(en_files) == set(zh_files)
    assert {".flower/notes/需求.md", ".flower/notes/目标.md", ".flower/notes/问答记录.md"} <= set(en_files)
    # the stores are binary and keep when things happened: the sessions, the checkpoints' lists
    stores = (".db", ".db-wal", ".db-shm", ".lock", ".gz")
    texts = [name for name in en_files if not name.endswith(stores) and "/checkpoints/blobs/" not in name]
    differing = {
        n: (_stable(n, en_files[n], en), _stable(n, zh_files[n], zh))
        for n in texts
        if _stable(n, en_files[n], en) != _stable(n, zh_files[n], zh)
    }
    assert differing == {}
    # the measured figures are a digit's worth apart at most, never a language's
    en_rows = json.loads(en_files["runs/manifest.json"])
    zh_rows = json.loads(zh_files["runs/manifest.json"])
    for en_row, zh_row in zip(en_rows, zh_rows, strict=True):
        assert abs(en_row["context"] - zh_row["context"]) <= 8, (
            en_row["step"],
            en_row["context"],
            zh_row["context"],
        )
        assert en_row["cost_usd"] == pytest.approx(zh_row["cost_usd"], rel=1e-3), en_row["step"]
    # the brief and the goal are byte for byte the same
    for note in ("需求.md", "目标.md"):
        assert en_files[f".flower/notes/{note}"] == zh_files[f".flower/notes/{note}"]
