"""The book's opening figure, computed once from chapter 4's fast runs and committed.

    ATTN_MODE=fast python scripts/make_intro_figure.py     # writes book/figures/intro_copy.png

It trains (or loads from the results cache, ATTN_CACHE) exactly the runs chapter 4 shows in
§2 -- 10 seeds of permutations and 10 of the control -- and draws each run's attention
accuracy over training. The permutations train to twice the budget, 600 steps (chapter 4's
live runs stop at 400, ``ch.PERMUTATION_LONG``; their first 400 steps are these runs'). The
intro page labels the image as computed by this script.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attn_core.chapters import ch4_copy as ch  # noqa: E402
from attn_core.config import get_mode  # noqa: E402
from attn_core.plotting import set_style  # noqa: E402

#: How long the figure's permutation runs train: twice chapter 4's fast budget of 300 steps.
INTRO_STEPS = 600
OUT = Path(__file__).resolve().parents[1] / "book" / "figures" / "intro_copy.png"


def main() -> None:
    if get_mode() != "fast":
        raise SystemExit(f"run with ATTN_MODE=fast (the figure shows the fast runs); "
                         f"ATTN_MODE={os.environ.get('ATTN_MODE')!r} resolves to {get_mode()}")
    set_style()
    base = ch.COPY_BASE.get()
    runs = {"control: L of 1.5L distinct words": (ch.control(base).run(), "C0"),
            "permutations of L words": (replace(base, steps=INTRO_STEPS).run(), "C3")}
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.1), sharey=True)
    for ax, (name, (h, color)) in zip(axes, runs.items()):
        for acc in h.metrics["attn_acc"]:
            ax.plot(h.eval_steps, acc, color=color, alpha=0.75, lw=1.2)
        ax.axvline(base.steps, color="grey", lw=0.7, ls=":")
        ax.set(title=name, xlabel="training step", xlim=(0, INTRO_STEPS))
    axes[0].set(ylabel="attention on the\naligned position", ylim=(-0.02, 1.02))
    fig.suptitle(f"Copying L = {base.length} words with an LSTM and attention: "
                 f"{len(base.seeds)} seeds each", fontsize=11)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
