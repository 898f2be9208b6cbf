"""The engine's member jobs on a Dask cluster (``ATTN_CLUSTER``).

The engine (:mod:`attn_core.training`) hands independent groups of members to worker
processes through joblib (loky). With ``ATTN_CLUSTER`` set it hands the same jobs to a Dask
cluster instead, as Dask futures (Dask's scheduler, none of ours; joblib's own dask backend
was tried and dropped: see :meth:`attn_core.training.Trainer._fit_on_cluster`): ``local:N``
starts a ``distributed.LocalCluster`` of N single-threaded workers on this machine,
``tcp://host:port`` connects to a running scheduler. Each job computes exactly what it would
compute in this process, so the numbers are bitwise those of ``ATTN_WORKERS=1`` (tested).

What Dask adds, and this module relies on: a worker that dies mid-job (a machine lost, a
process killed) has its job rescheduled on another worker, and the run ends with the same
numbers. When the caller stops early (a kernel interrupt, an exception) the engine cancels
the cluster's jobs not yet finished. The results cache is written by this process alone (the
engine saves each group as it arrives: an interrupted sweep restarted trains only the groups
not saved).

Needs ``dask`` and ``distributed`` (``pip install "attn_core[cluster]"``), imported only when
``ATTN_CLUSTER`` is set.
"""

from __future__ import annotations

import logging
import os

from .config import env_cluster

__all__ = ["CONNECT_TIMEOUT_S", "client", "close", "n_threads"]

#: Seconds to wait for a scheduler at a ``tcp://`` address before failing.
CONNECT_TIMEOUT_S = 5

_CLIENTS: dict = {}


def client():
    """The ``distributed.Client`` of ``ATTN_CLUSTER`` (None when it is unset), made once per
    process and value and reused; its dashboard address is printed when it is made.
    ConnectionError naming the address when no scheduler answers within
    :data:`CONNECT_TIMEOUT_S` seconds; ImportError naming the extra when Dask is missing."""
    spec = env_cluster()
    if spec is None:
        return None
    known = _CLIENTS.get(spec)
    if known is not None and known.status == "running":
        return known
    try:
        import distributed
    except ImportError:
        raise ImportError("ATTN_CLUSTER needs dask and distributed: pip install "
                          "'attn_core[cluster]' (or unset ATTN_CLUSTER for local worker "
                          "processes)") from None
    kind, where = spec
    if kind == "local":
        import dask

        # Dask's nanny gives its workers MALLOC_TRIM_THRESHOLD_=65536 (and one-thread BLAS
        # settings) and leaves them in this process's environment too: the trim threshold
        # made every training step here ~30 % slower, on the cluster and in the loky
        # workers started after it (benchmarks/bench_engine.py measures it). Neither is
        # wanted: each job sets its own torch threads.
        before = dict(os.environ)
        with dask.config.set({"distributed.nanny.pre-spawn-environ": {}}):
            cluster = distributed.LocalCluster(n_workers=where, threads_per_worker=1,
                                               processes=True, dashboard_address=":0",
                                               silence_logs=logging.ERROR)
        os.environ.clear()
        os.environ.update(before)
        made = distributed.Client(cluster)
        label = f"local:{where} ({where} worker processes on this machine)"
    else:
        try:
            made = distributed.Client(where, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, TimeoutError) as e:
            raise ConnectionError(
                f"ATTN_CLUSTER={where}: no Dask scheduler answered within "
                f"{CONNECT_TIMEOUT_S} s ({type(e).__name__}). Start one there with `dask "
                f"scheduler` and workers with `dask worker {where} --nthreads 1`, or unset "
                f"ATTN_CLUSTER") from None
        label = where
    _CLIENTS[spec] = made
    print(f"[cluster] {label}: {n_threads(made)} worker threads; dashboard "
          f"{made.dashboard_link}")
    return made


def n_threads(c) -> int:
    """The worker threads of the cluster behind client ``c`` (jobs that run at once)."""
    return int(sum(c.nthreads().values()))


def close() -> None:
    """Close every client (and local cluster) this process made."""
    for c in list(_CLIENTS.values()):
        cluster = getattr(c, "cluster", None)
        c.close()
        if cluster is not None:
            cluster.close()
    _CLIENTS.clear()
