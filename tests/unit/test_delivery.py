"""Words said into a step: each Say's future settles once, delivered or with the reason."""

from __future__ import annotations

import pytest

from flower.core.delivery import STEP_OVER, STOPPED, Deliveries, Undelivered
from flower.core.sizes import line_length


def test_words_ride_on_the_resumed_turn_and_are_delivered_when_the_model_answers() -> None:
    said = Deliveries()
    first, second = said.say("用 Python"), said.say("  ")
    assert said.take() == "用 Python"  # blank words only interrupt
    assert said.riding and not first.done()
    said.delivered()
    assert first.result() is None and second.result() is None and not said.riding


def test_a_turn_that_ended_unanswered_refuses_the_words_it_carried_only() -> None:
    said = Deliveries()
    carried = said.say("很长的一段")
    said.take()
    later = said.say("后来的话")  # said after the resume: not on that turn
    said.refused("Prompt is too long")
    with pytest.raises(Undelivered, match="Prompt is too long") as missed:
        carried.result()
    assert not missed.value.step_over and not later.done()


@pytest.mark.parametrize(("reason", "step_over"), [(STEP_OVER, True), (STOPPED, False)])
def test_the_end_of_a_step_settles_every_word_left(reason: str, step_over: bool) -> None:
    said = Deliveries()
    riding = said.say("a")
    said.take()
    waiting = said.say("b")
    said.drop(reason, step_over=step_over)
    with pytest.raises(Undelivered) as left:
        waiting.result()
    assert left.value.step_over is step_over  # unheard words may still go to the inbox
    with pytest.raises(Undelivered) as rode:
        riding.result()
    assert rode.value.step_over is False  # they reached a turn: not mailed twice
    said.delivered()  # settling again changes nothing


def test_the_line_length_counts_what_the_sdk_writes() -> None:
    assert line_length("abc") == 5 and line_length("说") == 8  # quotes, \u8bf4


@pytest.mark.parametrize("mb", [1, 4, 32])
def test_words_whose_echo_would_overflow_a_line_are_refused_before_the_turn_is_touched(
    monkeypatch: pytest.MonkeyPatch, tmp_path, mb: int
) -> None:
    # the CLI can send the words back twice on one line: past half the bound, the SDK would
    # refuse that line and end the step, so the words are refused instead and the turn runs on
    from flower import Runtime
    from flower.core.sizes import LIMIT_VAR, mib, say_limit, say_refusal

    monkeypatch.setenv(LIMIT_VAR, str(mb))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")  # nothing here calls a model
    limit = say_limit()
    assert limit == mb * 1024 * 1024 // 2
    fits, over = "x" * (limit - 2), "x" * (limit - 1)  # line_length counts the JSON quotes
    assert line_length(fits) == limit and say_refusal(fits) is None
    assert f"words can be at most {mib(limit)} MiB (half of {LIMIT_VAR}" in (say_refusal(over) or "")
    rt = Runtime(workspace=tmp_path, run_dir=tmp_path / "runs")
    refused = rt.interrupt(over)
    with pytest.raises(Undelivered, match="too long to say") as missed:
        refused.result(timeout=0)
    assert not missed.value.step_over  # not for the inbox either: the same words are as long there
    assert not rt._interrupt_requested  # the turn in flight was left alone
