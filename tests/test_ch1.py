"""Chapter 1's module: the keyword-task config validates its fields and runs through the engine."""

import numpy as np
import pytest
import torch

from attn_core import theory
from attn_core.chapters import ch1_gated as ch
from attn_core.models import AttentionClassifier

TINY = ch.KeywordConfig(length=6, vocab=8, embed=4, hidden=4, steps=4, eval_every=2,
                        eval_batch_size=16, batch_size=8, seeds=(0, 1))


def test_run_records_the_keyword_probe_for_every_member():
    h = TINY.run(progress=False, cache=False)
    assert h.train_loss.shape == (2, 4)
    np.testing.assert_array_equal(h.eval_steps, [0, 2, 4])
    for key in ("beta_key", "beta_other", "attn_key"):
        assert h.probes[key].shape == (2, 3)
    # attention starts near uniform (1/L) on the keyword
    assert np.all(np.abs(h.probes["attn_key"][:, 0] - 1 / 6) < 0.1)


def test_uniform_attention_keeps_attention_at_one_over_length():
    from dataclasses import replace

    h = replace(TINY, attention="uniform").run(progress=False, cache=False)
    np.testing.assert_allclose(h.probes["attn_key"], 1 / 6, rtol=1e-6)


def test_cache_names_and_presets():
    assert ch.KEYWORD_ATTENTION.get("fast").cache_name() == "keyword-learned"
    assert ch.KEYWORD_UNIFORM.get("fast").cache_name() == "keyword-uniform"
    assert ch.KEYWORD_ATTENTION.get("full").embed == 128


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(steps=0), ValueError, r"KeywordConfig\.steps must be an int >= 1"),
    (dict(steps=2.5), TypeError, r"KeywordConfig\.steps must be an int"),
    (dict(lr=True), TypeError, r"KeywordConfig\.lr must be a real number"),
    (dict(lr=float("nan")), ValueError, r"KeywordConfig\.lr must be a finite number"),
    (dict(lr=-1.0), ValueError, r"KeywordConfig\.lr must be > 0"),
    (dict(seeds=5), TypeError, r"KeywordConfig\.seeds must be a tuple"),
    (dict(seeds=()), ValueError, r"KeywordConfig\.seeds must hold at least one seed"),
    (dict(seeds=(0, -1)), ValueError, r"KeywordConfig\.seeds\[1\] must be an int >= 0"),
    (dict(attention="hard"), ValueError, r"KeywordConfig\.attention must be one of"),
    (dict(optimizer="rmsprop"), ValueError, r"KeywordConfig\.optimizer must be one of"),
    (dict(eval_batch_size=0), ValueError, r"KeywordConfig\.eval_batch_size must be an int >= 1"),
])
def test_bad_config_fields_are_named(kwargs, err, match):
    with pytest.raises(err, match=match):
        ch.KeywordConfig(**kwargs)


def test_run_arguments_are_checked():
    with pytest.raises(TypeError, match="progress and cache must be True or False"):
        TINY.run(cache="no")


def test_at_steps_reads_each_member_at_its_own_step():
    steps = np.array([0, 5, 10])
    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    np.testing.assert_array_equal(ch.at_steps(steps, values, [10, 0, np.nan]), [3.0, 4.0, np.nan])


@pytest.mark.parametrize("values, at, err, match", [
    (np.zeros((2, 3)), [0, 7], ValueError, r"at\[1\] = 7 is not one of steps"),
    (np.zeros((2, 2)), [0, 5], ValueError, r"values must have shape \(len\(at\), len\(steps\)\)"),
    (np.zeros((3,)), [0, 5], ValueError, r"values must be a 2-D array"),
    (np.zeros((2, 3)), ["0", "5"], TypeError, r"at must be an array of real numbers"),
    (np.zeros((2, 3)), [True, False], TypeError, r"at must be an array of real numbers"),
])
def test_at_steps_rejects_bad_input(values, at, err, match):
    with pytest.raises(err, match=match):
        ch.at_steps([0, 5, 10], values, at)


# ------------------------------------------------------- the BiLSTM encoder (§6's comparison)

def test_the_bilstm_reads_both_ways_and_the_lstm_only_forwards():
    """Changing the last token moves β at the first position for the BiLSTM only."""
    x = torch.randint(0, 8, (2, 3, 6))
    y = x.clone()
    y[..., -1] = (y[..., -1] + 1) % 8
    for cls, moves in ((AttentionClassifier, False), (ch.BiAttentionClassifier, True)):
        m = cls(vocab=8, embed=4, hidden=5, seeds=(0, 1))
        with torch.no_grad():
            b_x, b_y = m(x)["beta"], m(y)["beta"]
        assert b_x.shape == (2, 3, 6)
        assert bool((b_x[..., 0] != b_y[..., 0]).any()) is moves, cls.__name__
    assert ch.BiAttentionClassifier(8, 4, 5, seeds=(0,)).alpha.shape == (1, 10)


def test_a_bidirectional_config_runs_and_is_cached_apart():
    from dataclasses import replace

    bi = replace(TINY, bidirectional=True, attention="uniform")
    assert bi.cache_name() == "keyword-uniform-bilstm"
    h = bi.run(progress=False, cache=False)
    assert h.probes["beta_last"].shape == (2, 3)
    with pytest.raises(TypeError, match=r"KeywordConfig\.bidirectional"):
        ch.KeywordConfig(bidirectional=1)


# ------------------------------------------- the cross-entropy toy's threshold (§2's table)

def test_ce_flow_end_is_the_package_flow_at_its_end():
    gaps = [0.0, 1.0, 4.0, 20.0]
    ends = ch.ce_flow_end(gaps, p0=0.4, t_max=12.0, n_steps=600)
    want = [theory.gated_ce_flow(g / 2, -g / 2, 0.4, t_max=12.0, n_steps=600)["p"][-1]
            for g in gaps]
    np.testing.assert_allclose(ends, want, rtol=1e-12)


def test_ce_recovery_gap_brackets_the_first_start_that_stays_below():
    gap = ch.ce_recovery_gap(0.5, t_max=30.0)
    assert 3.5 < gap < 4.0  # far above the unconstrained flow's √2·p0 ≈ 0.71
    below, at = ch.ce_flow_end([gap - 0.01, gap], 0.5, 30.0, 1500)
    assert below >= 0.5 > at
    assert ch.ce_recovery_gap(0.5, t_max=60.0) > gap  # a longer horizon recovers from more
    assert np.isnan(ch.ce_recovery_gap(0.5, t_max=30.0, high=2.0))  # all of [0, 2] recovers


# ---------------------------------- untrained models fail the findings (claims G5 and G6)

def _step0(preset, n_seeds=8):
    """The first evaluation (step 0: the untrained model) of the fast config, more seeds."""
    from dataclasses import replace

    cfg = replace(preset.get("fast"), steps=1, eval_every=1, seeds=tuple(range(n_seeds)))
    h = cfg.run(progress=False, cache=False)
    return h, {k: v[:, 0] for k, v in h.probes.items()}, cfg.length


def test_an_untrained_model_fails_every_g5_finding():
    """The thresholds of the notebook's G5 findings, on the step-0 evaluation of 8 seeds."""
    h, p, L = _step0(ch.KEYWORD_ATTENTION)
    assert np.all(p["attn_key"] <= 2 / L)  # "attention passes 2/L": not at step 0
    assert np.all(p["beta_key"] - p["beta_other"] <= 1.0 / 2)  # relevance gap > 1.0
    assert np.all(p["attn_key"] <= 0.8 / 10)  # final attention > 0.8
    assert np.all(h.metrics["accuracy"][:, 0] <= 0.95 - 0.2)  # final accuracy > 0.95


def test_an_untrained_model_fails_every_g6_finding():
    """The thresholds of the notebook's G6 findings, with a margin, on 8 untrained seeds."""
    _, p, _ = _step0(ch.KEYWORD_UNIFORM)
    key, nxt, mean, last = (p[k] for k in ("beta_key", "beta_next", "beta_mean", "beta_last"))
    assert np.all(key - nxt <= 0.3 / 2)  # early: γ_l* − γ_l*+1 > 0.3
    assert np.all(nxt - mean <= 0.3 / 2)  # early: γ_l*+1 − γ̄ > 0.3
    assert np.all(key - mean < 1.0 / 2)  # early: γ_L ≈ γ̄ while γ_l* − γ̄ >= 1
    assert np.all(last - nxt <= 2.0 / 4)  # late: γ_L − γ_l*+1 > 2
    assert np.all(nxt - mean <= 10.0 / 4)  # late: γ_l*+1 − γ̄ > 10
    assert np.all(last - key <= 5.0 / 4)  # late: γ_L − γ_l* > 5
    assert np.all(key - mean <= 5.0 / 4)  # late: γ_l* − γ̄ > 5


# --------------------------------------------- §2's slider: both toys from one start (β0, p0)
# The live slider's whole range (the notebook's interact): β0 in [-5, 10], p0 in [0.05, 0.95].
RANGE_B0 = (-5.0, -2.0, 0.0, 0.5, 2.0, 10.0)
RANGE_P0 = (0.05, 0.5, 0.95)


def _ce_flow_by_finite_differences(b0, b1, a, t_max=30.0, dt=0.01):
    """An independent integration of the cross-entropy toy: its vector field is minus the
    central-difference gradient of theory.gated_ce_loss (not the package's _ce_grad), and
    the integrator is Heun's method (not RK4); every start at once. Returns p at each τ."""
    y = np.array([b0, b1, a], dtype=float)
    e = 1e-6

    def field(y):
        g = np.empty_like(y)
        for k in range(3):
            up, dn = y.copy(), y.copy()
            up[k] += e
            dn[k] -= e
            g[k] = (theory.gated_ce_loss(*up) - theory.gated_ce_loss(*dn)) / (2 * e)
        return -g

    ps = [1 / (1 + np.exp(-y[2]))]
    for _ in range(int(round(t_max / dt))):
        k1 = field(y)
        k2 = field(y + dt * k1)
        y = y + dt / 2 * (k1 + k2)
        ps.append(1 / (1 + np.exp(-y[2])))
    return np.array(ps)


def test_start_curves_unconstrained_part_is_the_closed_form_over_the_whole_range():
    r = np.sqrt(2)
    for b0 in RANGE_B0:
        for p0 in RANGE_P0:
            c = ch.start_curves(b0, p0)
            tau = c["tau_flow"]
            assert tau[0] == 0 and tau[-1] == 1.5 and len(tau) == 301
            # Δ0 = β1 - β0 = -2 β0
            want = p0 * np.cosh(r * tau) + (-2 * b0) / r * np.sinh(r * tau)
            np.testing.assert_allclose(c["p_flow"], want, rtol=1e-12, atol=1e-12)
            rk4 = theory.gated_flow(b0, -b0, p0, t_max=1.5, n_steps=300)["p"]
            np.testing.assert_allclose(c["p_flow"], rk4, rtol=1e-6, atol=1e-6)


def test_start_curves_cross_entropy_part_matches_an_independent_integration():
    starts = [(b0, p0) for b0 in RANGE_B0 for p0 in RANGE_P0]
    b0 = np.array([s[0] for s in starts])
    p0 = np.array([s[1] for s in starts])
    ps = _ce_flow_by_finite_differences(b0, -b0, np.log(p0 / (1 - p0)))  # (T, starts)
    for j, (b, q) in enumerate(starts):
        c = ch.start_curves(b, q)
        assert c["tau_ce"][-1] == 30.0
        want = np.interp(c["tau_ce"], np.linspace(0, 30, ps.shape[0]), ps[:, j])
        np.testing.assert_allclose(c["p_ce"], want, atol=2e-4, err_msg=f"start {b, q}")
        assert c["lowest_ce"] == c["p_ce"].min() and c["end_ce"] == c["p_ce"][-1]


def test_start_curves_move_as_the_start_moves():
    """At each p0: the unconstrained p(1.5) falls strictly as β0 grows; the cross-entropy
    flow never dips below p0 from β0 <= 0 and dips ever lower as β0 grows past 0. At β0 = 2:
    a higher p0 dips less. And the ends: §2's bad start is stuck, β0 = -5 only rises."""
    for p0 in RANGE_P0:
        cs = [ch.start_curves(b0, p0) for b0 in RANGE_B0]
        assert np.all(np.diff([c["p_flow"][-1] for c in cs]) < 0)
        lowest = np.array([c["lowest_ce"] for c in cs])
        nonpos = np.array(RANGE_B0) <= 0
        np.testing.assert_allclose(lowest[nonpos], p0, rtol=1e-12)
        assert np.all(np.diff(lowest[~nonpos]) < 0) and lowest[~nonpos][0] < p0
    dips = [ch.start_curves(2.0, p0)["lowest_ce"] for p0 in RANGE_P0]
    assert np.all(np.diff(dips) > 0)
    bad = ch.start_curves(10.0, 0.5)
    assert bad["end_ce"] < 0.01 and bad["p_flow"][-1] < -50
    good = ch.start_curves(-5.0, 0.5)
    assert np.all(np.diff(good["p_ce"]) > 0) and good["end_ce"] > 0.85


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(beta0=float("nan")), ValueError, r"beta0 must be a finite number"),
    (dict(beta0="10"), TypeError, r"beta0 must be a real number"),
    (dict(beta0=True), TypeError, r"beta0 must be a real number"),
    (dict(p0=0.0), ValueError, r"p0 must be in \(0\.0, 1\.0\)"),
    (dict(p0=1.0), ValueError, r"p0 must be in \(0\.0, 1\.0\)"),
    (dict(p0=None), TypeError, r"p0 must be a real number"),
])
def test_start_functions_name_a_bad_argument(kwargs, err, match):
    args = {"beta0": 10.0, "p0": 0.5, **kwargs}
    for fn in (ch.start_curves, ch.draw_start, ch.start_label):
        with pytest.raises(err, match=match):
            fn(**args)


def test_draw_start_draws_each_start_readably():
    import io

    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style

    set_style()
    pngs = []
    for b0, p0 in [(10.0, 0.5), (-5.0, 0.95), (2.0, 0.05)]:
        fig = ch.draw_start(b0, p0)
        assert isinstance(fig, Figure) and len(fig.axes) == 2
        line = fig.axes[1].lines[0].get_ydata()
        np.testing.assert_allclose(line, ch.start_curves(b0, p0)["p_ce"])
        sizes = rendered_text_pt(fig)
        assert min(sizes["desktop"], sizes["phone"]) >= MIN_TEXT_PT, sizes
        assert f"p_0 = {p0:g}" in fig._suptitle.get_text()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        pngs.append(buf.getvalue())
        plt.close(fig)
    assert len(set(pngs)) == 3  # the frames differ


def test_start_presets_open_on_the_bad_start_and_lie_in_the_live_range():
    assert ch.START_PRESETS[0] == (10.0, 0.5)  # §2's bad start, the live slider's default
    labels = [ch.start_label(*s) for s in ch.START_PRESETS]
    assert labels[0] == "β0 = 10, p0 = 0.5"
    assert len(set(labels)) == len(labels)
    for b0, p0 in ch.START_PRESETS:
        assert -5 <= b0 <= 10 and 0.05 <= p0 <= 0.95


def test_start_presets_show_what_section_2_says_and_not_section_4s_plateau():
    """§2's slider is about backwards starts: its text names every gap above √2·p0 that runs
    away (1, 2, 4, 10 and 20 at p0 = ½), a forward start, and other initial attentions. The
    uniform start (β0 = β1 = 0) is §4's Predict box (how far p has moved when Δ = 1) and no
    frame may draw it: its lower panel is that very cross-entropy flow (#55)."""
    starts = ch.START_PRESETS
    assert all(b0 != 0 for b0, _ in starts), "a uniform start would answer §4's box"
    gaps = sorted(2 * b0 for b0, p0 in starts if p0 == 0.5 and b0 > 0)
    assert gaps == [1.0, 2.0, 4.0, 10.0, 20.0]
    assert all(g > theory.gated_flow_critical_gap(0.5) for g in gaps)  # all run away
    assert any(b0 < 0 for b0, _ in starts)  # "from β0 < 0 ... p only rises"
    assert {p0 for _, p0 in starts} == {0.1, 0.5, 0.9}  # "the last three starts change p0"
    assert all(p0 != 0.5 for _, p0 in starts[-3:])


def test_draw_small_gap_touches_the_lowest_p_of_the_closed_form():
    import matplotlib.pyplot as plt

    for gap in (-0.5, 0.0, 0.5, 0.7):
        lowest = np.sqrt(0.25 - gap**2 / 2) if gap > 0 else 0.5
        fig = ch.draw_small_gap(gap, lowest)
        curve, line = fig.axes[0].lines[:2]
        assert curve.get_ydata().min() == pytest.approx(lowest, abs=1e-3)
        np.testing.assert_allclose(line.get_ydata(), lowest)
        plt.close(fig)
    with pytest.raises(ValueError, match=r"p0 must be in \(0\.0, 1\.0\)"):
        ch.draw_small_gap(0.5, 0.3, p0=1.5)
    with pytest.raises(TypeError, match=r"lowest must be a real number"):
        ch.draw_small_gap(0.5, "low")


def test_model_diagram_shows_every_part_of_the_classifier():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt

    fig = ch.model_diagram()
    assert isinstance(fig, Figure)
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    for part in ("tokens", "LSTM", r"q^\top h_l", "softmax", r"r_l = w^\top h_l",
                 r"\sum_l p_l\, r_l", r"\Pr[\mathrm{positive}]", "$q$", "$w$"):
        assert part in text, part
    sizes = rendered_text_pt(fig)
    assert min(sizes["desktop"], sizes["phone"]) >= MIN_TEXT_PT, sizes
    plt.close(fig)
