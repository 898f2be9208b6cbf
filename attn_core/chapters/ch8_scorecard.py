"""Chapter 8: the book's thesis scored against every stored experiment.

The intro promised that co-occurrence statistics predict where attention goes. Chapters 1-3
built that *lens* (the count table, the proxy's first step, IBM Model 1), chapters 4-7 ran
the copy task under more than a hundred conditions. This module turns the lens into a
number for each condition, computed from its data only, before any training, and scores it
against what training found:

- :func:`count_lens`: the *contrast* ξ of the proxy's first step on the right position
  (how much more the count table says the word at the aligned position comes out than the
  sentence's other words do), and how often that step's argmax is the aligned position;
- :func:`predict`: a success rate from ξ (the count lens) or from ξ and the weight of a
  target step that copies nothing (the count-and-end-step lens, chapter 7's finding), both
  read off chapter 7's reference rows at L = 20 (seeds 0-39);
- :func:`scorecard`, :func:`rank_scores`, :func:`run_aucs`: each lens scored per condition
  and per run, on conditions and seeds it was not read off;
- :func:`held_out_predictions`: the predictions for the conditions no chapter had run,
  written to ``data/ch8_predictions.json`` and committed before they were trained.

Its runs and conditions are in its part :mod:`attn_core.chapters.ch8_runs`.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Sequence

import numpy as np
import torch

from ..checks import check_bool, check_choice, check_int, check_real
from ..data import CopyTask
from ..metrics import (outcome_auc, rank_correlation, rank_correlation_null,
                       wilson_interval)
from ..stats import kaplan_meier
from ..rows import load_table, write_table
from . import ch7_end_token as ch7
from .ch8_runs import (BUDGET, FAMILIES, HELD_OUT_ROWS, HELD_OUT_SEEDS, HELD_OUT_STORED,
                       PREDICTIONS_FILE, PUSH_ROWS, PUSH_STORED, Condition, conditions,
                       held_out_conditions, held_out_config, load_held_out_runs,
                       load_scorecard_pushes, score_push_config)

__all__ = ["Condition", "conditions", "FAMILIES", "BUDGET", "HELD_OUT_ROWS",
           "HELD_OUT_SEEDS", "HELD_OUT_STORED", "PREDICTIONS_FILE", "PUSH_ROWS",
           "PUSH_STORED", "held_out_config", "load_held_out_runs", "load_scorecard_pushes",
           "score_push_config", "held_out_conditions",
           "count_lens", "condition_task", "LENSES", "REFERENCE_ROWS", "references",
           "predict", "predict_condition", "condition_counts", "binomial_range", "held_out_predictions", "write_predictions",
           "load_predictions", "explain", "scorecard", "rank_scores", "fresh_conditions",
           "run_scores", "log_score", "speed", "time_scores", "delays", "push_scores", "held_out_table", "format_scorecard",
           "draw_scorecard", "draw_delays", "draw_held_out", "draw_lens", "MODEL_COLOURS"]

#: The lenses that predict a rate: the count table's contrast and the proxy's alignment
#: (chapters 3-4: only the counts decide), and the proxy with the end step (chapter 7).
LENSES = ("contrast", "proxy", "proxy + end step")


# ------------------------------------------------------------------------ the count lens
def condition_task(length: int, vocab: int, distribution: str = "permutation",
                   min_length: int | None = None) -> CopyTask:
    """The data of a condition as a :class:`~attn_core.data.CopyTask` without end or start
    tokens (the lens reads the data words only): ``length`` L words, ``vocab`` V data words
    (V = L for permutations, 2L for the mixture), ``distribution``, ``min_length``."""
    L = check_int("length", length, 2)
    dist = check_choice("distribution", distribution,
                        ("permutation", "distinct", "iid", "mixture"))
    V = check_int("vocab", vocab, L)
    if dist == "permutation" and V != L:
        raise ValueError(f"vocab must be the length {L} for permutations; got {V}")
    if dist == "mixture" and V != 2 * L:
        raise ValueError(f"vocab must be twice the length ({2 * L}) for the mixture; got {V}")
    kw = {"vocab": V} if dist in ("distinct", "iid") else {}
    return CopyTask(L, distribution=dist, eos=False, min_length=min_length, **kw)


def count_lens(task: CopyTask, n: int = 2000, seed: int = 0) -> dict:
    """The count lens of ``task``'s data, from ``n`` sentence pairs drawn with ``seed``.

    The count table of the pairs, scaled as chapter 4 shows it (L·C/n) and centred by rows,
    is the proxy's first gradient step (chapter 3): after it, the proxy's probe at source
    position l for output word y_t rises with ``C̃[x_l, y_t]``. For each copied word's step
    t, the *contrast* is that value at the aligned position minus its mean over the
    sentence's data positions; ``kappa`` is its mean over steps and pairs (0 exactly when
    the table is flat, as under permutations). ``hit`` is how often the step's largest
    value is at the aligned position, ties shared (1/L when all tie). Deterministic: the
    same arguments give the same numbers."""
    if not isinstance(task, CopyTask):
        raise TypeError(f"task must be a CopyTask; got {type(task).__name__}")
    n = check_int("n", n, 2, 10 ** 5)
    seed = check_int("seed", seed, 0)
    return dict(_count_lens(task, n, seed))


@functools.lru_cache(maxsize=256)
def _count_lens(task: CopyTask, n: int, seed: int) -> tuple:
    b = task.sample(torch.Generator().manual_seed(seed), n)
    V, L = task.vocab, task.length
    src, tgt, align = b["src"], b["tgt"], b["align"]
    in_src, in_tgt = src < V, tgt < V                      # data words only
    S = torch.nn.functional.one_hot(src.clamp(max=V - 1), V).double() * in_src[..., None]
    T = torch.nn.functional.one_hot(tgt.clamp(max=V - 1), V).double() * in_tgt[..., None]
    words = in_src.sum(1).double()                         # each pair's length
    C = torch.einsum("nli,nto->io", S / words[:, None, None], T) * L / n
    Cc = C - C.mean(1, keepdim=True)
    M = Cc[src.clamp(max=V - 1)]                           # (n, L', V): rows of x_l
    M = M.gather(2, tgt.clamp(max=V - 1)[:, None, :].expand(-1, M.shape[1], -1))
    M = M.masked_fill(~in_src[:, :, None], float("nan"))   # (n, L', T): C̃[x_l, y_t]
    right = M.gather(1, align.clamp(max=M.shape[1] - 1)[:, None, :]).squeeze(1)
    mean = torch.nanmean(M, 1)
    top = torch.nan_to_num(M, nan=-math.inf).amax(1)
    tie = 1e-9 * max(float(Cc.abs().max()), 1.0)
    at_top = (M >= top[:, None, :] - tie)
    share = (right >= top - tie).double() / at_top.sum(1).double()
    steps = in_tgt & (align < M.shape[1])
    zero = torch.zeros((), dtype=M.dtype)
    kappa = float(torch.where(steps, right - mean, zero).sum() / steps.sum())
    hit = float(torch.where(steps, share, zero).sum() / steps.sum())
    return (("kappa", kappa), ("hit", hit))


# ------------------------------------------------------------------------ predictions
#: The rows the lenses are read off (chapter 7, L = 20, seeds 0-39, step 300): the rate on
#: permutations for each weight of the end step's loss (0: removed, the end token's word
#: still in the vocabulary; 1: chapter 4's model), and on the control (V = 1.5 L) without
#: and with the end token. (family, row) each.
REFERENCE_ROWS = {
    "flat": ((0.0, ("sweep", "no end loss, L=20")), (0.1, ("causes", "end weight 0.1")),
             (0.3, ("causes", "end weight 0.3")), (1.0, ("sweep", "both, L=20")),
             (3.0, ("causes", "end weight 3"))),
    "control": ((0.0, ("sweep", "none, L=20, control")),
                (1.0, ("sweep", "both, L=20, control"))),
}


def references(conds: Sequence[Condition]) -> dict:
    """The reference rows of ``conds`` (:func:`conditions`, chapter 7's): for "flat" and
    "control", ``(weights, k, n)`` arrays, and ``kappa_control``, the count lens of the
    control's data (L = 20, V = 30)."""
    by = {(c.family, c.name): c for c in conds if c.chapter == 7}
    out = {}
    for kind, rows in REFERENCE_ROWS.items():
        missing = [r for _, r in rows if r not in by]
        if missing:
            raise ValueError(f"conds must hold chapter 7's reference rows; missing {missing}")
        out[kind] = (np.array([e for e, _ in rows]), np.array([by[r].k for _, r in rows]),
                     np.array([by[r].n for _, r in rows]))
    out["kappa_control"] = count_lens(condition_task(20, 30, "distinct"))["kappa"]
    out["rows"] = {r for kind in REFERENCE_ROWS for _, r in REFERENCE_ROWS[kind]}
    return out


def predict(lens: str, counts: dict, length: int, extra: float, refs: dict,
            bound: str = "mid") -> float:
    """The success rate that ``lens`` (one of :data:`LENSES`) predicts for data whose count
    lens is ``counts`` (:func:`count_lens`: ``kappa``, ``hit``) at ``length`` L, with a
    target step that copies nothing weighted ``extra`` in the loss.

    Every lens moves from the rate on flat data to the control's by a weight λ in [0, 1]:
    ``r = r_flat + (r_control − r_flat) · λ``. For the *contrast* lens λ = ξ / ξ_control
    (at most 1: data with more contrast than the control's are predicted as the control);
    for the *proxy* lenses λ = (hit − 1/L) / (1 − 1/L), 0 when the proxy's first step
    points nowhere (all positions tie) and 1 when it always points at the aligned
    position. The contrast and proxy lenses read both rates off chapter 4's model (the end
    step weighted 1) whatever the condition: only the counts decide. *proxy + end step*
    reads them at the condition's ``extra`` (linear between the reference weights 0, 0.1,
    0.3, 1, 3). ``bound`` "low" or "high" reads every reference rate at its 95% Wilson
    bound instead of its estimate, for a range of the prediction."""
    lens = check_choice("lens", lens, LENSES)
    if not isinstance(counts, dict) or not {"kappa", "hit"} <= set(counts):
        raise TypeError("counts must be a count_lens(...) dict with 'kappa' and 'hit'")
    kappa = check_real("counts['kappa']", counts["kappa"])
    L = check_int("length", length, 2)
    hit = check_real("counts['hit']", counts["hit"], 0.0, 1.0)
    extra = check_real("extra", extra, 0.0, 3.0)
    bound = check_choice("bound", bound, ("low", "mid", "high"))
    if not isinstance(refs, dict) or "kappa_control" not in refs:
        raise TypeError("refs must be the references(...) of the stored conditions")

    def rate(kind):
        e, k, n = refs[kind]
        r = np.array([k_ / n_ if bound == "mid" else
                      wilson_interval(int(k_), int(n_))[0 if bound == "low" else 1]
                      for k_, n_ in zip(k, n)])
        return float(np.interp(extra if lens == "proxy + end step" else 1.0, e, r))

    if lens == "contrast":
        s = min(max(kappa, 0.0) / refs["kappa_control"], 1.0)
    else:
        s = max(hit - 1 / L, 0.0) / (1 - 1 / L)
    flat, ctrl = rate("flat"), rate("control")
    return flat + (ctrl - flat) * s


def predict_condition(c: Condition, refs: dict, lens: str = "proxy + end step",
                      bound: str = "mid") -> float:
    """:func:`predict` for the stored condition ``c``, from its data."""
    if not isinstance(c, Condition):
        raise TypeError(f"c must be a Condition; got {type(c).__name__}")
    return predict(lens, condition_counts(c), c.length, c.extra, refs, bound)


def condition_counts(c: Condition) -> dict:
    """:func:`count_lens` of condition ``c``'s data."""
    if not isinstance(c, Condition):
        raise TypeError(f"c must be a Condition; got {type(c).__name__}")
    return count_lens(condition_task(c.length, c.vocab, c.distribution, c.min_length))


def binomial_range(rate: float, n: int, level: float = 0.95) -> tuple[int, int]:
    """The central range of a Binomial(``n``, ``rate``) count holding at least ``level`` of
    its probability: (the largest k with P(X < k) <= (1 − level)/2, the smallest k with
    P(X > k) <= (1 − level)/2)."""
    rate = check_real("rate", rate, 0.0, 1.0)
    n = check_int("n", n, 1)
    level = check_real("level", level, 0.0, 1.0)
    pmf = [math.comb(n, k) * rate ** k * (1 - rate) ** (n - k) for k in range(n + 1)]
    cdf = np.cumsum(pmf)
    tail = (1 - level) / 2
    lo = int(np.searchsorted(cdf, tail + 1e-12))              # P(X <= lo) > tail
    hi = int(np.searchsorted(cdf, 1 - tail - 1e-12))          # P(X <= hi) >= 1 - tail
    return lo, min(hi, n)


def held_out_predictions(conds: Sequence[Condition] | None = None) -> dict:
    """For each held-out condition (:data:`HELD_OUT_ROWS`, 40 fresh seeds): its ξ and
    ``extra``, each lens's predicted rate and its range of successes of 40 (the binomial
    range at the reference rates' low and high Wilson bounds)."""
    conds = conditions() if conds is None else conds
    refs = references(conds)
    out = {}
    for row in HELD_OUT_ROWS:
        cfg = held_out_config(row)
        task = cfg.task()
        counts = count_lens(condition_task(cfg.length, task.vocab, cfg.distribution))
        extra = 1.0 if cfg.eos and cfg.eos_side in ("both", "target") else 0.0
        entry = {**counts, "extra": extra}
        n = len(cfg.seeds)
        for lens in LENSES:
            r = predict(lens, counts, cfg.length, extra, refs)
            lo = binomial_range(predict(lens, counts, cfg.length, extra, refs, "low"), n)[0]
            hi = binomial_range(predict(lens, counts, cfg.length, extra, refs, "high"), n)[1]
            entry[lens] = {"rate": r, "range": [lo, hi]}
        out[row] = entry
    return out


#: What the predictions file says of itself.
_PREDICTIONS_ABOUT = (
    "Written by benchmarks/ch8_scorecard/held_out.py --predict before any held-out run was "
    "trained, and committed first: for each held-out condition (40 seeds, 80-119), its "
    "count lens (kappa, hit), the loss weight of its extra target step, and each lens's "
    "predicted success rate by step 300 with its range of successes of 40. The chapter's "
    "best lens is 'proxy + end step'; the proxy was preferred to the contrast after "
    "chapter 4's stored runs at V = 21 (4 of 4 copy; the contrast lens predicts 0.39). "
    "The tests fixed with them: at least 3 of the 4 counts inside the best lens's ranges; "
    "on the runs of fresh seeds (seeds 40-79 of chapter 7 and these), the best lens's AUC "
    "at least 0.6 and its mean log score above the contrast lens's and the proxy lens's.")


def write_predictions(path=PREDICTIONS_FILE):
    """Write :func:`held_out_predictions` to ``path`` (a table, through the manifest)."""
    return write_table(path, held_out_predictions(), _PREDICTIONS_ABOUT)


def load_predictions() -> dict:
    """The committed predictions (``data/ch8_predictions.json``)."""
    return load_table(PREDICTIONS_FILE, "python benchmarks/ch8_scorecard/held_out.py "
                                        "--predict")


# ------------------------------------------------------------------------ the misses
def explain(c: Condition) -> str:
    """Which chapter explains a lens's miss on condition ``c``, by what ``c`` changes that
    the lens does not read (the first that applies), or "open"."""
    if not isinstance(c, Condition):
        raise TypeError(f"c must be a Condition; got {type(c).__name__}")
    if c.attention != "learned":
        return "ch4: attention frozen"
    if c.target_permutation:
        return "ch4: fixed reordering"
    if c.model.startswith("Transformer"):
        return "ch6: positions"
    if "heads" in c.model:
        return "ch5: heads"
    if c.model.startswith("GRU"):
        return "ch5: a GRU"
    if c.notes:
        return f"ch{c.chapter}: {c.notes}"
    if c.length != 20 or c.budget != BUDGET:
        return f"open: L={c.length}, {c.budget} steps"
    if c.end == "none":
        return "ch7: one word fewer"
    return "open"


# ------------------------------------------------------------------------ the scorecard
def scorecard(conds: Sequence[Condition], refs: dict | None = None) -> list[dict]:
    """One entry per condition of ``conds``: the ``condition``, whether it is one of the
    lenses' ``reference`` rows, its ``counts`` (:func:`count_lens`), each lens's
    ``predicted`` rate, the measured ``k`` of ``n`` with its Wilson interval ``ci``, for
    each lens whether it ``misses`` (its prediction outside that interval), and
    ``explain`` (:func:`explain`)."""
    conds = list(conds)
    if not conds or not all(isinstance(c, Condition) for c in conds):
        raise TypeError("conds must be a non-empty sequence of Conditions (conditions())")
    refs = references(conds) if refs is None else refs
    out = []
    for c in conds:
        pred = {lens: predict_condition(c, refs, lens) for lens in LENSES}
        ci = wilson_interval(c.k, c.n)
        out.append({"condition": c, "reference": (c.family, c.name) in refs["rows"]
                    and c.chapter == 7, "counts": condition_counts(c), "predicted": pred,
                    "k": c.k, "n": c.n, "ci": ci,
                    "misses": {lens: not ci[0] - 1e-12 <= r <= ci[1] + 1e-12
                               for lens, r in pred.items()},
                    "explain": explain(c)})
    return out


def _scoredall(card) -> list[dict]:
    if not isinstance(card, list) or not card or not all(
            isinstance(e, dict) and "predicted" in e for e in card):
        raise TypeError("card must be a scorecard(...)")
    return card


def _scored(card) -> list[dict]:
    return [e for e in _scoredall(card) if not e["reference"]]


def rank_scores(card: list, shuffles: int = 10000, seed: int = 0) -> dict:
    """For each lens, over the conditions of ``card`` (:func:`scorecard`) that are not its
    references: Spearman's ``rho`` between the predicted and the measured rate, its
    one-sided permutation ``p`` (``shuffles`` reassignments of the measured rates, seeded:
    (1 + those at least as large) / (1 + ``shuffles``)), the number of conditions ``n``
    and of ``misses``. A lens that predicts one rate everywhere has no order: rho NaN."""
    rows = _scored(card)
    measured = np.array([e["k"] / e["n"] for e in rows])
    out = _rank_p(rows, measured, shuffles, seed)
    for lens in LENSES:
        out[lens]["misses"] = sum(e["misses"][lens] for e in rows)
    return out


def _rank_p(rows: list, measured: np.ndarray, shuffles: int, seed: int) -> dict:
    """Each lens's Spearman rho between its predictions on ``rows`` and ``measured``, with
    its one-sided permutation p (``shuffles`` seeded reassignments of ``measured``)."""
    shuffles = check_int("shuffles", shuffles, 1, 10 ** 6)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    perms = np.array([rng.permutation(len(rows)) for _ in range(shuffles)])
    out = {}
    for lens in LENSES:
        pred = np.array([e["predicted"][lens] for e in rows])
        rho = rank_correlation(pred, measured)
        null = rank_correlation_null(pred, measured, perms)
        p = float((1 + np.sum(null >= rho - 1e-12)) / (1 + shuffles)) if np.isfinite(
            rho) else float("nan")
        out[lens] = {"rho": rho, "p": p, "n": len(rows)}
    return out


def speed(c: Condition) -> float:
    """How soon ``c``'s runs get above the level: 1 − the mean of each run's time to it
    (its budget for a run that never got there) ÷ the budget. That mean is the area under
    the Kaplan-Meier curve up to the budget (exact here: every censored run is censored at
    the budget): 1 if every run is there at step 0, 0 if none gets there."""
    if not isinstance(c, Condition):
        raise TypeError(f"c must be a Condition; got {type(c).__name__}")
    if c.times is None:
        raise ValueError(f"{c.label} stores no curves, so no times (Condition.times is None)")
    t = np.where(np.isnan(c.times), c.budget, c.times)
    return float(1 - t.mean() / c.budget)


def time_scores(card: list, shuffles: int = 10000, seed: int = 0) -> dict:
    """For each lens, over the conditions of ``card`` (:func:`scorecard`) that are not its
    references and store their runs' times at the scorecard's budget (:data:`BUDGET`):
    Spearman's ``rho`` between the predicted rate and the measured :func:`speed`, its
    one-sided permutation ``p`` (as :func:`rank_scores`), and ``n``. The time a run takes
    to the level, not only whether it gets there by the budget."""
    rows = [e for e in _scored(card) if e["condition"].times is not None
            and e["condition"].budget == BUDGET]
    if len(rows) < 3:
        raise ValueError(f"card must hold at least 3 timed conditions at {BUDGET} steps; "
                         f"got {len(rows)}")
    return _rank_p(rows, np.array([speed(e["condition"]) for e in rows]), shuffles, seed)


def delays(card: list, long: dict | None = None, lens: str = "proxy + end step") -> dict:
    """Late, or never? For each of chapter 7's long rows (``long``, default
    :func:`~attn_core.chapters.ch7_end_token.load_long`: sweep conditions trained on to
    2,000 steps on the same seeds), its condition in ``card``: whether it is a
    ``reference`` row, ``lens``'s ``predicted`` rate at :data:`BUDGET`, the runs above the
    level at the budget (``k_budget``, as the sweep stored them) and by the long row's
    last step (``k_end``, of ``n``, by ``steps``), and the Kaplan-Meier ``median`` time to
    the level (None when fewer than half get there). ``rho``: Spearman's rank correlation
    between the predicted rate and the median time over the rows that are not references
    (``n_rows``; negative when a lower prediction means a later median), and ``p``, the
    share of all orderings of those medians whose correlation is at least as negative
    (exact, one-sided; at least 1/n_rows!, less with ties)."""
    lens = check_choice("lens", lens, LENSES)
    long = ch7.load_long() if long is None else long
    by = {(e["condition"].chapter, e["condition"].family, e["condition"].name): e
          for e in _scoredall(card)}
    if not isinstance(long, dict):
        raise TypeError(f"long must be the stored long rows (ch7.load_long()); got "
                        f"{type(long).__name__}")
    names = [n for n in long if not n.startswith("_")]
    missing = [n for n in names if (7, "sweep", n) not in by]
    if not names or missing:
        raise ValueError(f"long must hold rows of chapter 7's sweep that card scores; "
                         f"not in card: {missing or 'no rows'}")
    rows = []
    for n in names:
        e = by[(7, "sweep", n)]
        t, r = ch7.times_to_level(long[n])
        km_t, km_s = kaplan_meier(t, r)
        below = np.flatnonzero(km_s <= 0.5)
        rows.append({"name": n, "reference": e["reference"], "predicted": e["predicted"][lens],
                     "k_budget": e["k"], "k_end": int(r.sum()), "n": int(r.size),
                     "steps": int(long[n]["eval_steps"][-1]),
                     "median": float(km_t[below[0]]) if below.size else None})
    fresh = [x for x in rows if not x["reference"] and x["median"] is not None]
    rho = p = float("nan")
    if 3 <= len(fresh) <= 8:                        # 8! = 40,320 orderings at most
        pred = [x["predicted"] for x in fresh]
        med = [x["median"] for x in fresh]
        rho = rank_correlation(pred, med)
        null = [rank_correlation(pred, list(q)) for q in itertools.permutations(med)]
        p = float(np.mean(np.array(null) <= rho + 1e-12))
    elif len(fresh) > 8:
        raise ValueError(f"long must hold at most 8 rows that are not references; got "
                         f"{len(fresh)}")
    return {"rows": rows, "rho": rho, "p": p, "n_rows": len(fresh), "lens": lens}


def fresh_conditions(conds: Sequence[Condition]) -> list[Condition]:
    """The conditions of ``conds`` whose runs no lens was read off: chapter 7's seeds 40-79
    and the held-out conditions (seeds 80-119)."""
    conds = list(conds) if isinstance(conds, (list, tuple)) else None
    if conds is None or not all(isinstance(c, Condition) for c in conds):
        raise TypeError("conds must be a list of Conditions (conditions())")
    return [c for c in conds if c.family in ("seeds 40-79", "held out")]


def log_score(rates, ok, runs: int = 40) -> float:
    """The mean log probability that predicted ``rates`` (one a run) gave the outcomes
    ``ok``, each rate shrunk as a rate read off ``runs`` runs is, (runs·r + ½)/(runs + 1)
    (a prediction of 1 read off 40 runs is 0.988, not certainty). Higher is better."""
    r = np.asarray(rates, dtype=float)
    ok = np.asarray(ok)
    if r.ndim != 1 or r.shape != ok.shape or ok.dtype != bool:
        raise ValueError(f"rates and ok must be 1-D of one shape (ok bool); got {r.shape}, "
                         f"{ok.shape} {ok.dtype}")
    if not ((r >= 0) & (r <= 1)).all():
        raise ValueError("rates must be in [0, 1]")
    runs = check_int("runs", runs, 1)
    r = (runs * r + 0.5) / (runs + 1)
    return float(np.mean(np.where(ok, np.log(r), np.log1p(-r))))


def run_scores(conds: Sequence[Condition], refs: dict, constant: float | None = None) -> dict:
    """Every lens scored on the runs of ``conds`` (one prediction a run: its condition's):
    ``auc`` (:func:`~attn_core.metrics.outcome_auc`) with its ``p``, ``log`` score
    (:func:`log_score`) and the number of ``runs``. ``constant``: also score a lens that
    predicts that rate everywhere (key "constant")."""
    if not isinstance(conds, (list, tuple)) or not conds or not all(
            isinstance(c, Condition) for c in conds):
        raise TypeError("conds must be a non-empty list of Conditions")
    if not isinstance(refs, dict) or "kappa_control" not in refs:
        raise TypeError("refs must be the references(...) of the stored conditions")
    conds = [c for c in conds if c.per_run]
    ok = np.concatenate([c.ok for c in conds])
    out = {}
    lenses = {lens: np.concatenate([np.full(c.n, predict_condition(c, refs, lens))
                                    for c in conds]) for lens in LENSES}
    if constant is not None:
        lenses["constant"] = np.full(ok.size, check_real("constant", constant, 0.0, 1.0))
    for lens, score in lenses.items():
        if np.ptp(score) == 0:
            a, p = 0.5, 1.0
        else:
            a, p = outcome_auc(score, ok)
        out[lens] = {"auc": a, "p": p, "log": log_score(score, ok), "runs": int(ok.size)}
    return out


def push_scores(pushes: dict, conds: Sequence[Condition]) -> dict:
    """Chapter 7's step-0 push as a lens: over the conditions of ``conds`` whose pushes
    ``pushes`` (:func:`load_scorecard_pushes`) stores, Spearman's ``rho`` between each
    condition's mean push and its rate (``n`` conditions); and the mean within-condition
    AUC of the push over the held-out conditions where some runs copy and some do not."""
    if not isinstance(pushes, dict) or not pushes:
        raise TypeError("pushes must be the stored pushes (load_scorecard_pushes())")
    if not isinstance(conds, (list, tuple)) or not all(isinstance(c, Condition)
                                                       for c in conds):
        raise TypeError("conds must be a list of Conditions")
    by = {c.name: c for c in conds if c.family in ("sweep", "held out") and c.chapter in (7, 8)}
    names = [n for n in pushes if not n.startswith("_") and n in by]
    mean = np.array([np.mean(pushes[n]["push_diag_copy"]) for n in names])
    rate = np.array([by[n].rate for n in names])
    aucs = {}
    for n in names:
        c = by[n]
        if c.family == "held out" and 0 < c.k < c.n:
            aucs[n] = outcome_auc(pushes[n]["push_diag_copy"], c.ok)[0]
    return {"rho": rank_correlation(mean, rate), "n": len(names), "aucs": aucs}


def held_out_table(predictions: dict, held: Sequence[Condition]) -> list[dict]:
    """For each held-out condition: what each lens predicted (``predictions``,
    :func:`load_predictions`) and the measured successes (``held``,
    :func:`held_out_conditions`), and whether they fell inside each lens's range."""
    if not isinstance(predictions, dict) or not predictions:
        raise TypeError("predictions must be the committed predictions (load_predictions())")
    if not isinstance(held, (list, tuple)) or not all(isinstance(c, Condition) for c in held):
        raise TypeError("held must be the held-out conditions (held_out_conditions())")
    by = {c.name: c for c in held}
    missing = [r for r in predictions if r not in by]
    if missing:
        raise ValueError(f"held must hold every predicted condition; missing {missing}")
    out = []
    for row, p in predictions.items():
        c = by[row]
        out.append({"row": row, "k": c.k, "n": c.n,
                    **{lens: {**p[lens], "inside": p[lens]["range"][0] <= c.k
                              <= p[lens]["range"][1]} for lens in LENSES}})
    return out


def format_scorecard(card: list, lens: str = "proxy + end step",
                     misses_only: bool = False) -> str:
    """The scorecard as text, at most 74 columns: each condition (its chapter, family and
    row: :attr:`Condition.label`), its model, ``lens``'s predicted rate and the measured
    successes; under a miss, the chapter that explains it (and under a reference row,
    that it is one). Nothing is cut short."""
    lens = check_choice("lens", lens, LENSES)
    misses_only = check_bool("misses_only", misses_only)
    lines = [f"{'condition':49s} {'model':11s} {'pred':>4s} {'meas':>6s}", "-" * 74]
    for e in _scoredall(card):
        c = e["condition"]
        if misses_only and not (e["misses"][lens] and not e["reference"]):
            continue
        model = c.model.replace("Transformer", "Transf.").replace(", ", " ")
        model = model.replace(" heads", "h").replace(" head", "h")
        lines.append(f"{c.label:49s} {model:11s} "
                     f"{e['predicted'][lens]:4.2f} {e['k']:>3d}/{e['n']}")
        if e["reference"]:
            lines.append("    (a reference row)")
        elif e["misses"][lens]:
            lines.append(f"    missed: {e['explain']}")
    width = max(len(x) for x in lines)
    if width > 74:                      # a new condition's name: widen the code, not cut
        raise ValueError(f"a scorecard line is {width} columns wide (at most 74)")
    return "\n".join(lines)


#: The colours of the models in the scorecard's figure.
MODEL_COLOURS = {"LSTM": "C0", "GRU": "C2", "Transformer": "C1"}


def _colour(model: str) -> str:
    return next(v for k, v in MODEL_COLOURS.items() if model.startswith(k))


def draw_scorecard(card: list, lenses: Sequence[str] = ("contrast", "proxy + end step")):
    """Predicted against measured success rate, one point per condition with its 95%
    Wilson interval, one panel per lens (stacked): coloured by model, hollow for the
    lenses' reference rows, the diagonal where a prediction is right. Returns the Figure."""
    import matplotlib.pyplot as plt

    from .. import plotting

    lenses = [check_choice("lenses", x, LENSES) for x in lenses]
    fig, axes = plt.subplots(len(lenses), 1, figsize=(plotting.WIDTH_IN, 3.6 * len(lenses)),
                             layout="constrained", sharex=True)
    axes = np.atleast_1d(axes)
    jitter = np.random.default_rng(0).uniform(-0.015, 0.015, len(card))
    for ax, lens in zip(axes, lenses):
        ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls="--")
        for j, e in zip(jitter, card):
            c = e["condition"]
            x, y = e["predicted"][lens] + j, e["k"] / e["n"]
            col = _colour(c.model)
            ax.plot([x, x], e["ci"], color=col, lw=0.6, alpha=0.5)
            ax.plot([x], [y], "o", ms=4, mfc="none" if e["reference"] else col, mec=col)
        rows = _scored(card)
        rs = {"rho": rank_correlation([e["predicted"][lens] for e in rows],
                                      [e["k"] / e["n"] for e in rows]),
              "misses": sum(e["misses"][lens] for e in rows), "n": len(rows)}
        ax.set(ylabel="measured rate", xlim=(-0.05, 1.05), ylim=(-0.05, 1.05),
               title=f"{lens}: rank ρ = {rs['rho']:.2f}\n{rs['misses']} of {rs['n']} "
                     "missed")
    axes[-1].set_xlabel("predicted success rate")
    for k, v in MODEL_COLOURS.items():
        axes[0].plot([], [], "o", color=v, ms=4, label=k)
    # the lower right of the top panel is empty: a prediction of 0.6-0.9 is rare there
    axes[0].legend(loc="lower right", bbox_to_anchor=(0.92, 0.0), frameon=False)
    return fig


def draw_delays(card: list, long: dict | None = None, lens: str = "proxy + end step"):
    """Late, or never, as a figure: the Kaplan-Meier fraction of runs not yet above the
    level after each step, for each of chapter 7's long rows (``long``, default
    :func:`~attn_core.chapters.ch7_end_token.load_long`), coloured by ``lens``'s
    predicted rate (dashed: the rows the lens was read off), the sweep's budget marked.
    Every curve that reaches 0 after the budget is a delay the budget called a failure.
    Returns the Figure."""
    import matplotlib.pyplot as plt

    from .. import plotting

    long = ch7.load_long() if long is None else long       # read once, for both
    d = delays(card, long, lens)
    preds = sorted({round(r["predicted"], 2) for r in d["rows"]})
    colours = dict(zip(preds, ("C1", "C2", "C0", "C4", "C5")))
    fig, ax = plt.subplots(figsize=(plotting.WIDTH_IN, 4.4), layout="constrained")
    for r in sorted(d["rows"], key=lambda r: r["predicted"]):
        t, s = kaplan_meier(*ch7.times_to_level(long[r["name"]]))
        end = float(r["steps"])
        ax.step(np.append(t, end), np.append(s, s[-1]), where="post", lw=1.4,
                color=colours[round(r["predicted"], 2)],
                ls="--" if r["reference"] else "-")
    for p, col in colours.items():
        ax.plot([], [], color=col, lw=1.4, label=f"predicted {p:.2f}")
    ax.plot([], [], color="0.4", ls="--", lw=1.4, label="a reference row")
    ax.axvline(BUDGET, color="0.4", lw=0.8, ls=":")
    ax.text(BUDGET, 1.02, f" step {BUDGET}", color="0.4", va="bottom")
    ax.set(xlabel="training step", ylabel="runs not yet above 0.95", ylim=(-0.02, 1.1),
           xlim=(0, 2000))
    ax.legend(loc="upper right", frameon=False)
    return fig


def draw_held_out(table: list):
    """The held-out conditions (:func:`held_out_table`): for each, each lens's committed
    range of successes of 40 (a bar, its predicted count a tick) and the measured count (a
    black dot): a dot on a lens's bar is a prediction that held. Returns the Figure."""
    import matplotlib.pyplot as plt

    from .. import plotting

    if not isinstance(table, list) or not table or not all(
            isinstance(e, dict) and {"row", "k", "n"} <= set(e) for e in table):
        raise TypeError("table must be a held_out_table(...)")
    colours = {"contrast": "C3", "proxy": "C0", "proxy + end step": "C2"}
    fig, ax = plt.subplots(figsize=(plotting.WIDTH_IN, 4.2), layout="constrained")
    for i, e in enumerate(table):
        for j, lens in enumerate(LENSES):
            y = i + (j - 1) * 0.22
            lo, hi = e[lens]["range"]
            ax.plot([lo, hi], [y, y], color=colours[lens], lw=5, alpha=0.6,
                    solid_capstyle="butt", label=lens if i == 0 else None)
            ax.plot([e[lens]["rate"] * e["n"]] * 2, [y - 0.08, y + 0.08], color="k", lw=1)
        ax.plot([e["k"]], [i], "o", color="k", ms=6, label="measured" if i == 0 else None)
    ax.set(yticks=range(len(table)), yticklabels=[e["row"] for e in table],
           xlabel=f"runs that copy by step {BUDGET}, of {table[0]['n']}",
           xlim=(-1, table[0]["n"] + 1), ylim=(len(table) - 0.5, -0.5))
    fig.legend(loc="outside lower center", frameon=False, ncols=2)
    return fig


def draw_lens(vocab: int, conds: Sequence[Condition], refs: dict, length: int = 20):
    """The slider's frame at V = ``vocab`` (L = ``length``): above, the count lens's
    contrast ξ (÷ the control's) and the proxy's hit rate against V/L; below, each lens's
    predicted rate (proxy + end step with and without the end step), with the stored
    conditions of chapter 7 and the held-out conditions at their V/L (L = 20, learned
    attention, LSTM), filled with the end token and hollow without. Returns the Figure."""
    import matplotlib.pyplot as plt

    from .. import plotting

    L = check_int("length", length, 2)
    V = check_int("vocab", vocab, L, 2 * L)
    Vs = np.arange(L, 2 * L + 1)
    lens_at = {v: count_lens(condition_task(L, int(v), "permutation" if v == L else
                                            "distinct")) for v in Vs}
    kap = np.array([lens_at[v]["kappa"] for v in Vs]) / refs["kappa_control"]
    hit = np.array([lens_at[v]["hit"] for v in Vs])
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(plotting.WIDTH_IN, 6.4), sharex=True,
                                 layout="constrained", gridspec_kw={"height_ratios": [1, 1.4]})
    a1.plot(Vs / L, kap, "-", color="C3", label="contrast ξ ÷ control's")
    a1.plot(Vs / L, hit, "-", color="C0", label="proxy's hit rate")
    a1.axvline(V / L, color="k", lw=0.8)
    a1.set(ylabel="count lens", ylim=(-0.05, 1.25),
           title=f"V = {V}: ξ ÷ control's {kap[V - L]:.2f}, hit rate {hit[V - L]:.2f}")
    a1.legend(loc="upper right", frameon=False, ncols=2)
    styles = (("contrast", 1.0, "C3", "-"), ("proxy", 1.0, "C0", ":"),
              ("proxy + end step", 1.0, "C0", "-"), ("proxy + end step", 0.0, "C2", "-"))
    for lens, e, col, ls in styles:
        r = [predict(lens, lens_at[v], L, e, refs) for v in Vs]
        lab = lens + ("" if lens != "proxy + end step" else
                      (", end token" if e else ", none"))
        a2.plot(Vs / L, r, ls, color=col, label=lab)
    for c in conds:
        if (c.length == L and c.model == "LSTM" and not c.notes and c.min_length is None
                and c.attention == "learned" and not c.target_permutation
                and c.distribution in ("permutation", "distinct") and c.budget == BUDGET
                and c.end in ("both", "none") and c.family in ("sweep", "held out")):
            lo, hi = wilson_interval(c.k, c.n)
            col = "C2" if c.end == "none" else "C0"
            x = c.vocab / L + (0.01 if c.end == "none" else -0.01)
            a2.plot([x, x], [lo, hi], color=col, lw=0.8)
            a2.plot([x], [c.rate], "s" if c.family == "held out" else "o", ms=5,
                    mec=col, mfc="none" if c.end == "none" else col)
    a2.axvline(V / L, color="k", lw=0.8)
    a2.set(xlabel="vocabulary ratio V/L", ylabel="success rate by step 300",
           ylim=(-0.05, 1.05))
    a2.legend(loc="lower right", frameon=False)
    return fig
