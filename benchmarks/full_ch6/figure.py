"""The setup page's figure of chapter 6 at the papers' scale, drawn from the stored sweep
that ``run.py`` wrote (``attn_core/chapters/data/ch6_full_sweep.json``):

    python benchmarks/full_ch6/figure.py    # -> book/figures/full_ch6_sweep.png

Four panels, one per question of the chapter, every seed a line: four heads on
permutations and on the control (T1), small positions (T2), the lexicon under uniform
attention (T3), and the ablation's two halves (T4). It prints the rendered text size,
which must reach the book's bound (``attn_core.plotting.MIN_TEXT_PT``) on a phone too.
"""
import matplotlib

matplotlib.use("Agg")
from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attn_core.chapters import ch6_transformer as ch  # noqa: E402
from attn_core.chapters.ch4_copy import guessing_accuracy  # noqa: E402
from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "book" / "figures" / "full_ch6_sweep.png"


def _lines(ax, row, key, color, label):
    steps = row["eval_steps"]
    for i, y in enumerate(np.array(row[key])):
        ax.plot(steps, y, color=color, alpha=0.6, lw=1, label=label if i == 0 else None)


def _count(row) -> str:
    ok = np.array(row["final_token_acc"]) > ch.SUCCESS_LEVEL
    return f"{int(ok.sum())}/{ok.size}"


def draw(rows: dict) -> plt.Figure:
    L = ch.TRANSFORMER_BASE.full.length
    chance, guess = 1 / (L + 1), guessing_accuracy(L, eos=True)
    # stacked, at the chapters' width, so that the text stays readable on a phone
    fig, axes = plt.subplots(4, 1, figsize=(4.6, 11.0), sharex=True, layout="constrained")
    a, b, c, d = axes
    _lines(a, rows["learned"], "token_acc", "C2",
           f"permutations ({_count(rows['learned'])})")
    _lines(a, rows["learned, control"], "token_acc", "C0",
           f"control ({_count(rows['learned, control'])})")
    a.set(title=r"T1: four heads, positions $\mathcal{N}(0, 1)$",
          ylabel="token accuracy")
    _lines(b, rows["small positions"], "token_acc", "C3",
           f"permutations ({_count(rows['small positions'])})")
    b.axhline(guess, color="k", ls="--", lw=0.8, label=f"guessing ({guess:.2f})")
    b.set(title=r"T2: positions $\mathcal{N}(0, 0.02^2)$", ylabel="token accuracy")
    _lines(c, rows["uniform, control"], "beta_align", "C0", "control")
    _lines(c, rows["uniform"], "beta_align", "C3", "permutations")
    c.axhline(chance, color="k", ls=":", lw=0.8, label=f"chance (1/{L + 1})")
    c.set(title=r"T3: attention frozen uniform", ylabel=r"$\beta^{uf}$ alignment")
    _lines(d, rows["qk-cross"], "attn_acc", "C2",
           f"qk-cross ({_count(rows['qk-cross'])})")
    _lines(d, rows["qk-self"], "attn_acc", "C3", f"qk-self ({_count(rows['qk-self'])})")
    d.axhline(chance, color="k", ls=":", lw=0.8, label="chance")
    d.set(title="T4: positions in q, k of one attention only", xlabel="step",
          ylabel="attention accuracy")
    for ax in axes.flat:
        ax.set_ylim(-0.02, 1.02)
        ax.legend(loc="upper right" if ax is c else "center right")
    for ax in (a, b):
        ax.axhline(ch.SUCCESS_LEVEL, color="grey", ls=":", lw=0.8)
    fig.suptitle("L = 40, d = 128, batch 128, ten seeds")
    return fig


def main():
    set_style()
    fig = draw(ch.load_full_sweep())
    size = rendered_text_pt(fig)
    print(f"smallest text {size['desktop']} pt (desktop), {size['phone']} pt (phone); "
          f"bound {MIN_TEXT_PT}")
    fig.savefig(OUT, dpi=100, bbox_inches="tight")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
