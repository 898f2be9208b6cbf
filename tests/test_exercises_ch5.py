"""Chapter 5's exercise checkers (attn_core.exercises.ch5): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py);
that the notebook uses every checker is tests/test_learning.py's."""

import math

import numpy as np
from exercise_scaffold import scaffold_tests
import torch

from attn_core.exercises import ch5 as ex
from attn_core.metrics import classify_heads



# ------------------------------------------------------------------ reference solutions
def multihead_attention(s, h, W, P, reduce, axis=-1, proj="P", scale=1.0, red=None):
    """The K-head attention step; the keyword arguments make its usual mistakes."""
    scores = torch.einsum("btg,kgh,blh->kbtl", s, W, h) * scale
    alpha = torch.softmax(scores, dim=axis)
    c_k = alpha @ h
    if proj == "P":
        c_k = torch.einsum("kgh,kbth->kbtg", P, c_k)
    elif proj == "PT":
        c_k = torch.einsum("khg,kbth->kbtg", P, c_k)
    red = red or reduce
    return (c_k.mean(0) if red == "mean" else c_k.sum(0)), alpha


def head_labels(final, good, bad):
    final = np.asarray(final)
    out = np.full(len(final), "inconsistent", dtype=object)
    out[(final > good).all(1)] = "good"
    out[(final < bad).all(1)] = "bad"
    return out.astype(str)


def heads_needed(p, target):
    return int(math.ceil(math.log(1 - target) / math.log(1 - p)))


CHECKS = {
    "check_multihead_attention": (ex.check_multihead_attention, multihead_attention),
    "check_head_labels": (ex.check_head_labels, head_labels),
    "check_heads_needed": (ex.check_heads_needed, heads_needed),
}


# ------------------------------------------------------------------ known wrong answers
def _swap_reduce(r):
    return "sum" if r == "mean" else "mean"


def _labels_from(fn):
    return lambda final, good, bad: fn(np.asarray(final), good, bad)


WRONG = {
    "check_multihead_attention": [
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, axis=-2), "output steps t"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, axis=0), "over the heads"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, axis=1), "over the batch"),
        (lambda s, h, W, P, r: (multihead_attention(s, h, W, P, r)[0],
                                torch.einsum("btg,kgh,blh->kbtl", s, W, h)), "sum to 1"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W.transpose(1, 2), P, r),
         "not symmetric"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r,
                                                   scale=1 / math.sqrt(s.shape[-1])),
         "no 1/√H"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, proj=None), "projection"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, proj="PT"), "P_kᵀ"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, red=_swap_reduce(r)),
         "averaged over the K heads; yours are summed"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r, red="mean"),
         "summed over the K heads; yours are averaged"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r)[::-1], "shape"),
        (lambda s, h, W, P, r: multihead_attention(s, h, W, P, r)[1], "pair"),
        (lambda s, h, W, P, r: (multihead_attention(s, h, W, P, r)[0],
                                multihead_attention(s, h, W, P, r)[1].permute(1, 0, 2, 3)),
         "(K, B, T, L)"),
        (lambda s, h, W, P, r: (multihead_attention(s, h, W, P, r)[0] + 0.01,
                                multihead_attention(s, h, W, P, r)[1]), "c is off"),
        (lambda s, h, W, P, r: (multihead_attention(s, h, W, P, r)[0],
                                multihead_attention(s, h, W, P, r)[1] * 0.99), "alpha is off"),
        (lambda s, h, W, P, r: 1 / 0, "raised ZeroDivisionError"),
    ],
    "check_head_labels": [
        (_labels_from(lambda f, g, b: classify_heads(f[:, :1], g, b)), "first data stream"),
        (_labels_from(lambda f, g, b: classify_heads(f.mean(1, keepdims=True), g, b)),
         "mean over the data streams"),
        (_labels_from(lambda f, g, b: np.where(
            (f > g).any(1), "good", np.where((f < b).all(1), "bad", "inconsistent"))),
         "not on any"),
        (_labels_from(lambda f, g, b: np.where(
            (f > g).all(1), "good", np.where((f < b).any(1), "bad", "inconsistent"))),
         "below `bad` on every"),
        (_labels_from(lambda f, g, b: np.where(
            (f >= g).all(1), "good", np.where((f <= b).all(1), "bad", "inconsistent"))),
         "strictly"),
        (_labels_from(lambda f, g, b: head_labels(f, 0.95, 0.6)), "protocol says otherwise"),
        (lambda f, g, b: [lab.upper() for lab in head_labels(f, g, b)], "one of"),
        (lambda f, g, b: head_labels(f, g, b)[:-1], "one label per head"),
        (lambda f, g, b: "good", "list or array"),
    ],
    "check_heads_needed": [
        (lambda p, t: math.log(1 - t) / math.log(1 - p), "whole number"),
        (lambda p, t: math.ceil(math.log(1 - t) / math.log(p)), "1 − p, belongs"),
        (lambda p, t: math.ceil(math.log(t) / math.log(1 - p)), "not to target"),
        (lambda p, t: math.ceil(math.log(0.1) / math.log(1 - p)), "does not change"),
        (lambda p, t: math.floor(math.log(1 - t) / math.log(1 - p)), "one head short"),
        (lambda p, t: heads_needed(p, t) + 1, "smallest K"),
        (lambda p, t: round(math.log(1 - t) / math.log(1 - p)), "rounding"),
        (lambda p, t: heads_needed(p, t) + 0.5, "whole number"),
        (lambda p, t: heads_needed(p, t) - 10, "at least one head"),
        (lambda p, t: float("nan"), "NaN"),
        (lambda p, t: [1, 2], "one number"),
    ],
}


# ------------------------------------------------------------------ the tests
(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(
    ex, CHECKS, WRONG)


def test_references_agree_with_the_formulas():
    # the count over K is the closed form ⌈ln(1 − target) / ln(1 − p)⌉, and no case sits on
    # a boundary where the two could differ by rounding
    for p, t in ex.NEEDED_CASES:
        ratio = math.log(1 - t) / math.log(1 - p)
        assert abs(ratio - round(ratio)) > 1e-6
        assert ex._needed_reference(p, t) == math.ceil(ratio)
    # the chapter's p̂ ≈ 0.47 needs K = 4 for 0.9 and K = 8 for 0.99
    assert ex._needed_reference(0.47, 0.9) == 4 and ex._needed_reference(0.47, 0.99) == 8
    # the first label case tells every usual mistake from the right labels and from each
    # other, so each gets its own hint
    rows, good, bad = ex.LABEL_CASES[0]
    final = np.array(rows)
    labels = [classify_heads(final, good, bad)] + [ex._label_variant(final, good, bad, kind)
                                                   for kind in ex._LABEL_HINTS]
    for i in range(len(labels)):
        for j in range(i):
            assert not np.array_equal(labels[i], labels[j]), (i, j)
    # every attention case's reference is far from uniform (a wrong axis would show)
    for s, h, W, P, reduce in ex._attention_cases():
        _, alpha = ex._attention_reference(s, h, W, P, reduce)
        np.testing.assert_allclose(alpha.sum(-1), 1, atol=1e-6)
        assert alpha.max() > 0.6
