"""The rate for chapter 7's SGD rows, tuned before they run (issue #53, item 4d).

    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/sgd_tune.py   # ~10 min

Plain SGD (no momentum) on "none, padded" (no end token, the vocabulary of the end token's
runs) and on "both" (the end token on both sides), seeds 0-9, 1,000 steps, at each rate of
``RATES``. The rate is chosen on "none, padded" alone: the most runs above 0.95 copy
accuracy by step 1,000, ties broken by the earlier median time to it; "both" is shown
beside it so that a rate where only one of them learns is seen, not chosen on. Writes
``sgd_tune.json`` beside this file (atomically, after each rate).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch7
from attn_core.stored import platform, write_json

from _common import require_fast

OUT = Path(__file__).resolve().parent / "sgd_tune.json"
RATES = (0.1, 0.3, 1.0, 3.0)
SEEDS = tuple(range(10))


def main() -> None:
    require_fast()
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    for lr in RATES:
        for row in ("none, padded", "both, L=20"):
            key = f"{row}, lr {lr:g}"
            base = (ch7.cause_config(row) if row in ch7.CAUSE_ROWS else
                    replace(ch7.cause_config("none, padded"), eos=True, spare_word=False))
            cfg = replace(base, optimizer="sgd", lr=lr).first_members(len(SEEDS))
            if key in out:
                continue
            h = cfg.run()
            row_ = {"eval_steps": [int(s) for s in h.eval_steps],
                    "copy_acc": np.asarray(h.probes["copy_acc"], dtype=float)}
            t, r = ch7.times_to_level(row_, ch7.SUCCESS_LEVEL)
            out[key] = {"lr": lr, "row": row, "seeds": list(SEEDS),
                        "above 0.95 by step 1000": int(r.sum()),
                        "median step": float(np.median(t[r])) if r.any() else None,
                        "final copy_acc": np.round(row_["copy_acc"][:, -1], 4).tolist()}
            out["_about"] = (f"sgd_tune.py on {platform()['cpu']}: plain SGD, seeds 0-9, "
                             f"1,000 steps; the rate is chosen on 'none, padded' alone")
            write_json(OUT, out)
            print(f"[sgd] {key}: {r.sum()}/{r.size} above 0.95, final "
                  f"{np.round(row_['copy_acc'][:, -1], 2).tolist()}", flush=True)
    tuned = [(out[f"none, padded, lr {lr:g}"]["above 0.95 by step 1000"],
              -(out[f"none, padded, lr {lr:g}"]["median step"] or 1e9), lr) for lr in RATES]
    print(f"[sgd] chosen rate: {max(tuned)[2]:g}")


if __name__ == "__main__":
    main()
