"""The one copy of the argument validators every public function of :mod:`attn_core` uses.

Each checker takes the argument's *name* (as the caller spells it: ``"length"``,
``"CopyConfig.steps"``, ``"ATTN_THREADS"``) and its value, and either returns the value in a
canonical type or raises a :class:`TypeError` (wrong kind) or :class:`ValueError` (right kind,
out of range) whose message names the argument and the allowed values. Nothing is silently
clipped, truncated or cast:

- an int is a Python ``int`` or a NumPy integer, never a ``bool`` and never a float (``2.0`` is
  rejected as well: a float where a count belongs is almost always a mistake upstream);
- a real number is an int or float (not a bool), and finite unless ``finite=False``;
- a choice is one of a fixed tuple of strings;
- a sequence of seeds is a non-empty list/tuple of ints >= 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["is_int", "MAX_DIM", "MAX_ELEMENTS", "check_dim", "check_numel", "check_int",
           "check_real", "check_prob", "check_bool", "check_choice", "check_seeds",
           "check_fractions",
           "check_generator", "check_int_tuple", "check_token_ids", "check_index_tensor",
           "check_sequences", "check_pair", "check_indices", "check_token_batches",
           "check_fraction_array", "check_int_array",
           "check_real_array", "check_bool_array", "check_str"]


#: The largest size any one dimension of a model or task may have (vocabularies, widths,
#: lengths): 2^24. The book's largest is a vocabulary of about 10^4 words; a size beyond this
#: is a mistake (10^12 words), refused by name before torch tries to allocate it.
MAX_DIM = 2 ** 24
#: The most elements one parameter tensor of a model may hold (all its members together):
#: 2^31, 8 GiB of float32.
MAX_ELEMENTS = 2 ** 31


def check_dim(name: str, value, low: int = 1) -> int:
    """``value`` as an ``int`` in ``[low, MAX_DIM]``: a size of a model or a task."""
    return check_int(name, value, low, MAX_DIM)


def check_numel(what: str, shape) -> None:
    """ValueError naming ``what`` if a tensor of ``shape`` would hold more than
    :data:`MAX_ELEMENTS` elements (checked before it is allocated)."""
    n = 1
    for d in shape:
        n *= int(d)
    if n > MAX_ELEMENTS:
        shape = tuple(int(d) for d in shape)
        raise ValueError(f"{what} would hold {n:,} elements (shape {shape}); at most "
                         f"{MAX_ELEMENTS:,} (2^31) are allowed: are its sizes right?")


def is_int(value) -> bool:
    """Whether ``value`` is a Python or NumPy integer (never a bool, never a float such as
    2.0): what every ``int`` argument of the package must be."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value, low: int | None = 1, high: int | None = None) -> int:
    """``value`` as an ``int`` in ``[low, high]`` (either bound may be None: unbounded)."""
    rng = _range_text(low, high)
    if not is_int(value):
        raise TypeError(f"{name} must be an int {rng}; got {type(value).__name__} {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an int {rng}; got {value}")
    return value


def check_real(name: str, value, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False, finite: bool = True) -> float:
    """``value`` as a ``float`` in the interval given by ``low``/``high`` (open ends if asked).

    NaN is always rejected; ±inf unless ``finite=False``.
    """
    rng = _range_text(low, high, low_open, high_open)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                       np.floating)):
        raise TypeError(f"{name} must be a real number {rng}; got {type(value).__name__} "
                        f"{value!r}")
    value = float(value)
    if math.isnan(value) or (finite and math.isinf(value)):
        raise ValueError(f"{name} must be a finite number {rng}; got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {rng}; got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {rng}; got {value}")
    return value


def check_prob(name: str, value, open_interval: bool = True) -> float:
    """A probability in (0, 1) (or [0, 1] with ``open_interval=False``)."""
    return check_real(name, value, 0.0, 1.0, low_open=open_interval, high_open=open_interval)


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {type(value).__name__} {value!r}")
    return bool(value)


def check_choice(name: str, value, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices`` (exact match), else a ValueError listing them."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {tuple(choices)}; got {type(value).__name__} "
                        f"{value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}; got {value!r}")
    return value


def check_seeds(name: str, seeds, allow_empty: bool = False) -> list[int]:
    """A list/tuple (or 1-D array) of ints >= 0; non-empty unless ``allow_empty``."""
    if isinstance(seeds, np.ndarray) and seeds.ndim == 1:
        seeds = seeds.tolist()
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (list, tuple, range)):
        raise TypeError(f"{name} must be a list or tuple of ints >= 0 (one seed per member); "
                        f"got {type(seeds).__name__} {seeds!r}")
    if not seeds and not allow_empty:
        raise ValueError(f"{name} must hold at least one seed (S >= 1); got none")
    return [check_int(f"{name}[{i}]", s, 0) for i, s in enumerate(seeds)]


def check_int_tuple(name: str, values, low: int | None = 0, high: int | None = None,
                    allow_empty: bool = False) -> tuple[int, ...]:
    """A list/tuple of ints, each in ``[low, high]``, returned as a tuple."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, range)):
        raise TypeError(f"{name} must be a list or tuple of ints; got {type(values).__name__}")
    if not values and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    return tuple(check_int(f"{name}[{i}]", v, low, high) for i, v in enumerate(values))


def check_generator(name: str, generator) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator; got {type(generator).__name__}")
    return generator


_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def check_token_ids(name: str, ids, vocab: int) -> torch.Tensor:
    """A long tensor of token ids, every entry in ``[0, vocab)``.

    The stacked models add ``member * vocab`` to each member's ids to index one shared table;
    an id equal to ``vocab`` would silently read the *next* member's embedding, so every id is
    checked here, per member, before that offset is added.
    """
    return check_index_tensor(name, ids, vocab)


def check_index_tensor(name: str, ids, n: int, what: str = "token ids", size: str = "vocab",
                       floating: bool = False) -> torch.Tensor:
    """A tensor of indices (token ids, class labels, positions), every entry in ``[0, n)``.

    ``what`` and ``size`` word the message (``"class labels"``, ``"n_classes"``). The dtype
    must be an integer one -- or, with ``floating=True`` (targets of a binary cross-entropy), a
    float one holding whole numbers. One min/max over the tensor: cheap enough for ``forward``.
    """
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor of {what}; got {type(ids).__name__}")
    dtype_ok = ids.is_floating_point() if floating else ids.dtype in _INT_DTYPES
    if not dtype_ok:
        kind = "float" if floating else "integer"
        raise TypeError(f"{name} must hold {kind} {what}; got dtype {ids.dtype}")
    if ids.numel():
        lo, hi = ids.min().item(), ids.max().item()
        # "not (0 <= lo ...)" also catches NaN; a float label must be a whole number
        if not (0 <= lo and hi <= n - 1) or (floating and bool((ids != ids.trunc()).any())):
            whole = ", whole numbers" if floating else ""
            raise ValueError(f"{name} must hold {what} in [0, {n - 1}] ({size}={n}{whole}); "
                             f"got {what.split()[-1]} in [{lo}, {hi}]")
    return ids


def check_sequences(name: str, seqs, axes: tuple[str, ...] = ("S", "B", "L")) -> torch.Tensor:
    """A tensor with one dimension per name in ``axes``, the last one non-empty: a model's batch
    of sequences (the ids themselves are checked by :func:`check_token_ids`)."""
    shape = f"({', '.join(axes)})"
    if not isinstance(seqs, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor of shape {shape}; got "
                        f"{type(seqs).__name__}")
    if seqs.dim() != len(axes):
        raise ValueError(f"{name} must have shape {shape}; got {tuple(seqs.shape)}")
    if seqs.shape[-1] == 0:
        raise ValueError(f"{name} must not be empty: shape {shape} with {axes[-1]} >= 1; got "
                         f"{tuple(seqs.shape)}")
    return seqs


def _as_array(name: str, value, what: str, bools: bool = False) -> np.ndarray:
    """``value`` (a list, tuple, range, NumPy array, torch tensor or scalar) as a NumPy array,
    or a TypeError naming ``name`` when it is not an array of numbers at all."""
    if isinstance(value, (str, bytes)) or value is None or isinstance(value, dict):
        raise TypeError(f"{name} must be {what}; got {type(value).__name__} {value!r:.60}")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if not bools and isinstance(value, (list, tuple)) and _holds_bool(value):
        # np.asarray([0, True]) is the int array [0, 1]: a bool among numbers is a mistake
        raise TypeError(f"{name} must be {what}; got a bool among its entries")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting and the like
        raise TypeError(f"{name} must be {what}; got a ragged or mixed "
                        f"{type(value).__name__}") from None
    return arr


def _holds_bool(values) -> bool:
    """Whether a (nested) list/tuple holds a bool anywhere."""
    for v in values:
        if isinstance(v, (bool, np.bool_)):
            return True
        if isinstance(v, (list, tuple)) and _holds_bool(v):
            return True
    return False


def _checked_shape_is_empty(name: str, arr: np.ndarray, ndim, allow_empty: bool) -> bool:
    """Check ``arr``'s number of axes against ``ndim`` (one value, several, or None) and
    refuse an empty array unless ``allow_empty``; True when the (allowed) array is empty."""
    if ndim is not None:
        dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in dims:
            raise ValueError(f"{name} must be a {' or '.join(f'{d}-D' for d in dims)} array; "
                             f"got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty; got shape {arr.shape}")
    return arr.size == 0


def check_int_array(name: str, value, low: int | None = 0, high: int | None = None,
                    ndim: int | tuple[int, ...] | None = None,
                    allow_empty: bool = False) -> np.ndarray:
    """An array of integers (list, tuple, range, NumPy array or torch tensor) as an int64 array.

    Floats are refused even when integral (``[0, 1.0]``, like :func:`check_int`), and so are
    bools and strings; every entry must lie in ``[low, high]``; ``ndim`` (one value or several)
    fixes the number of axes. Empty arrays are refused unless ``allow_empty``.
    """
    what = f"an array of ints {_range_text(low, high)}".rstrip()
    arr = _as_array(name, value, what)
    if _checked_shape_is_empty(name, arr, ndim, allow_empty):
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be {what}; got dtype {arr.dtype} (floats, bools and strings "
                        f"are not cast)")
    if (low is not None and arr.min() < low) or (high is not None and arr.max() > high):
        raise ValueError(f"{name} must be {what}; got values in [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def check_real_array(name: str, value, ndim: int | tuple[int, ...] | None = None,
                     finite: bool = True, allow_empty: bool = True) -> np.ndarray:
    """An array of real numbers (ints or floats, not bools or strings) as a float64 array,
    free of NaN (and of ±inf unless ``finite=False``); ``ndim`` as in :func:`check_int_array`."""
    what = "an array of real numbers"
    arr = _as_array(name, value, what)
    if _checked_shape_is_empty(name, arr, ndim, allow_empty):
        return arr.astype(float)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be {what}; got dtype {arr.dtype}")
    arr = arr.astype(float)
    bad = int((~np.isfinite(arr) if finite else np.isnan(arr)).sum())
    if bad:
        what = "finite numbers" if finite else "no NaN"
        kind = "non-finite" if finite else "NaN"
        raise ValueError(f"{name} must hold {what}; got {bad} {kind} entr{'y' if bad == 1 else 'ies'}")
    return arr


def check_fractions(name: str, value) -> np.ndarray:
    """A real array of accuracies: finite, every entry in [0, 1]."""
    arr = check_real_array(name, value)
    if arr.size and not ((arr >= 0) & (arr <= 1)).all():
        raise ValueError(f"{name} must hold accuracies in [0, 1]; got values in "
                         f"[{arr.min():g}, {arr.max():g}]")
    return arr


def check_bool_array(name: str, value, shape: tuple[int, ...] | None = None) -> torch.Tensor:
    """A boolean mask (bool tensor or array, or a list of bools) as a bool tensor; integer 0/1
    masks are refused (an int tensor used as an index selects rows, it does not mask them)."""
    if isinstance(value, torch.Tensor):
        t = value
    else:
        arr = _as_array(name, value, "a bool mask", bools=True)
        if arr.dtype != np.bool_:
            raise TypeError(f"{name} must be a bool mask; got dtype {arr.dtype}")
        t = torch.from_numpy(arr)
    if t.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool mask (True at real entries); got dtype {t.dtype}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got {tuple(t.shape)}")
    return t


def check_str(name: str, value, allow_empty: bool = True) -> str:
    """``value`` if it is a string (non-empty unless ``allow_empty``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string; got {type(value).__name__} {value!r:.60}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string; got {value!r}")
    return value


def _range_text(low, high, low_open: bool = False, high_open: bool = False) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f"{'>' if low_open else '>='} {low}"
    if low is None:
        return f"{'<' if high_open else '<='} {high}"
    return f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


def check_fraction_array(name: str, value, ndim=None) -> np.ndarray:
    """An array of fractions (accuracies, rates): real numbers in [0, 1], no NaN; a value
    above 1 is named as what it likely is, a percentage."""
    arr = check_real_array(name, value, ndim)
    if arr.size and (arr.min() < 0 or arr.max() > 1):
        raise ValueError(f"{name} must hold fractions in [0, 1] (not percent); got values in "
                         f"[{arr.min():g}, {arr.max():g}]")
    return arr


def check_token_batches(src, tgt_in, vocab: int) -> None:
    """One model's input (the chapters' readable models): ``src`` (B, L) and ``tgt_in``
    (B, T), non-empty, of the same B, and token ids in ``[0, vocab)`` -- checked before an
    embedding would fail on them inside torch."""
    for name, t, axes in (("src", src, ("B", "L")), ("tgt_in", tgt_in, ("B", "T"))):
        check_sequences(name, t, axes)
        check_token_ids(name, t, vocab)
    if src.shape[0] != tgt_in.shape[0]:
        raise ValueError(f"src {tuple(src.shape)} and tgt_in {tuple(tgt_in.shape)} must have "
                         f"the same batch size B")


def check_pair(a_name: str, a, b_name: str, b, vocab: int | None = None) -> None:
    """Two batches of sequences, (S, B, L) and (S, B, T), of the same members and examples;
    with ``vocab``, both of token ids in ``[0, vocab)`` (checked here, under their own names,
    before the embedding checks them again as its generic "token ids")."""
    check_sequences(a_name, a)
    check_sequences(b_name, b, ("S", "B", "T"))
    if a.shape[:2] != b.shape[:2]:
        raise ValueError(f"{a_name} {tuple(a.shape)} and {b_name} {tuple(b.shape)} must share "
                         f"their first two dimensions (S, B)")
    if vocab is not None:
        check_token_ids(a_name, a, vocab)
        check_token_ids(b_name, b, vocab)


def check_indices(name: str, t, shape, n: int, what: str = "token ids", size: str = "vocab",
                  floating: bool = False) -> None:
    """``t``: indices in ``[0, n)`` (see :func:`~attn_core.checks.check_index_tensor`) of
    exactly ``shape``."""
    check_index_tensor(name, t, n, what, size, floating)
    if t.shape != shape:
        raise ValueError(f"{name} must have shape {tuple(shape)}; got {tuple(t.shape)}")
