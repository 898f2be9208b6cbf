"""Chapter 8's conditions: every stored condition of chapters 4-7 read as one list, and the
held-out conditions that chapter 8 predicted before it trained them.

A :class:`Condition` is one row of a chapter's stored runs or sweeps: what its data are (the
length, the vocabulary, the distribution, where an end token is and how much the loss of a
target step that copies nothing counts), which model it trains, and each run's success
(the chapter's own measure, above 0.95 at the row's budget). :func:`conditions` reads every
stored family of chapters 4-7 into that one form; chapters 1-3 have no stored runs (their
experiments train live, and ask *where* attention goes, not whether it gets there).

The held-out conditions (:data:`HELD_OUT_ROWS`) were chosen, and their predictions written
to ``data/ch8_predictions.json`` and committed, before any of them was trained
(``benchmarks/ch8_scorecard/held_out.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ..checks import check_choice, check_seeds
from ..metrics import first_step
from ..rows import RowFamily
from ..stored import config_record, load_entry
from . import ch4_copy as ch4
from . import ch5_multihead as ch5
from . import ch6_transformer as ch6
from . import ch7_end_token as ch7
from .ch7_runs import END_BASE, EndTokenConfig, sweep_config

__all__ = ["Condition", "conditions", "FAMILIES", "BUDGET", "HELD_OUT_ROWS",
           "HELD_OUT_SEEDS", "held_out_config", "load_held_out_runs", "PUSH_ROWS",
           "score_push_config", "load_scorecard_pushes", "PREDICTIONS_FILE",
           "held_out_conditions"]

#: The budget of chapter 7's rows (chapter 4's fast budget): rows trained longer (the
#: causes, 1,000 steps) are read up to it, as chapter 7 reads them.
BUDGET = 300
#: Where the predictions for the held-out conditions were committed before their runs.
PREDICTIONS_FILE = Path(__file__).with_name("data") / "ch8_predictions.json"


@dataclass(frozen=True)
class Condition:
    """One stored condition: ``chapter`` and ``family`` (where it is stored), ``name`` (its
    row there), ``model`` ("LSTM", "GRU, K heads", "Transformer, K heads"), its data
    (``length`` L, data words ``vocab`` V, ``distribution``, ``min_length`` if lengths
    vary, ``target_permutation`` if the target is a fixed reordering, ``attention``
    "learned" or frozen "uniform"), ``end`` (where an end token is: "both", "source",
    "target" or "none"), ``extra`` (how much the loss of a target step that copies no
    source word counts against a copied word's: 1 for the end step, its weight where
    chapter 7 changed it, 0 without one), ``notes`` (what else differs from chapter 4's
    model: an optimiser, a masked position), the ``budget`` its success is read at, and
    ``ok`` (runs,), each run's success; ``per_run`` False where the family stores only a
    count (the order of ``ok`` then means nothing); ``times`` (runs,), each run's first
    evaluation step above the level, NaN for a run that never got there within the budget
    (censored), None where the family stores no curves."""

    chapter: int
    family: str
    name: str
    model: str
    length: int
    vocab: int
    distribution: str
    end: str
    extra: float
    budget: int
    ok: np.ndarray = field(compare=False, repr=False)
    seeds: tuple = ()
    min_length: int | None = None
    target_permutation: bool = False
    attention: str = "learned"
    notes: str = ""
    per_run: bool = True
    times: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        ok = np.asarray(self.ok)
        if ok.dtype != bool or ok.ndim != 1 or ok.size < 1:
            raise TypeError(f"Condition.ok must be a 1-D bool array of at least one run; got "
                            f"{ok.dtype} of shape {ok.shape}")
        if self.times is not None:
            t = np.asarray(self.times)
            if t.dtype.kind != "f" or t.shape != ok.shape:
                raise TypeError(f"Condition.times must be a float array of one time a run "
                                f"{ok.shape}; got {t.dtype} of shape {t.shape}")
            done = t[~np.isnan(t)]
            if ((done < 0) | (done > self.budget)).any():
                raise ValueError(f"Condition.times must lie in [0, budget = {self.budget}] "
                                 f"(NaN: never reached)")

    @property
    def k(self) -> int:
        return int(np.sum(self.ok))

    @property
    def n(self) -> int:
        return int(np.size(self.ok))

    @property
    def rate(self) -> float:
        return self.k / self.n

    @property
    def label(self) -> str:
        """``"chN family: name"``, short."""
        return f"ch{self.chapter} {self.family}: {self.name}"


#: The stored families read, in order: (chapter, family, what it holds).
FAMILIES = (
    (4, "runs", "chapter 4's stored runs (whole), each its own configuration"),
    (4, "authors", "the authors' code at chapter 4's fast settings (final accuracies)"),
    (4, "ablation", "chapter 4's ablation of the authors' model (counts only)"),
    (5, "heads", "chapter 5's stored head experiments (GRU)"),
    (6, "sweep", "chapter 6's Transformer sweep (fast size)"),
    (6, "full sweep", "chapter 6's Transformer sweep (the papers' size)"),
    (7, "sweep", "chapter 7's sweep (LSTM, 40 seeds)"),
    (7, "causes", "chapter 7's causes (read to step 300)"),
    (7, "rescue", "chapter 7's multi-head GRU with and without the end token"),
    (7, "transformer", "chapter 7's Transformer with and without the end token"),
    (7, "seeds 40-79", "chapter 7's held-out seeds"),
)


def _end(cfg: dict) -> str:
    if not cfg.get("eos", False):
        return "none"
    return cfg.get("eos_side", "both")


def _extra(cfg: dict) -> float:
    """The weight of the loss of a target step that copies nothing (see :class:`Condition`)."""
    if cfg.get("front_word", False):
        return 1.0
    if _end(cfg) in ("both", "target") and cfg.get("end_loss", True):
        return float(cfg.get("end_weight", 1.0))
    return 0.0


_NOTES = (("mask_end", True, "end token masked"), ("end_score_grad", False,
          "no end score gradient"), ("end_state_grad", False, "end loss to outputs only"),
          ("start", True, "start token"), ("mask_start", True, "start token masked"),
          ("spare_word", True, "padded"), ("front_word", True, "front word"),
          ("mask_end_words", True, "end barred from words"), ("step_input", True,
          "step index"), ("end_flag", True, "end step marked"), ("optimizer", "sgd",
          "SGD"), ("head_proj", False, "no projection"), ("bias", False, "no bias"))


def _notes(cfg: dict) -> str:
    return ", ".join(text for f, v, text in _NOTES if cfg.get(f) == v)


def _from_dict(chapter: int, family: str, name: str, cfg: dict, ok, model: str,
               budget: int, seeds=(), per_run: bool = True, times=None) -> Condition:
    L = int(cfg["length"])
    dist = cfg.get("distribution", "permutation")
    V = cfg.get("vocab")
    V = int(V) if V is not None else (2 * L if dist == "mixture" else L)
    return Condition(chapter, family, name, model, L, V, dist, _end(cfg), _extra(cfg),
                     budget, np.asarray(ok, dtype=bool), tuple(seeds),
                     cfg.get("min_length"), cfg.get("target_permutation") is not None
                     or cfg.get("permutation_seed") is not None,
                     cfg.get("attention", "learned"), _notes(cfg), per_run, times)


def _lstm(cfg: dict) -> str:
    cell = str(cfg.get("cell", "lstm")).upper()
    heads = int(cfg.get("heads", 1))
    return cell if heads == 1 else f"{cell}, {heads} heads"


def _rows(chapter: int, family: str, rows: dict, model, key: str = "copy_acc",
          level: float = ch4.SUCCESS_LEVEL, upto: int | None = None) -> list[Condition]:
    out = []
    for name, row in rows.items():
        if name.startswith("_"):
            continue
        if upto is not None:
            row = ch7.upto(row, upto)
        k = key if key in row else "token_acc"
        acc = np.asarray(row[k], dtype=float)
        cfg = row["config"]
        inner = cfg.get("copy", cfg)
        m = model(cfg) if callable(model) else model
        out.append(_from_dict(chapter, family, name, {**inner, **cfg}, acc[:, -1] > level,
                              m, int(row["eval_steps"][-1]), row.get("seeds", ()),
                              times=first_step(row["eval_steps"], acc, level)))
    return out


def _ch4_runs() -> list[Condition]:
    out = []
    for cfg in ch4.stored_configs():
        h = load_entry(cfg)
        acc = np.asarray(h.metrics["token_acc"], dtype=float)
        ok = acc[:, -1] > ch4.SUCCESS_LEVEL
        rec = config_record(cfg)
        name = rec["distribution"] + ("" if rec.get("vocab") is None else
                                      f", V={rec['vocab']}")
        if rec.get("attention") != "learned":
            name += f", attention {rec['attention']}"
        if rec.get("permutation_seed") is not None:
            name += ", fixed reordering"
        name += f", L={rec['length']}"
        out.append(_from_dict(4, "runs", name, rec, ok, "LSTM",
                              int(h.eval_steps[-1]), rec["seeds"],
                              times=first_step(h.eval_steps, acc, ch4.SUCCESS_LEVEL)))
    return out


def _ch4_tables() -> list[Condition]:
    base = config_record(ch4.COPY_BASE.fast)
    out = []
    for name, accs in ch4.authors_code_fast().items():
        cfg = {**base, **({"distribution": "distinct", "vocab": 3 * base["length"] // 2}
                          if name == "control" else {})}
        out.append(_from_dict(4, "authors", name, cfg,
                              np.asarray(accs) > ch4.SUCCESS_LEVEL, "LSTM", base["steps"],
                              per_run=True))
    for name, (proj, bias, eos, k, n) in ch4.model_ablation_fast().items():
        cfg = {**base, "head_proj": proj, "bias": bias, "eos": eos}
        ok = np.arange(n) < k
        out.append(_from_dict(4, "ablation", name, cfg, ok, "LSTM", base["steps"],
                              per_run=False))
    return out


def _ch5() -> list[Condition]:
    out = []
    for cfg in ch5.stored_configs():
        h = load_entry(cfg)
        rec = config_record(cfg)
        copy = rec["copy"]
        acc = np.asarray(h.metrics["token_acc"], dtype=float)
        ok = acc[:, -1] > ch4.SUCCESS_LEVEL
        name = rec["tag"].replace("heads-", "")
        if name == "screen":
            name += f", base {rec['base_seed']}"
        out.append(_from_dict(5, "heads", name, copy, ok,
                              _lstm(copy), int(h.eval_steps[-1]),
                              tuple(range(len(ok))),
                              times=first_step(h.eval_steps, acc, ch4.SUCCESS_LEVEL)))
    return out


def _transformer(cfg: dict) -> str:
    heads = int(cfg.get("heads", 1))
    return f"Transformer, {heads} head" + ("s" if heads > 1 else "")


def conditions() -> list[Condition]:
    """Every stored condition of chapters 4-7 (:data:`FAMILIES`), each run's success read as
    its chapter reads it: token accuracy (copied words only where the family stores it)
    above 0.95 at the row's last evaluation, chapter 7's causes at step 300. Rows of chapter
    7's long runs are the sweep's conditions trained on: they give times, not conditions."""
    out = _ch4_runs() + _ch4_tables() + _ch5()
    out += _rows(6, "sweep", ch6.load_sweep(), _transformer, key="token_acc")
    out += _rows(6, "full sweep", ch6.load_full_sweep(), _transformer, key="token_acc")
    out += _rows(7, "sweep", ch7.load_sweep(), _lstm)
    out += _rows(7, "causes", ch7.load_causes(), _lstm, upto=BUDGET)
    out += _rows(7, "rescue", ch7.load_rescue(), lambda c: _lstm(
        {**c["copy"], "heads": len(c["head_seeds"][0]) if isinstance(
            c["head_seeds"][0], list) else c["copy"].get("heads", 1)}))
    out += _rows(7, "transformer", ch7.load_transformer(), _transformer)
    out += _rows(7, "seeds 40-79", ch7.load_held_out(), _lstm)
    return out


# ------------------------------------------------------------ the held-out conditions
#: The conditions no chapter had run, chosen before any was trained: two vocabulary ratios
#: between chapter 4's permutations (V/L = 1) and its control (1.5), with and without the
#: end token, and a start token in the source beside the end token on both sides.
HELD_OUT_ROWS = {
    "V=22, both": {"distribution": "distinct", "vocab": 22},
    "V=24, both": {"distribution": "distinct", "vocab": 24},
    "V=24, none": {"distribution": "distinct", "vocab": 24, "eos": False},
    "start, both": {"start": True},
}
#: Fresh seeds: no stored run of any chapter used them.
HELD_OUT_SEEDS = tuple(range(80, 120))


def held_out_config(row: str, seeds: Sequence[int] | None = None) -> EndTokenConfig:
    """Held-out condition ``row`` (a key of :data:`HELD_OUT_ROWS`): chapter 7's base
    (chapter 4's fast model, L = 20, 300 steps) with the row's fields, on
    :data:`HELD_OUT_SEEDS` or ``seeds``."""
    row = check_choice("row", row, tuple(HELD_OUT_ROWS))
    seeds = HELD_OUT_SEEDS if seeds is None else tuple(check_seeds("seeds", seeds))
    return replace(END_BASE.fast, steps=BUDGET, seeds=tuple(seeds), **HELD_OUT_ROWS[row])


_HELD_FILE = Path(__file__).with_name("data") / "ch8_held_out.json"
HELD_OUT_STORED = RowFamily(
    _HELD_FILE, "python benchmarks/ch8_scorecard/held_out.py", tuple(HELD_OUT_ROWS),
    held_out_config, EndTokenConfig, {"token_acc": "token_acc", "copy_acc": "copy_acc"})
load_held_out_runs = HELD_OUT_STORED.load


# ------------------------------------------------------------ the step-0 pushes
#: Every LSTM condition whose step-0 push the scorecard reads: chapter 7's sweep rows (seeds
#: 0-39) and the held-out conditions (seeds 80-119).
PUSH_ROWS = tuple(ch7.SWEEP_ROWS) + tuple(HELD_OUT_ROWS)


def score_push_config(row: str) -> EndTokenConfig:
    """Row ``row`` of :data:`PUSH_ROWS` probed with chapter 7's push at initialisation
    (its first step only)."""
    row = check_choice("row", row, PUSH_ROWS)
    cfg = held_out_config(row) if row in HELD_OUT_ROWS else sweep_config(row)
    return replace(cfg, steps=1, eval_every=1, push=True)   # evaluated before its step


_PUSH_FILE = Path(__file__).with_name("data") / "ch8_push.json"
PUSH_STORED = RowFamily(
    _PUSH_FILE, "python benchmarks/ch8_scorecard/held_out.py --pushes", PUSH_ROWS,
    score_push_config, EndTokenConfig, steps=None,
    extra=lambda cfg, h: {"push_diag_copy": [
        float(v) for v in np.asarray(h.probes["push_diag_copy"])[:, 0]]},
    shapes=lambda cfg: {"push_diag_copy": (len(cfg.seeds),)})
load_scorecard_pushes = PUSH_STORED.load


def held_out_conditions() -> list[Condition]:
    """The held-out conditions (:data:`HELD_OUT_ROWS`) as trained, from their stored rows
    (chapter 8's family "held out")."""
    return _rows(8, "held out", load_held_out_runs(), _lstm)
