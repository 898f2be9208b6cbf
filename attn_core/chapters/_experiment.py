"""One base class for every chapter's experiments: a config that knows how to run itself.

An experiment config is a frozen dataclass that subclasses :class:`Experiment` and says

- ``task()``: the data task (:mod:`attn_core.data`),
- ``model_fn(task)``: ``model_fn(seeds=[...], **member_kwargs)`` building the stacked model,
- ``probes(task)``: what to record at every evaluation (a list of probe callables),
- ``train_kwargs()``: the engine's settings (steps, batch size, optimiser, ...),

and :meth:`Experiment.run` trains it through the one engine (:func:`attn_core.training.train`),
computing the result once per configuration and reusing it afterwards
(:func:`attn_core.cache.cached_history`: the cache key is the experiment's name, its fields,
the mode, the device type and the package source; for a config class defined outside the
package -- a reader's variant -- also its class and its code).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import asdict
from typing import ClassVar

import torch

from ..cache import cached_history
from ..checks import check_bool, check_int, check_real
from ..training import History, train

__all__ = ["Experiment", "check_history", "check_tensor_dict"]

#: Integer fields that count something (>= 1) wherever a config has them; other ints are >= 0.
POSITIVE_FIELDS = frozenset({
    "steps", "epochs", "batch_size", "eval_every", "eval_batch_size", "length", "vocab", "embed",
    "hidden", "heads", "dim", "m", "n_topics", "words_per_topic", "n_nontopic", "n_train",
    "n_test", "n_pairs", "n_eval", "n_candidates", "k_combo", "n_combinations", "n_random",
    "rare_count", "d_model", "d_ff", "n_sample", "pairs_per_topic"})


def _check_field(name: str, value, tp, positive: bool, zero_float: bool = False):
    """``value`` checked against the annotation ``tp``; returns it (tuples canonicalised).

    Ints are >= 1 if ``positive``, else >= 0; floats (tuple entries too) are finite and > 0,
    or >= 0 if ``zero_float``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check_field(name, value, inner, positive, zero_float)
    if tp is bool:
        return check_bool(name, value)
    if tp is int:
        return check_int(name, value, 1 if positive else 0)
    if tp is float:
        return check_real(name, value, 0.0, low_open=not zero_float)
    if tp is str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string; got {type(value).__name__} {value!r}")
        return value
    if origin is tuple:
        if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
            raise TypeError(f"{name} must be a tuple; got {type(value).__name__} {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            kinds = [args[0]] * len(value)
        else:
            if len(value) != len(args):
                raise ValueError(f"{name} must have {len(args)} entries; got {len(value)}")
            kinds = list(args)
        return tuple(_check_field(f"{name}[{i}]", v, k, positive, zero_float)
                     for i, (v, k) in enumerate(zip(value, kinds)))
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise TypeError(f"{name} must be a {tp.__name__}; got {type(value).__name__}")
        return value
    return value  # pragma: no cover - an annotation this checker does not know


def check_history(history, metrics=(), probes=()) -> History:
    """``history`` if it is a :class:`~attn_core.training.History` that recorded ``metrics``
    and ``probes`` (names)."""
    if not isinstance(history, History):
        raise TypeError(f"history must be a History (what run() returns); got "
                        f"{type(history).__name__}")
    for group, names in (("metrics", metrics), ("probes", probes)):
        recorded = getattr(history, group)
        missing = [k for k in names if k not in recorded]
        if missing:
            raise ValueError(f"history has no {group} {missing}; it recorded {sorted(recorded)}")
    return history


def check_tensor_dict(name: str, value, keys) -> dict:
    """``value`` if it is a dict of tensors holding ``keys`` (a held-out set, say)."""
    if not (isinstance(value, dict) and all(isinstance(v, torch.Tensor) for v in value.values())):
        raise TypeError(f"{name} must be a dict of tensors with keys {list(keys)}; got "
                        f"{type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name} is missing {missing}; it has {sorted(value)}")
    return value


class Experiment:
    """Base for a chapter's experiment configs (subclasses are frozen dataclasses)."""

    #: The cache name of this kind of experiment (one word; see :meth:`cache_name`).
    name: ClassVar[str] = "experiment"

    #: Float fields that may be 0 (every other float field must be > 0 and finite).
    nonnegative_floats: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        """Check every field against its annotation: ints are ints (never bools or floats),
        counts (:data:`POSITIVE_FIELDS`) >= 1, other ints >= 0, floats finite and > 0 (or >= 0
        for :attr:`nonnegative_floats`), tuples of the right kind (a list is accepted and
        stored as a tuple; their float entries as floats), seeds non-empty. Messages name
        ``Config.field``."""
        cls = type(self).__name__
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            name, value = f"{cls}.{f.name}", getattr(self, f.name)
            value = _check_field(name, value, hints[f.name], f.name in POSITIVE_FIELDS,
                                 f.name in self.nonnegative_floats)
            object.__setattr__(self, f.name, value)
        if hasattr(self, "seeds") and len(self.seeds) == 0:
            raise ValueError(f"{cls}.seeds must hold at least one seed; got ()")


    # ------------------------------------------------------------------ what a config defines
    def task(self):
        raise NotImplementedError

    def model_fn(self, task):
        raise NotImplementedError

    def probes(self, task) -> list:
        return []

    def train_kwargs(self) -> dict:
        raise NotImplementedError

    def seeds_and_members(self) -> tuple[list[int], list[int] | None, dict | None]:
        """``(model seeds, data seeds or None, member_kwargs or None)`` for the engine."""
        return list(self.seeds), None, None

    def first_members(self, n: int):
        """This config with only its first ``n`` members (seeds): what
        :func:`attn_core.stored.stored_run` re-runs live. Each member trains on its own seeds,
        so member i of the two configs is the same run."""
        n = check_int("n", n, 1, len(self.seeds))
        return dataclasses.replace(self, seeds=tuple(self.seeds[:n]))

    def label(self, task) -> str:
        """The progress bar's label."""
        return self.cache_name()

    def cache_name(self) -> str:
        """The name results are cached under (the kind of experiment plus its main variant)."""
        return self.name

    def display_name(self) -> str:
        """The name the ``[cache]`` and ``[stored]`` lines print (the cache name unless a
        chapter says more: the cache name keys stored results and cannot change)."""
        return self.cache_name()

    def cache_config(self) -> dict:
        """What identifies a result besides the name: every field of the config."""
        return asdict(self)

    # ------------------------------------------------------------------------------- running
    def as_dict(self) -> dict:
        return asdict(self)

    def check_runs(self) -> None:
        """ValueError naming the config if two of its members are the same run: the same
        model seed, data seed and member settings (a seed given twice would train one run
        twice and count it as two). A repeated model seed with other data or settings is
        another run (chapter 2's query variances, chapter 5's heads)."""
        seeds, data_seeds, kwargs = self.seeds_and_members()
        seen: dict[tuple, int] = {}
        for i, seed in enumerate(seeds):
            run = (int(seed), None if data_seeds is None else int(data_seeds[i]),
                   None if not kwargs else repr([(k, kwargs[k][i]) for k in sorted(kwargs)]))
            if run in seen:
                what = ("seed" if data_seeds is None and not kwargs
                        else "seed, data seed and settings")
                raise ValueError(f"{type(self).__name__}: members {seen[run]} and {i} are the "
                                 f"same run (the same {what}, seed {int(seed)}): a run given "
                                 f"twice would be trained twice and counted as two; give each "
                                 f"once")
            seen[run] = i

    def train(self, progress: bool = True) -> History:
        """Train this experiment now (no cache); its members must be distinct runs
        (:meth:`check_runs`)."""
        self.check_runs()
        task = self.task()
        seeds, data_seeds, member_kwargs = self.seeds_and_members()
        return train(self.model_fn(task), task, seeds, data_seeds=data_seeds,
                     member_kwargs=member_kwargs, probes=self.probes(task), progress=progress,
                     desc=self.label(task), **self.train_kwargs())

    def run(self, progress: bool = True, cache: bool = True) -> History:
        """Train every member and return the :class:`~attn_core.training.History`.

        With ``cache=True`` a result computed before for this exact config (and package
        source) is loaded instead, and the call prints which of the two happened. A subclass
        defined outside the package (a reader's variant in a notebook) is keyed by its own
        code as well, so it never receives its base's result; if that code cannot be read
        (typed at a prompt), its runs are not cached (:func:`attn_core.cache.code_identity`).
        """
        if not isinstance(progress, bool) or not isinstance(cache, bool):
            raise TypeError("progress and cache must be True or False")
        if not cache:
            return self.train(progress)
        return cached_history(self.cache_name(), self.cache_config(),
                              lambda: self.train(progress), label=self.display_name(),
                              config_class=type(self))
