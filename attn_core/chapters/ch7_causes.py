"""Chapter 7's causes: the runs that remove the chapter's confounds and ask whether the end
token's cost is *counting* or *competition* (a part of
:mod:`attn_core.chapters.ch7_end_token`, which re-exports all of it; read it from there).

:class:`CauseTask` is chapter 7's copy task with five more options, :class:`CauseConfig`
chapter 7's configuration with them; :data:`CAUSE_ROWS` names the runs, each 40 seeds of
chapter 7's fast model at L = 20 trained to :data:`CAUSE_STEPS` steps and stored
(:data:`CAUSES_STORED`, ``benchmarks/ch7_end_token/causes.py``):

- **the same parameters without the end token** (``spare_word``): "none" has one word
  fewer than "both", so every parameter of a seed starts elsewhere; with the end token's
  word kept in the vocabulary, unused, the model and each seed's initial parameters are
  those of "both", and the two rows are paired;
- **masking that keeps the end step's target** (``mask_end_words``): the copied words'
  steps may not attend to the source's end token, the end step still may;
- **counting or competition**: an explicit step index into the decoder
  (``step_input``); a constant word the target starts with (``front_word``: it must be
  predicted, and needs no counting); the end step's loss weighted (``end_weight``); and
  each seed's initialisation crossed with other data (``data_seeds``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import torch
from torch import Tensor, nn

from ..checks import check_choice, check_int, check_real, check_seeds
from ..data import CopyTask
from ..models import Seq2Seq
from ..rows import RowFamily
from ..stacked import generators, normal_init, stacked_parameter
from ..training import OPTIMIZERS
from .ch7_runs import END_BASE, SEEDS, EndTokenConfig, condition_config

__all__ = ["CauseTask", "StepSeq2Seq", "FlagSeq2Seq", "CauseConfig", "FlagConfig", "CAUSE_ROWS", "CAUSE_STEPS",
           "CAUSE_FILE", "OTHER_SEEDS", "SGD_LR", "cause_config", "CAUSES_STORED", "load_causes"]

#: What seeds the step embedding of :class:`StepSeq2Seq` (added to each member's seed), so
#: that every other parameter is drawn as in :class:`~attn_core.models.Seq2Seq`.
STEP_EMBEDDING_SALT = 611_953


@dataclass(frozen=True)
class CauseTask(CopyTask):
    """:class:`~attn_core.data.CopyTask` with chapter 7's further options (each at its
    default leaves the task exactly a ``CopyTask``):

    - ``spare_word``: without an end token (``eos=False``), the vocabulary still holds the
      end token's word (id ``vocab``), which no sequence uses, so the decoder's start symbol
      and the model's sizes are those of the task with the end token;
    - ``front_word``: the target begins with that word, a constant the decoder must predict
      at its first step from the start symbol alone; it comes from no source position
      (``align_mask`` False there). Needs ``spare_word``. The copied words follow, one step
      later;
    - ``end_weight``: the end step's loss counts ``end_weight`` times a copied word's
      (``loss_weight`` (B, T)); the loss is the weighted mean over the steps;
    - ``mask_end_words``: the copied words' steps may not attend to the source's end token;
      the end step still may (``src_mask`` (B, T, L'), one row per decoder step).
    """

    spare_word: bool = False
    front_word: bool = False
    end_weight: float = 1.0
    mask_end_words: bool = False

    def __post_init__(self):
        super().__post_init__()
        for name in ("spare_word", "front_word", "mask_end_words"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False; got {getattr(self, name)!r}")
        if self.spare_word and self.eos:
            raise ValueError("spare_word=True keeps the end token's word unused: it needs "
                             "eos=False")
        if self.front_word and not self.spare_word:
            raise ValueError("front_word=True puts the spare word at the target's front: it "
                             "needs spare_word=True")
        if self.front_word and (self.start or self.min_length is not None):
            raise ValueError("front_word=True needs no start token and one length "
                             "(start=False, min_length=None)")
        w = check_real("end_weight", self.end_weight, 0.0)
        if not w > 0 or not math.isfinite(w):
            raise ValueError(f"end_weight must be a finite number > 0; got {self.end_weight!r}")
        if w != 1.0 and not (self.eos_in_target and self.end_loss):
            raise ValueError("end_weight != 1 weights the end step's loss: it needs an end "
                             "token in the target and its loss (eos=True, end_loss=True)")
        if self.mask_end_words and (not (self.eos_in_source and self.eos_in_target)
                                    or self.mask_end or self.min_length is not None):
            raise ValueError("mask_end_words=True needs the end token on both sides "
                             "(eos=True, eos_side='both'), mask_end=False and one length")

    @property
    def bos(self) -> int:
        return super().bos + int(self.spare_word)

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        batch = super().sample(generator, batch_size)
        B = batch["src"].shape[0]
        if self.front_word:
            front = torch.full((B, 1), self.vocab, dtype=torch.long)
            tgt = torch.cat([front, batch["tgt"]], 1)
            batch["tgt"] = tgt
            batch["tgt_in"] = torch.cat(
                [torch.full((B, 1), self.bos, dtype=torch.long), tgt[:, :-1]], 1)
            batch["align"] = torch.cat([torch.zeros((B, 1), dtype=torch.long),
                                        batch["align"]], 1)
            batch["align_mask"] = torch.cat([torch.zeros((B, 1), dtype=torch.bool),
                                             torch.ones((B, self.length), dtype=torch.bool)],
                                            1)
        ends = batch["tgt"] == self.vocab if self.eos_in_target else None
        if self.end_weight != 1.0:
            w = torch.ones(batch["tgt"].shape)
            batch["loss_weight"] = torch.where(ends, torch.tensor(self.end_weight), w)
        if self.mask_end_words:
            T, Lp = batch["tgt"].shape[1], batch["src"].shape[1]
            on_end = (batch["src"] == self.vocab)[:, None, :].expand(B, T, Lp)
            batch["src_mask"] = ~(on_end & ~ends[:, :, None])
        return batch


class StepSeq2Seq(Seq2Seq):
    """:class:`~attn_core.models.Seq2Seq` whose decoder also reads the step index: a learned
    vector ``p_t`` (N(0, 1) at initialisation, as a word's) added to the embedding of its
    input at step t, for ``max_steps`` steps. ``p`` is drawn from each member's seed plus
    :data:`STEP_EMBEDDING_SALT`, so every other parameter starts as in ``Seq2Seq``."""

    def __init__(self, *args, max_steps: int, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1; got {max_steps!r}")
        gens = generators([s + STEP_EMBEDDING_SALT for s in self.seeds])
        self.step_emb = stacked_parameter(gens, (max_steps, self.embed), normal_init(1.0))

    def _decoder_inputs(self, tgt_in: Tensor) -> Tensor:
        T = tgt_in.shape[-1]
        if T > self.step_emb.shape[1]:
            raise ValueError(f"tgt_in has {T} steps; this model reads at most "
                             f"{self.step_emb.shape[1]} (max_steps)")
        return super()._decoder_inputs(tgt_in) + self.step_emb[:, None, :T, :]


class FlagSeq2Seq(Seq2Seq):
    """:class:`~attn_core.models.Seq2Seq` whose decoder reads a mark at its last step: a
    learned vector ``f`` (N(0, 1) at initialisation, as a word's) added to the embedding of
    its input there, and nowhere else. It tells the last step apart from the others
    without giving its attention anywhere new to go. ``f`` is drawn from each member's seed
    plus :data:`FLAG_SALT`, so every other parameter starts as in ``Seq2Seq``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        gens = generators([s + FLAG_SALT for s in self.seeds])
        self.flag = stacked_parameter(gens, (self.embed,), normal_init(1.0))

    def _decoder_inputs(self, tgt_in: Tensor) -> Tensor:
        x = super()._decoder_inputs(tgt_in)
        last = torch.zeros(tgt_in.shape[-1], 1, dtype=x.dtype, device=x.device)
        last[-1] = 1.0
        return x + last * self.flag[:, None, None, :]


#: What seeds the mark of :class:`FlagSeq2Seq` (added to each member's seed).
FLAG_SALT = 733_819


@dataclass(frozen=True)
class CauseConfig(EndTokenConfig):
    """:class:`~attn_core.chapters.ch7_end_token.EndTokenConfig` with the options of
    :class:`CauseTask` (``spare_word``, ``front_word``, ``end_weight``,
    ``mask_end_words``), ``step_input`` (the decoder reads the step index:
    :class:`StepSeq2Seq`) and ``data_seeds`` (run i draws its data from ``data_seeds[i]``
    instead of its own seed: initialisation and data crossed) and ``optimizer`` ("adam",
    chapter 4's, or "sgd": plain gradient steps of size ``lr``)."""

    name = "endtok-cause"

    spare_word: bool = False
    front_word: bool = False
    end_weight: float = 1.0
    mask_end_words: bool = False
    step_input: bool = False
    data_seeds: tuple[int, ...] | None = None
    optimizer: str = "adam"

    def __post_init__(self):
        cls = type(self).__name__
        if not isinstance(self.step_input, bool):
            raise TypeError(f"{cls}.step_input must be True or False; got "
                            f"{self.step_input!r}")
        check_choice(f"{cls}.optimizer", self.optimizer, tuple(OPTIMIZERS))
        if self.data_seeds is not None:
            seeds = tuple(check_seeds(f"{cls}.data_seeds", self.data_seeds))
            if len(seeds) != len(self.seeds):
                raise ValueError(f"{cls}.data_seeds must have one seed per seed "
                                 f"({len(self.seeds)}); got {len(seeds)}")
            object.__setattr__(self, "data_seeds", seeds)
        super().__post_init__()

    def label(self, task) -> str:
        changed = [f"{f}={getattr(self, f)}" for f in ("spare_word", "front_word",
                   "end_weight", "mask_end_words", "step_input")
                   if getattr(self, f) != CauseConfig.__dataclass_fields__[f].default]
        crossed = [] if self.data_seeds is None else [f"data from {self.data_seeds[0]}"]
        return f"{super().label(task)} {' '.join(changed + crossed)}"

    def task(self) -> CauseTask:
        base = super().task()
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init}
        return CauseTask(**fields, spare_word=self.spare_word, front_word=self.front_word,
                         end_weight=self.end_weight, mask_end_words=self.mask_end_words)

    def model_fn(self, task):
        if not self.step_input:
            return super().model_fn(task)
        base = super().model_fn(task)
        return functools.partial(StepSeq2Seq, *base.args, **base.keywords,
                                 max_steps=task.length + 2)

    def first_members(self, n: int):
        n = check_int("n", n, 1, len(self.seeds))
        return replace(self, seeds=self.seeds[:n],
                       data_seeds=None if self.data_seeds is None else self.data_seeds[:n])

    def train_kwargs(self) -> dict:
        return {**super().train_kwargs(), "optimizer": self.optimizer}

    def seeds_and_members(self):
        seeds = list(self.seeds)
        return seeds, (None if self.data_seeds is None else list(self.data_seeds)), None


@dataclass(frozen=True)
class FlagConfig(CauseConfig):
    """:class:`CauseConfig` whose decoder reads a mark at its last step
    (:class:`FlagSeq2Seq`, with ``end_flag``): with the end token in the target, the end
    step is marked."""

    name = "endtok-flag"

    end_flag: bool = True

    def __post_init__(self):
        if not isinstance(self.end_flag, bool):
            raise TypeError(f"{type(self).__name__}.end_flag must be True or False; got "
                            f"{self.end_flag!r}")
        super().__post_init__()

    def label(self, task) -> str:
        return f"{super().label(task)}{' end step marked' if self.end_flag else ''}"

    def model_fn(self, task):
        base = super().model_fn(task)
        if not self.end_flag:
            return base
        if base.func is not Seq2Seq:
            raise ValueError(f"{type(self).__name__}.end_flag marks chapter 4's Seq2Seq; "
                             f"it does not combine with step_input")
        return functools.partial(FlagSeq2Seq, *base.args, **base.keywords)


#: How long the cause runs train: 1,000 steps (evaluations every 20), so that each is read as
#: a time to the level, paired with the first 1,000 steps of chapter 7's long runs.
CAUSE_STEPS = 1000
#: The seeds of the crossed runs' other half (other data for the same initialisations, and
#: other initialisations for the same data).
OTHER_SEEDS = tuple(range(1000, 1040))
#: The rate of the SGD rows: tuned before they ran on "none, padded" alone, seeds 0-9,
#: rates 0.1, 0.3, 1 and 3 (``benchmarks/ch7_end_token/sgd_tune.py``: 0, 0, 10 and 2 of 10
#: above 0.95 by step 1,000).
SGD_LR = 1.0
#: The rows: name -> (chapter 7's condition, the fields of :class:`CauseConfig` that
#: differ). Every row: L = 20, permutations, seeds 0-39 (run i paired with the long runs'
#: run i), :data:`CAUSE_STEPS` steps.
CAUSE_ROWS = {
    "none, padded": ("none", {"spare_word": True}),
    "masked, words only": ("both", {"mask_end_words": True}),
    "step index": ("both", {"step_input": True}),
    "none, step index": ("none", {"spare_word": True, "step_input": True}),
    "front word": ("none", {"spare_word": True, "front_word": True}),
    "end weight 0.1": ("both", {"end_weight": 0.1}),
    "end weight 0.3": ("both", {"end_weight": 0.3}),
    "end weight 3": ("both", {"end_weight": 3.0}),
    "other data": ("both", {"data_seeds": OTHER_SEEDS}),
    "other init": ("both", {"seeds": OTHER_SEEDS, "data_seeds": SEEDS}),
    "SGD, none, padded": ("none", {"spare_word": True, "optimizer": "sgd", "lr": SGD_LR}),
    "SGD, both": ("both", {"optimizer": "sgd", "lr": SGD_LR}),
    "end step marked": ("both", {"end_flag": True}),
}
#: Where they are stored (``benchmarks/ch7_end_token/causes.py``).
CAUSE_FILE = Path(__file__).with_name("data") / "ch7_causes.json"


def cause_config(row: str, seeds: Sequence[int] | None = None) -> CauseConfig:
    """Row ``row`` of :data:`CAUSE_ROWS`: its condition at L = 20 on permutations, trained
    to :data:`CAUSE_STEPS` steps, with its fields; ``seeds`` (default: the row's) takes the
    first runs of a row (a prefix of its seeds, as :meth:`first_members` does)."""
    row = check_choice("row", row, tuple(CAUSE_ROWS))
    name, fields = CAUSE_ROWS[row]
    base = END_BASE.fast
    kind = FlagConfig if "end_flag" in fields else CauseConfig
    base = kind(**{f: getattr(base, f) for f in EndTokenConfig.__dataclass_fields__})
    cfg = replace(condition_config(name, 20, "permutation", None,
                                   replace(base, steps=CAUSE_STEPS)), **fields)
    if seeds is None:
        return cfg
    seeds = tuple(check_seeds("seeds", seeds))
    n = len(seeds)
    if seeds != cfg.seeds[:n]:
        raise ValueError(f"seeds must be the first runs of row {row!r} "
                         f"({cfg.seeds[0]}, {cfg.seeds[1]}, ...); got {seeds[:3]}...")
    return cfg.first_members(n)


#: The stored cause runs: row name (:data:`CAUSE_ROWS`) -> configuration
#: (:func:`cause_config`), seeds, evaluation steps and every evaluation's copy and token
#: accuracy (4 decimals), checked as the sweep is.
CAUSES_STORED = RowFamily(
    CAUSE_FILE, "python benchmarks/ch7_end_token/causes.py", tuple(CAUSE_ROWS), cause_config,
    CauseConfig, {k: k for k in ("copy_acc", "token_acc")})
load_causes = CAUSES_STORED.load
