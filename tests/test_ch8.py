"""Chapter 8 (attn_core.chapters.ch8_scorecard): the count lens against its definition,
the lenses' predictions, the scorecard's scores, and the stored conditions read whole."""

import numpy as np
import pytest
import torch

from attn_core.chapters import ch8_scorecard as ch
from attn_core.metrics import outcome_auc


@pytest.fixture(scope="module")
def conds():
    return ch.conditions()


@pytest.fixture(scope="module")
def refs(conds):
    return ch.references(conds)


def test_every_stored_family_is_read(conds):
    families = {(c.chapter, c.family) for c in conds}
    assert families == {(n, f) for n, f, _ in ch.FAMILIES}
    assert len(conds) >= 100 and all(c.n >= 2 for c in conds)


def test_the_count_lens_is_flat_under_permutations_and_not_otherwise():
    perm = ch.count_lens(ch.condition_task(20, 20))
    assert perm["kappa"] == 0 and perm["hit"] == pytest.approx(1 / 20, abs=1e-12)
    mix = ch.count_lens(ch.condition_task(10, 20, "mixture"))
    assert mix["kappa"] == pytest.approx(0, abs=1e-12)      # within a set: still flat
    ks = [ch.count_lens(ch.condition_task(20, v, "distinct"))["kappa"]
          for v in (21, 22, 24, 30)]
    assert all(a < b for a, b in zip(ks, ks[1:])) and ks[0] > 0
    assert ch.count_lens(ch.condition_task(20, 22, "distinct"))["hit"] == 1.0


def test_the_count_lens_equals_a_loop_over_its_definition():
    task = ch.condition_task(5, 8, "distinct")
    b = task.sample(torch.Generator().manual_seed(3), 40)
    src, tgt, align = (b[k].numpy() for k in ("src", "tgt", "align"))
    C = np.zeros((8, 8))
    for x, y in zip(src, tgt):
        for i in x:
            for o in y:
                C[i, o] += 1 / 5
    C = C * 5 / 40
    C -= C.mean(1, keepdims=True)
    vals = [C[x[a], y[t]] - np.mean([C[x[l], y[t]] for l in range(5)])
            for x, y, al in zip(src, tgt, align) for t, a in enumerate(al)]
    assert ch.count_lens(task, n=40, seed=3)["kappa"] == pytest.approx(np.mean(vals),
                                                                       abs=1e-12)


def test_the_lenses_return_their_references(conds, refs):
    by = {(c.family, c.name): c for c in conds if c.chapter == 7}
    for kind, rows in ch.REFERENCE_ROWS.items():
        for e, key in rows:
            c = by[key]
            assert ch.predict("proxy + end step", ch.condition_counts(c), 20, e, refs) == \
                pytest.approx(c.rate, abs=1e-12)
    perm = ch.count_lens(ch.condition_task(20, 20))
    # only the counts: the end step's weight changes nothing
    assert ch.predict("proxy", perm, 20, 0.0, refs) == ch.predict("proxy", perm, 20, 3.0,
                                                                   refs)
    lo, mid, hi = (ch.predict("contrast", perm, 20, 1.0, refs, b)
                   for b in ("low", "mid", "high"))
    assert lo < mid < hi


def test_a_constant_lens_has_no_rank_and_an_auc_of_a_half(conds, refs):
    card = ch.scorecard(conds, refs)
    flat = [{**e, "predicted": {k: 0.5 for k in ch.LENSES}} for e in card]
    assert np.isnan(ch.rank_scores(flat, shuffles=5)["proxy"]["rho"])
    runs = ch.run_scores(ch.fresh_conditions(conds), refs, constant=0.3)
    assert runs["constant"]["auc"] == 0.5
    real = ch.rank_scores(card, shuffles=200)["proxy + end step"]
    assert real["rho"] > 0.2 and real["n"] == len(card) - sum(e["reference"] for e in card)


def test_run_scores_match_the_auc_of_the_pooled_runs(conds, refs):
    fresh = ch.fresh_conditions(conds)
    runs = ch.run_scores(fresh, refs)
    score = np.concatenate([np.full(c.n, ch.predict_condition(c, refs)) for c in fresh])
    ok = np.concatenate([c.ok for c in fresh])
    assert runs["proxy + end step"]["auc"] == pytest.approx(outcome_auc(score, ok)[0])


def test_log_score_shrinks_a_certain_prediction():
    assert np.isfinite(ch.log_score([1.0, 1.0], np.array([True, False])))
    assert ch.log_score([0.5, 0.5], np.array([True, False])) == pytest.approx(np.log(0.5))
    with pytest.raises(ValueError, match="rates must be in"):
        ch.log_score([1.5, 0.5], np.array([True, False]))


def test_binomial_range_holds_its_probability():
    assert ch.binomial_range(0.0, 40) == (0, 0)
    assert ch.binomial_range(1.0, 40) == (40, 40)
    lo, hi = ch.binomial_range(0.5, 40)
    assert lo < 20 < hi and hi - lo <= 14


def test_the_committed_predictions_are_what_the_code_computes(conds):
    now = ch.held_out_predictions(conds)
    stored = ch.load_predictions()
    assert set(now) == set(stored) == set(ch.HELD_OUT_ROWS)
    for row in now:
        for lens in ch.LENSES:
            assert now[row][lens]["rate"] == pytest.approx(stored[row][lens]["rate"],
                                                           abs=1e-12)
            assert now[row][lens]["range"] == stored[row][lens]["range"]


def test_the_held_out_runs_are_read_with_their_seeds():
    held = ch.held_out_conditions()
    assert {c.name for c in held} == set(ch.HELD_OUT_ROWS)
    assert all(c.seeds == ch.HELD_OUT_SEEDS and c.n == 40 for c in held)
    table = ch.held_out_table(ch.load_predictions(), held)
    assert len(table) == 4 and all(isinstance(e["k"], int) for e in table)


def test_explain_names_the_chapter(conds):
    why = {c.label: ch.explain(c) for c in conds}
    assert why["ch6 sweep: learned"] == "ch6: positions"
    assert why["ch5 heads: random"] == "ch5: heads"
    assert why["ch7 rescue: 1 head, end token"] == "ch5: a GRU"
    assert why["ch7 causes: SGD, both"] == "ch7: SGD"
    with pytest.raises(TypeError, match="c must be a Condition"):
        ch.explain("x")


def test_pushes_cover_the_sweep_and_the_held_out_rows(conds):
    pushes = ch.load_scorecard_pushes()
    s = ch.push_scores(pushes, conds + ch.held_out_conditions())
    assert s["n"] == len(ch.PUSH_ROWS) and np.isfinite(s["rho"])


def test_times_are_each_runs_first_step_above_the_level(conds):
    from attn_core.chapters import ch7_end_token as ch7

    timed = [c for c in conds if c.times is not None]
    assert len(timed) >= 90
    row = ch7.load_sweep()["both, L=20"]
    c = next(c for c in conds if c.label == "ch7 sweep: both, L=20")
    acc, steps = np.asarray(row["copy_acc"]), row["eval_steps"]
    for j in range(c.n):                               # the definition, run by run
        above = [s for s, a in zip(steps, acc[j]) if a > 0.95]
        assert (np.isnan(c.times[j]) and not above) or c.times[j] == above[0]
    assert (~np.isnan(c.times) == c.ok).all()          # no run got there and fell back
    with pytest.raises(TypeError, match="Condition.times must be a float array"):
        ch.Condition(4, "x", "y", "LSTM", 20, 20, "permutation", "both", 1.0, 300,
                     np.ones(3, bool), times=np.ones(2))
    with pytest.raises(ValueError, match=r"Condition.times must lie in \[0, budget"):
        ch.Condition(4, "x", "y", "LSTM", 20, 20, "permutation", "both", 1.0, 300,
                     np.ones(2, bool), times=np.array([10.0, 400.0]))


def test_speed_is_one_minus_the_mean_time_over_the_budget(conds):
    c = next(c for c in conds if c.label == "ch7 sweep: both, L=20")
    t = [300.0 if np.isnan(x) else x for x in c.times]
    assert ch.speed(c) == pytest.approx(1 - sum(t) / len(t) / 300, abs=1e-12)
    fast = ch.Condition(4, "x", "y", "LSTM", 20, 20, "permutation", "both", 1.0, 300,
                        np.ones(2, bool), times=np.zeros(2))
    never = ch.Condition(4, "x", "y", "LSTM", 20, 20, "permutation", "both", 1.0, 300,
                         np.zeros(2, bool), times=np.full(2, np.nan))
    assert ch.speed(fast) == 1 and ch.speed(never) == 0
    untimed = next(c for c in conds if c.times is None)
    with pytest.raises(ValueError, match="stores no curves"):
        ch.speed(untimed)


def test_time_scores_rank_speed_and_a_constant_lens_has_no_rank(conds, refs):
    card = ch.scorecard(conds, refs)
    s = ch.time_scores(card, shuffles=200)
    assert all(s[k]["n"] >= 80 and np.isfinite(s[k]["rho"]) for k in ch.LENSES)
    flat = [{**e, "predicted": {k: 0.5 for k in ch.LENSES}} for e in card]
    assert np.isnan(ch.time_scores(flat, shuffles=10)["proxy"]["rho"])
    # a lens that predicts each condition's own speed ranks it perfectly
    own = [{**e, "predicted": {k: ch.speed(e["condition"]) if e["condition"].times
                               is not None else 0.5 for k in ch.LENSES}} for e in card]
    assert ch.time_scores(own, shuffles=10)["proxy"]["rho"] == pytest.approx(1)


def test_delays_read_the_long_rows_and_their_medians(conds, refs):
    from attn_core.chapters import ch7_end_token as ch7
    from attn_core.stats import kaplan_meier

    card = ch.scorecard(conds, refs)
    long = ch7.load_long()
    d = ch.delays(card, long)
    assert {r["name"] for r in d["rows"]} == {n for n in long if not n.startswith("_")}
    for r in d["rows"]:
        t, ok = ch7.times_to_level(long[r["name"]])
        km_t, km_s = kaplan_meier(t, ok)
        assert r["k_end"] == ok.sum() and r["steps"] == 2000
        assert r["median"] == km_t[np.argmax(km_s <= 0.5)]
        assert r["k_budget"] <= r["k_end"]             # the long run extends the short
    assert d["n_rows"] == sum(not r["reference"] for r in d["rows"])
    assert -1 <= d["rho"] < 0 and 0 < d["p"] <= 1
    flat = [{**e, "predicted": {k: 0.5 for k in ch.LENSES}} for e in card]
    assert np.isnan(ch.delays(flat, long)["rho"])
    with pytest.raises(ValueError, match="long must hold rows of chapter 7's sweep"):
        ch.delays(card, {"x": long["both, L=20"]})


def test_a_smoke_run_in_full_mode_reads_the_same_conditions(conds, monkeypatch):
    """The full-mode smoke run (ATTN_MAX_STEPS) labels chapter 5's live heads by rank; the
    stored heads it reads keep their stored labels, so chapter 8 finds every condition."""
    monkeypatch.setenv("ATTN_MODE", "full")
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    smoke = ch.conditions()
    assert [c.label for c in smoke] == [c.label for c in conds]
    assert all((a.ok == b.ok).all() for a, b in zip(smoke, conds))


def test_the_scorecard_text_fits_the_column_and_cuts_nothing(conds, refs):
    card = ch.scorecard(conds, refs)
    text = ch.format_scorecard(card)
    assert max(len(x) for x in text.splitlines()) <= 74
    for e in card:                                      # every name and model whole
        assert f"{e['condition'].label} " in text
    misses = ch.format_scorecard(card, misses_only=True)
    best = [e for e in card if e["misses"]["proxy + end step"] and not e["reference"]]
    assert misses.count("    missed: ") == len(best)
    assert all(f"missed: {e['explain']}\n" in misses + "\n" for e in best)
    with pytest.raises(TypeError, match="misses_only must be"):
        ch.format_scorecard(card, misses_only="yes")


def test_the_new_figures_draw_their_data_readably(conds, refs):
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from attn_core import plotting

    plotting.set_style()
    card = ch.scorecard(conds, refs)
    fig = ch.draw_delays(card)
    lines = [x for x in fig.axes[0].get_lines() if len(x.get_xdata()) > 2]
    assert len(lines) == 9                              # one curve a long row
    assert plotting.rendered_text_pt(fig)["phone"] >= plotting.MIN_TEXT_PT
    plt.close(fig)
    table = ch.held_out_table(ch.load_predictions(), ch.held_out_conditions())
    fig = ch.draw_held_out(table)
    dots = [x for x in fig.axes[0].get_lines() if x.get_marker() == "o" and
            len(x.get_xdata())]
    assert sorted(float(x.get_xdata()[0]) for x in dots) == sorted(e["k"] for e in table)
    assert plotting.rendered_text_pt(fig)["phone"] >= plotting.MIN_TEXT_PT
    plt.close(fig)
