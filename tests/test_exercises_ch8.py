"""Chapter 8's exercise checkers (attn_core.exercises.ch8): each accepts a right answer,
rejects the usual mistakes with their hint, reports a stub as not attempted, raises on a
wrong answer passed as a solution, and refuses an answer that calls the book's own
function (tests/exercise_scaffold.py)."""

import numpy as np
import pytest
from exercise_scaffold import scaffold_tests

from attn_core.chapters import ch8_scorecard as ch
from attn_core.exercises import ch8 as ex


def contrast(src, tgt, align, V, centre=True, mean_over="sentence", scale=True):
    src, tgt, align = (np.asarray(x) for x in (src, tgt, align))
    n, L = src.shape
    C = np.zeros((V, V))
    for x, y in zip(src, tgt):
        np.add.at(C, (x[:, None], y[None, :]), 1.0 / L)
    C = C * L / n if scale else C
    if centre:
        C = C - C.mean(1, keepdims=True)
    M = C[src[:, :, None], tgt[:, None, :]]
    right = np.take_along_axis(M, align[:, None, :], 1)[:, 0]
    if mean_over == "none":
        return float(right.mean())
    return float((right - M.mean(1)).mean())


def auc(score, ok, tie=0.5, reverse=False):
    s, o = np.asarray(score, dtype=float), np.asarray(ok, dtype=bool)
    if reverse:
        o = ~o
    pos, neg = s[o][:, None], s[~o][None, :]
    return float((pos > neg).mean() + tie * (pos == neg).mean())


def predict_rate(counts, length, extra, refs, proxy=True, end=True):
    (e_f, k_f, n_f), (e_c, k_c, n_c) = refs["flat"], refs["control"]
    e = extra if end else 1.0
    flat, ctrl = np.interp(e, e_f, k_f / n_f), np.interp(e, e_c, k_c / n_c)
    if proxy:
        s = max(counts["hit"] - 1 / length, 0) / (1 - 1 / length)
    else:
        s = min(counts["kappa"] / refs["kappa_control"], 1)
    return float(flat + (ctrl - flat) * s)


CHECKS = {"check_contrast": (ex.check_contrast, contrast),
          "check_auc": (ex.check_auc, auc),
          "check_predict_rate": (ex.check_predict_rate, predict_rate)}
WRONG = {
    "check_contrast": [(lambda *a: contrast(*a, scale=False), "scaling"),
                       (lambda *a: contrast(*a, mean_over="none"), "diagonal's value alone"),
                       (lambda *a: ch.count_lens(ch.condition_task(20, 20))["kappa"],
                        "the book's own")],
    "check_auc": [(lambda s, o: auc(s, o, tie=0.0), "counts half"),
                  (lambda s, o: auc(s, o, reverse=True), "reversed"),
                  (lambda s, o: ex.auc_reference(s, o), "the book's own")],
    "check_predict_rate": [
        (lambda c, L, e, r: predict_rate(c, L, e, r, end=False), "does not move"),
        (lambda c, L, e, r: predict_rate(c, L, e, r, proxy=False), "contrast lens"),
        (lambda c, L, e, r: ch.predict("proxy + end step", c, L, e, r), "the book's own")],
}

(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(ex, CHECKS, WRONG)


def test_the_references_agree_with_the_library(capsys):
    for case in ex.CONTRAST_CASES:
        task, src, tgt, align = ex._batch(*case)
        lens = ch.count_lens(task, n=case[3], seed=case[4])
        assert np.isclose(ex.contrast_reference(src, tgt, align, case[1]), lens["kappa"],
                          atol=1e-12)
    assert ex.check_contrast(ex.contrast_reference, solution=True)
    capsys.readouterr()


def test_a_right_prediction_is_scored_on_the_held_out_runs(capsys):
    ex.check_predict_rate(predict_rate)
    out = capsys.readouterr().out
    assert out.startswith("✓ ") and "V=22, both" in out and "measured" in out


def test_score_held_out_scores_any_lens_as_the_book_did():
    """Exercise 8.3's what-if: the best lens gets the committed verdicts (3 of 4 inside),
    the contrast lens its own (1 of 4), a lens outside [0, 1] or not a number is refused."""
    table = ch.held_out_table(ch.load_predictions(), ch.held_out_conditions())
    for lens in ("proxy + end step", "contrast"):
        text = ex.score_held_out(lambda c, L, e, r, lens=lens: ch.predict(lens, c, L, e, r))
        assert text.count("(inside)") == sum(row[lens]["inside"] for row in table)
        for row in table:
            lo, hi = row[lens]["range"]
            assert f"{row['row']}: you {row[lens]['rate']:.2f}, so {lo}-{hi} of 40" in text
    assert "V = 22: two spare words" in ex.score_held_out(lambda c, L, e, r: 1.0)
    with pytest.raises(TypeError, match="predict_rate must be a function"):
        ex.score_held_out(0.5)
    with pytest.raises(ValueError, match=r"predict_rate returned 2 for V=22, both: a rate "
                                         r"must be in \[0, 1\]"):
        ex.score_held_out(lambda c, L, e, r: 2.0)
    with pytest.raises(TypeError, match="predict_rate must return one number"):
        ex.score_held_out(lambda c, L, e, r: [0.1, 0.2])
