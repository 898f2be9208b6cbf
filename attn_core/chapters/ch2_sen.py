"""Chapter 2 -- SEN theory (Lu, Mao & Nayak 2021): the score / embedding-norm identity.

The topic task and :class:`~attn_core.models.TopicAttention` trained by full-batch gradient
descent (:class:`SENConfig`; S1-S7), the purity competition (:class:`PurityConfig`; S8),
attention over word pairs built by a CNN (:class:`CNNConfig`; S9) and a padded bag-of-words data
set such as SST-2 (:func:`run_bag_task`).

Every experiment trains *real replicates*: member i draws its data set from its own data seed
(``data_seeds``, default: the model seeds) as well as its initialisation from its model seed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from ..checks import check_choice, check_int, check_real, check_real_array, check_seeds
from ..config import Preset, first_seeds
from ..data import BagTask, MarkovPairTask, PurityGradedTask, TopicTask
from ..metrics import attended_words, eq8_rates, sen_probe
from ..models import CLASSIFIERS, TopicAttention, TopicAttentionCNN
from ..plotting import WIDTH_IN, block_diagram
from ..theory import sen_curve, sen_relative_gap
from ..training import History, train
from ._experiment import Experiment, check_history, check_tensor_dict

__all__ = ["SENConfig", "SEN_MAIN", "SEN_ABLATION", "SEN_QUERY", "SEN_M_VALUES", "SEN_BY_LENGTH",
           "run_classifiers", "run_ablation", "test_accuracy_probe", "PurityConfig", "PURITY",
           "CNNConfig", "SEN_CNN", "pair_sen_probe", "run_bag_task", "ABLATION_FREEZE",
           "sen_gap", "sen_gap_table", "member_tasks", "sentence_overlap", "untrained_run",
           "model_diagram", "sen_score", "sen_attention", "sen_curve_view", "draw_sen_curve",
           "SEN_VIEW_M", "draw_attention_at_norm"]

#: S6: the ablation's variants -- which parts of Attn-TC are frozen.
ABLATION_FREEZE = {"TC": (), "TC-KF": ("keys",), "TC-EF": ("embeddings",)}


def _is_seed_map(value) -> bool:
    return isinstance(value, dict) and len(value) > 0 and all(
        isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in value)


def test_accuracy_probe(test_sets: dict):
    """A probe recording each member's accuracy on a held-out set as ``test_accuracy`` (S,)
    (the engine's evaluation batch for full-batch tasks is the training set).

    ``test_sets``: one set shared by every member (a dict of tensors with ``"x"`` and ``"y"``),
    or ``{model seed: set}`` giving each member the test set drawn with its own training set
    (real replicates)."""
    if _is_seed_map(test_sets):
        sets = {int(s): check_tensor_dict(f"test_sets[{s}]", t, ("x", "y"))
                for s, t in test_sets.items()}
    else:
        shared = check_tensor_dict("test_set", test_sets, ("x", "y"))
        sets = None

    @torch.no_grad()
    def probe(model, batch):
        dev = batch["x"].device
        if sets is None:
            S = model.n_members
            tb = {k: v.unsqueeze(0).expand(S, *v.shape).to(dev) for k, v in shared.items()}
        else:
            missing = [s for s in model.seeds if s not in sets]
            if missing:
                raise ValueError(f"test_sets has no entry for the model seeds {missing}")
            tb = {k: torch.stack([sets[s][k] for s in model.seeds]).to(dev) for k in ("x", "y")}
        return {"test_accuracy": model.evaluate(tb)["accuracy"]}

    return probe


def all_words_probe(model, batch):
    """Every word's score and SEN norm: ``all_score``, ``all_norm`` (S, vocab)."""
    return {"all_score": model.scores(), "all_norm": model.sen_embeddings().norm(dim=-1)}


def eq8_probe(words):
    """The topic words' score velocity, exact (``rate_exact``) and by LMN Eq. 8
    (``rate_eq8``), each (S, T): see :func:`~attn_core.metrics.eq8_rates`."""

    def probe(model, batch):
        rates = eq8_rates(model, batch, words)
        return {"rate_exact": rates["exact"], "rate_eq8": rates["eq8"]}

    return probe


def _data_seeds(config) -> list[int]:
    return list(config.seeds if config.data_seeds is None else config.data_seeds)


def _check_data_seeds(config) -> None:
    """``data_seeds``: one per seed, and a repeated model seed always with the same data seed
    (the test-set probe looks a member's data up by its model seed)."""
    cls = type(config).__name__
    if config.data_seeds is None:
        return
    if len(config.data_seeds) != len(config.seeds):
        raise ValueError(f"{cls}.data_seeds must have one entry per seed ({len(config.seeds)}); "
                         f"got {len(config.data_seeds)}")
    paired: dict[int, int] = {}
    for s, d in zip(config.seeds, config.data_seeds):
        if paired.setdefault(s, d) != d:
            raise ValueError(f"{cls}.data_seeds: model seed {s} appears with data seeds "
                             f"{paired[s]} and {d}; a repeated model seed needs the same data "
                             "seed")


def member_tasks(config) -> list:
    """The task of every member of ``config`` (an experiment config of this chapter): its
    ``task()`` drawn from each data seed, in member order."""
    if not isinstance(config, (SENConfig, PurityConfig, CNNConfig)):
        raise TypeError(f"config must be a SENConfig, PurityConfig or CNNConfig; got "
                        f"{type(config).__name__}")
    task = config.task()
    return [task.for_seed(d) for d in _data_seeds(config)]


def _test_sets(config) -> dict:
    return {s: t.test_set() for s, t in zip(config.seeds, member_tasks(config))}


def _word_ids(name: str, x) -> np.ndarray:
    """``x`` (an array, tensor or nested list of word ids) as an int64 array; TypeError for
    anything not numeric, ValueError for a float that is not a whole number or for an id < 0.
    A float array of whole numbers (word ids read from a text file, say) is accepted: its
    values are the ids."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):  # ragged rows
        raise ValueError(f"{name} must be an (N, L) array of word ids (ints >= 0); got "
                         f"rows of different lengths") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold word ids: ints >= 0 (or floats that are whole "
                        f"numbers); got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise ValueError(f"{name} must hold word ids: ints >= 0 (or floats that are whole "
                             f"numbers); got {arr[bad].flat[0].item()!r} in a {arr.dtype} array")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold word ids: ints >= 0; got {arr.min().item()!r}")
    if arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} must hold word ids below 2**63; got {arr.max().item()!r}")
    return arr.astype(np.int64)


def sentence_overlap(a, b) -> float:
    """The fraction of the sentences (rows) of ``a`` that also occur in ``b`` (two (N, L)
    arrays or tensors of word ids): 1 for clones, ≈ 0 for independent draws.

    Rows are compared by their word ids, whatever the dtypes: an int32 array, an int64
    tensor and a float array of the same whole numbers hold the same sentences. Word ids are
    ints >= 0; a float array is accepted when every entry is a whole number (ValueError
    otherwise, and for an id < 0; TypeError for a non-numeric array)."""
    a, b = _word_ids("a", a), _word_ids("b", b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or len(a) == 0:
        raise ValueError(f"a and b must be (N, L) arrays with the same L and N >= 1; got "
                         f"shapes {a.shape} and {b.shape}")
    rows_b = {r.tobytes() for r in np.ascontiguousarray(b)}  # both int64 now: bytes = values
    return float(np.mean([r.tobytes() in rows_b for r in np.ascontiguousarray(a)]))


class _FullBatchSGD(Experiment):
    """Chapter 2's training: full-batch SGD at rate ``lr`` for ``epochs`` steps, members batched,
    each member on the data set of its own data seed (``data_seeds``; None means the model
    seeds). Subclasses declare those fields; :meth:`n_sentences` is the training-set size."""

    def n_sentences(self) -> int:
        return self.n_train

    def seeds_and_members(self):
        return list(self.seeds), _data_seeds(self), None

    def train_kwargs(self) -> dict:
        return dict(steps=self.epochs, optimizer="sgd", lr=self.lr, batch_size=self.n_sentences(),
                    eval_every=self.eval_every, execution="batched")


@dataclass(frozen=True)
class SENConfig(_FullBatchSGD):
    """The topic task and attention model of Lu, Mao & Nayak (2021) §3, §5.1, trained by
    full-batch gradient descent (plain SGD on the whole training set, step ``lr`` = α) with
    cross-entropy.

    ``embed_var`` is σ²/d; ``freeze`` as in :class:`~attn_core.models.TopicAttention`;
    ``query_vars`` (one per seed) with ``train_query=True`` is LMN Appendix B. ``eq8=True`` also
    records :func:`eq8_probe` for the topic words; ``all_words=True`` records every word's score
    and SEN norm (for the distributions of LMN Fig. 1). ``data_seeds`` (default: ``seeds``)
    draws member i's training and test sets from ``data_seeds[i]``; a repeated model seed needs
    a repeated data seed.

    Probes: ``score``/``norm`` (S, E, T) of the topic words and the other
    :func:`~attn_core.metrics.sen_probe` entries, ``test_accuracy`` (S, E), optionally
    ``rate_exact``/``rate_eq8`` (S, E, T) and ``all_score``/``all_norm`` (S, E, vocab).
    Runs batched: for this model one stacked step is measured faster than S single ones on the
    2-core CPU (0.7-0.9 s vs 0.9-1.7 s for 200 epochs of 3 seeds).
    """

    name = "sen"

    classifier: str = "FC"
    m: int = 20
    n_topics: int = 4
    words_per_topic: int = 2
    n_nontopic: int = 5000
    n_train: int = 800
    n_test: int = 200
    dim: int = 15
    embed_var: float = 1e-6
    query_norm: float = 1.0
    freeze: tuple[str, ...] = ()
    train_query: bool = False
    query_vars: tuple[float, ...] | None = None
    lr: float = 1.0
    epochs: int = 1000
    eval_every: int = 20
    seeds: tuple[int, ...] = (0, 1, 2)
    data_seeds: tuple[int, ...] | None = None
    eq8: bool = False
    all_words: bool = False

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        check_choice(f"{cls}.classifier", self.classifier, CLASSIFIERS)
        check_int(f"{cls}.n_topics", self.n_topics, 2)  # TopicTask's and TopicAttention's bounds
        check_int(f"{cls}.dim", self.dim, self.n_topics)
        for f in self.freeze:
            check_choice(f"{cls}.freeze entries", f, ("keys", "embeddings"))
        if self.query_vars is not None and len(self.query_vars) != len(self.seeds):
            raise ValueError(f"{cls}.query_vars must have one entry per seed ({len(self.seeds)}); "
                             f"got {len(self.query_vars)}")
        _check_data_seeds(self)

    def task(self) -> TopicTask:
        """The task of the first member (the engine redraws it for every data seed)."""
        return TopicTask(self.n_topics, self.words_per_topic, self.m, self.n_nontopic,
                         self.n_train, self.n_test, _data_seeds(self)[0])

    def model_fn(self, task):
        return functools.partial(TopicAttention, vocab=task.model_vocab, n_topics=self.n_topics,
                                 dim=self.dim, classifier=self.classifier,
                                 embed_var=self.embed_var, query_norm=self.query_norm,
                                 freeze=self.freeze, train_query=self.train_query)

    def seeds_and_members(self):
        members = None if self.query_vars is None else {"query_var": list(self.query_vars)}
        return list(self.seeds), _data_seeds(self), members

    def probes(self, task) -> list:
        words = task.topic_words
        probes = [sen_probe(words), test_accuracy_probe(_test_sets(self))]
        if self.eq8:
            probes.append(eq8_probe(words))
        if self.all_words:
            probes.append(all_words_probe)
        return probes

    def variant(self) -> str:
        return self.classifier + ("-" + "-".join(self.freeze) if self.freeze else "")

    def cache_name(self) -> str:
        return f"{self.name}-{self.variant()}"

    def label(self, task) -> str:
        return f"SEN {self.variant()} m={self.m}"


#: S1-S5. Paper: η = 0.1 for 5K epochs, 5 runs. Fast: step α = 1.0 for 600 epochs, 3 replicates
#: (training time τ = α·epochs = 600, 1.2× the paper's 500). Full: α = 0.1 for 10K epochs, 5
#: replicates (twice the paper's length, as a margin for Attn-TL, the slowest to converge).
SEN_MAIN = Preset(
    fast=SENConfig(lr=1.0, epochs=600, eval_every=20, all_words=True),
    full=SENConfig(lr=0.1, epochs=10000, eval_every=100, seeds=(0, 1, 2, 3, 4), all_words=True),
    smoke=first_seeds(2),   # a smoke run: its first two seeds (the chapter compares members)
)

#: S6 ablation: Attn-TC vs -KF (scores frozen) vs -EF (embeddings frozen), σ²/d = 0.1.
#: Paper: η = 0.1, 60K epochs. Fast: α = 1.0 for 400 epochs (Attn-TC converges in ~200).
SEN_ABLATION = Preset(
    fast=SENConfig(classifier="TC", embed_var=0.1, lr=1.0, epochs=400, eval_every=10, eq8=True),
    full=SENConfig(classifier="TC", embed_var=0.1, lr=0.1, epochs=60000, eval_every=100,
                   seeds=(0, 1, 2, 3, 4), eq8=True),
    smoke=first_seeds(2),   # a smoke run: its first two seeds (the chapter compares members)
)

#: S7 trainable query (LMN Appendix B): query entries N(0, σ²), σ² = 0.1, 0.5, 1, 2 -- one
#: member each, with the same model seed and the same data set: a sweep of σ² alone.
SEN_QUERY = Preset(
    fast=SENConfig(train_query=True, query_vars=(0.1, 0.5, 1.0, 2.0), seeds=(0, 0, 0, 0),
                   data_seeds=(0, 0, 0, 0), lr=1.0, epochs=300, eval_every=10),
    full=SENConfig(train_query=True, query_vars=(0.1, 0.5, 1.0, 2.0), seeds=(0, 0, 0, 0),
                   data_seeds=(0, 0, 0, 0), lr=0.1, epochs=10000, eval_every=50),
)

#: The sentence lengths m compared in §2 (one seed each; m = 20 is LMN's) ...
SEN_M_VALUES = (5, 10, 20, 40)
#: ... and the config each of them is trained with.
SEN_BY_LENGTH = Preset(
    fast=SENConfig(lr=1.0, epochs=500, eval_every=20, seeds=(0,)),
    full=SENConfig(lr=0.1, epochs=10000, eval_every=100, seeds=(0,)),
)


def run_classifiers(config: SENConfig, classifiers=CLASSIFIERS, **run_kwargs) -> dict:
    """``config`` once per classifier: ``{classifier: History}``."""
    if not isinstance(config, SENConfig):
        raise TypeError(f"config must be a SENConfig; got {type(config).__name__}")
    return {c: replace(config, classifier=c).run(**run_kwargs) for c in classifiers}


def run_ablation(config: SENConfig, **run_kwargs) -> dict:
    """S6: ``{"TC": ..., "TC-KF": ..., "TC-EF": ...}`` (scores or embeddings frozen)."""
    if not isinstance(config, SENConfig):
        raise TypeError(f"config must be a SENConfig; got {type(config).__name__}")
    return {name: replace(config, classifier="TC", freeze=fr, eq8=config.eq8 and not fr)
            .run(**run_kwargs) for name, fr in ABLATION_FREEZE.items()}


def attended_probe():
    """The word each training sentence of each member attends to (its largest score; ties to
    the first position): ``att_all`` (S, N) word ids."""

    @torch.no_grad()
    def probe(model, batch):
        return {"att_all": attended_words(model, batch["x"], batch.get("mask"))}

    return probe


@dataclass(frozen=True)
class PurityConfig(_FullBatchSGD):
    """S8: topic purity against occurrence (LMN §5.2, Fig. 5-7) on
    :class:`~attn_core.data.PurityGradedTask`: a frequent word F⁺ of purity 0.61 (LMN's "best":
    103 of 128 sentences positive) and its mirror F⁻, against rare pure words (36 sentences
    each, LMN's "powerful") that share about a third of their sentences with an F word.

    Probes: ``score``/``norm`` (S, E, 2 + 2K) of F⁺, F⁻ (indices 0, 1) and the rare words, the
    other :func:`~attn_core.metrics.sen_probe` entries, ``att_all`` (S, E, N): the word each
    training sentence attends to (LMN Fig. 6-7), and ``test_accuracy`` (S, E)."""

    name = "purity"

    classifier: str = "TC"
    frequent_counts: tuple[int, int] = (103, 25)
    rare_count: int = 36
    rare_per_class: int = 11
    m: int = 20
    n_nontopic: int = 5000
    n_test: int = 200
    dim: int = 15
    embed_var: float = 1e-6
    lr: float = 1.0
    epochs: int = 1000
    eval_every: int = 10
    seeds: tuple[int, ...] = (0, 1, 2)
    data_seeds: tuple[int, ...] | None = None

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        check_choice(f"{cls}.classifier", self.classifier, CLASSIFIERS)
        check_int(f"{cls}.m", self.m, 2)
        check_int(f"{cls}.dim", self.dim, 2)
        n_own, n_other = self.frequent_counts
        if n_own < 1 or n_own + n_other > self.rare_per_class * self.rare_count:
            raise ValueError(f"{cls}.frequent_counts {self.frequent_counts} must be >= 1 and fit "
                             f"into rare_per_class * rare_count = "
                             f"{self.rare_per_class * self.rare_count} sentences")
        _check_data_seeds(self)

    def task(self) -> PurityGradedTask:
        """The task of the first member (the engine redraws it for every data seed)."""
        return PurityGradedTask(self.frequent_counts, self.rare_count, self.rare_per_class,
                                self.m, self.n_nontopic, self.n_test, _data_seeds(self)[0])

    def model_fn(self, task):
        return functools.partial(TopicAttention, vocab=task.model_vocab, n_topics=2,
                                 dim=self.dim, classifier=self.classifier,
                                 embed_var=self.embed_var)

    def probes(self, task) -> list:
        words = torch.cat([task.frequent_words, task.rare_words])
        return [sen_probe(words), attended_probe(), test_accuracy_probe(_test_sets(self))]

    def n_sentences(self) -> int:
        return 2 * self.rare_per_class * self.rare_count

    def cache_name(self) -> str:
        return f"{self.name}-{self.classifier}"

    def label(self, task) -> str:
        return f"purity {self.classifier}"


#: S8. Paper: SST-2, η = 0.1. Fast: α = 3.0 for 500 epochs (τ = 1,500; measured: Attn-TC's
#: rare words overtake F by epoch ~150, Attn-FC's by ~350), 3 replicates. Full: α = 0.1 for
#: 20K epochs (τ = 2,000), 5 replicates.
PURITY = Preset(
    fast=PurityConfig(lr=3.0, epochs=500, eval_every=20),
    full=PurityConfig(lr=0.1, epochs=20000, eval_every=100, seeds=(0, 1, 2, 3, 4)),
    smoke=first_seeds(2),   # a smoke run: its first two seeds (the chapter compares members)
)


def _unique_pairs(x: torch.Tensor, vocab: int) -> torch.Tensor:
    """The distinct consecutive word pairs of the sentences ``x`` (N, L): (P, 2), sorted."""
    ids = torch.unique((x[:, :-1] * vocab + x[:, 1:]).reshape(-1))
    return torch.stack([ids // vocab, ids % vocab], dim=1)


def pair_sen_probe(topic_pairs: dict, n_sample: int = 500):
    """A probe for :class:`~attn_core.models.TopicAttentionCNN` (LMN Appendix A, Fig. 8-9).

    ``topic_pairs``: ``{model seed: (P, 2) tensor}``, each member's topic pairs. Records, with
    every quantity *centred* on its value at initialisation as LMN do (Δs = s − s₀, Δe = e −
    e₀; v = ‖q‖ Δe):

    - ``pair_score`` (S, P) and ``pair_norm`` (S, P): Δs and ‖q‖‖Δe‖ of the topic pairs, and
      ``pair_word_embedding_norm`` / ``pair_word_key_norm`` (S, P, 2): ‖ν‖ and ‖κ‖ of their
      two words (what the convolutions multiply);
    - over the other pairs that occur in the member's training sentences (the evaluation
      batch), split into ``shared`` (holding a word of some topic pair, e.g. (e, x) after the
      topic pair (s, e)) and ``disjoint`` (every other pair): ``{group}_max_abs_score`` and
      ``{group}_max_norm`` (S,), the largest |Δs| and ‖q‖‖Δe‖, and ``{group}_abs_score`` /
      ``{group}_norm`` (S, n_sample): the values of a fixed random sample of the group's pairs
      (NaN-padded if the group is smaller), for histograms.
    """
    if not _is_seed_map(topic_pairs):
        raise TypeError("topic_pairs must be a dict {model seed: (P, 2) tensor of word pairs}")
    n_sample = check_int("n_sample", n_sample)
    pairs_of = {int(s): torch.as_tensor(p).long() for s, p in topic_pairs.items()}

    @torch.no_grad()
    def probe(model, batch):
        out: dict[str, list] = {}
        qn = model.query.norm(dim=-1)
        for i, seed in enumerate(model.seeds):
            if seed not in pairs_of:
                raise ValueError(f"topic_pairs has no entry for the model seed {seed}")
            tp = pairs_of[seed]
            words = torch.unique(tp)
            cand = _unique_pairs(batch["x"][i].cpu(), model.vocab)
            is_topic = ((cand.unsqueeze(1) == tp.unsqueeze(0)).all(-1)).any(1)
            shares = torch.isin(cand, words).any(1)
            groups = {"shared": cand[shares & ~is_topic], "disjoint": cand[~shares]}
            for name, pairs in [("pair", tp)] + list(groups.items()):
                ds = model.pair_scores(pairs)[i]     # keys start at 0: s₀ = 0 for every pair
                dn = qn[i] * (model.pair_embeddings(pairs)[i]
                              - model.initial_pair_embeddings(pairs)[i]).norm(dim=-1)
                if name == "pair":
                    out.setdefault("pair_score", []).append(ds)
                    out.setdefault("pair_norm", []).append(dn)
                    out.setdefault("pair_word_embedding_norm", []).append(
                        model.embedding[i, tp].norm(dim=-1))
                    out.setdefault("pair_word_key_norm", []).append(
                        model.keys[i, tp].norm(dim=-1))
                    continue
                pick = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(0))
                pick = pick[:n_sample]
                for key, val in (("abs_score", ds.abs()), ("norm", dn)):
                    sample = torch.full((n_sample,), float("nan"))
                    sample[:len(pick)] = val[pick]
                    out.setdefault(f"{name}_{key}", []).append(sample)
                    top = val.max() if len(val) else torch.tensor(float("nan"))
                    out.setdefault(f"{name}_max_{key}", []).append(top)
        return {k: torch.stack(v) for k, v in out.items()}

    return probe


@dataclass(frozen=True)
class CNNConfig(_FullBatchSGD):
    """S9: Attn-TC-CNN (:class:`~attn_core.models.TopicAttentionCNN`) on LMN Appendix A's two
    Markov-chain topics (:class:`~attn_core.data.MarkovPairTask`), full-batch gradient descent
    with step ``lr``. ``train_cnn=False`` freezes the convolutions.

    Probes: :func:`pair_sen_probe` (the topic pairs' Δs and ‖v‖ = ‖q‖‖Δe‖, (S, E, 2P), and the
    other pairs' statistics) and ``test_accuracy`` (S, E)."""

    name = "sen-cnn"

    n_words: int = 200
    pairs_per_topic: int = 2
    length: int = 10
    n_train: int = 4000
    n_test: int = 1000
    dim: int = 15
    embed_var: float = 1e-6
    query_norm: float = 1.0
    train_cnn: bool = True
    lr: float = 0.1
    epochs: int = 3000
    eval_every: int = 50
    n_sample: int = 500
    seeds: tuple[int, ...] = (0, 1, 2)
    data_seeds: tuple[int, ...] | None = None

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        check_int(f"{cls}.n_words", self.n_words, 4 * self.pairs_per_topic)
        check_int(f"{cls}.length", self.length, 2)
        check_int(f"{cls}.dim", self.dim, 2)
        _check_data_seeds(self)

    def task(self) -> MarkovPairTask:
        """The task of the first member (the engine redraws it for every data seed)."""
        return MarkovPairTask(self.n_words, self.pairs_per_topic, self.length, self.n_train,
                              self.n_test, _data_seeds(self)[0])

    def model_fn(self, task):
        return functools.partial(TopicAttentionCNN, vocab=task.model_vocab, n_topics=2,
                                 dim=self.dim, embed_var=self.embed_var,
                                 query_norm=self.query_norm, train_cnn=self.train_cnn)

    def probes(self, task) -> list:
        tasks = member_tasks(self)
        pairs = {s: t.topic_pairs for s, t in zip(self.seeds, tasks)}
        return [pair_sen_probe(pairs, self.n_sample), test_accuracy_probe(_test_sets(self))]

    def cache_name(self) -> str:
        return f"{self.name}-{'trained' if self.train_cnn else 'frozen'}"

    def label(self, task) -> str:
        return f"Attn-TC-CNN ({'trained' if self.train_cnn else 'frozen'} CNN)"


#: S9. Paper: 4,000 / 1,000 sentences, 3,000 epochs, ten runs (99.89% test accuracy; LMN's
#: step is Attn-TC's η = 0.1). Fast: 1,000 / 500 sentences, α = 1.0 for 200 epochs, 3
#: replicates.
SEN_CNN = Preset(
    fast=CNNConfig(n_train=1000, n_test=500, lr=1.0, epochs=200, eval_every=20),
    full=CNNConfig(lr=0.1, epochs=3000, eval_every=50, seeds=tuple(range(10))),
    smoke=first_seeds(2),   # a smoke run: its first two seeds (the chapter compares members)
)


def run_bag_task(task, classifier: str = "TC", dim: int = 200, embed_var: float = 1e-6,
                 lr: float = 0.1, epochs: int = 1000, eval_every: int = 50, seeds=(0,),
                 progress: bool = True) -> History:
    """Train :class:`~attn_core.models.TopicAttention` on a padded bag-of-words data set
    (:class:`~attn_core.data.BagTask`, e.g. SST-2; LMN §5.2 use d = 200, η = 0.1). Probes:
    ``att_all`` (S, E, N) the word each training sentence attends to, and ``test_accuracy``
    when the task has a test set."""
    if not isinstance(task, BagTask):
        raise TypeError(f"task must be a BagTask (e.g. data.sst2_task()); got "
                        f"{type(task).__name__}")
    check_choice("classifier", classifier, CLASSIFIERS)
    epochs, seeds = check_int("epochs", epochs), check_seeds("seeds", seeds)
    n_classes = int(task.train["y"].max()) + 1
    probes = [attended_probe()]
    if task.test is not None:
        probes.append(test_accuracy_probe(task.test_set()))
    model_fn = functools.partial(TopicAttention, vocab=task.model_vocab,
                                 n_topics=max(2, n_classes), dim=dim, classifier=classifier,
                                 embed_var=embed_var)
    return train(model_fn, task, list(seeds), steps=epochs, optimizer="sgd", lr=lr,
                 batch_size=len(task.train["y"]), eval_every=eval_every, probes=probes,
                 progress=progress, execution="batched", desc=f"bags {classifier}")


def sen_gap_table(history: History, m: int, **gap_kwargs) -> np.ndarray:
    """:func:`~attn_core.theory.sen_relative_gap` of every member's every topic-word trajectory
    ``(score[i, :, j], norm[i, :, j])`` of a run: (S, T). ``gap_kwargs`` go to
    ``sen_relative_gap`` (``min_norm``, ``curve``, ``min_score``, ``score_range``,
    ``reduce``); ``m`` is the run's sentence length. NaN where no point qualifies."""
    check_history(history, probes=("score", "norm"))
    sc, nm = history.probes["score"], history.probes["norm"]
    return np.array([[sen_relative_gap(sc[i, :, j], nm[i, :, j], m, **gap_kwargs)
                      for j in range(sc.shape[2])] for i in range(sc.shape[0])])


def sen_gap(history: History, m: int) -> float:
    """S3: the largest relative gap of a run's topic-word trajectories to LMN Eq. 10, over
    every seed and topic word: :func:`~attn_core.theory.sen_relative_gap` of
    ``(score[i, :, j], norm[i, :, j])`` (points with ‖v‖ > 0.1) for all members i and topic
    words j of the ``score``/``norm`` probes (S, E, T); ``m`` is the run's sentence length.

    NaN-aware by decision: a trajectory with no point past ‖v‖ > 0.1 has no gap to measure
    (its ``sen_relative_gap`` is NaN) and is left out, whatever its place in the order; NaN
    only when no trajectory has such a point (a claim on it then fails). Python's ``max``
    over the gaps dropped such a word unless it came first."""
    gaps = sen_gap_table(history, m)
    return float("nan") if np.isnan(gaps).all() else float(np.nanmax(gaps))


def untrained_run(history: History) -> History:
    """The run a model trained zero steps would have recorded: ``history`` with every
    evaluation replaced by its first one (step 0, before any update) and every step's training
    loss by the first step's (the loss of the initial parameters).

    The claims cell runs each finding's own computation on it to get the finding's
    ``untrained=`` value: an untrained model keeps its initial scores (all 0), norms and
    attention at every evaluation, so a quantity that needs training to move comes out as its
    starting value -- 0, a uniform attention, chance accuracy -- or as NaN where it is undefined
    before training (a ratio 0/0, a rank correlation of a constant, no point past ‖v‖ > 0.1).
    The model (if any) is dropped: it is the trained one."""
    check_history(history)

    def first(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        return np.repeat(a[:, :1], a.shape[1], axis=1)

    return replace(history, train_loss=first(history.train_loss),
                   metrics={k: first(v) for k, v in history.metrics.items()},
                   probes={k: first(v) for k, v in history.probes.items()}, model=None,
                   cached=False, saved_at=None)


# --------------------------------------------------------------------------- the model (§1)
def model_diagram() -> Figure:
    """Attn-FC, -TC and -TL (:class:`~attn_core.models.TopicAttention`) as boxes and arrows:
    a sentence's words, their keys κ_w and embeddings ν_w, the attention the fixed query q
    reads off the keys, the attention-weighted embedding ν̄ and the classifier on top (the
    only part in which the three models differ)."""
    boxes = {
        "words": (0.5, 0.07, r"sentence $\chi$: $m + 1$ words $w$", "input"),
        "keys": (0.2, 0.32, r"keys $\kappa_w$", "weight"),
        "emb": (0.76, 0.32, r"embeddings $\nu_w$", "weight"),
        "att": (0.2, 0.6, "attention\n" + r"$e^{s_w}/Z(\chi)$", "attention"),
        "bar": (0.76, 0.6, r"$\bar\nu = \sum_w \nu_w\, e^{s_w}/Z$", "state"),
        "clf": (0.5, 0.9, "classifier FC / TC / TL\n" + r"$\to$ topic $y$", "output"),
    }
    arrows = [("words", "keys"), ("words", "emb"), ("keys", "att", r"$s_w = q^\top\kappa_w$"),
              ("att", "bar"), ("emb", "bar"), ("bar", "clf")]
    return block_diagram(boxes, arrows, size=(WIDTH_IN, 4.4), title="The model of LMN §3")


# --------------------------------------------------------------------------- Eq. 10 (§2-§3)
def sen_score(norm, m: int) -> np.ndarray:
    """The score s >= 0 at which LMN Eq. 10 gives the SEN norm ``norm`` (>= 0) for ``m``
    non-topic words per sentence: the inverse of :func:`~attn_core.theory.sen_curve`, by
    bisection (the curve increases in s, and s <= ‖v‖²/2 since (e^s − 1)/m >= 0)."""
    v = check_real_array("norm", norm, finite=False)
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"norm must be finite and >= 0; got {norm!r}")
    sen_curve(0.0, m)  # validates m (TypeError / ValueError naming it)
    lo, hi = np.zeros_like(v), v ** 2 / 2
    for _ in range(200):
        mid = (lo + hi) / 2
        below = sen_curve(mid, m) < v
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def sen_attention(norm, m: int) -> np.ndarray:
    """The share of its sentence's attention a topic word of SEN norm ``norm`` holds among
    ``m`` non-topic words of score 0: e^s / (e^s + m) at the score s = :func:`sen_score`
    (Eq. 10 inverted). 1/(1 + m) at norm 0, exactly ½ at the norm Eq. 10 gives s = ln m."""
    s = sen_score(norm, m)
    return 1.0 / (1.0 + m * np.exp(-s))


#: The sentence lengths of §2's Eq. 10 slider (its kernel-free frames).
SEN_VIEW_M = (1, 2, 5, 10, 20, 40, 100)


def sen_curve_view(m: int, s_max: float = 6.0, n: int = 241) -> dict:
    """What §2's slider shows for ``m`` non-topic words per sentence, on ``n`` scores
    ``s`` in [0, ``s_max``]: ``eq10`` (LMN Eq. 10, ‖v‖ = √(2(s + (e^s − 1)/m))), ``sqrt2s``
    (√(2s): Eq. 10 without its e^s/m term), ``attention`` (the topic word's share
    e^s/(e^s + m), the non-topic scores at 0), and the point of half attention,
    ``s_half`` = ln m with its norm ``v_half``. Pure and fast: 0.07 ms per call (n = 241)
    on the book's 2-core CPU."""
    m = check_int("m", m, 1)
    s_max = check_real("s_max", s_max, 0.0, low_open=True)
    n = check_int("n", n, 2)
    s = np.linspace(0.0, s_max, n)
    s_half = float(np.log(m))
    return {"s": s, "eq10": sen_curve(s, m), "sqrt2s": np.sqrt(2 * s),
            "attention": 1.0 / (1.0 + m * np.exp(-s)), "s_half": s_half,
            "v_half": float(sen_curve(s_half, m))}


def draw_sen_curve(m: int) -> Figure:
    """§2's slider frame for ``m`` (:func:`sen_curve_view`): Eq. 10 against √(2s) (top) and
    the topic word's attention (bottom), on fixed axes, with the score ln m of half
    attention marked. Measured on the book's 2-core CPU: 0.25 s per call, drawn and saved
    as a PNG (the view itself: under a millisecond)."""
    d = sen_curve_view(m)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(WIDTH_IN, 5.8), sharex=True)
    a1.plot(d["s"], d["eq10"], color="k", lw=2, label="Eq. 10")
    a1.plot(d["s"], d["sqrt2s"], color="grey", ls="--", lw=1.5, label=r"$\sqrt{2s}$")
    a1.plot(d["s_half"], d["v_half"], "o", color="C3", ms=7, label=r"$s = \ln m$")
    a1.set(ylabel=r"SEN norm $\|v\|$", ylim=(0, 6), title=f"$m = {m}$ non-topic words")
    a1.legend(loc="lower right")
    a2.plot(d["s"], d["attention"], color="C0", lw=2)
    a2.plot(d["s_half"], 0.5, "o", color="C3", ms=7)
    for ax in (a1, a2):
        ax.axvline(d["s_half"], color="C3", lw=1, ls=":")
    a2.set(xlabel="score $s$", ylabel="attention on\nthe topic word", ylim=(0, 1),
           xlim=(0, d["s"][-1]))
    return fig


def draw_attention_at_norm(m: int, v_mark: float | None = None, measured: dict | None = None,
                           v_max: float | None = None) -> Figure:
    """Exercise 2.3's answer space for ``m`` non-topic words: the attention a topic word of
    SEN norm ‖v‖ gets (:func:`sen_attention`) against ‖v‖ in [0, ``v_max``] (default: 4, or
    past the largest norm shown), with m = 20 (§2's runs) dashed for reference; ``v_mark``
    marks one norm and its attention; ``measured`` ``{label: (norm, attention)}`` adds runs'
    measured points. Measured on the book's 2-core CPU: 0.2 s per call, drawn and saved
    as a PNG."""
    m = check_int("m", m, 1)
    if v_mark is not None:
        v_mark = check_real("v_mark", v_mark, 0.0)
    if measured is not None and not (isinstance(measured, dict) and all(
            isinstance(p, tuple) and len(p) == 2 for p in measured.values())):
        raise TypeError("measured must be None or a dict {label: (norm, attention)}")
    for label, (v, a) in (measured or {}).items():
        check_real(f"measured[{label!r}] norm", v, 0.0)
        check_real(f"measured[{label!r}] attention", a, 0.0, 1.0)
    if v_max is None:
        shown = [v_mark or 0.0] + [float(p[0]) for p in (measured or {}).values()]
        v_max = max(4.0, 1.1 * max(shown))
    v_max = check_real("v_max", v_max, 0.0, low_open=True)
    v = np.linspace(0.0, v_max, 161)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 4.2))
    if m != 20:
        ax.plot(v, sen_attention(v, 20), color="grey", ls="--", lw=1.5, label="$m = 20$")
    ax.plot(v, sen_attention(v, m), color="k", lw=2, label=f"$m = {m}$")
    if v_mark is not None:
        a = float(sen_attention(v_mark, m))
        ax.plot(v_mark, a, "o", color="C3", ms=8,
                label=rf"$\|v\| = {v_mark:.2f}$: {a:.0%}")
    for k, (label, (vn, at)) in enumerate((measured or {}).items()):
        ax.plot(vn, at, "s", color=f"C{k}", ms=7, label=label)
    ax.set(xlabel=r"SEN norm $\|v\|$", ylabel="attention on\nthe topic word",
           xlim=(0, v_max), ylim=(0, 1), title=f"$m = {m}$ non-topic words")
    ax.legend(loc="upper left")
    return fig
