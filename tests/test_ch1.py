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
