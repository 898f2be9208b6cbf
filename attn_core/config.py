"""The book-wide switches: fast/full mode, device, seeds and CPU threads.

One environment variable selects the scale of every experiment in the book::

    ATTN_MODE=fast   # 2-core CPU, seconds to a minute or two per experiment (CI, default book build)
    ATTN_MODE=full   # the papers' own scale (meant for a GPU)
    ATTN_MODE=auto   # default: full when CUDA is available, else fast

Every experiment config is a :class:`Preset`: one value for fast, one for full, and
:func:`pick` chooses by the current mode.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import torch

MODES = ("fast", "full", "auto")
T = TypeVar("T")


def _check_mode(mode: str) -> str:
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a string, one of {MODES}; got {type(mode).__name__}")
    mode = mode.strip().lower()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}")
    return mode


def get_mode(mode: str | None = None) -> str:
    """Resolve the run mode to ``"fast"`` or ``"full"``.

    ``mode`` defaults to the ``ATTN_MODE`` environment variable (itself defaulting to
    ``"auto"``); ``"auto"`` means full when CUDA is available, else fast.
    """
    mode = _check_mode(os.environ.get("ATTN_MODE", "auto") if mode is None else mode)
    if mode == "auto":
        return "full" if torch.cuda.is_available() else "fast"
    return mode


@dataclass(frozen=True)
class Preset(Generic[T]):
    """A value with a fast and a full variant; ``preset.get()`` picks by the current mode."""

    fast: T
    full: T

    def get(self, mode: str | None = None) -> T:
        return self.fast if get_mode(mode) == "fast" else self.full


def pick(fast: T, full: T, mode: str | None = None) -> T:
    """Return ``fast`` or ``full`` according to the current mode."""
    return Preset(fast, full).get(mode)


def get_device(device: str | torch.device | None = None) -> torch.device:
    """The device experiments run on: CUDA when present, else CPU (or an explicit choice)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but CUDA is not available")
    return device


def set_threads(n: int | None = None) -> int:
    """Set the number of CPU threads torch uses and return it.

    ``n`` defaults to the ``ATTN_THREADS`` environment variable, else 1. One thread is the
    safe default for the small models of this book: on a busy 2-core machine two threads made
    a training step up to 300x slower than one.
    """
    if n is None:
        n = int(os.environ.get("ATTN_THREADS", "1"))
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"n (threads) must be an int >= 1; got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n (threads) must be >= 1; got {n}")
    torch.set_num_threads(n)
    return n


def set_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy and torch (CPU and CUDA), and make cuDNN deterministic."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int; got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0; got {seed}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    torch.manual_seed(int(seed))
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def describe(mode: str | None = None) -> str:
    """One line for the top of each notebook: the mode, device, threads and torch version."""
    dev = get_device()
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else "CPU"
    return (
        f"attn_core: mode={get_mode(mode)} (ATTN_MODE={os.environ.get('ATTN_MODE', 'auto')}), "
        f"device={dev} [{name}], torch threads={torch.get_num_threads()}, torch {torch.__version__}"
    )
