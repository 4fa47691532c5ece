"""pass@k: the unbiased estimator, computed stably, and what the summary says when k exceeds n."""

from __future__ import annotations

import math

import pytest

from gate.eval.passk import pass_at_k, pass_at_ks


@pytest.mark.parametrize(("n", "c", "k"), [(10, 3, 1), (10, 3, 5), (20, 1, 10), (200, 37, 100), (5, 0, 2)])
def test_matches_the_binomial_formula(n: int, c: int, k: int) -> None:
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def test_pass_at_1_is_the_fraction_correct() -> None:
    assert pass_at_k(8, 2, 1) == pytest.approx(0.25)


def test_certain_when_fewer_wrong_samples_than_k() -> None:
    assert pass_at_k(10, 8, 3) == 1.0


def test_large_n_does_not_overflow() -> None:
    value = pass_at_k(100_000, 10, 1000)
    assert 0.0 < value < 1.0


def test_averaged_over_tasks_and_k_above_n_said_plainly() -> None:
    result = {p.k: p for p in pass_at_ks([(2, 1), (2, 0), (10, 5)], [1, 5, 100])}
    assert result[1].value == pytest.approx((0.5 + 0.0 + 0.5) / 3)
    assert (result[5].tasks, result[5].short) == (1, 2)
    assert "2 tasks with fewer than 5 samples left out" in result[5].describe()
    assert result[100].value is None
    assert "no task has 100 samples" in result[100].describe()
