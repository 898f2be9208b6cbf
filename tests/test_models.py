"""Models: the hand-written batched recurrences equal PyTorch's, stacking is exact, bad input fails."""

import functools

import pytest
import torch
from torch import nn

from attn_core.models import AttentionClassifier, Seq2Seq, TopicAttention
from attn_core.stacked import StackedRNN, member, stack_members


def _copy_into_torch(rnn: StackedRNN, i: int, ref: nn.Module):
    with torch.no_grad():
        ref.weight_ih_l0.copy_(rnn.w_ih[i]); ref.weight_hh_l0.copy_(rnn.w_hh[i])
        ref.bias_ih_l0.copy_(rnn.b_ih[i]); ref.bias_hh_l0.copy_(rnn.b_hh[i])


@pytest.mark.parametrize("cell, Ref", [("lstm", nn.LSTM), ("gru", nn.GRU)])
def test_stacked_rnn_matches_torch(cell, Ref):
    gens = [torch.Generator().manual_seed(s) for s in (0, 1, 2)]
    rnn = StackedRNN(gens, 5, 7, cell)
    x = torch.randn(3, 4, 6, 5)
    out, _ = rnn(x)                                   # batched, hand-written (S = 3)
    for i in range(3):
        ref = Ref(5, 7, batch_first=True)
        _copy_into_torch(rnn, i, ref)
        expected, _ = ref(x[i])
        torch.testing.assert_close(out[i], expected, atol=1e-5, rtol=1e-5)


def test_member_of_stack_equals_single_model():
    """Member i of a model built from seeds [a, b, c] is the single model of seed b."""
    fn = functools.partial(Seq2Seq, vocab=11, embed=6, hidden=6, heads=2)
    stacked, single = fn(seeds=[4, 5, 6]), fn(seeds=[5])
    for (n1, p1), (n2, p2) in zip(stacked.named_parameters(), single.named_parameters()):
        assert torch.equal(p1[1], p2[0]), n1
    src = torch.randint(0, 10, (1, 3, 8))
    tgt = torch.randint(0, 10, (1, 3, 8))
    a = stacked(src.expand(3, -1, -1), tgt.expand(3, -1, -1))["logits"][1]
    b = single(src, tgt)["logits"][0]                 # S = 1 runs the fused torch.lstm kernel
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_stack_and_member_roundtrip():
    fn = functools.partial(AttentionClassifier, vocab=9, embed=4, hidden=4)
    models = [fn(seeds=[s]) for s in (1, 2, 3)]
    s = stack_members(models)
    assert s.n_members == 3 and s.seeds == [1, 2, 3]
    for i, m in enumerate(models):
        mi = member(s, i)
        for (n, p), (_, q) in zip(mi.named_parameters(), m.named_parameters()):
            assert torch.equal(p, q), n
    with pytest.raises(ValueError, match="i must be"):
        member(s, 3)


def test_uniform_attention_is_uniform_and_frozen():
    m = Seq2Seq(vocab=9, embed=4, hidden=4, attention="uniform", seeds=[0])
    out = m(torch.randint(0, 8, (1, 2, 5)), torch.randint(0, 8, (1, 2, 5)))
    torch.testing.assert_close(out["alpha"], torch.full_like(out["alpha"], 0.2))
    assert not m.score.requires_grad
    c = AttentionClassifier(vocab=9, attention="uniform", seeds=[0])
    assert torch.allclose(c(torch.randint(0, 9, (1, 2, 5)))["p"], torch.tensor(0.2))


def test_classifier_logit_is_attention_weighted_relevance():
    c = AttentionClassifier(vocab=9, embed=4, hidden=4, seeds=[0, 1])
    out = c(torch.randint(0, 9, (2, 3, 6)))
    torch.testing.assert_close(out["logit"], (out["p"] * out["beta"]).sum(-1))
    torch.testing.assert_close(out["p"].sum(-1), torch.ones(2, 3))


def test_multihead_k1_equals_single_head():
    one = Seq2Seq(vocab=9, embed=4, hidden=4, heads=1, seeds=[0])
    src, tgt = torch.randint(0, 8, (1, 2, 5)), torch.randint(0, 8, (1, 2, 5))
    out = one(src, tgt)
    assert out["alpha"].shape == (1, 1, 2, 5, 5)
    # with K copies of the same head, the averaged context equals the single head's
    three = Seq2Seq(vocab=9, embed=4, hidden=4, heads=3, seeds=[0])
    with torch.no_grad():
        for (n, p), (_, q) in zip(three.named_parameters(), one.named_parameters()):
            if n == "score":
                p.copy_(q.expand_as(p))
            else:
                p.copy_(q)
    torch.testing.assert_close(three(src, tgt)["logits"], out["logits"], atol=1e-6, rtol=1e-5)


def test_topic_model_scores_start_at_zero():
    m = TopicAttention(vocab=20, classifier="FC", seeds=[0, 1])
    assert torch.all(m.scores() == 0)
    assert torch.allclose(m.query.norm(dim=1), torch.ones(2))
    assert torch.allclose(m.U[0].T @ m.U[0], torch.eye(4), atol=1e-6)   # orthonormal columns
    assert not any(n == "U" for n, _ in m.named_parameters())             # FC: U fixed


@pytest.mark.parametrize("cls, kwargs, exc, match", [
    (Seq2Seq, dict(vocab=10, hidden=0), ValueError, "hidden"),
    (Seq2Seq, dict(vocab=10, heads=0), ValueError, "heads"),
    (Seq2Seq, dict(vocab=10, cell="rnn"), ValueError, "cell"),
    (Seq2Seq, dict(vocab=10, attention="hard"), ValueError, "attention"),
    (Seq2Seq, dict(vocab=10, seeds=[]), ValueError, "seeds"),
    (Seq2Seq, dict(vocab=10, seeds=[0, 1], head_seeds=[1]), ValueError, "head_seeds"),
    (AttentionClassifier, dict(vocab=1), ValueError, "vocab"),
    (AttentionClassifier, dict(vocab=10, embed=-2), ValueError, "embed"),
    (TopicAttention, dict(vocab=10, classifier="XL"), ValueError, "classifier"),
    (TopicAttention, dict(vocab=10, n_topics=1), ValueError, "n_topics"),
    (TopicAttention, dict(vocab=10, freeze=["query"]), ValueError, "freeze"),
    (TopicAttention, dict(vocab=10, embed_var=0.0), ValueError, "embed_var"),
])
def test_bad_model_arguments(cls, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        cls(**kwargs)


@pytest.mark.parametrize("make, call", [
    (lambda: AttentionClassifier(vocab=5, embed=3, hidden=3, seeds=[0, 1]),
     lambda m, x: m(x)),
    (lambda: Seq2Seq(vocab=5, embed=3, hidden=3, seeds=[0, 1]),
     lambda m, x: m(x, x)),
    (lambda: TopicAttention(vocab=5, n_topics=2, dim=2, seeds=[0, 1]),
     lambda m, x: m(x)),
], ids=["classifier", "seq2seq", "topic"])
def test_token_id_equal_to_vocab_never_reads_the_next_members_table(make, call):
    # the stacked lookup offsets member i's ids by i*vocab: an id == vocab in member 0 would
    # silently read member 1's first row (it did before ids were range-checked per member)
    model = make()
    x = torch.zeros(2, 1, 3, dtype=torch.long)
    x[0, 0, 1] = 5
    with pytest.raises(ValueError, match=r"token ids in \[0, 4\]|ids in \[0, 4\]"):
        call(model, x)


# ----------------------------------------------------------- the authors' variant (bias, P, EOS)
AUTHORS = functools.partial(Seq2Seq, vocab=9, embed=6, hidden=6, head_proj=True, bias=True)


def _batch(S=2, B=3, L=5, V=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, V, (S, B, L), generator=g)
    tgt = torch.randint(0, V, (S, B, L), generator=g)
    return src, torch.cat([torch.full((S, B, 1), V), tgt[..., :-1]], -1), tgt


@pytest.mark.parametrize("heads, reduce", [(1, "mean"), (3, "mean"), (3, "sum")])
def test_lexical_probe_is_the_output_when_every_head_attends_to_one_position(
        monkeypatch, heads, reduce):
    """β_{t,l} = p_t(y_t) of the model itself with every head's attention forced onto l: the
    probe's context (projections and biases included) is the model's context."""
    import attn_core.models as M

    model = AUTHORS(seeds=[0, 1], heads=heads, head_reduce=reduce)
    src, tgt_in, tgt = _batch()
    beta = model.lexical_probe(src, tgt_in, tgt)                        # (S, B, T, L)
    for l in range(src.shape[-1]):
        onehot = lambda scores, mode, l=l: nn.functional.one_hot(
            torch.full(scores.shape[:-1], l), scores.shape[-1]).float()
        monkeypatch.setattr(M, "attention_weights", onehot)
        with torch.no_grad():
            p = model(src, tgt_in)["logits"].softmax(-1)
        expected = p.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(beta[..., l], expected, atol=1e-6, rtol=1e-5)


def test_biases_change_the_scores_and_come_from_the_head_seeds():
    plain = Seq2Seq(vocab=9, embed=6, hidden=6, head_proj=True, seeds=[3], head_seeds=[[11]])
    biased = AUTHORS(seeds=[3], head_seeds=[[11]])
    for name, t in plain.named_parameters():                # the rest of the model is the same
        assert torch.equal(t, dict(biased.named_parameters())[name]), name
    assert biased.score_bias.shape == (1, 1, 6) and biased.proj_bias.shape == (1, 1, 6)
    src, tgt_in, _ = _batch(S=1)
    with torch.no_grad():
        assert not torch.allclose(plain(src, tgt_in)["alpha"], biased(src, tgt_in)["alpha"])
    two = AUTHORS(seeds=[3], heads=2, head_seeds=[[11, 12]])   # head k = the one-head model's
    assert torch.equal(two.score_bias[0, 0], biased.score_bias[0, 0])
    assert torch.equal(two.proj_bias[0, 0], biased.proj_bias[0, 0])
    assert not torch.equal(two.score_bias[0, 1], biased.score_bias[0, 0])
    assert not torch.equal(biased.score_bias[0, 0], biased.proj_bias[0, 0])


def test_separate_decoder_embedding_leaves_the_other_tensors_alone():
    shared = AUTHORS(seeds=[4])
    own = AUTHORS(seeds=[4], shared_embedding=False)
    assert shared.dec_emb is None and own.dec_emb.weight.shape == (1, 9, 6)
    for name, t in shared.named_parameters():
        assert torch.equal(t, dict(own.named_parameters())[name]), name
    src, tgt_in, _ = _batch(S=1)
    with torch.no_grad():
        assert not torch.allclose(shared(src, tgt_in)["logits"], own(src, tgt_in)["logits"])


def test_uniform_attention_freezes_the_score_bias():
    m = AUTHORS(seeds=[0], attention="uniform")
    assert not m.score.requires_grad and not m.score_bias.requires_grad
    assert m.proj_bias.requires_grad


@pytest.mark.parametrize("kwargs, name", [(dict(bias=1), "bias"),
                                          (dict(shared_embedding="no"), "shared_embedding")])
def test_authors_options_must_be_bools(kwargs, name):
    with pytest.raises(TypeError, match=rf"^{name} must be True or False"):
        Seq2Seq(vocab=9, **kwargs)
