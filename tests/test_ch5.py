"""Chapter 5 pieces: per-head seeds, head classification, combinations, bad arguments."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from attn_core.chapters.ch4_copy import CopyConfig
from attn_core.chapters.ch5_multihead import (DIAGONAL_SUCCEEDS_MIN, HeadsRun, RescueConfig,
                                             head_combinations)
from attn_core.metrics import classify_heads, verdict_repeat
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
    with pytest.raises(ValueError, match="HeadsRun.head_seeds must not be empty"):
        HeadsRun(copy=cfg, head_seeds=(), data_seeds=())
    with pytest.raises(ValueError, match="HeadsRun.data_seeds must have one entry per"):
        HeadsRun(copy=cfg, head_seeds=(1, 2), data_seeds=(0,))
    h = HeadsRun(copy=cfg, head_seeds=(1, 2), data_seeds=(0, 0)).run(cache=False, progress=False)
    assert h.probes["head_attn_acc"].shape == (2, 2, 1)              # (members, evals, K)
    assert h.probes["head_maps"].shape == (2, 2, 1, 6, 6)           # L = 5 plus the EOS
    assert not np.allclose(h.train_loss[0], h.train_loss[1])          # different heads, same data


def test_bad_head_seed_arguments():
    with pytest.raises(ValueError, match="head_seeds"):
        Seq2Seq(vocab=9, heads=2, seeds=[0], head_seeds=[[1, 2, 3]])
    with pytest.raises(ValueError, match="head_seeds"):
        Seq2Seq(vocab=9, heads=1, seeds=[0, 1], head_seeds=[1])


def test_head_projection_identity_and_sum_reduce():
    """P_k = I gives back the plain model; summing is averaging times K (before W_c)."""
    src, tgt = torch.randint(0, 8, (1, 2, 6)), torch.randint(0, 8, (1, 2, 6))
    plain = Seq2Seq(vocab=9, embed=5, hidden=5, heads=2, seeds=[0], head_seeds=[[3, 4]])
    proj = Seq2Seq(vocab=9, embed=5, hidden=5, heads=2, seeds=[0], head_seeds=[[3, 4]], head_proj=True)
    assert proj.head_proj.shape == (1, 2, 5, 5)
    assert not torch.allclose(proj(src, tgt)["logits"], plain(src, tgt)["logits"])
    with torch.no_grad():
        proj.head_proj.copy_(torch.eye(5).expand(1, 2, 5, 5))
    torch.testing.assert_close(proj(src, tgt)["logits"], plain(src, tgt)["logits"], atol=1e-6, rtol=1e-5)
    summed = Seq2Seq(vocab=9, embed=5, hidden=5, heads=2, seeds=[0], head_seeds=[[3, 4]], head_reduce="sum")
    with torch.no_grad():                      # halve the context columns of W_c: sum/2 == mean
        summed.combine.weight[..., 5:] /= 2
    torch.testing.assert_close(summed(src, tgt)["logits"], plain(src, tgt)["logits"], atol=1e-6, rtol=1e-5)


def test_head_projection_of_a_head_is_the_same_in_every_model():
    multi = Seq2Seq(vocab=9, embed=5, hidden=5, heads=2, seeds=[7], head_seeds=[[11, 12]], head_proj=True)
    single = Seq2Seq(vocab=9, embed=5, hidden=5, heads=1, seeds=[7], head_seeds=[12], head_proj=True)
    assert torch.equal(multi.head_proj[0, 1], single.head_proj[0, 0])


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(head_reduce="max"), ValueError, "head_reduce"),
    (dict(head_proj="yes"), TypeError, "head_proj"),
])
def test_bad_multihead_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        Seq2Seq(vocab=9, heads=2, **kwargs)


def test_verdict_repeat():
    final = np.array([[0.99, 0.98],   # good, repeats
                      [0.50, 0.55],   # bad, repeats
                      [1.00, 0.51],   # good, then bad: a flip
                      [0.59, 0.61],   # bad, then just above the threshold: within noise only
                      [0.80, 0.99]])  # undecided on the first seed: not counted
    r = verdict_repeat(final, n_tokens=1280)
    assert r["decided"] == 4 and r["flips"] == 1
    assert r["strict"] == pytest.approx(2 / 4) and r["within_noise"] == pytest.approx(3 / 4)
    assert (r["repeat"], r["within_noise_count"]) == (2, 3)
    assert r["tol_good"] == pytest.approx(3 * np.sqrt(0.95 * 0.05 / 1280))
    assert r["tol_bad"] == pytest.approx(3 * np.sqrt(0.6 * 0.4 / 1280))
    assert verdict_repeat(final)["within_noise"] == pytest.approx(2 / 4)   # no noise band


@pytest.mark.parametrize("kwargs, match", [
    (dict(final_acc=np.zeros((3, 1))), "n_data_seeds >= 2"),
    (dict(final_acc=np.zeros((3, 2)), n_tokens=0), "n_tokens"),
    (dict(final_acc=np.zeros((3, 2)), good=0.5, bad=0.7), "bad < good"),
])
def test_verdict_repeat_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        verdict_repeat(**kwargs)


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(good=0.5, bad=0.6), ValueError, "bad < good"),
    (dict(good=1.0), ValueError, r"RescueConfig.good must be in \(0.0, 1.0\)"),
    (dict(k_combo=0), ValueError, "k_combo"),
    (dict(k_combo=3), ValueError, "include k_combo"),
    (dict(ks=()), ValueError, "ks"),
    (dict(n_random=0), ValueError, "n_random"),
    (dict(data_seeds=()), ValueError, "data_seeds"),
    (dict(head_reduce="max"), ValueError, "head_reduce"),
    (dict(copy="gru"), TypeError, "RescueConfig.copy must be a CopyConfig"),
    (dict(control_steps=0), ValueError, r"RescueConfig.control_steps must be an int >= 1"),
    (dict(control_steps=2.5), TypeError, r"RescueConfig.control_steps must be an int"),
])
def test_rescue_config_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        RescueConfig(**kwargs)


def test_control_runs_take_their_own_step_budget():
    cfg = RescueConfig()
    assert cfg.control_steps is None and cfg.control_copy().steps == cfg.copy.steps
    ctrl = RescueConfig(control_steps=160).control_copy()
    assert ctrl.steps == 160 and ctrl.distribution == "distinct"
    assert ctrl.vocab == int(1.5 * cfg.copy.length)
    assert replace(ctrl, steps=cfg.copy.steps, distribution="permutation",
                   vocab=None) == cfg.copy  # nothing else changed
    from attn_core.chapters import ch5_multihead as ch
    assert ch.RESCUE.fast.control_copy().steps == 160


def test_rescue_config_run_uses_its_head_model():
    cfg = RescueConfig(copy=CopyConfig(length=5, embed=8, hidden=8, steps=2, batch_size=4,
                                       eval_every=2, eval_batch_size=4, cell="gru", heads=2))
    h = cfg.heads_run([[1, 2]], [0], "test").run(cache=False, progress=False)
    assert h.model.cell == "gru" and h.model.head_proj is not None and h.model.head_reduce == "mean"


def test_other_bases_are_the_numbers_the_script_wrote():
    import json
    from pathlib import Path

    from attn_core.chapters import ch5_multihead as ch

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "ch5_bases" / "bases.json"
    runs = json.loads(path.read_text())["runs"]
    good = ch.RESCUE.fast.good
    assert len(runs) == len(ch.other_bases_fast())
    for r, row in zip(runs, ch.other_bases_fast()):
        counts = []
        for kind in ("all bad", "one good"):
            v = r[kind]
            counts.append(None if v is None else
                          (sum(a > good for a in v["final_acc"]), len(v["final_acc"])))
        final = np.array(r["screen_final_acc"])
        labels = ch.RESCUE.fast.labels(final)
        rep = ch.repeat_rates(final, good, ch.RESCUE.fast.bad, n_tokens=1280)
        agree = ch.verdict_agreement(final, good)
        assert rep["decided"] == r["decided"]
        assert rep["within_noise"] / rep["decided"] == pytest.approx(r["repeat_within_noise"])
        assert row == (r["batch_size"], r["base_seed"], int((labels == "good").sum()),
                       int((labels == "bad").sum()), int((labels == "inconsistent").sum()),
                       r["decided"], rep["repeat"], round(agree["kappa"], 3),
                       float(f"{agree['p']:.3g}"), *counts)


# ------------------------------------------------------------------ the readable model
@pytest.mark.parametrize("heads, reduce, proj", [(1, "mean", True), (4, "mean", True),
                                                 (1, "sum", True), (4, "sum", True),
                                                 (4, "mean", False)])
@pytest.mark.parametrize("members", [1, 3])
def test_readable_model_computes_what_the_engine_computes(heads, reduce, proj, members):
    """MultiHeadLuong with member m's weights gives member m's logits and attention (one
    member: the engine's fused GRU; three: its batched one)."""
    from attn_core.chapters.ch5_multihead import readable_model

    engine = Seq2Seq(vocab=11, embed=6, hidden=5, heads=heads, cell="gru",
                     seeds=list(range(members)),
                     head_seeds=[[20 + heads * m + k for k in range(heads)]
                                 for m in range(members)],
                     head_proj=proj, head_reduce=reduce)
    with torch.no_grad():           # peaked attention, so that a wrong softmax axis shows
        engine.score.mul_(20)
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(0, 11, (members, 4, 7), generator=gen)
    tgt_in = torch.randint(0, 11, (members, 4, 6), generator=gen)
    out = engine(src, tgt_in)
    assert out["alpha"].max() > 0.5
    for m in range(members):
        mine = readable_model(engine, m)(src[m], tgt_in[m])
        torch.testing.assert_close(mine["logits"], out["logits"][m], atol=1e-5, rtol=0)
        torch.testing.assert_close(mine["alpha"], out["alpha"][m], atol=1e-5, rtol=0)


def test_readable_model_is_a_copy_and_checks_its_arguments():
    from attn_core.chapters.ch5_multihead import MultiHeadLuong, readable_model

    engine = Seq2Seq(vocab=9, embed=4, hidden=4, heads=2, cell="gru", seeds=[0, 1],
                     head_proj=True)
    mine = readable_model(engine, 1)
    assert torch.equal(mine.W, engine.score[1]) and torch.equal(mine.P, engine.head_proj[1])
    with torch.no_grad():
        mine.W.zero_()
    assert engine.score.abs().sum() > 0                      # the engine's weights are intact
    assert torch.equal(readable_model(Seq2Seq(vocab=9, embed=4, hidden=4, heads=2, cell="gru"))
                       .P, torch.eye(4).expand(2, 4, 4))      # no projection: P_k = I
    with pytest.raises(ValueError, match="m must be"):
        readable_model(engine, 2)
    with pytest.raises(TypeError, match="model must be a Seq2Seq"):
        readable_model(mine)
    for kwargs, name in [(dict(cell="lstm"), "cell"), (dict(bias=True), "bias"),
                         (dict(attention="uniform"), "attention"),
                         (dict(shared_embedding=False), "shared_embedding")]:
        other = Seq2Seq(vocab=9, embed=4, hidden=4, **{"cell": "gru", **kwargs})
        with pytest.raises(ValueError, match=name):
            readable_model(other)
    with pytest.raises(ValueError, match="reduce"):
        MultiHeadLuong(9, 4, 4, 2, reduce="max")
    with pytest.raises(ValueError, match="heads"):
        MultiHeadLuong(9, 4, 4, 0)


# --------------------------------------------------------- the screen draws until enough
def _fake_screen(monkeypatch, final_of):
    """HeadsRun.run returns a History whose final token accuracy is final_of(head seed)."""
    from attn_core.training import History

    calls = []

    def fake_run(self, **kw):
        heads = list(self.head_seeds)
        calls.append((heads, list(self.data_seeds)))
        acc = np.array([[0.0, final_of(h)] for h in heads])
        return History(seeds=np.zeros(len(heads), int), data_seeds=np.array(self.data_seeds),
                       train_loss=np.zeros((len(heads), 2)), eval_steps=np.array([0, 2]),
                       metrics={"token_acc": acc}, probes={}, config={"steps": 2})

    monkeypatch.setattr(HeadsRun, "run", fake_run)
    return calls


def test_screen_stops_after_one_round_when_it_has_the_heads(monkeypatch, capsys):
    cfg = RescueConfig(n_candidates=6, max_candidates=18, k_combo=2, ks=(1, 2))
    calls = _fake_screen(monkeypatch, lambda h: 1.0 if h % 2 else 0.1)   # half good
    screen = cfg.screen()
    assert [c[0] for c in calls] == [cfg.candidates()] * len(cfg.data_seeds)
    assert all(h.n_members == 6 for h in screen.values())
    out = capsys.readouterr().out
    assert "[screen] 6 candidate heads drawn (6 per round, at most 18)\n" in out
    assert "[screen] 3 good, 3 bad, 0 inconsistent\n" in out


def test_screen_draws_more_rounds_until_it_has_enough_bad_heads(monkeypatch, capsys):
    cfg = RescueConfig(n_candidates=4, max_candidates=12, k_combo=3, ks=(1, 3))
    first = cfg.candidate_offset
    # the first round's heads are all good; later heads alternate
    calls = _fake_screen(monkeypatch, lambda h: 1.0 if h < first + 4 or h % 2 else 0.1)
    screen = cfg.screen()
    drawn = screen[cfg.data_seeds[0]].n_members
    assert drawn == 12                      # rounds of 4: bad heads 2 after 8, 4 after 12
    assert [c[0] for c in calls[::len(cfg.data_seeds)]] == [
        list(range(first + 4 * r, first + 4 * r + 4)) for r in range(3)]
    labels = cfg.labels(np.stack([screen[d].metrics["token_acc"][:, -1]
                                  for d in cfg.data_seeds], axis=1))
    pools = cfg.pools(labels)
    assert pools["bad"] == [first + 4, first + 6, first + 8, first + 10]
    assert cfg.candidates(drawn) == list(range(first, first + 12))
    out = capsys.readouterr().out
    assert "[screen] 12 candidate heads drawn (4 per round, at most 12)\n" in out
    assert "[screen] 8 good, 4 bad, 0 inconsistent\n" in out


def test_screen_at_its_cap_without_enough_heads_raises_before_any_combination(monkeypatch):
    cfg = RescueConfig(n_candidates=4, max_candidates=8, k_combo=2, ks=(1, 2))
    calls = _fake_screen(monkeypatch, lambda h: 1.0)                   # never a bad head
    with pytest.raises(ValueError, match=r"drew its cap of 8 candidate heads and found 8 good "
                                         r"and 0 bad.*RescueConfig.max_candidates"):
        cfg.screen()
    assert len(calls) == 2 * len(cfg.data_seeds)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_candidates=8, max_candidates=4),
     r"RescueConfig.max_candidates must be an int >= 8"),
    (dict(n_candidates=4, k_combo=4), r"draws at most 4 candidates"),
    (dict(n_candidates=2, max_candidates=4, k_combo=4), r"draws at most 4 candidates"),
])
def test_screen_preconditions_are_checked_when_the_config_is_made(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RescueConfig(**kwargs)


def test_full_screen_can_draw_past_its_first_round():
    from attn_core.chapters import ch5_multihead as ch
    full = ch.RESCUE.full
    assert full.candidate_cap() == 240 and full.n_candidates == 80
    assert ch.RESCUE.fast.candidate_cap() == ch.RESCUE.fast.n_candidates   # fast: one round


@pytest.mark.parametrize("n_labels, ok", [(4, True), (8, True), (10, True), (1, False),
                                          (5, False), (9, False), (12, False)])
def test_pools_take_the_labels_of_whole_rounds(n_labels, ok):
    cfg = RescueConfig(n_candidates=4, max_candidates=10, k_combo=2, ks=(1, 2))
    labels = ["bad"] * n_labels
    if ok:
        assert len(cfg.pools(labels)["bad"]) == n_labels
    else:
        with pytest.raises(ValueError, match=r"labels must have one entry per candidate the "
                                             r"screen drew \(rounds of 4: \[4, 8, 10\]\)"):
            cfg.pools(labels)


def test_a_smoke_run_screens_one_round_labelled_by_rank(monkeypatch, capsys):
    """Under ATTN_MAX_STEPS two steps decide nothing: the smoke preset draws k_combo + 1
    candidates once, on the first two data streams, and the best is labelled good, the rest bad (so the chapter runs end to
    end); outside a smoke run the same accuracies are labelled by the thresholds."""
    from attn_core.chapters.ch5_multihead import RESCUE
    monkeypatch.setenv("ATTN_MODE", "full")
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    assert RESCUE.get() == RESCUE.full
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    cfg = RESCUE.get()
    assert (cfg.n_candidates, cfg.max_candidates, cfg.n_combinations, cfg.n_random) == (
        RESCUE.full.k_combo + 1, None, 1, 1)
    assert cfg.copy == RESCUE.full.copy and cfg.data_seeds == RESCUE.full.data_seeds[:2]
    first = cfg.candidate_offset
    calls = _fake_screen(monkeypatch, lambda h: 0.02 + 0.001 * ((h - first) % 5))
    screen = cfg.screen()
    assert len(calls) == len(cfg.data_seeds)                       # one round
    final = np.stack([screen[d].metrics["token_acc"][:, -1] for d in cfg.data_seeds], 1)
    labels = cfg.labels(final)
    assert list(labels).count("good") == 1 and labels[4] == "good"  # the best: 0.024
    assert cfg.enough_heads(labels)
    assert "labelled by rank" in capsys.readouterr().out
    monkeypatch.delenv("ATTN_MAX_STEPS")
    assert set(cfg.labels(final)) == {"bad"}                        # the thresholds


# ------------------------------------------------------------------ the chapter's statistics
def test_head_rate_counts_heads_not_runs():
    from attn_core.chapters.ch5_multihead import head_rate
    from attn_core.metrics import wilson_interval

    # one head per row: two heads good on both streams, one on one stream, one on none
    final = np.array([[0.99, 0.99], [0.99, 0.98], [0.99, 0.5], [0.5, 0.5]])
    p, lo, hi = head_rate(final, 0.95)
    assert p == pytest.approx(2.5 / 4)
    # the streams of a head are not independent: the interval is over 4 heads, not 8 runs
    two = np.array([[0.99, 0.99], [0.99, 0.99], [0.5, 0.5], [0.5, 0.5]])
    assert head_rate(two, 0.95)[1:] == pytest.approx(wilson_interval(2, 4))
    assert head_rate(two, 0.95)[2] - head_rate(two, 0.95)[1] > np.subtract(
        *wilson_interval(4, 8)[::-1])
    assert head_rate(np.full((16, 2), 0.05), 0.95)[:2] == (0.0, 0.0)   # untrained


def test_rate_difference_is_newcombes_hybrid_score_interval():
    from attn_core.chapters.ch5_multihead import rate_difference
    from attn_core.metrics import success_rate

    # Newcombe (1998), Statistics in Medicine 17:873, Table II, method 10: 56/70 - 48/80
    # gives 0.0524 to 0.3339, and 9/10 - 3/10 gives 0.1705 to 0.8090
    for (k1, n1, k2, n2), want in [((56, 70, 48, 80), (0.0524, 0.3339)),
                                   ((9, 10, 3, 10), (0.1705, 0.8090))]:
        a, b = success_rate(np.arange(n1) < k1), success_rate(np.arange(n2) < k2)
        d, lo, hi = rate_difference(a, b)
        assert d == pytest.approx(k1 / n1 - k2 / n2)
        assert (lo, hi) == pytest.approx(want, abs=1e-4)
    # two untrained rates: an interval around 0, whose lower end fails "> 0"
    none = success_rate(np.zeros(5, bool))
    assert rate_difference(none, none)[1] < 0 < rate_difference(none, none)[2]


def test_rescue_prediction_carries_the_interval():
    from attn_core.chapters.ch5_multihead import rescue_prediction

    pred = rescue_prediction((0.5, 0.25, 0.75), 2)
    assert pred == pytest.approx((0.75, 1 - 0.75 ** 2, 1 - 0.25 ** 2))
    assert rescue_prediction((0.0, 0.0, 0.2), 4)[0] == 0.0


def test_verdict_agreement_needs_a_split_that_repeats():
    from attn_core.chapters.ch5_multihead import verdict_agreement
    from attn_core.metrics import fisher_exact

    def _fisher_greater(t):
        return fisher_exact(t[0][0], sum(t[0]), t[1][0], sum(t[1]), alternative="greater")

    assert _fisher_greater([[3, 1], [1, 3]]) == pytest.approx(17 / 70)   # the tea-tasting lady
    assert _fisher_greater([[7, 1], [0, 8]]) == pytest.approx(8 / 11440)
    # chapter 5's stored screen: 7 heads good on both streams, 1 on the first only, 8 on none
    final = np.array([[0.99, 0.99]] * 7 + [[0.99, 0.5]] + [[0.5, 0.5]] * 8)
    r = verdict_agreement(final, 0.95)
    assert r["table"] == [[7, 1], [0, 8]] and r["kappa"] == pytest.approx(0.875)
    # an untrained screen fails every head on every stream: every verdict "repeats", but the
    # agreement beyond chance is 0 and nothing is significant
    untrained = verdict_agreement(np.full((16, 2), 0.05), 0.95)
    assert untrained["kappa"] == 0.0 and untrained["p"] == 1.0
    # verdicts that are the data order's, not the head's: kappa near 0 on average
    rng = np.random.default_rng(0)
    shuffled = [verdict_agreement(np.where(rng.random((16, 2)) < 0.5, 0.99, 0.5),
                                  0.95)["kappa"] for _ in range(200)]
    assert abs(np.mean(shuffled)) < 0.05
    # with three streams the weakest pair counts
    three = np.column_stack([final, final[::-1, 0]])
    assert verdict_agreement(three, 0.95)["kappa"] < r["kappa"]


def test_repeat_rates_take_each_thresholds_own_noise():
    from attn_core.chapters.ch5_multihead import repeat_rates

    final = np.array([[0.99, 0.94],     # good, then 0.01 below 0.95: within 0.018
                      [0.50, 0.63],     # bad, then 0.03 above 0.6: within 0.041, not 0.018
                      [0.50, 0.66],     # bad, then 0.06 above: not within noise
                      [0.99, 0.50]])    # a flip
    r = repeat_rates(final, 0.95, 0.6, n_tokens=1280)
    assert r["tol_good"] == pytest.approx(3 * np.sqrt(0.95 * 0.05 / 1280))
    assert r["tol_bad"] == pytest.approx(3 * np.sqrt(0.6 * 0.4 / 1280))
    assert (r["decided"], r["repeat"], r["within_noise"], r["flips"]) == (4, 0, 2, 1)


def test_diagonal_heads():
    from attn_core.chapters.ch5_multihead import diagonal_heads

    acc = np.array([[[0.1, 0.1], [0.6, 0.2], [0.4, 0.9]]])    # 1 run, 3 evaluations, K = 2
    assert diagonal_heads(acc, 0).tolist() == [[False, False]]
    assert diagonal_heads(acc, 1).tolist() == [[True, False]]
    assert diagonal_heads(acc, -1).tolist() == [[True, True]]


def _stored_chapter():
    """The chapter's stored histories (no training): screen, combinations, random K."""
    from attn_core.chapters import ch5_multihead as ch
    from attn_core.stored import load_entry

    cfg = ch.RESCUE.fast
    screen = {d: load_entry(c) for d, c in zip(cfg.data_seeds, ch.screen_configs(cfg))}
    final = np.stack([screen[d].metrics["token_acc"][:, -1] for d in cfg.data_seeds], 1)
    runs = ch.combination_configs(cfg, cfg.labels(final))
    combos = {k: load_entry(runs[k]) for k in ch.COMBINATION_KINDS}
    randoms = {k: load_entry(runs[f"random K={k}"]) for k in cfg.ks if 1 < k != cfg.k_combo}
    randoms[cfg.k_combo] = combos["random"]
    return cfg, screen, combos, randoms


def _findings_hold(F) -> dict:
    """The findings of the notebook's claims cell, with its thresholds."""
    won, diag = F["good_head_diagonal"]
    n_won, won_diag = F["success_has_diagonal"]
    n_diag, diag_won = F["diagonal_succeeds"]
    return {"kappa": F["agreement"]["kappa"] >= 0.6, "fisher": F["agreement"]["p"] <= 0.01,
            "split": F["split"], "rescue": F["rescue"][1] > 0,
            "one good": F["rates"]["one good"][0] >= 2 / 3,
            "random": F["rates"]["random"][0] >= 0.8, "more heads": F["more_heads"][1] > 0,
            "good head diagonal": won > 0 and diag == won,
            "success has a diagonal head": n_won > 0 and won_diag == n_won,
            "a diagonal head succeeds": n_diag > 0
            and diag_won / n_diag >= DIAGONAL_SUCCEEDS_MIN["fast"]}


def test_trained_models_pass_every_finding_and_untrained_ones_fail_each():
    """Chapter 5's findings on the stored runs: every one holds at the end of training, and
    every one fails at step 0 (the untrained models, the value the claims table shows)."""
    from attn_core.chapters import ch5_multihead as ch

    cfg, screen, combos, randoms = _stored_chapter()
    trained = _findings_hold(ch.rescue_findings(cfg, screen, combos, randoms))
    untrained = _findings_hold(ch.rescue_findings(cfg, screen, combos, randoms, at=0))
    assert all(trained.values()), trained
    assert not any(untrained.values()), untrained
    F = ch.rescue_findings(cfg, screen, combos, randoms)
    assert F["agreement"]["table"] == [[7, 1], [0, 8]]
    assert F["good_head_diagonal"] == (4, 4) and F["diagonal_iff_success"] == (20, 20, 13)
    assert F["success_has_diagonal"] == (13, 13) and F["diagonal_succeeds"] == (13, 13)


def test_random_heads_alone_are_the_random_combinations_heads():
    from attn_core.chapters import ch5_multihead as ch

    cfg, _, combos, randoms = _stored_chapter()
    runs = ch.random_heads_alone_runs(cfg)
    seeds = [h for h, _, _ in ch.random_heads_alone()]
    assert [list(r.head_seeds) for r in runs] == [seeds] * len(cfg.data_seeds)
    assert [r.data_seeds[0] for r in runs] == list(cfg.data_seeds)
    k4 = [s for c in ch.combination_configs(cfg, ["good", "bad", "bad", "bad", "bad"] + [
        "inconsistent"] * 11)["random"].head_seeds for s in c]
    assert seeds[:20] == k4
    accs = np.array([a for _, *a in ch.random_heads_alone()])
    assert (np.abs(accs - cfg.good) > 0.001).all() and (np.abs(accs - cfg.bad) > 0.001).all()


# ------------------------------------------------------ the model diagram and the sliders
def test_model_diagram_shows_every_box_readably():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from attn_core.chapters import ch5_multihead as ch
    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt

    fig = ch.model_diagram()
    try:
        assert isinstance(fig, Figure)
        texts = {t.get_text() for t in fig.findobj(Text)}
        for name, (_, _, label, _) in ch._DIAGRAM_BOXES.items():
            assert label in texts, f"box {name!r} ({label!r}) is not drawn"
        assert {"$W_1,\\ P_1$", "$W_K,\\ P_K$"} <= {line for t in texts
                                                     for line in t.splitlines()}
        pt = rendered_text_pt(fig)
        assert pt["desktop"] >= MIN_TEXT_PT and pt["phone"] >= MIN_TEXT_PT
    finally:
        plt.close(fig)


#: The chapter's measured rates (fast mode, §4): p̂ over 16 heads, K = 2 and 4 random heads.
MEASURED = {1: (0.46875, 0.2551, 0.6945), 2: (0.8, 0.3755, 0.9638), 4: (1.0, 0.5655, 1.0)}


def _at_least_one_good(p, K):
    """P(at least one of K independent heads is good), summed over the binomial counts."""
    from math import comb

    return sum(comb(K, j) * p ** j * (1 - p) ** (K - j) for j in range(1, K + 1))


@pytest.mark.parametrize("p", [0.0, 0.05, 0.3, 0.47, 0.5, 0.8, 0.95, 1.0])
def test_rescue_curve_is_the_chance_of_at_least_one_good_head(p):
    from attn_core.chapters.ch5_multihead import rescue_curve

    ks = [1, 2, 3, 4, 8]
    got = rescue_curve(p, ks)
    np.testing.assert_allclose(got, [_at_least_one_good(p, k) for k in ks], atol=1e-12)
    assert got[0] == pytest.approx(p)                       # one head: p itself
    if 0 < p < 1:
        assert (np.diff(got) > 0).all()                     # more heads, more success


def test_rescue_curve_moves_with_p_over_the_sliders_range():
    from attn_core.chapters.ch5_multihead import RESCUE_SLIDER, rescue_curve

    assert RESCUE_SLIDER[0] == 0.05 and RESCUE_SLIDER[-1] == 0.95
    curves = np.array([rescue_curve(p, [1, 2, 4]) for p in RESCUE_SLIDER])
    assert (np.diff(curves, axis=0) > 0).all()              # every K rises with p
    assert rescue_curve(0.0, [4])[0] == 0 and rescue_curve(1.0, [4])[0] == 1


def test_rescue_fit_counts_the_intervals_the_prediction_meets():
    from attn_core.chapters.ch5_multihead import RESCUE_SLIDER, rescue_fit

    seen = set()
    for p in (0.0, *RESCUE_SLIDER, 1.0):
        f = rescue_fit(p, MEASURED)
        assert f["ks"].tolist() == [1, 2, 4]
        want = [lo <= _at_least_one_good(p, k) <= hi for k, (_, lo, hi) in MEASURED.items()]
        assert f["inside"].tolist() == want and f["n_inside"] == sum(want)
        np.testing.assert_allclose(f["predicted"], [_at_least_one_good(p, k)
                                                    for k in MEASURED], atol=1e-12)
        seen.add(f["n_inside"])
    assert seen == {0, 1, 2, 3}                  # the count changes as p moves
    # p_range: the p that meet every interval, from each interval's ends inverted
    lo, hi = rescue_fit(0.5, MEASURED)["p_range"]
    inverted = [(1 - (1 - a) ** (1 / k), 1 - (1 - b) ** (1 / k))
                for k, (_, a, b) in MEASURED.items()]
    assert lo == pytest.approx(max(a for a, _ in inverted)) == 0.2551
    assert hi == pytest.approx(min(b for _, b in inverted)) == 0.6945
    for p in np.linspace(0, 1, 401):
        assert (rescue_fit(p, MEASURED)["n_inside"] == 3) == (lo - 1e-9 <= p <= hi + 1e-9)
    assert rescue_fit(0.5, {1: (0.1, 0.0, 0.2), 2: (0.9, 0.8, 1.0)})["p_range"] is None


def test_draw_rescue_frames_differ_are_readable_and_fast():
    import time

    import matplotlib.pyplot as plt

    from attn_core.chapters import ch5_multihead as ch
    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style

    set_style()          # the book's style, as in the notebook
    titles = []
    for p in (ch.RESCUE_SLIDER[0], 0.47, ch.RESCUE_SLIDER[-1]):
        t0 = time.perf_counter()
        fig = ch.draw_rescue(p, MEASURED)
        assert time.perf_counter() - t0 < 1.0
        ax = fig.axes[0]
        titles.append(ax.get_title())
        assert f"{p:.2f}" in titles[-1]
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"][0]
        np.testing.assert_allclose(dashed.get_ydata(), [_at_least_one_good(p, k)
                                                        for k in (1, 2, 3, 4)])
        pt = rendered_text_pt(fig)
        assert min(pt["desktop"], pt["phone"]) >= MIN_TEXT_PT
        plt.close(fig)
    assert "inside 0 of 3" in titles[0] and "inside 3 of 3" in titles[1]
    assert ch.show_rescue(0.5, MEASURED) is None
    plt.close("all")


@pytest.mark.parametrize("call, err, match", [
    (lambda ch: ch.rescue_curve(-0.1, [1]), ValueError, "p must be"),
    (lambda ch: ch.rescue_curve(1.5, [1]), ValueError, "p must be"),
    (lambda ch: ch.rescue_curve("0.5", [1]), TypeError, "p must be"),
    (lambda ch: ch.rescue_curve(0.5, "12"), TypeError, "ks must be"),
    (lambda ch: ch.rescue_curve(0.5, 4), TypeError, "ks must be"),
    (lambda ch: ch.rescue_curve(0.5, []), ValueError, "ks must hold"),
    (lambda ch: ch.rescue_curve(0.5, [0]), ValueError, r"ks\[0\]"),
    (lambda ch: ch.rescue_curve(0.5, [2.0]), TypeError, r"ks\[0\]"),
    (lambda ch: ch.rescue_fit(0.5, {}), TypeError, "measured must be"),
    (lambda ch: ch.rescue_fit(0.5, [(1, 0.5, 0.4, 0.6)]), TypeError, "measured must be"),
    (lambda ch: ch.rescue_fit(0.5, {0: (0.5, 0.4, 0.6)}), ValueError, "measured's keys"),
    (lambda ch: ch.rescue_fit(0.5, {2: (0.5, 0.6)}), TypeError, r"measured\[2\]"),
    (lambda ch: ch.rescue_fit(0.5, {2: (0.5, 0.6, 0.7)}), ValueError, r"measured\[2\]"),
    (lambda ch: ch.rescue_fit(0.5, {2: (1.2, 0.6, 1.3)}), ValueError, r"measured\[2\]"),
    (lambda ch: ch.draw_rescue(2, MEASURED), ValueError, "p must be"),
    (lambda ch: ch.labels_at(np.zeros((3, 2)), 0.95, 0.96), ValueError, "bad < good"),
    (lambda ch: ch.labels_at(np.zeros(3), 0.95, 0.6), ValueError, "final_acc"),
    (lambda ch: ch.draw_labels_at(np.zeros((3, 1)), 0.95, 0.6), ValueError, "final_acc"),
])
def test_slider_functions_bad_arguments(call, err, match):
    from attn_core.chapters import ch5_multihead as ch

    with pytest.raises(err, match=match):
        call(ch)


#: The chapter's screen (fast mode, base 0): each head's final accuracy on streams 0 and 1.
SCREEN = np.array([[0.6, 0.622], [0.534, 0.584], [1.0, 1.0], [0.559, 0.599], [1.0, 1.0],
                   [0.534, 0.552], [1.0, 1.0], [0.999, 0.514], [1.0, 1.0], [0.998, 1.0],
                   [1.0, 0.997], [1.0, 0.999], [0.524, 0.537], [0.591, 0.601],
                   [0.627, 0.651], [0.485, 0.517]])


def test_labels_at_over_the_bad_sliders_range():
    """Exercise 5.2's answer slider: the labels and the repeat, counted head by head."""
    from attn_core.chapters.ch5_multihead import BAD_SLIDER, labels_at

    assert BAD_SLIDER[0] == 0.5 and BAD_SLIDER[-1] == 0.9 and 0.6 in BAD_SLIDER
    n_bad = []
    for bad in BAD_SLIDER:
        r = labels_at(SCREEN, 0.95, bad)
        want = ["good" if min(a) > 0.95 else "bad" if max(a) < bad else "inconsistent"
                for a in SCREEN]
        assert r["labels"].tolist() == want
        assert r["counts"] == {k: want.count(k) for k in ("good", "bad", "inconsistent")}
        first = ["good" if a[0] > 0.95 else "bad" if a[0] < bad else None for a in SCREEN]
        decided = [(v, a[1]) for v, a in zip(first, SCREEN) if v]
        assert r["decided"] == len(decided)
        assert r["repeat"] == sum((a > 0.95) if v == "good" else (a < bad)
                                  for v, a in decided)
        n_bad.append(r["counts"]["bad"])
    assert n_bad == sorted(n_bad) and n_bad[0] < n_bad[-1]     # it moves with the slider
    at = {bad: labels_at(SCREEN, 0.95, bad) for bad in (0.6, 0.7)}
    assert at[0.6]["counts"] == {"good": 7, "bad": 5, "inconsistent": 4}
    assert at[0.7]["counts"] == {"good": 7, "bad": 8, "inconsistent": 1}
    assert (at[0.6]["repeat"], at[0.6]["decided"]) == (12, 14)
    assert (at[0.7]["repeat"], at[0.7]["decided"]) == (15, 16)


def test_draw_labels_at_frames_differ_are_readable_and_fast():
    import time

    import matplotlib.pyplot as plt

    from attn_core.chapters import ch5_multihead as ch
    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style

    set_style()          # the book's style, as in the notebook
    titles = []
    for bad in (ch.BAD_SLIDER[0], 0.7, ch.BAD_SLIDER[-1]):
        t0 = time.perf_counter()
        fig = ch.draw_labels_at(SCREEN, 0.95, bad)
        assert time.perf_counter() - t0 < 1.0
        ax = fig.axes[0]
        titles.append(ax.get_title())
        dots = sum(len(c.get_offsets()) for c in ax.collections)
        assert dots == SCREEN.size                       # one dot per head and stream
        pt = rendered_text_pt(fig)
        assert min(pt["desktop"], pt["phone"]) >= MIN_TEXT_PT
        plt.close(fig)
    assert len(set(titles)) == 3 and "8 bad" in titles[1]


def test_control_run_is_the_bad_heads_alone_on_the_control_task():
    from attn_core.chapters import ch5_multihead as ch
    cfg = ch.RESCUE.fast
    run = cfg.control_run([3, 7])
    assert run == cfg.heads_run([3, 7], [0, 0], "heads-control", copy=cfg.control_copy())
    assert run.copy.distribution == "distinct" and run.copy.steps == cfg.control_steps
    with pytest.raises(ValueError, match=r"^bad_heads must name at least one head seed"):
        cfg.control_run([])


def test_diagonal_counts_counts_both_directions_and_refuses_bad_outcomes():
    from attn_core.chapters.ch5_multihead import diagonal_counts
    won = np.array([True, True, False, False])
    diag = np.array([True, False, True, False])
    c = diagonal_counts([(won, diag), (np.array([True]), np.array([True]))])
    assert c == {"diagonal_iff_success": (5, 3, 3), "success_has_diagonal": (3, 2),
                 "diagonal_succeeds": (3, 2)}
    assert diagonal_counts([]) == {"diagonal_iff_success": (0, 0, 0),
                                   "success_has_diagonal": (0, 0),
                                   "diagonal_succeeds": (0, 0)}
    with pytest.raises(TypeError, match=r"outcomes must hold \(won, diag\) pairs"):
        diagonal_counts([won])
    with pytest.raises(TypeError, match=r"outcomes\[0\] won must be a bool mask"):
        diagonal_counts([(won.astype(int), diag)])
    with pytest.raises(ValueError, match=r"outcomes\[0\] diag"):
        diagonal_counts([(won, diag[:3])])
    with pytest.raises(ValueError, match=r"outcomes\[0\] must be 1-D"):
        diagonal_counts([(won[None], diag[None])])
