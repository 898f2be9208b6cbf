"""Chapter 7 at the papers' scale (issue #36 item 1): the four variants that decide where the
end token acts -- none, in the source only, in the target only, on both sides -- at
``END_BASE.full`` (chapter 4's full configuration: L = 40, embedding and hidden 256, batch
128, 200 steps, the authors' model), on permutations, 20 seeds each (the fast sweep's first
20), on the engine's workers or a Dask cluster (``ATTN_CLUSTER``).

Writes ``results.json`` beside this file after every condition (atomically): each
condition's successes (accuracy on the copied words above 0.95 at the last evaluation, as the
chapter counts), rate and 95 % Wilson interval, its tests against "none" and "both" (paired
where the rows share initialisations; ``--summarise`` computes them again from rows.json), the seconds it took, and the machine; and every evaluation of every seed in
``rows.json`` (``ch7_end_token.sweep_row``), for a figure.

Resumable: every finished group of seeds is saved in the results cache as it arrives
(``ATTN_CACHE``: keep it on a disk that survives the session), so a run stopped and started
again trains only the seeds not yet saved. ``--smoke`` runs the same code at two steps and
two seeds a condition into a temporary folder (no result is written here).

    ATTN_MODE=full ATTN_CLUSTER=local:2 ATTN_CACHE=/persistent/attn_cache \\
        python benchmarks/full_ch7/run.py [--only NAME] [--smoke]

Cost: chapter 4's full comparison (the same model and size, 40 runs) took ~90 min on this
project's 2 vCPUs, so the 80 runs here take ~3 h there; on a GPU, minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch
from attn_core.config import env_max_steps, get_mode
from attn_core.metrics import success_rate
from attn_core.stored import write_json, config_record, platform

HERE = Path(__file__).resolve().parent
#: The variants of item 1, in the order they are trained (the two references first).
VARIANTS = ("none", "both", "target", "source")
#: Seeds of each variant: the fast sweep's first 20 (issue #36: 20 or more).
N_SEEDS = 20


def config(name: str, seeds=None):
    """Variant ``name`` at the papers' scale, permutations, L = 40."""
    base = ch.END_BASE.full
    return ch.condition_config(name, length=base.length, base=base,
                               seeds=ch.SEEDS[:N_SEEDS] if seeds is None else seeds)


def summary(rows: dict) -> dict:
    """Each variant's successes, rate and interval, and its tests against the two
    references (where both rows are there): paired (McNemar's test, the paired interval of
    the difference) where the two share each seed's initialisation -- every variant with an
    end token has the same vocabulary -- else Fisher's test and Newcombe's interval
    (:func:`ch7_end_token.compare`)."""
    out = {}
    for name, row in rows.items():
        k, n = ch.successes(row)
        r, lo, hi = success_rate(np.arange(n) < k)
        out[name] = {"success": [k, n], "rate": [r, lo, hi]}
        for ref in ("none", "both"):
            if ref != name and ref in rows:
                c = ch.compare(rows, name, ref, paired="none" not in (name, ref))
                out[name][f"p vs {ref}"] = c["p"]
                out[name][f"test vs {ref}"] = c["test"]
                out[name][f"difference vs {ref}"] = [c["d"], *c["d_ci"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=VARIANTS, help="train this variant only")
    ap.add_argument("--smoke", action="store_true",
                    help="two steps, two seeds a variant, into a temporary folder")
    ap.add_argument("--summarise", action="store_true",
                    help="compute results.json's tests again from rows.json (no training)")
    args = ap.parse_args()
    if args.summarise:
        rows = json.loads((HERE / "rows.json").read_text())
        out = json.loads((HERE / "results.json").read_text())
        out["conditions"] = summary(rows)
        write_json(HERE / "results.json", out)
        for name, c in out["conditions"].items():
            print(f"[full_ch7] {name}: {c['success']} " + ", ".join(
                f"vs {r}: {c[f'test vs {r}']} p {c[f'p vs {r}']:.2g}" for r in ("none", "both")
                if f"p vs {r}" in c))
        return
    if get_mode() != "full":
        raise SystemExit("set ATTN_MODE=full: this script runs the papers' scale")
    if args.smoke:
        os.environ["ATTN_MAX_STEPS"] = "2"
        out_dir = Path(tempfile.mkdtemp(prefix="full_ch7_smoke_"))
    elif env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results "
                         "(--smoke runs one into a temporary folder)")
    else:
        out_dir = HERE
    results, rows_file = out_dir / "results.json", out_dir / "rows.json"
    rows = json.loads(rows_file.read_text()) if rows_file.exists() else {}
    out = json.loads(results.read_text()) if results.exists() else {}
    seconds = out.get("seconds", {})
    for name in [args.only] if args.only else VARIANTS:
        cfg = config(name, seeds=(0, 1) if args.smoke else None)
        t = time.time()
        h = cfg.run()
        if not (h.cached and name in seconds):
            seconds[name] = round(time.time() - t, 1)    # a read keeps the training's time
        rows[name] = ch.sweep_row(cfg, h)
        out = {"conditions": summary(rows), "seconds": seconds,
               "config of 'both'": config_record(config("both", seeds=cfg.seeds)),
               "machine": f"{platform()['cpu']}, {os.cpu_count()} cores",
               "smoke": bool(args.smoke)}
        write_json(rows_file, rows)          # atomic: a stopped run keeps what it had
        write_json(results, out)
        k, n = ch.successes(rows[name])
        r, lo, hi = out["conditions"][name]["rate"]
        print(f"[full_ch7] {name}: {k}/{n} copy, rate {r:.2f} [{lo:.2f}, {hi:.2f}] "
              f"({seconds[name]:.0f} s)", flush=True)
    print(f"[full_ch7] {results}")


if __name__ == "__main__":
    main()
