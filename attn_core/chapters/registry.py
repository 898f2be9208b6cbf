"""The book's chapters, listed once: every other list of chapters is derived from this one.

A chapter is its number, its module in :mod:`attn_core.chapters`, its notebook in
``notebooks/`` and its answer checkers in :mod:`attn_core.exercises`; whether it has stored
runs is whether its module has ``stored_configs()``. From :data:`CHAPTERS` come the stored
configurations (:func:`stored_configs`, what ``scripts/store_results.py`` stores), the live
checks (:func:`live_checks`, what ``python -m attn_core.chapters`` trains now), and the
chapters the tests enumerate. ``tests/test_registry.py`` checks both ways that the
registered chapters, the modules and notebooks on disk and ``_toc.yml``'s notebooks agree.

This is the layer above the shared library: :mod:`attn_core.stored` never imports a chapter
(it discovers its files); the chapters and their live checks are listed here.

    python -m attn_core.chapters [--upto N] [--json PATH]   # every live check, trained now
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..checks import check_int

__all__ = ["Chapter", "CHAPTERS", "chapter", "stored_configs", "live_checks", "main"]


@dataclass(frozen=True)
class Chapter:
    """One chapter of the book: ``number``, its module ``attn_core.chapters.<module>``, its
    notebook ``notebooks/<notebook>.ipynb``, its checkers ``attn_core.exercises.ch<N>`` and
    ``about``, what its module holds (the package docstring's line). A long chapter keeps
    some of its code in ``parts`` (modules ``attn_core.chapters.ch<N>_*``, e.g. its runs
    apart from its figures) whose every public name its module re-exports: the notebook
    and the tests import the chapter's module only."""

    number: int
    module: str
    notebook: str
    about: str = ""
    parts: tuple = ()

    @property
    def module_name(self) -> str:
        return f"attn_core.chapters.{self.module}"

    @property
    def exercises_name(self) -> str:
        return f"attn_core.exercises.ch{self.number}"

    @property
    def notebook_path(self) -> str:
        """The notebook, relative to the repository root (as ``_toc.yml`` names it, with
        its ``.ipynb``)."""
        return f"notebooks/{self.notebook}.ipynb"

    def load(self) -> ModuleType:
        """The chapter's module (imported now)."""
        return importlib.import_module(self.module_name)

    def load_parts(self) -> list[ModuleType]:
        """The chapter's parts (imported now)."""
        return [importlib.import_module(f"attn_core.chapters.{p}") for p in self.parts]

    def exercises(self) -> ModuleType:
        """The chapter's answer checkers (imported now)."""
        return importlib.import_module(self.exercises_name)

    @property
    def has_stored_runs(self) -> bool:
        """Whether the chapter loads stored runs (its module has ``stored_configs()``)."""
        return callable(getattr(self.load(), "stored_configs", None))


#: Every chapter, in the book's order. Adding one: CONTRIBUTING.md, "Adding a chapter".
CHAPTERS = (
    Chapter(1, "ch1_gated", "01_gated_classifier",
            "the keyword task and the attention LSTM classifier"),
    Chapter(2, "ch2_sen", "02_sen",
            "Lu, Mao & Nayak's topic model, SEN, purity, the CNN variant"),
    Chapter(3, "ch3_ibm1", "03_ibm1",
            "translation with a hidden dictionary, proxy, KTIW probes, IBM Model 1"),
    Chapter(4, "ch4_copy", "04_permutation_copy", "the permutation-copy failure"),
    Chapter(5, "ch5_multihead", "05_multihead",
            "good and bad heads, and the multi-head rescue", parts=("ch5_runs",)),
    Chapter(6, "ch6_transformer", "06_transformer",
            "does a Transformer fail too? An encoder-decoder Transformer on chapter 4's tasks"),
    Chapter(7, "ch7_end_token", "07_end_token", "why one end token makes permutations hard",
            parts=("ch7_runs", "ch7_causes")),
    Chapter(8, "ch8_scorecard", "08_scorecard",
            "the book's thesis scored against every stored condition", parts=("ch8_runs",)),
)


def chapter(number: int) -> Chapter:
    """The registered chapter ``number`` (ValueError naming the numbers there are)."""
    number = check_int("number", number, 1)
    for c in CHAPTERS:
        if c.number == number:
            return c
    raise ValueError(f"number must be one of the registered chapters "
                     f"{[c.number for c in CHAPTERS]}; got {number}")


def stored_configs() -> list:
    """Every configuration the chapters load from :mod:`attn_core.stored`, in chapter order
    (each chapter's ``stored_configs()``): what ``scripts/store_results.py`` stores."""
    return [cfg for c in CHAPTERS if c.has_stored_runs for cfg in c.load().stored_configs()]


def live_checks() -> list:
    """Every live check: the stored entries of the chapters with stored runs and the members
    each re-trains as it is read (the first of each)."""
    from ..stored import LiveCheck, stored_path

    return [LiveCheck(stored_path(cfg).name, cfg, 1, c.number)
            for c in CHAPTERS if c.has_stored_runs for cfg in c.load().stored_configs()]


def main(argv=None) -> int:
    """``python -m attn_core.chapters [--upto N] [--json PATH]``: train every live check of
    the chapters with stored runs now on this platform, print one line each, exit 1 if one
    fails."""
    from ..stored import StoredMismatch, platform, platform_key, run_check, write_json

    ap = argparse.ArgumentParser(prog="python -m attn_core.chapters", description=main.__doc__)
    ap.add_argument("--upto", type=int, default=None, help="train only the first N steps")
    ap.add_argument("--json", default=None, help="write the results here as JSON")
    args = ap.parse_args(argv)
    os.environ.setdefault("ATTN_MODE", "fast")
    rows, t0 = [], time.time()
    here = platform()
    print(f"[stored] platform: {platform_key(here)}")
    for check in live_checks():
        t = time.time()
        try:
            r = run_check(check, args.upto)
            ok, ratio, text = r.ok, r.ratio, r.describe()
            where = {"key": r.where[0], "step": r.where[1], "difference": r.where[2],
                     "allowed": r.where[3], "unit": r.where[4]}
        except StoredMismatch as e:
            ok, ratio, text, where = False, math.inf, str(e), {}
        rows.append({"name": check.name, "ok": ok, "ratio": ratio, "largest": where,
                     "seconds": round(time.time() - t, 1)})
        print(f"[stored] {'ok  ' if ok else 'FAIL'} {check.name}: {text}", flush=True)
    ok = all(r["ok"] for r in rows)
    worst = max(r["ratio"] for r in rows)
    print(f"[stored] {sum(r['ok'] for r in rows)} of {len(rows)} live checks pass on this "
          f"platform; largest difference / allowed {worst:.2g}; {time.time() - t0:.0f} s")
    if args.json:
        write_json(Path(args.json), {"platform": here, "ok": ok, "upto": args.upto,
                                     "checks": [{**r, "ratio": r["ratio"] if
                                                 math.isfinite(r["ratio"]) else None}
                                                for r in rows]})
    return 0 if ok else 1
