"""Chapter 7, issue #36 item 3 (a first look): does a quantity measured at initialization
predict which runs copy? For each condition of ``mechanism.json`` (the first 60 steps of the
sweep's runs, evaluated every 5 steps with ``push_probe``), the area under the ROC curve of
the step-0 push on the diagonal margin from the copied words' loss (``push_diag_copy``:
how much one plain gradient step on that loss, at initialization, raises the attention
score of the aligned position above the source mean) against the run's final outcome in
the stored sweep (copy accuracy above 0.95 at step 300), with a permutation p-value (4,000
shuffles of the outcomes, two-sided around 0.5).

    python benchmarks/ch7_end_token/predict.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch

MECHANISM = Path(__file__).resolve().parent / "mechanism.json"


def auc(score: np.ndarray, ok: np.ndarray) -> float:
    """P(a run that copies scores above one that fails), ties counted half."""
    pos, neg = score[ok], score[~ok]
    return float((pos[:, None] > neg[None, :]).mean()
                 + 0.5 * (pos[:, None] == neg[None, :]).mean())


def main() -> None:
    rows = json.loads(MECHANISM.read_text())["rows"]
    sweep = ch.load_sweep()
    rng = np.random.default_rng(0)
    print(f"{'condition':24s} {'copy':>5s}  {'AUC, step-0 push':>16s}  {'p':>6s}")
    for name, row in rows.items():
        score = np.asarray(row["push_diag_copy"], dtype=float)[:, 0]
        ok = np.asarray(sweep[name]["copy_acc"], dtype=float)[:, -1] > ch.SUCCESS_LEVEL
        a = auc(score, ok)
        null = np.array([auc(score, rng.permutation(ok)) for _ in range(4000)])
        p = float((np.abs(null - 0.5) >= abs(a - 0.5)).mean())
        print(f"{name:24s} {ok.sum():2d}/{ok.size:<2d} {a:>16.2f}  {p:>6.3f}")


if __name__ == "__main__":
    main()
