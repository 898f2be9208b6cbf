"""Chapter 1 -- the toy gated classifier and the attention LSTM classifier (keyword task).

The toy model's gradient flow lives in :mod:`attn_core.theory` (``gated_*``); this module holds
the chapter's training experiment: the keyword task of SZKS §6.1 learned by the attention LSTM
classifier of the blog (:class:`~attn_core.models.AttentionClassifier`), with learned attention
(G5: relevance separates first, attention follows) and with attention frozen uniform (G6), and
:func:`at_steps`, which reads each seed's probe at that seed's own step (the step its attention
first passes 2/L, say).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..checks import check_choice, check_int, check_real_array
from ..config import Preset
from ..data import KeywordTask
from ..metrics import keyword_probe
from ..models import ATTENTION_MODES, AttentionClassifier
from ..training import OPTIMIZERS
from ._experiment import Experiment

__all__ = ["KeywordConfig", "KEYWORD_ATTENTION", "KEYWORD_UNIFORM", "at_steps"]


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
        return functools.partial(AttentionClassifier, vocab=task.model_vocab, embed=self.embed,
                                 hidden=self.hidden, attention=self.attention)

    def probes(self, task) -> list:
        return [keyword_probe]

    def train_kwargs(self) -> dict:
        return dict(steps=self.steps, batch_size=self.batch_size, optimizer=self.optimizer,
                    lr=self.lr, eval_every=self.eval_every, eval_batch_size=self.eval_batch_size)

    def cache_name(self) -> str:
        return f"{self.name}-{self.attention}"

    def label(self, task) -> str:
        return f"keyword ({self.attention} attention)"


#: G5 -- learned attention: relevance β separates first, attention follows.
KEYWORD_ATTENTION = Preset(
    fast=KeywordConfig(steps=150),
    full=KeywordConfig(embed=128, hidden=128, steps=400, seeds=tuple(range(10)), lr=0.5),
)

#: G6 -- attention frozen uniform, trained long: information drifts to the last state.
KEYWORD_UNIFORM = Preset(
    fast=KeywordConfig(attention="uniform", steps=600, eval_every=20),
    full=KeywordConfig(attention="uniform", embed=128, hidden=128, steps=4000, eval_every=20,
                       seeds=tuple(range(10)), lr=0.5),
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
