"""Chapter 6's exercises (does a Transformer fail too?): their checkers.

- :func:`check_cross_attention` (Exercise 6.1, code): K-head scaled dot-product attention --
  queries, keys and values, a split into heads, the 1/√d_k scale, a softmax over source
  positions, the output map -- against
  :class:`~attn_core.chapters.ch6_transformer.MultiHeadAttention`, the chapter's own;
- :func:`check_position_logit_std` (Exercise 6.2, derivation): the spread at initialisation of
  the part of a cross-attention logit that depends on positions alone, σ²/3, against a
  formula the unit tests check by simulation;
- :func:`check_success_count` (Exercise 6.3, what if): how many runs of a stored sweep row
  count as successes under another success level or step budget.

Used in ``notebooks/06_transformer.ipynb`` as ``from attn_core.exercises import ch6 as ex``;
see :mod:`attn_core.exercises` for the pattern.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ..chapters.ch6_transformer import MultiHeadAttention
from . import Wrong, as_array, checker, expect_pair, expect_shape, matches

__all__ = ["check_cross_attention", "check_position_logit_std", "check_success_count",
           "position_logit_std_reference", "success_count_reference"]


# --------------------------------------------------------------------- Exercise 6.1 (code)
#: (heads, B, T, L, d): several heads, one head, T = L, and d_k = 1.
ATTENTION_CASES = ((4, 2, 3, 5, 8), (1, 3, 2, 4, 6), (2, 1, 5, 5, 4), (4, 2, 2, 3, 4))


def _attention_cases():
    """(y, h, weights, heads): decoder states y (B, T, d), encoder outputs h (B, L, d) and
    the eight tensors Wq, bq, Wk, bk, Wv, bv, Wo, bo as nn.Linear keeps them ((out, in)),
    scaled so that the attention is far from uniform."""
    gen = torch.Generator().manual_seed(6)
    cases = []
    for K, B, T, L, d in ATTENTION_CASES:
        y = torch.randn(B, T, d, generator=gen)
        h = torch.randn(B, L, d, generator=gen)
        w = []
        for _ in range(4):
            w += [torch.randn(d, d, generator=gen) / math.sqrt(d) * 2,
                  0.3 * torch.randn(d, generator=gen)]
        cases.append((y, h, tuple(w), K))
    return cases


def _attention_reference(y, h, w, K):
    d = y.shape[-1]
    m = MultiHeadAttention(d, K)
    with torch.no_grad():
        for lin, (W, b) in zip((m.q, m.k, m.v, m.o), zip(w[0::2], w[1::2])):
            lin.weight.copy_(W)
            lin.bias.copy_(b)
        out, alpha = m(y, h, h)
    return out.double().numpy(), alpha.double().numpy()


def _attention_variant(y, h, w, K, kind: str):
    """The usual mistakes, as the (out, alpha) each one gives."""
    y, h = y.double(), h.double()
    Wq, bq, Wk, bk, Wv, bv, Wo, bo = (t.double() for t in w)
    if kind == "transposed":
        Wq, Wk, Wv, Wo = Wq.T, Wk.T, Wv.T, Wo.T
    B, T, d = y.shape
    L = h.shape[1]
    Kh = 1 if kind == "one_head" else K

    def split(x, n):
        if kind == "view_heads":      # (B, n, d) viewed as (B, K, n, d_k): memory misread
            return x.reshape(B, Kh, n, d // Kh)
        return x.view(B, n, Kh, d // Kh).transpose(1, 2)

    q = split(y @ Wq.T + bq, T)
    k = split(h @ Wk.T + bk, L)
    v = split(h @ Wv.T + bv, L)
    scale = {"no_scale": 1.0, "scale_d": math.sqrt(d)}.get(kind, math.sqrt(d // Kh))
    scores = q @ k.transpose(-1, -2) / scale
    alpha = torch.softmax(scores, dim=-2 if kind == "softmax_t" else -1)
    if kind == "merge_no_transpose":  # (B, K, T, d_k) reshaped to (B, T, d) as it lies
        heads = (alpha @ v).reshape(B, T, d)
    else:
        heads = (alpha @ v).transpose(1, 2).reshape(B, T, d)
    out = heads if kind == "no_output" else heads @ Wo.T + bo
    if kind == "one_head":
        alpha = alpha.expand(B, K, T, L)
    return out.numpy(), alpha.numpy()


_ALPHA_HINTS = {
    "softmax_t": "your attention sums to 1 over the output steps t: the softmax is over the "
                 "source positions l (the last axis of the scores)",
    "no_scale": "the scores are q·k / √d_k: yours are not divided by √d_k",
    "scale_d": "you divided by √d (the model's width); each head's scores are divided by the "
               "square root of its own width d_k = d / K",
    "one_head": "you computed one attention over the whole width d: split q, k and v into K "
                "heads of width d_k = d / K, each with its own softmax",
    "transposed": "nn.Linear keeps its weight as (out, in) and computes x Wᵀ + b: you "
                  "multiplied by W instead of Wᵀ",
    "view_heads": "you split the heads with .view(B, heads, n, d_k) straight from (B, n, d): "
                  "a view keeps the memory order, so each of your 'heads' mixes several "
                  "positions' features. Head k is the k-th block of d_k features of every "
                  "position: view as (B, n, heads, d_k), then swap the two middle axes",
}
_OUT_HINTS = {
    "no_output": "the heads' outputs are concatenated and then mapped by W_O (x W_Oᵀ + b_O): "
                 "yours skip W_O",
    "merge_no_transpose": "your attention is right, but the heads are merged in the wrong "
                          "order: (B, heads, T, d_k) reshaped to (B, T, d) as it lies mixes "
                          "the output steps; bring the heads next to d_k first, "
                          "(B, T, heads, d_k), then reshape",
}


def _expect_attention(a_got: np.ndarray, a_ref: np.ndarray) -> None:
    """:class:`Wrong` unless alpha is the reference's; the hint says what kind of wrong it is,
    never the reference's values (a gaming learner must not read them off)."""
    if not np.all(np.isfinite(a_got)):
        raise Wrong("alpha contains NaN or inf: a softmax of an overflowing score? "
                    "torch.softmax subtracts the maximum for you")
    if np.any(a_got < -1e-6) or not np.allclose(a_got.sum(-1), 1, atol=1e-4):
        raise Wrong("alpha is not a distribution over the source positions: for each batch "
                    "item, head and output step t, the weights α^k_tl should be ≥ 0 and sum "
                    "to 1 over l (a softmax over the last axis)")
    if not np.allclose(a_got, a_ref, rtol=1e-4, atol=1e-6):
        heads = [k for k in range(a_ref.shape[1])
                 if not np.allclose(a_got[:, k], a_ref[:, k], rtol=1e-4, atol=1e-6)]
        which = ("in every head" if len(heads) == a_ref.shape[1] else
                 "in some heads only (is each head reading its own block of d_k features?)")
        raise Wrong(f"alpha sums to 1 over l but is off {which}: α^k_tl = softmax over l of "
                    "q^k_t·k^k_l / √d_k, with q = y Wqᵀ + bq and k = h Wkᵀ + bk split into "
                    "heads of d_k features each")


def _expect_output(o_got: np.ndarray, o_ref: np.ndarray) -> None:
    """:class:`Wrong` unless out is the reference's (alpha is right by now); no values shown."""
    if not np.all(np.isfinite(o_got)):
        raise Wrong("out contains NaN or inf")
    if not np.allclose(o_got, o_ref, rtol=1e-4, atol=1e-6):
        raise Wrong("your alpha is right but out is off: out_t = W_O [head_1; ...; head_K] "
                    "+ b_O with head_k = Σ_l α^k_tl v^k_l and v = h Wvᵀ + bv, split into "
                    "heads as q and k are")


@checker("Exercise 6.1: multi-head cross-attention")
def check_cross_attention(cross_attention):
    """``cross_attention(y, h, Wq, bq, Wk, bk, Wv, bv, Wo, bo, heads)`` -> ``(out, alpha)``
    as the chapter's :class:`MultiHeadAttention` (queries from y, keys and values from h)."""
    for y, h, w, K in _attention_cases():
        (B, T, d), L = y.shape, h.shape[1]
        out = cross_attention(y.clone(), h.clone(), *(t.clone() for t in w), K)
        o_got, a_got = expect_pair(out, "cross_attention", "(out, alpha)")
        a_got = expect_shape(a_got, (B, K, T, L), "alpha",
                             "one weight per batch item, head, output step t and source "
                             "position l: (B, K, T, L)")
        o_got = expect_shape(o_got, (B, T, d), "out", "one output vector per batch item and "
                                                      "output step: (B, T, d)")
        o_ref, a_ref = _attention_reference(y, h, w, K)
        for kind, hint in _ALPHA_HINTS.items():
            bad = _attention_variant(y, h, w, K, kind)[1]
            if not matches(bad, a_ref, 1e-4, 1e-6) and matches(a_got, bad, 1e-4, 1e-6):
                raise Wrong(hint)
        _expect_attention(a_got, a_ref)
        for kind, hint in _OUT_HINTS.items():
            bad = _attention_variant(y, h, w, K, kind)[0]
            if not matches(bad, o_ref, 1e-4, 1e-6) and matches(o_got, bad, 1e-4, 1e-6):
                raise Wrong(hint)
        _expect_output(o_got, o_ref)


# --------------------------------------------------------------- Exercise 6.2 (derivation)
#: (sigma, d_model, heads): the chapter's scales and widths, and others.
STD_CASES = ((1.0, 64, 4), (0.02, 64, 4), (0.5, 64, 4), (0.3, 32, 2), (2.0, 128, 8),
             (0.1, 16, 1))


#: How near the formula's value an answer counts as "close -- an estimate?" (a Monte-Carlo
#: estimate from a few thousand draws is within a few per cent; the usual slips are 1.5× off
#: or more).
MONTE_CARLO_TOL = 0.1


def position_logit_std_reference(sigma: float, d_model: int, heads: int) -> float:
    """The standard deviation, over initialisations, of (W_Q p_t)·(W_K p_l)/√d_k for one head
    and t ≠ l, with p ~ N(0, σ² I_d) and the weights' entries U(±1/√d) (no biases):
    each of the d_k products has variance (σ²/3)², their sum over √d_k has (σ²/3)²."""
    return sigma ** 2 / 3


def _std_variants(sigma: float, d: int, K: int) -> dict[str, float]:
    dk = d // K
    return {
        "linear": sigma / 3,
        "sqrt3": sigma ** 2 / math.sqrt(3),
        "no_third": sigma ** 2,
        "no_scale": sigma ** 2 / 3 * math.sqrt(dk),
        "variance": sigma ** 4 / 9,
        "scale_d": sigma ** 2 / 3 * math.sqrt(dk / d),
    }


_STD_HINTS = {
    "linear": "the logit is a product of two position vectors, each scaled by σ: it scales "
              "with σ², not σ",
    "sqrt3": "a weight drawn U(±a) has variance a²/3, so a query coordinate has variance "
             "d·σ²·(1/d)/3 = σ²/3 and standard deviation σ/√3 -- the product of two such "
             "coordinates has standard deviation σ²/3",
    "no_third": "the weights are U(±1/√d), whose variance is 1/(3d), not 1/d",
    "no_scale": "the logit is divided by √d_k: the sum of d_k products has standard deviation "
                "√d_k·σ²/3, and the scale takes the √d_k away",
    "variance": "that is the variance; the exercise asks for the standard deviation",
    "scale_d": "each head divides by √d_k, the square root of its own width d/K, not by √d",
}


@checker("Exercise 6.2: how big is the position-only part of a logit?")
def check_position_logit_std(position_logit_std):
    """``position_logit_std(sigma, d_model, heads)`` -> σ²/3 for every case."""
    for sigma, d, K in STD_CASES:
        x = as_array(position_logit_std(sigma, d, K),
                     f"position_logit_std({sigma}, {d}, {K})")
        if x.size != 1:
            raise Wrong(f"position_logit_std({sigma}, {d}, {K}) should be one number; got an "
                        f"array of shape {x.shape}")
        got = float(x.reshape(()))
        want = position_logit_std_reference(sigma, d, K)
        if math.isclose(got, want, rel_tol=1e-6):
            continue
        for kind, bad in _std_variants(sigma, d, K).items():
            if not math.isclose(bad, want, rel_tol=1e-6) and math.isclose(got, bad,
                                                                          rel_tol=1e-6):
                raise Wrong(_STD_HINTS[kind])
        if abs(got / want - 1) < MONTE_CARLO_TOL:
            raise Wrong(f"close (within {MONTE_CARLO_TOL:.0%}) but not exact -- a "
                        "simulation's estimate? Give the formula: a function of σ, d_model and "
                        "the number of heads, exact for every one of them")
        raise Wrong(f"for σ = {sigma}, d_model = {d}, {K} heads you have {got:.6g}; count "
                    f"the variance of one query coordinate first, then of q·k/√d_k")


# ---------------------------------------------------------------- Exercise 6.3 (what if)
def success_count_reference(row: dict, level: float, step: int) -> int:
    """How many runs of a stored sweep row have token accuracy above ``level`` at evaluation
    step ``step`` (a step of ``row["eval_steps"]``)."""
    j = list(row["eval_steps"]).index(step)
    return int((np.asarray(row["token_acc"])[:, j] > level).sum())


def _toy_rows():
    """Small stored-sweep-like rows: three runs, evaluations every 100 steps, with ties at the
    levels asked and a run that passes the level and falls back."""
    return {
        "a": {"eval_steps": [0, 100, 200, 300],
              "token_acc": [[0.05, 0.5, 0.95, 0.99], [0.05, 0.9, 0.97, 0.93],
                            [0.05, 0.2, 0.3, 0.9]]},
        "b": {"eval_steps": [0, 100, 200, 300],
              "token_acc": [[0.05, 0.96, 1.0, 1.0], [0.05, 0.22, 0.22, 0.22],
                            [0.05, 0.8, 0.9, 0.96]]},
    }


#: (row name, level, step): the chapter's rule, a lower level, an earlier budget, ties.
COUNT_CASES = (("a", 0.95, 300), ("a", 0.9, 300), ("a", 0.95, 200), ("b", 0.95, 100),
               ("b", 0.9, 200), ("a", 0.9, 100), ("b", 0.5, 300))


def _count_variants(row, level, step) -> dict[str, int]:
    acc = np.asarray(row["token_acc"])
    j = list(row["eval_steps"]).index(step)
    return {
        "final": int((acc[:, -1] > level).sum()),
        "ties": int((acc[:, j] >= level).sum()),
        "ever": int((acc[:, : j + 1] > level).any(1).sum()),
    }


_COUNT_HINTS = {
    "final": "you counted at the end of training: the budget `step` is a training step at "
             "which the runs were evaluated (find its position in row['eval_steps'])",
    "ties": "a run succeeds when its accuracy is strictly above the level",
    "ever": "you counted runs that were above the level at any evaluation up to the budget; "
            "the rule looks at the accuracy at the budget itself",
}


@checker("Exercise 6.3: what if success were judged differently?")
def check_success_count(success_count):
    """``success_count(row, level, step)`` -> the number of runs above ``level`` at ``step``."""
    for name, level, step in COUNT_CASES:
        # the reference and the usual slips come first, from rows the answer never sees: it
        # is handed its own deep copy, so an answer that overwrites the row it was given
        # (accuracies set to 1, say) changes neither the count it is held to nor other cases
        row = _toy_rows()[name]
        want = success_count_reference(row, level, step)
        variants = _count_variants(row, level, step)
        x = as_array(success_count(copy.deepcopy(row), level, step),
                     f"success_count(row {name!r}, {level}, {step})")
        if x.size != 1:
            raise Wrong(f"success_count should return one number (a count of runs); got an "
                        f"array of shape {x.shape}")
        got = float(x.reshape(()))
        if got == want:
            continue
        for kind, bad in variants.items():
            if bad != want and got == bad:
                raise Wrong(_COUNT_HINTS[kind])
        raise Wrong(f"for level {level} at step {step} you count {got:g} runs, which is "
                    "not the count, nor one of the usual slips: a run counts when its token "
                    "accuracy at the evaluation of that step is strictly above the level")
