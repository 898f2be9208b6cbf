"""Chapter 7, issue #36 item 4: does chapter 5's multi-head rescue still rescue with the end
token present?

Chapter 5's fast model (GRU encoder-decoder, a projection per head, the heads' contexts
averaged, no biases, L = 20 permutations, batch 32, 300 steps, every run on chapter 5's one
base initialisation) has no end token. Here it runs with K = 1 and K = 4 fresh random heads
(drawn as chapter 5 draws its random K-head runs), without the end token and with it on both
sides, 40 runs each (``ch7_end_token.SEEDS``). Success as in chapter 7: accuracy on the
copied words (the end step left out) above 0.95 at step 300. The rows and configurations
are the chapter's (``ch7_end_token.RESCUE_ROWS``, ``rescue_config``, ``rescue_row``); writes
the chapter's stored rows (``ch7_end_token.RESCUE_FILE``) and the manifest after every row
(atomically); every finished group of runs is in the results cache (``ATTN_CACHE``), so a
run started again trains only what is missing.

    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/rescue.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch7
from attn_core.stored import platform, write_manifest

from _common import print_pairs, require_fast

OUT = ch7.RESCUE_FILE


def main() -> None:
    require_fast()
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    note = out.pop("_about", f"Trained by {Path(__file__).name} on "
                   f"{time.strftime('%Y-%m-%d')} ({platform()['cpu']}).")
    for name in ch7.RESCUE_ROWS:
        cfg = ch7.rescue_config(name)
        t = time.time()
        h = cfg.run()
        out[name] = ch7.rescue_row(cfg, h)
        ch7.write_sweep(out, OUT, note=note)
        write_manifest()
        k = int((np.asarray(h.probes["copy_acc"])[:, -1] > ch7.SUCCESS_LEVEL).sum())
        print(f"[ch7 rescue] {name}: {k}/{len(cfg.head_seeds)} ({time.time() - t:.0f} s)",
              flush=True)
    print_pairs(out, "row")


if __name__ == "__main__":
    main()
