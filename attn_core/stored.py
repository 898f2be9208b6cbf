"""Stored results: seed-heavy fast-mode runs computed once, shipped with the package, shown
labelled, and re-checked live in every build.

Some statistics need many seeds (a success rate with an interval), and training them all in
every build would not fit the book's time budget on a 2-core CPU. For those, a chapter calls
:func:`stored_run` instead of ``config.run()``:

1. it loads the History that ``scripts/store_results.py`` computed once for exactly this
   configuration (fast mode), from ``attn_core/stored_results/<name>-<id>.npz`` (the results cache's
   file format: written atomically, never pickled, checked on load);
2. it trains the first few members again *now* (``live``, cached like any run) and checks
   that every metric and probe they record equals the stored members' within ``atol``
   (bitwise on the machine that stored them; a small tolerance for another CPU's rounding);
3. it prints what it did -- "N seeds stored on <date> by scripts/store_results.py; seeds
   ... re-run now: they match (largest difference ...)" -- and returns the stored History,
   marked ``stored=True``.

A stored entry is keyed by the configuration alone, not by the package source: if a change to
the code changes what the configuration trains, the live members stop matching and the call
raises :class:`StoredMismatch`, naming the script that recomputes the entries. Outside fast
mode (full mode: the papers' scale, not stored) and under ``ATTN_MAX_STEPS`` (a smoke run)
:func:`stored_run` is ``config.run()``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .cache import _read_entry, save_history
from .checks import check_real
from .config import env_max_steps, get_mode
from .training import History

__all__ = ["STORE", "StoredMismatch", "config_record", "stored_path", "stored_run", "store"]

#: Where stored entries live (inside the package, so a pip install carries them).
STORE = Path(__file__).resolve().parent / "stored_results"
SCRIPT = "python scripts/store_results.py"


class StoredMismatch(ValueError):
    """The members re-run now do not reproduce the stored ones."""


def config_record(config) -> dict:
    """``config``'s fields as the plain JSON a stored result records and is compared by."""
    return json.loads(json.dumps(config.cache_config(), sort_keys=True, default=str))


def stored_path(config) -> Path:
    """The stored entry of ``config`` (an :class:`~attn_core.chapters._experiment.Experiment`):
    its cache name and a hash of its fields."""
    if not hasattr(config, "cache_config") or not hasattr(config, "cache_name"):
        raise TypeError(f"config must be an experiment config (with cache_name and "
                        f"cache_config); got {type(config).__name__}")
    digest = hashlib.sha256(json.dumps(config_record(config), sort_keys=True).encode())
    return STORE / f"{config.cache_name()}-{digest.hexdigest()[:16]}.npz"


def store(config, progress: bool = True) -> Path:
    """Train ``config`` now (no cache) and write its stored entry; returns the path."""
    if get_mode() != "fast":
        raise ValueError("stored results are fast-mode results: run with ATTN_MODE=fast")
    h = config.train(progress)
    path = stored_path(config)
    save_history(h, path, meta={"stored_config": config_record(config)})
    return path


def stored_run(config, live: int = 2, atol: float = 1e-4) -> History:
    """The stored History of ``config``, its first ``live`` members re-run now and checked.

    ValueError naming the entry and the script if there is no stored entry for this exact
    configuration; :class:`StoredMismatch` if a re-run member differs from its stored record
    by more than ``atol`` in any metric or probe.
    """
    if isinstance(live, bool) or not isinstance(live, int) or live < 1:
        raise ValueError(f"live must be an int >= 1 (members re-run now); got {live!r}")
    atol = check_real("atol", atol, 0.0)
    if get_mode() != "fast" or env_max_steps() is not None:
        return config.run()
    path = stored_path(config)
    try:
        h, info = _read_entry(path)
    except FileNotFoundError:
        raise ValueError(f"no stored result for this configuration ({path.name}); run "
                         f"{SCRIPT} to compute it") from None
    if info["meta"].get("stored_config") != config_record(config):
        raise ValueError(f"{path} was stored for another configuration; run {SCRIPT}")
    n = h.n_members
    if live > n:
        raise ValueError(f"live must be at most the {n} stored members; got {live}")
    now = config.first_members(live).run()
    which, verb, own = (("member 0", "matches", "its stored record") if live == 1 else
                        (f"members 0..{live - 1}", "match", "their stored records"))
    worst = 0.0
    for group in ("metrics", "probes"):
        for k, v in getattr(h, group).items():
            got = getattr(now, group).get(k)
            want = v[:live]
            if got is None or got.shape != want.shape:
                raise StoredMismatch(f"the re-run members of {path.name} recorded no {group} "
                                     f"{k!r} of shape {want.shape}; run {SCRIPT}")
            diff = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
            worst = max(worst, diff)
            if not diff <= atol:
                raise StoredMismatch(
                    f"{which} re-run now and {own} differ in {k!r} by "
                    f"up to {diff:.3g} (> atol={atol:g}): the code no longer computes what was "
                    f"stored in {path.name}; run {SCRIPT} to recompute it")
    print(f"[stored] {config.cache_name()}: {n} members stored on {h.saved_at} by "
          f"{SCRIPT}; {which} re-run now {verb} {own} (largest difference "
          f"{worst:.2g})")
    h.stored = True
    h.live = now
    return h
