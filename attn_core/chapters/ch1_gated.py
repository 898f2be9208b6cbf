"""Chapter 1 -- the toy gated classifier and the attention LSTM classifier (keyword task).

The toy model's gradient flow lives in :mod:`attn_core.theory` (``gated_*``); this module holds
the chapter's training experiment: the keyword task of SZKS §6.1 learned by the attention LSTM
classifier of the blog (:class:`~attn_core.models.AttentionClassifier`), with learned attention
(G5: relevance separates first, attention follows) and with attention frozen uniform (G6), and
:func:`at_steps`, which reads each seed's probe at that seed's own step (the step its attention
first passes 2/L, say). ``KeywordConfig(bidirectional=True)`` swaps the unidirectional LSTM for
the BiLSTM of SZKS (:class:`BiAttentionClassifier`), for the one-off comparison of §6.
:func:`ce_recovery_gap` measures, on the softmax + cross-entropy toy of §4, how backwards a start
can be and still recover within a given training time.

For the page: :func:`start_curves` and :func:`draw_start` (§2's slider: the attention of both
toys from a start β0, β1 = -β0, p0), :func:`draw_small_gap` (Exercise 1.2's answer as the gap
moves) and :func:`model_diagram` (§5's attention LSTM classifier as boxes and arrows).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..checks import check_choice, check_int, check_real, check_real_array
from ..config import Preset, first_seeds
from ..data import KeywordTask
from ..metrics import keyword_probe
from ..models import ATTENTION_MODES, AttentionClassifier
from ..stacked import StackedRNN, generators
from ..theory import gated_ce_flow, gated_ce_flow_end, gated_flow_closed_form
from ..training import OPTIMIZERS
from ._experiment import Experiment

__all__ = ["KeywordConfig", "KEYWORD_ATTENTION", "KEYWORD_UNIFORM", "BiAttentionClassifier",
           "at_steps", "ce_flow_end", "ce_recovery_gap", "start_curves", "draw_start",
           "START_PRESETS", "start_label", "draw_small_gap", "model_diagram"]


class _BiLSTM(nn.Module):
    """Two one-layer LSTMs, one reading left to right and one right to left; ``h_l`` is their
    two states at position l, concatenated (S, B, L, 2H)."""

    def __init__(self, gens, d_in: int, hidden: int):
        super().__init__()
        self.fwd = StackedRNN(gens, d_in, hidden, "lstm")
        self.bwd = StackedRNN(gens, d_in, hidden, "lstm")

    def forward(self, x):
        f, _ = self.fwd(x)
        b, _ = self.bwd(x.flip(2))
        return torch.cat([f, b.flip(2)], dim=-1), None


class BiAttentionClassifier(AttentionClassifier):
    """:class:`~attn_core.models.AttentionClassifier` with a BiLSTM encoder (SZKS's classifier):
    ``hidden`` units in each direction, so α, W and ``h_l`` have 2·hidden entries."""

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 32, attention: str = "learned",
                 seeds=(0,)):
        super().__init__(vocab, embed, 2 * check_int("hidden", hidden), attention, seeds)
        self.rnn = _BiLSTM(generators(self.seeds), embed, hidden)


@dataclass(frozen=True)
class KeywordConfig(Experiment):
    """The keyword task of SZKS §6.1 with the attention LSTM classifier of the blog.

    Plain minibatch gradient descent is the setting of the blog's gradient-flow argument; Adam
    rescales every parameter's step and blurs the ordering. ``run()`` records
    :func:`~attn_core.metrics.keyword_probe` at every evaluation.
    """

    name = "keyword"

    length: int = 40
    vocab: int = 40
    embed: int = 32
    hidden: int = 32
    attention: str = "learned"
    optimizer: str = "sgd"
    lr: float = 1.0
    batch_size: int = 32
    steps: int = 200
    eval_every: int = 5
    eval_batch_size: int = 256
    seeds: tuple[int, ...] = (0, 1, 2)
    bidirectional: bool = False

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        check_int(f"{cls}.length", self.length, 2)  # KeywordTask's bounds
        check_int(f"{cls}.vocab", self.vocab, 2)
        check_choice(f"{cls}.attention", self.attention, ATTENTION_MODES)
        check_choice(f"{cls}.optimizer", self.optimizer, tuple(OPTIMIZERS))

    def task(self) -> KeywordTask:
        return KeywordTask(self.length, self.vocab)

    def model_fn(self, task):
        cls = BiAttentionClassifier if self.bidirectional else AttentionClassifier
        return functools.partial(cls, vocab=task.model_vocab, embed=self.embed,
                                 hidden=self.hidden, attention=self.attention)

    def probes(self, task) -> list:
        return [keyword_probe]

    def train_kwargs(self) -> dict:
        return dict(steps=self.steps, batch_size=self.batch_size, optimizer=self.optimizer,
                    lr=self.lr, eval_every=self.eval_every, eval_batch_size=self.eval_batch_size)

    def cache_name(self) -> str:
        return f"{self.name}-{self.attention}" + ("-bilstm" if self.bidirectional else "")

    def label(self, task) -> str:
        encoder = ", BiLSTM" if self.bidirectional else ""
        return f"keyword ({self.attention} attention{encoder})"


#: G5 -- learned attention: relevance β separates first, attention follows.
KEYWORD_ATTENTION = Preset(
    fast=KeywordConfig(steps=150),
    full=KeywordConfig(embed=128, hidden=128, steps=400, seeds=tuple(range(10)), lr=0.5),
    smoke=first_seeds(1),   # a smoke run: its first seed, same shapes
)

#: G6 -- attention frozen uniform, trained long: the last state overtakes the keyword's own.
KEYWORD_UNIFORM = Preset(
    fast=KeywordConfig(attention="uniform", steps=600, eval_every=20),
    full=KeywordConfig(attention="uniform", embed=128, hidden=128, steps=4000, eval_every=20,
                       seeds=tuple(range(10)), lr=0.5),
    smoke=first_seeds(1),   # a smoke run: its first seed, same shapes
)


def at_steps(steps, values, at) -> np.ndarray:
    """Each member's value at its own step: ``values[i]`` at the step ``at[i]``.

    ``steps`` (E,) are the evaluation steps, ``values`` (S, E) one curve per member and ``at``
    (S,) one step per member, e.g. from :func:`~attn_core.metrics.first_step`. A NaN in ``at``
    (a threshold never crossed) gives NaN, so that a claim on the result fails instead of
    reading some other step; a finite ``at[i]`` that is not one of ``steps`` is a ValueError.
    """
    steps = check_real_array("steps", steps, ndim=1)
    values, at = _real_or_nan("values", values, 2), _real_or_nan("at", at, 1)
    if values.shape != (at.shape[0], steps.shape[0]):
        raise ValueError(f"values must have shape (len(at), len(steps)) = "
                         f"({at.shape[0]}, {steps.shape[0]}); got {values.shape}")
    out = np.full(at.shape, np.nan)
    for i, a in enumerate(at):
        if np.isnan(a):
            continue
        j = np.flatnonzero(steps == a)
        if j.size == 0:
            raise ValueError(f"at[{i}] = {a:g} is not one of steps")
        out[i] = values[i, j[0]]
    return out


def _real_or_nan(name: str, value, ndim: int) -> np.ndarray:
    """A ``ndim``-D array of real numbers (NaN allowed) as float64."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers; got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array; got shape {arr.shape}")
    return arr.astype(float)


# --------------------------------------------------------------- the cross-entropy toy (§2, §4)
def ce_flow_end(gaps, p0: float = 0.5, t_max: float = 60.0, n_steps: int = 3000) -> np.ndarray:
    """The attention p at τ = ``t_max`` of :func:`attn_core.theory.gated_ce_flow` started from
    β0 = gap/2, β1 = -gap/2 (backwards by ``gap``) and p = ``p0``, for every gap at once.

    The RK4 of ``gated_ce_flow`` on the same vector field (and the same result), run on all the
    gaps together so that a threshold can be bracketed in a fraction of a second
    (:func:`attn_core.theory.gated_ce_flow_end`).
    """
    return gated_ce_flow_end(gaps, p0, t_max, n_steps)


def ce_recovery_gap(p0: float = 0.5, t_max: float = 60.0, high: float = 20.0,
                    n_grid: int = 65, rounds: int = 2) -> float:
    """The smallest backwards gap β0 - β1 from which the cross-entropy toy's attention is still
    below its start ``p0`` at τ = ``t_max`` (it recovers, p(t_max) >= p0, from every smaller
    gap in the grid): the softmax model's counterpart of the unconstrained flow's √2·p0.

    A grid of ``n_grid`` gaps on [0, ``high``] brackets the first gap that stays below, and each
    further round refines the bracket with a new grid; the answer is within
    high / (n_grid - 1)**rounds. The flow uses 50 RK4 steps per unit of τ. NaN if every gap in
    [0, high] recovers.
    """
    p0 = check_real("p0", p0, 0.0, 1.0, low_open=True, high_open=True)
    t_max = check_real("t_max", t_max, 0.0, low_open=True)
    high = check_real("high", high, 0.0, low_open=True)
    n_grid, rounds = check_int("n_grid", n_grid, 3), check_int("rounds", rounds, 1)
    n_steps = max(1, int(round(50 * t_max)))
    lo, hi = 0.0, high
    for _ in range(rounds):
        grid = np.linspace(lo, hi, n_grid)
        stuck = ce_flow_end(grid, p0, t_max, n_steps) < p0
        if not stuck.any():
            return float("nan")
        j = int(np.argmax(stuck))
        if j == 0:  # already stuck at the bracket's low end: the bracket cannot shrink
            return float(grid[0])
        lo, hi = grid[j - 1], grid[j]
    return float(hi)


# ------------------------------------------------------ §2's slider: both toys from one start
#: The starts (β0, p0) of §2's pre-drawn slider, β1 = -β0 (backwards by 2β0 when β0 > 0):
#: first §2's bad start, then ever smaller gaps at p0 = ½, then other initial attentions.
#: None starts with β0 = β1 = 0: the cross-entropy flow from that start is §4's Predict
#: box (is there a plateau?), and a frame drawn here would answer it before it is asked.
START_PRESETS = ((10.0, 0.5), (5.0, 0.5), (2.0, 0.5), (1.0, 0.5), (0.5, 0.5), (-2.0, 0.5),
                 (2.0, 0.9), (5.0, 0.9), (0.5, 0.1))


def _check_start(beta0, p0) -> tuple[float, float]:
    beta0 = check_real("beta0", beta0)
    p0 = check_real("p0", p0, 0.0, 1.0, low_open=True, high_open=True)
    return beta0, p0


def start_label(beta0: float, p0: float) -> str:
    """The slider's text for a start: ``"β0 = 10, p0 = 0.5"``."""
    beta0, p0 = _check_start(beta0, p0)
    return f"β0 = {beta0:g}, p0 = {p0:g}"


def start_curves(beta0: float, p0: float = 0.5, t_flow: float = 1.5, t_ce: float = 30.0,
                 n_steps: int = 1500) -> dict:
    """The attention p(τ) of §1's and §4's toys from one start: β0, β1 = -β0, p(0) = ``p0``.

    A positive ``beta0`` is a backwards start (gap β0 - β1 = 2·β0; §2's bad start is
    β0 = 10). Returns ``tau_flow, p_flow``: the unconstrained flow on [0, ``t_flow``] (its
    closed form, 301 points); ``tau_ce, p_ce``: the softmax + cross-entropy flow on
    [0, ``t_ce``] (:func:`~attn_core.theory.gated_ce_flow`, RK4 with ``n_steps`` steps);
    ``lowest_ce`` and ``end_ce``: its lowest and its last p. Pure; about 60 ms on a laptop
    core (1,500 RK4 steps).
    """
    beta0, p0 = _check_start(beta0, p0)
    t_flow = check_real("t_flow", t_flow, 0.0, low_open=True)
    t_ce = check_real("t_ce", t_ce, 0.0, low_open=True)
    n_steps = check_int("n_steps", n_steps, 1)
    tau = np.linspace(0.0, t_flow, 301)
    flow = gated_flow_closed_form(beta0, -beta0, p0, tau)
    ce = gated_ce_flow(beta0, -beta0, p0, t_max=t_ce, n_steps=n_steps)
    return {"tau_flow": tau, "p_flow": flow["p"], "tau_ce": ce["tau"], "p_ce": ce["p"],
            "lowest_ce": float(ce["p"].min()), "end_ce": float(ce["p"][-1])}


def draw_start(beta0: float, p0: float = 0.5):
    """§2's slider frame: :func:`start_curves` drawn as two stacked panels (the unconstrained
    flow, where p may run to -∞, above; the softmax + cross-entropy flow below), each with
    the start's level p0. About 0.25 s per call on this book's CPU (measured: 0.2-0.3 s,
    the drawing included). Returns the Figure."""
    import matplotlib.pyplot as plt

    c = start_curves(beta0, p0)
    beta0, p0 = _check_start(beta0, p0)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(4.6, 5.2))
    for ax, tau, p, color in ((a1, c["tau_flow"], c["p_flow"], "C1"),
                              (a2, c["tau_ce"], c["p_ce"], "C0")):
        ax.plot(tau, p, color=color, label="$p$")
        ax.axhline(p0, color="grey", lw=0.8, ls=":", label="start $p_0$")
        ax.set(ylabel="$p$", xlim=(0, tau[-1]))
    a1.set(ylim=(-3, 4), xlabel=r"$\tau$", title="unconstrained flow (§1)")
    a2.set(ylim=(0, 1), xlabel=r"training time $\tau$",
           title=r"softmax + cross-entropy, $p = \sigma(a)$ (§4)")
    a1.legend(loc="upper left", ncols=2)
    fig.suptitle(rf"start $\beta_0 = {beta0:g},\ \beta_1 = {-beta0:g},\ p_0 = {p0:g}$")
    return fig


def draw_small_gap(gap: float, lowest: float, p0: float = 0.5, t_max: float = 3.0):
    """Exercise 1.2's answer at one gap: the unconstrained flow's p(τ) from β0 - β1 = ``gap``
    and p(0) = ``p0`` (its closed form), with a dashed line at ``lowest``, the answer's lowest
    p, which the curve should just touch. Returns the Figure (about 0.04 s on this CPU)."""
    import matplotlib.pyplot as plt

    gap = check_real("gap", gap)
    lowest = check_real("lowest", lowest)
    p0 = check_real("p0", p0, 0.0, 1.0, low_open=True, high_open=True)
    t_max = check_real("t_max", t_max, 0.0, low_open=True)
    tau = np.linspace(0.0, t_max, 301)
    p = gated_flow_closed_form(gap / 2, -gap / 2, p0, tau)["p"]
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    ax.plot(tau, p, color="C1", label=r"$p(\tau)$")
    ax.axhline(lowest, color="k", ls="--", lw=1.2, label="lowest $p$ (answer)")
    ax.set(xlabel=r"training time $\tau$", ylabel="$p$", xlim=(0, t_max), ylim=(-0.05, 1.0),
           title=rf"gap $\beta_0 - \beta_1 = {gap:g}$, $p_0 = {p0:g}$")
    ax.legend(loc="upper left")
    return fig


# ------------------------------------------------------------------ §5's model, as a diagram
def model_diagram():
    """§5's attention LSTM classifier (:class:`~attn_core.models.AttentionClassifier`) as
    boxes and arrows: tokens, LSTM states h_l, the attention (scores a_l = qᵀh_l, softmax),
    the output relevance r_l = wᵀh_l, the logit Σ p_l r_l and Pr[positive]. Returns the
    Figure."""
    from ..plotting import block_diagram

    boxes = {
        "x": (0.5, 0.06, r"tokens $x_1, \dots, x_L$", "input"),
        "h": (0.5, 0.27, "embedding + LSTM\n" r"states $h_1, \dots, h_L$", "state"),
        "alpha": (0.1, 0.5, r"$q$", "weight"),
        "a": (0.4, 0.5, r"$a_l = q^\top h_l$" "\n" r"$p = \mathrm{softmax}(a)$",
              "attention"),
        "W": (0.94, 0.5, "$w$", "weight"),
        "r": (0.73, 0.5, r"$r_l = w^\top h_l$", "state"),
        "logit": (0.5, 0.73, r"logit $= \sum_l p_l\, r_l$", "output"),
        "out": (0.5, 0.93, r"$\Pr[\mathrm{positive}] = \sigma(\mathrm{logit})$", "output"),
    }
    arrows = [("x", "h"), ("h", "a"), ("h", "r"), ("alpha", "a"), ("W", "r"),
              ("a", "logit"), ("r", "logit"), ("logit", "out")]
    return block_diagram(boxes, arrows, size=(4.6, 4.4),
                         title="§5: the attention LSTM classifier")
