"""The setup page's figure of chapter 7 at the papers' scale, drawn from the rows that
``run.py`` wrote beside this file (``rows.json``):

    python benchmarks/full_ch7/figure.py [ROWS_JSON]   # -> book/figures/full_ch7_end.png

Two panels, stacked at the chapters' width. Top: each variant's success rate (accuracy on
the copied words above the chapter's level at the last evaluation) with its 95 % Wilson
interval, at the papers' scale and, beside it, in the chapter's stored fast sweep at the
same length (L = 40, its own smaller model and 600 steps) where that sweep has the row.
Bottom: every seed's accuracy on the copied words at the last evaluation, a row per
variant, a column per seed, successes marked. The end-token variants share each seed's
initialisation and data; without the end token the vocabulary is one word smaller, so the
embedding and every parameter drawn after it start elsewhere. A variant ``run.py`` has
not finished is drawn as "not run yet" at the top and left out below. It prints the
rendered text size, which must reach the book's bound (``MIN_TEXT_PT``) on a phone too.
"""
import matplotlib

matplotlib.use("Agg")
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attn_core.chapters import ch7_end_token as ch  # noqa: E402
from attn_core.metrics import wilson_interval  # noqa: E402
from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "book" / "figures" / "full_ch7_end.png"
#: The variants, in run.py's order, and their colours.
VARIANTS = {"none": "C0", "both": "C3", "target": "C1", "source": "C2"}


def rate(row: dict) -> tuple[float, float, float, int, int]:
    """(rate, low, high, successes, runs) of a row, at the chapter's success level."""
    k, n = ch.successes(row)
    lo, hi = wilson_interval(k, n)
    return k / n, lo, hi, k, n


def draw(rows: dict, fast: dict | None = None) -> plt.Figure:
    """``rows``: run.py's rows (a subset of :data:`VARIANTS` is drawn as far as it goes);
    ``fast``: the chapter's stored sweep (its L = 40 rows are drawn beside), or None."""
    L = ch.END_BASE.full.length
    fig, (a, b) = plt.subplots(2, 1, figsize=(4.6, 7.6), layout="constrained",
                               height_ratios=(1.6, 1))
    x = np.arange(len(VARIANTS))
    for i, (name, color) in enumerate(VARIANTS.items()):
        if name in rows:
            r, lo, hi, k, n = rate(rows[name])
            a.errorbar(i - 0.12, r, yerr=[[r - lo], [hi - r]], fmt="o", color=color,
                       capsize=4, label="papers' scale" if i == 0 else None)
            a.annotate(f"{k}/{n}", (i - 0.12, hi), textcoords="offset points",
                       xytext=(2, 4), ha="right")
        else:
            a.annotate("not run\nyet", (i - 0.12, 0.5), ha="center", va="center",
                       color="grey")
        fast_row = (fast or {}).get(f"{name}, L={L}")
        if fast_row is not None:
            r, lo, hi, k, n = rate(fast_row)
            a.errorbar(i + 0.12, r, yerr=[[r - lo], [hi - r]], fmt="s", mfc="white",
                       color=color, capsize=4,
                       label=f"fast sweep, L = {L}" if name == "none" else None)
    a.set_xticks(x, ["\n".join(ch.SHORT_LABELS[n].rsplit(" ", 1)) for n in VARIANTS])
    a.set(xlim=(-0.6, len(VARIANTS) - 0.45), ylim=(-0.05, 1.12),
          ylabel="success rate (95% CI)",
          title="where the end token sits, and the copy")
    a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    names = [n for n in VARIANTS if n in rows]
    if names:
        final = np.array([np.asarray(rows[n]["copy_acc"], dtype=float)[:, -1]
                          for n in names])
        im = b.imshow(final, cmap="viridis", vmin=0.5, vmax=1.0, aspect="auto")
        for i, j in zip(*np.nonzero(final > ch.SUCCESS_LEVEL)):
            b.plot(j, i, marker="o", ms=5, color="white", mec="black", mew=0.6)
        b.set_yticks(range(len(names)),
                     [ch.SHORT_LABELS[n].replace(" ", "\n", 1) for n in names])
        seeds = rows[names[0]]["seeds"]
        b.set_xticks(range(0, len(seeds), 5), [str(s) for s in seeds[::5]])
        b.grid(False)
        fig.colorbar(im, ax=b, orientation="horizontal", shrink=0.8, pad=0.02,
                     label="copied words' accuracy at the end (dots: success)")
    b.set(xlabel="seed (the end-token rows: the same start and data)", title="every seed")
    fig.suptitle(f"L = {L}, LSTMs of hidden 256, batch 128")
    return fig


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else HERE / "rows.json"
    if not path.exists():
        raise SystemExit(f"{path} does not exist: run benchmarks/full_ch7/run.py first")
    rows = json.loads(path.read_text())
    for name, row in rows.items():
        r, lo, hi, k, n = rate(row)
        print(f"{name:7s} {k:2d}/{n:<2d}  {r:.2f} [{lo:.2f}, {hi:.2f}]")
    set_style()
    fig = draw(rows, ch.load_sweep())
    size = rendered_text_pt(fig)
    print(f"smallest text {size['desktop']} pt (desktop), {size['phone']} pt (phone); "
          f"bound {MIN_TEXT_PT}")
    out = OUT if not argv else Path(argv[0]).with_name("full_ch7_end.png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
