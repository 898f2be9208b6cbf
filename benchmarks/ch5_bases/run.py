"""Chapter 5's protocol on other base initialisations (outside the book: each base costs
one to two minutes on this 2-core machine, more than the book's fast budget allows).

For every (batch size, base seed) pair: the chapter's head screen (16 candidate heads as
one-head models on 2 data streams), the good/bad/inconsistent labels and the verdict repeat
rate (``metrics.verdict_repeat``), then the K = 4 combinations "all bad" and "one good"
(6 each, the chapter's data streams). Everything else is chapter 5's fast config
(``ch5_multihead.RESCUE.fast``). Writes ``bases.json`` next to this file; the chapter shows
its rows as ``ch5_multihead.other_bases_fast()``, from
``attn_core/chapters/data/ch5_other_bases.json``, which this script writes too (a test
recomputes them from ``bases.json``).

    ATTN_MODE=fast python benchmarks/ch5_bases/run.py
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from attn_core.chapters import ch5_multihead as ch
from attn_core.metrics import verdict_repeat
from attn_core.rows import write_table
from attn_core.stored import write_manifest

RUNS = [(32, 1), (32, 2), (32, 3), (16, 0), (16, 1), (16, 2)]


def study(batch: int, base: int) -> dict:
    cfg0 = ch.RESCUE.fast
    cfg = replace(cfg0, copy=replace(cfg0.copy, batch_size=batch), base_seed=base)
    screen = cfg.screen(progress=False)
    final = np.stack([screen[d].metrics["token_acc"][:, -1] for d in cfg.data_seeds], axis=1)
    rep = verdict_repeat(final, cfg.good, cfg.bad,
                         n_tokens=cfg.copy.eval_batch_size * cfg.copy.length)
    labels = cfg.labels(final)
    row = {"batch_size": batch, "base_seed": base,
           "good": int((labels == "good").sum()), "bad": int((labels == "bad").sum()),
           "inconsistent": int((labels == "inconsistent").sum()),
           "decided": int(rep["decided"]), "repeat_within_noise": float(rep["within_noise"]),
           "screen_final_acc": np.round(final, 4).tolist()}
    pools = cfg.pools(labels)
    for kind in ("all bad", "one good"):
        try:
            combos = ch.head_combinations(pools, kind, cfg.k_combo, cfg.n_combinations, seed=1)
        except ValueError as e:  # not enough bad (or good) heads at this base
            row[kind] = None
            row[f"{kind} reason"] = str(e)
            continue
        h = cfg.heads_run(combos, cfg.combination_data(), "bases").run(progress=False,
                                                                        cache=False)
        acc = h.metrics["token_acc"][:, -1]
        row[kind] = {"successes": int((acc > cfg.good).sum()), "runs": len(acc),
                     "final_acc": np.round(acc, 4).tolist()}
    return row


ABOUT = ("Chapter 5's protocol at other base initialisations and at batch 16, by "
         "benchmarks/ch5_bases/run.py (its bases.json holds the runs): chapter 5's fast "
         "config with only base_seed and copy.batch_size changed; 16 candidate heads on 2 "
         "data streams, then 6 'all bad' and 6 'one good' K = 4 combinations. Each row: "
         "[batch_size, base_seed, good, bad, inconsistent, decided on the first stream, of "
         "those repeated strictly on the second, Cohen's kappa of success on the two streams "
         "and its one-sided Fisher p (verdict_agreement, 3 significant digits), all bad "
         "[successes, runs], one good [successes, runs]]; null where the screen found fewer "
         "than K bad heads.")


def table_row(r: dict) -> list:
    """The chapter's row of one study ``r`` (as ``study`` returns it)."""
    cfg = ch.RESCUE.fast
    final = np.array(r["screen_final_acc"])
    rep = ch.repeat_rates(final, cfg.good, cfg.bad,
                          n_tokens=cfg.copy.eval_batch_size * cfg.copy.length)
    agree = ch.verdict_agreement(final, cfg.good)
    counts = [None if r[kind] is None else [r[kind]["successes"], r[kind]["runs"]]
              for kind in ("all bad", "one good")]
    return [r["batch_size"], r["base_seed"], r["good"], r["bad"], r["inconsistent"],
            r["decided"], rep["repeat"], round(agree["kappa"], 3),
            float(f"{agree['p']:.3g}"), *counts]


def main() -> None:
    rows = []
    for batch, base in RUNS:
        t = time.perf_counter()
        rows.append(study(batch, base))
        r = rows[-1]
        print(f"batch {batch} base {base}: good {r['good']} bad {r['bad']} inconsistent "
              f"{r['inconsistent']} repeat {r['repeat_within_noise']:.2f} all bad "
              f"{(r['all bad'] or {}).get('successes')} one good "
              f"{(r['one good'] or {}).get('successes')}  ({time.perf_counter() - t:.0f} s)",
              flush=True)
    out = {"date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "machine": platform.processor() or platform.machine(), "runs": rows}
    path = Path(__file__).with_name("bases.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
    print("wrote", write_table(ch.OTHER_BASES_FILE, [table_row(r) for r in rows], ABOUT))
    write_manifest()


if __name__ == "__main__":
    main()
