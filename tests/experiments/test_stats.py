"""The public statistics helpers against scipy and hand-computed values."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from scipy.stats import beta, binomtest

from swarmflow.experiments import clopper_pearson, sign_test


def test_the_interval_of_the_papers_reference_team() -> None:
    low, high = clopper_pearson(17, 36)  # OpenCollab Table 3: 47.2 [30.4, 64.5]
    assert (round(100 * low, 1), round(100 * high, 1)) == (30.4, 64.5)
    low, high = clopper_pearson(35, 36)  # 97.2 [85.5, 99.9]
    assert (round(100 * low, 1), round(100 * high, 1)) == (85.5, 99.9)


@pytest.mark.parametrize("n", [1, 5, 36])
def test_none_and_all_have_an_open_end(n: int) -> None:
    # 0/n: [0, 1 - (alpha/2)^(1/n)]; n/n: [(alpha/2)^(1/n), 1], the exact interval by hand.
    assert clopper_pearson(0, n) == (0.0, pytest.approx(1 - 0.025 ** (1 / n)))
    assert clopper_pearson(n, n) == (pytest.approx(0.025 ** (1 / n)), 1.0)


def test_the_bounds_are_beta_quantiles_at_any_level() -> None:
    low, high = clopper_pearson(3, 10, level=0.9)
    assert low == pytest.approx(beta.ppf(0.05, 3, 8))
    assert high == pytest.approx(beta.ppf(0.95, 4, 7))
    assert low < 0.3 < high


def test_the_sign_test_is_the_exact_binomial_on_discordant_pairs() -> None:
    assert sign_test(5, 0) == pytest.approx(2 * 0.5**5)  # by hand: both tails of 5 flips
    assert sign_test(13, 6) == pytest.approx(binomtest(13, 19, 0.5).pvalue)
    assert round(sign_test(21, 5), 4) == 0.0025  # OpenCollab Table 9, DeepSWE
    assert round(sign_test(6, 3), 2) == 0.51  # Table 9, Terminal-Bench
    assert sign_test(4, 9) == sign_test(9, 4)  # two-sided: symmetric


def test_ties_alone_give_no_evidence() -> None:
    assert sign_test(0, 0) == 1.0  # every pair concordant: nothing to test
    assert sign_test(3, 3) == 1.0


@pytest.mark.parametrize(
    ("k", "n", "level"), [(-1, 5, 0.95), (6, 5, 0.95), (0, 0, 0.95), (1, 2, 1.0), (1, 2, math.nan)]
)
def test_impossible_shares_are_refused(k: int, n: int, level: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        clopper_pearson(k, n, level)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        sign_test(-1, 2)


def test_the_package_loads_scipy_and_matplotlib_only_when_used() -> None:
    code = (
        "import sys, swarmflow.experiments as e\n"
        "f = e.clopper_pearson\n"
        "print('scipy' in sys.modules, 'matplotlib' in sys.modules, 'swarmflow.batches' in sys.modules)\n"
        "f(1, 2)\n"
        "print('scipy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "False", "True"]
