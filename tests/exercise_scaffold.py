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


# ------------------------------------------------------------------ the gaming learner (#30)

def gamed_tests(checks: dict, gamed: dict):
    """The gaming learner's tests (#30) for tables ``checks`` (name -> (checker, reference))
    and ``gamed`` (name -> answers that game the checker): every checker has two or more,
    and each is refused with a hint that shows none of the reference's own outputs."""

    def test_every_checker_has_gamed_answers():
        assert set(gamed) == set(checks)
        assert all(len(v) >= 2 for v in gamed.values())

    @pytest.mark.parametrize("name, k", [(n, k) for n in gamed for k in range(len(gamed[n]))])
    def test_gamed_answer_is_refused_and_its_hint_leaks_nothing(name, k, capsys):
        check, reference = checks[name]
        leaks = hint_leaks(check, reference, gamed[name][k])
        message = capsys.readouterr().out.strip().splitlines()[-1]
        assert leaks == [], f"{name}: the hint shows the reference's own outputs {leaks}: " \
                            f"{message}"

    return (test_every_checker_has_gamed_answers,
            test_gamed_answer_is_refused_and_its_hint_leaks_nothing)


_NUMBER = __import__("re").compile(r"(?<![\w.])-?(?:\d+\.\d+|\d+)(?:e-?\d+)?(?![\w.])")


def _numbers(obj) -> list[float]:
    """Every finite number in ``obj`` (numbers, arrays, tensors, tuples/lists/dicts of them)."""
    import numpy as np
    if hasattr(obj, "detach"):
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _numbers(v)]
    if isinstance(obj, (tuple, list)) and not all(isinstance(v, (int, float)) for v in obj):
        return [x for v in obj for x in _numbers(v)]
    try:
        arr = np.asarray(obj, dtype=float).ravel()
    except (TypeError, ValueError):
        return []
    return [float(x) for x in arr if np.isfinite(x)]


def _printed_as(value: float, text: str) -> bool:
    """Is ``text`` (a number as a hint prints it) ``value`` rounded to the digits shown?"""
    mantissa = text.split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exp = int(text.split("e")[1]) if "e" in text else 0
    shown = float(text)
    return abs(value - shown) <= 0.5 * 10.0 ** (exp - decimals) * (1 + 1e-9)


def hint_leaks(check, reference, gamed, allowed=()) -> list[str]:
    """Play the gaming learner: submit ``gamed`` (an answer of the right form that knows
    nothing: zeros, a constant) and return the numbers in its hint that are the reference's
    own outputs on the checker's inputs, shown to the hint's digits -- what a learner could copy
    into the next submission. Trivial values (0, ±1), the gamed answer's own outputs and
    ``allowed`` (numbers the exercise's text already gives) do not count -- except after the
    word "expected", which always counts. Also asserts that the gamed answer is not
    accepted."""
    seen_ref, seen_gamed = [], []

    def recording(store, fn):
        def wrapped(*a, **k):
            out = fn(*a, **k)
            store.extend(_numbers(out))
            return out
        return wrapped

    assert check(recording(seen_ref, reference))             # the reference passes
    result = check(recording(seen_gamed, gamed))
    assert result.status == "wrong", f"a gamed answer was accepted: {result.line()}"
    trivial = {0.0, 1.0, -1.0, *map(float, allowed)}
    # "expected 1" is a leak even when 1 is trivial elsewhere (a table of 0, 0.5 and 1)
    leaks = __import__("re").findall(r"expected:? *-?\d[\d.e-]*", result.message)
    for text in _NUMBER.findall(result.message):
        if any(_printed_as(t, text) for t in trivial | set(seen_gamed)):
            continue
        if any(_printed_as(r, text) for r in seen_ref if r not in trivial):
            leaks.append(text)
    return leaks


def gaming_tests(checks: dict, gamed: dict):
    """The gaming-learner tests for a chapter whose ``checks`` are ``{name: (checker,
    reference)}`` and ``gamed`` ``{name: [gamed answer, ...]}``: every gamed answer is refused
    and its hint leaks none of the reference's outputs (:func:`hint_leaks`, nothing
    ``allowed``), and every checker is gamed at least twice. Bind both to ``test_*`` names."""

    @pytest.mark.parametrize("name, k", [(n, k) for n in gamed for k in range(len(gamed[n]))])
    def test_gamed_answer_is_refused_and_its_hint_leaks_nothing(name, k, capsys):
        check, reference = checks[name]
        assert hint_leaks(check, reference, gamed[name][k]) == []

    def test_every_checker_is_gamed_at_least_twice():
        assert set(gamed) == set(checks) and all(len(v) >= 2 for v in gamed.values())

    return test_gamed_answer_is_refused_and_its_hint_leaks_nothing, \
        test_every_checker_is_gamed_at_least_twice
