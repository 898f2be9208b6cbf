"""Measurements taken on models and training histories, in chapter order.

- Chapter 1: :func:`keyword_probe` (attention and output relevance at the keyword of SZKS
  §6.1's task), :func:`first_step` (when a curve crosses a threshold), :func:`wilson_interval`
  and :func:`success_rate` (success rates with their binomial interval).
- Chapter 2: :func:`topic_purity`, :func:`attended_words`, :func:`sen_probe`,
  :func:`eq8_rates`, :func:`rank_correlation`, :func:`t_interval`.
- Chapter 3: :func:`agreement` (SZKS §3.1's A(u, v)), :func:`agreement_by_member`,
  :func:`agreement_baseline` (its chance level Â), :func:`kendall_tau`,
  :func:`alignment_accuracy` (argmax over source positions against a gold alignment),
  :func:`leave_one_out` (the slides' Δ_l).
- Chapter 5: :func:`classify_heads`, :func:`verdict_repeat`, :func:`first_to_diagonal`.
- Stored rows (chapters 6 and 7): :func:`row_successes` (which runs of a row are above a
  level at a step), :func:`outcome_auc` and :func:`auc_null` (how well one number a run
  predicts its outcome, with its permutation null).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from .checks import (check_bool, check_bool_array, check_fractions, check_int, check_int_array,
                     check_real, check_real_array, check_token_ids)

__all__ = ["keyword_probe", "first_step", "holds_from", "wilson_interval", "success_rate",
           "topic_purity", "attended_words", "sen_probe", "eq8_rates", "rank_correlation",
           "rank_correlation_null",
           "t_interval", "wilson_rate_interval", "rate_difference", "newcombe_interval",
           "fisher_exact", "row_successes", "auc_null", "outcome_auc", "classify_heads",
           "verdict_repeat", "first_to_diagonal", "agreement", "agreement_by_member",
           "agreement_baseline", "kendall_tau", "alignment_accuracy", "leave_one_out"]


def _masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean over dims 1.. of ``values`` where ``mask`` (same shape) is true: (S,)."""
    mask = mask.to(values.dtype)
    return (values * mask).flatten(1).sum(1) / mask.flatten(1).sum(1).clamp(min=1)


@torch.no_grad()
def keyword_probe(model, batch: dict[str, Tensor]) -> dict[str, Tensor]:
    """Output relevance and attention around the keyword, on the positive sequences of a batch.

    For an :class:`~attn_core.models.AttentionClassifier` with ``β_l = W h_l`` (the log-odds
    γ_l of SZKS §6.1 when the model attends only to position l) and attention ``p``, with l* the
    keyword's position, returns per member (S,):

    - ``beta_key``: mean β_{l*};  ``beta_other``: mean β_l over l ≠ l*;
    - ``beta_next``: mean β_{l*+1} (sequences whose keyword is not last);
    - ``beta_mean``: mean over l of β_l;  ``beta_last``: mean β_L;
    - ``attn_key``: mean attention p_{l*} on the keyword (1/L under uniform attention).
    """
    _check_batch_keys(batch, ("x", "pos"))
    out = model(batch["x"])
    beta, p, pos = out["beta"], out["p"], batch["pos"]
    S, B, L = beta.shape
    positive = (pos >= 0).unsqueeze(-1).expand(S, B, L)
    l = torch.arange(L, device=beta.device).view(1, 1, L)
    key = (l == pos.unsqueeze(-1)) & positive
    nxt = (l == (pos + 1).unsqueeze(-1)) & positive & (pos < L - 1).unsqueeze(-1)
    last = (l == L - 1) & positive
    return {
        "beta_key": _masked_mean(beta, key),
        "beta_other": _masked_mean(beta, positive & ~key),
        "beta_next": _masked_mean(beta, nxt),
        "beta_mean": _masked_mean(beta, positive),
        "beta_last": _masked_mean(beta, last),
        "attn_key": _masked_mean(p, key),
    }


def _check_batch_keys(batch, keys) -> None:
    if not isinstance(batch, dict):
        raise TypeError(f"batch must be a dict of tensors; got {type(batch).__name__}")
    missing = [k for k in keys if k not in batch]
    if missing:
        raise ValueError(f"batch must hold {list(keys)}; missing {missing} (it has {sorted(batch)})")


def first_step(steps, values, threshold: float, above: bool = True):
    """The first of ``steps`` at which ``values`` is above (or below) ``threshold``.

    ``values`` may be (E,) or (S, E) (NaN entries never cross); returns a float (or an (S,)
    array), NaN where the threshold is never crossed.
    """
    threshold = check_real("threshold", threshold)
    above = check_bool("above", above)
    steps = check_real_array("steps", steps, ndim=1)
    v = check_real_array("values", values, ndim=(1, 2), finite=False)
    v = np.atleast_2d(v)
    if v.shape[-1] != steps.shape[0]:
        raise ValueError(f"values has {v.shape[-1]} points but steps has {steps.shape[0]}")
    hit = v > threshold if above else v < threshold
    out = np.where(hit.any(-1), steps[hit.argmax(-1)], np.nan)
    return out if np.ndim(values) > 1 else float(out[0])


def holds_from(steps, ok):
    """The first of ``steps`` from which ``ok`` (bool, one per step) holds to the end: the
    first step when it holds throughout, None when it does not hold at the last step."""
    shape = check_real_array("steps", steps, ndim=1, allow_empty=False).shape
    ok = check_bool_array("ok", ok, shape).numpy()
    if not ok[-1]:
        return None
    misses = np.flatnonzero(~ok)
    return np.asarray(steps)[misses[-1] + 1 if len(misses) else 0].item()  # steps' own type


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (successes out of n)."""
    n = check_int("n", n, 1)
    successes = check_int("successes (of n)", successes, 0, n)
    return wilson_rate_interval(successes / n, n, confidence)


def wilson_rate_interval(rate: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``rate`` in [0, 1] over ``n`` units. The
    formula is continuous in the rate, so a unit may count a fractional success (chapter 5's
    heads, each the fraction of its data streams on which it succeeds)."""
    n = check_int("n", n, 1)
    rate = check_real("rate", rate)
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be in [0, 1]; got {rate}")
    confidence = check_real("confidence", confidence)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    denom = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denom
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denom
    # the bounds at 0 and n successes are exactly 0 and 1 (the formula's float rounding
    # could leave 1e-17 above the rate, and a plotted error bar would then be negative)
    low = 0.0 if rate == 0 else max(0.0, centre - half)
    high = 1.0 if rate == 1 else min(1.0, centre + half)
    return low, high


def _check_rate_triple(name: str, r) -> tuple[float, float, float]:
    if not isinstance(r, (tuple, list)) or len(r) != 3:
        raise TypeError(f"{name} must be a (rate, low, high) triple; got {r!r:.80}")
    rate, low, high = (check_real(f"{name}[{i}]", v) for i, v in enumerate(r))
    if not 0 <= low <= rate <= high <= 1:
        raise ValueError(f"{name} must be (rate, low, high) with 0 <= low <= rate <= high <= 1; "
                         f"got {r!r}")
    return rate, low, high


def rate_difference(a, b) -> tuple[float, float, float]:
    """``(a − b, low, high)``: the difference of two rates, each ``(rate, low, high)`` with its
    95 % Wilson interval, and the difference's 95 % interval by Newcombe's hybrid score method
    (Newcombe 1998, method 10). An interval above 0 says that ``a`` beats ``b`` beyond the
    sampling noise of both; two equal rates give an interval around 0. Not significant is not
    agreement: the interval says how large a difference the data still allow."""
    (pa, la, ua), (pb, lb, ub) = _check_rate_triple("a", a), _check_rate_triple("b", b)
    d = pa - pb
    return (d, d - math.hypot(pa - la, ub - pb), d + math.hypot(ua - pa, pb - lb))


def newcombe_interval(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """``(k1/n1 − k2/n2, low, high)``: :func:`rate_difference` of two counts of successes."""
    n1, n2 = check_int("n1", n1, 1), check_int("n2", n2, 1)
    k1, k2 = check_int("k1 (of n1)", k1, 0, n1), check_int("k2 (of n2)", k2, 0, n2)
    return rate_difference((k1 / n1, *wilson_interval(k1, n1)),
                           (k2 / n2, *wilson_interval(k2, n2)))


def fisher_exact(k1: int, n1: int, k2: int, n2: int, alternative: str = "two-sided") -> float:
    """Fisher's exact test of ``k1`` successes of ``n1`` against ``k2`` of ``n2``, the margins
    fixed. ``"two-sided"``: the probability of a table no more probable than the one observed
    (R's and SciPy's convention); ``"greater"``: of ``k1`` or more successes in the first
    group (the first group's rate is the larger). An empty group carries no information:
    p = 1."""
    n1, n2 = check_int("n1", n1, 0), check_int("n2", n2, 0)
    k1, k2 = check_int("k1 (of n1)", k1, 0, n1), check_int("k2 (of n2)", k2, 0, n2)
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be 'two-sided' or 'greater'; got {alternative!r}")
    k, n = k1 + k2, n1 + n2
    xs = range(max(0, k - n2), min(k, n1) + 1)

    def p(x):  # hypergeometric: x successes in the first group
        return math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n, k)

    if alternative == "greater":
        return min(1.0, sum(p(x) for x in xs if x >= k1))
    observed = p(k1)
    return min(1.0, sum(p(x) for x in xs if p(x) <= observed * (1 + 1e-7)))


def success_rate(ok) -> tuple[float, float, float]:
    """``(rate, low, high)``: the fraction of true entries of the bool array ``ok`` and its 95%
    :func:`wilson_interval`."""
    ok = np.asarray(ok)
    if ok.dtype != bool or ok.ndim != 1 or ok.size == 0:
        raise ValueError(f"ok must be a non-empty 1-D bool array (one entry per run); got "
                         f"dtype {ok.dtype}, shape {ok.shape}")
    k, n = int(ok.sum()), int(ok.size)
    return (k / n, *wilson_interval(k, n))


# --------------------------------------------------------------------------- chapter 2 (LMN)
def row_successes(row, level: float, key: str = "copy_acc", step: int | None = None):
    """The runs of a stored row (:mod:`attn_core.rows`: a dict with ``eval_steps`` and
    ``key`` as (runs, evaluations)) whose ``key`` is above ``level`` at evaluation step
    ``step`` (default: the last): a 1-D bool array, one entry a run. With
    :func:`success_rate` it gives a stored row's success rate and its interval."""
    if not isinstance(row, dict) or key not in row or "eval_steps" not in row:
        raise TypeError(f"row must be a stored row (a dict with eval_steps and {key!r})")
    level = check_real("level", level, 0.0, 1.0)
    steps = list(row["eval_steps"])
    values = check_real_array(f"row[{key!r}]", row[key])
    if values.ndim != 2 or values.shape[1] != len(steps):
        raise ValueError(f"row[{key!r}] must be (runs, evaluations) = (runs, {len(steps)}); "
                         f"got shape {values.shape}")
    if step is None:
        j = len(steps) - 1
    else:
        step = check_int("step", step, 0)
        if step not in steps:
            raise ValueError(f"step must be one of the row's evaluation steps {steps}; got "
                             f"{step}")
        j = steps.index(step)
    return values[:, j] > level


def _check_scores(score, ok, what: str = "score") -> tuple[np.ndarray, np.ndarray]:
    """``score`` as a 1-D float array of finite numbers and ``ok`` as a bool array of its
    shape; TypeError or ValueError naming them otherwise."""
    try:
        score = np.asarray(score, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an array of numbers; got "
                        f"{type(score).__name__}") from None
    if score.ndim != 1 or score.size < 2 or not np.isfinite(score).all():
        raise ValueError(f"{what} must be a 1-D array of at least 2 finite numbers; got "
                         f"shape {score.shape}")
    ok = np.asarray(ok)
    if ok.dtype != bool:
        raise TypeError(f"ok must be a bool array; got dtype {ok.dtype}")
    if ok.shape != score.shape:
        raise ValueError(f"ok must be a bool array of the {what}'s shape {score.shape}; got "
                         f"{ok.shape}")
    return score, ok


def auc_null(score, ok, shuffles: int, rng, what: str = "score",
             permutations=None) -> tuple[float, np.ndarray]:
    """The AUC of ``score`` for the outcomes ``ok`` (both kinds present: P(a run with ``ok``
    scores above one without, ties counted half; the Mann-Whitney form) and its
    ``shuffles`` values under random reassignments of the outcomes drawn from ``rng`` (a
    :class:`numpy.random.Generator`): the AUC and its permutation null. ``permutations``
    ((shuffles, runs) indices, each row a permutation) gives the reassignments instead:
    the same ones for several conditions that share their runs' seeds (a joint null)."""
    score, ok = _check_scores(score, ok, what)
    if ok.all() or not ok.any():
        raise ValueError("ok must hold runs that succeed and runs that fail: the AUC "
                         "compares the two")
    shuffles = check_int("shuffles", shuffles, 1, 10 ** 7)   # (shuffles, runs) in memory
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    ranks = _average_ranks(score)
    n_pos, n_neg = int(ok.sum()), int((~ok).sum())

    def auc(labels):
        return (labels @ ranks - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)

    if permutations is None:
        null = auc(rng.permuted(np.tile(ok.astype(float), (shuffles, 1)), axis=1))
    else:
        perm = np.asarray(permutations)
        if perm.shape != (shuffles, ok.size) or perm.dtype.kind not in "iu" or not (
                np.sort(perm, axis=1) == np.arange(ok.size)).all():
            raise ValueError(f"permutations must be ({shuffles}, {ok.size}) indices, each "
                             f"row a permutation of the runs; got shape {perm.shape}")
        null = auc(ok.astype(float)[perm])
    return float(auc(ok.astype(float))), null


def outcome_auc(score, ok, shuffles: int = 20000, seed: int = 0) -> tuple[float, float]:
    """How well ``score`` (one number a run) separates the runs that succeed (``ok`` True)
    from those that fail: the area under the ROC curve (:func:`auc_null`) and its
    permutation p-value (``shuffles`` random reassignments of the outcomes, seeded by
    ``seed``; two-sided: (1 + the shuffles at least as far from 0.5) / (1 + ``shuffles``),
    never 0)."""
    seed = check_int("seed", seed, 0)
    a, null = auc_null(score, ok, shuffles, np.random.default_rng(seed))
    p = float((1 + (np.abs(null - 0.5) >= abs(a - 0.5) - 1e-12).sum()) / (1 + len(null)))
    return a, p


def topic_purity(x, y, vocab: int, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Topic purity δ(w) = |δ⁺(w) − δ⁻(w)| of every word (LMN §5), and its occurrence.

    δ⁺(w), δ⁻(w): the fractions of positive (label 1) and negative (label 0) sentences among the
    sentences containing w. δ = 1: a pure topic word; δ = 0: no topic information. ``x`` (N, L)
    word ids, ``y`` (N,) binary labels, optional ``mask`` (N, L) of real (non-padding) words.
    Returns ``purity`` (vocab,) -- NaN for words in no sentence -- and ``occurrence`` (vocab,),
    the number of sentences containing each word.
    """
    x = torch.from_numpy(check_int_array("x (word ids)", x, 0, ndim=2))
    y = torch.from_numpy(check_int_array("y (labels)", y, None, ndim=1))
    if x.dim() != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"x must be (N, L) and y (N,); got {tuple(x.shape)} and {tuple(y.shape)}")
    if not torch.all((y == 0) | (y == 1)):
        raise ValueError("y must hold binary labels 0/1 (topic purity is defined for two classes)")
    vocab = check_int("vocab", vocab, 1)
    if int(x.max()) >= vocab:
        raise ValueError(f"vocab must be an int > every word id in x (max {int(x.max())}); got {vocab!r}")
    present = torch.zeros(x.shape[0], vocab, dtype=torch.bool)
    keep = (torch.ones_like(x, dtype=torch.bool) if mask is None
            else check_bool_array("mask", mask, tuple(x.shape)))
    rows = torch.arange(x.shape[0]).unsqueeze(1).expand_as(x)
    present[rows[keep], x[keep]] = True
    occ = present.sum(0).double()
    pos = (present & (y == 1).unsqueeze(1)).sum(0).double()
    with np.errstate(invalid="ignore", divide="ignore"):
        purity = np.abs(2 * pos.numpy() - occ.numpy()) / occ.numpy()
    return purity, occ.numpy()


def attended_words(model, x, mask=None) -> Tensor:
    """The word each sentence attends to most (the largest score; LMN Fig. 6-7): (S, N) ids.

    Ties (e.g. every score still 0) go to the first position, which is a uniformly random word
    of the sentence for shuffled bags (the paper picks one at random).

    ``x``: (N, L) or (S, N, L) word ids; ``mask`` (optional) a bool tensor of the same shape (or
    (N, L)), false at padding."""
    s = model.scores()
    S, V = s.shape
    if not isinstance(x, Tensor):
        x = torch.from_numpy(check_int_array("x", x, None))
    check_token_ids("x", x, V)
    if x.dim() == 2:
        x = x.unsqueeze(0).expand(S, -1, -1)
    if x.dim() != 3 or x.shape[0] != S or x.shape[2] < 1:
        raise ValueError(f"x must be an (N, L) or (S={S}, N, L) tensor of word ids; got shape "
                         f"{tuple(x.shape)}")
    x = x.long()
    s_x = torch.gather(s, 1, x.reshape(S, -1)).view_as(x)
    if mask is not None:
        mask = check_bool_array("mask", mask)
        if mask.shape not in (x.shape, x.shape[1:]):
            raise ValueError(f"mask must have x's shape {tuple(x.shape[1:])} or "
                             f"{tuple(x.shape)}; got {tuple(mask.shape)}")
        s_x = s_x.masked_fill(~mask.expand_as(s_x), float("-inf"))
    return torch.gather(x, 2, s_x.argmax(-1, keepdim=True)).squeeze(-1)


def sen_probe(words, nontopic=None):
    """A training probe for :class:`~attn_core.models.TopicAttention` on the topic task.

    Records, per member, for the given topic ``words`` (T ids): ``score`` (S, T) = s_w and
    ``norm`` (S, T) = ‖v_w‖ = ‖q‖‖ν_w‖ (LMN Eq. 3); for the ``nontopic`` ids (default: every
    other word) ``nontopic_max_abs_score`` (S,), ``nontopic_norm`` (S,) (mean ‖v_w‖) and for the
    query ``query_norm`` (S,); ``topic_attention`` (S,): the mean attention on the topic word
    over the evaluation batch, and ``topic_argmax`` (S,): the fraction of its sentences whose
    most-attended word is a topic word.
    """
    words = torch.from_numpy(check_int_array("words", words, 0, ndim=1))
    if nontopic is not None:
        nontopic = torch.from_numpy(check_int_array("nontopic", nontopic, 0, ndim=1))

    @torch.no_grad()
    def probe(model, batch):
        s = model.scores()
        _check_word_range("words", words, s.shape[1])
        v = model.sen_embeddings().norm(dim=-1)
        other = torch.ones(s.shape[1], dtype=torch.bool)
        other[words] = False
        if nontopic is not None:
            _check_word_range("nontopic", nontopic, s.shape[1])
            other = torch.zeros_like(other)
            other[nontopic] = True
        p = model(batch["x"], batch.get("mask"))["p"]
        is_topic = torch.isin(batch["x"], words.to(batch["x"].device))
        att = (p * is_topic).sum(-1).mean(-1)
        top = torch.gather(is_topic, 2, p.argmax(-1, keepdim=True)).float().mean((1, 2))
        return {"score": s[:, words], "norm": v[:, words],
                "nontopic_max_abs_score": s[:, other].abs().amax(1),
                "nontopic_norm": v[:, other].mean(1),
                "query_norm": model.query.norm(dim=-1), "topic_attention": att,
                "topic_argmax": top}

    return probe


def _check_word_range(name: str, words: Tensor, vocab: int) -> None:
    if len(words) and int(words.max()) >= vocab:
        raise ValueError(f"{name} must hold word ids in [0, {vocab - 1}] (the model's vocab is "
                         f"{vocab}); got {int(words.max())}")


def eq8_rates(model, batch, words) -> dict[str, Tensor]:
    """The score velocity of each topic word t, exactly and as LMN Lemma 2 / Eq. 8 predicts it.

    Rates per unit of training time τ = lr · step (one step of plain gradient descent with a
    fixed query moves s by lr × rate)::

        exact  = −‖q‖² ∂L/∂s_t
        eq8    = (v_t − ⟨v̄(χ∖t)⟩_{Ψ_t})ᵀ (dv_t/dτ) / ⟨(e^{s_t} + Z(χ∖t)) / Z(χ∖t)⟩_{Ψ_t},
                 dv_t/dτ = −‖q‖ ∂L/∂ν_t

    where Ψ_t are the sentences containing t, v = ‖q‖ν, and Z(χ∖t), v̄(χ∖t) the partition
    function and attention-weighted mean of the sentence without t. Eq. 8's sign says whether
    the score rises: it is positive iff v_t projects more on its own gradient direction than the
    other words of its sentences do (mutual enhancement), negative otherwise (mutual
    diminution). Returns ``exact`` and ``eq8``, each (S, T).
    """
    words = torch.from_numpy(check_int_array("words", words, 0, ndim=1))
    _check_word_range("words", words, model.vocab)
    _check_batch_keys(batch, ("x", "y"))
    x, y = batch["x"], batch["y"]
    check_token_ids("batch['x']", x, model.vocab)
    S = model.n_members
    with torch.enable_grad():
        emb = model.embedding.detach().clone().requires_grad_(True)
        keys = model.keys
        s_all = (keys.detach() * model.query.detach().unsqueeze(1)).sum(-1).requires_grad_(True)
        flat = x + (torch.arange(S, device=x.device) * model.vocab).view(S, 1, 1)
        s_x = s_all.reshape(-1)[flat]
        p = torch.softmax(s_x, -1)
        v_bar = (p.unsqueeze(-1) * emb.reshape(-1, model.dim)[flat]).sum(-2)
        logits = model.classify(v_bar)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(),
                                                 reduction="none").view(S, -1).mean(1)
        g_emb, g_s = torch.autograd.grad(loss.sum(), [emb, s_all])
    with torch.no_grad():
        qn = model.query.norm(dim=-1).view(S, 1)
        exact = -(qn ** 2) * g_s[:, words]
        v = emb * qn.view(S, 1, 1)
        dv = -qn.view(S, 1, 1) * g_emb[:, words]                      # (S, T, d)
        eq8 = torch.empty_like(exact)
        e = torch.exp(s_all)                                          # (S, V)
        for j, t in enumerate(words.tolist()):
            has = (x == t)
            rows = has.any(-1)                                        # (S, N)
            ex = e.gather(1, x.reshape(S, -1)).view_as(x) * (~has)    # weights without t
            z = ex.sum(-1)                                            # Z(χ∖t)
            vb = torch.einsum("snl,snld->snd", ex / z.clamp_min(1e-30).unsqueeze(-1),
                              v.reshape(-1, model.dim)[flat])         # v̄(χ∖t)
            cnt = rows.sum(1).clamp(min=1).unsqueeze(-1)
            ctx = (vb * rows.unsqueeze(-1)).sum(1) / cnt              # ⟨v̄(χ∖t)⟩
            den = (((e[:, t].unsqueeze(1) + z) / z.clamp_min(1e-30)) * rows).sum(1) / cnt.squeeze(-1)
            eq8[:, j] = ((v[:, t] - ctx) * dv[:, j]).sum(-1) / den
    return {"exact": exact, "eq8": eq8}


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n of a 1-D array, ties sharing their average rank."""
    order = np.argsort(a, kind="stable")
    ranks = np.empty(len(a))
    ranks[order] = np.arange(1, len(a) + 1)
    _, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return (sums / counts)[inverse]


def rank_correlation(u, v) -> float:
    """Spearman's rank correlation of two equally long 1-D sequences (ties get average ranks):
    1 when v rises whenever u does. NaN when either sequence is constant (no order to compare:
    e.g. a score that never moves)."""
    a = check_real_array("u", u)
    b = check_real_array("v", v)
    if a.ndim != 1 or a.shape != b.shape or a.size < 2:
        raise ValueError(f"u and v must be 1-D sequences of the same length >= 2; got shapes "
                         f"{a.shape} and {b.shape}")
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float((ra ** 2).sum() * (rb ** 2).sum()))
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


def rank_correlation_null(u, v, perms) -> np.ndarray:
    """:func:`rank_correlation` of ``u`` against ``v`` reordered by each row of ``perms``
    (an (S, n) integer array, each row a permutation of 0..n-1), all at once: the null
    distribution of a permutation test. Reordering ``v`` reorders its ranks and leaves their
    spread, so every correlation is one dot product. NaN throughout when either sequence
    is constant."""
    a = check_real_array("u", u)
    b = check_real_array("v", v)
    if a.ndim != 1 or a.shape != b.shape or a.size < 2:
        raise ValueError(f"u and v must be 1-D sequences of the same length >= 2; got shapes "
                         f"{a.shape} and {b.shape}")
    q = np.asarray(perms)
    if q.ndim != 2 or q.shape[1] != a.size or q.dtype.kind not in "iu":
        raise ValueError(f"perms must be an (S, {a.size}) integer array; got "
                         f"{q.dtype} of shape {q.shape}")
    if not (np.sort(q, axis=1) == np.arange(a.size)).all():
        raise ValueError(f"every row of perms must be a permutation of 0..{a.size - 1}")
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float((ra ** 2).sum() * (rb ** 2).sum()))
    if den == 0:
        return np.full(len(q), np.nan)
    return rb[q] @ ra / den


def t_interval(values, confidence: float = 0.95, axis: int = 0):
    """Mean and Student-t confidence interval over independent runs along ``axis``.

    Returns ``(mean, low, high)``; with a single run the interval is (mean, mean). ``values``
    must be finite (a NaN run would silently make the whole interval NaN).
    """
    a = check_real_array("values", values)
    if a.ndim == 0:
        raise ValueError("values must hold at least one run along axis")
    axis = check_int("axis", axis, -a.ndim, a.ndim - 1)
    if a.shape[axis] < 1:
        raise ValueError("values must hold at least one run along axis")
    confidence = check_real("confidence", confidence)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")
    n = a.shape[axis]
    mean = a.mean(axis)
    if n == 1:
        return mean, mean, mean
    q = _student_t_quantile(0.5 + confidence / 2, n - 1)
    half = q * a.std(axis, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def _student_t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t with ``df`` degrees of freedom (p > 1/2): bisection on the CDF,
    the CDF by Simpson's rule on the density (no SciPy needed)."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))

    def cdf(x):
        xs = np.linspace(0.0, x, 2001)
        f = c * (1 + xs ** 2 / df) ** (-(df + 1) / 2)
        h = x / 2000
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def classify_heads(final_acc, good: float = 0.95, bad: float = 0.6) -> np.ndarray:
    """Label attention-head initialisations from their single-head runs (SZKS §5.2).

    ``final_acc`` is (n_heads, n_data_seeds): the final token accuracy of the one-head model
    with each head, trained on each data seed. A head is ``"good"`` if it ends above ``good``
    on every data seed, ``"bad"`` if it ends below ``bad`` on every one, else
    ``"inconsistent"``. Returns an array of those strings.
    """
    acc = check_fractions("final_acc", final_acc)
    if acc.ndim != 2 or acc.shape[0] == 0 or acc.shape[1] == 0:
        raise ValueError(f"final_acc must be a non-empty (n_heads, n_data_seeds) array; got shape {acc.shape}")
    good, bad = check_real("good", good), check_real("bad", bad)
    if not 0 <= bad < good <= 1:
        raise ValueError(f"thresholds must satisfy 0 <= bad < good <= 1; got bad={bad}, good={good}")
    labels = np.full(acc.shape[0], "inconsistent", dtype=object)
    labels[(acc > good).all(1)] = "good"
    labels[(acc < bad).all(1)] = "bad"
    return labels.astype(str)


def first_to_diagonal(head_attn_acc, steps, level: float = 0.5) -> list:
    """For every head, the first evaluation step at which its attention accuracy exceeds
    ``level`` (None if it never does). ``head_attn_acc`` is one run's (E, K) curve (the
    ``head_attn_acc`` probe of chapter 5), ``steps`` its (E,) evaluation steps."""
    acc = check_fractions("head_attn_acc", head_attn_acc)
    steps = check_int_array("steps", steps, 0, ndim=1)
    level = check_real("level", level)
    if acc.ndim != 2 or acc.shape[0] != steps.shape[0]:
        raise ValueError(f"head_attn_acc must be (E, K) with E = len(steps) = {steps.shape[0]}; "
                         f"got shape {acc.shape}")
    hit = acc > level
    return [int(steps[np.argmax(hit[:, k])]) if hit[:, k].any() else None
            for k in range(acc.shape[1])]


def verdict_repeat(final_acc, good: float = 0.95, bad: float = 0.6, n_tokens: int | None = None) -> dict:
    """Is a head's verdict a property of its initialisation? (SZKS §5.2; chapter 5.)

    ``final_acc`` (n_heads, n_data_seeds) as in :func:`classify_heads`. Each head is judged on
    its first data seed alone; the heads that column decides ("good"/"bad") are checked on the
    other seeds. Returns

    - ``decided``: how many heads the first seed decides;
    - ``strict``: the fraction of those whose verdict is the same on every other seed;
    - ``within_noise``: the same, but a head counts as repeating while it stays within the
      noise band of its threshold: 3 sd of an accuracy measured on ``n_tokens`` held-out
      tokens, ``3 sqrt(q (1 - q) / n_tokens)`` at q = ``good`` for good heads and at q = ``bad``
      for bad ones (no band without ``n_tokens``);
    - ``repeat`` and ``within_noise_count``: the same two as counts of decided heads;
    - ``flips``: how many decided heads land on the *opposite* verdict on some other seed
      (good on one seed, below ``bad`` on another, or the reverse);
    - ``tol_good`` and ``tol_bad``: the two noise bands.
    """
    acc = check_fractions("final_acc", final_acc)
    if acc.ndim != 2 or acc.shape[0] == 0 or acc.shape[1] < 2:
        raise ValueError(f"final_acc must be an (n_heads, n_data_seeds >= 2) array; got shape {acc.shape}")
    if n_tokens is not None:
        n_tokens = check_int("n_tokens (or None)", n_tokens, 1)
    first = classify_heads(acc[:, :1], good, bad)
    decided = first != "inconsistent"
    tol_good, tol_bad = ((0.0, 0.0) if n_tokens is None else
                         (3 * math.sqrt(q * (1 - q) / n_tokens) for q in (good, bad)))
    is_good = (first == "good")[:, None]
    is_bad = (first == "bad")[:, None]
    rest = acc[:, 1:]
    strict = np.where(is_good, rest > good, rest < bad).all(1)
    loose = np.where(is_good, rest > good - tol_good, rest < bad + tol_bad).all(1)
    flips = (is_good & (rest < bad)).any(1) | (is_bad & (rest > good)).any(1)
    n = int(decided.sum())
    return {"decided": n,
            "strict": float(strict[decided].mean()) if n else float("nan"),
            "within_noise": float(loose[decided].mean()) if n else float("nan"),
            "repeat": int(strict[decided].sum()), "within_noise_count": int(loose[decided].sum()),
            "flips": int(flips[decided].sum()), "tol_good": tol_good, "tol_bad": tol_bad}


# --------------------------------------------------------------------------- chapter 3 (SZKS §3.1)
def _check_k(k) -> float:
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)):
        raise TypeError(f"k (the top fraction) must be a number in (0, 1]; got {type(k).__name__}")
    k = float(k)
    if not (math.isfinite(k) and 0.0 < k <= 1.0):
        raise ValueError(f"k (the top fraction) must be in (0, 1]; got {k}")
    return k


def _as_rows(name: str, a) -> np.ndarray:
    a = check_real_array(name, a, finite=False)
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError(f"{name} must have a last axis of positions (L >= 1); got shape {a.shape}")
    if np.isnan(a).any():
        raise ValueError(f"{name} holds NaN")
    return a.reshape(-1, a.shape[-1])


def _top_k_slots(L: int, k: float) -> int:
    """How many ranks r = 0, 1, ... satisfy r < k·L: ceil(k·L), computed with a tolerance so that
    k·L = 3 (e.g. 0.05 × 60 = 3.0000000000000004 in floating point) gives 3, not 4."""
    return max(1, math.ceil(k * L - 1e-9))


def agreement(u, v, k: float = 0.05, reduce: bool = True):
    """SZKS §3.1: the agreement of v with u ::

        A(u, v) = 1[ |{j : v_j > v_{argmax u}}| < k · L ]

    "is the highest-valued position of u among the top k (default 5%) positions of v", averaged
    over all leading entries (sentence pairs × output words). ``u`` and ``v`` are arrays (or
    tensors) of the same shape ``(..., L)``. The integer rounding: the condition is on the
    *number* of positions ranked above, so it admits ceil(k·L) ranks -- for L <= 20 and k = 5% only
    the top one (argmax u must be an argmax of v), for L = 30 the top two. Ties in v count in
    favour (only strictly larger values rank above); ties in u go to the first position.
    Returns the mean (``reduce=True``) or the 0/1 array of shape ``u.shape[:-1]``.
    """
    k = _check_k(k)
    reduce = check_bool("reduce", reduce)
    if np.shape(u) != np.shape(v):
        raise ValueError(f"u and v must have the same shape; got {np.shape(u)} and {np.shape(v)}")
    U, V = _as_rows("u", u), _as_rows("v", v)
    L = U.shape[1]
    top = U.argmax(1)
    above = (V > V[np.arange(len(V)), top][:, None]).sum(1)
    hit = (above < _top_k_slots(L, k)).astype(float)
    return float(hit.mean()) if reduce else hit.reshape(np.shape(u)[:-1])


def agreement_by_member(u, v, k: float = 0.05) -> np.ndarray:
    """:func:`agreement` of each member's ``v`` with its ``u``: ``u`` is (S, ..., L) and ``v``
    either the same shape -- giving (S,) -- or (S, E, ..., L), one v per evaluation -- giving
    (S, E)."""
    u, v = check_real_array("u", u, finite=False), check_real_array("v", v, finite=False)
    if u.ndim < 2:
        raise ValueError(f"u must be an (S, ..., L) array with a member axis; got shape {u.shape}")
    if v.shape == u.shape:
        return np.array([agreement(u[s], v[s], k) for s in range(u.shape[0])])
    if v.ndim == u.ndim + 1 and v.shape[0] == u.shape[0] and v.shape[2:] == u.shape[1:]:
        return np.array([[agreement(u[s], v[s, e], k) for e in range(v.shape[1])]
                         for s in range(u.shape[0])])
    raise ValueError(f"v must have u's shape {u.shape} or (S, E) + u.shape[1:]; got {v.shape}")


def agreement_baseline(v, k: float = 0.05) -> float:
    """The random baseline Â of :func:`agreement`, computed exactly (not simulated).

    If argmax u is a uniformly random position, independent of v, ``A(u, v)`` is the fraction of
    positions j of v with fewer than k·L positions strictly above v_j. Averaged over the rows of
    ``v`` (shape ``(..., L)``), this is Â. For distinct values in a row it is ceil(k·L) / L -- the
    "close to but not exactly 5%" of SZKS §3.1 (1/L for L <= 20, 2/30 for L = 30); ties in v
    raise it. ``v`` may also be an int L (or a sequence of ints, one length per item): then
    distinct values are assumed and Â = mean of ceil(k·L)/L.
    """
    k = _check_k(k)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = [int(v)]
    if isinstance(v, (list, tuple)) and len(v) > 0 and all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
        if min(v) < 1:
            raise ValueError(f"lengths must be >= 1; got {min(v)}")
        return float(np.mean([_top_k_slots(int(L), k) / int(L) for L in v]))
    V = _as_rows("v", v)
    L = V.shape[1]
    above = (V[:, None, :] > V[:, :, None]).sum(2)             # (N, L): positions above each j
    return float((above < _top_k_slots(L, k)).mean())


def kendall_tau(u, v, reduce: bool = True):
    """Kendall's τ_b rank correlation between u and v along the last axis (SZKS A.4, Table 2),
    averaged over the leading entries. τ_b = (n_c - n_d) / sqrt((n_0 - n_u)(n_0 - n_v)) with
    concordant / discordant pair counts n_c, n_d, n_0 = L(L-1)/2 and n_u, n_v the pairs tied in
    u or in v. A row that is constant in u or v has no defined τ: it gives NaN and is left out of
    the mean (``reduce=True``; NaN if every row is constant). O(L²) per row, no SciPy needed.
    """
    reduce = check_bool("reduce", reduce)
    if np.shape(u) != np.shape(v):
        raise ValueError(f"u and v must have the same shape; got {np.shape(u)} and {np.shape(v)}")
    U, V = _as_rows("u", u), _as_rows("v", v)
    L = U.shape[1]
    iu, ju = np.triu_indices(L, 1)
    du = np.sign(U[:, ju] - U[:, iu])
    dv = np.sign(V[:, ju] - V[:, iu])
    n0 = L * (L - 1) / 2
    nu = (du == 0).sum(1)
    nv = (dv == 0).sum(1)
    denom = np.sqrt((n0 - nu) * (n0 - nv))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denom > 0, (du * dv).sum(1) / np.where(denom > 0, denom, 1.0), np.nan)
    if not reduce:
        return tau.reshape(np.shape(u)[:-1])
    return float(np.nanmean(tau)) if np.isfinite(tau).any() else float("nan")


def alignment_accuracy(maps, sources, align) -> dict:
    """How well the argmax over source positions of attention-like maps (α, β, β^px, β^IBM)
    finds the gold alignment.

    ``maps`` (..., B, T, L): one value per target token t and source position l of B sentence
    pairs; ``sources`` (B, L) the source token ids; ``align`` (B, T) the gold source position of
    every target token. With l̂ = argmax_l maps[..., b, t, l] (ties to the first position)::

        position = mean 1[l̂ = align]               word = mean 1[x_l̂ = x_align]
        ceiling  = mean 1[align is the first position holding its word]
        mass     = mean Σ_{l: x_l = x_align} maps_l / Σ_l maps_l

    ``word`` counts any position holding the right source word (repeated words tie in any map
    that depends on x_l alone); ``ceiling`` is then the best ``position`` such a map can score,
    since its argmax goes to the first copy. ``mass`` is the share of each row on the right word
    (for α^IBM: the alignment probability of the right word); NaN unless ``maps`` is >= 0 with
    positive row sums. Returns a dict of floats when ``maps`` is (B, T, L), else of arrays of
    shape ``maps.shape[:-3]`` (``ceiling`` is always a float).
    """
    M = check_real_array("maps", maps)
    x = check_int_array("sources", sources, 0, ndim=2)
    a = check_int_array("align", align, 0, ndim=2)
    if M.ndim < 3:
        raise ValueError(f"maps must be a (..., B, T, L) array; got shape {M.shape}")
    B, T, L = M.shape[-3:]
    if x.shape != (B, L) or a.shape != (B, T):
        raise ValueError(f"sources must be (B, L) = {(B, L)} and align (B, T) = {(B, T)} for maps "
                         f"of shape {M.shape}; got {x.shape} and {a.shape}")
    if a.max() >= L:
        raise ValueError(f"align must hold source positions in [0, {L - 1}]; got {a.max()}")
    rows = np.arange(B)[:, None]
    gold_word = x[rows, a]                                          # (B, T)
    hat = M.argmax(-1)                                              # (..., B, T)
    position = (hat == a).mean((-2, -1))
    word = (x[rows, hat] == gold_word).mean((-2, -1))
    first = (x[:, None, :] == gold_word[:, :, None]).argmax(-1)     # first copy of the word
    ceiling = float((first == a).mean())
    on_word = x[:, None, :] == gold_word[:, :, None]                # (B, T, L)
    tot = M.sum(-1)
    if (M >= 0).all() and (tot > 0).all():
        mass = ((M * on_word).sum(-1) / tot).mean((-2, -1))
    else:
        mass = np.full(M.shape[:-3], np.nan)
    out = {"position": position, "word": word, "ceiling": ceiling, "mass": mass}
    if M.ndim == 3:
        out = {k: float(v) for k, v in out.items()}
    return out


def leave_one_out(model, x: Tensor) -> Tensor:
    """Leave-one-out influence (the slides' Δ_l = y − y_{−l}): the classifier's logit on x minus
    its logit with token l deleted, for every position: (S, B, L)."""
    if not isinstance(x, Tensor) or x.dim() != 3:
        raise ValueError(f"x must be an (S, B, L) tensor of token ids; got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    S, B, L = x.shape
    if L < 2:
        raise ValueError(f"x must have L >= 2 positions (deleting the only token leaves an empty "
                         f"sequence); got shape {tuple(x.shape)}")
    if x.dtype in (torch.bool,) or x.is_floating_point() or x.is_complex():
        raise TypeError(f"x must hold integer token ids; got dtype {x.dtype}")
    keep = ~torch.eye(L, dtype=torch.bool)
    dropped = x.unsqueeze(2).expand(S, B, L, L)[:, :, keep].reshape(S, B * L, L - 1)
    full = model(x)["logit"]                                                # (S, B)
    return full.unsqueeze(-1) - model(dropped)["logit"].view(S, B, L)
