"""The pytest targets of stage 3 of ``scripts/run_tests.sh``, in the order it runs them.

Every registered chapter but the first (whose full-mode smoke run is the Colab rehearsal's)
gets its full-mode smoke run (``--nbval-lax`` on its notebook), beside the Colab rehearsal,
the browser check, the JupyterLab test and the built-book test. pytest-xdist's ``loadfile``
hands the files out in this order, a file at a time per process: the longest smoke run
first, then the JupyterLab test, the browser check (it waits for the render) and the Colab
rehearsal, then the other smoke runs longest first, the built book last. A chapter not
measured yet (not in :data:`SMOKE_SECONDS`) runs after the measured ones.

    python scripts/stage3_tests.py        # one target a line
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attn_core.chapters.registry import CHAPTERS  # noqa: E402

#: Each chapter's full-mode smoke run, seconds on one 64-92 GFLOP/s core (2026-11-27):
#: only their order matters here.
SMOKE_SECONDS = {"03_ibm1": 37, "05_multihead": 20, "04_permutation_copy": 16, "02_sen": 13,
                 "06_transformer": 13, "07_end_token": 7}
SIDE_TESTS = ["tests/test_jupyterlab.py", "tests/test_browser.py",
              "tests/test_colab_rehearsal.py"]


def targets() -> list[str]:
    smoke = sorted((c for c in CHAPTERS if c.number != 1),
                   key=lambda c: -SMOKE_SECONDS.get(c.notebook, -1))
    notebooks = [c.notebook_path for c in smoke]
    return notebooks[:1] + SIDE_TESTS + notebooks[1:] + ["tests/test_built_book.py"]


if __name__ == "__main__":
    print("\n".join(targets()))
