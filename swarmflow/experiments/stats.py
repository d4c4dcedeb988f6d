"""The statistics of an experiment, through scipy.stats: exact intervals and the sign test.

scipy is imported when a statistic is first computed, so importing the experiments package
stays light.
"""

from __future__ import annotations


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial share `k / n` at `level`.

    The bounds are quantiles of the beta distribution; at `k = 0` the lower bound is 0 and at
    `k = n` the upper bound is 1, as the exact interval defines them.

    Raises:
        ValueError: `n` under 1, `k` outside 0..n, or `level` outside (0, 1).
    """
    _check_share(k, n)
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    from scipy.stats import beta

    alpha = 1 - level
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def sign_test(only_a: int, only_b: int) -> float:
    """The exact two-sided sign test on discordant pairs (McNemar's exact test): the p-value
    of `only_a` successes in `only_a + only_b` fair coin flips. Ties (pairs where both or
    neither succeeded) are not counted; with no discordant pair there is no evidence, p = 1.

    Raises:
        ValueError: a negative count.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"counts must not be negative, got {only_a} and {only_b}")
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(only_a, discordant, 0.5, alternative="two-sided").pvalue)


def _check_share(k: int, n: int) -> None:
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= k <= n:
        raise ValueError(f"k must be between 0 and n={n}, got {k}")
