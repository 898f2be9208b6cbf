"""Chapter 4's exercise checkers (attn_core.exercises.ch4): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py);
that the notebook uses every checker is tests/test_learning.py's."""

import math

import numpy as np
import pytest
from exercise_scaffold import gaming_tests, scaffold_tests
import torch

from attn_core import theory
from attn_core.chapters import ch4_copy as ch
from attn_core.data import CopyTask
from attn_core.exercises import ch4 as ex



# ------------------------------------------------------------------ reference solutions
def luong_attention(s, h, W, a, P, b, axis=-1, Wt=False, bias="h", scale=1.0, ctx="Pc+b"):
    """The attention step; the keyword arguments make its usual mistakes."""
    q = s + a if bias == "query" else s
    scores = q @ (W.T if Wt else W) @ h.transpose(1, 2)
    if bias == "h":
        scores = scores + (h @ a).unsqueeze(1)
    elif bias == "s":                                  # s_tᵀ a: constant over l
        scores = scores + (s @ a).unsqueeze(-1)
    alpha = torch.softmax(scores * scale, dim=axis)
    c = alpha @ h
    c = {"Pc+b": c @ P.T + b, "c": c, "c+b": c + b, "cP+b": c @ P + b, "Pc": c @ P.T,
         "P(c+b)": (c + b) @ P.T}[ctx]
    return c, alpha


def guessing_level(L, eos=False):
    h = sum(1 / k for k in range(1, L + 1))
    return (h + 1) / (L + 1) if eos else h / L


def scaled_counts(src, tgt, V):
    n = src.shape[0]
    table = np.zeros((V, V))
    for x, y in zip(src, tgt):
        table += np.outer(np.bincount(x.numpy(), minlength=V), np.bincount(y.numpy(),
                                                                          minlength=V))
    return table / n


def centred_table(L, V):
    table = np.full((V, V), L * (L - 1) / (V * (V - 1)))
    np.fill_diagonal(table, L / V)
    return table - table.mean(1, keepdims=True)


CHECKS = {
    "check_luong_attention": (ex.check_luong_attention, luong_attention),
    "check_guessing_level": (ex.check_guessing_level, guessing_level),
    "check_scaled_counts": (ex.check_scaled_counts, scaled_counts),
    "check_centred_table": (ex.check_centred_table, centred_table),
}


# ------------------------------------------------------------------ known wrong answers
def _att(**kw):
    return lambda s, h, W, a, P, b: luong_attention(s, h, W, a, P, b, **kw)


def _harm(n):
    return sum(1 / k for k in range(1, n + 1))


def aligned_counts(src, tgt, V):
    """Counts only the pairs (x_l, y_l) at the same position."""
    table = np.zeros((V, V))
    np.add.at(table, (src.flatten().numpy(), tgt.flatten().numpy()), 1 / src.shape[0])
    return table


def presence_counts(src, tgt, V):
    """Whether i is in x and o in y, not how often."""
    table = np.zeros((V, V))
    for x, y in zip(src, tgt):
        table += np.outer(np.bincount(x.numpy(), minlength=V) > 0,
                          np.bincount(y.numpy(), minlength=V) > 0)
    return table / src.shape[0]


def _table(diag=None, off=None, centre=True, scale=1.0):
    def answer(L, V):
        d = L / V if diag is None else diag(L, V)
        o = L * (L - 1) / (V * (V - 1)) if off is None else off(L, V)
        t = np.full((V, V), o)
        np.fill_diagonal(t, d)
        t = t * scale(L) if callable(scale) else t
        return t - t.mean(1, keepdims=True) if centre else t
    return answer


WRONG = {
    "check_luong_attention": [
        (_att(axis=-2), "output steps t"),
        (_att(axis=0), "over the batch"),
        (lambda s, h, W, a, P, b: (luong_attention(s, h, W, a, P, b)[0],
                                   s @ W @ h.transpose(1, 2) + (h @ a).unsqueeze(1)),
         "sum to 1"),
        (_att(Wt=True), "not symmetric"),
        (lambda s, h, W, a, P, b: luong_attention(s, h, W, a, P, b,
                                                  scale=1 / math.sqrt(s.shape[-1])),
         "no 1/√H"),
        (_att(bias=None), "b_aᵀ h_l"),
        (_att(bias="s"), "cancels in the softmax"),
        (_att(bias="query"), "(s_t + b_a)ᵀ W h_l"),
        (_att(ctx="c"), "plain c_t"),
        (_att(ctx="c+b"), "apply the projection P"),
        (_att(ctx="cP+b"), "Pᵀ"),
        (_att(ctx="Pc"), "projection's bias b"),
        (_att(ctx="P(c+b)"), "not P (c_t + b)"),
        (lambda s, h, W, a, P, b: luong_attention(s, h, W, a, P, b)[::-1], "shape"),
        (lambda s, h, W, a, P, b: luong_attention(s, h, W, a, P, b)[1], "pair"),
        (lambda s, h, W, a, P, b: (luong_attention(s, h, W, a, P, b)[0] + 0.01,
                                   luong_attention(s, h, W, a, P, b)[1]), "c is off"),
        (lambda s, h, W, a, P, b: (luong_attention(s, h, W, a, P, b)[0],
                                   luong_attention(s, h, W, a, P, b)[1] * 0.99),
         "alpha is off"),
        (lambda s, h, W, a, P, b: 1 / 0, "raised ZeroDivisionError"),
        # no usual mistake: the hint says what is wrong with the weights, never their values
        (lambda s, h, W, a, P, b: (luong_attention(s, h, W, a, P, b)[0],
                                   2 * luong_attention(s, h, W, a, P, b)[1] - 1 / h.shape[1]),
         "negative weights"),
        (lambda s, h, W, a, P, b: (luong_attention(s, h, W, a, P, b)[0],
                                   torch.full((*s.shape[:2], h.shape[1]), 1 / h.shape[1])),
         "sum to 1 over l but are not the softmax"),
        (lambda s, h, W, a, P, b: (luong_attention(s, h, W, a, P, b)[0] + 0.01,
                                   luong_attention(s, h, W, a, P, b)[1]),
         "while your alpha is right"),
    ],
    "check_guessing_level": [
        (lambda L, eos=False: 1 / L, "harmonic sum"),
        (lambda L, eos=False: _harm(L), "per output step"),
        (lambda L, eos=False: _harm(L - 1) / L, "off by one"),
        (lambda L, eos=False: (_harm(L + 1) - 1) / L, "off by one"),
        (lambda L, eos=False: _harm(L) / L, "one more output step"),
        (lambda L, eos=False: _harm(L + 1) / (L + 1) if eos else _harm(L) / L,
         "not a guess"),
        (lambda L, eos=False: _harm(L) / (L + 1) if eos else _harm(L) / L, "adds 1"),
        (lambda L, eos=False: (_harm(L) + 1) / L if eos else _harm(L) / L,
         "divide by L + 1"),
        (lambda L, eos=False: (_harm(L) + 1) / (L + 1), "no EOS step"),
        (lambda L, eos=False: ((math.log(L) + 0.5772156649 + eos) / (L + eos)),
         "exact harmonic number"),
        (lambda L, eos=False: guessing_level(L, eos) * 1.5, "check L = 1"),
        (lambda L, eos=False: float("nan"), "NaN"),
        (lambda L, eos=False: [0.1, 0.2], "one number"),
    ],
    "check_scaled_counts": [
        (lambda src, tgt, V: theory.count_table(src.numpy(), tgt.numpy(), V, V)
         * src.shape[1] / src.shape[0], "the book's own"),
        (lambda src, tgt, V: scaled_counts(src, tgt, V) / src.shape[1], "L·C/n (each"),
        (lambda src, tgt, V: scaled_counts(src, tgt, V) * src.shape[0], "divide by n"),
        (lambda src, tgt, V: scaled_counts(src, tgt, V) * src.shape[0] / src.shape[1],
         "C itself"),
        (lambda src, tgt, V: scaled_counts(src, tgt, V).T, "transposed"),
        (aligned_counts, "not only l = t"),
        (presence_counts, "counts twice"),
        (lambda src, tgt, V: scaled_counts(src, tgt, int(max(src.max(), tgt.max())) + 1),
         "minlength"),
        (lambda src, tgt, V: scaled_counts(src, tgt, V) + 0.01, "is off"),
        (lambda src, tgt, V: scaled_counts(src, tgt, V) + 0.01, "add up to L·L"),
        # the permutation table is flat, so rolling its columns changes the control's first
        (lambda src, tgt, V: np.roll(scaled_counts(src, tgt, V), 1, axis=1),
         "off on the control case (distinct words of a larger vocabulary): its total is "
         "right"),
    ],
    "check_centred_table": [
        (_table(centre=False), "centre each row"),
        (_table(off=lambda L, V: (L / V) ** 2), "not independent"),
        (_table(diag=lambda L, V: (L / V) ** 2), "not its square"),
        (_table(scale=lambda L: 1 / L), "not C/n"),
        (_table(off=lambda L, V: (L - 1) / (V - 1)), "not only the second factor"),
        (_table(off=lambda L, V: L * (L - 1) / V ** 2), "0 everywhere"),
        (_table(off=lambda L, V: (L * (L - 1) / (V * (V - 1))) ** 2), "is off"),
        (lambda L, V: np.eye(V) * (L / V) * (1 - L / V) + 0.001, "0 everywhere"),
        (lambda L, V: centred_table(L, V)[:-1], "shape"),
        (lambda L, V: centred_table(L, V) + (0.001 if L != V else 0), "rows are not centred"),
        (lambda L, V: centred_table(L, V) + (0.01 * (np.eye(V) - np.roll(np.eye(V), 1, 1))
                                             if L != V else 0), "same role"),
        (_table(off=lambda L, V: (L * (L - 1) / (V * (V - 1))) ** 2), "gap between diagonal"),
    ],
}


# ------------------------------------------------------------------ the tests
(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(
    ex, CHECKS, WRONG)


def test_references_agree_with_the_package():
    # the guessing level is the chapter's guessing_accuracy: 0.180 at L = 20, 0.219 with EOS
    assert round(ch.guessing_accuracy(20), 3) == 0.180
    assert round(ch.guessing_accuracy(20, eos=True), 3) == 0.219
    # the centred table's closed form is what sampling gives (scaled_count_table, 20000 pairs)
    g = torch.Generator().manual_seed(0)
    for L, V in [(4, 4), (4, 5), (4, 6), (3, 7)]:
        task = CopyTask(L, V, "distinct")
        table = ch.scaled_count_table(task, 20000, g)
        sampled = table - table.mean(1, keepdims=True)
        np.testing.assert_allclose(sampled, ex._centred_reference(L, V), atol=0.02)
    # every usual mistake of the centred table differs from the right one and from the others
    # on the chapter's V = L + 1 case (a centred table depends only on diagonal − off-diagonal,
    # so C/n and an off-diagonal P(o in x | i in x) are one mistake with one hint)
    tables = [ex._centred_reference(20, 21)] + [ex._table_variant(20, 21, k)
                                                for k in ex._TABLE_HINTS]
    for i in range(len(tables)):
        for j in range(i):
            assert not np.allclose(tables[i], tables[j]), (i, j)
    # every attention case's reference is far from uniform (a wrong axis would show), and the
    # readable model's attention step is the reference
    for s, h, W, a, P, b in ex._attention_cases():
        c, alpha = ex._attention_reference(s, h, W, a, P, b)
        np.testing.assert_allclose(alpha.sum(-1), 1, atol=1e-6)
        assert alpha.max() > 0.6
        c2, alpha2 = luong_attention(*(t.double() for t in (s, h, W, a, P, b)))
        np.testing.assert_allclose(c, c2.numpy(), atol=1e-5)
        np.testing.assert_allclose(alpha, alpha2.numpy(), atol=1e-6)
    # the count cases include repeats, an asymmetric table and unused words
    cases = ex._count_cases()
    assert any(len(set(x.tolist())) < len(x) for src, _, _ in cases for x in src)
    assert any(not np.allclose(ex._counts_reference(*c), ex._counts_reference(*c).T)
               for c in cases)
    assert any(int(max(src.max(), tgt.max())) + 1 < V for src, tgt, V in cases)


# ------------------------------------------------------------------ float32 work passes (#30)
def _float32(fn):
    """fn computed in float32, as torch's default dtype (or numpy's float32) gives it."""
    def answer(*args, **kw):
        args = [t.float() if torch.is_tensor(t) and t.is_floating_point() else t
                for t in args]
        out = fn(*args, **kw)
        if isinstance(out, tuple):
            return tuple(o.float() for o in out)
        return np.float32(out) if np.ndim(out) == 0 else np.asarray(out, dtype=np.float32)
    return answer


def centred_table_float32(L, V):
    """The table built in float32 throughout (torch), so each entry carries float32 rounding
    (an entry near -0.00227 comes out 3e-8 off; #30: the checker rejected it)."""
    t = torch.full((V, V), L * (L - 1) / (V * (V - 1)))
    t[range(V), range(V)] = L / V
    return t - t.mean(1, keepdim=True)


def guessing_level_float32(L, eos=False):
    h = torch.zeros(())
    for k in range(1, L + 1):
        h = h + 1 / torch.tensor(float(k))
    return (h + 1) / (L + 1) if eos else h / L


@pytest.mark.parametrize("name", CHECKS)
def test_float32_work_passes(name):
    check, solution = CHECKS[name]
    assert check(_float32(solution))
    extra = {"check_centred_table": centred_table_float32,
             "check_guessing_level": guessing_level_float32}
    if name in extra:
        assert check(extra[name])


# ------------------------------------------------------------------ the gaming learner (#30)
def _attention_const(c_value, alpha_value=None):
    """(c, alpha) of the right shapes, constants (alpha None: the right attention)."""
    def answer(s, h, W, a, P, b):
        B, T, H = s.shape
        alpha = (luong_attention(s, h, W, a, P, b)[1] if alpha_value is None
                 else torch.full((B, T, h.shape[1]), float(alpha_value)))
        return torch.full((B, T, H), float(c_value)), alpha
    return answer


GAMED = {
    "check_luong_attention": [
        _attention_const(0, 0), _attention_const(0.5, 0.5), _attention_const(1, 1),
        # uniform weights (a softmax of constant scores) and the next try: the right alpha,
        # a constant c
        lambda s, h, W, a, P, b: (torch.zeros(s.shape),
                                  torch.full((*s.shape[:2], h.shape[1]), 1 / h.shape[1])),
        _attention_const(0), _attention_const(0.5)],
    "check_guessing_level": [lambda L, eos=False: 0.0, lambda L, eos=False: 0.5,
                             lambda L, eos=False: 1.0,
                             lambda L, eos=False: 1 / L],  # chance among all L words
    "check_scaled_counts": [lambda src, tgt, V: np.zeros((V, V)),
                            lambda src, tgt, V: np.ones((V, V)),
                            lambda src, tgt, V: np.full((V, V), 0.5),
                            lambda src, tgt, V: np.eye(V),
                            # the right total, spread evenly: L·L/V² everywhere
                            lambda src, tgt, V: np.full((V, V), src.shape[1] ** 2 / V ** 2)],
    "check_centred_table": [lambda L, V: np.zeros((V, V)), lambda L, V: np.ones((V, V)),
                            lambda L, V: np.full((V, V), 0.5), lambda L, V: np.eye(V),
                            # centred and of the right form, with a guessed gap
                            lambda L, V: np.eye(V) - 1 / V,
                            lambda L, V: 0.5 * (np.eye(V) - 1 / V)],
}


# zeros, constants, near misses: refused, and no hint shows a number of the reference's
# own outputs (nothing is `allowed`: the hints quote only the inputs and the reader's values)
(test_gamed_answer_is_refused_and_its_hint_leaks_nothing,
 test_every_checker_is_gamed_at_least_twice) = gaming_tests(CHECKS, GAMED)
