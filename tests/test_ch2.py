"""Chapter 2 (Lu, Mao & Nayak 2021): topic task generators, the TopicAttention model, the SEN
curve and the measurements built on them."""

import functools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core import theory
from attn_core.chapters import ch2_sen
from attn_core.chapters.ch2_sen import SENConfig, run_bag_task
from attn_core.data import (BagTask, KeywordTask, MarkovPairTask, PurityGradedTask, TopicTask,
                            read_sst2_tsv, sst2_task, topic_sentences)
from attn_core.metrics import (attended_words, eq8_rates, rank_correlation, sen_probe,
                               t_interval, topic_purity)
from attn_core.models import AttentionClassifier, TopicAttention, TopicAttentionCNN
from attn_core.stacked import member, stack_members
from attn_core.training import eval_seed, train

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
    (dict(m=0), ValueError, r"m must be an int in \[1, "),
    (dict(n=0), ValueError, r"n must be an int in \[1, "),
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


def test_purity_graded_counts_and_purity():
    t = PurityGradedTask(n_nontopic=300, seed=2)
    b = t.sample()
    x, y = b["x"], b["y"]
    assert x.shape == (792, 21) and t.n_train == 792 and t.model_vocab == 2 + 22 + 300
    is_rare = (x >= 2) & (x < 24)
    assert torch.all(is_rare.sum(1) == 1)                            # one rare word each
    rare = x[is_rare]
    assert torch.all((rare - 2) // 11 == y)                          # ... of its class
    assert torch.all(torch.bincount(rare - 2, minlength=22) == 36)   # each in 36 sentences
    f_pos, f_neg = (x == 0).any(1), (x == 1).any(1)
    assert not torch.any(f_pos & f_neg)                              # F⁺, F⁻ apart
    assert int((f_pos & (y == 1)).sum()) == 103 and int((f_pos & (y == 0)).sum()) == 25
    assert int((f_neg & (y == 0)).sum()) == 103 and int((f_neg & (y == 1)).sum()) == 25
    purity, occ = topic_purity(x, y, t.model_vocab)
    np.testing.assert_allclose(occ[:24], [128, 128] + [36] * 22)
    np.testing.assert_allclose(purity[:24], [78 / 128] * 2 + [1.0] * 22)
    # a rare word is alone in about two thirds of its sentences
    with_f = (f_pos | f_neg).float().mean()
    assert abs(float(with_f) - 256 / 792) < 1e-6
    te = t.test_set()
    assert te["x"].shape == (200, 21)
    te_rare = te["x"][(te["x"] >= 2) & (te["x"] < 24)]
    assert torch.all((te_rare - 2) // 11 == te["y"])
    # real replicates: another seed draws other sentences; the own seed is the task itself
    assert t.for_seed(2) is t
    other = t.for_seed(3).sample()["x"]
    assert ch2_sen.sentence_overlap(x, other) == 0.0 and ch2_sen.sentence_overlap(x, x) == 1.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(rare_count=0), "rare_count"), (dict(rare_per_class=0), "rare_per_class"),
    (dict(frequent_counts=(0, 3)), "frequent_counts"), (dict(m=1), "m must be"),
    (dict(frequent_counts=(300, 200)), "frequent_counts"), (dict(n_test=0), "n_test"),
])
def test_purity_graded_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PurityGradedTask(**kwargs)


def test_markov_pair_task_follows_its_chains():
    t = MarkovPairTask(n_words=30, n_train=3000, n_test=100, seed=4)
    x, y = t.sample()["x"], t.sample()["y"]
    pairs = t.topic_pairs
    assert pairs.shape == (4, 2) and len(torch.unique(pairs)) == 8     # distinct words
    lead = {int(p[0]): (k // 2, int(p[1])) for k, p in enumerate(pairs)}
    # every sentence opens with a pair of its own topic
    first = [lead.get(int(a), (None, None)) for a in x[:, 0]]
    assert all(topic == int(c) and int(b) == e
               for (topic, e), b, c in zip(first, x[:, 1], y))
    # in a sentence of topic y, a leader of y's pairs is always followed by its follower ...
    forced = other = 0
    for pos in range(1, x.shape[1] - 1):
        for n in range(len(x)):
            a, b = int(x[n, pos]), int(x[n, pos + 1])
            if a in lead:
                if lead[a][0] == int(y[n]):
                    assert b == lead[a][1]
                    forced += 1
                else:
                    other += b != lead[a][1]
    assert forced > 0 and other > 0          # ... and the other topic's leaders move freely
    # from any other word the chain moves uniformly
    counts = torch.bincount(x[:, 2:].flatten(), minlength=30).float()
    assert counts.min() > 0.5 * counts.mean()
    assert t.for_seed(4) is t and not torch.equal(t.for_seed(5).topic_pairs, pairs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_words=7), "n_words"), (dict(pairs_per_topic=0), "pairs_per_topic"),
    (dict(length=1), "length"), (dict(n_test=0), "n_test"), (dict(seed=-1), "seed"),
])
def test_markov_pair_task_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MarkovPairTask(**kwargs)


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


def test_untrained_run_fails_the_findings_a_trained_run_passes():
    """ch2_sen.untrained_run: the run trained zero steps (every evaluation is step 0's). The
    claims cell takes each finding's ``untrained=`` from it, so the chapter's findings must
    fail on it while the trained run passes them (issue #29)."""
    cfg = SENConfig(n_nontopic=500, n_train=200, n_test=50, lr=1.0, epochs=200, eval_every=20,
                    seeds=(0, 1), classifier="FC")
    h = cfg.run(progress=False, cache=False)
    first_score = h.probes["score"][:, 0].copy()
    u = ch2_sen.untrained_run(h)
    assert u.eval_steps.tolist() == h.eval_steps.tolist() and u.model is None
    for k, v in u.probes.items():                      # every evaluation is step 0's
        assert v.shape == h.probes[k].shape
        np.testing.assert_array_equal(v, np.repeat(h.probes[k][:, :1], v.shape[1], axis=1))
    np.testing.assert_array_equal(u.train_loss, np.repeat(h.train_loss[:, :1],
                                                           h.train_loss.shape[1], axis=1))
    np.testing.assert_array_equal(h.probes["score"][:, 0], first_score)  # h is untouched
    sc, sc_u = h.probes["score"], u.probes["score"]
    # the trained run passes what an untrained one fails: S2 accuracy, S4 attention and
    # norm ratio, S5-S7's rising scores, S3's gap (none to measure before training: NaN)
    assert h.probes["test_accuracy"][:, -1].min() > 0.9
    assert u.probes["test_accuracy"][:, -1].max() < 0.5                 # chance: 0.25
    assert u.probes["topic_attention"][:, -1] == pytest.approx(1 / (cfg.m + 1))
    assert h.probes["topic_attention"][:, -1].min() > 2 / (cfg.m + 1)
    ratio = u.probes["norm"][:, -1].mean(1) / u.probes["nontopic_norm"][:, -1]
    assert np.all(ratio < 2)
    assert np.diff(sc, axis=1).min() > 0 and np.diff(sc_u, axis=1).max() == 0
    assert np.all(sc_u == 0) and np.all(sc[:, -1] > 0.2)
    assert ch2_sen.sen_gap(h, cfg.m) < 0.1 and math.isnan(ch2_sen.sen_gap(u, cfg.m))
    with pytest.raises(TypeError, match="History"):
        ch2_sen.untrained_run({"score": sc})


def test_engine_trains_topic_attention_identically_batched_and_looped():
    task = TopicTask(n_nontopic=200, n_train=100, n_test=20)
    fn = functools.partial(TopicAttention, vocab=task.model_vocab, classifier="TC")
    kw = dict(steps=20, optimizer="sgd", lr=1.0, batch_size=100, eval_every=10, progress=False)
    a = train(fn, task, [0, 1], execution="batched", **kw)
    b = train(fn, task, [0, 1], execution="looped", **kw)
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------- real replicates
class _SeededTask:
    """A full-batch task with one data set per seed: x holds its seed everywhere."""

    def __init__(self, seed=0):
        self.seed = seed

    def sample(self, generator=None, batch_size=None):
        return {"x": torch.full((4, 3), self.seed), "y": torch.zeros(4)}

    def for_seed(self, seed):
        return _SeededTask(seed)


def _first_token_probe(model, batch):
    return {"first": batch["x"][:, 0, 0].float()}


@pytest.mark.parametrize("workers", [1, 2])
def test_engine_gives_each_member_the_data_set_of_its_data_seed(workers):
    """The per-member task hook: a task with for_seed(seed) is redrawn for every member's data
    seed (training and evaluation batch); History.data_seeds says which."""
    fn = functools.partial(AttentionClassifier, vocab=12, embed=4, hidden=4)
    kw = dict(steps=2, lr=0.1, batch_size=4, eval_every=1, progress=False, workers=workers,
              probes=[_first_token_probe])
    h = train(fn, _SeededTask(), [0, 1, 2, 3], data_seeds=[7, 3, 3, 9], **kw)
    assert h.data_seeds.tolist() == [7, 3, 3, 9]
    np.testing.assert_array_equal(h.probes["first"], np.array([[7, 3, 3, 9]] * 3).T)
    h = train(fn, _SeededTask(), [5, 6], **kw)                     # default: the model seeds
    np.testing.assert_array_equal(h.probes["first"][:, 0], [5, 6])


def test_engine_keeps_tasks_without_the_hook_unchanged():
    """A task without for_seed (chapters 1, 3-5) is shared and sampled from each member's
    generators, exactly as before the hook existed."""
    task = KeywordTask(length=5, vocab=12)
    assert not hasattr(task, "for_seed")
    fn = functools.partial(AttentionClassifier, vocab=task.model_vocab, embed=4, hidden=4)

    def probe(model, batch):
        return {"x": batch["x"].float()}

    h = train(fn, task, [0, 1], data_seeds=[4, 8], steps=1, batch_size=6, eval_every=1,
              progress=False, probes=[probe])
    for i, s in enumerate([4, 8]):
        want = task.sample(torch.Generator().manual_seed(eval_seed(s)), 6)["x"]
        np.testing.assert_array_equal(h.probes["x"][i, 0], want.numpy())


def test_sen_replicates_differ_where_clones_do_not():
    """S1's threshold: members that share the data set end as near-copies (their initial
    embeddings of variance 1e-6 carry no information), real replicates differ word by word."""
    base = SENConfig(classifier="TC", epochs=300, eval_every=300, seeds=(0, 1))  # LMN sizes
    clones = replace(base, data_seeds=(0, 0)).run(progress=False, cache=False)
    reps = base.run(progress=False, cache=False)
    assert clones.data_seeds.tolist() == [0, 0] and reps.data_seeds.tolist() == [0, 1]
    d_clone = np.abs(np.diff(clones.probes["score"][:, -1], axis=0)).max()
    d_rep = np.abs(np.diff(reps.probes["score"][:, -1], axis=0)).max()
    assert d_clone < 0.002 and d_rep > 0.05          # the book's threshold 0.01 between them
    t0, t1 = ch2_sen.member_tasks(base)
    assert ch2_sen.sentence_overlap(t0.sample()["x"], t1.sample()["x"]) < 0.01


def test_sen_config_data_seeds():
    cfg = SENConfig(seeds=(0, 0, 1), data_seeds=(4, 4, 5))
    assert cfg.seeds_and_members()[1] == [4, 4, 5]
    assert cfg.task().seed == 4
    assert [t.seed for t in ch2_sen.member_tasks(cfg)] == [4, 4, 5]
    assert SENConfig().seeds_and_members()[1] == [0, 1, 2]
    with pytest.raises(ValueError, match="model seed 0 appears with data seeds 4 and 5"):
        SENConfig(seeds=(0, 0), data_seeds=(4, 5))
    with pytest.raises(ValueError, match="one entry per seed"):
        SENConfig(data_seeds=(1,))


class _StubModel:
    def __init__(self, seeds):
        self.seeds, self.n_members = list(seeds), len(seeds)

    def evaluate(self, batch):
        return {"accuracy": batch["x"].float().mean((1, 2))}


def test_test_accuracy_probe_per_seed_and_shared():
    sets = {s: {"x": torch.full((2, 3), s), "y": torch.zeros(2, dtype=torch.long)}
            for s in (3, 8)}
    batch = {"x": torch.zeros(2, 2, 3, dtype=torch.long)}
    out = ch2_sen.test_accuracy_probe(sets)(_StubModel([8, 3]), batch)["test_accuracy"]
    np.testing.assert_array_equal(out.numpy(), [8, 3])              # looked up by model seed
    out = ch2_sen.test_accuracy_probe(sets[3])(_StubModel([8, 3]), batch)["test_accuracy"]
    np.testing.assert_array_equal(out.numpy(), [3, 3])              # one shared set
    with pytest.raises(ValueError, match="no entry for the model seeds"):
        ch2_sen.test_accuracy_probe(sets)(_StubModel([1]), batch)


# ------------------------------------------------------------------------------- the CNN model
def test_cnn_forward_matches_the_pair_formula_and_init():
    m = TopicAttentionCNN(vocab=12, n_topics=2, dim=5, embed_var=0.3, seeds=[1, 2])
    for W in (m.conv_e, m.conv_k):                   # W₁W₁ᵀ + W₂W₂ᵀ = I for each member
        eye = torch.einsum("sde,sfe->sdf", W[:, 0], W[:, 0]) + \
            torch.einsum("sde,sfe->sdf", W[:, 1], W[:, 1])
        torch.testing.assert_close(eye, torch.eye(5).expand(2, 5, 5), atol=1e-5, rtol=0)
    pairs = torch.tensor([[0, 1], [3, 3], [11, 4]])
    assert torch.all(m.pair_scores(pairs) == 0)                    # keys start at zero
    torch.testing.assert_close(m.pair_embeddings(pairs), m.initial_pair_embeddings(pairs))
    with torch.no_grad():
        m.keys.normal_(0, 1.0, generator=gen(3))
    x = torch.randint(0, 12, (2, 6, 4), generator=gen(4))
    out = m(x)
    for i in range(2):
        e_bar = []
        for sent in x[i]:
            e = torch.stack([m.conv_e[i, 0] @ m.embedding[i, a]
                             + m.conv_e[i, 1] @ m.embedding[i, b]
                             for a, b in zip(sent[:-1], sent[1:])])
            s = torch.stack([m.query[i] @ (m.conv_k[i, 0] @ m.keys[i, a]
                                           + m.conv_k[i, 1] @ m.keys[i, b])
                             for a, b in zip(sent[:-1], sent[1:])])
            e_bar.append((torch.softmax(s, 0).unsqueeze(1) * e).sum(0))
            sp = torch.stack([sent[:-1], sent[1:]], 1)
            torch.testing.assert_close(m.pair_scores(sp)[i], s, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out["e_bar"][i], torch.stack(e_bar), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["logits"], torch.bmm(out["e_bar"], m.U))
    frozen = TopicAttentionCNN(vocab=12, train_cnn=False)
    assert not frozen.conv_e.requires_grad and not frozen.conv_k.requires_grad


def test_cnn_sparse_pooling_gradients_equal_plain_autograd():
    m = TopicAttentionCNN(vocab=15, n_topics=2, dim=4, embed_var=0.2, seeds=[0, 1])
    with torch.no_grad():
        m.keys.normal_(0, 0.5, generator=gen(2))
    x = torch.randint(0, 15, (2, 7, 5), generator=gen(3))
    y = torch.randint(0, 2, (2, 7), generator=gen(4))
    m.loss({"x": x, "y": y}).sum().backward()
    fast = {n: p.grad.clone() for n, p in m.named_parameters()}
    m.zero_grad()
    E, k = m._word_tables()                          # the same model by plain autograd
    flat = x + (torch.arange(2) * 15).view(2, 1, 1)
    a, b = flat[..., :-1], flat[..., 1:]
    p = torch.softmax(k[:, 0].reshape(-1)[a] + k[:, 1].reshape(-1)[b], -1)
    e_bar = (p.unsqueeze(-1) * (E[:, 0].reshape(-1, 4)[a] + E[:, 1].reshape(-1, 4)[b])).sum(-2)
    logits = torch.bmm(e_bar, m.U)
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
    ce.view(2, -1).mean(1).sum().backward()
    for n, q in m.named_parameters():
        torch.testing.assert_close(fast[n], q.grad, atol=1e-6, rtol=1e-5, msg=n)


def test_pair_sen_probe_groups_and_a_short_run():
    cfg = ch2_sen.CNNConfig(n_words=30, n_train=300, n_test=100, lr=1.0, epochs=60,
                            eval_every=20, n_sample=50, seeds=(0, 1))
    h = cfg.run(progress=False, cache=False)
    pr = h.probes
    assert pr["pair_score"].shape == (2, 4, 4) and pr["shared_abs_score"].shape == (2, 4, 50)
    assert np.all(pr["pair_score"][:, 0] == 0) and np.all(pr["pair_norm"][:, 0] == 0)
    assert np.all(pr["pair_score"][:, -1] > 0.3)                   # the topic pairs rose ...
    for i in range(2):                                             # ... with their norms
        for j in range(4):
            assert rank_correlation(pr["pair_score"][i, :, j], pr["pair_norm"][i, :, j]) > 0.99
    # the disjoint pairs stay far below the topic pairs
    assert np.all(pr["disjoint_max_abs_score"][:, -1] < 0.5 * pr["pair_score"][:, -1].mean(1))
    assert np.all(pr["test_accuracy"][:, -1] > 0.9)
    # group membership, on a hand-made batch
    model = TopicAttentionCNN(vocab=10, seeds=[0])
    probe = ch2_sen.pair_sen_probe({0: torch.tensor([[1, 2]])}, n_sample=6)
    out = probe(model, {"x": torch.tensor([[[1, 2, 5, 6], [2, 3, 7, 7]]])})
    # pairs (1, 2): the topic pair; (2, 5), (2, 3): share word 2; (5, 6), (3, 7), (7, 7): not
    assert out["shared_abs_score"].shape == (1, 6)
    assert int(torch.isfinite(out["shared_abs_score"]).sum()) == 2      # (2, 5), (2, 3)
    assert int(torch.isfinite(out["disjoint_abs_score"]).sum()) == 3    # (5,6), (3,7), (7,7)
    with pytest.raises(TypeError, match="topic_pairs"):
        ch2_sen.pair_sen_probe([[1, 2]])


# ------------------------------------------------------------------------------- SEN helpers
def test_sen_relative_gap_options():
    s = np.linspace(0.1, 5, 60)
    v = theory.sen_curve(s, 20)
    naive = np.sqrt(2 * s)
    # Eq. 10 data: zero gap to Eq. 10, and at s >= 2 a gap >= 7.7% to the naive curve
    assert theory.sen_relative_gap(s, v, 20, min_score=2.0) == pytest.approx(0, abs=1e-12)
    g = theory.sen_relative_gap(s, v, 20, min_score=2.0, curve="sqrt2s", reduce="min")
    assert g == pytest.approx(theory.sen_curve(2.0, 20) / math.sqrt(4.0) - 1, rel=1e-2)
    assert g > 0.077
    assert theory.sen_relative_gap(s, naive, 20, curve="sqrt2s") == pytest.approx(0, abs=1e-12)
    # a window keeps only its points: 10% off inside, 50% off outside
    v2 = np.where((s >= 1) & (s <= 2), 1.1 * v, 1.5 * v)
    assert theory.sen_relative_gap(s, v2, 20, score_range=(1, 2)) == pytest.approx(0.1)
    assert theory.sen_relative_gap(s, v2, 20) == pytest.approx(0.5)
    assert theory.sen_relative_gap(s, v2, 20, reduce="min") == pytest.approx(0.1)
    assert math.isnan(theory.sen_relative_gap(s, v, 20, score_range=(10, 11)))
    for kwargs, exc, match in [(dict(curve="eq9"), ValueError, "curve"),
                               (dict(reduce="mean"), ValueError, "reduce"),
                               (dict(score_range=(2, 1)), ValueError, "lo < hi"),
                               (dict(score_range=3), TypeError, "score_range"),
                               (dict(min_score=math.nan), ValueError, "min_score")]:
        with pytest.raises(exc, match=match):
            theory.sen_relative_gap(s, v, 20, **kwargs)


def test_sen_theorem1_sides():
    # a trajectory that satisfies Eq. 9 exactly, from s0 = -0.3 and ‖v0‖ = 1.2
    s = np.linspace(-0.3, 3, 40)
    lhs_true = s + 0.3 + (np.exp(s) - np.exp(-0.3)) / 20
    v = np.sqrt(1.2 ** 2 + 2 * lhs_true)
    lhs, rhs = theory.sen_theorem1(s, v, 20)
    np.testing.assert_allclose(lhs, lhs_true, atol=1e-12)
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    assert lhs[0] == rhs[0] == 0
    # Eq. 10 is the special case s0 = 0, v0 = 0
    s = np.linspace(0, 3, 10)
    lhs, rhs = theory.sen_theorem1(s, theory.sen_curve(s, 5), 5)
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    with pytest.raises(ValueError, match="1-D trajectories"):
        theory.sen_theorem1(np.zeros((2, 2)), np.zeros((2, 2)), 5)
    with pytest.raises(ValueError, match="1-D trajectories"):
        theory.sen_theorem1([0.0, 1.0], [0.0], 5)


def test_rank_correlation():
    u = np.array([0.0, 1.0, 2.0, 5.0, 9.0])
    assert rank_correlation(u, u ** 3) == pytest.approx(1.0)       # any increasing map
    assert rank_correlation(u, -u) == pytest.approx(-1.0)
    assert rank_correlation([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert rank_correlation([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833, rel=1e-6)
    assert math.isnan(rank_correlation(u, np.zeros(5)))           # a score that never moves
    with pytest.raises(ValueError, match="same length"):
        rank_correlation([1.0, 2.0], [1.0])


def test_sen_gap_table_and_sentence_overlap():
    cfg = SENConfig(n_nontopic=300, n_train=100, n_test=20, epochs=40, eval_every=20,
                    seeds=(0, 1))
    h = cfg.run(progress=False, cache=False)
    table = ch2_sen.sen_gap_table(h, cfg.m)
    assert table.shape == (2, 8)
    assert np.nanmax(table) == pytest.approx(ch2_sen.sen_gap(h, cfg.m))
    a = np.arange(12).reshape(4, 3)
    assert ch2_sen.sentence_overlap(a, a[[2, 0]]) == 0.5
    with pytest.raises(ValueError, match="a and b must be"):
        ch2_sen.sentence_overlap(a, a[:, :2])


@pytest.mark.parametrize("a, b, err, match", [
    ([[0, 1], [2]], [[0, 1]], ValueError, "a must be an \\(N, L\\) array of word ids"),
    ([["x", "y"]], [[0, 1]], TypeError, "a must hold word ids"),
    ([[0, 1]], [[0.0, np.nan]], ValueError, "b must hold word ids.*got nan"),
    ([[0, 1]], [[0, np.inf]], ValueError, "b must hold word ids.*got inf"),
    (np.zeros((0, 2), int), [[0, 1]], ValueError, "a and b must be \\(N, L\\) arrays"),
    ([[0, 1]], [[0, 1, 2]], ValueError, "a and b must be \\(N, L\\) arrays"),
    ([[0, 1]], [[1 + 2j, 0]], TypeError, "b must hold word ids"),
])
def test_sentence_overlap_refuses_what_is_not_word_ids(a, b, err, match):
    with pytest.raises(err, match=match):
        ch2_sen.sentence_overlap(a, b)


def test_sentence_overlap_of_tasks_sentences_in_any_dtype():
    """#35: rows are compared by their ids, so a sentence set and its int32 or float copy
    overlap fully (they overlapped 0 % when rows were compared by their bytes)."""
    x = TopicTask(n_nontopic=50, n_train=30, n_test=10).sample()["x"]
    for y in (x, x.int(), x.double(), x.numpy().astype(np.float32)):
        assert ch2_sen.sentence_overlap(x, y) == 1.0


def test_sen_gap_leaves_out_a_word_without_a_qualifying_point_wherever_it_stands():
    """A topic word whose ‖v‖ never passes 0.1 has no gap (NaN); Python's max over the gaps
    gave NaN when that word came first and a number otherwise (issue #29)."""
    from attn_core.training import History
    s = np.linspace(0.5, 3.0, 5)
    m = 20
    on_curve = np.sqrt(2 * (s + np.expm1(s) / m))
    score = np.stack([s, s, s], axis=1)[None]                       # (1, E, 3 words)
    norm = np.stack([np.full(5, 0.05), on_curve * 1.2, on_curve], axis=1)[None]

    def gap(order):
        return ch2_sen.sen_gap(History(
            seeds=np.arange(1), data_seeds=np.arange(1), train_loss=np.zeros((1, 1)),
            eval_steps=np.arange(5), metrics={},
            probes={"score": score[:, :, order], "norm": norm[:, :, order]}), m)

    assert gap([0, 1, 2]) == pytest.approx(0.2) == gap([1, 2, 0]) == gap([2, 0, 1])
    assert math.isnan(gap([0, 0, 0]))                               # no word qualifies


# ------------------------------------------------------------------ #31: diagram and sliders
def _texts(fig):
    from matplotlib.text import Text
    return " ".join(t.get_text() for t in fig.findobj(Text))


def test_model_diagram_shows_every_part_of_the_model(book_style):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    fig = ch2_sen.model_diagram()
    try:
        assert isinstance(fig, Figure)
        text = _texts(fig)
        for part in (r"sentence $\chi$", r"keys $\kappa_w$", r"embeddings $\nu_w$",
                     "attention", r"$\bar\nu", "classifier FC / TC / TL",
                     r"$s_w = q^\top\kappa_w$"):
            assert part in text, part
    finally:
        plt.close(fig)


#: the live slider's range (IntSlider 1..100) and points between, with the frames
SLIDER_M = sorted({1, 2, 3, 7, 20, 33, 64, 100, *ch2_sen.SEN_VIEW_M})


@pytest.mark.parametrize("m", SLIDER_M)
def test_sen_curve_view_over_the_slider_range(m):
    d = ch2_sen.sen_curve_view(m)
    s = d["s"]
    assert s[0] == 0 and s[-1] == pytest.approx(6.0) and len(s) == 241
    # Eq. 10 and √(2s) in closed form, independently of theory.sen_curve
    np.testing.assert_allclose(d["eq10"], np.sqrt(2 * s + 2 * (np.exp(s) - 1) / m),
                               rtol=1e-12)
    np.testing.assert_allclose(d["sqrt2s"], np.sqrt(2 * s), rtol=1e-12)
    np.testing.assert_allclose(d["attention"], np.exp(s) / (np.exp(s) + m), rtol=1e-12)
    assert d["s_half"] == pytest.approx(math.log(m), abs=1e-12)
    assert d["v_half"] == pytest.approx(math.sqrt(2 * (math.log(m) + (m - 1) / m)))
    # at s = ln m the topic word holds exactly half; Eq. 10 lies above √(2s) for s > 0
    assert 1 / (1 + m * math.exp(-d["s_half"])) == pytest.approx(0.5)
    assert np.all(d["eq10"][1:] > d["sqrt2s"][1:])
    assert np.all(np.diff(d["eq10"]) > 0) and np.all(np.diff(d["attention"]) > 0)


def test_sen_curve_view_moves_with_m():
    views = [ch2_sen.sen_curve_view(m) for m in SLIDER_M]
    for a, b in zip(views, views[1:]):          # a longer sentence: lower curve, less
        assert np.all(b["eq10"][1:] < a["eq10"][1:])         # attention, later half point
        assert np.all(b["attention"] < a["attention"])
        assert b["s_half"] > a["s_half"]
    # ... and towards √(2s(1 + 1/m)) -> √(2s) at small s
    d = ch2_sen.sen_curve_view(100, s_max=0.01, n=5)
    np.testing.assert_allclose(d["eq10"], np.sqrt(2 * d["s"] * 1.01), rtol=1e-4)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(m=0), ValueError, "m must be an int"),
    (dict(m=2.5), TypeError, "m must be an int"),
    (dict(m=True), TypeError, "m must be an int"),
    (dict(m=5, s_max=0.0), ValueError, "s_max"),
    (dict(m=5, s_max=float("nan")), ValueError, "s_max"),
    (dict(m=5, n=1), ValueError, "n must be an int"),
])
def test_sen_curve_view_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ch2_sen.sen_curve_view(**kwargs)


def _lines(fig, ax=0):
    return [(ln.get_xdata(), ln.get_ydata()) for ln in fig.axes[ax].get_lines()]


@pytest.mark.parametrize("m", [1, 20, 100])
def test_draw_sen_curve_draws_the_view_and_is_readable(m, book_style):
    import time

    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt

    t0 = time.perf_counter()
    fig = ch2_sen.draw_sen_curve(m)
    fig.canvas.draw()
    took = time.perf_counter() - t0
    try:
        assert isinstance(fig, Figure) and len(fig.axes) == 2
        d = ch2_sen.sen_curve_view(m)
        (xs, eq10), (_, naive), (xh, vh), *_ = _lines(fig, 0)
        np.testing.assert_allclose(eq10, d["eq10"])
        np.testing.assert_allclose(naive, d["sqrt2s"])
        assert xh[0] == pytest.approx(math.log(m)) and vh[0] == pytest.approx(d["v_half"])
        np.testing.assert_allclose(_lines(fig, 1)[0][1], d["attention"])
        assert f"m = {m}" in _texts(fig)
        pt = rendered_text_pt(fig)
        assert pt["desktop"] >= MIN_TEXT_PT and pt["phone"] >= MIN_TEXT_PT
        assert took < 1.0 * 3   # < 1 s on the book's CPU; x3 for a loaded test machine
    finally:
        plt.close(fig)


@pytest.mark.parametrize("m", [1, 5, 20, 40, 100])
def test_sen_attention_inverts_eq10_over_the_range(m):
    s = np.array([0.0, 0.5, math.log(m), 2.0, 5.0])
    v = theory.sen_curve(s, m)
    np.testing.assert_allclose(ch2_sen.sen_score(v, m), s, atol=1e-9)
    np.testing.assert_allclose(ch2_sen.sen_attention(v, m), np.exp(s) / (np.exp(s) + m),
                               rtol=1e-9)
    assert ch2_sen.sen_attention(0.0, m) == pytest.approx(1 / (1 + m))
    assert float(ch2_sen.sen_attention(theory.sen_curve(math.log(m), m), m)) \
        == pytest.approx(0.5)


def test_sen_attention_at_a_fixed_norm_falls_with_m():
    # Exercise 2.3's answer: the same norm buys less attention in a longer sentence
    a = [float(ch2_sen.sen_attention(2.86, m)) for m in ch2_sen.SEN_M_VALUES]
    assert all(x > y for x, y in zip(a, a[1:]))
    assert a[2] == pytest.approx(0.5, abs=0.1)       # m = 20: Attn-TC's ≈ one half


@pytest.mark.parametrize("args, exc, match", [
    ((-1.0, 20), ValueError, "norm"),
    ((float("inf"), 20), ValueError, "norm"),
    ((1.0, 0), ValueError, "m"),
    ((1.0, 2.5), TypeError, "m must be an int"),
])
def test_sen_attention_bad_arguments(args, exc, match):
    with pytest.raises(exc, match=match):
        ch2_sen.sen_attention(*args)


@pytest.mark.parametrize("m", ch2_sen.SEN_M_VALUES)
def test_draw_attention_at_norm_over_the_what_if_range(m, book_style):
    import matplotlib.pyplot as plt

    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt

    meas = {"Attn-FC": (4.9, 0.9), "Attn-TL": (2.0, 0.2)}
    fig = ch2_sen.draw_attention_at_norm(m, v_mark=2.86, measured=meas)
    try:
        lines = _lines(fig)
        curve = lines[1 if m != 20 else 0]
        np.testing.assert_allclose(curve[1], ch2_sen.sen_attention(curve[0], m))
        assert curve[0][-1] == pytest.approx(1.1 * 4.9)      # the axis covers every point
        mark = lines[2 if m != 20 else 1]
        assert mark[1][0] == pytest.approx(float(ch2_sen.sen_attention(2.86, m)))
        assert f"{float(ch2_sen.sen_attention(2.86, m)):.0%}" in _texts(fig)
        assert "Attn-FC" in _texts(fig) and "Attn-TL" in _texts(fig)
        pt = rendered_text_pt(fig)
        assert pt["desktop"] >= MIN_TEXT_PT and pt["phone"] >= MIN_TEXT_PT
    finally:
        plt.close(fig)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(m=0), ValueError, "m must be an int"),
    (dict(m=5, v_mark=-1.0), ValueError, "v_mark"),
    (dict(m=5, v_max=0.0), ValueError, "v_max"),
    (dict(m=5, measured=[(1.0, 0.5)]), TypeError, "measured"),
    (dict(m=5, measured={"a": 1.0}), TypeError, "measured"),
])
def test_draw_attention_at_norm_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ch2_sen.draw_attention_at_norm(**kwargs)
