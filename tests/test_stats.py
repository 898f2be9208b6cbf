"""attn_core.stats: times to a level, Kaplan-Meier, the log-rank and paired tests, Holm.

The reference values were computed with SciPy 1.17.1 (``scipy.stats.ecdf`` on
``CensoredData``, ``scipy.stats.logrank``, ``scipy.stats.binomtest``), which the project
does not depend on."""

import math

import numpy as np
import pytest

from attn_core import metrics, stats

# two small groups: a reaches the level sooner; three of a's runs and four of b's censored
TA = np.array([20, 40, 40, 60, 100, 300, 300, 300.])
RA = np.array([1, 1, 1, 1, 1, 0, 0, 0], bool)
TB = np.array([40, 80, 120, 160, 300, 300, 300, 300.])
RB = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)


def test_time_to_level_is_the_first_step_above_or_censored_at_the_budget():
    steps = [0, 20, 40, 60]
    values = [[0.1, 0.96, 0.5, 0.97],      # above at 20, dips after: 20
              [0.1, 0.2, 0.95, 0.99],      # at 0.95 is not above it: 60
              [0.1, 0.2, 0.3, 0.4]]        # never: censored at 60
    t, r = stats.time_to_level(steps, values, 0.95)
    assert t.tolist() == [20, 60, 60] and r.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="steps must increase"):
        stats.time_to_level([0, 20, 20, 60], values, 0.95)
    with pytest.raises(ValueError, match=r"values must be \(runs, evaluations\)"):
        stats.time_to_level([0, 20], values, 0.95)


def test_kaplan_meier_matches_scipy():
    t, s = stats.kaplan_meier(TA, RA)
    assert t.tolist() == [0, 20, 40, 60, 100]
    assert np.allclose(s, [1, 0.875, 0.625, 0.5, 0.375], rtol=0, atol=1e-12)
    t, s = stats.kaplan_meier([10, 20, 30], [True, True, True])   # no censoring: 1 - ECDF
    assert np.allclose(s, [1, 2 / 3, 1 / 3, 0])


def test_kaplan_meier_does_not_count_a_censored_run_as_reached():
    # two runs censored early (a shorter budget) leave the risk set: the later event
    # counts against the two still at risk, so S drops by half, not by a quarter
    t, s = stats.kaplan_meier([10, 10, 50, 60], [False, False, True, False])
    assert t.tolist() == [0, 50] and s.tolist() == [1, 0.5]


def test_logrank_matches_scipy():
    assert stats.logrank(TA, RA, TB, RB) == pytest.approx(0.3987921076265145, rel=1e-12)
    assert stats.logrank(TA, RA, TA, RA) == pytest.approx(1.0)
    assert stats.logrank([300, 300], [False, False], [300], [False]) == 1.0   # no events


def test_paired_order_counts_who_got_there_first():
    # pair 1: a first; 2: b first; 3: a reached, b not; 4: both censored; 5: a tie
    out = stats.paired_order([20, 80, 40, 300, 60], [1, 1, 1, 0, 1] == np.ones(5),
                             [40, 60, 300, 300, 60], [True, True, False, False, True])
    assert {k: out[k] for k in ("a_first", "b_first", "ties", "neither")} == {
        "a_first": 2, "b_first": 1, "ties": 1, "neither": 1}
    assert out["p"] == 1.0
    many = stats.paired_order([20] * 10, np.ones(10, bool), [300] * 10, np.zeros(10, bool))
    assert many["a_first"] == 10 and many["p"] == pytest.approx(2 / 2 ** 10)
    with pytest.raises(ValueError, match="must share one budget"):
        stats.paired_order([20, 200], [True, False], [300, 300], [False, False])


def test_mcnemar_is_the_exact_test_of_the_discordant_pairs():
    a = np.array([1] * 2 + [0] * 9 + [1] * 5 + [0] * 4, bool)
    b = np.array([0] * 2 + [1] * 9 + [1] * 5 + [0] * 4, bool)
    out = stats.mcnemar(a, b)
    assert (out["both"], out["a_only"], out["b_only"], out["neither"]) == (5, 2, 9, 4)
    assert out["p"] == pytest.approx(0.0654296875, rel=1e-12)         # binomtest(2, 11)
    assert stats.mcnemar(a, a)["p"] == 1.0
    with pytest.raises(ValueError, match="one entry per run of the pair"):
        stats.mcnemar(a, b[:-1])
    with pytest.raises(TypeError, match="b_ok must be a non-empty 1-D bool array"):
        stats.mcnemar(a, b.astype(int))


def test_paired_difference_is_newcombes_unpaired_interval_when_pairs_are_uncorrelated():
    # e h = f g: φ = 0, so the paired interval is the unpaired hybrid score interval
    a = np.array([1] * 4 + [1] * 4 + [0] * 2 + [0] * 2, bool)
    b = np.array([1] * 4 + [0] * 4 + [1] * 2 + [0] * 2, bool)
    d, lo, hi = stats.paired_difference(a, b)
    ref = metrics.newcombe_interval(8, 12, 6, 12)
    assert (d, lo, hi) == pytest.approx(ref, abs=1e-12)


def test_paired_difference_is_narrower_when_the_pairs_agree():
    a = np.array([1] * 15 + [0] * 20 + [1] * 5, bool)      # 20 of 40
    b = np.array([1] * 15 + [0] * 20 + [0] * 5, bool)      # 15 of 40, the same runs but 5
    d, lo, hi = stats.paired_difference(a, b)
    _, ulo, uhi = metrics.newcombe_interval(20, 40, 15, 40)
    assert d == pytest.approx(0.125) and lo > 0 > ulo and hi - lo < uhi - ulo
    assert stats.paired_difference(a, a)[0] == 0


def test_paired_difference_covers_the_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    hits, n_sim = 0, 2000
    for _ in range(n_sim):
        shared = rng.random(40) < 0.5                    # a seed that helps both
        a = shared | (rng.random(40) < 0.2)
        b = shared & (rng.random(40) < 0.7)
        _, lo, hi = stats.paired_difference(a, b)
        hits += lo <= 0.5 + 0.5 * 0.2 - 0.5 * 0.7 <= hi     # E a − E b = 0.6 − 0.35
    assert 0.92 <= hits / n_sim <= 0.985


def test_holm_steps_down_and_keeps_the_order():
    assert stats.holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx(
        [0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5]).tolist() == [0.5]
    assert stats.holm([0.3, 0.4]).tolist() == [0.6, 0.6]
    with pytest.raises(ValueError, match="probabilities in"):
        stats.holm([0.1, 1.5])


def test_the_sign_test_by_hand_and_its_bad_input():
    assert stats.sign_test(0, 0) == 1.0
    assert stats.sign_test(1, 14) == 30 / 16384          # 2 (1 + 14) / 2^14
    assert stats.sign_test(13, 14) == stats.sign_test(1, 14)
    assert stats.sign_test(5, 10) == 1.0                  # twice the tail, capped at 1
    with pytest.raises(ValueError, match=r"k must be an int in \[0, n\] = \[0, 3\]; got 4"):
        stats.sign_test(4, 3)
    with pytest.raises(TypeError, match="n must be an int"):
        stats.sign_test(1, 3.0)


def test_the_sign_test_matches_scipy():
    assert stats.mcnemar(np.array([1] * 9 + [0] * 7, bool),
                         np.array([0] * 9 + [1] * 7, bool))["p"] == pytest.approx(
        0.803619384765625, rel=1e-12)
    assert math.isclose(stats.paired_order([20] * 2, [True] * 2, [300] * 2,
                                           [False] * 2)["p"], 0.5)
