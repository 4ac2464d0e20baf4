"""Step labels: one parser, one formatter, the same meaning for every reader of a manifest."""

from __future__ import annotations

import random
import string

import pytest

from flower.core.labels import HANDOFF, HANDOVER, JUDGE, LabelKind, StepLabel
from flower.core.recovery import base_step, sessions_by_step


@pytest.mark.parametrize(
    ("text", "label", "lineage", "lane"),
    [
        ("干活", StepLabel("干活"), "干活", "干活"),
        ("干活#round2", StepLabel.round("干活", 2), "干活", "干活"),
        ("干活#retry1", StepLabel.retry("干活", 1), "干活", "干活"),
        ("干活·判定#2", StepLabel.verdict("干活", 2), None, "干活·判定"),
        ("干活·交接", StepLabel.handoff("干活"), None, "干活"),
        ("干活·交接给下一个工具", StepLabel.handover("干活"), None, "干活"),
        ("确认需求", StepLabel("确认需求"), "确认需求", "确认需求"),
        ("ad-hoc", StepLabel("ad-hoc"), "ad-hoc", "ad-hoc"),
    ],
)
def test_the_labels_flower_writes(text: str, label: StepLabel, lineage: str | None, lane: str):
    assert StepLabel.parse(text) == label and str(label) == text
    assert (label.lineage_key, label.lane) == (lineage, lane)
    assert base_step(text) == lineage  # recovery rebuilds the lineage from the same reading


def test_a_side_turn_flower_does_not_know_is_kept_whole_and_never_enters_the_lineage():
    label = StepLabel.parse("干活·审查")
    assert label.kind is LabelKind.SIDE and str(label) == "干活·审查" and label.lineage_key is None


def test_labels_that_only_look_alike_are_plain_steps():
    for text in ("干活#3", "#round2", "判定#1", "·判定#1", "a#roundx", "交接", "round#round"):
        label = StepLabel.parse(text)
        assert str(label) == text, text
        assert label.kind in (LabelKind.STEP, LabelKind.SIDE, LabelKind.ROUND), text
    assert StepLabel.parse("round#round1") == StepLabel.round("round", 1)


def _name(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "-_ " + "干活确认需求设定目标花"
    name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
    return name.strip() or "x"


def test_five_thousand_generated_labels_read_back_as_written():
    rng = random.Random(24)
    makers = [
        lambda s, n: StepLabel(s),
        StepLabel.round,
        StepLabel.retry,
        StepLabel.verdict,
        lambda s, n: StepLabel.handoff(s),
        lambda s, n: StepLabel.handover(s),
    ]
    for _ in range(5000):
        step = _name(rng)
        label = rng.choice(makers)(step, rng.randint(1, 10_000))
        text = str(label)
        assert StepLabel.parse(text) == label, text
        continues = label.kind in (LabelKind.STEP, LabelKind.ROUND, LabelKind.RETRY)
        assert label.lineage_key == (step if continues else None), text


def test_every_text_reads_back_as_written():
    """One parser, one formatter: a row's step is written back as it was read, whatever it is."""
    rng = random.Random(11)
    alphabet = "#·判定交接给下一个工具round retry0123456789٣干活 "
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        assert str(StepLabel.parse(text)) == text, text
    # a number flower would not write (a leading zero, another script's digit) is not a round
    for text in ("干活#round02", "干活#round٣", "干活·判定#01", "干活#retry007"):
        assert StepLabel.parse(text).number == 0 and str(StepLabel.parse(text)) == text, text
    assert StepLabel.parse("干活#round0") == StepLabel.round("干活", 0)


def test_a_steps_judge_is_named_once():
    assert StepLabel.judge_of("干活") == "干活" + JUDGE == StepLabel.verdict("干活", 3).lane
    assert str(StepLabel.verdict("干活", 3)) == StepLabel.judge_of("干活") + "#3"


def test_parsing_is_total_on_any_text():
    rng = random.Random(7)
    alphabet = "#·判定交接给下一个工具round retry0123456789干活 "
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        label = StepLabel.parse(text)
        assert isinstance(label.kind, LabelKind)
        if label.kind is LabelKind.STEP or label.kind is LabelKind.SIDE:
            assert str(label) == text  # what flower cannot read it keeps as it is


def test_the_lineage_is_rebuilt_from_step_rows_only():
    rows = [
        {"step": "干活", "session_id": "s1", "started_at": 1.0},
        {"step": "干活" + JUDGE + "#1", "session_id": "judge", "started_at": 2.0},
        {"step": "干活#round2", "session_id": "s2", "started_at": 3.0},
        {"step": "干活" + HANDOFF, "session_id": "handoff", "started_at": 4.0},
        {"step": "干活" + HANDOVER, "session_id": "handover", "started_at": 5.0},
    ]
    assert sessions_by_step(rows) == {"干活": "s2"}
