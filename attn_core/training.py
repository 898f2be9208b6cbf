"""The one training engine every chapter uses.

:func:`train` (or :class:`Trainer`) trains S independent models -- different seeds, or different
head initialisations -- and returns a :class:`History`. It runs them either

- **batched**: one model with a leading member dimension (see :mod:`attn_core.models`), one
  optimiser over the stacked parameters minimising ``Σ_i loss_i``. Adam and SGD are elementwise,
  so this is exactly S independent optimisers; or
- **looped**: S one-member models trained one after another (the way the papers' code does it,
  using PyTorch's fused LSTM kernels).

On the CPU both spread over ``ATTN_WORKERS`` worker processes (joblib/loky, one per core by
default): looped members one by one, batched members as one stacked group per worker. The
numbers are bitwise the same as in one process.

Batched and looped give the same numbers up to float rounding (``tests/test_engine.py`` checks
< 1e-5). ``execution="auto"`` follows a fixed rule (:func:`choose_execution`: batched on CUDA,
looped on the CPU), so a seed gives bitwise the same numbers in any process on one machine.

History schema (all numpy):

- ``seeds``: (S,) model seeds; ``data_seeds``: (S,) data seeds
- ``train_loss``: (S, steps) -- the training loss of every member at every step
- ``eval_steps``: (E,) -- the steps at which evaluation ran (0 = before training, then every
  ``eval_every`` steps, and the last step)
- ``metrics[name]``: (S, E) -- the model's evaluation metrics on a fixed held-out batch per member
- ``probes[name]``: (S, E, ...) -- what the probe callables returned, one row per member
  (checked at every evaluation: a probe must return ``(model.n_members, ...)`` for the model
  it is given, else the run fails naming the probe)
- ``model``: the trained S-member model (on the CPU), whichever way it was trained

"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import multiprocessing
import os
import time
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from . import cluster
from .checks import check_bool, check_choice, check_int, check_real
from .config import SEED_SALTS, env_max_steps, env_smoke_batch, env_workers, get_device
from .stacked import StackedModule, member, stack_members

__all__ = ["Trainer", "History", "train", "choose_execution", "EXECUTIONS", "OPTIMIZERS",
           "eval_schedule", "eval_seed", "eval_batch", "member_tasks"]

EXECUTIONS = ("auto", "batched", "looped")


class _Optimiser:
    """What the engine uses of a ``torch.optim`` optimiser: its parameters, learning rate,
    ``zero_grad`` and ``step``. The two below call PyTorch's own updates without the
    optimiser classes' ``step`` wrapper, which imports ``torch._dynamo`` (1.5 s, in every
    process that trains) only to mark a graph break for ``torch.compile``, unused here."""

    def __init__(self, params, lr: float):
        self.params = list(params)
        self.lr = float(lr)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()


class _Adam(_Optimiser):
    """``torch.optim.Adam(params, lr, fused=True)`` as the engine uses it (betas (0.9, 0.999),
    eps 1e-8, no weight decay): PyTorch's fused kernel (``torch._fused_adam_``), called on the
    state that ``torch.optim.Adam`` keeps (a float32 step count per parameter, the two
    moments), so every number is bitwise the same (tests/test_engine.py)."""

    def __init__(self, params, lr: float):
        super().__init__(params, lr)
        self.state: dict = {}

    @torch.no_grad()
    def step(self) -> None:
        params = [p for p in self.params if p.grad is not None]
        for p in params:
            if p not in self.state:       # torch.optim.Adam's lazy state, fused layout
                self.state[p] = (torch.zeros((), dtype=torch.float32, device=p.device),
                                 torch.zeros_like(p, memory_format=torch.preserve_format),
                                 torch.zeros_like(p, memory_format=torch.preserve_format))
        by_device: dict = {}
        for p in params:                  # as torch groups the fused call: by device, dtype
            by_device.setdefault((p.device, p.dtype), []).append(p)
        for group in by_device.values():
            steps = [self.state[p][0] for p in group]
            torch._foreach_add_(steps, 1)
            torch._fused_adam_(group, [p.grad for p in group],
                               [self.state[p][1] for p in group],
                               [self.state[p][2] for p in group], [], steps, amsgrad=False,
                               lr=self.lr, beta1=0.9, beta2=0.999, weight_decay=0.0,
                               eps=1e-8, maximize=False, grad_scale=None, found_inf=None)


class _SGD(_Optimiser):
    """``torch.optim.SGD(params, lr)`` (no momentum, no weight decay): ``p -= lr · grad``,
    PyTorch's own update, bitwise."""

    @torch.no_grad()
    def step(self) -> None:
        for p in self.params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-self.lr)


#: Optimiser constructors ``fn(params, lr=...)``. Adam is PyTorch's fused implementation: the
#: same update rule in one kernel over all parameters (on this 2-core CPU a fast-size seq2seq
#: step is ~9% faster, a stacked GRU step ~16%). It is elementwise, so a member's numbers do
#: not depend on which members share its tensors (tests/test_engine.py checks it bitwise).
#: Both are called without ``torch.optim``'s step wrapper (:class:`_Optimiser`), bitwise
#: the same.
OPTIMIZERS = {"adam": _Adam, "sgd": _SGD}
_DEFAULT_LR = {"adam": 1e-3, "sgd": 0.1}

#: Where a run keeps its finished groups while it is under way, so that a run interrupted
#: (a kernel restart, a Colab disconnect) resumes with them: an object with
#: ``begin() -> call index``, ``load(key, rebuild, shape) -> result | None``,
#: ``save(key, result)`` and ``discard(key, reason)`` (a loaded part found wrong: train again).
#: :func:`attn_core.cache.cached_history` sets it around every computation it caches; unset
#: (None), nothing is kept.
GROUP_STORE: contextvars.ContextVar = contextvars.ContextVar("attn_core_group_store",
                                                             default=None)

#: A last-bit perturbation of every initial weight, for measuring how far training's own chaos
#: carries a difference in the last bit of a float (:mod:`attn_core.stored` measures its
#: stored runs' spread with it): None (the default) changes nothing; an int ``k`` multiplies
#: each initial parameter entry by 1 ± 2⁻²³ (one float32 unit in the last place), the signs
#: drawn from seed ``k``. It applies to groups trained in this process (workers=1).
INIT_JITTER: contextvars.ContextVar = contextvars.ContextVar("attn_core_init_jitter",
                                                            default=None)

#: A probe: ``probe(model, eval_batch) -> {name: tensor (S, ...)}``, recorded at every evaluation
#: as ``History.probes[name]`` (S, E, ...). S is the given model's ``n_members`` (1 for each
#: model of a looped run): another first dimension, or a shape that changes between
#: evaluations, is a ValueError naming the probe. Names must be unique across a run's probes.
Probe = Callable[[StackedModule, dict], Mapping[str, torch.Tensor]]


@dataclass
class History:
    """What a training run recorded; see the module docstring for the schema."""

    seeds: np.ndarray
    data_seeds: np.ndarray
    train_loss: np.ndarray
    eval_steps: np.ndarray
    metrics: dict[str, np.ndarray]
    probes: dict[str, np.ndarray]
    model: StackedModule | None = None
    execution: str = "batched"
    seconds: float = 0.0
    config: dict = field(default_factory=dict)
    #: True when this History was loaded from the results cache (see :mod:`attn_core.cache`).
    cached: bool = False
    #: When a cached History was computed (local time, ``YYYY-mm-dd HH:MM:SS``); None if fresh.
    saved_at: str | None = None

    @property
    def n_members(self) -> int:
        return len(self.seeds)

    def index_of(self, step: int) -> int:
        """The index of the evaluation at training step ``step``. In a smoke run
        (``ATTN_MAX_STEPS``) a step past the cap is the last evaluation, so a notebook that
        reads "the accuracy at the budget" runs end to end; otherwise ValueError if the
        run was not evaluated at ``step``."""
        step = check_int("step", step, 0)
        hit = np.flatnonzero(self.eval_steps == step)
        if hit.size:
            return int(hit[0])
        cap = env_max_steps()
        if cap is not None and step > cap and len(self.eval_steps):
            return len(self.eval_steps) - 1
        raise ValueError(f"step must be a step this run was evaluated at "
                         f"({self.eval_steps.tolist()}); got {step}")

    @staticmethod
    def concat(histories: Sequence["History"]) -> "History":
        """The members of several runs with the same training settings and evaluation steps as
        one History (their models stacked when every run has one). ValueError naming what
        differs otherwise."""
        hs = list(histories) if isinstance(histories, (list, tuple)) else None
        if not hs or not all(isinstance(h, History) for h in hs):
            raise TypeError("histories must be a non-empty list of History objects")
        first = hs[0]
        for i, h in enumerate(hs[1:], 1):
            if not np.array_equal(h.eval_steps, first.eval_steps) or h.config != first.config:
                raise ValueError(f"histories[{i}] has other training settings or evaluation "
                                 f"steps than histories[0]; only runs of one setting concat")
            if sorted(h.metrics) != sorted(first.metrics) or sorted(h.probes) != sorted(
                    first.probes):
                raise ValueError(f"histories[{i}] recorded other metrics or probes than "
                                 f"histories[0]")
        if len(hs) == 1:
            return first
        models = [h.model for h in hs]
        return History(
            seeds=np.concatenate([h.seeds for h in hs]),
            data_seeds=np.concatenate([h.data_seeds for h in hs]),
            train_loss=np.concatenate([h.train_loss for h in hs]),
            eval_steps=first.eval_steps,
            metrics={k: np.concatenate([h.metrics[k] for h in hs]) for k in first.metrics},
            probes={k: np.concatenate([h.probes[k] for h in hs]) for k in first.probes},
            model=stack_members(models) if all(m is not None for m in models) else None,
            execution=first.execution if len({h.execution for h in hs}) == 1 else "mixed",
            seconds=float(sum(h.seconds for h in hs)), config=dict(first.config),
            cached=all(h.cached for h in hs),
            saved_at=first.saved_at if all(h.cached for h in hs) else None)

    def final(self, name: str) -> np.ndarray:
        """The last evaluated value of a metric or probe for every member: (S, ...)."""
        src = self.metrics if name in self.metrics else self.probes
        if name not in src:
            raise KeyError(f"{name!r} was not recorded; have {sorted(self.metrics) + sorted(self.probes)}")
        return src[name][:, -1]


def eval_schedule(steps: int, eval_every: int) -> list[int]:
    """The steps a run of ``steps`` training steps is evaluated at: every ``eval_every``
    from 0, and the last step (what :attr:`History.eval_steps` records; the stored results
    are checked against it)."""
    steps, eval_every = check_int("steps", steps), check_int("eval_every", eval_every)
    sched = list(range(0, steps, eval_every))
    if sched[-1] != steps:
        sched.append(steps)
    return sched


def eval_seed(data_seed: int) -> int:
    """A held-out generator seed derived from a member's data seed (an int >= 0)."""
    data_seed = check_int("data_seed", data_seed, 0)
    return ((int(data_seed) * SEED_SALTS["eval_stream_mul"] + SEED_SALTS["eval_stream_add"])
            % (2**63 - 1))


def _stack_batches(batches: Sequence[dict], device) -> dict[str, torch.Tensor]:
    return {k: torch.stack([b[k] for b in batches]).to(device) for k in batches[0]}


def eval_batch(tasks: Sequence, data_seeds: Sequence[int], n: int,
                device="cpu") -> dict[str, torch.Tensor]:
    """The held-out batch every evaluation of a run uses: ``n`` examples of each member's task
    (:func:`member_tasks`) drawn from its data seed's evaluation stream, stacked (S, n, ...)."""
    data_seeds = _check_seed_list("data_seeds", data_seeds)
    n = check_int("n", n)
    if not isinstance(tasks, Sequence) or len(tasks) != len(data_seeds):
        raise ValueError(f"tasks must be a sequence of one task per data seed "
                         f"({len(data_seeds)}); got {type(tasks).__name__}")
    return _stack_batches([t.sample(torch.Generator().manual_seed(eval_seed(s)), n)
                           for t, s in zip(tasks, data_seeds)], device)


@dataclass
class Trainer:
    """Trains S independent models of one architecture on one task (d2l-style: the trainer owns
    the device, the optimiser, the evaluation schedule and the progress bar).

    Args:
        steps: number of optimiser steps (>= 1).
        batch_size: examples per member per step (full-batch tasks ignore it).
        optimizer: ``"adam"`` or ``"sgd"``.
        lr: learning rate (default 1e-3 for Adam -- PyTorch's default -- and 0.1 for SGD).
        eval_every: evaluate every this many steps (and at step 0 and the last step).
        eval_batch_size: size of each member's fixed held-out batch (default: ``batch_size``).
        execution: ``"auto"``, ``"batched"`` or ``"looped"``.
        device: torch device (default: CUDA when available, else CPU).
        progress: show a tqdm progress bar.
        desc: the progress bar's label.
        workers: worker processes on the CPU (default ``ATTN_WORKERS``, itself defaulting to
            the cores this process may use); 1 trains in this process. Looped members are
            spread over them; batched members are split into one stacked group per worker.
            Results are bitwise equal for any number of workers (tested).
    """

    steps: int
    batch_size: int = 32
    optimizer: str = "adam"
    lr: float | None = None
    eval_every: int = 10
    eval_batch_size: int | None = None
    execution: str = "auto"
    device: str | torch.device | None = None
    progress: bool = True
    desc: str = "training"
    workers: int | None = None

    def __post_init__(self):
        for name in ("steps", "batch_size", "eval_every"):
            setattr(self, name, check_int(name, getattr(self, name)))
        self.optimizer = check_choice("optimizer", self.optimizer, tuple(OPTIMIZERS))
        if self.lr is None:
            self.lr = _DEFAULT_LR[self.optimizer]
        self.lr = check_real("lr", self.lr, 0.0, low_open=True)
        self.execution = check_choice("execution", self.execution, EXECUTIONS)
        self.eval_batch_size = (self.batch_size if self.eval_batch_size is None
                                else check_int("eval_batch_size", self.eval_batch_size))
        if self.workers is not None:
            self.workers = check_int("workers", self.workers)
        # a smoke run (ATTN_MAX_STEPS) trains every run for at most that many steps
        cap = env_max_steps()
        if cap is not None and self.steps > cap:
            self.steps = cap
        smoke_batch = None if cap is None else env_smoke_batch()
        if smoke_batch is not None:
            # ... on at most ATTN_SMOKE_BATCH examples a batch, training and evaluation: the
            # papers' model and sequence shapes, a smaller batch (plumbing, not numbers)
            self.batch_size = min(self.batch_size, smoke_batch)
            self.eval_batch_size = min(self.eval_batch_size, smoke_batch)
        check_bool("progress", self.progress)
        if not isinstance(self.desc, str):
            raise TypeError(f"desc must be a string; got {type(self.desc).__name__}")
        self.device = get_device(self.device)

    # ----------------------------------------------------------------------------------- API
    def fit(self, model_fn: Callable[..., StackedModule], task, seeds: Sequence[int],
            data_seeds: Sequence[int] | None = None, probes: Sequence[Probe] = (),
            member_kwargs: Mapping[str, Sequence] | None = None) -> History:
        """Train one model per seed and return their :class:`History`.

        Args:
            model_fn: ``model_fn(seeds=[...], **member_kwargs)`` builds a stacked model with
                those members (e.g. ``functools.partial(Seq2Seq, vocab=21, hidden=64)``).
            task: a data task with ``sample(generator, batch_size)`` (see :mod:`attn_core.data`).
            seeds: one model seed per member (S >= 1).
            data_seeds: one data seed per member (default: the model seeds). It seeds the
                member's batch generator and, for a task with ``for_seed(seed)`` (a fixed data
                set drawn from a seed), picks the member's own data set.
            probes: callables ``fn(model, eval_batch) -> {name: tensor (S, ...)}``, each name
                recorded at every evaluation as ``History.probes[name]`` (S, E, ...); two probes
                returning the same name is an error, and so is a value whose first dimension
                is not the given model's ``model.n_members`` (ValueError naming the probe).
            member_kwargs: per-member keyword arguments for ``model_fn``, each a list with one
                entry per seed (e.g. ``{"head_seeds": [...]}``); sliced like the seeds.
        """
        seeds = _check_seed_list("seeds", seeds)
        data_seeds = seeds if data_seeds is None else _check_seed_list("data_seeds", data_seeds)
        if len(data_seeds) != len(seeds):
            raise ValueError(f"data_seeds must have one entry per seed ({len(seeds)}); "
                             f"got {len(data_seeds)}")
        if not callable(model_fn):
            raise TypeError("model_fn must be callable: model_fn(seeds=[...]) -> StackedModule")
        if not hasattr(task, "sample"):
            raise TypeError(f"task must have a sample(generator, batch_size) method; got {task!r}")
        if isinstance(probes, Mapping) or not isinstance(probes, (list, tuple)):
            raise TypeError(f"probes must be a list or tuple of callables probe(model, batch) -> "
                            f"{{name: tensor}}; got {type(probes).__name__}")
        for i, fn in enumerate(probes):
            if not callable(fn):
                raise TypeError(f"probes[{i}] must be callable; got {type(fn).__name__}")
        probes = list(probes)
        if member_kwargs is not None and not isinstance(member_kwargs, Mapping):
            raise TypeError(f"member_kwargs must be a dict of per-member lists; got "
                            f"{type(member_kwargs).__name__}")
        member_kwargs = dict(member_kwargs or {})
        for k, v in member_kwargs.items():
            if isinstance(v, (str, bytes)) or not isinstance(v, (Sequence, np.ndarray)):
                raise TypeError(f"member_kwargs[{k!r}] must be a list with one entry per seed "
                                f"({len(seeds)}); got {type(v).__name__} {v!r:.60}")
            if len(v) != len(seeds):
                raise ValueError(f"member_kwargs[{k!r}] must have one entry per seed "
                                 f"({len(seeds)}); got {len(v)}")

        execution = self.execution
        if execution == "auto":
            execution = choose_execution(len(seeds), self.device)
        groups = self._groups(len(seeds), execution)
        jobs = [(model_fn, [seeds[i] for i in g], {k: [v[i] for i in g]
                                                   for k, v in member_kwargs.items()},
                 [data_seeds[i] for i in g]) for g in groups]
        t0 = time.perf_counter()
        # Groups finished by an interrupted earlier run of this computation come back from the
        # store; every group finished now is saved to it at once (see GROUP_STORE).
        store = GROUP_STORE.get()
        results: list = [None] * len(jobs)
        keys: list = [None] * len(jobs)
        n_evals = len(eval_schedule(self.steps, self.eval_every))
        if store is not None:
            call = store.begin()
            for i, job in enumerate(jobs):
                keys[i] = self._job_key(call, i, job)
                results[i] = store.load(keys[i], functools.partial(_rebuild, *job[:3]),
                                        (len(job[1]), self.steps, n_evals))
        todo = [i for i, r in enumerate(results) if r is None]
        dask_client = self._cluster(len(todo))
        n_workers = self._workers(len(todo))

        def finished(i, result):
            results[i] = result
            if store is not None:
                store.save(keys[i], result)

        # mininterval: at most one redraw every 2 s. In a notebook each redraw is a widget message;
        # a long cell flooding the kernel's IOPub channel makes it drop messages (nbval then
        # times out waiting for the cell's output).
        where = (", on the Dask cluster" if dask_client is not None
                 else f", {n_workers} workers" if n_workers > 1 else "")
        bar = tqdm(total=self.steps * len(groups),
                   desc=f"{self.desc} [{execution}, S={len(seeds)}{where}]",
                   disable=not self.progress, leave=False, mininterval=2.0)
        bar.update(self.steps * (len(jobs) - len(todo)))
        if dask_client is not None or n_workers > 1:
            self._fit_in_workers([jobs[i] for i in todo], task, probes, bar, n_workers,
                                 lambda j, r: finished(todo[j], r), dask_client)
        else:
            for i in todo:
                finished(i, self._fit_group(*jobs[i], task, probes, bar))

        def train_again(i, why):
            store.discard(keys[i], why)
            bar.total += self.steps
            finished(i, self._fit_group(*jobs[i], task, probes, bar))

        # A loaded part must record the metrics and probes (names, trailing shapes, dtypes) of
        # the groups trained now; one that does not is trained again. With every group loaded
        # and the parts disagreeing, group 0 is trained again to tell which are right.
        loaded = [i for i in range(len(jobs)) if i not in todo]
        if loaded and not todo and any(_mismatch(results[i], results[0]) for i in loaded):
            train_again(0, "the saved parts of this run record different metrics or probes")
        for i in loaded:
            why = _mismatch(results[i], results[todo[0] if todo else 0])
            if why:
                train_again(i, why)
        bar.close()
        models = [r[0] for r in results]
        model = models[0] if len(models) == 1 else stack_members(models)
        train_loss = np.concatenate([r[1] for r in results], axis=0)
        _warn_if_diverged(train_loss, seeds)
        return History(
            seeds=np.array(seeds), data_seeds=np.array(data_seeds),
            train_loss=train_loss,
            eval_steps=np.array(eval_schedule(self.steps, self.eval_every)),
            metrics={k: np.concatenate([r[2][k] for r in results]) for k in results[0][2]},
            probes={k: np.concatenate([r[3][k] for r in results]) for k in results[0][3]},
            model=model.cpu(), execution=execution, seconds=time.perf_counter() - t0,
            config={"steps": self.steps, "batch_size": self.batch_size, "optimizer": self.optimizer,
                    "lr": self.lr, "eval_every": self.eval_every, "device": str(self.device)},
        )

    def _groups(self, n_members: int, execution: str) -> list[list[int]]:
        """Which members train together. Looped: one member per group. Batched: one group, or
        on the CPU with several workers, contiguous groups of >= 2 members, one per worker (a
        stacked step computes each member's slice on its own, so a member's numbers do not
        depend on its group -- tested bitwise; a group of one would switch to the fused RNN
        kernel, so groups keep two members at least)."""
        if execution == "looped":
            return [[i] for i in range(n_members)]
        n_workers = self._workers(n_members)
        k = max(1, min(n_workers, n_members // 2))
        bounds = np.linspace(0, n_members, k + 1).round().astype(int)
        return [list(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]

    def _workers(self, n_groups: int) -> int:
        """How many worker processes train ``n_groups`` groups: 1 (in this process) on CUDA,
        for a single group, or when ``workers``/``ATTN_WORKERS`` is 1; else up to that many
        (with ``ATTN_CLUSTER`` and no ``workers`` given: up to the cluster's worker
        threads)."""
        if self.device.type != "cpu" or n_groups < 2:
            return 1
        c = self._cluster(n_groups)
        if c is not None:
            return max(1, min(cluster.n_threads(c), n_groups))
        return min(self.workers if self.workers is not None else env_workers(), n_groups)

    def _cluster(self, n_groups: int):
        """The Dask client of ``ATTN_CLUSTER`` when it trains these groups: on the CPU, two
        groups or more, and ``workers`` not given (``workers=1`` still trains here)."""
        if self.device.type != "cpu" or n_groups < 2 or self.workers is not None:
            return None
        return cluster.client()

    def _fit_in_workers(self, jobs, task, probes, bar, n_workers, finished, dask_client=None):
        """Train the groups in ``n_workers`` loky processes (kept alive between calls), or on
        ``dask_client``'s cluster (:meth:`_fit_on_cluster`), each with this process's torch
        thread count; every group computes exactly what it would compute here, so the
        results are bitwise equal to the in-process loop. Each group's result goes to
        ``finished(index, result)`` as soon as it arrives, and the bar advances; an exception
        in a worker is re-raised here with its traceback."""
        threads = torch.get_num_threads()
        if dask_client is not None:
            self._fit_on_cluster(jobs, task, probes, bar, finished, dask_client, threads)
            return
        _start_workers(n_workers)
        parallel = Parallel(n_jobs=n_workers, backend="loky", return_as="generator_unordered")
        tasks = (delayed(_worker_fit)(self, i, job, task, probes, threads)
                 for i, job in enumerate(jobs))
        for i, result in parallel(tasks):
            finished(i, result)
            bar.update(self.steps)

    def _fit_on_cluster(self, jobs, task, probes, bar, finished, c, threads):
        """The groups as Dask tasks on client ``c``'s cluster (``ATTN_CLUSTER``), one task a
        group. Dask retries a task whose worker died (up to its
        ``allowed-failures``, then raises ``KilledWorker`` here); leaving early (an
        interrupt, an error) cancels every task not finished. Dask's own futures, not
        joblib's dask backend: that one only forgets its futures when the caller stops (the
        cluster ran the queued jobs on) and waits forever on a task that Dask gave up
        (``KilledWorker``): both measured with distributed 2026.8.0 and joblib 1.6.0."""
        from distributed import as_completed

        call = uuid.uuid4().hex[:12]
        # the task goes inside each job, not scattered: scattered data dies with its worker,
        # and the jobs that need it could then not be retried
        futures = [c.submit(_worker_fit, self, i, job, task, probes, threads, pure=False,
                            key=f"attn-fit-{call}-{i}") for i, job in enumerate(jobs)]
        try:
            for future in as_completed(futures):
                i, result = future.result()
                finished(i, result)
                bar.update(self.steps)
        except BaseException:
            c.cancel(futures, force=True)
            raise

    def _job_key(self, call: int, index: int, job) -> str:
        """A name for group ``index`` of the ``call``-th fit of one cached computation: its
        members (seeds, data seeds, per-member arguments) and the training settings."""
        _, seeds, member_kwargs, data_seeds = job
        desc = {"seeds": seeds, "data_seeds": data_seeds, "steps": self.steps,
                "batch_size": self.batch_size, "lr": self.lr, "optimizer": self.optimizer,
                "eval_every": self.eval_every, "eval_batch_size": self.eval_batch_size,
                "device": str(self.device),
                "member_kwargs": {k: [repr(x) for x in v] for k, v in member_kwargs.items()}}
        digest = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]
        return f"fit{call}-group{index}-{digest}"

    # ------------------------------------------------------------------------------ internals
    def _fit_group(self, model_fn, seeds, member_kwargs, data_seeds, task, probes, bar=None):
        """Train one group of members (one stacked model) and return what it recorded."""
        device = self.device
        n_members = len(seeds)
        model = model_fn(seeds=seeds, **member_kwargs)
        if not isinstance(model, StackedModule):
            raise TypeError(f"model_fn must return a StackedModule; got {type(model).__name__}")
        model = model.to(device)
        if model.n_members != n_members:
            raise ValueError(f"model_fn(seeds=...) built {model.n_members} members for "
                             f"{n_members} seeds")
        _jitter(model, INIT_JITTER.get())
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters")
        opt = OPTIMIZERS[self.optimizer](params, lr=self.lr)
        gens = [torch.Generator().manual_seed(int(s)) for s in data_seeds]
        tasks = member_tasks(task, data_seeds)
        held_out = eval_batch(tasks, data_seeds, self.eval_batch_size, device)
        schedule = eval_schedule(self.steps, self.eval_every)
        losses = torch.empty(n_members, self.steps)
        metric_log: dict[str, list] = {}
        probe_log: dict[str, list] = {}

        def evaluate():
            model.eval()
            first = not metric_log          # no evaluation recorded yet
            with torch.no_grad():
                for k, v in model.evaluate(held_out).items():
                    metric_log.setdefault(k, []).append(v.detach().float().cpu())
                seen: set[str] = set()
                # at the first evaluation, every probe also sees the members in another number
                twin = _twin(model, held_out) if probes and first else None
                for fn in probes:
                    out = _probe_output(fn, model, held_out)
                    if twin is not None:
                        _check_twin(fn, out, *twin)
                    for k, v in out.items():
                        if k in seen:
                            raise ValueError(f"two probes returned the name {k!r}; probe names "
                                             f"must be unique within a run")
                        seen.add(k)
                        log = probe_log.setdefault(k, [])
                        if log and v.shape != log[0].shape:
                            raise ValueError(
                                f"probe {_probe_name(fn)} returned {k!r} with shape "
                                f"{tuple(v.shape)} at this evaluation and "
                                f"{tuple(log[0].shape)} at the first: a probe's record "
                                f"keeps one shape (S, ...) through a run")
                        log.append(v)
            model.train()

        model.train()
        for step in range(self.steps):
            if step in schedule:
                evaluate()
            batch = _stack_batches([t.sample(g, self.batch_size) for t, g in zip(tasks, gens)],
                                   device)
            loss = model.loss(batch)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()  # Σ_i loss_i: member i's gradient is ∇ loss_i alone
            opt.step()
            losses[:, step] = loss.detach().cpu()
            if bar is None:
                continue
            bar.update(1)
            if step % 10 == 0 or step == self.steps - 1:
                # mean training loss over members, and the last evaluation's metrics
                shown = {k: f"{v[-1].mean():.3f}" for k, v in metric_log.items() if k != "loss"}
                bar.set_postfix(loss=f"{losses[:, step].mean():.3f}", **shown, refresh=False)
        evaluate()
        metrics = {k: torch.stack(v, dim=1).numpy() for k, v in metric_log.items()}
        probe_arrays = {k: torch.stack(v, dim=1).numpy() for k, v in probe_log.items()}
        return model.cpu(), losses.numpy(), metrics, probe_arrays


def _warn_if_diverged(train_loss: np.ndarray, seeds) -> None:
    """A RuntimeWarning naming the members whose training loss stopped being finite, and the
    step where it did: such a run still returns (its numbers are kept, as computed), but it
    must not pass for a normal one."""
    bad = ~np.isfinite(train_loss)
    if not bad.any():
        return
    rows = np.flatnonzero(bad.any(axis=1))
    first = {int(seeds[m]): int(np.argmax(bad[m])) for m in rows}
    where = ", ".join(f"seed {s} at step {t}" for s, t in list(first.items())[:5])
    more = f" and {len(first) - 5} more" if len(first) > 5 else ""
    warnings.warn(f"the training loss of {len(first)} of {len(train_loss)} members stopped "
                  f"being finite ({where}{more}): they diverged (a learning rate too high, "
                  f"or an initialisation too large?) and their later numbers mean nothing",
                  RuntimeWarning, stacklevel=3)


def _probe_name(fn) -> str:
    """A probe as an error message names it: its qualified name (``ch2_sen.sen_probe.<locals>
    .probe``), the function a ``functools.partial`` wraps, or its repr."""
    inner = fn.func if isinstance(fn, functools.partial) else fn
    name = getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None)
    return repr(fn) if not isinstance(name, str) else (
        f"{getattr(inner, '__module__', None) or '?'}.{name}")


def _twin(model: StackedModule, batch: dict):
    """``(model, batch)`` with the same members in another number, for checking the probes at
    a group's first evaluation: member 0 alone (what a looped run gives a probe) when the
    group has several. A one-member group (a looped run, the CPU's default) gets no twin: its
    row-per-member check already refuses a probe whose rows are not its one member's, and a
    probe that reduces over the members records that member's own value there (the batched
    run of the same probe fails, naming it). Checking it twice over would cost a second,
    double-sized probe call per member (measured: a full-size chapter 4 smoke run 2.8 ->
    4.0 s). None too when the model cannot be split (the shape check still runs)."""
    if model.n_members == 1:
        return None
    try:
        return member(model, 0), {k: v[:1] for k, v in batch.items()}
    except (TypeError, ValueError, RuntimeError, AttributeError):
        return None


def _check_twin(fn, out: dict, twin_model: StackedModule, twin_batch: dict) -> None:
    """Probe ``fn``, which returned ``out`` for a group, must return one row per member for
    the group's :func:`_twin` (member 0 alone) too, with the same trailing shapes: a probe
    whose rows do not follow the members (a vector that happens to have S entries, a
    reduction over members) fails batched, instead of recording other numbers."""
    other = _probe_output(fn, twin_model, twin_batch, " (checked on member 0 alone)")
    for k, v in out.items():
        if k not in other or tuple(other[k].shape[1:]) != tuple(v.shape[1:]):
            got = f"shape {tuple(other[k].shape)}" if k in other else "nothing"
            raise ValueError(
                f"probe {_probe_name(fn)} returned {k!r} with shape {tuple(v.shape)} for a "
                f"model of {v.shape[0]} members and {got} "
                f"for member 0 alone: a probe's record of a member must not depend on how many "
                f"members the model has (looped and batched runs would record different "
                f"things)")


def _probe_output(fn, model: StackedModule, batch: dict,
                  context: str = "") -> dict[str, torch.Tensor]:
    """What probe ``fn`` records for ``model``: ``{name: float32 CPU tensor (S, ...)}``.

    Every value must have one row per member of the model it was given: its first dimension
    is ``model.n_members`` (1 for each model of a looped run, S for a batched one), so that
    member i's record is row i whichever way the run executes. Anything else -- a scalar, one
    vector per call, a row per example -- is a ValueError naming the probe and the shapes
    (it was concatenated into the wrong members' rows, looped and batched disagreeing)."""
    out = fn(model, batch)
    if not isinstance(out, Mapping):
        raise TypeError(f"probe {_probe_name(fn)} must return a dict {{name: tensor (S, ...)}}; "
                        f"got {type(out).__name__}")
    n = model.n_members
    checked = {}
    for k, v in out.items():
        if not isinstance(k, str) or not k:
            raise TypeError(f"probe {_probe_name(fn)} returned the name {k!r}; probe names "
                            "are non-empty str")
        try:
            t = torch.as_tensor(v.detach() if isinstance(v, torch.Tensor) else v)
        except (TypeError, ValueError, RuntimeError) as e:
            raise TypeError(f"probe {_probe_name(fn)} returned {k!r} as "
                            f"{type(v).__name__}, not a tensor or array of numbers: {e}") from None
        if t.is_complex():
            raise TypeError(f"probe {_probe_name(fn)} returned {k!r} as a complex tensor; "
                            "probes record real numbers")
        if t.ndim == 0 or t.shape[0] != n:
            raise ValueError(
                f"probe {_probe_name(fn)} returned {k!r} with shape {tuple(t.shape)} for a "
                f"model of {n} member{'s' if n != 1 else ''}{context}: a probe returns one "
                f"row per member, shape ({n}, ...) here (the model it is given has "
                f"model.n_members members: 1 in a looped run, S in a batched one)")
        checked[k] = t.float().cpu()
    return checked


def _jitter(model: StackedModule, seed: int | None) -> None:
    """Multiply every parameter entry by 1 ± 2⁻²³, signs from ``seed`` (see INIT_JITTER)."""
    if seed is None:
        return
    g = torch.Generator().manual_seed(check_int("INIT_JITTER", seed, 0))
    with torch.no_grad():
        for p in model.parameters():
            sign = torch.randint(0, 2, p.shape, generator=g).to(p.dtype) * 2 - 1
            p.mul_(1 + sign.to(p.device) * 2.0**-23)


def _record(result) -> dict[str, str]:
    """What a group's result records besides its members, steps and evaluations: the dtype of
    its training loss, and the dtype and trailing shape of every metric and probe by name."""
    _, loss, metrics, probes = result
    out = {"train_loss": loss.dtype.name}
    for kind, arrays in (("metrics", metrics), ("probes", probes)):
        out.update({f"{kind}/{k}": f"{v.dtype.name} (S, E) + {v.shape[2:]}"
                    for k, v in arrays.items()})
    return out


def _mismatch(part, group) -> str | None:
    """Why a loaded group's result ``part`` does not record what ``group`` (trained now)
    records, or None when it does."""
    a, b = _record(part), _record(group)
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            return (f"it records {k} as {a.get(k, 'nothing')}; a group trained now records it "
                    f"as {b.get(k, 'nothing')}")
    return None


def member_tasks(task, data_seeds) -> list:
    """One task per member. A task that holds one fixed data set drawn from a seed (the
    full-batch tasks of chapter 2) has ``for_seed(seed)``, returning the same task drawn from
    ``seed``: each member then trains on the data set of its own data seed. Every other task
    draws its batches from the member's generator and is shared."""
    data_seeds = _check_seed_list("data_seeds", data_seeds)
    if not hasattr(task, "for_seed"):
        return [task] * len(data_seeds)
    return [task.for_seed(int(s)) for s in data_seeds]


def _check_seed_list(name: str, seeds) -> list[int]:
    if isinstance(seeds, (int, str, bytes)) or not isinstance(seeds, Sequence):
        raise TypeError(f"{name} must be a sequence of ints (S >= 1); got {type(seeds).__name__}")
    seeds = [int(s) if isinstance(s, (int, np.integer)) and not isinstance(s, bool) else s
             for s in seeds]
    if len(seeds) < 1:
        raise ValueError(f"{name} must hold at least one seed (S >= 1); got none")
    for s in seeds:
        if not isinstance(s, int) or s < 0:
            raise ValueError(f"every entry of {name} must be an int >= 0; got {s!r}")
    return seeds


# ------------------------------------------------------------------------ execution choice
def choose_execution(n_members: int, device=None) -> str:
    """What ``execution="auto"`` runs: a fixed rule, never a timing, so the same call gives
    bitwise the same numbers in every process.

    One member, or the CPU -> ``"looped"`` (one model after another with PyTorch's fused RNN
    kernels, spread over the worker processes; measured on a 2-core CPU the loop is as fast
    as batching or faster for the LSTMs, and two workers beat batching for every model of the
    book); CUDA with S > 1 -> ``"batched"`` (one kernel launch instead of S).
    """
    n_members = check_int("n_members", n_members)
    device = get_device(device)
    if n_members > 1 and device.type == "cuda":
        return "batched"
    return "looped"


def _rebuild(model_fn, seeds, member_kwargs, state: dict) -> StackedModule:
    """A group's trained model from its saved parameters (see :data:`GROUP_STORE`)."""
    model = model_fn(seeds=seeds, **member_kwargs)
    model.load_state_dict(state)
    return model


#: How long the worker processes may take to start and answer a first call (a cold start,
#: importing torch in each, takes a few seconds) before the engine stops waiting and says so,
#: instead of a notebook cell sitting idle.
POOL_START_TIMEOUT_S = 120.0
#: Seconds each worker's first call sleeps (0; the tests make a pool slow to start with it).
_PING_DELAY_S = 0.0


def _ping(delay: float) -> int:
    """A worker's first call: its process id, after ``delay`` seconds."""
    time.sleep(delay)
    return os.getpid()


def _start_workers(n_workers: int) -> None:
    """Make sure the ``n_workers`` loky processes are up and answer (the same pool the
    training calls reuse), or raise naming them after :data:`POOL_START_TIMEOUT_S`."""
    try:
        Parallel(n_jobs=n_workers, backend="loky", timeout=POOL_START_TIMEOUT_S)(
            delayed(_ping)(_PING_DELAY_S) for _ in range(n_workers))
    except (TimeoutError, multiprocessing.TimeoutError):
        raise RuntimeError(
            f"the engine's {n_workers} worker processes (joblib/loky) did not start and answer "
            f"within {POOL_START_TIMEOUT_S:g} s: set ATTN_WORKERS=1 to train in this "
            f"process instead (bitwise the same numbers), and please report it") from None


def _worker_fit(trainer: "Trainer", index: int, job, task, probes, threads: int):
    """One group's training in a worker process (see :meth:`Trainer._fit_in_workers`)."""
    torch.set_num_threads(threads)
    return index, trainer._fit_group(*job, task, probes)


def train(model_fn, task, seeds: Sequence[int], steps: int, data_seeds=None, probes=(),
          member_kwargs=None, **trainer_kwargs) -> History:
    """Train S seeds in one call: ``Trainer(steps, **trainer_kwargs).fit(model_fn, task, seeds, ...)``."""
    return Trainer(steps=steps, **trainer_kwargs).fit(model_fn, task, seeds, data_seeds, probes,
                                                      member_kwargs)
