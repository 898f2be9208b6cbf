"""Chapter 6 at the papers' scale (issue #33 item 3): the conditions that decide its claims
T1-T4 (``ch6_transformer.FULL_CONDITIONS``: learned positions on permutations and on the
control, small positions, qk-cross, qk-self, attention frozen uniform on both tasks) at
``TRANSFORMER_BASE.full`` (L = 40, d = 128, 4 heads, batch 128, 300 steps), 10 seeds each,
on the engine's workers or a Dask cluster (``ATTN_CLUSTER``).

Writes the chapter's stored sweep at that scale, ``attn_core/chapters/data/
ch6_full_sweep.json`` (every evaluation of every seed, as ``ch6_sweep.json`` holds the fast
one; the stored results' manifest covers it), and ``results.json`` beside this file (each
condition's successes, rate, 95 % interval, seconds, and the machine): both atomically,
after every condition.

Resumable: every finished group of seeds is saved in the results cache as it arrives
(``ATTN_CACHE``, keep it on a disk that survives the session), so a run stopped and started
again trains only the seeds not yet saved; a finished condition is read back whole (its
time in ``results.json`` is the time it took when it was trained, not the read).

    ATTN_MODE=full ATTN_CLUSTER=local:2 ATTN_CACHE=/persistent/attn_cache \\
        python benchmarks/full_ch6/run.py              # ~65 min on 2 vCPUs (measured below)

Measured 2026-11-26 on this project's 2-vCPU machine (90-94 GFLOP/s core): one full-size
run trains at 0.47 s a step with its evaluations, and a condition of ten seeds took
553-568 s on a ``local:2`` cluster (seven conditions: ~65 min).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from attn_core.chapters import ch6_transformer as ch
from attn_core.config import env_max_steps, get_mode
from attn_core.metrics import success_rate
from attn_core.stored import write_json, platform, write_manifest

OUT = Path(__file__).resolve().parent / "results.json"


def main() -> None:
    if get_mode() != "full":
        raise SystemExit("set ATTN_MODE=full: this script runs the papers' scale")
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")
    path = ch.FULL_SWEEP_FILE
    rows = json.loads(path.read_text()) if path.exists() else {}
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    out.setdefault("conditions", {})
    for name in ch.FULL_CONDITIONS:
        cfg = ch.full_sweep_config(name)
        t = time.time()
        h = cfg.run()
        seconds = round(time.time() - t, 1)
        rows[name] = ch.sweep_row(cfg, h)
        ok = h.metrics["token_acc"][:, -1] > ch.SUCCESS_LEVEL
        r, lo, hi = success_rate(ok)
        before = out["conditions"].get(name, {})
        if h.cached and before.get("seconds") is not None:
            seconds = before["seconds"]          # the training's time, not the read's
        out["conditions"][name] = {"success": [int(ok.sum()), len(ok)],
                                   "rate": [r, lo, hi], "seconds": seconds,
                                   **({"note": before["note"]} if "note" in before else {})}
        print(f"{name}: {int(ok.sum())}/{len(ok)} above {ch.SUCCESS_LEVEL}, rate {r:.2f} "
              f"[{lo:.2f}, {hi:.2f}] ({seconds:.0f} s)", flush=True)
        out["machine"] = f"{platform()['cpu']}, {os.cpu_count()} cores"
        ch.FULL_SWEEP_STORED.write(rows, compact=False)  # atomic: a stopped run keeps it
        write_json(OUT, out)
        write_manifest()                          # the manifest covers the sweep's file
    print("success by condition:",
          {k: v["success"] for k, v in out["conditions"].items()})


if __name__ == "__main__":
    main()
