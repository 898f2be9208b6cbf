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
from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style  # noqa: E402

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
    # stacked, one shared step axis: readable on a phone (>= 9 pt text at a 358 px column)
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 5.2), sharex=True, sharey=True)
    for ax, (name, (h, color)) in zip(axes, runs.items()):
        for acc in h.metrics["attn_acc"]:
            ax.plot(h.eval_steps, acc, color=color, alpha=0.75, lw=1.2)
        ax.axvline(base.steps, color="grey", lw=0.9, ls=":")
        ax.set_title(name, fontsize=12)
        ax.set(ylabel="attention on the\naligned position", ylim=(-0.02, 1.02),
               xlim=(0, INTRO_STEPS))
    axes[0].text(base.steps + 8, 0.06, "chapter 4 stops\nat step 300", fontsize=12,
                 color="0.35")
    axes[1].set_xlabel("training step")
    fig.suptitle(f"Copying L = {base.length} words, {len(base.seeds)} seeds each")
    sizes = rendered_text_pt(fig, dpi=110)
    if min(sizes["desktop"], sizes["phone"]) < MIN_TEXT_PT:
        raise SystemExit(f"the figure's text would be too small: {sizes}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110, bbox_inches="tight")
    print(f"smallest text fitted to the column: {sizes}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
