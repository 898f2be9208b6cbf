"""Chapter 5 at the papers' scale (issue #33 item 4), first stage: where full mode's steps
go, and the screen's first data stream.

Full mode (``RESCUE.full``: L = 40, GRUs of hidden 256, batch 128, 200 steps; 80 candidate
heads a round on three data streams, up to three rounds; 50 runs of each K = 8 combination
and of random heads at K = 2 and 4) trains ~130,000 model-steps, hours on two CPU cores.
``--accounting`` prints where they go (from the configs, no training). The default trains
the screen's first round on its first data stream -- exactly the runs the chapter's
``cfg.screen()`` trains first, cached under the same key -- and writes ``results.json``:
each candidate's final token accuracy and how the heads split at the chapter's thresholds
(good > 0.95, bad < 0.6). That split decides what the rest of the plan can cut: a head that
is neither good nor bad on one stream is "inconsistent" whatever the other streams show.

Resumable: on the CPU every candidate is its own group (``execution="auto"`` loops), saved
in the results cache as it finishes (``ATTN_CACHE``: keep it on a disk that survives the
session); a run stopped and started again trains only the candidates not yet saved.

    ATTN_MODE=full ATTN_CLUSTER=local:2 ATTN_CACHE=/persistent/attn_cache \\
        python benchmarks/full_ch5/run.py [--accounting]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from attn_core.chapters import ch5_multihead as ch
from attn_core.config import env_max_steps, get_mode
from attn_core.stored import _write_json, platform

OUT = Path(__file__).resolve().parent / "results.json"


def accounting(cfg: ch.RescueConfig) -> dict:
    """Model-steps of every part of the chapter in full mode (a K-head model counted once;
    the screen at one round and at its cap of rounds)."""
    steps = cfg.copy.steps
    rounds = len(cfg.screen_sizes())
    screen = cfg.n_candidates * len(cfg.data_seeds) * steps
    combos = (len(ch.COMBINATION_KINDS) + 1) * cfg.n_combinations * steps
    random = {f"random K={k}": cfg.n_random * steps for k in cfg.ks
              if k > 1 and k != cfg.k_combo}
    control = cfg.k_combo * (cfg.control_steps or steps)
    parts = {"screen, one round": screen, f"screen, {rounds} rounds (cap)": screen * rounds,
             f"K={cfg.k_combo} combinations (3 kinds + summed)": combos, **random,
             "control runs (bad heads, K=1)": control}
    total = screen + combos + sum(random.values()) + control
    return {"parts": parts, "total, one screen round": total,
            "total, screen at its cap": total + screen * (rounds - 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accounting", action="store_true", help="print the steps, train nothing")
    args = ap.parse_args()
    if get_mode() != "full":
        raise SystemExit("set ATTN_MODE=full: this script runs the papers' scale")
    cfg = ch.RESCUE.full
    acc = accounting(cfg)
    for name, n in acc["parts"].items():
        print(f"{name:42s} {n:>8,d} model-steps")
    print(f"{'total (one screen round)':42s} {acc['total, one screen round']:>8,d}")
    print(f"{'total (screen at its cap)':42s} {acc['total, screen at its cap']:>8,d}")
    if args.accounting:
        return
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")
    run = ch.screen_configs(cfg)[0]                  # round 1, data stream 0
    t = time.time()
    h = run.run()
    final = h.metrics["token_acc"][:, -1]
    counts = {"good": int((final > cfg.good).sum()), "bad": int((final < cfg.bad).sum())}
    counts["neither"] = len(final) - counts["good"] - counts["bad"]
    out = {"accounting": acc,
           "screen, stream 0": {"head_seeds": list(run.head_seeds),
                                "final_token_acc": np.round(final, 4).tolist(),
                                "eval_steps": h.eval_steps.tolist(),
                                "token_acc": np.round(h.metrics["token_acc"], 4).tolist(),
                                "split": counts, "seconds": round(time.time() - t, 1),
                                "cached": bool(h.cached)},
           "machine": f"{platform()['cpu']}, {os.cpu_count()} cores"}
    _write_json(OUT, out)
    print(f"stream 0: {counts} of {len(final)} candidates ({time.time() - t:.0f} s)")


if __name__ == "__main__":
    main()
