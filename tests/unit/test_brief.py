from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.core.brief import ALIASES, PLACEHOLDER, Brief, split_sections, strip_fences

FULL_BRIEF = """\
## 目标
做一个把 md 转成 html 的命令行脚本,给自己用。

## 验收标准
- 跑 `python conv.py a.md` 产出 a.html

## 边界
不碰业务代码。

## 未知与假设
假设用 python3.11。
"""


def test_parses_the_four_sections_in_order():
    b = Brief.parse(FULL_BRIEF)
    assert b.goal == "做一个把 md 转成 html 的命令行脚本,给自己用。"
    assert b.accept == "- 跑 `python conv.py a.md` 产出 a.html"
    assert b.bounds == "不碰业务代码。"
    assert b.unknowns == "假设用 python3.11。"
    assert b.complete()
    assert b.missing() == []


def test_missing_reports_chinese_names_in_document_order():
    b = Brief(accept="x")
    assert b.missing() == ["目标", "边界", "未知与假设"]
    assert not b.complete()
    assert Brief().missing() == ["目标", "验收标准", "边界", "未知与假设"]


def test_whitespace_only_section_is_missing():
    assert Brief(goal="  \n", accept="a", bounds="b", unknowns="u").missing() == ["目标"]


@pytest.mark.parametrize(
    "heading",
    ["## 目标", "# 目标", "**目标**", "**目标**:", "**目标:**", "目标:", "目标\uff1a", "1. 目标", "- 目标:"],
)
def test_heading_forms(heading):
    b = Brief.parse(f"{heading}\n做个脚本\n")
    assert b.goal == "做个脚本"


def test_numbered_heading():
    b = Brief.parse("1. 目标\nG\n2. 验收标准\nA\n3. 边界\nB\n4. 未知与假设\nU\n")
    assert (b.goal, b.accept, b.bounds, b.unknowns) == ("G", "A", "B", "U")


@pytest.mark.parametrize(
    "line",
    ["目标: 做一个 X", "目标\uff1a做一个 X", "**目标**: 做一个 X", "**目标** 做一个 X", "## 目标: 做一个 X"],
)
def test_body_on_the_heading_line(line):
    assert Brief.parse(line).goal == "做一个 X"


def test_body_on_heading_line_continues_on_following_lines():
    b = Brief.parse("目标: 第一行\n第二行\n边界: 不做 Y\n")
    assert b.goal == "第一行\n第二行"
    assert b.bounds == "不做 Y"


def test_prose_starting_with_a_section_word_is_not_a_heading():
    b = Brief.parse("## 目标\n做 X\n边界条件要处理好\n")
    assert b.goal == "做 X\n边界条件要处理好"
    assert b.bounds == ""


def test_documented_aliases():
    b = Brief.parse("## 目标\nG\n## 验收条件\nA\n## 不做什么\nB\n## 未知项与假设\nU\n")
    assert (b.goal, b.accept, b.bounds, b.unknowns) == ("G", "A", "B", "U")


def test_longer_alias_wins_over_its_prefix():
    # if "未知" were tried first, "未知与假设:U" would not be a heading and would stay in 边界
    b = Brief.parse("## 边界\nB\n未知与假设:U\n")
    assert b.bounds == "B"
    assert b.unknowns == "U"


def test_short_alias_still_works_alone():
    assert Brief.parse("未知: 不清楚部署环境").unknowns == "不清楚部署环境"


def test_first_non_empty_occurrence_wins():
    text = "## 目标\n\n## 目标\n真正的目标\n## 目标\n后来的目标\n"
    assert Brief.parse(text).goal == "真正的目标"


def test_placeholder_occurrence_does_not_win():
    text = f"## 目标\n{PLACEHOLDER}\n## 目标\n真正的目标\n"
    assert Brief.parse(text).goal == "真正的目标"


@pytest.mark.parametrize("placeholder", [PLACEHOLDER, "\uff08未填\uff09", "(空)"])
def test_placeholder_counts_as_missing(placeholder):
    b = Brief.parse(FULL_BRIEF.replace("不碰业务代码。", placeholder))
    assert b.bounds == ""
    assert b.missing() == ["边界"]


def test_closed_fence_contents_are_ignored():
    text = "## 目标\nG\n```markdown\n## 边界\n假的边界\n```\n## 边界\n真的边界\n"
    b = Brief.parse(text)
    assert b.goal == "G"
    assert b.bounds == "真的边界"


@pytest.mark.parametrize("fence", ["```", "```python", "~~~", "~~~~"])
def test_unclosed_fence_drops_everything_after_it(fence):
    text = f"## 目标\nG\n{fence}\nprint('pasted code')\n## 边界\nB\n## 未知与假设\nU\n"
    b = Brief.parse(text)
    assert b.goal == "G"
    assert b.bounds == ""
    assert b.unknowns == ""
    assert not b.complete()


def test_fence_closed_by_other_char_stays_open():
    text = "## 目标\nG\n```\ncode\n~~~\n## 边界\nB\n"
    assert Brief.parse(text).bounds == ""


def test_pasted_code_sample_does_not_leak_into_sections():
    reply = (
        "我直接写好了代码:\n\n```python\n# 目标: hijack\nprint('hi')\n```\n\n"
        "**目标**\n做脚本\n\n**验收标准**\n跑通\n\n**边界**\n只改 conv.py\n\n**未知与假设**\n无\n"
    )
    b = Brief.parse(reply)
    assert b.goal == "做脚本"
    assert "print" not in b.prompt_block()
    assert b.complete()


def test_unknown_heading_ends_the_section():
    b = Brief.parse("## 未知与假设\nU\n## 附注\n闲话\n")
    assert b.unknowns == "U"


def test_deeper_subheading_stays_in_the_section():
    b = Brief.parse("## 验收标准\n### 功能\n跑通\n## 边界\nB\n")
    assert b.accept == "### 功能\n跑通"
    assert b.bounds == "B"


def test_trailing_rule_is_not_content():
    assert Brief.parse("## 目标\nG\n\n---\n\n## 边界\nB\n").goal == "G"


def test_parse_never_fills_unfound_sections():
    b = Brief.parse("随便聊聊,没有任何段。")
    assert b == Brief()


def test_to_markdown_has_header_and_placeholders():
    md = Brief(goal="G", unknowns="U").to_markdown()
    assert md.startswith("# 需求确认书\n")
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections == ["## 目标", "## 验收标准", "## 边界", "## 未知与假设"]
    assert md.count(f"\n{PLACEHOLDER}\n") == 2
    assert "验收标准、边界" in md  # the header says what is missing


def test_to_markdown_parses_back_to_the_same_brief():
    b = Brief.parse(FULL_BRIEF)
    assert Brief.parse(b.to_markdown()) == b


def test_prompt_block_only_non_empty_sections_and_no_metadata():
    block = Brief(goal="G", bounds="B").prompt_block()
    assert block == "## 目标\nG\n\n## 边界\nB"
    assert PLACEHOLDER not in block
    assert "需求确认书" not in block


def test_path_does_not_take_part_in_equality():
    assert Brief(goal="G", path=Path("/a")) == Brief(goal="G", path=Path("/b"))


def test_write_creates_parents_and_sets_resolved_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    b = Brief.parse(FULL_BRIEF)
    out = b.write(Path("notes/deep/需求.md"))
    assert out == (tmp_path / "notes/deep/需求.md").resolve()
    assert out.is_absolute()
    assert b.path == out
    assert out.read_text(encoding="utf-8") == b.to_markdown()
    assert [p.name for p in out.parent.iterdir()] == ["需求.md"]  # no temp file left behind


def test_write_load_round_trip(tmp_path):
    b = Brief.parse(FULL_BRIEF)
    path = b.write(str(tmp_path / "需求.md"))
    loaded = Brief.load(path)
    assert loaded is not None
    assert loaded == b
    assert loaded.path == path


def test_placeholder_round_trip_stays_missing(tmp_path):
    path = Brief(goal="G", accept="A").write(tmp_path / "需求.md")
    assert PLACEHOLDER in path.read_text(encoding="utf-8")
    loaded = Brief.load(path)
    assert loaded is not None
    assert loaded.bounds == "" and loaded.unknowns == ""
    assert loaded.missing() == ["边界", "未知与假设"]


def test_hand_edit_survives_reload(tmp_path):
    path = Brief(goal="G", accept="A", bounds="B").write(tmp_path / "需求.md")
    path.write_text(path.read_text(encoding="utf-8").replace(PLACEHOLDER, "假设单机运行"), encoding="utf-8")
    loaded = Brief.load(path)
    assert loaded is not None
    assert loaded.unknowns == "假设单机运行"
    assert loaded.complete()


def test_load_missing_file_is_none(tmp_path):
    assert Brief.load(tmp_path / "nope.md") is None


def test_load_directory_is_none(tmp_path):
    assert Brief.load(tmp_path) is None


def test_load_empty_file_is_an_empty_brief(tmp_path):
    p = tmp_path / "需求.md"
    p.write_bytes(b"")
    loaded = Brief.load(p)
    assert loaded is not None
    assert loaded == Brief()
    assert loaded.path == p.resolve()


def test_load_binary_garbage_does_not_crash(tmp_path):
    p = tmp_path / "需求.md"
    p.write_bytes(bytes(range(256)) * 4 + b"\xff\xfe\x00")
    loaded = Brief.load(p)
    assert loaded is not None
    assert not loaded.complete()


def test_load_utf8_bom(tmp_path):
    p = tmp_path / "需求.md"
    p.write_bytes("\ufeff## 目标\nG\n".encode())
    loaded = Brief.load(p)
    assert loaded is not None and loaded.goal == "G"


def test_strip_fences_keeps_line_numbers():
    text = "a\n```\nb\n```\nc"
    assert strip_fences(text).splitlines() == ["a", "", "", "", "c"]


def test_split_sections_is_reusable_with_any_alias_table():
    found = split_sections("## Alpha\nx\n**beta**: y\n", {"alpha": "a", "beta": "b"})
    assert found == {"a": "x", "b": "y"}


def test_alias_table_covers_canonical_names():
    assert {ALIASES[n] for n in ("目标", "验收标准", "边界", "未知与假设")} == {
        "goal",
        "accept",
        "bounds",
        "unknowns",
    }


_plain = st.text(alphabet="acdfhik 做脚本跑通。\n", min_size=1, max_size=60).filter(lambda s: s.strip())


@settings(max_examples=60, deadline=None)
@given(goal=_plain, accept=_plain, bounds=_plain, unknowns=_plain)
def test_markdown_round_trip_property(goal, accept, bounds, unknowns):
    b = Brief(goal, accept, bounds, unknowns)
    expected = Brief(goal.strip(), accept.strip(), bounds.strip(), unknowns.strip())
    assert Brief.parse(b.to_markdown()) == expected


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_never_raises(text):
    b = Brief.parse(text)
    assert isinstance(b.missing(), list)
