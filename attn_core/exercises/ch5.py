"""Chapter 5's exercises (the multi-head rescue, SZKS §5.2): their checkers.

- :func:`check_multihead_attention` (Exercise 5.1, code): the K-head attention step -- scores,
  softmax over source positions, per-head contexts, projections, average or sum -- against
  :meth:`~attn_core.chapters.ch5_multihead.MultiHeadLuong.attend`, the readable model's own;
- :func:`check_head_labels` (Exercise 5.2, what if): the protocol's good / bad / inconsistent
  labels under other thresholds, against :func:`~attn_core.metrics.classify_heads`;
- :func:`check_heads_needed` (Exercise 5.3, derivation): the smallest number of random heads K
  with 1 − (1 − p)^K >= a target rate, against a count over K.

Used in ``notebooks/05_multihead.ipynb`` as ``from attn_core.exercises import ch5 as ex``; see
:mod:`attn_core.exercises` for the pattern.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..chapters.ch5_multihead import MultiHeadLuong
from ..metrics import classify_heads
from . import (Wrong, as_array, checker, expect_close, expect_pair, expect_shape, first_mistake,
               matches, variant_table)

__all__ = ["check_multihead_attention", "check_head_labels", "check_heads_needed"]

_LABELS = ("good", "bad", "inconsistent")


# --------------------------------------------------------------------- Exercise 5.1 (code)
#: (K, reduce, (B, T, L, H)): both reductions, one head, and T = L (a square attention map).
ATTENTION_CASES = ((3, "mean", (2, 4, 5, 6)), (3, "sum", (2, 4, 5, 6)),
                   (1, "mean", (3, 2, 6, 4)), (4, "sum", (1, 5, 5, 3)))


def _attention_cases():
    """(s, h, W, P, reduce) for every case: states in (-1, 1) like a GRU's, score matrices
    large enough that the attention is far from uniform."""
    gen = torch.Generator().manual_seed(5)
    cases = []
    for K, reduce, (B, T, L, H) in ATTENTION_CASES:
        s = torch.tanh(2 * torch.randn(B, T, H, generator=gen))
        h = torch.tanh(2 * torch.randn(B, L, H, generator=gen))
        W = 1.5 * torch.randn(K, H, H, generator=gen)
        P = torch.randn(K, H, H, generator=gen) / math.sqrt(H)
        cases.append((s, h, W, P, reduce))
    return cases


def _attention_reference(s, h, W, P, reduce):
    """The readable model's own attention step, with these W_k and P_k."""
    K, H = W.shape[0], W.shape[1]
    model = MultiHeadLuong(vocab=2, embed=1, hidden=H, heads=K, reduce=reduce)
    with torch.no_grad():
        model.W.copy_(W)
        model.P.copy_(P)
        c, alpha = model.attend(s, h)
    return c.double().numpy(), alpha.double().numpy()


def _attention_variant(s, h, W, P, reduce, kind: str):
    """The usual mistakes, as the (c, alpha) each one gives."""
    s, h, W, P = (t.double() for t in (s, h, W, P))
    Wk = W.transpose(1, 2) if kind == "W_transposed" else W
    scores = torch.einsum("btg,kgh,blh->kbtl", s, Wk, h)
    if kind == "scaled":
        scores = scores / math.sqrt(h.shape[-1])
    axis = {"softmax_t": -2, "softmax_heads": 0, "softmax_batch": 1}.get(kind, -1)
    alpha = scores if kind == "no_softmax" else torch.softmax(scores, dim=axis)
    c_k = alpha @ h
    if kind == "no_projection":
        pc_k = c_k
    else:
        Pk = P if kind == "P_transposed" else P.transpose(1, 2)
        pc_k = c_k @ Pk.unsqueeze(1)
    if kind == "other_reduce":
        reduce = "sum" if reduce == "mean" else "mean"
    c = pc_k.mean(0) if reduce == "mean" else pc_k.sum(0)
    return c.numpy(), alpha.numpy()


_ALPHA_HINTS = {
    "softmax_t": "is your softmax over source positions l? Yours sums to 1 over the output "
                 "steps t",
    "softmax_heads": "is your softmax over source positions l? Yours sums to 1 over the heads",
    "softmax_batch": "is your softmax over source positions l? Yours sums to 1 over the batch",
    "no_softmax": "alpha should be attention weights: a softmax of the scores, so that each "
                  "head's weights over the source positions sum to 1",
    "W_transposed": "your scores are h_lᵀ W_k s_t: the score is s_tᵀ W_k h_l, and W_k is not "
                    "symmetric (check the order of the indices of W)",
    "scaled": "Luong's score s_tᵀ W_k h_l has no 1/√H scaling (that is the Transformer's "
              "scaled dot product)",
}
_CONTEXT_HINTS = {
    "no_projection": "did you apply each head's projection P_k to its context before "
                     "combining the heads?",
    "P_transposed": "you multiplied each context by P_kᵀ: the projected context is P_k c^k_t "
                    "(P_k times the column vector c^k_t)",
}


@checker("Exercise 5.1: the K-head attention step")
def check_multihead_attention(multihead_attention):
    """``multihead_attention(s, h, W, P, reduce)`` -> ``(c, alpha)`` as the chapter's model."""
    for s, h, W, P, reduce in _attention_cases():
        K, H = W.shape[0], W.shape[1]
        (B, T, _), L = s.shape, h.shape[1]
        out = multihead_attention(s.clone(), h.clone(), W.clone(), P.clone(), reduce)
        c_got, a_got = expect_pair(out, "multihead_attention")
        a_got = expect_shape(a_got, (K, B, T, L), "alpha",
                             "one weight per head k, batch item b, output step t and source "
                             "position l: (K, B, T, L)")
        c_got = expect_shape(c_got, (B, T, H), "c", "one combined context per batch item and "
                                                     "output step: (B, T, H)")
        c_ref, a_ref = _attention_reference(s, h, W, P, reduce)
        for kind, hint in _ALPHA_HINTS.items():
            if matches(a_got, _attention_variant(s, h, W, P, reduce, kind)[1], 1e-4, 1e-6):
                raise Wrong(hint)
        expect_close(a_got, a_ref, "alpha", "α^k_tl = softmax over l of s_tᵀ W_k h_l",
                     rtol=1e-4, atol=1e-6)
        for kind, hint in _CONTEXT_HINTS.items():
            if matches(c_got, _attention_variant(s, h, W, P, reduce, kind)[0], 1e-4, 1e-6):
                raise Wrong(hint)
        if K > 1 and matches(c_got, _attention_variant(s, h, W, P, reduce, "other_reduce")[0],
                             1e-4, 1e-6):
            want, did = ("averaged", "summed") if reduce == "mean" else ("summed", "averaged")
            raise Wrong(f"with reduce={reduce!r} the projected contexts are {want} over the "
                        f"K heads; yours are {did}")
        expect_close(c_got, c_ref, "c", f"c_t = the {reduce} over k of P_k c^k_t, with "
                     f"c^k_t = Σ_l α^k_tl h_l", rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ Exercise 5.2 (what if)
#: (final accuracies (heads, streams), good, bad): ties at both thresholds, three streams,
#: one stream, and the thresholds moved both ways.
_SCREEN = ((0.99, 0.97), (0.40, 0.55), (0.99, 0.50), (0.80, 0.80), (0.95, 0.99),
           (0.60, 0.50), (0.50, 0.99), (0.30, 0.90), (0.65, 0.62), (1.00, 0.96),
           (0.99, 0.92))
LABEL_CASES = (
    (_SCREEN, 0.95, 0.6),
    (_SCREEN, 0.9, 0.7),
    (_SCREEN, 0.99, 0.45),
    (((1.0, 1.0, 0.96), (0.5, 0.5, 0.62), (0.97, 0.4, 0.98), (0.2, 0.3, 0.1),
      (0.97, 0.96, 0.95), (0.55, 0.58, 0.6)), 0.95, 0.6),
    (((0.99,), (0.1,), (0.7,), (0.6,)), 0.95, 0.6),
)


def _label_variant(final: np.ndarray, good: float, bad: float, kind: str) -> np.ndarray:
    """The usual mistakes, as the labels each one gives."""
    if kind == "first_stream":
        return classify_heads(final[:, :1], good, bad)
    if kind == "mean":
        return classify_heads(final.mean(1, keepdims=True), good, bad)
    above, below = (final >= good, final <= bad) if kind == "ties" else (final > good,
                                                                         final < bad)
    is_good = above.any(1) if kind == "any_good" else above.all(1)
    is_bad = below.any(1) if kind == "any_bad" else below.all(1)
    labels = np.full(final.shape[0], "inconsistent", dtype=object)
    labels[is_good] = "good"
    labels[is_bad & ~is_good] = "bad"
    return labels.astype(str)


_LABEL_HINTS = {
    "first_stream": "you judged each head by the first data stream alone: the final label "
                    "needs the same verdict on every stream",
    "mean": "you compared the mean over the data streams with the thresholds: the protocol "
            "asks every stream on its own",
    "any_good": "a head is good only if it ends above `good` on every data stream, not on any "
                "one of them",
    "any_bad": "a head is bad only if it ends below `bad` on every data stream, not on any "
               "one of them",
    "ties": "at exactly a threshold: good means strictly above `good`, bad strictly below "
            "`bad`",
}


@checker("Exercise 5.2: what if the thresholds moved?")
def check_head_labels(head_labels):
    """``head_labels(final, good, bad)`` -> one label per head (row of ``final``)."""
    for rows, good, bad in LABEL_CASES:
        final = np.array(rows, dtype=np.float64)
        out = head_labels(final.copy(), good, bad)
        if hasattr(out, "detach") or isinstance(out, (str, bytes)):
            raise Wrong("return a list or array of the strings 'good', 'bad', 'inconsistent'")
        got = np.asarray(out, dtype=object)
        if got.shape != (final.shape[0],):
            raise Wrong(f"labels has shape {got.shape}; expected ({final.shape[0]},): one "
                        f"label per head (row of final)")
        if not all(isinstance(x, str) and x in _LABELS for x in got):
            raise Wrong(f"every label should be one of {_LABELS}; got "
                        f"{sorted({repr(x) for x in got if x not in _LABELS})[:3]}")
        got = got.astype(str)
        want = classify_heads(final, good, bad)
        if np.array_equal(got, want):
            continue
        for kind, hint in _LABEL_HINTS.items():
            bad_labels = _label_variant(final, good, bad, kind)
            if not np.array_equal(bad_labels, want) and np.array_equal(got, bad_labels):
                raise Wrong(hint)
        i = int(np.flatnonzero(got != want)[0])
        raise Wrong(f"with good = {good}, bad = {bad}, the head with final accuracies "
                    f"{tuple(final[i].tolist())} is labelled {str(got[i])!r} by yours; the "
                    f"protocol says otherwise")


# --------------------------------------------------------------- Exercise 5.3 (derivation)
#: (p, target): the chapter's p̂ for 0.9 and 0.99, rarer and commoner good heads, a target one
#: head already reaches (none of these lies near a boundary, where K would hinge on rounding),
#: then EXACT_CASES.
NEEDED_CASES = ((0.47, 0.9), (0.47, 0.99), (0.2, 0.9), (0.85, 0.99), (0.95, 0.9),
                (0.01, 0.5), (0.3, 0.99), (0.6, 0.7))
#: Pairs whose ratio ln(1 − target) / ln(1 − p) is a whole number (2, 3, 2): K heads reach the
#: target exactly, so floor(ratio) + 1 is one too many. 1 − p and 1 − target are
#: powers of 2, so the closed form gives that whole number exactly, in float64 and float32.
EXACT_CASES = ((0.5, 0.75), (0.5, 0.875), (0.75, 0.9375))
NEEDED_CASES = NEEDED_CASES + EXACT_CASES


def _needed_reference(p: float, target: float) -> int:
    """The smallest K with 1 − (1 − p)^K >= target, by counting."""
    k = 1
    while 1 - (1 - p) ** k < target:
        k += 1
    return k


def _rate(p: float, k: float) -> float:
    return 1 - (1 - p) ** k


def _below(rate: float, target: float) -> str:
    """``rate`` (< ``target``) with enough decimals that it never prints as the target."""
    for d in range(4, 17):
        text = f"{rate:.{d}f}"
        if float(text) < target:
            return text
    return repr(rate)


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


#: Ways of turning a ratio into a whole number (the right one is math.ceil).
_ROUNDINGS = {"": lambda x: x, "ceil": math.ceil, "floor": math.floor,
              "round": _round_half_up, "floor+1": lambda x: math.floor(x) + 1}


def _needed_variants(p: float, t: float) -> dict[str, float]:
    """The usual mistakes' K for one pair: the right ratio rounded the wrong way, and every
    rounding of a wrong ratio (a wrong ratio gets its own hint however it is rounded)."""
    def ratio(a, b):
        return math.log(a) / math.log(b)

    right = ratio(1 - t, 1 - p)
    out = {"no_whole": right, "floor": math.floor(right), "round": _round_half_up(right),
           "floor_plus_one": math.floor(right) + 1, "one_more": math.ceil(right) + 1}
    wrong = {"p_for_fail": ratio(1 - t, p), "target_for_fail": ratio(t, 1 - p),
             "both_swapped": ratio(t, p), "inverted": ratio(1 - p, 1 - t),
             "fixed_target": ratio(0.1, 1 - p)}
    for name, r in wrong.items():
        for how, rnd in _ROUNDINGS.items():
            out[f"{name}/{how}"] = rnd(r)
    return out


_NEEDED_HINTS = {
    "no_whole": "K counts heads: it must be a whole number (the smallest one for which the "
                "rate reaches the target)",
    "floor": "you rounded the ratio down (floor or int), so your K falls short of the "
             "target: dividing by ln(1 − p) < 0 turns the inequality round, and K must be "
             "at or above the ratio",
    "round": "round() goes to the nearest whole number, down as often as up: K must be at "
             "or above the ratio",
    "floor_plus_one": "where the ratio is exactly a whole number (p = 0.5 and target = 0.75, "
                      "say) your K is one too many: that many heads reach the target exactly, "
                      "and the condition is >=. floor(x) + 1 is not rounding up there (and "
                      "if you did round up, float noise pushed x above the whole number)",
    "one_more": "your K is one more than needed: you want the smallest K with "
                "1 − (1 − p)^K >= target",
    "p_for_fail": "you used p where the chance that a head is bad, 1 − p, belongs: all K "
                  "heads are bad with probability (1 − p)^K",
    "target_for_fail": "(1 − p)^K is the chance that all K heads are bad: it must fall to "
                       "1 − target, not to target",
    "both_swapped": "you used p and target where their complements belong: the model fails "
                    "only when all K heads are bad, with probability (1 − p)^K, and that "
                    "must fall to 1 − target",
    "inverted": "your ratio is upside down: solve K ln(1 − p) <= ln(1 − target) for K",
    "fixed_target": "your K does not change with the target: use the target argument "
                    "instead of a fixed 0.9",
}


@checker("Exercise 5.3: how many heads for a success rate")
def check_heads_needed(heads_needed):
    """``heads_needed(p, target)``: the smallest K with 1 − (1 − p)^K >= target."""
    got = []
    for p, t in NEEDED_CASES:
        x = as_array(heads_needed(p, t), f"heads_needed({p}, {t})")
        if x.size != 1:
            raise Wrong(f"heads_needed({p}, {t}) should be one number; got an array of shape "
                        f"{x.shape}")
        got.append(float(x.reshape(())))
    got = np.array(got)
    want = np.array([_needed_reference(p, t) for p, t in NEEDED_CASES], dtype=float)
    if not np.all(np.isfinite(got)):
        raise Wrong("some of your K are NaN or infinite: a log of a number <= 0?")
    if np.array_equal(got, want):
        return
    variants = variant_table(_needed_variants, NEEDED_CASES)
    first_mistake(got, [(_NEEDED_HINTS[name.split("/")[0]], value)
                        for name, value in variants.items()
                        if not np.array_equal(value, want)],
                  rtol=1e-5, atol=1e-8)  # matches()'s own tolerances
    if np.any(got != np.round(got)):
        raise Wrong("K counts heads: it must be a whole number")
    for (p, t), g, w in zip(NEEDED_CASES, got, want):
        if g < 1:
            raise Wrong(f"heads_needed({p}, {t}) = {g:.0f}, but a model has at least one "
                        f"head")
        if g < w:
            raise Wrong(f"for p = {p}, target = {t}: with your K = {g:.0f} heads the success "
                        f"rate 1 − (1 − p)^K is {_below(_rate(p, g), t)}, below the target: "
                        f"too few heads")
        if g > w:
            raise Wrong(f"for p = {p}, target = {t}: your K = {g:.0f} is not the smallest -- "
                        f"fewer heads already reach the target")
