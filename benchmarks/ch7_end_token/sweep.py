"""Chapter 7's fast-mode sweep (issue #36 items 1-2): the end token's effect at 40 seeds a
condition, and the end token taken apart.

    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/sweep.py [--only TEXT]

Item 1 (the effect): no end token against the end token on both sides, on permutations and
on the control (L distinct words of 1.5 L), at L = 10, 20, 40. Item 2 (taken apart): every
condition of ``ch7_end_token.CONDITIONS`` on permutations at L = 20. Each condition is 40
seeds (``ch7_end_token.SEEDS``) of chapter 4's fast configuration, the authors' model.

``--mechanism``: the first 60 steps of the same runs at L = 20 (the same seeds and data, so
the same trajectories: evaluation does not touch the training stream), evaluated every 5
steps with ``ch7_end_token.push_probe`` too -- where each group of decoder steps' loss pushes
the attention scores -- into ``mechanism.json``.

Writes the chapter's stored sweep (``ch7_end_token.SWEEP_FILE``, the rows of
``ch7_end_token.SWEEP_ROWS`` made by ``sweep_row``: configuration, seeds, evaluation steps and
every evaluation's token accuracy, copy accuracy (the copied words only), attention accuracy
and attention mass by position class, 4 decimals) after every row (atomically), then the
stored results' manifest. A row already there with its configuration is kept unless
``--force``. Resumable: every finished group of seeds is in the results cache
(``ATTN_CACHE``), so a run started again trains only what is missing.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch
from attn_core.config import env_max_steps, get_mode
from attn_core.stored import write_json, config_record, platform, write_manifest

MECHANISM = Path(__file__).resolve().parent / "mechanism.json"
#: The mechanism runs: their conditions (L = 20, permutations), steps and evaluations.
MECHANISM_PLAN = ("none", "both", "source", "target", "masked", "no end gradient", "start",
                  "varying")
MECHANISM_STEPS, MECHANISM_EVERY = 60, 5


def row(cfg, h, seconds: float) -> dict:
    """A mechanism row: the sweep row, β alignment and the run's time."""
    r = ch.sweep_row(cfg, h)
    r["beta_align_acc"] = np.round(h.probes["beta_align_acc"].astype(float), 4).tolist()
    r["seconds"] = round(seconds, 1)
    return r


def mechanism(only: str) -> None:
    out = json.loads(MECHANISM.read_text()) if MECHANISM.exists() else {"rows": {}}
    for name in MECHANISM_PLAN:
        key = ch.row_name(name)
        if only not in key:
            continue
        cfg = replace(ch.sweep_config(key), steps=MECHANISM_STEPS,
                      eval_every=MECHANISM_EVERY, push=True)
        t = time.time()
        h = cfg.run()
        r = row(cfg, h, time.time() - t)
        for k in ch.PUSHES:
            r[k] = np.asarray(h.probes[k], dtype=float).tolist()
        out["rows"][key] = r
        write_json(MECHANISM, out)
        print(f"[ch7 mechanism] {key} ({time.time() - t:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run only the rows whose name contains this")
    ap.add_argument("--mechanism", action="store_true", help="the first 60 steps, probed")
    ap.add_argument("--force", action="store_true", help="train every row again")
    args = ap.parse_args()
    if get_mode() != "fast":
        raise SystemExit("set ATTN_MODE=fast: this is the fast-mode sweep")
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")
    if args.mechanism:
        return mechanism(args.only)
    out = json.loads(ch.SWEEP_FILE.read_text()) if ch.SWEEP_FILE.exists() else {}
    note = out.pop("_about", "")
    for key in ch.SWEEP_ROWS:
        if args.only not in key:
            continue
        cfg = ch.sweep_config(key)
        if not args.force and out.get(key, {}).get("config") == config_record(cfg):
            continue
        t = time.time()
        h = cfg.run()
        out[key] = ch.sweep_row(cfg, h)
        ch.write_sweep(out, note=note or f"Trained by {Path(__file__).name} on "
                       f"{time.strftime('%Y-%m-%d')} ({platform()['cpu']}).")
        k, n = ch.successes(out[key])
        print(f"[ch7 sweep] {key}: {k}/{n} copy accuracy above {ch.SUCCESS_LEVEL} "
              f"({time.time() - t:.0f} s)")
    write_manifest()

if __name__ == "__main__":
    main()
