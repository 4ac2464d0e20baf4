"""The seeds' Chinese texts come out byte for byte in Chinese, and only the words change in English."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flower.base.i18n import _, set_language
from flower.cli.terminal import PROMPT_FRESH, PROMPT_WAKE
from flower.workflow.starter import banner_line, step_line

SEEDS = Path(__file__).resolve().parents[1] / "data" / "i18n" / "seed_texts.txt"
CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _seed(key: str) -> str:
    for line in SEEDS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _tab, text = line.partition("\t")
            if name == key:
                return text
    raise KeyError(key)


def _the_seeds_banner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The banner of the seeds' example: ~/explore/test-ide, 15 checks, 80.2K, the third wake."""
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / "explore" / "test-ide"
    workspace.mkdir(parents=True)
    state = {"waking": True, "checks": 15, "woke": 2, "brief": "", "goal": "", "steps": {}}
    return banner_line(state, workspace=workspace, context=80_200)  # type: ignore[arg-type]


@pytest.fixture
def english():
    set_language("en")
    yield
    set_language("zh")


def test_the_banner_and_the_step_header_are_the_seeds_words_in_chinese(tmp_path, monkeypatch):
    set_language("zh")
    assert _the_seeds_banner(tmp_path, monkeypatch) == _seed("banner")
    assert step_line("干活", 3, 3, resumed=True, woke=3) == _seed("step")


def test_the_start_prompts_are_the_seeds_words_in_chinese():
    set_language("zh")
    assert _(PROMPT_WAKE) == _seed("prompt_wake")
    assert _(PROMPT_FRESH) == _seed("prompt_fresh")


def test_in_english_the_banner_keeps_its_structure_figures_and_step_name(tmp_path, monkeypatch, english):
    banner = _the_seeds_banner(tmp_path, monkeypatch)
    assert banner == (
        "<- continuing in ~/explore/test-ide where it stopped  "
        "brief confirmed · goal 15 checks · 干活 context 80.2K · wake 3"
    )
    # the same parts in the same order, separated the same way
    assert banner.count(" · ") == _seed("banner").count(" · ")
    assert step_line("干活", 3, 3, resumed=True, woke=3) == (
        "== 干活 ==============================  3/3  <- continued · wake 3"
    )
    for prompt in (_(PROMPT_WAKE), _(PROMPT_FRESH)):
        assert not CJK.search(prompt), prompt
