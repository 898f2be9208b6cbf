"""Data generators: each task's defining property, determinism, and bad arguments."""

import pytest
import torch

from attn_core.data import CopyTask, KeywordTask, TopicTask


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_keyword_task_labels_and_positions():
    task = KeywordTask(length=15, vocab=10, keyword=3)
    b = task.sample(gen(), 2000)
    x, y, pos = b["x"], b["y"], b["pos"]
    counts = (x == 3).sum(1)
    assert torch.equal(counts, y.long())                      # positive iff exactly one keyword
    rows = torch.nonzero(y > 0).squeeze(1)
    assert torch.all(x[rows, pos[rows]] == 3)
    assert torch.all(pos[y == 0] == -1)
    assert 0.45 < y.mean().item() < 0.55                       # balanced
    assert set(x[y == 0].unique().tolist()) == set(range(10)) - {3}
    # the keyword's position is uniform
    hist = torch.bincount(pos[rows], minlength=15).float()
    assert hist.min() > 0.5 * hist.mean()


def test_same_generator_seed_same_batch():
    t = KeywordTask()
    assert torch.equal(t.sample(gen(5), 8)["x"], t.sample(gen(5), 8)["x"])
    assert not torch.equal(t.sample(gen(5), 8)["x"], t.sample(gen(6), 8)["x"])


def test_copy_permutation_property():
    b = CopyTask(length=9, distribution="permutation").sample(gen(), 50)
    assert torch.equal(b["src"].sort(1).values, torch.arange(9).expand(50, 9))
    assert torch.equal(b["tgt"], b["src"])
    assert torch.all(b["tgt_in"][:, 0] == 9) and torch.equal(b["tgt_in"][:, 1:], b["tgt"][:, :-1])
    assert torch.equal(b["align"], torch.arange(9).expand(50, 9))


def test_copy_distinct_from_larger_vocab():
    task = CopyTask(length=8, vocab=12, distribution="distinct")
    src = task.sample(gen(), 200)["src"]
    assert all(len(set(r.tolist())) == 8 for r in src)         # distinct within a sequence
    assert src.max() <= 11 and len(src.unique()) == 12           # drawn from all 12
    assert task.model_vocab == 13 and task.bos == 12


def test_copy_iid_has_repetitions():
    src = CopyTask(length=10, distribution="iid").sample(gen(), 100)["src"]
    assert any(len(set(r.tolist())) < 10 for r in src)


def test_copy_mixture_two_sets():
    src = CopyTask(length=6, distribution="mixture").sample(gen(), 200)["src"]
    low = (src < 6).all(1)
    high = (src >= 6).all(1)
    assert torch.all(low | high) and 0.3 < low.float().mean() < 0.7
    assert torch.equal(src[low].sort(1).values, torch.arange(6).expand(int(low.sum()), 6))
    assert torch.equal(src[high].sort(1).values, torch.arange(6, 12).expand(int(high.sum()), 6))


def test_copy_fixed_permutation_target():
    pi = (2, 0, 3, 1)
    b = CopyTask(length=4, vocab=6, distribution="distinct", target_permutation=pi).sample(gen(), 10)
    assert torch.equal(b["tgt"], b["src"][:, list(pi)])
    assert torch.equal(b["align"][0], torch.tensor(pi))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(length=0), ValueError, "length"),
    (dict(length=5, vocab=4, distribution="distinct"), ValueError, "vocab"),
    (dict(length=5, vocab=6, distribution="permutation"), ValueError, "vocab"),
    (dict(length=5, distribution="shuffled"), ValueError, "distribution"),
    (dict(length=3, target_permutation=(0, 0, 1)), ValueError, "target_permutation"),
    (dict(length=2.5), TypeError, "length"),
])
def test_copy_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        CopyTask(**kwargs)


def test_keyword_bad_arguments():
    with pytest.raises(ValueError, match="length"):
        KeywordTask(length=1)
    with pytest.raises(ValueError, match="keyword"):
        KeywordTask(vocab=5, keyword=5)
    with pytest.raises(ValueError, match="batch_size"):
        KeywordTask().sample(gen(), 0)
    with pytest.raises(TypeError, match="generator"):
        KeywordTask().sample(0, 4)


def test_topic_task():
    t = TopicTask(n_topics=3, words_per_topic=2, m=5, n_nontopic=50, n_train=40, n_test=10, seed=1)
    tr, te = t.sample(), t.test_set()
    assert tr["x"].shape == (40, 6) and te["x"].shape == (10, 6)
    topic = tr["x"] < 6
    assert torch.all(topic.sum(1) == 1)                          # exactly one topic word
    assert torch.equal(tr["x"][topic] // 2, tr["y"])              # whose topic is the label
    assert t.model_vocab == 56
    with pytest.raises(ValueError, match="n_topics"):
        TopicTask(n_topics=1)
    with pytest.raises(ValueError, match="m"):
        TopicTask(m=0)
