"""Chapter 7, issue #36 item 4: does chapter 6's Transformer show the end token's effect?

Chapter 6's Transformer at its fast size (one encoder and one decoder layer, d = 64, batch
32, Adam 1e-3, 300 steps, L = 20 permutations, learned positions drawn like the words), with
the end token on both sides (chapter 6's own runs) and without it, with four heads (chapter
6's model) and with one (as chapter 4's LSTM), 40 seeds each (``ch7_end_token.SEEDS``).
Success as in chapter 7: accuracy on the copied words (the end step left out) above 0.95 at
step 300. The rows and configurations are the chapter's (``ch7_end_token.TRANSFORMER_ROWS``,
``transformer_config``, ``transformer_row``); writes the chapter's stored rows
(``ch7_end_token.TRANSFORMER_FILE``) and the manifest after every condition (atomically);
every finished group of seeds is in the results cache (``ATTN_CACHE``), so a run started
again trains only what is missing.

    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/transformer.py
"""

from __future__ import annotations

from pathlib import Path

from attn_core.chapters import ch7_end_token as ch7

from _common import print_pairs, require_fast, train_rows

def main() -> None:
    require_fast()
    out = train_rows(ch7.TRANSFORMER_STORED, Path(__file__).name)
    print_pairs(out, "condition")


if __name__ == "__main__":
    main()
