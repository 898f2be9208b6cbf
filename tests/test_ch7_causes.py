"""Chapter 7's causes (issue #53 items 3-4): the task options that remove the confounds and
tell counting from competition, the step-index model, the loss weights and per-step masks
of the models, and the tables the chapter reads from the cause runs."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attn_core.chapters import ch7_end_token as ch
from attn_core.data import CopyTask
from attn_core.models import Seq2Seq


def _task(**kw) -> ch.CauseTask:
    return ch.CauseTask(length=6, eos=kw.pop("eos", True), **kw)


def _batch(task, n=4, seed=0):
    return task.sample(torch.Generator().manual_seed(seed), n)


def test_a_cause_task_at_its_defaults_is_the_copy_task_bitwise():
    for eos in (True, False):
        a, b = _batch(_task(eos=eos)), _batch(CopyTask(length=6, eos=eos))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        assert _task(eos=eos).model_vocab == CopyTask(length=6, eos=eos).model_vocab


def test_the_spare_word_gives_none_the_sizes_and_start_symbol_of_the_end_token():
    spare, both, none = _task(eos=False, spare_word=True), _task(), _task(eos=False)
    assert spare.model_vocab == both.model_vocab == none.model_vocab + 1
    assert spare.bos == both.bos
    a, b = _batch(spare), _batch(none)
    assert torch.equal(a["src"], b["src"]) and torch.equal(a["tgt"], b["tgt"])
    assert (a["tgt_in"][:, 0] == both.bos).all() and (a["src"] < spare.vocab).all()


def test_the_padded_none_starts_every_seed_where_both_does():
    both = ch.long_config("both, L=20")
    for row in ("none, padded", "step index", "front word", "none, step index"):
        cfg = ch.cause_config(row)
        ma = both.model_fn(both.task())(seeds=[3])
        mb = cfg.model_fn(cfg.task())(seeds=[3])
        pa, pb = dict(ma.named_parameters()), dict(mb.named_parameters())
        assert all(torch.equal(pa[k], pb[k]) for k in pa), row
        assert set(pb) - set(pa) == ({"step_emb"} if cfg.step_input else set())
    # the plain "none" has one word fewer: its parameters start elsewhere
    none = ch.long_config("none, L=20")
    mc = dict(none.model_fn(none.task())(seeds=[3]).named_parameters())
    assert not torch.equal(mc["combine.weight"], pa["combine.weight"])
    assert ch.shares_start("none, padded", "both, L=20")
    assert not ch.shares_start("none, L=20", "both, L=20")
    assert not ch.shares_start("other data", "both, L=20")
    assert not ch.shares_start("other init", "both, L=20")


def test_the_front_word_comes_first_from_no_source_position():
    t = _task(eos=False, spare_word=True, front_word=True)
    a, plain = _batch(t), _batch(_task(eos=False))
    assert (a["tgt"][:, 0] == t.vocab).all() and torch.equal(a["tgt"][:, 1:], plain["tgt"])
    assert (a["tgt_in"][:, 0] == t.bos).all() and torch.equal(a["tgt_in"][:, 1:],
                                                               a["tgt"][:, :-1])
    assert torch.equal(a["align"][:, 1:], plain["align"])
    assert not a["align_mask"][:, 0].any() and a["align_mask"][:, 1:].all()


def test_the_end_weight_weights_the_end_steps_loss_in_a_weighted_mean():
    t = _task(end_weight=3.0)
    b = _batch(t)
    ends = b["tgt"] == t.vocab
    assert ends[:, -1].all() and ends.sum() == ends.shape[0]
    assert (b["loss_weight"][ends] == 3).all() and (b["loss_weight"][~ends] == 1).all()
    assert "loss_weight" not in _batch(_task(end_weight=1.0))
    m = Seq2Seq(t.model_vocab, 8, 8, seeds=[0, 1])
    stacked = {k: torch.stack([v, v]) for k, v in b.items()}
    logits = m(stacked["src"], stacked["tgt_in"])["logits"]
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, 2), stacked["tgt"].flatten(),
                                           reduction="none").view(2, -1)
    w = stacked["loss_weight"].flatten(1)
    assert torch.allclose(m.loss(stacked), (ce * w).sum(1) / w.sum(1))
    assert not torch.allclose(m.loss(stacked), ce.mean(1))
    plain = {k: v for k, v in stacked.items() if k != "loss_weight"}
    assert torch.allclose(m.loss(plain), ce.mean(1))
    with pytest.raises(TypeError, match="loss_weight"):
        m.loss({**stacked, "loss_weight": stacked["loss_weight"].long()})
    with pytest.raises(ValueError, match="loss_weight"):
        m.loss({**stacked, "loss_weight": stacked["loss_weight"][..., :-1]})


def test_masking_the_words_steps_keeps_the_end_steps_view_of_the_end_token():
    t = _task(mask_end_words=True)
    b = _batch(t)
    B, T = b["tgt"].shape
    L1 = b["src"].shape[1]
    assert b["src_mask"].shape == (B, T, L1)
    assert not b["src_mask"][:, :-1, -1].any() and b["src_mask"][:, -1, -1].all()
    assert b["src_mask"][:, :, :-1].all()
    m = Seq2Seq(t.model_vocab, 8, 8, seeds=[0])
    s = {k: v[None] for k, v in b.items()}
    alpha = m(s["src"], s["tgt_in"], src_mask=s["src_mask"])["alpha"]
    assert (alpha[..., :-1, -1] == 0).all() and (alpha[..., -1, -1] > 0).all()
    with pytest.raises(ValueError, match="src_mask"):
        m(s["src"], s["tgt_in"], src_mask=s["src_mask"][:, :, :-1])


def test_the_step_index_model_reads_its_step_and_refuses_too_many():
    base = Seq2Seq(10, 8, 8, seeds=[0, 1])
    step = ch.StepSeq2Seq(10, 8, 8, seeds=[0, 1], max_steps=5)
    pb = dict(base.named_parameters())
    assert all(torch.equal(p, pb[k]) for k, p in step.named_parameters() if k != "step_emb")
    assert step.step_emb.shape == (2, 5, 8)
    src = torch.randint(0, 9, (2, 3, 4))
    tgt = torch.randint(0, 9, (2, 3, 5))
    assert not torch.allclose(step(src, tgt)["logits"], base(src, tgt)["logits"])
    with torch.no_grad():
        step.step_emb.zero_()
    assert torch.allclose(step(src, tgt)["logits"], base(src, tgt)["logits"])
    with pytest.raises(ValueError, match="max_steps"):
        step(src, torch.randint(0, 9, (2, 3, 6)))
    with pytest.raises(ValueError, match="max_steps"):
        ch.StepSeq2Seq(10, 8, 8, max_steps=0)


@pytest.mark.parametrize("kw, err, match", [
    ({"eos": True, "spare_word": True}, ValueError, "spare_word"),
    ({"eos": False, "front_word": True}, ValueError, "front_word"),
    ({"eos": False, "spare_word": True, "front_word": True, "start": True}, ValueError,
     "front_word"),
    ({"end_weight": 0.0}, ValueError, "end_weight"),
    ({"end_weight": math.inf}, ValueError, "end_weight"),
    ({"end_weight": math.nan}, ValueError, "end_weight"),
    ({"end_weight": "3"}, TypeError, "end_weight"),
    ({"eos": False, "end_weight": 2.0}, ValueError, "end_weight"),
    ({"end_weight": 2.0, "end_loss": False}, ValueError, "end_weight"),
    ({"mask_end_words": True, "eos_side": "source"}, ValueError, "mask_end_words"),
    ({"mask_end_words": True, "mask_end": True}, ValueError, "mask_end_words"),
    ({"spare_word": 1, "eos": False}, TypeError, "spare_word"),
])
def test_a_cause_task_refuses_options_that_do_not_combine(kw, err, match):
    with pytest.raises(err, match=match):
        _task(**kw)


def test_a_cause_config_names_its_bad_fields():
    cfg = ch.cause_config("end weight 3")
    with pytest.raises(ValueError, match="CauseConfig.end_weight"):
        replace(cfg, end_weight=-1.0)
    with pytest.raises(ValueError, match="CauseConfig.data_seeds"):
        replace(cfg, data_seeds=(1, 2))
    with pytest.raises(ValueError, match="CauseConfig.optimizer"):
        replace(cfg, optimizer="rmsprop")
    with pytest.raises(TypeError, match="CauseConfig.step_input"):
        replace(cfg, step_input=1)
    with pytest.raises(ValueError, match="row"):
        ch.cause_config("no such row")
    with pytest.raises(ValueError, match="first runs"):
        ch.cause_config("other init", seeds=[0])


def test_crossed_runs_draw_their_data_from_their_data_seeds():
    cfg = replace(ch.cause_config("other data"), steps=3, eval_every=1)
    two = cfg.first_members(2)
    assert two.seeds == (0, 1) and two.data_seeds == (1000, 1001)
    assert ch.cause_config("other init", seeds=[1000, 1001]) == \
        ch.cause_config("other init").first_members(2)
    h = two.run(progress=False, cache=False)
    assert list(h.data_seeds) == [1000, 1001] and list(h.seeds) == [0, 1]
    # data seeds equal to the model seeds: the engine's default, bitwise
    same = replace(two, data_seeds=(0, 1)).run(progress=False, cache=False)
    plain = replace(ch.long_config("both, L=20", seeds=[0, 1]), steps=3,
                    eval_every=1).run(progress=False, cache=False)
    assert np.array_equal(same.train_loss, plain.train_loss)
    assert not np.array_equal(h.train_loss, plain.train_loss)


def test_the_sgd_rows_train_with_plain_gradient_steps():
    cfg = replace(ch.cause_config("none, padded").first_members(1), steps=2, eval_every=1,
                  optimizer="sgd", lr=0.5)
    assert cfg.train_kwargs()["optimizer"] == "sgd"
    adam = replace(cfg, optimizer="adam", lr=0.5).run(progress=False, cache=False)
    sgd = cfg.run(progress=False, cache=False)
    assert sgd.train_loss[0, 0] == adam.train_loss[0, 0]         # the same first batch
    assert sgd.train_loss[0, 1] != adam.train_loss[0, 1]


# ----------------------------------------------------------------- the chapter's tables
def _row(acc, steps=(0, 100, 200, 300, 400)):
    return {"eval_steps": list(steps), "copy_acc": [list(a) for a in acc],
            "token_acc": [list(a) for a in acc]}


def test_upto_cuts_a_row_to_its_first_steps():
    r = _row([[0, 0.5, 0.96, 1, 1]] * 3)
    cut = ch.upto(r, 250)
    assert cut["eval_steps"] == [0, 100, 200]
    assert np.array(cut["copy_acc"]).shape == (3, 3) and cut["token_acc"][0] == [0, .5, .96]
    assert r["eval_steps"] == [0, 100, 200, 300, 400]            # the row is not changed
    with pytest.raises(TypeError, match="row"):
        ch.upto([1, 2], 100)
    with pytest.raises(ValueError, match="step"):
        ch.upto(r, -1)


def test_upto_on_the_long_runs_is_the_sweeps_budget():
    long, rows = ch.load_long(), ch.load_sweep()
    for name in ("both, L=20", "none, L=20"):
        cut = ch.upto(long[name], 300)
        assert cut["eval_steps"] == rows[name]["eval_steps"]
        assert np.array_equal(cut["copy_acc"], rows[name]["copy_acc"])


def _cause_rows(**override):
    early, late, never = [0, .96, 1, 1, 1], [0, 0, 0, .4, .99], [0, .3, .4, .5, .6]
    base = {n: _row([late] * 8) for n in (*ch.CAUSE_ROWS, "both, L=20", "none, L=20")}
    for name, acc in override.items():
        base[name] = _row(acc)
    return base, early, late, never


def test_the_cause_table_pairs_rows_that_share_their_start_and_corrects_the_family():
    rows, early, late, never = _cause_rows()
    rows["none, padded"] = _row([early] * 8)
    rows["none, L=20"] = _row([never] * 8)
    out = ch.cause_table(rows, [("none, padded", "both, L=20"),
                                ("none, padded", "none, L=20")], short=300)
    a, b = out
    assert a["paired"] and not b["paired"]
    assert (a["a_short"], a["b_short"], a["a_end"], a["b_end"]) == (8, 0, 8, 8)
    assert a["test_short"] == "McNemar" and a["test_time"] == "paired order"
    assert a["p_short"] == pytest.approx(2 / 2 ** 8) == a["p_time"]
    assert b["test_short"] == "Fisher" and b["test_time"] == "log-rank"
    assert a["a_median"] == 100 and a["b_median"] == 400 and b["b_median"] is None
    ps = [a["p_short"], a["p_time"], b["p_short"], b["p_time"]]
    adjusted = [a["p_short_holm"], a["p_time_holm"], b["p_short_holm"], b["p_time_holm"]]
    assert all(q >= p for p, q in zip(ps, adjusted)) and max(adjusted) <= 1
    assert min(adjusted) == pytest.approx(min(ps) * 4)
    text = ch.format_cause_table(out)
    assert max(len(line) for line in text.splitlines()) <= 76 and "8:0" in text
    with pytest.raises(ValueError, match="step index"):
        ch.cause_table({k: v for k, v in rows.items() if k != "step index"})


def test_the_counting_test_is_the_difference_of_the_two_costs_seed_by_seed():
    rows, early, late, never = _cause_rows()
    # without the step index the end token costs every run; with it, half of them
    rows["none, padded"] = _row([early] * 8)
    rows["both, L=20"] = _row([late] * 8)
    rows["none, step index"] = _row([early] * 8)
    rows["step index"] = _row([early] * 4 + [late] * 4)
    t = ch.counting_test(rows, resamples=2000)
    assert (t["cost_plain"], t["cost_index"], t["did"], t["ratio"]) == (1.0, 0.5, 0.5, 0.5)
    lo, hi = t["did_ci"]
    assert 0 < lo <= 0.5 <= hi < 1
    assert ch.counting_test(rows, resamples=2000) == t                    # seeded
    rows["step index"] = _row([late] * 8)                                 # no rescue
    assert ch.counting_test(rows, resamples=2000)["did"] == 0.0
    with pytest.raises(ValueError, match="resamples"):
        ch.counting_test(rows, resamples=10)


def test_init_or_data_correlates_the_times_of_the_runs_that_share_a_seed():
    steps = (0, 100, 200, 300, 400)
    ladder = [[0] * i + [0.99] * (5 - i) for i in range(1, 5)] * 3      # 12 runs, times vary
    rows = {"both, L=20": _row(ladder, steps), "other data": _row(ladder, steps),
            "other init": _row(ladder[::-1], steps)}
    out = ch.init_or_data(rows, permutations=2000)
    assert out["same_init"]["rho"] == pytest.approx(1.0)
    assert out["same_init"]["p"] < 0.01
    assert out["same_data"]["rho"] < 1 and out["same_data"]["p"] > out["same_init"]["p"]


def test_the_ablation_table_at_L40_holds_the_conditions_trained_there():
    groups = dict(ch._groups(40))
    assert [n for g in groups.values() for n in g] == ["none", "both", "source", "target",
                                                      "masked", "no end loss"]
    assert set(ch.L40_CAUSES) < {n for g in groups.values() for n in g}
    with pytest.raises(ValueError, match="length"):
        ch._groups(10)
    steps = list(range(0, 620, 20))
    rows = {ch.row_name(n, 40): _row([[0] * 30 + [0.99]] * 40 if n == "none"
                                     else [[0] * 31] * 40, steps)
            for g in groups.values() for n in g}
    tests = ch.ablation_tests(rows, length=40)
    assert len(tests) == 1 + 4 * 2                       # the references once, then each
    ref = next(t for t in tests if t["row"] == "both" and t["ref"] == "none")
    assert ref["a"]["k"] == 0 and ref["b"]["k"] == 40 and not ref["paired"]
    src = next(t for t in tests if t["row"] == "source" and t["ref"] == "both")
    assert src["paired"] and src["p"] == 1.0
    text = ch.ablation_table(rows, length=40)
    assert "source only" in text and "start" not in text and "9 tests" in text


def test_the_cause_figures_draw_the_stored_rows_with_their_labels():
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    causes = ch.cause_rows(ch.load_causes(), ch.load_long())
    fig = ch.draw_causes(causes)
    top, bottom = fig.axes[:2]
    assert [t.get_text() for t in top.get_legend().get_texts()][-1] == "front word"
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["none", "0.1", "0.3",
                                                                        "1", "3"]
    plt.close(fig)
    long = ch.load_long()
    fig = ch.draw_survival(long, ["both, L=20"], labels={"both, L=20": "permutations"})
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["permutations"]
    plt.close(fig)
    with pytest.raises(TypeError, match="labels"):
        ch.draw_survival(long, ["both, L=20"], labels=["permutations"])
    with pytest.raises(ValueError, match="front word"):
        ch.draw_causes({k: v for k, v in causes.items() if k != "front word"})


def test_the_stored_cause_rows_are_their_configurations_and_begin_alike():
    """Every cause row is stored whole for its configuration (the family's load checks
    it) to its budget. A row's step-0 evaluation is its untrained model's: a loss weight
    changes only training, so the weighted rows begin bitwise where "both" does (their
    seeds' parameters and evaluation data are its own), and another initialisation
    does not."""
    stored = ch.load_causes()
    long = ch.load_long()
    for name in ch.CAUSE_ROWS:
        assert stored[name]["eval_steps"][-1] == ch.CAUSE_STEPS
    both0 = np.array(long["both, L=20"]["copy_acc"])[:, 0]
    for name in ("end weight 0.1", "end weight 0.3", "end weight 3"):
        assert np.array_equal(np.array(stored[name]["copy_acc"])[:, 0], both0), name
    assert not np.array_equal(np.array(stored["other init"]["copy_acc"])[:, 0], both0)


def test_the_mark_reaches_the_last_step_only_and_changes_nothing_else():
    base = Seq2Seq(10, 8, 8, seeds=[0, 1])
    marked = ch.FlagSeq2Seq(10, 8, 8, seeds=[0, 1])
    pb = dict(base.named_parameters())
    assert all(torch.equal(p, pb[k]) for k, p in marked.named_parameters() if k != "flag")
    src = torch.randint(0, 9, (2, 3, 4))
    tgt = torch.randint(0, 9, (2, 3, 5))
    a, b = marked(src, tgt)["logits"], base(src, tgt)["logits"]
    assert torch.equal(a[..., :-1, :], b[..., :-1, :])       # causal: earlier steps alike
    assert not torch.allclose(a[..., -1, :], b[..., -1, :])
    with torch.no_grad():
        marked.flag.zero_()
    assert torch.equal(marked(src, tgt)["logits"], b)
    cfg = ch.cause_config("end step marked")
    assert isinstance(cfg, ch.FlagConfig) and cfg.end_flag and cfg.eos
    assert ch.shares_start("end step marked", "both, L=20")
    with pytest.raises(TypeError, match="FlagConfig.end_flag"):
        replace(cfg, end_flag=1)
    with pytest.raises(ValueError, match="step_input"):
        replace(cfg, step_input=True).model_fn(cfg.task())
