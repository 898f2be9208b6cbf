"""Delay or failure? The sweep's main rows trained on to 2,000 steps (chapters 4 and 7).

    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/long.py   # ~1 h, 2 cores

Trains every row of ``ch7_end_token.LONG_ROWS`` (``long_config``: the sweep's condition,
40 seeds and evaluations every 20 steps, to ``LONG_STEPS``) and writes its stored row
(copy and token accuracy at every evaluation) to
``attn_core/chapters/data/ch7_long.json`` after each row, with the manifest. Resumable:
a row already in the file with its configuration is kept, so a stopped script starts again
at the first row it had not finished. The first 300 steps of each row are the stored
sweep's runs (a test checks it).
"""

from __future__ import annotations

from pathlib import Path

from attn_core.chapters import ch7_end_token as ch7

from _common import require_fast, train_rows


def main() -> None:
    require_fast()
    train_rows(ch7.LONG_STORED, Path(__file__).name,
               f"the sweep's rows {', '.join(ch7.LONG_ROWS)} to {ch7.LONG_STEPS} steps")


if __name__ == "__main__":
    main()
