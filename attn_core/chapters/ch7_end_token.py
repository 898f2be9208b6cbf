"""Chapter 7 -- the end of the sequence: why one end token makes permutations hard (the
book's own experiment, issue #36).

Chapter 4's ablation (``benchmarks/authors_copy/ablation.json``) found that the end-of-
sequence token alone turns permutation copying from mostly learned (the context projection
and biases without it: 18 of 20 runs above 0.95) into mostly failed (the authors' model with
it: 2 of 20), while the count table is flat either way. This module takes the end token
apart: :class:`EndTokenConfig` is chapter 4's :class:`~attn_core.chapters.ch4_copy.CopyConfig`
(the authors' model: context projection, biases) with the options of
:class:`~attn_core.data.CopyTask` that place the end token and decide what it may do, and
:data:`CONDITIONS` names the ablations; :func:`end_probe` records where the attention mass
goes, by position class, at every evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import torch

from ..checks import check_choice, check_int, check_seeds
from ..data import CopyTask, EndToken
from ..models import forward_masks
from ..config import Preset, first_seeds
from .ch4_copy import COPY_BASE, CopyConfig, control, copy_probe

__all__ = ["EndTokenConfig", "END_BASE", "CONDITIONS", "LENGTHS", "SEEDS", "POSITION_CLASSES",
           "condition_config", "end_probe"]


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
#: Seeds of every fast condition (issue #36: at least 40).
SEEDS = tuple(range(40))


def _fields(name: str, length: int) -> dict:
    return {f: (length // 2 if v == "L/2" else v) for f, v in CONDITIONS[name].items()}


def condition_name(cfg: EndTokenConfig) -> str:
    """The :data:`CONDITIONS` name of ``cfg``'s end-token fields ("custom" if none)."""
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
PUSHES = ("push_diag_copy", "push_diag_end", "push_sink_copy", "push_sink_end")


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
    step on that loss, per unit of learning rate, raises the margin. The margins are read
    with the encoder and decoder states held fixed (the parameters of the scores only)."""
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
            groups = {"copy": words & loss_mask, "end": ends}
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
                for g in groups:
                    key = f"push_{name}_{g}"
                    if gm is None or grads[g] is None:
                        result[key] = torch.zeros(tgt.shape[0])
                        continue
                    result[key] = -sum((a * b).flatten(1).sum(1) for a, b in
                                       zip(gm, grads[g]) if a is not None and b is not None)
        return {k: v.detach() for k, v in result.items()}

    return probe
