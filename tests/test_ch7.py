"""Chapter 7's module (issue #36): the end-token conditions, their configs and the probe of
where attention goes."""

from __future__ import annotations

from dataclasses import replace

import dataclasses

import numpy as np
import pytest
import torch

from attn_core.chapters import ch7_end_token as ch
from attn_core.chapters import ch7_runs
from attn_core.chapters.ch4_copy import COPY_BASE
from attn_core.data import CopyTask
import torch.nn.functional as F


def _short(cfg, steps=10):
    return replace(cfg, steps=steps, eval_every=5, seeds=(0, 1))


def test_the_base_is_chapter_4s_authors_model():
    base = ch.END_BASE.fast
    for f in ("length", "hidden", "batch_size", "steps", "head_proj", "bias", "eos", "lr"):
        assert getattr(base, f) == getattr(COPY_BASE.fast, f)
    assert base.task() == COPY_BASE.fast.task()     # the same task: bitwise chapter 4's runs


@pytest.mark.parametrize("name", list(ch.CONDITIONS))
def test_every_condition_is_named_back_and_draws_its_task(name):
    cfg = ch.condition_config(name, length=6)
    assert ch.condition_name(cfg) == name and len(cfg.seeds) == 40
    t = cfg.task()
    b = t.sample(torch.Generator().manual_seed(0), 3)
    assert b["src"].max() < t.model_vocab and b["tgt"].max() < t.model_vocab
    ctrl = ch.condition_config(name, length=6, task="control")
    assert ctrl.distribution == "distinct" and ctrl.vocab == 9


def test_a_config_with_an_inconsistent_end_token_is_refused_naming_its_field():
    with pytest.raises(ValueError, match=r"^EndTokenConfig\.mask_end=True needs an end token"):
        ch.EndTokenConfig(eos=False, mask_end=True)
    with pytest.raises(ValueError, match=r"^EndTokenConfig\.eos_side must be one of"):
        ch.EndTokenConfig(eos_side="middle")
    with pytest.raises(TypeError, match=r"^EndTokenConfig\.start must be True or False"):
        ch.EndTokenConfig(start=1)
    with pytest.raises(ValueError, match=r"^name must be one of"):
        ch.condition_config("sink")
    with pytest.raises(ValueError, match=r"^task must be one of"):
        ch.condition_config("both", task="iid")


def test_the_probe_partitions_the_attention_mass():
    for name in ch.CONDITIONS:          # untrained models: attention spread everywhere
        cfg = ch.condition_config(name, length=6)
        task = cfg.task()
        model = cfg.model_fn(task)(seeds=[0, 1])
        with torch.no_grad():
            model.score.normal_(0, 0.5)
        b = {k: torch.stack([v, v]) for k, v in
             task.sample(torch.Generator().manual_seed(0), 8).items()}
        probes = ch.end_probe(task)(model, b)
        total = sum(probes[f"mass_{c}"] for c in ch.POSITION_CLASSES)
        np.testing.assert_allclose(total.detach(), 1.0, rtol=1e-5)
        assert (probes["mass_end"] == 0).all() == (name in (
            "none", "target", "start", "masked", "varying, none", "source, masked",
            "start, masked"))
        assert (probes["mass_start"] > 0).all() == (name == "start")


def test_the_probe_puts_each_position_in_its_class():
    task = CopyTask(5, eos=True)
    probe = ch.end_probe(task)
    b = {k: v.unsqueeze(0) for k, v in task.sample(torch.Generator().manual_seed(0),
                                                    2).items()}

    class OnePlace(torch.nn.Module):   # attends to source position `at` from every step
        def __init__(self, at):
            super().__init__()
            self.at = at

        def forward(self, src, tgt_in):
            S, B, T = tgt_in.shape
            alpha = torch.zeros(S, 1, B, T, src.shape[-1])
            alpha[..., self.at] = 1
            return {"alpha": alpha, "logits": torch.zeros(S, B, T, task.model_vocab)}

    assert float(probe(OnePlace(5), b)["mass_end"][0]) == pytest.approx(1.0)
    # position 4, the last word: right for one copied word of five, last word for the rest
    m = probe(OnePlace(4), b)
    assert float(m["mass_right"][0]) == pytest.approx(1 / 5)
    assert float(m["mass_last word"][0]) == pytest.approx(4 / 5)
    m = probe(OnePlace(0), b)     # right once, a neighbour once (of word 1), other 3 times
    assert [float(m[f"mass_{c}"][0]) for c in ("right", "neighbours", "other")] == \
        pytest.approx([1 / 5, 1 / 5, 3 / 5])
    assert float(m["end_step_on_end"][0]) == 0.0


def test_the_end_token_on_the_target_side_acts_only_through_the_end_steps_loss():
    # an identity: the decoder is causal, so with the end step's loss left out the target's
    # end token changes nothing -- the run with the end token in the source only, to float
    # rounding (the masked mean adds one more, zero-weighted, term)
    a = _short(ch.condition_config("no end loss", length=6)).run(progress=False)
    b = _short(ch.condition_config("source", length=6)).run(progress=False)
    assert np.array_equal(a.probes["copy_acc"], b.probes["copy_acc"])
    np.testing.assert_allclose(a.probes["mass_right"], b.probes["mass_right"], rtol=1e-5)
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-5)
    c = _short(ch.condition_config("both", length=6)).run(progress=False)
    assert not np.array_equal(a.probes["mass_right"], c.probes["mass_right"])


def test_a_push_is_the_first_order_change_of_its_margin_under_a_gradient_step():
    from attn_core.models import Seq2Seq
    task = CopyTask(6, eos=True)
    torch.manual_seed(0)
    model = Seq2Seq(vocab=task.model_vocab, embed=8, hidden=8, bias=True, seeds=[3]).double()
    with torch.no_grad():                       # away from the zero start of the scores
        model.score.normal_(0, 0.5)
    b = {k: v.unsqueeze(0) for k, v in task.sample(torch.Generator().manual_seed(1),
                                                    16).items()}
    pushes = ch.push_probe(task)(model, b)
    enc, dec = (x.detach() for x in model._states(b["src"], b["tgt_in"]))
    words = (b["tgt"] < 6).double()

    def margins():
        e = torch.einsum("sbth,skhg,sblg->sbtl", dec, model.score, enc)
        e = e + torch.einsum("skg,sblg->sbl", model.score_bias, enc)[:, :, None, :]
        e_bar = e.mean(-1)
        d = (e.gather(-1, b["align"].unsqueeze(-1)).squeeze(-1) - e_bar)
        return ((d * words).sum() / words.sum(), ((e[..., 6] - e_bar) * words).sum()
                / words.sum())

    def step_on(group_mask, eps):
        out = model(b["src"], b["tgt_in"])
        ce = F.cross_entropy(out["logits"].flatten(0, 2), b["tgt"].flatten(),
                             reduction="none").view(b["tgt"].shape)
        m = group_mask.double()
        loss = (ce * m).sum() / m.sum()
        g = torch.autograd.grad(loss, [model.score, model.score_bias])
        with torch.no_grad():
            model.score -= eps * g[0]
            model.score_bias -= eps * g[1]
        return g

    for group, mask in (("copy", b["tgt"] < 6), ("end", b["tgt"] == 6)):
        before = [float(x.detach()) for x in margins()]
        saved = (model.score.detach().clone(), model.score_bias.detach().clone())
        eps = 1e-6
        step_on(mask, eps)
        after = [float(x.detach()) for x in margins()]
        with torch.no_grad():
            model.score.copy_(saved[0])
            model.score_bias.copy_(saved[1])
        for i, name in enumerate(("diag", "sink")):
            want = float(pushes[f"push_{name}_{group}"][0])
            assert (after[i] - before[i]) / eps == pytest.approx(want, rel=1e-4, abs=1e-9)
    # Adam's actual first step, on the whole loss (every target step): its change of the
    # diagonal margin per unit of learning rate is push_adam_diag
    before = float(margins()[0].detach())
    lr = 1e-7
    opt = torch.optim.Adam([model.score, model.score_bias], lr=lr)
    out = model(b["src"], b["tgt_in"])
    F.cross_entropy(out["logits"].flatten(0, 2), b["tgt"].flatten()).backward()
    opt.step()
    change = (float(margins()[0].detach()) - before) / lr
    assert change == pytest.approx(float(pushes["push_adam_diag"][0]), rel=1e-3)
    assert abs(change - float(pushes["push_diag_copy"][0])) > 1e-3 * abs(change)


def test_pushes_are_zero_for_a_group_or_margin_that_does_not_exist():
    for name, zero in (("none", ("push_diag_end", "push_sink_copy", "push_sink_end")),
                       ("no end loss", ("push_diag_end", "push_sink_end")),
                       ("masked", ("push_sink_copy", "push_sink_end"))):
        cfg = ch.condition_config(name, length=5, seeds=(0,))
        task = cfg.task()
        model = cfg.model_fn(task)(seeds=[0])
        with torch.no_grad():
            model.score.normal_(0, 0.5)
        b = {k: v.unsqueeze(0) for k, v in task.sample(torch.Generator().manual_seed(0),
                                                        8).items()}
        out = ch.push_probe(task)(model, b)
        for k in zero:
            assert float(out[k][0]) == 0.0, (name, k)
        assert float(out["push_diag_copy"][0]) != 0.0


# ------------------------------------------------------------------ the stored sweep
def test_the_stored_sweep_holds_every_row_of_its_configuration():
    rows = ch.load_sweep()
    assert set(ch.SWEEP_ROWS) <= set(rows)
    for name, (cond, L, task) in ch.SWEEP_ROWS.items():
        cfg = ch.sweep_config(name)
        assert (cfg.length, ch.condition_name(cfg)) == (L, cond)
        assert cfg.steps == ch.SWEEP_STEPS[L] and len(rows[name]["seeds"]) == 40
        assert (cfg.distribution == "distinct") == (task == "control")


def test_the_live_rows_first_seed_is_its_stored_entry_rounded():
    """The entries the chapter re-trains (stored whole, trained with today's code) hold the
    sweep row's first seed: the rows trained before two options were added are the
    numbers the code gives now."""
    from attn_core.stored import load_entry

    rows = ch.load_sweep()
    for name in ch.LIVE_ROWS:
        h = load_entry(ch.live_config(name))
        for k in ch.ROW_METRICS + ch.ROW_PROBES:
            now = h.metrics[k] if k in h.metrics else h.probes[k]
            assert np.array_equal(np.round(np.asarray(now, dtype=float)[0], 4),
                                  np.asarray(rows[name][k])[0]), (name, k)


def test_a_sweep_row_of_another_configuration_or_missing_is_refused(tmp_path):
    import json

    rows = json.loads(ch.SWEEP_FILE.read_text())
    bad = dict(rows)
    bad["both, L=20"] = {**rows["both, L=20"],
                         "config": {**rows["both, L=20"]["config"], "lr": 0.002}}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"row 'both, L=20' was computed with another "
                                         r"configuration than sweep_config"):
        ch.load_sweep(path)
    del bad["both, L=20"]
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"has no row 'both, L=20': run python "
                                         r"benchmarks/ch7_end_token/sweep.py"):
        ch.load_sweep(path)
    short = dict(rows)
    short["none, L=20"] = {**rows["none, L=20"],
                           "copy_acc": rows["none, L=20"]["copy_acc"][:39]}
    path.write_text(json.dumps(short))
    with pytest.raises(ValueError, match=r"row 'none, L=20''s 'copy_acc' has shape "
                                         r"\(39, 16\) \(needs \(40, 16\)"):
        ch.load_sweep(path)


def _row(finals, steps=(0, 10)):
    finals = np.asarray(finals, dtype=float)
    curve = np.stack([np.zeros_like(finals), finals], 1)
    row = {"eval_steps": list(steps), "copy_acc": curve.tolist()}
    for c in ch.POSITION_CLASSES:
        row[f"mass_{c}"] = np.full_like(curve, 1 / len(ch.POSITION_CLASSES)).tolist()
    return row


def test_successes_count_the_runs_above_the_level_at_the_step():
    row = _row([0.96, 0.95, 0.2, 0.99])
    assert ch.successes(row) == (2, 4)                   # above, not at, 0.95
    assert ch.successes(row, level=0.5) == (3, 4)
    assert ch.successes(row, step=0) == (0, 4)
    with pytest.raises(ValueError, match=r"step must be one of the row's evaluation steps "
                                         r"\[0, 10\]; got 5"):
        ch.successes(row, step=5)
    with pytest.raises(ValueError, match=r"^level must be"):
        ch.successes(row, level=1.5)
    with pytest.raises(TypeError, match=r"^row must be a stored row"):
        ch.successes([0.9])


def test_compare_gives_the_counts_intervals_and_fishers_p():
    from attn_core.metrics import fisher_exact, wilson_interval

    rows = {"a": _row([0.99] * 7 + [0.1] * 3), "b": _row([0.99] * 2 + [0.1] * 8)}
    c = ch.compare(rows, "a", "b")
    assert (c["a"]["k"], c["b"]["k"], c["a"]["n"]) == (7, 2, 10)
    assert c["a"]["ci"] == wilson_interval(7, 10)
    assert c["p"] == fisher_exact(7, 10, 2, 10)
    with pytest.raises(ValueError, match=r"^b must be a row of rows; got 'c'"):
        ch.compare(rows, "a", "c")


def test_the_ablation_table_prints_each_rows_count_and_fits_the_column():
    rows = ch.load_sweep()
    text = ch.ablation_table(rows)
    assert max(map(len, text.splitlines())) <= 76          # the page's output column
    body = [t for t in text.splitlines() if t.startswith("  ") and t[2] != " "]
    names = [n for _, g in ch.ABLATION_GROUPS for n in g]
    assert len(body) == len(names)
    tests = ch.ablation_tests(rows)
    for line, n in zip(body, names):
        k, total = ch.successes(rows[ch.row_name(n)])
        assert line.startswith(f"  {ch.SHORT_LABELS[n]}") and f"{k:>2d}/{total:<2d}" in line
        for t in (t for t in tests if t["row"] == n):
            lo, hi = t["d_ci"]
            d, lo, hi = (f"{x:+.2f}".replace("0.", ".") for x in (t["d"], lo, hi))
            assert f"{d} [{lo},{hi}] {t['p_holm']:7.2g}" in line, line
    lower = ch.ablation_table(rows, level=0.5)
    assert "38/40" in lower.splitlines()[3] and "35/40" in text.splitlines()[3]


def test_mass_by_outcome_splits_the_runs_and_keeps_the_partition():
    rows = ch.load_sweep()
    m = ch.mass_by_outcome(rows["both, L=20"])
    assert m["n"] == dict(zip(("succeeded", "failed"),
                              (lambda k, n: (k, n - k))(*ch.successes(rows["both, L=20"]))))
    for outcome in ("succeeded", "failed"):
        total = sum(m[c][outcome] for c in ch.POSITION_CLASSES)
        assert np.allclose(total, 1, atol=1e-3)
    none = ch.mass_by_outcome(_row([0.1, 0.2]))
    assert none["n"]["succeeded"] == 0 and none["right"]["succeeded"] is None


def test_the_figures_draw_from_the_stored_rows_and_refuse_missing_ones():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ch.load_sweep()
    fig = ch.draw_ablations(rows, level=0.5)
    counts = [t.get_text() for t in fig.axes[0].texts if t.get_text().isdigit()]
    names = [n for _, g in ch.ABLATION_GROUPS for n in g]
    assert counts == [str(ch.successes(rows[ch.row_name(n)], 0.5)[0]) for n in names]
    bands = sorted((round(b.get_x(), 6), round(b.get_x() + b.get_width(), 6))
                   for b in fig.axes[0].patches)         # the two references' intervals
    want = sorted(tuple(round(v, 6) for v in
                        ch.wilson_interval(*ch.successes(rows[ch.row_name(n)], 0.5)))
                  for n in ("none", "both"))
    assert bands == want
    ch.draw_effect(rows)
    ch.draw_mass(rows)
    fig = ch.draw_runs(rows, ["none, L=20"])
    assert len(fig.axes[0].lines) == 40 + 1
    with pytest.raises(TypeError, match=r"^names must be a sequence of row names"):
        ch.draw_runs(rows, "none, L=20")
    with pytest.raises(ValueError, match=r"^rows must hold the sweep rows \['both, L=20'\]"):
        ch.draw_mass({"none, L=20": rows["none, L=20"]})
    plt.close("all")


def test_write_sweep_writes_compact_json_atomically_and_refuses_no_rows(tmp_path):
    import json

    path = ch.write_sweep({"x": {"a": [1, 2]}}, tmp_path / "s.json", note="why")
    assert json.loads(path.read_text()) == {"x": {"a": [1, 2]}, "_about": "why"}
    assert "\n" not in path.read_text().rstrip("\n")
    with pytest.raises(TypeError, match=r"^rows must be a non-empty dict"):
        ch.write_sweep({}, tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def test_check_live_refuses_what_stored_run_did_not_check():
    with pytest.raises(TypeError, match=r"^live must be a non-empty dict"):
        ch.check_live({})
    with pytest.raises(ValueError, match=r"^live has a row the sweep does not: 'x'"):
        ch.check_live({"x": object()})
    with pytest.raises(ValueError, match=r"was not loaded by stored_run"):
        ch.check_live({"both, L=20": object()})


def test_first_seeds_p_tests_the_first_n_seeds_of_each_row():
    from attn_core.metrics import fisher_exact

    from attn_core.stats import mcnemar

    rows = ch.load_sweep()
    got = ch.first_seeds_p(rows, 10)
    paired = 0
    for label, a, b in ch.SEED_COMPARISONS:
        ok = [np.array(rows[r]["copy_acc"])[:10, -1] > ch.SUCCESS_LEVEL for r in (a, b)]
        if ch.shares_initialisation(a, b):        # run i of a and of b: one seed's start
            paired += 1
            assert got[label] == mcnemar(*ok)["p"]
        else:
            assert got[label] == fisher_exact(int(ok[0].sum()), 10, int(ok[1].sum()), 10)
    assert 0 < paired < len(ch.SEED_COMPARISONS)
    whole = ch.first_seeds_p(rows, 40)
    for label, a, b in ch.SEED_COMPARISONS:          # the whole rows: compare's tests
        assert whole[label] == ch.compare(rows, a, b)["p"], label
    seen = []
    ch.first_seeds_p(rows, 7, lambda *a: seen.append(a) or 0.5)
    assert all(a[1] == a[3] == 7 for a in seen)
    assert len(seen) == len(ch.SEED_COMPARISONS) - paired
    with pytest.raises(ValueError, match=r"^n must be"):
        ch.first_seeds_p(rows, 41)
    with pytest.raises(TypeError, match=r"^p_fn must be callable"):
        ch.first_seeds_p(rows, 5, p_fn=0.05)


# ------------------------------------------------------------------ beyond the LSTM
def test_the_transformer_rows_are_chapter_6s_model_with_and_without_the_end_token():
    rows = ch.load_transformer()
    for name, fields in ch.TRANSFORMER_ROWS.items():
        cfg = ch.transformer_config(name)
        assert cfg.eos == fields.get("eos", True) and cfg.heads == fields.get("heads", 4)
        assert cfg.length == 20 and cfg.steps == 300 and len(rows[name]["seeds"]) == 40
    with pytest.raises(ValueError, match=r"^row must be one of"):
        ch.transformer_config("2 heads")


def test_copy_only_scores_the_copied_words_and_not_the_end_step():
    class Fixed:                     # a model whose logits are given
        def __init__(self, logits):
            self.logits = logits

        def __call__(self, src, tgt_in):
            return {"logits": self.logits}

    V = 5
    tgt = torch.tensor([[[0, 1, 2, V], [3, 4, 0, V]]])          # (S=1, B=2, T=4), EOS = V
    pred = tgt.clone()
    pred[0, 0, 1] = 2                                            # one word wrong
    pred[0, 1, 3] = 0                                            # the end step wrong
    logits = torch.nn.functional.one_hot(pred, V + 2).float()
    out = ch.CopyOnly(V)(Fixed(logits), {"src": None, "tgt_in": None, "tgt": tgt})
    assert out["copy_acc"].tolist() == [pytest.approx(5 / 6)]    # 6 words, 5 right
    with pytest.raises(ValueError, match=r"^vocab must be"):
        ch.CopyOnly(0)


def test_the_rescue_rows_are_chapter_5s_model_with_and_without_the_end_token():
    from attn_core.chapters import ch5_multihead as ch5

    cfg5 = ch5.RESCUE.fast
    rows = ch.load_rescue()
    for name, (k, eos) in ch.RESCUE_ROWS.items():
        cfg = ch.rescue_config(name)
        assert cfg.copy == replace(cfg5.copy, heads=k, eos=eos)
        assert (cfg.base_seed, cfg.head_proj, cfg.head_reduce) == (0, True, "mean")
        assert len(cfg.head_seeds) == len(rows[name]["seeds"]) == 40
        assert len(set(cfg.head_seeds)) == 40                # fresh heads, none repeated
        # the same heads and data with and without the end token
        other = ch.rescue_config(name.replace("none", "end token") if not eos else
                                 name.replace("end token", "none"))
        assert (other.head_seeds, other.data_seeds) == (cfg.head_seeds, cfg.data_seeds)
    with pytest.raises(ValueError, match=r"^row must be one of"):
        ch.rescue_config("2 heads, none")
    with pytest.raises(ValueError, match=r"^seeds"):
        ch.rescue_config("1 head, none", seeds=[-1])
    # run 100 would take chapter 5's random-K data streams (200 + i) at K = 4
    with pytest.raises(ValueError, match=r"^seeds must be run indices 0-99 .*; got 100"):
        ch.rescue_config("4 heads, none", seeds=[3, 100])
    # a row of some runs records which runs
    some = ch.rescue_config("4 heads, end token", seeds=[5, 7])
    assert ch7_runs._rescue_runs(some) == [5, 7]
    assert some.head_seeds == ch.rescue_config("4 heads, end token").head_seeds[5:8:2]


def test_the_rescue_rows_without_the_end_token_begin_with_chapter_5s_random_runs():
    # chapter 5's random K = 4 combinations, stored with the package (trained by
    # chapter 5's own code): the first runs of the row without the end token are them
    from attn_core.chapters import ch5_multihead as ch5
    from attn_core.stored import load_entry

    cfg5 = ch5.RESCUE.fast
    n = cfg5.n_combinations
    heads = ch5.head_combinations({"random": cfg5.fresh_heads(4)}, "random", 4, n)
    mine = ch.rescue_config("4 heads, none", seeds=range(n))
    assert [list(h) for h in mine.head_seeds] == heads
    assert list(mine.data_seeds) == cfg5.combination_data()
    h5 = load_entry(cfg5.heads_run(heads, cfg5.combination_data(), "heads-random"))
    row = ch.load_rescue()["4 heads, none"]
    assert row["eval_steps"] == list(h5.eval_steps)
    np.testing.assert_allclose(np.array(row["token_acc"])[:n], h5.metrics["token_acc"],
                               atol=6e-5)
    np.testing.assert_allclose(np.array(row["head_attn_acc"])[:n],
                               h5.probes["head_attn_acc"], atol=6e-5)


# ------------------------------------------------- does the first step predict the outcome?
def _pairwise_auc(score, ok):
    pos, neg = score[ok], score[~ok]
    return float((pos[:, None] > neg[None, :]).mean()
                 + 0.5 * (pos[:, None] == neg[None, :]).mean())


def test_outcome_auc_is_the_share_of_pairs_ordered_with_ties_counted_half():
    ok = np.array([True, True, False, False])
    assert ch.outcome_auc([3.0, 4.0, 1.0, 2.0], ok)[0] == 1.0
    assert ch.outcome_auc([1.0, 2.0, 3.0, 4.0], ok)[0] == 0.0
    assert ch.outcome_auc([1.0, 1.0, 1.0, 1.0], ok)[0] == 0.5
    rng = np.random.default_rng(3)
    for _ in range(20):
        score = rng.integers(0, 6, 30).astype(float)          # many ties
        ok = rng.random(30) < 0.4
        if 0 < ok.sum() < 30:
            assert ch.outcome_auc(score, ok, shuffles=10)[0] == pytest.approx(
                _pairwise_auc(score, ok), abs=1e-12)


def test_outcome_auc_p_value_is_small_for_a_perfect_sort_and_large_for_noise():
    ok = np.arange(40) < 20
    a, p = ch.outcome_auc(np.arange(40.0)[::-1], ok)          # every success above
    assert a == 1.0 and p == 1 / 20001                         # never 0: (1 + 0) / (1 + n)
    a, p = ch.outcome_auc(np.arange(40.0), ok)                 # every success below
    assert a == 0.0 and p < 1e-3                               # two-sided
    noise = np.random.default_rng(0).normal(size=40)
    assert ch.outcome_auc(noise, ok)[1] > 0.05
    assert ch.outcome_auc(noise, ok, seed=1) != ch.outcome_auc(noise, ok, seed=2)
    assert ch.outcome_auc(noise, ok, seed=1) == ch.outcome_auc(noise, ok, seed=1)


@pytest.mark.parametrize("score, ok, match", [
    ([1.0, 2.0], [True, True], r"^ok must hold runs that succeed and runs that fail"),
    ([1.0, 2.0, 3.0], [True, False], r"^ok must be a bool array of the score's shape"),
    ([1.0, float("nan")], [True, False], r"^score must be a 1-D array of at least 2 finite"),
    ([[1.0, 2.0]], [[True, False]], r"^score must be a 1-D array"),
])
def test_outcome_auc_refuses_what_it_cannot_rank(score, ok, match):
    with pytest.raises(ValueError, match=match):
        ch.outcome_auc(score, np.asarray(ok))


def test_outcome_auc_refuses_what_is_not_numbers_and_outcomes():
    with pytest.raises(TypeError, match=r"^ok must be a bool array; got dtype int"):
        ch.outcome_auc([1.0, 2.0], np.array([1, 0]))
    with pytest.raises(TypeError, match=r"^score must be an array of numbers; got list"):
        ch.outcome_auc(["a", "b"], np.array([True, False]))


def test_push_prediction_of_the_stored_pushes():
    pushes, rows = ch.load_push(), ch.load_sweep()
    assert list(pushes["_about"]) and set(ch.PUSH_ROWS) <= set(pushes)
    pred = ch.push_prediction(pushes, rows)
    assert list(pred) == list(ch.PUSH_ROWS)
    for name, r in pred.items():
        ok = np.array(rows[name]["copy_acc"])[:, -1] > ch.SUCCESS_LEVEL
        assert (r["k"], r["n"]) == (ok.sum(), 40)
        assert r["auc"] == pytest.approx(
            _pairwise_auc(np.array(pushes[name]["push_diag_copy"]), ok), abs=1e-12)
    # at step 0 no run copies, and where every run copies: nothing to sort
    at0 = {n: {"copy_acc": np.array(rows[n]["copy_acc"])[:, :1]} for n in ch.PUSH_ROWS}
    assert all(r["auc"] is None and r["k"] == 0 for r in
               ch.push_prediction(pushes, at0).values())
    every = {n: {"copy_acc": np.ones((40, 1))} for n in ch.PUSH_ROWS}
    assert all(r["auc"] is None and r["k"] == 40 for r in
               ch.push_prediction(pushes, every).values())
    with pytest.raises(TypeError, match=r"^pushes must be the stored push rows .*holds none"):
        ch.push_prediction({"_about": "a note"}, rows)
    with pytest.raises(ValueError, match=r"^rows must hold the sweep rows \['none, L=20'\]"):
        ch.push_prediction({"none, L=20": pushes["none, L=20"]}, {})
    with pytest.raises(TypeError, match=r"^pushes must be the stored push rows"):
        ch.push_prediction({}, rows)


def test_the_stored_push_is_computed_again_and_a_changed_one_fails():
    pushes = ch.load_push()
    assert ch.check_push(pushes) <= ch.PUSH_TOLERANCE
    assert ch.check_push(pushes, "none, L=20", seed=3) <= ch.PUSH_TOLERANCE
    # another seed's push stored in seed 0's place: far beyond the tolerance
    changed = {"both, L=20": dict(pushes["both, L=20"])}
    values = list(changed["both, L=20"]["push_diag_copy"])
    values[0] = values[1]
    changed["both, L=20"]["push_diag_copy"] = values
    assert ch.check_push(changed) > 100 * ch.PUSH_TOLERANCE
    with pytest.raises(ValueError, match=r"^seed must be one of the row's seeds 0-39"):
        ch.check_push(pushes, seed=40)
    with pytest.raises(ValueError, match=r"^row must be one of"):
        ch.check_push(pushes, "both, L=10")


def test_push_config_is_the_sweep_runs_first_step_probed():
    for name in ch.PUSH_ROWS:
        cfg, run = ch.push_config(name), ch.sweep_config(name)
        assert replace(cfg, steps=run.steps, eval_every=run.eval_every, push=False) == run
        assert (cfg.steps, cfg.eval_every, cfg.push) == (1, 1, True)


def test_draw_push_draws_every_run_of_every_condition():
    import matplotlib.pyplot as plt

    fig = ch.draw_push(ch.load_push(), ch.load_sweep())
    ax = fig.axes[0]
    assert sum(len(c.get_offsets()) for c in ax.collections) == 40 * len(ch.PUSH_ROWS)
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["no end token", "both sides"]
    plt.close(fig)


def test_the_held_out_rows_are_the_same_conditions_on_fresh_seeds():
    assert not set(ch.HELD_OUT_SEEDS) & set(ch.SEEDS)
    assert set(ch.HELD_OUT_ROWS) <= set(ch.PUSH_ROWS)
    for name in ch.HELD_OUT_ROWS:
        assert ch.held_out_config(name) == ch.sweep_config(name, ch.HELD_OUT_SEEDS)
    with pytest.raises(ValueError, match=r"^row must be one of"):
        ch.held_out_config("both, L=20")      # where seeds 0-39 found no prediction
    rows = ch.load_held_out()
    for name in ch.HELD_OUT_ROWS:
        acc = np.array(rows[name]["copy_acc"])
        assert acc.shape == (40, 2) and (acc[:, 0] < 0.2).all()   # step 0: guessing


def test_held_out_auc_averages_the_conditions_and_tests_within_each():
    ranked = list(np.arange(40.0))
    perfect = {"push_diag_copy": ranked,
               "copy_acc": [[0.05, 1.0 if i >= 20 else 0.3] for i in range(40)]}
    noise = {"push_diag_copy": list(np.random.default_rng(1).normal(size=40)),
             "copy_acc": [[0.05, 1.0 if i % 2 else 0.3] for i in range(40)]}
    none_copy = {"push_diag_copy": ranked, "copy_acc": [[0.05, 0.3]] * 40}
    all_copy = {"push_diag_copy": ranked, "copy_acc": [[0.05, 1.0]] * 40}
    got = ch.held_out_auc({"a": perfect, "b": none_copy})
    assert got["rows"]["a"]["auc"] == 1.0 and got["rows"]["b"]["auc"] is None
    assert got["mean_auc"] == 0.75 and got["p"] < 1e-3       # b counts 0.5
    got = ch.held_out_auc({"a": perfect, "c": all_copy, "b": none_copy})
    assert got["rows"]["c"] == {"k": 40, "n": 40, "auc": None}
    assert got["mean_auc"] == pytest.approx(2 / 3)            # c and b count 0.5
    with pytest.raises(ValueError, match=r"^rows must be held-out rows .*row 'a'"):
        ch.held_out_auc({"a": {"push_diag_copy": ranked, "copy_acc": [0.3] * 40}})
    with pytest.raises(ValueError, match=r"^rows must be held-out rows .*row 'a'.*shape"):
        ch.held_out_auc({"a": {**perfect, "push_diag_copy": ranked[:-1]}})
    first = ch.held_out_auc({"a": perfect}, step="first")
    assert {k: first[k] for k in ("rows", "mean_auc", "p")} == {
        "rows": {"a": {"k": 0, "n": 40, "auc": None}}, "mean_auc": 0.5, "p": 1.0}
    assert ch.held_out_auc({"b": noise})["p"] > 0.05
    with pytest.raises(ValueError, match=r"^step must be one of \('first', 'last'\)"):
        ch.held_out_auc({"a": perfect}, step="middle")
    with pytest.raises(TypeError, match=r"^step must be one of .*; got int 0"):
        ch.held_out_auc({"a": perfect}, step=0)
    with pytest.raises(TypeError, match=r"^rows must be the stored held-out rows"):
        ch.held_out_auc({"_about": "x"})


def test_the_held_out_null_shuffles_the_shared_seeds_jointly():
    noise = {"push_diag_copy": list(np.random.default_rng(1).normal(size=40)),
             "copy_acc": [[0.05, 1.0 if i % 2 else 0.3] for i in range(40)], "seeds": [0]}
    twins = {"a": noise, "b": dict(noise)}                 # two conditions, one set of runs
    joint, within = (ch.held_out_auc(twins, null=n, shuffles=4000) for n in ("joint", "within"))
    assert joint["mean_auc"] == within["mean_auc"]
    # identical conditions: the joint null is one condition's; within, the mean of two
    # independent ones, narrower by about sqrt(2)
    assert joint["null_sd"] / within["null_sd"] == pytest.approx(2 ** 0.5, rel=0.1)
    with pytest.raises(ValueError, match="rows must share their seeds for a joint null"):
        ch.held_out_auc({"a": noise, "b": {**noise, "seeds": [1]}})
    stored = ch.load_held_out()
    joint, within = (ch.held_out_auc(stored, null=n) for n in ("joint", "within"))
    assert within["p"] < 0.005 < 0.01 < joint["p"] < 0.05       # the six share seeds 40-79
    assert joint["null_sd"] > within["null_sd"]


def _swap_config(rows, a, b):
    rows[a]["config"] = rows[b]["config"]


def _drop_last_run(key):
    def edit(rows, a, b):
        rows[a][key] = rows[a][key][:-1]
    return edit


def _other_steps(rows, a, b):
    rows[a]["eval_steps"] = [0, 200]


# (stored file, loader, maker, edit, the row it breaks, another row, the message)
_REFUSALS = [
    ("RESCUE_FILE", "load_rescue", "rescue_config", _swap_config, "4 heads, end token",
     "4 heads, none", r"was computed with another configuration than rescue_config"),
    ("RESCUE_FILE", "load_rescue", "rescue_config", _drop_last_run("copy_acc"),
     "1 head, none", None, r"'copy_acc' has shape"),
    ("PUSH_FILE", "load_push", "push_config", _swap_config, "both, L=20", "none, L=20",
     r"was computed with another configuration than push_config"),
    ("PUSH_FILE", "load_push", "push_config", _drop_last_run("push_diag_copy"),
     "none, L=20", None, r"'push_diag_copy' has shape"),
    ("HELD_OUT_FILE", "load_held_out", "held_out_config", _swap_config, "none, L=20",
     "target, L=20", r"was computed with another configuration than held_out_config"),
    ("HELD_OUT_FILE", "load_held_out", "held_out_config", _other_steps, "start, L=20",
     None, r"was not evaluated at the steps its configuration evaluates at \(\[0, 300\]\)"),
]


@pytest.mark.parametrize("file, loader, maker, edit, row, other, match", _REFUSALS,
                         ids=lambda v: v if isinstance(v, str) else None)
def test_a_stored_row_that_is_not_its_configurations_is_refused(
        tmp_path, file, loader, maker, edit, row, other, match):
    import json

    rows = json.loads(getattr(ch, file).read_text())
    edit(rows, row, other)
    bad = tmp_path / "rows.json"
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=rf"row {row!r}.*{match}"):
        getattr(ch, loader)(bad)
    del rows[row]
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=rf"has no row {row!r}"):
        getattr(ch, loader)(bad)


# ------------------------------------------------------------- delay or failure (long runs)
def test_long_configs_are_the_sweeps_rows_trained_longer():
    for row in ch.LONG_ROWS:
        long, short = ch.long_config(row), ch.sweep_config(row)
        assert long.steps == ch.LONG_STEPS > short.steps
        assert dataclasses.replace(long, steps=short.steps) == short


def _long_row(steps, acc):
    return {"eval_steps": list(steps), "copy_acc": [list(a) for a in acc]}


def test_delay_table_counts_pairs_and_corrects_the_family():
    steps = [0, 100, 200, 300, 400]
    early = [[0, 0.96, 1, 1, 1]] * 6                   # above 0.95 at step 100
    late = [[0, 0, 0, 0, 0.99]] * 6                     # after the short budget
    never = [[0, 0.5, 0.6, 0.7, 0.8]] * 6
    rows = {"masked, L=20": _long_row(steps, early), "both, L=20": _long_row(steps, late),
            "none, L=20": _long_row(steps, never)}
    # masked and both share initialisations (paired); both and none do not (log-rank)
    out = ch.delay_table(rows, [("masked, L=20", "both, L=20"),
                                ("both, L=20", "none, L=20")], [0.95], short=300)
    ab, bc = out
    assert (ab["a_by_short"], ab["b_by_short"], ab["b_by_end"]) == (6, 0, 6)
    assert (ab["a_first"], ab["b_first"], ab["ties"], ab["neither"]) == (6, 0, 0, 0)
    assert ab["test"] == "paired order" and bc["test"] == "log-rank"
    assert ab["p"] == pytest.approx(2 / 2 ** 6)
    from attn_core.stats import holm, logrank
    t_late, t_never = np.full(6, 400.0), np.full(6, 400.0)
    assert bc["p"] == logrank(t_late, np.ones(6, bool), t_never, np.zeros(6, bool))
    assert [ab["p_holm"], bc["p_holm"]] == holm([ab["p"], bc["p"]]).tolist()
    assert (ab["a_median"], ab["b_median"], ab["b_never"]) == (100, 400, 0)
    # b (late) against c (never): every b run first, and c's runs never got there
    assert (bc["a_by_short"], bc["a_by_end"], bc["b_by_end"]) == (0, 6, 0)
    assert (bc["a_never"], bc["b_never"]) == (0, 1.0) and "a_first" not in bc
    assert bc["b_median"] is None and bc["runs"] == 6


def test_delay_text_shows_the_chosen_pairs_corrected_over_the_whole_family():
    """#55: §1 shows its three pairs of the long runs, §2 the other three; each line's p is
    Holm-corrected over all six (the family fixed beforehand), not over the pairs shown."""
    long = ch.load_long()
    full = ch.delay_table(long)
    rest = [p for p in ch.DELAY_PAIRS if p not in ch.DELAY_FIRST]
    first, second = ch.delay_text(long, ch.DELAY_FIRST), ch.delay_text(long, rest)
    lines = first.splitlines()[1:] + second.splitlines()[1:]
    assert len(lines) == len(full) == 2 * len(ch.DELAY_PAIRS)
    assert not any(ln.startswith(("source", "masked", "no end loss"))
                   for ln in first.splitlines())
    for d in full:
        a = ch.SWEEP_ROWS[d["a"]]
        label = f"{a[0]}{', control' if a[2] == 'control' else ''}, L={a[1]}"
        line = next(ln for ln in lines if ln.startswith(label)
                    and f" {d['level']:4.2f} " in ln)
        assert line.split()[-1] == f"{d['p_holm']:.2g}", line
        assert f"{d['a_median']:4.0f} {d['b_median']:4.0f}" in line, line
    # a family of only the pairs shown would correct less: the lines do not
    alone = ch.delay_table(long, ch.DELAY_FIRST)
    assert any(f"{x['p_holm']:.2g}" != f"{d['p_holm']:.2g}" for x, d in
               zip(alone, [d for d in full if (d["a"], d["b"]) in ch.DELAY_FIRST]))
    assert max(map(len, (first + "\n" + second).splitlines())) <= 74


# ---------------------------------------------------------- paired comparisons, one family
def test_rows_with_the_same_vocabulary_share_initialisations_and_are_compared_paired():
    assert ch.shares_initialisation("masked, L=20", "both, L=20")
    assert ch.shares_initialisation("source, L=20", "target, L=20")
    assert not ch.shares_initialisation("none, L=20", "both, L=20")      # one word fewer
    assert not ch.shares_initialisation("both, L=10", "both, L=20")
    rows = ch.load_sweep()
    paired = ch.compare(rows, "masked, L=20", "both, L=20")
    assert paired["paired"] and paired["test"] == "McNemar"
    # masked and unmasked succeed on the same nine seeds: no discordant pair
    assert (paired["a_only"], paired["b_only"], paired["p"], paired["d"]) == (0, 0, 1.0, 0)
    assert paired["d_ci"][1] < 5 / 40 < ch.compare(rows, "masked, L=20", "both, L=20",
                                                   paired=False)["d_ci"][1]
    unpaired = ch.compare(rows, "none, L=20", "both, L=20")
    assert not unpaired["paired"] and unpaired["test"] == "Fisher"
    assert unpaired["p"] == ch.fisher_exact(35, 40, 9, 40)


def test_a_paired_comparison_is_mcnemars_test_on_the_discordant_seeds():
    steps = [0, 10]
    a = {"eval_steps": steps, "seeds": [0, 1, 2, 3],
         "copy_acc": [[0, 1], [0, 1], [0, 1], [0, 0]]}
    b = {"eval_steps": steps, "seeds": [0, 1, 2, 3],
         "copy_acc": [[0, 0], [0, 0], [0, 1], [0, 0]]}
    out = ch.compare({"a": a, "b": b}, "a", "b", paired=True)
    assert (out["a_only"], out["b_only"]) == (2, 0) and out["p"] == 0.5
    assert out["d"] == 0.5 and out["d_ci"][0] < 0.5 < out["d_ci"][1]
    at0 = ch.compare({"a": a, "b": b}, "a", "b", paired=True, step=0)
    assert at0["d"] == 0 and at0["p"] == 1
    with pytest.raises(ValueError, match="paired rows must hold the same seeds"):
        ch.compare({"a": a, "b": {**b, "seeds": [4, 5, 6, 7]}}, "a", "b", paired=True)


def test_the_ablation_table_is_one_holm_corrected_family():
    rows = ch.load_sweep()
    tests = ch.ablation_tests(rows)
    pairs = [(t["row"], t["ref"]) for t in tests]
    assert len(pairs) == len(set(pairs)) == 20            # each reference pair once
    assert ("both", "none") in pairs and ("none", "both") not in pairs
    from attn_core.stats import holm
    assert [t["p_holm"] for t in tests] == holm([t["p"] for t in tests]).tolist()
    assert all(t["p_holm"] >= t["p"] for t in tests)
    text = ch.ablation_table(rows)
    assert "Holm-corrected over the 20 tests" in text and "*" in text


def test_the_long_runs_begin_with_the_sweeps_runs():
    """The long rows are the sweep's rows trained on: the same seeds and evaluations, so
    their first 300 steps are the sweep's numbers exactly (Adam's rate is constant)."""
    long, rows = ch.load_long(), ch.load_sweep()
    for name in ch.LONG_ROWS:
        n = len(rows[name]["eval_steps"])
        assert long[name]["eval_steps"][:n] == rows[name]["eval_steps"]
        assert long[name]["eval_steps"][-1] == ch.LONG_STEPS
        for key in ("copy_acc", "token_acc"):
            assert np.array_equal(np.array(long[name][key])[:, :n], rows[name][key]), name


def test_the_stored_adam_pushes_hold_the_stored_gradient_pushes():
    """The Adam rows recompute the plain push too: it is the push and held-out files' own
    (within the push's tolerance), on the same seeds."""
    adam, pushes, held = ch.load_adam_push(), ch.load_push(), ch.load_held_out()
    pairs = [(n, pushes[n]) for n in ch.PUSH_ROWS]
    pairs += [(f"{n}, seeds 40-79", held[n]) for n in ch.HELD_OUT_ROWS]
    for name, other in pairs:
        a = np.array(adam[name]["push_diag_copy"])
        b = np.array(other["push_diag_copy"])
        assert adam[name]["seeds"] == other["seeds"]
        assert np.abs(a - b).max() <= ch.PUSH_TOLERANCE * np.abs(b).max(), name
        assert not np.allclose(a, adam[name]["push_adam_diag"])
    text = ch.adam_push_table(adam, ch.load_sweep(), held)
    assert text.splitlines()[-1].startswith("seeds 40-79: mean AUC 0.62 (p 0.028), Adam 0.67")
