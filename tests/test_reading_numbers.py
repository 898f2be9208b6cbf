"""Reading the numbers (book/reading_numbers.md; the book does not execute it): every number its
examples print is recomputed here from the stored rows it names, with the function it names,
and must stand on the page as printed. The page names its rows only by letters (#55: its
rows are chapter 7's, whose questions come after it), so the test also checks that no
condition's name is on the page."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from attn_core import stats
from attn_core.chapters import ch7_end_token as ch7
from attn_core.metrics import (fisher_exact, newcombe_interval, outcome_auc, row_successes,
                               wilson_interval)

PAGE = Path(__file__).resolve().parents[1] / "book" / "reading_numbers.md"


@pytest.fixture(scope="module")
def page() -> str:
    return re.sub(r"\s+", " ", PAGE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows() -> dict:
    return ch7.reading_rows()


def _on(page: str, text: str) -> None:
    assert re.sub(r"\s+", " ", text) in page, f"the page should say {text!r}"


def _last(row: dict) -> np.ndarray:
    return np.asarray(row["copy_acc"], dtype=float).reshape(len(row["seeds"]), -1)[:, -1]


def _signed(x: float) -> str:
    return f"{x:+.3f}".replace("-", "−")


def test_the_page_names_its_rows_by_letter_only(page):
    """No chapter 7 condition's name (nor its row key) on the page: it would answer that
    chapter's boxes before they are asked."""
    for name in ch7.READING_ROWS.values():
        assert name not in page, f"{name!r} is on the page"
    for word in ("varying", "source only", "target only", "end token"):
        assert word not in page.lower(), f"{word!r} is on the page"
    paired = {k: ch7.shares_initialisation(*(ch7.READING_ROWS[x] for x in k))
              for k in ("AB", "CD")}
    assert paired == {"AB": False, "CD": True}, paired


def test_seeds_and_threshold_examples(page, rows):
    ok = row_successes(rows["A"], 0.95)
    _on(page, f"int(ok.sum()), ok.size # ({int(ok.sum())}, {ok.size})")
    last = _last(rows["A"])
    _on(page, f"between {last.min():.3f} and {last.max():.3f} accuracy on the copied words "
              f"(median {np.median(last):.3f}); {int(ok.sum())} end above 0.95")
    assert ok[:10].all()
    _on(page, "Seeds 0-9 all do: had only they been trained, the count would have read 10 "
              "of 10")
    a = [int(row_successes(rows["A"], lv).sum()) for lv in (0.90, 0.95, 0.99)]
    b = [int(row_successes(rows["B"], lv).sum()) for lv in (0.90, 0.95, 0.99)]
    _on(page, f"for row A: {a[0]} of 40 runs above 0.90, {a[1]} above 0.95, {a[2]} above "
              f"0.99; for row B: {b[0]}, {b[1]} and {b[2]}.")


def test_interval_and_test_examples(page, rows):
    lo, hi = wilson_interval(33, 40)
    _on(page, f"`wilson_interval(33, 40)` is [{lo:.3f}, {hi:.3f}]")
    _on(page, f"10 of 10 gives [{wilson_interval(10, 10)[0]:.3f}, 1] and 40 of 40 "
              f"[{wilson_interval(40, 40)[0]:.3f}, 1]")
    ka, kb = (int(row_successes(rows[x], 0.95).sum()) for x in "AB")
    _on(page, f"Row A, {ka} of 40, against row B, {kb} of 40")
    _on(page, f"`fisher_exact({ka}, 40, {kb}, 40)` is {fisher_exact(ka, 40, kb, 40):.4f}")
    c, d = (row_successes(rows[x], 0.95) for x in "CD")
    m = stats.mcnemar(c, d)
    _on(page, f"Rows C ({int(c.sum())} of 40) and D ({int(d.sum())} of 40)")
    only_d = int(np.flatnonzero(d & ~c)[0])
    assert m["b_only"] == 1, m
    _on(page, f"counts {m['both']} pairs where both copy, none where neither does, "
              f"{m['a_only']} where only the first does and {m['b_only']} where only the "
              f"second does (seed {rows['D']['seeds'][only_d]}): $p = 30/16384 = "
              f"{m['p']:.4f}$")
    assert m["neither"] == 0 and m["p"] == 30 / 16384
    _on(page, f"gives {fisher_exact(int(c.sum()), 40, int(d.sum()), 40):.5f})")
    diff, lo, hi = newcombe_interval(ka, 40, kb, 40)
    _on(page, f"gives $d = {diff:.3f}$, interval [{_signed(lo)}, {_signed(hi)}]")
    diff, lo, hi = stats.paired_difference(c, d)
    _on(page, f"for the previous section's rows, {diff:+.3f} [{lo:+.3f}, {hi:+.3f}]")


def test_holm_example(page):
    p = sorted(t["p"] for t in ch7.ablation_tests(ch7.load_sweep(), length=40))
    held = sorted(stats.holm(p))
    # as the page writes them: two significant digits, "1" for 1, 0.50 for a half
    raw = ["1" if x == 1 else "0.50" if abs(x - 0.5) < 1e-12 else
           f"{x:.2g}" if x >= 0.01 else f"{x:.4f}" for x in p]
    _on(page, "smallest first: " + ", ".join(raw) + ".")
    _on(page, "them into " + ", ".join(
        "1" if x >= 1 else f"{x:.2g}" if x >= 0.1 else f"{x:.3f}" for x in held) + ":")
    _on(page, "five are below 0.05 alone, two after the correction")
    assert sum(x < 0.05 for x in p) == 5 and sum(x < 0.05 for x in held) == 2


def test_permutation_example(page, rows):
    pool = np.concatenate([row_successes(rows[x], 0.95) for x in "AB"]).astype(int)
    rng = np.random.default_rng(0)
    shuffled = rng.permuted(np.tile(pool, (100_000, 1)), axis=1)
    apart = np.abs(shuffled[:, :40].sum(1) - shuffled[:, 40:].sum(1)) >= 7
    n = int(apart.sum())
    _on(page, f"in {n:,} shuffles the counts differ by 7 or more")
    p = (n + 1) / 100_001
    _on(page, f"$p = {n + 1}/100001 = {p:.4f}$")
    ka, kb = (int(row_successes(rows[x], 0.95).sum()) for x in "AB")
    _on(page, f"Fisher's test computes this distribution exactly "
              f"({fisher_exact(ka, 40, kb, 40):.4f})")
    _on(page, f"$\\sqrt{{p(1 - p)/S}} = {np.sqrt(p * (1 - p) / 100_000):.4f}$")


def test_auc_example(page, rows):
    acc = np.asarray(rows["A"]["copy_acc"], dtype=float).reshape(40, -1)
    steps = list(rows["A"]["eval_steps"])
    ok = row_successes(rows["A"], 0.95)
    said = []
    for step in (0, 100, 200):
        auc, p = outcome_auc(acc[:, steps.index(step)], ok)
        said.append((auc, p))
    (a0, p0), (a1, p1), (a2, p2) = said
    _on(page, f"at step 0, the untrained model, {a0:.3f} ($p = {p0:.2f}$); at step 100, "
              f"{a1:.3f} ($p = {p1:.2f}$); at step 200, {a2:.3f}")
    assert p2 == 1 / 20001
