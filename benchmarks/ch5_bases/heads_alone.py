"""Chapter 5's random heads, each trained alone (the table behind §4's verdicts).

    ATTN_MODE=fast python benchmarks/ch5_bases/heads_alone.py      # ~2 min on two cores

Trains the runs of ``ch5_multihead.random_heads_alone_runs()`` -- every fresh head of the
fast random combinations as a one-head model with the screen's protocol, on each screen
data stream -- and writes each head's final token accuracy per stream, to 3 decimals, to
``attn_core/chapters/data/ch5_random_heads_alone.json`` (``ch5_multihead.random_heads_alone()``
reads it), then the stored results' manifest. It refuses to write a value within 0.001 of
the good or bad threshold (the rounding could move a verdict).
"""

import numpy as np

from attn_core.chapters import ch5_multihead as ch
from attn_core.config import get_mode
from attn_core.rows import write_table
from attn_core.stored import write_manifest

ABOUT = ("The fresh heads of chapter 5's fast random combinations (K = 4: its 5 runs' 20 "
         "heads; K = 2: its 5 runs' 10 heads), each trained alone as a one-head model with "
         "the screen's protocol (base 0, data streams 0 and 1, 300 steps), by "
         "benchmarks/ch5_bases/heads_alone.py (the runs of ch5_multihead."
         "random_heads_alone_runs): [head seed, final token accuracy on stream 0, on stream "
         "1], to 3 decimals (no value lies within 0.001 of a threshold).")


def main() -> None:
    if get_mode() != "fast":
        raise SystemExit("set ATTN_MODE=fast: the table is chapter 5's fast protocol")
    cfg = ch.RESCUE.fast
    runs = ch.random_heads_alone_runs(cfg)
    acc = np.stack([r.run(progress=False).metrics["token_acc"][:, -1] for r in runs], axis=1)
    near = [(cfg.good, np.abs(acc - cfg.good)), (cfg.bad, np.abs(acc - cfg.bad))]
    for level, gap in near:
        if (gap <= 0.001).any():
            raise SystemExit(f"an accuracy lies within 0.001 of {level}: 3 decimals would "
                             f"not keep its verdict")
    rows = [[int(s), *np.round(a.astype(float), 3).tolist()]
            for s, a in zip(runs[0].head_seeds, acc)]
    print("wrote", write_table(ch.RANDOM_HEADS_ALONE_FILE, rows, ABOUT))
    write_manifest()


if __name__ == "__main__":
    main()
