"""Exercises with checked answers (ARENA's pattern), one module per chapter (``ch1`` ...
``ch8``) and ``reading`` for the page "Reading the numbers" (its Exercise R.1).

Every exercise in the book is three notebook cells over one *checker* from this package::

    from attn_core.exercises import ch1 as ex

    # 1. the reader's cell: a stub, then the checker
    def guessing_level(L):
        raise NotImplementedError("return H_L / L")
    ex.check_guessing_level(guessing_level)

    # 2. the solution, in a collapsed dropdown of the book with its output (cell tag ``hide-cell``;
    #    hidden in JupyterLab and Colab by its metadata and ``# @title`` form line)
    def guessing_level_solution(L):
        return sum(1 / k for k in range(1, L + 1)) / L
    ex.check_guessing_level(guessing_level_solution, solution=True)

A checker calls the reader's answer (always a function: a formula, a table, a forward pass)
on its own inputs, compares with the reference and prints one line:

- ``✓ <title>`` when the answer is right;
- ``✗ <title>: <hint>`` when it is wrong -- the hint says *what* is wrong ("is your softmax
  over source positions?"), recognising the usual mistakes where it can;
- ``· <title>: not attempted yet`` while the stub still raises ``NotImplementedError``.

On the reader's cell a checker never raises, so a notebook runs top to bottom with every stub
unfilled. With ``solution=True`` anything but ✓ raises :class:`AssertionError`: the book build
and CI execute every solution cell, so a wrong solution or a broken checker fails them. The
unit tests (``tests/test_exercises.py``) feed every checker its reference and known wrong
answers.

A checker module (``chN``, ``reading``) defines each checker as a function that raises
:class:`Wrong` with the hint, decorated with :func:`checker`; :func:`expect_close` and
:func:`expect_shape` are the usual comparisons. The page's exercise is a stub and a folded
solution in ``book/reading_numbers.md`` (the book does not execute pages);
``tests/test_exercises_reading.py`` executes that solution.
"""

from __future__ import annotations

import contextlib
import functools
import traceback
from dataclasses import dataclass
from unittest import mock

import numpy as np

from ..config import wrap_line

__all__ = ["Wrong", "Result", "checker", "expect_close", "expect_shape", "expect_number",
           "expect_pair", "as_array", "matches", "first_mistake", "variant_table", "own_work",
           "CHECKERS"]

RIGHT, WRONG, NOT_ATTEMPTED = "right", "wrong", "not attempted"


#: The message of what a refused library function raises (a builtin exception, so that the
#: swapped code needs nothing from the function's own module).
_REFUSED = "attn_core: the exercise refuses the library's own function"


def _refuse(*args, **kwargs):
    # the literal, not _REFUSED: this code runs with the refused function's own globals
    raise RuntimeError("attn_core: the exercise refuses the library's own function")


@contextlib.contextmanager
def own_work(*targets):
    """Run the reader's answer with each ``(module, name)`` of ``targets`` (the library's
    function the exercise asks the reader to write, and its reference) made to raise: an
    answer that calls it gets :class:`Wrong` saying so, not a ✓. A plain function's code is
    swapped, so every name bound to it refuses (``from attn_core.metrics import
    fisher_exact`` too); anything else is replaced in its module. The checker computes
    what it compares with outside this block."""
    for t in targets:
        if not (isinstance(t, tuple) and len(t) == 2 and isinstance(t[1], str)
                and callable(getattr(t[0], t[1], None))):
            raise TypeError(f"targets must be (module, name of one of its functions) pairs; "
                            f"got {t!r:.60}")
    with contextlib.ExitStack() as stack:
        for module, name in targets:
            fn = getattr(module, name)
            code = getattr(fn, "__code__", None)
            if code is not None and not code.co_freevars:
                fn.__code__ = _refuse.__code__
                stack.callback(setattr, fn, "__code__", code)
            else:
                stack.enter_context(mock.patch.object(module, name, _refuse))
        try:
            yield
        except RuntimeError as e:
            if str(e) != _REFUSED:
                raise
            raise Wrong("your function calls the book's own implementation: write the "
                        "computation yourself") from None


_MARK = {RIGHT: "✓", WRONG: "✗", NOT_ATTEMPTED: "·"}

#: Every checker, by its function name (filled by :func:`checker`; the tests iterate over it).
CHECKERS: dict[str, object] = {}


class Wrong(Exception):
    """Raised by a check with the hint for the reader: what is wrong, not the answer."""


@dataclass(frozen=True)
class Result:
    """What a checker found: ``status`` is ``"right"``, ``"wrong"`` or ``"not attempted"``;
    truthy only when right."""

    title: str
    status: str
    message: str = ""

    def __bool__(self) -> bool:
        return self.status == RIGHT

    def _ipython_display_(self) -> None:
        """Nothing: the checker has printed the line already (a notebook cell ending in a
        checker call would otherwise show ``Result(...)`` too)."""

    def line(self) -> str:
        """The checker's printed line, wrapped to the book's column (config.wrap_line)."""
        text = f"{_MARK[self.status]} {self.title}"
        return wrap_line(f"{text}: {self.message}" if self.message else text)


def checker(title: str):
    """Turn ``check(answer)`` (raises :class:`Wrong` with a hint) into a checker.

    The checker is ``(answer, *, solution=False) -> Result``: it prints the result's line and
    returns it; with ``solution=True`` it raises :class:`AssertionError` unless the answer is
    right. ``answer`` must be callable (the exercise's function). ``check`` may return a
    callable: called once the answer is right, outside the hint's ``try`` (what it reads --
    a stored result -- is not the reader's error), it gives the ✓ line's message.
    """
    if not isinstance(title, str) or not title:
        raise TypeError(f"title must be a non-empty str; got {title!r}")

    def wrap(check):
        @functools.wraps(check)
        def run(answer, *, solution: bool = False) -> Result:
            if not isinstance(solution, bool):
                raise TypeError(f"solution must be True or False; got {solution!r}")
            if not callable(answer):
                raise TypeError(f"answer must be the exercise's function (callable); got "
                                f"{type(answer).__name__} {answer!r:.60}")
            message = None
            try:
                message = check(answer)
            except NotImplementedError:
                result = Result(title, NOT_ATTEMPTED, "not attempted yet (fill in the stub, "
                                "run the cell)")
            except Wrong as e:
                result = Result(title, WRONG, str(e))
            except Exception as e:  # the reader's code crashed: say where, as a hint
                if solution:
                    raise
                frame = traceback.extract_tb(e.__traceback__)[-1]
                result = Result(title, WRONG, f"your function raised {type(e).__name__}: {e} "
                                f"(line {frame.lineno}: {frame.line})")
            else:
                result = Result(title, RIGHT, message() if callable(message) else "")
            print(result.line())
            if solution and not result:
                raise AssertionError(f"the solution of {title!r} fails its checker: "
                                     f"{result.message}")
            return result

        run.title = title
        CHECKERS[check.__name__] = run
        return run

    return wrap


def as_array(x, what: str) -> np.ndarray:
    """``x`` (a number, array or tensor) as a float64 NumPy array; :class:`Wrong` if it is not
    numeric."""
    if hasattr(x, "detach"):  # a torch tensor (one that still requires grad too)
        x = x.detach().cpu().numpy()
    elif isinstance(x, (list, tuple)):   # e.g. a list of tensors that still require grad
        x = [as_array(v, what) if hasattr(v, "detach") or isinstance(v, (list, tuple))
             else v for v in x]
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):
        raise Wrong(f"{what} should be a number or an array of numbers; got "
                    f"{type(x).__name__}") from None
    return arr


def expect_shape(got, shape: tuple, what: str, hint: str = "") -> np.ndarray:
    """``got`` as an array of exactly ``shape``; else :class:`Wrong` saying both shapes."""
    arr = as_array(got, what)
    if arr.shape != tuple(shape):
        raise Wrong(f"{what} has shape {arr.shape}; expected {tuple(shape)}"
                    + (f" -- {hint}" if hint else ""))
    return arr


def expect_close(got, want, what: str, hint: str = "", rtol: float = 1e-5,
                 atol: float = 1e-7) -> None:
    """:class:`Wrong` unless ``got`` equals ``want`` (same shape, within rtol/atol -- float32
    work passes at the defaults -- no NaN).

    The hint says where the first entry is off and what the reader's value is there, never the
    expected one: a learner who copied expected entries from the hints would reach ✓ without
    the formula. The first entry off, not the worst: the worst entry of a constant
    answer would point at the reference's largest one."""
    want = np.asarray(want, dtype=np.float64)
    arr = expect_shape(got, want.shape, what)
    if not np.all(np.isfinite(arr)):
        raise Wrong(f"{what} contains NaN or inf")
    off = ~np.isclose(arr, want, rtol=rtol, atol=atol)
    if not off.any():
        return
    first = tuple(int(i) for i in np.argwhere(off)[0]) if arr.shape else ()
    where = f" at index {first}, where yours is {arr[first]:.6g}" if arr.shape else \
        f": yours is {float(arr):.6g}"
    close = bool(np.all(np.abs(arr - want) <= 1e-2 * (np.abs(want) + 1e-2)))
    how = (f"close everywhere, within 1 %, but beyond the checker's tolerance (rtol {rtol:g}, "
           "which float32 work passes): a small term missing or added?" if close else
           "not a rounding difference")
    raise Wrong(f"{what} is off{where} ({how})" + (f" -- {hint}" if hint else ""))


def expect_number(x, what: str, finite: bool = False) -> float:
    """``x`` (a float, 0-d array or one-element tensor) as one float; :class:`Wrong` if it is
    not one number, or, with ``finite=True``, if it is NaN or infinite."""
    arr = as_array(x, what)
    if arr.size != 1:
        raise Wrong(f"{what} should be one number; got an array of shape {arr.shape}")
    value = float(arr.reshape(()))
    if finite and not np.isfinite(value):
        raise Wrong(f"{what} is {value}: a square root of a negative number, or an overflow?")
    return value


def expect_pair(out, what: str, names: str = "(c, alpha)") -> tuple:
    """The two parts of a function's pair result; :class:`Wrong` if it returned anything else."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Wrong(f"{what} should return the pair {names}")
    return out[0], out[1]


def matches(got, want, rtol: float = 1e-5, atol: float = 1e-8,
            nan_equal: bool = False) -> bool:
    """Whether ``got`` equals a (typically wrong-variant) ``want``: used to recognise a usual
    mistake and give its specific hint. With ``nan_equal=True`` NaN in the same places count
    as equal (wrong variants that take a square root or a log of a negative number)."""
    try:
        arr = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    want = np.asarray(want, dtype=np.float64)
    if arr.shape != want.shape:
        return False
    if nan_equal:
        if not np.array_equal(np.isnan(arr), np.isnan(want)):
            return False
        ok = ~np.isnan(want)
        arr, want = arr[ok], want[ok]
    return bool(np.allclose(arr, want, rtol=rtol, atol=atol))


def variant_table(variants, cases) -> dict[str, np.ndarray]:
    """``{name: array over cases}`` from ``variants(*case) -> {name: value}`` (the usual
    mistakes' answers for one case), calling ``variants`` once per case."""
    rows = [variants(*case) for case in cases]
    return {k: np.array([row[k] for row in rows]) for k in rows[0]}


def first_mistake(got, variants, rtol: float = 1e-6, atol: float = 1e-9,
                  nan_equal: bool = False) -> None:
    """Raise :class:`Wrong` with the hint of the first usual mistake that ``got`` equals
    (:func:`matches`, with these tolerances and ``nan_equal``); ``variants`` is a dict
    ``{hint: value}`` or ``(hint, value)`` pairs (a hint may serve several values)."""
    for hint, bad in (variants.items() if isinstance(variants, dict) else variants):
        if matches(got, bad, rtol=rtol, atol=atol, nan_equal=nan_equal):
            raise Wrong(hint)
