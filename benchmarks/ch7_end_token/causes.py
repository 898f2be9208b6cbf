"""Chapter 7's causes: the confound-free "none", masking that keeps the end step's target,
and the runs that tell counting from competition (chapter 7, "Counting or competition?").

    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/causes.py   # ~45 min

Trains every row of ``ch7_end_token.CAUSE_ROWS`` (``cause_config``: 40 seeds of chapter 7's
fast model at L = 20, to ``CAUSE_STEPS`` steps, evaluated every 20) and writes its stored
row (copy and token accuracy at every evaluation) to
``attn_core/chapters/data/ch7_causes.json`` after each row, with the manifest. Resumable: a
row already in the file with its configuration is kept. ``--only TEXT``: the rows whose name
contains it.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from attn_core.chapters import ch7_end_token as ch7

from _common import require_fast, train_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="train only the rows whose name has this")
    args = ap.parse_args()
    require_fast()
    family = ch7.CAUSES_STORED
    if args.only:
        family = replace(family, names=tuple(n for n in family.names if args.only in n))
    train_rows(family, Path(__file__).name,
               f"the cause rows {', '.join(ch7.CAUSE_ROWS)} to {ch7.CAUSE_STEPS} steps")


if __name__ == "__main__":
    main()
