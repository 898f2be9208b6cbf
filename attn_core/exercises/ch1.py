"""Checkers for chapter 1's exercises (the gated classifier and the attention LSTM classifier).

- :func:`check_time_to_one` (Exercise 1.1, derivation): the training time at which the toy's
  attention ``p`` first reaches 1, from ``p(0) = p0`` and ``Δ(0) = Δ0 >= 0``;
- :func:`check_lowest_attention` (Exercise 1.2, what if): how low ``p`` dips when the start is
  only a little backwards (gap ``β0 - β1`` below the critical ``√2 p0``);
- :func:`check_descent_step` (Exercise 1.3, code): one step of gradient descent on the
  softmax + cross-entropy toy;
- :func:`check_classifier_head` (Exercise 1.4, code): the attention LSTM classifier's head
  (scores, softmax over positions, relevance, logit) from its hidden states.

Each checker states its tolerance (float32 work passes every one), and no hint prints a
reference value: a hint says which case and which part is wrong and names the likely mistake;
where it says in which direction an answer is off, it does so only while the answer is far off
(a gaming learner cannot bisect to the tolerance on hints alone), and the numbers it prints are
the case's inputs (listed in the exercise's text) and the learner's own.

The references come from the package: the toy's flow
(:func:`~attn_core.theory.gated_flow_closed_form`, itself checked against the RK4 flow in the
chapter), :func:`~attn_core.theory.gated_ce_descent` and
:class:`~attn_core.models.AttentionClassifier`'s own forward pass.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import theory
from ..models import AttentionClassifier
from . import (Wrong, checker, expect_number, expect_shape, first_mistake, matches,
               own_work, variant_table)

__all__ = ["check_time_to_one", "check_lowest_attention", "check_descent_step",
           "check_classifier_head"]

_R = math.sqrt(2.0)

#: Exercise 1.1 accepts τ to this relative error (a root-finder stopped at 1e-5 passes).
TIME_RTOL = 1e-4
#: Exercise 1.2 accepts the lowest p to this absolute (and relative) error.
LOWEST_TOL = 1e-4
#: Exercise 1.3 accepts each new parameter to this relative (and absolute) error: about 84
#: float32 eps (2⁻²³). Float32 work (torch's default; autograd of softplus, of log-sigmoid or
#: of BCE-with-logits, or NumPy by hand) uses at most 6 % of it on these cases (measured).
STEP_RTOL, STEP_ATOL = 1e-5, 1e-6
#: Exercise 1.4 accepts logit, p and beta to these (the model itself runs in float32).
HEAD_RTOL, HEAD_ATOL = 1e-4, 1e-6
#: A hint says in which direction an answer is off only while it is off by more than this
#: (in p, which lives in [0, 1]): far above the tolerances, so hints alone cannot bisect to ✓.
FAR = 0.01


def _off_where(got, want, what: str, hint: str, rtol: float, atol: float) -> np.ndarray:
    """``got`` as an array of ``want``'s shape; :class:`Wrong` naming the first entry that is
    off and how many are (never the expected value) unless every entry is within tolerance."""
    arr = expect_shape(got, np.shape(want), what)
    if not np.all(np.isfinite(arr)):
        raise Wrong(f"{what} contains NaN or inf")
    bad = ~np.isclose(arr, want, rtol=rtol, atol=atol)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise Wrong(f"{what} is off at index {where} ({int(bad.sum())} of {bad.size} entries "
                    f"off) -- {hint}")
    return arr


# ------------------------------------------------------------------ Exercise 1.1 (derivation)
#: (p0, Δ0) starts: the uniform one, other p0 with Δ0 = 0, and Δ0 > 0 (B < 0 for the fifth).
TIME_CASES = ((0.5, 0.0), (0.2, 0.0), (0.9, 0.0), (0.5, 0.5), (0.3, 2.0), (0.05, 1.0))


def _p_at(p0: float, delta0: float, tau) -> np.ndarray:
    """The toy's attention p(τ) from p(0) = p0, Δ(0) = delta0 (the package's closed form)."""
    return theory.gated_flow_closed_form(-delta0 / 2, delta0 / 2, p0, tau)["p"]


def _time_to_one_reference(p0: float, delta0: float) -> float:
    """Bisection on the closed form (p rises monotonically when Δ0 >= 0 and p0 > 0); p0 cosh
    alone reaches 1 at arccosh(1/p0)/√2, which brackets the root."""
    lo, hi = 0.0, math.acosh(1 / p0) / _R
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _p_at(p0, delta0, mid) < 1 else (lo, mid)
    return (lo + hi) / 2


def _time_variants(p0: float, d0: float) -> dict[str, float]:
    """The usual mistakes, as the formula each one gives."""
    def root(a, b, sign=1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return float(np.log((1 + sign * np.sqrt(1 - 4 * a * b)) / (2 * a)))

    a, b = (p0 + d0 / _R) / 2, (p0 - d0 / _R) / 2
    right = root(a, b) / _R
    return {
        "no_rate": right * _R,
        "rate_twice": right / _R,
        "ignores_delta": math.acosh(1 / p0) / _R,
        "constant": math.acosh(2) / _R,
        "sinh_coef": root((p0 + _R * d0) / 2, (p0 - _R * d0) / 2) / _R,
        "small_root": root(a, b, -1) / _R,
    }


@checker("Exercise 1.1: when p reaches 1")
def check_time_to_one(time_to_one):
    """``time_to_one(p0, delta0)``: the training time τ at which p first reaches 1."""
    got = np.array([expect_number(time_to_one(p0, d0), f"time_to_one({p0}, {d0})")
                    for p0, d0 in TIME_CASES])
    want = np.array([_time_to_one_reference(p0, d0) for p0, d0 in TIME_CASES])
    variants = variant_table(_time_variants, TIME_CASES)
    rate = ("your times are off by a factor √2: from p̈ = 2p the exponentials are "
            "e^{±√2τ} -- did you drop or double the √2 when solving for τ?")
    first_mistake(got, [
        ("your time does not depend on p0 (or Δ0): the 2 in arccosh(2) comes from "
         "p0 = ½ -- redo the uniform-start solution with a general p0", variants["constant"]),
        ("right for Δ0 = 0, but not for Δ0 > 0: a head start in Δ should make p "
         "reach 1 sooner -- keep the sinh term of p(τ)", variants["ignores_delta"]),
        ("check the coefficient of sinh(√2τ) in p(τ): at τ = 0 the slope ṗ must "
         "equal Δ0", variants["sinh_coef"]),
        ("you took the other root of the quadratic in x = e^{√2τ}: at τ = 0, x = 1 "
         "and p = p0 < 1, so the crossing you want has x > 1", variants["small_root"]),
        (rate, variants["no_rate"]),
        (rate, variants["rate_twice"]),
    ], rtol=1e-5, atol=1e-8, nan_equal=True)  # matches()'s own tolerances
    for (p0, d0), g in zip(TIME_CASES, got):
        if not np.isfinite(g):
            raise Wrong(f"time_to_one({p0}, {d0}) is {g}: a log or arccosh of a number outside "
                        f"its domain?")
        if g <= 0:
            raise Wrong(f"time_to_one({p0}, {d0}) = {g:.4g} <= 0, but p starts below 1: it "
                        f"reaches 1 at a positive time")
    if np.allclose(got, got[0], rtol=1e-9, atol=0):
        raise Wrong("your time is the same from every start: it must depend on p0 and Δ0 "
                    "(the checker's starts differ in both)")
    ratio = got / want
    if np.allclose(ratio, ratio[0], rtol=1e-6) and abs(ratio[0] - 1) > 1e-3:
        raise Wrong(f"your times are all off by the same factor {ratio[0]:.4g}: check the "
                    f"rate of the exponentials")
    for (p0, d0), g, w in zip(TIME_CASES, got, want):
        if abs(g - w) > TIME_RTOL * w:
            p_there = float(_p_at(p0, d0, g))
            if abs(p_there - 1) > FAR:  # 3 decimals: never printed as 1.000
                raise Wrong(f"for p0 = {p0}, Δ0 = {d0}: at your τ = {g:.6g} the flow has "
                            f"p = {p_there:.3f}, not 1")
            raise Wrong(f"for p0 = {p0}, Δ0 = {d0}: at your τ = {g:.6g} the flow's p is within "
                        f"{FAR} of 1 but your τ is not within {TIME_RTOL:g} (relative) of the "
                        f"crossing: rounded constants, or a root-finder stopped too early?")


# ------------------------------------------------------------------- Exercise 1.2 (what if)
#: (gap β0 - β1, p0): below the critical gap √2·p0, near it, a different p0, and gaps <= 0.
LOWEST_CASES = ((0.5, 0.5), (0.7, 0.5), (0.2, 0.3), (1.0, 0.8), (0.0, 0.5), (-0.5, 0.5),
                (-2.0, 0.5))


def _lowest_reference(gap: float, p0: float) -> float:
    """The minimum of p over τ in [0, 8] along the package's flow (the minimum of the cases
    above is reached before τ = 2; a grid step of 1e-4 errs by ~1e-9)."""
    tau = np.linspace(0.0, 8.0, 80_001)
    return float(theory.gated_flow_closed_form(gap / 2, -gap / 2, p0, tau)["p"].min())


@checker("Exercise 1.2: how low p dips from a slightly backwards start")
def check_lowest_attention(lowest_attention):
    """``lowest_attention(gap, p0)``: the lowest p along the flow, for gap < √2·p0."""
    # the derivation is the exercise: the package's flows (closed form or numerical)
    # refuse while the answer runs
    with own_work((theory, "gated_flow"), (theory, "gated_flow_closed_form"),
                  (theory, "gated_flow_critical_gap")):
        got = np.array([expect_number(lowest_attention(g, p0),
                                      f"lowest_attention({g}, {p0})")
                        for g, p0 in LOWEST_CASES])
    want = np.array([_lowest_reference(g, p0) for g, p0 in LOWEST_CASES])
    gaps, p0s = np.array(LOWEST_CASES).T
    with np.errstate(invalid="ignore"):
        no_half = np.sqrt(p0s ** 2 - gaps ** 2)
        everywhere = np.sqrt(p0s ** 2 - gaps ** 2 / 2)
    if matches(got, p0s, nan_equal=True):
        raise Wrong("with a backwards start (gap > 0) ṗ(0) = Δ0 = -gap < 0: p dips below p0 "
                    "before it recovers")
    defined = (gaps > 0) & np.isfinite(no_half)  # where √(p0² - gap²) is a number at all
    if matches(got[defined], no_half[defined]):
        raise Wrong("close, but check the factor in front of gap²: work out 4AB from A and B")
    if matches(got, everywhere, nan_equal=True):
        raise Wrong("for gap <= 0 (β1 >= β0) the slope ṗ(0) = Δ0 = -gap is >= 0 and Δ only "
                    "grows: does p ever fall below p0 there?")
    for (g, p0), x, w in zip(LOWEST_CASES, got, want):
        if not np.isfinite(x):
            raise Wrong(f"lowest_attention({g}, {p0}) is {x}: below the critical gap √2·p0 "
                        f"the flow has a finite lowest p (a square root of a negative "
                        f"number?)")
        if not np.isclose(x, w, rtol=LOWEST_TOL, atol=LOWEST_TOL):
            if abs(x - w) > FAR:
                side = "goes lower than that" if w < x else "never goes that low"
                raise Wrong(f"for gap = {g}, p0 = {p0} your lowest p is {x:.4g}, but the flow "
                            f"from that start (theory.gated_flow_closed_form) {side}")
            raise Wrong(f"for gap = {g}, p0 = {p0} your lowest p is within {FAR} of the "
                        f"flow's but not within {LOWEST_TOL:g}: rounded constants, or a "
                        f"numerical minimum on a coarse grid?")


# --------------------------------------------------------------------- Exercise 1.3 (code)
#: (β0, β1, a, lr): the uniform start, §2's bad start, and other starts and learning rates.
STEP_CASES = ((0.0, 0.0, 0.0, 1.0), (10.0, -10.0, 0.0, 0.5), (1.5, -0.3, 2.0, 0.1),
              (-2.0, 3.0, -1.0, 2.0), (0.3, 0.7, 0.4, 8.0))


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _step_reference(b0, b1, a, lr) -> np.ndarray:
    d = theory.gated_ce_descent(b0, b1, float(_sig(a)), lr=lr, steps=1)
    p = d["p"][1]
    return np.array([d["beta0"][1], d["beta1"][1], math.log(p / (1 - p))])


def _step_variant(b0, b1, a, lr, kind: str) -> np.ndarray:
    """One step with a usual mistake (``kind``) in the gradient or the update."""
    p = _sig(a)
    s1 = (1 - p) * b0 + p * b1
    g0 = _sig(b0) if kind != "no_negative" else 0.0
    g1 = -_sig(s1) if kind == "sign_sigma" else -_sig(-s1)
    chain = 1.0 if kind == "dp_not_da" else p * (1 - p)
    grad = np.array([g0 + g1 * (1 - p), g1 * p, g1 * (b1 - b0) * chain])
    theta = np.array([b0, b1, a])
    if kind == "ascent":
        return theta + lr * grad
    if kind == "no_lr":
        return theta - grad
    new = theta - lr * grad
    if kind == "returns_p":
        new[2] = _sig(new[2])
    return new


@checker("Exercise 1.3: one step of gradient descent")
def check_descent_step(descent_step):
    """``descent_step(beta0, beta1, a, lr)``: the new (β0, β1, a), as numbers, an array, a
    tensor (float32 autograd passes; one that still requires grad is read too) or a tuple of
    them."""
    # expect_shape reads tensors that still require grad, in tuples too (exercises.as_array)
    with own_work((theory, "gated_ce_descent"), (theory, "gated_ce_flow")):
        got = np.stack([expect_shape(descent_step(*c), (3,), f"descent_step{c}",
                                     "return the three new parameters (beta0, beta1, a)")
                        for c in STEP_CASES])
    want = np.stack([_step_reference(*c) for c in STEP_CASES])
    hints = {
        "ascent": "your step goes uphill (the loss rises): descent subtracts the gradient",
        "no_lr": "does your step scale with the learning rate lr?",
        "dp_not_da": "your update of a uses ∂L/∂p; the parameter is a, with p = σ(a): the "
                     "chain rule adds a factor",
        "no_negative": "β0 also scores the negative sequence {0,0} (s0 = β0): that term of "
                       "the loss has a gradient too",
        "sign_sigma": "check the derivative of log(1 + e^{-s}) with respect to s (which "
                      "sigmoid, of s or of -s?)",
        "returns_p": "the third entry should be the new attention logit a, not p = σ(a)",
    }
    for kind, hint in hints.items():
        if matches(got, np.stack([_step_variant(*c, kind) for c in STEP_CASES]),
                   rtol=STEP_RTOL, atol=STEP_ATOL):  # float32 mistakes get their hint too
            raise Wrong(hint)
    names = ("beta0", "beta1", "a")
    where = {
        "beta0": "β0 enters both scores, s0 = β0 and s1 = (1 - p)β0 + pβ1: its gradient "
                 "has a term from each",
        "beta1": "β1 enters only s1, with weight p: check ∂L/∂s1, the derivative of "
                 "log(1 + e^{-s1})",
        "a": "a enters only through p = σ(a) in s1: the chain ∂s1/∂p · dp/da",
    }
    for c, g, w in zip(STEP_CASES, got, want):
        off = [n for n, x, y in zip(names, g, w)
               if not np.isclose(x, y, rtol=STEP_RTOL, atol=STEP_ATOL)]
        if not off:
            continue
        which = off[0] if len(off) == 1 else ", ".join(off[:-1]) + " and " + off[-1]
        plural = len(off) > 1
        if np.all(np.abs(g - w) <= 1e-3 * (1 + np.abs(w))):
            raise Wrong(f"from (beta0, beta1, a, lr) = {c} your new {which} "
                        f"agree{'' if plural else 's'} with gradient descent to about 3 "
                        f"digits but not to 5 (the tolerance, {STEP_RTOL:g} relative): "
                        f"float16, or a small term missing?")
        raise Wrong(f"from (beta0, beta1, a, lr) = {c} your new {which} "
                    f"{'are' if plural else 'is'} off -- {where[off[0]]}")


# --------------------------------------------------------------------- Exercise 1.4 (code)
def _head_cases():
    """(h, alpha, w, model outputs) of a small AttentionClassifier: a batch of 4 sequences of
    length 7, the same with α scaled by 10 (a peaked attention), and sequences of length 1."""
    gen = torch.Generator().manual_seed(0)
    model = AttentionClassifier(vocab=8, embed=4, hidden=5, seeds=(3,))
    cases = []
    with torch.no_grad():
        for scale, length in ((1.0, 7), (10.0, 7), (1.0, 1)):
            model.alpha.mul_(scale)
            x = torch.randint(0, 8, (1, 4, length), generator=gen)
            h = model.rnn(model.emb(x))[0][0]  # (B, L, H) of the one member
            out = model(x)
            cases.append((h.clone(), model.alpha[0].clone(), model.w[0].clone(),
                          {k: v[0].numpy() for k, v in out.items()}))
            model.alpha.div_(scale)
    return cases


@checker("Exercise 1.4: the attention classifier head")
def check_classifier_head(classifier_head):
    """``classifier_head(h, alpha, w)`` -> ``(logit, p, r)``, as the book's model computes."""
    for h, alpha, w, ref in _head_cases():
        b, n = h.shape[:2]
        out = classifier_head(h.clone(), alpha.clone(), w.clone())
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise Wrong("return the three tensors (logit, p, r)")
        logit = expect_shape(out[0], (b,), "logit", "one logit per sequence of the batch")
        p = expect_shape(out[1], (b, n), "p", "one attention weight per position")
        beta = expect_shape(out[2], (b, n), "r", "one relevance per position")
        hn, an, wn = (t.double().numpy() for t in (h, alpha, w))
        if matches(beta, hn @ an, rtol=1e-4, atol=1e-6) and not matches(
                beta, ref["beta"], rtol=1e-4, atol=1e-6):
            raise Wrong("did you swap `alpha` and `w`? `alpha` scores the positions, `w` gives "
                        "the relevance r_l")
        _off_where(beta, ref["beta"], "r", "r_l = wᵀh_l at every position",
                   HEAD_RTOL, HEAD_ATOL)
        if n > 1 and matches(p, np.full((b, n), 1 / n)):
            raise Wrong("your p is uniform (1/L): it ignores q; the scores are a_l = qᵀh_l")
        scores = hn @ an
        softmax_b = np.exp(scores) / np.exp(scores).sum(0, keepdims=True)
        if matches(p, softmax_b, rtol=1e-4, atol=1e-6):
            raise Wrong("is your softmax over positions l? Yours sums to 1 over the batch")
        if not np.allclose(p.sum(1), 1, atol=1e-5):
            raise Wrong("p should be a distribution over the positions of each sequence: "
                        "every row of p sums to 1 (a softmax of the scores)")
        _off_where(p, ref["p"], "p", "softmax of the scores a_l = qᵀh_l over positions",
                   HEAD_RTOL, HEAD_ATOL)
        if matches(logit, 1 / (1 + np.exp(-ref["logit"])), rtol=1e-4, atol=1e-6):
            raise Wrong("return the logit Σ_l p_l r_l, before the sigmoid, not Pr[positive]")
        if n > 1 and (matches(logit, ref["beta"].sum(1), rtol=1e-4, atol=1e-6) or matches(
                logit, ref["beta"].mean(1), rtol=1e-4, atol=1e-6)):
            raise Wrong("the logit weights each r_l by its attention p_l")
        _off_where(logit, ref["logit"], "logit", "Σ_l p_l r_l", HEAD_RTOL, HEAD_ATOL)
