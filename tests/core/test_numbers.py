"""One way to write a number and one bootstrap interval, for every report."""

import math

import numpy as np
import pytest

from darling.core.numbers import MISSING, fmt, pct, percentile_interval


def test_a_missing_value_has_one_marker_whatever_the_report():
    assert fmt(None) == fmt(math.nan) == pct(None) == MISSING
    assert (fmt(0.12345), fmt(0.12345, 1), fmt(7), pct(0.1234)) == ("0.123", "0.1", "7", "12.3")


def test_the_percentile_interval_is_numpys_percentiles_at_the_tails():
    values = np.random.default_rng(0).normal(size=2000)
    expected = [np.percentile(values, 2.5), np.percentile(values, 97.5)]
    assert percentile_interval(values) == pytest.approx(expected, abs=1e-12)
    low, high = percentile_interval(values, 0.5)
    assert -0.8 < low < -0.5 and 0.5 < high < 0.8  # the quartiles of a standard normal, +-0.67
