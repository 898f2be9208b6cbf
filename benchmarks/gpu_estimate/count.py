"""A GPU estimate for chapters 1-3 in full mode, from what one training step launches.

Chapters 1-3 train small models for many steps, so on a GPU their time is set by how many
kernels a step launches (each costs ~5-10 us of launch and synchronisation in eager PyTorch),
not by their FLOPs. This script profiles each full-mode model family on the CPU (one member,
so that the engine trains in this process): the operators one training step runs (the
difference between a 2-step and a 1-step run, ATTN_MAX_STEPS) and their matmul FLOPs, then
multiplies by the steps every run of the chapter trains (read from the configs).

    python benchmarks/gpu_estimate/count.py 2>/dev/null   # the table; ~1 minute

The estimate: steps x operators x (5-10 us) + steps x FLOPs / (2-4 TFLOP/s). It ignores
evaluation (every 20-100 steps) and the chapters' analyses, so it is a lower bound on those.
"""
import os
from dataclasses import replace

os.environ["ATTN_MODE"] = "full"
os.environ["ATTN_CACHE"] = "off"
os.environ["ATTN_WORKERS"] = "1"

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from attn_core.chapters import ch1_gated as ch1, ch2_sen as ch2, ch3_ibm1 as ch3  # noqa: E402


def profile_run(config, steps):
    os.environ["ATTN_MAX_STEPS"] = str(steps)
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        config.train(progress=False)
    events = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    return sum(e.count for e in events), sum(e.flops for e in events)


def per_step(config):
    """(operators, FLOPs) of one training step of ``config`` with a single member."""
    if getattr(config, "query_vars", None):
        one = replace(config, seeds=config.seeds[:1], query_vars=config.query_vars[:1],
                      data_seeds=config.data_seeds[:1])
    else:
        one = replace(config, seeds=config.seeds[:1])
    (o1, f1), (o2, f2) = profile_run(one, 1), profile_run(one, 2)
    return o2 - o1, f2 - f1


def length(config):
    return getattr(config, "steps", None) or getattr(config, "epochs")


# (label, full config, how many runs of it the chapter trains)
RUNS = {
    1: [("keyword, learned attention", ch1.KEYWORD_ATTENTION.full, 1),
        ("keyword, uniform attention", ch1.KEYWORD_UNIFORM.full, 1)],
    2: [("SEN main (FC, TC, TL)", ch2.SEN_MAIN.full, 3),
        ("query norm 3 (FC, one seed)",
         replace(ch2.SEN_MAIN.full, classifier="FC", query_norm=3.0, seeds=(0,)), 1),
        ("SEN ablation (TC, -KF, -EF)", ch2.SEN_ABLATION.full, 3),
        ("trainable query (FC, TC, TL)", ch2.SEN_QUERY.full, 3),
        ("sentence lengths m (4 x 3 classifiers)", ch2.SEN_BY_LENGTH.full, 12),
        ("purity (TC, FC)", ch2.PURITY.full, 2),
        ("CNN (trained, frozen)", ch2.SEN_CNN.full, 2)],
    3: [("translation (3 attentions)", ch3.TRANSLATION.full, 3),
        ("keyword relevance", ch3.KEYWORD_RELEVANCE.full, 1)],
}


def main():
    torch.set_num_threads(1)
    print("| chapter | runs | steps each | operators / step | GFLOP / step | launch-bound "
          "(5-10 us) | FLOP-bound (2-4 TFLOP/s) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for chapter, runs in RUNS.items():
        lo = hi = 0.0
        for label, cfg, n in runs:
            ops, flops = per_step(cfg)
            flops *= len(cfg.seeds)                       # every member's matmuls
            steps = length(cfg) * n
            launch = (steps * ops * 5e-6, steps * ops * 10e-6)
            compute = (steps * flops / 4e12, steps * flops / 2e12)
            lo += launch[0] + compute[0]
            hi += launch[1] + compute[1]
            print(f"| {chapter} | {label} | {length(cfg):,} x {n} | {ops} | "
                  f"{flops / 1e9:.3f} | {launch[0]:.0f}-{launch[1]:.0f} s | "
                  f"{compute[0]:.1f}-{compute[1]:.1f} s |")
        print(f"| **{chapter}** | **all** | | | | **{lo / 60:.1f}-{hi / 60:.1f} min** "
              f"(both bounds added) | |")


if __name__ == "__main__":
    main()
