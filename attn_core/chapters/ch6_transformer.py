"""Chapter 6 -- does a Transformer fail too? (the book's own experiment; no source runs it)

Chapter 4's LSTM seq2seq often cannot learn to copy permutations, and the KTIW picture says
why: under permutations every input word co-occurs with every output word, the count table
is flat, so nothing is learned about which word to copy before the attention knows where to
look, and the attention has no reason to move before that. Nothing in the argument is about
recurrence. This module holds a small encoder-decoder Transformer trained by the same engine
on chapter 4's tasks, so the chapter can run the question instead of guessing.

:class:`TransformerSeq2Seq` is the model, one member, written out to be read: one encoder
layer and one decoder layer, pre-norm (LayerNorm before each sub-layer, a final LayerNorm on
each side), K heads, a shared embedding for source and target. How positions reach it is the
experiment's main switch (:data:`POSITIONS`):

- ``"learned"`` -- a learned vector per position added to the token embedding (GPT-2's way);
- ``"sinusoidal"`` -- the fixed sines and cosines of Vaswani et al., added the same way;
- ``"none"`` -- no positions at all: the encoder sees a bag of words (its output at l depends
  on x_l and the bag only), so which word stands where cannot reach the decoder;
- ``"qk"`` -- learned positions added only to the inputs of the queries and keys of every
  attention, never to the values or the residual stream: position can steer *where* a head
  looks but is never part of *what* it reads;
- ``"qk-cross"`` / ``"qk-self"`` -- as ``"qk"``, but only the cross-attention's queries and
  keys / only the two self-attentions' queries and keys get the positions (the ablation
  that asks which attention needs to be told where it is);
- ``"relative"`` -- no absolute positions; every attention adds a learned bias per head and
  offset t - l (clipped at ``max_len``), T5-style.

:class:`StackedTransformer` is the engine's S-member model: it keeps every parameter of
:class:`TransformerSeq2Seq` stacked (S, ...) and runs the one readable module on member
m's slice (:func:`torch.func.functional_call`; :func:`torch.vmap` over the members when
S > 1), so the code shown in the chapter is the code that trains.

The chapter's figures that are more than a plot of stored curves live here too:
:func:`model_diagram` (§1), :func:`position_logits` and :func:`draw_position_logits` (§4's
slider: the position-only logit's spread as σ moves) and :func:`draw_success_counts`
(Exercise 6.3's answer as the step budget moves).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from .. import plotting
from ..config import Preset, first_seeds
from ..checks import check_bool, check_choice, check_int, check_real, check_seeds
from ..data import CopyTask
from ..metrics import fisher_exact
# the chapter's model lives beside the other engine models; the chapter shows it from here
from ..models import (NORMS, POSITIONS, MultiHeadAttention, StackedTransformer,
                      TransformerSeq2Seq, sinusoidal_positions)
from ..rows import RowFamily
from ..stored import CheckReport, worst_live_check
from ..training import eval_batch, member_tasks
from ._experiment import Experiment
from .ch4_copy import PERMUTATION_LONG, SUCCESS_LEVEL, CopyTraining, control, copy_probe

__all__ = ["POSITIONS", "NORMS", "MultiHeadAttention", "TransformerSeq2Seq",
           "StackedTransformer", "TransformerCopyConfig", "sinusoidal_positions",
           "TRANSFORMER_BASE", "SWEEP_CONDITIONS", "sweep_config", "load_sweep",
           "LIVE_CONDITIONS", "sweep_row", "live_config", "stored_configs", "check_live",
           "SUCCESS_LEVEL", "initial_evaluation", "check_initial", "lstm_reference",
           "first_step_push", "PUSH_GROUPS", "fisher_exact", "model_diagram",
           "position_logits", "draw_position_logits", "SLIDER_SIGMAS", "draw_success_counts",
           "WHAT_IF_NAMES", "FULL_CONDITIONS", "FULL_SEEDS", "FULL_SWEEP_FILE",
           "full_sweep_config", "load_full_sweep", "SWEEP_STORED", "FULL_SWEEP_STORED",
           "SWEEP_FILE"]

# ------------------------------------------------------------------------- experiments
@dataclass(frozen=True)
class TransformerCopyConfig(CopyTraining, Experiment):
    """Chapter 4's copy tasks (:class:`~attn_core.data.CopyTask`) with the Transformer:
    ``distribution``/``vocab``/``length``/``eos`` as in chapter 4's
    :class:`~attn_core.chapters.ch4_copy.CopyConfig`; the model's size, ``positions``,
    ``norm`` and ``attention`` ("uniform": cross-attention frozen at 1/L) as in
    :class:`TransformerSeq2Seq`; Adam as everywhere in the book. Probe and engine arguments
    as chapter 4's (:class:`~attn_core.chapters.ch4_copy.CopyTraining`)."""

    name = "transformer"
    nonnegative_floats = ("pos_std", "emb_std")

    length: int = 20
    vocab: int | None = None
    distribution: str = "permutation"
    eos: bool = True
    d_model: int = 64
    heads: int = 4
    d_ff: int = 128
    positions: str = "learned"
    pos_std: float = 1.0
    shared_positions: bool = True
    emb_std: float = 1.0
    norm: str = "pre"
    attention: str = "learned"
    batch_size: int = 32
    steps: int = 300
    lr: float = 1e-3
    eval_every: int = 20
    eval_batch_size: int = 64
    seeds: tuple[int, ...] = tuple(range(10))
    execution: str = "auto"

    def __post_init__(self):
        super().__post_init__()
        self._check_copy_task()
        cls = type(self).__name__
        check_choice(f"{cls}.positions", self.positions, POSITIONS)
        check_choice(f"{cls}.norm", self.norm, NORMS)
        check_bool(f"{cls}.eos", self.eos)
        if self.d_model % self.heads:
            raise ValueError(f"{cls}.d_model ({self.d_model}) must be a multiple of "
                             f"{cls}.heads ({self.heads})")

    def task(self) -> CopyTask:
        return CopyTask(self.length, self.vocab, self.distribution, eos=self.eos)

    def model_fn(self, task):
        return functools.partial(StackedTransformer, vocab=task.model_vocab,
                                 d_model=self.d_model, heads=self.heads, d_ff=self.d_ff,
                                 positions=self.positions, norm=self.norm,
                                 attention=self.attention, pos_std=self.pos_std,
                                 shared_positions=self.shared_positions,
                                 emb_std=self.emb_std, max_len=max(64, task.length + 2))

    def cache_config(self) -> dict:
        """Every field, except ``emb_std`` at its default 1.0: the field was added after the
        stored results, and a record without it is the N(0, 1) words they were
        computed with, so their records and file names stay what they were."""
        out = super().cache_config()
        if out["emb_std"] == 1.0:
            del out["emb_std"]
        return out

    def cache_name(self) -> str:
        return f"{self.name}-{self.positions}"

    def display_name(self) -> str:
        """The printed name: the cache name (positions; it keys the stored results) and the
        attention when it is not learned (a uniform run is not 'transformer-learned')."""
        return self.cache_name() + ("" if self.attention == "learned"
                                    else f", {self.attention} attention")

    def label(self, task) -> str:
        return (f"transformer {self.distribution} V={task.vocab} ({self.positions} "
                f"positions, {self.attention})")


#: The chapter's Transformer on chapter 4's fast task (L = 20 + EOS, batch 32, 300 steps,
#: ten seeds). Full: chapter 4's full task (L = 40, batch 128) with a wider model; the
#: conditions of claims T1-T4 ran at that size here (:data:`FULL_CONDITIONS`, ten seeds).
TRANSFORMER_BASE = Preset(
    fast=TransformerCopyConfig(),
    full=TransformerCopyConfig(length=40, d_model=128, heads=4, d_ff=256, batch_size=128,
                               eval_every=10, eval_batch_size=128,
                               seeds=tuple(range(20))),
    smoke=first_seeds(1),   # a smoke run: its first seed, same shapes
)

#: The chapter's stored sweep: condition name -> (fields of TRANSFORMER_BASE.fast, task),
#: task "permutation", "control" (L distinct words of 1.5 L, chapter 4's control) or "iid"
#: (each word uniform over V = L, repetitions allowed).
SWEEP_CONDITIONS = {
    "learned": ({}, "permutation"),
    "learned, control": ({}, "control"),
    "learned, iid": ({}, "iid"),
    "small positions": ({"pos_std": 0.02}, "permutation"),
    "small positions, control": ({"pos_std": 0.02}, "control"),
    "qk": ({"positions": "qk"}, "permutation"),
    "qk-cross": ({"positions": "qk-cross"}, "permutation"),
    "qk-cross, small positions": ({"positions": "qk-cross", "pos_std": 0.02}, "permutation"),
    "qk-self": ({"positions": "qk-self"}, "permutation"),
    "qk-self, control": ({"positions": "qk-self"}, "control"),
    "uniform": ({"attention": "uniform"}, "permutation"),
    "uniform, control": ({"attention": "uniform"}, "control"),
    "none": ({"positions": "none"}, "permutation"),
    "pos_std 0.5": ({"pos_std": 0.5}, "permutation"),
    "pos_std 0.3": ({"pos_std": 0.3}, "permutation"),
    "pos_std 0.1": ({"pos_std": 0.1}, "permutation"),
    "sinusoidal": ({"positions": "sinusoidal"}, "permutation"),
    "relative": ({"positions": "relative"}, "permutation"),
    # added later: one head, to compare like with like with chapter 4's one-head LSTM,
    # and words as small as the positions (the common N(0, 0.02²) of both)
    "1 head": ({"heads": 1}, "permutation"),
    "1 head, control": ({"heads": 1}, "control"),
    "1 head, small positions": ({"heads": 1, "pos_std": 0.02}, "permutation"),
    "small words and positions": ({"emb_std": 0.02, "pos_std": 0.02}, "permutation"),
}

#: Where the stored sweep lives (written by ``benchmarks/ch6_prototype/sweep.py``).
SWEEP_FILE = Path(__file__).with_name("data") / "ch6_sweep.json"


def sweep_config(name: str, seeds: Sequence[int] | None = None,
                 base: TransformerCopyConfig | None = None) -> TransformerCopyConfig:
    """The configuration of sweep condition ``name`` (a key of :data:`SWEEP_CONDITIONS`),
    on ``base`` (default ``TRANSFORMER_BASE.fast``), optionally with other ``seeds``."""
    name = check_choice("name", name, tuple(SWEEP_CONDITIONS))
    base = TRANSFORMER_BASE.fast if base is None else base
    if not isinstance(base, TransformerCopyConfig):
        raise TypeError(f"base must be a TransformerCopyConfig; got {type(base).__name__}")
    fields, task = SWEEP_CONDITIONS[name]
    cfg = replace(base, **fields)
    if task == "control":
        cfg = control(cfg)
    elif task == "iid":
        cfg = replace(cfg, distribution="iid")
    if seeds is not None:
        cfg = replace(cfg, seeds=tuple(check_seeds("seeds", seeds)))
    return cfg


#: The sweep conditions whose first seed the chapter trains again now (its live cells).
LIVE_CONDITIONS = ("learned", "uniform", "uniform, control", "small positions", "qk-cross",
                   "qk-self")
_SWEEP_SCRIPT = "python benchmarks/ch6_prototype/sweep.py --force"
#: What a sweep row keeps of every evaluation: the History key of each row key.
_ROW_KEYS = {"token_acc": "token_acc", "attn_acc": "attn_acc", "beta_align": "beta_align_acc"}
_FINALS = ("final_token_acc", "final_attn_acc", "final_beta_align", "max_beta_align")


def _finals(cfg: TransformerCopyConfig, h) -> dict:
    """A row's final token accuracy, attention accuracy and β alignment, and its best β
    alignment (4 decimals)."""
    acc, att = h.metrics["token_acc"], h.metrics["attn_acc"]
    beta = h.probes["beta_align_acc"]
    return {k: np.round(v.astype(float), 4).tolist() for k, v in zip(
        _FINALS, (acc[:, -1], att[:, -1], beta[:, -1], beta.max(1)))}


#: The stored sweep (:class:`attn_core.rows.RowFamily`): a row per condition of
#: :data:`SWEEP_CONDITIONS` (:func:`sweep_config`), its configuration, seeds, evaluation
#: steps, every evaluation's token accuracy, attention accuracy and β alignment (rounded to
#: 4 decimals), with their final and best values. ``SWEEP_STORED.load()`` refuses a row
#: that is missing, incomplete or not of its configuration (a stored result is never shown
#: for a configuration it was not computed with) and checks the file against the manifest;
#: with ``ATTN_STORED=off`` every condition is trained now (ten seeds each, cached).
SWEEP_STORED = RowFamily(SWEEP_FILE, _SWEEP_SCRIPT, tuple(SWEEP_CONDITIONS), sweep_config,
                         TransformerCopyConfig, _ROW_KEYS, extra=_finals,
                         shapes=lambda cfg: {k: (len(cfg.seeds),) for k in _FINALS})
sweep_row = SWEEP_STORED.row
load_sweep = SWEEP_STORED.load


#: The conditions run at the papers' scale (``benchmarks/full_ch6/run.py``, on a Dask
#: cluster of this project's CPUs): those that decide claims T1-T4 -- four heads on
#: permutations and on the control, small positions, the two halves of the ablation, and
#: attention frozen uniform on both tasks.
FULL_CONDITIONS = ("learned", "learned, control", "small positions", "qk-cross", "qk-self",
                   "uniform", "uniform, control")
#: The seeds of every condition at the papers' scale (the fast sweep's ten).
FULL_SEEDS = tuple(range(10))
#: Where the stored sweep at the papers' scale lives (written by its script).
FULL_SWEEP_FILE = Path(__file__).with_name("data") / "ch6_full_sweep.json"
_FULL_SCRIPT = "ATTN_MODE=full python benchmarks/full_ch6/run.py"


def full_sweep_config(name: str) -> TransformerCopyConfig:
    """Condition ``name`` (one of :data:`FULL_CONDITIONS`) at the papers' scale:
    ``TRANSFORMER_BASE.full`` (L = 40, d = 128, 4 heads, batch 128, 300 steps, evaluated
    every 10) with the condition's fields and :data:`FULL_SEEDS`."""
    name = check_choice("name", name, FULL_CONDITIONS)
    return sweep_config(name, seeds=FULL_SEEDS, base=TRANSFORMER_BASE.full)


#: The stored sweep at the papers' scale: a row per :data:`FULL_CONDITIONS`
#: (:func:`full_sweep_config`), as :data:`SWEEP_STORED`'s rows. With ``ATTN_STORED=off``
#: every condition is trained now -- seventy runs at the papers' scale, about an hour and a
#: half on two CPU cores (cached).
FULL_SWEEP_STORED = RowFamily(FULL_SWEEP_FILE, _FULL_SCRIPT, FULL_CONDITIONS,
                              full_sweep_config, TransformerCopyConfig, _ROW_KEYS,
                              extra=_finals, shapes=SWEEP_STORED.shapes)
load_full_sweep = FULL_SWEEP_STORED.load


def live_config(name: str, n: int = 1,
                base: TransformerCopyConfig | None = None) -> TransformerCopyConfig:
    """The first ``n`` seeds of sweep condition ``name``: what the chapter trains again now.
    In fast mode their History is stored whole (loss and every metric at full precision,
    ``scripts/store_results.py``), so :func:`attn_core.stored.stored_run` checks the seeds
    trained now against it; the sweep row's first seeds hold the same numbers, rounded
    (``tests/test_ch6.py``)."""
    return sweep_config(name, seeds=range(check_int("n", n, 1)), base=base)


def stored_configs() -> list[TransformerCopyConfig]:
    """The runs chapter 6 loads from :mod:`attn_core.stored`: each live condition's first
    seed (:data:`LIVE_CONDITIONS`)."""
    return [live_config(name) for name in LIVE_CONDITIONS]


def check_live(live: dict) -> CheckReport | None:
    """The worst of the live checks of ``live`` (condition name -> the History that
    :func:`attn_core.stored.stored_run` returned for :func:`live_config`):
    :func:`attn_core.stored.worst_live_check` over the sweep's conditions."""
    return worst_live_check(live, SWEEP_CONDITIONS, "condition")


# ------------------------------------------------------------- step 0, without training
def initial_evaluation(cfg: TransformerCopyConfig) -> dict[str, np.ndarray]:
    """What ``cfg``'s training records at step 0, computed now without training: every
    member's held-out token accuracy, attention accuracy and β alignment (each (S,)) for the
    members as :func:`~attn_core.training.train` builds them (their seeds, their held-out
    batches). This is the *untrained* value of every claim about these metrics; and as the
    stored sweep holds the same evaluation, comparing the two (:func:`check_initial`) checks
    the code that builds each condition's model, which a configuration record cannot."""
    if not isinstance(cfg, TransformerCopyConfig):
        raise TypeError(f"cfg must be a TransformerCopyConfig; got {type(cfg).__name__}")
    task = cfg.task()
    seeds, data_seeds, member_kwargs = cfg.seeds_and_members()
    data_seeds = seeds if data_seeds is None else data_seeds
    model = cfg.model_fn(task)(seeds=seeds, **(member_kwargs or {}))
    batch = eval_batch(member_tasks(task, data_seeds), data_seeds,
                        cfg.train_kwargs()["eval_batch_size"])
    model.eval()
    with torch.no_grad():
        metrics = model.evaluate(batch)
        beta = copy_probe(model, batch)["beta_align_acc"]
    return {"token_acc": metrics["token_acc"].numpy(), "attn_acc": metrics["attn_acc"].numpy(),
            "beta_align": beta.numpy()}


def check_initial(rows: dict, names: Sequence[str] | None = None,
                  n: int | None = None) -> float:
    """The largest difference, in held-out tokens, between each sweep condition's stored
    step-0 evaluation and :func:`initial_evaluation` now, for its first ``n`` seeds (default
    all) of each of ``names`` (default every condition of ``rows``). Rounding (4 decimals)
    and the order of float sums can move an argmax tie by a token or so; another
    initialisation, task or model moves tens to hundreds (``tests/test_ch6.py``)."""
    if not isinstance(rows, dict):
        raise TypeError(f"rows must be the stored sweep (a dict name -> row, load_sweep); "
                        f"got {type(rows).__name__}")
    worst = 0.0
    for name in (rows if names is None else names):
        cfg = sweep_config(name) if n is None else live_config(name, n)
        if name not in rows:
            raise ValueError(f"rows has no row {name!r} (names must be rows of rows)")
        now = initial_evaluation(cfg)
        missing = [k for k in now if k not in rows[name]]
        if missing:
            raise ValueError(f"rows[{name!r}] must hold {missing} (a sweep row, sweep_row)")
        tokens = cfg.eval_batch_size * (cfg.length + cfg.eos)
        for key, value in now.items():
            stored_0 = np.asarray(rows[name][key], dtype=float)[:len(cfg.seeds), 0]
            worst = max(worst, float(np.abs(stored_0 - value).max()) * tokens)
    return worst


# --------------------------------------------------- chapter 4's LSTM, from its stored runs
def lstm_reference(step: int = 300) -> dict:
    """Chapter 4's one-head LSTM at this chapter's task and budget, read from chapter 4's
    stored runs (:func:`attn_core.stored.load_entry`, which verifies them; chapter 4
    re-checks them live): ``{"permutation": ..., "control": ...}``, each the final-token
    accuracy (S,) and attention accuracy (S,) at ``step``, and the same at step 0.
    The permutation runs train 400 steps (:data:`~attn_core.chapters.ch4_copy.
    PERMUTATION_LONG`); their first 300 steps are the 300-step run."""
    from ..stored import load_entry
    step = check_int("step", step, 0)
    base = PERMUTATION_LONG.fast
    out = {}
    for name, cfg in (("permutation", base),
                      ("control", control(replace(base, steps=300)))):
        h = load_entry(cfg)
        if step not in h.eval_steps:
            raise ValueError(f"chapter 4's {name} runs were not evaluated at step {step}")
        j = int(np.flatnonzero(h.eval_steps == step)[0])
        out[name] = {k: np.asarray(h.metrics[k][:, j], dtype=float)
                     for k in ("token_acc", "attn_acc")}
        out[name].update({f"{k}_0": np.asarray(h.metrics[k][:, 0], dtype=float)
                          for k in ("token_acc", "attn_acc")})
    return out


# -------------------------------------------------------------- the gradient at step 0
#: The parameter groups :func:`first_step_push` splits its sum over: positions (the learned
#: tables, or the relative biases), word embeddings, the cross-attention's queries and keys,
#: and everything else.
PUSH_GROUPS = ("positions", "words", "cross q, k", "rest")


def _group(name: str) -> str:
    if name in ("pos", "pos_dec", "rel"):
        return "positions"
    if name.startswith("emb__"):
        return "words"
    if name.startswith(("cross__q__", "cross__k__")):
        return "cross q, k"
    return "rest"


def first_step_push(cfg: TransformerCopyConfig, batches: int = 4) -> dict[str, np.ndarray]:
    """How much the first optimiser step moves the cross-attention towards the diagonal,
    to first order, split by parameter group (:data:`PUSH_GROUPS`); (S,) per group.

    D is the mean over examples, heads and steps t of the diagonal margin
    log α_{t,t} − mean_l log α_{t,l} (= s_{t,t} − mean_l s_{t,l}: the logit of the aligned
    position above the average logit). Adam's first update is −lr g/(|g| + ε) per entry
    (its moment estimates are g and g² after bias correction), so its first-order change of
    D is −lr Σ ∇D · g/(|g| + ε), summed here over each group's entries. The gradient g is the
    one of the member's own first training batch; D is averaged over ``batches`` held-out
    batches of the same size. Positive: the first step already points the attention at the
    copied word."""
    if not isinstance(cfg, TransformerCopyConfig):
        raise TypeError(f"cfg must be a TransformerCopyConfig; got {type(cfg).__name__}")
    batches = check_int("batches", batches, 1)
    task = cfg.task()
    seeds = list(cfg.seeds)
    model = cfg.model_fn(task)(seeds=seeds)
    model.train()
    first = [task.sample(torch.Generator().manual_seed(s), cfg.batch_size) for s in seeds]
    stack = {k: torch.stack([b[k] for b in first]) for k in first[0]}
    params = {n: p for n, p in model.params.items() if p.requires_grad}
    g = torch.autograd.grad(model.loss(stack).sum(), list(params.values()),
                            allow_unused=True)
    eps = torch.optim.Adam([torch.zeros(1)]).defaults["eps"]
    step = {n: -cfg.lr * gi / (gi.abs() + eps) for n, gi in zip(params, g) if gi is not None}
    held = torch.Generator().manual_seed(12345)
    margin = 0.0
    for _ in range(batches):
        b = task.sample(held, cfg.batch_size)
        b = {k: torch.stack([v] * len(seeds)) for k, v in b.items()}
        log_a = model(b["src"], b["tgt_in"])["alpha"].clamp_min(1e-30).log()  # S,K,B,T,L
        on = log_a.gather(-1, b["align"][:, None, :, :, None].expand(
            *log_a.shape[:-1], 1)).squeeze(-1)
        margin = margin + (on - log_a.mean(-1)).flatten(1).mean(1) / batches
    grad_d = torch.autograd.grad(margin.sum(), list(params.values()), allow_unused=True)
    out = {k: np.zeros(len(seeds)) for k in PUSH_GROUPS}
    for (n, p), gd in zip(params.items(), grad_d):
        if gd is not None and n in step:
            out[_group(n)] += (gd * step[n]).flatten(1).sum(1).detach().numpy()
    return out


# ------------------------------------------------------------------ the model diagram
def model_diagram() -> Figure:
    """§1's model (:class:`TransformerSeq2Seq`, one member) as boxes and arrows: the source
    words and the shifted target words, each plus its position vector; the encoder layer
    (self-attention and feed-forward, output H); the decoder's causal self-attention; the
    cross-attention α that the chapter measures (queries from the decoder, keys and values
    from H); the feed-forward layer and the logits. Returns the Figure."""
    boxes = {
        "x": (0.2, 0.05, r"source $x_1 \ldots x_L$, EOS", "input"),
        "z": (0.78, 0.05, "target, shifted\n" r"BOS, $y_1 \ldots y_{T-1}$", "input"),
        "xe": (0.2, 0.24, "word + position\n$x_l + p_l$", "weight"),
        "ze": (0.78, 0.24, "word + position\n$z_t + p_t$", "weight"),
        "enc": (0.2, 0.45, "encoder layer:\nself-attention,\nfeed-forward", "state"),
        "self": (0.78, 0.48, "causal\nself-attention", "state"),
        "cross": (0.64, 0.72, r"cross-attention $\alpha_{t,l}$", "attention"),
        "ffn": (0.78, 0.83, "feed-forward", "state"),
        "out": (0.5, 0.96, r"logits $W_{\mathrm{out}}\,\mathrm{LN}(y_t)$", "output"),
    }
    arrows = [("x", "xe"), ("z", "ze"), ("xe", "enc"), ("ze", "self"),
              ("enc", "cross", "$H$: keys,\nvalues"), ("self", "cross", "queries"),
              ("cross", "ffn"),
              ("ffn", "out")]
    return plotting.block_diagram(boxes, arrows, size=(plotting.WIDTH_IN, 5.2),
                                  title="One layer each side, $K = 4$ heads")


# ------------------------------------------------ §4's slider: the position-only logit
def position_logits(sigma: float, d_model: int = 64, heads: int = 4,
                    n_positions: int = 21, draws: int = 50, seed: int = 0) -> np.ndarray:
    """Samples of the position-only part of one head's logit at initialisation,
    (W_Q p_t)·(W_K p_l)/√d_k for every pair t ≠ l of ``n_positions`` positions, over
    ``draws`` independent draws of W_Q, W_K (d_k × d, entries U(±1/√d) as nn.Linear draws
    them, no biases; d_k = d / heads) and of the position vectors p ~ N(0, σ² I_d)
    (Exercise 6.2's setting). A 1-D array of draws · n · (n − 1) logits; their standard
    deviation is close to σ²/3. The same ``seed`` draws the same weights and the same
    positions scaled by σ, so the samples at σ are exactly σ² times those at σ = 1.
    About 2 ms with the defaults."""
    sigma = check_real("sigma", sigma, 0.0, low_open=True)
    d = check_int("d_model", d_model)
    K = check_int("heads", heads)
    if d % K:
        raise ValueError(f"d_model ({d}) must be a multiple of heads ({K})")
    n = check_int("n_positions", n_positions, 2, 1024)
    draws = check_int("draws", draws, 1)
    if draws * n * (n - 1) > 10 ** 8:
        raise ValueError(f"draws must keep draws · n_positions · (n_positions - 1) samples at "
                         f"most 10^8 ({10 ** 8 // (n * (n - 1)):,} draws for n_positions={n}); "
                         f"got {draws:,}")
    seed = check_int("seed", seed, 0)
    dk = d // K
    rng = np.random.default_rng(seed)
    bound = 1.0 / math.sqrt(d)
    w_q, w_k = (rng.uniform(-bound, bound, size=(draws, dk, d)) for _ in range(2))
    p = sigma * rng.standard_normal((draws, n, d))
    q = p @ w_q.transpose(0, 2, 1)                              # (draws, n, d_k)
    k = p @ w_k.transpose(0, 2, 1)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(dk)                # (draws, t, l)
    return s[:, ~np.eye(n, dtype=bool)].ravel()


#: The position scales σ of §4's pre-drawn slider (its live twin runs from 0.01 to 2).
SLIDER_SIGMAS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
#: The x-range of :func:`draw_position_logits`'s histogram (the same in every frame).
LOGIT_RANGE = (-1.5, 1.5)


def draw_position_logits(sigma: float, d_model: int = 64, heads: int = 4) -> Figure:
    """§4's slider frame at position scale ``sigma``: above, the spread (standard deviation)
    of :func:`position_logits` against σ on log-log axes, Exercise 6.2's σ²/3 with this σ's
    measured spread marked, and the spread of the word-only part with the words drawn
    N(0, 1) (the same formula at σ = 1); below, the histograms of the two (the same
    x-range, :data:`LOGIT_RANGE`, in every frame). Returns the Figure. Measured on this
    project's 2-core CPU (one thread, other jobs running): 0.55-0.7 s of CPU a call with the
    rendering to PNG, 0.5-0.9 s wall."""
    sigma = check_real("sigma", sigma, 0.0, low_open=True)
    now = position_logits(sigma, d_model, heads)
    words = position_logits(1.0, d_model, heads, seed=1)
    spread = float(now.std())
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(plotting.WIDTH_IN, 7.4),
                                 gridspec_kw={"height_ratios": [1, 1.2]})
    grid = np.geomspace(0.01, 2.0, 50)
    a1.loglog(grid, grid ** 2 / 3, color="C0", label=r"$\sigma^2/3$ (Exercise 6.2)")
    a1.axhline(float(words.std()), color="0.6", ls="--", label="word part")
    a1.loglog([sigma], [spread], "o", color="C2", ms=9, label="this $\\sigma$, measured")
    a1.set(xlabel=r"position scale $\sigma$", ylabel="spread (std)", xlim=(0.01, 2),
           ylim=(1e-6, 3), xticks=[0.01, 0.1, 1], yticks=[1e-6, 1e-4, 1e-2, 1],
           title=f"$\\sigma = {sigma:g}$: measured spread {spread:.2g}")
    a1.legend(loc="lower right")
    # an odd number of bins, one centred on 0: a narrow peak stays in one bin
    bins = np.linspace(*LOGIT_RANGE, 62)
    share = {k: np.histogram(np.clip(x, *LOGIT_RANGE), bins)[0] / x.size
             for k, x in (("words", words), ("now", now))}
    a2.stairs(share["words"], bins, color="0.75", fill=True,
              label=r"word part, words $\mathcal{N}(0, 1)$")
    a2.stairs(share["now"], bins, color="C2", lw=2,
              label=f"position part, $\\sigma = {sigma:g}$")
    a2.set(xlim=LOGIT_RANGE, yscale="log", ylim=(1e-3, 1.5), yticks=[1e-3, 1e-2, 0.1, 1],
           xlabel="logit at step 0", ylabel="share of logits")
    a2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22))  # below: not on the peak
    for axis in (a1.xaxis, a1.yaxis, a2.yaxis):   # plain labels (mathtext ones: slow)
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    return fig


# ------------------------------------------------- Exercise 6.3's answer space, a slider
#: The conditions whose success counts Exercise 6.3's slider shows.
WHAT_IF_NAMES = ("learned", "qk-cross", "relative", "pos_std 0.5", "qk-self",
                 "small positions")


def draw_success_counts(rows: dict, step: int, count, names: Sequence[str] = WHAT_IF_NAMES,
                        levels: Sequence[float] = (0.95, 0.9)) -> Figure:
    """Exercise 6.3's slider frame at budget ``step``: for each condition of ``names`` (rows
    of ``rows``, the stored sweep), the number of its runs that ``count(row, level, step)``
    counts as successes at each of ``levels``, as horizontal bars (0 to its number of
    runs). ``count`` is the reader's ``success_count`` (or
    :func:`attn_core.exercises.ch6.success_count_reference`). Returns the Figure; about
    0.2 s a call with the rendering to PNG."""
    if not callable(count):
        raise TypeError(f"count must be callable (row, level, step) -> int; got "
                        f"{type(count).__name__}")
    if not isinstance(rows, dict):
        raise TypeError(f"rows must be the stored sweep (a dict name -> row); got "
                        f"{type(rows).__name__}")
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise TypeError(f"names must be a non-empty list of conditions; got {names!r}")
    names = [check_choice(f"names[{i}]", n, tuple(rows)) for i, n in enumerate(names)]
    step = check_int("step", step, 0)
    for n in names:
        if not isinstance(rows[n], dict) or not {"eval_steps", "token_acc"} <= set(rows[n]):
            raise ValueError(f"rows[{n!r}] must be a sweep row with 'eval_steps' and "
                             f"'token_acc' (sweep_row)")
        if step not in rows[n]["eval_steps"]:
            raise ValueError(f"step must be an evaluation step of the rows "
                             f"({rows[n]['eval_steps']}); got {step}")
    if isinstance(levels, str) or not isinstance(levels, Sequence) or not levels:
        raise TypeError(f"levels must be a non-empty list of numbers; got {levels!r}")
    levels = [check_real(f"levels[{i}]", lv, 0.0, 1.0) for i, lv in enumerate(levels)]
    runs = max(len(rows[n]["token_acc"]) for n in names)
    fig, ax = plt.subplots(figsize=(plotting.WIDTH_IN, 1.2 + 0.55 * len(names)))
    y = np.arange(len(names))
    height = 0.8 / len(levels)
    for i, lv in enumerate(levels):
        counts = [int(count(rows[n], lv, step)) for n in names]
        ax.barh(y + (i - (len(levels) - 1) / 2) * height, counts, height=height,
                color=f"C{i}", label=f"above {lv:g}")
    ax.set(yticks=y, yticklabels=names, xlim=(0, runs), xlabel=f"successes of {runs}",
           title=f"budget: step {step}")
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncols=len(levels))
    return fig
