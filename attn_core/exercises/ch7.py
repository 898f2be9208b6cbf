"""Chapter 7's exercises (the end of the sequence): their checkers.

- :func:`check_fisher_p` (Exercise 7.1, what if): the two-sided p-value of Fisher's exact test,
  the chapter's test of every comparison of success counts, against
  :func:`~attn_core.metrics.fisher_exact`;
- :func:`check_mass_by_class` (Exercise 7.3, code): where one attention map's mass goes, by
  the chapter's classes of source positions (:data:`~attn_core.chapters.ch7_end_token.
  POSITION_CLASSES`), against a reference that the unit tests hold equal to the chapter's
  :func:`~attn_core.chapters.ch7_end_token.end_probe`;
- :func:`check_ablation` (Exercise 7.2, derivation: a design): the ablation that tests a hypothesis about
  why the end token hurts, as the fields of
  :class:`~attn_core.chapters.ch7_end_token.EndTokenConfig` that differ from the base; a right
  design is verified against its stored sweep row, whose result the ✓ line prints.

Used in ``notebooks/07_end_token.ipynb`` as ``from attn_core.exercises import ch7 as ex``;
see :mod:`attn_core.exercises` for the pattern.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace

import numpy as np

from ..chapters import ch7_end_token as ch
from ..checks import check_choice
from ..data import EndToken
from ..metrics import fisher_exact
from . import (Wrong, as_array, checker, expect_number, first_mistake, matches,
               own_work, variant_table)
from .. import metrics

__all__ = ["check_fisher_p", "check_mass_by_class", "check_ablation", "fisher_p_reference",
           "mass_by_class_reference", "ablation_reference", "HYPOTHESES", "ABLATION_FIELDS"]


# ------------------------------------------------------------------ Exercise 7.1 (what if)
def fisher_p_reference(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's exact two-sided p of ``k1`` successes of ``n1`` against ``k2`` of ``n2``:
    :func:`~attn_core.metrics.fisher_exact`, the chapter's own."""
    return fisher_exact(k1, n1, k2, n2)


#: (k1, n1, k2, n2): the chapter's comparisons of 40 runs against 40 (no end token against
#: both sides, the end step's loss removed, masked, L = 10's control, the end step trained
#: through the output layers only), then small tables: unequal groups, ties in probability
#: (the mirror table of equal groups; and (0, 2, 4, 6), where a log-gamma route without a
#: tolerance drops the tie), an observed table at the mode.
FISHER_CASES = ((35, 40, 9, 40), (21, 40, 9, 40), (9, 40, 9, 40), (40, 40, 19, 40),
                (0, 40, 9, 40), (3, 5, 1, 6), (0, 2, 4, 6), (1, 4, 3, 4), (2, 7, 5, 6),
                (7, 10, 2, 10), (1, 9, 11, 14), (2, 5, 3, 7))


def _fisher_variants(k1: int, n1: int, k2: int, n2: int) -> dict[str, float]:
    """The usual mistakes, as the p each one gives; a name ``kind/route`` is one more way
    to make the mistake ``kind``. Ties come first: where the observed table has a tie, the
    ties dropped and the observed table dropped give one p."""
    k, n = k1 + k2, n1 + n2
    xs = range(max(0, k - n2), min(k, n1) + 1)
    p = {x: math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n, k) for x in xs}
    obs = p[k1]
    tol = obs * (1 + 1e-7)
    upper = k1 / n1 >= k2 / n2                      # the first group's rate the larger
    one = sum(v for x, v in p.items() if (x >= k1 if upper else x <= k1))
    table = np.array([[k1, n1 - k1], [k2, n2 - k2]], dtype=float)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = float((((table - expected) ** 2) / expected).sum())
        yates = float((((np.abs(table - expected) - 0.5).clip(0) ** 2) / expected).sum())
    r1, r2 = k1 / n1, k2 / n2
    se = math.sqrt(r1 * (1 - r1) / n1 + r2 * (1 - r2) / n2)
    return {
        "ties": obs + sum(v for v in p.values() if v < obs),
        "ties_and_observed": sum(v for v in p.values() if v < obs),
        "no_observed": sum(v for x, v in p.items() if x != k1 and v <= tol),
        "one_sided": one,
        "one_sided/greater": sum(v for x, v in p.items() if x >= k1),
        "doubled": min(1.0, 2 * one),
        "more_probable": sum(v for v in p.values() if v >= obs),
        "approximation/chi2": math.erfc(math.sqrt(chi2 / 2)),
        "approximation/yates": math.erfc(math.sqrt(yates / 2)),
        "approximation/z": math.erfc(abs(r1 - r2) / se / math.sqrt(2)) if se else math.nan,
        "observed": obs,
    }


_FISHER_HINTS = {
    "one_sided": "that is a one-sided p: only the tables as extreme as the observed one in "
                 "its own direction. The two-sided p sums the hypergeometric probability of "
                 "every table with the same margins that is no more probable than the observed "
                 "one -- on both sides",
    "doubled": "twice the one-sided p is another convention (right only when the two groups "
               "are the same size); the two-sided p sums the probability of every table no "
               "more probable than the observed one",
    "no_observed": "the observed table itself counts: it is one of the tables no more "
                   "probable than the observed one",
    "ties": "you dropped the tables exactly as probable as the observed one (a tie: with "
            "groups of one size, the observed table's mirror always is one). Sum p(x) ≤ "
            "p_obs, and in floating point with a small relative tolerance, p(x) ≤ p_obs·(1 + "
            "1e-7): two equal probabilities computed by different routes (log-gamma, "
            "products) can differ in the last digit",
    "ties_and_observed": "you summed only the tables strictly less probable than the observed "
                         "one: the observed table and those exactly as probable (ties, with a "
                         "small relative tolerance in floating point) count too",
    "more_probable": "you summed the tables at least as probable as the observed one; the "
                     "p-value sums those no more probable (as surprising or more)",
    "approximation": "that is the chi-square (normal) approximation; Fisher's test is exact: "
                     "fix the margins and sum the hypergeometric probabilities "
                     "C(n1, x)·C(n2, k − x)/C(n, k) of the tables no more probable than the "
                     "observed one",
    "observed": "that is the probability of the observed table alone; the p-value adds the "
                "probability of every other table with the same margins that is no more "
                "probable",
}
#: p-values as small as 1e-9 are compared relatively: the absolute tolerance is far below.
_P_RTOL, _P_ATOL = 1e-6, 1e-15


def _named_mistake(got, want, table: dict, hints: dict, off: int, rtol: float,
                   atol: float) -> None:
    """:class:`Wrong` with the hint of a usual mistake of ``table`` (name -> its value on
    every case, :func:`~attn_core.exercises.variant_table`; the hint of ``kind/route`` is
    ``kind``'s): the first one that ``got`` equals on every case; else the first that it
    equals on case ``off``, the first case off (a route that makes the mistake on some
    cases only). A mistake that gives the reference's own value is never named."""
    def same(a, b):
        return matches(a, b, rtol, atol)

    first_mistake(got, [(hints[name.split("/")[0]], bad) for name, bad in table.items()
                        if not same(bad, want)], rtol=rtol, atol=atol)
    for name, bad in table.items():
        if not same(bad[off], want[off]) and same(got[off], bad[off]):
            raise Wrong(hints[name.split("/")[0]])


@checker("Exercise 7.1: Fisher's exact test")
def check_fisher_p(fisher_p):
    """``fisher_p(k1, n1, k2, n2)`` -> the two-sided p-value of Fisher's exact test, as
    :func:`~attn_core.metrics.fisher_exact`, for every case of :data:`FISHER_CASES`."""
    got = []
    for k1, n1, k2, n2 in FISHER_CASES:
        what = f"fisher_p({k1}, {n1}, {k2}, {n2})"
        with own_work((metrics, "fisher_exact"), (ch, "fisher_exact"),
                      (sys.modules[__name__], "fisher_p_reference")):
            answer = fisher_p(k1, n1, k2, n2)
        x = as_array(answer, what)
        if x.size == 2:
            raise Wrong(f"{what} should be one number, the p-value; got a pair (SciPy's "
                        "stats.fisher_exact returns (statistic, p): keep the p)")
        got.append(expect_number(x, what, finite=True))
    got = np.array(got)
    want = np.array([fisher_p_reference(*case) for case in FISHER_CASES])
    off = ~np.isclose(got, want, rtol=_P_RTOL, atol=_P_ATOL)
    if not off.any():
        return
    i = int(np.argmax(off))
    _named_mistake(got, want, variant_table(_fisher_variants, FISHER_CASES), _FISHER_HINTS, i,
                   _P_RTOL, _P_ATOL)
    (k1, n1, k2, n2), g = FISHER_CASES[i], got[i]
    if not 0 <= g <= 1 + 1e-9:
        raise Wrong(f"fisher_p({k1}, {n1}, {k2}, {n2}) is {g:.6g}: a p-value is a "
                    "probability, between 0 and 1")
    raise Wrong(f"for {k1} of {n1} against {k2} of {n2} your p is {g:.6g}, which is not "
                "Fisher's two-sided p nor one of the usual slips: with the margins fixed, sum "
                "C(n1, x)·C(n2, k − x)/C(n, k) over the x whose probability is no more than "
                "the observed table's")


# --------------------------------------------------------------------- Exercise 7.3 (code)
#: The order in which a position takes its class: the right position first, then the last
#: word (when it is not the right position), its neighbours, the end token, the start token
#: -- :func:`~attn_core.chapters.ch7_end_token.end_probe`'s order. The last word comes before
#: the neighbours: for the step before the last, the last word is a neighbour too, and it
#: counts as the last word.
_PRECEDENCE = ("right", "last word", "neighbours", "end", "start")


def _class_masks(Lp: int, align, first: int, L: int, end_pos, start: bool,
                 kind: str = "") -> dict:
    """Each class's (T, L') positions before precedence; ``kind`` makes a usual mistake."""
    pos = np.arange(Lp)
    a = np.asarray(align)[:, None]
    if kind == "right_at_t":                        # the diagonal, not the alignment
        a = np.arange(len(align))[:, None]
    words = (pos >= first) & (pos < first + L)
    if kind == "neighbours_outside":
        words = np.ones_like(words)
    shape = (len(align), Lp)
    return {"right": np.broadcast_to(pos == a, shape),
            "neighbours": ((pos == a - 1) | (pos == a + 1)) & words,
            "last word": (pos == first + L - 1) & (pos != a),
            "end": np.broadcast_to(end_pos is not None and pos == end_pos, shape),
            "start": np.broadcast_to((start or kind == "start_always") and pos == 0, shape)}


def _masses(alpha, align, first, L, end_pos, start, kind: str = "") -> np.ndarray:
    """The masses of :data:`~attn_core.chapters.ch7_end_token.POSITION_CLASSES` in that
    order (the reference with ``kind=""``; else one of the usual mistakes)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    T, Lp = alpha.shape
    masks = _class_masks(Lp, align, first, L, end_pos, start, kind)
    order = ch.POSITION_CLASSES[:-1] if kind == "naive_order" else _PRECEDENCE
    taken = np.zeros((T, Lp), dtype=bool)
    mass = {}
    for c in order:
        m = masks[c] if kind == "no_partition" else masks[c] & ~taken
        taken |= m
        mass[c] = (alpha * m).sum(1).mean()
    mass["other"] = (alpha * ~taken).sum(1).mean()
    if kind == "last_twice":                        # the last word also when it is right
        mass["last word"] += (alpha * ((np.arange(Lp) == first + L - 1)
                                       & masks["right"])).sum(1).mean()
    if kind == "swap_end_start":
        mass["end"], mass["start"] = mass["start"], mass["end"]
    out = np.array([mass[c] for c in ch.POSITION_CLASSES])
    scale = {"sum_steps": T, "mean_all": 1 / Lp, "mean_positions": T / Lp}.get(kind, 1)
    return out * scale


def mass_by_class_reference(alpha, align, first: int, L: int, end_pos, start: bool) -> dict:
    """Where one head-averaged attention map ``alpha`` (T, L') of the copied words' steps
    puts its mass: class of :data:`~attn_core.chapters.ch7_end_token.POSITION_CLASSES` ->
    the mean over the T steps of the weight on that class's positions. ``align`` (T,): each
    step's aligned source position; ``first``: the first word's position (1 after a start
    token, else 0); ``L`` words; ``end_pos``: the end token's position (None without one in
    the source); ``start``: whether position 0 is a start token. Each position is in one
    class: the right one a_t; else the last word first + L − 1; else a neighbour a_t ± 1
    that is a word; else the end token; else the start token; else other. The masses sum
    to 1. NumPy, written apart from :func:`~attn_core.chapters.ch7_end_token.end_probe`
    (the unit tests hold the two equal)."""
    return dict(zip(ch.POSITION_CLASSES, _masses(alpha, align, first, L, end_pos, start)))


#: (L, start token, end token, alignment, attention on the end token): the chapter's
#: conditions' layouts (end token on both sides; a start token instead; none; masked: no
#: weight on the end token), one with a start and an end token (no condition has both: the
#: function must not care), and a reversal's alignment (the function must read ``align``).
MASS_CASES = ((5, False, True, "copy", True), (6, True, False, "copy", True),
              (4, False, False, "copy", True), (5, True, True, "copy", True),
              (6, False, True, "copy", False), (5, False, True, "reverse", True))


def _mass_cases():
    """(alpha, align, first, L, end_pos, start) for every case: rows softmaxes of scores
    large enough that the attention is far from uniform."""
    rng = np.random.default_rng(7)
    cases = []
    for L, start, end, order, on_end in MASS_CASES:
        first = int(start)
        end_pos = first + L if end else None
        Lp = first + L + int(end)
        e = 2.0 * rng.standard_normal((L, Lp))
        if not on_end:
            e[:, end_pos] = -np.inf
        alpha = np.exp(e - e.max(1, keepdims=True))
        alpha /= alpha.sum(1, keepdims=True)
        align = first + (np.arange(L) if order == "copy" else np.arange(L)[::-1])
        cases.append((alpha, align.copy(), first, L, end_pos, start))
    return cases


_MASS_HINTS = {
    "right_at_t": "the right position of step t is align[t], the source position it copies "
                  "(after a start token, or in another task, it is not t)",
    "neighbours_outside": "a neighbour is a word: align[t] ± 1 only where that position "
                          "holds a word (first ≤ l < first + L) -- the end token after the "
                          "last word and the start token before the first are not neighbours",
    "naive_order": "the last word takes precedence over the neighbours: for the step before "
                   "the last, the last word is a neighbour too, and it counts as the last "
                   "word",
    "last_twice": "you counted the last word twice where it is the right position: it is in "
                  "the 'last word' class only when it is not align[t] (each position in one "
                  "class)",
    "no_partition": "the classes must partition the positions: each position is counted "
                    "once, in the first class it belongs to (right, last word, neighbours, "
                    "end, start), and 'other' is every position in none",
    "start_always": "position 0 is a start token only when start is True; without one it "
                    "holds the first word",
    "swap_end_start": "your 'end' and 'start' are swapped: the end token is at end_pos, after "
                      "the words; the start token at position 0",
    "sum_steps": "you summed over the steps: a class's mass is the mean over the T steps of "
                 "the weight on its positions",
    "mean_all": "you averaged over the positions too ((alpha * mask).mean() divides by T·L'): "
                "sum the weights over a class's positions, then take the mean over the steps",
    "mean_positions": "you averaged over the positions instead of the steps: sum the weights "
                      "over a class's positions, then take the mean over the T steps",
}

_CLASS_RULES = {
    "right": "the position align[t] of each step",
    "neighbours": "align[t] ± 1 where that is a word, and not the last word",
    "last word": "position first + L − 1, for the steps whose align[t] is not it",
    "end": "position end_pos (no position without an end token)",
    "start": "position 0 when start is True (none otherwise)",
    "other": "every position in no other class",
}


def _mass_variants(alpha, align, first, L, end_pos, start) -> dict[str, np.ndarray]:
    return {kind: _masses(alpha, align, first, L, end_pos, start, kind) for kind in _MASS_HINTS}


@checker("Exercise 7.3: where the attention mass goes")
def check_mass_by_class(mass_by_class):
    """``mass_by_class(alpha, align, first, L, end_pos, start)`` -> {class: mass} for each of
    :data:`~attn_core.chapters.ch7_end_token.POSITION_CLASSES`, as
    :func:`mass_by_class_reference`, for every case of :data:`MASS_CASES`."""
    cases = _mass_cases()
    got = []
    for alpha, align, first, L, end_pos, start in cases:
        with own_work((sys.modules[__name__], "mass_by_class_reference"),
                      (sys.modules[__name__], "_masses")):
            out = mass_by_class(alpha.copy(), align.copy(), first, L, end_pos, start)
        if not isinstance(out, dict):
            raise Wrong(f"mass_by_class should return a dict, class -> mass, with the keys "
                        f"{ch.POSITION_CLASSES}; got {type(out).__name__}")
        missing = [c for c in ch.POSITION_CLASSES if c not in out]
        extra = [c for c in out if c not in ch.POSITION_CLASSES]
        if missing or extra:
            raise Wrong(f"the dict's keys should be the classes {ch.POSITION_CLASSES}"
                        + (f"; missing {missing}" if missing else "")
                        + (f"; not a class: {extra}" if extra else ""))
        got.append([expect_number(out[c], f"the mass of {c!r}", finite=True)
                    for c in ch.POSITION_CLASSES])
    got = np.array(got)
    want = np.array([_masses(*case) for case in cases])
    off = ~np.isclose(got, want, rtol=1e-6, atol=1e-9).all(1)
    if not off.any():
        return
    i = int(np.argmax(off))
    _named_mistake(got, want, variant_table(_mass_variants, cases), _MASS_HINTS, i, 1e-6, 1e-9)
    _, _, _, L, end_pos, start = cases[i]
    layout = (f"L = {L}, " + ("a start token, " if start else "")
              + ("an end token" if end_pos is not None else "no end token"))
    if not math.isclose(got[i].sum(), 1, abs_tol=1e-6):
        raise Wrong(f"with {layout}, your masses sum to {got[i].sum():.6g}, not 1: every "
                    "position is in exactly one class, and each step's weights sum to 1")
    c, g = next((c, g) for c, g, w in zip(ch.POSITION_CLASSES, got[i], want[i])
                if not math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9))
    raise Wrong(f"with {layout}, your mass on {c!r} is off (yours is {g:.6g}): that class "
                f"is {_CLASS_RULES[c]}")


# ----------------------------------------------------------- Exercise 7.2 (derivation)
#: The hypotheses, and the condition of :data:`~attn_core.chapters.ch7_end_token.CONDITIONS`
#: that tests each: keep the end token on both sides and take away only what the hypothesis
#: blames -- attention to the token (a sink), or the loss of the step that must predict it.
HYPOTHESES = {"sink": "masked", "end step loss": "no end loss"}
#: The fields an ablation may set: the end token's (:class:`~attn_core.data.EndToken`).
ABLATION_FIELDS = ("eos", *EndToken.__dataclass_fields__)
#: How many wrong designs Exercise 7.2's checker grades in one session (a kernel): after
#: them it grades none, since trying the chapter's 13 conditions one by one would win it.
DESIGN_TRIES = 3
_TRIES = {"wrong": 0}
#: The stored sweep row every design is compared with: the end token on both sides.
_REFERENCE_ROW = "both"


def ablation_reference(hypothesis: str) -> dict:
    """The fields of :class:`~attn_core.chapters.ch7_end_token.EndTokenConfig` that differ
    from the base in the ablation testing ``hypothesis`` (a key of :data:`HYPOTHESES`)."""
    hypothesis = check_choice("hypothesis", hypothesis, tuple(HYPOTHESES))
    return dict(ch.CONDITIONS[HYPOTHESES[hypothesis]])


_KEEP = "keep the end token on both sides and take away only what the hypothesis blames"
_DESIGN_HINTS = {
    "both": "that changes nothing: it is the base itself (the end token on both sides); an "
            "ablation takes away what the hypothesis blames",
    "none": "removing the end token changes the task (no end to predict, no end step) and "
            "the attention (nothing at the end to collect on) at once: a difference could "
            f"not say which of them matters -- {_KEEP}",
    "start": "a start token instead of the end token removes the end token altogether (no "
             "end to predict) and adds another position attention could collect on: "
             f"several changes at once -- {_KEEP}",
    "start, masked": "that removes the end token altogether (and adds a start token): the "
                     f"task changes with it -- {_KEEP}",
    "varying": "lengths that vary change the task and keep the end token as it is: they "
               f"test neither hypothesis -- {_KEEP}",
    "varying, none": "that changes the lengths and removes the end token: two changes, and "
                     f"each changes the task -- {_KEEP}",
    "source, masked": "masking the token and moving it to the source only are two changes "
                      "at once: the second also removes the end step",
}
_HYPOTHESIS_HINTS = {
    "sink": {
        "source": "the end token in the source only keeps the sink (attention can still "
                  "collect on it) and removes the end step instead: it changes what the "
                  "other hypothesis blames. Keep the token on both sides and forbid "
                  "attending to it",
        "target": "the end token in the target only removes the sink, but changes the "
                  "source too (a position fewer, no end for the encoder to read): keep the "
                  "token on both sides and only forbid attending to it",
        "no end loss": "removing the end step's loss tests the other hypothesis: attention "
                       "may still collect on the end token",
        "no end gradient": "stopping the end step's gradient to the attention scores removes "
                           "one push toward the sink, not the sink: attention may still "
                           "collect on the end token. Forbid attending to the token itself",
        "no end state gradient": "that changes how the end step's loss trains the model, not "
                                 "whether attention may collect on the end token: forbid "
                                 "attending to the token itself",
    },
    "end step loss": {
        "source": "the end token in the source only removes the whole end step -- its input, "
                  "its output and its loss -- and so changes the target sequence: keep both "
                  "sequences as they are and remove only that step's loss",
        "target": "the end token in the target only keeps the end step and its loss, and "
                  "removes the sink instead: it tests the other hypothesis",
        "masked": "masking the end token from attention removes the sink, the other "
                  "hypothesis: the end step must still predict the end, and its loss still "
                  "trains the model",
        "no end gradient": "stopping the end step's gradient to the attention scores keeps "
                           "the rest of its loss's gradient (to the decoder, the encoder and "
                           "the output layer): one route of that loss, not the loss. Remove "
                           "the loss itself",
        "no end state gradient": "the end step's loss still trains the output layers: one "
                                 "route of that loss, not the loss. Remove the loss itself",
    },
}


def _design(fields, hypothesis: str, what: str) -> str:
    """The condition that ``fields`` (the answer for ``hypothesis``) makes; :class:`Wrong`
    with the hint unless it is the one that tests the hypothesis."""
    if isinstance(fields, str) and fields in ch.CONDITIONS:
        raise Wrong(f"{what} is a condition's name; give its fields -- the EndTokenConfig "
                    "fields that differ from the base, a dict like a value of ch.CONDITIONS")
    if not isinstance(fields, dict):
        raise Wrong(f"{what} should be a dict: the EndTokenConfig fields that differ from the "
                    f"base, like a value of ch.CONDITIONS; got {type(fields).__name__}")
    base = ch.condition_config(_REFERENCE_ROW)
    for f in fields:
        if f not in ABLATION_FIELDS:
            other = isinstance(f, str) and f in base.__dataclass_fields__
            raise Wrong(f"{what} sets {f!r}, " + (
                "which changes the model or its training, not the end token" if other
                else "which is no field of EndTokenConfig") + f": an ablation of the end "
                f"token sets some of {ABLATION_FIELDS}")
    try:
        cfg = replace(base, **fields)
    except (TypeError, ValueError) as e:
        raise Wrong(f"{what} is no valid configuration: {e}") from None
    name = ch.condition_name(cfg)
    if name == HYPOTHESES[hypothesis]:
        return name
    hint = _HYPOTHESIS_HINTS[hypothesis].get(name) or _DESIGN_HINTS.get(name)
    if hint:
        raise Wrong(f"{what}: {hint}")
    changed = sorted(f for f in ABLATION_FIELDS if getattr(cfg, f) != getattr(base, f))
    if len(changed) > 1:
        raise Wrong(f"{what} changes {len(changed)} things at once ({', '.join(changed)}): "
                    "a difference could come from any of them. Change one -- what the "
                    "hypothesis blames")
    raise Wrong(f"{what} is none of the chapter's conditions (ch.CONDITIONS), so no stored "
                f"run can verify it; {_KEEP}")


def _stored_result(name: str) -> str:
    """Condition ``name``'s stored sweep row at L = 20 against the end token on both sides:
    its successes, the reference's, and Fisher's two-sided p."""
    rows = ch.load_sweep()
    k, n = ch.successes(rows[ch.row_name(name)])
    k0, n0 = ch.successes(rows[ch.row_name(_REFERENCE_ROW)])
    return (f"{ch.LABELS[name]}: {k} of {n} runs copy, {ch.LABELS[_REFERENCE_ROW]}: {k0} "
            f"of {n0} (Fisher p = {fisher_exact(k, n, k0, n0):.2g})")


@checker("Exercise 7.2: design the ablation")
def check_ablation(ablation):
    """``ablation(hypothesis)`` -> the fields of
    :class:`~attn_core.chapters.ch7_end_token.EndTokenConfig` that differ from the base (a
    dict, like a value of :data:`~attn_core.chapters.ch7_end_token.CONDITIONS`) in the
    ablation that tests ``hypothesis``, for each of :data:`HYPOTHESES`. A design must make
    the hypothesis' condition at L = 20; the ✓ line prints its stored sweep row's successes
    against the end token on both sides, with Fisher's p."""
    if _TRIES["wrong"] >= DESIGN_TRIES:
        raise Wrong(f"{DESIGN_TRIES} designs have been wrong in this session, so the checker "
                    "no longer grades designs: trying the chapter's conditions one by one "
                    "would find the answer without designing it. Work it out from the hints "
                    "(what does each hypothesis blame, and what takes away only that?); a "
                    "new kernel starts the count again")
    try:
        names = [(h, _design(ablation(h), h, f"the design for {h!r}")) for h in HYPOTHESES]
    except Wrong:
        _TRIES["wrong"] += 1
        raise
    return lambda: "; ".join(f"{h} -- {_stored_result(name)}" for h, name in names)
