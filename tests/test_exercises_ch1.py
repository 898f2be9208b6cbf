"""Chapter 1's exercise checkers (attn_core.exercises.ch1): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py);
that the notebook uses every checker is tests/test_learning.py's."""

import math
import re

import numpy as np
import pytest
from exercise_scaffold import hint_leaks, scaffold_tests
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


def _library_step(b0, b1, a, lr):
    """#55's game: the step computed by the library function the text names."""
    p = 1 / (1 + math.exp(-a))
    d = theory.gated_ce_descent(b0, b1, p, lr=lr, steps=1)
    q = d["p"][1]
    return np.array([d["beta0"][1], d["beta1"][1], math.log(q / (1 - q))])


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
        (lambda p0, d0: 0.9312, "same from every start"),
        (lambda p0, d0: round(float(time_to_one(p0, d0)), 3), "root-finder"),
    ],
    "check_lowest_attention": [
        (lambda gap, p0: float(theory.gated_flow_closed_form(
            gap / 2, -gap / 2, p0, np.linspace(0, 8, 80_001))["p"].min()), "the book's own"),
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
        (lambda b0, b1, a, lr: _library_step(b0, b1, a, lr), "the book's own"),
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
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) + [0, 0, 1e-2 * b0],
         "a enters only through p"),
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) + [0, 1e-2 * a, 0],
         "β1 enters only s1"),
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) + [1e-2 * b1, 0, 0],
         "β0 enters both scores"),
        (lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) + [0, 0, 1e-4 * b0],
         "3 digits"),
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
         "wᵀh_l"),
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


# ------------------------------------------------------------------ the defects of issue #30
def _bisection(steps, hi=8.0):
    """τ* by bisection on §1's closed form, as a learner who does not solve the quadratic
    would: 20 steps from [0, 8] err by up to 8 / 2^21 ≈ 4e-6."""
    def time(p0, d0):
        lo, up = 0.0, hi
        for _ in range(steps):
            mid = (lo + up) / 2
            p = p0 * np.cosh(R * mid) + d0 / R * np.sinh(R * mid)
            lo, up = (mid, up) if p < 1 else (lo, mid)
        return (lo + up) / 2
    return time


def test_time_to_one_accepts_a_root_finder_within_the_stated_tolerance(capsys):
    # #30: a 20-step bisection (error ~4e-6) was refused with "p = 1, not 1"
    assert ex.check_time_to_one(_bisection(20))
    assert ex.TIME_RTOL == 1e-4  # the tolerance the exercise's text states


@pytest.mark.parametrize("answer", [
    _bisection(12),                                    # stopped too early
    lambda p0, d0: round(float(time_to_one(p0, d0)), 3),  # rounded constants
    lambda p0, d0: time_to_one(p0, d0) * (1 + 3e-4),   # just beyond the tolerance
    lambda p0, d0: 0.9312 if (p0, d0) == (0.5, 0.0) else time_to_one(p0, d0) + 1e-3,
])
def test_time_to_one_hint_never_shows_p_as_1(answer, capsys):
    # #30: "at your τ = 0.9312 the flow has p = 1, not 1" -- the digits hid the gap
    result = ex.check_time_to_one(answer)
    assert result.status == "wrong"
    assert not re.search(r"p = 1(\.0*)?[,; ]", result.message), result.message
    shown = re.search(r"p = (-?[\d.]+), not 1", result.message)
    assert shown is None or float(shown.group(1)) != 1.0, result.message


def _descent_step_float32_autograd(b0, b1, a, lr):
    """Exercise 1.3 as a learner with torch would write it: float32 autograd."""
    theta = torch.tensor([b0, b1, a], requires_grad=True)  # float32, torch's default
    p = torch.sigmoid(theta[2])
    s0, s1 = theta[0], (1 - p) * theta[0] + p * theta[1]
    loss = torch.nn.functional.softplus(s0) + torch.nn.functional.softplus(-s1)
    loss.backward()
    return (theta - lr * theta.grad).detach()


def test_descent_step_accepts_float32_autograd(capsys):
    # #30: refused at rtol 1e-7 with "your new a is 0.294104; ... a different one"
    assert _descent_step_float32_autograd(0.0, 0.0, 0.0, 1.0).dtype == torch.float32
    assert ex.check_descent_step(_descent_step_float32_autograd)
    assert ex.STEP_RTOL >= 1e-5  # float32 errs by up to ~1e-6 relative here


def test_descent_step_float32_mistake_gets_its_hint(capsys):
    def uphill32(b0, b1, a, lr):
        new = _descent_step_float32_autograd(b0, b1, a, lr).double()
        return 2 * torch.tensor([b0, b1, a], dtype=torch.float64) - new
    result = ex.check_descent_step(uphill32)
    assert "uphill" in result.message, result.message


def test_descent_step_hint_prints_no_value_to_compare(capsys):
    # a near miss is told it is close, and no hint prints the learner's value beside one
    # that looks the same: it prints only the case's inputs (listed in the exercise)
    result = ex.check_descent_step(
        lambda b0, b1, a, lr: descent_step(b0, b1, a, lr) * (1 + 3e-5))
    assert result.status == "wrong" and "3 digits" in result.message, result.message
    inputs = {float(x) for c in ex.STEP_CASES for x in c} | {1e-5}
    printed = {float(t) for t in re.findall(
        r"(?<![\w.])-?\d+\.?\d*(?:e-?\d+)?(?![\w.])", result.message)}
    assert printed <= inputs | {3.0, 5.0}, printed  # "3 digits but not to 5"


def test_classifier_head_accepts_float64_and_hint_names_no_value(capsys):
    assert ex.check_classifier_head(lambda h, al, w: classifier_head(
        h.double(), al.double(), w.double()))
    result = ex.check_classifier_head(lambda h, al, w: (lambda o: (o[0], o[1], o[2] * 1.01))(
        classifier_head(h, al, w)))
    assert "r is off at index" in result.message and "expected" not in result.message


# ------------------------------------------------------------------ the gaming learner
#: Numbers a hint may print that the exercise's text gives the reader: each checker's starts
#: (the text lists them; a hint names the start it failed on) and the stated tolerances.
TEXT_NUMBERS = {
    "check_time_to_one": {x for c in ex.TIME_CASES for x in c} | {ex.TIME_RTOL, ex.FAR},
    "check_lowest_attention": {x for c in ex.LOWEST_CASES for x in c}
    | {ex.LOWEST_TOL, ex.FAR},
    "check_descent_step": {x for c in ex.STEP_CASES for x in c} | {ex.STEP_RTOL},
    "check_classifier_head": set(),
}
N_CASES = {"check_time_to_one": len(ex.TIME_CASES),
           "check_lowest_attention": len(ex.LOWEST_CASES),
           "check_descent_step": len(ex.STEP_CASES), "check_classifier_head": 3}


def _constant(name, value):
    """An answer of the right form that knows nothing: every output is ``value``."""
    if name == "check_descent_step":
        return lambda *args: np.full(3, value)
    if name == "check_classifier_head":
        return lambda h, al, w: (torch.full(h.shape[:1], value),
                                 torch.full(h.shape[:2], value),
                                 torch.full(h.shape[:2], value))
    return lambda *args: value


def _right_first(name, k, value):
    """The reference on the checker's first ``k`` calls (cases), ``value`` after: the gamed
    answer that has fixed the cases the hints named so far, to see every case's hint."""
    reference, const, calls = CHECKS[name][1], _constant(name, value), [0]

    def answer(*args):
        calls[0] += 1
        return (reference if calls[0] <= k else const)(*args)
    return answer


GAMED = [(n, f"const {v}", lambda n=n, v=v: _constant(n, v)) for n in CHECKS
         for v in (0.0, 0.5, 1.0)] + [
    (n, f"right on {k} cases", lambda n=n, k=k: _right_first(n, k, 0.2))
    for n in CHECKS for k in range(1, N_CASES[n])]


@pytest.mark.parametrize("name, label, make", GAMED, ids=[f"{n}-{g}" for n, g, _ in GAMED])
def test_gamed_answer_is_refused_and_its_hint_leaks_nothing(name, label, make, capsys):
    check, reference = CHECKS[name]
    leaks = hint_leaks(check, reference, make(), allowed=TEXT_NUMBERS[name])
    assert not leaks, f"{name} ({label}): the hint shows the reference's {leaks}"


def test_classifier_head_one_entry_fixed_from_the_old_hint(capsys):
    # the old hint said "beta is off at index (3, 2): got 0, expected 0.255399"; a learner
    # who copies such an entry into the zero answer is still refused, and told nothing new
    def one_entry_fixed(h, al, w):
        beta = torch.zeros(h.shape[:2])
        beta[3, 2] = (h @ w)[3, 2]
        return torch.zeros(h.shape[:1]), torch.zeros(h.shape[:2]), beta
    assert not hint_leaks(ex.check_classifier_head, classifier_head, one_entry_fixed)


def _direction(message: str) -> int:
    """+1 if a hint says the answer is too low, -1 if too high, 0 if it gives no direction."""
    shown = re.search(r"the flow has p = (-?[\d.]+|inf|-inf), not 1", message)
    if shown:  # 1.1: p < 1 at your τ means your τ is too early
        return 1 if float(shown.group(1)) < 1 else -1
    if "never goes that low" in message:  # 1.2: your lowest p is too low
        return 1
    return -1 if "goes lower than that" in message else 0


_CASE = re.compile(r"for (?:p0 = (\S+), Δ0 = ([^:]+):|gap = (\S+), p0 = (\S+) )")


@pytest.mark.parametrize("name, cases", [
    ("check_time_to_one", ex.TIME_CASES), ("check_lowest_attention", ex.LOWEST_CASES)])
def test_following_the_hints_by_bisection_never_reaches_a_tick(name, cases, capsys):
    # The hints of 1.1 and 1.2 say in which direction a far-off case is off. A gaming
    # learner keeps a table of answers (one per start the hint names) and bisects each
    # on that direction alone: it gets within FAR of the crossing (minimum), and there the
    # hints stop saying which way -- far from the tolerance, so it never reaches ✓.
    check = CHECKS[name][0]
    table = {c: 0.3 + 0.01 * i for i, c in enumerate(cases)}  # not one constant
    lo, hi = dict.fromkeys(cases, 0.0), dict.fromkeys(cases, 4.0)
    for _ in range(400):
        result = check(lambda *case: table[case])
        assert result.status == "wrong", f"{name}: following the hints reached ✓"
        m, way = _CASE.search(result.message), _direction(result.message)
        if m is None or way == 0:
            break  # no direction given: nothing left to follow
        case = tuple(float(x) for x in m.groups() if x is not None)
        (lo if way > 0 else hi)[case] = table[case]
        table[case] = (lo[case] + hi[case]) / 2
    else:
        pytest.fail("the bisection did not settle")
    assert "within" in result.message, result.message
