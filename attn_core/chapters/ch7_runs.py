"""Chapter 7's runs: what the chapter trains and stores (a part of
:mod:`attn_core.chapters.ch7_end_token`, which re-exports all of it; read it from there).

:class:`EndTokenConfig` is chapter 4's :class:`~attn_core.chapters.ch4_copy.CopyConfig`
(the authors' model: context projection, biases) with the options of
:class:`~attn_core.data.CopyTask` that place the end token and decide what it may do;
:data:`CONDITIONS` names the ablations; :func:`end_probe` records where the attention mass
goes, by position class, at every evaluation, and :func:`push_probe` what the first step
does to the diagonal. The stored rows (:class:`attn_core.rows.RowFamily`): the sweep
(:data:`SWEEP_STORED`, 40 seeds a row), chapter 6's Transformer and chapter 5's rescue with
and without the end token, the step-0 pushes and the held-out seeds 40-79.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..checks import check_choice, check_int, check_seeds
from ..config import Preset, first_seeds
from ..data import CopyTask, EndToken
from ..models import forward_masks
from ..rows import RowFamily
from ..stored import CheckReport, worst_live_check
from ..training import eval_schedule
from .ch4_copy import COPY_BASE, SUCCESS_LEVEL, CopyConfig, control, copy_probe
from .ch5_multihead import RESCUE, HeadsRun
from .ch6_transformer import TRANSFORMER_BASE, TransformerCopyConfig

__all__ = ["EndTokenConfig", "END_BASE", "CONDITIONS", "LENGTHS", "SEEDS",
           "POSITION_CLASSES", "condition_config", "condition_name", "end_probe",
           "ROW_METRICS", "ROW_PROBES", "push_probe", "PUSHES", "SUCCESS_LEVEL",
           "SWEEP_ROWS", "L40_CAUSES", "SWEEP_STEPS", "SWEEP_FILE", "row_name",
           "sweep_config",
           "sweep_row", "load_sweep", "write_sweep", "LIVE_ROWS", "live_config",
           "stored_configs", "check_live", "CopyOnly", "EndTransformerConfig",
           "TRANSFORMER_ROWS", "TRANSFORMER_FILE", "transformer_config", "transformer_row",
           "load_transformer", "EndHeadsRun", "RESCUE_ROWS", "RESCUE_FILE", "rescue_config",
           "rescue_row", "load_rescue", "PUSH_ROWS", "PUSH_FILE", "push_config", "push_row",
           "load_push", "HELD_OUT_ROWS", "HELD_OUT_SEEDS", "HELD_OUT_FILE",
           "held_out_config", "held_out_row", "load_held_out", "SWEEP_STORED",
           "TRANSFORMER_STORED", "RESCUE_STORED", "PUSH_STORED", "HELD_OUT_STORED",
           "LONG_ROWS", "LONG_STEPS", "LONG_FILE", "long_config", "LONG_STORED",
           "load_long", "ADAM_PUSH_ROWS", "ADAM_PUSH_FILE", "adam_push_config",
           "ADAM_PUSH_STORED", "load_adam_push"]



@dataclass(frozen=True)
class EndTokenConfig(CopyConfig, EndToken):
    """:class:`~attn_core.chapters.ch4_copy.CopyConfig` with the end token taken apart:
    ``eos_side`` (with ``eos``: "both", "source", "target"), ``start`` (a start token at
    the front of the source), ``mask_end`` (attention may not go to the source's end token),
    ``end_loss`` (False: the end step's loss left out), ``end_score_grad`` (False: the end
    step's attention scores pass no gradient), ``min_length`` (every example its own length
    in ``[min_length, length]``, padded); see :class:`~attn_core.data.CopyTask`.
    Probes: chapter 4's :func:`~attn_core.chapters.ch4_copy.copy_probe` and
    :func:`end_probe`, and with ``push`` :func:`push_probe` (three more backward passes an
    evaluation)."""

    name = "endtok"

    push: bool = False

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        if not isinstance(self.push, bool):
            raise TypeError(f"{cls}.push must be True or False; got {self.push!r}")
        try:
            self.task()
        except (ValueError, TypeError) as e:   # the task's own checks, named as this
            raise type(e)(f"{cls}.{e}") from None  # config's fields

    def task(self) -> CopyTask:
        return replace(super().task(), **self.end_token_options())

    def probes(self, task) -> list:
        return [copy_probe, end_probe(task)] + ([push_probe(task)] if self.push else [])

    def label(self, task) -> str:
        return f"end token {condition_name(self)} L={self.length} V={task.vocab}"


#: The chapter's base: chapter 4's fast configuration (the authors' model, L = 20, hidden
#: 64, batch 32, 300 steps), as an :class:`EndTokenConfig`.
END_BASE = Preset(
    fast=EndTokenConfig(**{f: getattr(COPY_BASE.fast, f) for f in
                           CopyConfig.__dataclass_fields__}),
    full=EndTokenConfig(**{f: getattr(COPY_BASE.full, f) for f in
                           CopyConfig.__dataclass_fields__}),
    smoke=first_seeds(1),
)

#: The ablations: name -> the fields that differ from :data:`END_BASE` (the end token on
#: both sides, nothing masked); "L/2" is half the condition's length.
CONDITIONS = {
    "none": {"eos": False},
    "both": {},
    "source": {"eos_side": "source"},
    "target": {"eos_side": "target"},
    "masked": {"mask_end": True},
    "no end loss": {"end_loss": False},
    "no end gradient": {"end_score_grad": False},
    "start": {"eos": False, "start": True},
    "varying": {"min_length": "L/2"},     # lengths uniform in [L/2, L]
    "varying, none": {"min_length": "L/2", "eos": False},
    "no end state gradient": {"end_state_grad": False},
    "source, masked": {"eos_side": "source", "mask_end": True},
    "start, masked": {"eos": False, "start": True, "mask_start": True},
}
#: The lengths of the effect's measurement (item 1); the ablations run at L = 20.
LENGTHS = (10, 20, 40)
#: Seeds of every fast condition (at least 40: rates with intervals narrow enough to tell
#: the conditions apart).
SEEDS = tuple(range(40))


def _fields(name: str, length: int) -> dict:
    return {f: (length // 2 if v == "L/2" else v) for f, v in CONDITIONS[name].items()}


def condition_name(cfg: EndTokenConfig) -> str:
    """The :data:`CONDITIONS` name of ``cfg``'s end-token fields ("custom" if none)."""
    if not isinstance(cfg, EndTokenConfig):
        raise TypeError(f"cfg must be an EndTokenConfig; got {type(cfg).__name__}")
    base = END_BASE.fast
    for name in CONDITIONS:
        fields = _fields(name, cfg.length)
        want = {f: fields.get(f, getattr(base, f)) for f in
                ("eos", *EndToken.__dataclass_fields__)}
        if all(getattr(cfg, f) == v for f, v in want.items()):
            return name
    return "custom"


def condition_config(name: str, length: int = 20, task: str = "permutation",
                     seeds: Sequence[int] | None = None,
                     base: EndTokenConfig | None = None) -> EndTokenConfig:
    """Condition ``name`` (a key of :data:`CONDITIONS`) at ``length`` on ``task``
    ("permutation", or "control": L distinct words of 1.5 L, chapter 4's control), on
    ``base`` (default ``END_BASE.fast``) with ``seeds`` (default :data:`SEEDS`)."""
    name = check_choice("name", name, tuple(CONDITIONS))
    length = check_int("length", length, 2)
    task = check_choice("task", task, ("permutation", "control"))
    base = END_BASE.fast if base is None else base
    if not isinstance(base, EndTokenConfig):
        raise TypeError(f"base must be an EndTokenConfig; got {type(base).__name__}")
    cfg = replace(base, length=length, **_fields(name, length),
                  seeds=tuple(check_seeds("seeds", SEEDS if seeds is None else seeds)))
    return control(cfg) if task == "control" else cfg


#: Where the attention of a copied token goes (:func:`end_probe`): the aligned source
#: position, its two neighbours, the last source word, the end token, the start token, and
#: every other position.
POSITION_CLASSES = ("right", "neighbours", "last word", "end", "start", "other")


def end_probe(task: CopyTask):
    """A probe (model, batch) -> ``copy_acc`` (S,): accuracy on the copied words only (the
    end step left out, so that every condition is scored on the same L tokens), and
    ``mass_<class>`` (S,) for each of :data:`POSITION_CLASSES`: the head-averaged attention
    mass of the copied words' steps on that class of source positions, averaged over the
    steps and examples (the classes partition the positions: the masses sum to 1), and
    ``end_step_on_end`` (S,): with an end token on both sides, the end step's mass on the
    source's end token (0 otherwise)."""
    if not isinstance(task, CopyTask):
        raise TypeError(f"task must be a CopyTask; got {type(task).__name__}")
    V, L = task.vocab, task.length
    first = int(task.start)                     # the source position of the first word
    end_pos = L + first if task.eos_in_source else None

    def probe(model, batch):
        out = model(batch["src"], batch["tgt_in"], **forward_masks(batch))
        alpha = out["alpha"].mean(1)                           # (S, B, T, L')
        tgt, align = batch["tgt"], batch["align"]
        words = tgt < V                                        # the copied words' steps
        w = words.to(alpha.dtype)
        n = w.sum((1, 2))
        acc = ((out["logits"].argmax(-1) == tgt).to(alpha.dtype) * w).sum((1, 2)) / n
        Lp = alpha.shape[-1]
        pos = torch.arange(Lp)
        a = align.unsqueeze(-1)                                # (S, B, T, 1)
        cls = {"right": pos == a,
               "neighbours": ((pos == a - 1) | (pos == a + 1)) & (pos >= first)
               & (pos < first + L),
               "last word": (pos == first + L - 1) & (pos != a),
               "end": (pos == end_pos) if end_pos is not None else torch.zeros_like(pos == a),
               "start": (pos == 0) if task.start else torch.zeros_like(pos == a)}
        cls["neighbours"] &= ~cls["last word"]
        taken = torch.zeros_like(cls["right"])
        result = {"copy_acc": acc}
        for name in POSITION_CLASSES[:-1]:
            c = cls[name] & ~taken
            taken |= c
            result[f"mass_{name}"] = ((alpha * c).sum(-1) * w).sum((1, 2)) / n
        result["mass_other"] = ((alpha * ~taken).sum(-1) * w).sum((1, 2)) / n
        if task.eos_in_source and task.eos_in_target:
            result["end_step_on_end"] = alpha[:, :, -1, end_pos].mean(1)
        else:
            result["end_step_on_end"] = torch.zeros(alpha.shape[0])
        return result

    return probe


#: What :func:`push_probe` records: the first-order change of two attention margins under a
#: gradient step on each group of decoder steps' loss.
PUSHES = ("push_diag_copy", "push_diag_end", "push_sink_copy", "push_sink_end",
          "push_adam_diag")


def push_probe(task: CopyTask):
    """A probe (model, batch) -> where the loss of each group of decoder steps pushes the
    attention scores (chapter 7's mechanism; the model must be chapter 4's
    :class:`~attn_core.models.Seq2Seq`).

    Two margins of the copied words' steps t, averaged over the steps and examples, with
    the score ``e_tl = s_tᵀ W h_l (+ a·h_l)`` and ``ē_t`` its mean over the source:
    the diagonal ``D = e_{t,a_t} − ē_t`` (attention on the right position) and the sink
    ``E = e_{t,end} − ē_t`` (on the source's end token; 0 without one, or with it masked
    from attention). For the loss of the
    copied words' steps (``copy``) and of the end step (``end``, 0 without a target end
    token or with its loss or score gradient removed), ``push_<margin>_<group>`` (S,) is
    ``−∇D · ∇L_group`` over the attention parameters (W, a): how much one plain gradient
    step on that loss, per unit of learning rate, raises the margin. ``push_adam_diag``
    (S,) is the same for Adam's actual first step, on the whole loss (every step the
    training loss counts): Adam's first update is ``−lr · g / (|g| + ε)`` (ε = 1e-8), about
    ``−lr · sign(g)``, so this is ``−∇D · g / (|g| + ε)``. The margins are read with the
    encoder and decoder states held fixed (the parameters of the scores only)."""
    if not isinstance(task, CopyTask):
        raise TypeError(f"task must be a CopyTask; got {type(task).__name__}")
    V = task.vocab
    # the sink margin: only where attention can go to the source's end token
    end_pos = (task.length + int(task.start) if task.eos_in_source and not task.mask_end
               else None)

    def probe(model, batch):
        params = [p for p in (model.score, model.score_bias) if p is not None]
        tgt, align = batch["tgt"], batch["align"]
        words = tgt < V
        loss_mask = batch.get("loss_mask", torch.ones_like(words))
        ends = (tgt == task.eos_token) & loss_mask if task.eos_in_target else \
            torch.zeros_like(words)
        with torch.enable_grad():
            enc, dec = model._states(batch["src"], batch["tgt_in"])
            e = model.scores(enc.detach(), dec.detach()).mean(1)       # (S, B, T, L')
            if "src_mask" in batch:
                keep = batch["src_mask"][:, :, None, :].to(e.dtype)
                e_bar = (e * keep).sum(-1) / keep.sum(-1)
            else:
                e_bar = e.mean(-1)
            w = words.to(e.dtype)
            n = w.sum((1, 2))
            diag = ((e.gather(-1, align.unsqueeze(-1)).squeeze(-1) - e_bar) * w).sum((1, 2))
            margins = {"diag": diag / n}
            if end_pos is not None:
                margins["sink"] = ((e[..., end_pos] - e_bar) * w).sum((1, 2)) / n
            out, _ = model._forward_batch(batch)
            ce = torch.nn.functional.cross_entropy(
                out["logits"].flatten(0, 2), tgt.flatten().long(), reduction="none"
            ).view(tgt.shape)
            groups = {"copy": words & loss_mask, "end": ends, "all": (words & loss_mask) | ends}
            grads = {}
            for g, m in groups.items():
                mf = m.to(ce.dtype)
                if not m.any():
                    grads[g] = None
                    continue
                loss = ((ce * mf).sum((1, 2)) / mf.sum((1, 2)).clamp(min=1)).sum()
                grads[g] = torch.autograd.grad(loss, params, allow_unused=True,
                                               retain_graph=True)
            result = {}
            for name in ("diag", "sink"):
                gm = (torch.autograd.grad(margins[name].sum(), params, allow_unused=True,
                                          retain_graph=True) if name in margins else None)
                if name == "diag":
                    result["push_adam_diag"] = -sum(
                        (a * b / (b.abs() + 1e-8)).flatten(1).sum(1)
                        for a, b in zip(gm, grads["all"]) if a is not None and b is not None)
                for g in ("copy", "end"):
                    key = f"push_{name}_{g}"
                    if gm is None or grads[g] is None:
                        result[key] = torch.zeros(tgt.shape[0])
                        continue
                    result[key] = -sum((a * b).flatten(1).sum(1) for a, b in
                                       zip(gm, grads[g]) if a is not None and b is not None)
        return {k: v.detach() for k, v in result.items()}

    return probe


# ----------------------------------------------------------------- the stored sweep
#: Steps by length: chapter 4's fast 300 at L = 10 and 20; 600 at L = 40 (at 300 the
#: permutation runs of L = 40 have barely left the guessing level either way).
SWEEP_STEPS = {10: 300, 20: 300, 40: 600}


def row_name(name: str, length: int = 20, task: str = "permutation") -> str:
    """The sweep row of condition ``name`` at ``length`` on ``task``: e.g. "both, L=20",
    "none, L=10, control"."""
    name = check_choice("name", name, tuple(CONDITIONS))
    length = check_int("length", length, 2)
    task = check_choice("task", task, ("permutation", "control"))
    return f"{name}, L={length}" + (", control" if task == "control" else "")


#: Every row of the stored sweep: row name -> (condition, length, task). The end token's
#: effect first (no end token against both sides, on permutations and the control, at each
#: of :data:`LENGTHS`), then every other condition on permutations at L = 20; 40 seeds each.
SWEEP_ROWS = {row_name(n, L, t): (n, L, t) for L in LENGTHS
              for t in ("permutation", "control") for n in ("none", "both")}
SWEEP_ROWS.update({row_name(n): (n, 20, "permutation") for n in CONDITIONS
                   if n not in ("none", "both")})
#: The conditions that name the cause at L = 20, again at L = 40 (600 steps): does what
#: they found hold where the end token's cost is larger?
L40_CAUSES = ("source", "target", "masked", "no end loss")
SWEEP_ROWS.update({row_name(n, 40): (n, 40, "permutation") for n in L40_CAUSES})
#: Where the stored sweep lives (written by ``benchmarks/ch7_end_token/sweep.py``).
SWEEP_FILE = Path(__file__).with_name("data") / "ch7_sweep.json"
#: What a sweep row keeps of every evaluation (History metrics, then probes).
ROW_METRICS = ("token_acc", "attn_acc")
ROW_PROBES = ("copy_acc", "end_step_on_end", *(f"mass_{c}" for c in POSITION_CLASSES))


def sweep_config(row: str, seeds: Sequence[int] | None = None) -> EndTokenConfig:
    """The configuration of sweep row ``row`` (a key of :data:`SWEEP_ROWS`): its condition
    at its length and task on ``END_BASE.fast`` (the sweep is a fast-mode result), with
    :data:`SWEEP_STEPS` steps and :data:`SEEDS` or ``seeds``."""
    row = check_choice("row", row, tuple(SWEEP_ROWS))
    name, length, task = SWEEP_ROWS[row]
    return condition_config(name, length, task, seeds,
                            replace(END_BASE.fast, steps=SWEEP_STEPS[length]))


#: The stored sweep (:class:`attn_core.rows.RowFamily`): row name (:data:`SWEEP_ROWS`) ->
#: its configuration (:func:`sweep_config`), seeds, evaluation steps and every
#: evaluation's :data:`ROW_METRICS` and :data:`ROW_PROBES` (each (seeds, evaluations), to 4
#: decimals). ``SWEEP_STORED.load()`` checks the package's file against the manifest and
#: every row against its configuration; with ``ATTN_STORED=off`` it trains every row now:
#: 27 x 40 runs, about 50 minutes on two cores (cached).
SWEEP_STORED = RowFamily(SWEEP_FILE, "python benchmarks/ch7_end_token/sweep.py --force",
                  tuple(SWEEP_ROWS), sweep_config, EndTokenConfig,
                  {k: k for k in ROW_METRICS + ROW_PROBES})
sweep_row = SWEEP_STORED.row
load_sweep = SWEEP_STORED.load
write_sweep = SWEEP_STORED.write


#: The rows whose first seed the chapter trains again now (stored whole,
#: ``scripts/store_results.py``, and checked against that record).
LIVE_ROWS = ("both, L=20", "none, L=20")


def live_config(row: str, n: int = 1) -> EndTokenConfig:
    """The first ``n`` seeds of sweep row ``row``: what the chapter trains again now."""
    return sweep_config(row, seeds=range(check_int("n", n, 1)))


def stored_configs() -> list[EndTokenConfig]:
    """The runs chapter 7 loads from :mod:`attn_core.stored`: each live row's first seed."""
    return [live_config(r) for r in LIVE_ROWS]


def check_live(live: dict) -> CheckReport | None:
    """The worst live check of ``live`` (row name -> the History that
    :func:`attn_core.stored.stored_run` returned for :func:`live_config`):
    :func:`attn_core.stored.worst_live_check` over the sweep's rows."""
    return worst_live_check(live, SWEEP_ROWS, "row")


# ------------------------------------------------------------- beyond the LSTM (item 4)
class CopyOnly:
    """A probe for any copy model: accuracy on the copied words only (the end step, where
    there is one, left out), ``copy_acc`` (S,); the words are the ids below ``vocab``."""

    def __init__(self, vocab: int):
        self.vocab = check_int("vocab", vocab, 1)

    def __call__(self, model, batch):
        out = model(batch["src"], batch["tgt_in"])
        tgt = batch["tgt"]
        words = tgt < self.vocab
        hit = (out["logits"].argmax(-1) == tgt) & words
        return {"copy_acc": hit.flatten(1).sum(1).float() / words.flatten(1).sum(1).float()}


@dataclass(frozen=True)
class EndTransformerConfig(TransformerCopyConfig):
    """Chapter 6's Transformer with the copied words' accuracy recorded too
    (:class:`CopyOnly`)."""

    name = "transformer-endtok"

    def probes(self, task) -> list:
        return super().probes(task) + [CopyOnly(task.vocab)]


#: Chapter 6's Transformer (fast size) with and without the end token, with its four heads
#: and with one (as chapter 4's LSTM): row -> fields of ``TRANSFORMER_BASE.fast``.
TRANSFORMER_ROWS = {
    "4 heads, end token": {},
    "4 heads, none": {"eos": False},
    "1 head, end token": {"heads": 1},
    "1 head, none": {"heads": 1, "eos": False},
}
#: Where the Transformer rows are stored (``benchmarks/ch7_end_token/transformer.py``).
TRANSFORMER_FILE = Path(__file__).with_name("data") / "ch7_transformer.json"


def transformer_config(row: str, seeds: Sequence[int] | None = None):
    """Row ``row`` of :data:`TRANSFORMER_ROWS`: chapter 6's fast Transformer with its fields,
    recording :class:`CopyOnly` too, with :data:`SEEDS` (or ``seeds``)."""
    row = check_choice("row", row, tuple(TRANSFORMER_ROWS))
    base = TRANSFORMER_BASE.fast
    fields = {f: getattr(base, f) for f in TransformerCopyConfig.__dataclass_fields__}
    return replace(EndTransformerConfig(**fields), **TRANSFORMER_ROWS[row],
                   seeds=tuple(check_seeds("seeds", SEEDS if seeds is None else seeds)))


#: The stored Transformer rows: row name (:data:`TRANSFORMER_ROWS`) -> configuration
#: (:func:`transformer_config`), seeds, evaluation steps and every evaluation's copy, token
#: and attention accuracy (4 decimals), checked as :data:`SWEEP_STORED` checks the sweep.
TRANSFORMER_STORED = RowFamily(
    TRANSFORMER_FILE, "python benchmarks/ch7_end_token/transformer.py", tuple(TRANSFORMER_ROWS),
    transformer_config, EndTransformerConfig,
    {k: k for k in ("copy_acc", "token_acc", "attn_acc")})
transformer_row = TRANSFORMER_STORED.row
load_transformer = TRANSFORMER_STORED.load


# ------------------------------------------------ chapter 5's rescue with the end token
@dataclass(frozen=True)
class EndHeadsRun(HeadsRun):
    """Chapter 5's :class:`~attn_core.chapters.ch5_multihead.HeadsRun` with the copied
    words' accuracy recorded too (:class:`CopyOnly`)."""

    name = "heads-endtok"

    def probes(self, task) -> list:
        return super().probes(task) + [CopyOnly(task.vocab)]


#: Chapter 5's multi-head rescue with and without the end token: chapter
#: 5's fast model (GRUs, a projection per head, the heads' contexts averaged, no biases,
#: every run on chapter 5's one base initialisation) with K fresh random heads drawn as
#: chapter 5 draws its random K-head runs: row -> (K, the end token on both sides).
RESCUE_ROWS = {
    "1 head, none": (1, False),
    "1 head, end token": (1, True),
    "4 heads, none": (4, False),
    "4 heads, end token": (4, True),
}
#: Where the rescue rows are stored (``benchmarks/ch7_end_token/rescue.py``).
RESCUE_FILE = Path(__file__).with_name("data") / "ch7_rescue.json"


#: Run indices a rescue row may use: chapter 5's data streams of one kind are 100 apart
#: (combination runs from 100, random-K runs from 200), so run 100 would take another
#: kind's stream.
RESCUE_MAX_RUNS = 100


def _rescue_first_stream(k: int) -> int:
    cfg = RESCUE.fast
    return cfg.COMBINATION_DATA if k == cfg.k_combo else cfg.RANDOM_DATA


def rescue_config(row: str, seeds: Sequence[int] | None = None) -> EndHeadsRun:
    """Row ``row`` of :data:`RESCUE_ROWS`: run ``s`` of ``seeds`` (run indices 0-99;
    default :data:`SEEDS`) is chapter 5's fast model with the ``s``-th block of K fresh
    random heads (``RESCUE.fast.fresh_heads(K)``) on chapter 5's data stream for it (its
    combination streams at K = ``k_combo``, its random-K streams otherwise), so that the rows
    without the end token at K = 4 begin with chapter 5's own random combinations. Every run
    shares chapter 5's one base initialisation (its protocol): the runs differ in their
    heads and data only."""
    row = check_choice("row", row, tuple(RESCUE_ROWS))
    seeds = tuple(check_seeds("seeds", SEEDS if seeds is None else seeds))
    if max(seeds) >= RESCUE_MAX_RUNS:
        raise ValueError(f"seeds must be run indices 0-{RESCUE_MAX_RUNS - 1} (a higher run "
                         f"would take another kind of chapter 5's data streams); got "
                         f"{max(seeds)}")
    k, eos = RESCUE_ROWS[row]
    cfg = RESCUE.fast
    fresh = cfg.fresh_heads(k)
    heads = [fresh[s] if k == 1 else tuple(fresh[k * s:k * (s + 1)]) for s in seeds]
    first = _rescue_first_stream(k)
    tag = f"heads-endtok-K{k}-{'eos' if eos else 'none'}"
    run = cfg.heads_run(heads, [first + s for s in seeds], tag,
                        copy=replace(cfg.copy, eos=eos))
    return EndHeadsRun(**{f: getattr(run, f) for f in HeadsRun.__dataclass_fields__})


def _rescue_runs(cfg: EndHeadsRun) -> list[int]:
    """The run indices of a :func:`rescue_config` (from its data streams)."""
    first = _rescue_first_stream(cfg.copy.heads)
    return [int(d) - first for d in cfg.data_seeds]


def _rescue_steps(cfg: EndHeadsRun) -> list[int]:
    return eval_schedule(cfg.copy.steps, cfg.copy.eval_every)


#: The stored rescue rows: row name (:data:`RESCUE_ROWS`) -> configuration
#: (:func:`rescue_config`), seeds (the runs' indices), evaluation steps and every
#: evaluation's copy and token accuracy and each head's attention accuracy (4 decimals),
#: checked as :data:`SWEEP_STORED` checks the sweep.
RESCUE_STORED = RowFamily(
    RESCUE_FILE, "python benchmarks/ch7_end_token/rescue.py", tuple(RESCUE_ROWS),
    rescue_config, EndHeadsRun, {k: k for k in ("copy_acc", "token_acc", "head_attn_acc")},
    runs=_rescue_runs, steps=_rescue_steps,
    shapes=lambda cfg: {"head_attn_acc": (len(cfg.head_seeds), len(_rescue_steps(cfg)),
                                          cfg.copy.heads)})
rescue_row = RESCUE_STORED.row
load_rescue = RESCUE_STORED.load


# ------------------------------------------- does the first step predict the outcome?
#: The sweep rows whose step-0 push (:func:`push_probe`) is stored: the
#: eight conditions at L = 20 of the mechanism runs (``benchmarks/ch7_end_token``).
PUSH_ROWS = tuple(row_name(n) for n in ("none", "both", "source", "target", "masked",
                                        "no end gradient", "start", "varying"))
#: Where the step-0 pushes are stored (``benchmarks/ch7_end_token/predict.py --write``).
PUSH_FILE = Path(__file__).with_name("data") / "ch7_push.json"


def push_config(row: str, seeds: Sequence[int] | None = None) -> EndTokenConfig:
    """Sweep row ``row`` (one of :data:`PUSH_ROWS`) probed with :func:`push_probe` at
    initialisation: its first step only, evaluated before and after it (the evaluation at
    step 0 is the initialisation's, the sweep's runs' own)."""
    row = check_choice("row", row, PUSH_ROWS)
    return _first_step(sweep_config(row, seeds))


def _first_step(cfg: EndTokenConfig) -> EndTokenConfig:
    """``cfg``'s first step only, evaluated (with :func:`push_probe`) before and after it."""
    return replace(cfg, steps=1, eval_every=1, push=True)


def _step0(h, key: str = "push_diag_copy") -> list[float]:
    """Every run's ``key`` at step 0 (full precision) from the History ``h`` of a
    :func:`push_config` (default: the copied words' push on the diagonal margin)."""
    if list(h.eval_steps)[:1] != [0]:
        raise ValueError("h must begin with its evaluation at step 0")
    if key not in h.probes:
        raise ValueError(f"h must record the probe {key!r} (a push_config run records it); "
                         f"it has {sorted(h.probes)}")
    return [float(v) for v in np.asarray(h.probes[key])[:, 0]]


#: The stored step-0 pushes: row name (:data:`PUSH_ROWS`) -> configuration
#: (:func:`push_config`), seeds and every seed's step-0 push of the copied words' loss on the
#: diagonal margin, ``push_diag_copy`` (full float precision).
PUSH_STORED = RowFamily(
    PUSH_FILE, "python benchmarks/ch7_end_token/predict.py --write", PUSH_ROWS, push_config,
    EndTokenConfig, steps=None, extra=lambda cfg, h: {"push_diag_copy": _step0(h)},
    shapes=lambda cfg: {"push_diag_copy": (len(cfg.seeds),)})
push_row = PUSH_STORED.row
load_push = PUSH_STORED.load


#: The push's prediction tested on fresh seeds: the six conditions where
#: seeds 0-39 found it (AUC 0.72-0.87, p <= 0.014), trained again on seeds 40-79, chosen
#: and run after that finding (``benchmarks/ch7_end_token/predict.py --held-out``).
HELD_OUT_ROWS = tuple(row_name(n) for n in ("none", "source", "target", "masked",
                                            "no end gradient", "start"))
HELD_OUT_SEEDS = tuple(range(40, 80))
HELD_OUT_FILE = Path(__file__).with_name("data") / "ch7_push_held_out.json"


def held_out_config(row: str) -> EndTokenConfig:
    """Sweep row ``row`` (one of :data:`HELD_OUT_ROWS`) on the fresh seeds
    :data:`HELD_OUT_SEEDS`: the same condition, steps and evaluations."""
    row = check_choice("row", row, HELD_OUT_ROWS)
    return sweep_config(row, HELD_OUT_SEEDS)


def _held_out_fields(cfg: EndTokenConfig, h) -> dict:
    """Each run's copy accuracy at step 0 and at its last evaluation (from ``h``, the
    trained runs) and its step-0 push (computed here: the same runs' first step)."""
    if "copy_acc" not in h.probes:
        raise ValueError(f"h must record the probe 'copy_acc' (a run of cfg records it); it "
                         f"has {sorted(h.probes)}")
    acc = np.asarray(h.probes["copy_acc"], dtype=float)[:, [0, -1]]
    return {"eval_steps": [int(h.eval_steps[0]), int(h.eval_steps[-1])],
            "copy_acc": np.round(acc, 4).tolist(),
            "push_diag_copy": _step0(_first_step(cfg).run(progress=False))}


#: The stored held-out rows: row name (:data:`HELD_OUT_ROWS`) -> configuration
#: (:func:`held_out_config`), seeds, each run's copy accuracy at step 0 and at its last
#: evaluation (``copy_acc``, (runs, 2)) and its step-0 push (as :data:`PUSH_STORED`
#: stores it).
HELD_OUT_STORED = RowFamily(
    HELD_OUT_FILE, "python benchmarks/ch7_end_token/predict.py --held-out", HELD_OUT_ROWS,
    held_out_config, EndTokenConfig, steps=lambda cfg: [0, cfg.steps],
    extra=_held_out_fields,
    shapes=lambda cfg: {"copy_acc": (len(cfg.seeds), 2), "push_diag_copy": (len(cfg.seeds),)})
held_out_row = HELD_OUT_STORED.row
load_held_out = HELD_OUT_STORED.load


# ------------------------------------------------------ delay or failure: longer budgets
#: The sweep rows trained on to :data:`LONG_STEPS` (the same 40 seeds, the same
#: evaluations every 20 steps): chapter 4's comparison (permutations against the control,
#: with the end token) and the conditions that name the end token's cost at L = 20, and the
#: two ends of it at L = 10. Their first 300 steps are the sweep's runs.
LONG_ROWS = (row_name("both"), row_name("both", task="control"), row_name("none"),
             row_name("source"), row_name("target"), row_name("masked"),
             row_name("no end loss"), row_name("both", 10), row_name("none", 10))
#: How long the longer budget is: 2,000 steps, 6.7 times the sweep's 300.
LONG_STEPS = 2000
#: Where the longer runs are stored (``benchmarks/ch7_end_token/long.py``).
LONG_FILE = Path(__file__).with_name("data") / "ch7_long.json"


def long_config(row: str, seeds: Sequence[int] | None = None) -> EndTokenConfig:
    """Sweep row ``row`` (one of :data:`LONG_ROWS`) trained to :data:`LONG_STEPS` steps:
    the same condition, seeds (or ``seeds``) and evaluations as :func:`sweep_config`."""
    row = check_choice("row", row, LONG_ROWS)
    return replace(sweep_config(row, seeds), steps=LONG_STEPS)


#: The stored longer runs: row name (:data:`LONG_ROWS`) -> configuration
#: (:func:`long_config`), seeds, evaluation steps and every evaluation's copy and token
#: accuracy (4 decimals), checked as :data:`SWEEP_STORED` checks the sweep.
LONG_STORED = RowFamily(
    LONG_FILE, "python benchmarks/ch7_end_token/long.py", LONG_ROWS, long_config,
    EndTokenConfig, {k: k for k in ("copy_acc", "token_acc")})
load_long = LONG_STORED.load


# ------------------------------------------------------ the push of Adam's actual first step
#: The pushes of :data:`PUSH_ROWS` (seeds 0-39) and of :data:`HELD_OUT_ROWS` on the fresh
#: seeds 40-79 (the row's name then ends ", seeds 40-79"), with Adam's first step too.
ADAM_PUSH_ROWS = PUSH_ROWS + tuple(f"{r}, seeds 40-79" for r in HELD_OUT_ROWS)
#: Where they are stored (``benchmarks/ch7_end_token/predict.py --adam``).
ADAM_PUSH_FILE = Path(__file__).with_name("data") / "ch7_push_adam.json"


def adam_push_config(row: str) -> EndTokenConfig:
    """Row ``row`` of :data:`ADAM_PUSH_ROWS`: :func:`push_config` of a push row, or the first
    step of :func:`held_out_config` for a held-out row on seeds 40-79."""
    row = check_choice("row", row, ADAM_PUSH_ROWS)
    if row.endswith(", seeds 40-79"):
        return _first_step(held_out_config(row.removesuffix(", seeds 40-79")))
    return push_config(row)


#: The stored pushes of plain gradient steps and of Adam's first step: row name
#: (:data:`ADAM_PUSH_ROWS`) -> configuration (:func:`adam_push_config`), seeds, and every
#: seed's ``push_diag_copy`` and ``push_adam_diag`` at step 0 (:func:`push_probe`).
ADAM_PUSH_STORED = RowFamily(
    ADAM_PUSH_FILE, "python benchmarks/ch7_end_token/predict.py --adam", ADAM_PUSH_ROWS,
    adam_push_config, EndTokenConfig, steps=None,
    extra=lambda cfg, h: {k: _step0(h, k) for k in ("push_diag_copy", "push_adam_diag")},
    shapes=lambda cfg: {k: (len(cfg.seeds),) for k in ("push_diag_copy", "push_adam_diag")})
load_adam_push = ADAM_PUSH_STORED.load
