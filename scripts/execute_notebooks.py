"""Execute the book's notebooks in parallel into jupyter-book's execution cache.

    python scripts/execute_notebooks.py [CACHE_PATH]     # default _build/.jupyter_cache

jupyter-book (``execute_notebooks: cache``) runs notebooks one after another. This script
first runs every notebook that has no cached execution with jupyter-cache's parallel
executor -- one notebook per core -- into the same cache, so the build that follows only
renders. The chapters that train longest go first (measured fast-mode seconds below), so the
cores finish together. A notebook that fails here is not cached: jupyter-book executes it
again and reports the error (which fails a ``-W`` build).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml
from jupyter_cache import get_cache
from jupyter_cache.executors import load_executor

ROOT = Path(__file__).resolve().parents[1]
#: Fast-mode execution time of each chapter on the 2-core CI machine (seconds, measured).
MEASURED_SECONDS = {"05_multihead": 290, "04_permutation_copy": 263, "02_sen": 121,
                    "03_ibm1": 73, "01_gated_classifier": 45}
TIMEOUT = 1200  # seconds per cell, as _config.yml's execute.timeout


def book_notebooks() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [e["file"] for e in toc.get("chapters", []) if e["file"].startswith("notebooks/")]
    files.sort(key=lambda f: -MEASURED_SECONDS.get(Path(f).name, 0))
    return [ROOT / f"{f}.ipynb" for f in files]


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / ".jupyter_cache"
    cache = get_cache(str(path))
    for nb in book_notebooks():
        cache.add_nb_to_project(str(nb))
    t0 = time.perf_counter()
    result = load_executor("local-parallel", cache=cache).run_and_cache(timeout=TIMEOUT)
    print(f"[execute] {len(result.succeeded)} executed, {len(result.excepted)} failed, "
          f"{len(result.errored)} errored, in {time.perf_counter() - t0:.0f} s")
    for nb in result.excepted + result.errored:
        print(f"[execute] FAILED: {nb} (jupyter-book will run it again and show the error)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
