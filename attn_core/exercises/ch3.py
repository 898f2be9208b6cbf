"""Chapter 3's exercises (KTIW and IBM Model 1, SZKS §2-4): their checkers.

- :func:`check_first_step` (derivation): the velocity of the full-rank bag-of-words proxy at
  θ = 0, as a formula of the count table C, against autograd;
- :func:`check_count_table_by_hand` (derivation): the count table of a four-pair corpus
  (:data:`TINY_CORPUS`), against :func:`~attn_core.theory.count_table`;
- :func:`check_em_step` (code): one EM iteration of IBM Model 1, against
  :func:`~attn_core.theory.ibm1_em`;
- :func:`check_one_step_recovery` (what if): how much of the hidden dictionary the one-step
  table recovers row by row when the word frequencies are less skewed (another Zipf exponent).

Used in ``notebooks/03_ibm1.ipynb`` as ``from attn_core.exercises import ch3 as ex``; see
:mod:`attn_core.exercises` for the pattern.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import torch

from .. import theory
from ..data import encode_corpus
from ..metrics import alignment_accuracy
from ..models import BagOfWordsProxy
from . import (Wrong, as_array, checker, expect_number, expect_shape,
               first_mistake, matches)

__all__ = ["check_first_step", "check_count_table_by_hand", "check_em_step",
           "check_one_step_recovery", "TINY_CORPUS", "ZIPF_EXPONENTS"]

#: The three German → English pairs of Koehn's textbook example of IBM Model 1 (Statistical
#: Machine Translation, 2010, §4.2) and one pair whose sides differ in length. Word ids by
#: first appearance: das 0, Haus 1, Buch 2, ein 3, im 4; the 0, house 1, book 2, a 3, in 4.
TINY_CORPUS = (
    (("das", "Haus"), ("the", "house")),
    (("das", "Buch"), ("the", "book")),
    (("ein", "Buch"), ("a", "book")),
    (("im", "Haus"), ("in", "the", "house")),
)
_ROWS, _COLS = "das, Haus, Buch, ein, im", "the, house, book, a, in"



# --------------------------------------------------------------------------- 3.1 (derivation)
#: (pairs M, source length L, target length T, |I|, |O|, seed): L != T and |I| != |O|, so
#: that 1/L and 1/T, and the two axes of C, cannot be confused.
_FIRST_STEP_CASES = ((6, 3, 4, 5, 4, 0), (10, 5, 2, 7, 6, 1), (4, 2, 3, 3, 5, 2))
#: The tolerance of Exercises 3.1 and 3.3 (relative, and absolute relative to the largest
#: entry): float32 work (torch's default) passes; every usual mistake is far outside it.
_RTOL = 1e-5


def _proxy_corpus(M: int, L: int, T: int, n_in: int, n_out: int, seed: int):
    g = torch.Generator().manual_seed(1000 + seed)
    return (torch.randint(0, n_in, (M, L), generator=g),
            torch.randint(0, n_out, (M, T), generator=g))


def _proxy_velocity(src: torch.Tensor, tgt: torch.Tensor, n_in: int, n_out: int) -> np.ndarray:
    """−∂L/∂θ at θ = 0 of the full-rank proxy (``BagOfWordsProxy(dim=None)``), L the loss
    summed over pairs and output words, by autograd."""
    model = BagOfWordsProxy(n_in, n_out, dim=None).double()
    logp = torch.log_softmax(model(src.unsqueeze(0)), -1)[0]             # (M, |O|)
    loss = -logp.gather(1, tgt).sum()
    (grad,) = torch.autograd.grad(loss, model.theta_full)
    return -grad[0].numpy()


def _first_step_mistakes(C: np.ndarray) -> dict:
    row = C.mean(1, keepdims=True)
    return {
        "twice too large: the 2 of §3 comes from the two factors W and e both moving; the "
        "free θ of §2 is a single factor": 2 * (C - row),
        "the sign: a velocity is minus the gradient of the loss, so the entries of word pairs "
        "that co-occur often must grow": row - C,
        "the co-occurrence term alone: the softmax's normaliser (the −p_o part of the "
        "gradient of −log p_y) is missing": C,
        "you subtract the mean of each column; at θ = 0 the normaliser spreads each row i "
        "evenly over the output words o, so subtract each row's own mean": C - C.mean(0),
        "you subtract the mean of the whole table; each row i has its own mean over the "
        "output words o": C - C.mean(),
        "that is the velocity of the probabilities softmax(θ_i) at θ = 0; the logits θ "
        "themselves have no factor 1/|O|": (C - row) / C.shape[1],
        "the gradient uses the raw counts C, not the normalised table Trans(o | i)":
            theory.ibm1_translation(C) - 1 / C.shape[1],
    }


@checker("Exercise 3.1: the free proxy's first step")
def check_first_step(first_step):
    """``first_step(C)`` -> the |I| × |O| velocity dθ/dτ at θ = 0 of the full-rank proxy
    under gradient flow on the summed loss, as a formula of the count table ``C``."""
    for n, case in enumerate(_FIRST_STEP_CASES):
        src, tgt = _proxy_corpus(*case)
        n_in, n_out = case[3], case[4]
        C = theory.count_table(src.numpy(), tgt.numpy(), n_in, n_out)
        got = first_step(C.copy())
        got = expect_shape(got, C.shape, "the velocity",
                           "one entry per (input word i, output word o), like C")
        want = _proxy_velocity(src, tgt, n_in, n_out)
        tol = dict(rtol=_RTOL, atol=_RTOL * np.abs(want).max())   # float32 work passes
        if matches(got, want, **tol):
            continue
        first_mistake(got, _first_step_mistakes(C), **tol)
        _first_step_hint(got, want, ("first", "second", "third")[n])


def _first_step_hint(got: np.ndarray, want: np.ndarray, which: str) -> None:
    """:class:`Wrong` naming what is wrong with a velocity no usual mistake explains, never
    an entry's value (a hint that printed it could be copied back, entry by entry)."""
    if not np.all(np.isfinite(got)):
        raise Wrong("the velocity contains NaN or inf")
    if np.allclose(got, 0, atol=1e-12):
        raise Wrong("your velocity is 0 everywhere: at θ = 0 the loss is not at a minimum; "
                    "the co-occurrence term 1[o = y_t] pulls every seen pair up")
    if np.any(np.abs(got.sum(1)) > 1e-4 * max(1.0, np.abs(want).max())):
        raise Wrong("each row of the velocity must sum to 0 over the output words o (the "
                    "softmax's normaliser takes back, spread evenly over o, what the "
                    "co-occurrence term gives); yours do not")
    k = float(np.vdot(got, want) / np.vdot(want, want))
    if abs(k - 1) > 1e-4 and matches(got, k * want, rtol=_RTOL,
                                     atol=_RTOL * np.abs(k * want).max()):
        raise Wrong("your velocity is proportional to the right one, by the wrong factor: "
                    "check each constant (the 1/L_j of z^j, the uniform p = 1/|O|, no 2)")
    raise Wrong(f"your velocity is off on the {which} of the checker's three corpora: "
                "differentiate −Σ_j Σ_t log softmax(z^j)_{y_t} with z^j = (1/L_j) Σ_l "
                "θ_{x_l}, at θ = 0 where the softmax is uniform, and collect the terms of "
                "each pair (i, o)")


# --------------------------------------------------------------------------- 3.2 (derivation)
def _tiny():
    enc = encode_corpus(TINY_CORPUS)
    return enc, theory.count_table(enc["src"], enc["tgt"], 5, 5)


def _count_table_mistakes() -> list:
    enc, C = _tiny()
    truth = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}          # das the, Haus house, Buch book, ein a, im in
    aligned, by_t, ones = np.zeros((5, 5)), np.zeros((5, 5)), np.zeros((5, 5))
    for x, y in zip(enc["src"], enc["tgt"]):
        for i in x:
            for o in y:
                by_t[i, o] += 1 / len(y)
                ones[i, o] += 1
                aligned[i, o] += (o == truth[i]) / len(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        col = C / C.sum(0, keepdims=True)
    known = ("the learner does not know the alignment: C counts every (source word, output "
             "word) pair of a sentence pair, not only the true translations")
    return [
        ("every co-occurrence adds 1/L (L = 2, the length of the source sentence), not 1",
         ones),
        ("each co-occurrence adds 1/L with L the length of the *source* sentence; you divided "
         "by the length of the output sentence", by_t),
        (f"rows are the German source words ({_ROWS}), columns the English output words "
         f"({_COLS}): your table is transposed", C.T),
        ("that is Trans(o | i), each row divided by its sum; C itself is the (1/L-weighted) "
         "counts", theory.ibm1_translation(C)),
        ("you divided each column by its sum; C is the (1/L-weighted) counts, not normalised",
         col),
        (known, aligned),
        (known, 2 * aligned),
        ("divided once too often: each co-occurrence adds 1/L, not 1/(L·T)", C / 2),
        ("C sums over the sentence pairs; it does not average them", C / len(TINY_CORPUS)),
    ]


@checker("Exercise 3.2: the count table by hand")
def check_count_table_by_hand(count_table_by_hand):
    """``count_table_by_hand()`` -> the 5 × 5 count table C of :data:`TINY_CORPUS` (rows das,
    Haus, Buch, ein, im; columns the, house, book, a, in)."""
    got = count_table_by_hand()
    got = expect_shape(got, (5, 5), "your table", f"rows {_ROWS}; columns {_COLS}")
    _, C = _tiny()
    if matches(got, C):
        return
    first_mistake(got, _count_table_mistakes())
    if not np.all(np.isfinite(got)):
        raise Wrong("your table contains NaN or inf")
    # the first wrong row and the pairs its word is in (the exercise's own table), never an
    # entry's value: a hint "got 1, expected 0.5" is followed to ✓ without counting anything
    row = int(np.flatnonzero(~np.isclose(got, C, rtol=1e-5, atol=1e-8).all(1))[0])
    word = _ROWS.split(", ")[row]
    pairs = " and ".join(f"'{' '.join(s)} → {' '.join(t)}'" for s, t in TINY_CORPUS
                         if word in s)
    raise Wrong(f"row {word} is off: {word} occurs in {pairs}; each of these pairs adds "
                f"1/L (L: the number of German words of the pair) to C[{word}, o] for every "
                f"English word o it holds, once per co-occurrence")


# --------------------------------------------------------------------------- 3.3 (code)
def _em_cases() -> list:
    """(trans, sources, targets): the tiny corpus from the uniform table and from the table
    after one iteration; a corpus with unequal lengths, repeated words and |I| != |O| from a
    random positive table."""
    enc, _ = _tiny()
    src, tgt = enc["src"], enc["tgt"]
    uniform = np.full((5, 5), 0.2)
    after_one = theory.ibm1_em(src, tgt, 5, 5, iterations=1)["trans"]
    rng = np.random.default_rng(3)
    src3 = [[0, 1, 0], [2, 3, 4, 2], [1, 4], [0, 3, 3, 1, 2]]
    tgt3 = [[0, 1, 1, 2], [3, 4], [5, 0, 2], [1, 1, 5, 4, 3]]
    trans3 = rng.random((5, 6)) + 0.05
    trans3 /= trans3.sum(1, keepdims=True)
    return [(uniform, src, tgt), (after_one, src, tgt), (trans3, src3, tgt3)]


def _em_variant(trans, sources, targets, posterior: str = "source", mstep: str = "rows",
                buffered: bool = False) -> np.ndarray:
    """One EM iteration written out pair by pair, right (the defaults) or with one of the
    usual mistakes: ``posterior`` normalised over ``"source"`` positions l (right), over
    ``"target"`` positions t, ``"none"`` or ``"uniform"`` (1/L, ignoring the table); the
    M-step normalises ``"rows"`` (right), ``"columns"`` or ``"none"``; ``buffered`` adds the
    counts with NumPy fancy indexing, which adds a repeated (i, o) index pair only once."""
    counts = np.zeros_like(trans)
    for x, y in zip(sources, targets):
        x, y = np.asarray(x), np.asarray(y)
        lik = trans[x[None, :], y[:, None]]                   # (T, L): Trans(y_t | x_l)
        if posterior == "source":
            post = lik / lik.sum(1, keepdims=True)
        elif posterior == "target":
            post = lik / lik.sum(0, keepdims=True)
        elif posterior == "uniform":
            post = np.full(lik.shape, 1 / len(x))
        else:
            post = lik
        rows, cols = np.broadcast_to(x[None, :], post.shape), np.broadcast_to(y[:, None],
                                                                            post.shape)
        if buffered:
            counts[rows, cols] += post
        else:
            np.add.at(counts, (rows, cols), post)
    if mstep == "rows":
        return counts / counts.sum(1, keepdims=True)
    if mstep == "columns":
        return counts / counts.sum(0, keepdims=True)
    return counts


_EM_MISTAKES = {
    "your E-step ignores the current table: its alignment posterior is 1/L (uniform), which "
    "is right only from the uniform start; from any other table it is Trans(y_t | x_l) "
    "normalised": dict(posterior="uniform"),
    "is your alignment posterior normalised over the source positions l? For each output "
    "word y_t it is a distribution over l, not over the output positions t":
        dict(posterior="target"),
    "the E-step's posterior is not normalised: for each output word y_t the weights over "
    "the source positions l must sum to 1": dict(posterior="none"),
    "repeated words are undercounted: with NumPy fancy indexing, counts[i_idx, o_idx] += w "
    "adds a repeated (i, o) index pair only once; use np.add.at or a loop":
        dict(buffered=True),
    "the M-step normalises each row: Trans(o | i) is a distribution over the output words o "
    "for each source word i, not over the source words for each o": dict(mstep="columns"),
    "you return the expected counts; the M-step divides each row by its sum":
        dict(mstep="none"),
}


@checker("Exercise 3.3: one iteration of EM")
def check_em_step(em_step):
    """``em_step(trans, sources, targets)`` -> the |I| × |O| table after one E-step and one
    M-step of IBM Model 1 (no NULL word); ``sources`` and ``targets`` are lists of token-id
    lists."""
    for n, (trans, src, tgt) in enumerate(_em_cases()):
        n_in, n_out = trans.shape
        got = em_step(trans.copy(), [list(x) for x in src], [list(y) for y in tgt])
        arr = as_array(got, "the new table")
        if arr.shape == (n_in + 1, n_out):
            raise Wrong("one row too many: this exercise's IBM Model 1 has no NULL word")
        if arr.shape == (n_out, n_in) and n_in != n_out:
            raise Wrong(f"your table has shape {arr.shape}, transposed: rows are the source "
                        f"words i, columns the output words o, so {(n_in, n_out)}")
        arr = expect_shape(arr, trans.shape, "the new table", "the same shape as trans")
        want = theory.ibm1_em(src, tgt, n_in, n_out, iterations=1, init=trans)["trans"]
        if matches(arr, want, rtol=_RTOL, atol=_RTOL * 1e-2):
            continue
        for hint, kwargs in _EM_MISTAKES.items():
            bad = _em_variant(trans, src, tgt, **kwargs)
            if not matches(bad, want) and matches(arr, bad, rtol=_RTOL, atol=_RTOL * 1e-2):
                raise Wrong(hint)
        if matches(arr, trans, rtol=_RTOL, atol=_RTOL * 1e-2):
            raise Wrong("your step returns the table it was given: the E-step's expected "
                        "counts, normalised row by row, make a new table")
        if matches(arr, want.T, rtol=_RTOL, atol=_RTOL * 1e-2):
            raise Wrong("your table is transposed: rows are the source words i, columns the "
                        "output words o")
        if not np.all(np.isfinite(arr)):
            raise Wrong("the new table contains NaN or inf: a division by a zero sum?")
        if np.any(np.abs(arr.sum(1) - 1) > 1e-6):
            raise Wrong("each row Trans(· | i) must sum to 1 over the output words (the "
                        "M-step)")
        # where, never the expected value (it could be copied back entry by entry)
        start = "the uniform table" if n == 0 else "a non-uniform table"
        row = int(np.flatnonzero(~np.isclose(arr, want, rtol=_RTOL,
                                             atol=_RTOL * 1e-2).all(1))[0])
        raise Wrong(f"the new table from {start} ({('first', 'second', 'third')[n]} of the "
                    f"checker's three cases) is off, first in the row of source word i = "
                    f"{row}: E-step: P(a_t = l) ∝ Trans(y_t | x_l) over the positions l; "
                    f"expected counts c(x_l, y_t) += P(a_t = l); M-step: divide each row by "
                    f"its sum")


# --------------------------------------------------------------------------- 3.4 (what if)
#: The Zipf exponents the checker tries (the chapter's corpus has 1.0).
ZIPF_EXPONENTS = (0.5, 0.75, 1.0)


@functools.lru_cache(maxsize=16)
def _zipf_readings(zipf: float) -> dict:
    """The one-step table of the chapter's translation corpus (the current mode's preset)
    with Zipf exponent ``zipf``, read row by row (right) and in the usual wrong ways."""
    from ..chapters.ch3_ibm1 import TRANSLATION

    task = replace(TRANSLATION.get(), zipf=zipf).task()
    c = task.corpus()
    C = theory.count_table(c["src"], c["tgt"], task.vocab, task.vocab)
    trans = theory.ibm1_translation(C)
    d = task.dictionary.numpy()
    beta = theory.ibm1_maps(trans, c["src"], c["tgt"])[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        col = C / C.sum(0, keepdims=True)
    return {
        "right": theory.dictionary_recovery(trans, d),
        "positions": alignment_accuracy(beta, c["src"].numpy(), c["align"].numpy())["word"],
        "column argmax": float(np.mean(trans.argmax(0) == d)),
        "columns": theory.dictionary_recovery(col, d),
        "count": theory.dictionary_recovery(trans, d) * task.vocab,
    }


@checker("Exercise 3.4: less skewed word frequencies")
def check_one_step_recovery(one_step_recovery):
    """``one_step_recovery(zipf)`` -> the fraction of the source words whose one-step row
    argmax ``argmax_o Trans(o | i)`` is their true translation, for the chapter's corpus with
    Zipf exponent ``zipf``."""
    got = [expect_number(one_step_recovery(z), f"one_step_recovery({z})") for z in ZIPF_EXPONENTS]
    ref = [_zipf_readings(z) for z in ZIPF_EXPONENTS]
    want = [r["right"] for r in ref]
    if matches(got, want, rtol=0, atol=1e-9):
        return
    first_mistake(got, {
        "that is the position-by-position reading (argmax over the source positions of each "
        "output word); the question is row by row: is argmax_o Trans(o | i) the true "
        "translation of i?": [r["positions"] for r in ref],
        "you take the argmax of each column (over source words); read each row i: "
        "argmax_o Trans(o | i)": [r["column argmax"] for r in ref],
        "is your table normalised over each column, P(i | o)? Trans(o | i) divides each row "
        "of C by its sum (or, if you read positions: the question is row by row)":
            [r["columns"] for r in ref],
        "return the fraction of the source words, not their number":
            [r["count"] for r in ref],
        "return a fraction between 0 and 1, not a percentage": [100 * w for w in want],
    }, rtol=0, atol=1e-9)
    if len(set(np.round(got, 12))) == 1:
        raise Wrong("your function gives the same value for every zipf: does it build a new "
                    "corpus with the given exponent (replace(cfg, zipf=zipf).task())?")
    bad = [f"{z}: {g:.4g}" for z, g, w in zip(ZIPF_EXPONENTS, got, want) if abs(g - w) > 1e-9]
    raise Wrong(f"off at zipf {', '.join(bad)}: build the task with the new exponent, its "
                f"count table and one-step table, then theory.dictionary_recovery with that "
                f"task's dictionary")
