"""Chapter 4's central comparison at the paper's scale (issue #16 item 6), on this CPU:
permutations vs the 40-of-60 control, L = 40, hidden 256, batch 128, 200 steps (the authors'
budget; ``COPY_BASE.full`` and ``control`` of it), 20 seeds each, in chunks of 10 seeds
(permutation, control, permutation, control) so an interruption keeps whole chunks. Writes
``results.json`` beside this file (atomically, after every chunk); ``figure.py`` draws it.

    ATTN_MODE=full ATTN_WORKERS=2 python benchmarks/full_ch4/run.py   # ~90 min on 2 vCPUs
"""
import json
import os
import time
from pathlib import Path
from dataclasses import replace
import numpy as np
from attn_core.chapters import ch4_copy as ch
from attn_core.metrics import success_rate

OUT = Path(__file__).resolve().parent / "results.json"
base = ch.COPY_BASE.full
cfgs = {"permutation": base, "control": ch.control(base)}
out = {}
for chunk in (range(0, 10), range(10, 20)):
    for name, cfg in cfgs.items():
        t = time.time()
        h = replace(cfg, seeds=tuple(chunk)).run()
        acc = h.metrics["token_acc"]
        rec = out.setdefault(name, {"seeds": [], "final_token_acc": [], "final_attn_acc": [],
                                    "token_acc": [], "attn_acc": []})
        rec["seeds"] += [int(s) for s in h.seeds]
        rec["final_token_acc"] += acc[:, -1].round(4).tolist()
        rec["final_attn_acc"] += h.metrics["attn_acc"][:, -1].round(4).tolist()
        rec["token_acc"] += acc.round(4).tolist()
        rec["attn_acc"] += h.metrics["attn_acc"].round(4).tolist()
        rec["eval_steps"] = h.eval_steps.tolist()
        ok = np.array(rec["final_token_acc"]) > ch.SUCCESS_LEVEL
        r, lo, hi = success_rate(ok)
        print(f"{name} seeds {chunk.start}-{chunk.stop-1}: {time.time()-t:.0f} s; so far "
              f"{int(ok.sum())}/{len(ok)} rate {r:.2f} [{lo:.2f}, {hi:.2f}]", flush=True)
        out["config"] = {k: str(v) for k, v in base.as_dict().items()}
        tmp = OUT.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(out))
        os.replace(tmp, OUT)
