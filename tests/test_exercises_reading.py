"""The exercise of the page "Reading the numbers" (attn_core.exercises.reading): the checker
accepts McNemar's exact p, names each usual slip, refuses the library's own test, and the
solution printed on the page (book/reading_numbers.md, which the book does not execute) is
executed here and passes it."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_scaffold import gamed_tests, scaffold_tests

from attn_core import stats
from attn_core.exercises import reading as ex
from attn_core.metrics import fisher_exact

PAGE = Path(__file__).resolve().parents[1] / "book" / "reading_numbers.md"
SOLUTION_MARK = "# solution: Exercise R.1"


def _counts(a, b):
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    return int((a & b).sum()), int((a & ~b).sum()), int((~a & b).sum()), int((~a & ~b).sum())


def mcnemar_p(a_ok, b_ok, sides=2, cap=True, pairs="discordant", approx=None):
    """McNemar's p as a reader writes it; the keyword arguments make the usual slips."""
    both, b, c, neither = _counts(a_ok, b_ok)
    if approx:
        x = (abs(b - c) - (1 if approx == "cc" else 0)) ** 2 / (b + c)
        return math.erfc(math.sqrt(max(x, 0) / 2))
    if pairs == "all":
        b, c = b + both, c + neither
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    p = 2 * tail if sides == 2 else tail
    return min(1.0, p) if cap else p


def unpaired(a_ok, b_ok):
    n = len(a_ok)
    return fisher_exact(sum(a_ok), n, sum(b_ok), n)


CHECKS = {"check_mcnemar_p": (ex.check_mcnemar_p, mcnemar_p)}
WRONG = {"check_mcnemar_p": [
    (unpaired, "Fisher's test of the two totals"),
    (lambda a, b: mcnemar_p(a, b, sides=1), "one tail"),
    (lambda a, b: mcnemar_p(a, b, cap=False), "twice the tail exceeds 1"),
    (lambda a, b: mcnemar_p(a, b, pairs="all"), "only the discordant pairs"),
    (lambda a, b: mcnemar_p(a, b, approx="plain") if _counts(a, b)[1:3] != (0, 0) else 1.0,
     "chi-square approximation"),
    (lambda a, b: mcnemar_p(a, b, approx="cc") if _counts(a, b)[1:3] != (0, 0) else 1.0,
     "chi-square approximation"),
    (lambda a, b: 0.5, "not McNemar's exact p"),
]}
GAMED = {"check_mcnemar_p": [lambda a, b: 0.05, lambda a, b: float(sum(a) != sum(b))]}

(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(ex, CHECKS, WRONG)
(test_every_checker_has_gamed_answers,
 test_gamed_answer_is_refused_and_its_hint_leaks_nothing) = gamed_tests(CHECKS, GAMED)


def test_the_reference_gives_the_exact_p_worked_by_hand():
    """The cases' counts, and McNemar's p on each worked out by hand: twice the binomial
    tail of the smaller discordant count, capped at 1 (the page's example: 30/16384)."""
    by_hand = {(26, 13, 1, 0): 2 * (1 + 14) / 2 ** 14, (20, 5, 5, 10): 1.0,
               (9, 0, 6, 25): 2 / 2 ** 6, (4, 0, 0, 6): 1.0,
               (12, 3, 9, 16): 2 * (1 + 12 + 66 + 220) / 2 ** 12}
    assert [_counts(a, b) for a, b in ex.MCNEMAR_CASES] == list(by_hand)
    for (a, b), p in zip(ex.MCNEMAR_CASES, by_hand.values()):
        assert ex.mcnemar_p_reference(a, b) == pytest.approx(p, rel=1e-12)


def test_the_library_and_the_reference_are_refused_as_answers(capsys):
    def by_sign_test(a, b):     # the library's sign test on the discordant counts
        only_a = sum(1 for x, y in zip(a, b) if x and not y)
        return stats.sign_test(only_a, only_a + sum(1 for x, y in zip(a, b) if y and not x))

    for answer in (lambda a, b: stats.mcnemar(a, b)["p"], ex.mcnemar_p_reference,
                   by_sign_test):
        r = ex.check_mcnemar_p(answer)
        assert r.status == "wrong" and "the book's own implementation" in r.message
    capsys.readouterr()


def _page_blocks():
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_pages_solution_runs_and_passes_its_checker(capsys):
    """The folded solution on the page is the code a reader copies: executed as printed."""
    blocks = [b for b in _page_blocks() if b.startswith(SOLUTION_MARK)]
    assert len(blocks) == 1, f"the page should hold one block starting {SOLUTION_MARK!r}"
    namespace = {}
    exec(compile(blocks[0], str(PAGE), "exec"), namespace)
    out = capsys.readouterr().out
    assert out.startswith("✓ Exercise R.1"), out
    assert namespace["result"].status == "right"


def test_the_pages_stub_is_not_attempted(capsys):
    blocks = [b for b in _page_blocks() if b.startswith("# Exercise R.1")]
    assert len(blocks) == 1
    namespace = {}
    exec(compile(blocks[0], str(PAGE), "exec"), namespace)
    assert capsys.readouterr().out.startswith("· Exercise R.1")


@pytest.mark.parametrize("a, b, error, match", [
    ("yes", [True], TypeError, "a_ok"),
    ([True, False], [True], ValueError, "b_ok"),
    ([0.5, 1.0], [True, False], TypeError, "a_ok"),
    ([True], None, TypeError, "b_ok"),
])
def test_the_reference_refuses_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        ex.mcnemar_p_reference(a, b)
