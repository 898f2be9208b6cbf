"""Stored results: seed-heavy fast-mode runs computed once, shipped with the package, shown
labelled, and re-checked live in every build.

Some statistics need many seeds (a success rate with an interval), and training them all in
every build would not fit the book's time budget on a 2-core CPU. For those, a chapter calls
:func:`stored_run` instead of ``config.run()``:

1. it loads the History that ``scripts/store_results.py`` computed once for exactly this
   configuration (fast mode), from ``attn_core/stored_results/<name>-<id>.npz`` (the results cache's
   file format: written atomically, never pickled, checked on load);
2. it trains the first few members again *now* (``live``, cached like any run) and compares
   them with the stored members in two parts (:func:`compare_members`): every metric and
   probe over the first ``until`` steps must agree within ``atol``, and every scalar metric
   and probe at the last step within ``drift``. Training is chaotic: on another CPU the
   last bit of a float comes out differently, and over hundreds of steps that difference
   grows (measured, the same code on two CPUs: below 2e-5 by step 100; 0.03 in accuracy and
   0.1 in an attention map by step 900). Any change to the data, initialisation, model,
   loss or optimiser shows in the first steps by far more (a learning rate 0.1 % higher:
   0.005 in accuracy by step 100), so the early part is the strict check and the last step
   checks only that the run ends the same way; on the machine that stored the entries
   both differences are 0;
3. it prints what it did -- "N members stored on <date> by scripts/store_results.py;
   member 0 re-run now matches its stored record (bitwise, or to the largest differences
   of both parts)" -- and returns the stored History, marked ``stored=True``.

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
from .checks import check_int, check_real
from .config import env_max_steps, get_mode
from .training import History

__all__ = ["STORE", "StoredMismatch", "compare_members", "config_record", "member_differences",
           "stored_path", "stored_run", "store"]

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


def _early(eval_steps, until: int) -> np.ndarray:
    """The eval points the strict part compares: steps <= ``until``, and at least the first
    point after step 0 (so a run evaluated sparsely is still compared after training)."""
    steps = np.asarray(eval_steps)
    early = steps <= until
    after = np.flatnonzero(steps > 0)
    if after.size:
        early[after[0]] = True
    return early


def _differences(stored: dict, now: dict, eval_steps, until: int, what: str, fix: str):
    """Per key: (key, its largest difference at each early eval point, at the last point or
    None for a map), members trained ``now`` against ``stored`` (see compare_members)."""
    early = _early(eval_steps, until)
    for k, want in stored.items():
        want = np.asarray(want, dtype=np.float64)
        got = now.get(k)
        if got is None or np.shape(got) != want.shape:
            raise StoredMismatch(f"the members trained now recorded no {k!r} of shape "
                                 f"{want.shape} as {what} did; {fix}")
        diff = np.abs(np.asarray(got, dtype=np.float64) - want)
        if diff.size:
            d_early = diff[:, early].reshape(len(diff), int(early.sum()), -1).max(axis=(0, 2))
            yield k, d_early, (float(diff[:, -1].max()) if diff.ndim == 2 else None)


def member_differences(stored: dict, now: dict, eval_steps,
                       until: int = 100) -> tuple[float, float]:
    """The two numbers :func:`compare_members` checks: the largest difference over the first
    ``until`` steps (every key) and at the last step (scalar keys)."""
    until = check_int("until", until, 0)
    early = final = 0.0
    for _, d_early, d_final in _differences(stored, now, eval_steps, until, "the record",
                                            "compare like with like"):
        early = max(early, float(d_early.max()))
        final = final if d_final is None else max(final, d_final)
    return early, final


def compare_members(stored: dict, now: dict, eval_steps, *, atol: float = 1e-3,
                    until: int = 100, drift: float = 0.1, what: str = "the stored run",
                    fix: str = SCRIPT) -> tuple[float, float]:
    """Compare members trained now with their stored records: ``{key: array}``, each of
    shape (members, eval points, ...), recorded at ``eval_steps``.

    Strict part: every key at the eval points up to step ``until`` (and the first after step
    0) within ``atol``. Loose part: every scalar key (shape (members, eval points)) at the
    last eval point within ``drift`` -- later steps carry another CPU's rounding, grown by
    training (see the module's docstring). Returns the largest (early, final) differences;
    raises :class:`StoredMismatch` naming the key, the step and ``fix`` otherwise.
    """
    atol = check_real("atol", atol, 0.0)
    drift = check_real("drift", drift, 0.0)
    until = check_int("until", until, 0)
    steps = np.asarray(eval_steps)
    at_early = steps[_early(steps, until)]
    worst_early = worst_final = 0.0
    for k, d_early, d_final in _differences(stored, now, steps, until, what, fix):
        if not d_early.max() <= atol:
            raise StoredMismatch(
                f"trained now and in {what}, {k!r} differs at step "
                f"{int(at_early[np.argmax(d_early)])} by {d_early.max():.3g} (> atol={atol:g} "
                f"over the first {until} steps, where another CPU's rounding stays far "
                f"smaller): the code no longer computes what was stored; {fix}")
        worst_early = max(worst_early, float(d_early.max()))
        if d_final is not None:
            if not d_final <= drift:
                raise StoredMismatch(
                    f"trained now and in {what}, {k!r} differs at the last step "
                    f"({int(steps[-1])}) by {d_final:.3g} (> drift={drift:g}): the run no "
                    f"longer ends as the stored one did; {fix}")
            worst_final = max(worst_final, d_final)
    return worst_early, worst_final


def stored_run(config, live: int = 1, atol: float = 1e-3, until: int = 100,
               drift: float = 0.1) -> History:
    """The stored History of ``config``, its first ``live`` members re-run now and checked
    (:func:`compare_members`: within ``atol`` over the first ``until`` steps, within
    ``drift`` at the last step).

    ValueError naming the entry and the script if there is no stored entry for this exact
    configuration; :class:`StoredMismatch` if a re-run member differs from its stored record.
    """
    live = check_int("live", live, 1)
    atol = check_real("atol", atol, 0.0)
    drift = check_real("drift", drift, 0.0)
    until = check_int("until", until, 0)
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
    which, verb = (("member 0", "matches its stored record") if live == 1 else
                   (f"members 0..{live - 1}", "match their stored records"))
    want = {k: v[:live] for group in ("metrics", "probes") for k, v in getattr(h, group).items()}
    got = {**now.metrics, **now.probes}
    early, final = compare_members(want, got, h.eval_steps, atol=atol, until=until,
                                   drift=drift, what=f"{path.name} ({which})",
                                   fix=f"run {SCRIPT} to recompute it")
    how = ("bitwise" if early == final == 0 else
           f"to {early:.2g} over the first {until} steps (atol {atol:g}), "
           f"to {final:.2g} at the last (drift {drift:g})")
    print(f"[stored] {config.cache_name()}: {n} members stored on {h.saved_at} by "
          f"{SCRIPT}; {which} re-run now {verb} {how}")
    h.stored = True
    h.live = now
    return h
