"""ATTN_CLUSTER (issue #33): the engine's member jobs on a Dask cluster through joblib's dask
backend. On a ``local:2`` cluster: bitwise the numbers of one process (an LSTM seq2seq, a GRU
with heads, the Transformer; looped and batched), a worker that dies mid-job has its job
retried with the same numbers, an interrupted sweep resumes with only its unsaved groups
trained, and the interrupt cancels the cluster's jobs. A bad value or a scheduler that does
not answer is refused naming ATTN_CLUSTER or the address."""

from __future__ import annotations

import functools
import os
import socket
import sys
import time

import numpy as np
import pytest

pytest.importorskip("distributed")
# one xdist worker runs them all (run_tests.sh: --dist loadgroup): one local cluster started
pytestmark = pytest.mark.xdist_group("dask-cluster")
import cloudpickle  # noqa: E402  (a dependency of distributed)

from attn_core import cache, cluster  # noqa: E402
from attn_core.chapters.ch6_transformer import StackedTransformer  # noqa: E402
from attn_core.config import env_cluster  # noqa: E402
from attn_core.data import CopyTask  # noqa: E402
from attn_core.models import Seq2Seq  # noqa: E402
from attn_core.training import train  # noqa: E402
from test_engine import _assert_bitwise_equal  # noqa: E402  (the engine tests' own check)

# the workers unpickle this module's functions by value (tests/ is not on their path)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

LSTM = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12)
GRU_HEADS = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12, cell="gru", heads=2,
                              head_proj=True)
TRANSFORMER = functools.partial(StackedTransformer, vocab=13, d_model=8, heads=2, d_ff=16,
                                max_len=16)
KW = dict(steps=4, batch_size=4, eval_every=2, progress=False)


@pytest.fixture(scope="module", autouse=True)
def _close_clusters():
    yield
    cluster.close()


@pytest.fixture
def local2(monkeypatch):
    monkeypatch.setenv("ATTN_CLUSTER", "local:2")
    monkeypatch.delenv("ATTN_WORKERS", raising=False)
    return cluster.client()


# ------------------------------------------------------------------------ the variable
@pytest.mark.parametrize("raw, want", [
    (None, None), ("", None), ("local:2", ("local", 2)), (" local:1 ", ("local", 1)),
    ("tcp://10.0.0.7:8786", ("address", "tcp://10.0.0.7:8786")),
    ("tls://sched.example.org:8786", ("address", "tls://sched.example.org:8786"))])
def test_env_cluster(env, raw, want):
    env("ATTN_CLUSTER", raw)
    assert env_cluster() == want


@pytest.mark.parametrize("raw", ["local:0", "local:", "local:two", "local:2.0", "8786",
                                 "host:8786", "tcp://host", "tcp://host:0",
                                 "tcp://host:70000", "http://host:8786", "tcp://a b:1"])
def test_a_bad_attn_cluster_is_refused_naming_it(monkeypatch, raw):
    monkeypatch.setenv("ATTN_CLUSTER", raw)
    with pytest.raises(ValueError, match=r"^ATTN_CLUSTER must be local:N .* tcp://host:port "
                                         r"\(port 1-65535\).*got " + repr(raw).replace("\\", "\\\\")):
        env_cluster()


def test_a_scheduler_that_does_not_answer_fails_naming_its_address(monkeypatch):
    with socket.socket() as s:            # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    monkeypatch.setenv("ATTN_CLUSTER", address)
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)        # 5 s in use; 1 s here
    with pytest.raises(ConnectionError, match=rf"^ATTN_CLUSTER={address}: no Dask scheduler "
                                              rf"answered within 1 s"):
        cluster.client()


def test_unset_means_no_cluster(monkeypatch):
    monkeypatch.delenv("ATTN_CLUSTER", raising=False)
    assert cluster.client() is None


# -------------------------------------------------------------- the same numbers on it
@pytest.mark.parametrize("model_fn", [LSTM, GRU_HEADS, TRANSFORMER],
                         ids=["lstm", "gru-heads", "transformer"])
@pytest.mark.parametrize("execution", ["looped", "batched"])
def test_a_local_cluster_gives_bitwise_the_numbers_of_one_process(local2, monkeypatch,
                                                                   model_fn, execution,
                                                                   capsys):
    probe = lambda model, batch: {"twice_loss": model.evaluate(batch)["loss"] * 2}  # noqa: E731
    seeds = [0, 1, 2, 3, 4]
    one = train(model_fn, CopyTask(12), seeds, workers=1, execution=execution,
                probes=[probe], **KW)
    on_cluster = train(model_fn, CopyTask(12), seeds, execution=execution, probes=[probe],
                       **KW)
    _assert_bitwise_equal(one, on_cluster)
    assert not np.array_equal(one.train_loss[0], one.train_loss[1])
    # the cluster's workers ran it: their processes are not this one
    pids = set(local2.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids


def test_the_trainer_groups_batched_members_by_the_clusters_workers(local2):
    from attn_core.training import Trainer
    assert cluster.n_threads(local2) == 2
    t = Trainer(steps=1)
    assert t._workers(6) == 2 and t._groups(6, "batched") == [[0, 1, 2], [3, 4, 5]]
    assert Trainer(steps=1, workers=1)._cluster(6) is None     # workers=1: this process


# ----------------------------------------------------------------------- a worker lost
def _dies_once(marker, seeds, **kwargs):
    """A model_fn whose first call for member 2 kills the worker process it runs in."""
    if list(seeds) == [2] and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)                                   # as a lost machine would: no cleanup
    return LSTM(seeds=seeds, **kwargs)


def test_a_worker_killed_mid_run_has_its_job_retried_with_the_same_numbers(local2,
                                                                           tmp_path):
    marker = str(tmp_path / "killed")
    reference = train(LSTM, CopyTask(12), [0, 1, 2, 3], workers=1, execution="looped", **KW)
    h = train(functools.partial(_dies_once, marker), CopyTask(12), [0, 1, 2, 3],
              execution="looped", **KW)
    assert os.path.exists(marker)                    # a worker did die
    _assert_bitwise_equal(reference, h)


def _always_dies(seeds, **kwargs):
    if list(seeds) == [1]:
        os._exit(1)
    return LSTM(seeds=seeds, **kwargs)


def test_a_job_that_kills_every_worker_it_runs_on_fails_the_run(local2):
    # Dask gives up after its allowed failures; the run raises instead of waiting forever
    # (joblib's dask backend, tried first, waited forever here)
    from distributed.scheduler import KilledWorker

    def allow(n):          # the scheduler's retries of a task whose worker died (default 3)
        def set_on(dask_scheduler):
            old, dask_scheduler.allowed_failures = dask_scheduler.allowed_failures, n
            return old
        return local2.run_on_scheduler(set_on)

    default = allow(1)     # two deaths, not four: the test waits on each worker's restart
    try:
        with pytest.raises(KilledWorker, match=r"attn-fit-\w+-1'? on 2 different workers"):
            train(_always_dies, CopyTask(12), [0, 1, 2], execution="looped", **KW)
    finally:
        allow(default)


# ------------------------------------------------------------ interrupted and resumed
def _touching(folder, seeds, **kwargs):
    """A model_fn that leaves a file for each member it starts (in whichever process) and
    takes 0.3 s more (so that an interrupt finds jobs still queued)."""
    open(os.path.join(folder, f"member-{'-'.join(map(str, seeds))}"), "w").close()
    time.sleep(0.3)
    return LSTM(seeds=seeds, **kwargs)


@pytest.mark.filterwarnings("ignore:.*still being processed by the workers have been cancelled")
def test_an_interrupted_sweep_resumes_and_the_interrupt_cancels_the_jobs(local2, tmp_path,
                                                                        monkeypatch,
                                                                        reported):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    seeds = list(range(8))

    started = tmp_path / "started"
    started.mkdir()

    def run():
        return train(functools.partial(_touching, str(started)), CopyTask(12), seeds,
                     execution="looped", **{**KW, "steps": 40})

    reference = train(LSTM, CopyTask(12), seeds, workers=1, execution="looped",
                      **{**KW, "steps": 40})
    saved = []
    real_save = cache._GroupStore.save

    def save_then_interrupt(self, key, result):       # the client stops after two groups
        real_save(self, key, result)
        saved.append(key)
        if len(saved) == 2:
            raise KeyboardInterrupt("interrupted by the reader")

    monkeypatch.setattr(cache._GroupStore, "save", save_then_interrupt)
    with pytest.raises(KeyboardInterrupt, match="interrupted by the reader"):
        cache.cached_history("sweep", {"n": 8}, run)
    # the cluster's jobs were cancelled: once the jobs that were running end, its scheduler
    # has none left to run (the finished ones stay in memory while the client holds them)
    def states():
        return local2.run_on_scheduler(lambda dask_scheduler: [
            ts.state for ts in dask_scheduler.tasks.values()])

    deadline = time.monotonic() + 60                  # a guard against hanging, not a speed
    while set(states()) - {"memory", "released", "forgotten"} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(states()) <= {"memory", "released", "forgotten"}
    # every job was submitted at once: 2 saved, 2 running when it stopped (and perhaps one
    # more starting); the other 4 were cancelled before they started
    assert len(list(started.iterdir())) <= len(saved) + cluster.n_threads(local2) + 1
    assert len(list(tmp_path.glob("sweep-*.parts/*.npz"))) == 2
    monkeypatch.setattr(cache._GroupStore, "save", real_save)
    reported()
    h = cache.cached_history("sweep", {"n": 8}, run)
    assert "resumed an interrupted run (2 finished group(s) reused" in reported()
    _assert_bitwise_equal(reference, h)
