"""Chapter 5's exercise checkers (attn_core.exercises.ch5): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py);
that the notebook uses every checker is tests/test_learning.py's."""

import math

import numpy as np
from exercise_scaffold import gaming_tests, scaffold_tests
import pytest
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
        (lambda p, t: math.floor(math.log(1 - t) / math.log(1 - p)), "rounded the ratio down"),
        (lambda p, t: int(math.log(1 - t) / math.log(1 - p)), "rounded the ratio down"),
        (lambda p, t: heads_needed(p, t) + 1, "smallest K"),
        (lambda p, t: round(math.log(1 - t) / math.log(1 - p)), "nearest whole number"),
        # issue #30: accepted before (right except where the ratio is a whole number)
        (lambda p, t: math.floor(math.log(1 - t) / math.log(1 - p)) + 1, "one too many"),
        # issue #30: got "check the direction of your rounding" before
        (lambda p, t: math.ceil(math.log(t) / math.log(p)), "complements"),
        (lambda p, t: math.log(t) / math.log(p), "complements"),
        (lambda p, t: math.ceil(math.log(1 - p) / math.log(1 - t)), "upside down"),
        (lambda p, t: math.floor(math.log(1 - t) / math.log(p)) + 1, "1 − p, belongs"),
        # right but for one pair: the per-pair hints (too few / not the smallest)
        (lambda p, t: heads_needed(p, t) - ((p, t) == (0.2, 0.9)), "too few heads"),
        (lambda p, t: heads_needed(p, t) + 2 * ((p, t) == (0.01, 0.5)), "not the smallest"),
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
    # the count over K is the closed form ⌈ln(1 − target) / ln(1 − p)⌉; no case but the exact
    # ones sits near a boundary where the two could differ by rounding, and at the exact ones
    # the ratio is a whole number in float64 and float32
    for p, t in ex.NEEDED_CASES:
        ratio = math.log(1 - t) / math.log(1 - p)
        assert ex._needed_reference(p, t) == math.ceil(ratio)
        if (p, t) in ex.EXACT_CASES:
            assert ratio == round(ratio)
            f = np.float32
            assert np.log(f(1) - f(t)) / np.log(f(1) - f(p)) == ratio
        else:
            assert abs(ratio - round(ratio)) > 1e-6
    assert len(ex.EXACT_CASES) >= 2 and set(ex.EXACT_CASES) <= set(ex.NEEDED_CASES)
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


# ------------------------------------------------------------------ issue #30's defects
@pytest.mark.parametrize("form", [
    lambda p, t: math.ceil(math.log(1 - t) / math.log(1 - p)),
    lambda p, t: int(np.ceil(np.log1p(-t) / np.log1p(-p))),
    lambda p, t: math.ceil(math.log(1 - t, 1 - p)),
    lambda p, t: math.ceil(math.log10(1 - t) / math.log10(1 - p)),
    lambda p, t: int(np.ceil(np.log(np.float32(1 - t)) / np.log(np.float32(1 - p)))),
    lambda p, t: int(torch.ceil(torch.tensor(1 - t).log() / torch.tensor(1 - p).log())),
], ids=["math", "log1p", "log base", "log10", "float32", "torch float32"])
def test_heads_needed_accepts_every_right_form(form):
    # the exact-ratio pairs must not turn a right closed form away through float noise
    assert ex.check_heads_needed(form)


def test_heads_needed_floor_plus_one_is_refused_at_exact_ratios():
    # the review's case: p = 0.5, target = 0.75 needs 2 heads (1 − 0.25 = 0.75 >= 0.75);
    # floor(2) + 1 = 3 was accepted before (no pair had a whole-number ratio)
    assert ex._needed_reference(0.5, 0.75) == 2
    def floor1(p, t):
        return math.floor(math.log(1 - t) / math.log(1 - p)) + 1

    assert floor1(0.5, 0.75) == 3
    assert all(floor1(p, t) == heads_needed(p, t) for p, t in ex.NEEDED_CASES
               if (p, t) not in ex.EXACT_CASES)
    result = ex.check_heads_needed(floor1)
    assert result.status == "wrong" and "one too many" in result.message
    assert "direction of your rounding" not in result.message


def test_heads_needed_rate_never_prints_as_the_target():
    # a hint must not show "0.9000, below the target 0.9"
    assert ex._below(0.89996, 0.9) == "0.89996"
    assert float(ex._below(0.5, 0.75)) < 0.75


def test_every_needed_variant_differs_from_the_answer():
    # a variant equal to the right answer on every pair would be no mistake (the checker
    # skips such variants; this keeps each mistake of the table recognisable)
    want = np.array([ex._needed_reference(p, t) for p, t in ex.NEEDED_CASES])
    table = ex.variant_table(ex._needed_variants, ex.NEEDED_CASES)
    for name in ("no_whole", "floor", "round", "floor_plus_one", "one_more"):
        assert not np.array_equal(table[name], want), name
    for name in ("p_for_fail", "target_for_fail", "both_swapped", "inverted",
                 "fixed_target"):
        assert not np.array_equal(table[f"{name}/ceil"], want), name


def test_attention_hint_never_shows_the_expected_entry():
    # issue #30 (3.2's defect, checked here too): one entry off -- the hint says where and
    # what the reader's value is, not the expected value to copy
    s, h, W, P, reduce = ex._attention_cases()[0]
    c_ref, a_ref = ex._attention_reference(s, h, W, P, reduce)

    def one_off(s_, h_, W_, P_, r_):
        c, alpha = multihead_attention(s_, h_, W_, P_, r_)
        alpha = alpha.clone()
        alpha[0, 0, 1, 0] += 0.3
        return c, alpha

    result = ex.check_multihead_attention(one_off)
    assert result.status == "wrong" and "index (0, 0, 1, 0)" in result.message
    assert f"{a_ref[0, 0, 1, 0]:.6g}" not in result.message
    assert f"{a_ref[0, 0, 1, 0]:.4f}" not in result.message
    small = ex.check_multihead_attention(
        lambda *a: (multihead_attention(*a)[0] * 1.001, multihead_attention(*a)[1]))
    assert "close everywhere" in small.message


def test_attention_accepts_float32_work():
    def in_float32(s, h, W, P, reduce):
        c, alpha = multihead_attention(s.float(), h.float(), W.float(), P.float(), reduce)
        return c, alpha
    assert ex.check_multihead_attention(in_float32)


# ------------------------------------------------------------------ the gaming learner (#30)
def _attention_const(value, alpha_value=None):
    def gamed(s, h, W, P, reduce):
        K, (B, T, H), L = W.shape[0], s.shape, h.shape[1]
        a = value if alpha_value is None else alpha_value
        return torch.full((B, T, H), value), torch.full((K, B, T, L), a)
    return gamed


def _attention_one_entry_off(s, h, W, P, reduce):
    c, alpha = multihead_attention(s, h, W, P, reduce)
    c = c.clone()
    c[0, 0, 0] = 0.0
    return c, alpha


GAMED = {
    "check_multihead_attention": [_attention_const(0.0), _attention_const(0.5),
                                  _attention_const(1.0, 0.2),  # uniform-looking alpha
                                  _attention_one_entry_off],
    "check_head_labels": [lambda f, g, b: ["good"] * len(f),
                          lambda f, g, b: ["inconsistent"] * len(f),
                          lambda f, g, b: ["bad"] * len(f)],
    "check_heads_needed": [lambda p, t: 0, lambda p, t: 1, lambda p, t: 0.5,
                           lambda p, t: 100, lambda p, t: 4],
}


# zeros, constants, near misses: refused, and no hint shows a number of the reference's
# own outputs (nothing is `allowed`: the hints quote only the inputs and the reader's values)
(test_gamed_answer_is_refused_and_its_hint_leaks_nothing,
 test_every_checker_is_gamed_at_least_twice) = gaming_tests(CHECKS, GAMED)
