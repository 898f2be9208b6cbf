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
:class:`RescueConfig` holds the chapter's protocol and builds every run of it.
:class:`MultiHeadLuong` is the chapter's model written out as its equations, one model with
no member stacking, for reading; :func:`readable_model` copies member m of the engine's
stacked :class:`~attn_core.models.Seq2Seq` into it (the tests check that both compute the
same logits and attention).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn

from .. import plotting
from ..cache import check_cache_name
from ..checks import (check_bool_array, check_choice, check_dim, check_fraction_array,
                      check_int, check_real, check_seeds, check_token_batches)
from ..config import Preset, env_max_steps
from ..metrics import (classify_heads, fisher_exact, rate_difference, success_rate,
                       verdict_repeat, wilson_rate_interval)
from ..models import HEAD_REDUCTIONS, Seq2Seq
from ..training import History
from ._experiment import Experiment, check_history
from .ch4_copy import COPY_BASE, CopyConfig, check_probe_args, control

__all__ = ["HeadsRun", "head_probe", "RescueConfig", "RESCUE", "head_combinations",
           "COMBINATION_KINDS", "OTHER_BASES_FAST", "MultiHeadLuong", "readable_model",
           "stored_configs", "screen_configs", "combination_configs", "head_rate",
           "rate_difference", "rescue_prediction", "verdict_agreement", "repeat_rates",
           "diagonal_heads", "diagonal_counts", "rescue_findings", "DIAGONAL_SUCCEEDS_MIN",
           "RANDOM_HEADS_ALONE",
           "random_heads_alone_runs", "model_diagram", "rescue_curve", "rescue_fit",
           "draw_rescue", "show_rescue", "RESCUE_SLIDER", "labels_at", "draw_labels_at",
           "BAD_SLIDER"]

#: The three kinds of K-head combinations of SZKS Fig. 2 right.
COMBINATION_KINDS = ("all bad", "one good", "random")


def head_probe(model, batch):
    """Each head's attention accuracy ``head_attn_acc`` (S, K) -- how often its own argmax is
    the aligned position -- and every head's attention map ``head_maps`` (S, K, T, L) of the
    first held-out example."""
    check_probe_args(model, batch)
    alpha = model(batch["src"], batch["tgt_in"])["alpha"]  # (S, K, B, T, L)
    hit = alpha.argmax(-1) == batch["align"].unsqueeze(1)
    return {"head_attn_acc": hit.float().flatten(2).mean(2), "head_maps": alpha[:, :, 0]}


@dataclass(frozen=True)
class HeadsRun(Experiment):
    """One model per entry of ``head_seeds``, all sharing the base initialisation ``base_seed``
    of everything except the attention heads (SZKS §5.2, the authors' protocol).

    ``head_seeds[i]`` is an int (a one-head model's head seed) or a tuple of ``copy.heads``
    seeds (head k of a K-head model is exactly the one-head model's head of that seed);
    ``data_seeds[i]`` seeds member i's data stream. ``head_proj``/``head_reduce`` (which
    override ``copy.head_proj``) as in
    :class:`~attn_core.models.Seq2Seq`. ``tag`` names the run in the cache and progress bar.
    """

    name = "heads"

    copy: CopyConfig = CopyConfig()
    base_seed: int = 0
    head_seeds: tuple = (0,)
    data_seeds: tuple[int, ...] = (0,)
    head_proj: bool = False
    head_reduce: str = "mean"
    tag: str = "heads"

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        check_choice(f"{cls}.head_reduce", self.head_reduce, HEAD_REDUCTIONS)
        check_cache_name(self.tag, f"{cls}.tag")
        heads = []
        for i, h in enumerate(self.head_seeds):
            if isinstance(h, (list, tuple)):
                heads.append(tuple(check_seeds(f"{cls}.head_seeds[{i}]", list(h))))
                if len(h) != self.copy.heads:
                    raise ValueError(f"{cls}.head_seeds[{i}] lists {len(h)} head seeds; the "
                                     f"model has copy.heads = {self.copy.heads}")
            else:
                heads.append(check_int(f"{cls}.head_seeds[{i}]", h, 0))
        if not heads:
            raise ValueError(f"{cls}.head_seeds must not be empty")
        object.__setattr__(self, "head_seeds", tuple(heads))
        if len(self.data_seeds) != len(heads):
            raise ValueError(f"{cls}.data_seeds must have one entry per head_seeds entry "
                             f"({len(heads)}); got {len(self.data_seeds)}")

    def task(self):
        return self.copy.task()

    def model_fn(self, task):
        c = self.copy
        return functools.partial(Seq2Seq, vocab=task.model_vocab, embed=c.embed,
                                 hidden=c.hidden, heads=c.heads, cell=c.cell,
                                 attention=c.attention, head_proj=self.head_proj,
                                 head_reduce=self.head_reduce, bias=c.bias)

    def first_members(self, n: int) -> "HeadsRun":
        n = check_int("n", n, 1, len(self.head_seeds))
        return replace(self, head_seeds=self.head_seeds[:n], data_seeds=self.data_seeds[:n])

    def seeds_and_members(self):
        heads = [list(h) if isinstance(h, tuple) else h for h in self.head_seeds]
        return [self.base_seed] * len(heads), list(self.data_seeds), {"head_seeds": heads}

    def probes(self, task) -> list:
        return [head_probe]

    def train_kwargs(self) -> dict:
        c = self.copy
        return dict(steps=c.steps, batch_size=c.batch_size, lr=c.lr, eval_every=c.eval_every,
                    eval_batch_size=c.eval_batch_size, execution=c.execution)

    def cache_name(self) -> str:
        return self.tag

    def label(self, task) -> str:
        return f"{self.tag} (K={self.copy.heads}, {len(self.head_seeds)} models)"


@dataclass(frozen=True)
class RescueConfig:
    """Chapter 5: good and bad heads from one base initialisation, and K-head combinations of
    them (SZKS §5.2, Fig. 2 right). ``copy`` is the one-head task and model; every model shares
    ``base_seed`` for everything but its heads. ``head_proj``/``head_reduce`` choose the
    multi-head model (see :class:`~attn_core.models.Seq2Seq`); the defaults are the authors'
    code: GRUs, a projection per head, contexts averaged.

    Seeds, chosen so that no two experiments of the chapter share a head or a data stream:
    candidate heads ``candidate_offset + i``; fresh random heads for K-head models from their
    own block ``random_offset + RANDOM_BLOCK·K + j``; combination runs use data streams
    ``COMBINATION_DATA + i``, the random-K runs ``RANDOM_DATA + i``.
    """

    #: Size of each K's block of fresh random head seeds (far more than any run draws).
    RANDOM_BLOCK = 10_000
    #: First data stream of the K-head combination runs, and of the random-K runs.
    COMBINATION_DATA = 100
    RANDOM_DATA = 200

    copy: CopyConfig = CopyConfig(cell="gru", eval_every=20, execution="batched",
                                  head_proj=False, bias=False, eos=False)
    base_seed: int = 0
    head_proj: bool = True
    head_reduce: str = "mean"
    n_candidates: int = 16
    candidate_offset: int = 1000
    random_offset: int = 5000
    data_seeds: tuple[int, ...] = (0, 1)
    good: float = 0.95
    bad: float = 0.6
    k_combo: int = 4
    n_combinations: int = 6
    ks: tuple[int, ...] = (1, 2, 4, 8)
    n_random: int = 6
    #: The screen draws candidate heads ``n_candidates`` at a time until it has a good head and
    #: ``k_combo`` bad ones, or has drawn this many (None: ``n_candidates``, one round).
    max_candidates: int | None = None
    #: Steps of the control runs of §5 (None: ``copy.steps``). The control is learned fast:
    #: at base 0 the five bad heads pass 0.95 there by step 100-120 and are at 0.998-1.0 by
    #: step 160 (measured on 300-step runs, whose first 160 steps these runs repeat exactly).
    control_steps: int | None = None

    def __post_init__(self):
        cls = type(self).__name__
        if not isinstance(self.copy, CopyConfig):
            raise TypeError(f"{cls}.copy must be a CopyConfig; got {type(self.copy).__name__}")
        check_int(f"{cls}.base_seed", self.base_seed, 0)
        if not isinstance(self.head_proj, bool):
            raise TypeError(f"{cls}.head_proj must be True or False; got {self.head_proj!r}")
        check_choice(f"{cls}.head_reduce", self.head_reduce, HEAD_REDUCTIONS)
        for name in ("n_candidates", "k_combo", "n_combinations", "n_random"):
            check_int(f"{cls}.{name}", getattr(self, name), 1)
        for name in ("candidate_offset", "random_offset"):
            check_int(f"{cls}.{name}", getattr(self, name), 0)
        if self.control_steps is not None:
            check_int(f"{cls}.control_steps", self.control_steps, 1)
        if self.max_candidates is not None:
            check_int(f"{cls}.max_candidates", self.max_candidates, self.n_candidates)
        # checked before any training: the screen can at most find this many heads
        if self.candidate_cap() < self.k_combo + 1:
            raise ValueError(f"{cls}: the combinations need a good head and k_combo="
                             f"{self.k_combo} bad ones, but the screen draws at most "
                             f"{self.candidate_cap()} candidates (n_candidates/max_candidates)")
        check_real(f"{cls}.bad", self.bad, 0.0, 1.0, low_open=True, high_open=True)
        check_real(f"{cls}.good", self.good, 0.0, 1.0, low_open=True, high_open=True)
        if not self.bad < self.good:
            raise ValueError(f"{cls} thresholds must satisfy 0 < bad < good < 1; got "
                             f"bad={self.bad}, good={self.good}")
        object.__setattr__(self, "data_seeds", tuple(check_seeds(f"{cls}.data_seeds",
                                                                 self.data_seeds)))
        ks = tuple(check_int(f"{cls}.ks[{i}]", k, 1) for i, k in enumerate(self.ks))
        if not ks or self.k_combo not in ks:
            raise ValueError(f"{cls}.ks must be head counts >= 1 that include "
                             f"k_combo={self.k_combo}; got {self.ks}")
        object.__setattr__(self, "ks", ks)

    def as_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)

    # ----------------------------------------------------------------------- building runs
    def heads_run(self, head_seeds, data_seeds, tag: str, copy: CopyConfig | None = None,
                  head_reduce: str | None = None) -> HeadsRun:
        """The :class:`HeadsRun` of these heads on this base; the head count is the length of
        a ``head_seeds`` entry (1 for int entries). ``copy`` defaults to :attr:`copy`."""
        head_seeds = list(head_seeds)
        first = head_seeds[0] if head_seeds else 0
        k = len(first) if isinstance(first, (list, tuple, range)) else 1
        heads = [tuple(h) if isinstance(h, (list, tuple, range)) else h for h in head_seeds]
        return HeadsRun(copy=replace(copy or self.copy, heads=k), base_seed=self.base_seed,
                        head_seeds=tuple(heads), data_seeds=tuple(data_seeds),
                        head_proj=self.head_proj, head_reduce=head_reduce or self.head_reduce,
                        tag=tag)

    def candidate_cap(self) -> int:
        """The most candidate heads the screen draws."""
        return self.n_candidates if self.max_candidates is None else self.max_candidates

    def screen_sizes(self) -> list[int]:
        """How many candidates the screen has drawn after each of its rounds:
        ``n_candidates``, twice that, ... up to :meth:`candidate_cap`."""
        n, cap = self.n_candidates, self.candidate_cap()
        return [min(k * n, cap) for k in range(1, -(-cap // n) + 1)]

    def candidates(self, n: int | None = None) -> list[int]:
        """The first ``n`` candidate heads' seeds (default ``n_candidates``: one round)."""
        n = self.n_candidates if n is None else check_int("n", n, 1, self.candidate_cap())
        return [self.candidate_offset + i for i in range(n)]

    def enough_heads(self, labels) -> bool:
        """Whether the labelled heads make every kind of combination: a good head and
        ``k_combo`` bad ones."""
        labels = np.asarray(labels)
        return bool((labels == "good").sum() >= 1 and (labels == "bad").sum() >= self.k_combo)

    def screen(self, live: int | None = None, upto: int | None = None,
               **run_kwargs) -> dict[int, History]:
        """Every candidate head as a one-head model, on every data stream: ``{stream: History}``
        with one member per candidate drawn.

        Candidates are drawn ``n_candidates`` at a time (each round trained on every stream,
        cached on its own) until the labels give a good head and ``k_combo`` bad ones
        (:meth:`enough_heads`) or ``max_candidates`` are drawn; it says how many it drew. With
        too few at the cap it raises ValueError here, before any combination is trained.
        With ``live`` (fast mode) every round comes from :func:`attn_core.stored.stored_run`:
        stored once, its first ``live`` candidates re-run now and checked within their
        measured envelope (the book re-runs one per stream, its first ``upto`` steps:
        :func:`~attn_core.stored.stored_run`). The stored members were trained
        in groups, and a candidate re-run now is grouped differently, so float rounding may
        differ (measured on pairs: 1e-6 in the loss, one held-out token of 1,280 in the
        accuracy); the envelope is measured on the book's re-runs."""
        from ..stored import stored_run

        def run(config):
            return (config.run(**run_kwargs) if live is None
                    else stored_run(config, live, upto))

        rounds: dict[int, list[History]] = {d: [] for d in self.data_seeds}
        drawn = 0
        for size in self.screen_sizes():
            cands = self.candidates(size)[drawn:]
            for d in self.data_seeds:
                rounds[d].append(run(self.heads_run(cands, [d] * len(cands),
                                                    "heads-screen")))
            drawn = size
            screen = {d: History.concat(hs) for d, hs in rounds.items()}
            labels = self.labels(np.stack([screen[d].metrics["token_acc"][:, -1]
                                           for d in self.data_seeds], axis=1))
            if self.enough_heads(labels):
                break
        counts = {k: int((labels == k).sum()) for k in ("good", "bad", "inconsistent")}
        print(f"[screen] {drawn} candidate heads drawn ({self.n_candidates} per round, at "
              f"most {self.candidate_cap()})\n[screen] {counts['good']} good, "
              f"{counts['bad']} bad, {counts['inconsistent']} inconsistent")
        if not self.enough_heads(labels):
            raise ValueError(f"the screen drew its cap of {drawn} candidate heads and found "
                             f"{counts['good']} good and {counts['bad']} bad; the combinations "
                             f"need 1 good and k_combo={self.k_combo} bad. Raise "
                             f"RescueConfig.max_candidates or choose another base_seed")
        return screen

    def pools(self, labels) -> dict:
        """Head pools for :func:`head_combinations` from the screen's labels
        (:func:`~attn_core.metrics.classify_heads`), one per candidate drawn."""
        labels = np.asarray(labels)
        drawn = self.screen_sizes()
        if labels.ndim != 1 or len(labels) not in drawn:
            raise ValueError(f"labels must have one entry per candidate the screen drew "
                             f"(rounds of {self.n_candidates}: {drawn}); got shape "
                             f"{labels.shape}")
        cands = np.array(self.candidates(len(labels)))
        return {"good": [int(s) for s in cands[labels == "good"]],
                "bad": [int(s) for s in cands[labels == "bad"]],
                "random": self.fresh_heads(self.k_combo)}

    def labels(self, final_acc) -> np.ndarray:
        """Every candidate's label (:func:`~attn_core.metrics.classify_heads`). In a smoke
        run (``ATTN_MAX_STEPS``) a few steps decide nothing, so the heads are labelled by rank
        instead -- the best mean final accuracy "good", the rest "bad" -- and it says so:
        the chapter then runs end to end at its shapes, and its claims are not checked."""
        if env_max_steps() is None:
            return classify_heads(final_acc, self.good, self.bad)
        acc = np.asarray(final_acc, dtype=float)
        if acc.ndim != 2 or not acc.size:
            raise ValueError(f"final_acc must be a non-empty (heads, data seeds) array; got "
                             f"shape {acc.shape}")
        labels = np.full(len(acc), "bad", dtype=object)
        labels[int(np.argmax(acc.mean(1)))] = "good"
        print(f"[smoke] {len(acc)} heads labelled by rank (the best 'good', the rest 'bad'): "
              f"a smoke run's few steps decide nothing")
        return labels.astype(str)

    def fresh_heads(self, k: int) -> range:
        """Unused head seeds for K = k random heads (a block of their own for every k)."""
        k = check_int("k", k)
        start = self.random_offset + self.RANDOM_BLOCK * k
        return range(start, start + self.RANDOM_BLOCK)

    def combination_data(self) -> list[int]:
        return [self.COMBINATION_DATA + i for i in range(self.n_combinations)]

    def random_data(self) -> list[int]:
        return [self.RANDOM_DATA + i for i in range(self.n_random)]

    def succeeded(self, history: History) -> np.ndarray:
        """Which runs succeeded: final token accuracy above :attr:`good` (S,) bool."""
        check_history(history, metrics=("token_acc",))
        return history.metrics["token_acc"][:, -1] > self.good

    def control_copy(self) -> CopyConfig:
        """The one-head task on the control distribution (chapter 4's :func:`control`),
        trained for :attr:`control_steps`."""
        return control(replace(self.copy, steps=self.control_steps or self.copy.steps))

    def control_run(self, bad_heads) -> "HeadsRun":
        """§5's control: each of ``bad_heads`` (the screen's bad pool) alone, as a one-head
        model on the control task (:meth:`control_copy`), on data stream 0."""
        bad_heads = list(bad_heads)
        if not bad_heads:
            raise ValueError("bad_heads must name at least one head seed (the screen's bad "
                             "pool); got none")
        return self.heads_run(bad_heads, [0] * len(bad_heads), "heads-control",
                              copy=self.control_copy())


#: Fast: L = 20 permutations (chapter 4's fast size) with the authors' multi-head model (GRU,
#: per-head projections, averaged contexts); 16 candidate heads screened on 2 data seeds, 5 runs
#: of each kind of K = 4 combination, 5 runs of random heads at K = 2 and 4 (cut from 6 runs to
#: save CI time: the same runs' first five. K = 8 is full mode's: 6 runs cost ~35 s of one core,
#: and at K = 4 the prediction is already 0.92 and all fast runs succeed).
#: Batched: at this size a stacked GRU step is ~1.5x
#: faster than S single ones on the CPU (benchmarks/bench_engine.py), and the members split
#: into one stacked group per worker process. Base seed 0 was chosen because its heads split
#: (about half good); other bases split differently (:data:`OTHER_BASES_FAST`). The control
#: runs stop at step 160 (see :attr:`RescueConfig.control_steps`). Full: the
#: authors' scale (L = 40, hidden 256, batch 128, 200 steps, 3 data seeds, K = 8, 50
#: combinations of each kind); its screen draws up to 240 candidates, 80 at a time, until
#: it has 1 good and 8 bad heads (at base seed 0 it took 160: ``benchmarks/full_ch5``,
#: with 20 combinations of each kind).
RESCUE = Preset(
    fast=RescueConfig(control_steps=160, ks=(1, 2, 4), n_combinations=5, n_random=5),
    # a smoke run: one screen round of k_combo + 1 candidates (labelled by rank, see
    # RescueConfig.labels) on the first two data streams (the chapter compares streams)
    # and one run of each combination, at the same shapes
    smoke=lambda c: replace(c, n_candidates=c.k_combo + 1, max_candidates=None,
                            data_seeds=c.data_seeds[:2], n_combinations=1, n_random=1),
    full=RescueConfig(copy=replace(COPY_BASE.full, cell="gru", head_proj=False, bias=False,
                                   eos=False), n_candidates=80, max_candidates=240,
                      data_seeds=(0, 1, 2), k_combo=8, n_combinations=50, ks=(1, 2, 4, 8),
                      n_random=50),
)


#: The chapter's protocol at other base initialisations, and at batch 16, run outside the
#: book by ``benchmarks/ch5_bases/run.py`` (each base costs one to two minutes on the
#: project's 2-core CPU, more than the fast budget allows): chapter 5's fast config
#: with only ``base_seed`` and ``copy.batch_size`` changed; 16 candidate heads on 2 data
#: streams, then 6 "all bad" and 6 "one good" K = 4 combinations. Each row: ``(batch_size,
#: base_seed, good, bad, inconsistent, decided on the first stream, of those repeated strictly
#: on the second, Cohen's κ of success on the two streams and its one-sided Fisher p
#: (:func:`verdict_agreement`, 3 significant digits), all bad (successes, runs), one good
#: (successes, runs))``; ``None`` where the
#: screen found fewer than K bad heads. ``tests/test_ch5.py`` recomputes the rows from the
#: script's JSON (its screen accuracies).
OTHER_BASES_FAST = (
    (32, 1, 10, 2, 4, 15, 12, 0.709, 0.0128, None, None),
    (32, 2, 7, 5, 4, 13, 12, 1.0, 8.74e-05, (4, 6), (6, 6)),
    (32, 3, 8, 0, 8, 11, 8, 0.613, 0.0245, None, None),
    (16, 0, 6, 8, 2, 16, 14, 0.75, 0.0035, (0, 6), (2, 6)),
    (16, 1, 9, 4, 3, 16, 13, 0.733, 0.00762, (0, 6), (5, 6)),
    (16, 2, 6, 9, 1, 16, 15, 0.871, 0.000874, (1, 6), (5, 6)),
)


#: The fresh heads of the fast random combinations (K = 4: its 5 runs' 20 heads; K = 2: its
#: 5 runs' 10 heads), each trained *alone* as a one-head model with the screen's protocol
#: (base 0, data streams 0 and 1, 300 steps): ``(head seed, final token accuracy on stream 0,
#: on stream 1)``, rounded to 3 decimals (no value lies within 0.001 of a threshold). Run
#: outside the book (60 one-head runs, ~2 min on the project's 2-core CPU, more than the
#: fast budget allows); :func:`random_heads_alone_runs` gives the runs that
#: reproduce it (``[r.run() for r in ch.random_heads_alone_runs()]``).
RANDOM_HEADS_ALONE = (
    (45000, 0.468, 0.986),
    (45001, 1.000, 0.516),
    (45002, 0.998, 0.998),
    (45003, 0.530, 0.999),
    (45004, 1.000, 0.998),
    (45005, 0.999, 0.940),
    (45006, 0.999, 0.998),
    (45007, 1.000, 1.000),
    (45008, 1.000, 1.000),
    (45009, 1.000, 1.000),
    (45010, 0.594, 0.604),
    (45011, 0.613, 0.629),
    (45012, 1.000, 0.998),
    (45013, 0.554, 0.585),
    (45014, 1.000, 0.999),
    (45015, 0.576, 0.554),
    (45016, 0.489, 0.548),
    (45017, 0.539, 0.596),
    (45018, 1.000, 0.538),
    (45019, 0.516, 0.568),
    (25000, 0.597, 0.587),
    (25001, 0.998, 0.999),
    (25002, 0.575, 0.593),
    (25003, 1.000, 1.000),
    (25004, 0.626, 0.598),
    (25005, 1.000, 0.999),
    (25006, 1.000, 1.000),
    (25007, 1.000, 1.000),
    (25008, 0.532, 0.558),
    (25009, 0.998, 1.000),
)


def random_heads_alone_runs(cfg: "RescueConfig | None" = None) -> list[HeadsRun]:
    """The one-head runs behind :data:`RANDOM_HEADS_ALONE`: the random combinations' heads
    (the first ``n_random`` K-head draws of every K > 1 in ``cfg.ks``, K = ``k_combo``
    first), each alone on every screen data stream."""
    cfg = RESCUE.fast if cfg is None else _check_rescue(cfg)
    heads = [s for k in [cfg.k_combo] + [k for k in cfg.ks if k > 1 and k != cfg.k_combo]
             for s in list(cfg.fresh_heads(k))[:k * cfg.n_random]]
    return [cfg.heads_run(heads, [d] * len(heads), "heads-random-alone")
            for d in cfg.data_seeds]


def head_combinations(pools: dict, kind: str, K: int, n: int, seed: int = 0) -> list[list[int]]:
    """``n`` head-seed lists of length K (SZKS Fig. 2 right).

    ``kind``: ``"all bad"`` (K distinct heads from ``pools["bad"]``), ``"one good"`` (one from
    ``pools["good"]`` and K-1 distinct bad ones) or ``"random"`` (K fresh seeds from
    ``pools["random"]``, an iterable of unused seeds). Distinct subsets are used first; when a
    pool has fewer distinct subsets than ``n`` they repeat (each run gets its own data seed).
    """
    check_choice("kind", kind, COMBINATION_KINDS)
    K, n, seed = check_int("K", K), check_int("n", n), check_int("seed", seed, 0)
    if not isinstance(pools, dict):
        raise TypeError(f"pools must be a dict of head lists; got {type(pools).__name__}")
    rng = np.random.default_rng(seed)
    if kind == "random":
        if "random" not in pools:
            raise ValueError("pools needs a 'random' entry for kind='random'")
        if isinstance(pools["random"], (str, bytes)) or not isinstance(pools["random"], Iterable):
            raise TypeError(f"pools['random'] must be an iterable of head seeds; got "
                            f"{type(pools['random']).__name__}")
        fresh = list(itertools.islice(pools["random"], n * K))
        if len(fresh) < n * K:
            raise ValueError(f"pools['random'] needs {n * K} seeds; got {len(fresh)}")
        fresh = check_seeds("pools['random']", fresh)
        return [fresh[i * K:(i + 1) * K] for i in range(n)]
    n_bad = K if kind == "all bad" else K - 1
    bad, good = (check_seeds(f"pools[{k!r}]", pools.get(k, []), allow_empty=True)
                 for k in ("bad", "good"))
    if len(bad) < n_bad or (kind == "one good" and not good):
        raise ValueError(f"not enough heads for {kind!r} with K={K}: {len(bad)} bad, "
                         f"{len(good)} good")
    subsets = [list(c) for c in itertools.combinations(bad, n_bad)]
    rng.shuffle(subsets)
    out = []
    for i in range(n):
        heads = list(subsets[i % len(subsets)])
        if kind == "one good":
            heads = [good[i % len(good)]] + heads
        out.append(heads)
    return out


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


def _check_rescue(cfg) -> "RescueConfig":
    if not isinstance(cfg, RescueConfig):
        raise TypeError(f"cfg must be a RescueConfig; got {type(cfg).__name__}")
    return cfg


def screen_configs(cfg: "RescueConfig | None" = None) -> list[HeadsRun]:
    """The screen's first round on every data stream (what ``cfg.screen()`` trains first)."""
    cfg = RESCUE.fast if cfg is None else _check_rescue(cfg)
    cands = cfg.candidates(cfg.screen_sizes()[0])
    return [cfg.heads_run(cands, [d] * len(cands), "heads-screen") for d in cfg.data_seeds]


def combination_configs(cfg: "RescueConfig", labels) -> dict[str, HeadsRun]:
    """The runs of §3-4 that follow from the screen's labels: the three kinds of K-head
    combinations, the all-bad heads summed, and random heads at every other K of ``cfg.ks``
    (keys: the kinds, ``"all bad, summed"``, ``"random K=<k>"``)."""
    pools = _check_rescue(cfg).pools(labels)
    K = cfg.k_combo
    combos = {kind: head_combinations(pools, kind, K, cfg.n_combinations, seed=1)
              for kind in COMBINATION_KINDS}
    runs = {kind: cfg.heads_run(heads, cfg.combination_data(),
                                f"heads-{kind.replace(' ', '-')}")
            for kind, heads in combos.items()}
    runs["all bad, summed"] = cfg.heads_run(combos["all bad"], cfg.combination_data(),
                                            "heads-all-bad-sum", head_reduce="sum")
    for k in cfg.ks:
        if k > 1 and k != K:
            heads = head_combinations({"random": cfg.fresh_heads(k)}, "random", k,
                                      cfg.n_random)
            runs[f"random K={k}"] = cfg.heads_run(heads, cfg.random_data(),
                                                  f"heads-random-K{k}")
    return runs


def stored_configs() -> list[HeadsRun]:
    """The fast-mode runs chapter 5 shows from :mod:`attn_core.stored`: the screen's first
    round on every data stream (``RESCUE.fast.screen(live=...)``), then the combinations
    that its stored labels lead to (:func:`combination_configs`) and the bad heads on the
    control task (:meth:`RescueConfig.control_run`). The screen's labels are read from its
    stored entries through the manifest check (:func:`attn_core.stored.load_entry`)."""
    from ..stored import load_entry, stored_path

    cfg = RESCUE.fast
    screen = screen_configs(cfg)
    if not all(stored_path(c).exists() for c in screen):
        return screen          # store the screen first; the combinations follow from it
    final = np.stack([load_entry(c).metrics["token_acc"][:, -1] for c in screen], axis=1)
    labels = cfg.labels(final)
    return (screen + list(combination_configs(cfg, labels).values())
            + [cfg.control_run(cfg.pools(labels)["bad"])])


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

    For the first stream against each other stream: Cohen's κ of "ends above ``good``"
    (agreement beyond what the two streams' success rates give by chance; 0 when a stream has
    no success, or all succeed: the verdicts then carry no information about the head) and
    the one-sided Fisher exact p-value of the 2x2 table of heads. Returns the smallest κ, the
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
