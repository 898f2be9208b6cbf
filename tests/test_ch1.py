"""Chapter 1's module: the keyword-task config validates its fields and runs through the engine."""

import numpy as np
import pytest

from attn_core.chapters import ch1_gated as ch

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
