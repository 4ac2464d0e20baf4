"""The message catalogue and the choice of language (flower.base.i18n, docs/i18n.md)."""

from __future__ import annotations

import string

import pytest
from babel.messages.pofile import read_po

from flower.base import i18n
from flower.base.i18n import _, language_for_client, language_from_environment, ngettext, set_language

CATALOGUE = i18n.LOCALE_DIR / "en" / "LC_MESSAGES"
CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"


def _catalogue():
    with (CATALOGUE / "flower.po").open("rb") as fh:
        return read_po(fh)


def _fields(text: str) -> list[tuple[str, str, str]]:
    """The placeholders of a format string: (name, conversion, spec), in order of name."""
    return sorted(
        (name, conversion or "", spec or "")
        for _literal, name, spec, conversion in string.Formatter().parse(text)
        if name is not None
    )


@pytest.fixture
def english():
    set_language("en")
    yield
    set_language("zh")


# -- the catalogue -----------------------------------------------------------------------------
# That it holds every marked text, and no other, and that the .mo is its compile, is the
# generated-files gate's (`make generate-check`, tests/unit/test_generated.py): these are the
# translations' own rules.


def test_every_entry_has_a_non_empty_english_text_with_the_same_placeholders():
    entries = [m for m in _catalogue() if m.id]
    assert len(entries) > 300
    for m in entries:
        ids = [m.id] if isinstance(m.id, str) else list(m.id)
        texts = [m.string] if isinstance(m.string, str) else list(m.string)
        assert all(t.strip() for t in texts), f"no English for {ids[0]!r}"
        assert not m.fuzzy, f"a fuzzy entry is not a translation: {ids[0]!r}"
        for text in texts:
            assert _fields(text) == _fields(ids[0]), f"placeholders differ: {ids[0]!r} -> {text!r}"


def test_no_english_text_contains_chinese_except_the_fixed_names():
    fixed = ("需求.md", "目标.md", "问答记录.md", "交接-", "未知与假设", "确认需求", "设定目标", "干活")
    for m in _catalogue():
        if not m.id:
            continue
        for text in [m.string] if isinstance(m.string, str) else m.string:
            rest = text
            for name in fixed:
                rest = rest.replace(name, "")
            assert not any(
                "\u3000" <= c <= "\u303f" or "\u4e00" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef"
                for c in rest
            ), text


# -- speaking a language -----------------------------------------------------------------------


def test_chinese_is_the_identity_and_english_comes_from_the_catalogue(english):
    assert _("需求已确认") == "brief confirmed"
    assert ngettext("目标 {n} 条", "目标 {n} 条", 1).format(n=1) == "goal 1 check"
    assert ngettext("目标 {n} 条", "目标 {n} 条", 15).format(n=15) == "goal 15 checks"
    assert _("a text no catalogue has") == "a text no catalogue has"
    set_language("zh")
    assert i18n.language() == "zh"
    assert _("需求已确认") == "需求已确认"
    assert ngettext("目标 {n} 条", "目标 {n} 条", 15).format(n=15) == "目标 15 条"


def test_an_unknown_language_is_refused():
    with pytest.raises(ValueError, match="fr"):
        set_language("fr")
    assert i18n.language() == "zh"


# -- choosing the language ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "language"),
    [
        ({}, "zh"),
        ({"LANG": "C"}, "zh"),
        ({"LANG": "POSIX"}, "zh"),
        ({"LANG": "C.UTF-8"}, "zh"),
        ({"LANG": "fr_FR.UTF-8"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LANG": "en_GB"}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LC_MESSAGES": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"LC_ALL": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        # POSIX: the first variable that is set decides, even when it names no language of ours
        ({"LC_ALL": "C", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LC_ALL": "", "LANG": "en_US.UTF-8"}, "en"),
        ({"FLOWER_LANG": "en", "LC_ALL": "zh_CN.UTF-8"}, "en"),
        ({"FLOWER_LANG": "zh", "LANG": "en_US.UTF-8"}, "zh"),
        ({"FLOWER_LANG": "en_US", "LANG": "C"}, "en"),
        ({"FLOWER_LANG": "zh_CN"}, "zh"),
        # a FLOWER_LANG flower does not speak is ignored: the locale decides
        ({"FLOWER_LANG": "klingon", "LANG": "en_US.UTF-8"}, "en"),
        ({"FLOWER_LANG": "fr"}, "zh"),
    ],
)
def test_the_terminal_language_follows_flower_lang_then_the_posix_locale(env, language):
    assert language_from_environment(env) == language


@pytest.mark.parametrize(
    ("locale", "env", "language"),
    [
        ("en", {}, "en"),
        ("en-US", {"LANG": "zh_CN.UTF-8"}, "en"),
        ("zh-cn", {"LANG": "en_US.UTF-8"}, "zh"),
        ("zh-tw", {}, "zh"),
        ("de", {"LANG": "en_US.UTF-8"}, "en"),  # a display language flower lacks: the process locale
        (None, {"LANG": "en_US.UTF-8"}, "en"),
        (None, {}, "zh"),
        ("fr", {}, "zh"),
        ("en", {"FLOWER_LANG": "zh"}, "zh"),
        ("zh-cn", {"FLOWER_LANG": "en"}, "en"),
    ],
)
def test_the_server_language_follows_flower_lang_then_the_client_then_the_locale(locale, env, language):
    assert language_for_client(locale, env) == language
