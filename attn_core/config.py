"""The book-wide switches: fast/full mode, device, seeds, CPU threads, workers and the cache.

Every environment variable the package reads is read here, by one function each, and nowhere
else; a bad value raises a ValueError that names the variable and the values it may take::

    ATTN_MODE=fast     # 2-core CPU, seconds to a minute or two per experiment (CI, book build)
    ATTN_MODE=full     # the papers' own scale (meant for a GPU)
    ATTN_MODE=auto     # default: full when CUDA is available, else fast
    ATTN_THREADS=1     # torch threads per process (default 1)             -> env_threads()
    ATTN_WORKERS=2     # worker processes (default: the usable CPU cores)   -> env_workers()
    ATTN_CLUSTER=local:2  # or tcp://host:8786: a Dask cluster instead      -> env_cluster()
    ATTN_CACHE=off     # results cache folder, or off (default ~/.cache/attn_core) -> env_cache()
    ATTN_MAX_STEPS=2   # smoke run: every training at most this many steps  -> env_max_steps()
    ATTN_SMOKE_BATCH=16  # ... and its largest batch per member, or off     -> env_smoke_batch()
    ATTN_STORED=check  # stored runs: check (default), strict or off         -> env_stored()

Every experiment config is a :class:`Preset`: one value for fast, one for full;
``preset.get()`` chooses by the current mode.
"""

from __future__ import annotations

import os
import random
import re
import textwrap
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Generic, TypeVar

import numpy as np
import torch

from .checks import check_int

__all__ = ["MODES", "DEVICE_KINDS", "Preset", "available_cores", "describe", "env_cache",
           "first_seeds", "env_stored", "STORED_MODES",
           "env_cluster", "env_mode", "env_smoke_batch", "env_threads", "env_workers",
           "get_device", "get_mode", "set_seed", "set_threads", "report", "report_line",
           "report_summary"]

MODES = ("fast", "full", "auto")
#: The device kinds experiments may run on (see :func:`get_device`).
DEVICE_KINDS = ("cpu", "cuda")
T = TypeVar("T")

#: ``ATTN_CACHE`` values that switch the results cache off (compared case-insensitively).
CACHE_OFF = ("off", "0", "false", "no")
#: ``ATTN_CACHE`` values that look like an attempt to disable the cache but would otherwise
#: create a folder of that name in the working directory.
_CACHE_AMBIGUOUS = ("none", "null")
DEFAULT_CACHE = "~/.cache/attn_core"


# ------------------------------------------------------------------------------- helpers
def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask; else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _parse_mode(name: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {MODES}; got {type(value).__name__} "
                        f"{value!r}")
    mode = value.strip().lower()
    if mode not in MODES:
        raise ValueError(f"{name} must be one of {MODES} (case-insensitive); got {value!r}")
    return mode


def _count(raw: str) -> int | None:
    """``raw`` as an int >= 1 written in digits (no '2.0', '', '1e3', '1_000'), else None."""
    if not re.fullmatch(r"\s*\+?[0-9]+\s*", raw) or int(raw) < 1:
        return None
    return int(raw)


def _env_count(var: str, default: int, what: str) -> int:
    """An integer environment variable >= 1: digits only (no '2.0', '', '1e3', '1_000')."""
    raw = os.environ.get(var)
    if raw is None:
        return default
    n = _count(raw)
    if n is None:
        raise ValueError(f"{var} must be an int >= 1 ({what}); got {raw!r}")
    _warn_above_cores(f"{var}={n}", n)
    return n


def _warn_above_cores(label: str, n: int) -> None:
    cores = available_cores()
    if n > cores:
        warnings.warn(f"{label} is more than the {cores} CPU core(s) this process may use; "
                      f"oversubscribed cores make the small models of this book far slower "
                      f"(1 thread per process is the safe choice)", RuntimeWarning, stacklevel=3)


# ---------------------------------------------------------------------- the env readers
def env_mode() -> str:
    """``ATTN_MODE`` as ``"fast"``, ``"full"`` or ``"auto"`` (default ``"auto"``)."""
    return _parse_mode("ATTN_MODE", os.environ.get("ATTN_MODE", "auto"))


def env_threads() -> int:
    """``ATTN_THREADS``: torch threads per process, an int >= 1 (default 1).

    A value above :func:`available_cores` is used but warned about: on a busy 2-core machine
    more threads than cores made training hundreds of times slower.
    """
    return _env_count("ATTN_THREADS", 1, "one torch thread per process")


def env_workers() -> int:
    """``ATTN_WORKERS``: worker processes, an int >= 1 (default :func:`available_cores`)."""
    return _env_count("ATTN_WORKERS", available_cores(), "worker processes; default: the "
                      "usable CPU cores")


#: ``ATTN_STORED`` values (see :func:`env_stored`).
STORED_MODES = ("check", "strict", "off")


def env_stored() -> str:
    """``ATTN_STORED``: how chapters 4-7 use their stored runs (:mod:`attn_core.stored`).

    - ``check`` (default, a reader's session): the stored runs are loaded and their first
      members re-trained now; if those do not reproduce the stored records within the spread
      measured for them, the chapter says what that means and goes on with the stored
      numbers, marked "not confirmed on this machine";
    - ``strict`` (the test command and its book build): such a mismatch raises;
    - ``off``: every seed is trained now (nothing stored is used; minutes more per chapter).
    """
    raw = os.environ.get("ATTN_STORED", "").strip().lower()
    if raw == "":
        return "check"
    if raw not in STORED_MODES:
        raise ValueError(f"ATTN_STORED must be one of {', '.join(STORED_MODES)} (or unset for "
                         f"check); got {os.environ.get('ATTN_STORED')!r}")
    return raw


def env_max_steps() -> int | None:
    """``ATTN_MAX_STEPS``: a smoke run's cap on every training run's steps (an int >= 1), or
    None when unset or empty (no cap). Chapter 3's optimal attentions (a projected gradient
    descent, :func:`attn_core.theory.optimal_attentions`) are capped too.

    Under the cap every experiment runs at its configured model and sequence shapes for at
    most that many steps, on training and evaluation batches of at most
    :func:`env_smoke_batch` examples a member -- which catches shape and device mistakes in
    minutes (not memory ones: the batch is smaller) -- its results are never cached
    (:mod:`attn_core.cache`) and the chapters' claims are shown but not asserted
    (:meth:`attn_core.claims.Claims.assert_all`): a smoke run proves plumbing, not science.
    """
    raw = os.environ.get("ATTN_MAX_STEPS", "")
    if raw.strip() == "":
        return None
    n = _count(raw)
    if n is None:
        raise ValueError(f"ATTN_MAX_STEPS must be an int >= 1 (a smoke run's cap on training "
                         f"steps), or unset for none; got {raw!r}")
    return n


def env_cluster() -> tuple[str, int | str] | None:
    """``ATTN_CLUSTER``: a Dask cluster for the engine's member jobs, in place of the local
    worker processes (``ATTN_WORKERS``), as Dask futures (:mod:`attn_core.cluster`); None
    when unset or empty.

    - ``local:N`` -> ``("local", N)``: a ``distributed.LocalCluster`` of N single-threaded
      worker processes on this machine, started once per Python process.
    - ``tcp://host:port`` (or ``tls://``) -> ``("address", value)``: the scheduler of a
      running cluster (``dask scheduler``; ``dask worker tcp://host:8786 --nthreads 1`` on
      each machine, with ``attn_core`` installed).
    """
    raw = os.environ.get("ATTN_CLUSTER", "")
    if raw.strip() == "":
        return None
    value = raw.strip()
    m = re.fullmatch(r"local:(\+?[0-9]+)", value)
    if m:
        n = int(m.group(1))
        if n >= 1:
            _warn_above_cores(f"ATTN_CLUSTER={value}", n)
            return "local", n
    m = re.fullmatch(r"(tcp|tls)://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})", value)
    if m and 1 <= int(m.group(3)) <= 65535:
        return "address", value
    raise ValueError(f"ATTN_CLUSTER must be local:N (N >= 1 worker processes on this machine) "
                     f"or a Dask scheduler address tcp://host:port (port 1-65535), or unset "
                     f"for none; got {raw!r}")


#: A smoke run's largest batch per member when ``ATTN_SMOKE_BATCH`` is unset.
SMOKE_BATCH = 16


def env_smoke_batch() -> int | None:
    """``ATTN_SMOKE_BATCH``: in a smoke run (``ATTN_MAX_STEPS``), the largest training and
    evaluation batch a member gets -- an int >= 1, default :data:`SMOKE_BATCH` (16) -- or None
    for ``off``: the configured batches, so that a capped run is exactly the first steps of
    the real one (the stored results' live checks compare such prefixes with their records:
    :func:`attn_core.stored.step_cap` sets it). Read only under ``ATTN_MAX_STEPS``."""
    raw = os.environ.get("ATTN_SMOKE_BATCH", "")
    if raw.strip() == "":
        return SMOKE_BATCH
    if raw.strip().lower() == "off":
        return None
    n = _count(raw)
    if n is None:
        raise ValueError(f"ATTN_SMOKE_BATCH must be an int >= 1 (a smoke run's largest batch "
                         f"per member) or off (the configured batches); got {raw!r}")
    return n


def env_cache() -> Path | None:
    """``ATTN_CACHE``: the results cache folder, or None when the cache is off.

    Unset or empty: ``~/.cache/attn_core``. ``off``, ``0``, ``false``, ``no`` (any case): None.
    Anything else is a folder path (``~`` expanded). A blank value, ``none``/``null`` and a path
    with leading or trailing spaces are refused, since they would create a stray folder in the
    working directory.
    """
    value = os.environ.get("ATTN_CACHE", "")
    if value == "":
        return Path(DEFAULT_CACHE).expanduser()
    word = value.strip().lower()
    if word in CACHE_OFF:
        return None
    if not word or word in _CACHE_AMBIGUOUS or value != value.strip():
        raise ValueError(f"ATTN_CACHE must be 'off' (or 0/false/no) to disable the results cache, "
                         f"or a folder path (unset: {DEFAULT_CACHE}); got {value!r}")
    return Path(value).expanduser()


# ----------------------------------------------------------------------------- the API
def get_mode(mode: str | None = None) -> str:
    """Resolve the run mode to ``"fast"`` or ``"full"``.

    ``mode`` defaults to the ``ATTN_MODE`` environment variable (itself defaulting to
    ``"auto"``); ``"auto"`` means full when CUDA is available, else fast.
    """
    mode = env_mode() if mode is None else _parse_mode("mode", mode)
    if mode == "auto":
        return "full" if torch.cuda.is_available() else "fast"
    return mode


@dataclass(frozen=True)
class Preset(Generic[T]):
    """A value with a fast and a full variant; ``preset.get()`` picks by the current mode.

    ``smoke`` (optional): in a smoke run (``ATTN_MAX_STEPS``), ``get()`` returns
    ``smoke(value)`` -- the same models at the same shapes, fewer of them (fewer seeds or
    candidates) or less data (chapter 3's corpus), so that a smoke run of the papers' scale
    fits CI. Each preset that has one says what it cuts."""

    fast: T
    full: T
    smoke: Callable[[T], T] | None = None

    def get(self, mode: str | None = None) -> T:
        value = self.fast if get_mode(mode) == "fast" else self.full
        if self.smoke is not None and env_max_steps() is not None:
            value = self.smoke(value)
        return value


def first_seeds(n: int) -> Callable:
    """A :class:`Preset` ``smoke`` function: the config with only its first ``n`` seeds."""
    n = check_int("n", n, 1)

    def cut(config):
        return replace(config, seeds=tuple(config.seeds)[:n])

    return cut


def get_device(device: str | torch.device | None = None) -> torch.device:
    """The device experiments run on: CUDA when present, else CPU (or an explicit choice)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be None, a string or a torch.device of kind "
                        f"{DEVICE_KINDS}; got {type(device).__name__} {device!r}")
    try:
        parsed = torch.device(device)
    except RuntimeError:  # torch's own message for "tpu" names no argument
        parsed = None
    if parsed is None or parsed.type not in DEVICE_KINDS:
        raise ValueError(f"device must be one of the kinds {DEVICE_KINDS} (with an optional "
                         f"index, as in 'cuda:0'); got {device!r}")
    device = parsed
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but CUDA is not available")
    return device


def set_threads(n: int | None = None) -> int:
    """Set the number of CPU threads torch uses and return it.

    ``n`` defaults to :func:`env_threads` (``ATTN_THREADS``, else 1). One thread is the safe
    default for the small models of this book: on a busy 2-core machine two threads made a
    training step up to 300x slower than one. More threads than usable cores is warned about.
    """
    if n is None:
        n = env_threads()
    else:
        n = check_int("n (threads)", n, 1)
        _warn_above_cores(f"n (threads)={n}", n)
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


#: The longest printed line that fits the book's column (its output blocks at a 1280 px
#: window: 688 px of 14 px monospace; a 79-character line is 10 px too wide, measured).
#: The package's own report lines ([cache], [stored], checkers) are wrapped to it.
LINE_WIDTH = 77


def wrap_line(text: str) -> str:
    """``text`` with each of its lines wrapped to :data:`LINE_WIDTH` (continuations indented
    two spaces, never broken at a hyphen: names like ``transformer-learned`` stay whole)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    return "\n".join(textwrap.fill(part, width=LINE_WIDTH, subsequent_indent="  ",
                                    break_on_hyphens=False)
                      for part in text.split("\n"))


#: The package's bookkeeping lines of this process ([cache]: reused or computed results;
#: [stored]: stored runs re-checked live), kept for :func:`report` instead of printed: the
#: page is for the reader. What goes wrong is still printed or raised where it happens.
_REPORT: list[str] = []


def report_line(text: str) -> None:
    """Keep ``text``, one bookkeeping line ("[cache] …", "[stored] …"), for :func:`report`
    without printing it."""
    if not isinstance(text, str) or not text.strip():
        raise TypeError(f"text must be a non-empty str; got {type(text).__name__} {text!r:.40}")
    _REPORT.append(" ".join(text.split()))


def report(show: bool = True) -> list[str]:
    """The bookkeeping lines of this process so far, in order: which results came from the
    cache (and when they were computed), which were computed and saved, which stored runs
    were re-checked live and how closely they matched. ``show``: also print them, each
    wrapped to the book's column. Returns the lines."""
    if not isinstance(show, bool):
        raise TypeError(f"show must be True or False; got {type(show).__name__}")
    lines = list(_REPORT)
    if show:
        print("\n".join(wrap_line(x) for x in lines) if lines else "(no cached or stored "
              "results used yet)")
    return lines


def report_summary() -> str:
    """One quiet line on the bookkeeping of this process, or "" when there is none: how many
    results were reused from the cache, computed now, and taken from stored runs re-checked
    live (their details: :func:`report`)."""
    kinds = {"reused": 0, "computed": 0, "stored": 0}
    for line in _REPORT:
        if line.startswith("[stored]"):
            kinds["stored"] += 1
        elif ": reused the result" in line:
            kinds["reused"] += 1
        else:
            kinds["computed"] += 1
    if not _REPORT:
        return ""
    parts = [f"{n} {what}" for what, n in (("reused from the cache", kinds["reused"]),
                                           ("computed now", kinds["computed"]),
                                           ("stored, re-checked live", kinds["stored"])) if n]
    return wrap_line(f"(results: {', '.join(parts)}; attn_core.report() lists them)")


def describe(mode: str | None = None) -> str:
    """One short line for the top of each notebook: the mode, device, threads and torch
    version (short enough for the book's column)."""
    dev = get_device()
    where = torch.cuda.get_device_name(0) if dev.type == "cuda" else "CPU"
    threads = torch.get_num_threads()
    return (f"attn_core: {get_mode(mode)} mode on {where}, {threads} "
            f"thread{'s' * (threads != 1)}, torch {torch.__version__}")


#: Every fixed seed and seed salt of the package, in one place. A salt turns one seed into
#: another for a different purpose, so that two random streams the reader thinks of as
#: independent never share a generator:
#:
#: - ``eval_stream_mul``/``eval_stream_add``: a member's held-out evaluation batch is drawn from
#:   seed ``(data_seed * mul + add) mod (2^63 - 1)`` (training.py), never from its training
#:   stream (a large prime multiplier keeps nearby data seeds' streams apart);
#: - ``head_projection``: a head's context projection P_k is drawn from ``head seed + 7919`` (a
#:   prime), so that W_k and P_k of one head are independent draws (models.Seq2Seq);
#: - ``head_score_bias``/``head_projection_bias``: a head's score bias a_k and context bias
#:   b_k (the authors' code) are drawn from ``head seed + 104729`` and ``+ 15485863`` (primes);
#: - ``heads_per_member``: without explicit head seeds, head k of the member with seed s is
#:   seeded ``s * 1000 + k`` (models.Seq2Seq, used for P_k, a_k and b_k);
#: - ``keyword_eval``: the fixed held-out keyword sequences of chapter 3's I8 probe.
SEED_SALTS = {
    "eval_stream_mul": 1_000_003,
    "eval_stream_add": 99_991,
    "head_projection": 7919,
    "head_score_bias": 104_729,
    "head_projection_bias": 15_485_863,
    "heads_per_member": 1000,
    "keyword_eval": 4242,
}
