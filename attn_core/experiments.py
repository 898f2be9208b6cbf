"""Each chapter's training experiments: their fast and full configurations and one call to run them.

A config is a frozen dataclass; ``CONFIG.get()`` (a :class:`~attn_core.config.Preset`) picks the
fast or full variant by ``ATTN_MODE``. Notebooks print the config they ran.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

from .cache import cached_history
from .config import Preset
from .data import KeywordTask
from .metrics import keyword_probe
from .models import AttentionClassifier
from .training import History, train

__all__ = ["KeywordConfig", "KEYWORD_ATTENTION", "KEYWORD_UNIFORM", "run_keyword"]


@dataclass(frozen=True)
class KeywordConfig:
    """The keyword task of SZKS §6.1 with the attention LSTM classifier of the blog.

    Plain (full-batch-free, minibatch) gradient descent is the setting of the blog's
    gradient-flow argument; Adam rescales every parameter's step and blurs the ordering.
    """

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
    eval_batch_size: int = 512
    seeds: tuple[int, ...] = (0, 1, 2)

    def as_dict(self) -> dict:
        return asdict(self)


#: G5 -- learned attention: relevance β separates first, attention follows.
KEYWORD_ATTENTION = Preset(
    fast=KeywordConfig(),
    full=KeywordConfig(embed=128, hidden=128, steps=400, seeds=tuple(range(10)), lr=0.5),
)

#: G6 -- attention frozen uniform, trained long: information drifts to the last state.
KEYWORD_UNIFORM = Preset(
    fast=KeywordConfig(attention="uniform", steps=1000, eval_every=10),
    full=KeywordConfig(attention="uniform", embed=128, hidden=128, steps=4000, eval_every=20,
                       seeds=tuple(range(10)), lr=0.5),
)


def run_keyword(config: KeywordConfig, progress: bool = True, cache: bool = True) -> History:
    """Train ``len(config.seeds)`` attention classifiers on the keyword task and record
    :func:`~attn_core.metrics.keyword_probe` at every evaluation.

    With ``cache=True`` the result is reused if this exact config (and package source) was run
    before (see :mod:`attn_core.cache`); the call prints which happened.
    """
    if not isinstance(config, KeywordConfig):
        raise TypeError(f"config must be a KeywordConfig; got {type(config).__name__}")
    task = KeywordTask(config.length, config.vocab)
    model_fn = functools.partial(AttentionClassifier, vocab=task.model_vocab, embed=config.embed,
                                 hidden=config.hidden, attention=config.attention)

    def compute():
        return train(model_fn, task, list(config.seeds), steps=config.steps,
                     batch_size=config.batch_size, optimizer=config.optimizer, lr=config.lr,
                     eval_every=config.eval_every, eval_batch_size=config.eval_batch_size,
                     probes={"": keyword_probe}, progress=progress,
                     desc=f"keyword ({config.attention} attention)")

    if not cache:
        return compute()
    return cached_history(f"keyword-{config.attention}", config.as_dict(), compute)
