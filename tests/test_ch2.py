"""Chapter 2 (Lu, Mao & Nayak 2021): topic task generators, the TopicAttention model, the SEN
curve and the measurements built on them."""

import functools
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core import theory
from attn_core.data import (BagTask, PurityTwinTask, TopicTask, read_sst2_tsv, sst2_task,
                            topic_sentences)
from attn_core.chapters.ch2_sen import SENConfig, run_bag_task
from attn_core.metrics import (attended_words, eq8_rates, sen_probe, t_interval, topic_purity)
from attn_core.models import TopicAttention
from attn_core.stacked import member, stack_members
from attn_core.training import train

DATA = Path(__file__).parent / "data"


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def stacked(batch, S):
    return {k: v.unsqueeze(0).expand(S, *v.shape).clone() for k, v in batch.items()}


# ------------------------------------------------------------------------------- generators
def test_topic_sentences_follow_the_generative_process():
    sets = [[0, 1], [2], [3, 4, 5]]
    d = topic_sentences(sets, range(10, 60), m=7, n=3000, generator=gen())
    x, y, pos = d["x"], d["y"], d["pos"]
    assert x.shape == (3000, 8)
    is_topic = x < 10
    assert torch.all(is_topic.sum(1) == 1)                          # exactly one topic word
    tw = x[torch.arange(3000), pos]
    assert torch.all(tw < 10)
    for j, s in enumerate(sets):                                    # ... of the sentence's topic
        assert set(tw[y == j].tolist()) == set(s)
    assert torch.all((x[~is_topic] >= 10) & (x[~is_topic] < 60))    # non-topic from Θ
    frac = torch.bincount(y, minlength=3).float() / 3000            # topics uniform
    assert torch.all((frac - 1 / 3).abs() < 0.04)
    assert torch.bincount(pos, minlength=8).min() > 250             # position uniform


def test_topic_sentences_are_reproducible():
    a = topic_sentences([[0], [1]], range(2, 30), 5, 20, gen(3))
    b = topic_sentences([[0], [1]], range(2, 30), 5, 20, gen(3))
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(topic_sets=[[0, 1]]), ValueError, "J >= 2"),
    (dict(topic_sets=[[0, 1], [1, 2]]), ValueError, "mutually exclusive"),
    (dict(topic_sets=[[0], []]), ValueError, "at least one word"),
    (dict(topic_sets=[[0], [5]]), ValueError, "overlap the dictionary"),
    (dict(dictionary=[]), ValueError, "dictionary"),
    (dict(m=0), ValueError, "m must be >= 1"),
    (dict(n=0), ValueError, "n must be >= 1"),
    (dict(m=2.5), TypeError, "m must be an int"),
    (dict(generator=0), TypeError, "generator"),
    (dict(topic_sets="ab"), TypeError, "topic_sets"),
])
def test_topic_sentences_bad_arguments(kwargs, exc, match):
    args = dict(topic_sets=[[0], [1]], dictionary=range(2, 20), m=3, n=5, generator=gen())
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        topic_sentences(**args)


def test_topic_task_paper_sizes_and_split():
    t = TopicTask()
    tr, te = t.sample(), t.test_set()
    assert tr["x"].shape == (800, 21) and te["x"].shape == (200, 21)
    assert t.model_vocab == 5008
    assert torch.equal(tr["x"][tr["x"] < 8] // 2, tr["y"])          # topic of the topic word
    assert t.topic_of(5) == 2
    with pytest.raises(ValueError, match="word"):
        t.topic_of(8)
    # the training set is fixed: sample() ignores its generator (full batch)
    assert torch.equal(t.sample(gen(1), 5)["x"], t.sample(gen(2), 9)["x"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_topics=1), "n_topics"), (dict(m=0), "m must be"), (dict(words_per_topic=0), "words_per_topic"),
    (dict(n_nontopic=0), "n_nontopic"), (dict(n_train=0), "n_train"), (dict(seed=-1), "seed"),
])
def test_topic_task_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TopicTask(**kwargs)


def test_purity_twin_counts_and_purity():
    t = PurityTwinTask(n_train=400, n_nontopic=300, seed=2)
    b = t.sample()
    x, y = b["x"], b["y"]
    has_f, has_r = (x == 0).any(1), (x == 1).any(1)
    assert int(has_f.sum()) == 128 and int((has_f & (y == 1)).sum()) == 103
    assert int(has_r.sum()) == 36 and torch.all(y[has_r] == 1) and torch.all(has_f[has_r])
    assert torch.all((x == 0).sum(1) <= 1) and torch.all((x == 1).sum(1) <= 1)
    purity, occ = topic_purity(x, y, t.model_vocab)
    assert occ[0] == 128 and occ[1] == 36
    assert purity[0] == pytest.approx(abs(103 - 25) / 128) and purity[1] == 1.0
    # every other sentence holds exactly one ordinary topic word of its class
    other = ~has_f
    tw = (x[other] >= 2) & (x[other] < 6)
    assert torch.all(tw.sum(1) == 1)
    assert torch.all((x[other][tw] >= 4).long() == y[other])        # words 4, 5 are class 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(rare_count=200), "rare_count"), (dict(n_train=100), "n_train"),
    (dict(frequent_counts=(0, 3)), "frequent_counts"), (dict(m=1), "m must be"),
])
def test_purity_twin_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PurityTwinTask(**kwargs)


# ------------------------------------------------------------------------------- SST-2 loader
def test_read_sst2_sample_file():
    tokens, labels = read_sst2_tsv(DATA / "sst2_sample.tsv")
    assert len(tokens) == 6 and labels == [1, 0, 1, 0, 1, 0]
    assert tokens[0][:3] == ["a", "warm", ","]
    task = BagTask.from_tokens(tokens, labels, tokens[:2], labels[:2])
    assert task.words[:2] == ("<pad>", "<unk>")
    x, mask = task.train["x"], task.train["mask"]
    assert x.shape == (6, max(len(s) for s in tokens))
    assert torch.equal(mask.sum(1), torch.tensor([len(s) for s in tokens]))
    assert torch.all(x[~mask] == 0) and torch.all(x[mask] >= 2)
    best = task.words.index("best")
    purity, occ = topic_purity(x, task.train["y"], task.model_vocab, mask)
    assert occ[best] == 2 and purity[best] == 0.0                  # once positive, once negative
    assert purity[task.words.index("powerful")] == 1.0


def test_sst2_folder_and_training_path(tmp_path):
    sample = (DATA / "sst2_sample.tsv").read_text()
    (tmp_path / "train.tsv").write_text(sample)
    (tmp_path / "dev.tsv").write_text(sample)
    task = sst2_task(tmp_path)
    h = run_bag_task(task, classifier="TC", dim=8, lr=1.0, epochs=30, eval_every=10, progress=False)
    assert h.probes["att_all"].shape == (1, 4, 6)
    assert h.train_loss[0, -1] < h.train_loss[0, 0]
    with pytest.raises(FileNotFoundError, match="missing"):
        sst2_task(tmp_path / "missing")


@pytest.mark.parametrize("text, match", [
    ("text\tlabel\nfoo\t1\n", "header"),
    ("sentence\tlabel\nfoo bar\t7\n", "0\\|1"),
    ("sentence\tlabel\n", "no sentences"),
])
def test_read_sst2_rejects_bad_files(tmp_path, text, match):
    p = tmp_path / "bad.tsv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_sst2_tsv(p)


# ------------------------------------------------------------------------------- the model
def reference_forward(model, x):
    """LMN §3 written out word by word for member 0: ν̄ = Σ_w ν_w e^{s_w} / Z."""
    s = (model.keys[0] @ model.query[0])
    out = []
    for sent in x:
        e = torch.exp(s[sent])
        out.append((e.unsqueeze(1) * model.embedding[0][sent]).sum(0) / e.sum())
    return torch.stack(out)


@pytest.mark.parametrize("clf", ["FC", "TC", "TL"])
def test_forward_matches_the_paper_formula(clf):
    m = TopicAttention(vocab=30, n_topics=3, dim=6, classifier=clf, embed_var=0.5, seeds=[4])
    with torch.no_grad():
        m.keys.normal_(0, 1.0, generator=gen(1))
    x = torch.randint(0, 30, (1, 12, 7), generator=gen(2))
    x[0, 0, :3] = 5                                                 # repeated words are counted
    out = m(x)
    v_bar = reference_forward(m, x[0])
    torch.testing.assert_close(out["v_bar"][0], v_bar, atol=1e-5, rtol=1e-5)
    if clf != "TL":
        torch.testing.assert_close(out["logits"][0], v_bar @ m.U[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["p"].sum(-1), torch.ones(1, 12))


def test_sparse_pooling_equals_plain_autograd():
    fn = functools.partial(TopicAttention, vocab=40, n_topics=2, dim=5, classifier="TC",
                           embed_var=0.3, seeds=[0, 1])
    fast, plain = fn(fast_pool=True), fn(fast_pool=False)
    with torch.no_grad():
        k = torch.randn(fast.keys.shape, generator=gen(5))
        fast.keys.copy_(k)
        plain.keys.copy_(k)
    x = torch.randint(0, 40, (2, 9, 6), generator=gen(6))
    batch = {"x": x, "y": torch.randint(0, 2, (2, 9), generator=gen(7))}
    lf, lp = fast.loss(batch), plain.loss(batch)
    torch.testing.assert_close(lf, lp)
    lf.sum().backward()
    lp.sum().backward()
    for (n, a), b in zip(fast.named_parameters(), plain.parameters()):
        torch.testing.assert_close(a.grad, b.grad, atol=1e-6, rtol=1e-5, msg=n)


def test_mask_excludes_padding():
    m = TopicAttention(vocab=10, n_topics=2, dim=4, embed_var=0.5, seeds=[0])
    x = torch.tensor([[[3, 4, 0, 0]]])
    mask = torch.tensor([[[True, True, False, False]]])
    out = m(x, mask)
    assert torch.all(out["p"][0, 0, 2:] == 0)
    torch.testing.assert_close(out["v_bar"][0, 0], m.embedding[0, [3, 4]].mean(0))


def test_initialisation_and_query_options():
    m = TopicAttention(vocab=20, classifier="TL", query_norm=3.0, seeds=[0, 1])
    assert torch.all(m.scores() == 0)
    torch.testing.assert_close(m.query.norm(dim=1), torch.full((2,), 3.0))
    torch.testing.assert_close(m.sen_embeddings(), 3.0 * m.embedding)
    names = {n for n, _ in m.named_parameters()}
    assert "query" not in names and "hidden_layer.weight" in names
    t = TopicAttention(vocab=20, seeds=[0, 0], query_var=[0.1, 2.0], train_query=True)
    assert "query" in {n for n, _ in t.named_parameters()}
    torch.testing.assert_close(t.query[1], t.query[0] * math.sqrt(20.0))   # same draw, scaled
    kf = TopicAttention(vocab=20, classifier="TC", freeze=("keys",))
    assert not kf.keys.requires_grad and kf.embedding.requires_grad


def test_member_and_stack_keep_the_model():
    m = TopicAttention(vocab=25, n_topics=2, dim=4, embed_var=0.1, seeds=[0, 1, 2])
    x = torch.randint(0, 25, (3, 5, 4), generator=gen(1))
    full = m(x)["logits"]                                           # fills the pooling cache
    one = member(m, 1)
    torch.testing.assert_close(one(x[1:2])["logits"], full[1:2])
    back = stack_members([member(m, i) for i in range(3)])
    torch.testing.assert_close(back(x)["logits"], full)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(classifier="XL"), ValueError, "classifier"),
    (dict(n_topics=1), ValueError, "n_topics"),
    (dict(dim=2, n_topics=4), ValueError, "dim"),
    (dict(embed_var=0.0), ValueError, "embed_var"),
    (dict(embed_var=float("nan")), ValueError, "embed_var"),
    (dict(embed_var="big"), TypeError, "embed_var"),
    (dict(query_norm=-1.0), ValueError, "query_norm"),
    (dict(query_var=[0.1, 0.2]), ValueError, "query_var"),
    (dict(query_var=0.0), ValueError, "query_var"),
    (dict(freeze="keys"), TypeError, "freeze"),
    (dict(freeze=["query"]), ValueError, "freeze"),
    (dict(seeds=[]), ValueError, "seeds"),
])
def test_bad_model_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        TopicAttention(vocab=10, **kwargs)


def test_forward_rejects_wrong_member_dimension():
    m = TopicAttention(vocab=10, seeds=[0, 1])
    with pytest.raises(ValueError, match="x must have shape"):
        m(torch.zeros(3, 2, 4, dtype=torch.long))


# ------------------------------------------------------------------------------- theory
def test_sen_curve_values_and_limits():
    assert theory.sen_curve(0.0, 20) == 0.0
    s = np.array([0.5, 1.0, 3.0])
    np.testing.assert_allclose(theory.sen_curve(s, 20), np.sqrt(2 * (s + np.expm1(s) / 20)))
    small = 1e-4                                                    # ≈ sqrt(2 s (1 + 1/m))
    assert theory.sen_curve(small, 4) == pytest.approx(math.sqrt(2 * small * 1.25), rel=1e-3)
    assert np.all(np.diff(theory.sen_curve(np.linspace(0, 8, 50), 20)) > 0)   # monotone
    assert theory.sen_curve(5.0, 5) > theory.sen_curve(5.0, 50)     # larger m, smaller norm


@pytest.mark.parametrize("args, exc, match", [
    ((1.0, 0), ValueError, r"m \(non-topic words per sentence\) must be >= 1"),
    ((1.0, 2.0), TypeError, "m must be an int >= 1"),
    ((-0.5, 20), ValueError, "score must be >= 0"),
    ((1.0, True), TypeError, "m must be an int >= 1; got bool")])
def test_sen_curve_bad_arguments(args, exc, match):
    with pytest.raises(exc, match=match):
        theory.sen_curve(*args)


def test_sen_relative_gap():
    s = np.linspace(0, 4, 30)
    assert theory.sen_relative_gap(s, theory.sen_curve(s, 20), 20) == pytest.approx(0, abs=1e-12)
    assert theory.sen_relative_gap(s, 1.1 * theory.sen_curve(s, 20), 20) == pytest.approx(0.1)
    assert math.isnan(theory.sen_relative_gap(s, np.full(30, 0.01), 20))
    assert theory.sen_relative_gap([-0.1, 1.0], [0.5, 1.5], 20) == float("inf")
    with pytest.raises(ValueError, match="same shape"):
        theory.sen_relative_gap([1.0, 2.0], [1.0], 20)


# ------------------------------------------------------------------------------- metrics
def test_topic_purity_by_hand_and_errors():
    x = torch.tensor([[0, 1], [0, 2], [0, 0], [3, 1]])
    y = torch.tensor([1, 1, 0, 1])
    purity, occ = topic_purity(x, y, 5)
    np.testing.assert_allclose(occ, [3, 2, 1, 1, 0])                # sentences, not tokens
    np.testing.assert_allclose(purity[:4], [1 / 3, 1, 1, 1])
    assert math.isnan(purity[4])
    with pytest.raises(ValueError, match="binary"):
        topic_purity(x, torch.tensor([0, 1, 2, 1]), 5)
    with pytest.raises(ValueError, match="vocab"):
        topic_purity(x, y, 3)


def test_attended_words_and_probe():
    m = TopicAttention(vocab=10, n_topics=2, dim=4, seeds=[0])
    with torch.no_grad():
        m.keys[0, 7] = m.query[0] * 2.0                              # word 7 gets score 2
    x = torch.tensor([[1, 7, 2], [3, 4, 5]])
    att = attended_words(m, x)
    assert att[0, 0] == 7 and att[0, 1] == 3                        # ties: first position
    pr = sen_probe([7])(m, {"x": x.unsqueeze(0)})
    assert pr["score"][0, 0] == pytest.approx(2.0)
    assert pr["nontopic_max_abs_score"][0] == 0
    assert pr["topic_argmax"][0] == pytest.approx(0.5)


def test_eq8_matches_exact_velocity_with_frozen_context():
    """With the non-topic words at score 0 and zero embeddings, Eq. 8 is exact."""
    task = TopicTask(n_topics=2, words_per_topic=1, m=6, n_nontopic=40, n_train=60, seed=3)
    m = TopicAttention(vocab=task.model_vocab, n_topics=2, dim=4, classifier="FC",
                       embed_var=1e-12, seeds=[0])
    with torch.no_grad():
        m.embedding[0, :2] = torch.randn(2, 4, generator=gen(1))
        m.embedding[0, 2:] = 0
        m.keys[0, :2] = m.query[0] * torch.tensor([[0.7], [-0.3]])
    batch = stacked(task.sample(), 1)
    r = eq8_rates(m, batch, [0, 1])
    torch.testing.assert_close(r["eq8"], r["exact"], atol=1e-6, rtol=1e-4)
    # and the exact rate is what one SGD step does to the score (lr × rate)
    opt = torch.optim.SGD([m.keys], lr=1e-3)
    s0 = m.scores()[0, :2].detach().clone()
    m.loss(batch).sum().backward()
    opt.step()
    torch.testing.assert_close((m.scores()[0, :2] - s0) / 1e-3, r["exact"][0], atol=1e-4, rtol=1e-3)


def test_t_interval():
    mean, lo, hi = t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and hi - mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-4)
    assert t_interval([5.0]) == (5.0, 5.0, 5.0)
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        t_interval([1.0, 2.0], confidence=1.5)


# ------------------------------------------------------------------------------- end to end
def test_short_run_moves_topic_words_along_the_sen_curve():
    cfg = SENConfig(n_nontopic=500, n_train=200, n_test=50, lr=1.0, epochs=400, eval_every=20,
                    seeds=(0,), classifier="FC", all_words=True)
    h = cfg.run(progress=False, cache=False)
    sc, nm = h.probes["score"][0], h.probes["norm"][0]
    assert np.all(sc[-1] > sc[0] + 0.5)                             # topic scores rose
    assert h.probes["nontopic_max_abs_score"][0, -1] < 0.1 * sc[-1].mean()
    assert max(theory.sen_relative_gap(sc[:, j], nm[:, j], cfg.m) for j in range(8)) < 0.1
    # softmax is shift-invariant and keys start at 0: the sum of all scores stays 0
    assert np.abs(h.probes["all_score"][0].sum(-1)).max() < 1e-3 * sc[-1].max()
    assert h.probes["test_accuracy"][0, -1] > 0.9


def test_engine_trains_topic_attention_identically_batched_and_looped():
    task = TopicTask(n_nontopic=200, n_train=100, n_test=20)
    fn = functools.partial(TopicAttention, vocab=task.model_vocab, classifier="TC")
    kw = dict(steps=20, optimizer="sgd", lr=1.0, batch_size=100, eval_every=10, progress=False)
    a = train(fn, task, [0, 1], execution="batched", **kw)
    b = train(fn, task, [0, 1], execution="looped", **kw)
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-5, atol=1e-6)
