"""Chapter 5 pieces: per-head seeds, head classification, combinations, bad arguments."""

import numpy as np
import pytest
import torch

from attn_core.experiments import CopyConfig, head_combinations, run_heads
from attn_core.metrics import classify_heads
from attn_core.models import Seq2Seq


def test_head_k_of_a_multihead_model_is_the_single_head_of_that_seed():
    multi = Seq2Seq(vocab=9, embed=5, hidden=5, heads=3, seeds=[7], head_seeds=[[11, 12, 13]])
    for k, h in enumerate([11, 12, 13]):
        single = Seq2Seq(vocab=9, embed=5, hidden=5, heads=1, seeds=[7], head_seeds=[h])
        assert torch.equal(multi.score[0, k], single.score[0, 0])
        # and everything else is the shared base initialisation
        assert torch.equal(multi.encoder.w_hh, single.encoder.w_hh)


def test_multihead_with_identical_heads_equals_one_head():
    """K copies of one head average to that head: K heads can express what one head can."""
    one = Seq2Seq(vocab=9, embed=5, hidden=5, heads=1, seeds=[0], head_seeds=[3])
    three = Seq2Seq(vocab=9, embed=5, hidden=5, heads=3, seeds=[0], head_seeds=[[3, 3, 3]])
    src, tgt = torch.randint(0, 8, (1, 2, 6)), torch.randint(0, 8, (1, 2, 6))
    torch.testing.assert_close(three(src, tgt)["logits"], one(src, tgt)["logits"], atol=1e-6, rtol=1e-5)


def test_classify_heads():
    acc = np.array([[0.99, 0.97], [0.4, 0.5], [0.99, 0.5], [0.8, 0.8]])
    assert list(classify_heads(acc)) == ["good", "bad", "inconsistent", "inconsistent"]
    assert list(classify_heads(acc, good=0.75, bad=0.45)) == ["good", "inconsistent", "inconsistent", "good"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(final_acc=np.zeros((0, 2))), "non-empty"),
    (dict(final_acc=np.zeros(3)), "non-empty"),
    (dict(final_acc=np.zeros((2, 2)), good=0.5, bad=0.6), "bad < good"),
    (dict(final_acc=np.zeros((2, 2)), good=1.5), "good"),
])
def test_classify_heads_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        classify_heads(**kwargs)


def test_head_combinations():
    pools = {"good": [1], "bad": [2, 3, 4], "random": range(100, 200)}
    all_bad = head_combinations(pools, "all bad", 2, 3)
    assert sorted(map(sorted, all_bad)) == [[2, 3], [2, 4], [3, 4]]       # distinct subsets first
    one_good = head_combinations(pools, "one good", 3, 2)
    assert all(c[0] == 1 and set(c[1:]) <= {2, 3, 4} and len(set(c)) == 3 for c in one_good)
    rnd = head_combinations(pools, "random", 4, 2)
    assert rnd == [[100, 101, 102, 103], [104, 105, 106, 107]]
    with pytest.raises(ValueError, match="not enough"):
        head_combinations({"good": [], "bad": [2]}, "all bad", 2, 1)
    with pytest.raises(ValueError, match="not enough"):
        head_combinations({"good": [], "bad": [2, 3]}, "one good", 2, 1)
    with pytest.raises(ValueError, match="kind"):
        head_combinations(pools, "some bad", 2, 1)


def test_run_heads_validates_and_trains_members_with_their_heads():
    cfg = CopyConfig(length=5, embed=8, hidden=8, steps=3, batch_size=4, eval_every=3,
                     eval_batch_size=4, seeds=(0,))
    with pytest.raises(ValueError, match="head_seeds"):
        run_heads(cfg, 0, [], [], cache=False, progress=False)
    with pytest.raises(ValueError, match="data_seeds"):
        run_heads(cfg, 0, [1, 2], [0], cache=False, progress=False)
    h = run_heads(cfg, 0, [1, 2], [0, 0], cache=False, progress=False)
    assert h.probes["head_attn_acc"].shape == (2, 2, 1)              # (members, evals, K)
    assert h.probes["head_maps"].shape == (2, 2, 1, 5, 5)
    assert not np.allclose(h.train_loss[0], h.train_loss[1])          # different heads, same data


def test_bad_head_seed_arguments():
    with pytest.raises(ValueError, match="head_seeds"):
        Seq2Seq(vocab=9, heads=2, seeds=[0], head_seeds=[[1, 2, 3]])
    with pytest.raises(ValueError, match="head_seeds"):
        Seq2Seq(vocab=9, heads=1, seeds=[0, 1], head_seeds=[1])
