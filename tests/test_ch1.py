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
