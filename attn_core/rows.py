"""Stored rows: a chapter's seed-heavy sweep, kept as one JSON file of rows.

Where :mod:`attn_core.stored` keeps a run whole (every loss and metric, re-checked live), a
*row* keeps what a chapter reads of many runs of one configuration: their seeds, the steps
they were evaluated at and a few numbers a run and evaluation, rounded. A chapter declares
each family of rows once, as a :class:`RowFamily` -- its file (in :data:`attn_core.stored.ROWS`,
covered by the manifest), the script that produces it, its row names and the configuration of
each, and which of a History's metrics and probes a row keeps -- and gets from it:

- :meth:`RowFamily.row`: a row made from a trained History (what the script writes);
- :meth:`RowFamily.load`: the stored rows, each checked against its configuration (the
  manifest, every row present, of that configuration, with the seeds, evaluation steps and
  array shapes it trains), or trained now under ``ATTN_STORED=off``;
- :meth:`RowFamily.write`: the rows written atomically as compact JSON.

A stored row is never shown for a configuration it was not computed with: a row whose
recorded configuration, seeds, steps or shapes differ is refused with a ValueError naming
the file and the script that recomputes it.

A *table* is a result computed outside the book by a script too long for its time budget
(the authors' own code, other base initialisations): :func:`write_table` stores it beside
the rows, with a note of where it came from, and :func:`load_table` reads it back through
the manifest. The chapter quotes the file, never a copy of its numbers in code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from .config import env_stored
from .stored import check_path, config_record, verify_file, write_json
from .training import History, eval_schedule

__all__ = ["RowFamily", "check_row_arrays", "rounded", "load_table", "write_table"]

#: Decimals a row keeps of every metric and probe.
DECIMALS = 4


def rounded(h: History, keys: Mapping[str, str]) -> dict:
    """Row key -> the History ``h``'s ``keys[row key]`` (a probe's, else a metric's), every
    run and evaluation, rounded to 4 decimals, as nested lists."""
    return {k: np.round(np.asarray(h.probes[src] if src in h.probes else h.metrics[src],
                                   dtype=float), DECIMALS).tolist()
            for k, src in keys.items()}


def check_row_arrays(path, name: str, row, shapes: dict, fix: str) -> None:
    """ValueError naming the stored file ``path`` and ``fix`` unless every key of ``shapes``
    is in ``row`` as a finite numeric array of that shape."""
    if not isinstance(shapes, dict):
        raise TypeError(f"shapes must be a dict key -> shape; got {type(shapes).__name__}")
    for k, shape in shapes.items():
        try:
            a = np.asarray(row[k], dtype=float)
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"the stored sweep {path}: row {name!r} has no numeric {k!r}: "
                             f"{fix}") from None
        if a.shape != tuple(shape) or not np.isfinite(a).all():
            raise ValueError(f"the stored sweep {path}: row {name!r}'s {k!r} has shape "
                             f"{a.shape} (needs {tuple(shape)}, finite): {fix}")


def _default_runs(cfg) -> list[int]:
    return list(cfg.seeds)


def _default_steps(cfg) -> list[int]:
    return eval_schedule(cfg.steps, cfg.eval_every)


@dataclass
class RowFamily:
    """One family of stored rows: the JSON ``file`` of row name -> row, written by
    ``script``; ``names`` its rows and ``config(name)`` each row's configuration (a
    ``kind``). A row records its configuration, its ``runs(cfg)`` (default: the seeds), the
    evaluation steps it trained at (when ``steps`` is not None: ``steps(cfg)``, default
    every ``eval_every`` steps) and, for every row key of ``keys``, that History metric or
    probe (runs, evaluations, ...) to 4 decimals; ``extra(cfg, h)`` adds (or replaces)
    fields and ``shapes(cfg)`` gives the shapes those must have (the keys' own are
    (runs, evaluations)). ``what`` names the rows in messages."""

    file: Path
    script: str
    names: tuple
    config: Callable
    kind: type
    keys: Mapping[str, str] = field(default_factory=dict)
    runs: Callable = _default_runs
    steps: Callable | None = _default_steps
    extra: Callable | None = None
    shapes: Callable | None = None
    what: str = "sweep"

    def __post_init__(self):
        self.file = Path(self.file)
        self.names = tuple(self.names)
        self.keys = dict(self.keys)
        if not self.names:
            raise ValueError("names must name at least one row")
        for what in ("config", "runs"):
            if not callable(getattr(self, what)):
                raise TypeError(f"{what} must be callable")

    @property
    def maker(self) -> str:
        """The name of the function that makes the rows' configurations (for messages)."""
        return getattr(self.config, "__name__", "config")

    def configs(self) -> dict:
        """Row name -> its configuration, every row."""
        return {name: self.config(name) for name in self.names}

    def row(self, cfg, h) -> dict:
        """The row of ``cfg`` (a ``kind``) from ``h``, the History of its run; TypeError or
        ValueError naming ``cfg`` or ``h``."""
        if not isinstance(cfg, self.kind):
            raise TypeError(f"cfg must be a {self.kind.__name__}; got {type(cfg).__name__}")
        if not isinstance(h, History):
            raise TypeError(f"h must be the History of cfg's run; got {type(h).__name__}")
        missing = [k for k in self.keys.values() if k not in h.probes and k not in h.metrics]
        if missing:
            raise ValueError(f"h must record {missing} (a run of cfg records them); it has "
                             f"the metrics {sorted(h.metrics)} and probes {sorted(h.probes)}")
        r = {"config": config_record(cfg), "seeds": self.runs(cfg)}
        if self.steps is not None:
            r["eval_steps"] = np.asarray(h.eval_steps).tolist()
        r.update(rounded(h, self.keys))
        if self.extra is not None:
            r.update(self.extra(cfg, h))
        return r

    def check(self, path, name: str, row, cfg) -> None:
        """ValueError naming ``path`` and the script unless ``row`` (row ``name`` of that
        file) holds the runs, evaluation steps and array shapes that ``cfg`` trains."""
        fix = f"run {self.script}"
        runs = self.runs(cfg)
        if not isinstance(row, dict) or row.get("seeds") != runs:
            raise ValueError(f"the stored {self.what} {path}: row {name!r} does not hold the "
                             f"seeds of its configuration ({runs}): {fix}")
        shapes = {}
        if self.steps is not None:
            steps = self.steps(cfg)
            if row.get("eval_steps") != steps:
                raise ValueError(f"the stored {self.what} {path}: row {name!r} was not "
                                 f"evaluated at the steps its configuration evaluates at "
                                 f"({steps}): {fix}")
            shapes = {k: (len(runs), len(steps)) for k in self.keys}
        if self.shapes is not None:
            shapes.update(self.shapes(cfg))
        check_row_arrays(path, name, row, shapes, fix)

    def load(self, path: str | Path | None = None) -> dict:
        """The stored rows (row name -> row) of ``path`` (default: the package's own file,
        which must match the stored results' manifest), every row present, computed with
        its configuration and complete (:meth:`check`); ValueError naming the file and the
        script otherwise. With ``ATTN_STORED=off`` and no ``path``, every row is trained
        now (cached) instead."""
        configs = self.configs()
        if path is None and env_stored() == "off":
            return {name: self.row(cfg, cfg.run()) for name, cfg in configs.items()}
        path = self.file if path is None else check_path("path", path)
        if path.resolve() == self.file.resolve():
            verify_file(path)
        try:
            rows = json.loads(path.read_text())
        except FileNotFoundError:
            raise ValueError(f"the stored {self.what} {path} is missing: run "
                             f"{self.script}") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"the stored {self.what} {path} is not valid JSON ({e}): run "
                             f"{self.script} again") from None
        if not isinstance(rows, dict):
            raise ValueError(f"the stored {self.what} {path} is not a JSON object of rows: "
                             f"run {self.script} again")
        for name, cfg in configs.items():
            if name not in rows:
                raise ValueError(f"the stored {self.what} {path} has no row {name!r}: run "
                                 f"{self.script}")
            if not isinstance(rows[name], dict) \
                    or rows[name].get("config") != config_record(cfg):
                raise ValueError(f"the stored {self.what} {path}: row {name!r} was computed "
                                 f"with another configuration than {self.maker}({name!r}); "
                                 f"run {self.script} to recompute it")
            self.check(path, name, rows[name], cfg)
        return rows

    def write(self, rows: dict, path: str | Path | None = None, note: str = "",
              compact: bool = True) -> Path:
        """Write ``rows`` (row name -> :meth:`row`) to ``path`` (default: the package's own
        file) atomically, as compact JSON unless not ``compact``; ``note`` is kept under
        "_about". Returns the path."""
        if not isinstance(rows, dict) or not rows:
            raise TypeError(f"rows must be a non-empty dict of rows; got "
                            f"{type(rows).__name__}")
        data = dict(rows)
        if note:
            data["_about"] = str(note)
        return write_json(self.file if path is None else path, data, compact=compact,
                          what="rows")


def write_table(path, rows, about: str) -> Path:
    """Write the table ``rows`` (any JSON: a dict or list of rows) with ``about`` (what
    computed it, how) to ``path`` atomically, indented; returns the path. Run
    :func:`attn_core.stored.write_manifest` after it, as the producing script does."""
    if not isinstance(about, str) or not about.strip():
        raise TypeError("about must say what computed the table (a non-empty str)")
    if not isinstance(rows, (dict, list)) or not rows:
        raise TypeError(f"rows must be a non-empty dict or list; got {type(rows).__name__}")
    return write_json(path, {"_about": about, "rows": rows}, what="rows")


def load_table(path, script: str):
    """The rows of the stored table ``path`` (written by :func:`write_table`), which must
    match the stored results' manifest (:class:`~attn_core.stored.StoredMismatch`
    otherwise); ValueError naming ``script`` if it is missing or not a table."""
    path = check_path("path", path)
    if not path.exists():
        raise ValueError(f"the stored table {path} is missing: run {script}")
    verify_file(path)
    try:
        rows = json.loads(path.read_text())["rows"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"the stored table {path} is not a table (a JSON object with "
                         f"'rows'): run {script}") from None
    return rows
