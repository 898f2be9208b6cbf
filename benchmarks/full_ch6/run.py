"""Chapter 6 at the papers' scale (issue #33 item 3): the conditions that decide its claims
T1-T5 -- learned positions, its control, small positions, qk-cross, qk-self, uniform --
at ``TRANSFORMER_BASE.full`` (L = 40, d = 128, 4 heads, batch 128, 300 steps), 10 seeds
each, on the engine's workers or a Dask cluster (``ATTN_CLUSTER``).

Resumable: every finished seed is saved in the results cache as it arrives
(``ATTN_CACHE``, keep it on a disk that survives the session), so a run stopped and started
again trains only the seeds not yet saved; a finished condition is read back whole.
``results.json`` beside this file is rewritten (atomically) after every condition.

    ATTN_MODE=full ATTN_CLUSTER=local:2 ATTN_CACHE=/persistent/attn_cache \\
        python benchmarks/full_ch6/run.py              # ~70 min on 2 vCPUs (measured below)

Measured 2026-11-26 on this project's 2-vCPU machine (90-94 GFLOP/s core): one full-size
run trains at 0.47 s a step with its evaluations (20 steps of ``learned``), so a condition
of 10 seeds is ~1,400 s of one core and the six ~8,400 s: ~70 min on two.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from attn_core.chapters import ch6_transformer as ch
from attn_core.config import env_max_steps, get_mode
from attn_core.metrics import success_rate

OUT = Path(__file__).resolve().parent / "results.json"
#: The conditions of claims T1-T5 (chapter 6's claims table), in the order they run.
CONDITIONS = ("learned", "learned, control", "small positions", "qk-cross", "qk-self",
              "uniform")
SEEDS = tuple(range(10))


def main() -> None:
    if get_mode() != "full":
        raise SystemExit("set ATTN_MODE=full: this script runs the papers' scale")
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")
    base = ch.TRANSFORMER_BASE.full
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    for name in CONDITIONS:
        cfg = ch.sweep_config(name, seeds=SEEDS, base=base)
        t = time.time()
        h = cfg.run()
        acc = h.metrics["token_acc"]
        ok = acc[:, -1] > ch.SUCCESS_LEVEL
        r, lo, hi = success_rate(ok)
        out[name] = {"seeds": [int(s) for s in h.seeds],
                     "final_token_acc": acc[:, -1].round(4).tolist(),
                     "token_acc": acc.round(4).tolist(),
                     "eval_steps": h.eval_steps.tolist(),
                     "success": [int(ok.sum()), len(ok)], "rate": [r, lo, hi],
                     "seconds": round(time.time() - t, 1), "cached": bool(h.cached),
                     "config": {k: str(v) for k, v in cfg.as_dict().items()}}
        print(f"{name}: {int(ok.sum())}/{len(ok)} above {ch.SUCCESS_LEVEL}, rate {r:.2f} "
              f"[{lo:.2f}, {hi:.2f}] ({time.time() - t:.0f} s)", flush=True)
        tmp = OUT.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(out, indent=1))
        os.replace(tmp, OUT)                      # atomic: a stopped run keeps what it had
    print("success by condition:", {k: v["success"] for k, v in out.items()})


if __name__ == "__main__":
    main()
