"""Bad input that an independent probe of the public API found accepted, or failing inside
torch: each is now refused (or, for a diverging run, said) by the package, naming what is
wrong.

- one run given twice (the same seed, data seed and settings) was trained and counted as two;
- a run whose training loss turned NaN finished as a normal run without a word;
- ``ch4.succeeded`` took accuracies in percent;
- the chapters' readable models (chapter 4's LSTM, chapter 5's multi-head model, chapter 6's
  Transformer) failed inside torch on a token id out of range;
- a NaN or negative initialisation scale, and absurd sizes (10^12 words), reached torch.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from attn_core import checks, models, stacked, training
from attn_core.chapters import ch2_sen, ch4_copy, ch5_multihead, ch6_transformer


# ------------------------------------------------------------------ a run given twice
def test_a_run_given_twice_is_refused_before_training():
    cfg = dataclasses.replace(ch4_copy.COPY_BASE.fast, seeds=(3, 1, 3))
    with pytest.raises(ValueError, match=r"members 0 and 2 are the same run .*seed 3"):
        cfg.train(progress=False)
    with pytest.raises(ValueError, match="the same run"):
        cfg.run(progress=False, cache=False)


def test_a_repeated_seed_with_other_settings_is_another_run():
    """Chapter 2 trains one model seed with four query variances, chapter 5 one base seed
    with many heads: those are distinct runs, and pass."""
    ch2_sen.SEN_QUERY.fast.check_runs()
    for cfg in ch5_multihead.stored_configs()[:2]:
        cfg.check_runs()
    cfg = dataclasses.replace(ch2_sen.SEN_QUERY.fast, query_vars=(0.1, 0.1, 1.0, 2.0))
    with pytest.raises(ValueError, match=r"members 0 and 1 are the same run \(the same seed, "
                                         r"data seed and settings"):
        cfg.check_runs()


# ------------------------------------------------------------------ a diverging run
def test_a_run_whose_loss_stops_being_finite_is_said():
    loss = np.ones((3, 10))
    loss[1, 4:] = np.nan
    loss[2, 7] = np.inf
    with pytest.warns(RuntimeWarning, match=r"2 of 3 members stopped being finite \(seed 11 at "
                                            r"step 4, seed 12 at step 7\): they diverged"):
        training._warn_if_diverged(loss, [10, 11, 12])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        training._warn_if_diverged(np.ones((2, 5)), [0, 1])      # a finite run: nothing


# ------------------------------------------------------------------ percent for fractions
def test_succeeded_refuses_accuracies_in_percent():
    h = training.History(seeds=np.array([0, 1]), data_seeds=np.array([0, 1]),
                         train_loss=np.zeros((2, 2)), eval_steps=np.array([0, 2]),
                         metrics={"token_acc": np.array([[10.0, 96.0], [5.0, 40.0]])},
                         probes={})
    with pytest.raises(ValueError, match=r"token_acc'\] must hold fractions in \[0, 1\] "
                                         r"\(not percent\); got values in \[5, 96\]"):
        ch4_copy.succeeded(h)
    h.metrics["token_acc"] = h.metrics["token_acc"] / 100
    assert ch4_copy.succeeded(h).tolist() == [True, False]


# ------------------------------------------------------------- ids out of the vocabulary
def _readable_models():
    seq = models.Seq2Seq(vocab=12, embed=8, hidden=8, seeds=[0])
    yield "ch4 LuongSeq2Seq", ch4_copy.LuongSeq2Seq.from_seq2seq(seq)
    yield "ch5 MultiHeadLuong", ch5_multihead.MultiHeadLuong(12, 8, 8, 2)
    stack = ch6_transformer.StackedTransformer(vocab=12, d_model=8, heads=2, d_ff=8,
                                               seeds=[0])
    yield "ch6 TransformerSeq2Seq", stack.member_module(0)


@pytest.mark.parametrize("name, model", list(_readable_models()), ids=lambda x: str(x)[:24])
def test_readable_models_refuse_ids_out_of_range(name, model):
    src = torch.randint(0, 12, (2, 5))
    tgt = torch.randint(0, 12, (2, 4))
    out = model(src, tgt)                                      # in range: fine
    assert out["logits"].shape[:2] == (2, 4)
    bad = src.clone()
    bad[1, 2] = 12
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 11\] \(vocab=12\); "
                                         r"got ids in \[\d+, 12\]"):
        model(bad, tgt)
    with pytest.raises(ValueError, match=r"tgt_in must hold token ids in \[0, 11\]"):
        model(src, tgt - 1 - tgt.max())
    with pytest.raises(ValueError, match=r"src .* and tgt_in .* must have the same batch"):
        model(src, tgt[:1])


# ------------------------------------------------------- initialisation scales and sizes
@pytest.mark.parametrize("make, value, match", [
    (stacked.normal_init, math.nan, r"std must be a finite"),
    (stacked.normal_init, -0.1, r"std must be .*>= 0"),
    (stacked.uniform_init, math.inf, r"bound must be a finite"),
    (stacked.uniform_init, -1.0, r"bound must be .*>= 0"),
])
def test_initialisation_scales_are_checked(make, value, match):
    with pytest.raises(ValueError, match=match):
        make(value)


@pytest.mark.parametrize("build, match", [
    (lambda: models.Seq2Seq(vocab=10 ** 12, embed=8, hidden=8, seeds=[0]),
     r"vocab must be an int in \[2, 16777216\]; got 1000000000000"),
    (lambda: ch4_copy.LuongSeq2Seq(10 ** 12, 8, 8), r"vocab must be an int in \[1, 16777216\]"),
    (lambda: ch6_transformer.TransformerSeq2Seq(vocab=10 ** 9), r"vocab must be an int in "),
    (lambda: models.Seq2Seq(vocab=2 ** 20, embed=2 ** 12, hidden=8, seeds=[0]),
     r"a stacked parameter would hold 4,294,967,296 elements .* at most 2,147,483,648"),
])
def test_absurd_sizes_are_refused_before_allocation(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_size_limits_are_what_the_messages_say():
    assert checks.MAX_DIM == 2 ** 24 and checks.MAX_ELEMENTS == 2 ** 31
    assert checks.check_dim("vocab", 2 ** 24) == 2 ** 24
    checks.check_numel("x", (2 ** 15, 2 ** 16))                   # exactly the limit: fine
    with pytest.raises(ValueError, match="x would hold 2,147,483,650 elements"):
        checks.check_numel("x", (2, 2 ** 30 + 1))
