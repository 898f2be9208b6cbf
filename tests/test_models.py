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
