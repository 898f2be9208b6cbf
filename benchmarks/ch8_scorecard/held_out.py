"""Chapter 8's held-out conditions: predicted first, then trained, then scored.

    ATTN_MODE=fast python benchmarks/ch8_scorecard/held_out.py --predict   # seconds
    git commit attn_core/chapters/data/ch8_predictions.json ...           # before training
    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch8_scorecard/held_out.py   # ~5 min
    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch8_scorecard/held_out.py --pushes

``--predict`` writes every lens's prediction for the conditions of
``ch8_scorecard.HELD_OUT_ROWS`` (from their data and chapter 7's reference rows only) to
``attn_core/chapters/data/ch8_predictions.json``; it refuses to overwrite the file once the
held-out runs exist. Without flags it trains those conditions (40 fresh seeds each, 300
steps) and writes their rows to ``ch8_held_out.json``; ``--pushes`` stores chapter 7's
step-0 push of every run of chapter 7's sweep and of the held-out conditions
(``ch8_push.json``). Both resumable, with the manifest written after each row.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ch7_end_token"))

from attn_core.chapters import ch8_scorecard as ch  # noqa: E402
from attn_core.stored import write_manifest  # noqa: E402

from _common import require_fast, train_rows  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--predict", action="store_true", help="write the predictions only")
    ap.add_argument("--pushes", action="store_true", help="store the step-0 pushes")
    args = ap.parse_args()
    require_fast()
    if args.predict:
        if ch.HELD_OUT_STORED.file.exists():
            raise SystemExit("the held-out runs exist: predictions are written before them")
        ch.write_predictions()
        write_manifest()
        for row, p in ch.load_predictions().items():
            print(row, {k: v for k, v in p.items()})
        return
    if args.pushes:
        train_rows(ch.PUSH_STORED, Path(__file__).name, "each run's step-0 push")
        return
    train_rows(ch.HELD_OUT_STORED, Path(__file__).name,
               "the held-out conditions, after their predictions were committed")


if __name__ == "__main__":
    main()
