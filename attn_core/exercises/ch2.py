"""Chapter 2's exercises (the SEN identity of Lu, Mao & Nayak 2021): their checkers.

- :func:`check_attention_forward` (code): the forward pass of Attn-FC, against
  :class:`~attn_core.models.TopicAttention`;
- :func:`check_half_attention` (derivation): the score at which a topic word holds half of its
  sentence's attention, and the embedding norm Eq. 10 needs for it;
- :func:`check_attention_at_norm` (what if): the attention a topic word of a given SEN norm
  gets in sentences of m non-topic words (Eq. 10 inverted, then the softmax);
- :func:`check_theorem1_norm` (derivation): the norm Theorem 1 (Eq. 9) gives a word whose
  embedding did not start at 0 and whose score fell (mutual diminution).

Used in ``notebooks/02_sen.ipynb`` as ``from attn_core.exercises import ch2 as ex``; see
:mod:`attn_core.exercises` for the pattern.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..chapters.ch2_sen import sen_score  # Eq. 10 inverted (re-exported: ex.sen_score)
from ..models import TopicAttention
from ..theory import sen_curve, sen_theorem1
from . import Wrong, checker, expect_number, expect_shape, matches

__all__ = ["check_attention_forward", "check_half_attention", "check_attention_at_norm",
           "check_theorem1_norm", "sen_score"]


# --------------------------------------------------------------------------- 2.1 (code)
def _forward_case(n: int, length: int, seed: int):
    """A small Attn-FC with random keys (so that the scores differ) and a batch of sentences:
    the inputs of the reader's forward pass and the engine's outputs."""
    g = torch.Generator().manual_seed(seed)
    model = TopicAttention(vocab=12, n_topics=3, dim=5, classifier="FC", embed_var=1.0,
                           seeds=[seed], fast_pool=False)
    x = torch.randint(0, 12, (n, length), generator=g)
    with torch.no_grad():
        model.keys.copy_(torch.randn(model.keys.shape, generator=g))
        out = model(x.unsqueeze(0))
    inputs = (x.clone(), model.embedding[0].detach().clone(), model.keys[0].detach().clone(),
              model.query[0].clone(), model.U[0].clone())
    return inputs, out["p"][0].numpy().astype(np.float64), out["logits"][0].numpy()


def _forward_mistakes(x, emb, keys, q, U) -> dict:
    """The usual wrong forward passes: ``{hint: (p, logits)}``."""
    x, emb, keys, q, U = (t.double() if t.is_floating_point() else t
                          for t in (x, emb, keys, q, U))
    s = keys[x] @ q
    p = torch.softmax(s, dim=-1)
    out = {}
    p0 = torch.softmax(s, dim=0)
    out["is your softmax over the words of each sentence (the last axis)? Over the sentences "
        "it mixes different sentences"] = (p0, (p0.unsqueeze(-1) * emb[x]).sum(1) @ U)
    pe = torch.softmax(emb[x] @ q, dim=-1)
    out["the score of a word is qᵀκ_w: it reads the word's key, not its embedding"] = (
        pe, (pe.unsqueeze(-1) * emb[x]).sum(1) @ U)
    out["the sentence representation averages the embeddings ν (weighted by the attention), "
        "not the keys"] = (p, (p.unsqueeze(-1) * keys[x]).sum(1) @ U)
    out["your logits ignore the attention: the sentence representation is the "
        "attention-weighted sum of the embeddings, not their plain mean"] = (
        p, emb[x].mean(1) @ U)
    logits = (p.unsqueeze(-1) * emb[x]).sum(1) @ U
    out["return the logits Uᵀν̄, not the class probabilities (no softmax at the end)"] = (
        p, torch.softmax(logits, dim=-1))
    return out


@checker("Exercise 2.1: the forward pass of Attn-FC")
def check_attention_forward(forward):
    """``forward(x, emb, keys, q, U)`` -> ``(p, logits)`` for one model: ``x`` (N, L) word
    ids, ``emb`` and ``keys`` (V, d), ``q`` (d,), ``U`` (d, J); ``p`` (N, L), ``logits``
    (N, J)."""
    for n, length, seed in ((6, 4, 3), (1, 7, 5), (9, 21, 11)):
        inputs, p_ref, logits_ref = _forward_case(n, length, seed)
        got = forward(*(t.clone() for t in inputs))
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Wrong("return a pair (p, logits): the attention and the topic logits")
        p = expect_shape(got[0], (n, length), "p (the attention)",
                         "one weight per word of every sentence")
        logits = expect_shape(got[1], (n, logits_ref.shape[1]), "logits",
                              "one logit per topic for every sentence")
        for hint, (p_bad, l_bad) in _forward_mistakes(*inputs).items():
            if matches(p, p_bad.numpy(), rtol=1e-4, atol=1e-6) and matches(
                    logits, l_bad.numpy(), rtol=1e-4, atol=1e-6):
                raise Wrong(hint)
        if np.any(np.abs(p.sum(-1) - 1) > 1e-4):
            raise Wrong("each sentence's attention must sum to 1 over its words: a softmax of "
                        "the scores along each sentence")
        # the hints name the part that is off and the likely reason, never the reference's
        # values (a learner could copy them entry by entry): tests/test_exercises_ch2.py
        for name, arr in (("p (the attention)", p), ("logits", logits)):
            if not np.all(np.isfinite(arr)):
                raise Wrong(f"{name} contains NaN or inf: an overflow in exp? (torch.softmax "
                            "subtracts the largest score for you)")
        if not matches(p, p_ref, rtol=1e-4, atol=1e-6):
            if matches(p, np.full_like(p, 1 / length), rtol=1e-4, atol=1e-6):
                raise Wrong("your attention is uniform over each sentence's words: here the "
                            "keys are not zero, so the scores s_w = qᵀκ_w differ and so "
                            "must the attention")
            raise Wrong("p (the attention) is off: it is the softmax of the scores "
                        "s_w = qᵀκ_w (the key of each word of the sentence, dotted with q) "
                        "over the words of each sentence")
        if not matches(logits, logits_ref, rtol=1e-4, atol=1e-6):
            raise Wrong("your attention is right but the logits are off: logits = Uᵀν̄, "
                        "with ν̄ the attention-weighted sum of the sentence's embeddings "
                        "ν_w (the rows of emb picked by x)")


# --------------------------------------------------------------------------- 2.2 (derivation)
def _half_attention(m: int) -> tuple[float, float]:
    s = math.log(m)
    return s, float(sen_curve(s, m))


@checker("Exercise 2.2: half of the attention")
def check_half_attention(half_attention):
    """``half_attention(m)`` -> ``(s, v)``: the score at which a topic word holds half of its
    sentence's attention (the m non-topic scores at 0) and the SEN norm Eq. 10 gives there."""
    # m = 50, not 100: a hint prints m, and ln 100 = 4.6 would show as a "5" (m = 5) that the
    # gaming test (tests/test_exercises_ch2.py) cannot tell from a leaked score
    for m in (20, 1, 5, 50):
        got = half_attention(m)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Wrong(f"half_attention({m}) should return a pair (s, v): the score and the "
                        f"norm")
        s = expect_number(got[0], f"s for m = {m}", finite=True)
        v = expect_number(got[1], f"v for m = {m}", finite=True)
        s_ref, v_ref = _half_attention(m)
        if not math.isclose(s, s_ref, rel_tol=1e-6, abs_tol=1e-9):
            if m > 1 and math.isclose(s, math.log(m + 1), rel_tol=1e-6):
                raise Wrong("count the competitors: the topic word shares its sentence with m "
                            "non-topic words (the m + 1-th word is the topic word itself)")
            if m > 1 and any(math.isclose(s, f(m), rel_tol=1e-6)
                             for f in (math.log2, math.log10)):
                raise Wrong("e^s in the softmax calls for the natural logarithm")
            if math.isclose(s, m / 2, rel_tol=1e-6) or math.isclose(s, 1 / (1 + m),
                                                                     rel_tol=1e-6):
                raise Wrong("s is a score, not an attention weight: solve e^s / (e^s + m) = ½ "
                            "for s")
            raise Wrong(f"the score for m = {m} is off (got {s:.6g}): write the topic word's "
                        "attention with the m non-topic scores at 0 and set it to ½")
        if not math.isclose(v, v_ref, rel_tol=1e-6, abs_tol=1e-9):
            mistakes = {
                "the e^s/m term of Eq. 10 is missing (that is the naive √(2s))":
                    math.sqrt(2 * s),
                "Eq. 10 has (e^s − 1)/m, not e^s/m: at s = 0 the norm must be 0":
                    math.sqrt(2 * (s + math.exp(s) / m)),
                "Eq. 10 gives the norm ‖v‖ itself, not its square": v_ref ** 2,
                "check the factor 2 under the square root of Eq. 10": v_ref / math.sqrt(2),
            }
            for hint, bad in mistakes.items():
                if math.isclose(v, bad, rel_tol=1e-6, abs_tol=1e-9) and m > 1:
                    raise Wrong(hint)
            raise Wrong(f"the norm for m = {m} is off (got {v:.6g}): put your score into "
                        f"Eq. 10")


# --------------------------------------------------------------------------- 2.3 (what if)
def _attention(s, m):
    return np.exp(s) / (np.exp(s) + m)


_NORMS = (0.0, 1.0, 2.934, 5.0)
_LENGTHS = (1, 5, 20, 40)


@checker("Exercise 2.3: what if the sentences were longer?")
def check_attention_at_norm(attention_at_norm):
    """``attention_at_norm(v, m)`` -> the attention on a topic word of SEN norm ``v`` in a
    sentence of ``m`` non-topic words (their scores 0), by Eq. 10."""
    got = np.array([[expect_number(attention_at_norm(v, m), f"attention_at_norm({v}, {m})",
                                   finite=True)
                     for m in _LENGTHS] for v in _NORMS])
    V, M = np.meshgrid(np.array(_NORMS), np.array(_LENGTHS), indexing="ij")
    s = np.array([[float(sen_score(v, m)) for m in _LENGTHS] for v in _NORMS])
    want = _attention(s, M)
    if matches(got, want, rtol=1e-4, atol=1e-6):
        return
    if np.any(got < 0) or np.any(got > 1):
        if matches(got, s, rtol=1e-3, atol=1e-5):
            raise Wrong("you return the score; the question asks for the attention, a share "
                        "between 0 and 1")
        raise Wrong("an attention weight is a share between 0 and 1: is this the odds "
                    "e^s/m, or the score?")

    def solve(bracket, target):  # the s >= 0 with bracket(s, m) = target(v), every v and m
        return np.array([[_bisect(lambda t, m=m: bracket(t, m), target(v))
                          for m in _LENGTHS] for v in _NORMS])

    mistakes = {
        "your score ignores the e^s/m term of Eq. 10 (you inverted the naive √(2s))":
            _attention(V ** 2 / 2, M),
        "Eq. 10 has (e^s − 1)/m, not e^s/m: a norm of 0 must give the score 0":
            _attention(solve(lambda t, m: t + math.exp(t) / m, lambda v: v ** 2 / 2), M),
        "count the competitors: the topic word shares its sentence with m non-topic words "
        "of score 0": np.exp(s) / (np.exp(s) + M + 1),
        "check how ‖v‖ enters: Eq. 10 gives ‖v‖ as a square root":
            _attention(solve(lambda t, m: t + math.expm1(t) / m, lambda v: v), M),
    }
    for hint, bad in mistakes.items():
        if matches(got, bad, rtol=1e-3, atol=1e-5):
            raise Wrong(hint)
    i, j = np.unravel_index(np.argmax(np.abs(got - want)), got.shape)
    raise Wrong(f"attention_at_norm({_NORMS[i]}, {_LENGTHS[j]}) is off (got {got[i, j]:.6g}): "
                "find the score s at which Eq. 10 gives the norm v (bisection on [0, v²/2] "
                "works: the curve increases in s), then the topic word's softmax share")


def _bisect(f, target: float) -> float:
    """The t in [0, target] with f(t) = target, for increasing f with f(0) <= target."""
    lo, hi = 0.0, max(target, 0.0)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


# --------------------------------------------------------------------------- 2.4 (derivation)
_TH1_CASES = ((0.5, 1.2, 20), (-0.078, 1.177, 20), (3.0, 0.0, 20), (-0.2, 2.0, 5),
              (2.0, 0.7, 10))
_NOT_FROM_ZERO = ("the word did not start at norm 0: Theorem 1 relates the changes of s and "
                  "½‖v‖² from the start τ₀, so ‖v₀‖ enters")


def _theorem1_norm(s: float, v0: float, m: int) -> float:
    lhs, _ = sen_theorem1(np.array([0.0, s]), np.array([v0, v0]), m)
    return math.sqrt(v0 ** 2 + 2 * lhs[1])


@checker("Exercise 2.4: Theorem 1 and a falling score")
def check_theorem1_norm(theorem1_norm):
    """``theorem1_norm(s, v0, m)`` -> the SEN norm Theorem 1 (Eq. 9) gives a topic word whose
    score moved from 0 to ``s`` while its norm started at ``v0``."""
    for s, v0, m in _TH1_CASES:
        try:
            got = theorem1_norm(s, v0, m)
        except ValueError as e:  # math.sqrt of a negative number
            if "domain" in str(e) and s < 0 < v0:
                raise Wrong(f"math domain error for s = {s}, ‖v₀‖ = {v0}: "
                            + _NOT_FROM_ZERO) from None
            raise
        try:
            v = expect_number(got, f"theorem1_norm({s}, {v0}, {m})", finite=True)
        except Wrong:
            if s < 0 < v0:
                raise Wrong(f"NaN for s = {s}, ‖v₀‖ = {v0}: " + _NOT_FROM_ZERO) from None
            raise
        want = _theorem1_norm(s, v0, m)
        if math.isclose(v, want, rel_tol=1e-6, abs_tol=1e-9):
            continue
        bracket = s + math.expm1(s) / m
        mistakes = [
            (_NOT_FROM_ZERO, math.sqrt(2 * bracket) if bracket >= 0 else None),
            ("Theorem 1 is about ½‖v‖²: add squares, not norms",
             v0 + math.sqrt(2 * bracket) if bracket >= 0 else None),
            ("[e^s/m] from τ₀ subtracts e^{s₀}/m = 1/m",
             math.sqrt(max(v0 ** 2 + 2 * (s + math.exp(s) / m), 0.0))),
            ("check the factor 2: the right side is ½‖v‖²",
             math.sqrt(max(v0 ** 2 + bracket, 0.0))),
            ("return the norm ‖v‖, not its square", v0 ** 2 + 2 * bracket),
        ]
        for hint, bad in mistakes:
            if bad is not None and math.isclose(v, bad, rel_tol=1e-6, abs_tol=1e-9):
                raise Wrong(hint)
        raise Wrong(f"theorem1_norm({s}, {v0}, {m}) is off (got {v:.6g}): write Eq. 9 from "
                    f"τ₀ (where s₀ = 0 and ‖v‖ = ‖v₀‖) and solve it for ‖v‖")
