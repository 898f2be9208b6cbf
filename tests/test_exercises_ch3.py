"""Chapter 3's exercise checkers (attn_core.exercises.ch3): each accepts its reference, rejects
the usual mistakes with their specific hint, reports a stub as not attempted, and raises on a
wrong solution.
That the notebook uses every checker in a stub and a solution cell: tests/test_learning.py."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from attn_core import theory
from attn_core.chapters.ch3_ibm1 import TRANSLATION
from attn_core.data import encode_corpus
from attn_core.exercises import ch3 as ex
from exercise_scaffold import hint_leaks



def _stub(*args):
    raise NotImplementedError("fill me in")


# --------------------------------------------------------------------------- 3.1 first step
def first_step_ref(C):
    C = np.asarray(C, dtype=float)
    return C - C.mean(1, keepdims=True)


def first_step_loop(C):  # the same formula, written entry by entry
    n_in, n_out = len(C), len(C[0])
    return [[C[i][o] - sum(C[i]) / n_out for o in range(n_out)] for i in range(n_in)]


FIRST_STEP_WRONG = {
    "factorised 2(C - mean)": (lambda C: 2 * first_step_ref(C), "two factors"),
    "no normaliser": (lambda C: np.asarray(C), "normaliser"),
    "column mean": (lambda C: C - C.mean(0), "each column"),
    "overall mean": (lambda C: C - C.mean(), "whole table"),
    "sign": (lambda C: -first_step_ref(C), "sign"),
    "probabilities": (lambda C: first_step_ref(C) / C.shape[1], "probabilities"),
    "Trans": (lambda C: theory.ibm1_translation(C) - 1 / C.shape[1], "raw counts"),
    "transposed": (lambda C: first_step_ref(C).T, "shape"),
    "off by a little": (lambda C: first_step_ref(C) + 0.01, "sum to 0"),
    "two entries off, rows still summing to 0": (
        lambda C: first_step_ref(C) + 0.01 * (np.arange(np.shape(C)[1]) < 2)
        * np.array([1, -1] + [0] * (np.shape(C)[1] - 2)), "is off on the first"),
}


# --------------------------------------------------------------------------- 3.2 count table
TABLE = [[1.0, 0.5, 0.5, 0.0, 0.0],
         [1.0, 1.0, 0.0, 0.0, 0.5],
         [0.5, 0.0, 1.0, 0.5, 0.0],
         [0.0, 0.0, 0.5, 0.5, 0.0],
         [0.5, 0.5, 0.0, 0.0, 0.5]]


def table_ref():
    return TABLE


def _bag(weight):
    """Co-occurrences of TINY_CORPUS, each pair adding weight(L, T)."""
    enc = encode_corpus(ex.TINY_CORPUS)
    C = np.zeros((5, 5))
    for x, y in zip(enc["src"], enc["tgt"]):
        for i in x:
            for o in y:
                C[i, o] += weight(len(x), len(y))
    return C


TRUE = np.diag([1.0, 1.0, 1.0, 0.5, 0.5])       # das the, Haus house, Buch book, ein a, im in

TABLE_WRONG = {
    "integer counts": (lambda: _bag(lambda L, T: 1), "not 1"),
    "1/T": (lambda: _bag(lambda L, T: 1 / T), "output sentence"),
    "transposed": (lambda: np.array(TABLE).T, "transposed"),
    "Trans": (lambda: theory.ibm1_translation(np.array(TABLE)), "Trans(o | i)"),
    "column-normalised": (lambda: np.array(TABLE) / np.array(TABLE).sum(0), "each column"),
    "true translations only": (lambda: TRUE, "alignment"),
    "true translations, counted 1": (lambda: 2 * TRUE, "alignment"),
    "1/(L T)": (lambda: _bag(lambda L, T: 1 / (L * L)), "1/(L·T)"),
    "averaged over pairs": (lambda: np.array(TABLE) / 4, "average"),
    "4 x 4 (no im)": (lambda: np.array(TABLE)[:4, :4], "shape"),
    "a slip": (lambda: np.array(TABLE) + np.eye(5) * 0.5, "is off"),
}


# --------------------------------------------------------------------------- 3.3 EM step
def em_ref(trans, sources, targets):
    return theory.ibm1_em(sources, targets, trans.shape[0], trans.shape[1], iterations=1,
                          init=trans)["trans"]


def em_loop(trans, sources, targets):
    counts = np.zeros_like(trans)
    for x, y in zip(sources, targets):
        for o in y:
            post = trans[x, o] / trans[x, o].sum()
            for l, i in enumerate(x):
                counts[i, o] += post[l]
    return counts / counts.sum(1, keepdims=True)


def _em(**kwargs):
    return lambda trans, s, t: ex._em_variant(trans, s, t, **kwargs)


def em_fancy(trans, sources, targets):  # a reader's vectorised step with the buffered +=
    counts = np.zeros_like(trans)
    for x, y in zip(sources, targets):
        x, y = np.asarray(x), np.asarray(y)
        lik = trans[x[None, :], y[:, None]]
        counts[x[None, :], y[:, None]] += lik / lik.sum(1, keepdims=True)
    return counts / counts.sum(1, keepdims=True)


def em_null(trans, sources, targets):
    return np.vstack([em_loop(trans, sources, targets), np.full(trans.shape[1],
                                                                1 / trans.shape[1])])


def em_slip_in_row_2(trans, sources, targets):  # row 2 moved a tenth onto o = 0
    out = em_loop(trans, sources, targets)
    out[2] *= 0.9
    out[2, 0] += 0.1
    return out


EM_WRONG = {
    "uniform posterior": (_em(posterior="uniform"), "ignores the current table"),
    "posterior over t": (_em(posterior="target"), "source positions"),
    "no posterior normalisation": (_em(posterior="none"), "not normalised"),
    "buffered fancy indexing": (em_fancy, "np.add.at"),
    "M-step over columns": (_em(mstep="columns"), "normalises each row"),
    "no M-step": (_em(mstep="none"), "expected counts"),
    "a NULL row": (em_null, "NULL"),
    "transposed": (lambda tr, s, t: em_loop(tr, s, t).T, "transposed"),
    "NaN": (lambda tr, s, t: em_loop(tr, s, t) * np.nan, "NaN"),
    "rows not normalised": (lambda tr, s, t: em_loop(tr, s, t) * 2, "sum to 1"),
    "crash": (lambda tr, s, t: 1 / 0, "ZeroDivisionError"),
    "a slip in one row": (em_slip_in_row_2, "row of source word i = 2"),
}


# --------------------------------------------------------------------------- 3.4 what if
def recovery_ref(zipf):
    task = replace(TRANSLATION.get(), zipf=zipf).task()
    c = task.corpus()
    C = theory.count_table(c["src"], c["tgt"], task.vocab, task.vocab)
    return theory.dictionary_recovery(theory.ibm1_translation(C), task.dictionary)


def _reading(zipf, key):
    return ex._zipf_readings(zipf)[key]


RECOVERY_WRONG = {
    "ignores zipf": (lambda z: recovery_ref(1.0), "same value for every zipf"),
    "percentage": (lambda z: 100 * recovery_ref(z), "percentage"),
    "number of words": (lambda z: _reading(z, "count"), "not their number"),
    "position by position": (lambda z: _reading(z, "positions"), "position-by-position"),
    "column argmax": (lambda z: _reading(z, "column argmax"), "argmax of each column"),
    "column-normalised": (lambda z: _reading(z, "columns"), "row by row"),
    "an array": (lambda z: np.array([recovery_ref(z)] * 2), "one number"),
    "a little off": (lambda z: recovery_ref(z) + 0.01, "off at zipf"),
}


# --------------------------------------------------------------------------- the table
CASES = [
    (ex.check_first_step, [first_step_ref, first_step_loop], FIRST_STEP_WRONG),
    (ex.check_count_table_by_hand, [table_ref, lambda: np.array(TABLE)], TABLE_WRONG),
    (ex.check_em_step, [em_ref, em_loop], EM_WRONG),
    (ex.check_one_step_recovery, [recovery_ref], RECOVERY_WRONG),
]
RIGHT = [(c, r) for c, refs, _ in CASES for r in refs]
WRONG = [(c, name, f, word) for c, _, wrong in CASES for name, (f, word) in wrong.items()]


def test_every_checker_of_the_module_is_tested():
    names = {n for n, f in vars(ex).items() if n.startswith("check_") and hasattr(f, "title")}
    assert names == {c.__name__ for c, _, _ in CASES}


@pytest.mark.parametrize("check, answer", RIGHT,
                         ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(RIGHT)])
def test_reference_passes(check, answer, capsys):
    result = check(answer)
    assert bool(result) is True, result.message
    assert capsys.readouterr().out.startswith("✓")
    assert check(answer, solution=True)


@pytest.mark.parametrize("check, name, answer, word", WRONG,
                         ids=[f"{c.__name__}-{n}" for c, n, _, _ in WRONG])
def test_usual_mistake_gets_its_hint(check, name, answer, word, capsys):
    result = check(answer)
    assert result.status == "wrong", f"{name}: accepted"
    assert word in result.message, f"{name}: hint {result.message!r} lacks {word!r}"
    assert capsys.readouterr().out.startswith("✗")
    # in a solution cell a wrong answer raises; a crashing one re-raises its own error
    with pytest.raises(ZeroDivisionError if name == "crash" else AssertionError):
        check(answer, solution=True)


@pytest.mark.parametrize("check", [c for c, _, _ in CASES], ids=lambda c: c.__name__)
def test_stub_is_not_attempted(check, capsys):
    result = check(_stub)
    assert result.status == "not attempted" and not result
    assert capsys.readouterr().out.startswith("·")
    with pytest.raises(AssertionError, match="not attempted"):  # a stub is no solution
        check(_stub, solution=True)


@pytest.mark.parametrize("check", [c for c, _, _ in CASES], ids=lambda c: c.__name__)
def test_a_non_callable_answer_is_a_type_error(check):
    with pytest.raises(TypeError, match="callable"):
        check([[0.0]])
    with pytest.raises(TypeError, match="solution"):
        check(_stub, solution="yes")


def test_the_usual_mistakes_differ_from_the_reference():
    """Every mistake the EM checker recognises changes the answer on some case (otherwise
    its hint could never be given)."""
    for kwargs in ex._EM_MISTAKES.values():
        assert any(not np.allclose(ex._em_variant(tr, s, t, **kwargs), em_ref(tr, s, t))
                   for tr, s, t in ex._em_cases()), kwargs
    enc = encode_corpus(ex.TINY_CORPUS)
    C = theory.count_table(enc["src"], enc["tgt"], 5, 5)
    assert np.allclose(C, TABLE)
    for hint, bad in ex._count_table_mistakes():
        assert not np.allclose(bad, C), hint


def test_the_checker_does_not_mutate_its_inputs_for_the_next_case():
    """A reader's step that works in place must not change the checker's later cases."""
    def in_place(trans, sources, targets):
        new = em_loop(trans, sources, targets)
        trans[...] = new
        return new

    assert ex.check_em_step(in_place)


# --------------------------------------------------------------------------- the gaming learner
# (#30 §3) Answers that know nothing (zeros, a constant, the input handed back) and near misses
# (the reference with one entry or one row wrong, as a learner who copied a hint's "expected"
# value would submit): none is accepted, and no hint shows a number the reference computes.


def _like_C(value):
    return lambda C: np.full(np.shape(C), value)


def _first_step_one_entry_off(C):
    out = first_step_ref(C)
    out[0, 0] += 0.25
    return out


def _table_one_entry_off():
    out = np.array(TABLE)
    out[1, 1] = 0.0                      # Haus/house forgotten
    return out


def _table_one_row_off():
    out = np.array(TABLE)
    out[4] = 0.0                         # the fourth pair, im Haus, left out
    return out


def _em_one_entry_off(trans, s, t):
    out = em_ref(trans, s, t)
    out[0] *= 0.9
    out[0, 0] += 0.1                     # row 0 still sums to 1
    return out


GAMED = {
    "check_first_step": (first_step_ref, {
        "zeros": _like_C(0.0), "0.5": _like_C(0.5), "ones": _like_C(1.0),
        "C handed back minus a constant": lambda C: np.asarray(C) - 0.5,
        "one entry off": _first_step_one_entry_off}),
    "check_count_table_by_hand": (table_ref, {
        "zeros": lambda: np.zeros((5, 5)), "0.5": lambda: np.full((5, 5), 0.5),
        "ones": lambda: np.ones((5, 5)), "one entry off": _table_one_entry_off,
        "one row off": _table_one_row_off}),
    "check_em_step": (em_ref, {
        "zeros": lambda tr, s, t: np.zeros_like(tr),
        "uniform": lambda tr, s, t: np.full(tr.shape, 1 / tr.shape[1]),
        "the input table": lambda tr, s, t: tr.copy(),
        "one entry off": _em_one_entry_off}),
    "check_one_step_recovery": (recovery_ref, {
        "zeros": lambda z: 0.0, "0.5": lambda z: 0.5, "ones": lambda z: 1.0,
        "the exponent itself": lambda z: z}),
}
GAMED_CASES = [(name, g) for name in GAMED for g in GAMED[name][1]]


def test_every_checker_is_played_by_the_gaming_learner():
    assert set(GAMED) == {c.__name__ for c, _, _ in CASES}
    assert all(len(v[1]) >= 2 for v in GAMED.values())


@pytest.mark.parametrize("name, gamed", GAMED_CASES, ids=[f"{n}-{g}" for n, g in GAMED_CASES])
def test_a_gamed_answer_is_refused_and_its_hint_shows_no_reference_value(name, gamed,
                                                                          capsys):
    reference, answers = GAMED[name]
    leaks = hint_leaks(getattr(ex, name), reference, answers[gamed])
    assert not leaks, f"{gamed}: the hint shows the reference's {leaks}"
    assert not re.search(r"expected -?\d", capsys.readouterr().out.split("✗")[-1])


def test_following_the_count_tables_hints_from_zeros_never_reaches_the_answer():
    """The issue's game: start from an all-zero table and, each time the hint names an entry
    and its expected value, copy that value in. It took 15 submissions to reach ✓; now the
    hints name no value, so it gets nowhere."""
    table = np.zeros((5, 5))
    for _ in range(40):
        result = ex.check_count_table_by_hand(lambda: table.copy())
        assert result.status == "wrong"
        m = re.search(r"index \((\d), (\d)\): got \S+, expected (\S+?)(?: |$)", result.message)
        if not m:
            break
        table[int(m.group(1)), int(m.group(2))] = float(m.group(3))
    assert not ex.check_count_table_by_hand(lambda: table.copy())
    assert np.all(table == 0), "a hint gave away an entry of the table"


def test_the_count_tables_hint_names_the_wrong_row_and_its_pairs():
    """A slip the checker cannot name gets the first wrong row and the pairs its word is in
    (both in the exercise's text), not the entry's value."""
    result = ex.check_count_table_by_hand(_table_one_entry_off)
    assert "Haus" in result.message and "das Haus" in result.message
    assert "im Haus" in result.message and "0.5" not in result.message
    result = ex.check_count_table_by_hand(_table_one_row_off)
    assert "row im" in result.message


def test_the_first_steps_generic_hints():
    assert "0 everywhere" in ex.check_first_step(_like_C(0.0)).message
    assert "sum to 0" in ex.check_first_step(_like_C(0.5)).message
    assert "proportional" in ex.check_first_step(lambda C: 3 * first_step_ref(C)).message


def test_an_em_step_that_returns_its_input_is_recognised():
    assert "returns the table it was given" in ex.check_em_step(
        lambda tr, s, t: tr.copy()).message


def test_float32_work_passes():
    """The checkers' tolerance (relative 1e-5, stated in the exercises) accepts float32 work,
    torch's default, and still refuses the usual mistakes (the tests above)."""
    import torch

    def first_step_f32(C):
        C = torch.tensor(np.asarray(C), dtype=torch.float32)
        return C - C.mean(1, keepdim=True)

    assert ex.check_first_step(first_step_f32)
    assert ex.check_em_step(lambda tr, s, t: em_loop(np.asarray(tr, np.float32), s, t))
    assert ex.check_count_table_by_hand(lambda: np.array(TABLE, dtype=np.float32))
