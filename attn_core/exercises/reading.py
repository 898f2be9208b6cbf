"""The exercise of the book's page "Reading the numbers" (``book/reading_numbers.md``).

Exercise R.1 asks for McNemar's exact test of two paired conditions, from the runs' yes/no
outcomes, without :func:`attn_core.stats.mcnemar`: count the discordant pairs and compute
the two-sided binomial p-value at 1/2. The checker recognises the usual slips (Fisher's test
of the two totals, as if the groups were independent; a one-sided p; a p above 1 when the
discordant pairs split evenly; the concordant pairs counted; the chi-square approximation,
with or without the continuity correction).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import metrics, stats
from . import Wrong, as_array, checker, expect_number, first_mistake, own_work, variant_table

__all__ = ["check_mcnemar_p", "mcnemar_p_reference", "MCNEMAR_CASES"]


def _pairs(both: int, a_only: int, b_only: int, neither: int, seed: int):
    """Paired outcomes with these four counts, in a shuffled (seeded) order."""
    a = [True] * both + [True] * a_only + [False] * b_only + [False] * neither
    b = [True] * both + [False] * a_only + [True] * b_only + [False] * neither
    order = np.random.default_rng(seed).permutation(len(a))
    return [a[i] for i in order], [b[i] for i in order]


#: (a_ok, b_ok) lists of 40 (or 10) paired runs: the page's example (26 both, 13 only the
#: first, 1 only the second), an even split, a one-sided split, no discordant pair at all,
#: and a split in the other direction.
MCNEMAR_CASES = tuple(_pairs(*counts, seed) for seed, counts in enumerate(
    [(26, 13, 1, 0), (20, 5, 5, 10), (9, 0, 6, 25), (4, 0, 0, 6), (12, 3, 9, 16)]))


def _counts(a_ok, b_ok) -> tuple[int, int, int, int]:
    """(both, only a, only b, neither): :func:`attn_core.stats.mcnemar`'s counts."""
    m = stats.mcnemar(a_ok, b_ok)
    return m["both"], m["a_only"], m["b_only"], m["neither"]


def mcnemar_p_reference(a_ok, b_ok) -> float:
    """McNemar's exact two-sided p of paired outcomes (run i of ``a_ok`` and of ``b_ok``
    share a seed): :func:`attn_core.stats.mcnemar`'s ``p``, the book's own (lists of bools
    of equal length, else a TypeError or ValueError naming the argument)."""
    return stats.mcnemar(a_ok, b_ok)["p"]


def _chi2_p(x: float) -> float:
    return math.erfc(math.sqrt(x / 2))


def _variants(a_ok, b_ok) -> dict[str, float]:
    both, b, c, neither = _counts(a_ok, b_ok)
    n, d = both + b + c + neither, b + c
    one = sum(math.comb(d, i) for i in range(min(b, c) + 1)) / 2 ** d if d else 1.0
    out = {
        "unpaired": metrics.fisher_exact(both + b, n, both + c, n),
        "one_sided": one,
        "uncapped": 2 * one,
        "concordant": stats.sign_test(b + both, n),
        "concordant/neither": stats.sign_test(b + neither, n),
    }
    if d:
        out["chi2"] = _chi2_p((b - c) ** 2 / d)
        out["chi2/cc"] = _chi2_p(max(abs(b - c) - 1, 0) ** 2 / d)
    else:  # no discordant pair: the approximations divide by zero
        out["chi2"] = out["chi2/cc"] = math.nan
    return out


_HINTS = {
    "unpaired": "that is Fisher's test of the two totals, as if the groups were independent; "
                "the runs come in pairs that share a seed: count the pairs where only one of "
                "the two runs copies, and test whether they split evenly",
    "one_sided": "that is one tail: a split as uneven in the other direction is as "
                 "surprising, so the two-sided p doubles the tail",
    "uncapped": "a p-value is a probability: when the discordant pairs split evenly, twice the "
                "tail exceeds 1, and the p is 1",
    "concordant": "only the discordant pairs (one run copies, the other not) say anything "
                  "about the difference; pairs where both copy, or neither, leave the test",
    "chi2": "that is the chi-square approximation; with this few discordant pairs use the "
            "exact binomial test: the number of pairs where only the first copies, out of "
            "all discordant pairs, at probability 1/2",
}
_RTOL, _ATOL = 1e-9, 1e-15


@checker("Exercise R.1: McNemar's test by hand")
def check_mcnemar_p(mcnemar_p):
    """``mcnemar_p(a_ok, b_ok)`` -> McNemar's exact two-sided p of two lists of paired
    yes/no outcomes, for every case of :data:`MCNEMAR_CASES`."""
    got = []
    for a_ok, b_ok in MCNEMAR_CASES:
        both, b, c, neither = _counts(a_ok, b_ok)
        what = (f"mcnemar_p on {len(a_ok)} pairs ({both} both, {b} only the first, {c} only "
                f"the second, {neither} neither)")
        with own_work((stats, "mcnemar"), (stats, "sign_test"),
                      (sys.modules[__name__], "mcnemar_p_reference")):
            answer = mcnemar_p(list(a_ok), list(b_ok))
        got.append(expect_number(as_array(answer, what), what))
    got = np.array(got)
    want = np.array([mcnemar_p_reference(*case) for case in MCNEMAR_CASES])
    off = ~np.isclose(got, want, rtol=_RTOL, atol=_ATOL)
    if not off.any():
        return
    table = variant_table(_variants, MCNEMAR_CASES)
    first_mistake(got, [(_HINTS[name.split("/")[0]], bad) for name, bad in table.items()],
                  rtol=_RTOL, atol=_ATOL)
    i = int(np.argmax(off))
    both, b, c, neither = _counts(*MCNEMAR_CASES[i])
    for name, bad in table.items():  # a slip made on this case alone
        if np.isclose(got[i], bad[i], rtol=_RTOL, atol=_ATOL) and not np.isclose(
                bad[i], want[i], rtol=_RTOL, atol=_ATOL):
            raise Wrong(_HINTS[name.split("/")[0]])
    if not 0 <= got[i] <= 1:
        raise Wrong(f"with {b} pairs where only the first copies and {c} where only the "
                    f"second does, your p is {got[i]:.6g}: a p-value is between 0 and 1")
    raise Wrong(f"with {b} pairs where only the first copies and {c} where only the second "
                f"does, your p is {got[i]:.6g}, which is not McNemar's exact p nor one of "
                "the usual slips: the p is twice the binomial tail P(X <= min(b, c)) for X of "
                "b + c draws at 1/2, capped at 1 (and 1 when no pair is discordant)")
