"""Execute the book's notebooks in parallel into jupyter-book's execution cache.

    python scripts/execute_notebooks.py [CACHE_PATH]     # default _build/.jupyter_cache

jupyter-book (``execute_notebooks: cache``) runs notebooks one after another. This script
first runs every notebook that has no cached execution with jupyter-cache's parallel
executor -- one notebook per core -- into the same cache, so the build that follows only
renders. The chapters that train longest go first (measured fast-mode seconds below), so the
cores finish together. A notebook that fails here is not cached: jupyter-book executes it
again and reports the error (which fails a ``-W`` build).

Cores are not shared twice: jupyter-cache runs min(cores, notebooks) notebooks at once, so
unless ``ATTN_WORKERS`` is set, each notebook's engine gets cores // that many worker
processes (1 on a 2-core machine). Measured on the 2-core CI machine (one build each, empty
caches): 426 s of execution with one worker per notebook against 458 s with two, where four
training processes share two vCPUs.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import yaml
from jupyter_cache import get_cache
from jupyter_cache.executors import load_executor

from attn_core.checks import check_int
from attn_core.config import available_cores

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbclient_wakeup import install as install_wakeup  # noqa: E402 (this script's folder)

ROOT = Path(__file__).resolve().parents[1]
#: Fast-mode execution time of each chapter on the 2-core CI machine, one worker each, one
#: notebook at a time (seconds, measured 2026-11-27 on a 64-69 GFLOP/s core, chapters 4-6
#: with their prefix live checks): the longest go first, so the two cores finish together.
MEASURED_SECONDS = {"02_sen": 136, "03_ibm1": 93, "06_transformer": 49,
                    "01_gated_classifier": 49, "04_permutation_copy": 43,
                    "05_multihead": 34, "07_end_token": 26}
TIMEOUT = 1200  # seconds per cell, as _config.yml's execute.timeout


def book_notebooks() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [e["file"] for e in toc.get("chapters", []) if e["file"].startswith("notebooks/")]
    files.sort(key=lambda f: -MEASURED_SECONDS.get(Path(f).name, 0))
    return [ROOT / f"{f}.ipynb" for f in files]


def workers_per_notebook(n_notebooks: int, cores: int, cpu_count: int) -> int:
    """Engine workers for each of ``n_notebooks`` executed by a pool of ``cpu_count``
    processes (jupyter-cache's local-parallel executor) on ``cores`` usable cores."""
    n_notebooks, cores, cpu_count = (check_int(name, value) for name, value in (
        ("n_notebooks", n_notebooks), ("cores", cores), ("cpu_count", cpu_count)))
    return max(1, cores // min(cpu_count, n_notebooks))


#: A chapter's claims summary (attn_core.claims.Claims.assert_all), as printed.
CLAIMS_LINE = re.compile(r"(all \d+ claims of .+ hold\b.*|smoke run \(ATTN_MAX_STEPS=\d+\): the "
                         r"\d+ claims of .+ were not checked.*)")


def report(cache, executed: list[str]) -> list[str]:
    """One line per notebook executed now: its name, seconds and claims summary (or that it
    printed none), read back from the cache."""
    records = {r.uri: r for r in cache.list_cache_records()}
    lines = []
    for uri in sorted(executed, key=lambda u: Path(u).name):
        record = records.get(uri)
        if record is None:
            continue
        nb = cache.get_cache_bundle(record.pk).nb
        text = "\n".join("".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code"
                         for o in c.get("outputs", []))
        found = [m.group(0).strip() for m in CLAIMS_LINE.finditer(text)]
        seconds = record.data.get("execution_seconds")
        lines.append(f"{Path(uri).stem}: "
                     + ("" if seconds is None else f"{seconds:.0f} s; ")
                     + (found[-1] if found else "no claims summary printed"))
    return lines


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / ".jupyter_cache"
    cache = get_cache(str(path))
    for nb in book_notebooks():
        cache.add_nb_to_project(str(nb))
    todo = len(cache.list_unexecuted())
    if todo and "ATTN_WORKERS" not in os.environ:
        cpus = os.cpu_count() or 1  # jupyter-cache's pool size
        workers = workers_per_notebook(todo, available_cores(), cpus)
        os.environ["ATTN_WORKERS"] = str(workers)  # inherited by the notebooks' kernels
        print(f"[execute] {todo} notebooks, {min(cpus, todo)} at a time, "
              f"ATTN_WORKERS={workers} each")
    install_wakeup()  # before jupyter-cache forks its workers
    t0 = time.perf_counter()
    result = load_executor("local-parallel", cache=cache).run_and_cache(timeout=TIMEOUT)
    print(f"[execute] {len(result.succeeded)} executed, {len(result.excepted)} failed, "
          f"{len(result.errored)} errored, in {time.perf_counter() - t0:.0f} s")
    for line in report(cache, result.succeeded):
        print(f"[execute] {line}")
    for nb in result.excepted + result.errored:
        print(f"[execute] FAILED: {nb} (jupyter-book will run it again and show the error)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
