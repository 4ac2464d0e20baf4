from __future__ import annotations

import pytest

from flower.core.handoff import (
    DEGRADED,
    EMPTY,
    HANDOFF_PROMPT,
    REQUIRED,
    SECTIONS,
    Handoff,
    degraded,
    is_overflow,
)

REPLY = """\
好的,交接如下。

## 现在在做什么
在给 Makefile 加 macOS 垫片头。

## 已经定下的
不改业务源码 —— 用户明确说过边界。

## 走不通的路
-D_ANSI_SOURCE 会把别的宏一起关掉;改 include 顺序无效。

## 下一步
在干净 clone 上跑一次 make 验证 shim 成立。

## 现场
Makefile、.flower/artifacts/build.log
"""


def test_parses_five_sections():
    h = Handoff.parse(REPLY)
    assert h.doing == "在给 Makefile 加 macOS 垫片头。"
    assert h.decided == "不改业务源码 —— 用户明确说过边界。"
    assert h.deadends == "-D_ANSI_SOURCE 会把别的宏一起关掉;改 include 顺序无效。"
    assert h.next == "在干净 clone 上跑一次 make 验证 shim 成立。"
    assert h.scene == "Makefile、.flower/artifacts/build.log"
    assert h.complete()


def test_section_names_and_required():
    assert [name for _, name in SECTIONS] == ["现在在做什么", "已经定下的", "走不通的路", "下一步", "现场"]
    assert REQUIRED == ("doing", "next")


def test_only_doing_and_next_are_required():
    assert Handoff(doing="d", next="n").complete()
    assert Handoff(decided="x", deadends="y", scene="z").missing() == ["现在在做什么", "下一步"]
    assert Handoff(doing="d").missing() == ["下一步"]
    assert Handoff(next="n").missing() == ["现在在做什么"]


def test_terminal_labels_are_accepted_as_aliases():
    text = "现在在做: A\n已定的事: B\n走不通的: C\n下一步: D\n"
    h = Handoff.parse(text)
    assert (h.doing, h.decided, h.deadends, h.next) == ("A", "B", "C", "D")


def test_longer_alias_wins_over_its_prefix():
    # "走不通的路" must not be read as "走不通" + body "的路..."
    h = Handoff.parse("## 已经定下的\nX\n走不通的路:Y\n")
    assert h.decided == "X"
    assert h.deadends == "Y"


def test_step_comes_from_the_argument_not_the_text():
    text = "# 交接书 · 别的步骤\n" + REPLY
    assert Handoff.parse(text).step == ""
    assert Handoff.parse(text, step="干活").step == "干活"


def test_unclosed_fence_in_reply_loses_later_sections():
    text = "## 现在在做什么\nA\n```bash\nmake\n## 下一步\nB\n"
    h = Handoff.parse(text)
    assert h.doing == "A"
    assert h.next == ""
    assert not h.complete()


def test_to_markdown_writes_empty_sections_as_placeholder():
    md = Handoff(doing="d", next="n", step="干活").to_markdown()
    assert md.startswith("# 交接书 · 干活\n")
    assert md.count(f"\n{EMPTY}\n") == 3
    headings = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    assert headings == [name for _, name in SECTIONS]


def test_prompt_block_says_you_are_taking_over():
    block = Handoff.parse(REPLY, step="干活").prompt_block()
    assert block.startswith("你在接手")
    assert "不要回头找人要背景" in block
    assert "## 下一步\n在干净 clone 上跑一次 make 验证 shim 成立。" in block


def test_prompt_block_skips_empty_sections():
    block = Handoff(doing="d", next="n").prompt_block()
    assert "## 走不通的路" not in block
    assert EMPTY not in block


def test_write_load_round_trip(tmp_path):
    h = Handoff.parse(REPLY, step="干活")
    path = h.write(tmp_path / "notes" / "交接-干活.md")
    assert path.is_absolute() and h.path == path
    loaded = Handoff.load(path)
    assert loaded is not None
    assert loaded == h
    assert loaded.step == "干活"
    assert loaded.path == path


def test_placeholder_round_trip(tmp_path):
    path = Handoff(doing="d", next="n").write(tmp_path / "h.md")
    loaded = Handoff.load(path)
    assert loaded is not None
    assert (loaded.decided, loaded.deadends, loaded.scene) == ("", "", "")
    assert loaded.complete()


def test_degraded_builds_a_marked_usable_handoff():
    task = "原始任务:" + "很长的描述" * 500
    h = degraded("干活", task, why="网络断了")
    assert DEGRADED in h.doing
    assert h.degraded
    assert h.complete()  # must be usable as is: there is no fallback behind it
    assert h.scene == task[:1200]
    assert len(h.scene) == 1200
    assert h.step == "干活"
    assert "网络断了" in h.doing


def test_degraded_with_short_prompt_keeps_it_whole():
    h = degraded("s", "做个脚本")
    assert h.scene == "做个脚本"
    assert h.degraded


def test_degraded_prompt_block_warns_the_successor():
    block = degraded("s", "task").prompt_block()
    assert "降级件" in block
    assert "## 现场\ntask" in block


def test_normal_handoff_is_not_degraded():
    assert not Handoff.parse(REPLY).degraded
    assert "降级件" not in Handoff.parse(REPLY).prompt_block()


def test_degraded_mark_with_full_width_colon():
    assert Handoff(doing="[降级\uff1a交接没写成] x", next="n").degraded


def test_degraded_survives_write_and_load(tmp_path):
    path = degraded("干活", "task", why="模型抽风").write(tmp_path / "h.md")
    loaded = Handoff.load(path)
    assert loaded is not None
    assert loaded.degraded
    assert loaded.scene == "task"


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 1034221 tokens > 1000000 maximum",
        "Error: Prompt Is Too Long",
        "context length exceeded",
        "context_length_exceeded",
        "This model's maximum context length is 200000 tokens",
        "too many total text bytes",
        "input length and `max_tokens` exceed context limit",
        "input length and max_tokens exceed context limit",
    ],
)
def test_is_overflow_recognises_overflow_errors(message):
    assert is_overflow(message)


@pytest.mark.parametrize(
    "message", ["rate limit exceeded", "overloaded_error", "connection reset", "", "context"]
)
def test_is_overflow_ignores_other_errors(message):
    assert not is_overflow(message)


def test_is_overflow_is_variadic_and_tolerates_none():
    assert is_overflow(None, "ok", "PROMPT IS TOO LONG")
    assert not is_overflow()
    assert not is_overflow(None, "fine")
    assert is_overflow(RuntimeError("prompt is too long"))


def test_handoff_prompt_has_only_the_two_placeholders():
    text = HANDOFF_PROMPT.format(used="152.0K", window="200K")
    assert "152.0K" in text and "200K" in text
    assert "{" not in text and "}" not in text


def test_handoff_prompt_asks_for_all_five_sections():
    for _, name in SECTIONS:
        assert f"## {name}" in HANDOFF_PROMPT


def test_reply_following_the_prompt_template_parses_complete():
    reply = "\n".join(f"## {name}\n{attr} 的内容" for attr, name in SECTIONS)
    h = Handoff.parse(reply)
    assert h.complete()
    assert h.scene == "scene 的内容"


def test_load_missing_file_is_none(tmp_path):
    assert Handoff.load(tmp_path / "nope.md") is None


def test_load_directory_is_none(tmp_path):
    assert Handoff.load(tmp_path) is None


def test_load_empty_file(tmp_path):
    p = tmp_path / "h.md"
    p.write_text("", encoding="utf-8")
    loaded = Handoff.load(p)
    assert loaded is not None
    assert loaded == Handoff()
    assert not loaded.complete()


def test_load_binary_garbage_does_not_crash(tmp_path):
    p = tmp_path / "h.md"
    p.write_bytes(b"\x00\xff\xfe\x80" * 100)
    loaded = Handoff.load(p)
    assert loaded is not None and not loaded.complete()
