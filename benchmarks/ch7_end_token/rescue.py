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

from pathlib import Path

from attn_core.chapters import ch7_end_token as ch7

from _common import print_pairs, require_fast, train_rows

def main() -> None:
    require_fast()
    out = train_rows(ch7.RESCUE_STORED, Path(__file__).name)
    print_pairs(out, "row")


if __name__ == "__main__":
    main()
