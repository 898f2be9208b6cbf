"""The Colab rehearsal (scripts/colab_rehearsal.py) on chapter 1, the shortest: a fresh
environment with torch preinstalled, the chapter's own install cell run against this
checkout's committed HEAD, the chapter executed from a folder outside the repository. Passes
only if torch was left alone, attn_core came from the new environment and every claim held.
All chapters: ``python scripts/colab_rehearsal.py all``."""

from __future__ import annotations

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
                        "01_gated_classifier"], capture_output=True, text=True, timeout=1200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "01_gated_classifier: passed" in out and "untouched" in out, out[-3000:]
    assert "claims of Chapter 1 hold" in out, out[-3000:]
