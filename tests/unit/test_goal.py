from __future__ import annotations

import pytest

from flower.core.goal import (
    ACHIEVED,
    NOT_YET,
    UNREACHABLE,
    Goal,
    Verdict,
    check_lines,
)

DOC_EXAMPLE = """\
# 目标
让 conv.py 能把 md 转成 html。

# 判定清单
- 跑 `python conv.py a.md` 产出 a.html
- 输出里含 `<h1>`
- 列表被转成 `<ul><li>`
"""


# --- Goal -------------------------------------------------------------------------------


def test_parses_the_documented_goal_file():
    g = Goal.parse(DOC_EXAMPLE)
    assert g.statement == "让 conv.py 能把 md 转成 html。"
    assert g.checks == ["跑 `python conv.py a.md` 产出 a.html", "输出里含 `<h1>`", "列表被转成 `<ul><li>`"]
    assert g.complete()


def test_to_markdown_matches_the_documented_layout():
    assert Goal.parse(DOC_EXAMPLE).to_markdown() == DOC_EXAMPLE


@pytest.mark.parametrize(
    ("line", "item"),
    [
        ("- a", "a"),
        ("* a", "a"),
        ("+ a", "a"),
        ("1. a", "a"),
        ("12. a", "a"),
        ("2) a", "a"),
        ("- [ ] a", "a"),
        ("- [x] a", "a"),
        ("[ ] a", "a"),
        ("a", "a"),
        ("  - a  ", "a"),
    ],
)
def test_list_markers_are_stripped(line, item):
    assert Goal.parse(f"# 目标\nG\n# 判定清单\n{line}\n").checks == [item]


def test_one_check_per_line_blank_lines_skipped():
    g = Goal.parse("# 目标\nG\n# 判定清单\n- a\n\n- b\n")
    assert g.checks == ["a", "b"]


def test_marker_inside_text_is_kept():
    g = Goal.parse("# 目标\nG\n# 判定清单\n- 跑 `a - b` 得 1.5\n")
    assert g.checks == ["跑 `a - b` 得 1.5"]


def test_missing_needs_statement_and_checks():
    assert Goal().missing() == ["目标", "判定清单"]
    assert Goal(statement="G").missing() == ["判定清单"]
    assert Goal(checks=["c"]).missing() == ["目标"]
    assert Goal(statement="G", checks=["c"]).complete()
    assert not Goal(statement="G", checks=["  "]).complete()


def test_empty_checklist_is_written_as_placeholder_and_reads_back_empty(tmp_path):
    g = Goal(statement="G")
    md = g.to_markdown()
    assert md == "# 目标\nG\n\n# 判定清单\n(空)\n"
    assert Goal.parse(md).checks == []
    loaded = Goal.load(g.write(tmp_path / "目标.md"))
    assert loaded is not None
    assert loaded.checks == [] and loaded.missing() == ["判定清单"]


def test_alias_headings():
    g = Goal.parse("**目标**: G\n**判定项**:\n1. a\n2. b\n")
    assert g.statement == "G"
    assert g.checks == ["a", "b"]


def test_first_non_empty_checklist_wins():
    g = Goal.parse("# 目标\nG\n# 判定清单\n(空)\n# 判定清单\n- real\n# 判定清单\n- later\n")
    assert g.checks == ["real"]


def test_checklist_inside_unclosed_fence_is_dropped():
    g = Goal.parse("# 目标\nG\n```\n# 判定清单\n- a\n")
    assert g.checks == []
    assert not g.complete()


@pytest.mark.parametrize("colon", [":", "\uff1a"])
def test_unverifiable_checks(colon):
    marked = f"界面截图并实际看图 [此环境无法验证{colon}屏幕录制未授权]"
    g = Goal(statement="G", checks=["跑得起来", marked, "提到了无法验证但没标记"])
    assert g.unverifiable == [marked]


def test_unverifiable_survives_round_trip(tmp_path):
    g = Goal(statement="G", checks=["a", "b [此环境无法验证:没有 macOS]"])
    loaded = Goal.load(g.write(tmp_path / "目标.md"))
    assert loaded is not None
    assert loaded.unverifiable == ["b [此环境无法验证:没有 macOS]"]


def test_prompt_block_numbers_the_checks():
    block = Goal(statement="G", checks=["a", "b"]).prompt_block()
    assert "G" in block
    assert "1. a\n2. b" in block
    assert Goal.parse(block) == Goal(statement="G", checks=["a", "b"])


def test_amend_appends_and_returns_self():
    g = Goal(statement="原目标", checks=["a"])
    assert g.amend("也要支持代码块") is g
    assert g.statement == "原目标\n\n(已修改)也要支持代码块"


def test_amended_goal_round_trip(tmp_path):
    g = Goal(statement="原目标", checks=["a", "b"]).amend("加一条")
    path = g.write(tmp_path / "notes" / "目标.md")
    assert g.path == path and path.is_absolute()
    loaded = Goal.load(path)
    assert loaded is not None
    assert loaded.statement == g.statement
    assert loaded.checks == g.checks
    assert loaded == g  # path is a compared field on Goal, and load sets the same resolved path


def test_check_lines_point_at_the_written_lines(tmp_path):
    g = Goal(statement="第一行\n第二行", checks=["a", "b [此环境无法验证:x]"])
    path = g.write(tmp_path / "目标.md")
    text = path.read_text(encoding="utf-8")
    found = check_lines(text)
    lines = text.splitlines()
    assert [c for _, c in found] == g.checks
    for n, check in found:
        assert check in lines[n]


def test_check_lines_on_hand_edited_file():
    text = "说明文字\n```\n# 判定清单\n- fake\n```\n# 目标\nG\n\n# 判定清单\n\n- a\n\n* b\n"
    assert check_lines(text) == [(10, "a"), (12, "b")]


def test_check_lines_of_documented_example():
    assert check_lines(DOC_EXAMPLE) == [
        (4, "跑 `python conv.py a.md` 产出 a.html"),
        (5, "输出里含 `<h1>`"),
        (6, "列表被转成 `<ul><li>`"),
    ]


def test_check_lines_without_checklist():
    assert check_lines("# 目标\nG\n") == []
    assert check_lines("") == []


def test_goal_load_malformed_files(tmp_path):
    assert Goal.load(tmp_path / "nope.md") is None
    assert Goal.load(tmp_path) is None
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    loaded = Goal.load(empty)
    assert loaded is not None and loaded.missing() == ["目标", "判定清单"]
    garbage = tmp_path / "garbage.md"
    garbage.write_bytes(bytes(range(256)))
    loaded = Goal.load(garbage)
    assert loaded is not None and not loaded.complete()


# --- Verdict ----------------------------------------------------------------------------


def test_three_sections():
    v = Verdict.parse(
        "## 结论\n未达成\n\n## 理由\n测试只跑了一半。\n\n## 未通过\n- 输出里含 `<h1>`\n- 2. 列表\n"
    )
    assert v.state == NOT_YET
    assert v.reason == "测试只跑了一半。"
    assert v.failed == ["输出里含 `<h1>`", "2. 列表"]
    assert v.ok and not v.achieved and not v.unreachable


def test_conclusion_section_beats_the_rest_of_the_text():
    v = Verdict.parse("乍一看已经达成了。\n\n## 结论\n未达成\n\n## 理由\n大部分通过\n")
    assert v.state == NOT_YET


def test_judge_heading_alias():
    assert Verdict.parse("**判定**:达成").state == ACHIEVED


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("1", ACHIEVED),
        ("true", ACHIEVED),
        (" 1\n", ACHIEVED),
        ("True", ACHIEVED),
        ("0", NOT_YET),
        ("false", NOT_YET),
        ("\n0 ", NOT_YET),
    ],
)
def test_bare_answers(text, state):
    v = Verdict.parse(text)
    assert v.state == state and v.ok


@pytest.mark.parametrize(
    ("conclusion", "state"),
    [
        ("达成", ACHIEVED),
        ("已达成", ACHIEVED),
        ("未达成", NOT_YET),
        ("没达成", NOT_YET),
        ("没有达成", NOT_YET),
        ("无法达成", UNREACHABLE),
        ("达成不了:缺 X 依赖", UNREACHABLE),
        ("未完成", NOT_YET),
        ("not achieved", NOT_YET),
        ("ACHIEVED", ACHIEVED),
    ],
)
def test_longer_state_words_win(conclusion, state):
    assert Verdict.parse(f"## 结论\n{conclusion}\n").state == state


@pytest.mark.parametrize(
    "word", ["无法验证", "没法验证", "验证不了", "无法判定", "unverifiable", "Unverifiable"]
)
def test_cannot_verify_is_unreachable_never_achieved(word):
    v = Verdict.parse(f"结论:{word}(目标平台是 macOS,这里是 Linux 容器)")
    assert v.state == UNREACHABLE
    assert v.unreachable and not v.achieved and v.ok


def test_first_hit_in_the_conclusion_wins():
    assert Verdict.parse("## 结论\n未达成,不过差一点就达成").state == NOT_YET
    assert Verdict.parse("## 结论\n无法达成:缺 X 依赖,还没达成的部分也做不了").state == UNREACHABLE


def test_state_words_come_before_isolated_digits():
    assert Verdict.parse("## 结论\n未达成(1 条没过)").state == NOT_YET


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("## 结论\n1", ACHIEVED),
        ("## 结论\n0", NOT_YET),
        ("结论: 1 分", ACHIEVED),
        ("判定结果是 0 。", NOT_YET),
    ],
)
def test_isolated_digits_are_the_last_resort(text, state):
    assert Verdict.parse(text).state == state


def test_digit_inside_a_word_is_not_isolated():
    v = Verdict.parse("## 结论\n第1项看了,说不好")
    assert v.state == "" and not v.ok


@pytest.mark.parametrize(
    "text", ["", "   ", "看起来应该可以", "## 理由\n编译通过,第 1 条也跑了\n", "```\n达成\n```"]
)
def test_ambiguous_is_not_ok_and_not_achieved(text):
    v = Verdict.parse(text)
    assert v.state == ""
    assert not v.ok
    assert not v.achieved


def test_reason_alone_does_not_conclude_but_is_kept():
    v = Verdict.parse("## 理由\n大部分达成\n## 未通过\n- a\n")
    assert not v.ok
    assert v.reason == "大部分达成"
    assert v.failed == ["a"]


def test_none_in_failed_section_means_no_failures():
    assert Verdict.parse("## 结论\n达成\n## 未通过\n无\n").failed == []
    assert Verdict.parse("## 结论\n达成\n## 未通过\n(空)\n").failed == []


def test_feedback_says_where_it_falls_short():
    v = Verdict.parse("## 结论\n未达成\n## 理由\n列表没转换\n## 未通过\n- 列表被转成 `<ul><li>`\n")
    fb = v.feedback()
    assert "- 列表被转成 `<ul><li>`" in fb
    assert "列表没转换" in fb
    assert "判定者没给出明确结论" not in fb


def test_feedback_for_an_ambiguous_verdict_explains_the_default():
    fb = Verdict.parse("嗯").feedback()
    assert "判定者没给出明确结论,按未达成处理" in fb


def test_ok_for_every_recognised_state():
    assert all(Verdict(state=s).ok for s in (ACHIEVED, NOT_YET, UNREACHABLE))
    assert not Verdict().ok
