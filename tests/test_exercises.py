"""The checker framework (attn_core.exercises): the helpers every chapter's checkers share."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core.exercises import (Wrong, checker, expect_close, expect_number, expect_pair,
                                 first_mistake, matches)


def test_expect_number_takes_one_number_in_any_form():
    assert expect_number(2, "x") == 2.0
    assert expect_number(np.array(0.5), "x") == 0.5
    assert expect_number(torch.tensor([1.5]), "x") == 1.5
    assert np.isnan(expect_number(float("nan"), "x"))
    with pytest.raises(Wrong, match=r"x should be one number; got an array of shape \(2,\)"):
        expect_number([1.0, 2.0], "x")
    with pytest.raises(Wrong, match="x is nan: a square root of a negative number"):
        expect_number(float("nan"), "x", finite=True)
    with pytest.raises(Wrong, match="x should be a number or an array of numbers"):
        expect_number("one", "x")


def test_expect_pair_splits_a_pair_and_names_it():
    assert expect_pair((1, 2), "f") == (1, 2)
    assert expect_pair([1, 2], "f") == (1, 2)
    with pytest.raises(Wrong, match=r"f should return the pair \(c, alpha\)"):
        expect_pair((1, 2, 3), "f")
    with pytest.raises(Wrong, match=r"f should return the pair \(p, logits\)"):
        expect_pair(np.zeros(2), "f", names="(p, logits)")


def test_matches_and_nan_in_the_same_places():
    a = np.array([1.0, np.nan, 3.0])
    assert not matches(a, a)                      # NaN never equals NaN ...
    assert matches(a, a, nan_equal=True)          # ... unless asked, in the same places
    assert not matches(a, [np.nan, 1.0, 3.0], nan_equal=True)
    assert not matches(a, [1.0, np.nan, 3.1], nan_equal=True)
    assert not matches([1.0, 2.0], [1.0, 2.0, 3.0])
    assert matches(torch.tensor([1.0, 2.0]), [1.0, 2.0])
    assert not matches("abc", [1.0])


def test_first_mistake_raises_the_first_matching_hint():
    variants = {"transposed?": np.array([[1, 3], [2, 4]]), "doubled?": np.array([[2, 4], [6, 8]])}
    first_mistake(np.array([[1, 2], [3, 4]]), variants)  # right: nothing raised
    with pytest.raises(Wrong, match=r"^doubled\?$"):
        first_mistake(np.array([[2, 4], [6, 8]]), variants)
    with pytest.raises(Wrong, match=r"^transposed\?$"):
        first_mistake(np.array([[1, 3], [2, 4]]), list(variants.items()))


def test_first_mistake_can_count_nan_in_the_same_places_as_equal():
    got = np.array([np.nan, 2.0])
    first_mistake(got, [("square root of a negative?", np.array([np.nan, 2.0]))])  # NaN != NaN
    with pytest.raises(Wrong, match=r"^square root of a negative\?$"):
        first_mistake(got, [("square root of a negative?", np.array([np.nan, 2.0]))],
                      nan_equal=True)


def test_variant_table_is_one_array_per_mistake_over_the_cases_one_call_each():
    from attn_core.exercises import variant_table

    calls = []

    def variants(a, b):
        calls.append((a, b))
        return {"sum": a + b, "product": a * b}

    table = variant_table(variants, [(1, 2), (3, 4), (5, 6)])
    assert calls == [(1, 2), (3, 4), (5, 6)]
    assert list(table) == ["sum", "product"]
    np.testing.assert_array_equal(table["sum"], [3, 7, 11])
    np.testing.assert_array_equal(table["product"], [2, 12, 30])


def test_checker_prints_and_raises_only_for_solutions(capsys):
    @checker("Exercise 0.1: twice")
    def check_twice(f):
        if f(2) != 4:
            raise Wrong("multiply by two")

    def stub(x):
        raise NotImplementedError

    assert check_twice(lambda x: 2 * x)
    assert check_twice(stub).status == "not attempted"
    assert check_twice(lambda x: x).status == "wrong"
    assert capsys.readouterr().out.splitlines() == [
        "✓ Exercise 0.1: twice",
        "· Exercise 0.1: twice: not attempted yet (fill in the stub, run the cell)",
        "✗ Exercise 0.1: twice: multiply by two"]
    with pytest.raises(AssertionError, match="the solution of 'Exercise 0.1: twice' fails"):
        check_twice(lambda x: x, solution=True)
    with pytest.raises(TypeError, match="answer must be the exercise's function"):
        check_twice(4)


def test_expect_close_names_the_first_entry_off_and_never_the_expected_value():
    want = np.array([[0.25, 0.75], [0.123456, 0.876544]])
    expect_close(want.astype(np.float32), want, "p")              # float32 work passes
    with pytest.raises(Wrong) as err:
        expect_close(np.full((2, 2), 0.5), want, "p", "rows are softmaxes")
    msg = str(err.value)
    assert "at index (0, 0), where yours is 0.5" in msg and "rows are softmaxes" in msg
    assert "not a rounding difference" in msg
    for v in want.ravel():                                        # no reference value shown
        assert f"{v:.6g}" not in msg and f"{v:.3g}" not in msg
    with pytest.raises(Wrong, match=r"at index \(1, 1\).*close everywhere, within 1 %"):
        expect_close(want * np.array([[1, 1], [1, 1.001]]), want, "p")
    with pytest.raises(Wrong, match=r"^x is off: yours is 2 \(not a rounding difference\)$"):
        expect_close(2.0, 1.0, "x")


def test_as_array_reads_tensors_that_still_require_grad_in_lists_and_tuples():
    """A reader's answer may be a list or tuple of tensors still attached to autograd: the
    checkers read their values (before, np.asarray raised torch's RuntimeError inside the
    checker, which then blamed the reader's function)."""
    from attn_core.exercises import as_array

    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    np.testing.assert_array_equal(as_array([y, y + 1], "x"), [[3, 6], [4, 7]])
    np.testing.assert_array_equal(as_array((y[0], y[1]), "x"), [3, 6])
    np.testing.assert_array_equal(as_array(y, "x"), [3, 6])
    with pytest.raises(Wrong, match="x should be a number or an array of numbers"):
        as_array(["a", y], "x")


def test_own_work_refuses_the_library_under_any_name_and_restores_it():
    """#55: inside own_work a plain library function refuses under every name bound to it
    (a module attribute, a name imported with from-import), and works again after."""
    from attn_core import metrics
    from attn_core.exercises import Wrong, own_work
    from attn_core.metrics import fisher_exact as bound

    want = metrics.fisher_exact(3, 5, 1, 6)
    for call in (lambda: metrics.fisher_exact(3, 5, 1, 6), lambda: bound(3, 5, 1, 6)):
        with pytest.raises(Wrong, match="calls the book's own implementation"):
            with own_work((metrics, "fisher_exact")):
                call()
    assert bound(3, 5, 1, 6) == metrics.fisher_exact(3, 5, 1, 6) == want
    with pytest.raises(RuntimeError, match="other"):         # the answer's own errors pass
        with own_work((metrics, "fisher_exact")):
            raise RuntimeError("other")
    with pytest.raises(TypeError, match=r"targets must be \(module, name"):
        with own_work((metrics, "no_such_function")):
            pass
