"""Expensive results computed once, saved, and reused -- always labelled as such.

:func:`cached_history` runs a training function the first time a configuration is seen and saves
its :class:`~attn_core.training.History` (numpy arrays in an ``.npz`` read with
``allow_pickle=False``, plus a JSON sidecar; no pickle anywhere). The key is a hash of

- the experiment's name and configuration (a JSON-able dict),
- the run mode (fast/full) and torch device type, and
- the source code of ``attn_core`` itself, so any change to the package recomputes.

Files are written to a temporary name and renamed (atomic on POSIX), so an interrupted run
never leaves a half-written result. The directory is ``$ATTN_CACHE`` (default
``~/.cache/attn_core``); ``ATTN_CACHE=off`` disables the cache. A loaded history has
``model=None`` (models are not cached) and ``cached=True``; :func:`cached_history` prints where
its result came from.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .config import get_device, get_mode
from .training import History

__all__ = ["cache_dir", "cache_key", "save_history", "load_history", "cached_history"]

_PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path | None:
    """The cache directory, or None when ``ATTN_CACHE=off``."""
    value = os.environ.get("ATTN_CACHE", "")
    if value.strip().lower() in ("off", "0", "false", "no"):
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "attn_core"


def _source_digest() -> str:
    h = hashlib.sha256()
    for f in sorted(_PACKAGE.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def cache_key(name: str, config: dict) -> str:
    """A stable hash of the experiment name, its config, the mode, device type and package source."""
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict; got {type(config).__name__}")
    payload = json.dumps({"name": name, "config": config, "mode": get_mode(),
                          "device": get_device().type, "source": _source_digest()},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_history(history: History, path: str | os.PathLike, meta: dict | None = None) -> None:
    """Save a History's arrays (``path.npz``) and metadata (``path.json``) atomically."""
    path = Path(path)
    arrays = {"seeds": history.seeds, "data_seeds": history.data_seeds,
              "train_loss": history.train_loss, "eval_steps": history.eval_steps}
    arrays.update({f"metrics/{k}": v for k, v in history.metrics.items()})
    arrays.update({f"probes/{k}": v for k, v in history.probes.items()})

    def write_npz(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    _atomic_write(path.with_suffix(".npz"), write_npz)
    info = {"execution": history.execution, "seconds": history.seconds, "config": history.config,
            "saved_at": time.strftime("%Y-%m-%d %H:%M:%S"), **(meta or {})}
    _atomic_write(path.with_suffix(".json"),
                  lambda tmp: Path(tmp).write_text(json.dumps(info, indent=2, default=str)))


def load_history(path: str | os.PathLike) -> History:
    """Load a History saved by :func:`save_history` (no pickle; ``model`` is None)."""
    path = Path(path)
    info = json.loads(path.with_suffix(".json").read_text())
    with np.load(path.with_suffix(".npz"), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    h = History(
        seeds=arrays["seeds"], data_seeds=arrays["data_seeds"], train_loss=arrays["train_loss"],
        eval_steps=arrays["eval_steps"],
        metrics={k[8:]: v for k, v in arrays.items() if k.startswith("metrics/")},
        probes={k[7:]: v for k, v in arrays.items() if k.startswith("probes/")},
        model=None, execution=info["execution"], seconds=info["seconds"], config=info["config"])
    h.cached = True
    h.saved_at = info.get("saved_at")
    return h


def cached_history(name: str, config: dict, compute: Callable[[], History],
                   verbose: bool = True) -> History:
    """Return ``compute()``'s History, computing it only if this config has no saved result.

    Prints whether the result was computed now or loaded (with the time it was computed).
    """
    key = cache_key(name, config)
    root = cache_dir()
    path = None if root is None else root / f"{name}-{key}"
    if path is not None and path.with_suffix(".json").exists() and path.with_suffix(".npz").exists():
        h = load_history(path)
        if verbose:
            print(f"[cache] {name}: loaded the result computed at {h.saved_at} "
                  f"({h.seconds:.0f} s, {h.execution}) from {path}.npz -- "
                  f"set ATTN_CACHE=off to recompute")
        return h
    h = compute()
    h.cached = False
    if path is not None:
        save_history(h, path, meta={"name": name, "key": key, "experiment_config": config})
    if verbose:
        where = f"; saved to {path}.npz" if path is not None else ""
        print(f"[cache] {name}: computed now in {h.seconds:.0f} s ({h.execution}){where}")
    return h
