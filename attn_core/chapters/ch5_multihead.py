"""Chapter 5 -- the multi-head rescue (SZKS §5.2, Fig. 2 right).

Every model shares one base initialisation (embedding, encoder, decoder, output layer) and
differs only in its attention heads. A screen trains many one-head models (one candidate head
each) on a few data streams and labels each head good or bad; K-head models built from those
heads -- all bad, one good plus bad ones, or K fresh random heads -- then show that a good head
rescues the others and that K random heads succeed more often than one; their success rate is
consistent with 1 − (1 − p̂)^K, which five runs per K cannot test. The statistics
(:func:`head_rate`, :func:`rate_difference`, :func:`verdict_agreement`) count heads, not
runs, where a head's runs are not independent; :func:`rescue_findings` reads every number
the chapter's findings test, at the end of training or at step 0 (untrained).

:class:`HeadsRun` is one batch of such models (an :class:`Experiment`);
:class:`RescueConfig` holds the chapter's protocol and builds every run of it: both live in
the chapter's part :mod:`attn_core.chapters.ch5_runs`, re-exported here.
:class:`MultiHeadLuong` is the chapter's model written out as its equations, one model with
no member stacking, for reading; :func:`readable_model` copies member m of the engine's
stacked :class:`~attn_core.models.Seq2Seq` into it (the tests check that both compute the
same logits and attention).
"""

from __future__ import annotations

from collections.abc import Iterable

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn

from .. import plotting
from ..checks import (check_bool_array, check_choice, check_dim, check_fraction_array,
                      check_int, check_real, check_token_batches)
from ..metrics import (classify_heads, fisher_exact, rate_difference, success_rate,
                       verdict_repeat, wilson_rate_interval)
from ..models import HEAD_REDUCTIONS, Seq2Seq
from . import ch5_runs
# the chapter's runs, re-exported (every name of ch5_runs.__all__)
from .ch5_runs import (HeadsRun, head_probe, RescueConfig, RESCUE, head_combinations,
                       COMBINATION_KINDS, other_bases_fast, stored_configs,
                       screen_configs, combination_configs, random_heads_alone,
                       random_heads_alone_runs, OTHER_BASES_FILE, RANDOM_HEADS_ALONE_FILE)

__all__ = [*ch5_runs.__all__, "MultiHeadLuong", "readable_model", "head_rate",
           "rate_difference", "rescue_prediction", "verdict_agreement", "repeat_rates",
           "diagonal_heads", "diagonal_counts", "rescue_findings",
           "DIAGONAL_SUCCEEDS_MIN", "model_diagram", "rescue_curve", "rescue_fit",
           "draw_rescue", "show_rescue", "RESCUE_SLIDER", "labels_at", "draw_labels_at",
           "BAD_SLIDER"]


# ------------------------------------------------------------------ the model, readable
class MultiHeadLuong(nn.Module):
    """The chapter's K-head seq2seq, one model, line by line as its equations (§1).

    GRU encoder and decoder share one embedding; head k scores with W_k and
    projects its context with P_k (no biases, no EOS token); ``reduce`` averages
    ("mean") or sums the projected contexts. Weights start at zero: build it with
    :func:`readable_model`.
    """

    def __init__(self, vocab: int, embed: int, hidden: int, heads: int,
                 reduce: str = "mean"):
        super().__init__()
        for name, value in (("vocab", vocab), ("embed", embed), ("hidden", hidden),
                            ("heads", heads)):
            check_dim(name, value)
        self.reduce = check_choice("reduce", reduce, HEAD_REDUCTIONS)
        self.emb = nn.Embedding(vocab, embed)              # shared by source and target
        self.encoder = nn.GRU(embed, hidden, batch_first=True)
        self.decoder = nn.GRU(embed, hidden, batch_first=True)
        self.W = nn.Parameter(torch.zeros(heads, hidden, hidden))  # W_k: scores
        self.P = nn.Parameter(torch.zeros(heads, hidden, hidden))  # P_k: projection
        self.combine = nn.Linear(2 * hidden, hidden)       # W_c, b_c
        self.out = nn.Linear(hidden, vocab)                # W_o, b_o

    def attend(self, s, h):
        """Decoder states s (B, T, H), encoder states h (B, L, H) -> the context
        c (B, T, H) and every head's attention alpha (K, B, T, L)."""
        scores = torch.einsum("btg,kgh,blh->kbtl", s, self.W, h)  # s_tᵀ W_k h_l
        alpha = torch.softmax(scores, dim=-1)              # over source positions l
        c_k = alpha @ h                                    # c^k_t = Σ_l α^k_tl h_l
        pc_k = c_k @ self.P.transpose(1, 2).unsqueeze(1)   # P_k c^k_t: (K, B, T, H)
        c = pc_k.mean(0) if self.reduce == "mean" else pc_k.sum(0)
        return c, alpha

    def forward(self, src, tgt_in):
        """src (B, L), tgt_in (B, T) token ids -> logits (B, T, V),
        alpha (K, B, T, L)."""
        check_token_batches(src, tgt_in, self.emb.num_embeddings)   # ids in [0, V)
        h, last = self.encoder(self.emb(src))              # h_1 .. h_L
        s, _ = self.decoder(self.emb(tgt_in), last)      # s_t, from the encoder's state
        c, alpha = self.attend(s, h)
        # tanh(W_c [s_t; c_t] + b_c), then p_t = softmax(W_o · + b_o)
        o = torch.tanh(self.combine(torch.cat([s, c], dim=-1)))
        return {"logits": self.out(o), "alpha": alpha}


def readable_model(model: Seq2Seq, m: int = 0) -> MultiHeadLuong:
    """Member ``m`` of the engine's stacked :class:`~attn_core.models.Seq2Seq` as a
    :class:`MultiHeadLuong` with the same weights (a copy). The engine model must be the
    chapter's kind: GRU cells, a shared embedding, learned attention and no head biases;
    without ``head_proj`` every P_k is the identity."""
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be a Seq2Seq; got {type(model).__name__}")
    m = check_int("m", m, 0, model.n_members - 1)
    unlike = {"cell": (model.cell, "gru"), "attention": (model.attention, "learned"),
              "shared_embedding": (model.shared_embedding, True),
              "bias": (model.score_bias is not None, False)}
    for name, (got, want) in unlike.items():
        if got != want:
            raise ValueError(f"model must have {name}={want!r} (chapter 5's model); got "
                             f"{name}={got!r}")
    H, K = model.hidden, model.heads
    out = MultiHeadLuong(model.vocab, model.embed, H, K, model.head_reduce)
    proj = (torch.eye(H).expand(K, H, H) if model.head_proj is None else model.head_proj[m])
    tensors = {"emb.weight": model.emb.weight, "W": model.score, "combine.weight":
               model.combine.weight, "combine.bias": model.combine.bias,
               "out.weight": model.out.weight, "out.bias": model.out.bias}
    for rnn in ("encoder", "decoder"):
        engine = getattr(model, rnn)
        for mine, theirs in (("weight_ih_l0", "w_ih"), ("weight_hh_l0", "w_hh"),
                             ("bias_ih_l0", "b_ih"), ("bias_hh_l0", "b_hh")):
            tensors[f"{rnn}.{mine}"] = getattr(engine, theirs)
    state = {k: v.detach()[m].clone() for k, v in tensors.items()}
    state["P"] = proj.detach().clone()
    out.load_state_dict(state)
    return out


# ------------------------------------------------------------------------- the statistics
def head_rate(final_acc, good: float) -> tuple[float, float, float]:
    """``(p̂, low, high)``: how often a random head succeeds alone, with **heads as the unit**.

    ``final_acc`` (heads, data streams). The streams of one head are nearly one draw (at base
    0, 15 of 16 heads give the same verdict on both), so they are not independent runs: each
    head contributes the fraction of its streams on which it ends above ``good``, p̂ is the
    mean over heads, and the 95 % Wilson interval is taken over the number of heads, not the
    number of runs (an untrained screen: p̂ = 0)."""
    acc = check_fraction_array("final_acc", final_acc)
    good = check_real("good", good, 0.0, 1.0)
    if acc.ndim != 2 or not acc.size:
        raise ValueError(f"final_acc must be a non-empty (heads, data streams) array; got "
                         f"shape {acc.shape}")
    rate = float((acc > good).mean(1).mean())
    return (rate, *wilson_rate_interval(rate, acc.shape[0]))


def rescue_prediction(rate, k: int) -> tuple[float, float, float]:
    """``1 − (1 − p)^K`` for the rate ``(p, low, high)``, with the interval carried through
    (the map is increasing in p, so the ends map to the ends)."""
    k = check_int("k", k)
    if isinstance(rate, (str, bytes)) or not isinstance(rate, (tuple, list)) or len(rate) != 3:
        raise TypeError(f"rate must be a (p, low, high) triple (head_rate); got {rate!r:.60}")
    rate = check_fraction_array("rate", list(rate), 1)
    return tuple(float(rescue_curve(p, [k])[0]) for p in rate)


def verdict_agreement(final_acc, good: float) -> dict:
    """Does a head's success on its first data stream predict its success on the others?
    With **heads as the unit** (the test the repeat rate cannot be: an untrained screen fails
    every head on every stream, and then every verdict repeats).

    For the first stream against each other stream: Cohen's kappa of "ends above ``good``"
    (agreement beyond what the two streams' success rates give by chance; 0 when a stream has
    no success, or all succeed: the verdicts then carry no information about the head) and
    the one-sided Fisher exact p-value of the 2x2 table of heads. Returns the smallest kappa, the
    largest p and the first table ``[[good, good then not], [not then good, neither]]``."""
    acc = check_fraction_array("final_acc", final_acc)
    good = check_real("good", good, 0.0, 1.0)
    if acc.ndim != 2 or acc.shape[0] == 0 or acc.shape[1] < 2:
        raise ValueError(f"final_acc must be a (heads, data streams >= 2) array; got shape "
                         f"{acc.shape}")
    ok = acc > good
    kappas, ps, tables = [], [], []
    for j in range(1, ok.shape[1]):
        x, y = ok[:, 0], ok[:, j]
        table = [[int((x & y).sum()), int((x & ~y).sum())],
                 [int((~x & y).sum()), int((~x & ~y).sum())]]
        observed = float((x == y).mean())
        chance = float(x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean()))
        kappas.append(0.0 if chance == 1 else (observed - chance) / (1 - chance))
        (a, b), (c, d) = table  # first stream good: a of a + b good again; else c of c + d
        ps.append(fisher_exact(a, a + b, c, c + d, alternative="greater"))
        tables.append(table)
    return {"kappa": min(kappas), "p": max(ps), "table": tables[0]}


def repeat_rates(final_acc, good: float, bad: float, n_tokens: int) -> dict:
    """The verdict repeat of :func:`~attn_core.metrics.verdict_repeat` as counts: each
    threshold's noise band taken at *that* threshold (``3 sqrt(q (1 − q) / n_tokens)``, q =
    ``good`` for good heads, ``bad`` for bad ones). Returns ``decided``, ``repeat`` (strict),
    ``within_noise``, ``flips`` (counts) and the two bands ``tol_good``, ``tol_bad``."""
    r = verdict_repeat(final_acc, good, bad, n_tokens)
    return {"decided": r["decided"], "repeat": r["repeat"],
            "within_noise": r["within_noise_count"], "flips": r["flips"],
            "tol_good": r["tol_good"], "tol_bad": r["tol_bad"]}


def diagonal_heads(head_attn_acc, upto: int, level: float = 0.5) -> np.ndarray:
    """Which heads have passed attention accuracy ``level`` by evaluation ``upto`` (an index
    of the evaluations, ``-1`` the last): ``(runs, K)`` bool from the ``head_attn_acc`` probe
    ``(runs, evaluations, K)``."""
    acc = check_fraction_array("head_attn_acc", head_attn_acc, 3)
    if not acc.shape[1]:
        raise ValueError("head_attn_acc must hold at least one evaluation")
    upto = check_int("upto", upto, -acc.shape[1], acc.shape[1] - 1) % acc.shape[1]
    level = check_real("level", level, 0.0, 1.0)
    return (acc[:, :upto + 1] > level).any(1)


def diagonal_counts(outcomes) -> dict:
    """Success against a diagonal head, counted over groups of K-head runs: ``outcomes`` is
    an iterable of ``(won, diag)`` pairs, each two 1-D bool arrays of one length (a run
    succeeded; one of its heads turned diagonal, :func:`diagonal_heads`). Returns
    ``diagonal_iff_success`` (runs, runs where the two agree, successes),
    ``success_has_diagonal`` (successes, of them with a diagonal head) and
    ``diagonal_succeeds`` (runs with a diagonal head, of them successful)."""
    if isinstance(outcomes, (str, bytes, dict)) or not hasattr(outcomes, "__iter__"):
        raise TypeError(f"outcomes must be an iterable of (won, diag) pairs; got "
                        f"{type(outcomes).__name__}")
    total = matches = won_n = diag_n = both = 0
    for i, pair in enumerate(outcomes):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"outcomes must hold (won, diag) pairs; entry {i} is "
                            f"{type(pair).__name__}")
        won = check_bool_array(f"outcomes[{i}] won", pair[0])
        diag = check_bool_array(f"outcomes[{i}] diag", pair[1], tuple(won.shape))
        if won.ndim != 1:
            raise ValueError(f"outcomes[{i}] must be 1-D (one entry a run); got shape "
                             f"{tuple(won.shape)}")
        total += won.numel()
        matches += int((won == diag).sum())
        won_n += int(won.sum())
        diag_n += int(diag.sum())
        both += int((won & diag).sum())
    return {"diagonal_iff_success": (total, matches, won_n),
            "success_has_diagonal": (won_n, both), "diagonal_succeeds": (diag_n, both)}


#: The dyn claim "a run with a diagonal head succeeds": the fraction of K-head runs with a
#: head past attention accuracy 0.5 that also succeed, at least this. Fast mode: every one
#: (the claim as first stated). Full mode: 0.95, **set after** the papers'-scale runs of
#: ``benchmarks/full_ch5``, where 93 of 94 such runs succeed; the exception is
#: an all-bad run whose head turned late and was still climbing at the step budget
#: (token accuracy 0.38, 0.52, 0.79 at steps 120, 160, 200). Its converse, every success
#: has a diagonal head, is checked strictly in both modes (93 of 93 there).
DIAGONAL_SUCCEEDS_MIN = {"fast": 1.0, "full": 0.95}


def rescue_findings(cfg: "RescueConfig", screen: dict, combo_runs: dict, random_runs: dict,
                    at: int = -1) -> dict:
    """Every number the chapter's findings test, read at evaluation ``at`` of the histories
    (``-1``: the end of training; ``0``: step 0, the untrained models, which must fail every
    finding). ``screen`` ``{stream: History}`` (one-head models), ``combo_runs`` ``{kind:
    History}`` of the K-head combinations (the kinds of :data:`COMBINATION_KINDS`) and
    ``random_runs`` ``{K: History}`` of random heads, all evaluated at the same steps.

    Keys: ``agreement`` (:func:`verdict_agreement`), ``split`` (a good head and K bad ones),
    ``p1`` (:func:`head_rate`), ``rates`` ``{kind: (rate, low, high)}``, ``rescue`` (one good
    − all bad) and ``more_heads`` (largest K − one head) as :func:`rate_difference` triples,
    ``good_head_diagonal`` (successful one-good runs, and how many of them have their good
    head, head 0, past attention accuracy 0.5), and :func:`diagonal_counts`'s three over
    every K-head run (a head past 0.5 against success)."""
    if not isinstance(cfg, RescueConfig):
        raise TypeError(f"cfg must be a RescueConfig; got {type(cfg).__name__}")
    for name, runs in (("screen", screen), ("combo_runs", combo_runs),
                       ("random_runs", random_runs)):
        if not isinstance(runs, dict) or not runs:
            raise TypeError(f"{name} must be a non-empty dict of Histories; got "
                            f"{type(runs).__name__} {runs!r:.40}")
    missing = [d for d in cfg.data_seeds if d not in screen]
    if missing:
        raise ValueError(f"screen must hold a History for every data stream of cfg "
                         f"{list(cfg.data_seeds)}; it lacks {missing}")
    final = np.stack([screen[d].metrics["token_acc"][:, at] for d in cfg.data_seeds], 1)
    labels = classify_heads(final, cfg.good, cfg.bad)
    p1 = head_rate(final, cfg.good)
    ok = {kind: h.metrics["token_acc"][:, at] > cfg.good for kind, h in combo_runs.items()}
    rates = {kind: success_rate(v) for kind, v in ok.items()}
    k_max = max(random_runs)
    rates[f"random K={k_max}"] = success_rate(
        random_runs[k_max].metrics["token_acc"][:, at] > cfg.good)
    one_good = combo_runs["one good"]
    won = ok["one good"]
    good_diag = diagonal_heads(one_good.probes["head_attn_acc"], at)[won, 0]
    runs = list(combo_runs.values()) + [h for k, h in random_runs.items()
                                        if all(h is not c for c in combo_runs.values())]
    counts = diagonal_counts((h.metrics["token_acc"][:, at] > cfg.good,
                              diagonal_heads(h.probes["head_attn_acc"], at).any(1))
                             for h in runs)
    return {"agreement": verdict_agreement(final, cfg.good),
            "split": cfg.enough_heads(labels),
            "p1": p1, "rates": rates,
            "rescue": rate_difference(rates["one good"], rates["all bad"]),
            "more_heads": rate_difference(rates[f"random K={k_max}"], p1),
            "good_head_diagonal": (int(won.sum()), int(good_diag.sum())), **counts}


# ------------------------------------------------------------------------ the model diagram
#: The boxes of :func:`model_diagram`: (x, y, label, kind) in the unit square.
_DIAGRAM_BOXES = {
    "src": (0.2, 0.05, "source $x_1, \\ldots, x_L$", "input"),
    "tgt": (0.8, 0.05, "output so far $y_{<t}$", "input"),
    "enc": (0.2, 0.25, "GRU encoder\n$h_1, \\ldots, h_L$", "state"),
    "dec": (0.8, 0.25, "GRU decoder\n$s_t$", "state"),
    "h1": (0.2, 0.47, "head 1\n$W_1,\\ P_1$", "attention"),
    "hk": (0.5, 0.47, "$\\cdots$", "attention"),
    "hK": (0.8, 0.47, "head $K$\n$W_K,\\ P_K$", "attention"),
    "avg": (0.5, 0.665, "$c_t = \\frac{1}{K}\\sum_k P_k\\, c^k_t$", "attention"),
    "mix": (0.5, 0.815, "$\\tanh(W_c [s_t;\\, c_t] + b_c)$", "state"),
    "out": (0.5, 0.94, "$p_t = \\mathrm{softmax}(W_o \\cdot + b_o)$", "output"),
}
_DIAGRAM_ARROWS = (("src", "enc"), ("tgt", "dec"), ("enc", "dec"),
                   ("enc", "h1"), ("dec", "h1"), ("enc", "hK"), ("dec", "hK"),
                   ("h1", "avg"), ("hK", "avg"), ("avg", "mix"), ("mix", "out"))


def model_diagram() -> Figure:
    """The chapter's model (§1, :class:`MultiHeadLuong`) as a block diagram: a GRU
    encoder-decoder sharing one embedding; K Luong heads, head k with its own score matrix
    W_k and projection P_k, each reading the decoder state s_t and every encoder state h_l;
    their projected contexts averaged into c_t, which the output layer reads with s_t."""
    return plotting.block_diagram(_DIAGRAM_BOXES, _DIAGRAM_ARROWS, size=(4.6, 5.0),
                                  title="$K$ heads over the same encoder states")


# ------------------------------------------------- the rescue slider (§4) and Exercise 5.2's
#: The one-head rates p of §4's pre-drawn rescue slider (0.05 to 0.95).
RESCUE_SLIDER = tuple(round(0.05 * i, 2) for i in range(1, 20))


def _check_measured(measured) -> dict:
    """``{K: (rate, low, high)}`` sorted by K, every number in [0, 1], low <= rate <= high."""
    if not isinstance(measured, dict) or not measured:
        raise TypeError(f"measured must be a non-empty dict {{K: (rate, low, high)}}; got "
                        f"{type(measured).__name__} {measured!r}"[:200])
    out = {}
    for k, r in measured.items():
        k = check_int("measured's keys (K)", k)
        if not isinstance(r, (tuple, list)) or len(r) != 3:
            raise TypeError(f"measured[{k}] must be a (rate, low, high) triple; got {r!r}")
        rate, lo, hi = (check_real(f"measured[{k}]", v, 0.0, 1.0) for v in r)
        if not lo <= rate <= hi:
            raise ValueError(f"measured[{k}] must satisfy low <= rate <= high; got "
                             f"({rate}, {lo}, {hi})")
        out[k] = (rate, lo, hi)
    return dict(sorted(out.items()))


def rescue_curve(p, ks) -> np.ndarray:
    """``1 − (1 − p)^K`` for every K of ``ks``: the chance that at least one of K heads is
    good, when each is good on its own with probability ``p`` (in [0, 1]) independently of
    the others. (len(ks),) float."""
    p = check_real("p", p, 0.0, 1.0)
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Iterable):
        raise TypeError(f"ks must be a sequence of head counts; got {type(ks).__name__}")
    ks = np.array([check_int(f"ks[{i}]", k) for i, k in enumerate(ks)], dtype=float)
    if not ks.size:
        raise ValueError("ks must hold at least one head count")
    return 1.0 - (1.0 - p) ** ks


def rescue_fit(p, measured) -> dict:
    """What §4's rescue slider shows at the one-head rate ``p``: for every K of
    ``measured`` (``{K: (rate, low, high)}``, a measured success rate and its 95 %
    interval), the prediction ``1 − (1 − p)^K`` and whether it lies in that interval.

    Returns ``ks``, ``predicted``, ``rate``, ``low``, ``high`` (arrays in K order),
    ``inside`` (bool array), ``n_inside`` and ``p_range``: the p for which the prediction
    lies in *every* interval, ``(low, high)`` from the inverse ``p = 1 − (1 − r)^(1/K)`` of
    each interval's ends, or None when no p fits them all."""
    m = _check_measured(measured)
    ks = list(m)
    pred = rescue_curve(p, ks)
    rate, lo, hi = (np.array([m[k][j] for k in ks]) for j in range(3))
    inside = (pred >= lo - 1e-12) & (pred <= hi + 1e-12)
    inv = [(1 - (1 - m[k][1]) ** (1 / k), 1 - (1 - m[k][2]) ** (1 / k)) for k in ks]
    p_lo, p_hi = max(a for a, _ in inv), min(b for _, b in inv)
    return {"ks": np.array(ks), "predicted": pred, "rate": rate, "low": lo, "high": hi,
            "inside": inside, "n_inside": int(inside.sum()),
            "p_range": (float(p_lo), float(p_hi)) if p_lo <= p_hi else None}


def draw_rescue(p, measured) -> Figure:
    """The rescue slider's frame (:func:`rescue_fit`): the measured success rates with their
    95 % intervals against ``1 − (1 − p)^K`` at K = 1 to the largest measured K, and how
    many intervals the prediction meets. Measured on this project's 2-core CPU: 0.01 s to
    draw, 0.16 s with its PNG (at most 0.3 s), per call."""
    f = rescue_fit(p, measured)
    ks = f["ks"]
    k_all = np.arange(1, ks.max() + 1)
    fig, ax = plt.subplots(figsize=(4.6, 3.9))
    ax.errorbar(ks, f["rate"], yerr=[f["rate"] - f["low"], f["high"] - f["rate"]], fmt="o",
                capsize=5, color="C0", label="measured (95% CI)")
    ax.plot(k_all, rescue_curve(p, k_all), "k--", marker="x", ms=7,
            label=r"$1-(1-p)^K$")
    ax.set(xticks=k_all, xlabel="number of random heads $K$", ylabel="success rate",
           ylim=(-0.03, 1.05),
           title=f"$p$ = {float(p):.2f}: inside {f['n_inside']} of {len(ks)} intervals")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2, frameon=False)
    return fig


def show_rescue(p, measured) -> None:
    """:func:`draw_rescue`, shown (for a live ``interact`` slider, which must show its
    figure rather than return it)."""
    draw_rescue(p, measured)
    plt.show()


#: The bad thresholds of Exercise 5.2's answer slider (the protocol's is 0.6).
BAD_SLIDER = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)

_LABEL_COLORS = {"good": "C0", "bad": "C3", "inconsistent": "C7"}


def labels_at(final_acc, good: float, bad: float) -> dict:
    """Exercise 5.2's answer at the thresholds ``good`` and ``bad``: every head's label
    (:func:`~attn_core.metrics.classify_heads` of the (heads, data streams) ``final_acc``),
    the ``counts`` of each label, and the verdict repeat of
    :func:`~attn_core.metrics.verdict_repeat`: ``decided`` (heads the first stream
    decides) and ``repeat`` (of those, how many get the same verdict strictly on every
    other stream)."""
    labels = classify_heads(final_acc, good, bad)
    r = verdict_repeat(final_acc, good, bad)
    return {"labels": labels,
            "counts": {k: int((labels == k).sum()) for k in _LABEL_COLORS},
            "decided": r["decided"], "repeat": r["repeat"]}


def draw_labels_at(final_acc, good: float, bad: float) -> Figure:
    """Exercise 5.2's answer slider (:func:`labels_at`): every head's final accuracy on each
    data stream (heads sorted by their mean; one dot per stream), coloured by its label at
    these thresholds (dotted lines). Measured on this project's 2-core CPU: 0.02 s to draw,
    0.22 s with its PNG (at most 0.4 s), per call."""
    r = labels_at(final_acc, good, bad)
    acc = np.asarray(final_acc, dtype=float)
    if acc.shape[1] > 5:
        raise ValueError(f"final_acc must have at most 5 data streams (one marker each); got "
                         f"{acc.shape[1]}")
    order = np.argsort(acc.mean(1), kind="stable")
    markers = "os^Dv"[:acc.shape[1]]
    fig, ax = plt.subplots(figsize=(4.6, 4.3))
    for label, color in _LABEL_COLORS.items():
        rows = [i for i, j in enumerate(order) if r["labels"][j] == label]
        for s, marker in enumerate(markers):
            if rows:
                ax.scatter(rows, acc[order[rows], s], s=30, color=color, marker=marker,
                           alpha=0.85)
    # the legend's entries are the same in every frame: labels by colour, streams by shape
    key = [plt.Line2D([], [], ls="", marker="o", color=c, label=t)
           for t, c in _LABEL_COLORS.items()]
    key += [plt.Line2D([], [], ls="", marker=m, mfc="none", mec="k", label=f"stream {s}")
            for s, m in enumerate(markers)]
    ax.axhline(good, color="C0", ls=":", lw=1.2)
    ax.axhline(bad, color="C3", ls=":", lw=1.2)
    c = r["counts"]
    ax.set(xlabel="head (sorted by mean accuracy)", ylabel="final token accuracy",
           ylim=(min(0.4, acc.min() - 0.03), 1.03),
           title=f"bad < {bad:g}: {c['good']} good, {c['bad']} bad, "
                 f"{c['inconsistent']} inconsistent\n"
                 f"verdict repeats: {r['repeat']} of {r['decided']} decided")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.legend(handles=key, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3,
              frameon=False, columnspacing=1.0, handletextpad=0.3)
    return fig
