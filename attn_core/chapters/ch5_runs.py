"""Chapter 5's runs: the rescue's protocol and every run it trains (a part of
:mod:`attn_core.chapters.ch5_multihead`, which re-exports all of it; read it from there).

Every model shares one base initialisation and differs only in its attention heads.
:class:`HeadsRun` is one batch of such models (an :class:`Experiment`); :class:`RescueConfig`
holds the chapter's protocol -- the screen of one-head models, the K-head combinations of
SZKS Fig. 2 right (:data:`COMBINATION_KINDS`), the random K-head draws -- and builds every
run of it; :data:`RESCUE` is its fast and full preset. The tables of runs made outside the
book (:func:`other_bases_fast`, :func:`random_heads_alone`: package data) and the runs
that reproduce them live here too.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..cache import check_cache_name
from ..checks import check_choice, check_int, check_real, check_seeds
from ..config import Preset, env_max_steps
from ..metrics import classify_heads
from ..models import HEAD_REDUCTIONS, Seq2Seq
from ..rows import load_table
from ..training import History
from ._experiment import Experiment, check_history
from .ch4_copy import COPY_BASE, CopyConfig, check_probe_args, control

__all__ = ["HeadsRun", "head_probe", "RescueConfig", "RESCUE", "head_combinations",
           "COMBINATION_KINDS", "other_bases_fast", "stored_configs", "screen_configs",
           "combination_configs", "random_heads_alone", "random_heads_alone_runs",
           "OTHER_BASES_FILE", "RANDOM_HEADS_ALONE_FILE"]

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
#: (about half good); other bases split differently (:func:`other_bases_fast`). The control
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


#: Where the tables of runs made outside the book live (package data, in the manifest).
OTHER_BASES_FILE = Path(__file__).with_name("data") / "ch5_other_bases.json"
RANDOM_HEADS_ALONE_FILE = Path(__file__).with_name("data") / "ch5_random_heads_alone.json"


def other_bases_fast() -> tuple[tuple, ...]:
    """The chapter's protocol at other base initialisations, and at batch 16, run outside
    the book by ``benchmarks/ch5_bases/run.py`` (each base costs one to two minutes on two
    cores, more than the fast budget allows): chapter 5's fast config with only
    ``base_seed`` and ``copy.batch_size`` changed; 16 candidate heads on 2 data streams,
    then 6 "all bad" and 6 "one good" K = 4 combinations. Each row: ``(batch_size,
    base_seed, good, bad, inconsistent, decided on the first stream, of those repeated
    strictly on the second, Cohen's kappa of success on the two streams and its one-sided
    Fisher p (:func:`~attn_core.chapters.ch5_multihead.verdict_agreement`, 3 significant
    digits), all bad (successes, runs), one good (successes, runs))``; ``None`` where the
    screen found fewer than K bad heads. Read from :data:`OTHER_BASES_FILE`;
    ``tests/test_ch5.py`` recomputes the rows from the script's JSON."""
    rows = load_table(OTHER_BASES_FILE, "python benchmarks/ch5_bases/run.py")
    return tuple(tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in rows)


def random_heads_alone() -> tuple[tuple[int, float, float], ...]:
    """The fresh heads of the fast random combinations (K = 4: its 5 runs' 20 heads; K = 2:
    its 5 runs' 10 heads), each trained *alone* as a one-head model with the screen's
    protocol (base 0, data streams 0 and 1, 300 steps): ``(head seed, final token accuracy
    on stream 0, on stream 1)``, rounded to 3 decimals (no value lies within 0.001 of a
    threshold). Run outside the book (60 one-head runs, ~2 min on two cores, more than the
    fast budget allows) by ``benchmarks/ch5_bases/heads_alone.py``: the runs of
    :func:`random_heads_alone_runs`. Read from :data:`RANDOM_HEADS_ALONE_FILE`."""
    rows = load_table(RANDOM_HEADS_ALONE_FILE, "python benchmarks/ch5_bases/heads_alone.py")
    return tuple((int(s), float(a), float(b)) for s, a, b in rows)


def random_heads_alone_runs(cfg: "RescueConfig | None" = None) -> list[HeadsRun]:
    """The one-head runs behind :func:`random_heads_alone`: the random combinations' heads
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
    # stored entries are whole runs, even in a smoke run: their labels are never by rank
    labels = classify_heads(final, cfg.good, cfg.bad)
    return (screen + list(combination_configs(cfg, labels).values())
            + [cfg.control_run(cfg.pools(labels)["bad"])])
