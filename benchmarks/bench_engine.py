"""Benchmark: the engine on every core, and how close a training step runs to this CPU's limit.

Two tables, measured side by side in one run:

1. **Workers**: wall time of ``attn_core.training.train`` for S = 2, 4, 8, 20 members
   (chapter 4's seq2seq, looped; 50 Adam steps at the fast size, 5 at the paper size) with 1 worker (in this process) and
   with N workers (default: the cores this process may use), at the fast and paper sizes;
   the ratio is the speed-up. The worker pool is started once before timing (a notebook keeps
   it alive between cells, as joblib/loky does). Beside them, the same members on a
   ``local:N`` Dask cluster (``ATTN_CLUSTER``, started before timing): its ratio to one
   worker and its overhead per member over loky's N workers.
2. **FLOP efficiency**: seconds per optimiser step of one model at each size, its counted
   FLOPs (forward by hand -- torch's FLOP counter skips the fused RNN ops -- and backward as
   2x forward), the achieved GFLOP/s and that as a fraction of this machine's single-core
   float32 matmul rate (measured here, 1024x1024 @ 1024x1024).

On CUDA it also prints the looped-vs-batched table (batching removes S-fold launch latency).
Not a test: timings depend on the machine and its load; read the ratios.

    python benchmarks/bench_engine.py                         # both sizes, S = 2 4 8 20
    python benchmarks/bench_engine.py --sizes fast --steps 100 --out benchmarks/engine.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import time

import torch

import attn_core
from attn_core.config import available_cores
from attn_core.data import CopyTask
from attn_core.models import Seq2Seq
from attn_core.training import train

SIZES = {
    "fast": dict(length=20, hidden=64, batch=32, steps=50,
                 label="fast (L=20, hidden 64, batch 32)"),
    "paper": dict(length=40, hidden=256, batch=128, steps=5,
                  label="paper (L=40, hidden 256, batch 128)"),
}


def step_flops(L: int, H: int, B: int, V: int, E: int | None = None, cell: str = "lstm",
               K: int = 1) -> float:
    """FLOPs of one training step of the seq2seq with Luong attention (T = L output steps):
    forward counted by hand (2 per multiply-add), backward taken as twice the forward."""
    E = E or H
    T, gates = L, (4 if cell == "lstm" else 3)
    rnn = lambda n: n * 2 * B * gates * H * (E + H)            # input and hidden projections
    attn = 2 * B * T * H * H * K + 2 * 2 * B * T * L * H * K    # s W, (s W) h, context
    out = 2 * B * T * (2 * H) * H + 2 * B * T * H * V          # W_c [s; c], W_o
    return 3.0 * (rnn(L) + rnn(T) + attn + out)


def matmul_gflops(n: int = 1024, reps: int = 10) -> float:
    """Single-thread float32 matmul rate (GFLOP/s), best of ``reps``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(reps))
    torch.set_num_threads(threads)
    return 2 * n ** 3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def time_train(fn, task, S: int, batch: int, steps: int, workers: int | None, device) -> float:
    """Seconds to train S looped members; ``workers=None``: on ``ATTN_CLUSTER``'s cluster."""
    return _timed(lambda: train(fn, task, list(range(S)), steps=steps, batch_size=batch,
                                eval_every=steps, progress=False, execution="looped",
                                workers=workers, device=device))


def time_on_cluster(fn, task, S, batch, steps, n, device) -> float:
    """:func:`time_train` on a ``local:n`` Dask cluster (``ATTN_CLUSTER``), started before."""
    old = os.environ.get("ATTN_CLUSTER")
    os.environ["ATTN_CLUSTER"] = f"local:{n}"
    try:
        return time_train(fn, task, S, batch, steps, None, device)
    finally:
        if old is None:
            del os.environ["ATTN_CLUSTER"]
        else:
            os.environ["ATTN_CLUSTER"] = old


def setup(size: str, steps: int | None):
    """The size's settings, its copy task, the model builder and the step count."""
    c = SIZES[size]
    task = CopyTask(c["length"])
    fn = functools.partial(Seq2Seq, vocab=task.model_vocab, embed=c["hidden"], hidden=c["hidden"])
    return c, task, fn, steps or c["steps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps per run (default: 50 at the fast size, 5 at the paper "
                         "size)")
    ap.add_argument("--members", type=int, nargs="+", default=[2, 4, 8, 20])
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--workers", type=int, default=available_cores(),
                    help="the N of '1 vs N workers' (default: the cores this process may use)")
    ap.add_argument("--no-cluster", dest="cluster", action="store_false",
                    help="skip the local:N Dask cluster column (ATTN_CLUSTER; needs "
                         "distributed)")
    ap.add_argument("--out", default="benchmarks/engine.json")
    args = ap.parse_args()
    device = attn_core.get_device()
    print(attn_core.describe())
    peak = matmul_gflops()
    print(f"single-core float32 matmul (1024^3): {peak:.1f} GFLOP/s")
    rows, eff = [], []

    n = args.workers
    dask = args.cluster and device.type == "cpu"
    print(f"\n1 vs {n} workers (loky{f', and a local:{n} Dask cluster' if dask else ''}): "
          f"wall seconds to train S looped models")
    head = (f"{'size':36s} {'S':>3s} {'1 worker':>9s} {f'{n} workers':>10s} {'speed-up':>9s}"
            + (f" {f'local:{n}':>9s} {'speed-up':>9s} {'+s/member':>10s}" if dask else ""))
    print(head + "\n" + "-" * len(head))
    for size in args.sizes:
        c, task, fn, steps = setup(size, args.steps)
        time_train(fn, task, 2, c["batch"], 1, 1, device)             # warm up this process
        time_train(fn, task, 2, c["batch"], 1, n, device)             # start the worker pool
        if dask:
            time_on_cluster(fn, task, 2, c["batch"], 1, n, device)    # start the cluster
        for S in args.members:
            t1 = time_train(fn, task, S, c["batch"], steps, 1, device)
            tn = time_train(fn, task, S, c["batch"], steps, n, device)
            row = dict(size=c["label"], members=S, steps=steps, one_worker_s=t1,
                       n_workers=n, n_workers_s=tn, speedup=t1 / tn)
            line = f"{c['label']:36s} {S:3d} {t1:9.2f} {tn:10.2f} {t1 / tn:8.2f}x"
            if dask:
                td = time_on_cluster(fn, task, S, c["batch"], steps, n, device)
                row.update(cluster=f"local:{n}", cluster_s=td, cluster_speedup=t1 / td,
                           cluster_overhead_s_per_member=(td - tn) / S)
                line += f" {td:9.2f} {t1 / td:8.2f}x {(td - tn) / S:+10.3f}"
            rows.append(row)
            print(line + f"   ({steps} steps)")
    if dask:
        from attn_core import cluster
        cluster.close()

    print("\nFLOP efficiency of one model's training step (1 thread)")
    head = (f"{'size':36s} {'s/step':>7s} {'GFLOP/step':>11s} {'GFLOP/s':>8s} "
            f"{'of matmul':>10s}")
    print(head + "\n" + "-" * len(head))
    for size in args.sizes:
        c, task, fn, steps = setup(size, args.steps)
        times = [time_train(fn, task, 1, c["batch"], steps, 1, device) / steps
                 for _ in range(3)]
        s_step = statistics.median(times)
        flops = step_flops(c["length"], c["hidden"], c["batch"], task.model_vocab)
        eff.append(dict(size=c["label"], s_per_step=s_step, gflop_per_step=flops / 1e9,
                        gflops=flops / s_step / 1e9, fraction_of_matmul=flops / s_step / 1e9 / peak))
        print(f"{c['label']:36s} {s_step:7.4f} {flops / 1e9:11.3f} {flops / s_step / 1e9:8.1f} "
              f"{flops / s_step / 1e9 / peak:9.0%}")

    cuda_rows = []
    if device.type == "cuda":
        print("\nCUDA: looped vs batched, seconds for the run")
        for size in args.sizes:
            c, task, fn, steps = setup(size, args.steps)
            for S in args.members:
                run = lambda ex: _timed(lambda: train(fn, task, list(range(S)), steps=steps,
                                                      batch_size=c["batch"], progress=False,
                                                      execution=ex, eval_every=steps))
                lo, ba = run("looped"), run("batched")
                cuda_rows.append(dict(size=c["label"], members=S, looped_s=lo, batched_s=ba))
                print(f"{c['label']:36s} {S:3d} looped {lo:7.2f} batched {ba:7.2f} "
                      f"ratio {lo / ba:5.2f}x")

    meta = dict(device=str(device), device_name=(torch.cuda.get_device_name(0)
                                                 if device.type == "cuda"
                                                 else platform.processor() or platform.machine()),
                cores=available_cores(), torch_threads=torch.get_num_threads(),
                torch=torch.__version__, steps=args.steps, matmul_gflops=peak)
    tmp = args.out + ".tmp"
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "workers": rows, "efficiency": eff, "cuda": cuda_rows}, f,
                  indent=2)
    os.replace(tmp, args.out)  # atomic
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
