"""Data generators: each task's defining property, determinism, and bad arguments."""

import numpy as np
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
    with pytest.raises(ValueError, match=r"m must be an int in \[1, 16777216\]; got 0"):
        TopicTask(m=0)


# ------------------------------------------------------------------ no silent casts (reliability)
def test_copy_permutation_entries_must_be_ints():
    """(0, 1.7, 2) used to become (0, 1, 2) through int(); bools and strings were cast too."""
    for bad in [(0, 1.7, 2), (0, 1, 2.0), (0, True, 2), "012"]:
        with pytest.raises((TypeError, ValueError), match="target_permutation"):
            CopyTask(length=3, target_permutation=bad)
    task = CopyTask(length=3, target_permutation=[np.int64(2), 0, 1])       # NumPy ints are ints
    assert task.target_permutation == (2, 0, 1)
    assert all(type(i) is int for i in task.target_permutation)


def test_keyword_must_be_an_int_not_a_bool():
    with pytest.raises(TypeError, match="keyword must be an int"):
        KeywordTask(keyword=True)
    with pytest.raises(TypeError, match="keyword must be an int"):
        KeywordTask(keyword=1.0)
    assert KeywordTask(keyword=np.int64(3)).sample(gen(), 4)["x"].shape == (4, 40)


@pytest.mark.parametrize("kwargs, match", [
    (dict(topic_sets=[[0, 1.5], [2]]), r"topic_sets\[0\]"),
    (dict(topic_sets=[[0], [True]]), r"topic_sets\[1\]"),
    (dict(dictionary=[5.5, 6]), "dictionary"),
    (dict(dictionary=torch.tensor([5.0, 6.0])), "dictionary"),
])
def test_topic_sentences_word_ids_are_not_truncated(kwargs, match):
    from attn_core.data import topic_sentences

    args = dict(topic_sets=[[0], [1]], dictionary=range(2, 9), m=2, n=4, generator=gen())
    args.update(kwargs)
    with pytest.raises(TypeError, match=match):
        topic_sentences(**args)


def test_topic_sentences_accepts_integer_arrays_and_tensors():
    from attn_core.data import topic_sentences

    a = topic_sentences([[0], [1]], range(2, 9), 2, 5, gen(1))
    b = topic_sentences([np.array([0]), torch.tensor([1])], torch.arange(2, 9), 2, 5, gen(1))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_topic_of_takes_an_int_word_id():
    t = TopicTask(n_topics=2, words_per_topic=2, m=2, n_nontopic=5, n_train=4, n_test=2)
    assert t.topic_of(3) == 1 and t.topic_of(np.int64(1)) == 0
    for bad in (1.5, True, "0"):
        with pytest.raises(TypeError, match="word must be a topic word id"):
            t.topic_of(bad)


def test_empty_bag_is_refused_where_the_bag_is_built():
    """An all-padding sentence would mask every score to -inf: its attention (and the loss)
    would be NaN. BagTask refuses such a sentence where it is built, and the model where it
    meets one."""
    from attn_core.data import BagTask
    from attn_core.models import TopicAttention

    model = TopicAttention(vocab=4, n_topics=2, dim=2)
    x, mask = torch.tensor([[[2, 0], [3, 0]]]), torch.tensor([[[True, False], [False, False]]])
    with pytest.raises(ValueError, match="bag 1 of member 0 is all padding"):
        model.loss({"x": x, "mask": mask, "y": torch.tensor([[0, 1]])})
    with pytest.raises(ValueError, match=r"train_tokens\[1\] is an empty sentence"):
        BagTask.from_tokens([["a"], []], [0, 1])
    with pytest.raises(ValueError, match=r"test_tokens\[0\] is an empty sentence"):
        BagTask.from_tokens([["a"]], [0], [[]], [1])
    with pytest.raises(ValueError, match=r"train\['mask'\] row 1 is all padding"):
        BagTask(("<pad>", "<unk>", "a", "b"), {"x": x[0], "mask": mask[0], "y": torch.tensor([0, 1])})


@pytest.mark.parametrize("labels, exc", [([0.5, 1], TypeError), ([True, False], TypeError),
                                         ([-1, 1], ValueError), ([0], ValueError)])
def test_bag_labels_are_class_ids(labels, exc):
    """Labels used to pass through torch.tensor(..., dtype=long): 0.5 became 0, True became 1."""
    from attn_core.data import BagTask

    with pytest.raises(exc, match="train_labels"):
        BagTask.from_tokens([["a"], ["b"]], labels)


def test_bag_sentences_must_be_tokenised():
    from attn_core.data import BagTask

    with pytest.raises(TypeError, match=r"train_tokens\[0\] must be a list of word strings"):
        BagTask.from_tokens(["a b", "c"], [0, 1])              # a string is not a bag of words
    with pytest.raises(ValueError, match="test_tokens and test_labels must be given together"):
        BagTask.from_tokens([["a"]], [0], test_tokens=[["a"]])


def test_parallel_corpus_to_batch_checks_word_ids():
    from attn_core.data import ParallelCorpusTask

    task = ParallelCorpusTask(vocab=6, length=3, n_pairs=10)
    c = task.corpus()
    b = task.to_batch(c["src"], c["tgt"], c["align"])
    assert b["tgt"].min() >= 6 and b["tgt_in"][:, 0].eq(12).all()
    bad = c["src"].clone()
    bad[0, 0] = 6                                                  # would read a target word
    with pytest.raises(ValueError, match="src must hold token ids"):
        task.to_batch(bad, c["tgt"], c["align"])
    with pytest.raises(TypeError, match="src must hold integer"):
        task.to_batch(c["src"].float(), c["tgt"], c["align"])


@pytest.mark.parametrize("kw", [{}, {"target_permutation": (2, 0, 1, 4, 3)}])
def test_copy_eos_ends_both_sides_and_aligns_to_the_source_end(kw):
    t = CopyTask(5, eos=True, **kw)
    assert (t.eos_token, t.bos, t.model_vocab) == (5, 6, 7)
    b = t.sample(torch.Generator().manual_seed(0), 4)
    assert b["src"].shape == b["tgt"].shape == b["tgt_in"].shape == b["align"].shape == (4, 6)
    assert (b["src"][:, -1] == 5).all() and (b["tgt"][:, -1] == 5).all()
    assert (b["tgt_in"][:, 0] == 6).all() and torch.equal(b["tgt_in"][:, 1:], b["tgt"][:, :-1])
    assert (b["align"][:, -1] == 5).all()
    assert torch.equal(b["tgt"], b["src"].gather(1, b["align"]))     # align says where from
    plain = CopyTask(5, **kw).sample(torch.Generator().manual_seed(0), 4)
    assert torch.equal(plain["src"], b["src"][:, :5])                # same data, EOS appended
    assert CopyTask(5).eos_token is None and CopyTask(5).model_vocab == 6


def test_copy_eos_must_be_a_bool():
    with pytest.raises(TypeError, match=r"^eos must be True or False"):
        CopyTask(5, eos=1)
