"""Chapter 6's exercise checkers (attn_core.exercises.ch6): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py); the derivation's formula is
checked against a simulation; that the notebook uses every checker is tests/test_learning.py's."""

import math

import numpy as np
import torch
from exercise_scaffold import gamed_tests, scaffold_tests

from attn_core.chapters import ch6_transformer as ch
from attn_core.exercises import ch6 as ex


# ------------------------------------------------------------------ reference solutions
def cross_attention(y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads, axis=-1, scale=None,
                    split=True, out_map=True, transpose=False):
    """K-head attention; the keyword arguments make its usual mistakes."""
    if transpose:
        Wq, Wk, Wv, Wo = Wq.T, Wk.T, Wv.T, Wo.T
    B, T, d = y.shape
    L = h.shape[1]
    K = heads if split else 1
    q = (y @ Wq.T + bq).view(B, T, K, d // K).transpose(1, 2)
    k = (h @ Wk.T + bk).view(B, L, K, d // K).transpose(1, 2)
    v = (h @ Wv.T + bv).view(B, L, K, d // K).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) / (math.sqrt(d // K) if scale is None else scale)
    alpha = torch.softmax(scores, dim=axis)
    o = (alpha @ v).transpose(1, 2).reshape(B, T, d)
    if out_map:
        o = o @ Wo.T + bo
    return o, alpha.expand(B, heads, T, L)


def position_logit_std(sigma, d_model, heads):
    return sigma ** 2 / 3


def position_logit_std_simulated(sigma, d_model, heads, n=4000):
    """A Monte-Carlo estimate instead of the formula (issue #30: it must hear "close")."""
    g = torch.Generator().manual_seed(1)
    dk, bound = d_model // heads, 1 / math.sqrt(d_model)
    Wq = (torch.rand(n, dk, d_model, generator=g) * 2 - 1) * bound
    Wk = (torch.rand(n, dk, d_model, generator=g) * 2 - 1) * bound
    pt = sigma * torch.randn(n, d_model, 1, generator=g)
    pl = sigma * torch.randn(n, d_model, 1, generator=g)
    return float(((Wq @ pt) * (Wk @ pl)).sum((1, 2)).std() / math.sqrt(dk))


def cross_attention_view_heads(y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads):
    """The classic head split: .view(B, heads, n, d_k) with no transpose (issue #30)."""
    B, T, d = y.shape
    L, dk = h.shape[1], d // heads
    q = (y @ Wq.T + bq).view(B, heads, T, dk)
    k, v = (h @ Wk.T + bk).view(B, heads, L, dk), (h @ Wv.T + bv).view(B, heads, L, dk)
    alpha = torch.softmax(q @ k.transpose(-1, -2) / dk ** 0.5, dim=-1)
    return (alpha @ v).view(B, T, d) @ Wo.T + bo, alpha


def cross_attention_merge_no_transpose(y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads):
    """Heads split right, merged by a reshape of (B, heads, T, d_k) as it lies."""
    B, T, d = y.shape
    _, alpha = cross_attention(y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads)
    v = (h @ Wv.T + bv).view(B, h.shape[1], heads, d // heads).transpose(1, 2)
    return (alpha @ v).reshape(B, T, d) @ Wo.T + bo, alpha


def success_count(row, level, step):
    j = row["eval_steps"].index(step)
    return sum(acc[j] > level for acc in row["token_acc"])


CHECKS = {
    "check_cross_attention": (ex.check_cross_attention, cross_attention),
    "check_position_logit_std": (ex.check_position_logit_std, position_logit_std),
    "check_success_count": (ex.check_success_count, success_count),
}


def _ca(**kw):
    return lambda *a: cross_attention(*a, **kw)


# ------------------------------------------------------------------ known wrong answers
WRONG = {
    "check_cross_attention": [
        (_ca(axis=-2), "over the source positions"),
        (_ca(scale=1.0), "not divided by √d_k"),
        (lambda y, h, *w: cross_attention(y, h, *w, scale=math.sqrt(y.shape[-1])), "√d (the"),
        (_ca(split=False), "split q, k and v"),
        (_ca(transpose=True), "(out, in)"),
        (_ca(out_map=False), "skip W_O"),
        (cross_attention_view_heads, ".view(B, heads, n, d_k)"),
        (cross_attention_merge_no_transpose, "merged in the wrong order"),
        (lambda *a: (cross_attention(*a)[0], torch.softmax(cross_attention(*a)[1] * 2, -1)),
         "off in every head"),
        (lambda *a: (cross_attention(*a)[0], cross_attention(*a)[1] * float("nan")), "NaN"),
        (lambda *a: cross_attention(*a)[::-1], "shape"),
        (lambda *a: cross_attention(*a)[0], "pair"),
        (lambda *a: (cross_attention(*a)[0], cross_attention(*a)[1].transpose(0, 1)),
         "(B, K, T, L)"),
        (lambda *a: (cross_attention(*a)[0] + 0.01, cross_attention(*a)[1]), "out is off"),
        (lambda *a: (cross_attention(*a)[0], cross_attention(*a)[1] * 0.99),
         "not a distribution over the source positions"),
        (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    ],
    "check_position_logit_std": [
        (lambda s, d, k: s / 3, "σ², not σ"),
        (lambda s, d, k: s ** 2 / math.sqrt(3), "σ/√3"),
        (lambda s, d, k: s ** 2, "1/(3d)"),
        (lambda s, d, k: s ** 2 / 3 * math.sqrt(d // k), "takes the √d_k away"),
        (lambda s, d, k: s ** 4 / 9, "the variance"),
        (lambda s, d, k: s ** 2 / 3 * math.sqrt(1 / k), "own width"),
        (lambda s, d, k: s ** 2 / 2, "count the variance"),
        (lambda s, d, k: [s, s], "one number"),
        (position_logit_std_simulated, "close (within 10%)"),
        (lambda s, d, k: s ** 2 / 3 * 1.000128, "Give the formula"),   # the 0.333376
    ],
    "check_success_count": [
        (lambda r, lev, st: sum(a[-1] > lev for a in r["token_acc"]), "end of training"),
        (lambda r, lev, st: sum(a[r["eval_steps"].index(st)] >= lev for a in r["token_acc"]),
         "strictly above"),
        (lambda r, lev, st: sum(max(a[: r["eval_steps"].index(st) + 1]) > lev
                                for a in r["token_acc"]), "at any evaluation"),
        (lambda r, lev, st: sum(a[min(st, len(a) - 1)] > lev for a in r["token_acc"]),
         "end of training"),  # a step used as a column index: the last column here
        (lambda r, lev, st: 1, "you count 1 runs"),
        (lambda r, lev, st: [1, 2], "one number"),
    ],
}


# ------------------------------------------------------------------ the tests
(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(
    ex, CHECKS, WRONG)


def test_position_logit_std_formula_matches_a_simulation():
    # draw the chapter's initialisation many times: p_t, p_l ~ N(0, σ²), the weights
    # U(±1/√d) as nn.Linear's, one head's (W_Q p_t)·(W_K p_l)/√d_k without biases
    g = torch.Generator().manual_seed(0)
    for sigma, d, K in ((1.0, 64, 4), (0.02, 64, 4), (0.5, 32, 2)):
        dk, n = d // K, 20000
        bound = 1 / math.sqrt(d)
        Wq = (torch.rand(n, dk, d, generator=g) * 2 - 1) * bound
        Wk = (torch.rand(n, dk, d, generator=g) * 2 - 1) * bound
        pt, pl = sigma * torch.randn(n, d, 1, generator=g), sigma * torch.randn(n, d, 1,
                                                                               generator=g)
        logit = ((Wq @ pt) * (Wk @ pl)).sum((1, 2)) / math.sqrt(dk)
        want = ex.position_logit_std_reference(sigma, d, K)
        assert abs(float(logit.std()) / want - 1) < 0.03, (sigma, float(logit.std()), want)


def test_success_count_reference_reads_the_stored_sweep():
    rows = ch.load_sweep()
    for name, row in rows.items():
        final = np.asarray(row["final_token_acc"])
        assert ex.success_count_reference(row, ch.SUCCESS_LEVEL, row["eval_steps"][-1]) == int(
            (final > ch.SUCCESS_LEVEL).sum()), name


# ------------------------------------------------------------------ the gaming learner (#30)
def _attention_shapes(y, h, heads):
    (B, T, d), L = y.shape, h.shape[1]
    return B, T, L, d


def _gamed_attention(alpha_of, out_of):
    """An answer of the right form that knows nothing: alpha and out from the shapes alone."""
    def answer(y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads):
        B, T, L, d = _attention_shapes(y, h, heads)
        return out_of(B, T, d, (y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads)), \
            alpha_of(B, heads, T, L)
    return answer


def _first_case_only(right, gamed):
    """Right on the checker's first case (a learner who copied it from somewhere), gamed on
    every other: the hint of the second case must leak nothing either."""
    first = {}

    def answer(*args):
        key = tuple(args[:3]) if not hasattr(args[0], "shape") else tuple(args[0].shape)
        if not first:
            first["key"] = key
        return right(*args) if key == first["key"] else gamed(*args)
    return answer


GAMED = {
    "check_cross_attention": [
        _gamed_attention(lambda B, K, T, L: torch.zeros(B, K, T, L),
                         lambda B, T, d, a: torch.zeros(B, T, d)),
        _gamed_attention(lambda B, K, T, L: torch.full((B, K, T, L), 0.5),
                         lambda B, T, d, a: torch.full((B, T, d), 0.5)),
        _gamed_attention(lambda B, K, T, L: torch.ones(B, K, T, L),
                         lambda B, T, d, a: torch.ones(B, T, d)),
        # a valid attention (uniform over l), the output still zeros
        _gamed_attention(lambda B, K, T, L: torch.full((B, K, T, L), 1 / L),
                         lambda B, T, d, a: torch.zeros(B, T, d)),
        # the attention right (the entries the hint named, and all others), the output zeros
        lambda *a: (torch.zeros_like(a[0]), cross_attention(*a)[1]),
        # the output right, the attention constant
        lambda *a: (cross_attention(*a)[0], torch.full_like(cross_attention(*a)[1], 0.5)),
    ],
    "check_position_logit_std": [
        lambda s, d, k: 0.0,
        lambda s, d, k: 0.5,
        lambda s, d, k: 1.0,
        # right on σ = 1 (a third: the value §4 states after the exercise), zero elsewhere
        _first_case_only(position_logit_std, lambda s, d, k: 0.0),
    ],
    "check_success_count": [
        lambda r, lev, st: 0,
        lambda r, lev, st: 2,
        lambda r, lev, st: 0.5,
        _first_case_only(success_count, lambda r, lev, st: 0),
    ],
}


(test_every_checker_has_gamed_answers,
 test_gamed_answer_is_refused_and_its_hint_leaks_nothing) = gamed_tests(CHECKS, GAMED)


def test_float32_answers_are_accepted(capsys):
    # torch's default dtype: a float32 attention and a float32 number must pass (issue #30)
    def cross_attention_f32(*a):
        out, alpha = cross_attention(*(t.float() if hasattr(t, "float") else t for t in a))
        return out.float(), alpha.float()
    assert ex.check_cross_attention(cross_attention_f32)
    assert ex.check_position_logit_std(lambda s, d, k: torch.tensor(s, dtype=torch.float32)
                                       ** 2 / 3)
    assert ex.check_position_logit_std(lambda s, d, k: np.float32(s) ** 2 / np.float32(3))
