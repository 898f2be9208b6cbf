"""Chapter 1's exercise checkers (attn_core.exercises.ch1): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py);
that the notebook uses every checker is tests/test_learning.py's."""

import math

import numpy as np
import pytest
from exercise_scaffold import scaffold_tests
import torch

from attn_core import theory
from attn_core.exercises import ch1 as ex

R = math.sqrt(2)


# ------------------------------------------------------------------ reference solutions
def time_to_one(p0, delta0):
    a, b = (p0 + delta0 / R) / 2, (p0 - delta0 / R) / 2
    return np.log((1 + np.sqrt(1 - 4 * a * b)) / (2 * a)) / R


def lowest_attention(gap, p0):
    return p0 if gap <= 0 else np.sqrt(p0 ** 2 - gap ** 2 / 2)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _grad(b0, b1, a, chain=True, negative=True, sign=-1):
    p = sigmoid(a)
    s1 = (1 - p) * b0 + p * b1
    g0 = sigmoid(b0) if negative else 0.0
    g1 = -sigmoid(sign * s1)
    return np.array([g0 + g1 * (1 - p), g1 * p, g1 * (b1 - b0) * (p * (1 - p) if chain else 1)])


def descent_step(b0, b1, a, lr):
    return np.array([b0, b1, a]) - lr * _grad(b0, b1, a)


def classifier_head(h, alpha, w):
    p = torch.softmax(h @ alpha, dim=-1)
    beta = h @ w
    return (p * beta).sum(-1), p, beta


CHECKS = {
    "check_time_to_one": (ex.check_time_to_one, time_to_one),
    "check_lowest_attention": (ex.check_lowest_attention, lowest_attention),
    "check_descent_step": (ex.check_descent_step, descent_step),
    "check_classifier_head": (ex.check_classifier_head, classifier_head),
}


# ------------------------------------------------------------------ known wrong answers
def _tt_root(p0, d0, sign=1, coef=1 / R):
    a, b = (p0 + d0 * coef) / 2, (p0 - d0 * coef) / 2
    with np.errstate(invalid="ignore"):
        return np.log((1 + sign * np.sqrt(1 - 4 * a * b)) / (2 * a)) / R


WRONG = {
    "check_time_to_one": [
        (lambda p0, d0: math.acosh(2) / R, "does not depend on p0"),
        (lambda p0, d0: math.acosh(1 / p0) / R, "sinh term"),
        (lambda p0, d0: _tt_root(p0, d0, coef=R), "coefficient of sinh"),
        (lambda p0, d0: _tt_root(p0, d0, sign=-1), "other root"),
        (lambda p0, d0: time_to_one(p0, d0) * R, "factor √2"),
        (lambda p0, d0: time_to_one(p0, d0) / R, "factor √2"),
        (lambda p0, d0: 3 * time_to_one(p0, d0), "same factor"),
        (lambda p0, d0: float("nan") if d0 > 1 else time_to_one(p0, d0), "domain"),
        (lambda p0, d0: -time_to_one(p0, d0), "positive time"),
        (lambda p0, d0: time_to_one(p0, d0) + (0.01 if d0 else 0), "not 1"),
    ],
    "check_lowest_attention": [
        (lambda g, p0: p0, "dips below p0"),
        (lambda g, p0: p0 if g <= 0 else np.sqrt(p0 ** 2 - g ** 2), "gap²"),
        (lambda g, p0: np.sqrt(p0 ** 2 - g ** 2 / 2) if abs(g) < R * p0 else float("nan"),
         "gap <= 0"),
        (lambda g, p0: float("nan") if g > 0.6 else lowest_attention(g, p0), "negative"),
        (lambda g, p0: p0 - g / 4 if g > 0 else p0, "goes lower"),
        (lambda g, p0: max(p0 - 2 * g, 0) if g > 0 else p0, "never goes that low"),
        (lambda g, p0: "low", "number"),
    ],
    "check_descent_step": [
        (lambda b0, b1, a, lr: np.array([b0, b1, a]) + lr * _grad(b0, b1, a), "uphill"),
        (lambda b0, b1, a, lr: np.array([b0, b1, a]) - _grad(b0, b1, a), "learning rate"),
        (lambda b0, b1, a, lr: np.array([b0, b1, a]) - lr * _grad(b0, b1, a, chain=False),
         "chain rule"),
        (lambda b0, b1, a, lr: np.array([b0, b1, a]) - lr * _grad(b0, b1, a, negative=False),
         "negative sequence"),
        (lambda b0, b1, a, lr: np.array([b0, b1, a]) - lr * _grad(b0, b1, a, sign=1),
         "derivative of log"),
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) * [1, 1, 0]
         + [0, 0, sigmoid(descent_step(b0, b1, a, lr)[2])], "logit a"),
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr)[:2], "shape"),
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) + [0, 0, 1e-3 * b0],
         "different one"),
    ],
    "check_classifier_head": [
        (lambda h, al, w: (lambda p, b: ((p * b).sum(-1), p, b))(
            torch.softmax(h @ al, dim=0), h @ w), "over positions"),
        (lambda h, al, w: (lambda p, b: ((p * b).sum(-1), p, b))(
            torch.full(h.shape[:2], 1 / h.shape[1]), h @ w), "uniform"),
        (lambda h, al, w: classifier_head(h, w, al), "swap"),
        (lambda h, al, w: (lambda p, b: ((p * b).sum(-1), p, b))(h @ al, h @ w), "sums to 1"),
        (lambda h, al, w: (lambda o: (torch.sigmoid(o[0]), o[1], o[2]))(
            classifier_head(h, al, w)), "before the sigmoid"),
        (lambda h, al, w: (lambda o: (o[2].mean(-1), o[1], o[2]))(classifier_head(h, al, w)),
         "weights each"),
        (lambda h, al, w: classifier_head(h, al, w)[:2], "three tensors"),
        (lambda h, al, w: (lambda o: (o[0], o[1].T, o[2]))(classifier_head(h, al, w)),
         "shape"),
        (lambda h, al, w: (lambda o: (o[0], o[1], o[2] + 0.1))(classifier_head(h, al, w)),
         "W h_l"),
        (lambda h, al, w: (lambda o: (o[0] + 0.1, o[1], o[2]))(classifier_head(h, al, w)),
         "logit is off"),
        (lambda h, al, w: 1 / 0, "raised ZeroDivisionError"),
    ],
}


# ------------------------------------------------------------------ the tests
(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(
    ex, CHECKS, WRONG, not_an_answer=0.931)


def test_references_agree_with_the_theory():
    # τ* from the uniform start is arccosh(2)/√2 (§1), and the bisection matches the RK4 flow
    assert ex._time_to_one_reference(0.5, 0.0) == pytest.approx(math.acosh(2) / R, abs=1e-12)
    f = theory.gated_flow(-0.25, 0.25, 0.3, t_max=2.0, n_steps=2000)
    assert ex._time_to_one_reference(0.3, 0.5) == pytest.approx(
        np.interp(1.0, f["p"], f["tau"]), abs=1e-5)
    # the lowest p of the closed form is the lowest p of the RK4 flow
    g = theory.gated_flow(0.35, -0.35, 0.5, t_max=4.0, n_steps=4000)
    assert ex._lowest_reference(0.7, 0.5) == pytest.approx(g["p"].min(), abs=1e-6)
    # one step of the package's gradient descent is θ − η∇L with the chapter's gradient
    np.testing.assert_allclose(ex._step_reference(1.5, -0.3, 2.0, 0.1),
                               descent_step(1.5, -0.3, 2.0, 0.1), rtol=1e-9)
