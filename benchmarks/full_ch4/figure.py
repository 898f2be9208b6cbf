"""The setup page's figure of chapter 4's central comparison at the paper's scale, drawn
from the results ``run.py`` wrote (``results.json`` beside this file):

    python benchmarks/full_ch4/figure.py    # -> book/figures/full_ch4_copy.png
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attn_core.chapters.ch4_copy import SUCCESS_LEVEL  # noqa: E402
from attn_core.metrics import success_rate  # noqa: E402
from attn_core.plotting import set_style  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "book" / "figures" / "full_ch4_copy.png"


def main():
    res = json.loads((HERE / "results.json").read_text())
    set_style()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6),
                             gridspec_kw={"width_ratios": [1, 1, 0.8]})
    colors = {"permutation": "C3", "control": "C0"}
    rates = {}
    for ax, name in zip(axes[:2], ("permutation", "control")):
        r = res[name]
        acc = np.array(r["token_acc"])
        steps = np.array(r["eval_steps"])
        ok = acc[:, -1] > SUCCESS_LEVEL
        rates[name] = (success_rate(ok), int(ok.sum()), len(ok))
        for a, good in zip(acc, ok):
            ax.plot(steps, a, color=colors[name] if good else "k", alpha=0.7, lw=1.1)
        ax.axhline(SUCCESS_LEVEL, color="grey", ls=":", lw=0.8)
        ax.set(title=f"{name}: {int(ok.sum())}/{len(ok)} above {SUCCESS_LEVEL}",
               xlabel="step", ylim=(0, 1.02))
    axes[0].set_ylabel("held-out token accuracy")
    ax = axes[2]
    for i, name in enumerate(("permutation", "control")):
        (p, lo, hi), k, n = rates[name]
        ax.bar(i, p, color=colors[name], alpha=0.8)
        ax.errorbar(i, p, yerr=[[p - lo], [hi - p]], color="k", capsize=5)
        ax.text(i, hi + 0.03, f"{k}/{n}", ha="center")
    ax.plot([-0.4, 0.4], [0.5, 0.5], color="k", ls="--", lw=1, label="paper: about half")
    ax.plot([0.6, 1.4], [1.0, 1.0], color="k", ls=":", lw=1, label="paper: every run")
    ax.set(xticks=[0, 1], xticklabels=["permutation", "control"], ylim=(0, 1.15),
           ylabel="success rate (95% CI)", title="L = 40, hidden 256, 200 steps")
    ax.legend(fontsize=8, loc="upper left")
    fig.savefig(OUT, dpi=100, bbox_inches="tight")
    print(f"wrote {OUT}")
    for name, ((p, lo, hi), k, n) in rates.items():
        print(f"{name}: {k}/{n}, rate {p:.2f} [{lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main()
