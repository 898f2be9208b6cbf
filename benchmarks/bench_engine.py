"""Benchmark: S seq2seq models trained looped vs batched, at the fast size and the paper size.

Two models: chapter 4's one-head LSTM (``lstm``) and chapter 5's one-head GRU with a per-head
context projection (``gru-proj``, the authors' multi-head model with K = 1).

Prints seconds per training step (all S models) for each execution and the ratio looped/batched,
the engine's automatic choice, and writes the table as JSON. Not a test: timings depend on the
machine and on what else it is doing.

    python benchmarks/bench_engine.py                    # CPU (1 thread) or CUDA if present
    python benchmarks/bench_engine.py --steps 5 --out benchmarks/engine.json
    python benchmarks/bench_engine.py --models gru-proj --sizes "fast (L=20, hidden 64, batch 32)"
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
from attn_core.data import CopyTask
from attn_core.models import Seq2Seq
from attn_core.training import _stack_batches, choose_execution

SIZES = {
    "fast (L=20, hidden 64, batch 32)": dict(length=20, hidden=64, batch=32),
    "paper (L=40, hidden 256, batch 128)": dict(length=40, hidden=256, batch=128),
}

MODELS = {
    "lstm": dict(cell="lstm"),
    "gru-proj": dict(cell="gru", head_proj=True),
}


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_per_step(model, task, batch_size, device, steps) -> float:
    """Median seconds of one optimiser step (forward, backward, Adam) of a stacked model."""
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gens = [torch.Generator().manual_seed(i) for i in range(model.n_members)]
    times = []
    for i in range(steps + 1):
        batch = _stack_batches([task.sample(g, batch_size) for g in gens], device)
        _sync(device)
        t0 = time.perf_counter()
        loss = model.loss(batch)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        _sync(device)
        if i:  # the first step warms up
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per measurement (default 3)")
    ap.add_argument("--members", type=int, nargs="+", default=[1, 5, 20])
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--models", nargs="+", default=["lstm"], choices=list(MODELS))
    ap.add_argument("--out", default="benchmarks/engine.json")
    args = ap.parse_args()
    device = attn_core.get_device()
    print(attn_core.describe())
    rows = []
    header = f"{'model':9s} {'size':38s} {'S':>3s} {'looped s/step':>14s} {'batched s/step':>15s} {'looped/batched':>15s} {'auto':>8s}"
    print(header)
    print("-" * len(header))
    for model, size in ((m, s) for m in args.models for s in args.sizes):
        cfg = SIZES[size]
        task = CopyTask(cfg["length"])
        fn = functools.partial(Seq2Seq, vocab=task.model_vocab, embed=cfg["hidden"], hidden=cfg["hidden"],
                               **MODELS[model])
        single = time_per_step(fn(seeds=[0]), task, cfg["batch"], device, args.steps)
        for S in args.members:
            looped = S * single  # S one-member models, one after another (fused kernels)
            batched = single if S == 1 else time_per_step(fn(seeds=list(range(S))), task,
                                                          cfg["batch"], device, args.steps)
            auto = choose_execution(lambda idx: fn(seeds=list(idx)), task, S, device, cfg["batch"],
                                    key=(model, size, S))
            row = dict(model=model, size=size, members=S, looped_s_per_step=looped, batched_s_per_step=batched,
                       ratio_looped_over_batched=looped / batched, auto=auto)
            rows.append(row)
            print(f"{model:9s} {size:38s} {S:3d} {looped:14.4f} {batched:15.4f} {looped / batched:14.2f}x {auto:>8s}")
    meta = dict(device=str(device), device_name=(torch.cuda.get_device_name(0) if device.type == "cuda"
                                                 else platform.processor() or platform.machine()),
                cpu_count=os.cpu_count(), torch_threads=torch.get_num_threads(),
                torch=torch.__version__, steps=args.steps)
    tmp = args.out + ".tmp"
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=2)
    os.replace(tmp, args.out)  # atomic
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
