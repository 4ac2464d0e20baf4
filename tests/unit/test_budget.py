"""The budget's books (flower.core.budget): generated spending against generated ceilings, kept
across a restart under the same budget, counted afresh under a new one."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from flower.core.budget import BUDGET_FILE, Budget, Ledger, forecast_line


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_a_ceiling_is_a_positive_number_of_dollars(bad):
    with pytest.raises(ValueError, match="positive number of dollars"):
        Budget(run_usd=bad)
    with pytest.raises(ValueError, match="positive number of dollars"):
        Budget(round_usd=bad)


def test_no_budget_never_stops_and_gives_no_ceiling(tmp_path):
    ledger = Ledger(tmp_path, Budget())
    for _ in range(100):
        ledger.add(1000.0)
    assert ledger.exhausted() is None and ledger.left() is None
    assert not (tmp_path / BUDGET_FILE).exists()


def test_generated_spending_stops_exactly_at_the_first_ceiling_reached(tmp_path):
    rng = random.Random(20261202)
    for case in range(2000):
        run = rng.choice([None, round(rng.uniform(0.01, 5), 4)])
        per_round = rng.choice([None, round(rng.uniform(0.01, 2), 4)])
        ledger = Ledger(None, Budget(run_usd=run, round_usd=per_round))
        spent = round_spent = 0.0
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.3:
                ledger.begin_round()
                round_spent = 0.0
            cost = rng.choice([0.0, -0.5, rng.uniform(0, 0.5)])
            ledger.add(cost)
            if cost > 0:
                spent, round_spent = spent + cost, round_spent + cost
            expected = (
                "run"
                if run is not None and spent >= run - 1e-9
                else "round"
                if per_round is not None and round_spent >= per_round - 1e-9
                else None
            )
            assert ledger.exhausted() == expected, case
            rests = [x - y for x, y in ((run, spent), (per_round, round_spent)) if x is not None]
            left = ledger.left()
            if rests:
                assert left is not None and left >= 0, case
                assert left == pytest.approx(max(0.0, min(rests)), abs=1e-5), case
            else:
                assert left is None


def test_the_same_budget_after_a_kill_goes_on_counting(tmp_path):
    first = Ledger(tmp_path, Budget(run_usd=1.0))
    first.add(0.4)
    first.add(0.35)
    stored = json.loads((tmp_path / BUDGET_FILE).read_text(encoding="utf-8"))
    assert stored == {"run_usd": 1.0, "spent_usd": 0.75}

    again = Ledger(tmp_path, Budget(run_usd=1.0))  # flower started again, the same --budget
    assert again.spent == pytest.approx(0.75) and again.left() == pytest.approx(0.25)
    again.add(0.25)
    assert again.exhausted() == "run"


def test_a_new_budget_is_a_new_ceiling_from_zero(tmp_path):
    first = Ledger(tmp_path, Budget(run_usd=1.0))
    first.add(1.0)
    assert first.exhausted() == "run"
    more = Ledger(tmp_path, Budget(run_usd=2.0))  # "flower --budget 2": continue with new money
    assert more.spent == 0 and more.exhausted() is None and more.left() == pytest.approx(2.0)


@pytest.mark.parametrize(
    "damage", ["", "{", "[]", '{"run_usd": 1.0, "spent_usd": "lots"}', '{"run_usd": 1.0, "spent_usd": -3}']
)
def test_a_damaged_books_file_counts_from_zero_and_never_stops_the_run(tmp_path, damage):
    (tmp_path / BUDGET_FILE).write_text(damage, encoding="utf-8")
    ledger = Ledger(tmp_path, Budget(run_usd=1.0))
    assert ledger.spent == 0 and ledger.exhausted() is None
    ledger.add(0.5)
    assert json.loads((tmp_path / BUDGET_FILE).read_text(encoding="utf-8"))["spent_usd"] == 0.5


def test_a_round_ceiling_resets_with_each_round(tmp_path):
    ledger = Ledger(tmp_path, Budget(round_usd=0.5))
    ledger.add(0.5)
    assert ledger.exhausted() == "round"
    ledger.begin_round()
    assert ledger.exhausted() is None and ledger.left() == pytest.approx(0.5)


def test_the_forecast_is_the_mean_of_the_finished_rounds(tmp_path):
    ledger = Ledger(None, Budget(run_usd=1.0))
    line = forecast_line(ledger)
    assert "已花 $0.0000/$1.00" in line and "下轮" not in line  # nothing to forecast from yet
    ledger.begin_round("确认需求")
    ledger.add(0.05)  # another step's round: no guide to a round of work
    for cost in (0.1, 0.3):
        ledger.begin_round("干活")
        ledger.add(cost)
    ledger.begin_round("干活")
    guess = ledger.forecast()
    assert guess.rounds == 2 and guess.next_round == pytest.approx(0.2) and guess.spent == pytest.approx(0.45)
    line = forecast_line(ledger)
    assert line == "已花 $0.4500/$1.00 · 下轮约 $0.2000(前 2 轮均值) · 还够约 2 轮"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_forecast_fits_a_terminal_line(lang):
    from flower.base.i18n import language, set_language
    from flower.core.display import columns

    before = language()
    set_language(lang)

    ledger = Ledger(None, Budget(run_usd=123.45, round_usd=9.99))
    for cost in (1.2345, 2.5):
        ledger.begin_round()
        ledger.add(cost)
    ledger.begin_round()
    try:
        assert columns("  $ " + forecast_line(ledger)) <= 80
    finally:
        set_language(before)


def test_only_a_run_ceiling_is_kept_on_disk(tmp_path: Path):
    # a ledger without a ceiling for the run writes nothing (a per-round ceiling is this process's)
    ledger = Ledger(tmp_path, Budget(round_usd=1.0))
    ledger.add(0.5)
    assert not (tmp_path / BUDGET_FILE).exists()
