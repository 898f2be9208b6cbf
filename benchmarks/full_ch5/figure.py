"""Chapter 5 at the papers' scale, read back from ``results.json`` (written by ``run.py``):
the chapter's claims at that size, checked, and the setup page's figure.

    python benchmarks/full_ch5/figure.py    # -> book/figures/full_ch5_rescue.png

A kind of combination that ``run.py`` has not finished yet is drawn as "not run yet" and
left out of the claims that do not need it.

The claims are the chapter's (M2, M3, dyn, expr), each with the value the untrained models
give (step 0, which must fail it), adapted where the staged screen (``run.py``) leaves out
runs: a head is counted once; the rate of good heads p̂ is read on the first data stream,
where every candidate ran; whether a head's verdict repeats is tested on the heads that ran
on the other streams -- those bad on the first stream and the first good ones -- with
Fisher's exact test of the first stream's verdict against the others' (conditioning on the
first stream, as the selection did, leaves the test exact). Three panels: the screen, the
combinations, and the rescue curve 1 − (1 − p̂)^K against the measured random heads.
"""
import matplotlib

matplotlib.use("Agg")
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attn_core.chapters import ch5_multihead as ch  # noqa: E402
from attn_core.claims import Claims  # noqa: E402
from attn_core.metrics import (classify_heads, fisher_exact,  # noqa: E402
                               rate_difference, success_rate)
from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "book" / "figures" / "full_ch5_rescue.png"
CFG = ch.RESCUE.full
KINDS = ("all bad", "one good", "random", "all bad, summed")


def load(path: Path = HERE / "results.json") -> dict:
    return json.loads(path.read_text())


def screen_table(res: dict, at: int = -1) -> dict[int, dict[int, float]]:
    """head -> {data stream: token accuracy at evaluation ``at``} over the screen's runs."""
    out: dict[int, dict[int, float]] = {}
    for name, run in res["runs"].items():
        if name.startswith("screen "):
            for s, d, acc in zip(run["head_seeds"], run["data_seeds"], run["token_acc"]):
                out.setdefault(s, {})[d] = acc[at]
    return out


def findings(res: dict, at: int = -1) -> dict:
    """Every number the claims test, at evaluation ``at`` (-1 the end, 0 untrained)."""
    good, bad = CFG.good, CFG.bad
    first, *others = CFG.data_seeds
    table = screen_table(res, at)
    heads = sorted(table)
    s0 = np.array([table[s][first] for s in heads])
    p1 = ch.head_rate(s0[:, None], good)         # one stream: every candidate ran on it
    # heads that ran on every stream: does the first stream's verdict repeat on the others?
    full = [s for s in heads if len(table[s]) == len(CFG.data_seeds)]
    g0 = [s for s in full if table[s][first] > good]
    b0 = [s for s in full if table[s][first] < bad]
    rest_good = lambda s: all(table[s][d] > good for d in others)  # noqa: E731
    k_g, k_b = sum(map(rest_good, g0)), sum(map(rest_good, b0))
    p = fisher_exact(k_g, len(g0), k_b, len(b0), alternative="greater") if g0 and b0 \
        else 1.0
    labels = classify_heads(np.array([[table[s][d] for d in CFG.data_seeds] for s in full]),
                            good, bad) if full else np.array([], dtype=str)
    n_good, n_bad = int((labels == "good").sum()), int((labels == "bad").sum())
    runs = res["runs"]
    K = CFG.k_combo
    # the kinds run so far (run.py records a kind when all its runs are done)
    ok = {kind: np.array([a[at] for a in runs[f"K={K} {kind}"]["token_acc"]]) > good
          for kind in KINDS if f"K={K} {kind}" in runs}
    rates = {kind: success_rate(v) for kind, v in ok.items()}
    random_k = {1: p1, **{k: success_rate(np.array([a[at] for a in
                                                   runs[f"K={k} random"]["token_acc"]]) > good)
                         for k in CFG.ks if k > 1 and f"K={k} random" in runs}}
    diag = {name: ch.diagonal_heads(r["head_attn_acc"], at)
            for name, r in runs.items() if name.startswith("K=")}
    won = ok["one good"]
    counts = ch.diagonal_counts((np.array([a[at] for a in r["token_acc"]]) > good,
                                 diag[name].any(1))
                                for name, r in runs.items() if name.startswith("K="))
    control = np.array([a[at] for a in runs["control, bad heads"]["token_acc"]])
    return {"p1": p1, "repeat": {"good first": (k_g, len(g0)), "bad first": (k_b, len(b0)),
                                 "p": p},
            "split": (n_good, n_bad), "rates": rates, "random": random_k,
            "rescue": rate_difference(rates["one good"], rates["all bad"]),
            "more_heads": rate_difference(random_k[K], p1),
            "good_head_diagonal": (int(won.sum()),
                                   int(diag[f"K={K} one good"][won, 0].sum())),
            **counts, "best_single": float(s0.max()), "control": control}


def claims(res: dict) -> Claims:
    """The chapter's claims at the papers' scale, at its full-mode thresholds (its fast-mode
    ones but for :data:`~attn_core.chapters.ch5_multihead.DIAGONAL_SUCCEEDS_MIN`)."""
    F, F0 = findings(res), findings(res, at=0)
    K = CFG.k_combo
    c = Claims("Chapter 5 at the papers' scale")
    c.check("M2", "the first stream's success repeats on the others: Fisher p (heads)",
            kind="finding", measured=F["repeat"]["p"], op="<=", threshold=0.01,
            untrained=F0["repeat"]["p"])
    c.holds("M2", f"the heads split: a good one and {K} bad ones (every stream)",
            kind="finding", ok=F["split"][0] >= 1 and F["split"][1] >= K,
            measured=f"{F['split'][0]} good, {F['split'][1]} bad",
            untrained=F0["split"][0] >= 1 and F0["split"][1] >= K)
    c.check("M3", f"K = {K}: one good − all bad, 95% CI low end", kind="finding",
            measured=F["rescue"][1], op=">", threshold=0, untrained=F0["rescue"][1],
            paper="all bad fail, one good can converge")
    c.check("M3", f"success rate of one-good K = {K} combinations", kind="finding",
            measured=F["rates"]["one good"][0], op=">=", threshold=2 / 3,
            untrained=F0["rates"]["one good"][0], paper="can converge")
    c.check("M3", f"success rate of K = {K} random heads", kind="finding",
            measured=F["rates"]["random"][0], op=">=", threshold=0.8,
            untrained=F0["rates"]["random"][0], paper="converges w.h.p.")
    c.check("M3", f"K = {K} random − one head, 95% CI low end", kind="finding",
            measured=F["more_heads"][1], op=">", threshold=0,
            untrained=F0["more_heads"][1])
    won, diag = F["good_head_diagonal"]
    c.holds("dyn", "successful one-good runs: the good head turns diagonal",
            kind="finding", ok=won > 0 and diag == won, measured=f"{diag}/{won} runs",
            untrained=F0["good_head_diagonal"][0] > 0)
    # both directions of "a run succeeds iff one of its heads turns diagonal" (the chapter's
    # claims cell): the second at its full-mode threshold, set after these runs
    n_won, won_diag = F["success_has_diagonal"]
    c.holds("dyn", "every successful K-head run has a diagonal head", kind="finding",
            ok=n_won > 0 and won_diag == n_won, measured=f"{won_diag}/{n_won} runs",
            untrained=F0["success_has_diagonal"][0] > 0)
    share = lambda pair: pair[1] / pair[0] if pair[0] else 0.0  # noqa: E731
    n_diag, diag_won = F["diagonal_succeeds"]
    c.check("dyn", f"runs with a diagonal head that succeed ({diag_won}/{n_diag})",
            kind="finding", measured=share(F["diagonal_succeeds"]), op=">=",
            threshold=ch.DIAGONAL_SUCCEEDS_MIN["full"],
            untrained=share(F0["diagonal_succeeds"]))
    c.check("expr", "best final accuracy of a single head", kind="finding",
            measured=F["best_single"], op=">", threshold=CFG.good,
            untrained=F0["best_single"])
    c.check("expr", "bad heads on the control: final accuracy", kind="finding",
            measured=F["control"], op=">", threshold=CFG.good, untrained=F0["control"])
    return c


def draw(res: dict) -> plt.Figure:
    F = findings(res)
    K = CFG.k_combo
    fig, (a, b, c) = plt.subplots(3, 1, figsize=(4.6, 10.0), layout="constrained")
    # the screen: every candidate's final accuracy on each stream it ran on
    table = screen_table(res)
    heads = sorted(table, key=lambda s: table[s][CFG.data_seeds[0]])
    for j, d in enumerate(CFG.data_seeds):
        xs = [i for i, s in enumerate(heads) if d in table[s]]
        a.plot(xs, [table[heads[i]][d] for i in xs], "o^s"[j], ms=3.5, ls="none",
               color=f"C{j}", label=f"stream {d}")
    a.axhline(CFG.good, color="C2", ls=":", lw=0.8)
    a.axhline(CFG.bad, color="C3", ls=":", lw=0.8)
    a.set(title=f"one head each: {len(heads)} candidates",
          xlabel="candidate, by its stream-0 accuracy", ylabel="final token accuracy",
          ylim=(0, 1.02))
    a.legend(loc="lower right")
    # the combinations: success rates with 95 % intervals
    names = [k.replace(", ", ",\n") for k in KINDS]
    r = np.array([F["rates"].get(k, (np.nan,) * 3) for k in KINDS])
    b.bar(range(len(KINDS)), np.nan_to_num(r[:, 0]), color=["C3", "C2", "C0", "C1"])
    b.errorbar(range(len(KINDS)), r[:, 0], yerr=[r[:, 0] - r[:, 1], r[:, 2] - r[:, 0]],
               fmt="none", color="k", capsize=3)
    for i, k in enumerate(KINDS):
        if k not in F["rates"]:
            b.text(i, 0.05, "not run\nyet", ha="center", va="bottom", color="0.4")
    b.set_xticks(range(len(KINDS)), names)
    n = len(res["runs"][f"K={K} all bad"]["token_acc"])
    b.set(title=f"K = {K}: {n} runs of each combination", ylabel="success rate", ylim=(0, 1.05))
    # the rescue curve against random heads
    ks = np.arange(1, K + 1)
    p, lo, hi = F["p1"]
    c.plot(ks, 1 - (1 - p) ** ks, color="C0", label=r"$1 - (1 - \hat p)^K$")
    c.fill_between(ks, 1 - (1 - lo) ** ks, 1 - (1 - hi) ** ks, color="C0", alpha=0.2)
    kk = sorted(F["random"])
    rr = np.array([F["random"][k] for k in kk])
    c.errorbar(kk, rr[:, 0], yerr=[rr[:, 0] - rr[:, 1], rr[:, 2] - rr[:, 0]], fmt="o",
               color="k", capsize=3, label="random heads, measured")
    c.set(title="random heads: measured and predicted", xlabel="heads $K$",
          ylabel="success rate", ylim=(0, 1.05))
    c.legend(loc="lower right")
    fig.suptitle("L = 40, GRUs of hidden 256, batch 128, 200 steps")
    return fig


def main():
    res = load()
    c = claims(res)
    c.show()
    set_style()
    fig = draw(res)
    size = rendered_text_pt(fig)
    print(f"smallest text {size['desktop']} pt (desktop), {size['phone']} pt (phone); "
          f"bound {MIN_TEXT_PT}")
    fig.savefig(OUT, dpi=100, bbox_inches="tight")
    print(f"wrote {OUT}")
    c.assert_all()


if __name__ == "__main__":
    main()
