"""The training engine: batched runs equal looped runs, histories follow the schema, bad input fails."""

import functools

import numpy as np
import pytest
import torch

from attn_core.data import CopyTask, KeywordTask, TopicTask
from attn_core.models import AttentionClassifier, Seq2Seq, TopicAttention
from attn_core.training import History, Trainer, choose_execution, train

SEQ2SEQ = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12)
CASES = {
    "seq2seq-lstm": (SEQ2SEQ, CopyTask(12), "adam"),
    "seq2seq-gru-3heads": (functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12, cell="gru",
                                             heads=3), CopyTask(12), "adam"),
    "classifier": (functools.partial(AttentionClassifier, vocab=20, embed=8, hidden=8),
                   KeywordTask(10, 20), "sgd"),
    "topic-TL": (functools.partial(TopicAttention, vocab=4 * 2 + 300, classifier="TL"),
                 TopicTask(n_nontopic=300, n_train=100, n_test=20), "sgd"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_batched_equals_looped(name):
    """3 seeds trained as one stacked model == the same 3 seeds trained one by one (20 steps)."""
    model_fn, task, opt = CASES[name]
    kw = dict(steps=20, batch_size=8, eval_every=5, optimizer=opt, progress=False)
    hb = train(model_fn, task, [3, 4, 5], execution="batched", **kw)
    hl = train(model_fn, task, [3, 4, 5], execution="looped", **kw)
    assert hb.execution == "batched" and hl.execution == "looped"
    assert np.abs(hb.train_loss - hl.train_loss).max() < 1e-5
    for k in hb.metrics:
        assert np.abs(hb.metrics[k] - hl.metrics[k]).max() < 1e-4, k
    # the runs actually trained: the loss moved
    assert np.abs(hb.train_loss[:, -1] - hb.train_loss[:, 0]).max() > 1e-3
    # and the returned stacked models agree parameter by parameter
    pb, pl = dict(hb.model.named_parameters()), dict(hl.model.named_parameters())
    for k in pb:
        torch.testing.assert_close(pb[k], pl[k], atol=1e-4, rtol=1e-4)


def test_members_are_independent():
    """Member i of a batched run does not depend on which other members ride along."""
    kw = dict(steps=10, batch_size=8, progress=False, execution="batched")
    h3 = train(SEQ2SEQ, CopyTask(12), [7, 8, 9], **kw)
    h2 = train(SEQ2SEQ, CopyTask(12), [9, 1], **kw)
    assert np.abs(h3.train_loss[2] - h2.train_loss[0]).max() < 1e-5


def test_same_seed_same_numbers_and_different_seeds_differ():
    kw = dict(steps=5, batch_size=8, progress=False)
    a = train(SEQ2SEQ, CopyTask(12), [0, 1], **kw)
    b = train(SEQ2SEQ, CopyTask(12), [0, 1], **kw)
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    assert not np.allclose(a.train_loss[0], a.train_loss[1])


def test_history_schema():
    probe = lambda model, batch: {"mean_alpha": model(batch["src"], batch["tgt_in"])["alpha"].mean((1, 2, 3, 4))}
    h = Trainer(steps=7, batch_size=4, eval_every=3, progress=False).fit(
        SEQ2SEQ, CopyTask(12), [0, 1], probes=[probe])
    assert isinstance(h, History)
    assert h.train_loss.shape == (2, 7)
    np.testing.assert_array_equal(h.eval_steps, [0, 3, 6, 7])
    assert set(h.metrics) == {"loss", "token_acc", "attn_acc"}
    assert all(v.shape == (2, 4) for v in h.metrics.values())
    assert h.probes["mean_alpha"].shape == (2, 4)
    np.testing.assert_allclose(h.probes["mean_alpha"], 1 / 12, rtol=1e-5)  # attention sums to 1
    assert h.final("token_acc").shape == (2,)
    assert h.model.n_members == 2


def test_member_kwargs_are_sliced_per_member():
    fn = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12)
    kw = dict(steps=3, batch_size=4, progress=False)
    hb = train(fn, CopyTask(12), [0, 0], member_kwargs={"head_seeds": [5, 6]}, execution="batched", **kw)
    hl = train(fn, CopyTask(12), [0, 0], member_kwargs={"head_seeds": [5, 6]}, execution="looped", **kw)
    assert np.abs(hb.train_loss - hl.train_loss).max() < 1e-5
    # same base seed, different heads: at initialisation the members differ only in their heads
    m = fn(seeds=[0, 0], head_seeds=[5, 6])
    for name, p in m.named_parameters():
        assert torch.equal(p[0], p[1]) == (name != "score"), name
    assert not np.allclose(hb.train_loss[0], hb.train_loss[1])


def test_auto_execution_choice():
    assert choose_execution(lambda idx: None, CopyTask(12), 1, "cpu") == "looped"
    h = train(SEQ2SEQ, CopyTask(12), [0, 1, 2], steps=2, batch_size=4, progress=False)
    assert h.execution in ("batched", "looped")


@pytest.mark.parametrize("kwargs, match", [
    (dict(steps=0), "steps"),
    (dict(steps=-3), "steps"),
    (dict(steps=5, batch_size=0), "batch_size"),
    (dict(steps=5, eval_every=0), "eval_every"),
    (dict(steps=5, optimizer="rmsprop"), "optimizer"),
    (dict(steps=5, lr=-1.0), "lr"),
    (dict(steps=5, execution="parallel"), "execution"),
])
def test_bad_trainer_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Trainer(**kwargs)


def test_bad_fit_arguments():
    t = Trainer(steps=2, progress=False)
    with pytest.raises(ValueError, match="S >= 1"):
        t.fit(SEQ2SEQ, CopyTask(12), [])
    with pytest.raises(TypeError, match="seeds"):
        t.fit(SEQ2SEQ, CopyTask(12), 3)
    with pytest.raises(ValueError, match="data_seeds"):
        t.fit(SEQ2SEQ, CopyTask(12), [0, 1], data_seeds=[0])
    with pytest.raises(ValueError, match="seeds"):
        t.fit(SEQ2SEQ, CopyTask(12), [0, -1])
    with pytest.raises(TypeError, match="task"):
        t.fit(SEQ2SEQ, object(), [0])
    with pytest.raises(TypeError, match="model_fn"):
        t.fit("not a model", CopyTask(12), [0])
    with pytest.raises(ValueError, match="member_kwargs"):
        t.fit(SEQ2SEQ, CopyTask(12), [0, 1], member_kwargs={"head_seeds": [1]})


def test_mismatched_shapes_raise():
    model = SEQ2SEQ(seeds=[0, 1])
    batch = {k: torch.stack([v] * 3) for k, v in CopyTask(12).sample(torch.Generator(), 4).items()}
    with pytest.raises(ValueError, match="leading dimension"):
        model.loss(batch)
    with pytest.raises(ValueError, match="missing"):
        model.loss({"src": batch["src"][:2]})
