"""The tests every chapter's exercise checkers get (ARENA's pattern), made once for the chapter
test files whose tables have this shape (chapters 1, 4 and 5):

- ``checks``: ``{checker name: (checker, reference solution)}``;
- ``wrong``: ``{checker name: [(known wrong answer, a word its hint must contain), ...]}``.

Every checker also gets :func:`stub`, which raises NotImplementedError as the notebook's stub
cells do.

A chapter test file binds what :func:`scaffold_tests` returns to module-level ``test_*`` names,
which pytest then collects as that file's own tests.
"""

from __future__ import annotations

import pytest


def stub(*args):
    """An unfilled exercise, as the notebooks' stub cells leave it."""
    raise NotImplementedError("fill me in")


def scaffold_tests(ex, checks: dict, wrong: dict, not_an_answer=4):
    """The checker tests for module ``ex`` (``attn_core.exercises.chN``), as a tuple of test
    functions: reference passes, each wrong answer gets its hint, a stub is "not attempted", a
    wrong answer passed as a solution raises, bad arguments are TypeErrors, and every checker
    of ``ex`` is in the tables with at least two wrong answers. ``not_an_answer`` is a value
    that is not a callable answer."""

    @pytest.mark.parametrize("name", checks)
    def test_reference_solution_passes(name, capsys):
        check, solution = checks[name]
        result = check(solution)
        assert bool(result) is True and result.status == "right"
        assert check(solution, solution=True)
        assert capsys.readouterr().out.startswith("✓ ")

    @pytest.mark.filterwarnings("ignore::RuntimeWarning")  # e.g. wrong answers' NaN roots
    @pytest.mark.parametrize("name, k", [(n, k) for n in wrong for k in range(len(wrong[n]))])
    def test_known_wrong_answer_gets_its_hint(name, k, capsys):
        check, _ = checks[name]
        answer, word = wrong[name][k]
        result = check(answer)
        assert result.status == "wrong" and not result
        assert word in result.message, result.message
        assert capsys.readouterr().out.startswith("✗ ")

    @pytest.mark.parametrize("name", checks)
    def test_stub_is_not_attempted(name, capsys):
        check, _ = checks[name]
        result = check(stub)
        assert result.status == "not attempted" and not result
        assert capsys.readouterr().out.startswith("· ")

    @pytest.mark.parametrize("name", checks)
    def test_wrong_answer_as_solution_raises(name):
        check, _ = checks[name]
        answer, _ = wrong[name][0]
        with pytest.raises(AssertionError, match="fails its checker"):
            check(answer, solution=True)

    @pytest.mark.parametrize("name", checks)
    def test_bad_arguments(name):
        check, solution = checks[name]
        with pytest.raises(TypeError, match="answer must be"):
            check(not_an_answer)
        with pytest.raises(TypeError, match="solution must be True or False"):
            check(solution, solution="yes")

    def test_every_checker_is_tested_and_has_wrong_answers():
        names = {n for n in vars(ex) if n.startswith("check_")
                 and hasattr(getattr(ex, n), "title")}
        assert names == set(checks) == set(wrong)
        assert all(len(v) >= 2 for v in wrong.values())

    return (test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
            test_stub_is_not_attempted, test_wrong_answer_as_solution_raises,
            test_bad_arguments, test_every_checker_is_tested_and_has_wrong_answers)
