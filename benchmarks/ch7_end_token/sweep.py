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

Writes ``sweep.json`` beside this file after every condition (atomically): for each
condition its configuration, seeds, evaluation steps and every evaluation's token accuracy,
copy accuracy (the copied words only), attention accuracy, β alignment and attention mass by
position class (4 decimals). Resumable: every finished group of seeds is in the results
cache (``ATTN_CACHE``), so a run started again trains only what is missing.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch
from attn_core.chapters.ch4_copy import SUCCESS_LEVEL
from attn_core.config import env_max_steps, get_mode
from attn_core.stored import _write_json, config_record, platform

OUT = Path(__file__).resolve().parent / "sweep.json"
MECHANISM = OUT.with_name("mechanism.json")
#: The mechanism runs: their conditions (L = 20, permutations), steps and evaluations.
MECHANISM_PLAN = ("none", "both", "source", "target", "masked", "no end gradient", "start",
                  "varying")
MECHANISM_STEPS, MECHANISM_EVERY = 60, 5
#: (condition, length, task) of every row, item 1 first.
PLAN = ([(name, L, task) for L in ch.LENGTHS for task in ("permutation", "control")
         for name in ("none", "both")]
        + [(name, 20, "permutation") for name in ch.CONDITIONS if name not in ("none", "both")])
#: Steps by length (chapter 4's fast 300 at L = 10 and 20).
STEPS = {10: 300, 20: 300, 40: 600}
_METRICS = ("token_acc", "attn_acc")
_PROBES = ("copy_acc", "beta_align_acc", "end_step_on_end",
           *(f"mass_{c}" for c in ch.POSITION_CLASSES))


def row_name(name: str, length: int, task: str) -> str:
    return f"{name}, L={length}" + (", control" if task == "control" else "")


def config(name: str, length: int, task: str) -> ch.EndTokenConfig:
    return replace(ch.condition_config(name, length, task), steps=STEPS[length])


def row(cfg, h, seconds: float) -> dict:
    r = {"config": config_record(cfg), "seeds": list(cfg.seeds),
         "eval_steps": h.eval_steps.tolist(), "seconds": round(seconds, 1)}
    for k in _METRICS:
        r[k] = np.round(h.metrics[k].astype(float), 4).tolist()
    for k in _PROBES:
        r[k] = np.round(h.probes[k].astype(float), 4).tolist()
    return r


def mechanism(only: str) -> None:
    out = json.loads(MECHANISM.read_text()) if MECHANISM.exists() else {"rows": {}}
    for name in MECHANISM_PLAN:
        key = row_name(name, 20, "permutation")
        if only not in key:
            continue
        cfg = replace(config(name, 20, "permutation"), steps=MECHANISM_STEPS,
                      eval_every=MECHANISM_EVERY, push=True)
        t = time.time()
        h = cfg.run()
        r = row(cfg, h, time.time() - t)
        for k in ch.PUSHES:
            r[k] = np.asarray(h.probes[k], dtype=float).tolist()
        out["rows"][key] = r
        _write_json(MECHANISM, out)
        print(f"[ch7 mechanism] {key} ({time.time() - t:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run only the rows whose name contains this")
    ap.add_argument("--mechanism", action="store_true", help="the first 60 steps, probed")
    args = ap.parse_args()
    if get_mode() != "fast":
        raise SystemExit("set ATTN_MODE=fast: this is the fast-mode sweep")
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")
    if args.mechanism:
        return mechanism(args.only)
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    out["machine"] = f"{platform()['cpu']}"
    out.setdefault("rows", {})
    for name, L, task in PLAN:
        key = row_name(name, L, task)
        if args.only not in key:
            continue
        cfg = config(name, L, task)
        t = time.time()
        h = cfg.run()
        before = out["rows"].get(key, {})
        seconds = before.get("seconds", 0.0) if h.cached else time.time() - t
        out["rows"][key] = row(cfg, h, seconds)
        _write_json(OUT, out)
        ok = (h.probes["copy_acc"][:, -1] > SUCCESS_LEVEL).sum()
        print(f"[ch7 sweep] {key}: {ok}/{len(cfg.seeds)} copy accuracy above "
              f"{SUCCESS_LEVEL} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
