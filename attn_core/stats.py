"""Statistics for runs that share seeds, and for runs that have not finished.

Two conditions trained on the same seeds share each seed's initialisation and data: their
runs come in pairs, and a test that treats them as independent (Fisher's, the log-rank)
throws that design away. A run still below a level when its budget ends has not *failed*:
its time to reach the level is only known to be longer than the budget (censored). This
module holds what the chapters use for both:

- :func:`time_to_level`: each run's first evaluation step above a level, or censored;
- :func:`kaplan_meier`: the fraction of runs still below the level after each step;
- :func:`logrank`: two *independent* groups' times compared (unpaired);
- :func:`paired_order`: which run of each pair reached the level first, with the exact
  sign test (paired, censoring included: a run that got there beats one that did not);
- :func:`mcnemar`: two paired yes/no outcomes, the exact test on the discordant pairs;
- :func:`paired_difference`: the difference of two paired rates with Newcombe's interval
  for paired data (1998, method 10);
- :func:`holm`: Holm's step-down correction of a family of p-values.
"""

from __future__ import annotations

import math

import numpy as np

from .checks import check_int, check_real, check_real_array
from .metrics import first_step, wilson_interval

__all__ = ["time_to_level", "kaplan_meier", "logrank", "sign_test", "paired_order",
           "mcnemar", "paired_difference", "holm"]


def _bool_runs(name: str, ok, n: int | None = None) -> np.ndarray:
    ok = np.asarray(ok)
    if ok.dtype != bool or ok.ndim != 1 or ok.size == 0:
        raise TypeError(f"{name} must be a non-empty 1-D bool array (one entry a run); got "
                        f"dtype {ok.dtype}, shape {ok.shape}")
    if n is not None and ok.size != n:
        raise ValueError(f"{name} must hold one entry per run of the pair ({n}); got "
                         f"{ok.size}")
    return ok


def _times(name: str, times, reached, n: int | None = None):
    t = check_real_array(name, times, ndim=1)
    if t.size == 0 or (t < 0).any():
        raise ValueError(f"{name} must be a non-empty 1-D array of steps >= 0")
    r = _bool_runs(f"reached (of {name})", reached, t.size)
    if n is not None and t.size != n:
        raise ValueError(f"{name} must hold one time per run of the pair ({n}); got {t.size}")
    return t.astype(float), r


def time_to_level(steps, values, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each run's time to ``level``: ``values`` (runs, evaluations) at evaluation ``steps``;
    returns ``(times, reached)``: the first step at which a run is above ``level`` and
    True, or, for a run never above it, the last step and False (censored: its time is
    only known to exceed the budget)."""
    level = check_real("level", level)
    steps = check_real_array("steps", steps, ndim=1)
    v = check_real_array("values", values, ndim=2)
    if v.shape[1] != steps.size or steps.size == 0:
        raise ValueError(f"values must be (runs, evaluations) with one evaluation per step "
                         f"({steps.size}); got shape {v.shape}")
    if (np.diff(steps) <= 0).any():
        raise ValueError("steps must increase")
    first = first_step(steps, v, level)            # NaN where a run never gets there
    reached = ~np.isnan(first)
    return np.where(reached, first, steps[-1]), reached


def kaplan_meier(times, reached) -> tuple[np.ndarray, np.ndarray]:
    """The Kaplan-Meier estimate of the fraction of runs still below the level: ``(t, S)``,
    S[i] the fraction after step t[i] (t[0] = 0, S[0] = 1, then each step at which a run
    reached the level). A censored run leaves the risk set after its time without
    counting as reached: the estimate's last value is the fraction that never got there
    within the budget, as far as the runs tell."""
    t, r = _times("times", times, reached)
    out_t, out_s, s = [0.0], [1.0], 1.0
    for u in np.unique(t[r]):
        at_risk = int((t >= u).sum())
        events = int(((t == u) & r).sum())
        s *= 1 - events / at_risk
        out_t.append(float(u))
        out_s.append(s)
    return np.array(out_t), np.array(out_s)


def logrank(times_a, reached_a, times_b, reached_b) -> float:
    """The log-rank test's two-sided p-value that two *independent* groups reach the level
    at the same rate over time (the chi-square statistic with one degree of freedom).
    For two conditions that share seeds use :func:`paired_order`."""
    ta, ra = _times("times_a", times_a, reached_a)
    tb, rb = _times("times_b", times_b, reached_b)
    t, r = np.concatenate([ta, tb]), np.concatenate([ra, rb])
    in_a = np.concatenate([np.ones(ta.size, bool), np.zeros(tb.size, bool)])
    o_minus_e = var = 0.0
    for u in np.unique(t[r]):
        risk = t >= u
        n, na = int(risk.sum()), int((risk & in_a).sum())
        d = int(((t == u) & r).sum())
        da = int(((t == u) & r & in_a).sum())
        o_minus_e += da - d * na / n
        if n > 1:
            var += d * (na / n) * (1 - na / n) * (n - d) / (n - 1)
    if var == 0:
        return 1.0
    return math.erfc(math.sqrt(o_minus_e ** 2 / var / 2))


def sign_test(k: int, n: int) -> float:
    """The exact two-sided binomial p of ``k`` successes of ``n`` at 1/2 (the sign test: 1
    when n = 0): twice the smaller tail, at most 1. ``n`` an int >= 0, ``k`` an int in
    [0, n]."""
    n = check_int("n", n, 0)
    k = check_int("k", k, 0)
    if k > n:
        raise ValueError(f"k must be an int in [0, n] = [0, {n}]; got {k}")
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_order(times_a, reached_a, times_b, reached_b) -> dict:
    """Which run of each pair (run i of ``a`` and of ``b`` share a seed) reached the level
    first: ``a_first``, ``b_first``, ``ties`` (the same evaluation) and ``neither`` (both
    censored: no order is known), and the exact two-sided sign test's ``p`` over the pairs
    with an order. A run that reached the level beats one that did not, which is only
    right when every run had the same budget (checked: the censored runs share one
    time)."""
    ta, ra = _times("times_a", times_a, reached_a)
    tb, rb = _times("times_b", times_b, reached_b, ta.size)
    budget = np.unique(np.concatenate([ta[~ra], tb[~rb]]))
    if budget.size > 1:
        raise ValueError(f"the censored runs must share one budget (their last step); got "
                         f"{budget.tolist()}")
    inf = np.inf
    ea, eb = np.where(ra, ta, inf), np.where(rb, tb, inf)
    a_first = int((ea < eb).sum())
    b_first = int((eb < ea).sum())
    neither = int((~ra & ~rb).sum())
    ties = int(ta.size - a_first - b_first - neither)
    return {"a_first": a_first, "b_first": b_first, "ties": ties, "neither": neither,
            "p": sign_test(a_first, a_first + b_first)}


def mcnemar(a_ok, b_ok) -> dict:
    """McNemar's exact test of two paired yes/no outcomes (run i of ``a`` and of ``b``
    share a seed): ``both``, ``a_only``, ``b_only``, ``neither``, and the two-sided exact
    binomial ``p`` of the discordant pairs (``a_only`` of ``a_only + b_only`` at 1/2)."""
    a = _bool_runs("a_ok", a_ok)
    b = _bool_runs("b_ok", b_ok, a.size)
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    return {"both": int((a & b).sum()), "a_only": a_only, "b_only": b_only,
            "neither": int((~a & ~b).sum()), "p": sign_test(a_only, a_only + b_only)}


def paired_difference(a_ok, b_ok, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(rate_a − rate_b, low, high)`` for paired yes/no outcomes (run i of ``a`` and of
    ``b`` share a seed): the interval of Newcombe (1998) for paired data, method 10 --
    each rate's Wilson interval, combined with the pairs' correlation φ. Narrower than
    the unpaired interval when the pairs agree (the design's gain), equal to it at φ = 0."""
    a = _bool_runs("a_ok", a_ok)
    b = _bool_runs("b_ok", b_ok, a.size)
    n = a.size
    e, f = int((a & b).sum()), int((a & ~b).sum())
    g, h = int((~a & b).sum()), int((~a & ~b).sum())
    k1, k2 = e + f, e + g
    p1, p2 = k1 / n, k2 / n
    l1, u1 = wilson_interval(k1, n, confidence)       # checks confidence is in (0, 1)
    l2, u2 = wilson_interval(k2, n, confidence)
    margins = (e + f) * (g + h) * (e + g) * (f + h)
    phi = (e * h - f * g) / math.sqrt(margins) if margins else 0.0
    d = p1 - p2
    low = d - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)
                            + (u2 - p2) ** 2))
    high = d + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)
                             + (u1 - p1) ** 2))
    return d, max(-1.0, low), min(1.0, high)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (in their order): the i-th
    smallest multiplied by (m − i + 1), made non-decreasing, at most 1. A finding of the
    family holds at level α where its adjusted p is at most α."""
    p = check_real_array("pvalues", pvalues, ndim=1)
    if p.size == 0 or ((p < 0) | (p > 1)).any():
        raise ValueError("pvalues must be a non-empty 1-D array of probabilities in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out
