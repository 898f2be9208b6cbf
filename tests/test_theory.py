"""Theory: the gated classifier's flow, its closed form, the constrained version, the SEN curve."""

import math

import numpy as np
import pytest

from attn_core import theory
from attn_core.metrics import first_step, holds_from, wilson_interval


def test_flow_matches_closed_form():
    for b0, b1, p in [(0, 0, 0.5), (10, -10, 0.5), (-1, 2, 0.2)]:
        f = theory.gated_flow(b0, b1, p, t_max=2.0, n_steps=400)
        c = theory.gated_flow_closed_form(b0, b1, p, f["tau"])
        for k in ("beta0", "beta1", "p"):
            np.testing.assert_allclose(f[k], c[k], rtol=1e-7, atol=1e-7)


def test_flow_is_gradient_flow_of_the_loss():
    """Finite differences of L = p(β0 - β1) give the flow's right-hand side."""
    b0, b1, p, h = 0.3, -0.7, 0.4, 1e-6
    L = theory.gated_loss
    grad = np.array([(L(b0 + h, b1, p) - L(b0 - h, b1, p)),
                     (L(b0, b1 + h, p) - L(b0, b1 - h, p)),
                     (L(b0, b1, p + h) - L(b0, b1, p - h))]) / (2 * h)
    np.testing.assert_allclose(-grad, [-p, p, b1 - b0], atol=1e-8)


def test_uniform_start_flat_then_rising_and_bad_start_falls():
    f = theory.gated_flow(0, 0, 0.5, t_max=3, n_steps=300)
    assert abs(f["p"][1] - 0.5) < 1e-3 and np.all(np.diff(f["p"]) > 0)
    # p(τ) = cosh(√2 τ)/2 reaches 1 at τ* = arccosh(2)/√2 ≈ 0.9312
    assert np.interp(1.0, f["p"], f["tau"]) == pytest.approx(0.9312, abs=1e-3)
    assert np.allclose(f["beta0"] + f["beta1"], 0)          # β0 + β1 is conserved
    bad = theory.gated_flow(10, -10, 0.5, t_max=0.1, n_steps=10)
    assert np.all(np.diff(bad["p"]) < 0)


def test_bad_start_never_turns_around():
    """From β0 = 10, β1 = -10 neither p nor Δ recovers: at τ = 0.5 p = -10.22, Δ = -24.67."""
    f = theory.gated_flow(10, -10, 0.5, t_max=5.0, n_steps=1000)
    delta = f["beta1"] - f["beta0"]
    assert np.all(np.diff(f["p"]) < 0)
    assert np.all(np.diff(delta)[f["p"][:-1] < 0] < 0)    # Δ falls once p < 0
    assert f["p"][100] == pytest.approx(-10.224, abs=1e-3)  # τ = 0.5
    assert delta[100] == pytest.approx(-24.669, abs=1e-3)


def test_critical_gap_separates_runaway_from_recovery():
    r = theory.gated_flow_critical_gap(0.5)
    assert r == pytest.approx(math.sqrt(2) / 2)
    for p0 in (0.2, 0.5, 0.9):
        gap = theory.gated_flow_critical_gap(p0)
        above = theory.gated_flow(gap / 2 + 0.01, -gap / 2 - 0.01, p0, t_max=10, n_steps=500)
        below = theory.gated_flow(gap / 2 - 0.01, -gap / 2 + 0.01, p0, t_max=10, n_steps=500)
        assert above["p"][-1] < -1 and np.all(np.diff(above["p"]) < 0)
        assert below["p"][-1] > 1


@pytest.mark.parametrize("p, err", [(0.0, ValueError), (1.0, ValueError), (-0.5, ValueError),
                                    (math.nan, ValueError), (True, TypeError), ("½", TypeError)])
def test_critical_gap_rejects_bad_p(p, err):
    with pytest.raises(err, match=r"^p (\(the attention on token 1\) )?must be"):
        theory.gated_flow_critical_gap(p)


def test_ce_flow_plateau_and_stuck_bad_start():
    """Cross-entropy: p barely moves while Δ grows to 1 (the unconstrained flow's p is then
    √3/2); from β0 = 10, β1 = -10 the model stays at chance (loss ≈ 2 ln 2) with p → 0."""
    u = theory.gated_ce_flow(0, 0, 0.5, t_max=60, n_steps=3000)
    d = u["beta1"] - u["beta0"]
    assert 0 < np.interp(1.0, d, u["p"]) - 0.5 < 0.05
    f = theory.gated_flow(0, 0, 0.5, t_max=3, n_steps=600)
    assert np.interp(1.0, f["beta1"] - f["beta0"], f["p"]) == pytest.approx(
        math.sqrt(3) / 2, abs=1e-4)
    assert u["p"][-1] > 0.9 and u["loss"][-1] < 0.05
    bad = theory.gated_ce_flow(10, -10, 0.5, t_max=60, n_steps=3000)
    assert bad["p"][-1] < 0.01 and bad["loss"][-1] > 1.35
    assert bad["beta1"][-1] < -9                             # token 1's weight barely learns


def test_ce_descent_lags_the_flow_until_the_step_is_large():
    flow = theory.gated_ce_flow(0, 0, 0.5, t_max=20, n_steps=1000)
    ahead = {}
    for lr in (0.5, 2.0, 4.0, 8.0):
        gd = theory.gated_ce_descent(0, 0, 0.5, lr=lr, steps=int(round(20 / lr)))
        ahead[lr] = (gd["p"] - np.interp(gd["tau"], flow["tau"], flow["p"])).max()
    assert max(ahead[lr] for lr in (0.5, 2.0, 4.0)) < 0.01 and ahead[8.0] > 0.05


def test_ce_descent_approaches_flow_as_lr_shrinks():
    flow = theory.gated_ce_flow(0, 0, 0.5, t_max=10, n_steps=2000)
    errs = []
    for lr in (1.0, 0.1, 0.01):
        gd = theory.gated_ce_descent(0, 0, 0.5, lr=lr, steps=int(round(10 / lr)))
        errs.append(abs(gd["p"][-1] - flow["p"][-1]))
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-3


def test_ce_gradient_matches_finite_differences():
    b0, b1, a, h = 0.4, -0.2, 0.3, 1e-6
    L = theory.gated_ce_loss
    num = np.array([(L(b0 + h, b1, a) - L(b0 - h, b1, a)), (L(b0, b1 + h, a) - L(b0, b1 - h, a)),
                    (L(b0, b1, a + h) - L(b0, b1, a - h))]) / (2 * h)
    np.testing.assert_allclose(theory._ce_grad(np.array([b0, b1, a])), num, atol=1e-7)


def test_sen_curve():
    s = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(theory.sen_curve(s, 20), np.sqrt(2 * (s + np.expm1(s) / 20)))
    assert theory.sen_curve(0.0, 5) == 0
    assert np.all(theory.sen_curve(s[1:], 20) > np.sqrt(2 * s[1:]))


@pytest.mark.parametrize("call, match", [
    (lambda: theory.gated_flow(0, 0, 1.0), "p"),
    (lambda: theory.gated_flow(0, 0, 0.0), "p"),
    (lambda: theory.gated_flow(0, 0, 1.5), "p"),
    (lambda: theory.gated_flow(0, 0, 0.5, t_max=-1), "t_max"),
    (lambda: theory.gated_flow(0, 0, 0.5, n_steps=0), "n_steps"),
    (lambda: theory.gated_flow(math.nan, 0, 0.5), "beta0"),
    (lambda: theory.gated_ce_descent(0, 0, 0.5, lr=0, steps=3), "lr"),
    (lambda: theory.gated_flow_critical_gap(1.2), "p"),
    (lambda: theory.sen_curve(1.0, 0), "m"),
    (lambda: theory.sen_curve(-1.0, 5), "score"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_first_step_and_wilson():
    steps = np.array([0, 10, 20, 30])
    assert first_step(steps, [0.1, 0.2, 0.6, 0.9], 0.5) == 20
    assert math.isnan(first_step(steps, [0.1, 0.2, 0.3, 0.4], 0.5))
    np.testing.assert_array_equal(first_step(steps, [[0, 1, 1, 1], [0, 0, 0, 1]], 0.5), [10, 30])
    lo, hi = wilson_interval(5, 10)
    assert lo < 0.5 < hi and 0 <= lo and hi <= 1
    assert wilson_interval(0, 10)[0] == pytest.approx(0, abs=1e-12)
    assert wilson_interval(10, 10)[1] == pytest.approx(1, abs=1e-12)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)


# ------------------------------------------------------------------ no silent casts (reliability)
@pytest.mark.parametrize("call, exc, match", [
    (lambda: theory.sen_curve(math.nan, 20), ValueError, "score must hold finite"),
    (lambda: theory.sen_curve([1.0, math.nan], 20), ValueError, "score must hold finite"),
    (lambda: theory.sen_relative_gap([1.0], [0.0], 0), ValueError, r"m \(non-topic"),  # no point qualifies
    (lambda: theory.optimal_attention([[0, 0], [0, 1]], tol=math.nan), ValueError, "tol"),
    (lambda: theory.optimal_attention([[0, 0], [0, 1]], steps=0), ValueError, "^steps must be"),
    (lambda: theory.gated_ce_descent(0, 0, 0.5, lr=0.1, steps=2.0), TypeError, "^steps must be"),
    (lambda: theory.gated_flow_closed_form(0, 0, 0.5, [0.0, math.nan]), ValueError, "tau"),
    (lambda: theory.count_table([[0, 1.7]], [[0, 1]]), TypeError, r"sources\[0\]"),
    (lambda: theory.count_table(np.array([[0.0, 1.0]]), [[0]]), TypeError, "sources"),
    (lambda: theory.count_table([[0, 1]], [[0, 1]], n_in=5.5), TypeError, "n_in"),
    (lambda: theory.ibm1_probe(np.ones((3, 3)), [0, 1.5], [0]), TypeError, "source"),
    (lambda: theory.ibm1_em([[0]], [[0]], null="yes"), TypeError, "null"),
    (lambda: theory.dictionary_recovery(np.eye(2), [0.5, 1]), TypeError, "dictionary"),
    (lambda: theory.proxy_init_velocity([[0, 1]], [[1, 0]], 2, 2, dims=[2.5]), TypeError, "dims"),
    (lambda: theory.proxy_init_velocity([[0, 1]], [[1, 0]], 2, 2, dims=[4], seeds=[0.9]),
     TypeError, r"seeds\[0\]"),
    (lambda: wilson_interval(1, True), TypeError, "n must be an int"),
    (lambda: wilson_interval(1.5, 3), TypeError, "successes"),
], ids=["sen_curve-nan", "sen_curve-nan-entry", "sen_relative_gap-m-0", "optimal_attention-tol-nan",
        "optimal_attention-steps-0", "gated_ce_descent-steps-float", "closed_form-tau-nan",
        "count_table-float-id", "count_table-float-array", "count_table-n_in-float",
        "ibm1_probe-float-id", "ibm1_em-null-str", "dictionary_recovery-float",
        "proxy_init_velocity-dims-float", "proxy_init_velocity-seeds-float", "wilson-n-bool",
        "wilson-successes-float"])
def test_no_silent_casts_or_nan(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_integer_ids_still_accepted_in_every_form():
    """Lists, NumPy arrays and torch tensors of ints give the same count table."""
    import torch

    src, tgt = [[0, 1], [1, 2]], [[2, 0], [0, 1]]
    C = theory.count_table(src, tgt, 3, 3)
    np.testing.assert_array_equal(theory.count_table(np.array(src), np.array(tgt), 3, 3), C)
    np.testing.assert_array_equal(theory.count_table(torch.tensor(src), torch.tensor(tgt), 3, 3), C)
    np.testing.assert_array_equal(theory.count_table(src, tgt, np.int64(3), np.int64(3)), C)


def test_metrics_reject_nan_bools_and_int_masks():
    import torch

    from attn_core.metrics import sen_probe, t_interval, topic_purity

    with pytest.raises(ValueError, match="values must hold finite"):
        t_interval([math.nan, 1.0])
    with pytest.raises(TypeError, match="words must be an array of ints"):
        sen_probe([0.5])
    # an int 0/1 mask used to act as an *index* (rows 0 and 1), not as a mask: wrong counts
    x = torch.tensor([[0, 1], [2, 0]])
    y = torch.tensor([1, 0])
    mask = torch.tensor([[True, False], [True, True]])
    purity, occ = topic_purity(x, y, 3, mask)
    np.testing.assert_array_equal(occ, [2, 0, 1])
    with pytest.raises(TypeError, match="mask must be a bool mask"):
        topic_purity(x, y, 3, mask.long())


@pytest.mark.parametrize("ok, want", [
    ([True, True, True, True], 0),        # throughout: the first step
    ([False, True, True, True], 20),
    ([True, False, True, True], 40),      # a lapse: from after the last miss
    ([False, False, False, True], 60),
    ([True, True, True, False], None),    # not at the end
    ([False, False, False, False], None),
])
def test_holds_from_is_the_step_after_the_last_miss(ok, want):
    got = holds_from(np.array([0, 20, 40, 60]), np.array(ok))
    assert got == want and type(got) is type(want)  # an int step stays an int


@pytest.mark.parametrize("steps, ok, err, match", [
    ([0, 20], np.array([True]), ValueError, "ok"),
    ([], np.array([], dtype=bool), ValueError, "steps"),
    ([0, 20], np.array([1, 0]), TypeError, "ok must be a bool mask"),
    (["a", "b"], np.array([True, True]), TypeError, "steps"),
])
def test_holds_from_bad_input(steps, ok, err, match):
    with pytest.raises(err, match=match):
        holds_from(steps, ok)


def test_optimal_attentions_is_optimal_attention_row_by_row():
    rng = np.random.default_rng(0)
    gammas = rng.normal(0, 3, (40, 6, 5))
    gammas[0] = [[0, 0, 0, 0, 0], [0, -10, 5, 0, 0], [0, 5, -10, 0, 0]] + [[0] * 5] * 3
    targets = rng.integers(0, 5, 40)
    targets[0] = 0
    batch = theory.optimal_attentions(gammas, targets)
    one = np.array([theory.optimal_attention(g, int(t))["alpha"]
                    for g, t in zip(gammas, targets)])
    np.testing.assert_allclose(batch, one, atol=1e-9)
    assert batch.sum(1) == pytest.approx(np.ones(40)) and batch.min() >= 0
    few = theory.optimal_attentions(gammas, targets, steps=3)    # stopped early: not optimal
    assert np.abs(few - one).max() > 1e-3


@pytest.mark.parametrize("call, match", [
    (lambda: theory.optimal_attentions(np.zeros((2, 3)), [0, 0]), "gammas must be an N x L"),
    (lambda: theory.optimal_attentions(np.zeros((2, 3, 4)), [0]), "targets must be 2 integer"),
    (lambda: theory.optimal_attentions(np.zeros((2, 3, 4)), [0.0, 1.0]), "targets must be 2"),
    (lambda: theory.optimal_attentions(np.zeros((2, 3, 4)), [0, 4]),
     r"targets must be output indices in \[0, 3\]; got values in \[0, 4\]"),
    (lambda: theory.optimal_attentions(np.zeros((2, 3, 4)), [0, 1], lr=0), "lr must be > 0"),
])
def test_optimal_attentions_names_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_wilson_bounds_are_exact_at_none_and_all():
    """0 of n has the lower bound 0 and n of n the upper bound 1 exactly (the formula's
    rounding gave 1e-17 at n = 5, 10, 13, ... and a negative error bar in chapter 4)."""
    from attn_core.metrics import success_rate, wilson_interval
    for n in range(1, 200):
        assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0
        r, lo, hi = success_rate(np.zeros(n, bool))
        assert r - lo >= 0 and hi - r >= 0
    lo, hi = wilson_interval(3, 10)
    assert 0.10 < lo < 0.11 and 0.60 < hi < 0.61                    # 3/10: [0.108, 0.603]


def test_optimal_attentions_takes_a_larger_safe_step_on_flat_rows():
    """Rows with Σ_l ‖γ_l‖² < 1/lr (nearly flat logits) step by 1/Σ_l ‖γ_l‖² -- the one-word
    iteration at that lr -- and converge where lr = 0.5 would still be crawling."""
    rng = np.random.default_rng(1)
    gammas = rng.normal(0, 1e-3, (6, 5, 8))
    targets = rng.integers(0, 8, 6)
    batch = theory.optimal_attentions(gammas, targets)
    for g, t, a in zip(gammas, targets, batch):
        same = theory.optimal_attention(g, int(t), lr=1 / float((g ** 2).sum()))["alpha"]
        np.testing.assert_allclose(a, same, atol=1e-9)
        crawl = theory.optimal_attention(g, int(t), steps=200)["alpha"]   # lr 0.5
        assert theory.attention_loss(a, g, int(t)) < theory.attention_loss(crawl, g, int(t))


def test_a_smoke_run_caps_the_optimal_attentions(monkeypatch):
    """Under ATTN_MAX_STEPS (a smoke run) the optimal attentions run at most that many
    steps: the same as asking for that many; a cap above the ask changes nothing."""
    import numpy as np

    from attn_core import theory

    rng = np.random.default_rng(0)
    g = rng.normal(size=(7, 4, 5))
    t = rng.integers(0, 5, 7)
    free = theory.optimal_attentions(g, t, steps=500)
    two = theory.optimal_attentions(g, t, steps=2)
    assert not np.array_equal(two, free)
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    assert np.array_equal(theory.optimal_attentions(g, t, steps=500), two)
    monkeypatch.setenv("ATTN_MAX_STEPS", "5000")
    assert np.array_equal(theory.optimal_attentions(g, t, steps=500), free)


def test_rank_correlation_null_is_the_correlation_of_each_reordering():
    from attn_core import metrics

    rng = np.random.default_rng(4)
    u, v = np.round(rng.normal(size=30), 1), np.round(rng.normal(size=30), 1)   # ties
    perms = np.array([rng.permutation(30) for _ in range(50)])
    null = metrics.rank_correlation_null(u, v, perms)
    loop = [metrics.rank_correlation(u, v[q]) for q in perms]
    assert null.shape == (50,) and np.allclose(null, loop, atol=1e-12, rtol=0)
    assert np.isnan(metrics.rank_correlation_null(np.ones(30), v, perms)).all()
