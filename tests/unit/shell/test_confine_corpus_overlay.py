"""The corpus's fixed sample of every category, confined by the judge's overlay (its writes vanish
with it): harmless, and really run (see test_confine_corpus.py). One file per mechanism, so the
suite's workers share the sample out."""

from __future__ import annotations

import pytest
from confine_corpus import CATEGORIES, Hostile, check_sample


@pytest.mark.parametrize("category", CATEGORIES)
def test_a_sample_of_each_category_is_harmless_confined(hostile: Hostile, category: str) -> None:
    check_sample(hostile, category, "overlay")
