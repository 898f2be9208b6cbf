"""Chapter 4's exercises (the permutation-copy failure, SZKS §3.3, §6.2): their checkers.

- :func:`check_luong_attention` (Exercise 4.1, code): one step of the chapter's attention --
  the score s_tᵀ W h_l + b_aᵀ h_l, the softmax over source positions, the context and its
  projection P c_t + b -- against :meth:`~attn_core.chapters.ch4_copy.LuongSeq2Seq.attend`,
  the readable model's own;
- :func:`check_guessing_level` (Exercise 4.2, derivation): the token accuracy of a copier
  that knows the input's words but not their order, H_L / L (with EOS: (H_L + 1) / (L + 1)),
  against :func:`~attn_core.chapters.ch4_copy.guessing_accuracy`;
- :func:`check_scaled_counts` (Exercise 4.3, code): the count table L·C/n of a batch of
  sentence pairs, against :func:`~attn_core.theory.count_table`;
- :func:`check_centred_table` (Exercise 4.4, what if): the expected centred count table when
  L distinct words are drawn from V >= L, against its closed form (the tests check that form
  against :func:`~attn_core.chapters.ch4_copy.scaled_count_table` on samples).

Each checker accepts float32 work (its tolerance is a module constant, stated in the exercise's
text), and a hint names the mistake and the case it shows on, never a value of the reference
that a learner could copy into the next try (``tests/test_exercises_ch4.py`` plays that
gaming learner).

Used in ``notebooks/04_permutation_copy.ipynb`` as ``from attn_core.exercises import ch4 as
ex``; see :mod:`attn_core.exercises` for the pattern.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..chapters.ch4_copy import LuongSeq2Seq, guessing_accuracy
from ..theory import count_table
from . import (Wrong, checker, expect_number, expect_pair,
               expect_shape, matches, own_work)
from .. import theory
from ..chapters import ch4_copy

__all__ = ["check_luong_attention", "check_guessing_level", "check_scaled_counts",
           "check_centred_table"]



# --------------------------------------------------------------------- Exercise 4.1 (code)
#: (B, T, L, H): T < L, T > L and T = L (a square attention map, where only the values tell a
#: softmax over the wrong axis).
ATTENTION_SHAPES = ((2, 4, 6, 5), (3, 5, 3, 4), (2, 5, 5, 3))
#: Each shape's case in words, by the sign of T − L (a hint names the case, never a number:
#: a gaming learner must not read the reference's values off a hint).
_ATTENTION_CASE_NAMES = {-1: "the case with fewer output steps than source positions",
                         1: "the case with more output steps than source positions",
                         0: "the square case, as many output steps as source positions"}
#: (rtol, atol) of Exercise 4.1: float32 work (torch's default) passes.
ATTENTION_TOL = (1e-4, 1e-6)


def _attention_cases():
    """(s, h, W, a, P, b) for every shape: states in (-1, 1) like an LSTM's, a score matrix
    and bias large enough that the attention is far from uniform."""
    gen = torch.Generator().manual_seed(4)
    cases = []
    for B, T, L, H in ATTENTION_SHAPES:
        s = torch.tanh(2 * torch.randn(B, T, H, generator=gen))
        h = torch.tanh(2 * torch.randn(B, L, H, generator=gen))
        W = 1.5 * torch.randn(H, H, generator=gen)
        a = 1.5 * torch.randn(H, generator=gen)
        P = torch.randn(H, H, generator=gen) / math.sqrt(H)
        b = torch.randn(H, generator=gen)
        cases.append((s, h, W, a, P, b))
    return cases


def _attention_reference(s, h, W, a, P, b):
    """The readable model's own attention step, with these W, a, P and b."""
    H = W.shape[0]
    model = LuongSeq2Seq(vocab=2, embed=1, hidden=H)
    with torch.no_grad():
        for name, value in (("W", W), ("a", a), ("P", P), ("b", b)):
            getattr(model, name).copy_(value)
        c, alpha = model.attend(s, h)
    return c.double().numpy(), alpha.double().numpy()


def _attention_variant(s, h, W, a, P, b, kind: str):
    """The usual mistakes, as the (c, alpha) each one gives."""
    s, h, W, a, P, b = (t.double() for t in (s, h, W, a, P, b))
    q = s + a if kind == "bias_on_query" else s
    scores = q @ (W.T if kind == "W_transposed" else W) @ h.transpose(1, 2)
    if kind not in ("no_score_bias", "bias_on_query"):
        scores = scores + (h @ a).unsqueeze(1)
    if kind == "scaled":
        scores = scores / math.sqrt(h.shape[-1])
    axis = {"softmax_t": -2, "softmax_batch": 0}.get(kind, -1)
    alpha = scores if kind == "no_softmax" else torch.softmax(scores, dim=axis)
    c = alpha @ h
    c = {"plain": c, "no_projection": c + b, "P_transposed": c @ P + b,
         "no_proj_bias": c @ P.T, "bias_inside": (c + b) @ P.T}.get(kind, c @ P.T + b)
    return c.numpy(), alpha.numpy()


_ALPHA_HINTS = {
    "softmax_t": "is your softmax over source positions l? Yours sums to 1 over the output "
                 "steps t",
    "softmax_batch": "is your softmax over source positions l? Yours sums to 1 over the batch",
    "no_softmax": "alpha should be attention weights: a softmax of the scores, so that each "
                  "output step's weights over the source positions sum to 1",
    "W_transposed": "your scores are h_lᵀ W s_t: the score is s_tᵀ W h_l, and W is not "
                    "symmetric (check the order of the indices of W)",
    "scaled": "Luong's score s_tᵀ W h_l has no 1/√H scaling (that is the Transformer's scaled "
              "dot product)",
    "no_score_bias": "did you add the score's bias b_aᵀ h_l? (A term that depends only on t, "
                     "such as s_tᵀ b_a, cancels in the softmax over l.)",
    "bias_on_query": "your bias enters as (s_t + b_a)ᵀ W h_l: the chapter's score is "
                     "(s_tᵀ W + b_aᵀ) h_l, so b_a meets h_l directly, without W",
}
_CONTEXT_HINTS = {
    "plain": "your context is the plain c_t = Σ_l α_tl h_l: the chapter's model projects it, "
             "P c_t + b (the authors' project_enc)",
    "no_projection": "did you apply the projection P to the context before adding b?",
    "P_transposed": "you multiplied the context by Pᵀ: the projected context is P c_t (P times "
                    "the column vector c_t)",
    "no_proj_bias": "did you add the projection's bias b? The chapter's context is P c_t + b",
    "bias_inside": "b is added after the projection: P c_t + b, not P (c_t + b)",
}



@checker("Exercise 4.1: the Luong attention step")
def check_luong_attention(luong_attention):
    """``luong_attention(s, h, W, a, P, b)`` -> ``(c, alpha)`` as the chapter's model."""
    for s, h, W, a, P, b in _attention_cases():
        (B, T, H), L = s.shape, h.shape[1]
        out = luong_attention(*(t.clone() for t in (s, h, W, a, P, b)))
        c_got, a_got = expect_pair(out, "luong_attention")
        a_got = expect_shape(a_got, (B, T, L), "alpha",
                             "one weight per batch item b, output step t and source position "
                             "l: (B, T, L)")
        c_got = expect_shape(c_got, (B, T, H), "c", "one context per batch item and output "
                                                     "step: (B, T, H)")
        c_ref, a_ref = _attention_reference(s, h, W, a, P, b)
        case = _ATTENTION_CASE_NAMES[(T > L) - (T < L)]
        if not matches(a_got, a_ref, *ATTENTION_TOL):
            for kind, hint in _ALPHA_HINTS.items():
                if matches(a_got, _attention_variant(s, h, W, a, P, b, kind)[1],
                           *ATTENTION_TOL):
                    raise Wrong(hint)
            _alpha_off(a_got, case)
        if not matches(c_got, c_ref, *ATTENTION_TOL):
            for kind, hint in _CONTEXT_HINTS.items():
                if matches(c_got, _attention_variant(s, h, W, a, P, b, kind)[0],
                           *ATTENTION_TOL):
                    raise Wrong(hint)
            if not np.all(np.isfinite(c_got)):
                raise Wrong("c contains NaN or inf")
            raise Wrong(f"c is off while your alpha is right (on {case}): the context is "
                        f"c_t = P (Σ_l α_tl h_l) + b -- check the weighted sum over the "
                        f"source positions l, then the projection and its bias")


def _alpha_off(alpha: np.ndarray, case: str) -> None:
    """The hint for attention weights that are no usual mistake: what is wrong with them
    (never the reference's values, which a learner could copy)."""
    if not np.all(np.isfinite(alpha)):
        raise Wrong("alpha contains NaN or inf: does your softmax overflow?")
    if np.any(alpha < -ATTENTION_TOL[1]):
        raise Wrong("alpha is off: it has negative weights, and a softmax's weights are "
                    "positive")
    if not np.allclose(alpha.sum(-1), 1, atol=1e-4):
        raise Wrong("alpha is off: your weights do not sum to 1 over the source positions l "
                    "for every batch item and output step (α_t· = softmax over l of the "
                    "scores)")
    raise Wrong(f"alpha is off (on {case}): your weights sum to 1 over l but are not the "
                f"softmax over l of s_tᵀ W h_l + b_aᵀ h_l -- check which of s, W, b_a and h "
                f"enter the score, and where")


# --------------------------------------------------------------- Exercise 4.2 (derivation)
#: The lengths asked, each with and without the EOS step (L = 1: one word, always right).
GUESS_LENGTHS = (1, 2, 3, 5, 10, 20, 40)


def _harmonic(n: int) -> float:
    return sum(1.0 / k for k in range(1, n + 1))


def _guess_variants(L: int, eos: bool) -> dict[str, float]:
    """The usual mistakes, as the level each one gives."""
    H, n = _harmonic(L), L + 1 if eos else L
    plus = 1.0 if eos else 0.0
    return {
        "no_harmonic": (1.0 + plus) / n,                 # 1/L right at every data step
        "no_mean": H + plus,                              # right tokens per sentence
        "off_by_one": (_harmonic(L - 1) + plus) / n,      # L - t words left at step t
        "off_by_one_up": (_harmonic(L + 1) - 1 + plus) / n,   # L - t + 2 words left
        "ignores_eos": H / L,
        "eos_guessed": _harmonic(L + 1) / (L + 1) if eos else H / L,
        "eos_not_counted": H / (L + 1) if eos else H / L,
        "eos_not_a_step": (H + 1) / L if eos else H / L,
        "approximation": (math.log(L) + 0.5772156649 + plus) / n,   # H_L ≈ ln L + γ
    }


_GUESS_HINTS = {
    "no_harmonic": "that is guessing among all L words at every step. With teacher forcing "
                   "the model has already seen the words written before step t: it can rule "
                   "them out and guess among the rest (a harmonic sum)",
    "no_mean": "that is the expected number of right tokens per sentence: the token accuracy "
               "is per output step (divide by the number of steps)",
    "off_by_one": "off by one: at output step t = 1..L, t − 1 words have been written, so "
                  "L − t + 1 remain (one at the last step, always right)",
    "off_by_one_up": "off by one: at output step t = 1..L, t − 1 words have been written, so "
                     "L − t + 1 remain (L at the first step)",
    "eos_guessed": "the EOS step is not a guess: the end token always comes last, so the "
                   "model gets it right (probability 1)",
    "eos_not_counted": "with eos=True the EOS step is right for sure: it adds 1 to the "
                       "expected number of right tokens",
    "eos_not_a_step": "with eos=True there are L + 1 output steps, the EOS one included: "
                      "divide by L + 1",
    "approximation": "close, but use the exact harmonic number H_L = Σ_(k=1..L) 1/k, not its "
                     "approximation ln L + 0.577",
}


@checker("Exercise 4.2: the accuracy of guessing without positions")
def check_guessing_level(guessing_level):
    """``guessing_level(L, eos)``: the mean over output steps of the chance to be right when
    guessing uniformly among the input's words not written yet."""
    for eos in (False, True):
        got = np.array([expect_number(guessing_level(L, eos), f"guessing_level({L}, eos={eos})")
                        for L in GUESS_LENGTHS])
        want = np.array([guessing_accuracy(L, eos) for L in GUESS_LENGTHS])
        if not np.all(np.isfinite(got)):
            raise Wrong(f"some of your levels (eos={eos}) are NaN or infinite: a 1/0 at the "
                        f"last step?")
        if matches(got, want, 1e-6, 1e-9):
            continue
        if not eos and matches(got, [guessing_accuracy(L, True) for L in GUESS_LENGTHS]):
            raise Wrong("with eos=False there is no EOS step: your level includes one")
        if eos and matches(got, [_guess_variants(L, eos)["ignores_eos"]
                                 for L in GUESS_LENGTHS]):
            raise Wrong("right without the EOS token; with eos=True there is one more output "
                        "step, the EOS token, which the model always gets right")
        # with eos=True (the reader is right without it) the EOS mistakes come first: one of
        # them gives the same numbers as an off-by-one
        kinds = sorted(_GUESS_HINTS, key=lambda k: not (eos and k.startswith("eos")))
        for kind in kinds:
            hint = _GUESS_HINTS[kind]
            bad = np.array([_guess_variants(L, eos)[kind] for L in GUESS_LENGTHS])
            if not matches(bad, want) and matches(got, bad):
                raise Wrong(hint)
        i = int(np.argmax(np.abs(got - want)))
        raise Wrong(f"guessing_level({GUESS_LENGTHS[i]}, eos={eos}) = {got[i]:.4g} is not "
                    f"the mean over the output steps of the chance to be right (check L = 1 "
                    f"and L = 2 by hand)")


# --------------------------------------------------------------------- Exercise 4.3 (code)
def _count_cases():
    """(src, tgt, V): permutations, the control, i.i.d. words with repeats, a "translation"
    (o = i + 1 mod V, so the table is not symmetric), a fixed scramble of the positions, and
    a vocabulary whose last words never occur."""
    g = torch.Generator().manual_seed(43)

    def distinct(n, L, V):
        return torch.stack([torch.randperm(V, generator=g)[:L] for _ in range(n)])

    perm, ctrl = distinct(6, 4, 4), distinct(8, 3, 6)
    iid = torch.randint(0, 3, (5, 6), generator=g)
    words = distinct(7, 3, 5)
    scramble = distinct(6, 4, 7)
    unused = distinct(5, 3, 4)
    return [(perm, perm.clone(), 4), (ctrl, ctrl.clone(), 6), (iid, iid.clone(), 3),
            (words, (words + 1) % 5, 5), (scramble, scramble[:, [2, 0, 3, 1]], 7),
            (unused, unused.clone(), 6)]


#: Each count case in words (a hint names the case, never a number of the reference's table).
_COUNT_CASE_NAMES = ("the permutation case",
                     "the control case (distinct words of a larger vocabulary)",
                     "the case of i.i.d. words with repeats",
                     "the translation case (o = i + 1 mod V)", "the scrambled-target case",
                     "the case of a vocabulary with unused words")
#: (rtol, atol) of Exercise 4.3: float32 work passes.
COUNT_TOL = (1e-5, 1e-8)


def _counts_reference(src, tgt, V):
    L, n = src.shape[1], src.shape[0]
    return count_table(src, tgt, V, V) * L / n


def _counts_variant(src, tgt, V, kind: str) -> np.ndarray:
    """The usual mistakes, as the table each one gives."""
    x, y = src.numpy(), tgt.numpy()
    n, L = x.shape
    if kind == "aligned":
        out = np.zeros((V, V))
        np.add.at(out, (x.ravel(), y.ravel()), 1.0 / n)
        return out
    if kind == "presence":
        bx = np.stack([np.bincount(r, minlength=V) > 0 for r in x]).astype(float)
        by = np.stack([np.bincount(r, minlength=V) > 0 for r in y]).astype(float)
        return bx.T @ by / n
    C = count_table(x, y, V, V)
    return {"no_L": C / n, "no_n": C * L, "raw": C, "transposed": (C * L / n).T,
            "per_cell_L2": C / (n * L)}[kind]


_COUNT_HINTS = {
    "no_L": "your table is C/n; the chapter plots L·C/n (each pair's 1/L_m weight cancels "
            "against the L: the expected count of i in the input times the count of o in "
            "the output)",
    "no_n": "your table is L·C: divide by n, the number of sentence pairs, to get the "
            "expected value per pair",
    "raw": "your table is C itself: the chapter scales it by L/n",
    "per_cell_L2": "your table is C/(nL): the chapter's scale is L·C/n",
    "transposed": "rows index the input words i (from src) and columns the output words o "
                  "(from tgt); yours is transposed",
    "aligned": "C counts every pair of positions (l, t) in a sentence pair, not only l = t: "
               "that would count alignments, which the count table does not know",
    "presence": "a word that occurs twice in a sentence counts twice (C counts occurrences, "
                "not presence)",
}


@checker("Exercise 4.3: the scaled count table L·C/n")
def check_scaled_counts(scaled_counts):
    """``scaled_counts(src, tgt, V)`` -> the (V, V) table L·C/n of the n sentence pairs."""
    for case, (src, tgt, V) in zip(_COUNT_CASE_NAMES, _count_cases()):
        with own_work((theory, "count_table"), (ch4_copy, "scaled_count_table")):
            answer = scaled_counts(src.clone(), tgt.clone(), V)
        got = expect_shape(answer, (V, V), "the table",
                           "one row per input word and one column per output word, 0..V−1, "
                           "even a word that never occurs (np.bincount's minlength)")
        want = _counts_reference(src, tgt, V)
        if matches(got, want, *COUNT_TOL):
            continue
        for kind, hint in _COUNT_HINTS.items():
            bad = _counts_variant(src, tgt, V, kind)
            if not matches(bad, want, *COUNT_TOL) and matches(got, bad, *COUNT_TOL):
                raise Wrong(hint)
        if not np.all(np.isfinite(got)):
            raise Wrong("the table contains NaN or inf")
        L = src.shape[1]
        if not math.isclose(float(got.sum()), L * L, rel_tol=COUNT_TOL[0]):
            raise Wrong(f"the table is off on {case}: its entries should add up to L·L, "
                        f"since every sentence pair has L·L pairs of positions (l, t), each "
                        f"adding 1/L to C, and L·C/n scales that back to one per pair")
        raise Wrong(f"the table is off on {case}: its total is right, so some counts land "
                    f"in the wrong cells -- entry (i, o) is the mean over the sentence pairs "
                    f"of (count of i in x) × (count of o in y)")


# ----------------------------------------------------------------- Exercise 4.4 (what if)
#: (L, V): permutations (V = L), one extra word, the control, small cases by hand, and one
#: input word (L = 1).
TABLE_CASES = ((20, 20), (20, 21), (20, 30), (3, 5), (2, 7), (4, 4), (1, 4))
#: (rtol, atol) of Exercise 4.4: float32 work (numpy's or torch's) passes -- an entry near
#: -0.00227 comes out 3e-8 off in float32, and the usual mistakes are 1e-3 off or more.
TABLE_TOL = (1e-5, 1e-6)


def _centred_reference(L: int, V: int) -> np.ndarray:
    """E[L·C/n] − its row mean for copying L distinct words of V: the diagonal is P(i in x) =
    L/V, an off-diagonal entry P(i and o in x) = L(L − 1)/(V(V − 1)), every row's mean
    L²/V²."""
    off = L * (L - 1) / (V * (V - 1)) if V > 1 else 0.0
    table = np.full((V, V), off)
    np.fill_diagonal(table, L / V)
    return table - table.mean(1, keepdims=True)


def _table_variant(L: int, V: int, kind: str) -> np.ndarray:
    """The usual mistakes, as the table each one gives."""
    off = L * (L - 1) / (V * (V - 1)) if V > 1 else 0.0
    diag = L / V
    if kind == "independent":
        off = (L / V) ** 2
    if kind == "diag_squared":
        diag = (L / V) ** 2
    table = np.full((V, V), off)
    np.fill_diagonal(table, diag)
    if kind == "uncentred":
        return table
    if kind == "unscaled":
        table = table / L
    return table - table.mean(1, keepdims=True)


_TABLE_HINTS = {
    "uncentred": "centre each row: subtract the row's mean over the output words o (the proxy "
                 "learns from C − row mean)",
    "independent": "given that i is in the input, o ≠ i is one of the other L − 1 input words, "
                   "drawn from the other V − 1 words: 'i in x' and 'o in x' are not "
                   "independent",
    "diag_squared": "the diagonal: when i is in the input it is in the output too (y = x), so "
                    "the entry is P(i in x), not its square",
    # C/n and an off-diagonal entry of P(o in x | i in x) alone give the same centred table
    "unscaled": "your table is L times too small: is it scaled as L·C/n (not C/n), and is "
                "an off-diagonal entry the chance that i and o are both in the input, "
                "P(i in x) · P(o in x | i in x), not only the second factor?",
}


@checker("Exercise 4.4: what if the vocabulary grows?")
def check_centred_table(centred_table):
    """``centred_table(L, V)`` -> the (V, V) expected centred table L·C/n − row mean for
    copying L distinct words drawn from V."""
    for L, V in TABLE_CASES:
        got = expect_shape(centred_table(L, V), (V, V), f"centred_table({L}, {V})",
                           "one row per input word i and one column per output word o")
        want = _centred_reference(L, V)
        if matches(got, want, *TABLE_TOL):
            continue
        for kind, hint in _TABLE_HINTS.items():
            bad = _table_variant(L, V, kind)
            if not matches(bad, want, *TABLE_TOL) and matches(got, bad, *TABLE_TOL):
                raise Wrong(hint)
        if L == V:
            raise Wrong(f"at V = L = {L} (permutations) every input holds every word: the "
                        f"centred table is 0 everywhere")
        _table_off(got, L, V)


def _table_off(got: np.ndarray, L: int, V: int) -> None:
    """The hint for a centred table that is no usual mistake: what is wrong with its form
    (never the reference's entries, which a learner could copy)."""
    what = f"centred_table({L}, {V})"
    if not np.all(np.isfinite(got)):
        raise Wrong(f"{what} contains NaN or inf")
    tol = TABLE_TOL[1] + TABLE_TOL[0] * np.abs(got).max()
    if np.abs(got.sum(1)).max() > V * tol:
        raise Wrong(f"{what} is off: its rows are not centred -- subtract each row's mean "
                    f"over the output words o, so that every row sums to 0")
    diag, off = np.diag(got), got[~np.eye(V, dtype=bool)]
    if np.ptp(diag) > tol or np.ptp(off) > tol:
        raise Wrong(f"{what} is off: every word plays the same role, so all the diagonal "
                    f"entries should be equal, and so should all the off-diagonal ones")
    raise Wrong(f"{what} is off: its form is right (rows centred, a constant diagonal and "
                f"off-diagonal), but the gap between diagonal and off-diagonal is not "
                f"P(i in x) − P(i and o both in x)")
