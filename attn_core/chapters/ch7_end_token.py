"""Chapter 7 -- the end of the sequence: why one end token makes permutations hard (the
book's own experiment).

Chapter 4's ablation (``benchmarks/authors_copy/ablation.json``) found that the end-of-
sequence token alone turns permutation copying from mostly learned (the context projection
and biases without it: 18 of 20 runs above 0.95) into mostly failed (the authors' model with
it: 2 of 20), while the count table is flat either way. This module takes the end token
apart. Its runs -- :class:`EndTokenConfig` (chapter 4's model with the end token placed and
restricted), the ablations (:data:`CONDITIONS`), the probes and the stored rows -- live in
its part :mod:`attn_core.chapters.ch7_runs` and are re-exported here; this module holds what
the chapter computes from them (success counts, the push's prediction) and its figures.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..checks import check_choice, check_int, check_real
from ..metrics import (auc_null, fisher_exact, newcombe_interval, outcome_auc,
                       rank_correlation, row_successes, wilson_interval)
from ..stats import (holm, kaplan_meier, logrank, mcnemar, paired_difference, paired_order,
                     time_to_level)
from . import ch7_causes, ch7_runs
# the chapter's runs, re-exported (every name of ch7_runs.__all__)
from .ch7_runs import (EndTokenConfig, END_BASE, CONDITIONS, LENGTHS, SEEDS,
                       POSITION_CLASSES, condition_config, condition_name, end_probe,
                       ROW_METRICS, ROW_PROBES, push_probe, PUSHES, SUCCESS_LEVEL,
                       SWEEP_ROWS, L40_CAUSES, SWEEP_STEPS, SWEEP_FILE, row_name,
                       sweep_config,
                       sweep_row, load_sweep, write_sweep, LIVE_ROWS, live_config,
                       stored_configs, check_live, CopyOnly, EndTransformerConfig,
                       TRANSFORMER_ROWS, TRANSFORMER_FILE, transformer_config,
                       transformer_row, load_transformer, EndHeadsRun, RESCUE_ROWS,
                       RESCUE_FILE, rescue_config, rescue_row, load_rescue, PUSH_ROWS,
                       PUSH_FILE, push_config, push_row, load_push, HELD_OUT_ROWS,
                       HELD_OUT_SEEDS, HELD_OUT_FILE, held_out_config, held_out_row,
                       load_held_out, SWEEP_STORED, TRANSFORMER_STORED, RESCUE_STORED,
                       PUSH_STORED, HELD_OUT_STORED, LONG_ROWS, LONG_STEPS, LONG_FILE,
                       long_config, LONG_STORED, load_long, ADAM_PUSH_ROWS,
                       ADAM_PUSH_FILE, adam_push_config, ADAM_PUSH_STORED,
                       load_adam_push)
# the cause runs, re-exported (every name of ch7_causes.__all__)
from .ch7_causes import (CauseTask, StepSeq2Seq, FlagSeq2Seq, CauseConfig, FlagConfig,
                         CAUSE_ROWS, CAUSE_STEPS,
                         CAUSE_FILE, OTHER_SEEDS, SGD_LR, cause_config, CAUSES_STORED,
                         load_causes)

__all__ = [*ch7_runs.__all__, *ch7_causes.__all__, "successes", "compare", "shares_initialisation",
           "READING_ROWS", "reading_rows",
           "ablation_tests", "ABLATION_GROUPS", "LABELS",
           "draw_effect", "draw_ablations", "mass_by_outcome", "draw_mass", "draw_runs",
           "ablation_table", "SEED_COMPARISONS", "first_seeds_p", "draw_seeds",
           "push_prediction", "PUSH_TOLERANCE", "check_push", "draw_push", "held_out_auc",
           "HELD_OUT_MIN_AUC", "DELAY_LEVELS", "DELAY_PAIRS", "times_to_level",
           "delay_table", "DELAY_FIRST", "delay_text", "draw_survival", "adam_push_table", "CAUSE_PAIRS", "SGD_PAIRS", "MARK_PAIRS",
           "upto", "cause_rows", "shares_start", "cause_table", "format_cause_table",
           "COUNTING_ROWS", "counting_test", "init_or_data", "draw_causes"]



# ------------------------------------------------------------------------ the counts
def successes(row: dict, level: float = SUCCESS_LEVEL, step: int | None = None,
              key: str = "copy_acc") -> tuple[int, int]:
    """(successes, runs) of a sweep row: the seeds whose ``key`` (default: accuracy on the
    copied words, the end step left out) is above ``level`` at evaluation step ``step``
    (default: the last); :func:`attn_core.metrics.row_successes`, counted."""
    ok = row_successes(row, level, key, step)
    return int(ok.sum()), int(ok.size)


def shares_initialisation(a: str, b: str) -> bool:
    """Whether sweep rows ``a`` and ``b`` start each seed from the same parameters: the same
    seeds and the same model vocabulary (the embedding and output layers' sizes; "none"
    has one word fewer than "both", so every parameter starts elsewhere). Such rows are
    paired: run i of one and run i of the other share a seed's initialisation."""
    for name, label in ((a, "a"), (b, "b")):
        check_choice(label, name, tuple(SWEEP_ROWS))
    return _same_start(sweep_config(a), sweep_config(b))


def _same_start(ca, cb) -> bool:
    """Whether configurations ``ca`` and ``cb`` start each run from the same parameters and
    data: the same seeds, the same data seeds (a config without ``data_seeds`` draws its
    data from its seeds) and the same model vocabulary."""
    data = [getattr(c, "data_seeds", None) or c.seeds for c in (ca, cb)]
    return (ca.seeds == cb.seeds and data[0] == data[1]
            and ca.task().model_vocab == cb.task().model_vocab)


def compare(rows: dict, a: str, b: str, level: float = SUCCESS_LEVEL,
            paired: bool | None = None, step: int | None = None) -> dict:
    """Row ``a`` against row ``b`` of ``rows`` at evaluation step ``step`` (default: the
    last; 0: the untrained models): each one's successes ``k``/``n``, rate and
    95 % Wilson interval; the difference of the rates ``d`` with its 95 % interval
    ``d_ci``, and the two-sided ``p`` of ``test``. Paired rows (``paired``; default: two
    sweep rows that :func:`shares_initialisation`) get McNemar's exact test and Newcombe's
    paired interval (:mod:`attn_core.stats`); others Fisher's exact test and Newcombe's
    unpaired one."""
    if not isinstance(rows, dict):
        raise TypeError(f"rows must be the stored sweep (a dict of rows); got "
                        f"{type(rows).__name__}")
    for name, label in ((a, "a"), (b, "b")):
        if name not in rows:
            raise ValueError(f"{label} must be a row of rows; got {name!r}")
    level = check_real("level", level, 0.0, 1.0)
    if paired is None:
        paired = a in SWEEP_ROWS and b in SWEEP_ROWS and shares_initialisation(a, b)
    elif not isinstance(paired, bool):
        raise TypeError(f"paired must be True, False or None; got {paired!r}")
    out = {"paired": paired}
    ok_a, ok_b = (row_successes(rows[name], level, step=step) for name in (a, b))
    for name, label, ok in ((a, "a", ok_a), (b, "b", ok_b)):
        k, n = int(ok.sum()), int(ok.size)
        out[label] = {"row": name, "k": k, "n": n, "rate": k / n, "ci": wilson_interval(k, n)}
    ka, na, kb, nb = out["a"]["k"], out["a"]["n"], out["b"]["k"], out["b"]["n"]
    if paired:
        if ok_a.size != ok_b.size or rows[a].get("seeds") != rows[b].get("seeds"):
            raise ValueError(f"paired rows must hold the same seeds; {a!r} and {b!r} do not")
        test = mcnemar(ok_a, ok_b)
        d, lo, hi = paired_difference(ok_a, ok_b)
        out.update(test="McNemar", p=test["p"], a_only=test["a_only"],
                   b_only=test["b_only"])
    else:
        d, lo, hi = newcombe_interval(ka, na, kb, nb)
        out.update(test="Fisher", p=fisher_exact(ka, na, kb, nb))
    out.update(d=d, d_ci=(lo, hi))
    return out


#: The sweep rows behind the examples of "Reading the numbers" (book/reading_numbers.md),
#: by the letters that page names them with. The page comes before chapter 4; naming the
#: conditions there would answer this chapter's questions before it asks them.
READING_ROWS = {"A": "varying, L=20", "B": "varying, none, L=20",
                "C": "source, L=40", "D": "both, L=40"}


def reading_rows(rows: dict | None = None) -> dict:
    """The rows of ``rows`` (default: the stored sweep, :func:`load_sweep`) that "Reading the
    numbers" takes its examples from, keyed by its letters (:data:`READING_ROWS`): A and B
    start each seed differently (independent groups), C and D from the same parameters and
    data (paired runs)."""
    if rows is None:
        rows = load_sweep()
    _check_rows(rows, list(READING_ROWS.values()))      # a dict holding those rows
    return {letter: rows[name] for letter, name in READING_ROWS.items()}


# --------------------------------------------------------------------------- figures
#: The ablations at L = 20, grouped by the question each answers (:func:`draw_ablations`).
ABLATION_GROUPS = (
    ("the reference", ("none", "both")),
    ("where the token is", ("source", "target", "start")),
    ("what attention may see", ("masked", "source, masked", "start, masked")),
    ("what the end step trains", ("no end loss", "no end gradient",
                                  "no end state gradient")),
    ("lengths that vary", ("varying, none", "varying")),
)
#: How :func:`draw_ablations` names each condition (short enough for the figure's axis).
SHORT_LABELS = {
    "none": "no end token", "both": "both sides", "source": "source only",
    "target": "target only", "start": "start token", "masked": "masked",
    "source, masked": "source, masked", "start, masked": "start, masked",
    "no end loss": "no end loss", "no end gradient": "no score grad.",
    "no end state gradient": "output layers", "varying": "end token",
    "varying, none": "no end token",
}
#: How the tables and the other figures name each condition.
LABELS = {
    "none": "no end token",
    "both": "end token, both sides",
    "source": "source only",
    "target": "target only",
    "start": "start token instead",
    "masked": "both, masked from attention",
    "source, masked": "source only, masked",
    "start, masked": "start token, masked",
    "no end loss": "both, end step's loss removed",
    "no end gradient": "both, end step: scores get no grad.",
    "no end state gradient": "both, end step: output layers only",
    "varying": "lengths 10-20, end token",
    "varying, none": "lengths 10-20, no end token",
}


def _rate(row: dict, level: float = SUCCESS_LEVEL,
          step: int | None = None) -> tuple[float, float, float, int, int]:
    k, n = successes(row, level, step)
    lo, hi = wilson_interval(k, n)
    return k / n, lo, hi, k, n


def _check_rows(rows, needed, kind: str = "sweep") -> None:
    """TypeError unless ``rows`` is a dict of rows; ValueError naming the rows of
    ``needed`` it lacks (``kind``: "sweep", "long" for :func:`load_long`'s, "cause" for
    :func:`cause_rows`')."""
    stored = {"sweep": "the stored sweep", "long": "the stored long runs (load_long)",
              "cause": "the cause runs with the long ones (cause_rows)"}[kind]
    if not isinstance(rows, dict):
        raise TypeError(f"rows must be {stored}, a dict of rows; got {type(rows).__name__}")
    missing = [r for r in needed if r not in rows]
    if missing:
        raise ValueError(f"rows must hold the {kind} rows {missing}")


def draw_effect(rows: dict, level: float = SUCCESS_LEVEL):
    """The end token's effect by length: the success rate of 40 runs (copy accuracy above
    ``level`` at the last step; 95 % Wilson intervals) without an end token and with it on
    both sides, on permutations and on the control, at each of :data:`LENGTHS`."""
    import matplotlib.pyplot as plt

    level = check_real("level", level, 0.0, 1.0)
    names = [row_name(n, L, t) for L in LENGTHS for t in ("permutation", "control")
             for n in ("none", "both")]
    _check_rows(rows, names)
    fig, ax = plt.subplots(figsize=(4.6, 4.0), layout="constrained")
    x = np.arange(len(LENGTHS))
    styles = {("none", "permutation"): ("C0", "o", -0.09, "no end token"),
              ("both", "permutation"): ("C3", "s", 0.09, "end token"),
              ("none", "control"): ("0.55", "o", -0.03, "control, none"),
              ("both", "control"): ("0.25", "s", 0.03, "control, end token")}
    for (name, task), (color, marker, dx, label) in styles.items():
        r = np.array([_rate(rows[row_name(name, L, task)], level)[:3] for L in LENGTHS])
        ax.errorbar(x + dx, r[:, 0], yerr=[r[:, 0] - r[:, 1], r[:, 2] - r[:, 0]],
                    color=color, marker=marker, ms=6, capsize=3, lw=1.3,
                    ls="-" if task == "permutation" else ":", label=label)
    ax.set(xticks=x, xticklabels=[f"L = {L}\n({SWEEP_STEPS[L]} steps)" for L in LENGTHS],
           ylabel=f"runs above {level:g} (of 40)", ylim=(-0.03, 1.05))
    ax.yaxis.set_major_formatter(lambda v, _: f"{round(v * 40):d}")
    fig.legend(loc="outside lower center", ncols=2)
    return fig


def draw_ablations(rows: dict, level: float = SUCCESS_LEVEL):
    """Every ablation at L = 20: its success rate of 40 runs (copy accuracy above
    ``level`` at step 300) with its 95 % Wilson interval, grouped by the question it
    answers (:data:`ABLATION_GROUPS`); the bands are the two references, no end token
    (blue) and the end token on both sides (red)."""
    import matplotlib.pyplot as plt

    level = check_real("level", level, 0.0, 1.0)
    _check_rows(rows, [row_name(n) for _, g in ABLATION_GROUPS for n in g])
    entries, ys, y = [], [], 0.0
    group_y = []
    for title, names in ABLATION_GROUPS:
        group_y.append((y, title))
        y += 0.9
        for n in names:
            entries.append(n)
            ys.append(y)
            y += 1
        y += 0.3
    fig, ax = plt.subplots(figsize=(4.6, 7.4), layout="constrained")
    for ref, color in (("none", "C0"), ("both", "C3")):
        _, lo, hi, _, _ = _rate(rows[row_name(ref)], level)
        ax.axvspan(lo, hi, color=color, alpha=0.12, lw=0)
    for n, yy in zip(entries, ys):
        r, lo, hi, k, total = _rate(rows[row_name(n)], level)
        color = "C0" if n == "none" else "C3" if n == "both" else "k"
        ax.errorbar(r, yy, xerr=[[r - lo], [hi - r]], fmt="o", color=color, ms=5,
                    capsize=3)
        ax.text(1.05, yy, f"{k}", va="center", ha="left")
    for yy, title in group_y:
        ax.text(-0.02, yy + 0.1, title, fontstyle="italic", va="center", ha="left",
                color="0.3")
    ax.set_yticks(ys, [SHORT_LABELS[n] for n in entries])
    ax.set(xlim=(-0.03, 1.2), ylim=(y - 0.2, -0.5), xticks=[0, 0.25, 0.5, 0.75, 1],
           xticklabels=["0", "", "0.5", "", "1"],
           xlabel=f"share of 40 runs above {level:g}\n(95% CI; count at the right)")
    ax.grid(axis="y", visible=False)
    return fig


def mass_by_outcome(row: dict, level: float = SUCCESS_LEVEL) -> dict:
    """Where the copied words' attention goes, for the runs of ``row`` that succeed and for
    those that fail: class (:data:`POSITION_CLASSES`) -> {"succeeded": (evals,) mean mass,
    "failed": ...} (None for an outcome no run had), and "n": the two counts."""
    if not isinstance(row, dict) or "copy_acc" not in row:
        raise TypeError("row must be a sweep row")
    missing = [f"mass_{c}" for c in POSITION_CLASSES if f"mass_{c}" not in row]
    if missing:
        raise ValueError(f"row must be a sweep row with the attention's mass by class: it "
                         f"lacks {missing}")
    ok = np.asarray(row["copy_acc"], dtype=float)[:, -1] > check_real("level", level, 0, 1)
    out = {"n": {"succeeded": int(ok.sum()), "failed": int((~ok).sum())}}
    for c in POSITION_CLASSES:
        m = np.asarray(row[f"mass_{c}"], dtype=float)
        out[c] = {"succeeded": m[ok].mean(0) if ok.any() else None,
                  "failed": m[~ok].mean(0) if (~ok).any() else None}
    return out


def draw_mass(rows: dict, row: str = "both, L=20"):
    """Where the copied words' attention goes over training in sweep row ``row``: the mean
    mass on each class of source positions (:data:`POSITION_CLASSES`), stacked, for the
    runs that succeed (top) and those that fail (bottom)."""
    import matplotlib.pyplot as plt

    _check_rows(rows, [row])
    m = mass_by_outcome(rows[row])
    steps = rows[row]["eval_steps"]
    colors = {"right": "C2", "neighbours": "#9ed39a", "last word": "C1", "end": "#7b3294",
              "start": "C0", "other": "0.82"}
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 5.6), sharex=True, sharey=True,
                             layout="constrained")
    for ax, outcome in zip(axes, ("succeeded", "failed")):
        classes = [c for c in POSITION_CLASSES if m[c][outcome] is not None
                   and np.asarray(m[c][outcome]).max() > 0]
        if classes:
            ax.stackplot(steps, *[m[c][outcome] for c in classes],
                         colors=[colors[c] for c in classes], labels=classes)
        verb = "copy" if outcome == "succeeded" else "fail"
        ax.set(title=f"the {m['n'][outcome]} runs that {verb}", ylabel="attention mass",
               ylim=(0, 1))
    axes[-1].set_xlabel("step")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


def draw_runs(rows: dict, names: Sequence[str], live: dict | None = None,
              key: str = "copy_acc"):
    """Every stored run of each sweep row in ``names`` (one panel each, stacked): ``key``
    (default: accuracy on the copied words) over training, a thin line per seed; the
    seeds trained now (``live``: row -> History) dashed over them where they were
    evaluated at the same steps; the success level dotted."""
    import matplotlib.pyplot as plt

    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"names must be a sequence of row names; got {type(names).__name__}")
    names = list(names)
    if not names:
        raise ValueError("names must name at least one row of rows")
    _check_rows(rows, names)
    missing = [n for n in names if key not in rows[n]]
    if missing:
        raise ValueError(f"key must be a series every row of names records; {missing} "
                         f"lack {key!r}")
    live = {} if live is None else live
    if not isinstance(live, dict):
        raise TypeError(f"live must be None or a dict row -> History; got "
                        f"{type(live).__name__}")
    fig, axes = plt.subplots(len(names), 1, figsize=(4.6, 2.6 * len(names) + 0.8),
                             sharex=True, sharey=True, layout="constrained", squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        row = rows[name]
        k, n = successes(row)
        for acc in np.asarray(row[key], dtype=float):
            ok = acc[-1] > SUCCESS_LEVEL
            ax.plot(row["eval_steps"], acc, color="C0" if ok else "#c0392b", alpha=0.35,
                    lw=1, label="stored, copies" if ok else "stored, fails")
        h = live.get(name)
        if h is not None and list(h.eval_steps) == list(row["eval_steps"]):
            now = h.probes[key] if key in h.probes else h.metrics[key]
            for acc in np.asarray(now):
                ax.plot(h.eval_steps, acc, color="k", lw=1.2, ls="--",
                        label="seed 0 trained now")
        ax.axhline(SUCCESS_LEVEL, color="grey", ls=":", lw=1.2, label="success, 0.95")
        cond, length, task = SWEEP_ROWS[name]
        ax.set(title=f"{LABELS[cond]}, L = {length}" + (", control" if task == "control"
                                                       else "") + f": {k} of {n} copy",
               ylabel="copy accuracy", ylim=(0, 1.02))
    axes[-1, 0].set_xlabel("step")
    once = {}
    for ax in axes[:, 0]:
        handles, labels = ax.get_legend_handles_labels()
        for h, lab in zip(handles, labels):
            once.setdefault(lab, h)
    fig.legend(once.values(), once.keys(), loc="outside lower center", ncols=2)
    return fig


def _groups(length: int) -> list:
    """:data:`ABLATION_GROUPS` with the conditions the sweep has at ``length`` (every one at
    L = 20; the references and :data:`L40_CAUSES` at L = 40)."""
    length = check_int("length", length, 2)
    if length not in (20, 40):
        raise ValueError(f"length must be 20 or 40 (the lengths of the ablations); got "
                         f"{length}")
    groups = [(t, tuple(n for n in g if row_name(n, length) in SWEEP_ROWS))
              for t, g in ABLATION_GROUPS]
    return [(t, g) for t, g in groups if g]


def ablation_tests(rows: dict, level: float = SUCCESS_LEVEL, length: int = 20) -> list[dict]:
    """Every ablation at ``length`` (20, or 40: the conditions of :data:`L40_CAUSES`)
    against its two references -- no end token and the end token on both sides (for the
    varying lengths, the varying lengths without and with it) -- as :func:`compare` does
    (paired where the rows share initialisations), one family: each test's ``p_holm`` is
    Holm-corrected over all of them. Each entry: ``group``, ``row``, ``ref`` and
    :func:`compare`'s result."""
    groups = _groups(length)
    _check_rows(rows, [row_name(n, length) for _, g in groups for n in g])
    out = []
    for title, names in groups:
        refs = ("varying, none", "varying") if title == "lengths that vary" else \
            ("none", "both")
        for n in names:
            for ref in refs:
                if n not in refs or (n, ref) == refs[::-1]:    # the references once
                    out.append({"group": title, "row": n, "ref": ref,
                                **compare(rows, row_name(n, length), row_name(ref, length),
                                          level)})
    for entry, p in zip(out, holm([e["p"] for e in out])):
        entry["p_holm"] = float(p)
    return out


def ablation_table(rows: dict, level: float = SUCCESS_LEVEL, length: int = 20) -> str:
    """The ablations at ``length`` as text (:func:`ablation_tests`): each condition's successes
    of 40 (above ``level``) and, against each reference, the difference of the rates with
    its 95 % interval (written without the leading 0: +.30 is +0.30) and the
    Holm-corrected p (``*``: paired, McNemar's test and
    Newcombe's paired interval; otherwise Fisher's test and the unpaired interval)."""
    tests = ablation_tests(rows, level, length)
    lines = [f"{'':17s}{'copy':>5s} {'vs no end token':^25s} {'vs both sides':^25s}",
             f"{'':17s}{'':5s} {'difference':^16s}{'p':>8s}  {'difference':^16s}{'p':>8s}"]
    for title, names in _groups(length):
        lines.append(f"{title}:")
        refs = ("varying, none", "varying") if title == "lengths that vary" else \
            ("none", "both")
        for n in names:
            k, total = successes(rows[row_name(n, length)], level)
            cells = []
            for ref in refs:
                t = next((t for t in tests if t["row"] == n and t["ref"] == ref), None)
                if t is None:
                    cells.append(" " * 25)
                    continue
                lo, hi = t["d_ci"]
                star = "*" if t["paired"] else " "
                d, lo, hi = (f"{x:+.2f}".replace("0.", ".") for x in (t["d"], lo, hi))
                cells.append(f"{d} [{lo},{hi}] {t['p_holm']:7.2g}{star}")
            lines.append(f"  {SHORT_LABELS[n]:15s}{k:>2d}/{total:<2d} " + " ".join(cells))
    lines.append(f"p: Holm-corrected over the {len(tests)} tests; * paired (McNemar)")
    return "\n".join(line.rstrip() for line in lines)


#: The comparisons :func:`draw_seeds` tests on the first seeds: (label, row a, row b).
#: (Not the masked row: Exercise 7.1 comes before §2's box on masking, and its slider would
#: show the masked row's p following the both-sides row's at every n.)
SEED_COMPARISONS = (
    ("none vs both", "none, L=20", "both, L=20"),
    ("source vs target", "source, L=20", "target, L=20"),
    ("L = 10: none vs both", "none, L=10", "both, L=10"),
    ("no end loss vs both", "no end loss, L=20", "both, L=20"),
    ("varying: none vs end", "varying, none, L=20", "varying, L=20"),
)


def first_seeds_p(rows: dict, n: int, p_fn=fisher_exact) -> dict:
    """Each of :data:`SEED_COMPARISONS` on the first ``n`` seeds of its two rows only:
    label -> its two-sided p. Rows that :func:`shares_initialisation` are paired run by
    run: McNemar's exact test on their first ``n`` seeds; the others get
    ``p_fn(k_a, n, k_b, n)`` (default Fisher's exact test)."""
    n = check_int("n", n, 1, len(SEEDS))
    if not callable(p_fn):
        raise TypeError(f"p_fn must be callable (k1, n1, k2, n2) -> p; got "
                        f"{type(p_fn).__name__}")
    _check_rows(rows, [r for _, a, b in SEED_COMPARISONS for r in (a, b)])
    runs = min(len(rows[r]["copy_acc"]) for _, a, b in SEED_COMPARISONS for r in (a, b))
    if n > runs:
        raise ValueError(f"n must be at most the {runs} runs the compared rows hold; got {n}")
    out = {}
    for label, a, b in SEED_COMPARISONS:
        ok = [np.asarray(rows[r]["copy_acc"], dtype=float)[:n, -1] > SUCCESS_LEVEL
              for r in (a, b)]
        if shares_initialisation(a, b):
            out[label] = float(mcnemar(*ok)["p"])
        else:
            out[label] = float(p_fn(int(ok[0].sum()), n, int(ok[1].sum()), n))
    return out


def draw_seeds(rows: dict, n: int, p_fn=fisher_exact):
    """The p of each of :data:`SEED_COMPARISONS` had the chapter trained only the first
    ``n`` seeds of every condition (:func:`first_seeds_p`: paired where the rows share
    initialisations, hatched), as bars on a log scale against the 0.05 and 0.001
    levels."""
    import matplotlib.pyplot as plt

    ps = first_seeds_p(rows, n, p_fn)
    fig, ax = plt.subplots(figsize=(4.6, 3.4), layout="constrained")
    labels = list(ps)
    y = np.arange(len(labels))
    vals = np.clip([ps[k] for k in labels], 1e-12, 1)
    paired = [shares_initialisation(a, b) for _, a, b in SEED_COMPARISONS]
    ax.barh(y, -np.log10(vals), color=["C0" if p <= 0.05 else "0.7" for p in vals],
            hatch=["//" if pr else "" for pr in paired], edgecolor="white")
    for level, style in ((0.05, "--"), (0.001, ":")):
        ax.axvline(-np.log10(level), color="k", ls=style, lw=1, label=f"p = {level:g}")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set(xlim=(0, 10), xlabel="−log₁₀ p (hatched: paired, McNemar)",
           title=f"the first {n} seeds of each condition")
    fig.legend(loc="outside lower center", ncols=2)
    ax.grid(axis="y", visible=False)
    return fig


def _row_names(rows: dict, order: Sequence[str]) -> list[str]:
    """The row names of ``rows`` (not its "_about" note), those of ``order`` first in its
    order, any others after them by name."""
    return sorted((n for n in rows if not n.startswith("_")),
                  key=lambda n: (order.index(n) if n in order else len(order), n))


def push_prediction(pushes: dict, rows: dict, level: float = SUCCESS_LEVEL) -> dict:
    """For every row of ``pushes`` (:func:`load_push`): its successes in the sweep ``rows``
    (:func:`successes`), and the AUC and p-value (:func:`~attn_core.metrics.outcome_auc`)
    of the step-0 push as a predictor of which runs succeed; rows whose runs all succeed
    or all fail get ``auc`` and ``p`` None."""
    if not isinstance(pushes, dict) or not pushes:
        raise TypeError("pushes must be the stored push rows (load_push)")
    names = _row_names(pushes, PUSH_ROWS)
    if not names:
        raise TypeError("pushes must be the stored push rows (load_push): it holds none")
    _check_rows(rows, names)
    level = check_real("level", level, 0.0, 1.0)
    lacking = [n for n in names if not isinstance(pushes[n], dict)
               or "push_diag_copy" not in pushes[n]]
    if lacking:
        raise ValueError(f"pushes must be push rows with 'push_diag_copy' (push_row); "
                         f"{lacking} lack it")
    out = {}
    for name in names:
        row = pushes[name]
        ok = np.asarray(rows[name]["copy_acc"], dtype=float)[:, -1] > level
        k, n = int(ok.sum()), int(ok.size)
        a = p = None
        if 0 < k < n:
            a, p = outcome_auc(row["push_diag_copy"], ok)
        out[name] = {"k": k, "n": n, "auc": a, "p": p}
    return out


#: The largest relative difference allowed between a step-0 push computed now and its
#: stored value (of the row's largest |push|): 250 times the largest difference measured
#: over the CPU capabilities default and avx2 at one and two threads (benchmarks/README.md);
#: another seed's model differs by order 1.
PUSH_TOLERANCE = 1e-4


def check_push(pushes: dict, row: str = "both, L=20", seed: int = 0) -> float:
    """Compute the step-0 push of seed ``seed`` of ``row`` now (:func:`push_config`) and
    return its difference from the stored one (``pushes``, :func:`load_push`) relative to
    the row's largest |push|; the claim is that it is at most :data:`PUSH_TOLERANCE`."""
    row = check_choice("row", row, PUSH_ROWS)
    if not isinstance(pushes, dict) or row not in pushes:
        raise TypeError(f"pushes must be the stored push rows (load_push) with row {row!r}")
    seeds = list(pushes[row]["seeds"])
    seed = check_int("seed", seed, 0)
    if seed not in seeds:
        raise ValueError(f"seed must be one of the row's seeds {seeds[0]}-{seeds[-1]}; got "
                         f"{seed}")
    stored = np.asarray(pushes[row]["push_diag_copy"], dtype=float)
    h = push_config(row, seeds=(seed,)).run(progress=False)
    now = float(np.asarray(h.probes["push_diag_copy"])[0, 0])
    return abs(now - stored[seeds.index(seed)]) / float(np.abs(stored).max())


def draw_push(pushes: dict, rows: dict, level: float = SUCCESS_LEVEL):
    """Every condition of ``pushes`` (:func:`load_push`): each run's step-0 push (divided
    by the condition's standard deviation, sign kept), green where the run copies (the
    sweep ``rows``, copy accuracy above ``level`` at step 300), grey where it fails, with
    the AUC of :func:`push_prediction` at the right."""
    import matplotlib.pyplot as plt

    pred = push_prediction(pushes, rows, level)
    names = list(pred)
    fig, ax = plt.subplots(figsize=(4.6, 4.6), layout="constrained")
    jitter = np.random.default_rng(0)
    for y, name in enumerate(names):
        x = np.asarray(pushes[name]["push_diag_copy"], dtype=float)
        x = x / x.std()     # the conditions' spreads differ (varying lengths: 2-6 times)
        ok = np.asarray(rows[name]["copy_acc"], dtype=float)[:, -1] > level
        dy = jitter.uniform(-0.22, 0.22, x.size)
        ax.scatter(x[~ok], y + dy[~ok], s=12, color="0.6", label="fails" if y == 0 else None)
        ax.scatter(x[ok], y + dy[ok], s=12, color="C2", label="copies" if y == 0 else None)
        r = pred[name]
        text = "—" if r["auc"] is None else f"{r['auc']:.2f}"
        ax.text(1.02, y, text, transform=ax.get_yaxis_transform(), va="center")
    ax.text(1.02, -0.9, "AUC", transform=ax.get_yaxis_transform(), va="center",
            fontstyle="italic")
    ax.axvline(0, color="k", lw=0.8)
    labels = [name.split(",")[0] for name in names]
    ax.set_yticks(range(len(names)), ["varying lengths" if n == "varying" else
                                      SHORT_LABELS.get(n, n) for n in labels])
    ax.set(ylim=(len(names) - 0.5, -1.3),
           xlabel="step-0 push on the diagonal margin\n(÷ its condition's standard deviation)")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    return fig


#: The held-out test's threshold, fixed before seeds 40-79 were trained: the mean AUC over
#: the six conditions at least this (seeds 0-39 gave 0.81; no information gives 0.5). The
#: six share their seeds and their pushes correlate, so the mean's null spread is about
#: 0.065 (seed labels shuffled jointly), not the 0.045 of six independent conditions.
HELD_OUT_MIN_AUC = 0.6


def held_out_auc(rows: dict, level: float = SUCCESS_LEVEL, step: str = "last",
                 shuffles: int = 20000, seed: int = 0, null: str = "joint") -> dict:
    """The push's prediction on the held-out ``rows`` (:func:`load_held_out`), each run
    counted a success when its copy accuracy at ``step`` ("last", or "first": step 0, the
    untrained model) is above ``level``: each condition's successes and AUC
    (:func:`~attn_core.metrics.outcome_auc`), their mean -- a condition where every run
    copies or none does counts 0.5 there, since the push can sort nothing -- and the
    one-sided permutation p of that mean (``shuffles`` reassignments of the outcomes,
    seeded by ``seed``: (1 + the shuffles at least as large) / (1 + ``shuffles``)), with
    the null's standard deviation ``null_sd``. ``null="joint"``: each reassignment shuffles
    the seeds' labels once, for every condition alike (the conditions share their seeds,
    and their pushes correlate); ``"within"``: each condition on its own, which treats the
    six as independent and makes the null too narrow."""
    names = _row_names(rows, HELD_OUT_ROWS) if isinstance(rows, dict) else []
    if not names:
        raise TypeError("rows must be the stored held-out rows (load_held_out)")
    level = check_real("level", level, 0.0, 1.0)
    j = {"first": 0, "last": -1}[check_choice("step", step, ("first", "last"))]
    shuffles = check_int("shuffles", shuffles, 1, 10 ** 7)   # (shuffles, runs) draws in memory
    null = check_choice("null", null, ("joint", "within"))
    rng = np.random.default_rng(check_int("seed", seed, 0))
    out, aucs, nulls, perm = {}, [], [], None
    for name in names:
        row = rows[name]
        try:
            ok = np.asarray(row["copy_acc"], dtype=float)[:, j] > level
            score = np.asarray(row["push_diag_copy"], dtype=float)
            if score.shape != ok.shape or not np.isfinite(score).all():
                raise ValueError(f"push_diag_copy has shape {score.shape}, copy_acc "
                                 f"{ok.shape} runs (finite numbers needed)")
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ValueError(f"rows must be held-out rows (copy_acc (runs, 2) and "
                             f"push_diag_copy (runs,)); row {name!r}: {e}") from None
        if null == "joint":
            if perm is None:
                seeds = row.get("seeds")
                perm = np.argsort(rng.random((shuffles, ok.size)), axis=1)
            elif row.get("seeds") != seeds:
                raise ValueError("rows must share their seeds for a joint null; "
                                 f"{name!r} holds other seeds than {names[0]!r}")
        k, n = int(ok.sum()), int(ok.size)
        if 0 < k < n:
            a, z = auc_null(score, ok, shuffles, rng, f"rows[{name!r}]['push_diag_copy']",
                            permutations=perm)
            nulls.append(z)
        else:
            a = None
            nulls.append(np.full(shuffles, 0.5))
        aucs.append(0.5 if a is None else a)
        out[name] = {"k": k, "n": n, "auc": a}
    mean = float(np.mean(aucs))
    means = np.mean(nulls, axis=0)
    p = float((1 + (means >= mean - 1e-12).sum()) / (1 + shuffles))
    return {"rows": out, "mean_auc": mean, "p": p, "null_sd": float(means.std())}


# ---------------------------------------------------------- delay or failure (the long runs)
#: The two levels a run's time is measured to: the chapter's success level and a lower one
#: (at L = 10 the runs with the end token end between 0.82 and 0.95).
DELAY_LEVELS = (0.9, SUCCESS_LEVEL)
#: The paired comparisons of the long runs (a, b: rows on the same seeds, initialisations
#: and data), one family: chapter 4's permutations against the control, then the end
#: token's cost and what removes it.
DELAY_PAIRS = (("both, L=20, control", "both, L=20"), ("none, L=20", "both, L=20"),
               ("source, L=20", "target, L=20"), ("masked, L=20", "both, L=20"),
               ("no end loss, L=20", "both, L=20"), ("none, L=10", "both, L=10"))


def times_to_level(row: dict, level: float = SUCCESS_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Each run's first evaluation step with copy accuracy above ``level`` in a stored row,
    and whether it got there (False: censored at the row's last step):
    :func:`attn_core.stats.time_to_level`."""
    if not isinstance(row, dict) or "copy_acc" not in row or "eval_steps" not in row:
        raise TypeError("row must be a stored row (a dict with eval_steps and 'copy_acc')")
    return time_to_level(row["eval_steps"], row["copy_acc"], check_real("level", level,
                                                                        0.0, 1.0))


def delay_table(rows: dict, pairs=DELAY_PAIRS, levels=DELAY_LEVELS, short: int = 300) -> list:
    """For each pair (a, b) of long rows (:func:`load_long`) and each level: how many runs
    of each are above it at step ``short`` (the sweep's budget) and got there by the last
    step, the fraction that never did (Kaplan-Meier), the median time of those that did,
    and a test of which reaches it sooner: the paired order test
    (:func:`attn_core.stats.paired_order`) where the rows share initialisations
    (:func:`shares_initialisation`), the log-rank test otherwise; ``p_holm`` is
    Holm-corrected over the whole family (every pair at every level)."""
    pairs = [tuple(p) for p in pairs]
    _check_rows(rows, [n for p in pairs for n in p], "long")
    levels = [check_real("level", v, 0.0, 1.0) for v in levels]
    short = check_int("short", short, 1)
    out = []
    for a, b in pairs:
        for level in levels:
            entry = {"a": a, "b": b, "level": level}
            times = {}
            for side, name in (("a", a), ("b", b)):
                t, r = times_to_level(rows[name], level)
                times[side] = (t, r)
                entry[side + "_by_short"] = int((r & (t <= short)).sum())
                entry[side + "_by_end"] = int(r.sum())
                entry[side + "_never"] = float(kaplan_meier(t, r)[1][-1])
                entry[side + "_median"] = float(np.median(t[r])) if r.any() else None
            entry["runs"] = int(times["a"][0].size)
            if a in SWEEP_ROWS and b in SWEEP_ROWS and shares_initialisation(a, b):
                entry.update(paired_order(*times["a"], *times["b"]), test="paired order")
            else:
                entry.update(p=logrank(*times["a"], *times["b"]), test="log-rank")
            out.append(entry)
    for entry, p in zip(out, holm([e["p"] for e in out])):
        entry["p_holm"] = float(p)
    return out


#: The pairs of :data:`DELAY_PAIRS` that chapter 7 §1 reads (the end token, on the control
#: task and at L = 10 too); §2 reads the others, its ablations. One family either way.
DELAY_FIRST = (DELAY_PAIRS[0], DELAY_PAIRS[1], DELAY_PAIRS[5])


def delay_text(rows: dict, show=DELAY_PAIRS) -> str:
    """:func:`delay_table` of ``rows`` (the long rows, :func:`load_long`) as text, one line
    for each pair of ``show`` (pairs of :data:`DELAY_PAIRS`) at each level: the first row,
    the second's condition, the level, the runs of each above it by step 300 and by the
    last step, the median step at which those that got there did ("-": none did), the test
    and its p, Holm-corrected over the whole family of :data:`DELAY_PAIRS` whichever pairs
    are shown."""
    if isinstance(show, str) or not isinstance(show, (list, tuple)) or not show:
        raise TypeError("show must be a non-empty list of pairs of DELAY_PAIRS")
    show = [tuple(p) if isinstance(p, (list, tuple)) else p for p in show]
    for p in show:
        if p not in DELAY_PAIRS:
            raise ValueError(f"show must hold pairs of DELAY_PAIRS {list(DELAY_PAIRS)}; "
                             f"got {p!r}")
    lines = [f"{'a':20s}{'b':7s}level by 300 by 2000  median   test     p Holm"]
    for d in delay_table(rows):
        if (d["a"], d["b"]) not in show:
            continue
        a, b = (SWEEP_ROWS[d[k]] for k in ("a", "b"))
        label = f"{a[0]}{', control' if a[2] == 'control' else ''}, L={a[1]}"
        by = [d[f"{s}_by_{t}"] for t in ("short", "end") for s in "ab"]
        med = ["  - " if d[s + "_median"] is None else f"{d[s + '_median']:4.0f}"
               for s in "ab"]
        test = "paired" if d["test"] == "paired order" else d["test"]
        lines.append(f"{label:20s}{b[0]:7s}{d['level']:4.2f}  {by[0]:2d} {by[1]:2d}  "
                     f"{by[2]:2d} {by[3]:2d}  {med[0]} {med[1]}  {test:8s} "
                     f"{d['p_holm']:.2g}")
    return "\n".join(lines)


def _km_curve(ax, row: dict, level: float, **style) -> None:
    """Draw on ``ax`` the Kaplan-Meier curve of stored row ``row``'s times to ``level``,
    held flat to its last evaluation (``style``: the line's colour, style and label)."""
    t, s = kaplan_meier(*times_to_level(row, level))
    end = float(row["eval_steps"][-1])
    ax.step(np.append(t, end), np.append(s, s[-1]), where="post", lw=1.6, **style)


def draw_survival(rows: dict, names=None, level: float = SUCCESS_LEVEL, short: int = 300,
                  labels: dict | None = None):
    """The fraction of runs still at or below ``level`` (copy accuracy) after each step,
    Kaplan-Meier, for each long row of ``names`` (default: every row of ``rows`` at
    L = 20), with the sweep's budget ``short`` marked: a curve that keeps falling after it
    is a delay; one that flattens above 0 is runs that stall, as far as the budget shows.
    ``labels``: row name -> its legend entry (default: the condition's short name). Each
    row keeps its colour from figure to figure (its place in :data:`LONG_ROWS`)."""
    import matplotlib.pyplot as plt

    if names is None:
        names = [n for n in LONG_ROWS if "L=20" in n]
    if isinstance(names, str) or not names:
        raise TypeError("names must be a non-empty list of long rows")
    _check_rows(rows, names, "long")
    level = check_real("level", level, 0.0, 1.0)
    labels = {} if labels is None else labels
    if not isinstance(labels, dict):
        raise TypeError(f"labels must be a dict (row name -> legend entry); got "
                        f"{type(labels).__name__}")
    fig, ax = plt.subplots(figsize=(4.6, 4.8), layout="constrained")
    for name in names:
        cond, _, task = SWEEP_ROWS[name]
        label = labels.get(name, SHORT_LABELS[cond] + (", control" if task == "control"
                                                        else ""))
        _km_curve(ax, rows[name], level, color=f"C{LONG_ROWS.index(name)}", label=label,
                  ls=":" if task == "control" else "-")
    ax.axvline(short, color="0.4", lw=0.8, ls="--")
    ax.text(short, 1.02, f" step {short}", color="0.4", va="bottom")
    ax.set(xlabel="training step", ylim=(-0.02, 1.08),
           ylabel=f"runs not yet above {level:g}")
    fig.legend(loc="outside lower center", ncols=2)
    return fig


def adam_push_table(adam_rows: dict, rows: dict, held: dict,
                    level: float = SUCCESS_LEVEL) -> str:
    """The step-0 push of a plain gradient step against that of Adam's actual first step
    (:func:`load_adam_push`) as predictors of which runs copy: each condition's AUC with
    either (seeds 0-39: the sweep ``rows``; 40-79: the held-out rows ``held``) and the two
    pushes' correlation, then the held-out test's mean AUC with either
    (:func:`held_out_auc`, the joint null)."""
    names = [n for n in ADAM_PUSH_ROWS if n in adam_rows] if isinstance(adam_rows, dict) \
        else []
    if names != list(ADAM_PUSH_ROWS):
        raise TypeError("adam_rows must be the stored pushes of Adam's first step "
                        "(load_adam_push)")
    level = check_real("level", level, 0.0, 1.0)
    lines = [f"{'condition':34s} {'copy':>5s} {'AUC gradient':>12s} {'AUC Adam':>9s} "
             f"{'corr':>5s}"]
    for name in names:
        fresh = name.endswith(", seeds 40-79")
        base = name.removesuffix(", seeds 40-79")
        source = held[base] if fresh else rows[base]
        ok = np.asarray(source["copy_acc"], dtype=float)[:, -1] > level
        r = adam_rows[name]
        k = int(ok.sum())
        aucs = ["-", "-"]
        if 0 < k < ok.size:
            aucs = [f"{outcome_auc(r[key], ok, shuffles=1)[0]:.2f}"
                    for key in ("push_diag_copy", "push_adam_diag")]
        corr = np.corrcoef(r["push_diag_copy"], r["push_adam_diag"])[0, 1]
        lines.append(f"{name:34s} {k:2d}/{ok.size:<2d} {aucs[0]:>12s} {aucs[1]:>9s} "
                     f"{corr:5.2f}")
    test = {}
    for key in ("push_diag_copy", "push_adam_diag"):
        swapped = {n: {**held[n], "push_diag_copy": adam_rows[f"{n}, seeds 40-79"][key]}
                   for n in HELD_OUT_ROWS}
        test[key] = held_out_auc(swapped)
    g, a = test["push_diag_copy"], test["push_adam_diag"]
    lines.append(f"seeds 40-79: mean AUC {g['mean_auc']:.2f} (p {g['p']:.2g}), Adam "
                 f"{a['mean_auc']:.2f} (p {a['p']:.2g}); joint null")
    return "\n".join(lines)


# ------------------------------------------------------------ counting or competition?
#: The cause runs' comparisons (:func:`cause_table`): pairs (a, b) of the rows of
#: :func:`cause_rows`, each answering one question of the chapter's "Counting or
#: competition?".
CAUSE_PAIRS = (
    ("none, padded", "both, L=20"),          # the end token's cost, the same parameters
    ("none, padded", "none, L=20"),          # the padded vocabulary against the plain one
    ("masked, words only", "both, L=20"),    # masking that keeps the end step's target
    ("none, step index", "step index"),      # the end token's cost with the count given
    ("step index", "both, L=20"),            # the count given, with the end token
    ("front word", "none, padded"),          # a predicted word that needs no count
    ("end weight 0.1", "both, L=20"),
    ("end weight 0.3", "both, L=20"),
    ("end weight 3", "both, L=20"),
)

#: The optimiser's comparison, its own family: the end token's cost under plain SGD at the
#: tuned rate, each seed's parameters the same.
SGD_PAIRS = (("SGD, none, padded", "SGD, both"),)
#: The test §7 names for the reading that fits §6, its own family: the end step marked
#: (told apart from the copied steps, no new place to attend) against the end token
#: unmarked and against no end token, each seed's other parameters the same.
MARK_PAIRS = (("end step marked", "both, L=20"), ("none, padded", "end step marked"))


def upto(row: dict, step: int) -> dict:
    """Stored row ``row`` with only its evaluations at steps up to ``step`` (every key of
    shape (runs, evaluations) cut): the first ``step`` steps of a longer run, which are
    the run of ``step`` steps (the engine's training stream does not depend on the
    budget; a test checks it on the stored rows)."""
    if not isinstance(row, dict) or "eval_steps" not in row:
        raise TypeError("row must be a stored row (a dict with eval_steps)")
    steps = np.asarray(row["eval_steps"])
    step = check_int("step", step, int(steps[0]))
    keep = int((steps <= step).sum())
    out = dict(row)
    out["eval_steps"] = [int(s) for s in steps[:keep]]
    for key, value in row.items():
        a = np.asarray(value) if isinstance(value, list) else None
        if a is not None and a.ndim == 2 and a.shape[1] == steps.size:
            out[key] = a[:, :keep].tolist()
    return out


def cause_rows(causes: dict, long: dict, steps: int = CAUSE_STEPS) -> dict:
    """The cause rows (:func:`load_causes`) and the long runs' rows at L = 20
    (:func:`load_long`) cut to their first ``steps`` steps (:func:`upto`): one dict of rows
    with one budget, for :func:`cause_table` and :func:`draw_causes`."""
    _check_rows(causes, list(CAUSE_ROWS), "cause")
    names = [n for n in LONG_ROWS if n.endswith("L=20")]
    _check_rows(long, names, "long")
    out = {n: upto(long[n], steps) for n in names}
    out.update({n: causes[n] for n in CAUSE_ROWS})
    return out


def _config_of(name: str):
    return cause_config(name) if name in CAUSE_ROWS else long_config(name)


def shares_start(a: str, b: str) -> bool:
    """Whether rows ``a`` and ``b`` of :func:`cause_rows` start each run from the same
    parameters and data: the same seeds, the same data seeds and the same model
    vocabulary (a step index adds its own vectors, drawn apart, and leaves every other
    parameter as it was). Such rows are compared paired."""
    for name, label in ((a, "a"), (b, "b")):
        check_choice(label, name, (*CAUSE_ROWS, *LONG_ROWS))
    return _same_start(_config_of(a), _config_of(b))


def cause_table(rows: dict, pairs=CAUSE_PAIRS, level: float = SUCCESS_LEVEL,
                short: int = 300) -> list:
    """For each pair (a, b) of :func:`cause_rows`: the runs of each above ``level`` by step
    ``short`` and by the last step, the median time to the level (of the runs that got
    there), and two tests, each Holm-corrected over the whole family (``p_holm``, every
    pair's two tests): at step ``short``, McNemar's test and the paired difference where the
    rows :func:`shares_start` (else Fisher's and Newcombe's); of the times, the paired
    order test (else the log-rank test)."""
    pairs = [tuple(p) for p in pairs]
    _check_rows(rows, [n for p in pairs for n in p], "cause")
    level = check_real("level", level, 0.0, 1.0)
    short = check_int("short", short, 1)
    out, ps = [], []
    for a, b in pairs:
        paired = shares_start(a, b)
        entry = {"a": a, "b": b, "paired": paired}
        times = {}
        at_short = {n: upto(rows[n], short) for n in (a, b)}
        for side, name in (("a", a), ("b", b)):
            t, r = times_to_level(rows[name], level)
            times[side] = (t, r)
            entry[side + "_short"] = successes(at_short[name], level)[0]
            entry[side + "_end"] = int(r.sum())
            entry[side + "_median"] = float(np.median(t[r])) if r.any() else None
        entry["runs"] = int(times["a"][0].size)
        c = compare(at_short, a, b, level, paired=paired)
        entry.update(d=c["d"], d_ci=c["d_ci"], p_short=c["p"], test_short=c["test"])
        if paired:
            o = paired_order(*times["a"], *times["b"])
            entry.update(a_first=o["a_first"], b_first=o["b_first"], p_time=o["p"],
                         test_time="paired order")
        else:
            entry.update(p_time=logrank(*times["a"], *times["b"]), test_time="log-rank")
        out.append(entry)
        ps += [entry["p_short"], entry["p_time"]]
    adjusted = holm(ps)
    for i, entry in enumerate(out):
        entry["p_short_holm"], entry["p_time_holm"] = adjusted[2 * i], adjusted[2 * i + 1]
    return out


def format_cause_table(table: list) -> str:
    """:func:`cause_table` as text (≤ 76 characters a line): each pair's counts by step 300
    and by the end, the difference at step 300 with its interval, and the two
    Holm-corrected p-values."""
    keys = {"a", "b", "a_short", "b_short", "a_end", "b_end", "d", "d_ci", "p_short_holm",
            "p_time_holm"}
    if not isinstance(table, list) or not all(isinstance(e, dict) and keys <= set(e)
                                              for e in table):
        raise TypeError("table must be what cause_table returns (a list of its entries)")
    lines = [f"{'a':18s} {'vs b':15s} {'300':>5s} {'end':>5s} {'d at 300':>17s} "
             f"{'p300':>5s} {'ptime':>5s}"]
    for e in table:
        d, (lo, hi) = e["d"], e["d_ci"]
        diff = f"{_signed(d)} [{_signed(lo)},{_signed(hi)}]"
        b = e["b"].removesuffix(", L=20")
        lines.append(f"{e['a']:18s} {b:15s} {e['a_short']:>2d}:{e['b_short']:<2d} "
                     f"{e['a_end']:>2d}:{e['b_end']:<2d} {diff:>17s} "
                     f"{_p(e['p_short_holm']):>5s} {_p(e['p_time_holm']):>5s}")
    return "\n".join(lines)


def _signed(x: float) -> str:
    """``x`` in [-1, 1] in four characters: "+.38", "-.05", "+1.0"."""
    return f"{x:+.1f}" if abs(x) >= 0.995 else f"{x:+.2f}".replace("0.", ".")


def _p(p: float) -> str:
    return f"{p:.2f}" if p >= 0.01 else f"{p:.0e}".replace("e-0", "e-")


#: The four rows whose runs share each seed's start (every parameter but the step
#: vectors, and the data): the end token's cost without the step index and with it.
COUNTING_ROWS = (("none, padded", "both, L=20"), ("none, step index", "step index"))


def counting_test(rows: dict, level: float = SUCCESS_LEVEL, short: int = 300,
                  resamples: int = 10_000, seed: int = 0) -> dict:
    """The test written before the runs between counting and competition: the end token's
    cost by step ``short`` without the step index (``cost_plain``: the successes of
    "none, padded" minus "both", a fraction of the runs) and with it (``cost_index``:
    "none, step index" minus "step index"), their difference ``did`` = cost_plain -
    cost_index with a 95 % bootstrap interval over the seeds (each seed's four runs share
    its start; ``resamples`` resamples drawn from ``seed``), and ``ratio`` = cost_index /
    cost_plain. Counting predicted ratio < 1/2, competition >= 1/2."""
    names = [n for p in COUNTING_ROWS for n in p]
    _check_rows(rows, names, "cause")
    level = check_real("level", level, 0.0, 1.0)
    short = check_int("short", short, 1)
    resamples = check_int("resamples", resamples, 100)
    seed = check_int("seed", seed, 0)
    ok = {n: row_successes(upto(rows[n], short), level).astype(float) for n in names}
    plain = ok["none, padded"] - ok["both, L=20"]
    index = ok["none, step index"] - ok["step index"]
    d = plain - index
    g = np.random.default_rng(seed)
    idx = g.integers(0, d.size, (resamples, d.size))
    boot = d[idx].mean(1)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    cost_plain, cost_index = float(plain.mean()), float(index.mean())
    return {"cost_plain": cost_plain, "cost_index": cost_index, "did": float(d.mean()),
            "did_ci": (float(lo), float(hi)),
            "ratio": cost_index / cost_plain if cost_plain else float("nan"),
            "runs": int(d.size)}


def init_or_data(rows: dict, level: float = SUCCESS_LEVEL, permutations: int = 10_000,
                 seed: int = 0) -> dict:
    """Does a seed's initialisation or its data decide its run? The Spearman correlation of
    each run's time to ``level`` (a censored run counted as later than every run that got
    there) between "both" and "other data" (the same initialisations, other data) and
    between "both" and "other init" (the same data, other initialisations), each with a
    one-sided permutation p (``permutations`` shuffles drawn from ``seed``)."""
    _check_rows(rows, ["both, L=20", "other data", "other init"], "cause")
    level = check_real("level", level, 0.0, 1.0)
    permutations = check_int("permutations", permutations, 100)
    g = np.random.default_rng(check_int("seed", seed, 0))

    def later(name):      # a censored run: one evaluation after the row's last
        t, r = times_to_level(rows[name], level)
        return np.where(r, t, rows[name]["eval_steps"][-1] + 1)

    ref = later("both, L=20")
    out = {}
    for name, key in (("other data", "same_init"), ("other init", "same_data")):
        x = later(name)
        rho = rank_correlation(ref, x)
        null = np.array([rank_correlation(ref, g.permutation(x))
                         for _ in range(permutations)])
        out[key] = {"rho": rho, "p": float((1 + (null >= rho).sum()) / (1 + permutations))}
    return out


def draw_causes(rows: dict, level: float = SUCCESS_LEVEL, short: int = 300):
    """Kaplan-Meier curves of the cause runs (:func:`cause_rows`): the runs not yet above
    ``level`` after each step, in two panels: the end token with the same parameters and
    with the count given (top); the end step's loss weighted (bottom)."""
    import matplotlib.pyplot as plt

    panels = (("end token, step index, front word", (
                  ("none, padded", "C0", "-", "no end token"),
                  ("both, L=20", "C3", "-", "end token"),
                  ("none, step index", "C0", ":", "none + index"),
                  ("step index", "C3", ":", "end + index"),
                  ("front word", "C2", "--", "front word"))),
              ("the end step's loss weighted", (
                  ("none, padded", "C0", "-", "none"),
                  ("end weight 0.1", "C1", "-", "0.1"),
                  ("end weight 0.3", "C4", "-", "0.3"),
                  ("both, L=20", "C3", "-", "1"),
                  ("end weight 3", "0.2", "-", "3"))))
    _check_rows(rows, [n for _, p in panels for n, *_ in p], "cause")
    level = check_real("level", level, 0.0, 1.0)
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 7.6), layout="constrained", sharex=True)
    for ax, (title, curves) in zip(axes, panels):
        for name, color, ls, label in curves:
            _km_curve(ax, rows[name], level, color=color, ls=ls, label=label)
        ax.axvline(short, color="0.4", lw=0.8, ls="--")
        ax.set(title=title, ylim=(-0.02, 1.05), ylabel=f"runs not yet above {level:g}")
        ax.legend(loc="upper right", handlelength=1.6, borderaxespad=0.2)
    axes[1].set_xlabel("training step")
    return fig
