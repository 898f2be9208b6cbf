"""Chapter 7's fast sweep, read back from the package's stored sweep
(``attn_core/chapters/data/ch7_sweep.json``, written by ``sweep.py``): each
condition's successes of 40 (copy accuracy above 0.95 at the last evaluation) with the 95 %
Wilson interval, Fisher's exact test against the end token on both sides and against no end
token at the same length and task, and where the attention of successful and failed runs
goes at the end (mean mass by position class).

    python benchmarks/ch7_end_token/report.py
"""

from __future__ import annotations

import numpy as np

from attn_core.chapters.ch4_copy import SUCCESS_LEVEL
from attn_core.chapters.ch7_end_token import POSITION_CLASSES, load_sweep
from attn_core.metrics import fisher_exact, wilson_interval


def successes(row) -> np.ndarray:
    return np.asarray(row["copy_acc"], dtype=float)[:, -1] > SUCCESS_LEVEL


def main() -> None:
    rows = {k: v for k, v in load_sweep().items() if not k.startswith("_")}
    print(f"{'condition':28s} {'succeed':>8s} {'95% CI':>13s} {'p vs both':>10s} "
          f"{'p vs none':>10s}")
    for key, row in rows.items():
        ok = successes(row)
        k, n = int(ok.sum()), ok.size
        lo, hi = wilson_interval(k, n)
        rest = key.split(", ", 1)[1]
        ps = []
        for ref in ("both", "none"):
            other = rows.get(f"{ref}, {rest}")
            if other is None or other is row:
                ps.append("")
                continue
            o = successes(other)
            ps.append(f"{fisher_exact(k, n, int(o.sum()), o.size):.2g}")
        print(f"{key:28s} {k:>4d}/{n:<3d} [{lo:.2f}, {hi:.2f}] {ps[0]:>10s} {ps[1]:>10s}")
    print("\nattention mass of the copied words at the last evaluation, mean over runs "
          "(succeeded / failed)")
    print(f"{'condition':28s} " + " ".join(f"{c[:10]:>13s}" for c in POSITION_CLASSES))
    for key, row in rows.items():
        ok = successes(row)
        cells = []
        for c in POSITION_CLASSES:
            m = np.asarray(row[f"mass_{c}"], dtype=float)[:, -1]
            s = f"{m[ok].mean():.2f}" if ok.any() else "  - "
            f = f"{m[~ok].mean():.2f}" if (~ok).any() else "  - "
            cells.append(f"{s:>6s}/{f:<6s}")
        print(f"{key:28s} " + " ".join(cells))


if __name__ == "__main__":
    main()
