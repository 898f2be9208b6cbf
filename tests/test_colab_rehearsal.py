"""The Colab rehearsal (scripts/colab_rehearsal.py) on chapter 1, the shortest: a fresh
environment with torch preinstalled, the chapter's own install cell run against this
checkout's committed HEAD, the chapter executed from a folder outside the repository, as on
a GPU runtime (full mode) for two steps a run (``--smoke``). Passes only if torch was left
alone, attn_core came from the new environment and the chapter ran to its claims table,
marked not checked. This is also chapter 1's full-mode smoke run in the test command; its
fast-mode claims are asserted by the strict book build. Every chapter, claims checked:
``python scripts/colab_rehearsal.py all``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.colab
ROOT = Path(__file__).resolve().parents[1]


def test_chapter1_installs_and_runs_as_on_colab():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout: the rehearsal installs the committed HEAD")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "colab_rehearsal.py"),
                        "--smoke", "01_gated_classifier"], capture_output=True, text=True,
                       timeout=1200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "01_gated_classifier: passed" in out and "untouched" in out, out[-3000:]
    assert re.search(r"smoke run \(ATTN_MAX_STEPS=2\): the \d+ claims of Chapter 1 were "
                     r"not checked", out), out[-3000:]
