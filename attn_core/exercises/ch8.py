"""Chapter 8's exercises (the scorecard): their checkers.

- :func:`check_contrast` (Exercise 8.1, code): the count lens's contrast ξ of a batch of
  sentence pairs, against :func:`~attn_core.chapters.ch8_scorecard.count_lens`;
- :func:`check_auc` (Exercise 8.2, code): the AUC of a lens over runs, ties counted half,
  against :func:`~attn_core.metrics.outcome_auc`;
- :func:`check_predict_rate` (Exercise 8.3, what if): a condition's success rate predicted
  from its data with the chapter's best lens; once right, the ✓ line scores the reader's
  predictions against the stored held-out runs and names each miss.

Each checker runs the reader's function with the library's own (``count_lens``,
``outcome_auc``, ``predict``) replaced by one that raises: an answer that calls them is
told to write the computation itself.

Used in ``notebooks/08_scorecard.ipynb`` as ``from attn_core.exercises import ch8 as ex``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..chapters import ch8_scorecard as ch
from ..data import CopyTask
from ..config import wrap_line
from ..metrics import outcome_auc, wilson_interval
from ..theory import count_table
from . import Wrong, as_array, checker, expect_number, matches, own_work

__all__ = ["check_contrast", "check_auc", "check_predict_rate", "contrast_reference",
           "auc_reference", "predict_rate_reference", "score_held_out", "CONTRAST_CASES"]


# ------------------------------------------------------------------ Exercise 8.1 (code)
#: (length, vocab, distribution, pairs, seed) of the batches the checker draws.
CONTRAST_CASES = ((6, 6, "permutation", 300, 0), (6, 9, "distinct", 300, 1),
                  (8, 8, "iid", 300, 2), (5, 10, "mixture", 300, 3),
                  (20, 24, "distinct", 400, 4))


def _batch(L, V, dist, n, seed):
    task = ch.condition_task(L, V, dist)
    b = task.sample(torch.Generator().manual_seed(seed), n)
    return task, b["src"].clone(), b["tgt"].clone(), b["align"].clone()


def _centred(src, tgt, align, V: int):
    """The scaled, row-centred count table C̃ of the pairs, the (n, l, t) values
    C̃[x_l, y_t] and the aligned position's (n, t)."""
    src, tgt, align = (np.asarray(x) for x in (src, tgt, align))
    n, L = src.shape
    C = count_table(src, tgt, V, V) * L / n                  # chapter 4's scaled table
    C = C - C.mean(1, keepdims=True)
    M = C[src[:, :, None], tgt[:, None, :]]                 # (n, l, t)
    return C, M, np.take_along_axis(M, align[:, None, :], 1)[:, 0]


def contrast_reference(src, tgt, align, V: int) -> float:
    """ξ of the pairs ``src``, ``tgt`` (n, L) with ``align`` (n, L), every token a data
    word below ``V``: the scaled, row-centred count table C̃, then the mean over pairs and
    steps of C̃[x_{a_t}, y_t] − mean_l C̃[x_l, y_t]."""
    _, M, right = _centred(src, tgt, align, V)
    return float((right - M.mean(1)).mean())


def _contrast_variants(src, tgt, align, V) -> dict:
    Cc, _, rc = _centred(src, tgt, align, V)
    tgt_ = np.asarray(tgt)
    return {
        "this is the diagonal's value alone: subtract the mean of C̃[x_l, y_t] over the "
        "sentence's positions l, so that a flat table gives 0": float(rc.mean()),
        "compare with the mean over the vocabulary's words, not over the words of this "
        "sentence's positions": float((rc - Cc[:, tgt_].mean(0)).mean()),
    }


@checker("Exercise 8.1: the count lens's contrast ξ")
def check_contrast(contrast):
    """``contrast(src, tgt, align, V)`` -> ξ of the pairs."""
    import attn_core.chapters.ch8_scorecard as mod

    for L, V, dist, n, seed in CONTRAST_CASES:
        task, src, tgt, align = _batch(L, V, dist, n, seed)
        with own_work((mod, "count_lens"), (mod, "_count_lens")):
            got = expect_number(contrast(src.clone(), tgt.clone(), align.clone(), V),
                                f"contrast(...) for {dist}, L = {L}, V = {V}", finite=True)
        want = contrast_reference(src, tgt, align, V)
        if matches(got, want, rtol=1e-6, atol=1e-9):
            continue
        for hint, bad in _contrast_variants(src, tgt, align, V).items():
            if not matches(bad, want, rtol=1e-6, atol=1e-9) and matches(got, bad, 1e-6, 1e-9):
                raise Wrong(hint)
        if dist == "permutation":
            raise Wrong(f"for permutations (L = V = {L}) the table is flat: ξ must be 0; "
                        f"got {got:.4g}")
        raise Wrong(f"for {dist} data (L = {L}, V = {V}) ξ is off ({got:.4g}): check the "
                    f"scaling L·C/n and that the table counts 1/L per co-occurrence")


# ------------------------------------------------------------------ Exercise 8.2 (code)
def auc_reference(score, ok) -> float:
    """The AUC of ``score`` for the outcomes ``ok``: the chance that a run with ``ok``
    scores above one without, ties counted half."""
    return outcome_auc(np.asarray(score, dtype=float), np.asarray(ok, dtype=bool),
                       shuffles=1)[0]


def _auc_cases():
    rng = np.random.default_rng(8)
    cases = [([0.1, 0.4, 0.35, 0.8], [False, False, True, True]),
             ([1.0, 1.0, 0.2, 0.2, 0.5], [True, False, True, False, True]),   # ties
             ([0.3] * 6, [True, False, True, False, False, True])]             # constant
    for _ in range(3):
        s = np.round(rng.normal(size=30), 1)                                  # many ties
        cases.append((s.tolist(), (rng.random(30) < 0.4).tolist()))
    return cases


@checker("Exercise 8.2: the AUC of a lens over runs")
def check_auc(auc):
    """``auc(score, ok)`` -> P(a run that copies scores above one that does not), ties
    half."""
    import attn_core.metrics as metrics

    from .. import exercises  # noqa: F401  (keeps the import order of the other checkers)

    for score, ok in _auc_cases():
        s, o = np.array(score), np.array(ok)
        with own_work((metrics, "outcome_auc"), (metrics, "auc_null")):
            got = expect_number(auc(s.copy(), o.copy()), "auc(score, ok)", finite=True)
        want = auc_reference(s, o)
        if matches(got, want, rtol=1e-9, atol=1e-12):
            continue
        pos, neg = s[o], s[~o]
        strict = float((pos[:, None] > neg[None, :]).mean())
        loose = float((pos[:, None] >= neg[None, :]).mean())
        if matches(got, 1 - want, rtol=1e-9, atol=1e-12) and want != 0.5:
            raise Wrong("the AUC is reversed: count the pairs where the run that copies "
                        "scores higher")
        if matches(got, strict) and strict != want:
            raise Wrong("a tie between a run that copies and one that does not counts "
                        "half, not 0 (a constant lens must score 0.5)")
        if matches(got, loose) and loose != want:
            raise Wrong("a tie counts half, not 1 (a constant lens must score 0.5)")
        raise Wrong(f"auc is off on {len(s)} runs: compare every run that copies with every "
                    f"run that does not")


# ------------------------------------------------------------------ Exercise 8.3 (what if)
def predict_rate_reference(counts: dict, length: int, extra: float, refs: dict) -> float:
    """The chapter's best lens ("proxy + end step")."""
    return ch.predict("proxy + end step", counts, length, extra, refs)


def _predict_cases(refs):
    for L, V, dist in ((20, 20, "permutation"), (20, 22, "distinct"), (20, 30, "distinct"),
                       (20, 20, "iid"), (10, 20, "mixture"), (20, 26, "distinct")):
        counts = ch.count_lens(ch.condition_task(L, V, dist))
        for extra in (0.0, 0.2, 1.0, 2.0):
            yield counts, L, extra


@checker("Exercise 8.3: predict a condition's success rate")
def check_predict_rate(predict_rate):
    """``predict_rate(counts, length, extra, refs)`` -> the best lens's rate; once right,
    the ✓ line scores it on the held-out conditions."""
    import attn_core.chapters.ch8_scorecard as mod

    conds = ch.conditions()
    refs = ch.references(conds)
    for counts, L, extra in _predict_cases(refs):
        with own_work((mod, "predict"), (mod, "predict_condition")):
            got = expect_number(predict_rate(dict(counts), L, extra, refs),
                                "predict_rate(...)", finite=True)
        want = predict_rate_reference(counts, L, extra, refs)
        if matches(got, want, rtol=1e-6, atol=1e-9):
            continue
        if extra == 0 and matches(got, predict_rate_reference(counts, L, 1.0, refs)):
            raise Wrong("the end step does not move your prediction: read the flat rate at "
                        "the condition's weight `extra` (np.interp over refs['flat'])")
        s_kappa = min(counts["kappa"] / refs["kappa_control"], 1)
        if matches(got, ch.predict("contrast", counts, L, extra, refs)) or (
                matches(got, _with_weight(s_kappa, extra, refs))):
            raise Wrong("that is the contrast lens's weight: the best lens moves by the "
                        "proxy's hit rate, λ = (hit − 1/L) / (1 − 1/L)")
        raise Wrong(f"off for L = {L}, hit = {counts['hit']:.3g}, extra = {extra}: r = "
                    f"r_flat + (r_control − r_flat)·λ, both rates read at `extra`")

    return lambda: score_held_out(predict_rate)


def score_held_out(predict_rate) -> str:
    """Exercise 8.3's what-if: ``predict_rate(counts, length, extra, refs)``, any lens,
    scored on the four held-out conditions as the committed predictions were: the range
    of successes runs from the central 95% range of Binomial(40, r) with every reference
    rate at its low 95% Wilson bound to that with every one at its high bound; a measured
    count outside it is a miss, named with what it says. Returns the text, one line a
    condition and one a miss, wrapped to the book's column; the checker's ✓ line is this
    for the right lens."""
    if not callable(predict_rate):
        raise TypeError(f"predict_rate must be a function (counts, length, extra, refs) -> "
                        f"rate; got {type(predict_rate).__name__}")
    refs = ch.references(ch.conditions())
    # the reference rates at their 95% Wilson bounds, for the range (as the book's)
    low_refs, high_refs = (_bounded(refs, side) for side in (0, 1))
    held = {c.name: c for c in ch.held_out_conditions()}
    parts, why = [], []
    for row in ch.HELD_OUT_ROWS:
        cfg = ch.held_out_config(row)
        counts = ch.count_lens(ch.condition_task(cfg.length, cfg.task().vocab,
                                                 cfg.distribution))
        extra = 1.0 if cfg.eos and cfg.eos_side in ("both", "target") else 0.0
        r, low, high = (_rate_of(predict_rate, counts, cfg.length, extra, refs_at, row)
                        for refs_at in (refs, low_refs, high_refs))
        c = held[row]
        lo, hi = ch.binomial_range(low, c.n)[0], ch.binomial_range(high, c.n)[1]
        inside = lo <= c.k <= hi
        verdict = "inside" if inside else ("a miss, above" if c.k > hi else "a miss, below")
        parts.append(f"{row}: you {r:.2f}, so {lo}-{hi} of {c.n}; measured {c.k} "
                     f"({verdict})")
        if not inside:
            why.append(_MISSED[row])
    return wrap_line("\n".join(parts + [w + "." for w in why]))
    return score


def _bounded(refs: dict, side: int) -> dict:
    """``refs`` with every reference count k of n replaced by n times its Wilson bound
    (``side`` 0: low, 1: high), so that k / n reads the bound."""
    out = dict(refs)
    for kind in ("flat", "control"):
        e, k, n = refs[kind]
        k = np.array([n_ * wilson_interval(int(k_), int(n_))[side] for k_, n_ in zip(k, n)])
        out[kind] = (e, k, n)
    return out


def _rate_of(predict_rate, counts, length, extra, refs, row) -> float:
    out = np.asarray(predict_rate(dict(counts), length, extra, refs))
    if out.size != 1 or out.dtype.kind not in "biuf":
        raise TypeError(f"predict_rate must return one number; for {row} it returned "
                        f"{out.dtype} of shape {out.shape}")
    r = float(out.reshape(()))
    if not 0 <= r <= 1:                                      # NaN fails this too
        raise ValueError(f"predict_rate returned {r:.3g} for {row}: a rate must be in "
                         f"[0, 1]")
    return r


#: What a miss on a held-out condition says (Exercise 8.3's score).
_MISSED = {
    "V=22, both": "V = 22: two spare words make the proxy's hit rate 1 while the contrast "
                  "stays small, and the runs (32 of 40) fall between what the two say",
    "V=24, both": "V = 24: four spare words are enough for nearly every run (39 of 40), so "
                  "a lens must reach the control's rate by then",
    "V=24, none": "V = 24 without the end token: all 40 copy, as with it (39): with four "
                  "spare words the end step costs nothing a lens can see",
    "start, both": "start token: a source token that copies nothing, which no lens reads; "
                   "the runs copy as seldom as permutations with the end token (2 of 40)",
}


def _with_weight(s: float, extra: float, refs: dict) -> float:
    e, k, n = refs["flat"]
    flat = float(np.interp(extra, e, k / n))
    e2, k2, n2 = refs["control"]
    ctrl = float(np.interp(extra, e2, k2 / n2))
    return flat + (ctrl - flat) * s
